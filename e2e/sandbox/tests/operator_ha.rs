//! High-availability scenarios 4 and 5 of issue 10, on one sandbox (the operator's processes with their manifests'
//! ServiceAccount, the e2e control plane, simulated hosts, the OVN stand-in, the `small` synthetic payload).
//!
//! 4. Two operator replicas with leader election (the sandbox's `wmco-sandbox` and a second `wmco-replica`): the
//!    leader is SIGKILLed while it configures the fleet; the other takes the Lease over and the fleet converges.
//!    The hosts' command logs (each command with its client's SSH version, which carries the process identity) show
//!    that no host received commands from both processes in interleaved turns: the killed leader's commands, then
//!    the new leader's. The takeover time is printed; only a generous bound is asserted.
//! 5. The API server restarted while the new leader runs: the operator recovers its watches, and a host added after
//!    the restart becomes a Ready Node.
//!
//!
//! Then a graceful shutdown mid-configure: the first process is back as a follower, a host is added, and the leader
//! gets SIGTERM while it configures that host: it exits 0 after releasing the Lease, the follower takes over and
//! the host becomes a Ready Node, its commands again in one turn per process.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use winhost_sim::fleet::NewHost;
use wmco_sandbox::replicas::{Replica, lease_holder, sender_turns, wait_for_holder};
use wmco_sandbox::{OPERATOR_IDENTITY, Sandbox, SandboxOptions};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions, except the takeover bound the issue
/// asks for).
const LEADER_TIMEOUT: Duration = Duration::from_secs(120);
const BUSY_TIMEOUT: Duration = Duration::from_secs(300);
const READY_TIMEOUT: Duration = Duration::from_secs(900);
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(60);
/// The Lease lasts 30 s: a follower takes over within that plus its retry; this bound is four times as long.
const TAKEOVER_BOUND: Duration = Duration::from_secs(120);

