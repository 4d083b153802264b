//! The service set of a Windows node — containerd, kubelet, hybrid-overlay-node, kube-proxy, csi-proxy,
//! windows_exporter (and azure-cloud-node-manager on Azure) — with the command lines, dependencies and priorities
//! of the Go operator (wmco-anchor.md §4.3), as a function of typed [`NodeInputs`], split into the two
//! configuration stages of the design: [`ServiceStage::Bootstrap`] (containerd and kubelet, before the Node exists)
//! and [`ServiceStage::Node`] (the services that need the registered Node). (A stage is not a host record's
//! `InstancePhase`: both stages run while the record is `Configuring` or `WaitingForNode`.)
//!
//! Every service gets the description `OpenShift managed <name>` (the marker the Go operator's cleanup also
//! recognises), automatic start, and recovery that restarts it after 10 s, 30 s, 60 s and 120 s (in milliseconds;
//! the Go operator passed these numbers as milliseconds by mistake), resetting after 300 s without failure.

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wmco_vocabulary::Platform;

use crate::host::{Direction, EnvVarName, FirewallRule, HostValueError, Protocol, RotatedFiles};
use crate::host_state::HostState;
use crate::path::{PathError, WinPath};
use crate::service::{FailureActions, Millis, ServiceCommand, ServiceName, ServiceNameError, ServiceSpec, StartType};

/// The service the Go operator installed on every node and this operator removes (its work is done over SSH now).
pub const LEGACY_DAEMON_SERVICE: &str = "windows-instance-config-daemon";
/// The node-metrics service: windows_exporter on port 9182, serving TLS with the pair under `C:\k\tls\certs`.
pub const WINDOWS_EXPORTER_SERVICE: &str = "windows_exporter";
/// The kubeconfig of azure-cloud-node-manager (Azure): its own identity, ServiceAccount `cloud-node-manager` of the
/// operator namespace, whose bearer token it reads from a separate file the operator rotates. Never the kubelet's
/// kubeconfig: NodeRestriction forbids a node identity to change its own Node's taints, so the
/// `node.cloudprovider.kubernetes.io/uninitialized` taint would never be removed.
pub const CLOUD_NODE_MANAGER_KUBECONFIG: &str = r"C:\k\cloud-node-manager-kubeconfig";
/// The service of azure-cloud-node-manager (Azure only).
pub const CLOUD_NODE_MANAGER_SERVICE: &str = "cloud-node-manager";
/// The inbound firewall rules a node gets (the Go operator's names): the kubelet's port 10250 for container logs
/// and exec, and windows_exporter's port 9182 (node stage). Deconfiguration removes both.
pub const FIREWALL_RULES: [&str; 2] = ["ContainerLogsPort", "WindowsExporter"];
/// The programs excluded from Windows Defender's scanning while Defender runs (the Go operator's containerd
/// pre-script, wmco-anchor.md §4.3): scanning every layer containerd unpacks slows image pulls and container starts.
/// Deconfiguration removes the exclusion.
pub const DEFENDER_EXCLUDED_PROGRAMS: [&str; 1] = [r"C:\k\containerd\containerd.exe"];

/// [`DEFENDER_EXCLUDED_PROGRAMS`] as paths, for a desired state that holds or removes them.
///
/// ```
/// let programs = wmco_windows_services::defender_excluded_programs()?;
/// assert!(programs.iter().any(|path| path.as_str().ends_with("containerd.exe")));
/// # Ok::<(), wmco_windows_services::PathError>(())
/// ```
///
/// # Errors
/// [`PathError`] if a listed path were invalid (a defect of this crate).
pub fn defender_excluded_programs() -> Result<std::collections::BTreeSet<WinPath>, PathError> {
    DEFENDER_EXCLUDED_PROGRAMS.into_iter().map(WinPath::parse).collect()
}

/// Log verbosity of the node services.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Verbosity {
    /// `--v=2`, `info`.
    Normal,
    /// `--v=4`, `debug`, hybrid-overlay `--loglevel 5`.
    Debug,
}

/// Rotation of the kubelet and kube-proxy logs by `kube-log-runner` (wmco-anchor.md §8.7); `None` leaves the
/// runner's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, Hash)]
pub struct LogRotation {
    /// Rotate when the file reaches this many bytes (`-log-file-size`).
    pub max_size_bytes: Option<u64>,
    /// Delete rotated files older than this (`-log-file-age`).
    pub max_age: Option<Duration>,
    /// Flush the log this often (`-flush-interval`).
    pub flush_interval: Option<Duration>,
}

/// Everything the node's command lines depend on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInputs {
    /// IPv4 address of the host's default-route interface (kubelet `--node-ip`).
    pub node_ip: Ipv4Addr,
    /// The Node name the operator decided (kubelet `--hostname-override`, hybrid-overlay `--node`).
    pub node_name: String,
    /// The API server URL the node reaches (hybrid-overlay `--k8s-apiserver`), `https://...`.
    pub api_server_url: String,
    /// The cluster's platform.
    pub platform: Platform,
    /// Log verbosity.
    pub verbosity: Verbosity,
    /// kubelet / kube-proxy log rotation.
    pub log_rotation: LogRotation,
    /// Non-default VXLAN port of the hybrid overlay.
    pub hybrid_overlay_vxlan_port: Option<u16>,
    /// kubelet `--cloud-provider`, as found in the cluster's worker configuration.
    pub cloud_provider: Option<String>,
    /// kubelet `--cloud-config` file on the host.
    pub cloud_config: Option<WinPath>,
    /// The cluster-wide egress proxy.
    #[serde(default)]
    pub proxy: NodeProxy,
}

