//! The fleet as read from the API server: every `WindowsInstance` record of the operator namespace with its Node,
//! read fresh (never from a cache, so a loop's own marks from its last reconcile are always counted), and the
//! planner's view of each ([`planner_instance`]).

use k8s_openapi::api::core::v1::Node;
use semver::Version;
use wmco_cluster_client::names::{PUB_KEY_HASH_ANNOTATION, UPGRADING_LABEL, VERSION_ANNOTATION};
use wmco_cluster_client::types::{InstanceOrigin, Phase as RecordPhase, WindowsInstance};
use wmco_cluster_client::{InstanceRecords, Nodes};
use wmco_upgrade_planner::{CordonedBy, Failure, Instance, InstanceKind, NodeState, Phase};

/// One record and its Node as read.
#[derive(Clone, Debug)]
pub struct ObservedInstance {
    /// The record.
    pub record: WindowsInstance,
    /// Its Node (`status.expectedNodeName`), when registered.
    pub node: Option<Node>,
}

impl ObservedInstance {
    /// The record's name, which is the planner's instance name.
    pub fn name(&self) -> &str {
        self.record.metadata.name.as_deref().unwrap_or_default()
    }

    /// `namespace/name` of the record.
    pub fn label(&self) -> String {
        format!("{}/{}", self.record.metadata.namespace.as_deref().unwrap_or_default(), self.name())
    }

    /// The Node's name, when it is registered.
    pub fn node_name(&self) -> Option<&str> {
        self.node.as_ref().and_then(|node| node.metadata.name.as_deref())
    }
}

/// Why the fleet could not be read. Each loop maps it to its own error (same messages, same labels).
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// Listing the records failed.
    #[error("listing WindowsInstances in namespace {namespace} failed")]
    ListRecords {
        /// The operator namespace.
        namespace: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Reading a record's Node failed.
    #[error("WindowsInstance {instance}: reading Node {node} failed")]
    ReadNode {
        /// `namespace/name` of the record.
        instance: String,
        /// The Node's name.
        node: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
}

/// Every record of `namespace` with its Node (`status.expectedNodeName`), in record-name order.
///
/// # Errors
/// [`ObserveError::ListRecords`] or [`ObserveError::ReadNode`] when the API server fails.
pub async fn observe_instances(
    records: &dyn InstanceRecords,
    nodes: &dyn Nodes,
    namespace: &str,
) -> Result<Vec<ObservedInstance>, ObserveError> {
    let mut records = records
        .list(namespace)
        .await
        .map_err(|source| ObserveError::ListRecords { namespace: namespace.to_owned(), source: Box::new(source) })?;
    records.sort_by(|left, right| left.metadata.name.cmp(&right.metadata.name));
    let mut instances = Vec::with_capacity(records.len());
    for record in records {
        let node_name = record.status.as_ref().and_then(|status| status.expected_node_name.clone());
        let node = match node_name {
            Some(node_name) => nodes.get(&node_name).await.map_err(|source| ObserveError::ReadNode {
                instance: format!("{namespace}/{}", record.metadata.name.as_deref().unwrap_or_default()),
                node: node_name.clone(),
                source: Box::new(source),
            })?,
            None => None,
        };
        instances.push(ObservedInstance { record, node });
    }
    Ok(instances)
}

/// The planner's view of one record and its Node. A Node that is unschedulable counts as cordoned by the operator
/// only while it carries the `upgrading` mark (the executor marks before it cordons and uncordons before it
/// unmarks); otherwise someone else cordoned it. A version annotation that is not semver is read as absent.
///
/// ```
/// use wmco_operator::fleet::planner_instance;
/// use wmco_upgrade_planner::{InstanceKind, Phase};
/// let record: wmco_cluster_client::types::WindowsInstance = serde_json::from_value(serde_json::json!({
///     "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
///     "metadata": {"name": "byoh-10-0-0-5", "namespace": "wmco"},
///     "spec": {"address": "10.0.0.5", "username": "admin", "origin": "Byoh"},
///     "status": {"phase": "Ready"}
/// }))?;
/// let instance = planner_instance(&record, None, None);
/// assert_eq!((instance.kind, instance.phase, instance.node), (InstanceKind::Byoh, Phase::Ready, None));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn planner_instance(record: &WindowsInstance, node: Option<&Node>, last_failure: Option<Failure>) -> Instance {
    Instance {
        name: record.metadata.name.clone().unwrap_or_default(),
        kind: match record.spec.origin {
            InstanceOrigin::Byoh => InstanceKind::Byoh,
            InstanceOrigin::Machine => InstanceKind::Machine,
        },
        desired: record.metadata.deletion_timestamp.is_none(),
        phase: record.status.as_ref().and_then(|status| status.phase).map_or(Phase::Pending, planner_phase),
        node: node.map(node_state),
        last_failure,
    }
}

