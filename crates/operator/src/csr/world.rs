//! Conversions from cluster objects to the approver's World records: `WindowsInstance` → BYOH instance, Node →
//! Node record. Pure functions; the reconcile gathers the objects.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::Node;
use wmco_cluster_client::types::{InstanceOrigin, Phase, WindowsInstance};
use wmco_csr_approver::{
    AddressType, BootstrapApproval, ByohInstance, InstancePhase, ManagedInstance, NodeAddress, NodeRecord,
};

/// The approver's record of a BYOH `WindowsInstance`; `None` for Machine-backed records, whose Machine facts
/// (creation time, addresses, nodeRef) live on the Machine object this controller does not read yet.
///
/// The recorded bootstrap key belongs to the current configuration attempt, so its approval time is taken as the
/// attempt's start (`configuringSince`): rule F2 then treats it as approved within the attempt.
pub(crate) fn managed_instance(instance: &WindowsInstance) -> Option<ManagedInstance> {
    if instance.spec.origin != InstanceOrigin::Byoh {
        return None;
    }
    let status = instance.status.clone().unwrap_or_default();
    let configuring_since = status.configuring_since.map(|time| time.0);
    let bootstrap_approval = match (status.approved_bootstrap_key_sha256, configuring_since) {
        (Some(public_key_sha256), Some(approved_at)) => Some(BootstrapApproval { public_key_sha256, approved_at }),
        _ => None,
    };
    Some(ManagedInstance::Byoh(ByohInstance {
        name: instance.metadata.name.clone().unwrap_or_default(),
        address: instance.spec.address.clone(),
        expected_node_name: status.expected_node_name,
        phase: status.phase.map_or(InstancePhase::Pending, instance_phase),
        configuring_since,
        hostname: status.hostname,
        fqdn: status.fqdn,
        resolved_address: status.resolved_ipv4,
        node_ip: status.node_ip.map(IpAddr::V4),
        bootstrap_approval,
    }))
}

fn instance_phase(phase: Phase) -> InstancePhase {
    match phase {
        Phase::Pending => InstancePhase::Pending,
        Phase::Configuring => InstancePhase::Configuring,
        Phase::WaitingForNode => InstancePhase::WaitingForNode,
        Phase::Ready => InstancePhase::Ready,
        Phase::Upgrading => InstancePhase::Upgrading,
        Phase::Deconfiguring => InstancePhase::Deconfiguring,
        Phase::Failed => InstancePhase::Failed,
    }
}

/// The approver's record of a Node: name, labels, the addresses of known types, deletion timestamp.
pub(crate) fn node_record(node: &Node) -> NodeRecord {
    let addresses = node
        .status
        .iter()
        .flat_map(|status| status.addresses.iter().flatten())
        .filter_map(|address| {
            let address_type = match address.type_.as_str() {
                "Hostname" => AddressType::Hostname,
                "InternalIP" => AddressType::InternalIp,
                "ExternalIP" => AddressType::ExternalIp,
                "InternalDNS" => AddressType::InternalDns,
                "ExternalDNS" => AddressType::ExternalDns,
                _ => return None,
            };
            Some(NodeAddress { address_type, address: address.address.clone() })
        })
        .collect();
    NodeRecord {
        name: node.metadata.name.clone().unwrap_or_default(),
        labels: node.metadata.labels.clone().unwrap_or_default(),
        addresses,
        deletion_timestamp: node.metadata.deletion_timestamp.as_ref().map(|time| time.0),
    }
}
