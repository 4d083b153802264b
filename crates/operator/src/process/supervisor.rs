//! The controllers of one leadership term: [`start_controllers`] builds every controller's context from the one
//! [`Seams`] and [`OperatorConfig`] and spawns it; [`Controllers`] stops them, gracefully (SIGTERM) or at once (the
//! lease is lost).
//!
//! Two classes of controller stop differently. The CSR, Machine and user-data controllers do API calls (each write
//! atomic): they are aborted at their next await point. The instances controller and the fleet controller run host
//! steps and drains: on a graceful stop they start no new work and get a grace period to finish the reconciles in
//! flight.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::task::JoinHandle;
use wmco_cluster_client::names::{PULL_SECRET, PULL_SECRET_NAMESPACE, TRUSTED_CA_CONFIG_MAP};
use wmco_cluster_client::types::{
    ControllerConfig, ImageDigestMirrorSet, ImageTagMirrorSet, MachineConfig, Network, OperatorNetwork, Proxy,
};
use wmco_cluster_client::{ClusterFactsSource, OpenShiftFacts, Seams};
use wmco_payload_manifest::{Manifest, Payload};
use wmco_ssh_transport::HostPool;
use wmco_ssh_transport::transcript::TranscriptRecorder;

use super::config::OperatorConfig;
use crate::csr::{CsrContext, system_clock};
use crate::files::{
    KubeletCaSource, MaterialRefresher, MaterialSources, NodeFiles, RefreshSettings, ServiceSettingsSource,
};
use crate::fleet::{FleetContext, SshKeyChecker, watch_triggers};
use crate::fleet_metrics::run_fleet_metrics;
use crate::health::Readiness;
use crate::instances::{InstancesContext, SshConnector};
use crate::machines::MachinesContext;
use crate::metrics::Metrics;
use crate::operator_key::{KeyReceiver, KeyWatcher, OperatorKey, PRIVATE_KEY_SECRET};
use crate::shutdown::{ShutdownSignal, ShutdownTrigger, shutdown_channel};
use crate::user_data::UserDataContext;

/// How often `cloud-private-key` is read again without a watch event (a safety net under the watch).
pub const KEY_RESYNC: Duration = Duration::from_secs(60);
/// How long an unused SSH connection stays open.
pub const SSH_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Everything a leadership term starts its controllers from, built once per process.
#[derive(Clone)]
pub(crate) struct Operator {
    /// The client the controllers' watches use.
    pub client: Client,
    /// Every cluster capability.
    pub seams: Seams,
    /// Flags, cluster facts and payload versions.
    pub config: Arc<OperatorConfig>,
    /// The payload manifest built into the binary.
    pub manifest: Manifest,
    /// The verified payload.
    pub payload: Payload,
    /// The registry `/metrics` serves.
    pub metrics: Arc<Metrics>,
    /// What `/readyz` answers.
    pub readiness: Arc<Readiness>,
}

