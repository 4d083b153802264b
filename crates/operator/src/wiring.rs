//! Composition of the instances controller and the upgrade executor from the real cluster seams, for `wmco run`:
//! the operator key ([`wait_for_operator_key`]), the files source ([`NodeFiles`] fed by a [`MaterialRefresher`]),
//! the SSH connector over a [`HostPool`], the [`InstancesContext`] recording into the served [`Metrics`], the
//! [`UpgradesContext`] sharing its drainer and key hash, and the fleet metrics watch. The binary calls
//! [`run_instances`] while it leads, with the [`ShutdownSignal`] that ends it gracefully.

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use semver::Version;
use wmco_cluster_client::{
    DrainOptions, Drainer, EventPublisher, KubeConfigMaps, KubeDrainer, KubeEvents, KubeInstanceRecords, KubeNodes,
    KubeSecrets, KubeServiceAccountTokens,
};
use wmco_payload_manifest::{Manifest, Payload};
use wmco_ssh_transport::HostPool;
use wmco_windows_services::Verbosity;

use crate::csr::system_clock;
use crate::files::{ClusterSettings, KubeletCaSource, MaterialRefresher, MaterialSources, NodeFiles, RefreshSettings};
use crate::fleet::SharedBudget;
use crate::fleet_metrics::run_fleet_metrics;
use crate::instances::{InstancesContext, InstancesSettings, SshConnector, controller};
use crate::metrics::Metrics;
use crate::operator_key::{OperatorKey, wait_for_key_change, wait_for_operator_key};
use crate::shutdown::ShutdownSignal;
use crate::upgrades::{UpgradeSettings, UpgradesContext};

/// How often an unusable `cloud-private-key` Secret is read again.
pub const KEY_RETRY: Duration = Duration::from_secs(10);
/// How long an unused SSH connection stays open.
pub const SSH_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// What `wmco run` decides about the instances controller.
#[derive(Clone, Debug)]
pub struct InstancesRun {
    /// The operator namespace.
    pub namespace: String,
    /// The name the controller publishes Events as.
    pub controller_name: String,
    /// The SSH port of every host.
    pub ssh_port: u16,
    /// This process's identity, sent as the SSH client version suffix.
    pub ssh_identity: String,
    /// How many hosts are reconciled at once.
    pub concurrency: u16,
    /// The version written to configured Nodes (no build metadata); Nodes at another version are upgraded to it.
    pub operator_version: Version,
    /// How many Windows nodes the upgrade executor may make unavailable at once (BYOH and Machines together).
    pub max_unavailable: u32,
    /// The kubelet version the payload installs (for the upgrade skew rule).
    pub payload_kubelet_version: Version,
    /// Log verbosity of the node services.
    pub verbosity: Verbosity,
    /// Whether the cluster is OpenShift (kubelet client CA from ControllerConfig) or plain Kubernetes (the API
    /// server CA).
    pub openshift: bool,
}

/// The SSH connector of one controller run: a fresh pool, `key`, the port and the process identity.
fn connector(run: &InstancesRun, key: OperatorKey) -> SshConnector {
    let pool = HostPool::new(max_ssh_connections(run.concurrency), SSH_IDLE_TIMEOUT);
    SshConnector::new(pool, key.private_key, run.ssh_port).with_client_version_suffix(run.ssh_identity.clone())
}

/// The instances controller's settings for `run` with the key hash `pub_key_hash`.
fn instances_settings(run: &InstancesRun, cluster: &ClusterSettings, pub_key_hash: String) -> InstancesSettings {
    InstancesSettings {
        namespace: run.namespace.clone(),
        services: cluster.service_settings(run.verbosity),
        operator_version: run.operator_version.to_string(),
        pub_key_hash,
        drain: DrainOptions::default(),
    }
}

/// The upgrade executor's settings for `run` with the key hash `pub_key_hash`.
fn upgrade_settings(run: &InstancesRun, pub_key_hash: String) -> UpgradeSettings {
    UpgradeSettings {
        namespace: run.namespace.clone(),
        operator_version: run.operator_version.clone(),
        max_unavailable: run.max_unavailable,
        payload_kubelet_version: run.payload_kubelet_version.clone(),
        pub_key_hash,
        drain: DrainOptions::default(),
    }
}

/// How many SSH connections may be open at once: two per concurrent configuration, at least 16.
pub fn max_ssh_connections(concurrency: u16) -> usize {
    usize::from(concurrency).saturating_mul(2).max(16)
}

