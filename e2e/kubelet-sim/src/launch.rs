//! What the kubelet checks before it runs: its command line (optionally behind `kube-log-runner`), the
//! configuration file, the kubeconfigs and the certificate directory, all on the simulated drive. The result is a
//! [`Prepared`] kubelet, or a [`LaunchRefused`] whose text is what a real kubelet would log before exiting.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use crate::config::KubeletConfig;
use crate::disk::{Drive, windows_join};
use crate::kubeconfig::{self, Connection};
use crate::network::NetworkProbe;
use crate::taint::{self, Taint};

/// The Windows build a simulated host reports unless told otherwise (Windows Server 2022).
pub const DEFAULT_WINDOWS_BUILD: &str = "10.0.20348";

/// How the simulated host starts its `kubelet` service.
///
/// `args` are the service's binPath arguments after the executable, already split into argv. Two forms are
/// accepted:
/// - the kubelet's own flags (binPath's executable is `kubelet.exe`);
/// - `kube-log-runner.exe`'s flags (single dash: `-log-file=…`, `-log-file-size=…`, `-log-file-age=…`,
///   `-flush-interval=…`, `-also-stdout`, `-redirect-stderr`), then the path of `kubelet.exe`, then the kubelet's
///   flags (binPath's executable is `kube-log-runner.exe`, as the operator installs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletLaunch {
    /// binPath arguments after the executable, argv-split.
    pub args: Vec<String>,
    /// The host's `<root>/C` directory: Windows `C:\x\y` is `<c_drive_root>/x/y`.
    pub c_drive_root: PathBuf,
    /// The host's name as Windows reports it (`hostname`); lower-cased it is the Node name unless
    /// `--hostname-override` is given.
    pub hostname: String,
    /// `<major>.<minor>.<build>` for label `node.kubernetes.io/windows-build` and the Node's OS image.
    pub windows_build: String,
    /// The version the Node reports in `status.nodeInfo.kubeletVersion` (`v1.33.0` unless set).
    pub kubelet_version: String,
    /// The host's boot ID (`status.nodeInfo.bootID`): the same for every kubelet start within one boot, new after
    /// a reboot. [`KubeletLaunch::new`] makes a random one; a simulated host sets its own per boot.
    pub boot_id: String,
    /// The container runtime's CNI configuration directory (a Windows path, containerd's `conf_dir`, e.g.
    /// `C:\k\cni\config`). When set, the runtime network — hence the Node's Ready condition and every pod that is
    /// not on the host network — is ready only once a `*.conf`, `*.conflist` or `*.json` file exists there, as on
    /// a real Windows node. `None` (the default) treats the network as always ready.
    pub cni_config_dir: Option<String>,
}

impl KubeletLaunch {
    /// A launch on a host with the default Windows build ([`DEFAULT_WINDOWS_BUILD`]) and kubelet version
    /// ([`DEFAULT_KUBELET_VERSION`](crate::DEFAULT_KUBELET_VERSION)).
    ///
    /// ```
    /// let launch = wmco_kubelet_sim::KubeletLaunch::new(
    ///     vec!["--config=C:\\k\\kubelet.conf".into()],
    ///     "/hosts/win-a/C",
    ///     "WIN-A",
    /// );
    /// assert_eq!(launch.windows_build, "10.0.20348");
    /// ```
    pub fn new(args: Vec<String>, c_drive_root: impl Into<PathBuf>, hostname: impl Into<String>) -> Self {
        Self {
            args,
            c_drive_root: c_drive_root.into(),
            hostname: hostname.into(),
            windows_build: DEFAULT_WINDOWS_BUILD.to_owned(),
            kubelet_version: crate::node::DEFAULT_KUBELET_VERSION.to_owned(),
            cni_config_dir: None,
            boot_id: random_uuid(),
        }
    }

    /// The `-log-file` of a leading `kube-log-runner` part (a Windows path), where the service's output goes.
    ///
    /// ```
    /// let launch = wmco_kubelet_sim::KubeletLaunch::new(
    ///     vec![r"-log-file=C:\var\log\kubelet\kubelet.log".into(), r"C:\k\kubelet.exe".into()],
    ///     "/hosts/win-a/C",
    ///     "WIN-A",
    /// );
    /// assert_eq!(launch.log_file(), Some(r"C:\var\log\kubelet\kubelet.log"));
    /// ```
    pub fn log_file(&self) -> Option<&str> {
        self.args
            .iter()
            .take_while(|arg| arg.starts_with('-') && !arg.starts_with("--"))
            .find_map(|arg| arg.strip_prefix("-log-file="))
    }
}

