//! The live bootstrap guard (issue 21) on the real control plane: one client identity per node and configuration
//! attempt, even when the first bootstrap CSR was approved by an admin and the operator recorded nothing.
//!
//! One host, its uploads slowed to a crawl so the operator's configuration stays in phase `Configuring` (expected
//! node name and `configuringSince` recorded, the kubelet never started). With the operator stopped:
//! 1. a bootstrap CSR for the node, filed with the node-bootstrapper's credential, is approved by the admin by hand
//!    (`kubectl certificate approve`) and issued by kube-controller-manager; the record holds no bootstrap key;
//! 2. a second bootstrap CSR for the same node, another key, the same credential, is filed.
//!
//! The operator starts again and decides the second CSR: it stays unapproved until the operator's log shows the
//! decision, and the verdict is `ignore` by rule F2 naming the admin-approved CSR (the old approver, which saw only
//! pending CSRs and the record's key, approved it).
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestSpec,
};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use winhost_sim::scm::State;
use winhost_sim::ssh::lock;
use wmco_cluster_client::names::{
    KUBELET_CLIENT_SIGNER, NODE_BOOTSTRAPPER_NAMESPACE, NODE_BOOTSTRAPPER_SERVICE_ACCOUNT,
};
use wmco_cluster_client::types::InstancePhase;
use wmco_sandbox::csr::true_condition as condition;
use wmco_sandbox::{Sandbox, SandboxOptions};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const CONFIGURING_TIMEOUT: Duration = Duration::from_secs(300);
const ISSUED_TIMEOUT: Duration = Duration::from_secs(120);
const DECISION_TIMEOUT: Duration = Duration::from_secs(300);
/// The host's SFTP bandwidth (bytes per second) while the test runs: the payload takes many minutes to upload,
/// so the kubelet service is not started while the test runs.
const CRAWL: u64 = 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_bootstrap_key_is_never_approved_after_an_admin_approved_the_first() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 1, localhost_host: false, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let host = sandbox.hosts()[0].clone();
    let server = sandbox.server(&host.info.name).await?;
    *lock(&server.throttle) = CRAWL;
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;

    // The record in its bootstrap window: Configuring, expected node name and attempt start recorded.
    let (record_name, node_name) = sandbox
        .wait_for("the record Configuring with its expected node name", CONFIGURING_TIMEOUT, || async {
            let records = sandbox.windows_instances().await?;
            let record = records.first().context("no WindowsInstance yet")?;
            let status = record.status.clone().unwrap_or_default();
            let node = status.expected_node_name.context("no expected node name yet")?;
            ensure!(status.phase == Some(InstancePhase::Configuring), "phase {:?}", status.phase);
            ensure!(status.configuring_since.is_some(), "no configuringSince yet");
            Ok((record.metadata.name.clone().unwrap_or_default(), node))
        })
        .await?;
    sandbox.kill_operator();
    println!("operator stopped; record {record_name} is Configuring for node {node_name}");
    let kubelet_running = sandbox
        .services(&host.info.name)
        .await?
        .iter()
        .any(|service| service.name == "kubelet" && service.state != State::Stopped);
    ensure!(!kubelet_running, "the host's kubelet already runs; the scenario needs a host that has not bootstrapped");
    let admin_csrs: Api<CertificateSigningRequest> = Api::all(sandbox.admin_client());
    ensure!(client_csrs(&admin_csrs).await?.is_empty(), "a client CSR exists before the test filed one");

    // 1. The admin approves a bootstrap CSR for the node by hand; kube-controller-manager issues it.
    let token = sandbox.control_plane().node_bootstrapper_token().await?;
    let bootstrapper_name =
        format!("system:serviceaccount:{NODE_BOOTSTRAPPER_NAMESPACE}:{NODE_BOOTSTRAPPER_SERVICE_ACCOUNT}");
    let bootstrapper = sandbox.control_plane().client_for_token(&bootstrapper_name, &token).await?;
    let bootstrapper_csrs: Api<CertificateSigningRequest> = Api::all(bootstrapper);
    let first = bootstrapper_csrs.create(&PostParams::default(), &bootstrap_request(&node_name)?).await?;
    let first_name = first.metadata.name.clone().context("an unnamed CSR")?;
    ensure!(first.spec.username.as_deref() == Some(bootstrapper_name.as_str()), "requester {:?}", first.spec.username);
    approve_by_hand(&admin_csrs, &first_name).await?;
    sandbox
        .wait_for(&format!("CSR {first_name} issued"), ISSUED_TIMEOUT, || async {
            let csr = admin_csrs.get(&first_name).await?;
            let issued = csr.status.and_then(|status| status.certificate).is_some_and(|cert| !cert.0.is_empty());
            ensure!(issued, "no certificate yet");
            Ok(())
        })
        .await?;
    println!("admin approved {first_name} for system:node:{node_name}; issued");

    // 2. Another key for the same node, the same credential.
    let second = bootstrapper_csrs.create(&PostParams::default(), &bootstrap_request(&node_name)?).await?;
    let second_name = second.metadata.name.clone().context("an unnamed CSR")?;
    let records = sandbox.windows_instances().await?;
    let recorded_key = records.first().and_then(|record| record.status.as_ref()?.approved_bootstrap_key_sha256.clone());
    ensure!(
        recorded_key.is_none(),
        "the record holds a bootstrap key ({recorded_key:?}); the guard must be the live one"
    );

    sandbox.start_operator().await?;
    let log_path = sandbox.operator_log_path();
    let decision = sandbox
        .wait_for(&format!("the operator's decision on {second_name}"), DECISION_TIMEOUT, || async {
            let csr = admin_csrs.get(&second_name).await?;
            if let Some(approved) = condition(&csr, "Approved") {
                return Ok(Err(format!("{second_name} was approved: {approved:?}")));
            }
            let log = std::fs::read_to_string(&log_path)?;
            let line = log
                .lines()
                .find(|line| line.contains("CSR decided") && names_csr(line, &second_name))
                .context("not decided yet")?;
            Ok(Ok(line.to_owned()))
        })
        .await?;
    let line = match decision {
        Ok(line) => line,
        Err(approved) => bail!("a second bootstrap key for {node_name} was approved: {approved}"),
    };
    println!("operator: {line}");
    ensure!(line.contains("\"ignore\""), "the verdict on {second_name} is not an ignore: {line}");
    ensure!(line.contains("F2"), "the verdict on {second_name} does not name rule F2: {line}");
    ensure!(line.contains(&first_name), "the verdict on {second_name} does not name {first_name}: {line}");
    let now = admin_csrs.get(&second_name).await?;
    ensure!(condition(&now, "Approved").is_none(), "{second_name} was approved after the decision was logged");
    ensure!(now.status.and_then(|status| status.certificate).is_none(), "{second_name} carries a certificate");
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// A kubelet-shaped bootstrap CSR for `node` with a new P-256 key: `CN=system:node:<node>`, `O=system:nodes`, no
/// extension, the client signer and usages.
fn bootstrap_request(node: &str) -> anyhow::Result<CertificateSigningRequest> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, format!("system:node:{node}"));
    subject.push(DnType::OrganizationName, "system:nodes");
    params.distinguished_name = subject;
    let pem = params.serialize_request(&key)?.pem()?;
    Ok(CertificateSigningRequest {
        metadata: ObjectMeta { generate_name: Some("e2e-guard-".to_owned()), ..ObjectMeta::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.into_bytes()),
            signer_name: KUBELET_CLIENT_SIGNER.to_owned(),
            usages: Some(vec!["digital signature".to_owned(), "client auth".to_owned()]),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    })
}

