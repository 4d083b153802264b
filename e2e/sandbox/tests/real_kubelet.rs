//! The real kubelet meets the real approver (issue 14): the payload's own `kubelet.exe`, run under Wine by the
//! simulated host when the operator starts the `kubelet` service, bootstraps against the e2e control plane with
//! the bootstrap kubeconfig, kubelet configuration and flags the operator wrote onto the host, and the operator's
//! CSR controller decides its client CSR.
//!
//! 1. One host, the real payload, the host's kubelet model `Wine` (`winhost_sim::wine_kubelet`): the kubelet's
//!    client CSR for `system:node:<the record's expected node name>`, requested by the node-bootstrapper, is
//!    approved by the operator (its approval reason), the signer issues the certificate, and the kubelet logs
//!    `Certificate signing request is issued`. The scenario ends there: Wine 8 does not create the symbolic link the
//!    kubelet's certificate store renames into place.
//! 2. A second real kubelet, started by the test in the same host's Wine prefix with the same bootstrap kubeconfig
//!    but `--hostname-override` naming a node no `WindowsInstance` expects, files a client CSR that the operator
//!    does not approve; the operator's log names its verdict and rule.
//!
//! Needs the control-plane binaries, the `wmco` binary (`WMCO_BIN`), the real payload (`WMCO_REAL_PAYLOAD`, both
//! set by `cargo xtask test`), and Debian's wine64 and gcc-mingw-w64-x86-64 (`.ci/install-deps.sh`).

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, ListParams};
use winhost_sim::wine_kubelet::{KubeletModel, StalledRuntime, WineLaunch};
use wmco_cluster_client::names::{
    KUBELET_CLIENT_SIGNER, NODE_BOOTSTRAPPER_NAMESPACE, NODE_BOOTSTRAPPER_SERVICE_ACCOUNT,
};
use wmco_sandbox::csr::true_condition as condition;
use wmco_sandbox::{Sandbox, SandboxOptions, real_payload_from_env};
use wmco_wine::WinePrefix;

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const CSR_TIMEOUT: Duration = Duration::from_secs(600);
const ISSUED_TIMEOUT: Duration = Duration::from_secs(300);
const DECISION_TIMEOUT: Duration = Duration::from_secs(300);

