//! Key rotation scenarios of the fleet controller over the `wmco-cluster-client` fakes, a machine API stand-in whose deletions leave the
//! Machine terminating (as the machine API's finalizer does) and a scripted key checker: Machines replaced one at a
//! time within the budget (and two at a time with budget 2), the budget shared with an upgrade in progress, a
//! replacement waiting for its predecessor to come back, BYOH hosts re-keyed or told exactly what to add, failures
//! retried without repeating Events, and converged re-runs that change nothing.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use semver::Version;
use serde_json::json;
use wmco_cluster_client::fake::{FakeCluster, FakeEvents, FakeInstanceRecords, FakeNodes, FakeSecrets, objects};
use wmco_cluster_client::names::{
    INSTANCE_UID_ANNOTATION, PUB_KEY_HASH_ANNOTATION, UPGRADING_LABEL, VERSION_ANNOTATION,
};
use wmco_cluster_client::types::{InstancePhase, Machine, WindowsInstance};
use wmco_cluster_client::{InstanceRecords, Machines, NewEvent, ResourceExt, Seams, Secrets, Severity};
use wmco_ssh_transport::PrivateKey;
use wmco_upgrade_planner::WaitReason;

use super::*;
use crate::fleet::testing::{key_secret, test_key_hash, test_public_key};
use crate::runtime::ReconcilerError;
use wmco_cluster_client::{ClusterVersion, WindowsMachines};

const NAMESPACE: &str = "wmco";
const MACHINE_NAMESPACE: &str = "openshift-machine-api";
const OLD_HASH: &str = "0ld0ld";
const VERSION: &str = "1.0.0";

fn new_hash() -> String {
    test_key_hash()
}

struct FixedVersion;

#[async_trait]
impl ClusterVersion for FixedVersion {
    async fn kubernetes_version(&self) -> wmco_cluster_client::Result<Version> {
        Ok(Version::new(1, 36, 3))
    }
}

/// The machine API: Windows Machines by name; a deletion marks the Machine terminating (its finalizer keeps it).
#[derive(Default)]
struct MachineApi {
    machines: Mutex<BTreeMap<String, Machine>>,
    deleted: Mutex<Vec<String>>,
}

impl MachineApi {
    fn insert(&self, machine: Machine) {
        self.machines.lock().unwrap().insert(machine.metadata.name.clone().unwrap(), machine);
    }

    fn remove(&self, name: &str) {
        self.machines.lock().unwrap().remove(name);
    }

    fn deleted(&self) -> Vec<String> {
        self.deleted.lock().unwrap().clone()
    }
}

#[async_trait]
impl Machines for MachineApi {
    async fn get(&self, namespace: &str, name: &str) -> wmco_cluster_client::Result<Option<Machine>> {
        assert_eq!(namespace, MACHINE_NAMESPACE);
        Ok(self.machines.lock().unwrap().get(name).cloned())
    }

    async fn delete(&self, namespace: &str, name: &str) -> wmco_cluster_client::Result<()> {
        assert_eq!(namespace, MACHINE_NAMESPACE);
        if let Some(machine) = self.machines.lock().unwrap().get_mut(name)
            && machine.metadata.deletion_timestamp.is_none()
        {
            machine.metadata.deletion_timestamp = Some(Time("2026-11-22T04:30:00Z".parse().unwrap()));
            self.deleted.lock().unwrap().push(format!("{namespace}/{name}"));
        }
        Ok(())
    }
}

#[async_trait]
impl WindowsMachines for MachineApi {
    async fn list(&self) -> wmco_cluster_client::Result<Vec<Machine>> {
        Ok(self.machines.lock().unwrap().values().cloned().collect())
    }
}

/// Answers per host address; records every check.
#[derive(Default)]
struct ScriptedChecker {
    answers: Mutex<HashMap<String, Result<(), KeyCheckFailure>>>,
    checked: Mutex<Vec<String>>,
}

impl ScriptedChecker {
    fn answer(&self, address: &str, answer: Result<(), KeyCheckFailure>) {
        self.answers.lock().unwrap().insert(address.to_owned(), answer);
    }

    fn checked(&self) -> Vec<String> {
        let mut checked = self.checked.lock().unwrap().clone();
        checked.sort();
        checked
    }
}

