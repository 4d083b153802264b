//! The rotation's seams and settings: the cluster traits, the Windows Machine listing ([`WindowsMachines`]), the
//! key check on a host ([`KeyChecker`], over SSH in production), the metrics, and the only process-local state:
//! which Warning Events were already published (one per record, key and problem).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use semver::Version;
use tokio::sync::Mutex as AsyncMutex;
use wmco_cluster_client::types::WindowsInstance;
use wmco_cluster_client::{
    ClusterVersion, EventPublisher, InstanceRecords, Machines, Nodes, Seams, Secrets, WindowsMachines,
};
use wmco_ssh_transport::{PrivateKey, SshHost, TransportError};
use wmco_upgrade_planner::Policy;

use crate::metrics::Metrics;
use crate::ssh::{SshSettings, host_config};

/// The rotation's configuration.
#[derive(Clone, Debug)]
pub struct RekeySettings {
    /// The operator namespace (records, `cloud-private-key`).
    pub namespace: String,
    /// The operator's version (the planner's policy needs it; a Machine replacement installs this version).
    pub operator_version: Version,
    /// The kubelet version the payload installs (the skew rule holds Machine replacements back like upgrades).
    pub payload_kubelet_version: Version,
    /// `--max-unavailable`: the budget shared with upgrades, BYOH and Machines together.
    pub max_unavailable: u32,
    /// At most this many BYOH key checks (and configurations) at once.
    pub max_concurrent_configurations: u32,
    /// How soon a host whose check failed (new key not authorized, host unreachable) is checked again.
    pub retry: Duration,
    /// How long a Machine's host may refuse the operator's key (the record's `AuthenticationFailed` condition)
    /// before its Machine is replaced; the user data may still be setting up sshd on a new host.
    pub authentication_grace: Duration,
}

/// The default [`RekeySettings::authentication_grace`]: five minutes, as long as the Go operator kept retrying a
/// refused login on a new Machine before it deleted the Machine.
pub const AUTHENTICATION_GRACE: Duration = Duration::from_secs(300);