/// Runs the instances controller and the upgrade executor until `shutdown` is triggered (or the task is aborted):
/// starts the material refresher at once, waits for a usable operator key, then reconciles the fleet; when the
/// admin replaces `cloud-private-key` with another usable key, both are rebuilt with it (new SSH connections;
/// cached sessions dropped). `drain_config` is the client configuration the drainer builds its own
/// (non-retrying) client from. Once `shutdown` is triggered the upgrade executor and the key watch stop, no host
/// reconcile starts, and this returns when the host reconciles in flight finished. Every upgrade executor built
/// (one per key) shares `budget` (its lock with the key rotation, and the Windows Machines away from the fleet)
/// and counts its errors in `metrics`.
///
/// # Errors
/// None once started: problems with the key or the material are logged and retried. Building the drainer's
/// client fails only on an unusable configuration.
#[expect(clippy::too_many_arguments, reason = "one argument per independent input of the composition")]
pub async fn run_instances(
    client: Client,
    drain_config: kube::Config,
    run: InstancesRun,
    manifest: Manifest,
    payload: Payload,
    cluster: ClusterSettings,
    metrics: Arc<Metrics>,
    budget: SharedBudget,
    shutdown: ShutdownSignal,
) -> Result<(), wmco_cluster_client::Error> {
    let drainer: Arc<dyn Drainer> = Arc::new(KubeDrainer::from_config(drain_config)?);
    let kubelet_ca = if run.openshift {
        KubeletCaSource::ControllerConfigs(Arc::new(wmco_cluster_client::KubeControllerConfigs::new(client.clone())))
    } else {
        KubeletCaSource::ApiServerCa
    };
    let sources = MaterialSources {
        config_maps: Arc::new(KubeConfigMaps::new(client.clone())),
        secrets: Arc::new(KubeSecrets::new(client.clone())),
        tokens: Arc::new(KubeServiceAccountTokens::new(client.clone())),
        kubelet_ca,
    };
    let (refresher, snapshot) =
        MaterialRefresher::new(sources, RefreshSettings::new(run.namespace.clone()), system_clock());
    let events: Arc<dyn EventPublisher> = Arc::new(KubeEvents::new(client.clone(), run.controller_name.clone(), None));
    let instances = async {
        let secrets = KubeSecrets::new(client.clone());
        let first_key = wait_for_operator_key(&secrets, events.as_ref(), &run.namespace, KEY_RETRY);
        let Some(mut key) = shutdown.clone().unless_triggered(first_key).await else {
            return;
        };
        loop {
            let current_hash = key.pub_key_hash.clone();
            let files = NodeFiles::new(manifest.clone(), payload.clone(), cluster.clone(), snapshot.clone());
            let context = InstancesContext::new(
                Arc::new(KubeInstanceRecords::new(client.clone())),
                Arc::new(KubeNodes::new(client.clone())),
                Arc::clone(&drainer),
                Arc::clone(&events),
                Arc::new(connector(&run, key)),
                Arc::new(files),
                instances_settings(&run, &cluster, current_hash.clone()),
            )
            .with_metrics(Arc::clone(&metrics));
            let upgrades = UpgradesContext::new(
                Arc::new(KubeInstanceRecords::new(client.clone())),
                Arc::new(KubeNodes::new(client.clone())),
                Arc::clone(&drainer),
                Arc::clone(&events),
                Arc::new(wmco_cluster_client::KubeClusterVersion::new(client.clone())),
                upgrade_settings(&run, current_hash.clone()),
            )
            .with_shared_budget(&budget)
            .with_metrics(Arc::clone(&metrics));
            tracing::info!(
                namespace = %run.namespace,
                concurrency = run.concurrency,
                max_unavailable = run.max_unavailable,
                "starting the instances controller and the upgrade executor"
            );
            let instances = controller(client.clone(), Arc::new(context), run.concurrency, shutdown.clone());
            let upgrades =
                shutdown.clone().unless_triggered(crate::upgrades::controller(client.clone(), Arc::new(upgrades)));
            let key_change = shutdown.clone().unless_triggered(wait_for_key_change(
                &secrets,
                &run.namespace,
                &current_hash,
                KEY_RETRY,
            ));
            tokio::select! {
                _ = async { futures::join!(instances, upgrades) } => return,
                Some(new_key) = key_change => {
                    tracing::warn!("Secret cloud-private-key changed: restarting the instances controller and the upgrade executor with the new key");
                    key = new_key;
                }
            }
        }
    };
    let fleet_metrics = run_fleet_metrics(client.clone(), run.namespace.clone(), Arc::clone(&metrics));
    tokio::select! {
        () = refresher.run() => {}
        () = instances => {}
        () = fleet_metrics => {}
    }
    Ok(())
}
