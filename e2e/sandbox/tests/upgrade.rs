//! Upgrade scenario of issue 10: three Ready BYOH nodes carrying a workload guarded by a PodDisruptionBudget; the
//! operator is restarted with `--version-override` at a higher version and `--max-unavailable=1`, and killed and
//! started again once the first node is upgraded (the budget lives in the cluster, not the process); every node is
//! upgraded (Node version annotation, record `configuredVersion`, phase Ready, schedulable, unmarked); one watch on
//! the Windows Nodes records that at no moment more than one of them was unschedulable or marked
//! `windowsmachineconfig.openshift.io/upgrading`. Then a second upgrade with `--max-unavailable=2`: two at once at
//! most, and two at some moment. Throughout, the workload's availability never fell below the budget's
//! `minAvailable`; each record got `Upgraded` Events.
//!
//! Issue 37: a settings restart and an upgrade arriving together share one budget. Three Ready nodes under
//! `--max-unavailable=1`; Proxy `cluster` gets a proxy, so every node's containerd and kubelet must restart (a
//! `Restart` disruption each, granted one at a time); while the first restart is under way the operator is restarted
//! at a higher version: one watch on the Windows Nodes records that at no moment more than one of them was marked or
//! unschedulable, the restarted node's record shows its `Restart` completed with a `Reconfigured` Event, and every
//! node ends upgraded with the proxy in its kubelet's environment.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use wmco_cluster_client::names::VERSION_ANNOTATION;
use wmco_cluster_client::types::{DisruptionState, InstancePhase};
use wmco_sandbox::disruption::{DisruptionWatch, disruption_of};
use wmco_sandbox::workload::{Scheduler, Workload, WorkloadSpec};
use wmco_sandbox::{OPERATOR_NAMESPACE, Sandbox, SandboxOptions};
use wmco_vocabulary::DisruptionKind;

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const READY_TIMEOUT: Duration = Duration::from_secs(900);
const WORKLOAD_TIMEOUT: Duration = Duration::from_secs(300);
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(1200);

