//! Reboots as requests (issue 37), against the real operator over real SSH and the e2e control plane: the fleet
//! executor turns each reboot ask into a request on the record (`status.disruption`), grants it within
//! `--max-unavailable`, and the host pass cordons, drains (PodDisruptionBudgets respected), sends
//! `Restart-Computer -Force`, waits for the new boot and uncordons.
//!
//! Proof:
//! - five Ready hosts whose Windows keeps pending-reboot markers (Windows Update's `RebootRequired` key, servicing's
//!   `RebootPending` key, `PendingFileRenameOperations`, as `winhost_sim::pending_reboot` models them), with the
//!   operator started again under `--reboot-policy=when-required --max-unavailable=2` (the maintenance window is
//!   open at all times by default): each host reboots exactly once (its boot count and the simulator's reboot
//!   windows; each reboot keeps its host away 4 s, so reboots outside the budget would overlap), never more than two
//!   reboot windows overlap and never more than two Nodes are marked or cordoned at once, each Node goes out of
//!   service once, and every host ends Ready with `status.disruption` `Completed`, the `RebootRequired` condition
//!   `False`, its markers gone, and one `RebootRequested` and one `DisruptionGranted` Event on its record (a reboot
//!   that completed asks for nothing more: no second request, no `Reconfigured`);
//! - a PodDisruptionBudget holds: one host runs a pod whose budget (`minAvailable: 1`) allows no eviction; its
//!   reboot waits (record `Granted`, Node cordoned, no reboot, the metric counting it granted) while the other four
//!   complete, and completes once the test relaxes the budget;
//! - the operator killed (SIGKILL) while a host's record says `Restarting` and started again: that host is rebooted
//!   once only and the fleet converges;
//! - an admin's request: a token in annotation `windowsmachineconfig.openshift.io/reboot-requested` on a record
//!   reboots its host once under the default policy `never`; the same token left in place reboots nothing more, even
//!   after an operator restart and after another reboot; the Go operator's Node annotation
//!   `windowsmachineconfig.openshift.io/reboot-required` reboots the host once and the operator removes it.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, Patch, PatchParams, PostParams};
use winhost_sim::host::RebootWindow;
use winhost_sim::pending_reboot::PendingRebootMarker;
use wmco_cluster_client::names::{REBOOT_REQUESTED_ANNOTATION, REBOOT_REQUIRED_ANNOTATION};
use wmco_cluster_client::types::{
    DisruptionState, HostDisruption, InstancePhase, REBOOT_REQUIRED_CONDITION, WindowsInstance, WindowsInstanceStatus,
};
use wmco_instance_inventory::instance_name;
use wmco_sandbox::disruption::{DisruptionWatch, disruption_of};
use wmco_sandbox::workload::{PAUSE_IMAGE, WINDOWS_TAINT_KEY, WINDOWS_TAINT_VALUE};
use wmco_sandbox::{OPERATOR_NAMESPACE, ReadyInstance, Sandbox, SandboxOptions, node_is_ready};
use wmco_vocabulary::DisruptionKind;

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const READY_TIMEOUT: Duration = Duration::from_secs(900);
const REBOOT_TIMEOUT: Duration = Duration::from_secs(900);
/// How long each simulated reboot keeps its host away.
const REBOOT_PAUSE: Duration = Duration::from_secs(4);
/// How long no operator command may arrive before the fleet counts as settled after a restart.
const QUIET: Duration = Duration::from_secs(15);

const HOSTS: usize = 5;
const MAX_UNAVAILABLE: usize = 2;

/// The namespace, name and `app` label of the pod whose budget holds its Node's drain.
const GUARD_NAMESPACE: &str = "e2e-reboot-guard";
const GUARD: &str = "guarded";

/// The markers each of the five hosts gets (every kind, alone and together).
fn markers_of(index: usize) -> &'static [PendingRebootMarker] {
    use PendingRebootMarker::{ComponentBasedServicing, PendingFileRenameOperations, WindowsUpdate};
    match index % 5 {
        0 => &[WindowsUpdate],
        1 => &[PendingFileRenameOperations],
        2 => &[ComponentBasedServicing],
        3 => &[WindowsUpdate, PendingFileRenameOperations],
        _ => &[WindowsUpdate, ComponentBasedServicing, PendingFileRenameOperations],
    }
}

/// One host of the fleet: its simulator name, its record and its Node.
#[derive(Debug, Clone)]
struct FleetHost {
    name: String,
    record: String,
    node: String,
}

