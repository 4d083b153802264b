//! Hosts without the Windows feature `Containers` (issue 18), against the real operator over real SSH: the operator
//! installs the feature (`Install-WindowsFeature`, which leaves it `EnablePending`), restarts the host
//! (`Restart-Computer -Force`: the simulator drops every connection, refuses new ones for a while, then comes back
//! with the feature enabled, a new `LastBootUpTime` and its automatic services started), sees it back, and
//! configures it.
//!
//! Proof:
//! - two such hosts with `--max-unavailable 1` each reboot exactly once, never at the same time (the simulator's
//!   reboot windows are disjoint; each reboot keeps its host away for 4 s, so hosts rebooted without the budget
//!   would overlap), and both join as Ready Nodes; the records say the reboot completed;
//! - an operator killed (SIGKILL) while a host reboots converges after its restart: the host reboots once, joins,
//!   and its record's reboot is completed.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use winhost_sim::fleet::{HostInfo, NewHost};
use winhost_sim::host::RebootWindow;
use wmco_cluster_client::types::DisruptionState;
use wmco_instance_inventory::instance_name;
use wmco_sandbox::{HOST_USER, Sandbox, SandboxOptions};
use wmco_windows_services::decode_encoded_command;

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const READY_TIMEOUT: Duration = Duration::from_secs(600);
const REBOOT_TIMEOUT: Duration = Duration::from_secs(300);
/// How long each simulated reboot keeps its host away.
const REBOOT_PAUSE: Duration = Duration::from_secs(4);

/// Adds a host whose `Containers` feature is `Disabled`, listening on `address`, with reboots of [`REBOOT_PAUSE`].
async fn host_without_containers(sandbox: &Sandbox, name: &str, address: Ipv4Addr) -> anyhow::Result<HostInfo> {
    let request = NewHost {
        name: Some(name.to_owned()),
        authorized_key: Some(sandbox.admin_key().public_line().to_owned()),
        address: Some(address),
        containers: Some("Disabled".to_owned()),
        ..NewHost::default()
    };
    let host = sandbox.fleet().lock().await.add(request).await?;
    let server = sandbox.server(&host.name).await?;
    winhost_sim::ssh::lock(&server.host).reboot_pause = Some(REBOOT_PAUSE);
    Ok(host)
}

/// The host's reboots, its `Containers` state and its boot count.
async fn reboots(sandbox: &Sandbox, name: &str) -> anyhow::Result<(Vec<RebootWindow>, Option<String>, u64)> {
    let server = sandbox.server(name).await?;
    let host = winhost_sim::ssh::lock(&server.host);
    Ok((host.reboot_windows.clone(), host.features.get("Containers").cloned(), host.boots))
}

/// The PowerShell scripts the operator ran on the host, decoded.
async fn powershell_scripts(sandbox: &Sandbox, name: &str) -> anyhow::Result<Vec<String>> {
    let commands = sandbox.operator_commands(name).await?;
    Ok(commands
        .iter()
        .filter_map(|command| command.line.split("-EncodedCommand ").nth(1))
        .filter_map(|encoded| decode_encoded_command(encoded.split_whitespace().next()?))
        .collect())
}