/// What `kubectl certificate approve NAME` does: the CSR as read, with an Approved condition, PUT to `/approval`.
async fn approve_by_hand(csrs: &Api<CertificateSigningRequest>, name: &str) -> anyhow::Result<()> {
    let mut csr = csrs.get(name).await?;
    let status = csr.status.get_or_insert_default();
    status.conditions.get_or_insert_default().push(CertificateSigningRequestCondition {
        type_: "Approved".to_owned(),
        status: "True".to_owned(),
        reason: Some("KubectlApprove".to_owned()),
        message: Some("This CSR was approved by kubectl certificate approve.".to_owned()),
        ..CertificateSigningRequestCondition::default()
    });
    csrs.replace_subresource("approval", name, &PostParams::default(), &csr).await?;
    Ok(())
}

/// Names of the CSRs of the kubelet client signer.
async fn client_csrs(csrs: &Api<CertificateSigningRequest>) -> anyhow::Result<Vec<String>> {
    Ok(csrs
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|csr| csr.spec.signer_name == KUBELET_CLIENT_SIGNER)
        .filter_map(|csr| csr.metadata.name)
        .collect())
}

/// Whether an operator log line (text `csr=NAME` or JSON `"csr":"NAME"`) is about CSR `name`.
fn names_csr(line: &str, name: &str) -> bool {
    line.contains(&format!("csr={name} ")) || line.contains(&format!("\"csr\":\"{name}\""))
}