/// The hosts of the sandbox with their records and Nodes, from the Ready instances.
fn fleet_hosts(sandbox: &Sandbox, ready: &[ReadyInstance]) -> anyhow::Result<Vec<FleetHost>> {
    sandbox
        .hosts()
        .iter()
        .map(|host| {
            let record = instance_name(&host.key);
            let found = ready.iter().find(|ready| ready.instance.metadata.name.as_deref() == Some(&record));
            let node = found.and_then(|ready| ready.node.metadata.name.clone()).context("no Ready Node")?;
            Ok(FleetHost { name: host.info.name.clone(), record, node })
        })
        .collect()
}

/// The host's reboots and its boot count, as the simulator saw them.
async fn reboots(sandbox: &Sandbox, name: &str) -> anyhow::Result<(Vec<RebootWindow>, u64)> {
    let server = sandbox.server(name).await?;
    let host = winhost_sim::ssh::lock(&server.host);
    Ok((host.reboot_windows.clone(), host.boots))
}

/// Every record's status, by record name.
async fn statuses(sandbox: &Sandbox) -> anyhow::Result<BTreeMap<String, WindowsInstanceStatus>> {
    Ok(sandbox
        .windows_instances()
        .await?
        .into_iter()
        .map(|record| (record.metadata.name.unwrap_or_default(), record.status.unwrap_or_default()))
        .collect())
}

/// The disruption record `record` shows.
fn disruption<'a>(statuses: &'a BTreeMap<String, WindowsInstanceStatus>, record: &str) -> Option<&'a HostDisruption> {
    statuses.get(record)?.disruption.as_ref()
}

/// The most reboot windows under way at one instant (the most overlap at some window's start).
fn most_at_once(windows: &[RebootWindow]) -> usize {
    windows
        .iter()
        .map(|window| windows.iter().filter(|other| other.began <= window.began && window.began <= other.back).count())
        .max()
        .unwrap_or(0)
}

/// The value of gauge `wmco_disruption_requests{kind=…,state=…}` in `metrics`, if exported.
fn disruption_requests(metrics: &str, kind: &str, state: &str) -> Option<f64> {
    metrics
        .lines()
        .filter(|line| line.starts_with("wmco_disruption_requests{"))
        .filter(|line| line.contains(&format!("kind=\"{kind}\"")) && line.contains(&format!("state=\"{state}\"")))
        .find_map(|line| line.rsplit(' ').next()?.parse().ok())
}

/// Adds a pod on `node` and a PodDisruptionBudget (`minAvailable: 1`) that allows no eviction of it.
async fn guard_node(client: &kube::Client, node: &str) -> anyhow::Result<()> {
    let namespace: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": GUARD_NAMESPACE}}))?;
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await?;
    let budget: PodDisruptionBudget = serde_json::from_value(serde_json::json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": GUARD, "namespace": GUARD_NAMESPACE},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": GUARD}}},
    }))?;
    Api::<PodDisruptionBudget>::namespaced(client.clone(), GUARD_NAMESPACE)
        .create(&PostParams::default(), &budget)
        .await?;
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": GUARD, "namespace": GUARD_NAMESPACE, "labels": {"app": GUARD}},
        "spec": {
            "nodeName": node,
            "tolerations": [{"key": WINDOWS_TAINT_KEY, "operator": "Equal", "value": WINDOWS_TAINT_VALUE,
                             "effect": "NoSchedule"}],
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "pause", "image": PAUSE_IMAGE}],
        },
    }))?;
    Api::<Pod>::namespaced(client.clone(), GUARD_NAMESPACE).create(&PostParams::default(), &pod).await?;
    Ok(())
}

/// The guard's budget counts its pod healthy and allows no disruption.
async fn guard_holds(client: &kube::Client) -> anyhow::Result<()> {
    let budgets = Api::<PodDisruptionBudget>::namespaced(client.clone(), GUARD_NAMESPACE);
    let status = budgets.get(GUARD).await?.status.context("the budget has no status yet")?;
    ensure!(
        status.current_healthy == 1 && status.disruptions_allowed == 0,
        "budget: {} healthy, {} disruptions allowed",
        status.current_healthy,
        status.disruptions_allowed
    );
    Ok(())
}

