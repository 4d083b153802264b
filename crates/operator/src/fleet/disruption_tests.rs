//! Restart and reboot requests through the fleet controller over the `wmco-cluster-client` fakes: requests admitted
//! one budget unit at a time beside upgrades, the grant's marks and Events, the reboots an admin, the Node's
//! annotation or the host's markers ask for, and the gauge of pending and granted requests.

use std::sync::Arc;

use jiff::Timestamp;
use wmco_cluster_client::names::UPGRADING_LABEL;
use wmco_cluster_client::names::{REBOOT_REQUESTED_ANNOTATION, REBOOT_REQUIRED_ANNOTATION};
use wmco_cluster_client::types::{ConditionState, DisruptionState, InstancePhase, WindowsInstanceStatus};
use wmco_cluster_client::{InstanceRecords, NodeMetadataPatch, Nodes};
use wmco_reboot_policy::{RebootPolicy, RebootSettings};
use wmco_vocabulary::DisruptionKind;

use super::upgrade_tests::{AT_OLD, Cluster, Host, NAMESPACE, NEW};
use super::*;

/// A Ready host at the operator's version.
const CURRENT: Host = Host { version: NEW, ..AT_OLD };

fn fleet_executor(cluster: &Cluster, max_unavailable: u32, policy: RebootPolicy) -> Arc<FleetContext> {
    let mut context = cluster.context(&cluster.seams(), max_unavailable);
    context.settings.reboot = RebootSettings { policy, ..RebootSettings::default() };
    Arc::new(context)
}

fn record_status(cluster: &Cluster, name: &str) -> WindowsInstanceStatus {
    cluster.records.record(NAMESPACE, name).unwrap().status.unwrap()
}

async fn write(cluster: &Cluster, name: &str, status: &WindowsInstanceStatus) {
    cluster.records.apply_status(NAMESPACE, name, status).await.unwrap();
}

/// What a configure pass does when it would restart services on a Node in service.
async fn restart_requested(cluster: &Cluster, name: &str) {
    let mut current = record_status(cluster, name);
    current.request_disruption(DisruptionKind::Restart, "settings changed", Timestamp::now(), None).unwrap();
    write(cluster, name, &current).await;
}

/// What the configure pass does once a granted disruption is over (a reboot's pass also unmarks the Node).
async fn completed(cluster: &Cluster, name: &str) {
    let mut current = record_status(cluster, name);
    let disruption = current.disruption.as_mut().unwrap();
    disruption.state = DisruptionState::Completed;
    if disruption.kind == DisruptionKind::Reboot {
        let unmark = NodeMetadataPatch::default().remove_label(UPGRADING_LABEL);
        cluster.nodes.patch_metadata(name, &unmark).await.unwrap();
    }
    current.phase = Some(InstancePhase::Ready);
    write(cluster, name, &current).await;
}

fn state(cluster: &Cluster, name: &str) -> Option<(DisruptionKind, DisruptionState)> {
    record_status(cluster, name).disruption.map(|disruption| (disruption.kind, disruption.state))
}

fn reasons(cluster: &Cluster) -> Vec<String> {
    cluster.events().into_iter().map(|(_, _, reason, _)| reason).collect()
}

fn marked(cluster: &Cluster, name: &str) -> bool {
    cluster.node_marks(name).0
}

fn now() -> Timestamp {
    "2026-11-29T10:00:00Z".parse().unwrap()
}

#[tokio::test]
async fn requests_are_granted_one_budget_unit_at_a_time_and_the_rest_wait_with_one_event_each() {
    let cluster = Cluster::new();
    for name in ["a", "b"] {
        cluster.add(name, CURRENT).await;
        restart_requested(&cluster, name).await;
    }
    let executor = fleet_executor(&cluster, 1, RebootPolicy::Never);

    let first = reconcile_fleet(&executor, now()).await.unwrap();
    assert_eq!(first.granted, ["wmco/a"]);
    assert_eq!(state(&cluster, "a"), Some((DisruptionKind::Restart, DisruptionState::Granted)));
    let phase = record_status(&cluster, "a").phase;
    assert_eq!(phase, Some(InstancePhase::Ready), "phase Upgrading stays the upgrade executor's permission");
    assert!(marked(&cluster, "a"));
    assert_eq!(state(&cluster, "b"), Some((DisruptionKind::Restart, DisruptionState::Requested)));
    assert!(!marked(&cluster, "b"));
    let metrics = executor.metrics.encode().unwrap();
    assert!(metrics.contains("wmco_disruption_requests{kind=\"Restart\",state=\"Requested\"} 1"), "{metrics}");
    assert!(metrics.contains("wmco_disruption_requests{kind=\"Restart\",state=\"Granted\"} 1"), "{metrics}");

    let again = reconcile_fleet(&executor, now()).await.unwrap();
    assert!(again.granted.is_empty(), "the budget is held");
    assert_eq!(reasons(&cluster), ["DisruptionGranted", "DisruptionWaiting"], "one Event per request");

    completed(&cluster, "a").await;
    let finished = reconcile_fleet(&executor, now()).await.unwrap();
    assert_eq!((finished.finished, finished.granted), (vec!["wmco/a".to_owned()], vec!["wmco/b".to_owned()]));
    assert!(!marked(&cluster, "a"), "the fleet unmarks a finished restart's Node");
    assert_eq!(reasons(&cluster)[2..], ["Reconfigured", "DisruptionGranted"]);
}

