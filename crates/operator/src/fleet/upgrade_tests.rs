//! Upgrade scenarios of the fleet controller over the `wmco-cluster-client` fakes: the budget (1 and 4, already-unavailable instances
//! counted first), a restarted executor keeping the budget from cluster state, the skew wait and its Event, a
//! failed drain backing off with the Node still marked, and the finish (uncordon, unmark) followed by the next
//! upgrade, through a whole rolling upgrade that never exceeds the budget.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use jiff::{SignedDuration, Timestamp};
use semver::Version;
use wmco_cluster_client::Seams;
use wmco_cluster_client::fake::{
    FakeCluster, FakeDrainer, FakeEvents, FakeInstanceRecords, FakeNodes, FakeSecrets, objects,
};
use wmco_cluster_client::names::{PUB_KEY_HASH_ANNOTATION, UPGRADING_LABEL, VERSION_ANNOTATION};
use wmco_cluster_client::types::InstancePhase;
use wmco_cluster_client::{
    BlockReason, BlockedPod, DrainOptions, DrainReport, Drainer, InstanceRecords, NodeMetadataPatch, Nodes, Secrets,
    Severity,
};

use super::*;
use crate::fleet::testing::{AcceptingKeys, key_secret, test_key_hash};
use wmco_cluster_client::{ClusterVersion, WindowsMachines};

pub(super) const NAMESPACE: &str = "wmco";
const OLD: &str = "1.0.0";
pub(super) const NEW: &str = "1.1.0";

/// The API server's version, changeable mid-test (a control-plane upgrade).
struct SettableVersion(Mutex<Version>);

#[async_trait]
impl ClusterVersion for SettableVersion {
    async fn kubernetes_version(&self) -> wmco_cluster_client::Result<Version> {
        Ok(self.0.lock().unwrap().clone())
    }
}

/// One host's starting point.
#[derive(Clone, Copy)]
pub(super) struct Host {
    pub(super) version: &'static str,
    pub(super) ready: bool,
    pub(super) unschedulable: bool,
    pub(super) marked: bool,
    pub(super) phase: InstancePhase,
}

pub(super) const AT_OLD: Host =
    Host { version: OLD, ready: true, unschedulable: false, marked: false, phase: InstancePhase::Ready };

pub(super) struct Cluster {
    pub(super) records: Arc<FakeInstanceRecords>,
    pub(super) nodes: Arc<FakeNodes>,
    drainer: Arc<FakeDrainer>,
    events: Arc<FakeEvents>,
    api_server: Arc<SettableVersion>,
}

impl Cluster {
    pub(super) fn new() -> Cluster {
        Cluster {
            records: Arc::default(),
            nodes: Arc::default(),
            drainer: Arc::default(),
            events: Arc::default(),
            api_server: Arc::new(SettableVersion(Mutex::new(Version::new(1, 36, 0)))),
        }
    }

    /// A fresh controller (as after an operator restart) over this cluster.
    fn executor(&self, max_unavailable: u32) -> Arc<FleetContext> {
        Arc::new(self.context(&self.seams(), max_unavailable))
    }

    /// A controller over `seams`.
    pub(super) fn context(&self, seams: &Seams, max_unavailable: u32) -> FleetContext {
        let settings =
            FleetSettings::new(NAMESPACE, Version::parse(NEW).unwrap(), Version::new(1, 36, 3), max_unavailable);
        FleetContext::new(seams, Arc::new(AcceptingKeys), settings)
    }

    /// The seams over this cluster's fakes, the operator key in its Secret.
    pub(super) fn seams(&self) -> Seams {
        let secrets = FakeSecrets::default();
        futures::executor::block_on(secrets.apply(&key_secret(NAMESPACE))).unwrap();
        Seams {
            records: self.records.clone(),
            nodes: self.nodes.clone(),
            drainer: self.drainer.clone(),
            events: self.events.clone(),
            cluster_version: self.api_server.clone(),
            secrets: Arc::new(secrets),
            ..FakeCluster::default().seams()
        }
    }

