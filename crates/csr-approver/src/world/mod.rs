//! The [`World`]: what the operator knows when it decides — its managed instances (BYOH and Machine records), the
//! Nodes, the other kubelet CSRs, the cluster's service and pod networks, and the time. Plain serde data, so a
//! decision can be replayed offline; [`World::new`] adds the indexes `decide` uses.

mod index;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use wmco_vocabulary::InstancePhase;

use crate::IpCidr;
use index::WorldIndex;

/// The serialized form of the World.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorldData {
    /// The time of the decision.
    pub now: Timestamp,
    /// The service network CIDRs (`Network.config.openshift.io` `spec.serviceNetwork`).
    #[serde(default)]
    pub service_network: Vec<IpCidr>,
    /// The cluster (pod) network CIDRs.
    #[serde(default)]
    pub cluster_network: Vec<IpCidr>,
    /// The instances the operator manages.
    #[serde(default)]
    pub instances: Vec<ManagedInstance>,
    /// The Nodes, as read (the bootstrap path reads its Node with a live GET just before approving).
    #[serde(default)]
    pub nodes: Vec<NodeRecord>,
    /// Other kubelet-signer CSRs (the one being decided may be among them).
    #[serde(default)]
    pub csrs: Vec<CsrSummary>,
}

/// One instance the operator manages, by where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ManagedInstance {
    /// A host listed in the `windows-instances` ConfigMap.
    Byoh(ByohInstance),
    /// A Windows Machine.
    Machine(MachineInstance),
}

impl ManagedInstance {
    /// The `WindowsInstance` name, for messages.
    pub fn name(&self) -> &str {
        match self {
            Self::Byoh(byoh) => &byoh.name,
            Self::Machine(machine) => &machine.name,
        }
    }

    /// The node name the operator decided for this instance, once recorded.
    pub fn expected_node_name(&self) -> Option<&str> {
        match self {
            Self::Byoh(byoh) => byoh.expected_node_name.as_deref(),
            Self::Machine(machine) => machine.expected_node_name.as_deref(),
        }
    }

    /// The `WindowsInstance` UID, once known: the owner a Node of the instance carries (rule F3).
    pub fn uid(&self) -> Option<&str> {
        match self {
            Self::Byoh(byoh) => byoh.uid.as_deref(),
            Self::Machine(machine) => machine.uid.as_deref(),
        }
    }

    /// The bootstrap approval already recorded for this instance.
    pub fn bootstrap_approval(&self) -> Option<&BootstrapApproval> {
        match self {
            Self::Byoh(byoh) => byoh.bootstrap_approval.as_ref(),
            Self::Machine(machine) => machine.bootstrap_approval.as_ref(),
        }
    }
}

/// The operator's record of a BYOH host, written at configuration time from what it read over SSH.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ByohInstance {
    /// The `WindowsInstance` name.
    pub name: String,
    /// The `WindowsInstance` UID (`metadata.uid`).
    #[serde(default)]
    pub uid: Option<String>,
    /// The ConfigMap key: a DNS name or an IPv4 address.
    pub address: String,
    /// The Node name decided by the cluster's platform (lower-cased: the short hostname, the FQDN on vSphere, the
    /// instance metadata's name on AWS and GCP), recorded before the kubelet starts; passed as
    /// `--hostname-override`.
    #[serde(default)]
    pub expected_node_name: Option<String>,
    /// The `WindowsInstance` phase.
    pub phase: InstancePhase,
    /// When the current configuration attempt started (T0).
    #[serde(default)]
    pub configuring_since: Option<Timestamp>,
    /// The hostname read from the host.
    #[serde(default)]
    pub hostname: Option<String>,
    /// The FQDN read from the host.
    #[serde(default)]
    pub fqdn: Option<String>,
    /// The IPv4 address the ConfigMap key resolved to at configuration time.
    #[serde(default)]
    pub resolved_address: Option<Ipv4Addr>,
    /// The host's default-route address, passed to the kubelet as `--node-ip`.
    #[serde(default)]
    pub node_ip: Option<IpAddr>,
    /// The bootstrap CSR approved during the current attempt.
    #[serde(default)]
    pub bootstrap_approval: Option<BootstrapApproval>,
}

/// The operator's record of a Windows Machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MachineInstance {
    /// The Machine (and `WindowsInstance`) name.
    pub name: String,
    /// The `WindowsInstance` UID (`metadata.uid`).
    #[serde(default)]
    pub uid: Option<String>,
    /// The recorded node name: the Machine name on vSphere and Nutanix, otherwise its `InternalDNS` address.
    #[serde(default)]
    pub expected_node_name: Option<String>,
    /// `Machine.metadata.creationTimestamp`.
    pub creation_timestamp: Timestamp,
    /// `Machine.status.addresses`.
    #[serde(default)]
    pub addresses: Vec<NodeAddress>,
    /// `Machine.status.nodeRef.name`.
    #[serde(default)]
    pub node_ref: Option<String>,
    /// The bootstrap CSR approved for this Machine.
    #[serde(default)]
    pub bootstrap_approval: Option<BootstrapApproval>,
}

/// A bootstrap approval the operator recorded (decided CSRs are garbage-collected after 1 h; the window is 2 h).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BootstrapApproval {
    /// Lowercase hex SHA-256 of the approved request's DER SubjectPublicKeyInfo.
    pub public_key_sha256: String,
    /// When it was approved.
    pub approved_at: Timestamp,
}

