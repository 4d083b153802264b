//! Conversions from cluster objects to the approver's World records: `WindowsInstance` → BYOH instance,
//! `WindowsInstance` + its Machine → Machine instance, Node → Node record. Pure functions; the reconcile gathers the
//! objects, and so does `wmco diagnose`, which explains a node's CSRs with the same World.

use std::net::IpAddr;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use wmco_cluster_client::NodeExt;
use wmco_cluster_client::names::INSTANCE_UID_ANNOTATION;
use wmco_cluster_client::types::{InstanceOrigin, Machine, WindowsInstance, WindowsInstanceStatus};
use wmco_csr_approver::{
    AddressType, BootstrapApproval, ByohInstance, MachineInstance, ManagedInstance, NodeAddress, NodeRecord,
};

/// The approver's record of a BYOH `WindowsInstance`; `None` for Machine-backed records, whose Machine facts
/// (creation time, addresses, nodeRef) come with [`machine_instance`].
///
/// The recorded bootstrap key belongs to the current configuration attempt, so its approval time is taken as the
/// attempt's start (`configuringSince`): rule F2 then treats it as approved within the attempt.
///
/// ```
/// use wmco_cluster_client::fake::objects;
/// use wmco_csr_approver::ManagedInstance;
/// let record = objects::record("byoh-10-0-0-5").byoh("10.0.0.5").build();
/// let Some(ManagedInstance::Byoh(instance)) = wmco_operator::csr::managed_instance(&record) else { panic!() };
/// assert_eq!((instance.name.as_str(), instance.address.as_str()), ("byoh-10-0-0-5", "10.0.0.5"));
/// ```
pub fn managed_instance(instance: &WindowsInstance) -> Option<ManagedInstance> {
    if instance.spec.origin != InstanceOrigin::Byoh {
        return None;
    }
    let status = instance.status.clone().unwrap_or_default();
    let configuring_since = status.configuring_since.as_ref().map(|time| time.0);
    let bootstrap_approval = bootstrap_approval(&status, None);
    Some(ManagedInstance::Byoh(ByohInstance {
        name: instance.name_any(),
        uid: instance.metadata.uid.clone(),
        address: instance.spec.address.clone(),
        expected_node_name: status.expected_node_name,
        phase: status.phase.unwrap_or_default(),
        configuring_since,
        hostname: status.hostname,
        fqdn: status.fqdn,
        resolved_address: status.resolved_ipv4,
        node_ip: status.node_ip.map(IpAddr::V4),
        bootstrap_approval,
    }))
}

/// The approver's record of a Machine-backed `WindowsInstance` and its `machine`: creation time, addresses and
/// nodeRef from the Machine; the expected Node name (recorded, else decided in the spec) and the bootstrap approval
/// from the record. `None` for a BYOH record or a Machine without a creation timestamp.
///
/// ```
/// use wmco_cluster_client::fake::objects;
/// let byoh = objects::record("byoh-10-0-0-5").byoh("10.0.0.5").build();
/// let machine = objects::machine("win-a").created_at("2026-11-22T11:00:00Z".parse()?).build();
/// assert_eq!(wmco_operator::csr::machine_instance(&byoh, &machine), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn machine_instance(instance: &WindowsInstance, machine: &Machine) -> Option<ManagedInstance> {
    if instance.spec.origin != InstanceOrigin::Machine {
        return None;
    }
    let creation_timestamp = machine.metadata.creation_timestamp.as_ref()?.0;
    let status = instance.status.clone().unwrap_or_default();
    let machine_status = machine.status.as_ref();
    Some(ManagedInstance::Machine(MachineInstance {
        name: machine.name_any(),
        uid: instance.metadata.uid.clone(),
        expected_node_name: status.expected_node_name.clone().or_else(|| instance.spec.expected_node_name.clone()),
        creation_timestamp,
        addresses: machine_status
            .iter()
            .flat_map(|status| status.addresses.iter())
            .filter_map(|address| node_address(&address.type_, &address.address))
            .collect(),
        node_ref: machine_status.and_then(|status| status.node_ref.as_ref()).and_then(|node_ref| node_ref.name.clone()),
        bootstrap_approval: bootstrap_approval(&status, Some(creation_timestamp)),
    }))
}

/// The recorded bootstrap key belongs to the current configuration attempt, so its approval time is taken as the
/// attempt's start: `configuringSince`, or before the first configuration pass stamped it, `attempt_start` (a
/// Machine's creation: its kubelet may bootstrap from then on, rule F1). `None` without a key, or without either time
/// (a BYOH record, whose kubelet bootstraps only once `configuringSince` is stamped).
fn bootstrap_approval(status: &WindowsInstanceStatus, attempt_start: Option<Timestamp>) -> Option<BootstrapApproval> {
    let approved_at = status.configuring_since.as_ref().map(|since| since.0).or(attempt_start)?;
    let public_key_sha256 = status.approved_bootstrap_key_sha256.clone()?;
    Some(BootstrapApproval { public_key_sha256, approved_at })
}

