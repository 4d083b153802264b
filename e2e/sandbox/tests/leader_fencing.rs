//! Leader fencing (issue 36, point 3), on one sandbox: two operator replicas, each reaching the API server through a
//! TCP proxy of its own ([`TcpProxy`]); the sandbox's own process is killed first so the two elect their leader.
//! While the leader configures the fleet, the test cuts the leader's proxy: the leader can no longer renew the
//! Lease, but still reaches the hosts over SSH.
//!
//! Asserted, on events and counts rather than timings:
//! - the cut-off leader stops acting before the other replica may take over: by the time the other replica holds
//!   the Lease, the leader has exited non-zero, saying its renewals failed for the renew deadline; and its last
//!   command on any host finished before the new holder's `acquireTime`;
//! - the other replica takes over and the fleet becomes Ready;
//! - no host was acted on by both at once: every host's commands come in at most one turn per process, the cut-off
//!   leader's first (a host the leader finished may get none from the new leader, and one the leader never reached
//!   none from the leader).
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use winhost_sim::host::Latency;
use wmco_sandbox::replicas::{LEASE_NAME, Replica, client_identity, lease_holder, sender_turns, wait_for_holder};
use wmco_sandbox::tcp_proxy::TcpProxy;
use wmco_sandbox::{OPERATOR_IDENTITY, OPERATOR_NAMESPACE, Sandbox, SandboxError, SandboxOptions};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const LEADER_TIMEOUT: Duration = Duration::from_secs(180);
const BUSY_TIMEOUT: Duration = Duration::from_secs(300);
const TAKEOVER_TIMEOUT: Duration = Duration::from_secs(180);
const READY_TIMEOUT: Duration = Duration::from_secs(900);
/// Slow commands, so the cut falls in the middle of the configuration.
const COMMAND_LATENCY: Duration = Duration::from_millis(200);
const HOSTS: u8 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_the_api_server_stops_acting_before_the_other_replica_takes_over() -> anyhow::Result<()> {
    let latency = Latency { command: COMMAND_LATENCY, ..Latency::realistic() };
    let sandbox = Sandbox::start(SandboxOptions { hosts: HOSTS, latency, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let admin = sandbox.admin_client();
    wait_for_holder(&sandbox, OPERATOR_IDENTITY, LEADER_TIMEOUT).await?;
    sandbox.kill_operator();

    let api_server: SocketAddr = sandbox
        .control_plane()
        .api_server_url()
        .trim_start_matches("https://")
        .parse()
        .context("the API server's address")?;
    let mut candidates = BTreeMap::new();
    for identity in ["wmco-a", "wmco-b"] {
        let proxy = TcpProxy::start(api_server).await?;
        let replica = Replica::start_via(&sandbox, identity, &[], proxy.address()).await?;
        candidates.insert(identity, (replica, proxy));
    }
    let leader_identity = sandbox
        .wait_for("a replica leading", LEADER_TIMEOUT, || async {
            let holder = lease_holder(&admin).await?;
            match holder.as_deref() {
                Some(identity @ ("wmco-a" | "wmco-b")) => Ok(identity.to_owned()),
                other => bail!("holder {other:?}"),
            }
        })
        .await?;
    let (mut leader, leader_proxy) = candidates.remove(leader_identity.as_str()).context("the leader")?;
    let (follower_identity, (mut follower, _follower_proxy)) = candidates.pop_first().context("the follower")?;
    println!("{leader_identity} leads, {follower_identity} follows");

    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    sandbox
        .wait_for("the leader configuring every host", BUSY_TIMEOUT, || async {
            let counts = commands_by(&sandbox, &leader_identity).await?;
            ensure!(counts.values().all(|count| *count > 0), "commands per host so far: {counts:?}");
            Ok(())
        })
        .await?;
    leader_proxy.cut();
    println!("cut {leader_identity} off the API server");

    sandbox
        .wait_for("the other replica taking the Lease over", TAKEOVER_TIMEOUT, || async {
            let holder = lease_holder(&admin).await?;
            ensure!(holder.as_deref() == Some(follower_identity), "holder {holder:?}");
            Ok(())
        })
        .await?;
    match leader.check_running() {
        Ok(()) => bail!("{leader_identity}, cut off the API server, still runs after {follower_identity} took over"),
        Err(SandboxError::OperatorExited { status, .. }) => {
            ensure!(status != "exit status: 0", "{leader_identity} exited with {status}, not as a failure");
        }
        Err(other) => return Err(other.into()),
    }
    let log = std::fs::read_to_string(leader.log_path()).context("read the cut-off leader's log")?;
    for line in ["leadership ended: aborting every controller", "controllers aborted", "could not renew Lease"] {
        ensure!(log.contains(line), "the cut-off leader's log says {line:?}");
    }

    let acquired = follower_acquire_time(&admin).await?;
    for host in sandbox.hosts() {
        let log = sandbox.command_log(&host.info.name).await?;
        let last_of_leader = log
            .iter()
            .filter(|record| client_identity(&record.client) == Some(leader_identity.as_str()))
            .filter_map(|record| record.finished_at)
            .max();
        ensure!(
            last_of_leader.is_none_or(|last| last < acquired),
            "host {}: {leader_identity}'s last command finished at {last_of_leader:?}, after {follower_identity} \
             acquired the Lease at {acquired:?}",
            host.info.name
        );
    }

    sandbox
        .wait_for(&format!("{HOSTS} Ready instances"), READY_TIMEOUT, || async {
            let rows = sandbox.instance_rows().await?;
            let ready = rows.iter().filter(|row| row.phase == "Ready" && row.node_ready == Some(true)).count();
            ensure!(ready == usize::from(HOSTS), "{ready} of {HOSTS} Ready: {rows:?}");
            Ok(())
        })
        .await?;
    follower.check_running()?;
    for host in sandbox.hosts() {
        let turns = sender_turns(&sandbox.command_log(&host.info.name).await?);
        println!("sender turns on {}: {turns:?}", host.info.name);
        let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
        let (leader, follower) = (leader_identity.as_str(), follower_identity);
        let one_turn_each: [&[&str]; 3] = [&[leader, follower], &[leader], &[follower]];
        ensure!(
            one_turn_each.contains(&turns.as_slice()),
            "host {}: the cut-off leader's commands, then the new leader's, never interleaved: {turns:?}",
            host.info.name
        );
    }
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// How many commands each host received from the process `identity`.
async fn commands_by(sandbox: &Sandbox, identity: &str) -> anyhow::Result<BTreeMap<String, usize>> {
    let mut counts = BTreeMap::new();
    for host in sandbox.hosts() {
        let log = sandbox.command_log(&host.info.name).await?;
        let count = log.iter().filter(|record| client_identity(&record.client) == Some(identity)).count();
        counts.insert(host.info.name.clone(), count);
    }
    Ok(counts)
}

/// When the Lease's current holder acquired it (`spec.acquireTime`).
async fn follower_acquire_time(admin: &kube::Client) -> anyhow::Result<SystemTime> {
    let leases: Api<Lease> = Api::namespaced(admin.clone(), OPERATOR_NAMESPACE);
    let lease = leases.get(LEASE_NAME).await.context("read the Lease")?;
    let acquired = lease.spec.and_then(|spec| spec.acquire_time).context("the Lease's acquireTime")?;
    Ok(acquired.0.into())
}
