//! Fuzz target: the PEM + PKCS#10 parsing path of the CSR approver (`ParsedRequest::from_pem`, `from_der`, signature
//! verification), which reads attacker-chosen bytes from `spec.request`, and `decide` on the result against a small
//! World (client bootstrap for even-length inputs, serving for odd ones). Invariant checked beyond "no panic": a
//! request with an encoding defect is never approved.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use wmco_csr_approver::{
    ByohInstance, CsrFacts, InstancePhase, ManagedInstance, NODE_BOOTSTRAPPER_GROUPS, NODE_BOOTSTRAPPER_USERNAME,
    NODE_GROUPS, ParsedRequest, SIGNER_KUBELET_CLIENT, SIGNER_KUBELET_SERVING, Verdict, World, WorldData, decide,
};

const NOW_SECONDS: i64 = 1_795_000_000;

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let now = jiff::Timestamp::from_second(NOW_SECONDS).expect("valid time");
        let instance = ByohInstance {
            name: "win-fx".into(),
            address: "win-fx.corp.example".into(),
            expected_node_name: Some("win-fx".into()),
            phase: InstancePhase::WaitingForNode,
            configuring_since: Some(now - jiff::SignedDuration::from_mins(30)),
            hostname: Some("win-fx".into()),
            fqdn: Some("win-fx.corp.example".into()),
            resolved_address: Some([10, 0, 0, 11].into()),
            node_ip: Some([203, 0, 113, 19].into()),
            bootstrap_approval: None,
        };
        World::new(WorldData {
            now,
            service_network: vec!["172.30.0.0/16".parse().expect("cidr")],
            cluster_network: vec!["10.128.0.0/14".parse().expect("cidr")],
            instances: vec![ManagedInstance::Byoh(instance)],
            nodes: vec![],
            csrs: vec![],
        })
    })
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|value| (*value).to_owned()).collect()
}

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = ParsedRequest::from_der(data.to_vec()) {
        assert_eq!(request.der(), data);
        let _ = request.verify_signature();
    }
    let request = ParsedRequest::from_pem(data);
    let client = data.len() % 2 == 0;
    let facts = CsrFacts {
        name: "csr-fuzz".into(),
        creation_timestamp: world().data().now - jiff::SignedDuration::from_mins(1),
        signer_name: if client { SIGNER_KUBELET_CLIENT } else { SIGNER_KUBELET_SERVING }.into(),
        usages: strings(if client {
            &["digital signature", "client auth"]
        } else {
            &["digital signature", "server auth"]
        }),
        username: if client { NODE_BOOTSTRAPPER_USERNAME.into() } else { "system:node:win-fx".into() },
        groups: if client { strings(&NODE_BOOTSTRAPPER_GROUPS) } else { strings(&NODE_GROUPS) },
        extra: Default::default(),
        expiration_seconds: None,
        condition_types: vec![],
        approved_at: None,
        has_certificate: false,
        request,
    };
    let verdict = decide(&facts, world());
    if let Ok(request) = &facts.request {
        assert!(
            request.defects.is_empty() || verdict != Verdict::Approve,
            "approved with defects {:?}",
            request.defects
        );
    }
});
