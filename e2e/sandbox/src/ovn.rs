//! The OVN-Kubernetes stand-in: a task watching Windows Nodes (`kubernetes.io/os=windows`) that gives each Node
//! without one a unique hybrid-overlay subnet annotation (`k8s.ovn.org/hybrid-overlay-node-subnet`), carved as
//! `/24`s out of the fixtures' hybrid overlay network `10.132.0.0/14`. A Node that registers again under the same
//! name gets its earlier subnet back.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use wmco_cluster_client::names::HYBRID_OVERLAY_SUBNET_ANNOTATION;

/// The label selecting the Nodes OVN's hybrid overlay serves.
const WINDOWS_NODES: &str = "kubernetes.io/os=windows";

/// The subnets handed out so far, by Node name.
pub type SubnetAssignments = Arc<Mutex<BTreeMap<String, String>>>;

/// The `/24` with index `index` (1-based) inside `10.132.0.0/14`.
///
/// ```
/// assert_eq!(wmco_sandbox::ovn::subnet(1), "10.132.1.0/24");
/// assert_eq!(wmco_sandbox::ovn::subnet(256), "10.133.0.0/24");
/// ```
pub fn subnet(index: u32) -> String {
    let second = 132 + (index / 256) % 4;
    format!("10.{second}.{}.0/24", index % 256)
}

/// The running stand-in; dropping it stops the watch.
#[derive(Debug)]
pub struct OvnStandIn {
    assignments: SubnetAssignments,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OvnStandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OvnStandIn {
    /// Starts watching Nodes with `client` (it needs to patch Nodes: the admin).
    pub fn start(client: kube::Client) -> OvnStandIn {
        let assignments = SubnetAssignments::default();
        let task = tokio::spawn(annotate_windows_nodes(client, Arc::clone(&assignments)));
        OvnStandIn { assignments, task }
    }

    /// The subnet given to each Node so far.
    pub fn assignments(&self) -> BTreeMap<String, String> {
        self.assignments.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

async fn annotate_windows_nodes(client: kube::Client, assignments: SubnetAssignments) {
    let nodes: Api<Node> = Api::all(client);
    let config = watcher::Config::default().labels(WINDOWS_NODES);
    let mut events = watcher(nodes.clone(), config).default_backoff().applied_objects().boxed();
    while let Some(event) = events.next().await {
        let Ok(node) = event else { continue };
        let Some(name) = node.metadata.name.clone() else { continue };
        let annotated = node.metadata.annotations.as_ref().is_some_and(|annotations| {
            annotations.get(HYBRID_OVERLAY_SUBNET_ANNOTATION).is_some_and(|value| !value.is_empty())
        });
        if annotated {
            continue;
        }
        let subnet = assign(&assignments, &name);
        let patch = serde_json::json!({"metadata": {"annotations": {HYBRID_OVERLAY_SUBNET_ANNOTATION: subnet}}});
        // A failed patch is retried at the Node's next update (its kubelet heartbeats).
        let _ = nodes.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await;
    }
}

fn assign(assignments: &SubnetAssignments, node: &str) -> String {
    let mut assignments = assignments.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(existing) = assignments.get(node) {
        return existing.clone();
    }
    let index = u32::try_from(assignments.len()).unwrap_or(u32::MAX).saturating_add(1);
    let subnet = subnet(index);
    assignments.insert(node.to_owned(), subnet.clone());
    subnet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_node_gets_its_own_subnet_and_keeps_it() {
        let assignments = SubnetAssignments::default();
        assert_eq!(assign(&assignments, "winhost-0"), "10.132.1.0/24");
        assert_eq!(assign(&assignments, "winhost-1"), "10.132.2.0/24");
        assert_eq!(assign(&assignments, "winhost-0"), "10.132.1.0/24");
        assert_eq!(subnet(1023), "10.135.255.0/24");
    }
}