#[async_trait]
impl KeyChecker for ScriptedChecker {
    async fn check(&self, instance: &WindowsInstance, _key: &PrivateKey) -> Result<(), KeyCheckFailure> {
        self.checked.lock().unwrap().push(instance.spec.address.clone());
        self.answers.lock().unwrap().get(&instance.spec.address).cloned().unwrap_or(Ok(()))
    }
}

struct Cluster {
    records: Arc<FakeInstanceRecords>,
    nodes: Arc<FakeNodes>,
    machines: Arc<MachineApi>,
    events: Arc<FakeEvents>,
    checker: Arc<ScriptedChecker>,
    context: Arc<FleetContext>,
}

impl Cluster {
    async fn new(max_unavailable: u32) -> Cluster {
        let records = Arc::new(FakeInstanceRecords::default());
        let nodes = Arc::new(FakeNodes::default());
        let machines = Arc::new(MachineApi::default());
        let events = Arc::new(FakeEvents::default());
        let checker = Arc::new(ScriptedChecker::default());
        let secrets = Arc::new(FakeSecrets::default());
        secrets.apply(&key_secret(NAMESPACE)).await.unwrap();
        let settings =
            FleetSettings::new(NAMESPACE, Version::parse(VERSION).unwrap(), Version::new(1, 36, 3), max_unavailable);
        let seams = Seams {
            records: records.clone(),
            nodes: nodes.clone(),
            machines: machines.clone(),
            windows_machines: machines.clone(),
            secrets,
            events: events.clone(),
            cluster_version: Arc::new(FixedVersion),
            ..FakeCluster::default().seams()
        };
        let context = Arc::new(FleetContext::new(&seams, checker.clone(), settings));
        Cluster { records, nodes, machines, events, checker, context }
    }

    /// A configured BYOH host at `address` whose Ready Node carries `hash`.
    async fn byoh(&self, name: &str, address: &str, hash: &str) {
        self.record(objects::record(name).byoh(address).username("Administrator").build()).await;
        self.nodes.insert(node(name, hash, true));
    }

    /// A Running Windows Machine `name` with its record and Ready Node carrying `hash`.
    async fn machine(&self, name: &str, hash: &str) {
        self.machines.insert(machine(name, "Running"));
        let record = objects::record(&format!("machine-{name}")).from_machine(name, "10.0.1.1");
        self.record(record.username("Administrator").expecting_node(name).build()).await;
        self.nodes.insert(node(name, hash, true));
    }

    /// Stores `record` in phase Ready, expecting its spec's Node name or else its own name without `machine-`.
    async fn record(&self, mut record: WindowsInstance) {
        let name = record.name_any();
        let node_name =
            record.spec.expected_node_name.clone().unwrap_or(name.trim_start_matches("machine-").to_owned());
        record.metadata.uid = Some(uid_for(&node_name));
        self.records.apply(&record).await.unwrap();
        let status = objects::status().phase(InstancePhase::Ready).expected_node_name(&node_name);
        self.records.apply_status(NAMESPACE, &name, &status.build()).await.unwrap();
    }

    async fn reconcile(&self) -> FleetOutcome {
        reconcile_fleet(&self.context, "2026-11-22T04:30:00Z".parse().unwrap()).await.unwrap()
    }

    fn node_hash(&self, name: &str) -> Option<String> {
        self.nodes.node(name)?.metadata.annotations?.get(PUB_KEY_HASH_ANNOTATION).cloned()
    }

    /// Every Event as (regarding record, severity, reason, note).
    fn events(&self) -> Vec<(String, Severity, String, String)> {
        self.events
            .published()
            .into_iter()
            .map(|(regarding, NewEvent { severity, reason, note, .. })| {
                (regarding.name.unwrap_or_default(), severity, reason, note.unwrap_or_default())
            })
            .collect()
    }
}

/// The UID the fixture gives the record expecting Node `node_name`, so that the fixture's Nodes are their records'
/// as the operator claims them ([`INSTANCE_UID_ANNOTATION`]).
fn uid_for(node_name: &str) -> String {
    format!("uid-of-the-record-of-{node_name}")
}

fn node(name: &str, hash: &str, ready: bool) -> Node {
    let node = objects::windows_node(name).annotated(VERSION_ANNOTATION, VERSION);
    let node = node.annotated(INSTANCE_UID_ANNOTATION, &uid_for(name));
    node.annotated(PUB_KEY_HASH_ANNOTATION, hash).ready_if(ready).build()
}

fn machine(name: &str, phase: &str) -> Machine {
    objects::machine(name).windows().phase(phase).build()
}

