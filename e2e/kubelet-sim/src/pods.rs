//! The pods bound to the node, as far as the API can see: the kubelet watches them with
//! `fieldSelector=spec.nodeName=<node>` as the node identity, reports each new pod Running and Ready with running
//! containers (while the runtime network is not ready, pods off the host network stay Pending in
//! `ContainerCreating`), and finishes off pods being deleted with a grace-0 delete guarded by the pod's UID.

use std::net::IpAddr;
use std::sync::Arc;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use kube::runtime::{WatchStreamExt as _, watcher};
use serde_json::json;

use tokio::sync::watch;

use crate::node::Readiness;
use crate::state::Shared;

/// Runs the pod loop until the task is aborted; when the runtime network turns ready, every pod on the node is
/// synced again; when the node client changes (a rotated certificate), the watch starts over with it.
pub(crate) async fn run(
    mut clients: watch::Receiver<kube::Client>,
    node_name: String,
    host_ips: Vec<IpAddr>,
    mut network: watch::Receiver<Readiness>,
    shared: Arc<Shared>,
) {
    let selector = format!("spec.nodeName={node_name}");
    let mut clients_open = true;
    loop {
        let client = clients.borrow_and_update().clone();
        let pods: Api<Pod> = Api::all(client.clone());
        let config = watcher::Config::default().fields(&selector);
        let mut events = watcher(pods.clone(), config).default_backoff().applied_objects().boxed();
        let node = NodeSide { client, host_ips: host_ips.clone(), shared: shared.clone() };
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(pod)) => {
                        let network_ready = network.borrow().network_ready;
                        node.sync(&pod, network_ready).await;
                    }
                    Some(Err(error)) => {
                        shared.problem(format!("watch of the pods on node {node_name} failed: {error}"));
                    }
                    None => return,
                },
                changed = network.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let network_ready = network.borrow_and_update().network_ready;
                    match pods.list(&ListParams::default().fields(&selector)).await {
                        Ok(list) => {
                            for pod in &list.items {
                                node.sync(pod, network_ready).await;
                            }
                        }
                        Err(error) => shared.problem(format!("listing the pods on node {node_name} failed: {error}")),
                    }
                }
                changed = clients.changed(), if clients_open => {
                    clients_open = changed.is_ok();
                    if clients_open {
                        break;
                    }
                }
            }
        }
    }
}

/// What pod syncs need: the node's client, its IPs and the journal.
struct NodeSide {
    client: kube::Client,
    host_ips: Vec<IpAddr>,
    shared: Arc<Shared>,
}

impl NodeSide {
    async fn sync(&self, pod: &Pod, network_ready: bool) {
        if let Err(error) = handle(&self.client, pod, &self.host_ips, network_ready, &self.shared).await {
            let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
            self.shared.problem(format!("error syncing pod {pod_name}: {error}"));
        }
    }
}

async fn handle(
    client: &kube::Client,
    pod: &Pod,
    host_ips: &[IpAddr],
    network_ready: bool,
    shared: &Shared,
) -> Result<(), kube::Error> {
    let (Some(name), Some(namespace)) = (&pod.metadata.name, &pod.metadata.namespace) else { return Ok(()) };
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    if pod.metadata.deletion_timestamp.is_some() {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions { uid: pod.metadata.uid.clone(), resource_version: None }),
            ..DeleteParams::default()
        };
        match api.delete(name, &params).await {
            Ok(_) => shared.info(format!("pod {namespace}/{name} terminated and deleted")),
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
            Err(error) => return Err(error),
        }
        return Ok(());
    }
    if is_running_and_ready(pod) {
        return Ok(());
    }
    let host_network = pod.spec.as_ref().and_then(|spec| spec.host_network) == Some(true);
    if !network_ready && !host_network {
        if !is_pending_creating(pod) {
            api.patch_status(name, &PatchParams::default(), &Patch::Merge(pending_status(pod, host_ips))).await?;
            shared.info(format!("pod {namespace}/{name} waits for the container runtime network"));
        }
        return Ok(());
    }
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(running_status(pod, host_ips))).await?;
    shared.info(format!("pod {namespace}/{name} running"));
    Ok(())
}

fn is_running_and_ready(pod: &Pod) -> bool {
    let Some(status) = &pod.status else { return false };
    status.phase.as_deref() == Some("Running")
        && status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True")
}

fn is_pending_creating(pod: &Pod) -> bool {
    let Some(status) = &pod.status else { return false };
    status.phase.as_deref() == Some("Pending")
        && status.container_statuses.iter().flatten().any(|container| {
            container.state.as_ref().and_then(|state| state.waiting.as_ref()).and_then(|w| w.reason.as_deref())
                == Some("ContainerCreating")
        })
}

