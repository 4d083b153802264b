//! The executor's shared state: the cluster seams, the API server version source, the settings (the planner's
//! policy), and the only process-local state: the retry backoff of failed upgrade steps, the drains running in the
//! background, the skew warnings already published, and whether the Go operator's daemon identity was seen gone.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use semver::Version;
use tokio::sync::{Mutex as AsyncMutex, Notify};
use tokio::task::JoinHandle;
use wmco_cluster_client::{
    ClusterVersion, DrainOptions, Drainer, EventPublisher, GoDaemonObjects, InstanceRecords, Nodes, Seams,
    WindowsMachines,
};
use wmco_upgrade_planner::{Failure, Policy};

use crate::files::ServiceSettingsSource;
use crate::fleet::SharedBudget;
use crate::metrics::Metrics;
use crate::runtime::RetryBackoff;

/// The first retry of a failed upgrade step waits this long; each later one twice as long as the last.
const FIRST_RETRY: Duration = Duration::from_secs(30);
/// Backoff ceiling.
const MAX_RETRY: Duration = Duration::from_secs(600);

/// The executor's configuration.
#[derive(Clone, Debug)]
pub struct UpgradeSettings {
    /// The operator namespace, holding the `WindowsInstance` records.
    pub namespace: String,
    /// The operator's version (no build metadata): Nodes annotated with another version are upgraded to it.
    pub operator_version: Version,
    /// At most this many instances unavailable because of the operator at once, BYOH and Machines together.
    pub max_unavailable: u32,
    /// The kubelet version the payload installs (`payload/manifest.yaml`, component `kubelet`).
    pub payload_kubelet_version: Version,
    /// SHA-256 of the current public key (the `pub-key-hash` Node annotation): Nodes with another one are re-keyed,
    /// which the plan budgets before upgrades.
    pub pub_key_hash: String,
    /// How an upgrade drains a Node.
    pub drain: DrainOptions,
}

/// Everything a fleet reconcile needs (`Arc<UpgradesContext>` is shared with the controller loop).
pub struct UpgradesContext {
    /// Reads the records and writes their phase.
    pub records: Arc<dyn InstanceRecords>,
    /// Reads, marks, cordons and uncordons Nodes.
    pub nodes: Arc<dyn Nodes>,
    /// Drains Nodes through the eviction API.
    pub drainer: Arc<dyn Drainer>,
    /// Publishes Events on the records.
    pub events: Arc<dyn EventPublisher>,
    /// The API server's version, for the skew rule.
    pub api_server: Arc<dyn ClusterVersion>,
    /// Namespace, versions, budget, key hash, drain options.
    pub settings: UpgradeSettings,
    /// The Windows Machines, whose replacements away from the fleet are taken off the budget (none by default).
    pub windows_machines: Arc<dyn WindowsMachines>,
    /// Where errors are counted (a private registry unless [`UpgradesContext::with_metrics`] is used).
    pub metrics: Arc<Metrics>,
    /// The Go operator's daemon identity, deleted once no Windows Node may still run that daemon.
    pub go_daemon: Arc<dyn GoDaemonObjects>,
    /// Whether the cluster lets Windows nodes be configured at all; while it does not, no upgrade starts (a drained
    /// Node could not be configured again). Always by default.
    pub cluster_gate: Option<ServiceSettingsSource>,
    budget_lock: Arc<AsyncMutex<()>>,
    failures: Mutex<HashMap<String, StepFailure>>,
    step_retries: RetryBackoff,
    drains: Mutex<HashMap<String, JoinHandle<()>>>,
    drain_ended: Notify,
    skew_warned: Mutex<HashSet<String>>,
    go_daemon_gone: AtomicBool,
}