const HOSTS: usize = 3;
const REPLICAS: i32 = 6;
const MIN_AVAILABLE: i32 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_higher_operator_version_upgrades_every_node_within_max_unavailable_and_the_pod_budget() -> anyhow::Result<()>
{
    let sandbox = Sandbox::start(SandboxOptions { hosts: 3, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let ready = sandbox.wait_until_ready(HOSTS, READY_TIMEOUT).await?;
    let installed: BTreeSet<String> =
        ready.iter().filter_map(|ready| ready.instance.status.as_ref()?.configured_version.clone()).collect();
    ensure!(installed.len() == 1, "the fleet was configured at several versions: {installed:?}");
    let target = higher_version(installed.iter().next().context("no configured version")?)?;

    let client = sandbox.admin_client();
    let _scheduler = Scheduler::start(client.clone());
    let spec = WorkloadSpec {
        namespace: "e2e-upgrade".into(),
        name: "web".into(),
        replicas: REPLICAS,
        min_available: MIN_AVAILABLE,
    };
    let workload = Workload::deploy(client.clone(), spec).await?;
    sandbox
        .wait_for("every workload pod available, spread over the Windows nodes", WORKLOAD_TIMEOUT, || async {
            let by_node = workload.available_by_node().await?;
            let available: usize = by_node.values().sum();
            ensure!(available == REPLICAS as usize && by_node.len() == HOSTS, "available by node: {by_node:?}");
            ensure!(workload.disruptions_allowed().await? == Some(REPLICAS - MIN_AVAILABLE), "budget not computed yet");
            Ok(())
        })
        .await?;
    let availability = workload.watch_availability();
    sandbox
        .wait_for("the availability watch listing", WORKLOAD_TIMEOUT, || async {
            ensure!(availability.is_listening(), "still listing");
            Ok(())
        })
        .await?;

    // Budget 1, and the operator killed and started again once the first node is upgraded.
    let (most, seconds) = upgrade(&sandbox, &target, 1, true).await?;
    println!(
        "upgrade of {HOSTS} nodes with max-unavailable 1 ({REPLICAS} pods, minAvailable {MIN_AVAILABLE}): {seconds:.1} s \
         from the operator's restart (including one kill and start)"
    );
    assert_eq!(most, 1, "nodes unschedulable or marked at once with max-unavailable 1");

    // Budget 2: two nodes at once, never three.
    let second_target = higher_version(&target)?;
    let (most, seconds) = upgrade(&sandbox, &second_target, 2, false).await?;
    println!(
        "upgrade of {HOSTS} nodes with max-unavailable 2 ({REPLICAS} pods, minAvailable {MIN_AVAILABLE}): {seconds:.1} s \
         from the operator's restart"
    );
    assert_eq!(most, 2, "nodes unschedulable or marked at once with max-unavailable 2");

    let lowest = availability.lowest().context("the availability watch saw nothing")?;
    assert!(lowest >= MIN_AVAILABLE as usize, "available pods fell to {lowest} (history {:?})", availability.history());
    assert_eq!(availability.errors(), Vec::<String>::new());
    upgraded_events(&client, &sandbox).await?;
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// The proxy the settings-restart test sets (no credentials: nothing for the secret scan to plant).
const PROXY: &str = "http://proxy.example:3128";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settings_restart_and_an_upgrade_arriving_together_share_one_budget() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions {
        hosts: HOSTS as u8,
        operator_args: vec!["--max-unavailable=1".to_owned()],
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let ready = sandbox.wait_until_ready(HOSTS, READY_TIMEOUT).await?;
    let installed = ready.first().and_then(|ready| ready.instance.status.as_ref()?.configured_version.clone());
    let target = higher_version(&installed.context("no configured version")?)?;
    let disruption = DisruptionWatch::listening(&sandbox, None, WORKLOAD_TIMEOUT).await?;
    // The proxy has every Node's containerd and kubelet restart, one Node at a time.
    sandbox.set_proxy_status(PROXY, PROXY, "").await?;
    let restarted = sandbox
        .wait_for("a settings restart granted", UPGRADE_TIMEOUT, || async { restart_under_way(&sandbox).await })
        .await?;
    // The upgrade arrives while that restart is under way: the new operator carries the restart out with the Node's
    // upgrade (a restart granted on a Node at another version never runs in place) and upgrades every Node, all
    // within the one unit of budget.
    sandbox.restart_operator_with(&[format!("--version-override={target}"), "--max-unavailable=1".to_owned()]).await?;
    sandbox
        .wait_for(&format!("every node upgraded to {target} with the proxy"), UPGRADE_TIMEOUT, || async {
            upgraded(&sandbox, &target).await?;
            for host in sandbox.hosts() {
                let services = sandbox.services(&host.info.name).await?;
                let kubelet = services.iter().find(|service| service.name == "kubelet").context("no kubelet")?;
                let proxy = kubelet.environment.get("HTTP_PROXY");
                ensure!(
                    proxy.map(String::as_str) == Some(PROXY),
                    "{}: the kubelet runs with {proxy:?}",
                    host.info.name
                );
            }
            Ok(())
        })
        .await?;
    ensure!(disruption.errors().is_empty(), "the Node watch re-listed: {:?}", disruption.errors());
    println!("Windows nodes unschedulable or marked, after each change: {:?}", disruption.history());
    ensure!(disruption.most_unavailable() == 1, "more than one Node out of service: {:?}", disruption.history());
    let record =
        sandbox.windows_instances().await?.into_iter().find(|record| record.metadata.name == Some(restarted.clone()));
    let restart = record.and_then(|record| record.status?.disruption).context("no disruption on the record")?;
    ensure!(
        restart.kind == DisruptionKind::Restart && restart.state == DisruptionState::Completed,
        "{restarted}: {restart:?}"
    );
    // Every record, the restarted one included, was upgraded (cordoned and drained first), never reconfigured in
    // place at the new version.
    upgraded_events(&sandbox.admin_client(), &sandbox).await?;
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// The record whose settings restart is granted or under way.
async fn restart_under_way(sandbox: &Sandbox) -> anyhow::Result<String> {
    for instance in sandbox.windows_instances().await? {
        let disruption = instance.status.as_ref().and_then(|status| status.disruption.as_ref());
        let under_way = disruption.is_some_and(|disruption| {
            disruption.kind == DisruptionKind::Restart
                && matches!(disruption.state, DisruptionState::Granted | DisruptionState::Restarting)
        });
        if under_way {
            return instance.metadata.name.context("a record without a name");
        }
    }
    anyhow::bail!("no settings restart granted yet")
}

/// Restarts the operator at `target` with `--max-unavailable={max_unavailable}` (and, with `kill_midway`, kills and
/// starts it again once a first node is upgraded), waits until every node is upgraded, and returns the most Windows
/// Nodes a watch saw unschedulable or marked at once, and the seconds it took.
async fn upgrade(
    sandbox: &Sandbox,
    target: &str,
    max_unavailable: u32,
    kill_midway: bool,
) -> anyhow::Result<(usize, f64)> {
    let disruption = DisruptionWatch::listening(sandbox, None, WORKLOAD_TIMEOUT).await?;
    let restarted = Instant::now();
    sandbox
        .restart_operator_with(&[
            format!("--version-override={target}"),
            format!("--max-unavailable={max_unavailable}"),
        ])
        .await?;
    if kill_midway {
        sandbox
            .wait_for(&format!("a first node upgraded to {target}"), UPGRADE_TIMEOUT, || async {
                let done = upgraded_records(sandbox, target).await?;
                ensure!(!done.is_empty(), "no record at {target} yet");
                Ok(())
            })
            .await?;
        sandbox.kill_operator();
        sandbox.start_operator().await?;
    }
    sandbox
        .wait_for(&format!("every Windows node upgraded to {target}"), UPGRADE_TIMEOUT, || async {
            upgraded(sandbox, target).await
        })
        .await?;
    let seconds = restarted.elapsed().as_secs_f64();
    ensure!(
        disruption.errors().is_empty(),
        "the Node watch re-listed, so it may have missed states: {:?}",
        disruption.errors()
    );
    println!("Windows nodes unschedulable or marked, after each change: {:?}", disruption.history());
    Ok((disruption.most_unavailable(), seconds))
}

/// The operator's version with the minor incremented (`1.2.3` → `1.3.0`).
fn higher_version(installed: &str) -> anyhow::Result<String> {
    let release = installed.split(['-', '+']).next().unwrap_or(installed);
    let parts: Vec<u64> =
        release.split('.').map(str::parse).collect::<Result<_, _>>().with_context(|| format!("version {installed}"))?;
    ensure!(parts.len() == 3, "version {installed} is not major.minor.patch");
    Ok(format!("{}.{}.0", parts[0], parts[1] + 1))
}

/// Every record Ready at `target` and every Windows Node annotated with `target`, schedulable and unmarked.
async fn upgraded(sandbox: &Sandbox, target: &str) -> anyhow::Result<()> {
    let mut waiting = Vec::new();
    for node in sandbox.windows_nodes().await? {
        let name = node.metadata.name.clone().unwrap_or_default();
        let version = node.metadata.annotations.as_ref().and_then(|annotations| annotations.get(VERSION_ANNOTATION));
        let (marked, unschedulable) = disruption_of(&node);
        if version.map(String::as_str) != Some(target) || marked || unschedulable {
            waiting.push(format!("{name}: version {version:?}, marked {marked}, unschedulable {unschedulable}"));
        }
    }
    for instance in sandbox.windows_instances().await? {
        let status = instance.status.unwrap_or_default();
        if status.phase != Some(InstancePhase::Ready) || status.configured_version.as_deref() != Some(target) {
            let name = instance.metadata.name.unwrap_or_default();
            waiting.push(format!("{name}: phase {:?}, version {:?}", status.phase, status.configured_version));
        }
    }
    ensure!(waiting.is_empty(), "{}", waiting.join("; "));
    Ok(())
}

/// The records Ready at `target`.
async fn upgraded_records(sandbox: &Sandbox, target: &str) -> anyhow::Result<Vec<String>> {
    Ok(sandbox
        .windows_instances()
        .await?
        .into_iter()
        .filter(|instance| {
            instance.status.as_ref().is_some_and(|status| {
                status.phase == Some(InstancePhase::Ready) && status.configured_version.as_deref() == Some(target)
            })
        })
        .filter_map(|instance| instance.metadata.name)
        .collect())
}

/// One `Upgraded` Event per record.
async fn upgraded_events(client: &kube::Client, sandbox: &Sandbox) -> anyhow::Result<()> {
    let events: Api<Event> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let listed = events.list(&ListParams::default()).await.context("list Events")?.items;
    let upgraded: BTreeSet<String> = listed
        .iter()
        .filter(|event| event.reason.as_deref() == Some("Upgraded"))
        .filter_map(|event| event.regarding.as_ref()?.name.clone())
        .collect();
    let records: BTreeSet<String> =
        sandbox.windows_instances().await?.into_iter().filter_map(|instance| instance.metadata.name).collect();
    let missing: Vec<&String> = records.difference(&upgraded).collect();
    ensure!(
        missing.is_empty() && upgraded.is_subset(&records),
        "records without an Upgraded Event (moved to the new version without the upgrade's cordon and drain?): \
         {missing:?}; records with one: {upgraded:?}"
    );
    Ok(())
}

#[test]
fn the_target_version_is_one_minor_higher() {
    assert_eq!(higher_version("10.17.3").unwrap(), "10.18.0");
    assert_eq!(higher_version("0.1.0+abc").unwrap(), "0.2.0");
    assert!(higher_version("1.2").is_err());
}
