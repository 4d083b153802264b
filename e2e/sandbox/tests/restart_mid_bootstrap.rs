//! An operator that stops while a host's kubelet bootstraps: the kubelet files its client CSR while no operator runs
//! (the operator frozen with SIGSTOP right after it placed the bootstrap kubeconfig, so the kubelet starts while
//! it is frozen), then the operator is killed and started again. The new process must approve the CSR the kubelet
//! is waiting on (a kubelet waits up to an hour for its first certificate and files no other meanwhile), and the
//! host must become a Ready Node.
//!
//! Found in the HA test (issue 36): a leader stopped with SIGTERM a second before the host's kubelet filed its
//! CSR; the next leader never decided that CSR.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, ListParams};
use winhost_sim::host::Latency;
use wmco_sandbox::{Sandbox, SandboxOptions};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(300);
const CSR_TIMEOUT: Duration = Duration::from_secs(120);
const READY_TIMEOUT: Duration = Duration::from_secs(300);
/// Slow commands: the pass takes at least this long between placing the bootstrap kubeconfig and starting the
/// kubelet, so the test freezes the operator in between.
const COMMAND_LATENCY: Duration = Duration::from_millis(500);
const BOOTSTRAP_KUBECONFIG: &str = r"C:\k\bootstrap-kubeconfig";
const KUBELET_LOG: &str = r"C:\var\log\kubelet\kubelet.log";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bootstrap_csr_filed_while_no_operator_runs_is_approved_by_the_next_one() -> anyhow::Result<()> {
    let latency = Latency { command: COMMAND_LATENCY, ..Latency::realistic() };
    let sandbox =
        Sandbox::start(SandboxOptions { hosts: 1, localhost_host: false, latency, ..SandboxOptions::default() })
            .await
            .context("the sandbox did not start")?;
    let host = sandbox.hosts()[0].info.name.clone();
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;

    sandbox
        .wait_for("the bootstrap kubeconfig on the host", UPLOAD_TIMEOUT, || async {
            ensure!(sandbox.read_file(&host, BOOTSTRAP_KUBECONFIG).await?.is_some(), "not yet");
            Ok(())
        })
        .await?;
    let pid = sandbox.operator_pid().context("the operator runs")?;
    signal(pid, "STOP")?;
    sandbox
        .wait_for("the kubelet's client CSR", CSR_TIMEOUT, || async {
            let log = sandbox.read_file(&host, KUBELET_LOG).await?.unwrap_or_default();
            ensure!(String::from_utf8_lossy(&log).contains("created client certificate signing request"), "not yet");
            Ok(())
        })
        .await?;
    let csrs: Api<CertificateSigningRequest> = Api::all(sandbox.admin_client());
    let pending = csrs
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|csr| csr.status.as_ref().and_then(|status| status.conditions.as_ref()).is_none_or(Vec::is_empty))
        .count();
    ensure!(pending == 1, "the kubelet's CSR is pending while the operator is frozen ({pending} pending)");

    sandbox.kill_operator();
    sandbox.start_operator().await?;
    sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    Ok(())
}

/// Sends `signal` (a `kill -s` name) to process `pid`.
fn signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = std::process::Command::new("kill").args(["-s", signal, &pid.to_string()]).status()?;
    ensure!(status.success(), "kill -s {signal} {pid}: {status}");
    Ok(())
}