#[tokio::test]
async fn machines_on_the_old_key_are_replaced_one_at_a_time_each_after_the_last_came_back() {
    let cluster = Cluster::new(1).await;
    for name in ["win-a", "win-b", "win-c"] {
        cluster.machine(name, OLD_HASH).await;
    }

    let first = cluster.reconcile().await;
    assert_eq!(first.rotation.replaced, vec!["openshift-machine-api/win-a"]);
    assert_eq!(cluster.machines.deleted(), vec!["openshift-machine-api/win-a"]);
    let deleted = format!(
        "Machine openshift-machine-api/win-a was configured with a previous SSH key (pub-key-hash {OLD_HASH}); \
         deleted so its MachineSet recreates it with the new user data (pub-key-hash {})",
        new_hash()
    );
    assert_eq!(
        cluster.events(),
        vec![
            ("machine-win-a".to_owned(), Severity::Normal, "MachineDeleted".to_owned(), deleted.clone()),
            ("win-a".to_owned(), Severity::Normal, "MachineDeleted".to_owned(), deleted),
        ],
        "the Go operator's reason, on the record and on the Machine"
    );
    let waiting: Vec<&str> = first.work.key_waiting.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(waiting, vec!["machine-win-b", "machine-win-c"]);

    // win-a is terminating: it holds the budget (the planner counts it among the unavailable); a re-run deletes
    // nothing.
    let second = cluster.reconcile().await;
    assert_eq!((second.rotation.replaced.len(), second.machines_away.clone()), (0, vec!["win-a".to_owned()]));
    let reason = &second.work.key_waiting[0].1;
    assert!(matches!(reason, WaitReason::Budget { unavailable: 1, max_unavailable: 1 }), "{reason:?}");

    // win-a is gone; the MachineSet's new win-d provisions (no record yet): still one away.
    cluster.machines.remove("win-a");
    cluster.records.delete(NAMESPACE, "machine-win-a").await.unwrap();
    cluster.machines.insert(machine("win-d", "Provisioning"));
    let third = cluster.reconcile().await;
    assert_eq!((third.rotation.replaced.len(), third.machines_away.clone()), (0, vec!["win-d".to_owned()]));

    // win-d is recorded but its Node is not Ready yet: still away.
    cluster.machine("win-d", &new_hash()).await;
    cluster.nodes.insert(node("win-d", &new_hash(), false));
    let fourth = cluster.reconcile().await;
    assert_eq!(fourth.rotation.replaced.len(), 0);

    // win-d is a Ready Node on the new key: the next Machine goes.
    cluster.nodes.insert(node("win-d", &new_hash(), true));
    let fifth = cluster.reconcile().await;
    assert_eq!(fifth.rotation.replaced, vec!["openshift-machine-api/win-b"]);
    assert_eq!(cluster.machines.deleted(), vec!["openshift-machine-api/win-a", "openshift-machine-api/win-b"]);
    assert!(cluster.checker.checked().is_empty(), "Machines are replaced, never checked");
}

#[tokio::test]
async fn a_budget_of_two_replaces_two_machines_at_once() {
    let cluster = Cluster::new(2).await;
    for name in ["win-a", "win-b", "win-c"] {
        cluster.machine(name, OLD_HASH).await;
    }
    let outcome = cluster.reconcile().await;
    assert_eq!(outcome.rotation.replaced, vec!["openshift-machine-api/win-a", "openshift-machine-api/win-b"]);
    assert_eq!(cluster.reconcile().await.rotation.replaced.len(), 0, "both terminating Machines hold the budget");
}

#[tokio::test]
async fn an_upgrade_in_progress_holds_the_shared_budget() {
    let cluster = Cluster::new(1).await;
    cluster.machine("win-a", OLD_HASH).await;
    cluster.byoh("byoh-1", "10.0.0.5", &new_hash()).await;
    let mut upgrading = node("byoh-1", &new_hash(), true);
    upgrading.metadata.labels.get_or_insert_default().insert(UPGRADING_LABEL.into(), "true".into());
    cluster.nodes.insert(upgrading);

    let outcome = cluster.reconcile().await;
    assert!(outcome.rotation.replaced.is_empty());
    assert_eq!(outcome.work.key_waiting.len(), 1);
    assert!(matches!(outcome.work.key_waiting[0].1, WaitReason::Budget { unavailable: 1, max_unavailable: 1 }));
}