/// The node services that reach past the cluster and so get the proxy variables in their own environment:
/// containerd pulls images, the kubelet runs credential providers and talks to cloud APIs.
pub const PROXY_SERVICES: [&str; 2] = ["containerd", "kubelet"];

/// The variables the cluster-wide egress proxy is given to a host as (wmco-anchor.md §8.4).
pub const PROXY_VARIABLES: [&str; 3] = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"];

/// The cluster-wide egress proxy as a node sees it. Each value that is set becomes the variable of the same name
/// (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`): a machine variable (for sessions and processes started later) and a
/// variable of each of [`PROXY_SERVICES`]' own environment (effective at the service's next start, which the plan
/// brings about; machine variables would reach services only after a reboot, windows-commands.md §4.1). A value
/// that is not set removes its variable from both. `Debug` hides the user info of the URLs (a proxy URL may carry a
/// password).
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeProxy {
    /// Proxy of plain HTTP (`HTTP_PROXY`).
    pub http_proxy: Option<String>,
    /// Proxy of HTTPS (`HTTPS_PROXY`).
    pub https_proxy: Option<String>,
    /// Destinations reached directly, comma-separated (`NO_PROXY`).
    pub no_proxy: Option<String>,
}

impl fmt::Debug for NodeProxy {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redacted = |url: &Option<String>| url.as_deref().map(wmco_redact::redact);
        formatter
            .debug_struct("NodeProxy")
            .field("http_proxy", &redacted(&self.http_proxy))
            .field("https_proxy", &redacted(&self.https_proxy))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

impl NodeProxy {
    /// Every proxy variable with its value, `None` for one that is not set (or set to an empty value).
    ///
    /// ```
    /// use wmco_windows_services::NodeProxy;
    /// let proxy = NodeProxy { http_proxy: Some("http://proxy:3128".into()), ..NodeProxy::default() };
    /// let variables: Vec<(String, Option<String>)> =
    ///     proxy.variables().into_iter().map(|(name, value)| (name.to_string(), value)).collect();
    /// assert_eq!(variables[0], ("HTTPS_PROXY".to_owned(), None));
    /// assert_eq!(variables[1], ("HTTP_PROXY".to_owned(), Some("http://proxy:3128".to_owned())));
    /// ```
    pub fn variables(&self) -> BTreeMap<EnvVarName, Option<String>> {
        [&self.http_proxy, &self.https_proxy, &self.no_proxy]
            .into_iter()
            .zip(PROXY_VARIABLES)
            .filter_map(|(value, name)| {
                let name = EnvVarName::new(name).ok()?;
                Some((name, value.clone().filter(|value| !value.is_empty())))
            })
            .collect()
    }

    /// The variables that are set, as a service environment holds them.
    pub fn service_environment(&self) -> BTreeMap<EnvVarName, String> {
        self.variables().into_iter().filter_map(|(name, value)| Some((name, value?))).collect()
    }
}

/// The configuration stage a service belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ServiceStage {
    /// Before the Node exists: containerd and kubelet (the kubelet registers the Node).
    Bootstrap,
    /// After the Node registered: services that need its name, subnet annotation or TLS material.
    Node,
}

/// One node service with its Go-operator priority (lower starts first) and configuration stage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeService {
    /// The service.
    pub spec: ServiceSpec,
    /// Start priority of wmco-anchor.md §4.3 (0 first); dependencies are what `plan` orders by.
    pub priority: u8,
    /// Configuration stage (the field keeps its serialized name `phase`).
    pub phase: ServiceStage,
}

