//! The instances controller's shared state: the cluster seams, the host connector and per-host session cache,
//! the desired-files source, the settings, and the retry backoff of failed reconciles.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use wmco_cluster_client::types::WindowsInstance;
use wmco_cluster_client::{
    ConfigMaps, DrainOptions, Drainer, EventPublisher, InstanceRecords, Nodes, Seams, WindowsInstanceExt,
};
use wmco_node_config::{ClusterAccess, HostFilesSource, HostSession, SessionSettings, WithheldService};

use super::{HostConnector, InstancesError};
use crate::files::ServiceSettingsSource;
use crate::metrics::Metrics;
use crate::runtime::{Controlled, ReconcilerError, RetryBackoff};

/// Backoff of a failed reconcile (of a record or of the `windows-instances` ConfigMap): the first retry waits this
/// long, and each later one twice as long as the last.
pub(super) const FIRST_RETRY: Duration = Duration::from_secs(1);
/// Backoff ceiling.
pub(super) const MAX_RETRY: Duration = Duration::from_secs(300);

/// Settings of the instances controller that come from the operator's configuration.
#[derive(Clone, Debug)]
pub struct InstancesSettings {
    /// The operator namespace, holding the ConfigMap and the `WindowsInstance` records.
    pub namespace: String,
    /// Where each pass reads the host-independent node service settings from.
    pub services: ServiceSettingsSource,
    /// The operator version written to configured Nodes.
    pub operator_version: String,
    /// SHA-256 of the operator's public key (the `pub-key-hash` Node annotation).
    pub pub_key_hash: String,
    /// How deconfiguration drains a Node.
    pub drain: DrainOptions,
    /// How long one remote command may run.
    pub command_timeout: Duration,
}

/// Everything one instances reconcile needs (`Arc<InstancesContext>` is shared by all reconciles).
pub struct InstancesContext {
    /// Reads, applies, deletes and releases `WindowsInstance` records.
    pub records: Arc<dyn InstanceRecords>,
    /// Reads, labels, cordons and deletes Nodes.
    pub nodes: Arc<dyn Nodes>,
    /// Reads the Go operator's host-key ConfigMap.
    pub config_maps: Arc<dyn ConfigMaps>,
    /// Drains Nodes before deconfiguration.
    pub drainer: Arc<dyn Drainer>,
    /// Publishes Events on the ConfigMap and the records.
    pub events: Arc<dyn EventPublisher>,
    /// Opens a host's transport.
    pub connector: Arc<dyn HostConnector>,
    /// The files each host must hold, supplied by the caller (rendered from the verified payload and cluster facts).
    pub files: Arc<dyn HostFilesSource>,
    /// Namespace, service settings, version, key hash and drain options.
    pub settings: InstancesSettings,
    /// Where SSH traffic and errors are counted (a private registry unless [`InstancesContext::with_metrics`] is
    /// used).
    pub metrics: Arc<Metrics>,
    /// Signalled after a record's finalizer was released: the inventory runs again, so an entry added back while
    /// its old record was still being deleted gets a new record (nothing else would announce it).
    pub released: Arc<tokio::sync::Notify>,
    sessions: Mutex<HashMap<String, CachedSession>>,
    /// Per record, the services its last configure pass withheld (a Warning Event is published when this changes).
    withheld: Mutex<HashMap<String, Vec<WithheldService>>>,
    retries: RetryBackoff,
}

/// A session and the connection facts it was opened with.
struct CachedSession {
    address: String,
    username: String,
    session: Arc<HostSession>,
}

