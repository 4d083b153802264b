//! The CSR controller's shared state: the cluster seams, the watch-fed cache of kubelet CSRs and records with the
//! parsed CSR summaries, the operator namespace and networks, a clock, the per-node-name locks that serialise
//! decisions for one node (rule F2), and the retry backoff of failed reconciles.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use tokio::sync::OwnedMutexGuard;
use wmco_cluster_client::{Csrs, EventPublisher, InstanceRecords, Machines, Nodes, ResourceExt, Seams};
use wmco_csr_approver::IpCidr;

use super::CsrControllerError;
use super::cache::{CsrCache, CsrSummaries, WatchedCache};
use crate::metrics::Metrics;
use crate::runtime::{Controlled, RetryBackoff};

/// Backoff of a failed reconcile: the first retry waits this long, and each later one twice as long as the last.
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// Backoff ceiling.
const MAX_RETRY: Duration = Duration::from_secs(60);

/// The time source of decisions (rules A6, F1, F4); tests pass a fixed instant.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(Timestamp::now)
}

/// Settings of the CSR controller that come from the operator's configuration.
#[derive(Clone)]
pub struct CsrSettings {
    /// The operator namespace, where the `WindowsInstance` records live.
    pub namespace: String,
    /// The cluster's Service network(s) (rule D3).
    pub service_network: Vec<IpCidr>,
    /// The cluster's pod network(s) (rule D3).
    pub cluster_network: Vec<IpCidr>,
    /// The time source.
    pub clock: Clock,
}

/// Everything one CSR reconcile needs (`Arc<CsrContext>` is shared by all reconciles).
pub struct CsrContext {
    /// Lists the kubelet client CSRs before a bootstrap approval and approves or denies through `/approval`.
    pub csrs: Arc<dyn Csrs>,
    /// The kubelet CSRs and the records as their watches last delivered them (ignores are decided from these).
    pub cache: Arc<dyn CsrCache>,
    /// Reads Nodes (always a live GET).
    pub nodes: Arc<dyn Nodes>,
    /// Lists `WindowsInstance` records before an approval or denial, and records the approved bootstrap key.
    pub instances: Arc<dyn InstanceRecords>,
    /// Publishes one Event per decision.
    pub events: Arc<dyn EventPublisher>,
    /// Namespace, networks and clock.
    pub settings: CsrSettings,
    /// Where verdicts and errors are counted (a private registry unless [`CsrContext::with_metrics`] is used).
    pub metrics: Arc<Metrics>,
    /// Reads the Machine of a Machine-backed record (creation time, addresses, nodeRef for the rules); without it,
    /// Machine-backed records take no part in decisions.
    pub machines: Option<Arc<dyn Machines>>,
    pub(crate) summaries: CsrSummaries,
    node_locks: NodeLocks,
    retries: RetryBackoff,
}

impl CsrContext {
    /// A context over the given seams and settings.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use wmco_cluster_client::fake::FakeCluster;
    /// use wmco_operator::csr::{CsrContext, CsrSettings, system_clock};
    /// let settings = CsrSettings {
    ///     namespace: "openshift-windows-machine-config-operator".into(),
    ///     service_network: vec!["172.30.0.0/16".parse()?],
    ///     cluster_network: vec!["10.128.0.0/14".parse()?],
    ///     clock: system_clock(),
    /// };
    /// let context = CsrContext::new(&FakeCluster::default().seams(), settings);
    /// assert_eq!(context.settings.namespace, "openshift-windows-machine-config-operator");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(seams: &Seams, settings: CsrSettings) -> Self {
        Self {
            csrs: Arc::clone(&seams.csrs),
            cache: Arc::new(WatchedCache::default()),
            nodes: Arc::clone(&seams.nodes),
            instances: Arc::clone(&seams.records),
            events: Arc::clone(&seams.events),
            settings,
            metrics: Arc::new(Metrics::new()),
            machines: None,
            summaries: CsrSummaries::default(),
            node_locks: NodeLocks::default(),
            retries: RetryBackoff::new(FIRST_RETRY, MAX_RETRY),
        }
    }

    /// Records verdicts and errors in `metrics` (the registry `/metrics` serves).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Reads the kubelet CSRs and the records from `cache` ([`controller`](super::controller) attaches its
    /// watches' stores; tests pass fakes).
    pub fn with_cache(mut self, cache: Arc<dyn CsrCache>) -> Self {
        self.cache = cache;
        self
    }

    /// Lets decisions about Machine-backed records read their Machines (`wmco run` passes `KubeMachines`).
    pub fn with_machines(mut self, machines: Arc<dyn Machines>) -> Self {
        self.machines = Some(machines);
        self
    }

    /// Waits for exclusive use of `node_name`; decisions for one node never overlap while the guard lives.
    pub(crate) async fn lock_node(&self, node_name: &str) -> OwnedMutexGuard<()> {
        self.node_locks.lock(node_name).await
    }
}

impl Controlled<CertificateSigningRequest> for CsrContext {
    type Error = CsrControllerError;
    const NAME: &'static str = "csr";

    fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn retries(&self) -> &RetryBackoff {
        &self.retries
    }

    fn key(csr: &CertificateSigningRequest) -> String {
        csr.name_any()
    }
}

/// One async mutex per node name; entries nobody holds or waits for are dropped on the next lock.
#[derive(Default)]
struct NodeLocks {
    by_name: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl NodeLocks {
    async fn lock(&self, node_name: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut by_name = self.by_name.lock().unwrap_or_else(PoisonError::into_inner);
            by_name.retain(|_, lock| Arc::strong_count(lock) > 1);
            Arc::clone(by_name.entry(node_name.to_owned()).or_default())
        };
        lock.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn one_node_name_is_held_by_one_decision_at_a_time() {
        let locks = NodeLocks::default();
        let held = locks.lock("win-1").await;
        let wait = Duration::from_millis(20);
        assert!(tokio::time::timeout(wait, locks.lock("win-1")).await.is_err());
        assert!(tokio::time::timeout(wait, locks.lock("win-2")).await.is_ok());
        drop(held);
        assert!(tokio::time::timeout(wait, locks.lock("win-1")).await.is_ok());
        assert_eq!(locks.by_name.lock().unwrap().len(), 1);
    }
}