/// A Node as the rules need it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeRecord {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// `status.addresses`.
    #[serde(default)]
    pub addresses: Vec<NodeAddress>,
    /// `metadata.deletionTimestamp`.
    #[serde(default)]
    pub deletion_timestamp: Option<Timestamp>,
    /// The UID of the `WindowsInstance` the operator claimed the Node for (annotation
    /// `windowsmachineconfig.openshift.io/instance-uid`); `None` before the claim.
    #[serde(default)]
    pub owner_uid: Option<String>,
}

/// One entry of `status.addresses` (Node or Machine).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeAddress {
    /// The address type.
    #[serde(rename = "type")]
    pub address_type: AddressType,
    /// The address.
    pub address: String,
}

/// The type of a Node or Machine address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AddressType {
    /// `Hostname`.
    Hostname,
    /// `InternalIP`.
    #[serde(rename = "InternalIP")]
    InternalIp,
    /// `ExternalIP`.
    #[serde(rename = "ExternalIP")]
    ExternalIp,
    /// `InternalDNS`.
    #[serde(rename = "InternalDNS")]
    InternalDns,
    /// `ExternalDNS`.
    #[serde(rename = "ExternalDNS")]
    ExternalDns,
}

impl AddressType {
    /// Whether entries of this type hold names (compared with DNS SANs) rather than IPs.
    pub fn holds_name(self) -> bool {
        matches!(self, Self::Hostname | Self::InternalDns | Self::ExternalDns)
    }
}

/// Where a CSR stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CsrState {
    /// No decision yet.
    Pending,
    /// Approved (signed or not).
    Approved,
    /// Denied.
    Denied,
    /// Failed by the signer.
    Failed,
}

/// Another CSR, as much as the pending limit (A6) and one-approval-per-instance (F2) need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CsrSummary {
    /// `metadata.name`.
    pub name: String,
    /// `spec.signerName`.
    pub signer_name: String,
    /// `spec.username`.
    pub username: String,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: Timestamp,
    /// Its state.
    pub state: CsrState,
    /// When it was approved: the later of its `Approved` condition's `lastUpdateTime` and `lastTransitionTime`;
    /// `None` when it is not approved or the condition carries no time (rule F2 then counts it as approved now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at: Option<Timestamp>,
    /// The node names after `system:node:` in its CNs, every one, in subject order: Go's x509 (and so the kubelet
    /// client signer) issues the last CN, other readers take the first.
    #[serde(default)]
    pub node_names: Vec<String>,
    /// Lowercase hex SHA-256 of its SubjectPublicKeyInfo, if readable.
    #[serde(default)]
    pub public_key_sha256: Option<String>,
}

impl CsrSummary {
    /// Whether one of its CNs names `node_name`.
    pub fn names_node(&self, node_name: &str) -> bool {
        self.node_names.iter().any(|named| named == node_name)
    }
}

/// The World with its lookup indexes. Serializes as [`WorldData`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "WorldData", into = "WorldData")]
pub struct World {
    data: WorldData,
    index: WorldIndex,
}

impl World {
    /// Indexes `data` once; every decision against it then uses map lookups.
    ///
    /// ```
    /// use wmco_csr_approver::{World, WorldData};
    /// let world: World = serde_json::from_str(r#"{"now": "2026-11-22T00:00:00Z"}"#)?;
    /// assert!(world.data().instances.is_empty());
    /// let again = World::new(world.data().clone());
    /// assert_eq!(again.data(), world.data());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(data: WorldData) -> Self {
        let index = WorldIndex::build(&data);
        Self { data, index }
    }

    /// The data.
    pub fn data(&self) -> &WorldData {
        &self.data
    }

    /// The instances whose expected node name is exactly `node_name`.
    pub fn instances_named<'a>(&'a self, node_name: &str) -> impl Iterator<Item = &'a ManagedInstance> + 'a {
        let positions = self.index.instances_by_node_name.get(node_name).map_or(&[][..], Vec::as_slice);
        positions.iter().filter_map(|position| self.data.instances.get(*position))
    }

    /// The Node named `node_name`.
    pub fn node(&self, node_name: &str) -> Option<&NodeRecord> {
        self.index.node_by_name.get(node_name).and_then(|position| self.data.nodes.get(*position))
    }

    /// The other CSRs one of whose CNs names `node_name`.
    pub fn csrs_for_node<'a>(&'a self, node_name: &str) -> impl Iterator<Item = &'a CsrSummary> + 'a {
        let positions = self.index.csrs_by_node_name.get(node_name).map_or(&[][..], Vec::as_slice);
        positions.iter().filter_map(|position| self.data.csrs.get(*position))
    }

    /// Undecided kubelet-signer CSRs created in the last 60 minutes that name a managed instance's node or were made
    /// with the bootstrap credential, counting `csr_name` once whether listed or not.
    pub fn recent_pending_count_including(&self, csr_name: &str) -> usize {
        let listed = &self.index.recent_pending_names;
        listed.len() + usize::from(!listed.contains(csr_name))
    }

    /// The limit of rule A6: max(#managed instances, #Windows Nodes) + 100.
    pub fn pending_limit(&self) -> usize {
        self.data.instances.len().max(self.index.windows_node_count) + 100
    }
}

impl From<WorldData> for World {
    fn from(data: WorldData) -> Self {
        Self::new(data)
    }
}

impl From<World> for WorldData {
    fn from(world: World) -> Self {
        world.data
    }
}
