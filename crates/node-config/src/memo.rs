//! The fingerprint of a configure pass that the memory of the host's last pass ([`PassMemo`](crate::pass::PassMemo))
//! holds: everything the pass read without touching the host (the record as the pass left it, its labels and
//! annotations included, the Node's metadata, schedulability and readiness as the pass left them, the desired files,
//! the service settings, the operator's version and key).
//! A pass whose fingerprint equals the memo's, within [`crate::SessionSettings::unchanged_pass_window`] of it,
//! returns the remembered state without a command: the reconciles the watches trigger for a status write of the
//! pass itself, a Node heartbeat or both watches firing at an operator's start cost nothing on the host.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use k8s_openapi::api::core::v1::Node;
use wmco_cluster_client::types::{WindowsInstance, WindowsInstanceStatus};
use wmco_cluster_client::{NodeExt, NodeMetadataPatch};

use crate::pass::{ServiceSettings, StageFiles};

/// A pass's inputs, hashed: everything but the Node and the record's status, which differ between a pass's start
/// (as read) and its end (as the pass left them) and are added last ([`PassInputs::with_node`],
/// [`InputsWithNode::with_status`]).
#[derive(Clone)]
pub(crate) struct PassInputs(DefaultHasher);

/// A pass's inputs with the Node added.
#[derive(Clone)]
pub(crate) struct InputsWithNode(DefaultHasher);

impl PassInputs {
    /// The inputs of a pass of `instance`'s host.
    pub(crate) fn new(
        instance: &WindowsInstance,
        files: &StageFiles,
        settings: &ServiceSettings,
        versions: [&str; 2],
    ) -> PassInputs {
        let mut hasher = DefaultHasher::new();
        instance.metadata.uid.hash(&mut hasher);
        instance.metadata.generation.hash(&mut hasher);
        // An admin's edit of the record's labels or annotations is a request to look again.
        instance.metadata.labels.hash(&mut hasher);
        instance.metadata.annotations.hash(&mut hasher);
        serde_json::to_string(&instance.spec).unwrap_or_default().hash(&mut hasher);
        for file in files.files.files() {
            (file.destination.as_str(), file.sha256.to_string()).hash(&mut hasher);
        }
        for withheld in &files.withheld {
            (&withheld.service, &withheld.reason).hash(&mut hasher);
        }
        files.settings_generation.hash(&mut hasher);
        format!("{settings:?}").hash(&mut hasher);
        versions.hash(&mut hasher);
        PassInputs(hasher)
    }

    /// The inputs with the Node as given.
    pub(crate) fn with_node(&self, node: Option<&Node>) -> InputsWithNode {
        let mut hasher = self.0.clone();
        hash_node(node, &mut hasher);
        InputsWithNode(hasher)
    }
}

impl InputsWithNode {
    /// The fingerprint with the record's `status` added, but for the bootstrap key the CSR approver binds to the
    /// attempt: no pass acts on it, and its write between the bootstrap pass and the Node's registration would
    /// otherwise cost a probe.
    pub(crate) fn with_status(&self, status: Option<&WindowsInstanceStatus>) -> u64 {
        let mut hasher = self.0.clone();
        let status =
            status.map(|status| WindowsInstanceStatus { approved_bootstrap_key_sha256: None, ..status.clone() });
        serde_json::to_string(&status).unwrap_or_default().hash(&mut hasher);
        hasher.finish()
    }
}

/// The Node's parts a pass acts on: existence, labels, annotations, schedulability, readiness, deletion.
fn hash_node(node: Option<&Node>, hasher: &mut DefaultHasher) {
    let Some(node) = node else {
        false.hash(hasher);
        return;
    };
    true.hash(hasher);
    node.metadata.name.hash(hasher);
    node.metadata.labels.hash(hasher);
    node.metadata.annotations.hash(hasher);
    node.metadata.deletion_timestamp.is_some().hash(hasher);
    node.spec.as_ref().and_then(|spec| spec.unschedulable).unwrap_or(false).hash(hasher);
    node.is_ready().hash(hasher);
}

/// `node` with `patch`'s labels and annotations applied, as the cluster holds it after the pass's patch.
pub(crate) fn patched(node: &Node, patch: &NodeMetadataPatch) -> Node {
    let mut node = node.clone();
    let labels = node.metadata.labels.get_or_insert_with(Default::default);
    for (key, value) in &patch.labels {
        match value {
            Some(value) => labels.insert(key.clone(), value.clone()),
            None => labels.remove(key),
        };
    }
    let annotations = node.metadata.annotations.get_or_insert_with(Default::default);
    for (key, value) in &patch.annotations {
        match value {
            Some(value) => annotations.insert(key.clone(), value.clone()),
            None => annotations.remove(key),
        };
    }
    node
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{NodeCondition, NodeStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use wmco_cluster_client::fake::objects;

    use super::*;

    fn node(heartbeat_seconds: i64) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some("win-a".into()),
                resource_version: Some(heartbeat_seconds.to_string()),
                ..ObjectMeta::default()
            },
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_heartbeat_time: Some(Time(jiff::Timestamp::from_second(heartbeat_seconds).unwrap())),
                    ..NodeCondition::default()
                }]),
                ..NodeStatus::default()
            }),
            ..Node::default()
        }
    }

    fn fingerprint(node: &Node) -> u64 {
        let instance = objects::record("win-a").in_namespace("wmco").byoh("10.0.0.5").username("admin").build();
        let files = StageFiles::from(crate::testing::file_set(Vec::new()).unwrap());
        let settings = crate::testing::sample_service_settings();
        PassInputs::new(&instance, &files, &settings, ["10.17.0", "ab"]).with_node(Some(node)).with_status(None)
    }

    #[test]
    fn the_bootstrap_key_the_csr_approver_binds_changes_nothing_the_phase_does() {
        let inputs = PassInputs::new(
            &objects::record("win-a").in_namespace("wmco").byoh("10.0.0.5").username("admin").build(),
            &StageFiles::from(crate::testing::file_set(Vec::new()).unwrap()),
            &crate::testing::sample_service_settings(),
            ["10.17.0", "ab"],
        )
        .with_node(None);
        let waiting = WindowsInstanceStatus {
            phase: Some(wmco_cluster_client::types::InstancePhase::WaitingForNode),
            ..WindowsInstanceStatus::default()
        };
        let bound = WindowsInstanceStatus { approved_bootstrap_key_sha256: Some("ab".repeat(32)), ..waiting.clone() };
        assert_eq!(inputs.with_status(Some(&bound)), inputs.with_status(Some(&waiting)));
        let ready = WindowsInstanceStatus { phase: Some(wmco_cluster_client::types::InstancePhase::Ready), ..bound };
        assert_ne!(inputs.with_status(Some(&ready)), inputs.with_status(Some(&waiting)));
    }

    #[test]
    fn a_heartbeat_changes_nothing_a_label_or_readiness_does() {
        let first = fingerprint(&node(1));
        assert_eq!(fingerprint(&node(2)), first, "a heartbeat and a new resourceVersion");
        let labelled = patched(&node(1), &NodeMetadataPatch::default().set_label("node.openshift.io/os_id", "Windows"));
        assert_ne!(fingerprint(&labelled), first);
        let mut not_ready = node(1);
        if let Some(conditions) = not_ready.status.as_mut().and_then(|status| status.conditions.as_mut()) {
            conditions[0].status = "False".into();
        }
        assert_ne!(fingerprint(&not_ready), first);
    }
}
