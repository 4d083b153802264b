//! `wmco run`: the operator process. Verifies the payload, connects to the cluster, serves `/healthz`, `/readyz` and
//! `/metrics` on one listener, takes part in leader election through a Lease, and runs the controllers of
//! `wmco-operator` while it leads: the CSR controller, the instances controller and the upgrade executor (composed
//! by `wmco_operator::wiring`: operator key from `cloud-private-key`, payload-backed files, SSH over a host pool),
//! the key rotation, and, where the cluster serves the machine API, the Machine and user-data controllers.
//! Losing the lease stops every controller at once and exits non-zero (another replica may already lead).
//! SIGTERM or Ctrl-C stops taking work, lets the host reconciles in flight finish for at most [`SHUTDOWN_GRACE`],
//! releases the lease and exits 0. The logic lives in `wmco-operator`; this module only wires it up.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use semver::Version;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use wmco_cluster_client::{
    ClusterFacts, ClusterFactsSource, KubeCsrs, KubeEvents, KubeInstanceRecords, KubeMachines, KubeNodes, KubeSecrets,
    OpenShiftFacts, PlainKubernetesConfig, PlainKubernetesFacts, serves_machine_api, serves_openshift_config,
};
use wmco_csr_approver::IpCidr;
use wmco_operator::csr::{CsrContext, CsrSettings, system_clock};
use wmco_operator::files::ClusterSettings;
use wmco_operator::fleet::SharedBudget;
use wmco_operator::health::{self, Readiness};
use wmco_operator::machines::{MachinesContext, MachinesSettings};
use wmco_operator::metrics::Metrics;
use wmco_operator::rekey::{RekeyContext, RekeySettings, SshKeyChecker};
use wmco_operator::shutdown::{ShutdownTrigger, shutdown_channel};
use wmco_operator::upgrades::{operator_version, payload_kubelet_version};
use wmco_operator::user_data::{UserDataContext, UserDataSettings};
use wmco_operator::wiring::{InstancesRun, run_instances};
use wmco_payload_manifest::{Manifest, Payload, PayloadError, check_payload_binaries};
use wmco_windows_services::Verbosity;

use crate::cli_support::{Outcome, OutputFormat, UnusableInput};

/// The controller name on Events and the prefix of the lease holder identity.
const CONTROLLER_NAME: &str = "windows-machine-config-operator";
/// How long shutdown waits for the lease to be released before exiting anyway.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a graceful shutdown lets the host reconciles in flight finish before aborting them (well inside the
/// 30 s a pod gets between SIGTERM and SIGKILL by default, with the lease release after it).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(15);

