//! A BYOH host on a cloud platform (issue 35, defect 6): with the cluster's `Infrastructure` saying GCP and the
//! simulated host running on a GCP VM (its metadata server answers `instance/hostname`), the operator names the Node
//! after the metadata server's hostname — the name GCP's cloud controller knows the instance by — not after the
//! Windows host name, passes it to the kubelet as `--hostname-override`, and approves the kubelet's client and
//! serving certificates for that name (the serving request's DNS SAN is the Node name, which the approver finds in
//! the record). Before issue 35 the Node was `winhost-0`, a name the cloud controller cannot find.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, ListParams};
use wmco_cluster_client::Platform;
use wmco_cluster_client::names::{KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER};
use wmco_sandbox::{Sandbox, SandboxOptions};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const READY_TIMEOUT: Duration = Duration::from_secs(900);
const CSR_TIMEOUT: Duration = Duration::from_secs(300);

/// What the GCP metadata server answers for the sandbox's first host (`instance_metadata` in `src/hosts.rs`).
const GCP_HOSTNAME: &str = "winhost-0.us-central1-a.c.wmco-e2e.internal";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_byoh_host_on_gcp_becomes_the_node_its_metadata_server_names_with_its_csrs_approved() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions {
        hosts: 1,
        localhost_host: false,
        platform: Platform::Gcp,
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    let host = &sandbox.hosts()[0];
    assert_eq!(host.info.hostname, "WINHOST-0", "the host names itself as a stock image does");

    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let ready = sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    let [ready] = ready.as_slice() else { bail!("one Ready instance expected, got {}", ready.len()) };
    assert_eq!(ready.node.metadata.name.as_deref(), Some(GCP_HOSTNAME));
    let status = ready.instance.status.as_ref().context("a Ready record has a status")?;
    assert_eq!(status.expected_node_name.as_deref(), Some(GCP_HOSTNAME));
    assert_eq!(status.hostname.as_deref(), Some("WINHOST-0"));

    let services = sandbox.services(&host.info.name).await?;
    let kubelet = services.iter().find(|service| service.name == "kubelet").context("the kubelet service")?;
    ensure!(
        kubelet.image_path.contains(&format!("--hostname-override={GCP_HOSTNAME} ")),
        "the kubelet takes the metadata name: {}",
        kubelet.image_path
    );
    csrs_are_approved_for(&sandbox, GCP_HOSTNAME).await?;
    let unknown = sandbox.unknown_commands(&host.info.name).await?;
    ensure!(unknown.is_empty(), "the host saw unknown commands: {unknown:?}");
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// Waits until a client and a serving CSR for `node` are approved, failing at once on a denied one.
async fn csrs_are_approved_for(sandbox: &Sandbox, node: &str) -> anyhow::Result<()> {
    let csrs: Api<CertificateSigningRequest> = Api::all(sandbox.admin_client());
    let user = format!("system:node:{node}");
    sandbox
        .wait_for("an approved client and serving CSR for the node", CSR_TIMEOUT, || async {
            let mut approved = Vec::new();
            for csr in csrs.list(&ListParams::default()).await?.items {
                let name = csr.metadata.name.clone().unwrap_or_default();
                let conditions = csr.status.as_ref().and_then(|status| status.conditions.clone()).unwrap_or_default();
                let holds = |kind: &str| conditions.iter().any(|c| c.type_ == kind && c.status == "True");
                ensure!(!holds("Denied"), "CSR {name} was denied: {conditions:?}");
                if holds("Approved") {
                    approved.push((csr.spec.signer_name.clone(), csr.spec.username.clone().unwrap_or_default()));
                }
            }
            let serving =
                approved.iter().any(|(signer, requester)| signer == KUBELET_SERVING_SIGNER && *requester == user);
            let client = approved.iter().any(|(signer, _)| signer == KUBELET_CLIENT_SIGNER);
            ensure!(client && serving, "approved so far: {approved:?}");
            Ok(())
        })
        .await?;
    Ok(())
}
