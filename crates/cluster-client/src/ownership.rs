//! Whose a Node is: the `WindowsInstance` whose UID the Node's [`INSTANCE_UID_ANNOTATION`] carries. The operator
//! writes that annotation, and nothing else does, when it first finds a Node that is evidently its host's: a
//! Windows Node (`kubernetes.io/os=windows`) reporting the host's node IP as `InternalIP`, as the kubelet started
//! with `--node-ip` registers it. Before any label, annotation, taint, cordon, drain or delete the operator asks
//! [`node_claim`]: a Node named after a host but owned by another record (two cloned hosts both named `win-app`), a
//! Linux Node (a host that calls itself `master-0`) or a Windows Node at another address is never touched.
//!
//! ```
//! use k8s_openapi::api::core::v1::Node;
//! use wmco_cluster_client::{NodeClaim, node_claim};
//! let node: Node = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "win-app", "labels": {"kubernetes.io/os": "windows"},
//!                  "annotations": {"windowsmachineconfig.openshift.io/instance-uid": "uid-1"}},
//!     "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]}
//! }))?;
//! assert_eq!(node_claim(&node, "uid-1", "10.0.0.5".parse()?), NodeClaim::Owned);
//! assert!(matches!(node_claim(&node, "uid-2", "10.0.0.6".parse()?), NodeClaim::Foreign(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::Node;

use crate::NodeExt;
use crate::names::{INSTANCE_UID_ANNOTATION, KUBERNETES_OS_LABEL};
use crate::types::WindowsInstance;

/// How a Node stands to one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeClaim {
    /// The Node carries the record's UID.
    Owned,
    /// The Node carries no owner and is evidently the record's host's (Windows, reporting the host's node IP as
    /// `InternalIP`): the operator may write the record's UID on it, and then it is [`NodeClaim::Owned`].
    Claimable,
    /// The Node is not the record's.
    Foreign(ForeignNode),
}

impl NodeClaim {
    /// Whether the Node is the record's, claimed or claimable.
    pub fn is_ours(&self) -> bool {
        matches!(self, NodeClaim::Owned | NodeClaim::Claimable)
    }
}

/// Why a Node is not a record's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForeignNode {
    /// Another record's UID is on the Node. The owner may be gone (its record deleted while the Node stayed):
    /// the caller checks whether a record with that UID still exists.
    OwnedByAnother {
        /// The UID on the Node.
        owner_uid: String,
        /// Whether the Node would otherwise be claimable (Windows, the host's node IP): a Node whose owner is gone
        /// may then be claimed.
        claimable_if_orphaned: bool,
    },
    /// The Node is not a Windows Node.
    NotWindows {
        /// Its `kubernetes.io/os` label, if any.
        os: Option<String>,
    },
    /// A Windows Node that reports other addresses than the host's node IP.
    OtherAddress {
        /// Its `InternalIP` addresses.
        internal_ips: Vec<String>,
    },
}

impl fmt::Display for ForeignNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForeignNode::OwnedByAnother { owner_uid, .. } => {
                write!(f, "it belongs to the WindowsInstance with UID {owner_uid}")
            }
            ForeignNode::NotWindows { os: Some(os) } => {
                write!(f, "it is not a Windows Node ({KUBERNETES_OS_LABEL}={os})")
            }
            ForeignNode::NotWindows { os: None } => {
                write!(f, "it is not a Windows Node (no {KUBERNETES_OS_LABEL} label)")
            }
            ForeignNode::OtherAddress { internal_ips } if internal_ips.is_empty() => {
                write!(f, "it reports no InternalIP address, so it cannot be told to be this host's")
            }
            ForeignNode::OtherAddress { internal_ips } => {
                write!(f, "it reports InternalIP {}, not this host's address", internal_ips.join(", "))
            }
        }
    }
}

/// How `node` stands to the record with UID `record_uid` whose host reported `node_ip`.
pub fn node_claim(node: &Node, record_uid: &str, node_ip: Ipv4Addr) -> NodeClaim {
    let evidence = evidence(node, node_ip);
    match node.annotation(INSTANCE_UID_ANNOTATION) {
        Some(owner) if owner == record_uid => NodeClaim::Owned,
        Some(owner) => NodeClaim::Foreign(ForeignNode::OwnedByAnother {
            owner_uid: owner.to_owned(),
            claimable_if_orphaned: evidence.is_ok(),
        }),
        None => match evidence {
            Ok(()) => NodeClaim::Claimable,
            Err(foreign) => NodeClaim::Foreign(foreign),
        },
    }
}