    pub(super) async fn add(&self, name: &str, host: Host) {
        let record = objects::record(name).in_namespace(NAMESPACE).byoh(&format!("{name}.lab.example")).build();
        let record = self.records.apply(&record).await.unwrap();
        let status = objects::status().phase(host.phase).expected_node_name(name).configured_version(host.version);
        self.records.apply_status(NAMESPACE, name, &status.build()).await.unwrap();
        let mut node = objects::windows_node(name)
            .owned_by(&record)
            .annotated(VERSION_ANNOTATION, host.version)
            .annotated(PUB_KEY_HASH_ANNOTATION, &test_key_hash())
            .unschedulable(host.unschedulable)
            .ready_if(host.ready);
        if host.marked {
            node = node.labelled(UPGRADING_LABEL, "true");
        }
        self.nodes.insert(node.build());
    }

    /// What the instances controller's configure pass does once the record is `Upgrading`: the Node gets the new
    /// version annotation and the record phase Ready.
    async fn configure_pass_finishes(&self, name: &str) {
        assert_eq!(self.phase(name), InstancePhase::Upgrading, "{name} was not handed to the configure pass");
        let mut node = self.nodes.node(name).unwrap();
        NodeMetadataPatch::default().set_annotation(VERSION_ANNOTATION, NEW).apply_to(&mut node);
        self.nodes.insert(node);
        let mut status = self.records.record(NAMESPACE, name).unwrap().status.unwrap();
        status.phase = Some(InstancePhase::Ready);
        status.configured_version = Some(NEW.into());
        self.records.apply_status(NAMESPACE, name, &status).await.unwrap();
    }

    fn phase(&self, name: &str) -> InstancePhase {
        self.records.record(NAMESPACE, name).unwrap().status.unwrap().phase.unwrap()
    }

    /// `(marked, unschedulable)` of a Node.
    pub(super) fn node_marks(&self, name: &str) -> (bool, bool) {
        let node = self.nodes.node(name).unwrap();
        let marked = node.metadata.labels.unwrap_or_default().get(UPGRADING_LABEL).is_some_and(|v| v == "true");
        (marked, node.spec.and_then(|spec| spec.unschedulable).unwrap_or(false))
    }

    /// Names of the Nodes marked upgrading or unschedulable.
    fn unavailable(&self, names: &[&str]) -> Vec<String> {
        names
            .iter()
            .filter(|name| {
                let (marked, unschedulable) = self.node_marks(name);
                marked || unschedulable
            })
            .map(|name| (*name).to_owned())
            .collect()
    }

    /// `(record name, severity, reason, note)` of every Event published.
    pub(super) fn events(&self) -> Vec<(String, Severity, String, String)> {
        self.events
            .published()
            .into_iter()
            .map(|(regarding, event)| {
                (regarding.name.unwrap_or_default(), event.severity, event.reason, event.note.unwrap_or_default())
            })
            .collect()
    }
}

/// One fleet reconcile, then the end of the drains it started.
async fn settled(executor: &Arc<FleetContext>, now: Timestamp) -> FleetOutcome {
    let outcome = reconcile_fleet(executor, now).await.unwrap();
    executor.wait_for_drains().await;
    outcome
}

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

const NOW: &str = "2026-11-22T04:00:00Z";

fn labels(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| format!("{NAMESPACE}/{name}")).collect()
}

