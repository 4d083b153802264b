//! Replays what CI must keep passing without special tools: the cargo-fuzz corpus through the PEM + PKCS#10
//! parser (no panics, and nothing with an encoding defect is ever approved), and the documented examples (the
//! World and CSR of `docs/csr-approval.md` parse and give the documented verdict).

#![allow(clippy::unwrap_used, reason = "test setup: a failure must panic")]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use wmco_csr_approver::{
    CsrFacts, CsrManifest, ManagedInstance, ParsedRequest, RuleId, Verdict, World, WorldData, decide,
};

#[path = "../../../fuzz/replay.rs"]
#[allow(dead_code, reason = "this test uses the corpus reader, not the replay loop")]
mod replay_support;

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn fuzz_corpus_replays_through_the_parser() {
    let entries = replay_support::corpus("parse_request");
    assert!(entries.len() >= 20, "corpus has only {} entries", entries.len());
    let world = World::new(world());
    let mut readable = 0;
    for (path, bytes) in &entries {
        if let Ok(request) = ParsedRequest::from_der(bytes.clone()) {
            assert_eq!(request.der(), &bytes[..], "{}", path.display());
            let _ = request.verify_signature();
        }
        let Ok(request) = ParsedRequest::from_pem(bytes) else { continue };
        readable += 1;
        let _ = request.verify_signature();
        let csr = Csr::bootstrap(bytes.clone()).with_usages(&["key encipherment", "digital signature", "client auth"]);
        let verdict = decide(&csr.facts(), &world);
        if !request.defects.is_empty() {
            assert_ne!(
                verdict,
                Verdict::Approve,
                "{} has defects {:?} but was approved",
                path.display(),
                request.defects
            );
        }
    }
    assert!(readable >= 10, "only {readable} corpus entries decode as PEM requests");
}

fn read_fixture_text(name: &str) -> String {
    String::from_utf8(fixture(name)).unwrap()
}

#[test]
fn documented_world_parses_as_documented() {
    let world: WorldData = serde_saphyr::from_str(&read_fixture_text("world-example.yaml")).unwrap();
    assert_eq!(world.now.to_string(), "2026-11-22T12:00:00Z");
    assert_eq!(world.instances.len(), 3);
    assert!(matches!(&world.instances[2], ManagedInstance::Machine(machine) if machine.node_ref.is_none()));
    assert_eq!(world.nodes[0].labels.get("kubernetes.io/os").map(String::as_str), Some("windows"));
    assert_eq!(world.csrs.len(), 1);
    let json = serde_json::to_string(&world).unwrap();
    assert_eq!(serde_json::from_str::<WorldData>(&json).unwrap(), world);
}

#[test]
fn documented_csr_is_approved_in_the_documented_world() {
    let world: World = serde_saphyr::from_str(&read_fixture_text("world-example.yaml")).unwrap();
    let manifest: CsrManifest = serde_saphyr::from_str(&read_fixture_text("csr-example.yaml")).unwrap();
    let facts = CsrFacts::from_manifest(&manifest).unwrap();
    assert_eq!(decide(&facts, &world), Verdict::Approve);
    let mut later = world.data().clone();
    later.now = "2026-11-22T13:00:01Z".parse().unwrap();
    assert_eq!(decide(&facts, &World::new(later)).rule(), Some(RuleId::F4));
}

#[test]
fn documentation_embeds_the_examples_verbatim() {
    let documentation = std::fs::read_to_string(repository_root().join("docs/csr-approval.md")).unwrap();
    for name in ["world-example.yaml", "csr-example.yaml"] {
        assert!(documentation.contains(&read_fixture_text(name)), "docs/csr-approval.md does not embed {name}");
    }
    for rule in RuleId::ALL {
        assert!(documentation.contains(&format!("**{rule}**")), "docs/csr-approval.md does not document {rule}");
    }
}

#[test]
fn unknown_world_fields_are_refused() {
    let error = serde_saphyr::from_str::<WorldData>("now: \"2026-11-22T12:00:00Z\"\ninstancez: []\n").unwrap_err();
    assert!(error.to_string().contains("instancez"), "{error}");
}