/// The failed upgrade steps of one instance since it last finished an upgrade.
#[derive(Clone, Debug)]
struct StepFailure {
    message: String,
    retry_after: Timestamp,
    /// `true` until the step is tried again; the planner holds the instance back until `retry_after`.
    awaiting_retry: bool,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl UpgradesContext {
    /// A context over the given seams and settings.
    ///
    /// ```
    /// use wmco_cluster_client::DrainOptions;
    /// use wmco_cluster_client::fake::FakeCluster;
    /// use wmco_operator::upgrades::{UpgradeSettings, UpgradesContext, operator_version};
    /// # fn example() -> Result<(), wmco_operator::upgrades::UpgradesError> {
    /// let settings = UpgradeSettings {
    ///     namespace: "openshift-windows-machine-config-operator".into(),
    ///     operator_version: operator_version(None)?,
    ///     max_unavailable: 1,
    ///     payload_kubelet_version: semver::Version::new(1, 36, 3),
    ///     pub_key_hash: "0f1e2d".into(),
    ///     drain: DrainOptions::default(),
    /// };
    /// let context = UpgradesContext::new(&FakeCluster::default().seams(), settings);
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(seams: &Seams, settings: UpgradeSettings) -> Self {
        UpgradesContext {
            records: Arc::clone(&seams.records),
            nodes: Arc::clone(&seams.nodes),
            drainer: Arc::clone(&seams.drainer),
            events: Arc::clone(&seams.events),
            api_server: Arc::clone(&seams.cluster_version),
            settings,
            windows_machines: Arc::clone(&seams.windows_machines),
            go_daemon: Arc::clone(&seams.go_daemon),
            metrics: Arc::new(Metrics::new()),
            cluster_gate: None,
            budget_lock: Arc::default(),
            failures: Mutex::default(),
            step_retries: RetryBackoff::new(FIRST_RETRY, MAX_RETRY),
            drains: Mutex::default(),
            drain_ended: Notify::new(),
            skew_warned: Mutex::default(),
            go_daemon_gone: AtomicBool::new(false),
        }
    }

    /// Starts no upgrade while `gate` refuses the cluster ([`ServiceSettingsSource::refusal`]).
    #[must_use]
    pub fn with_cluster_gate(mut self, gate: ServiceSettingsSource) -> Self {
        self.cluster_gate = Some(gate);
        self
    }

    /// Why no upgrade may start now, if none may.
    pub fn cluster_refusal(&self) -> Option<String> {
        self.cluster_gate.as_ref().and_then(ServiceSettingsSource::refusal)
    }

    /// Counts errors in `metrics` (the registry `/metrics` serves): failed reconciles by their kind, failed upgrade
    /// steps as `upgrade_step`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Takes the Windows Machines away from the fleet (being replaced, provisioning, not yet a Ready Node: see
    /// [`machines_away`](crate::fleet::machines_away)) off the budget, as the key rotation does.
    #[must_use]
    pub fn with_windows_machines(mut self, windows_machines: Arc<dyn WindowsMachines>) -> Self {
        self.windows_machines = windows_machines;
        self
    }

    /// Shares `lock` with other budgeted work (the key rotation's Machine replacements): a reconcile holds it from
    /// reading the fleet until its Nodes are marked, so two loops never hand out the same unit of budget.
    #[must_use]
    pub fn with_budget_lock(mut self, lock: Arc<AsyncMutex<()>>) -> Self {
        self.budget_lock = lock;
        self
    }

    /// Shares `budget`'s lock and Windows Machines ([`UpgradesContext::with_budget_lock`],
    /// [`UpgradesContext::with_windows_machines`]).
    #[must_use]
    pub fn with_shared_budget(self, budget: &SharedBudget) -> Self {
        self.with_budget_lock(Arc::clone(&budget.lock)).with_windows_machines(Arc::clone(&budget.windows_machines))
    }

    /// The lock a reconcile holds while it hands out the budget (see [`UpgradesContext::with_budget_lock`]).
    pub fn budget_lock(&self) -> Arc<AsyncMutex<()>> {
        Arc::clone(&self.budget_lock)
    }

    /// The planner's policy against an API server at `cluster_kubernetes_version`.
    pub(crate) fn policy(&self, cluster_kubernetes_version: Version) -> Policy {
        Policy {
            max_unavailable: self.settings.max_unavailable,
            ..Policy::new(
                self.settings.operator_version.clone(),
                cluster_kubernetes_version,
                self.settings.payload_kubelet_version.clone(),
            )
        }
    }

    /// The failure the planner must honour for `instance`: the last failed step while it awaits its retry.
    pub(crate) fn pending_failure(&self, instance: &str) -> Option<Failure> {
        locked(&self.failures)
            .get(instance)
            .filter(|failure| failure.awaiting_retry)
            .map(|failure| Failure { message: failure.message.clone(), retry_after: failure.retry_after })
    }

    /// Whether `instance` has a failed step whose retry is now being made.
    pub(crate) fn is_retrying(&self, instance: &str) -> bool {
        locked(&self.failures).get(instance).is_some_and(|failure| failure.awaiting_retry)
    }

    /// Records a failed step of `instance` at `now`; returns when it may be retried.
    pub(crate) fn note_failure(&self, instance: &str, message: String, now: Timestamp) -> Timestamp {
        let wait = SignedDuration::try_from(self.step_retries.on_failure(instance)).unwrap_or(SignedDuration::MAX);
        let retry_after = now.checked_add(wait).unwrap_or(Timestamp::MAX);
        locked(&self.failures).insert(instance.to_owned(), StepFailure { message, retry_after, awaiting_retry: true });
        retry_after
    }

    /// Marks the retry of `instance`'s failed step as made (its attempts still lengthen the next backoff).
    pub(crate) fn note_retried(&self, instance: &str) {
        if let Some(failure) = locked(&self.failures).get_mut(instance) {
            failure.awaiting_retry = false;
        }
    }

    /// Forgets the failures of `instance` once its upgrade finished.
    pub(crate) fn clear_failures(&self, instance: &str) {
        locked(&self.failures).remove(instance);
        self.step_retries.on_success(instance);
    }

    /// The earliest retry still awaited, if any.
    pub(crate) fn next_retry(&self) -> Option<Timestamp> {
        locked(&self.failures)
            .values()
            .filter(|failure| failure.awaiting_retry)
            .map(|failure| failure.retry_after)
            .min()
    }

    /// Whether a drain of `instance` started by an earlier reconcile is still running.
    pub(crate) fn is_draining(&self, instance: &str) -> bool {
        locked(&self.drains).get(instance).is_some_and(|drain| !drain.is_finished())
    }

    /// Keeps the background drain of `instance` (forgetting those that ended).
    pub(crate) fn track_drain(&self, instance: &str, drain: JoinHandle<()>) {
        let mut drains = locked(&self.drains);
        drains.retain(|_, running| !running.is_finished());
        drains.insert(instance.to_owned(), drain);
    }

    /// Tells the controller loop that a background drain ended (its outcome may allow the next step).
    pub(crate) fn drain_ended(&self) {
        self.drain_ended.notify_one();
    }

    /// Resolves once a background drain ended since the last call.
    pub(crate) async fn next_drain_end(&self) {
        self.drain_ended.notified().await;
    }

    /// Waits until every drain started so far has ended (drained and handed over, or failed and backed off).
    ///
    /// ```no_run
    /// # async fn example(ctx: std::sync::Arc<wmco_operator::upgrades::UpgradesContext>) {
    /// wmco_operator::upgrades::reconcile_fleet(&ctx, jiff::Timestamp::now()).await.ok();
    /// ctx.wait_for_drains().await;
    /// # }
    /// ```
    pub async fn wait_for_drains(&self) {
        let drains: Vec<(String, JoinHandle<()>)> = locked(&self.drains).drain().collect();
        for (instance, drain) in drains {
            if let Err(error) = drain.await {
                tracing::warn!(instance, error = %error, "the drain task ended abnormally");
            }
        }
    }

    /// Whether this process already saw every object of the Go operator's daemon identity deleted or absent.
    pub(crate) fn go_daemon_gone(&self) -> bool {
        self.go_daemon_gone.load(Ordering::Relaxed)
    }

    /// Notes that every object of the Go operator's daemon identity is gone: later reconciles skip the check.
    pub(crate) fn note_go_daemon_gone(&self) {
        self.go_daemon_gone.store(true, Ordering::Relaxed);
    }

    /// `true` the first time `key` is seen (one skew warning per instance, target and API server version).
    pub(crate) fn first_skew_warning(&self, key: String) -> bool {
        locked(&self.skew_warned).insert(key)
    }
}
