//! Object builders for tests (the controller-rs `fixtures.rs` and linkerd `mk_*` style): each starts from the
//! smallest object of its kind a controller would see and adds only what a test says, so a test reads as the
//! situation it sets up instead of a JSON literal.
//!
//! ```
//! use wmco_cluster_client::NodeExt;
//! use wmco_cluster_client::fake::objects::{machine, record, windows_node};
//! use wmco_cluster_client::names::VERSION_ANNOTATION;
//! use wmco_cluster_client::types::InstancePhase;
//!
//! let node = windows_node("win-1").ready().annotated(VERSION_ANNOTATION, "1.0.0").build();
//! assert!(node.is_ready());
//! let machine = machine("m").running().internal_ip("10.0.0.5").build();
//! assert_eq!(machine.status.unwrap().phase.as_deref(), Some("Running"));
//! let record = record("byoh-10-0-0-5").byoh("10.0.0.5").phase(InstancePhase::Ready).build();
//! assert_eq!(record.spec.address, "10.0.0.5");
//! ```

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestSpec,
    CertificateSigningRequestStatus,
};
use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::ObjectMeta;

use crate::names::{KUBERNETES_OS_LABEL, MACHINE_API_NAMESPACE, MACHINE_OS_ID_LABEL, OS_ID_WINDOWS};
use crate::types::{
    DisruptionState, HostDisruption, HostReboot, InstanceOrigin, InstancePhase, Machine, MachineAddress, MachineSpec,
    MachineStatus, NodeRef, RebootState, WindowsInstance, WindowsInstanceSpec, WindowsInstanceStatus,
};

/// The namespace [`record`] puts its `WindowsInstance` in unless told otherwise.
pub const SAMPLE_NAMESPACE: &str = "wmco";

/// The SSH user a [`record`] is reached as unless [`RecordBuilder::username`] says otherwise.
pub const SAMPLE_USERNAME: &str = "admin";

/// Sets `key` to `value` in a label or annotation map that may not exist yet.
fn insert(map: &mut Option<BTreeMap<String, String>>, key: &str, value: &str) {
    map.get_or_insert_with(BTreeMap::new).insert(key.to_owned(), value.to_owned());
}

/// A Node with no labels, spec or status yet; see [`NodeBuilder`].
pub fn node(name: &str) -> NodeBuilder {
    NodeBuilder(Node {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        ..Node::default()
    })
}

/// A Node labelled `kubernetes.io/os=windows`, with no spec or status yet; see [`NodeBuilder`].
pub fn windows_node(name: &str) -> NodeBuilder {
    node(name).labelled(KUBERNETES_OS_LABEL, "windows")
}

/// Builds a [`Node`]: start with [`windows_node`] or [`node`], end with [`NodeBuilder::build`].
#[derive(Clone, Debug)]
pub struct NodeBuilder(Node);

impl NodeBuilder {
    /// With the condition `Ready=True`.
    pub fn ready(self) -> Self {
        self.ready_if(true)
    }

    /// With the condition `Ready` `True` if `ready`, else `False`.
    pub fn ready_if(mut self, ready: bool) -> Self {
        let condition = NodeCondition {
            type_: "Ready".to_owned(),
            status: if ready { "True" } else { "False" }.to_owned(),
            ..NodeCondition::default()
        };
        self.status().conditions.get_or_insert_with(Vec::new).push(condition);
        self
    }

    /// With every condition so far last heard of at `at` (`lastHeartbeatTime`).
    pub fn heartbeat(mut self, at: Timestamp) -> Self {
        for condition in self.status().conditions.iter_mut().flatten() {
            condition.last_heartbeat_time = Some(Time(at));
        }
        self
    }

    /// With the label `key=value`.
    pub fn labelled(mut self, key: &str, value: &str) -> Self {
        insert(&mut self.0.metadata.labels, key, value);
        self
    }

    /// With the annotation `key: value`.
    pub fn annotated(mut self, key: &str, value: &str) -> Self {
        insert(&mut self.0.metadata.annotations, key, value);
        self
    }

    /// Claimed by `record`, as the operator claims its host's Node: `record`'s UID in
    /// [`INSTANCE_UID_ANNOTATION`](crate::names::INSTANCE_UID_ANNOTATION). `record` must have been applied (the
    /// fake, like the API server, gives it its UID).
    pub fn owned_by(self, record: &WindowsInstance) -> Self {
        let uid = record.metadata.uid.as_deref().expect("an applied record has a UID");
        self.annotated(crate::names::INSTANCE_UID_ANNOTATION, uid)
    }