impl InstancesContext {
    /// A context over the given seams and settings.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use wmco_cluster_client::fake::FakeCluster;
    /// use wmco_operator::instances::{HostConnector, InstancesContext, InstancesSettings};
    /// # fn example(
    /// #     connector: Arc<dyn HostConnector>,
    /// #     files: Arc<dyn wmco_node_config::HostFilesSource>,
    /// #     settings: InstancesSettings,
    /// # ) {
    /// let context = InstancesContext::new(&FakeCluster::default().seams(), connector, files, settings);
    /// # }
    /// ```
    pub fn new(
        seams: &Seams,
        connector: Arc<dyn HostConnector>,
        files: Arc<dyn HostFilesSource>,
        settings: InstancesSettings,
    ) -> Self {
        Self {
            records: Arc::clone(&seams.records),
            nodes: Arc::clone(&seams.nodes),
            config_maps: Arc::clone(&seams.config_maps),
            drainer: Arc::clone(&seams.drainer),
            events: Arc::clone(&seams.events),
            connector,
            files,
            settings,
            metrics: Arc::new(Metrics::new()),
            released: Arc::new(tokio::sync::Notify::new()),
            sessions: Mutex::default(),
            withheld: Mutex::default(),
            retries: RetryBackoff::new(FIRST_RETRY, MAX_RETRY),
        }
    }

    /// Records SSH traffic and errors in `metrics` (the registry `/metrics` serves).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The cluster capabilities the node-config flows use.
    pub(crate) fn cluster(&self) -> ClusterAccess<'_> {
        ClusterAccess {
            nodes: self.nodes.as_ref(),
            records: self.records.as_ref(),
            drainer: self.drainer.as_ref(),
            config_maps: self.config_maps.as_ref(),
        }
    }

    /// The session of `instance`'s host: the cached one while its address and user are unchanged, else a new one.
    pub(crate) fn session(&self, instance: &WindowsInstance) -> Result<Arc<HostSession>, InstancesError> {
        let label = instance.key();
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cached) = sessions.get(&label)
            && cached.address == instance.spec.address
            && cached.username == instance.spec.username
        {
            return Ok(Arc::clone(&cached.session));
        }
        let session_settings =
            SessionSettings { command_timeout: self.settings.command_timeout, ..SessionSettings::default() };
        let session = Arc::new(HostSession::with_settings(self.connector.connect(instance)?, session_settings));
        let cached = CachedSession {
            address: instance.spec.address.clone(),
            username: instance.spec.username.clone(),
            session: Arc::clone(&session),
        };
        sessions.insert(label, cached);
        Ok(session)
    }

    /// Drops the session of a record that is gone.
    pub(crate) fn forget_session(&self, instance: &WindowsInstance) {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).remove(&instance.key());
        self.withheld.lock().unwrap_or_else(PoisonError::into_inner).remove(&instance.key());
    }

    /// Notes that `instance`'s last pass withheld `withheld`, and returns those not withheld (for the same reason)
    /// by the pass before: the ones to tell the admin about.
    pub(crate) fn newly_withheld(
        &self,
        instance: &WindowsInstance,
        withheld: &[WithheldService],
    ) -> Vec<WithheldService> {
        let mut reported = self.withheld.lock().unwrap_or_else(PoisonError::into_inner);
        let key = instance.key();
        let new = withheld
            .iter()
            .filter(|service| !reported.get(&key).is_some_and(|before| before.contains(service)))
            .cloned()
            .collect();
        if withheld.is_empty() {
            reported.remove(&key);
        } else {
            reported.insert(key, withheld.to_vec());
        }
        new
    }
}

impl Controlled<WindowsInstance> for InstancesContext {
    type Error = InstancesError;
    const NAME: &'static str = "instances";

    fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn retries(&self) -> &RetryBackoff {
        &self.retries
    }

    fn key(instance: &WindowsInstance) -> String {
        instance.key()
    }

    /// Retryable errors and refused logins are retried with backoff; anything else (a host key mismatch, an
    /// unusable record) waits for a change of the record, since it needs an admin.
    fn requeues(error: &InstancesError) -> bool {
        error.is_retryable() || error.is_authentication_failure()
    }

    /// Nothing: [`reconcile_instance`](super::reconcile_instance) counts its errors itself.
    fn count_error(&self, _error: &InstancesError) {}
}