#[tokio::test]
async fn a_restart_request_and_an_upgrade_share_one_budget() {
    let cluster = Cluster::new();
    cluster.add("old", AT_OLD).await;
    cluster.add("restart", CURRENT).await;
    restart_requested(&cluster, "restart").await;
    let executor = fleet_executor(&cluster, 1, RebootPolicy::Never);

    let outcome = reconcile_fleet(&executor, now()).await.unwrap();
    executor.wait_for_drains().await;
    assert_eq!(outcome.started.len() + outcome.granted.len(), 1, "{outcome:?}");
    let marked = ["old", "restart"].iter().filter(|name| marked(&cluster, name)).count();
    assert_eq!(marked, 1);
    let two = fleet_executor(&cluster, 2, RebootPolicy::Never);
    let both = reconcile_fleet(&two, now()).await.unwrap();
    assert_eq!(outcome.started.len() + outcome.granted.len() + both.started.len() + both.granted.len(), 2);
}

#[tokio::test]
async fn a_restart_granted_by_an_older_operator_is_carried_out_by_the_upgrade_of_its_node() {
    let cluster = Cluster::new();
    cluster.add("a", AT_OLD).await;
    restart_requested(&cluster, "a").await;
    let mut current = record_status(&cluster, "a");
    assert!(current.grant_disruption(now()));
    write(&cluster, "a", &current).await;
    let mark = NodeMetadataPatch::default().set_label(UPGRADING_LABEL, "true");
    cluster.nodes.patch_metadata("a", &mark).await.unwrap();

    let executor = fleet_executor(&cluster, 1, RebootPolicy::Never);
    let outcome = reconcile_fleet(&executor, now()).await.unwrap();
    executor.wait_for_drains().await;
    assert_eq!(outcome.started, ["wmco/a"], "cordoned and drained before the new version touches the host");
    assert_eq!(
        (cluster.node_marks("a"), record_status(&cluster, "a").phase),
        ((true, true), Some(InstancePhase::Upgrading))
    );
}

#[tokio::test]
async fn an_admin_token_asks_for_one_reboot_never_twice_and_one_too_long_is_refused_once() {
    let cluster = Cluster::new();
    cluster.add("a", CURRENT).await;
    cluster.records.annotate(NAMESPACE, "a", REBOOT_REQUESTED_ANNOTATION, "t1").unwrap();
    let executor = fleet_executor(&cluster, 1, RebootPolicy::Never);

    let outcome = reconcile_fleet(&executor, now()).await.unwrap();
    assert_eq!(
        (outcome.reboots_requested.clone(), outcome.granted),
        (vec!["wmco/a".to_owned()], outcome.reboots_requested)
    );
    let reboot = record_status(&cluster, "a").disruption.unwrap();
    assert_eq!(
        (reboot.kind, reboot.state, reboot.admin_token.as_deref()),
        (DisruptionKind::Reboot, DisruptionState::Granted, Some("t1"))
    );
    assert_eq!(reboot.node.as_deref(), Some("a"));
    assert!(marked(&cluster, "a"));
    assert_eq!(reasons(&cluster), ["RebootRequested", "DisruptionGranted"]);

    completed(&cluster, "a").await;
    let answered = reconcile_fleet(&executor, now()).await.unwrap();
    assert!(answered.reboots_requested.is_empty(), "the same token never asks again");

    let token = "x".repeat(wmco_reboot_policy::MAX_TOKEN_CHARS + 1);
    cluster.records.annotate(NAMESPACE, "a", REBOOT_REQUESTED_ANNOTATION, &token).unwrap();
    for _ in 0..2 {
        assert!(reconcile_fleet(&executor, now()).await.unwrap().reboots_requested.is_empty());
    }
    assert_eq!(reasons(&cluster)[2..], ["RebootRequestRefused"], "a token too long is refused once");
}

#[tokio::test]
async fn the_nodes_annotation_asks_and_the_hosts_markers_ask_only_under_when_required() {
    let cluster = Cluster::new();
    cluster.add("annotated", CURRENT).await;
    cluster.add("pending", CURRENT).await;
    let mut node = cluster.nodes.node("annotated").unwrap();
    node.metadata.annotations.get_or_insert_default().insert(REBOOT_REQUIRED_ANNOTATION.into(), "true".into());
    cluster.nodes.insert(node);
    let mut status = record_status(&cluster, "pending");
    status.set_condition(ConditionState::reboot_required(&["WindowsUpdate"]), None, now());
    write(&cluster, "pending", &status).await;

    let never = reconcile_fleet(&fleet_executor(&cluster, 2, RebootPolicy::Never), now()).await.unwrap();
    assert_eq!(never.reboots_requested, ["wmco/annotated"]);
    let required = reconcile_fleet(&fleet_executor(&cluster, 2, RebootPolicy::WhenRequired), now()).await.unwrap();
    assert_eq!(required.reboots_requested, ["wmco/pending"]);
    let reason = record_status(&cluster, "pending").disruption.unwrap().reason;
    assert!(reason.contains("WindowsUpdate"), "{reason}");
}
