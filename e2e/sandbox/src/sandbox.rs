//! [`Sandbox`]: the whole product on one machine — control plane with the operator's manifests, credentials,
//! simulated hosts, the OVN stand-in and the operator process — with the helpers the sandbox command and the BYOH
//! scenarios use: the `windows-instances` ConfigMap, the records and Nodes, the hosts' logs, and waits that say
//! where the logs are when they give up.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use winhost_sim::control::SharedFleet;
use winhost_sim::host::{CommandRecord, Latency, UnknownCommand};
use winhost_sim::scm::Service;
use winhost_sim::ssh::{SshServer, lock};
use wmco_cluster_client::Platform;
use wmco_cluster_client::types::{InstancePhase, WindowsInstance};
use wmco_e2e_harness::{ControlPlane, ControlPlaneOptions, eventually};

use crate::credentials::{
    self, AdminKey, METRICS_READER_CLUSTER_ROLE, METRICS_SCRAPER_SERVICE_ACCOUNT, MetricsServingCertificate,
};
use crate::hosts::{FleetPlan, SandboxHost, start_fleet};
use crate::operator::{
    MetricsAccess, MetricsEndpointArgs, OperatorLaunch, OperatorProcess, locate_operator_binary, log_tail,
};
use crate::ovn::OvnStandIn;
use crate::pod::{PodContainer, PodRun, UnpackedImage};
use crate::secret_scan::{MIN_SECRET_LENGTH, ScanInputs, Secret, SecretKind, SecretScan};
use crate::{OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, SandboxError, manifests};

/// The admin's ConfigMap listing BYOH hosts.
pub const INSTANCES_CONFIG_MAP: &str = "windows-instances";
/// The SSH user every simulated host accepts.
pub const HOST_USER: &str = "Administrator";
/// The operator's `--ssh-identity`: its lease identity and the suffix of its SSH client version, so the hosts'
/// command logs tell its commands apart.
pub const OPERATOR_IDENTITY: &str = "wmco-sandbox";
/// How many times (every 500 ms) the new `WindowsInstance` CRD is tried before the start fails.
const CRD_READY_ATTEMPTS: u32 = 120;
/// The name of the pod (and runc container) a pod-run operator gets.
const OPERATOR_POD: &str = "windows-machine-config-operator-0";
/// How long the operator's ServiceAccount token lives.
const OPERATOR_TOKEN_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// What to start.
///
/// ```
/// let options = wmco_sandbox::SandboxOptions { hosts: 2, ..Default::default() };
/// assert!(options.localhost_host);
/// ```
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// How many simulated Windows hosts.
    pub hosts: u8,
    /// Whether the last host listens on 127.0.0.1 and is named `localhost` in the ConfigMap (the others by IP).
    pub localhost_host: bool,
    /// The host (by index) that reports a lower-case host name; every other host reports its name in upper case
    /// and its FQDN with a lower-case DNS suffix, as stock Windows images do (default: none).
    pub lower_case_host: Option<u8>,
    /// The hosts' command latency and service-transition delays.
    pub latency: Latency,
    /// Extra `wmco run` arguments (for example `--max-concurrent-configurations=1`).
    pub operator_args: Vec<String>,
    /// kube-controller-manager's `--node-monitor-grace-period` (default: upstream's 50 s).
    pub node_monitor_grace_period: Option<Duration>,
    /// How long the operator may take to answer `/readyz` after a start.
    pub operator_ready_timeout: Duration,
    /// Keep the sandbox directory (logs, hosts' disks) after drop. It is also kept after a wait timed out.
    pub keep_directory: bool,
    /// The payload directory the operator serves: `None` for the cached `small` synthetic payload, or a real
    /// payload built by `cargo xtask payload build` (see [`crate::real_payload_from_env`]).
    pub payload_dir: Option<PathBuf>,
    /// Which kubelet the hosts run: the simulated one (default), or the uploaded `kubelet.exe` under Wine (needs
    /// the real payload; the kubelet gets as far as its client certificate, see `winhost_sim::wine_kubelet`).
    pub kubelet: winhost_sim::wine_kubelet::KubeletModel,
    /// Whether Secret `windows-machine-config-operator-tls` exists from the start (as OpenShift's service CA makes
    /// it); without it, [`Sandbox::create_exporter_tls_secret`] creates it later.
    pub exporter_tls_secret: bool,
    /// Whether Secret `cloud-private-key` exists from the start; without it the admin (a test) creates it from
    /// [`Sandbox::admin_key`] after the operator started, as the user guide says.
    pub private_key_secret: bool,
    /// Run the operator from this image (`oci-archive`, built by `cargo xtask image`) the way a kubelet runs the
    /// Deployment's pod ([`crate::pod`]): the payload is the image's, `payload_dir` is ignored. `None` runs the
    /// `wmco` binary as a process.
    pub operator_image: Option<PathBuf>,
    /// The cluster's platform (`Infrastructure` `status.platformStatus.type`, set before the operator starts; the
    /// fixtures say `None`). On AWS and GCP every host runs on that cloud: it answers its metadata service's
    /// questions (`hosts.rs`, `instance_metadata`).
    pub platform: Platform,
    /// Start the operator with `--record-transcripts` in [`Sandbox::transcripts_dir`] (which the secret scan reads).
    pub record_transcripts: bool,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            hosts: 3,
            localhost_host: true,
            lower_case_host: None,
            latency: Latency::realistic(),
            operator_args: Vec::new(),
            node_monitor_grace_period: None,
            operator_ready_timeout: Duration::from_secs(120),
            keep_directory: std::env::var_os("WMCO_SANDBOX_KEEP").is_some_and(|value| !value.is_empty()),
            payload_dir: None,
            kubelet: winhost_sim::wine_kubelet::KubeletModel::Simulated,
            exporter_tls_secret: true,
            private_key_secret: true,
            operator_image: None,
            platform: Platform::None,
            record_transcripts: false,
        }
    }
}

