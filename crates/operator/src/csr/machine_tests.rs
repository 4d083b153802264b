//! A Machine-backed record's bootstrap CSR: decided with the Machine read through the context's `Machines` (creation
//! time and nodeRef feed rule F1), approved, its key recorded on the record; without `Machines` the record takes no
//! part and the CSR is left alone.

use std::sync::Arc;

use base64::Engine;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PublicKeyData};
use serde_json::json;
use sha2::{Digest, Sha256};
use wmco_cluster_client::fake::{FakeCluster, FakeCsrs, FakeInstanceRecords, FakeMachines};
use wmco_cluster_client::types::{
    InstanceOrigin, InstancePhase, Machine, WindowsInstance, WindowsInstanceSpec, WindowsInstanceStatus,
};
use wmco_cluster_client::{InstanceRecords, Machines, Seams};
use wmco_csr_approver::Verdict;

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
    let machine: Machine = serde_json::from_value(json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": {"name": "win-a", "namespace": "openshift-machine-api",
                     "creationTimestamp": minutes_ago(30).to_string()},
        "spec": {},
        "status": {"phase": "Provisioned", "addresses": [
            {"type": "InternalIP", "address": "10.0.1.5"}, {"type": "InternalDNS", "address": NODE}]}
    }))
    .unwrap();
    machines.insert(machine);
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
    let context = CsrContext::new(&seams, settings);
    if with_machines { context.with_machines(cluster.machines.clone()) } else { context }
}

fn bootstrap_csr(key: &KeyPair) -> CertificateSigningRequest {
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, format!("system:node:{NODE}"));
    subject.push(DnType::OrganizationName, "system:nodes");
    params.distinguished_name = subject;
    let pem = params.serialize_request(key).unwrap().pem().unwrap();
    serde_json::from_value(json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "csr-boot", "resourceVersion": "7", "creationTimestamp": minutes_ago(5).to_string()},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(pem),
            "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
            "username": "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator",
                       "system:authenticated"],
            "usages": ["digital signature", "client auth"],
        }
    }))
    .unwrap()
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

#[tokio::test]
async fn without_machines_or_with_a_node_ref_the_machines_csr_is_not_approved() {
    let cluster = cluster().await;
    let csr = bootstrap_csr(&KeyPair::generate().unwrap());
    cluster.csrs.insert(csr.clone());
    let CsrOutcome::Decided { verdict, .. } = reconcile_csr(&csr, &context(&cluster, false)).await.unwrap() else {
        panic!("expected a decision")
    };
    assert!(matches!(verdict, Verdict::Ignore { .. }), "{verdict:?}");

    let mut machine = cluster.machines.get("openshift-machine-api", "win-a").await.unwrap().unwrap();
    machine.status.as_mut().unwrap().node_ref = serde_json::from_value(json!({"name": NODE})).unwrap();
    cluster.machines.insert(machine);
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
