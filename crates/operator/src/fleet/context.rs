//! The fleet controller's shared state: the cluster seams, the key check, the settings (the planner's policy, the
//! rotation's timings and the reboot policy), and the only process-local state: the retry backoff of
//! failed upgrade steps, the drains running in the background, the Warning Events already published, and whether
//! the Go operator's daemon identity was seen gone.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use semver::Version;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use wmco_cluster_client::{
    ClusterVersion, DrainOptions, Drainer, EventPublisher, GoDaemonObjects, InstanceRecords, Machines, Nodes, Seams,
    Secrets, WindowsMachines,
};
use wmco_reboot_policy::RebootSettings;
use wmco_upgrade_planner::{Failure, Policy};

use super::KeyChecker;
use crate::files::ServiceSettingsSource;
use crate::metrics::Metrics;
use crate::runtime::RetryBackoff;

/// The first retry of a failed upgrade step waits this long; each later one twice as long as the last.
const FIRST_RETRY: Duration = Duration::from_secs(30);
/// Backoff ceiling.
const MAX_RETRY: Duration = Duration::from_secs(600);
/// The controller's name in the reconcile metrics (and its one key in the loop's backoff).
pub(crate) const FLEET: &str = "fleet";

/// The default [`FleetSettings::authentication_grace`]: five minutes, as long as the Go operator kept retrying a
/// refused login on a new Machine before it deleted the Machine.
pub const AUTHENTICATION_GRACE: Duration = Duration::from_secs(300);

/// The fleet controller's configuration.
#[derive(Clone, Debug)]
pub struct FleetSettings {
    /// The operator namespace (records, `cloud-private-key`).
    pub namespace: String,
    /// The operator's version (no build metadata): Nodes annotated with another version are upgraded to it, and a
    /// Machine replacement installs it.
    pub operator_version: Version,
    /// The kubelet version the payload installs (`payload/manifest.yaml`, component `kubelet`; the skew rule).
    pub payload_kubelet_version: Version,
    /// `--max-unavailable`: at most this many instances unavailable because of the operator at once, BYOH and
    /// Machines together.
    pub max_unavailable: u32,
    /// At most this many BYOH key checks (and configurations) at once.
    pub max_concurrent_configurations: u32,
    /// How an upgrade drains a Node.
    pub drain: DrainOptions,
    /// How soon a host whose key check failed (new key not authorized, host unreachable) is checked again.
    pub retry: Duration,
    /// How long a Machine's host may refuse the operator's key (the record's `AuthenticationFailed` condition)
    /// before its Machine is replaced; the user data may still be setting up sshd on a new host.
    pub authentication_grace: Duration,
    /// `--reboot-policy` and its maintenance window: which hosts the executor asks to reboot, and when.
    pub reboot: RebootSettings,
}

impl FleetSettings {
    /// Settings with the planner's default concurrency (8), the default drain, a 30-second key-check retry, the
    /// [`AUTHENTICATION_GRACE`] and the reboot policy `never`.
    ///
    /// ```
    /// use semver::Version;
    /// use wmco_operator::fleet::FleetSettings;
    /// let settings = FleetSettings::new("wmco", Version::new(1, 0, 0), Version::new(1, 33, 0), 1);
    /// assert_eq!((settings.max_concurrent_configurations, settings.retry.as_secs()), (8, 30));
    /// assert_eq!(settings.authentication_grace.as_secs(), 300);
    /// ```
    pub fn new(
        namespace: impl Into<String>,
        operator_version: Version,
        payload_kubelet_version: Version,
        max_unavailable: u32,
    ) -> Self {
        FleetSettings {
            namespace: namespace.into(),
            operator_version,
            payload_kubelet_version,
            max_unavailable,
            max_concurrent_configurations: 8,
            drain: DrainOptions::default(),
            retry: Duration::from_secs(30),
            authentication_grace: AUTHENTICATION_GRACE,
            reboot: RebootSettings::default(),
        }
    }

    /// The planner's policy against an API server at `cluster_kubernetes_version`.
    pub(crate) fn policy(&self, cluster_kubernetes_version: Version) -> Policy {
        Policy {
            max_unavailable: self.max_unavailable,
            max_concurrent_key_checks: self.max_concurrent_configurations,
            ..Policy::new(
                self.operator_version.clone(),
                cluster_kubernetes_version,
                self.payload_kubelet_version.clone(),
            )
        }
    }
}