#[tokio::test]
async fn ignored_machines_and_terminating_ones_are_neither_deleted_nor_counted_twice() {
    let cluster = Cluster::new(1).await;
    cluster.machine("win-a", OLD_HASH).await;
    let mut ignored = machine("win-x", "Provisioning");
    ignored.metadata.annotations = Some([("windowsmachineconfig.openshift.io/ignore".into(), "true".into())].into());
    cluster.machines.insert(ignored);

    let outcome = cluster.reconcile().await;
    assert_eq!(outcome.rotation.replaced, vec!["openshift-machine-api/win-a"]);
    assert!(outcome.machines_away.is_empty());
    cluster.reconcile().await;
    assert_eq!(cluster.machines.deleted(), vec!["openshift-machine-api/win-a"], "deleted once");
}

#[tokio::test]
async fn a_byoh_host_that_accepts_the_new_key_is_rekeyed_and_one_that_refuses_is_told_what_to_add_where() {
    let cluster = Cluster::new(1).await;
    cluster.byoh("byoh-ok", "10.0.0.5", OLD_HASH).await;
    cluster.byoh("byoh-refuses", "10.0.0.6", OLD_HASH).await;
    cluster.checker.answer("10.0.0.6", Err(KeyCheckFailure::NotAuthorized { reason: "publickey refused".into() }));

    let outcome = cluster.reconcile().await;
    assert_eq!(outcome.rotation.rekeyed, vec!["byoh-ok"]);
    assert_eq!(outcome.rotation.not_authorized, vec!["byoh-refuses"]);
    assert!(outcome.needs_retry());
    assert_eq!(cluster.node_hash("byoh-ok"), Some(new_hash()));
    assert_eq!(cluster.node_hash("byoh-refuses").as_deref(), Some(OLD_HASH));
    let line = test_public_key().authorized_key_line();
    assert_eq!(
        cluster.events(),
        vec![
            (
                "byoh-ok".to_owned(),
                Severity::Normal,
                "Rekeyed".to_owned(),
                format!(
                    "the new SSH key (pub-key-hash {}) logs in to Administrator@10.0.0.5; Node byoh-ok annotated",
                    new_hash()
                ),
            ),
            (
                "byoh-refuses".to_owned(),
                Severity::Warning,
                "NewKeyNotAuthorized".to_owned(),
                format!(
                    "the operator's new SSH key is not authorized for user Administrator on host 10.0.0.6: add the \
                     line \"{line}\" to C:\\ProgramData\\ssh\\administrators_authorized_keys on 10.0.0.6 (keep the \
                     file's ACL limited to Administrators and SYSTEM); the operator checks again every 30s, and until \
                     then the host keeps running but is not reconfigured or upgraded"
                ),
            ),
        ]
    );
    assert!(line.starts_with("ssh-ed25519 AAAA"), "{line}");

    // Retried: only the refusing host is checked again, and its Warning is not repeated.
    let retry = cluster.reconcile().await;
    assert_eq!(
        (retry.rotation.rekeyed.len(), retry.rotation.not_authorized.clone()),
        (0, vec!["byoh-refuses".to_owned()])
    );
    assert_eq!(cluster.checker.checked(), vec!["10.0.0.5", "10.0.0.6", "10.0.0.6"]);
    assert_eq!(cluster.events().len(), 2);

    // The admin adds the line: the next check re-keys it, and the fleet is converged.
    cluster.checker.answer("10.0.0.6", Ok(()));
    assert_eq!(cluster.reconcile().await.rotation.rekeyed, vec!["byoh-refuses"]);
    assert_eq!(cluster.node_hash("byoh-refuses"), Some(new_hash()));
    let converged = cluster.reconcile().await;
    assert!(converged.work.key_converged() && !converged.needs_retry());
    assert_eq!(cluster.checker.checked().len(), 4, "a converged fleet is not checked again");
}

