//! Preflight against the real operator (issue 18): a Windows Server 2016 host (build 14393) listed next to a
//! healthy one is refused before anything is installed on it, with the build named on its record and in a Warning
//! Event, while the healthy host turns Ready.
//!
//! Proof: the healthy host is Ready; the old host's record is `Failed` with the `PreflightFailed` condition naming
//! build 14393, a `PreflightCheckFailed` Warning Event names the `WindowsBuild` check; every command the operator
//! sent to the old host is the identity command (retries included), it has no service, and its `C:\k` was never
//! created. `wmco preflight` run against both hosts exits 1 naming the build for the old one and 0 for the healthy
//! one (six checks).
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use winhost_sim::fleet::NewHost;
use wmco_cluster_client::types::{InstancePhase, PREFLIGHT_FAILED_CONDITION};
use wmco_instance_inventory::instance_name;
use wmco_sandbox::operator::locate_operator_binary;
use wmco_sandbox::{HOST_USER, Sandbox, SandboxOptions};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const READY_TIMEOUT: Duration = Duration::from_secs(600);
const FAILURE_TIMEOUT: Duration = Duration::from_secs(300);
/// Windows Server 2016.
const OLD_BUILD: u32 = 14393;
const OLD_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_2016_host_is_refused_with_its_build_named_and_nothing_installed() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 1, localhost_host: false, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let request = NewHost {
        name: Some("winhost-2016".to_owned()),
        authorized_key: Some(sandbox.admin_key().public_line().to_owned()),
        build: Some(OLD_BUILD),
        address: Some(OLD_ADDRESS),
        ..NewHost::default()
    };
    let old = sandbox.fleet().lock().await.add(request).await?;
    let mut entries = sandbox.entries_for_all_hosts();
    entries.insert(OLD_ADDRESS.to_string(), format!("username={HOST_USER}"));
    sandbox.write_instances(&entries).await?;

    sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    let record_name = instance_name(&OLD_ADDRESS.to_string());
    let record = sandbox
        .wait_for("the 2016 host's record to fail its preflight", FAILURE_TIMEOUT, || async {
            let records = sandbox.windows_instances().await?;
            records
                .into_iter()
                .find(|record| {
                    record.metadata.name.as_deref() == Some(&record_name)
                        && record.status.as_ref().is_some_and(|status| {
                            status.phase == Some(InstancePhase::Failed)
                                && status.condition_is_true(PREFLIGHT_FAILED_CONDITION)
                        })
                })
                .context("not Failed with PreflightFailed yet")
        })
        .await?;
    let status = record.status.context("no status")?;
    let condition = status.condition(PREFLIGHT_FAILED_CONDITION).context("no PreflightFailed condition")?;
    ensure!(
        condition.message.contains("WindowsBuild: Windows build 14393 is not supported"),
        "the condition does not name the build: {}",
        condition.message
    );
    ensure!(status.expected_node_name.is_none(), "an identity was recorded for a refused host");

    let events = sandbox.events_about("WindowsInstance", &record_name).await?;
    ensure!(
        events.iter().any(|(kind, reason, note)| kind == "Warning"
            && reason == "PreflightCheckFailed"
            && note.starts_with("WindowsBuild: Windows build 14393")),
        "no Warning Event names the build check: {events:#?}"
    );

    let commands = sandbox.operator_commands(&old.name).await?;
    ensure!(!commands.is_empty(), "the operator never reached the 2016 host");
    let identity_line = &commands[0].line;
    ensure!(
        commands.iter().all(|command| &command.line == identity_line),
        "a command other than the identity command reached the 2016 host: {:#?}",
        commands.iter().map(|command| &command.line).collect::<Vec<_>>()
    );
    ensure!(sandbox.services(&old.name).await?.is_empty(), "a service was installed on the 2016 host");
    ensure!(!old.c_drive.join("k").exists(), "C:\\k was created on the 2016 host");

    // `wmco preflight` from an admin's machine says the same, and passes the healthy host.
    let (code, json) = preflight_cli(&sandbox, &OLD_ADDRESS.to_string())?;
    ensure!(code == Some(1), "wmco preflight exited {code:?} for the 2016 host: {json}");
    ensure!(json["kind"] == "Preflight", "{json}");
    let build = &json["checks"][1];
    ensure!(
        build["name"] == "WindowsBuild"
            && build["passed"] == false
            && build["detail"].as_str().is_some_and(|detail| detail.contains("14393")),
        "{json}"
    );
    let healthy = sandbox.hosts()[0].key.clone();
    let (code, json) = preflight_cli(&sandbox, &healthy)?;
    ensure!(code == Some(0), "wmco preflight exited {code:?} for the healthy host: {json}");
    ensure!(json["checks"].as_array().is_some_and(|checks| checks.len() == 6), "{json}");
    ensure!(json["nodeName"] == sandbox.hosts()[0].info.name.to_lowercase(), "{json}");
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// Runs `wmco preflight ADDRESS --user Administrator --key FILE --port PORT -o json`: its exit code and document.
fn preflight_cli(sandbox: &Sandbox, address: &str) -> anyhow::Result<(Option<i32>, serde_json::Value)> {
    let scratch = tempfile::tempdir()?;
    let key = scratch.path().join("key");
    std::fs::write(&key, sandbox.admin_key().private_openssh())?;
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    let output = std::process::Command::new(locate_operator_binary()?)
        .args(["preflight", address, "--user", HOST_USER, "--port", &sandbox.ssh_port().to_string(), "-o", "json"])
        .arg("--key")
        .arg(&key)
        .output()?;
    let stdout = String::from_utf8(output.stdout)?;
    let json = serde_json::from_str(&stdout).with_context(|| {
        format!("not one JSON document: {stdout}; stderr {}", String::from_utf8_lossy(&output.stderr))
    })?;
    Ok((output.status.code(), json))
}
