//! `machine.openshift.io/v1beta1` Machine and MachineSet, as far as the operator reads them: a Windows Machine's
//! phase, addresses, provider ID and Node reference, and a MachineSet's replica counts.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::OtherFields;

/// The desired state of a Machine; the operator reads only the provider ID.
///
/// ```
/// use wmco_cluster_client::types::Machine;
///
/// let machine: Machine = serde_json::from_value(serde_json::json!({
///     "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
///     "metadata": {"name": "win-a", "namespace": "openshift-machine-api"},
///     "spec": {"providerID": "aws:///us-east-1a/i-0abc", "providerSpec": {"value": {}}},
///     "status": {"phase": "Running", "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]}
/// })).unwrap();
/// assert_eq!(machine.spec.provider_id.as_deref(), Some("aws:///us-east-1a/i-0abc"));
/// assert!(machine.spec.other.contains_key("providerSpec"));
/// ```
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "machine.openshift.io",
    version = "v1beta1",
    kind = "Machine",
    namespaced,
    status = "MachineStatus",
    schema = "disabled"
)]
pub struct MachineSpec {
    /// The cloud provider's identifier of the instance; its last `/` segment is the instance ID.
    #[serde(rename = "providerID", default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The observed state of a Machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineStatus {
    /// `Provisioning`, `Provisioned`, `Running`, `Deleting`, `Failed`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The instance's addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<MachineAddress>,
    /// The Node this Machine became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<NodeRef>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// One address of a Machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineAddress {
    /// `InternalIP`, `ExternalIP`, `InternalDNS`, `ExternalDNS` or `Hostname`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The address.
    pub address: String,
}

/// The reference from a Machine to its Node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeRef {
    /// The Node's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The Node's UID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The desired state of a MachineSet; the operator reads only the replica count.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "machine.openshift.io",
    version = "v1beta1",
    kind = "MachineSet",
    namespaced,
    status = "MachineSetStatus",
    schema = "disabled"
)]
pub struct MachineSetSpec {
    /// How many Machines the set keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The observed state of a MachineSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineSetStatus {
    /// How many Machines exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// How many Machines have a Ready Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}
