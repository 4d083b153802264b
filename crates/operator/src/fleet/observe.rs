//! The fleet as read from the API server: every `WindowsInstance` record of the operator namespace with its Node,
//! read fresh (never from a cache, so the controller's own marks from its last reconcile are always counted), and
//! the planner's view of each ([`planner_instance`], the one place a planner `Instance` is built).

use k8s_openapi::api::core::v1::Node;
use semver::Version;
use wmco_cluster_client::names::{PUB_KEY_HASH_ANNOTATION, VERSION_ANNOTATION};
use wmco_cluster_client::types::{WindowsInstance, WindowsInstanceStatus};
use wmco_cluster_client::{InstanceRecords, NodeExt, Nodes, ResourceExt, WindowsInstanceExt, is_records_node};
use wmco_upgrade_planner::{CordonedBy, Failure, Instance, NodeState, RequestState, RequestedDisruption};

use super::FleetError;

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

    /// The Node's name, when it is registered.
    pub fn node_name(&self) -> Option<&str> {
        self.node.as_ref().and_then(|node| node.metadata.name.as_deref())
    }
}

/// A cluster error for the tests of the error mappings.
#[cfg(test)]
pub(crate) fn sample_cluster_error() -> Box<wmco_cluster_client::Error> {
    Box::new(wmco_cluster_client::Error::MissingField {
        verb: wmco_cluster_client::Verb::Get,
        kind: "Node",
        name: "win-a".into(),
        field: "metadata.name",
    })
}