/// Relaxes the guard's budget to `minAvailable: 0`.
async fn relax_guard(client: &kube::Client) -> anyhow::Result<()> {
    let budgets = Api::<PodDisruptionBudget>::namespaced(client.clone(), GUARD_NAMESPACE);
    let patch = serde_json::json!({"spec": {"minAvailable": 0}});
    budgets.patch(GUARD, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

/// The Node named `name`.
async fn node(sandbox: &Sandbox, name: &str) -> anyhow::Result<Node> {
    Ok(Api::<Node>::all(sandbox.admin_client()).get(name).await?)
}

/// Host `host` settled after its reboot: record Ready with the reboot `Completed` and `RebootRequired` `False`, Node
/// Ready, schedulable and unmarked.
async fn settled(
    sandbox: &Sandbox,
    statuses: &BTreeMap<String, WindowsInstanceStatus>,
    host: &FleetHost,
) -> anyhow::Result<()> {
    let status = statuses.get(&host.record).context("no record")?;
    let state = status.disruption.as_ref().map(|disruption| (disruption.kind, disruption.state));
    ensure!(state == Some((DisruptionKind::Reboot, DisruptionState::Completed)), "{}: disruption {state:?}", host.name);
    ensure!(status.phase == Some(InstancePhase::Ready), "{}: phase {:?}", host.name, status.phase);
    let pending = status.condition(REBOOT_REQUIRED_CONDITION).map(|condition| condition.status.as_str());
    ensure!(pending == Some("False"), "{}: RebootRequired is {pending:?}", host.name);
    let node = node(sandbox, &host.node).await?;
    let (marked, unschedulable) = disruption_of(&node);
    ensure!(
        node_is_ready(&node) && !marked && !unschedulable,
        "{}: Node marked {marked}, cordoned {unschedulable}",
        host.name
    );
    Ok(())
}

/// Each host rebooted exactly once and kept no marker, and its record got one request, one grant and no restart of
/// services (a reboot that completed asks for nothing more); returns every reboot window.
async fn rebooted_once_each(sandbox: &Sandbox, hosts: &[FleetHost]) -> anyhow::Result<Vec<RebootWindow>> {
    let mut windows = Vec::new();
    let mut boots = BTreeMap::new();
    for host in hosts {
        let (reboots, booted) = reboots(sandbox, &host.name).await?;
        boots.insert(host.name.clone(), booted);
        windows.extend(reboots);
    }
    ensure!(boots.values().all(|booted| *booted == 1), "boots per host: {boots:?}; reboots: {windows:?}");
    ensure!(windows.len() == hosts.len(), "reboot windows: {windows:?}");
    for host in hosts {
        let server = sandbox.server(&host.name).await?;
        let markers = winhost_sim::ssh::lock(&server.host).pending_reboot_markers();
        ensure!(markers.is_empty(), "{} still has {markers:?}", host.name);
        ensure!(sandbox.unknown_commands(&host.name).await?.is_empty(), "{}: an unknown command", host.name);
        let events = sandbox.events_about("WindowsInstance", &host.record).await?;
        for (reason, wanted) in [("RebootRequested", 1), ("DisruptionGranted", 1), ("Reconfigured", 0)] {
            let count = events.iter().filter(|(_, found, _)| found == reason).count();
            ensure!(count == wanted, "{}: {count} {reason} Events, expected {wanted}: {events:?}", host.name);
        }
    }
    Ok(windows)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_reboots_reboot_each_host_once_within_the_budget_a_pod_budget_holds_and_a_killed_operator_resumes()
-> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: HOSTS as u8, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let ready = sandbox.wait_until_ready(HOSTS, READY_TIMEOUT).await?;
    let hosts = fleet_hosts(&sandbox, &ready)?;
    for (index, host) in hosts.iter().enumerate() {
        let server = sandbox.server(&host.name).await?;
        let mut simulated = winhost_sim::ssh::lock(&server.host);
        simulated.reboot_pause = Some(REBOOT_PAUSE);
        for marker in markers_of(index) {
            simulated.mark_pending_reboot(*marker)?;
        }
    }
    let client = sandbox.admin_client();
    let held = hosts[0].clone();
    guard_node(&client, &held.node).await?;
    sandbox.wait_for("the guard's budget allowing no eviction", READY_TIMEOUT, || guard_holds(&client)).await?;
    let watch = DisruptionWatch::listening(&sandbox, None, READY_TIMEOUT).await?;

    // The admin turns the policy on; the restart also has every host probed again.
    sandbox
        .restart_operator_with(&[
            "--reboot-policy=when-required".to_owned(),
            format!("--max-unavailable={MAX_UNAVAILABLE}"),
        ])
        .await?;
    let restarting = sandbox
        .wait_for("a host rebooting", REBOOT_TIMEOUT, || async {
            let statuses = statuses(&sandbox).await?;
            let found = hosts.iter().find(|host| {
                disruption(&statuses, &host.record).is_some_and(|found| found.state == DisruptionState::Restarting)
            });
            Ok(found.context("no record says Restarting")?.clone())
        })
        .await?;
    sandbox.kill_operator();
    println!("operator killed while {} ({}) was Restarting", restarting.name, restarting.record);
    sandbox.start_operator().await?;

    // The guarded host's reboot waits for its pod's budget while the other four complete.
    let others = &hosts[1..];
    sandbox
        .wait_for("the other four rebooted, the guarded one held", REBOOT_TIMEOUT, || async {
            let statuses = statuses(&sandbox).await?;
            for host in others {
                settled(&sandbox, &statuses, host).await?;
            }
            let state = disruption(&statuses, &held.record).map(|found| (found.kind, found.state));
            ensure!(state == Some((DisruptionKind::Reboot, DisruptionState::Granted)), "guarded: {state:?}");
            ensure!(disruption_of(&node(&sandbox, &held.node).await?).1, "the guarded Node is not cordoned");
            Ok(())
        })
        .await?;
    let (held_reboots, held_boots) = reboots(&sandbox, &held.name).await?;
    ensure!(held_boots == 0 && held_reboots.is_empty(), "the guarded host rebooted: {held_reboots:?}");
    guard_holds(&client).await?;
    sandbox
        .wait_for("the metric counting the guarded reboot granted", REBOOT_TIMEOUT, || async {
            let metrics = sandbox.operator_metrics().await?;
            let granted = disruption_requests(&metrics, "Reboot", "Granted");
            let requested = disruption_requests(&metrics, "Reboot", "Requested");
            ensure!(granted == Some(1.0) && requested == Some(0.0), "granted {granted:?}, requested {requested:?}");
            Ok(())
        })
        .await?;

    relax_guard(&client).await?;
    sandbox
        .wait_for("every host rebooted and back in service", REBOOT_TIMEOUT, || async {
            let statuses = statuses(&sandbox).await?;
            for host in &hosts {
                settled(&sandbox, &statuses, host).await?;
            }
            Ok(())
        })
        .await?;

    let windows = rebooted_once_each(&sandbox, &hosts).await?;
    println!("reboot windows: {windows:?}");
    let most = most_at_once(&windows);
    ensure!(most <= MAX_UNAVAILABLE, "{most} hosts rebooted at once with --max-unavailable={MAX_UNAVAILABLE}");
    ensure!(watch.errors().is_empty(), "the Node watch re-listed, so it may have missed states: {:?}", watch.errors());
    println!("Windows Nodes marked or cordoned, after each change: {:?}", watch.history());
    ensure!(watch.most_unavailable() == MAX_UNAVAILABLE, "Nodes out of service at once: {:?}", watch.history());
    let once: BTreeMap<String, usize> = hosts.iter().map(|host| (host.node.clone(), 1)).collect();
    ensure!(watch.disruptions() == once, "times each Node went out of service: {:?}", watch.disruptions());
    let metrics = sandbox.operator_metrics().await?;
    for state in ["Requested", "Granted"] {
        let value = disruption_requests(&metrics, "Reboot", state);
        ensure!(value == Some(0.0), "wmco_disruption_requests Reboot {state} is {value:?} at the end");
    }
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// Sets `annotation` to `value` on record `record`.
async fn annotate_record(sandbox: &Sandbox, record: &str, annotation: &str, value: &str) -> anyhow::Result<()> {
    let records = Api::<WindowsInstance>::namespaced(sandbox.admin_client(), OPERATOR_NAMESPACE);
    let patch = serde_json::json!({"metadata": {"annotations": {annotation: value}}});
    records.patch(record, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

/// Sets `annotation` to `value` on Node `name`.
async fn annotate_node(sandbox: &Sandbox, name: &str, annotation: &str, value: &str) -> anyhow::Result<()> {
    let patch = serde_json::json!({"metadata": {"annotations": {annotation: value}}});
    Api::<Node>::all(sandbox.admin_client()).patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

/// Waits until host `host` booted `boots` times in all and settled after its latest reboot; returns its record's
/// disruption.
async fn rebooted(sandbox: &Sandbox, host: &FleetHost, boots: u64) -> anyhow::Result<HostDisruption> {
    let found = sandbox
        .wait_for(&format!("{} rebooted {boots} time(s) and back in service", host.name), REBOOT_TIMEOUT, || async {
            let (_, booted) = reboots(sandbox, &host.name).await?;
            ensure!(booted == boots, "booted {booted} times");
            let statuses = statuses(sandbox).await?;
            settled(sandbox, &statuses, host).await?;
            disruption(&statuses, &host.record).cloned().context("no disruption")
        })
        .await?;
    Ok(found)
}

/// Restarts the operator and waits until it reached every host and went quiet; fails if host `host` booted more
/// than `boots` times meanwhile.
async fn no_further_reboot(sandbox: &Sandbox, host: &FleetHost, boots: u64) -> anyhow::Result<()> {
    let baseline = sandbox.operator_command_counts().await?;
    sandbox.kill_operator();
    sandbox.start_operator().await?;
    sandbox.wait_until_quiet(&baseline, QUIET, REBOOT_TIMEOUT).await?;
    let (windows, booted) = reboots(sandbox, &host.name).await?;
    ensure!(booted == boots, "{} booted {booted} times, expected {boots}: {windows:?}", host.name);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_token_and_the_node_annotation_each_reboot_a_host_once_under_the_policy_never() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 1, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let ready = sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    let host = fleet_hosts(&sandbox, &ready)?.remove(0);
    let server = sandbox.server(&host.name).await?;
    winhost_sim::ssh::lock(&server.host).reboot_pause = Some(REBOOT_PAUSE);

    // The admin asks once; the token stays in place.
    let token = "2026-11-29T14:00:00Z";
    annotate_record(&sandbox, &host.record, REBOOT_REQUESTED_ANNOTATION, token).await?;
    let answered = rebooted(&sandbox, &host, 1).await?;
    ensure!(answered.admin_token.as_deref() == Some(token), "the record answers {:?}", answered.admin_token);
    no_further_reboot(&sandbox, &host, 1).await?;

    // The Go operator's annotation on the Node asks once more, and goes.
    annotate_node(&sandbox, &host.node, REBOOT_REQUIRED_ANNOTATION, "true").await?;
    rebooted(&sandbox, &host, 2).await?;
    sandbox
        .wait_for("the reboot-required annotation removed", REBOOT_TIMEOUT, || async {
            let annotations = node(&sandbox, &host.node).await?.metadata.annotations.unwrap_or_default();
            ensure!(!annotations.contains_key(REBOOT_REQUIRED_ANNOTATION), "still annotated: {annotations:?}");
            Ok(())
        })
        .await?;
    // The token still on the record was answered: neither the restart nor the other reboot asks again.
    no_further_reboot(&sandbox, &host, 2).await?;
    let record = statuses(&sandbox).await?;
    let state = disruption(&record, &host.record).map(|found| found.state);
    ensure!(state == Some(DisruptionState::Completed), "the record's disruption is {state:?}");
    let events = sandbox.events_about("WindowsInstance", &host.record).await?;
    let requested = events.iter().filter(|(_, reason, _)| reason == "RebootRequested").count();
    ensure!(requested == 2, "{requested} RebootRequested Events: {events:?}");
    ensure!(sandbox.unknown_commands(&host.name).await?.is_empty(), "the simulator met an unknown command");
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

#[test]
fn the_most_windows_at_once_are_counted_at_their_starts() {
    let at = |seconds| std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(seconds);
    let window = |began, back| RebootWindow { began: at(began), back: at(back) };
    assert_eq!(most_at_once(&[]), 0);
    assert_eq!(most_at_once(&[window(0, 4), window(5, 9), window(10, 14)]), 1);
    assert_eq!(most_at_once(&[window(0, 4), window(2, 6), window(5, 9)]), 2);
    assert_eq!(most_at_once(&[window(0, 10), window(2, 6), window(5, 9)]), 3);
}

#[test]
fn the_gauge_is_read_by_kind_and_state() {
    let metrics = "# TYPE wmco_disruption_requests gauge\n\
                   wmco_disruption_requests{kind=\"Reboot\",state=\"Granted\"} 1\n\
                   wmco_disruption_requests{kind=\"Reboot\",state=\"Requested\"} 0\n\
                   wmco_disruption_requests{kind=\"Restart\",state=\"Granted\"} 2\n";
    assert_eq!(disruption_requests(metrics, "Reboot", "Granted"), Some(1.0));
    assert_eq!(disruption_requests(metrics, "Reboot", "Requested"), Some(0.0));
    assert_eq!(disruption_requests(metrics, "Restart", "Granted"), Some(2.0));
    assert_eq!(disruption_requests(metrics, "Restart", "Requested"), None);
}