/// Why the node's service set cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeError {
    /// The node name is not a DNS-1123 subdomain.
    #[error("node name {name:?} must be a DNS-1123 subdomain (lower-case letters, digits, '-', '.', at most 253)")]
    NodeName {
        /// The name given.
        name: String,
    },
    /// The API server URL is not `https://` without whitespace or quotes.
    #[error("API server URL {url:?} must start with https:// and contain no whitespace, quotes or control characters")]
    ApiServerUrl {
        /// The URL given.
        url: String,
    },
    /// The cloud provider name holds characters outside `[A-Za-z0-9_-]`.
    #[error("cloud provider {name:?} must consist of letters, digits, '-' and '_'")]
    CloudProvider {
        /// The name given.
        name: String,
    },
    /// A proxy value holds a control character (a multi-string registry value cannot hold it intact).
    #[error("proxy variable {name} holds a control character; the cluster's proxy setting must be one line of text")]
    ProxyValue {
        /// The variable.
        name: String,
    },
    /// A fixed path failed validation (a defect of this crate).
    #[error("node path: {0}")]
    Path(#[from] PathError),
    /// A fixed service name failed validation (a defect of this crate).
    #[error("node service name: {0}")]
    ServiceName(#[from] ServiceNameError),
    /// A fixed firewall rule failed validation (a defect of this crate).
    #[error("node firewall rule: {0}")]
    Firewall(#[from] HostValueError),
}

/// The node's services, by priority then name.
///
/// ```
/// use std::net::Ipv4Addr;
/// use wmco_windows_services::{LogRotation, NodeInputs, ServiceStage, Platform, Verbosity, node_services};
/// let inputs = NodeInputs {
///     node_ip: Ipv4Addr::new(203, 0, 113, 7),
///     node_name: "winworker-1".into(),
///     api_server_url: "https://api-int.example.com:6443".into(),
///     platform: Platform::None,
///     verbosity: Verbosity::Normal,
///     log_rotation: LogRotation::default(),
///     hybrid_overlay_vxlan_port: None,
///     cloud_provider: None,
///     cloud_config: None,
///     proxy: Default::default(),
/// };
/// let services = node_services(&inputs)?;
/// let names: Vec<&str> = services.iter().map(|service| service.spec.name.as_str()).collect();
/// assert_eq!(names, ["containerd", "kubelet", "csi-proxy", "hybrid-overlay-node", "windows_exporter", "kube-proxy"]);
/// assert_eq!(services[1].phase, ServiceStage::Bootstrap);
/// # Ok::<(), wmco_windows_services::NodeError>(())
/// ```
///
/// # Errors
/// [`NodeError`] for an invalid node name, API server URL or cloud provider name.
pub fn node_services(inputs: &NodeInputs) -> Result<Vec<NodeService>, NodeError> {
    validate(inputs)?;
    let k = WinPath::parse(r"C:\k")?;
    let logs = WinPath::parse(r"C:\var\log")?;
    let mut services: Vec<NodeService> = vec![
        NodeService { spec: containerd(inputs, &k, &logs)?, priority: 0, phase: ServiceStage::Bootstrap },
        NodeService { spec: kubelet(inputs, &k, &logs)?, priority: 1, phase: ServiceStage::Bootstrap },
        NodeService { spec: windows_exporter(inputs, &k, &logs)?, priority: 2, phase: ServiceStage::Node },
        NodeService { spec: hybrid_overlay_node(inputs, &k, &logs)?, priority: 2, phase: ServiceStage::Node },
        NodeService { spec: csi_proxy(inputs, &k, &logs)?, priority: 2, phase: ServiceStage::Node },
        NodeService { spec: kube_proxy(inputs, &k, &logs)?, priority: 3, phase: ServiceStage::Node },
    ];
    if inputs.platform == Platform::Azure {
        services.push(NodeService { spec: cloud_node_manager(inputs, &k)?, priority: 3, phase: ServiceStage::Node });
    }
    let environment = inputs.proxy.service_environment();
    for service in &mut services {
        if PROXY_SERVICES.iter().any(|name| service.spec.name.as_str() == *name) {
            service.spec.environment = environment.clone();
        }
    }
    services.sort_by(|a, b| (a.priority, &a.spec.name).cmp(&(b.priority, &b.spec.name)));
    Ok(services)
}

/// The log directories of the node services, created with the node and removed with it.
pub const SERVICE_LOG_DIRECTORIES: [&str; 6] = [
    r"C:\var\log\containerd",
    r"C:\var\log\csi-proxy",
    r"C:\var\log\hybrid-overlay",
    r"C:\var\log\kube-proxy",
    r"C:\var\log\kubelet",
    r"C:\var\log\windows_exporter",
];

/// The directories only SYSTEM and Administrators may use (issue 36, point 7): `C:\k` (binaries the services run as
/// LocalSystem, the bootstrap kubeconfig, the kubelet's kubeconfig, registry credentials, TLS keys), the kubelet's
/// `--cert-dir` parent `C:\var\lib\kubelet` (its client and serving keys) and the services' log directories.
pub const PRIVATE_DIRECTORIES: [&str; 2] = [r"C:\k", r"C:\var\lib\kubelet"];

/// The desired host state for `phase`: the services of that phase and the earlier one, the node's directories (those
/// of [`PRIVATE_DIRECTORIES`] and [`SERVICE_LOG_DIRECTORIES`] private), the proxy's machine variables, its firewall rules, containerd's Defender exclusion, and the Go operator's daemon listed
/// for removal. Payload files are
/// added by the caller.
///
/// # Errors
/// As [`node_services`].
pub fn node_host_state(inputs: &NodeInputs, phase: ServiceStage) -> Result<HostState, NodeError> {
    let services =
        node_services(inputs)?.into_iter().filter(|service| service.phase <= phase).map(|s| s.spec).collect();
    let directories = [
        r"C:\Temp",
        r"C:\k",
        r"C:\k\cni",
        r"C:\k\cni\config",
        r"C:\k\containerd",
        r"C:\k\containerd\registries",
        r"C:\k\etc\kubernetes\manifests",
        r"C:\k\tls",
        r"C:\k\wmco\scripts",
        r"C:\var\lib\kubelet",
    ]
    .into_iter()
    .chain(SERVICE_LOG_DIRECTORIES)
    .map(WinPath::parse)
    .collect::<Result<_, _>>()?;
    let private_directories =
        PRIVATE_DIRECTORIES.into_iter().chain(SERVICE_LOG_DIRECTORIES).map(WinPath::parse).collect::<Result<_, _>>()?;
    let [logs_rule, exporter_rule] = FIREWALL_RULES;
    let mut firewall_rules = std::collections::BTreeSet::new();
    firewall_rules.insert(FirewallRule::new(logs_rule, Direction::Inbound, Protocol::Tcp, 10250)?);
    let mut rotated_files = std::collections::BTreeSet::new();
    if phase == ServiceStage::Node {
        firewall_rules.insert(FirewallRule::new(exporter_rule, Direction::Inbound, Protocol::Tcp, 9182)?);
        rotated_files.insert(hybrid_overlay_client_certificates()?);
    }
    Ok(HostState {
        services,
        removed_services: [ServiceName::new(LEGACY_DAEMON_SERVICE)?].into(),
        directories,
        private_directories,
        machine_env: inputs.proxy.variables(),
        firewall_rules,
        defender_exclusions: defender_excluded_programs()?,
        rotated_files,
        ..HostState::default()
    })
}

/// How many of hybrid-overlay's rotated client certificates stay (the Go operator's daemon keeps as many).
pub const KEPT_CLIENT_CERTIFICATES: usize = 2;

/// hybrid-overlay-node's rotated client certificates, `C:\k\cni\config\ovnkube-client-<timestamp>.pem`: all but the
/// newest [`KEPT_CLIENT_CERTIFICATES`] are removed at every configure pass of the node stage (wmco-anchor.md §6), so
/// months of rotations do not pile up.
///
/// ```
/// let certificates = wmco_windows_services::hybrid_overlay_client_certificates()?;
/// assert_eq!(certificates.filter(), "ovnkube-client-*.pem");
/// # Ok::<(), wmco_windows_services::PathError>(())
/// ```
///
/// # Errors
/// Never in practice: the directory is a fixed valid path.
pub fn hybrid_overlay_client_certificates() -> Result<RotatedFiles, PathError> {
    Ok(RotatedFiles::new(WinPath::parse(r"C:\k\cni\config")?, "ovnkube-client-", ".pem", KEPT_CLIENT_CERTIFICATES))
}

fn validate(inputs: &NodeInputs) -> Result<(), NodeError> {
    let name = &inputs.node_name;
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(NodeError::NodeName { name: name.clone() });
    }
    let url = &inputs.api_server_url;
    let url_ok = url.len() > "https://".len()
        && url.starts_with("https://")
        && !url.chars().any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\'');
    if !url_ok {
        return Err(NodeError::ApiServerUrl { url: url.clone() });
    }
    if let Some(provider) = &inputs.cloud_provider
        && (provider.is_empty() || !provider.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    {
        return Err(NodeError::CloudProvider { name: provider.clone() });
    }
    if let Some((name, _)) = inputs
        .proxy
        .variables()
        .into_iter()
        .find(|(_, value)| value.as_deref().is_some_and(|text| text.chars().any(char::is_control)))
    {
        return Err(NodeError::ProxyValue { name: name.to_string() });
    }
    Ok(())
}

/// A node service with the common settings.
fn service(
    name: &str,
    command: ServiceCommand,
    dependencies: &[&str],
    extra_binaries: Vec<WinPath>,
) -> Result<ServiceSpec, NodeError> {
    let delays = [10, 30, 60, 120].map(Millis::from_seconds);
    Ok(ServiceSpec {
        name: ServiceName::new(name)?,
        display_name: name.to_owned(),
        description: format!("OpenShift managed {name}"),
        command,
        start: StartType::Auto,
        dependencies: dependencies.iter().map(|dependency| ServiceName::new(dependency)).collect::<Result<_, _>>()?,
        recovery: FailureActions::restart_after(300, &delays),
        failure_flag: true,
        extra_binaries,
        environment: BTreeMap::new(),
    })
}

fn level(inputs: &NodeInputs) -> &'static str {
    match inputs.verbosity {
        Verbosity::Normal => "info",
        Verbosity::Debug => "debug",
    }
}

