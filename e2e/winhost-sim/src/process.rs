//! Service processes as models: what a service binary needs to keep running. A started process whose inputs are
//! missing or invalid exits (the SCM shows STOPPED, 1067) and leaves a log under `C:\var\log\<service>\` saying
//! why. Programs are recognised by their executable's file name, never by the service name; `kube-log-runner.exe`
//! wrappers are looked through.
//!
//! - containerd: `--config` must name a TOML file that parses.
//! - kube-proxy: `--config` must name a KubeProxyConfiguration (JSON or YAML) whose `winkernel.networkName` is an
//!   existing HNS network, whose `clusterCIDR` equals that network's subnet, and which has a `winkernel.sourceVip`.
//! - windows_exporter: `--web.config.file` must name a YAML file whose `tls_server_config.cert_file` and `key_file`
//!   exist.
//! - hybrid-overlay-node: the kubeconfig it is given must exist.
//! - kubelet: its `--config` must exist; the bootstrap itself is the kubelet simulation's.
//! - anything else: runs once its executable exists.

use crate::argv::split_image_path;
use crate::disk::{Disk, Entry, WinPath};
use crate::host::{HnsNetwork, Host};
use crate::scm::Launch;

/// A service process starting or ending (read by the host driver, which runs the kubelet and HNS models).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcessEvent {
    /// The SCM started the service's process.
    Started {
        /// Service name.
        service: String,
        /// Its ImagePath.
        image_path: String,
    },
    /// The service's process ended.
    Stopped {
        /// Service name.
        service: String,
    },
}

/// The program a service runs: the executable, or the one a `kube-log-runner.exe` wraps, with its arguments.
pub fn program(image_path: &str) -> (String, Vec<String>) {
    let (executable, arguments) = split_image_path(image_path);
    if stem(&executable) != "kube-log-runner" {
        return (executable, arguments);
    }
    let mut rest = arguments.into_iter().skip_while(|argument| argument.starts_with('-'));
    match rest.next() {
        Some(wrapped) => (wrapped, rest.collect()),
        None => (executable, Vec::new()),
    }
}

/// Every executable a service's process tree runs (the runner and the wrapped program).
pub fn executables(image_path: &str) -> Vec<String> {
    let (executable, _) = split_image_path(image_path);
    let (wrapped, _) = program(image_path);
    if wrapped == executable { vec![executable] } else { vec![executable, wrapped] }
}

/// The lower-case file stem of a Windows path (`C:\k\Kube-Proxy.exe` → `kube-proxy`).
pub fn stem(path: &str) -> String {
    let name = path.rsplit(['\\', '/']).next().unwrap_or(path).to_lowercase();
    name.strip_suffix(".exe").map(str::to_owned).unwrap_or(name)
}

/// The value of `--name` / `-name` given as `--name=value` or `--name value`.
pub fn flag(arguments: &[String], name: &str) -> Option<String> {
    let mut iter = arguments.iter();
    while let Some(argument) = iter.next() {
        let bare = argument.trim_start_matches('-');
        if argument.starts_with('-') {
            if let Some(value) = bare.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')) {
                return Some(value.to_owned());
            }
            if bare == name {
                return iter.next().cloned();
            }
        }
    }
    None
}

/// What a process model needs to know about its host, captured before the SCM starts anything.
#[derive(Clone, Debug)]
pub struct HostView {
    disk: Disk,
    hns_networks: Vec<HnsNetwork>,
}

impl HostView {
    /// A snapshot of `host`.
    pub fn capture(host: &Host) -> HostView {
        HostView { disk: host.disk.clone(), hns_networks: host.hns_networks.clone() }
    }

    fn file_exists(&self, path: &str) -> bool {
        WinPath::parse(path).is_ok_and(|path| self.disk.entry(&path) == Some(Entry::File))
    }

    fn read_text(&self, path: &str) -> Result<String, String> {
        let parsed = WinPath::parse(path).map_err(|_| format!("invalid path {path}"))?;
        let bytes =
            self.disk.read(&parsed).map_err(|_| format!("open {path}: The system cannot find the file specified."))?;
        let text = String::from_utf8(bytes).map_err(|_| format!("{path}: not UTF-8 text"))?;
        Ok(text.trim_start_matches('\u{feff}').to_owned())
    }