#[tokio::test]
async fn budget_one_marks_cordons_drains_and_hands_over_exactly_one_host() {
    let cluster = Cluster::new();
    for name in ["a", "b", "c"] {
        cluster.add(name, AT_OLD).await;
    }
    let executor = cluster.executor(1);

    let outcome = settled(&executor, at(NOW)).await;
    assert_eq!(outcome.started, labels(&["a"]));
    assert_eq!((outcome.finished.len(), outcome.failed.len()), (0, 0));
    assert_eq!(cluster.node_marks("a"), (true, true));
    assert_eq!(cluster.drainer.drained(), ["a"]);
    assert_eq!(cluster.phase("a"), InstancePhase::Upgrading);
    for name in ["b", "c"] {
        assert_eq!((cluster.node_marks(name), cluster.phase(name)), ((false, false), InstancePhase::Ready));
    }
    assert_eq!(
        cluster.events(),
        [(
            "a".to_owned(),
            Severity::Normal,
            "UpgradeStarted".to_owned(),
            "upgrading to 1.1.0: Node a marked upgrading; cordoning and draining it".to_owned()
        )]
    );

    let again = settled(&executor, at(NOW)).await;
    assert!(again.started.is_empty());
    assert_eq!(cluster.drainer.drained(), ["a"], "an upgrade handed over is not drained again");
    assert_eq!(cluster.unavailable(&["a", "b", "c"]), ["a"]);
}

#[tokio::test]
async fn budget_four_counts_the_already_unavailable_first() {
    let cluster = Cluster::new();
    for name in ["a", "b", "c", "d"] {
        cluster.add(name, AT_OLD).await;
    }
    // Already under way (counts, continues without a new drain) and up to date but NotReady (counts).
    cluster.add("e", Host { unschedulable: true, marked: true, phase: InstancePhase::Upgrading, ..AT_OLD }).await;
    cluster.add("z", Host { version: NEW, ready: false, ..AT_OLD }).await;

    let outcome = settled(&cluster.executor(4), at(NOW)).await;
    assert_eq!(outcome.started, labels(&["a", "b"]));
    assert_eq!((outcome.plan.summary.unavailable_before, outcome.plan.summary.unavailable_after), (2, 4));
    let mut drained = cluster.drainer.drained();
    drained.sort();
    assert_eq!(drained, ["a", "b"]);
    assert_eq!(cluster.unavailable(&["a", "b", "c", "d", "e", "z"]), ["a", "b", "e"]);
    assert_eq!((cluster.phase("c"), cluster.phase("d")), (InstancePhase::Ready, InstancePhase::Ready));
}

#[tokio::test]
async fn a_restarted_executor_keeps_the_budget_from_cluster_state() {
    let cluster = Cluster::new();
    for name in ["a", "b"] {
        cluster.add(name, AT_OLD).await;
    }
    // The previous process marked "a" and died before cordoning it.
    let mark = NodeMetadataPatch::default().set_label(UPGRADING_LABEL, "true");
    cluster.nodes.patch_metadata("a", &mark).await.unwrap();

    let first = settled(&cluster.executor(1), at(NOW)).await;
    assert_eq!(first.started, labels(&["a"]), "the marked host is continued, not a second one started");
    assert_eq!(cluster.node_marks("a"), (true, true));

    let restarted = settled(&cluster.executor(1), at(NOW)).await;
    assert!(restarted.started.is_empty());
    assert_eq!(cluster.drainer.drained(), ["a"]);
    assert_eq!(cluster.unavailable(&["a", "b"]), ["a"]);
    assert_eq!(cluster.phase("b"), InstancePhase::Ready);
}

#[tokio::test]
async fn an_upgrade_whose_kubelet_is_newer_than_the_api_server_waits_with_one_warning() {
    let cluster = Cluster::new();
    for name in ["a", "b"] {
        cluster.add(name, AT_OLD).await;
    }
    *cluster.api_server.0.lock().unwrap() = Version::new(1, 35, 4);
    let executor = cluster.executor(1);

    let outcome = settled(&executor, at(NOW)).await;
    assert!(outcome.started.is_empty());
    assert_eq!(outcome.held_by_skew, labels(&["a", "b"]));
    assert_eq!(cluster.unavailable(&["a", "b"]), Vec::<String>::new());
    let note = "upgrade from 1.0.0 to 1.1.0 waits: its kubelet 1.36 must not run against the API server 1.35; \
                upgrade the control plane first";
    let warning =
        |name: &str| (name.to_owned(), Severity::Warning, "UpgradeBlockedByVersionSkew".to_owned(), note.to_owned());
    assert_eq!(cluster.events(), [warning("a"), warning("b")]);

    settled(&executor, at(NOW)).await;
    assert_eq!(cluster.events().len(), 2, "the warning is not repeated");

    *cluster.api_server.0.lock().unwrap() = Version::new(1, 36, 0);
    let released = settled(&executor, at(NOW)).await;
    assert_eq!((released.started, released.held_by_skew), (labels(&["a"]), Vec::new()));
}

