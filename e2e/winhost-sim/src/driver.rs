//! Each host's background driver: advances service states on the host's clock and runs the models that live
//! outside the command interpreters.
//!
//! - kubelet: when the SCM starts a service whose program is `kubelet.exe` and containerd is RUNNING, the
//!   simulated kubelet (`wmco-kubelet-sim`) starts with the binPath arguments and containerd's CNI configuration
//!   directory (`conf_dir` of its `--config`), so the Node is Ready only once a CNI config exists; a refusal (or containerd not
//!   running) stops the service and writes the reason under `C:\var\log\kubelet\`; the kubelet's journal is copied
//!   to `C:\var\log\kubelet\kubelet.log`; stopping the service stops the kubelet.
//! - kubelet under Wine: on a host whose kubelet model is `Wine`, the uploaded `kubelet.exe` itself runs instead
//!   (see [`crate::wine_kubelet`]).
//! - hybrid-overlay-node: once running, it reads its Node (with the kubelet's node credentials) and, when the Node
//!   carries `k8s.ovn.org/hybrid-overlay-node-subnet`, creates the HNS networks `BaseOVNKubernetesHybridOverlayNetwork`
//!   and `OVNKubernetesHybridOverlayNetwork` (Overlay, that subnet, gateway `.1`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use wmco_kubelet_sim::{Kubelet, KubeletHandle, KubeletLaunch};

use crate::argv::split_image_path;
use crate::disk::WinPath;
use crate::host::{HnsNetwork, Host};
use crate::process::{ProcessEvent, flag, program, stem, write_refusal_log};
use crate::scm::State;
use crate::ssh::{SshServer, lock};
use crate::wine_kubelet::{KubeletModel, WineKubelet, WineLaunch};

/// How often the driver looks at its host.
const TICK: Duration = Duration::from_millis(50);

/// The annotation OVN-Kubernetes puts on a Windows Node with its pod subnet.
pub const SUBNET_ANNOTATION: &str = "k8s.ovn.org/hybrid-overlay-node-subnet";

/// The overlay network hybrid-overlay-node creates (kube-proxy's `winkernel.networkName`).
pub const OVERLAY_NETWORK: &str = "OVNKubernetesHybridOverlayNetwork";

/// Starts the driver of `server`'s host; it ends when the server is dropped.
pub fn spawn(server: Arc<SshServer>) {
    let weak = Arc::downgrade(&server);
    drop(server);
    tokio::spawn(async move {
        let mut driver = Driver::default();
        loop {
            tokio::time::sleep(TICK).await;
            let Some(server) = weak.upgrade() else {
                driver.stop_all().await;
                return;
            };
            driver.tick(&server.host).await;
        }
    });
}

/// What the driver keeps between ticks.
#[derive(Default)]
struct Driver {
    /// Running kubelets by service name.
    kubelets: BTreeMap<String, KubeletHandle>,
    /// Real kubelets running under Wine, by service name.
    wine_kubelets: BTreeMap<String, WineKubelet>,
    /// Running hybrid-overlay-node services and the Node each watches.
    overlays: BTreeMap<String, String>,
    /// When each kubelet's journal was last copied.
    journal_copied: Option<Instant>,
}

