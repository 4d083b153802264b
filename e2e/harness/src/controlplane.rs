//! [`ControlPlane`]: etcd, kube-apiserver and kube-controller-manager started as child processes on 127.0.0.1,
//! with fresh certificates, an admin kubeconfig, the OpenShift fixtures installed (or none: a bare control plane, as
//! kubeadm leaves it), and ways to act as other identities. Everything lives in one temporary state directory that
//! is removed when the control plane is dropped (or, if the harness dies abruptly, by its watchdog).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, PostParams};

use crate::binaries::ControlPlaneBinaries;
use crate::fixtures::{self, FixtureValues};
use crate::kubeconfig::{self, Credential};
use crate::pki::{ClusterPki, PkiFiles};
use crate::process::{ManagedProcess, Watchdog, free_port};
use crate::{ClientCertificate, Error};

/// The service CIDR of the control plane (OpenShift's default).
pub const SERVICE_CIDR: &str = "172.30.0.0/16";

/// The kube-controller-manager controllers the control plane runs, by their 1.36 names (short aliases in
/// parentheses): CSR signing (`csrsigning`) and cleaning (`csrcleaner`), node lifecycle (`nodelifecycle`),
/// disruption budgets (`disruption`), pod GC (`podgc`), the per-namespace `default` ServiceAccount
/// (`serviceaccount`, pods need it) and legacy token Secrets (`serviceaccount-token`), namespace deletion
/// (`namespace`), the garbage collector (`garbagecollector`), the `kube-root-ca.crt` ConfigMap in every
/// namespace (`root-ca-cert-publisher`; the operator reads the API server CA from it), and Deployments and
/// ReplicaSets (`deployment`, `replicaset`: the e2e workload; its tests bind the pods themselves, as there is no
/// scheduler). Deliberately absent: CSR approval (`csrapproving`; approving kubelet CSRs is the product's job) and
/// everything else that needs a scheduler, kubelets or a cloud.
pub const CONTROLLERS: &[&str] = &[
    "certificatesigningrequest-signing-controller",
    "certificatesigningrequest-cleaner-controller",
    "node-lifecycle-controller",
    "disruption-controller",
    "pod-garbage-collector-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "namespace-controller",
    "garbage-collector-controller",
    "root-ca-certificate-publisher-controller",
    "deployment-controller",
    "replicaset-controller",
];

/// Namespace and name of the bootstrap ServiceAccount and its token Secret (fixtures).
const NODE_BOOTSTRAPPER_NAMESPACE: &str = "openshift-machine-config-operator";
const NODE_BOOTSTRAPPER_TOKEN_SECRET: &str = "node-bootstrapper-token";

/// How long kube-apiserver may take to report ready.
const API_SERVER_READY_TIMEOUT: Duration = Duration::from_secs(90);
/// How long kube-controller-manager may take to fill the node-bootstrapper token Secret.
const CONTROLLER_MANAGER_READY_TIMEOUT: Duration = Duration::from_secs(90);
/// Pause between readiness probes.
const PROBE_INTERVAL: Duration = Duration::from_millis(200);

/// Options of a control plane.
#[derive(Debug, Clone, Default)]
pub struct ControlPlaneOptions {
    node_monitor_grace_period: Option<Duration>,
    bare: bool,
}

impl ControlPlaneOptions {
    /// Sets kube-controller-manager's `--node-monitor-grace-period` (default upstream: 50 s), so tests can see a
    /// silent node turn `Unknown` quickly.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = wmco_e2e_harness::ControlPlaneOptions::default()
    ///     .node_monitor_grace_period(Duration::from_secs(8));
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn node_monitor_grace_period(mut self, period: Duration) -> Self {
        self.node_monitor_grace_period = Some(period);
        self
    }