    /// How the process of a service with this ImagePath fares.
    pub fn launch(&self, image_path: &str) -> Launch {
        let (executable, _) = split_image_path(image_path);
        if !self.file_exists(&executable) {
            return Launch::BinaryMissing;
        }
        let (program, arguments) = program(image_path);
        if !self.file_exists(&program) {
            return Launch::Exits(format!("kube-log-runner: failed to start {program}: file does not exist"));
        }
        let verdict = match stem(&program).as_str() {
            "containerd" => self.containerd(&arguments),
            "kube-proxy" => self.kube_proxy(&arguments),
            "windows_exporter" => self.windows_exporter(&arguments),
            "hybrid-overlay-node" => self.hybrid_overlay(&arguments),
            "kubelet" => self.required_file(&arguments, "config", "kubelet"),
            _ => Ok(()),
        };
        match verdict {
            Ok(()) => Launch::Runs,
            Err(reason) => Launch::Exits(reason),
        }
    }

    fn required_file(&self, arguments: &[String], name: &str, program: &str) -> Result<(), String> {
        let path = flag(arguments, name).ok_or_else(|| format!("{program}: --{name} is required"))?;
        self.read_text(&path).map(|_| ())
    }

    fn containerd(&self, arguments: &[String]) -> Result<(), String> {
        let Some(path) = flag(arguments, "config") else { return Ok(()) };
        let text = self.read_text(&path)?;
        toml::from_str::<toml::Table>(&text).map(|_| ()).map_err(|error| format!("failed to load TOML {path}: {error}"))
    }

    fn kube_proxy(&self, arguments: &[String]) -> Result<(), String> {
        let path = flag(arguments, "config").ok_or("kube-proxy: --config is required on this node")?;
        let text = self.read_text(&path)?;
        let config: serde_json::Value = serde_json::from_str(&text)
            .or_else(|_| serde_saphyr::from_str(&text))
            .map_err(|error| format!("failed to decode kube-proxy config {path}: {error}"))?;
        let network_name = config
            .pointer("/winkernel/networkName")
            .and_then(serde_json::Value::as_str)
            .ok_or("unable to find HNS network: winkernel.networkName is empty")?;
        let network = self
            .hns_networks
            .iter()
            .find(|network| network.name.eq_ignore_ascii_case(network_name))
            .ok_or_else(|| format!("unable to find HNS network {network_name}: network not found"))?;
        let cluster_cidr = config.get("clusterCIDR").and_then(serde_json::Value::as_str).unwrap_or_default();
        if network.address_prefix.as_deref() != Some(cluster_cidr) {
            return Err(format!(
                "clusterCIDR {cluster_cidr:?} does not match the subnet {:?} of HNS network {network_name}",
                network.address_prefix.as_deref().unwrap_or_default()
            ));
        }
        match config.pointer("/winkernel/sourceVip").and_then(serde_json::Value::as_str) {
            Some(vip) if !vip.is_empty() => Ok(()),
            _ => Err("winkernel.sourceVip is required for overlay networking".to_owned()),
        }
    }

    fn windows_exporter(&self, arguments: &[String]) -> Result<(), String> {
        let path = flag(arguments, "web.config.file").ok_or("windows_exporter: TLS is required (--web.config.file)")?;
        let text = self.read_text(&path)?;
        let config: serde_json::Value =
            serde_saphyr::from_str(&text).map_err(|error| format!("parsing web config file {path}: {error}"))?;
        for key in ["cert_file", "key_file"] {
            let file = config
                .pointer(&format!("/tls_server_config/{key}"))
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| format!("{path}: tls_server_config.{key} is missing"))?;
            if !self.file_exists(file) {
                return Err(format!("open {file}: The system cannot find the file specified."));
            }
        }
        Ok(())
    }

    fn hybrid_overlay(&self, arguments: &[String]) -> Result<(), String> {
        let kubeconfig = flag(arguments, "k8s-kubeconfig")
            .or_else(|| flag(arguments, "bootstrap-kubeconfig"))
            .ok_or("hybrid-overlay-node: no kubeconfig given")?;
        self.read_text(&kubeconfig).map(|_| ())
    }
}