/// Sets the `Infrastructure` object's platform (`status.platform` and `status.platformStatus.type`), as the installer
/// of a cluster on `platform` leaves it.
async fn set_platform(admin: &kube::Client, platform: Platform) -> Result<(), SandboxError> {
    let resource = kube::discovery::ApiResource {
        group: "config.openshift.io".into(),
        version: "v1".into(),
        api_version: "config.openshift.io/v1".into(),
        kind: "Infrastructure".into(),
        plural: "infrastructures".into(),
    };
    let infrastructures: Api<kube::api::DynamicObject> = Api::all_with(admin.clone(), &resource);
    let status =
        serde_json::json!({"status": {"platform": platform.as_str(), "platformStatus": {"type": platform.as_str()}}});
    infrastructures
        .patch_status("cluster", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(SandboxError::kube(format!("set the Infrastructure's platform to {platform}")))?;
    Ok(())
}

/// One `WindowsInstance` with its Node, as the sandbox command prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceRow {
    /// The record's name.
    pub instance: String,
    /// Its address (the ConfigMap key).
    pub address: String,
    /// Its phase (`-` before the operator set one).
    pub phase: String,
    /// The expected node name, once recorded.
    pub node: Option<String>,
    /// Whether that Node exists and is Ready (`None`: no Node).
    pub node_ready: Option<bool>,
    /// The record's last error, if any.
    pub last_error: Option<String>,
}

/// A Ready instance and its Ready Node.
#[derive(Debug, Clone)]
pub struct ReadyInstance {
    /// The record.
    pub instance: WindowsInstance,
    /// Its Node.
    pub node: Node,
}

/// A running sandbox. Dropping it kills the operator, then stops the OVN stand-in, the hosts and the control
/// plane, and removes the sandbox directory (unless kept).
pub struct Sandbox {
    // Field order is drop order: the operator first, the control plane and the directory last.
    operator: Mutex<OperatorProcess>,
    ovn: OvnStandIn,
    control_task: tokio::task::JoinHandle<()>,
    fleet: SharedFleet,
    hosts: Vec<SandboxHost>,
    ssh_port: u16,
    control_address: SocketAddr,
    payload_dir: PathBuf,
    admin_key: AdminKey,
    metrics_ca_pem: String,
    metrics_token: String,
    metrics_tls_files: (PathBuf, PathBuf),
    operator_ready_timeout: Duration,
    control_plane: ControlPlane,
    keep_directory: AtomicBool,
    /// The proxy and registry credentials the test planted, for the secret scan.
    pub(crate) planted: Mutex<Vec<Secret>>,
    directory: Option<tempfile::TempDir>,
    directory_path: PathBuf,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Sandbox")
            .field("directory", &self.directory_path)
            .field("api_server", &self.control_plane.api_server_url())
            .field("hosts", &self.hosts.iter().map(|host| host.key.as_str()).collect::<Vec<_>>())
            .field("ssh_port", &self.ssh_port)
            .finish_non_exhaustive()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        lock_operator(&self.operator).kill();
        self.control_task.abort();
        if self.keep_directory.load(Ordering::SeqCst)
            && let Some(directory) = self.directory.take()
        {
            let kept = directory.keep();
            eprintln!("wmco-sandbox: kept {}", kept.display());
        }
    }
}