    /// Installs none of the fixtures: no OpenShift or monitoring CRD, no OpenShift namespace, no node-bootstrapper
    /// identity; only what kube-apiserver and kube-controller-manager create themselves, as on a fresh kubeadm
    /// cluster. [`ControlPlane::start`] then waits for the `default` ServiceAccount of namespace `default` instead of
    /// the node-bootstrapper token, and [`ControlPlane::node_bootstrapper_token`] fails.
    ///
    /// ```
    /// let options = wmco_e2e_harness::ControlPlaneOptions::default().without_fixtures();
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn without_fixtures(mut self) -> Self {
        self.bare = true;
        self
    }
}

/// A running control plane. Dropping it stops every process (by PID) and removes its state directory.
///
/// ```no_run
/// # async fn demo() -> Result<(), wmco_e2e_harness::Error> {
/// use k8s_openapi::api::core::v1::Namespace;
/// let control_plane = wmco_e2e_harness::ControlPlane::start(Default::default()).await?;
/// println!("kubeconfig: {}", control_plane.kubeconfig_path().display());
/// let namespaces: kube::Api<Namespace> = kube::Api::all(control_plane.admin_client());
/// assert!(namespaces.get_opt("openshift-machine-api").await.map_err(|_| ()).is_ok());
/// # Ok(()) }
/// ```
pub struct ControlPlane {
    // Field order is drop order: controller-manager, apiserver, etcd, then the watchdog, then the directory.
    controller_manager: Mutex<ManagedProcess>,
    api_server: Mutex<ManagedProcess>,
    etcd: Mutex<ManagedProcess>,
    _watchdog: Watchdog,
    pki: ClusterPki,
    binaries: ControlPlaneBinaries,
    api_server_url: String,
    kubeconfig_path: PathBuf,
    admin_client: kube::Client,
    startup_duration: Duration,
    state_dir: tempfile::TempDir,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ControlPlane")
            .field("api_server_url", &self.api_server_url)
            .field("kubeconfig_path", &self.kubeconfig_path)
            .field("state_dir", &self.state_dir.path())
            .finish_non_exhaustive()
    }
}

/// Directories inside the state directory.
struct StateLayout {
    pids: PathBuf,
    logs: PathBuf,
    pki: PathBuf,
    etcd_data: PathBuf,
}

impl StateLayout {
    fn create(root: &Path) -> Result<Self, Error> {
        let layout = Self {
            pids: root.join("pids"),
            logs: root.join("logs"),
            pki: root.join("pki"),
            etcd_data: root.join("etcd"),
        };
        for dir in [&layout.pids, &layout.logs, &layout.pki] {
            std::fs::create_dir_all(dir).map_err(Error::io("create directory", dir))?;
        }
        Ok(layout)
    }
}