/// Every record of `namespace` with its Node (`status.expectedNodeName`, when it is the record's:
/// [`is_records_node`]), in record-name order.
///
/// # Errors
/// [`FleetError::ListRecords`], or [`FleetError::Step`] (`read Node …`), when the API server fails.
pub async fn observe_instances(
    records: &dyn InstanceRecords,
    nodes: &dyn Nodes,
    namespace: &str,
) -> Result<Vec<ObservedInstance>, FleetError> {
    let mut records = records
        .list(namespace)
        .await
        .map_err(|source| FleetError::ListRecords { namespace: namespace.to_owned(), source: Box::new(source) })?;
    records.sort_by(|left, right| left.metadata.name.cmp(&right.metadata.name));
    let mut instances = Vec::with_capacity(records.len());
    for record in records {
        let node = match record.expected_node_name() {
            Some(node_name) => nodes.get(node_name).await.map_err(|source| FleetError::Step {
                instance: format!("{namespace}/{}", record.name_any()),
                step: format!("read Node {node_name}"),
                source: Box::new(source),
            })?,
            None => None,
        };
        // A Node that is not the record's (another record's, a Linux Node) is never marked, cordoned or drained.
        let node = node.filter(|node| is_records_node(node, &record));
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
/// use wmco_upgrade_planner::{InstanceOrigin, InstancePhase};
/// let record: wmco_cluster_client::types::WindowsInstance = serde_json::from_value(serde_json::json!({
///     "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
///     "metadata": {"name": "byoh-10-0-0-5", "namespace": "wmco"},
///     "spec": {"address": "10.0.0.5", "username": "admin", "origin": "Byoh"},
///     "status": {"phase": "Ready"}
/// }))?;
/// let instance = planner_instance(&record, None, None);
/// assert_eq!((instance.kind, instance.phase, instance.node), (InstanceOrigin::Byoh, InstancePhase::Ready, None));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn planner_instance(record: &WindowsInstance, node: Option<&Node>, last_failure: Option<Failure>) -> Instance {
    Instance {
        name: record.name_any(),
        kind: record.spec.origin,
        desired: record.metadata.deletion_timestamp.is_none(),
        phase: record.status.as_ref().and_then(|status| status.phase).unwrap_or_default(),
        node: node.map(node_state),
        last_failure,
        disruption: record.status.as_ref().and_then(WindowsInstanceStatus::disruption_in_effect).and_then(
            |disruption| {
                let state = if disruption.is_requested() {
                    RequestState::Requested
                } else if disruption.is_under_way() {
                    RequestState::Granted
                } else {
                    return None;
                };
                Some(RequestedDisruption { kind: disruption.kind, state })
            },
        ),
    }
}

/// The planner's view of a Node.
pub(crate) fn node_state(node: &Node) -> NodeState {
    let upgrading = node.is_marked();
    NodeState {
        ready: node.is_ready(),
        cordoned_by: node.is_unschedulable().then_some(if upgrading {
            CordonedBy::Operator
        } else {
            CordonedBy::Other
        }),
        configured_version: node.annotation(VERSION_ANNOTATION).and_then(|text| Version::parse(text).ok()),
        upgrading,
        pub_key_hash: node.annotation(PUB_KEY_HASH_ANNOTATION).map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use wmco_cluster_client::fake::{FakeInstanceRecords, FakeNodes, objects};
    use wmco_cluster_client::names::UPGRADING_LABEL;
    use wmco_cluster_client::types::WindowsInstanceStatus;

    use super::*;

    fn node(name: &str, marked: bool, unschedulable: bool) -> Node {
        let node = objects::node(name).annotated(VERSION_ANNOTATION, "1.0.0").unschedulable(unschedulable);
        if marked { node.labelled(UPGRADING_LABEL, "true") } else { node }.ready().build()
    }

    #[tokio::test]
    async fn records_come_in_name_order_each_with_its_node_when_registered() {
        let records = FakeInstanceRecords::default();
        let nodes = FakeNodes::default();
        for (name, node_name) in [("b", Some("win-b")), ("a", None), ("c", Some("win-gone")), ("d", Some("master-0"))] {
            let record =
                records.apply(&objects::record(name).in_namespace("wmco").byoh("10.0.0.5").build()).await.unwrap();
            let status =
                WindowsInstanceStatus { expected_node_name: node_name.map(str::to_owned), ..Default::default() };
            records.apply_status("wmco", name, &status).await.unwrap();
            if name == "b" {
                nodes.insert(objects::node("win-b").annotated(VERSION_ANNOTATION, "1.0.0").owned_by(&record).build());
            }
        }
        // A Node the record expects by name but that is not its own is never the record's.
        nodes.insert(node("master-0", false, false));

        let observed = observe_instances(&records, &nodes, "wmco").await.unwrap();
        let seen: Vec<_> = observed.iter().map(|observed| (observed.name(), observed.node_name())).collect();
        assert_eq!(seen, [("a", None), ("b", Some("win-b")), ("c", None), ("d", None)]);
        assert_eq!(observed[1].record.key(), "wmco/b");
        assert!(observe_instances(&records, &nodes, "other").await.unwrap().is_empty());
    }

    fn ready_record(status: WindowsInstanceStatus) -> WindowsInstance {
        let mut record = objects::record("r").in_namespace("wmco").byoh("10.0.0.5").build();
        record.status = Some(WindowsInstanceStatus { phase: Some(wmco_vocabulary::InstancePhase::Ready), ..status });
        record
    }

    #[test]
    fn a_disruption_under_way_is_granted_and_counts_as_unavailable_and_a_request_is_requested() {
        use wmco_cluster_client::types::{DisruptionState, RebootState};
        use wmco_vocabulary::DisruptionKind;
        let rebooting =
            planner_instance(&ready_record(objects::status().reboot(DisruptionState::Restarting).build()), None, None);
        assert_eq!(rebooting.disruption_granted(), Some(DisruptionKind::Reboot));
        assert!(rebooting.is_unavailable_by_operator());
        // A reboot an older operator recorded in the deprecated `status.reboot` counts the same.
        let legacy = objects::status().legacy_reboot(RebootState::Requested).build();
        assert!(planner_instance(&ready_record(legacy), None, None).is_unavailable_by_operator());
        let requested =
            planner_instance(&ready_record(objects::status().reboot(DisruptionState::Requested).build()), None, None);
        assert_eq!(requested.disruption_requested(), Some(DisruptionKind::Reboot));
        assert!(!requested.is_unavailable_by_operator(), "a request holds no budget");
        let done =
            planner_instance(&ready_record(objects::status().reboot(DisruptionState::Completed).build()), None, None);
        assert_eq!((done.disruption, done.is_unavailable_by_operator()), (None, false));
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
