//! Criterion benchmark of `decide` on a world of 1,000 instances and 5,000 other CSRs: approvable bootstrap CSRs
//! (the full rule path, signature verification included), the same with the manifest decoded each time, and the
//! signature verification alone (the share of the crypto in the total).

use std::hint::black_box;

use base64::Engine as _;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jiff::{SignedDuration, Timestamp};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use wmco_csr_approver::{
    ByohInstance, CsrFacts, CsrManifest, CsrState, CsrSummary, InstancePhase, ManagedInstance, Verdict, World,
    WorldData, decide,
};

const INSTANCES: usize = 1_000;
const OTHER_CSRS: usize = 5_000;
const DECIDED_PER_ITERATION: usize = 100;
const BOOTSTRAPPER: &str = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper";

fn now() -> Timestamp {
    Timestamp::from_second(1_795_000_000).expect("valid timestamp")
}

fn node_name(index: usize) -> String {
    format!("win-{index:04}")
}

fn world() -> World {
    let instances = (0..INSTANCES)
        .map(|index| {
            ManagedInstance::Byoh(ByohInstance {
                name: node_name(index),
                uid: None,
                address: format!("{}.corp.example", node_name(index)),
                expected_node_name: Some(node_name(index)),
                phase: InstancePhase::WaitingForNode,
                configuring_since: Some(now() - SignedDuration::from_mins(30)),
                hostname: Some(node_name(index)),
                fqdn: None,
                resolved_address: None,
                node_ip: None,
                bootstrap_approval: None,
            })
        })
        .collect();
    // 5,000 CSRs: one pending renewal per instance (1,000, within the limit of 1,100) and 4,000 approved ones.
    let csrs = (0..OTHER_CSRS)
        .map(|index| CsrSummary {
            name: format!("csr-{index}"),
            signer_name: "kubernetes.io/kube-apiserver-client-kubelet".into(),
            username: format!("system:node:{}", node_name(index % INSTANCES)),
            creation_timestamp: now() - SignedDuration::from_mins(5),
            state: if index < INSTANCES { CsrState::Pending } else { CsrState::Approved },
            approved_at: (index >= INSTANCES).then(|| now() - SignedDuration::from_mins(4)),
            node_names: vec![node_name(index % INSTANCES)],
            public_key_sha256: Some(format!("{index:064x}")),
        })
        .collect();
    World::new(WorldData {
        now: now(),
        service_network: vec!["172.30.0.0/16".parse().expect("cidr")],
        cluster_network: vec!["10.128.0.0/14".parse().expect("cidr")],
        instances,
        nodes: vec![],
        csrs,
    })
}

fn manifest(index: usize) -> CsrManifest {
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, format!("system:node:{}", node_name(index * 7)));
    subject.push(DnType::OrganizationName, "system:nodes");
    params.distinguished_name = subject;
    let pem = params.serialize_request(&key).expect("request").pem().expect("pem");
    serde_json::from_value(serde_json::json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": format!("csr-bench-{index}"), "creationTimestamp": (now() - SignedDuration::from_mins(2)).to_string()},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(pem),
            "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
            "usages": ["digital signature", "client auth"],
            "username": BOOTSTRAPPER,
            "groups": ["system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator", "system:authenticated"],
        }
    }))
    .expect("manifest")
}

fn bench_decide(c: &mut Criterion) {
    let world = world();
    let manifests: Vec<CsrManifest> = (0..DECIDED_PER_ITERATION).map(manifest).collect();
    let facts: Vec<CsrFacts> =
        manifests.iter().map(|manifest| CsrFacts::from_manifest(manifest).expect("facts")).collect();
    assert!(facts.iter().all(|facts| decide(facts, &world) == Verdict::Approve), "bench CSRs must be approvable");

    let mut group = c.benchmark_group("decide");
    group.throughput(Throughput::Elements(DECIDED_PER_ITERATION as u64));
    group.bench_function("approvable bootstrap, 1000 instances, 5000 csrs", |b| {
        b.iter(|| facts.iter().map(|facts| decide(black_box(facts), &world)).filter(|v| *v == Verdict::Approve).count())
    });
    group.bench_function("manifest decode + decide", |b| {
        b.iter(|| {
            manifests
                .iter()
                .map(|manifest| decide(&CsrFacts::from_manifest(black_box(manifest)).expect("facts"), &world))
                .filter(|verdict| *verdict == Verdict::Approve)
                .count()
        })
    });
    let requests: Vec<_> = facts.iter().map(|facts| facts.request.as_ref().expect("readable request")).collect();
    group.bench_function("signature verification only", |b| {
        b.iter(|| requests.iter().filter(|request| black_box(request).verify_signature().is_ok()).count())
    });
    group.finish();
}

criterion_group!(benches, bench_decide);
criterion_main!(benches);