impl ControlPlane {
    /// Starts etcd, kube-apiserver and kube-controller-manager, waits until they are ready, and installs the
    /// fixtures. Fails with [`Error::BinaryMissing`] if the binaries are not built.
    pub async fn start(options: ControlPlaneOptions) -> Result<Self, Error> {
        let started = Instant::now();
        let binaries = ControlPlaneBinaries::locate()?;
        let state_dir = tempfile::Builder::new()
            .prefix("wmco-e2e-")
            .tempdir()
            .map_err(Error::io("create state directory", std::env::temp_dir()))?;
        let layout = StateLayout::create(state_dir.path())?;
        let watchdog = Watchdog::start(state_dir.path())?;
        let (pki, pki_files) = ClusterPki::generate(&layout.pki)?;

        let etcd_client_port = free_port()?;
        let etcd_peer_port = free_port()?;
        let api_server_port = free_port()?;
        let api_server_url = format!("https://127.0.0.1:{api_server_port}");

        let mut etcd = ManagedProcess::new(
            "etcd",
            &binaries.etcd,
            etcd_args(&layout.etcd_data, etcd_client_port, etcd_peer_port),
            &layout.logs,
            &layout.pids,
        );
        etcd.start()?;
        let mut api_server = ManagedProcess::new(
            "kube-apiserver",
            &binaries.kube_apiserver,
            api_server_args(&pki_files, etcd_client_port, api_server_port),
            &layout.logs,
            &layout.pids,
        );
        api_server.start()?;

        let admin_certificate = pki.issue_client_certificate("wmco-e2e-admin", &["system:masters"])?;
        let admin_kubeconfig = kubeconfig::render(
            &api_server_url,
            pki.ca_certificate_pem(),
            "admin",
            Credential::Certificate(&admin_certificate),
        );
        let kubeconfig_path = state_dir.path().join("kubeconfig");
        kubeconfig::write(&kubeconfig_path, &admin_kubeconfig)?;
        let admin_client = kubeconfig::client_from(&admin_kubeconfig, "admin").await?;

        let controller_manager_certificate = pki.issue_client_certificate("system:kube-controller-manager", &[])?;
        let controller_manager_kubeconfig = state_dir.path().join("kube-controller-manager.kubeconfig");
        kubeconfig::write(
            &controller_manager_kubeconfig,
            &kubeconfig::render(
                &api_server_url,
                pki.ca_certificate_pem(),
                "system:kube-controller-manager",
                Credential::Certificate(&controller_manager_certificate),
            ),
        )?;

        let mut control_plane = Self {
            controller_manager: Mutex::new(ManagedProcess::new(
                "kube-controller-manager",
                &binaries.kube_controller_manager,
                controller_manager_args(&pki_files, &controller_manager_kubeconfig, &options),
                &layout.logs,
                &layout.pids,
            )),
            api_server: Mutex::new(api_server),
            etcd: Mutex::new(etcd),
            _watchdog: watchdog,
            pki,
            binaries,
            api_server_url,
            kubeconfig_path,
            admin_client,
            startup_duration: Duration::ZERO,
            state_dir,
        };
        control_plane.wait_for_api_server().await?;
        lock(&control_plane.controller_manager).start()?;
        if !options.bare {
            fixtures::install(
                &control_plane.admin_client,
                &FixtureValues {
                    api_server_url: control_plane.api_server_url.clone(),
                    ca_certificate_base64: STANDARD.encode(control_plane.pki.ca_certificate_pem()),
                },
            )
            .await?;
        }
        control_plane.wait_for_controller_manager(options.bare).await?;
        control_plane.startup_duration = started.elapsed();
        Ok(control_plane)
    }

    /// A client authenticated as a cluster admin (group `system:masters`).
    pub fn admin_client(&self) -> kube::Client {
        self.admin_client.clone()
    }

    /// The admin kubeconfig file (named `kubeconfig`, inside the state directory).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// The API server URL, `https://127.0.0.1:<port>`.
    pub fn api_server_url(&self) -> &str {
        &self.api_server_url
    }

    /// The cluster CA certificate (PEM): it signs the apiserver's serving certificate and, through
    /// kube-controller-manager, every approved CSR.
    pub fn ca_certificate_pem(&self) -> &str {
        self.pki.ca_certificate_pem()
    }

    /// How long [`ControlPlane::start`] took.
    pub fn startup_duration(&self) -> Duration {
        self.startup_duration
    }

    /// The directory holding the processes' log files (`etcd.log`, `kube-apiserver.log`,
    /// `kube-controller-manager.log`).
    pub fn log_directory(&self) -> PathBuf {
        self.state_dir.path().join("logs")
    }