/// The running controllers of one leadership term.
pub(crate) struct Controllers {
    /// Controllers whose work is API calls: stopped at their next await point.
    immediate: Vec<(&'static str, JoinHandle<()>)>,
    /// The instances and fleet controllers: they run host steps and stop on `shutdown`.
    graceful: (&'static str, JoinHandle<()>),
    shutdown: ShutdownTrigger,
}

impl Controllers {
    /// Graceful stop (SIGTERM): the API-only controllers stop at once, the host controllers start no new work and
    /// get `grace` to finish the reconciles in flight, then whatever still runs is aborted; aborted at once too if
    /// `fence` completes first (the leadership term ended during the stop).
    pub(crate) async fn stop_gracefully(self, grace: Duration, fence: impl Future<Output = ()>) {
        let Controllers { immediate, graceful: (name, mut graceful), shutdown } = self;
        shutdown.trigger();
        abort_all(immediate).await;
        tracing::info!(grace = ?grace, "waiting for the host reconciles in flight");
        let finished = tokio::select! {
            finished = tokio::time::timeout(grace, &mut graceful) => Some(finished),
            () = fence => None,
        };
        match finished {
            Some(Ok(result)) => log_end(name, result),
            Some(Err(_)) => {
                tracing::warn!(controller = name, grace = ?grace, "host reconciles still running after the grace period: aborting them");
                abort_all(vec![(name, graceful)]).await;
            }
            None => {
                tracing::warn!(
                    controller = name,
                    "leadership ended during the graceful stop: aborting the host reconciles"
                );
                abort_all(vec![(name, graceful)]).await;
            }
        }
        tracing::info!("controllers stopped");
    }

    /// Immediate stop (the lease is lost and another replica may already lead): every controller is aborted at its
    /// next await point.
    pub(crate) async fn abort(self) {
        let Controllers { mut immediate, graceful, shutdown } = self;
        shutdown.trigger();
        immediate.push(graceful);
        abort_all(immediate).await;
        tracing::info!("controllers aborted");
    }
}

async fn abort_all(controllers: Vec<(&'static str, JoinHandle<()>)>) {
    for (_, controller) in &controllers {
        controller.abort();
    }
    for (name, controller) in controllers {
        log_end(name, controller.await);
    }
}

fn log_end(name: &'static str, result: Result<(), tokio::task::JoinError>) {
    if let Err(error) = result
        && !error.is_cancelled()
    {
        tracing::warn!(controller = name, error = %error, "controller task failed");
    }
}

/// Starts the controllers this process runs as leader: CSR, instances with the fleet controller, and (where the
/// cluster serves the machine API) Machines and user data.
pub(crate) fn start_controllers(operator: &Operator) -> Controllers {
    let Operator { client, seams, config, metrics, .. } = operator;
    let machine_api = config.shape.machine_api;
    let (shutdown, signal) = shutdown_channel();
    let mut csr = CsrContext::new(seams, config.csr_settings()).with_metrics(Arc::clone(metrics));
    if machine_api {
        csr = csr.with_machines(Arc::clone(&seams.machines));
    }
    tracing::info!(namespace = %config.namespace(), "starting the CSR controller");
    let mut immediate = vec![("csr", tokio::spawn(crate::csr::controller(client.clone(), csr)))];
    let (key_watcher, keys) =
        KeyWatcher::new(Arc::clone(&seams.secrets), Arc::clone(&seams.events), config.namespace());
    immediate.push(("operator-key", tokio::spawn(key_watcher.run(key_secret_changes(client, config), KEY_RESYNC))));
    if machine_api {
        let machines = MachinesContext::new(seams, config.machines_settings()).with_metrics(Arc::clone(metrics));
        let user_data = UserDataContext::new(seams, config.user_data_settings()).with_metrics(Arc::clone(metrics));
        tracing::info!(platform = ?config.platform, "starting the Machine and user-data controllers");
        immediate.push(("machines", tokio::spawn(crate::machines::controller(client.clone(), Arc::new(machines)))));
        immediate.push(("user-data", tokio::spawn(crate::user_data::controller(client.clone(), Arc::new(user_data)))));
    }
    let host_controllers = tokio::spawn(run_host_controllers(operator.clone(), keys, signal));
    Controllers { immediate, graceful: ("instances", host_controllers), shutdown }
}

/// One trigger per watch event of Secret `cloud-private-key` in the operator namespace.
fn key_secret_changes(client: &Client, config: &OperatorConfig) -> impl futures::Stream<Item = ()> + Send + 'static {
    let key_secret = watcher::Config::default().fields(&format!("metadata.name={PRIVATE_KEY_SECRET}"));
    let secrets = Api::<Secret>::namespaced(client.clone(), config.namespace());
    watch_triggers(watcher(secrets, key_secret).default_backoff(), "operator key", "the key Secret")
}

/// Keeps `/readyz` saying why the cluster does not let Windows nodes join, checked at start and at each change of
/// the cluster settings, and logs each new reason (the instances controller then configures no host, and the
/// fleet controller starts no upgrade).
async fn report_refusals(
    gate: ServiceSettingsSource,
    changes: impl futures::Stream<Item = ()>,
    readiness: Arc<Readiness>,
) {
    let mut changes = std::pin::pin!(changes);
    let mut reported: Option<String> = None;
    loop {
        let refusal = gate.refusal();
        if refusal != reported {
            match &refusal {
                Some(reason) => tracing::warn!(reason = %reason, "no Windows host is configured in this cluster"),
                None if reported.is_some() => tracing::info!("the cluster supports Windows nodes again"),
                None => {}
            }
            readiness.set_refusal(refusal.clone());
            reported = refusal;
        }
        if changes.next().await.is_none() {
            return;
        }
    }
}

/// One trigger per watch event of the OpenShift objects the cluster settings and the kubelet client CA come
/// from: Proxy, the config and operator Networks, the image mirror sets, the pull secret, ControllerConfigs and
/// MachineConfigs (the material refresher reads them again at once).
fn cluster_setting_changes(client: &Client) -> impl futures::Stream<Item = ()> + Send + 'static {
    let cluster = || watcher::Config::default().fields("metadata.name=cluster");
    let proxies = Api::<Proxy>::all(client.clone());
    let digest_sets = Api::<ImageDigestMirrorSet>::all(client.clone());
    let tag_sets = Api::<ImageTagMirrorSet>::all(client.clone());
    let controller_configs = Api::<ControllerConfig>::all(client.clone());
    let networks = Api::<Network>::all(client.clone());
    let operator_networks = Api::<OperatorNetwork>::all(client.clone());
    let pull_secrets = Api::<Secret>::namespaced(client.clone(), PULL_SECRET_NAMESPACE);
    let pull_secret = watcher::Config::default().fields(&format!("metadata.name={PULL_SECRET}"));
    let machine_configs = Api::<PartialObjectMeta<MachineConfig>>::all(client.clone());
    let what = "the cluster settings";
    futures::stream::select_all([
        watch_triggers(watcher(proxies, cluster()).default_backoff(), what, "Proxy cluster").boxed(),
        watch_triggers(watcher(networks, cluster()).default_backoff(), what, "Network cluster").boxed(),
        watch_triggers(watcher(pull_secrets, pull_secret).default_backoff(), what, "the pull secret").boxed(),
        watch_triggers(watcher(operator_networks, cluster()).default_backoff(), what, "operator Network cluster")
            .boxed(),
        watch_triggers(
            watcher(digest_sets, watcher::Config::default()).default_backoff(),
            what,
            "ImageDigestMirrorSets",
        )
        .boxed(),
        watch_triggers(watcher(tag_sets, watcher::Config::default()).default_backoff(), what, "ImageTagMirrorSets")
            .boxed(),
        watch_triggers(
            watcher(controller_configs, watcher::Config::default()).default_backoff(),
            what,
            "ControllerConfigs",
        )
        .boxed(),
        // Metadata only: rendered configs are large, and the refresher reads the newest one itself.
        watch_triggers(watcher(machine_configs, watcher::Config::default()).default_backoff(), what, "MachineConfigs")
            .boxed(),
    ])
}

/// How many SSH connections may be open at once: two per concurrent configuration, at least 16.
pub fn max_ssh_connections(concurrency: u16) -> usize {
    usize::from(concurrency).saturating_mul(2).max(16)
}

/// The SSH connector of one key: a fresh pool, `key`, the port and the process identity; every host recorded by
/// `transcripts` when given (`--record-transcripts`).
fn connector(config: &OperatorConfig, key: OperatorKey, transcripts: Option<&Arc<TranscriptRecorder>>) -> SshConnector {
    let pool = HostPool::new(max_ssh_connections(config.flags.concurrency), SSH_IDLE_TIMEOUT);
    let connector = SshConnector::new(pool, key.private_key, config.ssh_settings());
    match transcripts {
        Some(recorder) => connector.with_transcripts(Arc::clone(recorder)),
        None => connector,
    }
}

/// Runs the instances controller and the fleet controller until `shutdown` is triggered (or the task is aborted):
/// starts the material refresher and the fleet controller at once, waits for a usable operator key from `keys`,
/// then reconciles the hosts; when the admin replaces `cloud-private-key` with another usable key, the instances
/// controller is rebuilt with it (new SSH connections; cached sessions dropped), while the fleet controller reads
/// the key on every reconcile. Once `shutdown` is triggered the fleet controller and the key watch stop, no host
/// reconcile starts, and this returns when the host reconciles in flight finished. The fleet controller alone hands
/// out the unavailability budget (host passes only record requests). Problems with the key or the material are
/// logged and retried.
async fn run_host_controllers(operator: Operator, mut keys: KeyReceiver, shutdown: ShutdownSignal) {
    let Operator { client, seams, config, manifest, payload, metrics, readiness } = operator;
    let kubelet_ca = if config.shape.openshift {
        KubeletCaSource::ControllerConfigs(Arc::clone(&seams.controller_configs))
    } else {
        KubeletCaSource::ApiServerCa
    };
    let sources = MaterialSources {
        config_maps: Arc::clone(&seams.config_maps),
        secrets: Arc::clone(&seams.secrets),
        tokens: Arc::clone(&seams.tokens),
        kubelet_ca,
        facts: config
            .shape
            .openshift
            .then(|| Arc::new(OpenShiftFacts::new(client.clone())) as Arc<dyn ClusterFactsSource>),
        read_pull_secret: config.shape.openshift,
    };
    let trusted_ca_changes = {
        let config_maps = Api::<ConfigMap>::namespaced(client.clone(), config.namespace());
        let trusted_ca = watcher::Config::default().fields(&format!("metadata.name={TRUSTED_CA_CONFIG_MAP}"));
        watch_triggers(watcher(config_maps, trusted_ca).default_backoff(), "the cluster settings", "the trusted CA")
    };
    let setting_changes = if config.shape.openshift {
        futures::stream::select(cluster_setting_changes(&client), trusted_ca_changes).boxed()
    } else {
        trusted_ca_changes.boxed()
    };
    let (refresher, snapshot) = MaterialRefresher::new(
        sources,
        RefreshSettings::new(config.namespace()),
        config.cluster.clone(),
        system_clock(),
    );
    let namespace = config.namespace().to_owned();
    // One recorder for the term: the connectors of every key share its transcript files.
    let transcripts =
        config.flags.record_transcripts.as_ref().map(|directory| Arc::new(TranscriptRecorder::new(directory)));
    let key_checker = SshKeyChecker::new(config.ssh_settings());
    let fleet = FleetContext::new(&seams, Arc::new(key_checker), config.fleet_settings())
        .with_cluster_gate(config.service_settings_source(snapshot.clone()))
        .with_metrics(Arc::clone(&metrics));
    tracing::info!(max_unavailable = config.flags.max_unavailable, "starting the fleet controller");
    let fleet =
        crate::fleet::controller(client.clone(), Arc::new(fleet), config.shape.machine_api, keys.clone().changes());
    let fleet = shutdown.clone().unless_triggered(fleet);
    let instances = async {
        let Some(Some(mut key)) = shutdown.clone().unless_triggered(keys.clone().usable()).await else {
            return;
        };
        loop {
            let current_hash = key.pub_key_hash.clone();
            let files = NodeFiles::new(manifest.clone(), payload.clone(), snapshot.clone());
            let context = InstancesContext::new(
                &seams,
                Arc::new(connector(&config, key, transcripts.as_ref())),
                Arc::new(files),
                config.instances_settings(current_hash.clone(), snapshot.clone()),
            )
            .with_metrics(Arc::clone(&metrics));
            tracing::info!(
                namespace = %namespace,
                concurrency = config.flags.concurrency,
                max_unavailable = config.flags.max_unavailable,
                "starting the instances controller"
            );
            let instances = crate::instances::controller(
                client.clone(),
                Arc::new(context),
                config.flags.concurrency,
                snapshot.node_file_changes(),
                shutdown.clone(),
            );
            let key_change = shutdown.clone().unless_triggered(keys.changed_from(&current_hash));
            tokio::select! {
                () = instances => return,
                Some(Some(new_key)) = key_change => {
                    tracing::warn!("Secret cloud-private-key changed: restarting the instances controller with the new key");
                    key = new_key;
                }
            }
        }
    };
    let fleet_metrics = run_fleet_metrics(client.clone(), namespace.clone(), Arc::clone(&metrics));
    let gate = config.service_settings_source(snapshot.clone());
    let refusals = report_refusals(gate, snapshot.node_file_changes(), readiness);
    tokio::select! {
        () = refresher.run_with_triggers(setting_changes) => {}
        _ = async { futures::join!(instances, fleet) } => {}
        () = fleet_metrics => {}
        () = refusals => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controllers_of(graceful: JoinHandle<()>, immediate: JoinHandle<()>, shutdown: ShutdownTrigger) -> Controllers {
        Controllers { immediate: vec![("api", immediate)], graceful: ("host", graceful), shutdown }
    }

    #[tokio::test(start_paused = true)]
    async fn a_graceful_stop_lets_the_host_work_in_flight_finish_and_stops_the_rest_at_once() {
        let (shutdown, signal) = shutdown_channel();
        let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let host_work = {
            let finished = Arc::clone(&finished);
            tokio::spawn(async move {
                signal.triggered().await;
                tokio::time::sleep(Duration::from_secs(5)).await;
                finished.store(true, std::sync::atomic::Ordering::SeqCst);
            })
        };
        let api_work = tokio::spawn(std::future::pending::<()>());
        let started = tokio::time::Instant::now();
        controllers_of(host_work, api_work, shutdown)
            .stop_gracefully(Duration::from_secs(15), std::future::pending())
            .await;
        assert!(finished.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_graceful_stop_aborts_host_work_still_running_after_the_grace_period() {
        let (shutdown, _signal) = shutdown_channel();
        let host_work = tokio::spawn(std::future::pending::<()>());
        let api_work = tokio::spawn(std::future::pending::<()>());
        let started = tokio::time::Instant::now();
        controllers_of(host_work, api_work, shutdown)
            .stop_gracefully(Duration::from_secs(15), std::future::pending())
            .await;
        assert_eq!(started.elapsed(), Duration::from_secs(15));
    }

    #[tokio::test(start_paused = true)]
    async fn a_term_ending_during_a_graceful_stop_aborts_the_host_work_at_once() {
        let (shutdown, _signal) = shutdown_channel();
        let host_work = tokio::spawn(std::future::pending::<()>());
        let api_work = tokio::spawn(std::future::pending::<()>());
        let started = tokio::time::Instant::now();
        let fence = tokio::time::sleep(Duration::from_secs(3));
        controllers_of(host_work, api_work, shutdown).stop_gracefully(Duration::from_secs(15), fence).await;
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn losing_the_lease_aborts_host_work_at_once() {
        let (shutdown, signal) = shutdown_channel();
        let host_work = tokio::spawn(async move {
            signal.triggered().await;
            tokio::time::sleep(Duration::from_secs(5)).await;
        });
        let api_work = tokio::spawn(std::future::pending::<()>());
        let started = tokio::time::Instant::now();
        controllers_of(host_work, api_work, shutdown).abort().await;
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[test]
    fn two_ssh_connections_per_concurrent_configuration_and_at_least_sixteen() {
        assert_eq!((max_ssh_connections(1), max_ssh_connections(8), max_ssh_connections(20)), (16, 16, 40));
    }
}