#[tokio::test]
async fn a_failed_drain_leaves_the_node_marked_and_is_retried_after_backoff() {
    let cluster = Cluster::new();
    for name in ["a", "b"] {
        cluster.add(name, AT_OLD).await;
    }
    let blocked = BlockedPod { pod: "web/frontend-1".into(), reason: BlockReason::DisruptionBudget("budget".into()) };
    cluster.drainer.block("a", vec![blocked]);
    let executor = cluster.executor(1);

    let outcome = settled(&executor, at(NOW)).await;
    assert_eq!((outcome.started, outcome.failed), (labels(&["a"]), Vec::new()), "the drain fails in the background");
    let retry_after = executor.next_retry().unwrap();
    assert!(at("2026-11-22T04:00:30Z") <= retry_after && retry_after < at("2026-11-22T04:00:31Z"), "{retry_after}");
    assert_eq!(cluster.node_marks("a"), (true, true));
    assert_eq!((cluster.phase("a"), cluster.phase("b")), (InstancePhase::Ready, InstancePhase::Ready));
    let warnings: Vec<_> = cluster.events().into_iter().filter(|event| event.1 == Severity::Warning).collect();
    assert_eq!(warnings.len(), 1);
    assert_eq!((warnings[0].0.as_str(), warnings[0].2.as_str()), ("a", "UpgradeStepFailed"));
    let note = &warnings[0].3;
    assert!(note.starts_with("WindowsInstance wmco/a: drain Node a failed: "), "{note}");
    assert!(note.contains("; the Node stays marked and cordoned, retried after 2026-11-22T04:00:30"), "{note}");
    let metrics = executor.metrics.encode().unwrap();
    assert!(
        metrics.contains("wmco_reconcile_errors_total{controller=\"fleet\",kind=\"upgrade_step\"} 1\n"),
        "{metrics}"
    );

    let during_backoff = settled(&executor, at("2026-11-22T04:00:20Z")).await;
    assert_eq!(
        (during_backoff.started.len(), during_backoff.failed.len()),
        (0, 0),
        "b waits for the budget, a for the backoff"
    );
    assert_eq!(cluster.events().len(), 2, "no retry, so no new Event");

    cluster.drainer.unblock("a");
    let retried = settled(&executor, at("2026-11-22T04:00:31Z")).await;
    assert_eq!(retried.started, labels(&["a"]));
    assert_eq!(cluster.phase("a"), InstancePhase::Upgrading);
    assert_eq!(cluster.drainer.drained(), ["a"]);
    assert_eq!(executor.next_retry(), None);
}

/// A drainer whose drains wait until released, counting the calls.
struct HeldDrainer {
    calls: Mutex<Vec<String>>,
    release: tokio::sync::Semaphore,
}

#[async_trait::async_trait]
impl Drainer for HeldDrainer {
    async fn drain(&self, node: &str, _options: &DrainOptions) -> wmco_cluster_client::Result<DrainReport> {
        self.calls.lock().unwrap().push(node.to_owned());
        let _permit = self.release.acquire().await.unwrap();
        Ok(DrainReport::default())
    }
}