/// The status of a pod whose sandbox cannot be created yet: phase Pending, containers waiting in
/// `ContainerCreating`, not ready.
fn pending_status(pod: &Pod, host_ips: &[IpAddr]) -> serde_json::Value {
    let now = jiff::Timestamp::now().to_string();
    let spec = pod.spec.clone().unwrap_or_default();
    let names: Vec<&str> = spec.containers.iter().map(|container| container.name.as_str()).collect();
    let unready = format!("containers with unready status: [{}]", names.join(" "));
    let container_statuses: Vec<serde_json::Value> = spec
        .containers
        .iter()
        .map(|container| {
            json!({
                "name": container.name,
                "image": container.image.clone().unwrap_or_default(),
                "imageID": "",
                "ready": false,
                "started": false,
                "restartCount": 0,
                "state": { "waiting": { "reason": "ContainerCreating" } },
            })
        })
        .collect();
    let condition = |type_: &str, status: &str, reason: Option<&str>| {
        let mut condition = json!({ "type": type_, "status": status, "lastTransitionTime": now });
        if let Some(reason) = reason {
            condition["reason"] = json!(reason);
            condition["message"] = json!(unready);
        }
        condition
    };
    let mut status = json!({
        "phase": "Pending",
        "startTime": now,
        "conditions": [
            condition("PodReadyToStartContainers", "False", None),
            condition("Initialized", "True", None),
            condition("Ready", "False", Some("ContainersNotReady")),
            condition("ContainersReady", "False", Some("ContainersNotReady")),
            condition("PodScheduled", "True", None),
        ],
        "containerStatuses": container_statuses,
    });
    add_host_ips(&mut status, host_ips);
    json!({ "status": status })
}

fn add_host_ips(status: &mut serde_json::Value, host_ips: &[IpAddr]) {
    if let Some(first) = host_ips.first() {
        status["hostIP"] = json!(first.to_string());
        status["hostIPs"] = json!(host_ips.iter().map(|ip| json!({ "ip": ip.to_string() })).collect::<Vec<_>>());
    }
}

/// The status of a pod whose containers all started: phase Running, conditions True, one running container status
/// per container, host IPs, and the host IP as pod IP for host-network pods.
fn running_status(pod: &Pod, host_ips: &[IpAddr]) -> serde_json::Value {
    let now = jiff::Timestamp::now().to_string();
    let spec = pod.spec.clone().unwrap_or_default();
    let container_statuses: Vec<serde_json::Value> = spec
        .containers
        .iter()
        .map(|container| {
            json!({
                "name": container.name,
                "image": container.image.clone().unwrap_or_default(),
                "imageID": "",
                "containerID": format!("containerd://{}", container_id(pod, &container.name)),
                "ready": true,
                "started": true,
                "restartCount": 0,
                "state": { "running": { "startedAt": now } },
            })
        })
        .collect();
    let condition = |type_: &str| json!({ "type": type_, "status": "True", "lastTransitionTime": now });
    let mut status = json!({
        "phase": "Running",
        "startTime": now,
        "conditions": [
            condition("PodReadyToStartContainers"),
            condition("Initialized"),
            condition("Ready"),
            condition("ContainersReady"),
            condition("PodScheduled"),
        ],
        "containerStatuses": container_statuses,
    });
    add_host_ips(&mut status, host_ips);
    if spec.host_network == Some(true) {
        status["podIP"] = status["hostIP"].clone();
        status["podIPs"] = status["hostIPs"].clone();
    }
    json!({ "status": status })
}

/// A 64-hex-digit container ID derived from the pod UID and container name.
fn container_id(pod: &Pod, container: &str) -> String {
    let seed = format!("{}/{container}", pod.metadata.uid.as_deref().unwrap_or_default());
    (0..4u64)
        .map(|round| {
            let hash = seed.bytes().fold(0xcbf2_9ce4_8422_2325 ^ round, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
            });
            format!("{hash:016x}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn pod(host_network: bool) -> Pod {
        Pod {
            metadata: ObjectMeta { name: Some("p".into()), uid: Some("u-1".into()), ..ObjectMeta::default() },
            spec: Some(PodSpec {
                containers: vec![Container { name: "c".into(), image: Some("pause".into()), ..Container::default() }],
                host_network: Some(host_network),
                ..PodSpec::default()
            }),
            status: None,
        }
    }

    #[test]
    fn a_running_status_has_ready_conditions_and_running_containers() {
        let patch = running_status(&pod(false), &["203.0.113.10".parse().unwrap()]);
        let status = &patch["status"];
        assert_eq!(status["phase"], "Running");
        assert_eq!(status["hostIP"], "203.0.113.10");
        assert!(status.get("podIP").is_none());
        assert_eq!(status["conditions"].as_array().unwrap().len(), 5);
        assert_eq!(status["containerStatuses"][0]["ready"], true);
        assert_eq!(status["containerStatuses"][0]["containerID"].as_str().unwrap().len(), "containerd://".len() + 64);
        let parsed: Pod = serde_json::from_value(json!({ "status": status })).unwrap();
        assert!(is_running_and_ready(&parsed));
    }

    #[test]
    fn a_pending_status_waits_in_container_creating() {
        let patch = pending_status(&pod(false), &["203.0.113.10".parse().unwrap()]);
        let parsed: Pod = serde_json::from_value(patch.clone()).unwrap();
        assert!(is_pending_creating(&parsed));
        assert!(!is_running_and_ready(&parsed));
        assert_eq!(patch["status"]["conditions"][2]["message"], "containers with unready status: [c]");
        assert_eq!(patch["status"]["hostIP"], "203.0.113.10");
    }

    #[test]
    fn host_network_pods_get_the_host_ip() {
        let patch = running_status(&pod(true), &["203.0.113.10".parse().unwrap()]);
        assert_eq!(patch["status"]["podIP"], "203.0.113.10");
    }
}