/// Whether `node` is `record`'s: it carries the record's UID, or no owner and the evidence of the record's recorded
/// node IP. A record without a UID, or without a recorded node IP when the Node carries no owner, has none.
///
/// ```
/// use wmco_cluster_client::fake::objects;
/// use wmco_cluster_client::is_records_node;
/// let record = objects::record("byoh-10-0-0-5").byoh("10.0.0.5").build();
/// let node = objects::windows_node("win-a").internal_ip("203.0.113.7").build();
/// assert!(!is_records_node(&node, &record), "a record without a UID owns nothing");
/// ```
pub fn is_records_node(node: &Node, record: &WindowsInstance) -> bool {
    let Some(uid) = record.metadata.uid.as_deref() else {
        return false;
    };
    match record.status.as_ref().and_then(|status| status.node_ip) {
        Some(node_ip) => node_claim(node, uid, node_ip).is_ours(),
        None => node.annotation(INSTANCE_UID_ANNOTATION) == Some(uid),
    }
}

/// Whether `node` is evidently the host's: Windows, reporting `node_ip` as `InternalIP`.
fn evidence(node: &Node, node_ip: Ipv4Addr) -> Result<(), ForeignNode> {
    let os = node.metadata.labels.as_ref().and_then(|labels| labels.get(KUBERNETES_OS_LABEL));
    if os.map(String::as_str) != Some("windows") {
        return Err(ForeignNode::NotWindows { os: os.cloned() });
    }
    let internal_ips: Vec<String> = node
        .status
        .iter()
        .flat_map(|status| status.addresses.iter().flatten())
        .filter(|address| address.type_ == "InternalIP")
        .map(|address| address.address.clone())
        .collect();
    if internal_ips.iter().any(|address| address.parse::<Ipv4Addr>() == Ok(node_ip)) {
        Ok(())
    } else {
        Err(ForeignNode::OtherAddress { internal_ips })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(os: Option<&str>, internal_ip: Option<&str>, owner: Option<&str>) -> Node {
        let mut value = serde_json::json!({"metadata": {"name": "win-app", "labels": {}, "annotations": {}}});
        if let Some(os) = os {
            value["metadata"]["labels"][KUBERNETES_OS_LABEL] = os.into();
        }
        if let Some(owner) = owner {
            value["metadata"]["annotations"][INSTANCE_UID_ANNOTATION] = owner.into();
        }
        if let Some(address) = internal_ip {
            value["status"] = serde_json::json!({"addresses": [{"type": "InternalIP", "address": address}]});
        }
        serde_json::from_value(value).unwrap()
    }

    const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 5);

    #[test]
    fn a_windows_node_at_the_hosts_address_without_owner_is_claimable() {
        assert_eq!(node_claim(&node(Some("windows"), Some("10.0.0.5"), None), "uid-1", HOST_IP), NodeClaim::Claimable);
    }

    #[test]
    fn the_owner_annotation_decides_once_written() {
        let owned = node(Some("windows"), Some("10.0.0.9"), Some("uid-1"));
        assert_eq!(node_claim(&owned, "uid-1", HOST_IP), NodeClaim::Owned);
        let foreign = node_claim(&node(Some("windows"), Some("10.0.0.5"), Some("uid-1")), "uid-2", HOST_IP);
        let expected = ForeignNode::OwnedByAnother { owner_uid: "uid-1".into(), claimable_if_orphaned: true };
        assert_eq!(foreign, NodeClaim::Foreign(expected));
    }

    #[test]
    fn a_linux_node_or_another_address_is_never_claimable() {
        let linux = node_claim(&node(Some("linux"), Some("10.0.0.5"), None), "uid-1", HOST_IP);
        assert_eq!(linux, NodeClaim::Foreign(ForeignNode::NotWindows { os: Some("linux".into()) }));
        assert!(!linux.is_ours());
        let elsewhere = node_claim(&node(Some("windows"), Some("10.0.0.6"), None), "uid-1", HOST_IP);
        assert_eq!(elsewhere, NodeClaim::Foreign(ForeignNode::OtherAddress { internal_ips: vec!["10.0.0.6".into()] }));
        let NodeClaim::Foreign(foreign) = elsewhere else { unreachable!() };
        let message = foreign.to_string();
        assert_eq!(message, "it reports InternalIP 10.0.0.6, not this host's address");
    }
}