impl Driver {
    async fn tick(&mut self, host: &Arc<std::sync::Mutex<Host>>) {
        let events = {
            let mut host = lock(host);
            host.refresh();
            std::mem::take(&mut host.process_events)
        };
        for event in events {
            match event {
                ProcessEvent::Started { service, image_path } => self.started(host, service, &image_path).await,
                ProcessEvent::Stopped { service } => {
                    if let Some(kubelet) = self.kubelets.remove(&service) {
                        kubelet.stop().await;
                    }
                    if let Some(kubelet) = self.wine_kubelets.remove(&service) {
                        kubelet.stop().await;
                    }
                    self.overlays.remove(&service);
                }
            }
        }
        self.create_overlay_networks(host).await;
        if self.journal_copied.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
            self.copy_journals(host);
            self.journal_copied = Some(Instant::now());
        }
    }

    async fn started(&mut self, host: &Arc<std::sync::Mutex<Host>>, service: String, image_path: &str) {
        let (executable, _) = program(image_path);
        match stem(&executable).as_str() {
            "kubelet" => self.start_kubelet(host, service, image_path).await,
            "hybrid-overlay-node" => {
                let (_, arguments) = program(image_path);
                let hostname = lock(host).identity.hostname.to_lowercase();
                self.overlays.insert(service, flag(&arguments, "node").unwrap_or(hostname));
            }
            _ => {}
        }
    }

    async fn start_kubelet(&mut self, host: &Arc<std::sync::Mutex<Host>>, service: String, image_path: &str) {
        if !wait_for_containerd(host).await {
            refuse(
                host,
                &service,
                image_path,
                "failed to run Kubelet: validate service connection: validate CRI v1 runtime API for endpoint \"npipe:////./pipe/containerd-containerd\": the containerd service is not running",
            );
            return;
        }
        if lock(host).kubelet_model == KubeletModel::Wine {
            self.start_wine_kubelet(host, service, image_path).await;
            return;
        }
        let (_, arguments) = split_image_path(image_path);
        let launch = {
            let host = lock(host);
            let mut launch = KubeletLaunch::new(arguments, host.disk.drive_root(), host.identity.hostname.clone());
            launch.windows_build = format!("10.0.{}", host.identity.build);
            launch.cni_config_dir = containerd_cni_directory(&host);
            launch
        };
        match Kubelet::start(launch).await {
            Ok(handle) => {
                if lock(host).scm.get(&service).is_some_and(|entry| entry.state != State::Stopped) {
                    self.kubelets.insert(service, handle);
                } else {
                    handle.stop().await;
                }
            }
            Err(refused) => refuse(host, &service, image_path, &refused.to_string()),
        }
    }

    async fn start_wine_kubelet(&mut self, host: &Arc<std::sync::Mutex<Host>>, service: String, image_path: &str) {
        let drive_root = lock(host).disk.drive_root().to_path_buf();
        let Some(host_dir) = drive_root.parent().map(std::path::Path::to_path_buf) else { return };
        match WineKubelet::start(&host_dir, &drive_root, WineLaunch::from_image_path(image_path)).await {
            Ok(kubelet) => {
                if lock(host).scm.get(&service).is_some_and(|entry| entry.state != State::Stopped) {
                    self.wine_kubelets.insert(service, kubelet);
                } else {
                    kubelet.stop().await;
                }
            }
            Err(error) => refuse(host, &service, image_path, &error.to_string()),
        }
    }

    async fn create_overlay_networks(&mut self, host: &Arc<std::sync::Mutex<Host>>) {
        if self.overlays.is_empty() || lock(host).hns_networks.iter().any(|network| network.name == OVERLAY_NETWORK) {
            return;
        }
        let Some(client) = self.kubelets.values().find_map(KubeletHandle::node_client) else { return };
        for node_name in self.overlays.values() {
            let nodes: kube::Api<Node> = kube::Api::all(client.clone());
            let Ok(node) = nodes.get(node_name).await else { continue };
            let subnet = node.metadata.annotations.as_ref().and_then(|annotations| annotations.get(SUBNET_ANNOTATION));
            if let Some(subnet) = subnet {
                lock(host).hns_networks.extend(overlay_networks(subnet));
                return;
            }
        }
    }

    fn copy_journals(&self, host: &Arc<std::sync::Mutex<Host>>) {
        for kubelet in self.kubelets.values() {
            let mut text = kubelet.journal().join("\r\n");
            text.push_str("\r\n");
            let host = lock(host);
            if let Ok(directory) = WinPath::parse(r"C:\var\log\kubelet")
                && host.disk.create_dir_all(&directory).is_ok()
            {
                let _ = host.disk.write(&directory.join("kubelet.log"), text.as_bytes());
            }
        }
    }

    async fn stop_all(&mut self) {
        for (_, kubelet) in std::mem::take(&mut self.kubelets) {
            kubelet.stop().await;
        }
        for (_, kubelet) in std::mem::take(&mut self.wine_kubelets) {
            kubelet.stop().await;
        }
    }
}

