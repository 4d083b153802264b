//! Read-only accessors on the objects the operator reads, in the style of [`kube::ResourceExt`]: one place for
//! "is this Node Ready", "which annotation does it carry" and "what is this record's `namespace/name`", so no
//! controller or flow re-derives them from raw fields.
//!
//! - [`NodeExt`]: readiness, annotations, the operator's `upgrading` mark, cordoning.
//! - [`WindowsInstanceExt`]: the record's `namespace/name` key, its recorded Node name and pinned host key.
//!
//! Names themselves come from [`kube::ResourceExt`] (re-exported at the crate root): `name_any()`.

use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;

use crate::names::UPGRADING_LABEL;
use crate::types::WindowsInstance;

/// Accessors on a [`Node`].
///
/// ```
/// use k8s_openapi::api::core::v1::Node;
/// use wmco_cluster_client::NodeExt;
/// use wmco_cluster_client::names::{UPGRADING_LABEL, VERSION_ANNOTATION};
///
/// let node: Node = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "win-1", "labels": {UPGRADING_LABEL: "true"}, "annotations": {VERSION_ANNOTATION: "1.0.0"}},
///     "spec": {"unschedulable": true},
///     "status": {"conditions": [{"type": "Ready", "status": "True"}]}
/// }))?;
/// assert!(node.is_ready() && node.is_marked() && node.is_unschedulable());
/// assert_eq!(node.annotation(VERSION_ANNOTATION), Some("1.0.0"));
/// assert_eq!(Node::default().annotation(VERSION_ANNOTATION), None);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub trait NodeExt {
    /// Whether the Node's `Ready` condition is `True`.
    fn is_ready(&self) -> bool;

    /// The Node's annotation `key`, if it carries one.
    fn annotation(&self, key: &str) -> Option<&str>;

    /// Whether the Node carries the operator's `upgrading` mark ([`UPGRADING_LABEL`] = `"true"`), which counts it
    /// toward the upgrade limit.
    fn is_marked(&self) -> bool;

    /// Whether the Node is cordoned (`spec.unschedulable`).
    fn is_unschedulable(&self) -> bool;
}

impl NodeExt for Node {
    fn is_ready(&self) -> bool {
        self.status.as_ref().and_then(|status| status.conditions.as_ref()).is_some_and(|conditions| {
            conditions.iter().any(|condition| condition.type_ == "Ready" && condition.status == "True")
        })
    }

    fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata.annotations.as_ref()?.get(key).map(String::as_str)
    }

    fn is_marked(&self) -> bool {
        self.metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(UPGRADING_LABEL))
            .is_some_and(|value| value == "true")
    }

    fn is_unschedulable(&self) -> bool {
        self.spec.as_ref().and_then(|spec| spec.unschedulable).unwrap_or(false)
    }
}

/// Accessors on a [`WindowsInstance`] record.
///
/// ```
/// use wmco_cluster_client::WindowsInstanceExt;
/// use wmco_cluster_client::types::WindowsInstance;
///
/// let record: WindowsInstance = serde_json::from_value(serde_json::json!({
///     "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
///     "metadata": {"name": "byoh-10-0-0-5", "namespace": "wmco"},
///     "spec": {"address": "10.0.0.5", "username": "admin", "origin": "Byoh"},
///     "status": {"expectedNodeName": "win-a1", "pinnedHostKey": "ssh-ed25519 AAAA"}
/// }))?;
/// assert_eq!(record.key(), "wmco/byoh-10-0-0-5");
/// assert_eq!(record.expected_node_name(), Some("win-a1"));
/// assert_eq!(record.pinned_host_key(), Some("ssh-ed25519 AAAA"));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub trait WindowsInstanceExt {
    /// `namespace/name` of the record: how logs, errors and metrics name it (an absent part reads as empty).
    fn key(&self) -> String;

    /// The Node name the operator decided on and recorded (`status.expectedNodeName`), once it has.
    fn expected_node_name(&self) -> Option<&str>;

    /// The host key pinned on first contact (`status.pinnedHostKey`, `<type> <base64>`), once there was one.
    fn pinned_host_key(&self) -> Option<&str>;
}

impl WindowsInstanceExt for WindowsInstance {
    fn key(&self) -> String {
        format!("{}/{}", self.namespace().unwrap_or_default(), self.name_any())
    }

    fn expected_node_name(&self) -> Option<&str> {
        self.status.as_ref().and_then(|status| status.expected_node_name.as_deref())
    }

    fn pinned_host_key(&self) -> Option<&str> {
        self.status.as_ref().and_then(|status| status.pinned_host_key.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::names::VERSION_ANNOTATION;

    fn node(value: serde_json::Value) -> Node {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_node_is_ready_only_with_a_true_ready_condition() {
        let with = |conditions: serde_json::Value| node(json!({"status": {"conditions": conditions}}));
        assert!(
            with(json!([{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}]))
                .is_ready()
        );
        assert!(!with(json!([{"type": "Ready", "status": "False"}])).is_ready());
        assert!(!with(json!([{"type": "Ready", "status": "Unknown"}])).is_ready());
        assert!(!with(json!([])).is_ready());
        assert!(!Node::default().is_ready());
    }

    #[test]
    fn only_a_true_upgrading_label_marks_a_node() {
        let labelled = |value: &str| node(json!({"metadata": {"labels": {UPGRADING_LABEL: value}}}));
        assert!(labelled("true").is_marked());
        assert!(!labelled("false").is_marked());
        assert!(!labelled("").is_marked());
        assert!(!Node::default().is_marked());
    }

    #[test]
    fn cordoning_and_annotations_read_absent_as_none() {
        assert!(node(json!({"spec": {"unschedulable": true}})).is_unschedulable());
        assert!(!node(json!({"spec": {"unschedulable": false}})).is_unschedulable());
        assert!(!node(json!({"spec": {}})).is_unschedulable());
        assert!(!Node::default().is_unschedulable());
        let annotated = node(json!({"metadata": {"annotations": {VERSION_ANNOTATION: "1.2.3"}}}));
        assert_eq!(annotated.annotation(VERSION_ANNOTATION), Some("1.2.3"));
        assert_eq!(annotated.annotation("other"), None);
    }

    #[test]
    fn a_record_key_is_namespace_slash_name_and_its_status_fields_are_optional() {
        let record: WindowsInstance = serde_json::from_value(json!({
            "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
            "metadata": {"name": "m-1", "namespace": "wmco"},
            "spec": {"address": "10.0.0.5", "username": "admin", "origin": "Machine", "expectedNodeName": "spec-only"},
        }))
        .unwrap();
        assert_eq!(record.key(), "wmco/m-1");
        assert_eq!(record.expected_node_name(), None, "only the recorded name counts");
        assert_eq!(record.pinned_host_key(), None);
        let mut unnamed = record.clone();
        unnamed.metadata.namespace = None;
        unnamed.metadata.name = None;
        assert_eq!(unnamed.key(), "/");
    }
}