/// The second replica's identity.
const REPLICA: &str = "wmco-replica";
/// The host added after the API server restart.
const LATE_HOST: &str = "winhost-late";
const LATE_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 41);
/// The host added before the leader is stopped gracefully.
const LAST_HOST: &str = "winhost-last";
const LAST_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 42);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_replaced_without_overlap_and_the_operator_survives_an_api_server_restart()
-> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 3, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let admin = sandbox.admin_client();
    wait_for_holder(&sandbox, OPERATOR_IDENTITY, LEADER_TIMEOUT).await?;
    let mut replica = Replica::start(&sandbox, REPLICA, &[]).await?;
    ensure!(lease_holder(&admin).await?.as_deref() == Some(OPERATOR_IDENTITY), "the first process keeps leading");

    // Scenario 4: kill the leader while it configures the fleet.
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    sandbox
        .wait_for("the leader configuring every host", BUSY_TIMEOUT, || async {
            let counts = sandbox.operator_command_counts().await?;
            ensure!(counts.values().all(|count| *count > 0), "commands per host so far: {counts:?}");
            Ok(())
        })
        .await?;
    sandbox.kill_operator();
    let killed_at = Instant::now();
    let takeover = sandbox
        .wait_for("the replica taking the Lease over", TAKEOVER_BOUND, || async {
            let holder = lease_holder(&admin).await?;
            ensure!(holder.as_deref() == Some(REPLICA), "holder {holder:?}");
            Ok(killed_at.elapsed())
        })
        .await?;
    println!("takeover: {REPLICA} leads {:.1} s after the leader was killed", takeover.as_secs_f64());

    wait_until_ready(&sandbox, &mut replica, 3).await?;
    let mut turns_by_host = BTreeMap::new();
    for host in sandbox.hosts() {
        let turns = sender_turns(&sandbox.command_log(&host.info.name).await?);
        ensure!(
            turns.len() == turns.iter().collect::<std::collections::BTreeSet<_>>().len(),
            "host {} got commands from both processes in interleaved turns: {turns:?}",
            host.info.name
        );
        ensure!(
            turns.first().map(String::as_str) == Some(OPERATOR_IDENTITY),
            "host {}: the killed leader sent the first commands: {turns:?}",
            host.info.name
        );
        turns_by_host.insert(host.info.name.clone(), turns);
    }
    println!("sender turns per host: {turns_by_host:?}");
    ensure!(
        turns_by_host.values().any(|turns| turns.last().map(String::as_str) == Some(REPLICA)),
        "the new leader reached the hosts: {turns_by_host:?}"
    );

    // Scenario 5: restart the API server under the new leader, then add a host.
    sandbox.control_plane().restart_api_server().await.context("restart the API server")?;
    println!("API server restarted");
    add_host(&sandbox, LATE_HOST, LATE_ADDRESS).await?;
    wait_until_ready(&sandbox, &mut replica, 4).await?;
    let late_turns = sender_turns(&sandbox.command_log(LATE_HOST).await?);
    assert_eq!(late_turns, [REPLICA]);
    ensure!(lease_holder(&admin).await?.as_deref() == Some(REPLICA), "the replica kept the Lease over the restart");

    // Graceful shutdown of the leader while it configures a host; the first process is back as a follower.
    sandbox.start_operator().await?;
    add_host(&sandbox, LAST_HOST, LAST_ADDRESS).await?;
    sandbox
        .wait_for("the leader configuring the last host", BUSY_TIMEOUT, || async {
            let turns = sender_turns(&sandbox.command_log(LAST_HOST).await?);
            ensure!(turns == [REPLICA], "sender turns so far: {turns:?}");
            Ok(())
        })
        .await?;
    let status = replica.terminate(SHUTDOWN_TIMEOUT).await?;
    let terminated_at = Instant::now();
    assert_eq!(status, "exit status: 0");
    let log = std::fs::read_to_string(replica.log_path()).context("read the replica's log")?;
    for line in ["SIGTERM: shutting down", "controllers stopped", "lease released"] {
        ensure!(log.contains(line), "the replica's log says {line:?}");
    }
    ensure!(lease_holder(&admin).await?.as_deref() != Some(REPLICA), "the Lease was released");
    let takeover = sandbox
        .wait_for("the first process taking the Lease back", TAKEOVER_BOUND, || async {
            let holder = lease_holder(&admin).await?;
            ensure!(holder.as_deref() == Some(OPERATOR_IDENTITY), "holder {holder:?}");
            Ok(terminated_at.elapsed())
        })
        .await?;
    println!(
        "takeover after SIGTERM: {OPERATOR_IDENTITY} leads {:.1} s after the leader exited",
        takeover.as_secs_f64()
    );
    sandbox.wait_until_ready(5, READY_TIMEOUT).await?;
    let last_turns = sender_turns(&sandbox.command_log(LAST_HOST).await?);
    println!("sender turns on {LAST_HOST}: {last_turns:?}");
    ensure!(
        last_turns.len() == last_turns.iter().collect::<std::collections::BTreeSet<_>>().len()
            && last_turns.first().map(String::as_str) == Some(REPLICA),
        "host {LAST_HOST}: the stopped leader's commands, then the new leader's, never interleaved: {last_turns:?}"
    );
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// Adds a simulated host authorizing the admin key and its `windows-instances` entry.
async fn add_host(sandbox: &Sandbox, name: &str, address: Ipv4Addr) -> anyhow::Result<()> {
    let host = NewHost {
        name: Some(name.to_owned()),
        authorized_key: Some(sandbox.admin_key().public_line().to_owned()),
        address: Some(address),
        ..NewHost::default()
    };
    sandbox.fleet().lock().await.add(host).await?;
    sandbox.set_instance_entry(&address.to_string(), "username=Administrator").await?;
    Ok(())
}

/// Waits until `count` instances are Ready with Ready Nodes, failing at once if the replica exits.
async fn wait_until_ready(sandbox: &Sandbox, replica: &mut Replica, count: usize) -> anyhow::Result<()> {
    let replica = std::sync::Mutex::new(replica);
    sandbox
        .wait_for(&format!("{count} Ready instances"), READY_TIMEOUT, || async {
            replica.lock().map_err(|_| anyhow::anyhow!("replica lock poisoned"))?.check_running()?;
            let rows = sandbox.instance_rows().await?;
            let ready = rows.iter().filter(|row| row.phase == "Ready" && row.node_ready == Some(true)).count();
            ensure!(ready == count, "{ready} of {count} Ready: {rows:?}");
            Ok(())
        })
        .await?;
    Ok(())
}
