//! The Node object the kubelet registers (labels it sets on itself, the attach/detach annotation, taints, full
//! initial status) and the status it reports on each heartbeat (kubelet-bootstrap.md §6.1–6.2).

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeSpec, NodeStatus, NodeSystemInfo,
    Taint as ApiTaint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::taint::Taint;

/// The kubelet version the simulated Node reports unless told otherwise.
pub const DEFAULT_KUBELET_VERSION: &str = "v1.33.0";

/// What the Node object is built from.
#[derive(Debug, Clone)]
pub(crate) struct NodeFacts {
    pub name: String,
    pub ips: Vec<IpAddr>,
    pub windows_build: String,
    pub kubelet_version: String,
    pub boot_id: String,
    pub extra_labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub port: i32,
    pub max_pods: i64,
    /// When the kubelet started: the transition time of the pressure conditions.
    pub started: jiff::Timestamp,
}

/// Whether the container runtime's network is ready, and since when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Readiness {
    /// The runtime reports `NetworkReady=true`.
    pub network_ready: bool,
    /// When that last changed.
    pub since: jiff::Timestamp,
}

/// The Ready message of a node whose runtime network is not ready (containerd without a CNI configuration).
pub(crate) const NETWORK_NOT_READY: &str = "container runtime network not ready: NetworkReady=false \
     reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized";

impl NodeFacts {
    /// Labels the kubelet sets on itself, then `--node-labels` on top.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels: BTreeMap<String, String> = [
            ("kubernetes.io/hostname", self.name.as_str()),
            ("kubernetes.io/os", "windows"),
            ("kubernetes.io/arch", "amd64"),
            ("beta.kubernetes.io/os", "windows"),
            ("beta.kubernetes.io/arch", "amd64"),
            ("node.kubernetes.io/windows-build", self.windows_build.as_str()),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
        labels.extend(self.extra_labels.clone());
        labels
    }

    /// The Node as the kubelet first posts it.
    pub fn initial_node(&self, now: jiff::Timestamp, readiness: Readiness) -> Node {
        let annotations =
            BTreeMap::from([("volumes.kubernetes.io/controller-managed-attach-detach".to_owned(), "true".to_owned())]);
        let taints: Vec<ApiTaint> = self
            .taints
            .iter()
            .map(|taint| ApiTaint {
                key: taint.key.clone(),
                value: (!taint.value.is_empty()).then(|| taint.value.clone()),
                effect: taint.effect.as_str().to_owned(),
                time_added: None,
            })
            .collect();
        Node {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: Some(self.labels()),
                annotations: Some(annotations),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec { taints: (!taints.is_empty()).then_some(taints), ..NodeSpec::default() }),
            status: Some(self.status(now, readiness)),
        }
    }

    /// Addresses: one `InternalIP` per `--node-ip`, then `Hostname`.
    pub fn addresses(&self) -> Vec<NodeAddress> {
        let mut addresses: Vec<NodeAddress> =
            self.ips.iter().map(|ip| NodeAddress { type_: "InternalIP".to_owned(), address: ip.to_string() }).collect();
        addresses.push(NodeAddress { type_: "Hostname".to_owned(), address: self.name.clone() });
        addresses
    }

    /// The full status: addresses, node info, capacity, daemon endpoint and the four conditions; Ready follows the
    /// runtime network.
    pub fn status(&self, now: jiff::Timestamp, readiness: Readiness) -> NodeStatus {
        let capacity: BTreeMap<String, Quantity> = [
            ("cpu", "4".to_owned()),
            ("memory", "16776692Ki".to_owned()),
            ("ephemeral-storage", "133156860Ki".to_owned()),
            ("pods", self.max_pods.to_string()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), Quantity(value)))
        .collect();
        let mut allocatable = capacity.clone();
        allocatable.insert("cpu".to_owned(), Quantity("3500m".to_owned()));
        allocatable.insert("memory".to_owned(), Quantity("14577140Ki".to_owned()));
        let condition = |type_: &str, status: &str, reason: &str, message: &str, since| NodeCondition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            last_heartbeat_time: Some(Time(now)),
            last_transition_time: Some(Time(since)),
        };
        let ready = if readiness.network_ready {
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", readiness.since)
        } else {
            condition("Ready", "False", "KubeletNotReady", NETWORK_NOT_READY, readiness.since)
        };
        let started = self.started;
        NodeStatus {
            addresses: Some(self.addresses()),
            allocatable: Some(allocatable),
            capacity: Some(capacity),
            conditions: Some(vec![
                condition(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                    started,
                ),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure", started),
                condition(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                    started,
                ),
                ready,
            ]),
            daemon_endpoints: Some(NodeDaemonEndpoints { kubelet_endpoint: Some(DaemonEndpoint { port: self.port }) }),
            node_info: Some(self.node_info()),
            ..NodeStatus::default()
        }
    }

    fn node_info(&self) -> NodeSystemInfo {
        let machine_id = stable_id(&self.name);
        NodeSystemInfo {
            architecture: "amd64".to_owned(),
            boot_id: self.boot_id.clone(),
            container_runtime_version: "containerd://1.7.27".to_owned(),
            kernel_version: format!("{}.0", self.windows_build),
            kube_proxy_version: String::new(),
            kubelet_version: self.kubelet_version.clone(),
            machine_id: machine_id.clone(),
            operating_system: "windows".to_owned(),
            os_image: "Windows Server 2022 Datacenter".to_owned(),
            system_uuid: machine_id.to_uppercase(),
            ..NodeSystemInfo::default()
        }
    }
}