/// Everything a fleet reconcile needs (`Arc<FleetContext>` is shared with the controller loop and the drains).
pub struct FleetContext {
    /// Reads the records and writes their phase.
    pub records: Arc<dyn InstanceRecords>,
    /// Reads, marks, annotates, cordons and uncordons Nodes.
    pub nodes: Arc<dyn Nodes>,
    /// Drains Nodes through the eviction API.
    pub drainer: Arc<dyn Drainer>,
    /// Reads and deletes Machines.
    pub machines: Arc<dyn Machines>,
    /// Reads `cloud-private-key` (on every reconcile, so a rotation takes effect at once).
    pub secrets: Arc<dyn Secrets>,
    /// Publishes Events on the records and Machines.
    pub events: Arc<dyn EventPublisher>,
    /// The API server's version, for the skew rule.
    pub api_server: Arc<dyn ClusterVersion>,
    /// Logs in to BYOH hosts with the new key.
    pub key_checker: Arc<dyn KeyChecker>,
    /// The Go operator's daemon identity, deleted once no Windows Node may still run that daemon.
    pub go_daemon: Arc<dyn GoDaemonObjects>,
    /// Namespace, versions, budget, concurrency, drain options, key-check timings.
    pub settings: FleetSettings,
    /// Where reconciles and errors are counted (a private registry unless [`FleetContext::with_metrics`] is used).
    pub metrics: Arc<Metrics>,
    /// Whether the cluster lets Windows nodes be configured at all; while it does not, no upgrade starts (a drained
    /// Node could not be configured again). Always by default.
    pub cluster_gate: Option<ServiceSettingsSource>,
    /// Lists the Windows Machines, whose Machines away from the fleet are taken off the budget.
    pub windows_machines: Arc<dyn WindowsMachines>,
    failures: Mutex<HashMap<String, StepFailure>>,
    step_retries: RetryBackoff,
    drains: Mutex<HashMap<String, JoinHandle<()>>>,
    drain_ended: Notify,
    published: Mutex<HashSet<String>>,
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

impl FleetContext {
    /// A context over `seams`, checking keys with `key_checker`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use wmco_cluster_client::fake::FakeCluster;
    /// use wmco_operator::fleet::{FleetContext, FleetSettings, SshKeyChecker, operator_version};
    /// use wmco_operator::ssh::SshSettings;
    /// # fn example() -> Result<(), wmco_operator::fleet::FleetError> {
    /// let settings = FleetSettings::new(
    ///     "openshift-windows-machine-config-operator",
    ///     operator_version(None)?,
    ///     semver::Version::new(1, 36, 3),
    ///     1,
    /// );
    /// let checker = Arc::new(SshKeyChecker::new(SshSettings::default()));
    /// let context = FleetContext::new(&FakeCluster::default().seams(), checker, settings);
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(seams: &Seams, key_checker: Arc<dyn KeyChecker>, settings: FleetSettings) -> Self {
        FleetContext {
            records: Arc::clone(&seams.records),
            nodes: Arc::clone(&seams.nodes),
            drainer: Arc::clone(&seams.drainer),
            machines: Arc::clone(&seams.machines),
            secrets: Arc::clone(&seams.secrets),
            events: Arc::clone(&seams.events),
            api_server: Arc::clone(&seams.cluster_version),
            key_checker,
            go_daemon: Arc::clone(&seams.go_daemon),
            settings,
            metrics: Arc::new(Metrics::new()),
            cluster_gate: None,
            windows_machines: Arc::clone(&seams.windows_machines),
            failures: Mutex::default(),
            step_retries: RetryBackoff::new(FIRST_RETRY, MAX_RETRY),
            drains: Mutex::default(),
            drain_ended: Notify::new(),
            published: Mutex::default(),
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

    /// Counts reconciles and errors in `metrics` (the registry `/metrics` serves): failed reconciles by their kind,
    /// failed upgrade steps as `upgrade_step`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
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
    /// # async fn example(ctx: std::sync::Arc<wmco_operator::fleet::FleetContext>) {
    /// wmco_operator::fleet::reconcile_fleet(&ctx, jiff::Timestamp::now()).await.ok();
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

    /// `true` the first time `key` is seen (one Warning Event per record, problem and key hash or target).
    pub(crate) fn first_publication(&self, key: String) -> bool {
        locked(&self.published).insert(key)
    }
}