/// Arguments of `wmco run`. Every flag can also be set through the environment variable named in its help.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The operator namespace: where the Lease, the `windows-instances` ConfigMap and the `WindowsInstance` records
    /// live.
    #[arg(long, env = "POD_NAMESPACE", default_value = "openshift-windows-machine-config-operator")]
    pub namespace: String,
    /// The Windows node payload directory; verified at startup (a broken payload exits 2 listing every problem).
    #[arg(long, env = "WMCO_PAYLOAD_DIR", value_name = "DIR")]
    pub payload_dir: PathBuf,
    /// Accept a synthetic payload (one carrying the `SYNTHETIC` marker of the test payload generator), whose
    /// binaries are pseudo-random bytes: for tests, the sandbox and benchmarks only. Without it a synthetic payload
    /// exits 2.
    #[arg(long, env = "WMCO_ALLOW_SYNTHETIC_PAYLOAD")]
    pub allow_synthetic_payload: bool,
    /// The address of the one HTTP listener serving `/healthz`, `/readyz` and `/metrics`.
    #[arg(long, env = "WMCO_LISTEN", default_value = "0.0.0.0:8080", value_name = "ADDRESS:PORT")]
    pub listen: SocketAddr,
    /// The SSH port of Windows hosts.
    #[arg(long, env = "WMCO_SSH_PORT", default_value_t = 22)]
    pub ssh_port: u16,
    /// How many hosts are configured at once.
    #[arg(long, env = "WMCO_MAX_CONCURRENT_CONFIGURATIONS", default_value_t = 8,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent_configurations: u16,
    /// How many Windows nodes may be unavailable at once during upgrades.
    #[arg(long, env = "WMCO_MAX_UNAVAILABLE", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_unavailable: u32,
    /// How long a Machine's host may refuse the operator's SSH key before the Machine is replaced (deleted so its
    /// MachineSet recreates it), within the `--max-unavailable` budget.
    #[arg(long, env = "WMCO_AUTHENTICATION_GRACE_SECONDS", default_value_t = 300, value_name = "SECONDS")]
    pub authentication_grace_seconds: u64,
    /// The version recorded on configured nodes instead of this binary's version without build metadata (tests and
    /// development only).
    #[arg(long, env = "WMCO_VERSION_OVERRIDE")]
    pub version_override: Option<String>,
    /// Whether to take part in leader election (only the leader runs controllers). Turn off only when exactly one
    /// operator process runs.
    #[arg(long, env = "WMCO_LEADER_ELECTION", default_value_t = true, action = clap::ArgAction::Set,
          value_name = "true|false")]
    pub leader_election: bool,
    /// The Lease used for leader election, in the operator namespace.
    #[arg(long, env = "WMCO_LEASE_NAME", default_value = CONTROLLER_NAME)]
    pub lease_name: String,
    /// This process's identity: the lease holder name and the SSH client version suffix
    /// (`SSH-2.0-wmco_<version> <identity>`). Default: the pod's host name.
    #[arg(long, env = "WMCO_SSH_IDENTITY")]
    pub ssh_identity: Option<String>,
    /// The Service network, on plain Kubernetes (on OpenShift it is read from the `Network` config).
    #[arg(long, env = "WMCO_SERVICE_CIDR", value_name = "CIDR")]
    pub service_cidr: Option<IpCidr>,
    /// The pod network(s) (repeat the flag for several); kubelet serving CSRs must not claim addresses in them.
    #[arg(long, env = "WMCO_CLUSTER_CIDR", value_name = "CIDR", value_delimiter = ',')]
    pub cluster_cidr: Vec<IpCidr>,
    /// The URL Windows nodes reach the API server at, on plain Kubernetes (on OpenShift it is read from the
    /// `Infrastructure` config).
    #[arg(long, env = "WMCO_API_SERVER_URL", value_name = "URL")]
    pub api_server_url: Option<String>,
    /// Debug verbosity for the node services (kubelet `--v=4`, containerd and windows_exporter `debug`,
    /// hybrid-overlay `--loglevel 5`).
    #[arg(long, env = "WMCO_DEBUG_NODE_SERVICES", default_value_t = false, action = clap::ArgAction::Set,
          value_name = "true|false")]
    pub debug_node_services: bool,
}

/// What the controllers need, built once at startup and handed to each leadership term.
#[derive(Clone)]
struct ControllerInputs {
    client: Client,
    config: kube::Config,
    csr: CsrSettings,
    instances: InstancesRun,
    manifest: Manifest,
    payload: Payload,
    cluster: ClusterSettings,
    metrics: Arc<Metrics>,
    /// Settings of the Machine and user-data controllers; `None` where the cluster does not serve the machine API.
    machine_api: Option<MachineApiInputs>,
    /// `--authentication-grace-seconds`, for the key rotation's Machine replacements after refused logins.
    authentication_grace: Duration,
}

/// The settings of the controllers that exist only where the cluster serves the machine API.
#[derive(Clone, Debug, PartialEq, Eq)]
struct MachineApiInputs {
    machines: MachinesSettings,
    user_data: UserDataSettings,
}

/// Runs the operator until it is told to stop (exit 0) or loses its lease (an error, exit 1).
pub fn run(args: &RunArgs, _output: OutputFormat) -> anyhow::Result<Outcome> {
    let (manifest, payload) = verify_payload(&args.payload_dir, args.allow_synthetic_payload)?;
    tracing::info!(
        payload_dir = %args.payload_dir.display(),
        files = payload.files().count(),
        synthetic = payload.is_synthetic(),
        "payload verified"
    );
    if payload.is_synthetic() {
        tracing::warn!(
            payload_dir = %args.payload_dir.display(),
            "the payload is SYNTHETIC (pseudo-random binaries, accepted by --allow-synthetic-payload): hosts \
             configured by this operator cannot run their Windows services; for tests, the sandbox and benchmarks only"
        );
    }
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(operate(args, manifest, payload))
}

