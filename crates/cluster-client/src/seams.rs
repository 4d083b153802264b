//! [`Seams`]: every cluster capability the operator's controllers use, as trait objects built once. The operator's
//! composition root builds them from a `kube::Client` with [`Seams::for_client`]; tests build them from the
//! in-memory fakes with `fake::FakeCluster::seams` (feature `testing`). Each controller context takes the
//! seams it needs from here, so no controller names a `Kube*` type.

use std::sync::Arc;

use kube::Client;

use crate::{
    ClusterVersion, ConfigMaps, ControllerConfigs, Csrs, Drainer, EventPublisher, GoDaemonObjects, InstanceRecords,
    KubeClusterVersion, KubeConfigMaps, KubeControllerConfigs, KubeCsrs, KubeDrainer, KubeEvents, KubeGoDaemonObjects,
    KubeInstanceRecords, KubeMachines, KubeNamespaces, KubeNodes, KubeSecrets, KubeServiceAccountTokens, Machines,
    Namespaces, NoWindowsMachines, Nodes, Result, Secrets, ServiceAccountTokens, WindowsMachines,
};

/// The cluster capabilities of one operator process, each built once and shared by every controller.
///
/// ```
/// use wmco_cluster_client::fake::FakeCluster;
///
/// let cluster = FakeCluster::default();
/// let seams = cluster.seams();
/// let shared = seams.clone();
/// assert!(std::sync::Arc::ptr_eq(&seams.nodes, &shared.nodes));
/// ```
#[derive(Clone)]
pub struct Seams {
    /// The `WindowsInstance` records.
    pub records: Arc<dyn InstanceRecords>,
    /// Nodes: reads, label and annotation patches, cordon, deletion.
    pub nodes: Arc<dyn Nodes>,
    /// Machines of the machine API (reads and deletion).
    pub machines: Arc<dyn Machines>,
    /// The Windows Machines of the machine API ([`NoWindowsMachines`] where the machine API is not served).
    pub windows_machines: Arc<dyn WindowsMachines>,
    /// Secrets (`cloud-private-key`, `windows-user-data`, the TLS Secret).
    pub secrets: Arc<dyn Secrets>,
    /// ConfigMaps (`windows-instances`, the CA bundles).
    pub config_maps: Arc<dyn ConfigMaps>,
    /// Whether a Namespace exists (`openshift-cluster-api`, where the user data is mirrored).
    pub namespaces: Arc<dyn Namespaces>,
    /// Short-lived ServiceAccount tokens (the node-bootstrapper token).
    pub tokens: Arc<dyn ServiceAccountTokens>,
    /// CertificateSigningRequests and their `/approval`.
    pub csrs: Arc<dyn Csrs>,
    /// Events, published under the operator's controller name.
    pub events: Arc<dyn EventPublisher>,
    /// Pod eviction for drains.
    pub drainer: Arc<dyn Drainer>,
    /// The API server's version.
    pub cluster_version: Arc<dyn ClusterVersion>,
    /// OpenShift's `ControllerConfig` objects (the kubelet client CA).
    pub controller_configs: Arc<dyn ControllerConfigs>,
    /// The Go operator's daemon identity, deleted once no host needs it.
    pub go_daemon: Arc<dyn GoDaemonObjects>,
}

impl Seams {
    /// The seams over the API server behind `client`. Events are reported as `controller`; the drainer builds its
    /// own (non-retrying) client from `drain_config`; `machine_api_served` is `false` on plain Kubernetes, where no
    /// Windows Machines are listed (the machine API's resources do not exist there).
    ///
    /// # Errors
    /// [`Error`](crate::Error) when `drain_config` cannot build the drainer's client.
    pub fn for_client(
        client: &Client,
        drain_config: kube::Config,
        controller: &str,
        machine_api_served: bool,
    ) -> Result<Self> {
        let windows_machines: Arc<dyn WindowsMachines> =
            if machine_api_served { Arc::new(KubeMachines::new(client.clone())) } else { Arc::new(NoWindowsMachines) };
        Ok(Seams {
            records: Arc::new(KubeInstanceRecords::new(client.clone())),
            nodes: Arc::new(KubeNodes::new(client.clone())),
            machines: Arc::new(KubeMachines::new(client.clone())),
            windows_machines,
            secrets: Arc::new(KubeSecrets::new(client.clone())),
            config_maps: Arc::new(KubeConfigMaps::new(client.clone())),
            namespaces: Arc::new(KubeNamespaces::new(client.clone())),
            tokens: Arc::new(KubeServiceAccountTokens::new(client.clone())),
            csrs: Arc::new(KubeCsrs::new(client.clone())),
            events: Arc::new(KubeEvents::new(client.clone(), controller, None)),
            drainer: Arc::new(KubeDrainer::from_config(drain_config)?),
            cluster_version: Arc::new(KubeClusterVersion::new(client.clone())),
            controller_configs: Arc::new(KubeControllerConfigs::new(client.clone())),
            go_daemon: Arc::new(KubeGoDaemonObjects::new(client.clone())),
        })
    }
}

impl std::fmt::Debug for Seams {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Seams").finish_non_exhaustive()
    }
}
