//! The planner's `Fleet` from cluster state: every `WindowsInstance` record in the operator namespace with its
//! Node, read fresh from the API server (never from a cache, so the executor's own marks from the last reconcile
//! are always counted).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use semver::Version;
use wmco_cluster_client::names::{PUB_KEY_HASH_ANNOTATION, UPGRADING_LABEL, VERSION_ANNOTATION};
use wmco_cluster_client::types::{InstanceOrigin, Phase as RecordPhase, WindowsInstance};
use wmco_upgrade_planner::{CordonedBy, Failure, Fleet, Instance, InstanceKind, NodeState, Phase};

use super::{UpgradesContext, UpgradesError};

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

/// The fleet as the planner sees it, and what it was built from.
#[derive(Clone, Debug)]
pub struct ObservedFleet {
    /// The planner's input.
    pub fleet: Fleet,
    /// The records and Nodes, in record-name order.
    pub instances: Vec<ObservedInstance>,
}

impl ObservedFleet {
    /// The observed instance the planner calls `name`.
    pub fn instance(&self, name: &str) -> Option<&ObservedInstance> {
        self.instances.iter().find(|observed| observed.name() == name)
    }
}

/// Reads every record of the operator namespace and each one's Node, and builds the planner's fleet at `now`
/// (with the executor's pending step failures as backoff).
///
/// # Errors
/// [`UpgradesError::ListRecords`] or [`UpgradesError::Step`] (reading a Node) when the API server fails.
pub async fn observe_fleet(ctx: &UpgradesContext, now: Timestamp) -> Result<ObservedFleet, UpgradesError> {
    let namespace = &ctx.settings.namespace;
    let mut records = ctx
        .records
        .list(namespace)
        .await
        .map_err(|source| UpgradesError::ListRecords { namespace: namespace.clone(), source: Box::new(source) })?;
    records.sort_by(|left, right| left.metadata.name.cmp(&right.metadata.name));
    let mut instances = Vec::with_capacity(records.len());
    for record in records {
        let node_name = record.status.as_ref().and_then(|status| status.expected_node_name.clone());
        let node = match node_name {
            Some(node_name) => ctx.nodes.get(&node_name).await.map_err(|source| UpgradesError::Step {
                instance: format!("{namespace}/{}", record.metadata.name.as_deref().unwrap_or_default()),
                step: format!("read Node {node_name}"),
                source: Box::new(source),
            })?,
            None => None,
        };
        instances.push(ObservedInstance { record, node });
    }
    let fleet = Fleet {
        now,
        current_pub_key_hash: ctx.settings.pub_key_hash.clone(),
        instances: instances
            .iter()
            .map(|observed| {
                planner_instance(&observed.record, observed.node.as_ref(), ctx.pending_failure(observed.name()))
            })
            .collect(),
    };
    Ok(ObservedFleet { fleet, instances })
}

/// The planner's view of one record and its Node. A Node that is unschedulable counts as cordoned by the operator
/// only while it carries the `upgrading` mark (the executor marks before it cordons and uncordons before it
/// unmarks); otherwise someone else cordoned it. A version annotation that is not semver is read as absent.
///
/// ```
/// use wmco_operator::upgrades::planner_instance;
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

fn node_state(node: &Node) -> NodeState {
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