impl RekeySettings {
    /// Settings with the planner's default concurrency (8), a 30-second retry and the [`AUTHENTICATION_GRACE`].
    ///
    /// ```
    /// use semver::Version;
    /// use wmco_operator::rekey::RekeySettings;
    /// let settings = RekeySettings::new("wmco", Version::new(1, 0, 0), Version::new(1, 33, 0), 1);
    /// assert_eq!((settings.max_concurrent_configurations, settings.retry.as_secs()), (8, 30));
    /// assert_eq!(settings.authentication_grace.as_secs(), 300);
    /// ```
    pub fn new(
        namespace: impl Into<String>,
        operator_version: Version,
        payload_kubelet_version: Version,
        max_unavailable: u32,
    ) -> Self {
        RekeySettings {
            namespace: namespace.into(),
            operator_version,
            payload_kubelet_version,
            max_unavailable,
            max_concurrent_configurations: 8,
            retry: Duration::from_secs(30),
            authentication_grace: AUTHENTICATION_GRACE,
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

/// Why the new key could not be confirmed on a host.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyCheckFailure {
    /// The host refused the key: the admin has not added it to the host's authorized keys yet.
    #[error("the host refused the key: {reason}")]
    NotAuthorized {
        /// What the SSH library said.
        reason: String,
    },
    /// Anything else (unreachable, timed out, host key mismatch): the key's status is unknown.
    #[error("{reason}")]
    Failed {
        /// The transport's error.
        reason: String,
    },
}

/// Logs in to a record's host with a given key; nothing else.
#[async_trait]
pub trait KeyChecker: Send + Sync {
    /// Whether `key` logs in to `instance`'s host as its SSH user (honouring the host key pinned in the record).
    ///
    /// # Errors
    /// [`KeyCheckFailure::NotAuthorized`] when the host refuses the key, [`KeyCheckFailure::Failed`] otherwise.
    async fn check(&self, instance: &WindowsInstance, key: &PrivateKey) -> Result<(), KeyCheckFailure>;
}

/// [`KeyChecker`] over SSH: a fresh, unpooled connection per check (a pooled handle may still hold the old key),
/// closed at once.
#[derive(Clone, Debug)]
pub struct SshKeyChecker {
    settings: SshSettings,
}

impl SshKeyChecker {
    /// Checks under `settings` (the `--ssh-port` flag, the process identity, the time limits).
    pub fn new(settings: SshSettings) -> Self {
        SshKeyChecker { settings }
    }
}

#[async_trait]
impl KeyChecker for SshKeyChecker {
    async fn check(&self, instance: &WindowsInstance, key: &PrivateKey) -> Result<(), KeyCheckFailure> {
        let config = host_config(instance, key, &self.settings)
            .map_err(|error| KeyCheckFailure::Failed { reason: error.to_string() })?;
        let host = SshHost::new(config).map_err(classify)?;
        host.connect().await.map_err(classify)?;
        if let Err(error) = host.disconnect().await {
            tracing::debug!(host = %host_label(instance), error = %error, "closing the key check's connection");
        }
        Ok(())
    }
}

fn classify(error: TransportError) -> KeyCheckFailure {
    match error {
        TransportError::Authentication { reason, .. } => KeyCheckFailure::NotAuthorized { reason },
        other => KeyCheckFailure::Failed { reason: other.to_string() },
    }
}

fn host_label(instance: &WindowsInstance) -> String {
    format!("{}@{}", instance.spec.username, instance.spec.address)
}

/// Everything a rotation reconcile needs (`Arc<RekeyContext>` is shared with the controller loop).
pub struct RekeyContext {
    /// Reads the records.
    pub records: Arc<dyn InstanceRecords>,
    /// Reads Nodes and writes their `pub-key-hash`.
    pub nodes: Arc<dyn Nodes>,
    /// Reads and deletes Machines.
    pub machines: Arc<dyn Machines>,
    /// Lists the Windows Machines.
    pub windows_machines: Arc<dyn WindowsMachines>,
    /// Reads `cloud-private-key` (the key is read on every reconcile, so a rotation takes effect at once).
    pub secrets: Arc<dyn Secrets>,
    /// Publishes Events on the records.
    pub events: Arc<dyn EventPublisher>,
    /// The API server's version (skew rule).
    pub api_server: Arc<dyn ClusterVersion>,
    /// Logs in to hosts with the new key.
    pub key_checker: Arc<dyn KeyChecker>,
    /// Namespace, versions, budget, retry.
    pub settings: RekeySettings,
    /// Where reconciles and errors are counted (a private registry unless [`RekeyContext::with_metrics`] is used).
    pub metrics: Arc<Metrics>,
    budget_lock: Arc<AsyncMutex<()>>,
    published: Mutex<HashSet<String>>,
}

impl RekeyContext {
    /// A context over `seams`, logging in to hosts with `key_checker`.
    pub fn new(seams: &Seams, key_checker: Arc<dyn KeyChecker>, settings: RekeySettings) -> Self {
        RekeyContext {
            records: Arc::clone(&seams.records),
            nodes: Arc::clone(&seams.nodes),
            machines: Arc::clone(&seams.machines),
            windows_machines: Arc::clone(&seams.windows_machines),
            secrets: Arc::clone(&seams.secrets),
            events: Arc::clone(&seams.events),
            api_server: Arc::clone(&seams.cluster_version),
            key_checker,
            settings,
            metrics: Arc::new(Metrics::new()),
            budget_lock: Arc::default(),
            published: Mutex::default(),
        }
    }

    /// Counts reconciles and errors in `metrics` (the registry `/metrics` serves).
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Shares `lock` with the upgrade executor (the `lock` of the process's one
    /// [`SharedBudget`](crate::fleet::SharedBudget), which every executor gets too): a reconcile holds it from
    /// reading the fleet until its Machines are deleted, so the two never hand out the same unit of budget.
    #[must_use]
    pub fn with_budget_lock(mut self, lock: Arc<AsyncMutex<()>>) -> Self {
        self.budget_lock = lock;
        self
    }

    /// The lock a reconcile holds while it hands out the budget (see [`RekeyContext::with_budget_lock`]).
    pub fn budget_lock(&self) -> Arc<AsyncMutex<()>> {
        Arc::clone(&self.budget_lock)
    }

    /// `true` the first time `key` is seen (one Warning Event per record, key hash and problem).
    pub(crate) fn first_publication(&self, key: String) -> bool {
        self.published.lock().unwrap_or_else(PoisonError::into_inner).insert(key)
    }
}