/// The node name of the second kubelet, which no `WindowsInstance` expects.
const STRANGER: &str = "wine-stranger";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_payloads_kubelet_bootstraps_and_the_operator_decides_its_csr() -> anyhow::Result<()> {
    let payload_dir = real_payload_from_env()?;
    let sandbox = Sandbox::start(SandboxOptions {
        hosts: 1,
        localhost_host: false,
        payload_dir: Some(payload_dir),
        kubelet: KubeletModel::Wine,
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let host = sandbox.hosts()[0].clone();

    // Scenario 1: the record's expected node name, then its client CSR approved by the operator.
    let node_name = sandbox
        .wait_for("the record's expected node name", CSR_TIMEOUT, || async {
            let records = sandbox.windows_instances().await?;
            records
                .iter()
                .find_map(|record| record.status.as_ref().and_then(|status| status.expected_node_name.clone()))
                .context("no record has an expected node name yet")
        })
        .await?;
    let approved = wait_for_client_csr(&sandbox, &node_name, "Approved").await?;
    let csr_name = approved.metadata.name.clone().unwrap_or_default();
    let approval = condition(&approved, "Approved").context("no Approved condition")?;
    println!("kubelet.exe's CSR {csr_name} approved: reason {}, message {:?}", approval.0, approval.1);
    ensure!(
        !approval.0.is_empty() && approval.0 != "AutoApproved",
        "the approval of {csr_name} does not carry the operator's reason: {approval:?}"
    );
    let kubelet_log = host.info.c_drive.join(r"var/log/kubelet/kubelet.log");
    sandbox
        .wait_for("the real kubelet to log its certificate's issuance", ISSUED_TIMEOUT, || async {
            let text = std::fs::read_to_string(&kubelet_log).unwrap_or_default();
            ensure!(
                text.contains("Certificate signing request is issued"),
                "{} does not say the CSR was issued yet; its tail: {}",
                kubelet_log.display(),
                tail(&text, 5)
            );
            Ok(())
        })
        .await?;
    let log_text = std::fs::read_to_string(&kubelet_log)?;
    ensure!(
        log_text.contains("Kubernetes v1.36.3") || log_text.contains("v1.36.3"),
        "the kubelet log names no version"
    );

    // Scenario 2: a kubelet for a node no record expects is not approved.
    let services = sandbox.services(&host.info.name).await?;
    let kubelet_service = services.iter().find(|service| service.name == "kubelet").context("no kubelet service")?;
    let launch = stranger_launch(WineLaunch::from_image_path(&kubelet_service.image_path));
    let prefix = WinePrefix::prepare_in(&host.info.c_drive.parent().context("the host's directory")?.join("wine"))?;
    let stranger_log_path = sandbox.directory().join("stranger-kubelet.log");
    let stranger_log = std::fs::File::create(&stranger_log_path)?;
    let runtime = StalledRuntime::start().await?;
    let mut stranger = tokio::process::Command::from({
        let mut command = prefix.command(&launch.executable);
        command
            .args(&launch.arguments)
            .arg(runtime.endpoint_argument())
            .stdout(Stdio::from(stranger_log.try_clone()?))
            .stderr(Stdio::from(stranger_log));
        command
    })
    .kill_on_drop(true)
    .spawn()?;
    let pending = wait_for_client_csr(&sandbox, STRANGER, "").await;
    let decided = match pending {
        Ok(csr) => {
            let name = csr.metadata.name.clone().unwrap_or_default();
            let line = wait_for_decision(&sandbox, &name).await;
            let current: Api<CertificateSigningRequest> = Api::all(sandbox.admin_client());
            let now = current.get(&name).await?;
            (name, line, condition(&now, "Approved"))
        }
        Err(error) => {
            let _ = stranger.kill().await;
            let text = std::fs::read_to_string(&stranger_log_path).unwrap_or_default();
            return Err(error.context(format!("the stranger kubelet's log ends: {}", tail(&text, 8))));
        }
    };
    let _ = stranger.kill().await;
    prefix.shut_down();
    let (name, line, approval) = decided;
    let line = line?;
    println!("the stranger's CSR {name}: {line}");
    ensure!(approval.is_none(), "the operator approved {name} for {STRANGER}, which no record expects: {approval:?}");
    ensure!(
        (line.contains("ignore") || line.contains("deny")) && line.contains("rule"),
        "the operator's decision on {name} names no verdict and rule: {line}"
    );
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// The stranger kubelet: the service's arguments with another node name, certificate directory and kubeconfig.
fn stranger_launch(mut launch: WineLaunch) -> WineLaunch {
    for argument in &mut launch.arguments {
        let flag = argument.trim_start_matches('-').split('=').next().unwrap_or_default().to_owned();
        match flag.as_str() {
            "hostname-override" => *argument = format!("--hostname-override={STRANGER}"),
            "cert-dir" => *argument = format!(r"--cert-dir=C:\var\lib\kubelet\pki-{STRANGER}"),
            "kubeconfig" => *argument = format!(r"--kubeconfig=C:\k\kubeconfig-{STRANGER}"),
            _ => {}
        }
    }
    launch
}

/// Waits for a client CSR for `system:node:<node>` requested by the node-bootstrapper, with condition `kind`
/// (`Approved`), or any (empty `kind`).
async fn wait_for_client_csr(sandbox: &Sandbox, node: &str, kind: &str) -> anyhow::Result<CertificateSigningRequest> {
    let bootstrapper =
        format!("system:serviceaccount:{NODE_BOOTSTRAPPER_NAMESPACE}:{NODE_BOOTSTRAPPER_SERVICE_ACCOUNT}");
    let subject = format!("system:node:{node}");
    let csrs: Api<CertificateSigningRequest> = Api::all(sandbox.admin_client());
    let what =
        format!("a client CSR for {subject}{}", if kind.is_empty() { String::new() } else { format!(" {kind}") });
    let found = sandbox
        .wait_for(&what, CSR_TIMEOUT, || async {
            for csr in csrs.list(&ListParams::default()).await?.items {
                let name = csr.metadata.name.clone().unwrap_or_default();
                if csr.spec.signer_name != KUBELET_CLIENT_SIGNER
                    || csr.spec.username.as_deref() != Some(bootstrapper.as_str())
                    || subject_common_name(&csr.spec.request.0)? != subject
                {
                    continue;
                }
                if let Some(denied) = condition(&csr, "Denied")
                    && kind == "Approved"
                {
                    bail!("CSR {name} for {subject} was denied: {denied:?}");
                }
                if kind.is_empty() || condition(&csr, kind).is_some() {
                    return Ok(csr);
                }
            }
            bail!("none yet")
        })
        .await?;
    Ok(found)
}

/// The operator's `CSR decided` log line naming `csr_name`.
async fn wait_for_decision(sandbox: &Sandbox, csr_name: &str) -> anyhow::Result<String> {
    let log_path = sandbox.operator_log_path();
    let line = sandbox
        .wait_for(&format!("the operator's decision on {csr_name}"), DECISION_TIMEOUT, || async {
            let text = std::fs::read_to_string(&log_path)?;
            text.lines()
                .find(|line| line.contains("CSR decided") && line.contains(csr_name))
                .map(str::to_owned)
                .context("not decided yet")
        })
        .await?;
    Ok(line)
}

/// The subject CN of a PEM PKCS#10 request.
fn subject_common_name(request_pem: &[u8]) -> anyhow::Result<String> {
    wmco_sandbox::csr::subject_common_name(request_pem).context("a CSR without a readable subject CN")
}

/// The last `count` lines of `text`, joined with ` | `.
fn tail(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join(" | ")
}