/// A random version-4 UUID in its lower-case text form (a boot ID, for example).
///
/// ```
/// let boot_id = wmco_kubelet_sim::random_uuid();
/// assert_eq!(boot_id.len(), 36);
/// assert_eq!(&boot_id[14..15], "4");
/// ```
pub fn random_uuid() -> String {
    let bytes: [u8; 16] = rand::random();
    let hex: String = bytes
        .iter()
        .enumerate()
        .map(|(index, byte)| match index {
            6 => format!("{:02x}", (byte & 0x0f) | 0x40),
            8 => format!("{:02x}", (byte & 0x3f) | 0x80),
            _ => format!("{byte:02x}"),
        })
        .collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// Why the kubelet refuses to start; the text is what it would log before exiting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchRefused {
    /// `kube-log-runner`'s arguments name no program, or a flag it does not know.
    #[error("kube-log-runner: {reason}")]
    LogRunner {
        /// What is wrong.
        reason: String,
    },
    /// A flag the kubelet does not know, or a value flag without a value.
    #[error("failed to parse kubelet flag: {reason}")]
    Flag {
        /// What is wrong.
        reason: String,
    },
    /// A flag's value is invalid.
    #[error("failed to validate kubelet flags: invalid {flag} {value:?}: {reason}")]
    FlagValue {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// The `--config` file is missing or invalid.
    #[error("failed to load kubelet config file, path: {path}, error: {reason}")]
    ConfigFile {
        /// The Windows path given.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// `--kubeconfig` is not given: a standalone kubelet is not simulated.
    #[error("no --kubeconfig given: standalone kubelets (no API server) are not simulated")]
    NoKubeconfig,
    /// Neither a usable `--kubeconfig` nor a usable `--bootstrap-kubeconfig`.
    #[error("failed to run Kubelet: unable to load bootstrap kubeconfig: {reason}")]
    BootstrapKubeconfig {
        /// What is wrong, naming the file.
        reason: String,
    },
    /// The `--kubeconfig` is unusable and no bootstrap kubeconfig is given.
    #[error("failed to run Kubelet: invalid kubeconfig: {reason}")]
    Kubeconfig {
        /// What is wrong, naming the file.
        reason: String,
    },
    /// The client CA file of the configuration cannot be read.
    #[error("failed to run Kubelet: unable to load client CA file {path}: {reason}")]
    ClientCaFile {
        /// The Windows path.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A path flag names no place on the simulated `C:` drive.
    #[error("failed to run Kubelet: {flag} {path:?}: {reason}")]
    Path {
        /// The flag.
        flag: &'static str,
        /// The value given.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The Node name is not a valid DNS-1123 subdomain.
    #[error("failed to run Kubelet: node name {name:?} is not a valid DNS-1123 subdomain")]
    NodeName {
        /// The name.
        name: String,
    },
}

/// Value flags the kubelet accepts here (the operator's set, wmco-anchor.md §4.3, plus a few common ones).
const VALUE_FLAGS: &[&str] = &[
    "config",
    "bootstrap-kubeconfig",
    "kubeconfig",
    "cert-dir",
    "root-dir",
    "node-labels",
    "node-ip",
    "hostname-override",
    "register-with-taints",
    "windows-priorityclass",
    "v",
    "cloud-provider",
    "cloud-config",
    "image-credential-provider-bin-dir",
    "image-credential-provider-config",
    "container-runtime-endpoint",
    "resolv-conf",
];
/// Boolean flags the kubelet accepts here.
const BOOL_FLAGS: &[&str] = &["windows-service", "rotate-certificates", "register-node"];
/// `kube-log-runner`'s own flags (`-name=value` or `-name`).
const LOG_RUNNER_FLAGS: &[&str] =
    &["log-file", "log-file-size", "log-file-age", "flush-interval", "also-stdout", "redirect-stderr"];

/// The kubelet's flags, parsed.
#[derive(Debug, Default)]
struct Flags {
    values: BTreeMap<&'static str, String>,
    booleans: BTreeMap<&'static str, bool>,
}

/// Strips a leading `kube-log-runner` part (its flags and the program path) if present.
fn kubelet_args(args: &[String]) -> Result<&[String], LaunchRefused> {
    let Some(first) = args.first() else { return Ok(args) };
    if first.starts_with("--") {
        return Ok(args);
    }
    for (index, arg) in args.iter().enumerate() {
        if let Some(flag) = arg.strip_prefix('-') {
            let name = flag.split_once('=').map_or(flag, |(name, _)| name);
            if !LOG_RUNNER_FLAGS.contains(&name) {
                return Err(LaunchRefused::LogRunner { reason: format!("flag provided but not defined: -{name}") });
            }
            continue;
        }
        let file_name = arg.rsplit(['\\', '/']).next().unwrap_or(arg);
        if !file_name.eq_ignore_ascii_case("kubelet.exe") && !file_name.eq_ignore_ascii_case("kubelet") {
            return Err(LaunchRefused::LogRunner { reason: format!("runs {arg:?}, which is not the kubelet") });
        }
        return Ok(&args[index + 1..]);
    }
    Err(LaunchRefused::LogRunner { reason: "no program to run was given".to_owned() })
}

fn parse_flags(args: &[String]) -> Result<Flags, LaunchRefused> {
    let mut flags = Flags::default();
    let mut remaining = args.iter();
    while let Some(arg) = remaining.next() {
        let body = arg
            .strip_prefix("--")
            .ok_or_else(|| LaunchRefused::Flag { reason: format!("unexpected argument {arg:?}") })?;
        let (name, inline_value) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (body, None),
        };
        if let Some(known) = VALUE_FLAGS.iter().find(|known| **known == name) {
            let value = match inline_value {
                Some(value) => value.to_owned(),
                None => remaining
                    .next()
                    .cloned()
                    .ok_or_else(|| LaunchRefused::Flag { reason: format!("flag needs an argument: --{name}") })?,
            };
            flags.values.insert(known, value);
        } else if let Some(known) = BOOL_FLAGS.iter().find(|known| **known == name) {
            let value = match inline_value {
                None | Some("true") => true,
                Some("false") => false,
                Some(other) => {
                    return Err(LaunchRefused::Flag {
                        reason: format!("invalid argument {other:?} for \"--{name}\" flag: parse error"),
                    });
                }
            };
            flags.booleans.insert(known, value);
        } else {
            return Err(LaunchRefused::Flag { reason: format!("unknown flag: --{name}") });
        }
    }
    Ok(flags)
}

/// The kubelet's credentials at start.
#[derive(Debug, Clone)]
pub(crate) enum Credentials {
    /// `--kubeconfig` is usable as it is.
    Kubeconfig(Connection),
    /// `--kubeconfig` is not usable: bootstrap with this one.
    Bootstrap(Connection),
}

/// A kubelet that passed its start-up checks.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub drive: Drive,
    pub config: KubeletConfig,
    pub node_name: String,
    pub node_ips: Vec<IpAddr>,
    pub node_labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// `--kubeconfig`, a Windows path.
    pub kubeconfig_path: String,
    /// What the kubelet authenticates with at first.
    pub credentials: Credentials,
    /// `--cert-dir`, a Windows path.
    pub cert_dir: String,
    /// `--cert-dir` on disk.
    pub cert_dir_on_disk: PathBuf,
    pub windows_build: String,
    pub network: NetworkProbe,
}

impl Prepared {
    /// The Windows path of `<cert-dir>\<file_name>`.
    pub fn cert_file(&self, file_name: &str) -> String {
        windows_join(&self.cert_dir, file_name)
    }
}

/// Runs the kubelet's start-up checks.
pub(crate) fn prepare(launch: &KubeletLaunch) -> Result<Prepared, LaunchRefused> {
    let flags = parse_flags(kubelet_args(&launch.args)?)?;
    let drive = Drive::new(&launch.c_drive_root);
    let config = load_config(&drive, flags.values.get("config"))?;
    let node_name = node_name(&launch.hostname, flags.values.get("hostname-override"))?;
    let node_ips = node_ips(flags.values.get("node-ip"))?;
    let node_labels = match flags.values.get("node-labels") {
        Some(text) => taint::parse_node_labels(text).map_err(|reason| LaunchRefused::FlagValue {
            flag: "--node-labels",
            value: text.clone(),
            reason,
        })?,
        None => BTreeMap::new(),
    };
    let mut taints = config.register_with_taints.clone();
    if let Some(text) = flags.values.get("register-with-taints") {
        taints = taint::parse_taints(text).map_err(|reason| LaunchRefused::FlagValue {
            flag: "--register-with-taints",
            value: text.clone(),
            reason,
        })?;
    }
    let mut config = config;
    if let Some(rotate) = flags.booleans.get("rotate-certificates") {
        config.rotate_certificates = *rotate;
    }
    if let Some(register) = flags.booleans.get("register-node") {
        config.register_node = *register;
    }
    if let Some(path) = &config.client_ca_file {
        let file = drive
            .resolve(path)
            .map_err(|problem| LaunchRefused::ClientCaFile { path: path.clone(), reason: problem.to_string() })?;
        std::fs::read(&file)
            .map_err(|error| LaunchRefused::ClientCaFile { path: path.clone(), reason: error.to_string() })?;
    }
    let cert_dir = flags.values.get("cert-dir").cloned().unwrap_or_else(|| {
        let root_dir = flags.values.get("root-dir").map_or(r"C:\var\lib\kubelet", String::as_str);
        windows_join(root_dir, "pki")
    });
    let cert_dir_on_disk = drive.resolve(&cert_dir).map_err(|problem| LaunchRefused::Path {
        flag: "--cert-dir",
        path: cert_dir.clone(),
        reason: problem.to_string(),
    })?;
    let cni_config_dir = match &launch.cni_config_dir {
        Some(path) => Some(drive.resolve(path).map_err(|problem| LaunchRefused::Path {
            flag: "containerd conf_dir",
            path: path.clone(),
            reason: problem.to_string(),
        })?),
        None => None,
    };
    let kubeconfig_path = flags.values.get("kubeconfig").cloned().ok_or(LaunchRefused::NoKubeconfig)?;
    let credentials = credentials(&drive, &kubeconfig_path, flags.values.get("bootstrap-kubeconfig"))?;
    Ok(Prepared {
        drive,
        config,
        node_name,
        node_ips,
        node_labels,
        taints,
        kubeconfig_path,
        credentials,
        cert_dir,
        cert_dir_on_disk,
        windows_build: launch.windows_build.clone(),
        network: NetworkProbe { cni_config_dir },
    })
}

fn load_config(drive: &Drive, path: Option<&String>) -> Result<KubeletConfig, LaunchRefused> {
    let Some(path) = path else {
        return KubeletConfig::parse("kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n")
            .map_err(|problem| LaunchRefused::ConfigFile { path: String::new(), reason: problem.to_string() });
    };
    let refused = |reason: String| LaunchRefused::ConfigFile { path: path.clone(), reason };
    let file = drive.resolve(path).map_err(|problem| refused(problem.to_string()))?;
    let text = std::fs::read_to_string(&file).map_err(|error| refused(format!("open {path}: {error}")))?;
    KubeletConfig::parse(&text).map_err(|problem| refused(problem.to_string()))
}

/// The Node name: `--hostname-override` or the host name, lower-cased (no cloud provider).
fn node_name(hostname: &str, hostname_override: Option<&String>) -> Result<String, LaunchRefused> {
    let name = hostname_override.map_or(hostname, String::as_str).trim().to_lowercase();
    let valid_label = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(valid_label) {
        return Err(LaunchRefused::NodeName { name });
    }
    Ok(name)
}

/// `--node-ip`: one address, or a dual-stack pair separated by a comma.
fn node_ips(value: Option<&String>) -> Result<Vec<IpAddr>, LaunchRefused> {
    let Some(text) = value else { return Ok(Vec::new()) };
    let refused =
        |reason: &str| LaunchRefused::FlagValue { flag: "--node-ip", value: text.clone(), reason: reason.to_owned() };
    let ips = text
        .split(',')
        .map(|part| part.trim().parse::<IpAddr>().map_err(|_| refused("not an IP address")))
        .collect::<Result<Vec<_>, _>>()?;
    match ips.as_slice() {
        [_] => Ok(ips),
        [a, b] if a.is_ipv4() != b.is_ipv4() => Ok(ips),
        _ => Err(refused("must be one address or an IPv4/IPv6 pair")),
    }
}

/// The kubeconfig if it is still valid; otherwise the bootstrap kubeconfig, which must then be usable.
fn credentials(
    drive: &Drive,
    kubeconfig_path: &str,
    bootstrap_path: Option<&String>,
) -> Result<Credentials, LaunchRefused> {
    drive.resolve(kubeconfig_path).map_err(|problem| LaunchRefused::Path {
        flag: "--kubeconfig",
        path: kubeconfig_path.to_owned(),
        reason: problem.to_string(),
    })?;
    let current =
        kubeconfig::load(drive, kubeconfig_path).and_then(|connection| connection.still_valid().map(|()| connection));
    match (current, bootstrap_path) {
        (Ok(connection), _) => Ok(Credentials::Kubeconfig(connection)),
        (Err(_), Some(path)) => {
            let bootstrap =
                kubeconfig::load(drive, path).map_err(|reason| LaunchRefused::BootstrapKubeconfig { reason })?;
            bootstrap.still_valid().map_err(|reason| LaunchRefused::BootstrapKubeconfig { reason })?;
            Ok(Credentials::Bootstrap(bootstrap))
        }
        (Err(reason), None) => Err(LaunchRefused::Kubeconfig { reason }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    #[test]
    fn a_log_runner_prefix_is_skipped_up_to_the_kubelet_path() {
        let args =
            strings(&[r"-log-file=C:\var\log\kubelet\kubelet.log", "-log-file-size=1", r"C:\k\kubelet.exe", "--v=2"]);
        assert_eq!(kubelet_args(&args).unwrap(), strings(&["--v=2"]).as_slice());
        let direct = strings(&["--v=2"]);
        assert_eq!(kubelet_args(&direct).unwrap(), direct.as_slice());
        assert_eq!(
            kubelet_args(&strings(&["-log-file=x", r"C:\k\kube-proxy.exe"])).unwrap_err().to_string(),
            r#"kube-log-runner: runs "C:\\k\\kube-proxy.exe", which is not the kubelet"#
        );
        assert_eq!(
            kubelet_args(&strings(&["-bogus", r"C:\k\kubelet.exe"])).unwrap_err().to_string(),
            "kube-log-runner: flag provided but not defined: -bogus"
        );
    }

    #[test]
    fn flags_take_inline_or_separate_values_and_unknown_flags_are_refused() {
        let flags = parse_flags(&strings(&["--config", r"C:\k\c", "--v=2", "--windows-service"])).unwrap();
        assert_eq!(flags.values["config"], r"C:\k\c");
        assert_eq!(flags.values["v"], "2");
        assert!(flags.booleans["windows-service"]);
        assert_eq!(
            parse_flags(&strings(&["--make-it-work"])).unwrap_err().to_string(),
            "failed to parse kubelet flag: unknown flag: --make-it-work"
        );
        assert_eq!(
            parse_flags(&strings(&["--config"])).unwrap_err().to_string(),
            "failed to parse kubelet flag: flag needs an argument: --config"
        );
    }

    #[test]
    fn random_uuids_are_version_4() {
        let uuid = random_uuid();
        assert_eq!(uuid.len(), 36);
        assert_eq!(uuid.as_bytes()[14], b'4');
        assert!(matches!(uuid.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{uuid}");
        assert_ne!(uuid, random_uuid());
    }

    #[test]
    fn node_names_and_ips_are_checked() {
        assert_eq!(node_name("WIN-A", None).unwrap(), "win-a");
        assert_eq!(node_name("WIN-A", Some(&"Worker-1".to_owned())).unwrap(), "worker-1");
        assert_eq!(node_name("bad_name", None).unwrap_err(), LaunchRefused::NodeName { name: "bad_name".into() });
        assert_eq!(node_ips(Some(&"203.0.113.7".to_owned())).unwrap(), ["203.0.113.7".parse::<IpAddr>().unwrap()]);
        assert_eq!(
            node_ips(Some(&"203.0.113.x".to_owned())).unwrap_err().to_string(),
            r#"failed to validate kubelet flags: invalid --node-ip "203.0.113.x": not an IP address"#
        );
        assert!(node_ips(Some(&"10.0.0.1,10.0.0.2".to_owned())).is_err());
    }

    const CONFIG: &str = r#"{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1",
        "rotateCertificates":true,"authentication":{"x509":{"clientCAFile":"C:\\k\\kubelet-ca.crt"}}}"#;
    const BOOTSTRAP: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://api:6443\n    \
        certificate-authority: C:\\k\\bootstrap-ca.crt\nusers:\n- name: u\n  user:\n    token: t\n\
        contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n";

    /// A host with the kubelet's files; `skip` leaves one out, `replace` overrides one's contents.
    fn host(skip: Option<&str>, replace: Option<(&str, &str)>) -> (tempfile::TempDir, KubeletLaunch) {
        let root = tempfile::tempdir().unwrap();
        let files = [
            ("k/kubelet.conf", CONFIG),
            ("k/kubelet-ca.crt", "CA"),
            ("k/bootstrap-ca.crt", "CA"),
            ("k/bootstrap-kubeconfig", BOOTSTRAP),
        ];
        for (path, contents) in files {
            if skip == Some(path) {
                continue;
            }
            let contents = replace.filter(|(target, _)| *target == path).map_or(contents, |(_, text)| text);
            std::fs::create_dir_all(root.path().join("k")).unwrap();
            std::fs::write(root.path().join(path), contents).unwrap();
        }
        let args = strings(&[
            r"-log-file=C:\var\log\kubelet\kubelet.log",
            r"C:\k\kubelet.exe",
            r"--config=C:\k\kubelet.conf",
            r"--bootstrap-kubeconfig=C:\k\bootstrap-kubeconfig",
            r"--kubeconfig=C:\k\kubeconfig",
            r"--cert-dir=c:\var\lib\kubelet\pki\",
            "--node-labels=node.openshift.io/os_id=Windows",
            "--node-ip=203.0.113.7",
        ]);
        let launch = KubeletLaunch::new(args, root.path(), "WIN-A");
        (root, launch)
    }

    #[test]
    fn a_complete_host_bootstraps_with_the_bootstrap_kubeconfig() {
        let (root, launch) = host(None, None);
        let prepared = prepare(&launch).unwrap();
        assert_eq!(prepared.node_name, "win-a");
        assert!(prepared.config.rotate_certificates);
        assert!(matches!(prepared.credentials, Credentials::Bootstrap(_)));
        assert_eq!(
            prepared.cert_file("kubelet-client-current.pem"),
            r"c:\var\lib\kubelet\pki\kubelet-client-current.pem"
        );
        assert_eq!(prepared.cert_dir_on_disk, root.path().join("var/lib/kubelet/pki"));
        assert_eq!(prepared.node_labels["node.openshift.io/os_id"], "Windows");
    }

    #[test]
    fn a_missing_config_file_is_refused_naming_it() {
        let (_root, launch) = host(Some("k/kubelet.conf"), None);
        let refused = prepare(&launch).unwrap_err();
        let LaunchRefused::ConfigFile { path, reason } = &refused else { panic!("{refused:?}") };
        assert_eq!(path, r"C:\k\kubelet.conf");
        assert!(reason.starts_with(r"open C:\k\kubelet.conf: "), "{reason}");
        assert!(
            refused.to_string().starts_with(r"failed to load kubelet config file, path: C:\k\kubelet.conf, error: ")
        );
    }

    #[test]
    fn an_invalid_bootstrap_kubeconfig_is_refused() {
        let (_root, launch) = host(None, Some(("k/bootstrap-kubeconfig", "apiVersion: v1\nkind: Config\n")));
        assert_eq!(
            prepare(&launch).unwrap_err().to_string(),
            r"failed to run Kubelet: unable to load bootstrap kubeconfig: C:\k\bootstrap-kubeconfig: no current-context"
        );
        let (_root, launch) = host(Some("k/bootstrap-ca.crt"), None);
        let refused = prepare(&launch).unwrap_err().to_string();
        assert!(refused.contains(r"certificate-authority: open C:\k\bootstrap-ca.crt"), "{refused}");
    }

    #[test]
    fn without_any_kubeconfig_the_kubelet_refuses() {
        let (_root, mut launch) = host(Some("k/bootstrap-kubeconfig"), None);
        let refused = prepare(&launch).unwrap_err();
        assert!(
            matches!(&refused, LaunchRefused::BootstrapKubeconfig { reason } if reason.starts_with(r"open C:\k\bootstrap-kubeconfig"))
        );
        launch.args.retain(|arg| !arg.starts_with("--bootstrap-kubeconfig"));
        assert!(matches!(prepare(&launch).unwrap_err(), LaunchRefused::Kubeconfig { .. }));
        launch.args.retain(|arg| !arg.starts_with("--kubeconfig"));
        assert_eq!(prepare(&launch).unwrap_err(), LaunchRefused::NoKubeconfig);
    }

    #[test]
    fn a_missing_client_ca_and_forbidden_labels_are_refused() {
        let (_root, launch) = host(Some("k/kubelet-ca.crt"), None);
        assert!(
            matches!(prepare(&launch).unwrap_err(), LaunchRefused::ClientCaFile { path, .. } if path == r"C:\k\kubelet-ca.crt")
        );
        let (_root, mut launch) = host(None, None);
        launch.args.push("--node-labels=node-role.kubernetes.io/worker=".into());
        assert!(matches!(prepare(&launch).unwrap_err(), LaunchRefused::FlagValue { flag: "--node-labels", .. }));
    }
}