/// A stable 32-hex-digit identifier derived from the node name (FNV-1a, twice).
fn stable_id(name: &str) -> String {
    let fnv =
        |seed: u64| name.bytes().fold(seed, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3));
    format!("{:016x}{:016x}", fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taint::TaintEffect;

    fn facts() -> NodeFacts {
        NodeFacts {
            name: "win-a".into(),
            ips: vec!["203.0.113.10".parse().unwrap()],
            windows_build: "10.0.20348".into(),
            kubelet_version: DEFAULT_KUBELET_VERSION.into(),
            boot_id: "b00710d0-0000-4000-8000-000000000000".into(),
            extra_labels: BTreeMap::from([("node.openshift.io/os_id".into(), "Windows".into())]),
            taints: vec![Taint { key: "os".into(), value: "Windows".into(), effect: TaintEffect::NoSchedule }],
            port: 10250,
            max_pods: 250,
            started: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    fn ready(network_ready: bool) -> Readiness {
        Readiness { network_ready, since: jiff::Timestamp::UNIX_EPOCH }
    }

    #[test]
    fn the_initial_node_carries_kubelet_labels_flags_labels_and_taints() {
        let node = facts().initial_node(jiff::Timestamp::UNIX_EPOCH, ready(true));
        let labels = node.metadata.labels.unwrap();
        assert_eq!(labels["kubernetes.io/os"], "windows");
        assert_eq!(labels["kubernetes.io/hostname"], "win-a");
        assert_eq!(labels["node.kubernetes.io/windows-build"], "10.0.20348");
        assert_eq!(labels["node.openshift.io/os_id"], "Windows");
        assert_eq!(labels.len(), 7);
        let taints = node.spec.unwrap().taints.unwrap();
        assert_eq!((taints[0].key.as_str(), taints[0].value.as_deref()), ("os", Some("Windows")));
        let status = node.status.unwrap();
        let addresses: Vec<(String, String)> =
            status.addresses.unwrap().into_iter().map(|a| (a.type_, a.address)).collect();
        assert_eq!(
            addresses,
            [("InternalIP".to_owned(), "203.0.113.10".to_owned()), ("Hostname".to_owned(), "win-a".to_owned())]
        );
        let ready = status.conditions.unwrap().into_iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!((ready.status.as_str(), ready.reason.as_deref()), ("True", Some("KubeletReady")));
        assert_eq!(status.capacity.unwrap()["pods"], Quantity("250".into()));
        assert_eq!(status.node_info.unwrap().boot_id, "b00710d0-0000-4000-8000-000000000000");
    }

    #[test]
    fn without_a_runtime_network_the_node_is_not_ready() {
        let since = jiff::Timestamp::from_second(1_000).unwrap();
        let status =
            facts().status(jiff::Timestamp::from_second(2_000).unwrap(), Readiness { network_ready: false, since });
        let ready = status.conditions.unwrap().into_iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!((ready.status.as_str(), ready.reason.as_deref()), ("False", Some("KubeletNotReady")));
        assert_eq!(ready.message.as_deref(), Some(NETWORK_NOT_READY));
        assert_eq!(ready.last_transition_time, Some(Time(since)));
        assert_eq!(ready.last_heartbeat_time, Some(Time(jiff::Timestamp::from_second(2_000).unwrap())));
    }

    #[test]
    fn machine_ids_are_stable_per_name() {
        assert_eq!(stable_id("win-a"), stable_id("win-a"));
        assert_ne!(stable_id("win-a"), stable_id("win-b"));
        assert_eq!(stable_id("win-a").len(), 32);
    }
}
