//! The Machine controller's shared state: the cluster seams, the settings, and the retry backoff of failed
//! reconciles.

use std::sync::Arc;
use std::time::Duration;

use wmco_cluster_client::types::Machine;
use wmco_cluster_client::{EventPublisher, InstanceRecords, Machines, Platform, ResourceExt, Seams};

use super::MachinesError;
use crate::metrics::Metrics;
use crate::runtime::{Controlled, RetryBackoff};

/// Backoff of a failed reconcile or sweep: the first retry waits this long, and each later one twice as long.
pub(super) const FIRST_RETRY: Duration = Duration::from_secs(1);
/// Backoff ceiling.
pub(super) const MAX_RETRY: Duration = Duration::from_secs(300);

/// Settings of the Machine controller that come from the operator's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachinesSettings {
    /// The operator namespace, where the `WindowsInstance` records live.
    pub namespace: String,
    /// The cluster's platform (`ClusterFacts::platform`): it decides the SSH user and the Node name rule.
    pub platform: Platform,
}

/// Everything one Machine reconcile needs (`Arc<MachinesContext>` is shared by all reconciles).
pub struct MachinesContext {
    /// Reads, applies and deletes `WindowsInstance` records.
    pub records: Arc<dyn InstanceRecords>,
    /// Reads Machines by name (the sweep).
    pub machines: Arc<dyn Machines>,
    /// Publishes Events on Machines.
    pub events: Arc<dyn EventPublisher>,
    /// Namespace and platform.
    pub settings: MachinesSettings,
    /// Where errors are counted (a private registry unless [`MachinesContext::with_metrics`] is used).
    pub metrics: Arc<Metrics>,
    retries: RetryBackoff,
}

impl MachinesContext {
    /// A context over the given seams and settings.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use wmco_cluster_client::Platform;
    /// use wmco_cluster_client::fake::FakeCluster;
    /// use wmco_operator::machines::{MachinesContext, MachinesSettings};
    ///
    /// let settings = MachinesSettings { namespace: "wmco".into(), platform: Platform::Azure };
    /// let context = MachinesContext::new(&FakeCluster::default().seams(), settings);
    /// assert_eq!(context.settings.platform, Platform::Azure);
    /// ```
    pub fn new(seams: &Seams, settings: MachinesSettings) -> Self {
        Self {
            records: Arc::clone(&seams.records),
            machines: Arc::clone(&seams.machines),
            events: Arc::clone(&seams.events),
            settings,
            metrics: Arc::new(Metrics::new()),
            retries: RetryBackoff::new(FIRST_RETRY, MAX_RETRY),
        }
    }

    /// Counts errors in `metrics` (the registry `/metrics` serves).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }
}

impl Controlled<Machine> for MachinesContext {
    type Error = MachinesError;
    const NAME: &'static str = "machines";

    fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn retries(&self) -> &RetryBackoff {
        &self.retries
    }

    fn key(machine: &Machine) -> String {
        machine.name_any()
    }
}