#[tokio::test]
async fn a_drain_still_running_is_not_started_twice_and_holds_its_budget() {
    let cluster = Cluster::new();
    for name in ["a", "b"] {
        cluster.add(name, AT_OLD).await;
    }
    let drainer = Arc::new(HeldDrainer { calls: Mutex::default(), release: tokio::sync::Semaphore::new(0) });
    let executor = Arc::new(cluster.context(&Seams { drainer: drainer.clone(), ..cluster.seams() }, 1));

    let first = reconcile_fleet(&executor, at(NOW)).await.unwrap();
    tokio::task::yield_now().await;
    let second = reconcile_fleet(&executor, at(NOW)).await.unwrap();
    assert_eq!((first.started, second.started), (labels(&["a"]), Vec::new()));
    assert_eq!(*drainer.calls.lock().unwrap(), ["a"], "one drain, still running");
    assert_eq!(cluster.unavailable(&["a", "b"]), ["a"]);
    assert_eq!(cluster.phase("a"), InstancePhase::Ready, "not handed over before the drain ends");

    drainer.release.add_permits(1);
    executor.wait_for_drains().await;
    assert_eq!(cluster.phase("a"), InstancePhase::Upgrading);
}

#[tokio::test]
async fn a_finished_upgrade_is_uncordoned_and_unmarked_and_the_next_starts_in_the_same_reconcile() {
    let cluster = Cluster::new();
    for name in ["a", "b"] {
        cluster.add(name, AT_OLD).await;
    }
    let executor = cluster.executor(1);
    settled(&executor, at(NOW)).await;
    cluster.configure_pass_finishes("a").await;

    let outcome = settled(&executor, at(NOW)).await;
    assert_eq!((outcome.finished, outcome.started), (labels(&["a"]), labels(&["b"])));
    assert_eq!(cluster.node_marks("a"), (false, false));
    assert_eq!(cluster.node_marks("b"), (true, true));
    let upgraded: Vec<_> = cluster.events().into_iter().filter(|event| event.2 == "Upgraded").collect();
    assert_eq!(
        upgraded,
        [(
            "a".to_owned(),
            Severity::Normal,
            "Upgraded".to_owned(),
            "upgraded to 1.1.0; Node a uncordoned and unmarked".to_owned()
        )]
    );
}

#[tokio::test]
async fn a_host_that_cannot_be_finished_does_not_hold_back_the_others() {
    let cluster = Cluster::new();
    for name in ["a", "b"] {
        cluster.add(name, AT_OLD).await;
    }
    let executor = cluster.executor(2);
    settled(&executor, at(NOW)).await;
    cluster.configure_pass_finishes("a").await;
    cluster.configure_pass_finishes("b").await;
    cluster.nodes.refuse_uncordon("a", true);

    let outcome = settled(&executor, at(NOW)).await;
    assert_eq!(outcome.finished, labels(&["b"]));
    assert_eq!(outcome.failed.len(), 1);
    assert_eq!(outcome.failed[0].0, "wmco/a");
    assert!(
        outcome.failed[0].1.starts_with("WindowsInstance wmco/a: uncordon Node a failed"),
        "{}",
        outcome.failed[0].1
    );
    assert_eq!((cluster.node_marks("a"), cluster.node_marks("b")), ((true, true), (false, false)));

    cluster.nodes.refuse_uncordon("a", false);
    let retried = settled(&executor, at(NOW)).await;
    assert_eq!(retried.finished, labels(&["a"]));
    assert_eq!(cluster.unavailable(&["a", "b"]), Vec::<String>::new());
}

/// Windows Machines as listed.
struct ListedMachines(Vec<wmco_cluster_client::types::Machine>);

#[async_trait::async_trait]
impl WindowsMachines for ListedMachines {
    async fn list(&self) -> wmco_cluster_client::Result<Vec<wmco_cluster_client::types::Machine>> {
        Ok(self.0.clone())
    }
}