fn lock_operator(operator: &Mutex<OperatorProcess>) -> MutexGuard<'_, OperatorProcess> {
    operator.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sandbox {
    /// Starts everything and waits until the operator answers `/readyz`. The `windows-instances` ConfigMap is not
    /// written: call [`Sandbox::write_instances`].
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), wmco_sandbox::SandboxError> {
    /// use std::time::Duration;
    /// let sandbox = wmco_sandbox::Sandbox::start(Default::default()).await?;
    /// sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    /// let ready = sandbox.wait_until_ready(3, Duration::from_secs(600)).await?;
    /// assert_eq!(ready.len(), 3);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`SandboxError`] naming the step that failed; a missing `wmco` binary fails before anything starts.
    pub async fn start(options: SandboxOptions) -> Result<Sandbox, SandboxError> {
        let directory = tempfile::Builder::new()
            .prefix("wmco-sandbox-")
            .tempdir()
            .map_err(SandboxError::io("create the sandbox directory in", std::env::temp_dir()))?;
        let directory_path = directory.path().to_path_buf();
        let image = match &options.operator_image {
            Some(archive) => Some(UnpackedImage::unpack(archive, &directory_path.join("image"))?),
            None => None,
        };
        let binary = match &image {
            Some(image) => image.rootfs().join("usr/bin/wmco"),
            None => locate_operator_binary()?,
        };
        let payload_dir = match (&image, &options.payload_dir) {
            (Some(image), _) => image.rootfs().join("payload"),
            (None, Some(dir)) => dir.clone(),
            (None, None) => crate::cached_synthetic_payload()?,
        };

        let mut control_plane_options = ControlPlaneOptions::default();
        if let Some(period) = options.node_monitor_grace_period {
            control_plane_options = control_plane_options.node_monitor_grace_period(period);
        }
        let control_plane = ControlPlane::start(control_plane_options).await?;
        let applied = manifests::install(&control_plane).await?;
        let admin = control_plane.admin_client();
        if options.platform != Platform::None {
            set_platform(&admin, options.platform).await?;
        }
        wait_for_instance_storage(&admin).await?;
        let admin_key = AdminKey::generate()?;
        if options.private_key_secret {
            credentials::create_private_key_secret(&admin, &admin_key).await?;
        }
        if options.exporter_tls_secret {
            credentials::create_tls_secret(&admin).await?;
        }
        credentials::ensure_root_ca_config_map(&admin, control_plane.ca_certificate_pem()).await?;
        let metrics_serving = MetricsServingCertificate::issue()?;
        credentials::create_metrics_tls_secret(&admin, &metrics_serving).await?;
        let metrics_tls_files = metrics_serving.write_files(&directory_path.join("metrics-tls"))?;
        credentials::create_service_account(&admin, METRICS_SCRAPER_SERVICE_ACCOUNT, Some(METRICS_READER_CLUSTER_ROLE))
            .await?;
        let metrics_token = control_plane
            .service_account_token(OPERATOR_NAMESPACE, METRICS_SCRAPER_SERVICE_ACCOUNT, OPERATOR_TOKEN_LIFETIME)
            .await?;

        let started = start_fleet(&FleetPlan {
            base: directory_path.join("hosts"),
            count: options.hosts,
            localhost_host: options.localhost_host,
            latency: options.latency,
            authorized_key: admin_key.public_line().to_owned(),
            kubelet: options.kubelet,
            lower_case_host: options.lower_case_host,
            platform: options.platform,
        })
        .await?;
        let ovn = OvnStandIn::start(admin);

        let kubeconfig = directory_path.join("operator.kubeconfig");
        let token = control_plane
            .service_account_token(OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, OPERATOR_TOKEN_LIFETIME)
            .await?;
        let user = format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_SERVICE_ACCOUNT}");
        write_private_file(&kubeconfig, &control_plane.kubeconfig_for_token(&user, &token))?;
        let listen = free_loopback_address()?;
        // A closed probe socket's port may come back at once: the two listeners must differ.
        let mut metrics_listen = free_loopback_address()?;
        for _ in 0..8 {
            if metrics_listen != listen {
                break;
            }
            metrics_listen = free_loopback_address()?;
        }
        let (base_args, pod) = match image {
            None => {
                let metrics = MetricsEndpointArgs {
                    listen: metrics_listen,
                    certificate: metrics_tls_files.0.clone(),
                    key: metrics_tls_files.1.clone(),
                };
                (operator_base_args(&payload_dir, listen, &metrics, started.ssh_port), None)
            }
            Some(image) => {
                let deployment = manifests::render_deployment(&control_plane, &applied.overlay).await?;
                let container = PodContainer::from_deployment(&deployment, OPERATOR_NAMESPACE, OPERATOR_POD)?;
                let service_account = directory_path.join("serviceaccount");
                let secrets = directory_path.join("pod-secrets");
                for secret in container.secret_mounts.iter().map(|mount| mount.secret.as_str()) {
                    if let Some(data) = credentials::secret_data(&control_plane.admin_client(), secret).await? {
                        PodRun::write_secret_volume(&secrets.join(secret), &data)?;
                    }
                }
                PodRun::write_service_account(
                    &service_account,
                    &token,
                    control_plane.ca_certificate_pem(),
                    OPERATOR_NAMESPACE,
                )?;
                let run = PodRun {
                    image,
                    id: OPERATOR_POD.to_owned(),
                    dir: directory_path.join("pod"),
                    service_account,
                    secrets,
                    api_server: api_server_address(control_plane.api_server_url())?,
                    container,
                };
                let args = run.container.args.iter().map(OsString::from).collect();
                (args, Some((run, pod_environment(listen, metrics_listen, started.ssh_port))))
            }
        };
        let launch = OperatorLaunch {
            binary,
            base_args,
            kubeconfig,
            log: directory_path.join("operator.log"),
            listen,
            metrics_listen,
            pod,
        };
        let sandbox = Sandbox {
            operator: Mutex::new(OperatorProcess::new(launch)),
            ovn,
            control_task: started.control_task,
            fleet: started.fleet,
            hosts: started.hosts,
            ssh_port: started.ssh_port,
            control_address: started.control_address,
            payload_dir,
            admin_key,
            metrics_ca_pem: metrics_serving.ca_pem().to_owned(),
            metrics_token,
            metrics_tls_files,
            operator_ready_timeout: options.operator_ready_timeout,
            control_plane,
            keep_directory: AtomicBool::new(options.keep_directory),
            planted: Mutex::new(Vec::new()),
            directory: Some(directory),
            directory_path,
        };
        let mut operator_args = options.operator_args.clone();
        if options.record_transcripts {
            operator_args.push(format!("--record-transcripts={}", sandbox.transcripts_dir().display()));
        }
        sandbox.restart_operator_with(&operator_args).await?;
        Ok(sandbox)
    }

    /// The control plane.
    pub fn control_plane(&self) -> &ControlPlane {
        &self.control_plane
    }

    /// A cluster-admin client.
    pub fn admin_client(&self) -> kube::Client {
        self.control_plane.admin_client()
    }

    /// The admin kubeconfig (for `kubectl --kubeconfig`).
    pub fn kubeconfig_path(&self) -> &Path {
        self.control_plane.kubeconfig_path()
    }

    /// The sandbox directory: `operator.log`, `operator.kubeconfig`, `hosts/<name>/C`.
    pub fn directory(&self) -> &Path {
        &self.directory_path
    }

    /// Where a test points the operator's `--record-transcripts` (`transcripts` in the sandbox directory): the
    /// secret scan reads every file in it.
    pub fn transcripts_dir(&self) -> PathBuf {
        self.directory_path.join("transcripts")
    }

    /// Keeps the sandbox directory after drop (for inspection after a failure).
    pub fn keep_directory(&self) {
        self.keep_directory.store(true, Ordering::SeqCst);
    }

    /// The operator's log file (stdout and stderr of every start, each start marked by a `===` line).
    pub fn operator_log_path(&self) -> PathBuf {
        lock_operator(&self.operator).launch().log.clone()
    }

    /// The payload directory the operator serves.
    pub fn payload_dir(&self) -> &Path {
        &self.payload_dir
    }

    /// The SSH port every host listens on (the operator's `--ssh-port`).
    pub fn ssh_port(&self) -> u16 {
        self.ssh_port
    }

    /// The winhost-sim control interface's address (HTTP on 127.0.0.1).
    pub fn control_address(&self) -> SocketAddr {
        self.control_address
    }

    /// The admin key every host authorizes (also in Secret `cloud-private-key`).
    pub fn admin_key(&self) -> &AdminKey {
        &self.admin_key
    }

    /// The simulated hosts in creation order.
    pub fn hosts(&self) -> &[SandboxHost] {
        &self.hosts
    }

    /// The host named `name` (`winhost-<i>`).
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is none.
    pub fn host(&self, name: &str) -> Result<&SandboxHost, SandboxError> {
        self.hosts
            .iter()
            .find(|host| host.info.name == name)
            .ok_or_else(|| winhost_sim::fleet::FleetError::UnknownHost(name.to_owned()).into())
    }

    /// The fleet (shared with the control interface): add, remove or reach hosts.
    pub fn fleet(&self) -> &SharedFleet {
        &self.fleet
    }

    /// The SSH server of host `name`: its state (`host`), faults, throttle, host key.
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn server(&self, name: &str) -> Result<Arc<SshServer>, SandboxError> {
        Ok(self.fleet.lock().await.server(name)?)
    }

    /// Every command host `name` ran, in order.
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn command_log(&self, name: &str) -> Result<Vec<CommandRecord>, SandboxError> {
        let server = self.server(name).await?;
        let commands = lock(&server.host).command_log.clone();
        Ok(commands)
    }

    /// The commands host `name` ran for the operator (its SSH client version names [`OPERATOR_IDENTITY`]).
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn operator_commands(&self, name: &str) -> Result<Vec<CommandRecord>, SandboxError> {
        let mut commands = self.command_log(name).await?;
        commands.retain(|command| command.client.contains(OPERATOR_IDENTITY));
        Ok(commands)
    }

    /// How many commands each host ran for the operator so far, by host name.
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if a host vanished.
    pub async fn operator_command_counts(&self) -> Result<BTreeMap<String, usize>, SandboxError> {
        let mut counts = BTreeMap::new();
        for host in &self.hosts {
            let server = self.server(&host.info.name).await?;
            let count = lock(&server.host)
                .command_log
                .iter()
                .filter(|command| command.client.contains(OPERATOR_IDENTITY))
                .count();
            counts.insert(host.info.name.clone(), count);
        }
        Ok(counts)
    }

    /// Waits until every host ran at least one operator command since `baseline` (from
    /// [`Sandbox::operator_command_counts`]) and no host ran another for `quiet`; returns the new commands per host.
    /// A way to tell that a reconcile of the whole fleet finished without reading the operator's internals.
    ///
    /// # Errors
    /// As [`Sandbox::wait_for`].
    pub async fn wait_until_quiet(
        &self,
        baseline: &BTreeMap<String, usize>,
        quiet: Duration,
        timeout: Duration,
    ) -> Result<BTreeMap<String, usize>, SandboxError> {
        let last_change = Mutex::new((BTreeMap::new(), std::time::Instant::now()));
        self.wait_for("every host reached by the operator, then no command for the quiet period", timeout, || {
            let last_change = &last_change;
            async move {
                let counts = self.operator_command_counts().await?;
                let new: BTreeMap<String, usize> = counts
                    .iter()
                    .map(|(name, count)| (name.clone(), count.saturating_sub(baseline.get(name).copied().unwrap_or(0))))
                    .collect();
                let quiet_for = {
                    let mut last_change = last_change.lock().unwrap_or_else(PoisonError::into_inner);
                    if last_change.0 != new {
                        *last_change = (new.clone(), std::time::Instant::now());
                    }
                    last_change.1.elapsed()
                };
                anyhow::ensure!(new.values().all(|count| *count >= 1), "new operator commands per host: {new:?}");
                anyhow::ensure!(quiet_for >= quiet, "commands still arriving: {new:?}");
                Ok(new)
            }
        })
        .await
    }

    /// The commands host `name` did not know.
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn unknown_commands(&self, name: &str) -> Result<Vec<UnknownCommand>, SandboxError> {
        let server = self.server(name).await?;
        let unknown = lock(&server.host).unknown_commands.clone();
        Ok(unknown)
    }

    /// Host `name`'s service table, brought up to date.
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn services(&self, name: &str) -> Result<Vec<Service>, SandboxError> {
        let server = self.server(name).await?;
        let mut host = lock(&server.host);
        host.refresh();
        Ok(host.scm.services().cloned().collect())
    }

    /// The contents of the file at Windows path `path` on host `name`, if it exists.
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn read_file(&self, name: &str, path: &str) -> Result<Option<Vec<u8>>, SandboxError> {
        let server = self.server(name).await?;
        let Ok(parsed) = winhost_sim::disk::WinPath::parse(path) else { return Ok(None) };
        let contents = lock(&server.host).disk.read(&parsed).ok();
        Ok(contents)
    }

    /// Machine environment variable `variable` of host `name`, as the registry holds it now.
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn machine_env(&self, name: &str, variable: &str) -> Result<Option<String>, SandboxError> {
        let server = self.server(name).await?;
        let value = lock(&server.host).machine_env(variable);
        Ok(value)
    }

    /// The thumbprints in host `name`'s `Cert:\LocalMachine\Root`.
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn root_certificates(&self, name: &str) -> Result<Vec<String>, SandboxError> {
        let server = self.server(name).await?;
        let thumbprints = lock(&server.host).root_certificates.keys().cloned().collect();
        Ok(thumbprints)
    }

    /// The names of host `name`'s firewall rules.
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn firewall_rules(&self, name: &str) -> Result<Vec<String>, SandboxError> {
        let server = self.server(name).await?;
        let names = lock(&server.host).firewall.iter().map(|rule| rule.name.clone()).collect();
        Ok(names)
    }

    /// Defender's process exclusions on host `name` (empty when Defender is not installed).
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn defender_exclusions(&self, name: &str) -> Result<Vec<String>, SandboxError> {
        let server = self.server(name).await?;
        let exclusions = lock(&server.host).defender.as_ref().map(|defender| defender.exclusion_process.clone());
        Ok(exclusions.unwrap_or_default())
    }

    /// SHA-256 (lower-case hex) of the file at Windows path `path` on host `name`, if it exists.
    ///
    /// # Errors
    /// [`SandboxError::Fleet`] if there is no such host.
    pub async fn file_hash(&self, name: &str, path: &str) -> Result<Option<String>, SandboxError> {
        let server = self.server(name).await?;
        let Ok(parsed) = winhost_sim::disk::WinPath::parse(path) else { return Ok(None) };
        let hash = lock(&server.host).file_hash(&parsed);
        Ok(hash)
    }

    /// The subnet the OVN stand-in gave each Node.
    pub fn ovn_subnets(&self) -> BTreeMap<String, String> {
        self.ovn.assignments()
    }

    /// `windows-instances` entries for every host: key → `username=Administrator`.
    pub fn entries_for_all_hosts(&self) -> BTreeMap<String, String> {
        self.hosts.iter().map(|host| (host.key.clone(), format!("username={HOST_USER}"))).collect()
    }

    fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.admin_client(), OPERATOR_NAMESPACE)
    }

    /// Writes the `windows-instances` ConfigMap with exactly `entries` (created or replaced).
    ///
    /// # Errors
    /// [`SandboxError::Kube`].
    pub async fn write_instances(&self, entries: &BTreeMap<String, String>) -> Result<(), SandboxError> {
        let config_map = ConfigMap {
            metadata: ObjectMeta { name: Some(INSTANCES_CONFIG_MAP.to_owned()), ..ObjectMeta::default() },
            data: Some(entries.clone()),
            ..ConfigMap::default()
        };
        let action = format!("write ConfigMap {OPERATOR_NAMESPACE}/{INSTANCES_CONFIG_MAP}");
        let config_maps = self.config_maps();
        match config_maps.get_opt(INSTANCES_CONFIG_MAP).await.map_err(SandboxError::kube(action.clone()))? {
            None => {
                config_maps.create(&PostParams::default(), &config_map).await.map_err(SandboxError::kube(action))?;
            }
            Some(existing) => {
                let replacement = ConfigMap {
                    metadata: ObjectMeta {
                        resource_version: existing.metadata.resource_version,
                        ..config_map.metadata
                    },
                    ..config_map
                };
                config_maps
                    .replace(INSTANCES_CONFIG_MAP, &PostParams::default(), &replacement)
                    .await
                    .map_err(SandboxError::kube(action))?;
            }
        }
        Ok(())
    }

    /// Sets one entry of the `windows-instances` ConfigMap (a merge patch; the ConfigMap must exist).
    ///
    /// # Errors
    /// [`SandboxError::Kube`].
    pub async fn set_instance_entry(&self, key: &str, value: &str) -> Result<(), SandboxError> {
        self.patch_instances(serde_json::json!({"data": {key: value}}), &format!("set entry {key}")).await
    }

    /// Removes one entry of the `windows-instances` ConfigMap (a merge patch).
    ///
    /// # Errors
    /// [`SandboxError::Kube`].
    pub async fn remove_instance_entry(&self, key: &str) -> Result<(), SandboxError> {
        self.patch_instances(serde_json::json!({"data": {key: null}}), &format!("remove entry {key}")).await
    }

    async fn patch_instances(&self, patch: serde_json::Value, what: &str) -> Result<(), SandboxError> {
        self.config_maps()
            .patch(INSTANCES_CONFIG_MAP, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(SandboxError::kube(format!("{what} of ConfigMap {OPERATOR_NAMESPACE}/{INSTANCES_CONFIG_MAP}")))?;
        Ok(())
    }

    /// Deletes the `windows-instances` ConfigMap.
    ///
    /// # Errors
    /// [`SandboxError::Kube`].
    pub async fn delete_instances(&self) -> Result<(), SandboxError> {
        self.config_maps()
            .delete(INSTANCES_CONFIG_MAP, &DeleteParams::default())
            .await
            .map_err(SandboxError::kube(format!("delete ConfigMap {OPERATOR_NAMESPACE}/{INSTANCES_CONFIG_MAP}")))?;
        Ok(())
    }

    /// Every `WindowsInstance` in the operator namespace, sorted by name.
    ///
    /// # Errors
    /// [`SandboxError::Kube`].
    pub async fn windows_instances(&self) -> Result<Vec<WindowsInstance>, SandboxError> {
        let instances: Api<WindowsInstance> = Api::namespaced(self.admin_client(), OPERATOR_NAMESPACE);
        let mut listed = instances
            .list(&ListParams::default())
            .await
            .map_err(SandboxError::kube(format!("list WindowsInstances in {OPERATOR_NAMESPACE}")))?
            .items;
        listed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(listed)
    }

    /// Every Windows Node (`kubernetes.io/os=windows`), sorted by name.
    ///
    /// # Errors
    /// [`SandboxError::Kube`].
    pub async fn windows_nodes(&self) -> Result<Vec<Node>, SandboxError> {
        let nodes: Api<Node> = Api::all(self.admin_client());
        let mut listed = nodes
            .list(&ListParams::default().labels("kubernetes.io/os=windows"))
            .await
            .map_err(SandboxError::kube("list Windows Nodes"))?
            .items;
        listed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(listed)
    }

    /// One row per `WindowsInstance`: phase, Node and its readiness.
    ///
    /// # Errors
    /// [`SandboxError::Kube`].
    pub async fn instance_rows(&self) -> Result<Vec<InstanceRow>, SandboxError> {
        let nodes = self.windows_nodes().await?;
        let instances = self.windows_instances().await?;
        Ok(instances
            .iter()
            .map(|instance| {
                let status = instance.status.as_ref();
                let node = status.and_then(|status| status.expected_node_name.clone());
                let node_ready = node
                    .as_deref()
                    .and_then(|name| nodes.iter().find(|candidate| candidate.metadata.name.as_deref() == Some(name)))
                    .map(node_is_ready);
                InstanceRow {
                    instance: instance.metadata.name.clone().unwrap_or_default(),
                    address: instance.spec.address.clone(),
                    phase: status
                        .and_then(|status| status.phase)
                        .map_or_else(|| "-".to_owned(), |phase| phase.to_string()),
                    node,
                    node_ready,
                    last_error: status.and_then(|status| status.last_error.clone()),
                }
            })
            .collect())
    }

    /// Waits until exactly `count` `WindowsInstance`s are `Ready` with a Ready Node, and returns them (sorted by
    /// name). On timeout the error quotes the rows seen last and the end of the operator's log, and the sandbox
    /// directory is kept.
    ///
    /// # Errors
    /// [`SandboxError::Timeout`], or the operator's exit.
    pub async fn wait_until_ready(&self, count: usize, timeout: Duration) -> Result<Vec<ReadyInstance>, SandboxError> {
        self.wait_for(&format!("{count} Ready WindowsInstances with Ready Nodes"), timeout, || async {
            // Records first: the operator labels and annotates a Node before it writes its record Ready, so a Node
            // read after a Ready record carries what that pass wrote (read the other way round, it may be older).
            let instances = self.windows_instances().await?;
            let nodes = self.windows_nodes().await?;
            let ready: Vec<ReadyInstance> = instances
                .iter()
                .filter_map(|instance| {
                    let status = instance.status.as_ref()?;
                    if status.phase != Some(InstancePhase::Ready) {
                        return None;
                    }
                    let name = status.expected_node_name.as_deref()?;
                    let node = nodes.iter().find(|node| node.metadata.name.as_deref() == Some(name))?;
                    node_is_ready(node).then(|| ReadyInstance { instance: instance.clone(), node: node.clone() })
                })
                .collect();
            if ready.len() == count {
                return Ok(ready);
            }
            let rows = self.instance_rows().await?;
            anyhow::bail!("{} Ready, expected {count}; instances: {}", ready.len(), describe_rows(&rows))
        })
        .await
    }

    /// Retries `probe` (every 200 ms) until it succeeds, like [`eventually`], failing also as soon as the operator
    /// process exits. On timeout the error quotes the last problem and the end of the operator's log, and the
    /// sandbox directory is kept.
    ///
    /// # Errors
    /// [`SandboxError::Timeout`] or [`SandboxError::OperatorExited`].
    pub async fn wait_for<T, F, Fut>(&self, what: &str, timeout: Duration, mut probe: F) -> Result<T, SandboxError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = anyhow::Result<T>>,
    {
        let outcome = eventually(what, timeout, || {
            let operator = self.check_operator();
            let attempt = probe();
            async move {
                match operator {
                    Err(exited) => Ok(Err(exited)),
                    Ok(()) => attempt.await.map(Ok),
                }
            }
        })
        .await;
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(exited)) => {
                self.keep_directory.store(true, Ordering::SeqCst);
                Err(exited)
            }
            Err(error) => {
                self.keep_directory.store(true, Ordering::SeqCst);
                let log = self.operator_log_path();
                let stall = crate::stall_report::stall_report(
                    self.operator_pid(),
                    self.operator_probe_address(),
                    &self.directory_path,
                )
                .await;
                Err(SandboxError::Timeout {
                    detail: format!("{error:#}\n{stall}"),
                    tail: log_tail(&log),
                    operator_log: log,
                    sandbox_dir: self.directory_path.clone(),
                })
            }
        }
    }

    /// Fails if the operator process exited on its own (quoting the end of its log); a deliberately killed one is
    /// not an error.
    ///
    /// # Errors
    /// [`SandboxError::OperatorExited`].
    pub fn check_operator(&self) -> Result<(), SandboxError> {
        match lock_operator(&self.operator).check_running() {
            Err(SandboxError::OperatorStopped) => Ok(()),
            other => other,
        }
    }

    /// Kills the operator with SIGKILL (a crash); [`Sandbox::start_operator`] starts it again.
    pub fn kill_operator(&self) {
        lock_operator(&self.operator).kill();
    }

    /// Starts the operator again (with the extra arguments of its last start) and waits for `/readyz`.
    ///
    /// # Errors
    /// [`SandboxError::OperatorSpawn`], [`SandboxError::OperatorExited`] or [`SandboxError::OperatorHttp`].
    pub async fn start_operator(&self) -> Result<(), SandboxError> {
        let extra: Vec<OsString> = lock_operator(&self.operator).extra_args().to_vec();
        self.start_operator_with(extra).await
    }

    /// Kills the operator and starts it with `extra_args` after the sandbox's own arguments, then waits for
    /// `/readyz`.
    ///
    /// # Errors
    /// As [`Sandbox::start_operator`].
    pub async fn restart_operator_with<S: AsRef<str>>(&self, extra_args: &[S]) -> Result<(), SandboxError> {
        let extra = extra_args.iter().map(|arg| OsString::from(arg.as_ref())).collect();
        self.start_operator_with(extra).await
    }

    async fn start_operator_with(&self, extra: Vec<OsString>) -> Result<(), SandboxError> {
        let listen = {
            let mut operator = lock_operator(&self.operator);
            operator.start_with(extra)?;
            operator.launch().listen
        };
        crate::operator::wait_ready(listen, self.operator_ready_timeout, || {
            lock_operator(&self.operator).check_running()
        })
        .await
    }

    /// Looks for the secrets the sandbox planted or the operator minted — the admin SSH key, every
    /// node-bootstrapper token a host's bootstrap kubeconfig held, the `windows-machine-config-operator-tls` and
    /// `windows-machine-config-operator-metrics-tls` keys, the operator's ServiceAccount token, the metrics
    /// scraper's token, the proxy and registry credentials planted with [`Sandbox::set_proxy_status`] and
    /// [`Sandbox::set_registry_credentials`] — in the operator's log, every host's commands (lines, decoded
    /// `-EncodedCommand` scripts, output) and files under `C:\var\log` (not for the credentials the hosts are meant to
    /// get), the command transcripts in [`Sandbox::transcripts_dir`], every Event and every record's status; see
    /// [`crate::secret_scan`].
    ///
    /// # Errors
    /// [`SandboxError::Kube`] or [`SandboxError::Io`] if something to search cannot be read.
    pub async fn scan_for_leaked_secrets(&self) -> Result<SecretScan, SandboxError> {
        let (operator_log, operator_kubeconfig) = {
            let operator = lock_operator(&self.operator);
            (operator.launch().log.clone(), operator.launch().kubeconfig.clone())
        };
        let planted = self.planted.lock().unwrap_or_else(PoisonError::into_inner).clone();
        crate::secret_scan::scan(&ScanInputs {
            admin: self.admin_client(),
            admin_key: &self.admin_key,
            operator_log,
            operator_kubeconfig,
            scraper_token: &self.metrics_token,
            fleet: &self.fleet,
            hosts_dir: self.directory_path.join("hosts"),
            transcripts_dir: self.transcripts_dir(),
            planted,
        })
        .await
    }

    /// Runs [`Sandbox::scan_for_leaked_secrets`] and fails if it found a secret, had no value of the admin key, the
    /// TLS key or the operator's token to look for, or read a secret too short to search (a scan that cannot fail
    /// proves nothing). Every e2e test ends with it. It prints the scan's summary; on failure the sandbox directory
    /// is kept.
    ///
    /// # Errors
    /// [`SandboxError::SecretLeaked`], [`SandboxError::SecretScan`], or the scan's own errors.
    pub async fn assert_no_secret_leaked(&self) -> Result<SecretScan, SandboxError> {
        let scan = self.scan_for_leaked_secrets().await?;
        eprintln!("wmco-sandbox: secret scan: {scan}");
        if !scan.hits.is_empty() {
            self.keep_directory();
            return Err(SandboxError::SecretLeaked {
                report: scan.to_string(),
                sandbox_dir: self.directory_path.clone(),
            });
        }
        for kind in
            [SecretKind::AdminSshKey, SecretKind::OperatorTlsKey, SecretKind::OperatorToken, SecretKind::ScraperToken]
        {
            if scan.secrets_of(kind) == 0 {
                return Err(SandboxError::SecretScan(format!("found no value of {kind} to search for")));
            }
        }
        if let Some(secret) = scan.unsearched().first() {
            let kind = secret.kind;
            return Err(SandboxError::SecretScan(format!(
                "{kind} from {} has no value of at least {MIN_SECRET_LENGTH} characters to search for",
                secret.source
            )));
        }
        Ok(scan)
    }

    /// Creates Secret `windows-machine-config-operator-tls` (windows_exporter's serving certificate) when the
    /// sandbox started without it ([`SandboxOptions::exporter_tls_secret`]).
    ///
    /// # Errors
    /// [`SandboxError::Certificate`] or [`SandboxError::Kube`] (also when it exists already).
    pub async fn create_exporter_tls_secret(&self) -> Result<(), SandboxError> {
        credentials::create_tls_secret(&self.admin_client()).await
    }

    /// `(type, reason, note)` of the Events in the operator namespace about the object of `kind` named `name`.
    ///
    /// # Errors
    /// [`SandboxError::Kube`].
    pub async fn events_about(&self, kind: &str, name: &str) -> Result<Vec<(String, String, String)>, SandboxError> {
        let events: Api<Event> = Api::namespaced(self.admin_client(), OPERATOR_NAMESPACE);
        let listed = events
            .list(&ListParams::default())
            .await
            .map_err(SandboxError::kube(format!("list Events in {OPERATOR_NAMESPACE}")))?
            .items;
        Ok(listed
            .into_iter()
            .filter(|event| {
                event.regarding.as_ref().is_some_and(|regarding| {
                    regarding.kind.as_deref() == Some(kind) && regarding.name.as_deref() == Some(name)
                })
            })
            .map(|event| {
                (event.type_.unwrap_or_default(), event.reason.unwrap_or_default(), event.note.unwrap_or_default())
            })
            .collect())
    }

    /// The pod the operator runs in, when it runs from its image ([`SandboxOptions::operator_image`]).
    pub fn operator_pod(&self) -> Option<PodRun> {
        lock_operator(&self.operator).launch().pod.as_ref().map(|(pod, _)| pod.clone())
    }

    /// The operator's process ID while it runs.
    pub fn operator_pid(&self) -> Option<u32> {
        lock_operator(&self.operator).pid()
    }

    /// The operator's `/metrics` text, read over TLS as the metrics scraper ServiceAccount.
    ///
    /// # Errors
    /// [`SandboxError::OperatorHttp`].
    pub async fn operator_metrics(&self) -> Result<String, SandboxError> {
        crate::operator::metrics(&self.metrics_access()).await
    }

    /// The operator's probe listener (plain HTTP: `/healthz`, `/readyz`).
    pub fn operator_probe_address(&self) -> SocketAddr {
        lock_operator(&self.operator).launch().listen
    }

    /// How to reach the operator's metrics endpoint: its address, the CA that issued its serving certificate
    /// (Secret `windows-machine-config-operator-metrics-tls`), and the token of ServiceAccount
    /// `wmco-sandbox-metrics-scraper`, bound to ClusterRole `windows-machine-config-operator-metrics-reader`.
    pub fn metrics_access(&self) -> MetricsAccess {
        MetricsAccess {
            address: lock_operator(&self.operator).launch().metrics_listen,
            ca_pem: self.metrics_ca_pem.clone(),
            token: self.metrics_token.clone(),
        }
    }

    /// The metrics endpoint flags for another operator process of this sandbox listening on `listen` (the serving
    /// certificate files the sandbox's operator uses).
    pub fn metrics_endpoint_args(&self, listen: SocketAddr) -> MetricsEndpointArgs {
        MetricsEndpointArgs {
            listen,
            certificate: self.metrics_tls_files.0.clone(),
            key: self.metrics_tls_files.1.clone(),
        }
    }
}