    /// A `kubectl` command already pointed at the admin kubeconfig.
    pub fn kubectl(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.binaries.kubectl);
        command.arg("--kubeconfig").arg(&self.kubeconfig_path);
        command
    }

    /// Issues a client certificate signed by the cluster CA for `common_name` with `organizations` as groups
    /// (for example `system:node:win-a` in `system:nodes`).
    pub fn issue_client_certificate(
        &self,
        common_name: &str,
        organizations: &[&str],
    ) -> Result<ClientCertificate, Error> {
        self.pki.issue_client_certificate(common_name, organizations)
    }

    /// A kubeconfig (JSON, which is YAML) for this control plane authenticating with a client certificate.
    pub fn kubeconfig_for_certificate(&self, user_name: &str, certificate: &ClientCertificate) -> String {
        kubeconfig::render(
            &self.api_server_url,
            self.ca_certificate_pem(),
            user_name,
            Credential::Certificate(certificate),
        )
    }

    /// A kubeconfig (JSON, which is YAML) for this control plane authenticating with a bearer token.
    pub fn kubeconfig_for_token(&self, user_name: &str, token: &str) -> String {
        kubeconfig::render(&self.api_server_url, self.ca_certificate_pem(), user_name, Credential::Token(token))
    }

    /// A client authenticating with a client certificate; `identity` names it in errors.
    pub async fn client_for_certificate(
        &self,
        identity: &str,
        certificate: &ClientCertificate,
    ) -> Result<kube::Client, Error> {
        kubeconfig::client_from(&self.kubeconfig_for_certificate(identity, certificate), identity).await
    }

    /// A client authenticating with a bearer token; `identity` names it in errors.
    pub async fn client_for_token(&self, identity: &str, token: &str) -> Result<kube::Client, Error> {
        kubeconfig::client_from(&self.kubeconfig_for_token(identity, token), identity).await
    }

    /// Mints a token for ServiceAccount `namespace/name` with the TokenRequest API (as admin).
    pub async fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
        lifetime: Duration,
    ) -> Result<String, Error> {
        let service_accounts: Api<ServiceAccount> = Api::namespaced(self.admin_client(), namespace);
        let request = TokenRequest {
            spec: TokenRequestSpec {
                audiences: Vec::new(),
                expiration_seconds: Some(i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX)),
                ..TokenRequestSpec::default()
            },
            ..TokenRequest::default()
        };
        let issued = service_accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .map_err(Error::api(format!("request a token for ServiceAccount {namespace}/{name}")))?;
        issued.status.map(|status| status.token).ok_or_else(|| Error::Incomplete {
            object: format!("TokenRequest for ServiceAccount {namespace}/{name}"),
            missing: "status (no token was issued)",
        })
    }

    /// A client authenticating as ServiceAccount `namespace/name` with a one-hour TokenRequest token.
    pub async fn client_for_service_account(&self, namespace: &str, name: &str) -> Result<kube::Client, Error> {
        let token = self.service_account_token(namespace, name, Duration::from_secs(3600)).await?;
        self.client_for_token(&format!("system:serviceaccount:{namespace}:{name}"), &token).await
    }

    /// The legacy token of ServiceAccount `openshift-machine-config-operator/node-bootstrapper`, read from its
    /// Secret `node-bootstrapper-token` (what OpenShift's machine-config-server puts in bootstrap kubeconfigs).
    pub async fn node_bootstrapper_token(&self) -> Result<String, Error> {
        let secrets: Api<Secret> = Api::namespaced(self.admin_client(), NODE_BOOTSTRAPPER_NAMESPACE);
        let secret = secrets.get(NODE_BOOTSTRAPPER_TOKEN_SECRET).await.map_err(Error::api(format!(
            "read Secret {NODE_BOOTSTRAPPER_NAMESPACE}/{NODE_BOOTSTRAPPER_TOKEN_SECRET}"
        )))?;
        secret
            .data
            .and_then(|data| data.get("token").map(|token| String::from_utf8_lossy(&token.0).into_owned()))
            .filter(|token| !token.is_empty())
            .ok_or_else(|| Error::Incomplete {
                object: format!("Secret {NODE_BOOTSTRAPPER_NAMESPACE}/{NODE_BOOTSTRAPPER_TOKEN_SECRET}"),
                missing: "data.token (kube-controller-manager has not filled it yet)",
            })
    }

    /// ServiceAccount `default/default`, which kube-controller-manager's serviceaccount-controller creates.
    async fn default_service_account(&self) -> Result<String, Error> {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.admin_client(), "default");
        let account = accounts.get("default").await.map_err(Error::api("read ServiceAccount default/default"))?;
        Ok(account.metadata.name.unwrap_or_default())
    }

    /// Stops kube-apiserver and starts it again on the same port and etcd data, then waits until it is ready.
    pub async fn restart_api_server(&self) -> Result<(), Error> {
        lock(&self.api_server).start()?;
        self.wait_for_api_server().await
    }

    /// Fails if any control-plane process has exited.
    pub fn check_processes(&self) -> Result<(), Error> {
        lock(&self.etcd).check_running()?;
        lock(&self.api_server).check_running()?;
        lock(&self.controller_manager).check_running()
    }

    async fn wait_for_api_server(&self) -> Result<(), Error> {
        let started = Instant::now();
        loop {
            self.check_processes()?;
            let last_problem = match self.readyz().await {
                Ok(()) => return Ok(()),
                Err(problem) => problem,
            };
            if started.elapsed() > API_SERVER_READY_TIMEOUT {
                return Err(Error::Timeout {
                    what: format!("kube-apiserver /readyz at {}", self.api_server_url),
                    waited: started.elapsed(),
                    last_problem,
                });
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    }

    async fn readyz(&self) -> Result<(), String> {
        let request = http::Request::get("/readyz").body(Vec::new()).map_err(|error| error.to_string())?;
        match self.admin_client.request_text(request).await {
            Ok(body) if body.trim() == "ok" => Ok(()),
            Ok(body) => Err(format!("/readyz said {body:?}")),
            Err(error) => Err(error.to_string()),
        }
    }

    /// Waits until kube-controller-manager works: it filled the node-bootstrapper token Secret (fixtures) or, on a
    /// bare control plane, created ServiceAccount `default/default`.
    async fn wait_for_controller_manager(&self, bare: bool) -> Result<(), Error> {
        let started = Instant::now();
        let what = if bare { "the default ServiceAccount" } else { "the node-bootstrapper token Secret" };
        loop {
            self.check_processes()?;
            let outcome =
                if bare { self.default_service_account().await } else { self.node_bootstrapper_token().await };
            let last_problem = match outcome {
                Ok(_) => return Ok(()),
                Err(problem) => problem.to_string(),
            };
            if started.elapsed() > CONTROLLER_MANAGER_READY_TIMEOUT {
                return Err(Error::Timeout {
                    what: format!("kube-controller-manager ({what})"),
                    waited: started.elapsed(),
                    last_problem,
                });
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    }
}

fn lock(process: &Mutex<ManagedProcess>) -> std::sync::MutexGuard<'_, ManagedProcess> {
    // A panic while holding the lock leaves the process record usable: take it back.
    process.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn etcd_args(data_dir: &Path, client_port: u16, peer_port: u16) -> Vec<OsString> {
    let client_url = format!("http://127.0.0.1:{client_port}");
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    let mut args: Vec<OsString> = vec!["--name=wmco-e2e".into(), "--data-dir".into(), data_dir.into()];
    args.extend(
        [
            format!("--listen-client-urls={client_url}"),
            format!("--advertise-client-urls={client_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=wmco-e2e={peer_url}"),
            "--log-level=warn".to_owned(),
            // Test data is thrown away with the control plane: skip fsync, which dominates etcd's latency on
            // shared disks.
            "--unsafe-no-fsync=true".to_owned(),
        ]
        .map(OsString::from),
    );
    args
}

fn api_server_args(pki: &PkiFiles, etcd_client_port: u16, port: u16) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut flag = |name: &str, value: &dyn AsRef<std::ffi::OsStr>| {
        let mut arg = OsString::from(format!("--{name}="));
        arg.push(value.as_ref());
        args.push(arg);
    };
    flag("etcd-servers", &format!("http://127.0.0.1:{etcd_client_port}"));
    flag("bind-address", &"127.0.0.1");
    flag("advertise-address", &"127.0.0.1");
    flag("secure-port", &port.to_string());
    flag("tls-cert-file", &pki.serving_certificate);
    flag("tls-private-key-file", &pki.serving_key);
    flag("client-ca-file", &pki.ca_certificate);
    flag("service-account-issuer", &"https://kubernetes.default.svc");
    flag("service-account-key-file", &pki.service_account_public_key);
    flag("service-account-signing-key-file", &pki.service_account_key);
    flag("service-cluster-ip-range", &SERVICE_CIDR);
    flag("authorization-mode", &"Node,RBAC");
    flag("enable-admission-plugins", &"NodeRestriction");
    // The `kubernetes` Service would point at a loopback address, which endpoint validation refuses.
    flag("endpoint-reconciler-type", &"none");
    flag("profiling", &"false");
    args
}

fn controller_manager_args(pki: &PkiFiles, kubeconfig: &Path, options: &ControlPlaneOptions) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut flag = |name: &str, value: &dyn AsRef<std::ffi::OsStr>| {
        let mut arg = OsString::from(format!("--{name}="));
        arg.push(value.as_ref());
        args.push(arg);
    };
    flag("kubeconfig", &kubeconfig);
    flag("bind-address", &"127.0.0.1");
    flag("secure-port", &"0");
    flag("leader-elect", &"false");
    flag("controllers", &CONTROLLERS.join(","));
    flag("use-service-account-credentials", &"true");
    flag("cluster-signing-cert-file", &pki.ca_certificate);
    flag("cluster-signing-key-file", &pki.ca_key);
    flag("root-ca-file", &pki.ca_certificate);
    flag("service-account-private-key-file", &pki.service_account_key);
    flag("service-cluster-ip-range", &SERVICE_CIDR);
    if let Some(period) = options.node_monitor_grace_period {
        flag("node-monitor-grace-period", &format!("{}s", period.as_secs().max(1)));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pki_files() -> PkiFiles {
        PkiFiles {
            ca_certificate: "/pki/ca.crt".into(),
            ca_key: "/pki/ca.key".into(),
            serving_certificate: "/pki/apiserver.crt".into(),
            serving_key: "/pki/apiserver.key".into(),
            service_account_key: "/pki/sa.key".into(),
            service_account_public_key: "/pki/sa.pub".into(),
        }
    }

    #[test]
    fn the_api_server_binds_loopback_with_node_authorization_and_node_restriction() {
        let args = api_server_args(&pki_files(), 2379, 6443);
        for expected in [
            "--bind-address=127.0.0.1",
            "--secure-port=6443",
            "--etcd-servers=http://127.0.0.1:2379",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--service-cluster-ip-range=172.30.0.0/16",
        ] {
            assert!(args.iter().any(|arg| arg == expected), "{expected} missing from {args:?}");
        }
    }

    #[test]
    fn the_controller_manager_signs_with_the_cluster_ca_and_never_approves() {
        let options = ControlPlaneOptions::default().node_monitor_grace_period(Duration::from_secs(8));
        let args = controller_manager_args(&pki_files(), Path::new("/kcm.kubeconfig"), &options);
        for expected in [
            "--cluster-signing-cert-file=/pki/ca.crt",
            "--cluster-signing-key-file=/pki/ca.key",
            "--node-monitor-grace-period=8s",
            "--controllers=certificatesigningrequest-signing-controller,certificatesigningrequest-cleaner-controller,\
             node-lifecycle-controller,disruption-controller,pod-garbage-collector-controller,\
             serviceaccount-controller,serviceaccount-token-controller,namespace-controller,\
             garbage-collector-controller,root-ca-certificate-publisher-controller,deployment-controller,\
             replicaset-controller",
        ] {
            assert!(args.iter().any(|arg| arg == expected), "{expected} missing from {args:?}");
        }
        assert!(!args.iter().any(|arg| arg.to_string_lossy().contains("approving")));
    }

    #[test]
    fn the_grace_period_flag_is_absent_by_default() {
        let args = controller_manager_args(&pki_files(), Path::new("/kcm.kubeconfig"), &ControlPlaneOptions::default());
        assert!(!args.iter().any(|arg| arg.to_string_lossy().starts_with("--node-monitor-grace-period")));
    }
}