    /// With `spec.unschedulable` set to `unschedulable` (cordoned when `true`).
    pub fn unschedulable(mut self, unschedulable: bool) -> Self {
        self.0.spec.get_or_insert_with(NodeSpec::default).unschedulable = Some(unschedulable);
        self
    }

    /// With the address `address` of type `type_` (`InternalIP`, `Hostname`, …) after those already there.
    pub fn address(mut self, type_: &str, address: &str) -> Self {
        let address = NodeAddress { type_: type_.to_owned(), address: address.to_owned() };
        self.status().addresses.get_or_insert_with(Vec::new).push(address);
        self
    }

    /// With the `InternalIP` address `address`.
    pub fn internal_ip(self, address: &str) -> Self {
        self.address("InternalIP", address)
    }

    /// The Node.
    pub fn build(self) -> Node {
        self.0
    }

    fn status(&mut self) -> &mut NodeStatus {
        self.0.status.get_or_insert_with(NodeStatus::default)
    }
}

impl From<NodeBuilder> for Node {
    fn from(builder: NodeBuilder) -> Node {
        builder.build()
    }
}

/// A Machine in `openshift-machine-api` with an empty spec and no status; see [`MachineBuilder`].
pub fn machine(name: &str) -> MachineBuilder {
    let mut machine = Machine::new(name, MachineSpec::default());
    machine.metadata.namespace = Some(MACHINE_API_NAMESPACE.to_owned());
    MachineBuilder(machine)
}

/// Builds a [`Machine`]: start with [`machine`], end with [`MachineBuilder::build`].
#[derive(Clone, Debug)]
pub struct MachineBuilder(Machine);

impl MachineBuilder {
    /// In namespace `namespace` instead of `openshift-machine-api`.
    pub fn in_namespace(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.to_owned());
        self
    }

    /// Labelled as a Windows Machine (`machine.openshift.io/os-id=Windows`).
    pub fn windows(self) -> Self {
        self.labelled(MACHINE_OS_ID_LABEL, OS_ID_WINDOWS)
    }

    /// With the label `key=value`.
    pub fn labelled(mut self, key: &str, value: &str) -> Self {
        insert(&mut self.0.metadata.labels, key, value);
        self
    }

    /// With the annotation `key: value`.
    pub fn annotated(mut self, key: &str, value: &str) -> Self {
        insert(&mut self.0.metadata.annotations, key, value);
        self
    }

    /// With `metadata.uid`.
    pub fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.to_owned());
        self
    }

    /// Created at `at`.
    pub fn created_at(mut self, at: Timestamp) -> Self {
        self.0.metadata.creation_timestamp = Some(Time(at));
        self
    }

    /// Being deleted since `at`, held by `finalizer`.
    pub fn deleting_since(mut self, at: Timestamp, finalizer: &str) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(at));
        self.0.metadata.finalizers.get_or_insert_with(Vec::new).push(finalizer.to_owned());
        self
    }

    /// With `spec.providerID`.
    pub fn provider_id(mut self, provider_id: &str) -> Self {
        self.0.spec.provider_id = Some(provider_id.to_owned());
        self
    }

    /// In `status.phase` `phase` (`Provisioning`, `Provisioned`, `Running`, `Deleting`, …).
    pub fn phase(mut self, phase: &str) -> Self {
        self.status().phase = Some(phase.to_owned());
        self
    }

    /// In phase `Running`.
    pub fn running(self) -> Self {
        self.phase("Running")
    }

    /// With the address `address` of type `type_` (`InternalIP`, `InternalDNS`, …) after those already there.
    pub fn address(mut self, type_: &str, address: &str) -> Self {
        self.status().addresses.push(MachineAddress { type_: type_.to_owned(), address: address.to_owned() });
        self
    }

    /// With the `InternalIP` address `address`.
    pub fn internal_ip(self, address: &str) -> Self {
        self.address("InternalIP", address)
    }

    /// With the `InternalDNS` address `name`.
    pub fn internal_dns(self, name: &str) -> Self {
        self.address("InternalDNS", name)
    }

    /// With `status.nodeRef` naming the Node `node`.
    pub fn node_ref(mut self, node: &str) -> Self {
        self.status().node_ref = Some(NodeRef { name: Some(node.to_owned()), ..NodeRef::default() });
        self
    }

    /// The Machine.
    pub fn build(self) -> Machine {
        self.0
    }

    fn status(&mut self) -> &mut MachineStatus {
        self.0.status.get_or_insert_with(MachineStatus::default)
    }
}

