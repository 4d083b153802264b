//! Restart and reboot requests through the fleet controller over the `wmco-cluster-client` fakes: requests admitted
//! one budget unit at a time beside upgrades, the grant's marks and Events, the reboots an admin, the Node's
//! annotation or the host's markers ask for, and the gauge of pending and granted requests.

use std::sync::Arc;

use jiff::Timestamp;
use semver::Version;
use wmco_cluster_client::fake::{FakeCluster, FakeEvents, FakeInstanceRecords, FakeNodes, FakeSecrets, objects};
use wmco_cluster_client::names::{
    PUB_KEY_HASH_ANNOTATION, REBOOT_REQUESTED_ANNOTATION, REBOOT_REQUIRED_ANNOTATION, VERSION_ANNOTATION,
};
use wmco_cluster_client::types::{ConditionState, DisruptionState, InstancePhase, WindowsInstanceStatus};
use wmco_cluster_client::{InstanceRecords, NodeExt, Seams, Secrets};
use wmco_reboot_policy::{RebootPolicy, RebootSettings};
use wmco_vocabulary::DisruptionKind;

use super::*;
use crate::fleet::testing::{AcceptingKeys, key_secret, test_key_hash};

const NAMESPACE: &str = "wmco";
const VERSION: &str = "1.1.0";

#[derive(Default)]
struct Cluster {
    records: Arc<FakeInstanceRecords>,
    nodes: Arc<FakeNodes>,
    events: Arc<FakeEvents>,
}

impl Cluster {
    fn executor(&self, max_unavailable: u32, policy: RebootPolicy) -> Arc<FleetContext> {
        let secrets = FakeSecrets::default();
        futures::executor::block_on(secrets.apply(&key_secret(NAMESPACE))).unwrap();
        let seams = Seams {
            records: self.records.clone(),
            nodes: self.nodes.clone(),
            events: self.events.clone(),
            secrets: Arc::new(secrets),
            ..FakeCluster::default().seams()
        };
        let settings = FleetSettings {
            reboot: RebootSettings { policy, ..RebootSettings::default() },
            ..FleetSettings::new(NAMESPACE, Version::parse(VERSION).unwrap(), Version::new(1, 36, 3), max_unavailable)
        };
        Arc::new(FleetContext::new(&seams, Arc::new(AcceptingKeys), settings))
    }

    /// A Ready host `name` configured at `version` with its Ready Node.
    async fn host(&self, name: &str, version: &str) {
        let record = objects::record(name).in_namespace(NAMESPACE).byoh(&format!("{name}.lab.example")).build();
        let record = self.records.apply(&record).await.unwrap();
        let status = objects::status().phase(InstancePhase::Ready).expected_node_name(name).configured_version(version);
        self.records.apply_status(NAMESPACE, name, &status.build()).await.unwrap();
        let node = objects::windows_node(name)
            .owned_by(&record)
            .annotated(VERSION_ANNOTATION, version)
            .annotated(PUB_KEY_HASH_ANNOTATION, &test_key_hash())
            .ready();
        self.nodes.insert(node.build());
    }

    fn status(&self, name: &str) -> WindowsInstanceStatus {
        self.records.record(NAMESPACE, name).unwrap().status.unwrap()
    }

    async fn write(&self, name: &str, status: &WindowsInstanceStatus) {
        self.records.apply_status(NAMESPACE, name, status).await.unwrap();
    }

    /// What a configure pass does when it would restart services on a Node in service.
    async fn restart_requested(&self, name: &str) {
        let mut status = self.status(name);
        status.request_disruption(DisruptionKind::Restart, "settings changed", Timestamp::now(), None).unwrap();
        self.write(name, &status).await;
    }

    /// What the configure pass does once a granted disruption is over (the Node unmarked for a reboot).
    async fn completed(&self, name: &str) {
        let mut status = self.status(name);
        let disruption = status.disruption.as_mut().unwrap();
        disruption.state = DisruptionState::Completed;
        status.phase = Some(InstancePhase::Ready);
        self.write(name, &status).await;
    }

    fn state(&self, name: &str) -> Option<(DisruptionKind, DisruptionState)> {
        self.status(name).disruption.map(|disruption| (disruption.kind, disruption.state))
    }

    fn reasons(&self) -> Vec<String> {
        self.events.published().into_iter().map(|(_, event)| event.reason).collect()
    }
}

fn now() -> Timestamp {
    "2026-11-29T10:00:00Z".parse().unwrap()
}