/// The state of the disruption (the reboot) the record of `address` shows.
async fn reboot_state(sandbox: &Sandbox, address: &str) -> anyhow::Result<Option<DisruptionState>> {
    let record = instance_name(address);
    let records = sandbox.windows_instances().await?;
    let found = records.iter().find(|found| found.metadata.name.as_deref() == Some(&record));
    Ok(found.and_then(|record| record.status.as_ref()?.disruption.as_ref()).map(|reboot| reboot.state))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_without_containers_reboot_once_each_one_at_a_time_and_join() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions {
        hosts: 0,
        localhost_host: false,
        operator_args: vec!["--max-unavailable=1".to_owned()],
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    let addresses = [Ipv4Addr::new(127, 0, 0, 71), Ipv4Addr::new(127, 0, 0, 72)];
    let mut hosts = Vec::new();
    for (index, address) in addresses.iter().enumerate() {
        hosts.push(host_without_containers(&sandbox, &format!("winhost-noctr-{index}"), *address).await?);
    }
    let entries: BTreeMap<String, String> =
        addresses.iter().map(|address| (address.to_string(), format!("username={HOST_USER}"))).collect();
    sandbox.write_instances(&entries).await?;
    let ready = sandbox.wait_until_ready(2, READY_TIMEOUT).await?;
    ensure!(ready.len() == 2, "{ready:?}");

    let mut windows = Vec::new();
    for (host, address) in hosts.iter().zip(addresses) {
        let (reboots, containers, boots) = reboots(&sandbox, &host.name).await?;
        ensure!(boots == 1 && reboots.len() == 1, "{} rebooted {boots} times: {reboots:?}", host.name);
        ensure!(containers.as_deref() == Some("Enabled"), "{}: Containers is {containers:?}", host.name);
        let state = reboot_state(&sandbox, &address.to_string()).await?;
        ensure!(state == Some(DisruptionState::Completed), "{}: the record's reboot is {state:?}", host.name);
        let events = sandbox.events_about("WindowsInstance", &instance_name(&address.to_string())).await?;
        for reason in ["HostRebooting", "HostRebooted"] {
            ensure!(events.iter().any(|(_, found, _)| found == reason), "{}: no {reason} Event: {events:?}", host.name);
        }
        ensure!(sandbox.unknown_commands(&host.name).await?.is_empty(), "the simulator met an unknown command");
        let scripts = powershell_scripts(&sandbox, &host.name).await?;
        let count = |cmdlet: &str| scripts.iter().filter(|script| script.contains(cmdlet)).count();
        ensure!(count("Install-WindowsFeature -Name Containers") == 1, "{}: not installed exactly once", host.name);
        ensure!(count("Restart-Computer -Force") == 1, "{}: not restarted exactly once", host.name);
        windows.push(reboots[0]);
    }
    ensure!(!windows[0].overlaps(&windows[1]), "the two hosts rebooted at the same time: {windows:?}");
    println!("reboot windows: {windows:?}");
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_while_a_host_reboots_converges_after_its_restart() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 0, localhost_host: false, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let address = Ipv4Addr::new(127, 0, 0, 73);
    let host = host_without_containers(&sandbox, "winhost-noctr-kill", address).await?;
    let server = sandbox.server(&host.name).await?;
    // Long enough for the kill to land while the host is away.
    winhost_sim::ssh::lock(&server.host).reboot_pause = Some(Duration::from_secs(10));
    let key = address.to_string();
    sandbox.write_instances(&[(key.clone(), format!("username={HOST_USER}"))].into()).await?;

    sandbox
        .wait_for("the host to be rebooting", REBOOT_TIMEOUT, || async {
            let state = reboot_state(&sandbox, &key).await?;
            ensure!(state == Some(DisruptionState::Restarting), "the record's reboot is {state:?}");
            Ok(())
        })
        .await?;
    sandbox.kill_operator();
    sandbox.start_operator().await?;
    let ready = sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    ensure!(ready.len() == 1, "{ready:?}");

    let (reboots, containers, boots) = reboots(&sandbox, &host.name).await?;
    ensure!(boots == 1 && reboots.len() == 1, "rebooted {boots} times: {reboots:?}");
    let restarts = powershell_scripts(&sandbox, &host.name).await?;
    let restarts = restarts.iter().filter(|script| script.contains("Restart-Computer -Force")).count();
    ensure!(restarts == 1, "Restart-Computer sent {restarts} times");
    ensure!(containers.as_deref() == Some("Enabled"), "Containers is {containers:?}");
    let state = reboot_state(&sandbox, &key).await?;
    ensure!(state == Some(DisruptionState::Completed), "the record's reboot is {state:?}");
    ensure!(sandbox.unknown_commands(&host.name).await?.is_empty(), "the simulator met an unknown command");
    Ok(())
}