/// Loads the payload; an incomplete or unreadable one is unusable input listing every problem, and so is a
/// synthetic one unless `allow_synthetic` (`--allow-synthetic-payload`).
fn verify_payload(dir: &Path, allow_synthetic: bool) -> anyhow::Result<(Manifest, Payload)> {
    let manifest = Manifest::product().context("the payload manifest built into this binary is invalid")?;
    let payload = Payload::load(dir, &manifest).map_err(|error| {
        let text = match &error {
            PayloadError::Incomplete { problems, .. } => {
                let mut text = format!("payload {} has {} problem(s):", dir.display(), problems.len());
                for problem in problems {
                    text.push_str(&format!("\n  - {problem}"));
                }
                text
            }
            PayloadError::UnreadableDir { .. } => format!("{:#}", anyhow::Error::new(error)),
        };
        anyhow::Error::new(UnusableInput(format!("--payload-dir: {text}")))
    })?;
    if payload.is_synthetic() && !allow_synthetic {
        return Err(anyhow::Error::new(UnusableInput(format!(
            "--payload-dir {}: payload is SYNTHETIC (pseudo-random test binaries, never installable on a real host); \
             build the real payload with `cargo xtask payload build`, or pass --allow-synthetic-payload for tests and \
             the sandbox",
            dir.display()
        ))));
    }
    // A real payload's binaries must be what the manifest says (PE32+ x86-64 console images whose Go build
    // information names the manifest's module and version for Windows): a swapped or foreign file never reaches a host.
    let mismatches = check_payload_binaries(&payload, &manifest).mismatches().to_vec();
    if !mismatches.is_empty() {
        let mut text = format!("--payload-dir {}: {} binary mismatch(es):", dir.display(), mismatches.len());
        for mismatch in &mismatches {
            text.push_str(&format!("\n  - {mismatch}"));
        }
        return Err(anyhow::Error::new(UnusableInput(text)));
    }
    Ok((manifest, payload))
}

async fn operate(args: &RunArgs, manifest: Manifest, payload: Payload) -> anyhow::Result<Outcome> {
    let identity = identity(args);
    log_settings(args, &identity);
    let readiness = Arc::new(Readiness::default());
    let metrics = Arc::new(Metrics::new());
    let listener = health::bind(args.listen)
        .await
        .map_err(|error| anyhow::Error::new(UnusableInput(format!("--listen: {:#}", anyhow::Error::new(error)))))?;
    let (stop_health, health_stopped) = tokio::sync::oneshot::channel::<()>();
    let health_server = tokio::spawn(health::serve(listener, Arc::clone(&readiness), Arc::clone(&metrics), async {
        let _ = health_stopped.await;
    }));

    let config =
        kube::Config::infer().await.context("cannot find a Kubernetes configuration (in-cluster or kubeconfig)")?;
    let client = Client::try_from(config.clone()).context("cannot build a Kubernetes client")?;
    let (facts, openshift) = gather_facts(&client, args).await?;
    let cluster = ClusterSettings::from_facts(&facts)
        .map_err(|error| anyhow::Error::new(UnusableInput(format!("cluster facts: {error}"))))?;
    let machine_api = serves_machine_api(&client).await.context("cannot discover the API groups")?;
    if !machine_api {
        tracing::info!(
            "the cluster does not serve machine.openshift.io: the Machine and user-data controllers are off"
        );
    }
    let inputs = ControllerInputs {
        client: client.clone(),
        config,
        csr: csr_settings(args, &facts)?,
        instances: instances_run(args, &identity, openshift, &manifest)?,
        manifest,
        payload,
        cluster,
        metrics,
        machine_api: machine_api.then(|| machine_api_inputs(&args.namespace, &facts)),
        authentication_grace: Duration::from_secs(args.authentication_grace_seconds),
    };

    let outcome = if args.leader_election {
        lead_then_run(&client, args, &identity, &inputs, &readiness).await
    } else {
        let controllers = start_controllers(&inputs);
        readiness.set_ready(true);
        tracing::info!("leader election off: controllers started");
        shutdown_signal().await;
        controllers.stop_gracefully(SHUTDOWN_GRACE).await;
        Ok(Outcome::Clean)
    };
    let _ = stop_health.send(());
    match health_server.await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(error = %error, "health server"),
        Err(error) => tracing::warn!(error = %error, "health server task"),
    }
    outcome
}

/// The identity: `--ssh-identity`, else the host name (the pod name in a cluster).
fn identity(args: &RunArgs) -> String {
    args.ssh_identity
        .clone()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| format!("{CONTROLLER_NAME}-{}", std::process::id()))
}

fn log_settings(args: &RunArgs, identity: &str) {
    tracing::info!(
        namespace = %args.namespace,
        listen = %args.listen,
        ssh_port = args.ssh_port,
        max_concurrent_configurations = args.max_concurrent_configurations,
        max_unavailable = args.max_unavailable,
        version_override = args.version_override.as_deref(),
        leader_election = args.leader_election,
        lease_name = %args.lease_name,
        identity,
        "starting the operator"
    );
}

/// Cluster facts from OpenShift's config objects, or from the plain Kubernetes flags; and whether it is OpenShift.
async fn gather_facts(client: &Client, args: &RunArgs) -> anyhow::Result<(ClusterFacts, bool)> {
    let openshift = serves_openshift_config(client).await.context("cannot discover the API groups")?;
    let facts = if openshift {
        OpenShiftFacts::new(client.clone()).gather().await?
    } else {
        let config = plain_kubernetes_config(args)?;
        PlainKubernetesFacts::new(client.clone(), config).gather().await?
    };
    tracing::info!(
        openshift,
        service_cidr = %facts.service_cidr,
        api_server = %facts.api_server_internal_url,
        kubernetes_version = %facts.kubernetes_version,
        "cluster facts gathered"
    );
    Ok((facts, openshift))
}