#[tokio::test]
async fn an_unreachable_host_is_reported_once_and_does_not_block_the_others() {
    let cluster = Cluster::new(1).await;
    cluster.byoh("byoh-down", "10.0.0.7", OLD_HASH).await;
    cluster.byoh("byoh-up", "10.0.0.8", OLD_HASH).await;
    cluster.checker.answer("10.0.0.7", Err(KeyCheckFailure::Failed { reason: "connection timed out".into() }));

    let outcome = cluster.reconcile().await;
    assert_eq!(outcome.rotation.rekeyed, vec!["byoh-up"]);
    let message = "checking the new SSH key on Administrator@10.0.0.7 failed: connection timed out";
    assert_eq!(outcome.rotation.failed, vec![("byoh-down".to_owned(), message.to_owned())]);
    cluster.reconcile().await;
    let warnings: Vec<_> =
        cluster.events().into_iter().filter(|(_, severity, _, _)| *severity == Severity::Warning).collect();
    assert_eq!(
        warnings,
        vec![(
            "byoh-down".to_owned(),
            Severity::Warning,
            "RekeyCheckFailed".to_owned(),
            format!("{message}; retried every 30s")
        )]
    );
}

#[tokio::test]
async fn a_fleet_on_the_current_key_is_left_alone() {
    let cluster = Cluster::new(1).await;
    cluster.byoh("byoh-1", "10.0.0.5", &new_hash()).await;
    cluster.machine("win-a", &new_hash()).await;
    let outcome = cluster.reconcile().await;
    assert!(outcome.work.key_converged());
    assert_eq!((outcome.rotation.replaced.len(), outcome.rotation.rekeyed.len()), (0, 0));
    assert!(cluster.checker.checked().is_empty() && cluster.events().is_empty());
}

#[tokio::test]
async fn without_a_usable_key_nothing_is_decided() {
    let cluster = Cluster::new(1).await;
    cluster.machine("win-a", OLD_HASH).await;
    let seams = Seams {
        records: cluster.records.clone(),
        nodes: cluster.nodes.clone(),
        machines: cluster.machines.clone(),
        windows_machines: cluster.machines.clone(),
        events: cluster.events.clone(),
        cluster_version: Arc::new(FixedVersion),
        ..FakeCluster::default().seams()
    };
    let empty = Arc::new(FleetContext::new(&seams, cluster.checker.clone(), cluster.context.settings.clone()));
    let error = reconcile_fleet(&empty, Timestamp::UNIX_EPOCH).await.unwrap_err();
    assert_eq!(error.metric_label(), "rekey_key");
    assert!(cluster.machines.deleted().is_empty());
}

#[tokio::test]
async fn a_machine_failed_by_the_new_key_is_replaced_and_byoh_checks_do_not_wait_for_the_budget() {
    let cluster = Cluster::new(1).await;
    cluster.machine("win-a", OLD_HASH).await;
    cluster.machine("win-b", OLD_HASH).await;
    cluster.byoh("byoh-1", "10.0.0.5", OLD_HASH).await;
    // The instances controller, rebuilt with the new key, could not log in to win-a's host.
    let failed =
        objects::status().phase(InstancePhase::Failed).expected_node_name("win-a").last_error("authentication failed");
    cluster.records.apply_status(NAMESPACE, "machine-win-a", &failed.build()).await.unwrap();

    let first = cluster.reconcile().await;
    assert_eq!(first.rotation.replaced, vec!["openshift-machine-api/win-a"]);
    assert_eq!(first.rotation.rekeyed, vec!["byoh-1"]);

    // win-a terminating holds the budget; a BYOH host that turns stale meanwhile is still checked at once.
    cluster.byoh("byoh-2", "10.0.0.9", OLD_HASH).await;
    let second = cluster.reconcile().await;
    assert_eq!((second.rotation.replaced.len(), second.rotation.rekeyed.clone()), (0, vec!["byoh-2".to_owned()]));
    assert_eq!(second.machines_away, vec!["win-a"]);
}

/// The grace period ends 300 s after the refusals began; reconciles run at 04:30:00.
const REFUSED_LONG_AGO: &str = "2026-11-22T04:20:00Z";
const REFUSED_RECENTLY: &str = "2026-11-22T04:27:00Z";

impl Cluster {
    /// The record `name`'s host has refused the key since `since` (the flow's condition, phase Failed).
    async fn refuse(&self, name: &str, since: &str) {
        let mut status = self.records.record(NAMESPACE, name).unwrap().status.unwrap();
        status.phase = Some(wmco_cluster_client::types::InstancePhase::Failed);
        status.conditions.push(
            serde_json::from_value(json!({
            "type": "AuthenticationFailed", "status": "True", "reason": "KeyRefused",
            "message": "authentication failed", "lastTransitionTime": since}))
            .unwrap(),
        );
        self.records.apply_status(NAMESPACE, name, &status).await.unwrap();
    }