/// Writes `C:\var\log\<service>\<service>.refused.log` with the reason a process exited.
pub fn write_refusal_log(disk: &Disk, service: &str, image_path: &str, reason: &str) {
    let Ok(directory) = WinPath::parse(&format!(r"C:\var\log\{service}")) else { return };
    if disk.create_dir_all(&directory).is_err() {
        return;
    }
    let file = directory.join(&format!("{service}.refused.log"));
    let mut text = disk.read(&file).map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default();
    text.push_str(&format!("{image_path}\r\nexited: {reason}\r\n"));
    let _ = disk.write(&file, text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::tests::test_host;

    fn put(host: &Host, path: &str, text: &str) {
        let path = WinPath::parse(path).unwrap();
        host.disk.create_dir_all(&path.parent().unwrap()).unwrap();
        host.disk.write(&path, text.as_bytes()).unwrap();
    }

    #[test]
    fn runners_are_looked_through_and_flags_read_both_forms() {
        let (program, arguments) = program(r"C:\k\kube-log-runner.exe -log-file=C:\l.log C:\k\kubelet.exe --v=2");
        assert_eq!((program.as_str(), arguments), (r"C:\k\kubelet.exe", vec!["--v=2".to_owned()]));
        let arguments: Vec<String> = ["--config", "a", "--x=b", "-y"].iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(flag(&arguments, "config").as_deref(), Some("a"));
        assert_eq!(flag(&arguments, "x").as_deref(), Some("b"));
        assert_eq!(flag(&arguments, "z"), None);
        assert_eq!(stem(r"C:\k\Kube-Proxy.EXE"), "kube-proxy");
    }

    #[test]
    fn kube_proxy_needs_a_matching_hns_network_and_a_source_vip() {
        let (_root, mut host) = test_host();
        put(&host, r"C:\k\kube-log-runner.exe", "");
        put(&host, r"C:\k\kube-proxy.exe", "");
        let image = r"C:\k\kube-log-runner.exe -log-file=C:\var\log\kube-proxy\kube-proxy.log C:\k\kube-proxy.exe --config C:\k\kube-proxy.conf";
        let view = HostView::capture(&host);
        assert!(matches!(view.launch(image), Launch::Exits(reason) if reason.contains("cannot find")));
        put(
            &host,
            r"C:\k\kube-proxy.conf",
            r#"{"clusterCIDR":"10.132.1.0/24","winkernel":{"networkName":"OVNKubernetesHybridOverlayNetwork","sourceVip":"10.132.1.2"}}"#,
        );
        let view = HostView::capture(&host);
        assert!(matches!(view.launch(image), Launch::Exits(reason) if reason.contains("unable to find HNS network")));
        host.hns_networks.push(HnsNetwork {
            name: "OVNKubernetesHybridOverlayNetwork".into(),
            kind: "Overlay".into(),
            id: "x".into(),
            address_prefix: Some("10.132.2.0/24".into()),
            gateway: None,
        });
        let view = HostView::capture(&host);
        assert!(matches!(view.launch(image), Launch::Exits(reason) if reason.contains("does not match")));
        host.hns_networks[0].address_prefix = Some("10.132.1.0/24".into());
        assert_eq!(HostView::capture(&host).launch(image), Launch::Runs);
        assert_eq!(HostView::capture(&host).launch(r"C:\k\missing.exe"), Launch::BinaryMissing);
    }

    #[test]
    fn containerd_and_windows_exporter_check_their_files() {
        let (_root, host) = test_host();
        put(&host, r"C:\k\containerd\containerd.exe", "");
        put(&host, r"C:\k\containerd\c.toml", "version = 2\n[plugins\n");
        let containerd = r"C:\k\containerd\containerd.exe --config C:\k\containerd\c.toml --run-service";
        assert!(matches!(HostView::capture(&host).launch(containerd), Launch::Exits(r) if r.contains("TOML")));
        put(&host, r"C:\k\containerd\c.toml", "version = 2\n");
        assert_eq!(HostView::capture(&host).launch(containerd), Launch::Runs);
        put(&host, r"C:\k\windows_exporter.exe", "");
        put(
            &host,
            r"C:\k\tls\web.yaml",
            "tls_server_config:\n  cert_file: C:\\k\\tls\\tls.crt\n  key_file: C:\\k\\tls\\tls.key\n",
        );
        let exporter = r"C:\k\windows_exporter.exe --web.config.file C:\k\tls\web.yaml";
        assert!(matches!(HostView::capture(&host).launch(exporter), Launch::Exits(r) if r.contains("tls.crt")));
        put(&host, r"C:\k\tls\tls.crt", "c");
        put(&host, r"C:\k\tls\tls.key", "k");
        assert_eq!(HostView::capture(&host).launch(exporter), Launch::Runs);
    }
}