#[tokio::test]
async fn requests_are_granted_one_budget_unit_at_a_time_and_the_rest_wait_with_one_event_each() {
    let cluster = Cluster::default();
    for name in ["a", "b"] {
        cluster.host(name, VERSION).await;
        cluster.restart_requested(name).await;
    }
    let executor = cluster.executor(1, RebootPolicy::Never);

    let first = reconcile_fleet(&executor, now()).await.unwrap();
    assert_eq!(first.granted, ["wmco/a"]);
    assert_eq!(cluster.state("a"), Some((DisruptionKind::Restart, DisruptionState::Granted)));
    assert_eq!(cluster.status("a").phase, Some(InstancePhase::Upgrading), "a restart holds phase Upgrading");
    assert!(cluster.nodes.node("a").unwrap().is_marked());
    assert_eq!(cluster.state("b"), Some((DisruptionKind::Restart, DisruptionState::Requested)));
    assert!(!cluster.nodes.node("b").unwrap().is_marked());
    let metrics = executor.metrics.encode().unwrap();
    assert!(metrics.contains("wmco_disruption_requests{kind=\"Restart\",state=\"Requested\"} 1"), "{metrics}");
    assert!(metrics.contains("wmco_disruption_requests{kind=\"Restart\",state=\"Granted\"} 1"), "{metrics}");

    let again = reconcile_fleet(&executor, now()).await.unwrap();
    assert!(again.granted.is_empty(), "the budget is held");
    assert_eq!(cluster.reasons(), ["DisruptionGranted", "DisruptionWaiting"], "one Event per request");

    cluster.completed("a").await;
    let finished = reconcile_fleet(&executor, now()).await.unwrap();
    assert_eq!((finished.finished, finished.granted), (vec!["wmco/a".to_owned()], vec!["wmco/b".to_owned()]));
    assert!(!cluster.nodes.node("a").unwrap().is_marked(), "the fleet unmarks a finished restart's Node");
    assert_eq!(cluster.reasons()[2..], ["Reconfigured", "DisruptionGranted"]);
}

#[tokio::test]
async fn a_restart_request_and_an_upgrade_share_one_budget() {
    let cluster = Cluster::default();
    cluster.host("old", "1.0.0").await;
    cluster.host("restart", VERSION).await;
    cluster.restart_requested("restart").await;
    let executor = cluster.executor(1, RebootPolicy::Never);

    let outcome = reconcile_fleet(&executor, now()).await.unwrap();
    executor.wait_for_drains().await;
    assert_eq!(outcome.started.len() + outcome.granted.len(), 1, "{outcome:?}");
    let marked = ["old", "restart"].iter().filter(|name| cluster.nodes.node(name).unwrap().is_marked()).count();
    assert_eq!(marked, 1);
    let two = cluster.executor(2, RebootPolicy::Never);
    let both = reconcile_fleet(&two, now()).await.unwrap();
    assert_eq!(outcome.started.len() + outcome.granted.len() + both.started.len() + both.granted.len(), 2);
}

#[tokio::test]
async fn an_admin_token_asks_for_one_reboot_under_either_policy_and_never_twice() {
    let cluster = Cluster::default();
    cluster.host("a", VERSION).await;
    cluster.records.annotate(NAMESPACE, "a", REBOOT_REQUESTED_ANNOTATION, "t1");
    let executor = cluster.executor(1, RebootPolicy::Never);

    let outcome = reconcile_fleet(&executor, now()).await.unwrap();
    assert_eq!(
        (outcome.reboots_requested.clone(), outcome.granted),
        (vec!["wmco/a".to_owned()], outcome.reboots_requested)
    );
    let reboot = cluster.status("a").disruption.unwrap();
    assert_eq!(
        (reboot.kind, reboot.state, reboot.admin_token.as_deref()),
        (DisruptionKind::Reboot, DisruptionState::Granted, Some("t1"))
    );
    assert_eq!(reboot.node.as_deref(), Some("a"));
    assert!(cluster.nodes.node("a").unwrap().is_marked());
    assert_eq!(cluster.reasons(), ["RebootRequested", "DisruptionGranted"]);

    cluster.completed("a").await;
    let answered = reconcile_fleet(&executor, now()).await.unwrap();
    assert!(answered.reboots_requested.is_empty(), "the same token never asks again");
}

#[tokio::test]
async fn the_nodes_annotation_asks_and_the_hosts_markers_ask_only_under_when_required() {
    let cluster = Cluster::default();
    cluster.host("annotated", VERSION).await;
    cluster.host("pending", VERSION).await;
    let mut node = cluster.nodes.node("annotated").unwrap();
    node.metadata.annotations.get_or_insert_default().insert(REBOOT_REQUIRED_ANNOTATION.into(), "true".into());
    cluster.nodes.insert(node);
    let mut status = cluster.status("pending");
    status.set_condition(ConditionState::reboot_required(&["WindowsUpdate"]), None, now());
    cluster.write("pending", &status).await;

    let never = reconcile_fleet(&cluster.executor(2, RebootPolicy::Never), now()).await.unwrap();
    assert_eq!(never.reboots_requested, ["wmco/annotated"]);
    let required = reconcile_fleet(&cluster.executor(2, RebootPolicy::WhenRequired), now()).await.unwrap();
    assert_eq!(required.reboots_requested, ["wmco/pending"]);
    let reason = cluster.status("pending").disruption.unwrap().reason;
    assert!(reason.contains("WindowsUpdate"), "{reason}");
}

#[tokio::test]
async fn an_overlong_admin_token_is_refused_once_with_a_warning() {
    let cluster = Cluster::default();
    cluster.host("a", VERSION).await;
    let token = "x".repeat(wmco_reboot_policy::MAX_TOKEN_CHARS + 1);
    cluster.records.annotate(NAMESPACE, "a", REBOOT_REQUESTED_ANNOTATION, &token);
    let executor = cluster.executor(1, RebootPolicy::Never);
    for _ in 0..2 {
        assert!(reconcile_fleet(&executor, now()).await.unwrap().reboots_requested.is_empty());
    }
    assert_eq!(cluster.reasons(), ["RebootRequestRefused"]);
    assert_eq!(cluster.state("a"), None);
}
