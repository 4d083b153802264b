//! A host whose OpenSSH default shell is PowerShell (issue 18), against the real operator over real SSH: sshd then
//! runs every exec request as `powershell.exe -c "<command>"`, where cmd.exe's `&&` chains do not parse and `sc`
//! is Set-Content. The operator reads the shell in its state probe and hands every later command to cmd.exe
//! through PowerShell's stop-parsing token.
//!
//! Proof: the host joins as a Ready node and leaves cleanly (no service, firewall rule, Defender exclusion or
//! `C:\k` left, the Node gone); every command after the first state probe went through `cmd.exe /c --%`, and the
//! simulator, which interprets exec requests with the PowerShell subset for such a host, met no unknown command.
//! Were the commands sent as for cmd.exe, the first command chain would fail and the host would never be Ready.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use winhost_sim::fleet::NewHost;
use winhost_sim::host::RegValue;
use wmco_instance_inventory::instance_name;
use wmco_sandbox::{HOST_USER, Sandbox, SandboxOptions};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const READY_TIMEOUT: Duration = Duration::from_secs(600);
const REMOVAL_TIMEOUT: Duration = Duration::from_secs(300);
const ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 63);
/// Windows PowerShell, as an admin sets it as OpenSSH's default shell (windows-commands.md §2).
const POWERSHELL: &str = r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_whose_default_shell_is_powershell_joins_and_leaves() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 0, localhost_host: false, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let request = NewHost {
        name: Some("winhost-ps".to_owned()),
        authorized_key: Some(sandbox.admin_key().public_line().to_owned()),
        address: Some(ADDRESS),
        ..NewHost::default()
    };
    let host = sandbox.fleet().lock().await.add(request).await?;
    {
        let server = sandbox.server(&host.name).await?;
        let mut state = winhost_sim::ssh::lock(&server.host);
        state.set_registry_value(r"HKLM\SOFTWARE\OpenSSH", "DefaultShell", RegValue::String(POWERSHELL.to_owned()));
        ensure!(state.default_shell() == winhost_sim::host::ExecShell::PowerShell, "the shell did not take");
    }
    let key = ADDRESS.to_string();
    sandbox.write_instances(&[(key.clone(), format!("username={HOST_USER}"))].into()).await?;
    let ready = sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    ensure!(ready.len() == 1, "{ready:?}");

    let commands = sandbox.operator_commands(&host.name).await?;
    let first_probe = commands
        .iter()
        .position(|command| command.line.contains(r"C:\k\wmco\scripts\"))
        .context("no state probe reached the host")?;
    let later = &commands[first_probe + 1..];
    ensure!(!later.is_empty(), "nothing ran after the first probe");
    for command in later {
        ensure!(
            command.line.starts_with("cmd.exe /c --% ") && command.line.ends_with("\nexit $LASTEXITCODE"),
            "a command after the first probe did not go through cmd.exe: {}",
            command.line
        );
    }
    ensure!(sandbox.unknown_commands(&host.name).await?.is_empty(), "the simulator met an unknown command");
    ensure!(!sandbox.services(&host.name).await?.is_empty(), "no service on the Ready host");

    sandbox.remove_instance_entry(&key).await?;
    let record = instance_name(&key);
    sandbox
        .wait_for("the record and the Node to go", REMOVAL_TIMEOUT, || async {
            let records = sandbox.windows_instances().await?;
            ensure!(records.iter().all(|found| found.metadata.name.as_deref() != Some(&record)), "record still there");
            ensure!(sandbox.windows_nodes().await?.is_empty(), "Node still there");
            Ok(())
        })
        .await?;
    ensure!(sandbox.services(&host.name).await?.is_empty(), "services left behind");
    ensure!(sandbox.firewall_rules(&host.name).await?.is_empty(), "firewall rules left behind");
    ensure!(sandbox.defender_exclusions(&host.name).await?.is_empty(), "a Defender exclusion left behind");
    ensure!(!host.c_drive.join("k").exists(), "C:\\k left behind");
    ensure!(sandbox.unknown_commands(&host.name).await?.is_empty(), "the simulator met an unknown command");
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}