impl From<Machine> for MachineBuilder {
    /// Continues building from an existing Machine (one read back from a fake, say).
    fn from(machine: Machine) -> MachineBuilder {
        MachineBuilder(machine)
    }
}

impl From<MachineBuilder> for Machine {
    fn from(builder: MachineBuilder) -> Machine {
        builder.build()
    }
}

/// A `WindowsInstance` in [`SAMPLE_NAMESPACE`] for a BYOH host reached as [`SAMPLE_USERNAME`], with no address
/// yet and no status; see [`RecordBuilder`].
pub fn record(name: &str) -> RecordBuilder {
    let spec = WindowsInstanceSpec {
        address: String::new(),
        username: SAMPLE_USERNAME.to_owned(),
        origin: InstanceOrigin::Byoh,
        machine_name: None,
        expected_node_name: None,
    };
    let mut record = WindowsInstance::new(name, spec);
    record.metadata.namespace = Some(SAMPLE_NAMESPACE.to_owned());
    RecordBuilder(record)
}

/// Builds a [`WindowsInstance`]: start with [`record`], end with [`RecordBuilder::build`].
#[derive(Clone, Debug)]
pub struct RecordBuilder(WindowsInstance);

impl RecordBuilder {
    /// In namespace `namespace` instead of [`SAMPLE_NAMESPACE`].
    pub fn in_namespace(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.to_owned());
        self
    }

    /// A BYOH host at `address` (a windows-instances entry).
    pub fn byoh(mut self, address: &str) -> Self {
        self.0.spec.origin = InstanceOrigin::Byoh;
        self.0.spec.address = address.to_owned();
        self.0.spec.machine_name = None;
        self
    }

    /// The host of the Windows Machine `machine` at `address`.
    pub fn from_machine(mut self, machine: &str, address: &str) -> Self {
        self.0.spec.origin = InstanceOrigin::Machine;
        self.0.spec.address = address.to_owned();
        self.0.spec.machine_name = Some(machine.to_owned());
        self
    }

    /// With `spec.expectedNodeName` `node`: the Node name its Machine decides.
    pub fn expecting_node(mut self, node: &str) -> Self {
        self.0.spec.expected_node_name = Some(node.to_owned());
        self
    }

    /// Reached as `username` instead of [`SAMPLE_USERNAME`].
    pub fn username(mut self, username: &str) -> Self {
        self.0.spec.username = username.to_owned();
        self
    }

    /// With `status`, replacing any status set before (build it with [`status`]).
    pub fn status(mut self, status: impl Into<WindowsInstanceStatus>) -> Self {
        self.0.status = Some(status.into());
        self
    }

    /// In status phase `phase`.
    pub fn phase(mut self, phase: InstancePhase) -> Self {
        self.0.status.get_or_insert_with(WindowsInstanceStatus::default).phase = Some(phase);
        self
    }

    /// With the status' pinned host key `key` (`TYPE BASE64`).
    pub fn pinned_host_key(mut self, key: &str) -> Self {
        self.0.status.get_or_insert_with(WindowsInstanceStatus::default).pinned_host_key = Some(key.to_owned());
        self
    }

    /// The record.
    pub fn build(self) -> WindowsInstance {
        self.0
    }
}

impl From<RecordBuilder> for WindowsInstance {
    fn from(builder: RecordBuilder) -> WindowsInstance {
        builder.build()
    }
}

/// An empty `WindowsInstance` status, for `InstanceRecords::apply_status` or [`RecordBuilder::status`]; see
/// [`StatusBuilder`].
///
/// ```
/// use wmco_cluster_client::fake::objects::status;
/// use wmco_cluster_client::types::InstancePhase;
///
/// let status = status().phase(InstancePhase::Ready).expected_node_name("win-a").build();
/// assert_eq!(status.expected_node_name.as_deref(), Some("win-a"));
/// ```
pub fn status() -> StatusBuilder {
    StatusBuilder(WindowsInstanceStatus::default())
}

/// Builds a [`WindowsInstanceStatus`]: start with [`status`], end with [`StatusBuilder::build`].
#[derive(Clone, Debug)]
pub struct StatusBuilder(WindowsInstanceStatus);

impl StatusBuilder {
    /// In phase `phase`.
    pub fn phase(mut self, phase: InstancePhase) -> Self {
        self.0.phase = Some(phase);
        self
    }

    /// Expecting the Node `name`.
    pub fn expected_node_name(mut self, name: &str) -> Self {
        self.0.expected_node_name = Some(name.to_owned());
        self
    }