/// The two networks hybrid-overlay-node creates for a node subnet such as `10.132.1.0/24`.
pub fn overlay_networks(subnet: &str) -> [HnsNetwork; 2] {
    let gateway =
        subnet.split('/').next().and_then(|address| address.parse::<std::net::Ipv4Addr>().ok()).map(|address| {
            let [a, b, c, d] = address.octets();
            std::net::Ipv4Addr::new(a, b, c, d.saturating_add(1)).to_string()
        });
    [
        HnsNetwork {
            name: format!("Base{OVERLAY_NETWORK}"),
            kind: "Overlay".to_owned(),
            id: "6d2c5e4a-0000-4000-8000-000000000001".to_owned(),
            address_prefix: None,
            gateway: None,
        },
        HnsNetwork {
            name: OVERLAY_NETWORK.to_owned(),
            kind: "Overlay".to_owned(),
            id: "6d2c5e4a-0000-4000-8000-000000000002".to_owned(),
            address_prefix: Some(subnet.to_owned()),
            gateway,
        },
    ]
}

/// containerd's CNI configuration directory (`conf_dir` in its `--config` TOML), which the kubelet watches for
/// the runtime network's readiness.
fn containerd_cni_directory(host: &Host) -> Option<String> {
    let (_, arguments) = program(&host.scm.get("containerd")?.image_path);
    let path = WinPath::parse(&flag(&arguments, "config")?).ok()?;
    let table: toml::Table = toml::from_str(&String::from_utf8(host.disk.read(&path).ok()?).ok()?).ok()?;
    find_key(&toml::Value::Table(table), "conf_dir")
}

fn find_key(value: &toml::Value, key: &str) -> Option<String> {
    let table = value.as_table()?;
    if let Some(found) = table.get(key).and_then(toml::Value::as_str) {
        return Some(found.to_owned());
    }
    table.values().find_map(|nested| find_key(nested, key))
}

/// Waits (a few service transitions at most) for containerd to be RUNNING.
async fn wait_for_containerd(host: &Arc<std::sync::Mutex<Host>>) -> bool {
    let patience = lock(host).latency.service_transition * 3 + Duration::from_millis(500);
    let deadline = Instant::now() + patience;
    loop {
        let state = {
            let mut host = lock(host);
            host.refresh();
            host.scm.get("containerd").map(|service| service.state)
        };
        match state {
            Some(State::Running) => return true,
            Some(State::StartPending) if Instant::now() < deadline => tokio::time::sleep(TICK).await,
            _ => return false,
        }
    }
}

/// The kubelet process exits: the service stops (1067) and the reason goes to its log directory.
fn refuse(host: &Arc<std::sync::Mutex<Host>>, service: &str, image_path: &str, reason: &str) {
    let mut host = lock(host);
    host.scm.kill(service, Instant::now());
    write_refusal_log(&host.disk, "kubelet", image_path, reason);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubelet_learns_containerds_cni_directory() {
        let (_root, mut host) = crate::host::tests::test_host();
        let config = WinPath::parse(r"C:\k\containerd\containerd_conf.toml").unwrap();
        host.disk.create_dir_all(&config.parent().unwrap()).unwrap();
        host.disk
            .write(&config, b"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".cni]\nbin_dir = \"C:/k/cni\"\nconf_dir = \"C:/k/cni/config\"\n")
            .unwrap();
        let image = r"C:\k\containerd\containerd.exe --config C:\k\containerd\containerd_conf.toml --run-service";
        host.scm
            .create("containerd", crate::scm::ServiceConfig { image_path: Some(image.into()), ..Default::default() })
            .unwrap();
        assert_eq!(containerd_cni_directory(&host).as_deref(), Some("C:/k/cni/config"));
    }

    #[test]
    fn overlay_networks_follow_the_node_subnet() {
        let [base, overlay] = overlay_networks("10.132.1.0/24");
        assert_eq!(base.name, "BaseOVNKubernetesHybridOverlayNetwork");
        assert_eq!(overlay.address_prefix.as_deref(), Some("10.132.1.0/24"));
        assert_eq!(overlay.gateway.as_deref(), Some("10.132.1.1"));
    }
}