/// The approver's record of a Node: name, labels, the addresses of known types, deletion timestamp.
///
/// ```
/// use wmco_cluster_client::fake::objects;
/// let node = wmco_operator::csr::node_record(&objects::windows_node("win-1").build());
/// assert_eq!(node.name, "win-1");
/// ```
pub fn node_record(node: &Node) -> NodeRecord {
    let addresses = node
        .status
        .iter()
        .flat_map(|status| status.addresses.iter().flatten())
        .filter_map(|address| node_address(&address.type_, &address.address))
        .collect();
    NodeRecord {
        name: node.name_any(),
        labels: node.metadata.labels.clone().unwrap_or_default(),
        addresses,
        deletion_timestamp: node.metadata.deletion_timestamp.as_ref().map(|time| time.0),
        owner_uid: node.annotation(INSTANCE_UID_ANNOTATION).map(str::to_owned),
    }
}

/// A Node or Machine address of a known type.
fn node_address(address_type: &str, address: &str) -> Option<NodeAddress> {
    let address_type = match address_type {
        "Hostname" => AddressType::Hostname,
        "InternalIP" => AddressType::InternalIp,
        "ExternalIP" => AddressType::ExternalIp,
        "InternalDNS" => AddressType::InternalDns,
        "ExternalDNS" => AddressType::ExternalDns,
        _ => return None,
    };
    Some(NodeAddress { address_type, address: address.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wmco_cluster_client::fake::objects;
    use wmco_cluster_client::types::WindowsInstanceSpec;

    fn record(origin: InstanceOrigin) -> WindowsInstance {
        let mut record = WindowsInstance::new(
            "machine-win-a",
            WindowsInstanceSpec {
                address: "10.0.1.5".into(),
                username: "Administrator".into(),
                origin,
                machine_name: Some("win-a".into()),
                expected_node_name: Some("ip-10-0-1-5.ec2.internal".into()),
            },
        );
        record.status = Some(WindowsInstanceStatus {
            approved_bootstrap_key_sha256: Some("ab".into()),
            configuring_since: Some("2026-11-22T11:30:00Z".parse::<jiff::Timestamp>().unwrap().into()),
            ..WindowsInstanceStatus::default()
        });
        record
    }

    fn machine(node_ref: Option<&str>) -> Machine {
        let machine = objects::machine("win-a")
            .created_at("2026-11-22T11:00:00Z".parse().unwrap())
            .internal_ip("10.0.1.5")
            .internal_dns("ip-10-0-1-5.ec2.internal")
            .address("Unknown", "x");
        match node_ref {
            Some(node) => machine.node_ref(node).build(),
            None => machine.build(),
        }
    }

    #[test]
    fn a_machine_record_with_its_machine_becomes_a_machine_instance() {
        let instance = machine_instance(&record(InstanceOrigin::Machine), &machine(Some("ip-10-0-1-5.ec2.internal")));
        assert_eq!(
            instance,
            Some(ManagedInstance::Machine(MachineInstance {
                name: "win-a".into(),
                uid: None,
                expected_node_name: Some("ip-10-0-1-5.ec2.internal".into()),
                creation_timestamp: "2026-11-22T11:00:00Z".parse().unwrap(),
                addresses: vec![
                    NodeAddress { address_type: AddressType::InternalIp, address: "10.0.1.5".into() },
                    NodeAddress { address_type: AddressType::InternalDns, address: "ip-10-0-1-5.ec2.internal".into() },
                ],
                node_ref: Some("ip-10-0-1-5.ec2.internal".into()),
                bootstrap_approval: Some(BootstrapApproval {
                    public_key_sha256: "ab".into(),
                    approved_at: "2026-11-22T11:30:00Z".parse().unwrap(),
                }),
            }))
        );
        assert_eq!(managed_instance(&record(InstanceOrigin::Machine)), None);
        assert_eq!(machine_instance(&record(InstanceOrigin::Byoh), &machine(None)), None);
    }

    #[test]
    fn a_machines_key_recorded_before_its_first_pass_binds_from_the_machines_creation() {
        let mut record = record(InstanceOrigin::Machine);
        record.status.as_mut().unwrap().configuring_since = None;
        let Some(ManagedInstance::Machine(instance)) = machine_instance(&record, &machine(None)) else {
            panic!("expected a Machine instance")
        };
        let approved_at = "2026-11-22T11:00:00Z".parse().unwrap();
        assert_eq!(
            instance.bootstrap_approval,
            Some(BootstrapApproval { public_key_sha256: "ab".into(), approved_at })
        );
    }
}