fn klog_verbosity(inputs: &NodeInputs) -> &'static str {
    match inputs.verbosity {
        Verbosity::Normal => "--v=2",
        Verbosity::Debug => "--v=4",
    }
}

/// A Go duration string: whole seconds as `Ns`, otherwise milliseconds as `Nms`.
/// `duration` as a Go duration string (`90s`, `1500ms`), as kube-log-runner and the kubelet's configuration read it.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(wmco_windows_services::go_duration(Duration::from_secs(90)), "90s");
/// assert_eq!(wmco_windows_services::go_duration(Duration::from_millis(1500)), "1500ms");
/// ```
pub fn go_duration(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

/// `-log-file=<log> [rotation flags] <program>`: the arguments of `kube-log-runner.exe` before the program's own.
fn log_runner(inputs: &NodeInputs, log: &WinPath, program: &WinPath) -> Vec<String> {
    let rotation = &inputs.log_rotation;
    let mut arguments = vec![format!("-log-file={log}")];
    if let Some(size) = rotation.max_size_bytes {
        arguments.push(format!("-log-file-size={size}"));
    }
    if let Some(age) = rotation.max_age {
        arguments.push(format!("-log-file-age={}", go_duration(age)));
    }
    if let Some(interval) = rotation.flush_interval {
        arguments.push(format!("-flush-interval={}", go_duration(interval)));
    }
    arguments.push(program.to_string());
    arguments
}

fn containerd(inputs: &NodeInputs, k: &WinPath, logs: &WinPath) -> Result<ServiceSpec, NodeError> {
    let directory = k.join("containerd")?;
    let command = ServiceCommand::new(
        directory.join("containerd.exe")?,
        [
            "--config".to_owned(),
            directory.join("containerd_conf.toml")?.to_string(),
            "--log-file".to_owned(),
            logs.join(r"containerd\containerd.log")?.to_string(),
            "--run-service".to_owned(),
            "--log-level".to_owned(),
            level(inputs).to_owned(),
        ],
    );
    service("containerd", command, &[], vec![directory.join("containerd-shim-runhcs-v1.exe")?])
}

fn kubelet(inputs: &NodeInputs, k: &WinPath, logs: &WinPath) -> Result<ServiceSpec, NodeError> {
    let kubelet_exe = k.join("kubelet.exe")?;
    let mut arguments = log_runner(inputs, &logs.join(r"kubelet\kubelet.log")?, &kubelet_exe);
    arguments.extend([
        format!("--config={}", k.join("kubelet.conf")?),
        format!("--bootstrap-kubeconfig={}", k.join("bootstrap-kubeconfig")?),
        format!("--kubeconfig={}", k.join("kubeconfig")?),
        format!("--cert-dir={}", WinPath::parse(r"C:\var\lib\kubelet\pki")?),
        "--windows-service".to_owned(),
        "--node-labels=node.openshift.io/os_id=Windows".to_owned(),
        "--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS".to_owned(),
        klog_verbosity(inputs).to_owned(),
    ]);
    if let Some(provider) = &inputs.cloud_provider {
        arguments.push(format!("--cloud-provider={provider}"));
    }
    if let Some(config) = &inputs.cloud_config {
        arguments.push(format!("--cloud-config={config}"));
    }
    arguments.push(format!("--hostname-override={}", inputs.node_name));
    arguments.push(format!("--node-ip={}", inputs.node_ip));
    if inputs.platform == Platform::Aws {
        arguments.push(format!("--image-credential-provider-bin-dir={k}"));
        arguments.push(format!("--image-credential-provider-config={}", k.join("credential-provider-config.yaml")?));
    }
    let command = ServiceCommand::new(k.join("kube-log-runner.exe")?, arguments);
    service("kubelet", command, &["containerd"], vec![kubelet_exe])
}

fn windows_exporter(inputs: &NodeInputs, k: &WinPath, logs: &WinPath) -> Result<ServiceSpec, NodeError> {
    let command = ServiceCommand::new(
        k.join("windows_exporter.exe")?,
        [
            "--collectors.enabled".to_owned(),
            "cpu,logical_disk,net,os,service,system,container,memory,cpu_info".to_owned(),
            "--web.config.file".to_owned(),
            k.join(r"tls\windows-exporter-webconfig.yaml")?.to_string(),
            "--log.level".to_owned(),
            level(inputs).to_owned(),
            "--log.file".to_owned(),
            logs.join(r"windows_exporter\windows_exporter.log")?.to_string(),
        ],
    );
    service(WINDOWS_EXPORTER_SERVICE, command, &[], vec![])
}

fn hybrid_overlay_node(inputs: &NodeInputs, k: &WinPath, logs: &WinPath) -> Result<ServiceSpec, NodeError> {
    let mut arguments = vec![
        "--node".to_owned(),
        inputs.node_name.clone(),
        format!("--bootstrap-kubeconfig={}", k.join("kubeconfig")?),
        format!("--cert-dir={}", k.join(r"cni\config")?),
        "--cert-duration=24h".to_owned(),
        "--windows-service".to_owned(),
        "--logfile".to_owned(),
        logs.join(r"hybrid-overlay\hybrid-overlay.log")?.to_string(),
        format!("--k8s-apiserver={}", inputs.api_server_url),
        "--k8s-cacert".to_owned(),
        k.join("bootstrap-ca.crt")?.to_string(),
    ];
    if let Some(port) = inputs.hybrid_overlay_vxlan_port {
        arguments.extend(["--hybrid-overlay-vxlan-port".to_owned(), port.to_string()]);
    }
    if inputs.verbosity == Verbosity::Debug {
        arguments.extend(["--loglevel".to_owned(), "5".to_owned()]);
    }
    service(
        "hybrid-overlay-node",
        ServiceCommand::new(k.join("hybrid-overlay-node.exe")?, arguments),
        &["kubelet"],
        vec![],
    )
}

fn csi_proxy(inputs: &NodeInputs, k: &WinPath, logs: &WinPath) -> Result<ServiceSpec, NodeError> {
    let command = ServiceCommand::new(
        k.join("csi-proxy.exe")?,
        [
            format!("-log_file={}", logs.join(r"csi-proxy\csi-proxy.log")?),
            "-logtostderr=false".to_owned(),
            "-windows-service".to_owned(),
            klog_verbosity(inputs).to_owned(),
        ],
    );
    service("csi-proxy", command, &[], vec![])
}

fn kube_proxy(inputs: &NodeInputs, k: &WinPath, logs: &WinPath) -> Result<ServiceSpec, NodeError> {
    let kube_proxy_exe = k.join("kube-proxy.exe")?;
    let mut arguments = log_runner(inputs, &logs.join(r"kube-proxy\kube-proxy.log")?, &kube_proxy_exe);
    arguments.extend(["--config".to_owned(), k.join("kube-proxy.conf")?.to_string(), "--windows-service".to_owned()]);
    let command = ServiceCommand::new(k.join("kube-log-runner.exe")?, arguments);
    service("kube-proxy", command, &["hybrid-overlay-node"], vec![kube_proxy_exe])
}

fn cloud_node_manager(inputs: &NodeInputs, k: &WinPath) -> Result<ServiceSpec, NodeError> {
    let command = ServiceCommand::new(
        k.join("azure-cloud-node-manager.exe")?,
        [
            "--windows-service".to_owned(),
            format!("--node-name={}", inputs.node_name),
            "--wait-routes=false".to_owned(),
            format!("--kubeconfig={}", WinPath::parse(CLOUD_NODE_MANAGER_KUBECONFIG)?),
        ],
    );
    service(CLOUD_NODE_MANAGER_SERVICE, command, &[], vec![])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Step, plan};
    use crate::probe::ObservedHost;
    use crate::sc::ScCommand;

    #[test]
    fn node_proxy_debug_hides_the_user_info_of_the_urls() {
        let proxy = NodeProxy {
            http_proxy: None,
            https_proxy: Some("http://wmco:pr0xy-s3cret@proxy.example:3129".into()),
            no_proxy: Some(".svc".into()),
        };
        assert_eq!(
            format!("{proxy:?}"),
            r#"NodeProxy { http_proxy: None, https_proxy: Some("http://[REDACTED]@proxy.example:3129"), no_proxy: Some(".svc") }"#
        );
    }

    fn inputs() -> NodeInputs {
        NodeInputs {
            node_ip: Ipv4Addr::new(203, 0, 113, 7),
            node_name: "winworker-1".into(),
            api_server_url: "https://api-int.example.com:6443".into(),
            platform: Platform::None,
            verbosity: Verbosity::Normal,
            log_rotation: LogRotation::default(),
            hybrid_overlay_vxlan_port: None,
            cloud_provider: None,
            cloud_config: None,
            proxy: Default::default(),
        }
    }

    fn image_paths(inputs: &NodeInputs) -> Vec<(String, String)> {
        node_services(inputs)
            .unwrap()
            .into_iter()
            .map(|service| (service.spec.name.to_string(), service.spec.command.image_path()))
            .collect()
    }

    #[test]
    fn default_command_lines_follow_the_go_operator() {
        let expected = [
            (
                "containerd",
                r"C:\k\containerd\containerd.exe --config C:\k\containerd\containerd_conf.toml --log-file C:\var\log\containerd\containerd.log --run-service --log-level info",
            ),
            (
                "kubelet",
                r"C:\k\kube-log-runner.exe -log-file=C:\var\log\kubelet\kubelet.log C:\k\kubelet.exe --config=C:\k\kubelet.conf --bootstrap-kubeconfig=C:\k\bootstrap-kubeconfig --kubeconfig=C:\k\kubeconfig --cert-dir=C:\var\lib\kubelet\pki --windows-service --node-labels=node.openshift.io/os_id=Windows --windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS --v=2 --hostname-override=winworker-1 --node-ip=203.0.113.7",
            ),
            (
                "csi-proxy",
                r"C:\k\csi-proxy.exe -log_file=C:\var\log\csi-proxy\csi-proxy.log -logtostderr=false -windows-service --v=2",
            ),
            (
                "hybrid-overlay-node",
                r"C:\k\hybrid-overlay-node.exe --node winworker-1 --bootstrap-kubeconfig=C:\k\kubeconfig --cert-dir=C:\k\cni\config --cert-duration=24h --windows-service --logfile C:\var\log\hybrid-overlay\hybrid-overlay.log --k8s-apiserver=https://api-int.example.com:6443 --k8s-cacert C:\k\bootstrap-ca.crt",
            ),
            (
                "windows_exporter",
                r"C:\k\windows_exporter.exe --collectors.enabled cpu,logical_disk,net,os,service,system,container,memory,cpu_info --web.config.file C:\k\tls\windows-exporter-webconfig.yaml --log.level info --log.file C:\var\log\windows_exporter\windows_exporter.log",
            ),
            (
                "kube-proxy",
                r"C:\k\kube-log-runner.exe -log-file=C:\var\log\kube-proxy\kube-proxy.log C:\k\kube-proxy.exe --config C:\k\kube-proxy.conf --windows-service",
            ),
        ];
        let expected: Vec<(String, String)> =
            expected.iter().map(|(n, p)| ((*n).to_owned(), (*p).to_owned())).collect();
        assert_eq!(image_paths(&inputs()), expected);
    }

    #[test]
    fn dependencies_priorities_phases_and_recovery() {
        let services = node_services(&inputs()).unwrap();
        let summary: Vec<(&str, Vec<&str>, u8, ServiceStage)> = services
            .iter()
            .map(|service| {
                let dependencies = service.spec.dependencies.iter().map(ServiceName::as_str).collect();
                (service.spec.name.as_str(), dependencies, service.priority, service.phase)
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("containerd", vec![], 0, ServiceStage::Bootstrap),
                ("kubelet", vec!["containerd"], 1, ServiceStage::Bootstrap),
                ("csi-proxy", vec![], 2, ServiceStage::Node),
                ("hybrid-overlay-node", vec!["kubelet"], 2, ServiceStage::Node),
                ("windows_exporter", vec![], 2, ServiceStage::Node),
                ("kube-proxy", vec!["hybrid-overlay-node"], 3, ServiceStage::Node),
            ]
        );
        let kubelet = &services[1].spec;
        assert_eq!(kubelet.description, "OpenShift managed kubelet");
        assert_eq!(kubelet.recovery.sc_actions_value(), "restart/10000/restart/30000/restart/60000/restart/120000");
        assert_eq!(kubelet.recovery.reset.sc_value(), "300");
        let binaries: Vec<String> = kubelet.binaries().map(ToString::to_string).collect();
        assert_eq!(binaries, [r"C:\k\kube-log-runner.exe", r"C:\k\kubelet.exe"]);
        let containerd_binaries: Vec<String> = services[0].spec.binaries().map(ToString::to_string).collect();
        assert_eq!(
            containerd_binaries,
            [r"C:\k\containerd\containerd.exe", r"C:\k\containerd\containerd-shim-runhcs-v1.exe"]
        );
    }

    #[test]
    fn debug_aws_rotation_cloud_and_vxlan_inputs_change_the_flags() {
        let inputs = NodeInputs {
            platform: Platform::Aws,
            verbosity: Verbosity::Debug,
            log_rotation: LogRotation {
                max_size_bytes: Some(104_857_600),
                max_age: Some(Duration::from_secs(86_400)),
                flush_interval: Some(Duration::from_millis(1500)),
            },
            hybrid_overlay_vxlan_port: Some(9898),
            cloud_provider: Some("external".into()),
            cloud_config: Some(WinPath::parse(r"C:\k\cloud.conf").unwrap()),
            proxy: Default::default(),
            ..inputs()
        };
        let paths: std::collections::BTreeMap<String, String> = image_paths(&inputs).into_iter().collect();
        assert_eq!(
            paths["kubelet"],
            r"C:\k\kube-log-runner.exe -log-file=C:\var\log\kubelet\kubelet.log -log-file-size=104857600 -log-file-age=86400s -flush-interval=1500ms C:\k\kubelet.exe --config=C:\k\kubelet.conf --bootstrap-kubeconfig=C:\k\bootstrap-kubeconfig --kubeconfig=C:\k\kubeconfig --cert-dir=C:\var\lib\kubelet\pki --windows-service --node-labels=node.openshift.io/os_id=Windows --windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS --v=4 --cloud-provider=external --cloud-config=C:\k\cloud.conf --hostname-override=winworker-1 --node-ip=203.0.113.7 --image-credential-provider-bin-dir=C:\k --image-credential-provider-config=C:\k\credential-provider-config.yaml"
        );
        assert!(
            paths["hybrid-overlay-node"]
                .ends_with(r"--k8s-cacert C:\k\bootstrap-ca.crt --hybrid-overlay-vxlan-port 9898 --loglevel 5")
        );
        assert!(paths["containerd"].ends_with("--log-level debug"));
        assert!(paths["windows_exporter"].contains("--log.level debug"));
        assert!(paths["csi-proxy"].ends_with("--v=4"));
        assert!(
            paths["kube-proxy"]
                .contains("-log-file-size=104857600 -log-file-age=86400s -flush-interval=1500ms C:\\k\\kube-proxy.exe")
        );
    }

    #[test]
    fn azure_adds_the_cloud_node_manager() {
        let paths: std::collections::BTreeMap<String, String> =
            image_paths(&NodeInputs { platform: Platform::Azure, ..inputs() }).into_iter().collect();
        assert_eq!(
            paths["cloud-node-manager"],
            r"C:\k\azure-cloud-node-manager.exe --windows-service --node-name=winworker-1 --wait-routes=false --kubeconfig=C:\k\cloud-node-manager-kubeconfig"
        );
        assert_eq!(paths.len(), 7);
    }

    #[test]
    fn the_cloud_node_manager_never_runs_with_the_kubelets_kubeconfig() {
        // NodeRestriction forbids the node identity to remove the uninitialized taint from its own Node.
        let services = node_services(&NodeInputs { platform: Platform::Azure, ..inputs() }).unwrap();
        let manager = services.iter().find(|service| service.spec.name.as_str() == CLOUD_NODE_MANAGER_SERVICE).unwrap();
        let kubeconfigs: Vec<&str> = manager
            .spec
            .command
            .arguments
            .iter()
            .filter_map(|argument| argument.strip_prefix("--kubeconfig="))
            .collect();
        assert_eq!(kubeconfigs, [CLOUD_NODE_MANAGER_KUBECONFIG]);
        assert_ne!(kubeconfigs[0].to_ascii_lowercase(), r"c:\k\kubeconfig");
    }

    #[test]
    fn phases_split_the_host_state() {
        let bootstrap = node_host_state(&inputs(), ServiceStage::Bootstrap).unwrap();
        let names: Vec<&str> = bootstrap.services.iter().map(|spec| spec.name.as_str()).collect();
        assert_eq!(names, ["containerd", "kubelet"]);
        assert_eq!(bootstrap.firewall_rules.len(), 1);
        assert_eq!(bootstrap.directories.len(), 16);
        assert_eq!(bootstrap.private_directories.len(), 8);
        assert!(bootstrap.private_directories.iter().all(|directory| bootstrap.directories.contains(directory)));
        assert!(!bootstrap.private_directories.contains(&WinPath::parse(r"C:\Temp").unwrap()), "the admin's");
        assert!(bootstrap.directories.contains(&WinPath::parse(r"C:\k\wmco\scripts").unwrap()));
        assert_eq!(
            bootstrap.removed_services.iter().map(ServiceName::as_str).collect::<Vec<_>>(),
            ["windows-instance-config-daemon"]
        );
        let node = node_host_state(&inputs(), ServiceStage::Node).unwrap();
        assert_eq!(node.services.len(), 6);
        let rules: Vec<(&str, u16)> =
            node.firewall_rules.iter().map(|rule| (rule.name.as_str(), rule.local_port)).collect();
        assert_eq!(rules, [("ContainerLogsPort", 10250), ("WindowsExporter", 9182)]);
    }

    #[test]
    fn the_node_state_plans_and_renders_on_an_empty_host() {
        let desired = node_host_state(&inputs(), ServiceStage::Node).unwrap();
        let steps = plan(&desired, &ObservedHost::default()).unwrap();
        let starts: Vec<String> = steps
            .iter()
            .filter_map(|step| match step {
                Step::StartService(name) => Some(name.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(
            starts,
            ["containerd", "csi-proxy", "kubelet", "hybrid-overlay-node", "kube-proxy", "windows_exporter"]
        );
        for step in &steps {
            assert!(step.commands().is_ok(), "{step}");
        }
        let kubelet = desired.services.iter().find(|spec| spec.name.as_str() == "kubelet").unwrap();
        let create = ScCommand::Create(Box::new(kubelet.clone())).render().unwrap();
        assert!(create.line.starts_with(r#"sc.exe create kubelet binPath= "C:\k\kube-log-runner.exe -log-file="#));
        assert!(create.line.ends_with(r#"--node-ip=203.0.113.7" start= auto depend= containerd DisplayName= kubelet"#));
    }

    #[test]
    fn the_proxy_reaches_machine_variables_and_the_outward_services_only() {
        let without = node_host_state(&inputs(), ServiceStage::Node).unwrap();
        let removed: Vec<(String, Option<String>)> =
            without.machine_env.iter().map(|(name, value)| (name.to_string(), value.clone())).collect();
        assert_eq!(
            removed,
            [("HTTPS_PROXY".to_owned(), None), ("HTTP_PROXY".to_owned(), None), ("NO_PROXY".to_owned(), None)]
        );
        assert!(without.services.iter().all(|spec| spec.environment.is_empty()));
        let proxy = NodeProxy {
            http_proxy: Some("http://proxy.example:3128".into()),
            https_proxy: Some(String::new()),
            no_proxy: Some(".cluster.local,172.30.0.0/16".into()),
        };
        let with = node_host_state(&NodeInputs { proxy, ..inputs() }, ServiceStage::Node).unwrap();
        assert_eq!(
            with.machine_env[&EnvVarName::new("HTTP_PROXY").unwrap()].as_deref(),
            Some("http://proxy.example:3128")
        );
        assert_eq!(with.machine_env[&EnvVarName::new("HTTPS_PROXY").unwrap()], None, "an empty value removes it");
        for spec in &with.services {
            let entries = spec.environment_entries();
            if PROXY_SERVICES.contains(&spec.name.as_str()) {
                assert_eq!(
                    entries,
                    ["HTTP_PROXY=http://proxy.example:3128", "NO_PROXY=.cluster.local,172.30.0.0/16"],
                    "{}",
                    spec.name
                );
            } else {
                assert!(entries.is_empty(), "{}", spec.name);
            }
        }
        let broken = NodeProxy { no_proxy: Some("a\nb".into()), ..NodeProxy::default() };
        assert_eq!(
            node_services(&NodeInputs { proxy: broken, ..inputs() }),
            Err(NodeError::ProxyValue { name: "NO_PROXY".into() })
        );
    }

    #[test]
    fn invalid_inputs_are_refused() {
        for name in ["", "WinWorker", "a_b", "-a", "a-", "a..b", &"a".repeat(64)] {
            assert_eq!(
                node_services(&NodeInputs { node_name: name.to_owned(), ..inputs() }),
                Err(NodeError::NodeName { name: name.to_owned() }),
                "{name}"
            );
        }
        assert!(node_services(&NodeInputs { node_name: "a.b-c.d1".into(), ..inputs() }).is_ok());
        for url in ["http://x", "https://", "https://a b", "https://a\"b"] {
            assert_eq!(
                node_services(&NodeInputs { api_server_url: url.to_owned(), ..inputs() }),
                Err(NodeError::ApiServerUrl { url: url.to_owned() }),
                "{url}"
            );
        }
        assert_eq!(
            node_services(&NodeInputs { cloud_provider: Some("a b".into()), ..inputs() }),
            Err(NodeError::CloudProvider { name: "a b".into() })
        );
    }
}