    /// Configured at operator version `version`.
    pub fn configured_version(mut self, version: &str) -> Self {
        self.0.configured_version = Some(version.to_owned());
        self
    }

    /// With the last error `message`.
    pub fn last_error(mut self, message: &str) -> Self {
        self.0.last_error = Some(message.to_owned());
        self
    }

    /// With a reboot for the `Containers` feature in `state`, requested now, the host's boot before it `/Date(1)/`,
    /// no Node.
    pub fn reboot(mut self, state: DisruptionState) -> Self {
        self.0.disruption =
            Some(HostDisruption { state, ..HostDisruption::from(legacy_reboot(RebootState::Requested)) });
        self
    }

    /// With the reboot an operator before `status.disruption` recorded (the deprecated `status.reboot`) in `state`,
    /// like [`StatusBuilder::reboot`].
    pub fn legacy_reboot(mut self, state: RebootState) -> Self {
        self.0.reboot = Some(legacy_reboot(state));
        self
    }

    /// The status.
    pub fn build(self) -> WindowsInstanceStatus {
        self.0
    }
}

impl From<StatusBuilder> for WindowsInstanceStatus {
    fn from(builder: StatusBuilder) -> WindowsInstanceStatus {
        builder.build()
    }
}

/// A CertificateSigningRequest carrying the PEM `request` for `signer`, with no requester, usages or status yet;
/// see [`CsrBuilder`].
pub fn csr(name: &str, signer: &str, request: &str) -> CsrBuilder {
    CsrBuilder(CertificateSigningRequest {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request.as_bytes().to_vec()),
            signer_name: signer.to_owned(),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    })
}

/// Builds a [`CertificateSigningRequest`]: start with [`csr`], end with [`CsrBuilder::build`].
#[derive(Clone, Debug)]
pub struct CsrBuilder(CertificateSigningRequest);

impl CsrBuilder {
    /// With `metadata.resourceVersion`.
    pub fn resource_version(mut self, version: &str) -> Self {
        self.0.metadata.resource_version = Some(version.to_owned());
        self
    }

    /// Created at `at`.
    pub fn created_at(mut self, at: Timestamp) -> Self {
        self.0.metadata.creation_timestamp = Some(Time(at));
        self
    }

    /// Requested by `username`, member of `groups`.
    pub fn requested_by(mut self, username: &str, groups: &[&str]) -> Self {
        self.0.spec.username = Some(username.to_owned());
        self.0.spec.groups = Some(groups.iter().map(|group| (*group).to_owned()).collect());
        self
    }

    /// Asking for the key usages `usages` (`digital signature`, `client auth`, …).
    pub fn usages(mut self, usages: &[&str]) -> Self {
        self.0.spec.usages = Some(usages.iter().map(|usage| (*usage).to_owned()).collect());
        self
    }

    /// Approved the way `kubectl certificate approve` does, and issued `certificate`.
    pub fn approved_and_issued(mut self, certificate: &str) -> Self {
        let approved = CertificateSigningRequestCondition {
            type_: "Approved".to_owned(),
            status: "True".to_owned(),
            reason: Some("KubectlApprove".to_owned()),
            message: Some("This CSR was approved by kubectl certificate approve.".to_owned()),
            ..CertificateSigningRequestCondition::default()
        };
        self.0.status = Some(CertificateSigningRequestStatus {
            conditions: Some(vec![approved]),
            certificate: Some(ByteString(certificate.as_bytes().to_vec())),
        });
        self
    }

    /// The CSR.
    pub fn build(self) -> CertificateSigningRequest {
        self.0
    }
}

impl From<CertificateSigningRequest> for CsrBuilder {
    /// Continues building from an existing CSR.
    fn from(csr: CertificateSigningRequest) -> CsrBuilder {
        CsrBuilder(csr)
    }
}

impl From<CsrBuilder> for CertificateSigningRequest {
    fn from(builder: CsrBuilder) -> CertificateSigningRequest {
        builder.build()
    }
}

/// A legacy reboot for the `Containers` feature in `state`, requested now, the host's boot before it `/Date(1)/`, no
/// Node.
fn legacy_reboot(state: RebootState) -> HostReboot {
    HostReboot {
        reason: "the Windows feature Containers was installed".to_owned(),
        state,
        boot_before: "/Date(1)/".to_owned(),
        requested_at: Time(Timestamp::now()),
        restart_sent_at: None,
        node: None,
        cordoned: false,
        completed_at: None,
    }
}