/// The plain Kubernetes configuration from the flags; both flags are required when the cluster is not OpenShift.
fn plain_kubernetes_config(args: &RunArgs) -> anyhow::Result<PlainKubernetesConfig> {
    let (Some(service_cidr), Some(api_server_url)) = (&args.service_cidr, &args.api_server_url) else {
        return Err(anyhow::Error::new(UnusableInput(
            "the cluster does not serve config.openshift.io: pass --service-cidr and --api-server-url".to_owned(),
        )));
    };
    Ok(PlainKubernetesConfig {
        service_cidr: service_cidr.to_string(),
        api_server_internal_url: api_server_url.clone(),
        proxy: Default::default(),
        mirror_sets: Vec::new(),
    })
}

/// The instances controller's and upgrade executor's settings from the flags and the payload manifest; a
/// `--version-override` that is not semver is unusable input.
fn instances_run(args: &RunArgs, identity: &str, openshift: bool, manifest: &Manifest) -> anyhow::Result<InstancesRun> {
    let operator_version: Version = operator_version(args.version_override.as_deref())
        .map_err(|error| anyhow::Error::new(UnusableInput(error.to_string())))?;
    let payload_kubelet_version =
        payload_kubelet_version(manifest).context("the payload manifest built into this binary is invalid")?;
    Ok(InstancesRun {
        namespace: args.namespace.clone(),
        controller_name: CONTROLLER_NAME.to_owned(),
        ssh_port: args.ssh_port,
        ssh_identity: identity.to_owned(),
        concurrency: args.max_concurrent_configurations,
        operator_version,
        max_unavailable: args.max_unavailable,
        payload_kubelet_version,
        verbosity: if args.debug_node_services { Verbosity::Debug } else { Verbosity::Normal },
        openshift,
    })
}

/// The key rotation's settings: the same version, payload kubelet, budget and concurrency as the instances
/// controller and the upgrade executor, and the grace period of refused logins on Machines.
fn rekey_settings(run: &InstancesRun, authentication_grace: Duration) -> RekeySettings {
    RekeySettings {
        max_concurrent_configurations: u32::from(run.concurrency),
        authentication_grace,
        ..RekeySettings::new(
            run.namespace.clone(),
            run.operator_version.clone(),
            run.payload_kubelet_version.clone(),
            run.max_unavailable,
        )
    }
}

/// The Machine and user-data controllers' settings: the operator namespace and the cluster's platform.
fn machine_api_inputs(namespace: &str, facts: &ClusterFacts) -> MachineApiInputs {
    MachineApiInputs {
        machines: MachinesSettings { namespace: namespace.to_owned(), platform: facts.platform.known_or_none() },
        user_data: UserDataSettings {
            operator_namespace: namespace.to_owned(),
            platform: facts.platform.known_or_none(),
        },
    }
}

fn csr_settings(args: &RunArgs, facts: &ClusterFacts) -> anyhow::Result<CsrSettings> {
    Ok(CsrSettings {
        namespace: args.namespace.clone(),
        service_network: vec![facts.service_cidr],
        cluster_network: args.cluster_cidr.clone(),
        clock: system_clock(),
    })
}

/// Takes part in leader election: standing by as follower, running controllers as leader; losing the lease is an
/// error (controllers aborted at once), a shutdown signal stops them gracefully and releases it.
async fn lead_then_run(
    client: &Client,
    args: &RunArgs,
    identity: &str,
    inputs: &ControllerInputs,
    readiness: &Readiness,
) -> anyhow::Result<Outcome> {
    let manager = LeaseManagerBuilder::new(client.clone(), &args.lease_name)
        .with_namespace(&args.namespace)
        .with_identity(identity)
        .build()
        .await
        .with_context(|| format!("cannot use Lease {}/{}", args.namespace, args.lease_name))?;
    let (mut leading, lease_task) = manager.watch().await;
    readiness.set_ready(true);
    tracing::info!(lease = %args.lease_name, "standing by for the lease");
    let mut controllers: Option<Controllers> = None;
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    let outcome = loop {
        tokio::select! {
            () = &mut shutdown => break Ok(Outcome::Clean),
            changed = leading.changed() => {
                if changed.is_err() {
                    break Err(anyhow::anyhow!("leader election of Lease {} stopped", args.lease_name));
                }
                match (is_leader(&mut leading), controllers.is_some()) {
                    (true, false) => {
                        tracing::info!(lease = %args.lease_name, identity, "acquired the lease: starting controllers");
                        controllers = Some(start_controllers(inputs));
                    }
                    (false, true) => {
                        break Err(anyhow::anyhow!("lost Lease {}: exiting so a new leader takes over", args.lease_name));
                    }
                    _ => {}
                }
            }
        }
    };
    if let Some(controllers) = controllers {
        match &outcome {
            Ok(_) => controllers.stop_gracefully(SHUTDOWN_GRACE).await,
            Err(_) => controllers.abort().await,
        }
    }
    release_lease(leading, lease_task).await;
    outcome
}