fn planner_phase(phase: RecordPhase) -> Phase {
    match phase {
        RecordPhase::Pending => Phase::Pending,
        RecordPhase::Configuring => Phase::Configuring,
        RecordPhase::WaitingForNode => Phase::WaitingForNode,
        RecordPhase::Ready => Phase::Ready,
        RecordPhase::Upgrading => Phase::Upgrading,
        RecordPhase::Deconfiguring => Phase::Deconfiguring,
        RecordPhase::Failed => Phase::Failed,
    }
}

/// The planner's view of a Node.
pub(crate) fn node_state(node: &Node) -> NodeState {
    let upgrading = is_marked(node);
    NodeState {
        ready: is_ready(node),
        cordoned_by: is_unschedulable(node).then_some(if upgrading { CordonedBy::Operator } else { CordonedBy::Other }),
        configured_version: annotation(node, VERSION_ANNOTATION).and_then(|text| Version::parse(text).ok()),
        upgrading,
        pub_key_hash: annotation(node, PUB_KEY_HASH_ANNOTATION).map(str::to_owned),
    }
}

/// The Node's annotation `key`.
pub(crate) fn annotation<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    node.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

/// Whether the Node carries the `upgrading` mark.
pub(crate) fn is_marked(node: &Node) -> bool {
    node.metadata.labels.as_ref().and_then(|labels| labels.get(UPGRADING_LABEL)).is_some_and(|value| value == "true")
}

/// Whether the Node is cordoned.
pub(crate) fn is_unschedulable(node: &Node) -> bool {
    node.spec.as_ref().and_then(|spec| spec.unschedulable).unwrap_or(false)
}

/// Whether the Node's Ready condition is True.
pub(crate) fn is_ready(node: &Node) -> bool {
    node.status.as_ref().and_then(|status| status.conditions.as_ref()).is_some_and(|conditions| {
        conditions.iter().any(|condition| condition.type_ == "Ready" && condition.status == "True")
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wmco_cluster_client::fake::{FakeInstanceRecords, FakeNodes};

    use super::*;

    fn node(name: &str, marked: bool, unschedulable: bool) -> Node {
        let labels = if marked { json!({UPGRADING_LABEL: "true"}) } else { json!({}) };
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels, "annotations": {VERSION_ANNOTATION: "1.0.0"}},
            "spec": {"unschedulable": unschedulable},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn records_come_in_name_order_each_with_its_node_when_registered() {
        let records = FakeInstanceRecords::default();
        let nodes = FakeNodes::default();
        for (name, node_name) in [("b", Some("win-b")), ("a", None), ("c", Some("win-gone"))] {
            let record: WindowsInstance = serde_json::from_value(json!({
                "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
                "metadata": {"name": name, "namespace": "wmco"},
                "spec": {"address": "10.0.0.5", "username": "admin", "origin": "Byoh"},
            }))
            .unwrap();
            records.apply(&record).await.unwrap();
            let status = serde_json::from_value(json!({"expectedNodeName": node_name})).unwrap();
            records.apply_status("wmco", name, &status).await.unwrap();
        }
        nodes.insert(node("win-b", false, false));

        let observed = observe_instances(&records, &nodes, "wmco").await.unwrap();
        let seen: Vec<_> = observed.iter().map(|observed| (observed.name(), observed.node_name())).collect();
        assert_eq!(seen, [("a", None), ("b", Some("win-b")), ("c", None)]);
        assert_eq!(observed[1].label(), "wmco/b");
        assert!(observe_instances(&records, &nodes, "other").await.unwrap().is_empty());
    }

    #[test]
    fn a_cordoned_node_is_the_operators_only_while_it_is_marked() {
        let ours = node_state(&node("win-1", true, true));
        assert_eq!((ours.cordoned_by, ours.upgrading, ours.ready), (Some(CordonedBy::Operator), true, true));
        assert_eq!(ours.configured_version, Some(Version::new(1, 0, 0)));
        assert_eq!(node_state(&node("win-1", false, true)).cordoned_by, Some(CordonedBy::Other));
        assert_eq!(node_state(&node("win-1", true, false)).cordoned_by, None);
    }
}