/// Waits until the API server serves `WindowsInstance`s (a new CRD's storage answers 429 for a moment).
async fn wait_for_instance_storage(client: &kube::Client) -> Result<(), SandboxError> {
    let instances: Api<WindowsInstance> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let mut last_error = None;
    for _ in 0..CRD_READY_ATTEMPTS {
        match instances.list(&ListParams::default().limit(1)).await {
            Ok(_) => return Ok(()),
            Err(error) => last_error = Some(error),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    match last_error {
        Some(source) => {
            Err(SandboxError::Kube { action: "list WindowsInstances (is the CRD established?)".to_owned(), source })
        }
        None => Ok(()),
    }
}

/// Whether a Node's `Ready` condition is `True`.
pub fn node_is_ready(node: &Node) -> bool {
    node.status.as_ref().and_then(|status| status.conditions.as_ref()).is_some_and(|conditions| {
        conditions.iter().any(|condition| condition.type_ == "Ready" && condition.status == "True")
    })
}

fn describe_rows(rows: &[InstanceRow]) -> String {
    if rows.is_empty() {
        return "none".to_owned();
    }
    rows.iter()
        .map(|row| {
            let node = row.node.as_deref().unwrap_or("-");
            let ready = row.node_ready.map_or_else(|| "no Node".to_owned(), |ready| format!("Ready={ready}"));
            let error = row.last_error.as_deref().map(|error| format!(" error: {error}")).unwrap_or_default();
            format!("{} {} node {node} {ready}{error}", row.instance, row.phase)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `run --payload-dir P [--allow-synthetic-payload] --listen A --ssh-port S --ssh-identity wmco-sandbox`, with
/// `--allow-synthetic-payload` only when `P` is a synthetic payload.
fn operator_base_args(
    payload_dir: &Path,
    listen: SocketAddr,
    metrics: &MetricsEndpointArgs,
    ssh_port: u16,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["run".into()];
    args.extend(crate::operator_payload_args(payload_dir));
    args.extend(metrics.to_args());
    args.extend(
        [
            "--listen".to_owned(),
            listen.to_string(),
            "--ssh-port".to_owned(),
            ssh_port.to_string(),
            "--ssh-identity".to_owned(),
            OPERATOR_IDENTITY.to_owned(),
        ]
        .map(OsString::from),
    );
    args
}

/// The environment a pod-run operator gets besides the Deployment's: what the sandbox needs and a cluster would
/// not (its listeners on free loopback ports, the hosts' shared SSH port, the identity the hosts' command logs
/// name), as the environment variables of the same `wmco run` flags.
fn pod_environment(listen: SocketAddr, metrics_listen: SocketAddr, ssh_port: u16) -> Vec<(String, String)> {
    vec![
        ("WMCO_LISTEN".to_owned(), listen.to_string()),
        ("WMCO_METRICS_LISTEN".to_owned(), metrics_listen.to_string()),
        ("WMCO_SSH_PORT".to_owned(), ssh_port.to_string()),
        ("WMCO_SSH_IDENTITY".to_owned(), OPERATOR_IDENTITY.to_owned()),
    ]
}

/// The address of `https://HOST:PORT`, as `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` give it.
fn api_server_address(url: &str) -> Result<SocketAddr, SandboxError> {
    url.strip_prefix("https://")
        .and_then(|address| address.trim_end_matches('/').parse().ok())
        .ok_or_else(|| SandboxError::Image(format!("the API server URL {url} is not https://IP:PORT")))
}

/// A free port on 127.0.0.1 (for the operator's listener).
fn free_loopback_address() -> Result<SocketAddr, SandboxError> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(SandboxError::io("bind a probe socket on", "127.0.0.1:0"))?;
    listener.local_addr().map_err(SandboxError::io("read the address of", "a probe socket"))
}

/// Writes a file only its owner can read (it holds a token).
fn write_private_file(path: &Path, contents: &str) -> Result<(), SandboxError> {
    std::fs::write(path, contents).map_err(SandboxError::io("write", path))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(SandboxError::io("restrict the permissions of", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synthetic_payload_is_allowed_explicitly() {
        let payload = tempfile::tempdir().unwrap();
        std::fs::write(payload.path().join("SYNTHETIC"), "synthetic").unwrap();
        let args = operator_base_args(payload.path(), "127.0.0.1:4242".parse().unwrap(), &metrics_args(), 2222);
        let text: Vec<String> = args.iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
        assert_eq!(
            text[..4],
            ["run", "--payload-dir", &payload.path().display().to_string(), "--allow-synthetic-payload"]
        );
        assert_eq!(text.iter().filter(|arg| *arg == "--allow-synthetic-payload").count(), 1);
    }

    #[test]
    fn the_operator_runs_with_the_sandbox_listeners_certificate_port_and_identity() {
        let args =
            operator_base_args(Path::new("/cache/payload"), "127.0.0.1:4242".parse().unwrap(), &metrics_args(), 2222);
        let text: Vec<String> = args.iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
        assert_eq!(
            text,
            [
                "run",
                "--payload-dir",
                "/cache/payload",
                "--metrics-listen",
                "127.0.0.1:4243",
                "--metrics-tls-cert",
                "/sandbox/metrics-tls/tls.crt",
                "--metrics-tls-key",
                "/sandbox/metrics-tls/tls.key",
                "--listen",
                "127.0.0.1:4242",
                "--ssh-port",
                "2222",
                "--ssh-identity",
                "wmco-sandbox"
            ]
        );
    }

    fn metrics_args() -> MetricsEndpointArgs {
        MetricsEndpointArgs {
            listen: "127.0.0.1:4243".parse().unwrap(),
            certificate: PathBuf::from("/sandbox/metrics-tls/tls.crt"),
            key: PathBuf::from("/sandbox/metrics-tls/tls.key"),
        }
    }

    #[test]
    fn rows_describe_phase_node_and_error() {
        let rows = vec![
            InstanceRow {
                instance: "a".into(),
                address: "127.0.0.10".into(),
                phase: "Ready".into(),
                node: Some("winhost-0".into()),
                node_ready: Some(true),
                last_error: None,
            },
            InstanceRow {
                instance: "b".into(),
                address: "localhost".into(),
                phase: "Failed".into(),
                node: None,
                node_ready: None,
                last_error: Some("unreachable".into()),
            },
        ];
        assert_eq!(
            describe_rows(&rows),
            "a Ready node winhost-0 Ready=true; b Failed node - no Node error: unreachable"
        );
        assert_eq!(describe_rows(&[]), "none");
    }
}