#[tokio::test]
async fn machines_away_for_replacement_are_taken_off_the_budget() {
    let cluster = Cluster::new();
    for name in ["a", "b"] {
        cluster.add(name, AT_OLD).await;
    }
    let replaced = objects::machine("win-m")
        .deleting_since("2026-11-22T03:59:00Z".parse().unwrap(), "machine.machine.openshift.io")
        .phase("Deleting")
        .build();
    let machines = Arc::new(ListedMachines(vec![replaced]));

    let budget_one = Arc::new(cluster.context(&Seams { windows_machines: machines.clone(), ..cluster.seams() }, 1));
    let held = settled(&budget_one, at(NOW)).await;
    assert_eq!((held.started, held.machines_away), (Vec::new(), vec!["win-m".to_owned()]));
    assert_eq!(cluster.unavailable(&["a", "b"]), Vec::<String>::new());

    let budget_two = Arc::new(cluster.context(&Seams { windows_machines: machines, ..cluster.seams() }, 2));
    assert_eq!(settled(&budget_two, at(NOW)).await.started, labels(&["a"]));
}

#[tokio::test]
async fn a_failed_configure_pass_during_an_upgrade_is_handed_over_again_after_backoff() {
    let cluster = Cluster::new();
    cluster.add("a", Host { unschedulable: true, marked: true, phase: InstancePhase::Failed, ..AT_OLD }).await;
    cluster.add("b", AT_OLD).await;
    let mut status = cluster.records.record(NAMESPACE, "a").unwrap().status.unwrap();
    status.last_error = Some("host 10.0.0.5: authentication failed".into());
    cluster.records.apply_status(NAMESPACE, "a", &status).await.unwrap();
    let executor = cluster.executor(1);

    let first = settled(&executor, at(NOW)).await;
    assert_eq!(
        first.failed,
        [("wmco/a".to_owned(), "the upgrade's configure pass failed: host 10.0.0.5: authentication failed".to_owned())]
    );
    assert!(first.started.is_empty(), "b waits: a still holds the budget");
    assert_eq!((cluster.phase("a"), cluster.drainer.drained().len()), (InstancePhase::Failed, 0));
    assert_eq!(executor.next_retry(), Some(at("2026-11-22T04:00:30Z")));

    let during_backoff = settled(&executor, at("2026-11-22T04:00:10Z")).await;
    assert_eq!((during_backoff.started.len(), during_backoff.failed.len()), (0, 0));

    let retried = settled(&executor, at("2026-11-22T04:00:30Z")).await;
    assert_eq!(retried.started, labels(&["a"]));
    assert_eq!((cluster.phase("a"), cluster.drainer.drained()), (InstancePhase::Upgrading, vec!["a".to_owned()]));
    assert_eq!(cluster.unavailable(&["a", "b"]), ["a"]);
}

#[tokio::test]
async fn a_rolling_upgrade_of_six_hosts_never_exceeds_the_budget_of_two() {
    let names = ["a", "b", "c", "d", "e", "f"];
    let cluster = Cluster::new();
    for name in names {
        cluster.add(name, AT_OLD).await;
    }
    let mut now = at(NOW);
    let mut most_unavailable = 0;
    for round in 0..10 {
        // A new executor every round: restarts must not change the outcome.
        let executor = cluster.executor(2);
        settled(&executor, now).await;
        let unavailable = cluster.unavailable(&names);
        most_unavailable = most_unavailable.max(unavailable.len());
        for name in &unavailable {
            if round % 2 == 0 {
                cluster.configure_pass_finishes(name).await;
            }
        }
        now = now.checked_add(SignedDuration::from_secs(5)).unwrap();
    }
    assert_eq!(most_unavailable, 2);
    assert_eq!(cluster.unavailable(&names), Vec::<String>::new());
    for name in names {
        let node = cluster.nodes.node(name).unwrap();
        assert_eq!(node.metadata.annotations.unwrap()[VERSION_ANNOTATION], NEW);
    }
    let mut drained = cluster.drainer.drained();
    drained.sort();
    assert_eq!(drained, names);
}