    /// A new Windows Machine `name` (phase Provisioned) recorded but never a Node.
    async fn new_machine(&self, name: &str) {
        self.machines.insert(machine(name, "Provisioned"));
        let record = objects::record(&format!("machine-{name}")).from_machine(name, "10.0.1.2");
        self.record(record.username("Administrator").expecting_node(name).build()).await;
    }
}

fn refused_note(machine: &str, address: &str, since: &str, minutes: u32) -> String {
    format!(
        "the host of Machine openshift-machine-api/{machine} (Administrator@{address}) has refused the operator's SSH \
         key (pub-key-hash {}) since {since} ({minutes} min, longer than the 300s grace period); Machine deleted so \
         its MachineSet recreates it with the current user data",
        new_hash()
    )
}

#[tokio::test]
async fn a_machine_refusing_the_key_past_the_grace_period_is_replaced_with_warnings_on_record_and_machine() {
    let cluster = Cluster::new(1).await;
    cluster.new_machine("win-a").await;
    cluster.refuse("machine-win-a", REFUSED_LONG_AGO).await;

    let outcome = cluster.reconcile().await;
    assert_eq!(outcome.rotation.replaced_refused, vec!["openshift-machine-api/win-a"]);
    assert!(outcome.rotation.replaced.is_empty());
    assert_eq!(cluster.machines.deleted(), vec!["openshift-machine-api/win-a"]);
    let note = refused_note("win-a", "10.0.1.2", REFUSED_LONG_AGO, 10);
    let reason = "MachineSetupFailure".to_owned();
    let deleted = "Machine openshift-machine-api/win-a deleted after its host refused the operator's SSH key; its \
                   MachineSet recreates it"
        .to_owned();
    assert_eq!(
        cluster.events(),
        vec![
            ("machine-win-a".to_owned(), Severity::Warning, reason.clone(), note.clone()),
            ("win-a".to_owned(), Severity::Warning, reason, note),
            ("win-a".to_owned(), Severity::Normal, "MachineDeleted".to_owned(), deleted),
        ]
    );
    let on_machine = &cluster.events.published()[1].0;
    assert_eq!(
        (on_machine.kind.as_deref(), on_machine.namespace.as_deref()),
        (Some("Machine"), Some("openshift-machine-api"))
    );

    // Terminating, it is not deleted again.
    let again = cluster.reconcile().await;
    assert!(again.rotation.replaced_refused.is_empty());
    assert_eq!(cluster.machines.deleted().len(), 1);
}

#[tokio::test]
async fn within_the_grace_period_nothing_is_deleted_and_the_deadline_is_reported() {
    let cluster = Cluster::new(1).await;
    cluster.new_machine("win-a").await;
    cluster.refuse("machine-win-a", REFUSED_RECENTLY).await;

    let outcome = cluster.reconcile().await;
    assert!(outcome.rotation.replaced_refused.is_empty() && cluster.machines.deleted().is_empty());
    let deadline: Timestamp = "2026-11-22T04:32:00Z".parse().unwrap();
    assert_eq!(outcome.refused.in_grace, vec![("machine-win-a".to_owned(), deadline)]);
    assert_eq!(outcome.refused.next_deadline(), Some(deadline));
    assert!(cluster.events().is_empty());

    let after = reconcile_fleet(&cluster.context, "2026-11-22T04:32:00Z".parse().unwrap()).await.unwrap();
    assert_eq!(after.rotation.replaced_refused, vec!["openshift-machine-api/win-a"], "the grace period ended");
}

#[tokio::test]
async fn a_byoh_host_refusing_the_key_is_never_deleted() {
    let cluster = Cluster::new(1).await;
    cluster.byoh("byoh-1", "10.0.0.5", &new_hash()).await;
    cluster.refuse("byoh-1", REFUSED_LONG_AGO).await;

    let outcome = cluster.reconcile().await;
    assert_eq!(outcome.refused, RefusedPlan::default());
    assert!(outcome.rotation.replaced_refused.is_empty() && cluster.machines.deleted().is_empty());
    assert!(cluster.events().is_empty());
}

