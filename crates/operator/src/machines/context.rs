//! The Machine controller's shared state: the cluster seams, the settings, and the failure counts behind the retry
//! backoff.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use wmco_cluster_client::{EventPublisher, InstanceRecords, Machines, Platform};

use crate::metrics::Metrics;

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
    failures_by_machine: Mutex<HashMap<String, u32>>,
}

impl MachinesContext {
    /// A context over the given seams and settings.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use wmco_cluster_client::Platform;
    /// use wmco_cluster_client::fake::{FakeEvents, FakeInstanceRecords, FakeMachines};
    /// use wmco_operator::machines::{MachinesContext, MachinesSettings};
    ///
    /// let context = MachinesContext::new(
    ///     Arc::new(FakeInstanceRecords::default()),
    ///     Arc::new(FakeMachines::default()),
    ///     Arc::new(FakeEvents::default()),
    ///     MachinesSettings { namespace: "wmco".into(), platform: Platform::Azure },
    /// );
    /// assert_eq!(context.settings.platform, Platform::Azure);
    /// ```
    pub fn new(
        records: Arc<dyn InstanceRecords>,
        machines: Arc<dyn Machines>,
        events: Arc<dyn EventPublisher>,
        settings: MachinesSettings,
    ) -> Self {
        Self {
            records,
            machines,
            events,
            settings,
            metrics: Arc::new(Metrics::new()),
            failures_by_machine: Mutex::default(),
        }
    }

    /// Counts errors in `metrics` (the registry `/metrics` serves).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Counts one more consecutive failure of `machine` and returns the count (for the retry backoff).
    pub(crate) fn record_failure(&self, machine: &str) -> u32 {
        let mut failures = self.failures_by_machine.lock().unwrap_or_else(PoisonError::into_inner);
        let count = failures.entry(machine.to_owned()).or_default();
        *count = count.saturating_add(1);
        *count
    }

    /// Forgets the failures of `machine` after a successful reconcile.
    pub(crate) fn clear_failures(&self, machine: &str) {
        self.failures_by_machine.lock().unwrap_or_else(PoisonError::into_inner).remove(machine);
    }
}