fn is_leader(leading: &mut watch::Receiver<bool>) -> bool {
    *leading.borrow_and_update()
}

/// Closing the channel makes the lease manager release the lease; waits a bounded time for it.
async fn release_lease(
    leading: watch::Receiver<bool>,
    lease_task: JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
) {
    drop(leading);
    match tokio::time::timeout(RELEASE_TIMEOUT, lease_task).await {
        Ok(Ok(Ok(_))) => tracing::info!("lease released"),
        Ok(Ok(Err(error))) => tracing::warn!(error = %error, "could not release the lease"),
        Ok(Err(error)) => tracing::warn!(error = %error, "lease task"),
        Err(_) => tracing::warn!(timeout = ?RELEASE_TIMEOUT, "lease not released in time"),
    }
}

/// The controllers of one leadership term.
struct Controllers {
    /// Controllers whose work is API calls (each write atomic) and read-only SSH logins (the key rotation's
    /// checks): stopped at their next await point.
    immediate: Vec<(&'static str, JoinHandle<()>)>,
    /// The instances controller and upgrade executor: they run host steps and stop on `shutdown`.
    graceful: (&'static str, JoinHandle<()>),
    shutdown: ShutdownTrigger,
}

impl Controllers {
    /// Graceful stop (SIGTERM): the API-only controllers stop at once, the host controllers start no new work and
    /// get `grace` to finish the reconciles in flight, then whatever still runs is aborted.
    async fn stop_gracefully(self, grace: Duration) {
        let Controllers { immediate, graceful: (name, mut graceful), shutdown } = self;
        shutdown.trigger();
        abort_all(immediate).await;
        tracing::info!(grace = ?grace, "waiting for the host reconciles in flight");
        match tokio::time::timeout(grace, &mut graceful).await {
            Ok(result) => log_end(name, result),
            Err(_) => {
                tracing::warn!(controller = name, grace = ?grace, "host reconciles still running after the grace period: aborting them");
                abort_all(vec![(name, graceful)]).await;
            }
        }
        tracing::info!("controllers stopped");
    }

    /// Immediate stop (the lease is lost and another replica may already lead): every controller is aborted at its
    /// next await point.
    async fn abort(self) {
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

/// Starts the controllers this process runs as leader: CSR, instances with the upgrade executor, the key rotation,
/// and (where the cluster serves the machine API) Machines and user data.
fn start_controllers(inputs: &ControllerInputs) -> Controllers {
    let client = &inputs.client;
    let (shutdown, signal) = shutdown_channel();
    let mut csr = CsrContext::new(
        Arc::new(KubeCsrs::new(client.clone())),
        Arc::new(KubeNodes::new(client.clone())),
        Arc::new(KubeInstanceRecords::new(client.clone())),
        Arc::new(KubeEvents::new(client.clone(), CONTROLLER_NAME, None)),
        inputs.csr.clone(),
    )
    .with_metrics(Arc::clone(&inputs.metrics));
    if inputs.machine_api.is_some() {
        csr = csr.with_machines(Arc::new(KubeMachines::new(client.clone())));
    }
    tracing::info!(namespace = %inputs.csr.namespace, "starting the CSR controller");
    let mut immediate = vec![("csr", tokio::spawn(wmco_operator::csr::controller(client.clone(), Arc::new(csr))))];
    // One budget for the key rotation and every upgrade executor (rebuilt on a key change).
    let budget = SharedBudget::new(wmco_operator::fleet::windows_machines(client, inputs.machine_api.is_some()));
    immediate.push(start_key_rotation(inputs, &budget));
    if let Some(machine_api) = &inputs.machine_api {
        immediate.extend(start_machine_api_controllers(inputs, machine_api));
    }
    let instances = run_instances(
        client.clone(),
        inputs.config.clone(),
        inputs.instances.clone(),
        inputs.manifest.clone(),
        inputs.payload.clone(),
        inputs.cluster.clone(),
        Arc::clone(&inputs.metrics),
        budget,
        signal,
    );
    let instances = tokio::spawn(async move {
        if let Err(error) = instances.await {
            tracing::error!(error = %error, "the instances controller could not start");
        }
    });
    Controllers { immediate, graceful: ("instances", instances), shutdown }
}

/// The key rotation, holding `budget`'s lock while it replaces Machines.
fn start_key_rotation(inputs: &ControllerInputs, budget: &SharedBudget) -> (&'static str, JoinHandle<()>) {
    let client = &inputs.client;
    let machine_api = inputs.machine_api.is_some();
    let key_checker = SshKeyChecker::new(inputs.instances.ssh_port, Some(inputs.instances.ssh_identity.clone()));
    let rekey = RekeyContext::for_cluster(
        client,
        Arc::new(KubeEvents::new(client.clone(), CONTROLLER_NAME, None)),
        Arc::new(key_checker),
        rekey_settings(&inputs.instances, inputs.authentication_grace),
        machine_api,
    )
    .with_budget_lock(Arc::clone(&budget.lock))
    .with_metrics(Arc::clone(&inputs.metrics));
    tracing::info!("starting the key rotation");
    ("rekey", tokio::spawn(wmco_operator::rekey::controller(client.clone(), Arc::new(rekey), machine_api)))
}

/// The Machine controller and the user-data controller.
fn start_machine_api_controllers(
    inputs: &ControllerInputs,
    settings: &MachineApiInputs,
) -> [(&'static str, JoinHandle<()>); 2] {
    let client = &inputs.client;
    let events = || Arc::new(KubeEvents::new(client.clone(), CONTROLLER_NAME, None));
    let machines = MachinesContext::new(
        Arc::new(KubeInstanceRecords::new(client.clone())),
        Arc::new(KubeMachines::new(client.clone())),
        events(),
        settings.machines.clone(),
    )
    .with_metrics(Arc::clone(&inputs.metrics));
    let user_data =
        UserDataContext::new(Arc::new(KubeSecrets::new(client.clone())), events(), settings.user_data.clone())
            .with_metrics(Arc::clone(&inputs.metrics));
    tracing::info!(platform = ?settings.machines.platform, "starting the Machine and user-data controllers");
    [
        ("machines", tokio::spawn(wmco_operator::machines::controller(client.clone(), Arc::new(machines)))),
        ("user-data", tokio::spawn(wmco_operator::user_data::controller(client.clone(), Arc::new(user_data)))),
    ]
}

/// Completes on SIGTERM (Kubernetes stopping the pod) or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(error = %error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use clap::error::ErrorKind;
    use wmco_payload_manifest::{
        CHECKSUM_FILE_NAME, SYNTHETIC_MARKER_FILE_NAME, SyntheticScale, write_synthetic_payload,
    };

    use crate::cli_support::exit_code_of_error;

    #[derive(Debug, Parser)]
    struct TestCli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn parse(extra: &[&str]) -> Result<RunArgs, clap::Error> {
        let mut argv = vec!["wmco", "--payload-dir", "/payload"];
        argv.extend_from_slice(extra);
        TestCli::try_parse_from(argv).map(|cli| cli.run)
    }

    #[test]
    fn defaults_match_the_deployment_contract() {
        let args = parse(&[]).expect("parsed");
        assert_eq!(args.payload_dir, PathBuf::from("/payload"));
        assert_eq!(args.listen, "0.0.0.0:8080".parse::<SocketAddr>().expect("address"));
        assert_eq!(args.ssh_port, 22);
        assert_eq!(args.max_concurrent_configurations, 8);
        assert_eq!(args.max_unavailable, 1);
        assert_eq!(args.authentication_grace_seconds, 300);
        assert!(!args.allow_synthetic_payload);
        assert!(args.leader_election);
        assert_eq!(args.lease_name, "windows-machine-config-operator");
        assert_eq!(args.service_cidr, None);
        assert!(args.cluster_cidr.is_empty());
    }

    #[test]
    fn plain_kubernetes_flags_parse() {
        let args = parse(&[
            "--service-cidr=10.96.0.0/12",
            "--cluster-cidr=10.244.0.0/16,fd00:10:244::/56",
            "--api-server-url=https://10.0.0.1:6443",
            "--leader-election=false",
            "--namespace=wmco",
        ])
        .expect("parsed");
        assert_eq!(args.service_cidr.map(|cidr| cidr.to_string()), Some("10.96.0.0/12".to_owned()));
        let cluster: Vec<String> = args.cluster_cidr.iter().map(ToString::to_string).collect();
        assert_eq!(cluster, vec!["10.244.0.0/16", "fd00:10:244::/56"]);
        assert!(!args.leader_election);
        assert_eq!(args.namespace, "wmco");
        let config = plain_kubernetes_config(&args).expect("both flags given");
        assert_eq!(config.service_cidr, "10.96.0.0/12");
        assert_eq!(config.api_server_internal_url, "https://10.0.0.1:6443");
    }

    #[test]
    fn instances_settings_come_from_the_flags_and_the_version_drops_build_metadata() {
        let manifest = Manifest::product().expect("product manifest");
        let args = parse(&[
            "--ssh-port=2222",
            "--max-concurrent-configurations=3",
            "--debug-node-services=true",
            "--max-unavailable=4",
            "--authentication-grace-seconds=20",
        ])
        .expect("parsed");
        let run = instances_run(&args, "wmco-0", true, &manifest).expect("settings");
        assert_eq!(
            (
                run.ssh_port,
                run.concurrency,
                run.ssh_identity.as_str(),
                run.verbosity,
                run.openshift,
                run.max_unavailable
            ),
            (2222, 3, "wmco-0", Verbosity::Debug, true, 4)
        );
        assert_eq!(run.namespace, "openshift-windows-machine-config-operator");
        assert_eq!(run.operator_version.to_string(), env!("CARGO_PKG_VERSION").split('+').next().expect("a version"));
        let kubelet = manifest.component("kubelet").expect("kubelet component").version.clone();
        assert_eq!(Some(format!("v{}", run.payload_kubelet_version)), kubelet);
        let rekey = rekey_settings(&run, Duration::from_secs(args.authentication_grace_seconds));
        assert_eq!(
            (rekey.namespace.as_str(), rekey.max_unavailable, rekey.max_concurrent_configurations),
            ("openshift-windows-machine-config-operator", 4, 3)
        );
        assert_eq!(rekey.authentication_grace, Duration::from_secs(20));
        assert_eq!(
            (&rekey.operator_version, &rekey.payload_kubelet_version),
            (&run.operator_version, &run.payload_kubelet_version)
        );
        let args = parse(&["--version-override=10.18.0-e2e+build.7"]).expect("parsed");
        let run = instances_run(&args, "wmco-0", false, &manifest).expect("settings");
        assert_eq!((run.operator_version.to_string().as_str(), run.verbosity), ("10.18.0-e2e", Verbosity::Normal));
    }

    #[test]
    fn a_version_override_that_is_not_semver_is_unusable_input_naming_the_flag() {
        let manifest = Manifest::product().expect("product manifest");
        let args = parse(&["--version-override=10.18"]).expect("parsed");
        let error = instances_run(&args, "wmco-0", false, &manifest).expect_err("not semver");
        assert!(error.downcast_ref::<UnusableInput>().is_some());
        assert!(error.to_string().contains("--version-override"), "{error}");
        assert!(error.to_string().contains("10.18"), "{error}");
    }

    #[test]
    fn machine_api_settings_carry_the_namespace_and_the_platform() {
        let mut facts = ClusterFacts {
            service_cidr: "172.30.0.0/16".parse().unwrap(),
            api_server_internal_url: "https://api-int.example:6443".into(),
            platform: wmco_cluster_client::Platform::None.into(),
            proxy: Default::default(),
            kubernetes_version: Version::new(1, 33, 0),
            mirror_sets: Vec::new(),
        };
        let inputs = machine_api_inputs("wmco", &facts);
        assert_eq!(
            inputs.machines,
            MachinesSettings { namespace: "wmco".into(), platform: facts.platform.known_or_none() }
        );
        assert_eq!(
            inputs.user_data,
            UserDataSettings { operator_namespace: "wmco".into(), platform: wmco_user_data::Platform::None }
        );
        facts.platform = wmco_cluster_client::Platform::Gcp.into();
        assert_eq!(machine_api_inputs("wmco", &facts).user_data.platform, wmco_user_data::Platform::Gcp);
    }

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
        controllers_of(host_work, api_work, shutdown).stop_gracefully(Duration::from_secs(15)).await;
        assert!(finished.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_graceful_stop_aborts_host_work_still_running_after_the_grace_period() {
        let (shutdown, _signal) = shutdown_channel();
        let host_work = tokio::spawn(std::future::pending::<()>());
        let api_work = tokio::spawn(std::future::pending::<()>());
        let started = tokio::time::Instant::now();
        controllers_of(host_work, api_work, shutdown).stop_gracefully(Duration::from_secs(15)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(15));
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
    fn bad_cidr_is_a_usage_error_naming_the_flag() {
        let error = parse(&["--service-cidr=10.96.0.0/40"]).expect_err("rejected");
        assert_eq!(error.kind(), ErrorKind::ValueValidation);
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("'--service-cidr <CIDR>'"), "{error}");
    }

    #[test]
    fn bad_listen_address_is_a_usage_error_naming_the_flag() {
        let error = parse(&["--listen=8080"]).expect_err("rejected");
        assert_eq!(error.kind(), ErrorKind::ValueValidation);
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("'--listen <ADDRESS:PORT>'"), "{error}");
    }

    #[test]
    fn zero_concurrency_is_rejected() {
        let error = parse(&["--max-concurrent-configurations=0"]).expect_err("rejected");
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("--max-concurrent-configurations"), "{error}");
    }

    #[test]
    fn plain_kubernetes_without_flags_is_unusable_input() {
        let args = parse(&["--service-cidr=10.96.0.0/12"]).expect("parsed");
        let error = plain_kubernetes_config(&args).expect_err("api server url missing");
        assert!(error.downcast_ref::<UnusableInput>().is_some());
        assert_eq!(
            error.to_string(),
            "the cluster does not serve config.openshift.io: pass --service-cidr and --api-server-url"
        );
    }

    #[test]
    fn missing_payload_is_unusable_input_naming_the_flag() {
        let dir = tempfile::tempdir().expect("temp dir");
        let error = verify_payload(&dir.path().join("absent"), false).expect_err("no payload");
        assert!(error.downcast_ref::<UnusableInput>().is_some());
        assert!(error.to_string().starts_with("--payload-dir: "), "{error}");
    }

    #[test]
    fn incomplete_payload_lists_every_problem() {
        let dir = tempfile::tempdir().expect("temp dir");
        let error = verify_payload(dir.path(), false).expect_err("empty payload");
        let text = error.to_string();
        assert!(error.downcast_ref::<UnusableInput>().is_some());
        let listed = text.lines().filter(|line| line.starts_with("  - ")).count();
        assert!(listed > 1, "{text}");
        assert!(text.starts_with(&format!("--payload-dir: payload {} has {listed} problem(s):", dir.path().display())));
    }

    /// The small synthetic payload of the product manifest, written into a fresh temporary directory.
    fn synthetic_payload() -> tempfile::TempDir {
        let manifest = Manifest::product().expect("the product manifest is valid");
        let dir = tempfile::tempdir().expect("temp dir");
        let workspace_payload = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../payload");
        write_synthetic_payload(&manifest, &workspace_payload, dir.path(), SyntheticScale::Small).expect("written");
        dir
    }

    #[test]
    fn the_synthetic_payload_flag_is_a_switch() {
        let args = parse(&["--allow-synthetic-payload"]).expect("parsed");
        assert!(args.allow_synthetic_payload);
    }

    #[test]
    fn a_synthetic_payload_without_the_flag_is_unusable_input_naming_the_dir_and_the_flag() {
        let dir = synthetic_payload();
        let error = verify_payload(dir.path(), false).expect_err("synthetic payload refused");
        assert!(error.downcast_ref::<UnusableInput>().is_some());
        assert_eq!(exit_code_of_error(&error), 2);
        let text = error.to_string();
        assert!(text.starts_with(&format!("--payload-dir {}: payload is SYNTHETIC", dir.path().display())), "{text}");
        assert!(text.contains("pseudo-random"), "{text}");
        assert!(text.contains("cargo xtask payload build"), "{text}");
        assert!(text.contains("--allow-synthetic-payload"), "{text}");
    }

    #[test]
    fn a_synthetic_payload_with_the_flag_is_accepted() {
        let dir = synthetic_payload();
        let (_, payload) = verify_payload(dir.path(), true).expect("synthetic payload allowed");
        assert!(payload.is_synthetic());
        assert!(payload.files().count() > 1);
    }

    #[test]
    fn a_synthetic_payload_stripped_of_its_marker_is_refused_by_the_binary_check() {
        let dir = synthetic_payload();
        std::fs::remove_file(dir.path().join(SYNTHETIC_MARKER_FILE_NAME)).expect("marker removed");
        let checksums_path = dir.path().join(CHECKSUM_FILE_NAME);
        let checksums = std::fs::read_to_string(&checksums_path).expect("checksums read");
        let kept: String = checksums
            .lines()
            .filter(|line| line.split_whitespace().nth(1) != Some(SYNTHETIC_MARKER_FILE_NAME))
            .map(|line| format!("{line}\n"))
            .collect();
        assert_ne!(kept, checksums);
        std::fs::write(&checksums_path, kept).expect("checksums written");
        // Its hashes verify, it no longer says it is synthetic, yet its pseudo-random binaries are no PE images.
        let error = verify_payload(dir.path(), true).expect_err("the binaries are not what the manifest says");
        assert_eq!(exit_code_of_error(&error), 2);
        let text = format!("{error:#}");
        assert!(text.contains("binary mismatch(es)"), "{text}");
        assert!(text.contains("kube-node/kubelet.exe"), "{text}");
        assert!(text.contains("not a PE image") || text.contains("PE"), "{text}");
    }
}
