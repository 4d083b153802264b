//! The host's Node as the flow may touch it: read by the name the host gives it, and the record's only when
//! [`node_claim`] says so. A Node that is evidently the host's and carries no owner gets the record's UID
//! ([`INSTANCE_UID_ANNOTATION`]) before anything else is done to it; one whose owner record is gone is claimed the
//! same way. A Node that is another's, or a name another record already expects, stops the pass with
//! [`FlowError::NodeNameConflict`]: that Node is never labelled, cordoned, drained or deleted, and the record stops
//! expecting the name, so the CSR approver never decides the other Node's requests against it.

use k8s_openapi::api::core::v1::Node;
use wmco_cluster_client::names::INSTANCE_UID_ANNOTATION;
use wmco_cluster_client::types::WindowsInstance;
use wmco_cluster_client::{
    ForeignNode, NodeClaim, NodeMetadataPatch, ResourceExt, WindowsInstanceExt, is_records_node, node_claim,
};

use crate::error::{FlowError, FlowStep};
use crate::identity::HostIdentity;
use crate::pass::ClusterAccess;
use crate::session::HostSession;

/// The host's Node, claimed for `instance` when it is evidently the host's; `None` when no Node has the name and
/// no other record expects it.
///
/// # Errors
/// [`FlowError::NodeNameConflict`] when the Node or the name is another's; [`FlowError::Cluster`] when a read or
/// the claim fails; [`FlowError::Record`] for a record without a UID.
pub(crate) async fn read_own_node(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    instance: &WindowsInstance,
    identity: &HostIdentity,
) -> Result<Option<Node>, FlowError> {
    let name = identity.expected_node_name.as_str();
    let uid = instance
        .metadata
        .uid
        .as_deref()
        .ok_or_else(|| FlowError::Record { instance: instance.name_any(), what: "metadata.uid" })?;
    let cluster_error = |step, source| FlowError::Cluster { host: session.label().to_owned(), step, source };
    let node = cluster.nodes.get(name).await.map_err(|source| cluster_error(FlowStep::ReadNode, source))?;
    let conflict = |reason: String| FlowError::NodeNameConflict {
        host: session.label().to_owned(),
        node: name.to_owned(),
        reason,
    };
    let Some(node) = node else {
        return match earlier_claimant(cluster, instance, name)
            .await
            .map_err(|e| cluster_error(FlowStep::ReadNode, e))?
        {
            Some(other) => Err(conflict(format!("WindowsInstance {other} already expects it"))),
            None => Ok(None),
        };
    };
    match node_claim(&node, uid, identity.node_ip) {
        NodeClaim::Owned => Ok(Some(node)),
        NodeClaim::Claimable => claim(session, cluster, name, uid).await.map(Some),
        NodeClaim::Foreign(ForeignNode::OwnedByAnother { owner_uid, claimable_if_orphaned }) => {
            let owner = record_with_uid(cluster, instance, &owner_uid)
                .await
                .map_err(|source| cluster_error(FlowStep::ReadNode, source))?;
            match owner {
                None if claimable_if_orphaned => claim(session, cluster, name, uid).await.map(Some),
                None => Err(conflict(format!(
                    "it belongs to WindowsInstance UID {owner_uid}, which is gone, and is not this host's"
                ))),
                Some(owner) => Err(conflict(format!("it belongs to WindowsInstance {owner}"))),
            }
        }
        NodeClaim::Foreign(foreign) => Err(conflict(foreign.to_string())),
    }
}

/// The recorded Node of `instance` when it is the record's ([`NodeClaim::is_ours`]), for deconfiguration: a Node
/// that is another's is left alone (logged), never cordoned, drained or deleted.
///
/// # Errors
/// [`FlowError::Cluster`] when the read fails.
pub(crate) async fn recorded_node_if_ours(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    instance: &WindowsInstance,
    name: &str,
) -> Result<Option<Node>, FlowError> {
    let node = cluster.nodes.get(name).await.map_err(|source| FlowError::Cluster {
        host: session.label().to_owned(),
        step: FlowStep::ReadNode,
        source,
    })?;
    match node {
        Some(node) if is_records_node(&node, instance) => Ok(Some(node)),
        Some(_) => {
            tracing::warn!(host = session.label(), node = name, "the Node is not the host's: left alone");
            Ok(None)
        }
        None => Ok(None),
    }
}

/// Writes `uid` on the Node `name`.
async fn claim(session: &HostSession, cluster: ClusterAccess<'_>, name: &str, uid: &str) -> Result<Node, FlowError> {
    let patch = NodeMetadataPatch::default().set_annotation(INSTANCE_UID_ANNOTATION, uid);
    let node = cluster.nodes.patch_metadata(name, &patch).await.map_err(|source| FlowError::Cluster {
        host: session.label().to_owned(),
        step: FlowStep::ClaimNode,
        source,
    })?;
    tracing::info!(host = session.label(), node = name, "Node claimed for the record");
    Ok(node)
}

/// The `namespace/name` of the live record in `instance`'s namespace whose UID is `uid`.
async fn record_with_uid(
    cluster: ClusterAccess<'_>,
    instance: &WindowsInstance,
    uid: &str,
) -> Result<Option<String>, wmco_cluster_client::Error> {
    let records = cluster.records.list(&instance.namespace().unwrap_or_default()).await?;
    Ok(records.iter().find(|record| record.metadata.uid.as_deref() == Some(uid)).map(WindowsInstanceExt::key))
}

/// The name of another live record that expects the Node `name` and came first (older, or as old and sorting
/// first by name): that record keeps the name and `instance` is refused.
async fn earlier_claimant(
    cluster: ClusterAccess<'_>,
    instance: &WindowsInstance,
    name: &str,
) -> Result<Option<String>, wmco_cluster_client::Error> {
    let records = cluster.records.list(&instance.namespace().unwrap_or_default()).await?;
    let order =
        |record: &WindowsInstance| (record.metadata.creation_timestamp.clone().map(|time| time.0), record.name_any());
    let own_order = order(instance);
    Ok(records
        .iter()
        .filter(|other| other.metadata.uid != instance.metadata.uid && other.metadata.deletion_timestamp.is_none())
        .filter(|other| expected_name(other).is_some_and(|expected| expected.eq_ignore_ascii_case(name)))
        .find(|other| order(other) < own_order)
        .map(WindowsInstanceExt::key))
}

/// The Node name a record expects: recorded in its status, or decided in its spec (a Machine's).
fn expected_name(record: &WindowsInstance) -> Option<&str> {
    record
        .status
        .as_ref()
        .and_then(|status| status.expected_node_name.as_deref())
        .or(record.spec.expected_node_name.as_deref())
}
