//! A Machine-backed record's bootstrap CSR: decided with the Machine read through the context's `Machines` (creation
//! time and nodeRef feed rule F1), approved, its key recorded on the record; without `Machines` the record takes no
//! part and the CSR is left alone.

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PublicKeyData};
use sha2::{Digest, Sha256};
use wmco_cluster_client::fake::{FakeCluster, FakeCsrs, FakeInstanceRecords, FakeMachines, objects};
use wmco_cluster_client::types::{
    InstanceOrigin, InstancePhase, WindowsInstance, WindowsInstanceSpec, WindowsInstanceStatus,
};
use wmco_cluster_client::{InstanceRecords, Machines, Seams};
use wmco_csr_approver::Verdict;

use super::fake_cache::FakeCache;
use super::*;

const NAMESPACE: &str = "wmco";
const NODE: &str = "ip-10-0-1-5.ec2.internal";

fn now() -> Timestamp {
    "2026-11-22T12:00:00Z".parse().unwrap()
}

fn minutes_ago(minutes: i64) -> Timestamp {
    now().checked_sub(SignedDuration::from_mins(minutes)).unwrap()
}

struct Cluster {
    csrs: Arc<FakeCsrs>,
    records: Arc<FakeInstanceRecords>,
    machines: Arc<FakeMachines>,
}

async fn cluster() -> Cluster {
    let records = Arc::new(FakeInstanceRecords::default());
    let mut record = WindowsInstance::new(
        "machine-win-a",
        WindowsInstanceSpec {
            address: "10.0.1.5".into(),
            username: "Administrator".into(),
            origin: InstanceOrigin::Machine,
            machine_name: Some("win-a".into()),
            expected_node_name: Some(NODE.into()),
        },
    );
    record.metadata.namespace = Some(NAMESPACE.into());
    records.apply(&record).await.unwrap();
    let status = WindowsInstanceStatus {
        expected_node_name: Some(NODE.into()),
        phase: Some(InstancePhase::WaitingForNode),
        configuring_since: Some(minutes_ago(20).into()),
        ..WindowsInstanceStatus::default()
    };
    records.apply_status(NAMESPACE, "machine-win-a", &status).await.unwrap();
    let machines = Arc::new(FakeMachines::default());
    let machine = objects::machine("win-a").created_at(minutes_ago(30)).phase("Provisioned");
    machines.insert(machine.internal_ip("10.0.1.5").internal_dns(NODE).build());
    Cluster { csrs: Arc::new(FakeCsrs::default()), records, machines }
}

fn context(cluster: &Cluster, with_machines: bool) -> CsrContext {
    let settings = CsrSettings {
        namespace: NAMESPACE.into(),
        service_network: vec!["172.30.0.0/16".parse().unwrap()],
        cluster_network: vec!["10.128.0.0/14".parse().unwrap()],
        clock: Arc::new(now),
    };
    let seams =
        Seams { csrs: cluster.csrs.clone(), records: cluster.records.clone(), ..FakeCluster::default().seams() };
    let cache = FakeCache::new(cluster.csrs.clone(), cluster.records.clone(), NAMESPACE);
    let context = CsrContext::new(&seams, settings).with_cache(Arc::new(cache));
    if with_machines { context.with_machines(cluster.machines.clone()) } else { context }
}

fn bootstrap_csr(key: &KeyPair) -> CertificateSigningRequest {
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, format!("system:node:{NODE}"));
    subject.push(DnType::OrganizationName, "system:nodes");
    params.distinguished_name = subject;
    let pem = params.serialize_request(key).unwrap().pem().unwrap();
    objects::csr("csr-boot", "kubernetes.io/kube-apiserver-client-kubelet", &pem)
        .resource_version("7")
        .created_at(minutes_ago(5))
        .requested_by(
            "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:openshift-machine-config-operator",
                "system:authenticated",
            ],
        )
        .usages(&["digital signature", "client auth"])
        .build()
}

#[tokio::test]
async fn a_machines_bootstrap_csr_is_approved_with_its_machine_read_and_its_key_recorded() {
    let cluster = cluster().await;
    let key = KeyPair::generate().unwrap();
    let csr = bootstrap_csr(&key);
    cluster.csrs.insert(csr.clone());

    let outcome = reconcile_csr(&csr, &context(&cluster, true)).await.unwrap();

    assert_eq!(outcome, CsrOutcome::Decided { verdict: Verdict::Approve, instance: Some("machine-win-a".into()) });
    let status = cluster.records.record(NAMESPACE, "machine-win-a").unwrap().status.unwrap();
    assert_eq!(status.approved_bootstrap_key_sha256, Some(hex::encode(Sha256::digest(key.subject_public_key_info()))));
}

/// The Machine's first bootstrap CSR was approved before the flow's first pass (no `configuringSince` yet) and has
/// been garbage-collected since: its recorded key alone still binds the Machine's attempt.
#[tokio::test]
async fn a_key_recorded_before_the_first_pass_leaves_another_key_pending() {
    let cluster = cluster().await;
    let status = WindowsInstanceStatus { expected_node_name: Some(NODE.into()), ..WindowsInstanceStatus::default() };
    cluster.records.apply_status(NAMESPACE, "machine-win-a", &status).await.unwrap();
    let first_key = KeyPair::generate().unwrap();
    let first_key_sha256 = hex::encode(Sha256::digest(first_key.subject_public_key_info()));
    cluster.records.apply_bootstrap_key(NAMESPACE, "machine-win-a", Some(&first_key_sha256)).await.unwrap();
    let csr = bootstrap_csr(&KeyPair::generate().unwrap());
    cluster.csrs.insert(csr.clone());

    let CsrOutcome::Decided { verdict, .. } = reconcile_csr(&csr, &context(&cluster, true)).await.unwrap() else {
        panic!("expected a decision")
    };

    assert!(matches!(&verdict, Verdict::Ignore { rule: wmco_csr_approver::RuleId::F2, .. }), "{verdict:?}");
    let status = cluster.records.record(NAMESPACE, "machine-win-a").unwrap().status.unwrap();
    assert_eq!(status.approved_bootstrap_key_sha256, Some(first_key_sha256));
}

#[tokio::test]
async fn without_machines_or_with_a_node_ref_the_machines_csr_is_not_approved() {
    let cluster = cluster().await;
    let csr = bootstrap_csr(&KeyPair::generate().unwrap());
    cluster.csrs.insert(csr.clone());
    let CsrOutcome::Decided { verdict, .. } = reconcile_csr(&csr, &context(&cluster, false)).await.unwrap() else {
        panic!("expected a decision")
    };
    assert!(matches!(verdict, Verdict::Ignore { .. }), "{verdict:?}");

    let machine = cluster.machines.get("openshift-machine-api", "win-a").await.unwrap().unwrap();
    cluster.machines.insert(objects::MachineBuilder::from(machine).node_ref(NODE).build());
    let CsrOutcome::Decided { verdict, .. } = reconcile_csr(&csr, &context(&cluster, true)).await.unwrap() else {
        panic!("expected a decision")
    };
    assert!(matches!(&verdict, Verdict::Ignore { rule: wmco_csr_approver::RuleId::F1, .. }), "{verdict:?}");
    assert!(
        cluster
            .records
            .record(NAMESPACE, "machine-win-a")
            .unwrap()
            .status
            .unwrap()
            .approved_bootstrap_key_sha256
            .is_none()
    );
}