#[tokio::test]
async fn refused_serving_machines_are_replaced_one_at_a_time_with_budget_one() {
    let cluster = Cluster::new(1).await;
    // Both Ready Nodes on the current key; their hosts began refusing the key (win-b first).
    cluster.machine("win-a", &new_hash()).await;
    cluster.machine("win-b", &new_hash()).await;
    cluster.refuse("machine-win-a", REFUSED_LONG_AGO).await;
    cluster.refuse("machine-win-b", "2026-11-22T04:10:00Z").await;

    let first = cluster.reconcile().await;
    assert_eq!(first.rotation.replaced_refused, vec!["openshift-machine-api/win-b"], "the oldest refusal goes first");
    assert_eq!(first.refused.waiting_for_budget.len(), 1);
    assert_eq!(first.refused.waiting_for_budget[0].machine, "win-a");
    assert!(first.needs_retry());

    // win-b terminating holds the budget.
    let second = cluster.reconcile().await;
    assert!(second.rotation.replaced_refused.is_empty());
    assert_eq!(second.machines_away, vec!["win-b"]);

    // Its replacement win-c provisions, then becomes a Ready Node: only then win-a goes.
    cluster.machines.remove("win-b");
    cluster.records.delete(NAMESPACE, "machine-win-b").await.unwrap();
    cluster.machines.insert(machine("win-c", "Provisioning"));
    assert!(cluster.reconcile().await.rotation.replaced_refused.is_empty());
    cluster.machine("win-c", &new_hash()).await;
    let last = cluster.reconcile().await;
    assert_eq!(last.rotation.replaced_refused, vec!["openshift-machine-api/win-a"]);
    assert_eq!(cluster.machines.deleted(), vec!["openshift-machine-api/win-b", "openshift-machine-api/win-a"]);
}

#[tokio::test]
async fn refused_machines_that_never_became_nodes_do_not_wait_on_each_other_but_on_the_others() {
    let cluster = Cluster::new(1).await;
    cluster.new_machine("win-a").await;
    cluster.new_machine("win-b").await;
    cluster.refuse("machine-win-a", REFUSED_LONG_AGO).await;
    cluster.refuse("machine-win-b", REFUSED_LONG_AGO).await;

    let first = cluster.reconcile().await;
    assert_eq!(first.rotation.replaced_refused, vec!["openshift-machine-api/win-a"]);
    let waiting: Vec<&str> = first.refused.waiting_for_budget.iter().map(|m| m.machine.as_str()).collect();
    assert_eq!(waiting, vec!["win-b"]);
    // win-a terminating is away: win-b waits for its replacement.
    assert!(cluster.reconcile().await.rotation.replaced_refused.is_empty());
}

#[tokio::test]
async fn a_machine_on_an_old_key_that_also_refuses_is_replaced_once_and_takes_the_budget_first() {
    let cluster = Cluster::new(1).await;
    cluster.machine("win-a", OLD_HASH).await;
    cluster.machine("win-b", &new_hash()).await;
    cluster.refuse("machine-win-a", REFUSED_LONG_AGO).await;
    cluster.refuse("machine-win-b", REFUSED_LONG_AGO).await;

    let outcome = cluster.reconcile().await;
    assert_eq!(outcome.rotation.replaced, vec!["openshift-machine-api/win-a"]);
    assert!(outcome.rotation.replaced_refused.is_empty());
    let waiting: Vec<&str> = outcome.refused.waiting_for_budget.iter().map(|m| m.machine.as_str()).collect();
    assert_eq!(waiting, vec!["win-b"]);
    assert_eq!(cluster.machines.deleted(), vec!["openshift-machine-api/win-a"]);
}

#[tokio::test]
async fn a_machine_gone_before_its_replacement_exists_holds_the_budget_while_its_record_remains() {
    let cluster = Cluster::new(1).await;
    cluster.machine("win-a", OLD_HASH).await;
    cluster.machine("win-b", OLD_HASH).await;
    assert_eq!(cluster.reconcile().await.rotation.replaced, vec!["openshift-machine-api/win-a"]);

    // No finalizer kept win-a: it is gone at once, its record is being deconfigured, no replacement exists yet.
    cluster.machines.remove("win-a");
    let second = cluster.reconcile().await;
    assert_eq!((second.rotation.replaced.len(), second.machines_away.clone()), (0, vec!["win-a".to_owned()]));

    // The replacement appears (no record yet) and the old record is released: still one away.
    cluster.machines.insert(machine("win-c", "Provisioned"));
    cluster.records.delete(NAMESPACE, "machine-win-a").await.unwrap();
    let third = cluster.reconcile().await;
    assert_eq!((third.rotation.replaced.len(), third.machines_away.clone()), (0, vec!["win-c".to_owned()]));
}
