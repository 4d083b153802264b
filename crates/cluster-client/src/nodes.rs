//! Nodes: read one, find the Windows node that reports an address, patch labels and annotations, cordon and
//! uncordon, delete. [`Nodes`] is the seam; [`KubeNodes`] talks to the API server.

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Map, Value, json};

use crate::error::{Error, Result, Verb};
use crate::names::KUBERNETES_OS_LABEL;

const KIND: &str = "Node";

/// Label and annotation changes for one Node, sent as one merge patch; unnamed keys are left alone.
///
/// ```
/// use wmco_cluster_client::NodeMetadataPatch;
/// use wmco_cluster_client::names::{UPGRADING_LABEL, VERSION_ANNOTATION};
///
/// let patch = NodeMetadataPatch::default()
///     .set_annotation(VERSION_ANNOTATION, "1.0.0")
///     .remove_label(UPGRADING_LABEL);
/// assert_eq!(
///     patch.to_merge_patch(),
///     serde_json::json!({"metadata": {
///         "labels": {"windowsmachineconfig.openshift.io/upgrading": null},
///         "annotations": {"windowsmachineconfig.openshift.io/version": "1.0.0"}
///     }})
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeMetadataPatch {
    /// Label key → new value, or `None` to remove the label.
    pub labels: BTreeMap<String, Option<String>>,
    /// Annotation key → new value, or `None` to remove the annotation.
    pub annotations: BTreeMap<String, Option<String>>,
}

impl NodeMetadataPatch {
    /// Sets label `key` to `value`.
    pub fn set_label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), Some(value.into()));
        self
    }

    /// Removes label `key`.
    pub fn remove_label(mut self, key: impl Into<String>) -> Self {
        self.labels.insert(key.into(), None);
        self
    }

    /// Sets annotation `key` to `value`.
    pub fn set_annotation(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.annotations.insert(key.into(), Some(value.into()));
        self
    }

    /// Removes annotation `key`.
    pub fn remove_annotation(mut self, key: impl Into<String>) -> Self {
        self.annotations.insert(key.into(), None);
        self
    }

    /// The JSON merge patch: `null` removes a key.
    pub fn to_merge_patch(&self) -> Value {
        let mut metadata = Map::new();
        if !self.labels.is_empty() {
            metadata.insert("labels".into(), json!(self.labels));
        }
        if !self.annotations.is_empty() {
            metadata.insert("annotations".into(), json!(self.annotations));
        }
        json!({ "metadata": metadata })
    }

    /// Applies the changes to `node`'s metadata in place (what the API server does with the merge patch).
    pub fn apply_to(&self, node: &mut Node) {
        apply_changes(node.metadata.labels.get_or_insert_default(), &self.labels);
        apply_changes(node.metadata.annotations.get_or_insert_default(), &self.annotations);
    }
}

fn apply_changes(target: &mut BTreeMap<String, String>, changes: &BTreeMap<String, Option<String>>) {
    for (key, change) in changes {
        match change {
            Some(value) => target.insert(key.clone(), value.clone()),
            None => target.remove(key),
        };
    }
}

/// Whether `node` reports exactly `address` (no substring matching) among its status addresses.
pub fn reports_address(node: &Node, address: &str) -> bool {
    node.status
        .as_ref()
        .and_then(|status| status.addresses.as_ref())
        .is_some_and(|addresses| addresses.iter().any(|candidate| candidate.address == address))
}

/// What the flow and controller layers do to Nodes.
#[async_trait]
pub trait Nodes: Send + Sync {
    /// The Node named `name`, or `None` if there is none.
    async fn get(&self, name: &str) -> Result<Option<Node>>;

    /// The Windows Node (label `kubernetes.io/os=windows`) whose status lists exactly `address`; the first by name
    /// if several do.
    async fn find_by_address(&self, address: &str) -> Result<Option<Node>>;

    /// Every Windows Node (label `kubernetes.io/os=windows`), by name.
    async fn list_windows(&self) -> Result<Vec<Node>>;

    /// Applies label and annotation changes in one merge patch.
    async fn patch_metadata(&self, name: &str, patch: &NodeMetadataPatch) -> Result<Node>;

    /// Marks the Node unschedulable.
    async fn cordon(&self, name: &str) -> Result<Node>;

    /// Marks the Node schedulable again.
    async fn uncordon(&self, name: &str) -> Result<Node>;

    /// Deletes the Node; a Node that is already gone is not an error.
    async fn delete(&self, name: &str) -> Result<()>;
}

/// [`Nodes`] over the API server.
#[derive(Clone)]
pub struct KubeNodes {
    api: Api<Node>,
}

impl KubeNodes {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeNodes { api: Api::all(client) }
    }

    async fn set_unschedulable(&self, name: &str, unschedulable: bool) -> Result<Node> {
        let patch = json!({ "spec": { "unschedulable": unschedulable } });
        self.api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| Error::api(Verb::Patch, KIND, name, source))
    }
}

#[async_trait]
impl Nodes for KubeNodes {
    async fn get(&self, name: &str) -> Result<Option<Node>> {
        self.api.get_opt(name).await.map_err(|source| Error::api(Verb::Get, KIND, name, source))
    }

    async fn find_by_address(&self, address: &str) -> Result<Option<Node>> {
        let params = ListParams::default().labels(&format!("{KUBERNETES_OS_LABEL}=windows"));
        let nodes = self
            .api
            .list(&params)
            .await
            .map_err(|source| Error::api(Verb::List, KIND, format!("with address {address}"), source))?;
        let mut matching: Vec<Node> = nodes.items.into_iter().filter(|node| reports_address(node, address)).collect();
        matching.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(matching.into_iter().next())
    }

    async fn list_windows(&self) -> Result<Vec<Node>> {
        let params = ListParams::default().labels(&format!("{KUBERNETES_OS_LABEL}=windows"));
        let nodes = self.api.list(&params).await.map_err(|source| Error::api(Verb::List, KIND, "Windows", source))?;
        let mut nodes = nodes.items;
        nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(nodes)
    }

    async fn patch_metadata(&self, name: &str, patch: &NodeMetadataPatch) -> Result<Node> {
        self.api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch.to_merge_patch()))
            .await
            .map_err(|source| Error::api(Verb::Patch, KIND, name, source))
    }

    async fn cordon(&self, name: &str) -> Result<Node> {
        self.set_unschedulable(name, true).await
    }

    async fn uncordon(&self, name: &str) -> Result<Node> {
        self.set_unschedulable(name, false).await
    }

    async fn delete(&self, name: &str) -> Result<()> {
        match self.api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(Error::api(Verb::Delete, KIND, name, source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Exchange, MERGE_PATCH, scenario, status_reply};

    fn node(name: &str, addresses: &[&str]) -> Value {
        let addresses: Vec<Value> =
            addresses.iter().map(|address| json!({"type": "InternalIP", "address": address})).collect();
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/os": "windows"}},
            "status": {"addresses": addresses}
        })
    }

    #[tokio::test]
    async fn get_returns_none_for_a_missing_node() {
        let exchanges = vec![
            Exchange::get("/api/v1/nodes/win-1").reply(200, node("win-1", &["10.0.0.5"])),
            Exchange::get("/api/v1/nodes/win-2").reply(404, status_reply(404, "NotFound", "nodes \"win-2\" not found")),
        ];
        let (found, missing) = scenario(exchanges, |client| async move {
            let nodes = KubeNodes::new(client);
            (nodes.get("win-1").await.unwrap(), nodes.get("win-2").await.unwrap())
        })
        .await;
        assert_eq!(found.unwrap().metadata.name.as_deref(), Some("win-1"));
        assert!(missing.is_none());
    }

    #[tokio::test]
    async fn find_by_address_lists_windows_nodes_and_matches_exactly() {
        let list = json!({
            "apiVersion": "v1", "kind": "NodeList", "metadata": {},
            "items": [node("win-b", &["10.0.0.50"]), node("win-c", &["10.0.0.5"]), node("win-a", &["10.0.0.5"])]
        });
        let exchanges =
            vec![Exchange::get("/api/v1/nodes?&labelSelector=kubernetes.io%2Fos%3Dwindows").reply(200, list)];
        let found =
            scenario(
                exchanges,
                |client| async move { KubeNodes::new(client).find_by_address("10.0.0.5").await.unwrap() },
            )
            .await;
        assert_eq!(found.unwrap().metadata.name.as_deref(), Some("win-a"));
    }

    #[tokio::test]
    async fn patch_metadata_sends_one_merge_patch_with_nulls_for_removals() {
        let expected = json!({"metadata": {
            "labels": {"windowsmachineconfig.openshift.io/byoh": "true", "windowsmachineconfig.openshift.io/upgrading": null},
            "annotations": {"windowsmachineconfig.openshift.io/version": "1.2.3"}
        }});
        let exchanges = vec![
            Exchange::patch("/api/v1/nodes/win-1?", MERGE_PATCH, expected).reply(200, node("win-1", &["10.0.0.5"])),
        ];
        scenario(exchanges, |client| async move {
            let patch = NodeMetadataPatch::default()
                .set_label(crate::names::BYOH_LABEL, "true")
                .remove_label(crate::names::UPGRADING_LABEL)
                .set_annotation(crate::names::VERSION_ANNOTATION, "1.2.3");
            KubeNodes::new(client).patch_metadata("win-1", &patch).await.unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn cordon_and_uncordon_patch_spec_unschedulable() {
        let exchanges = vec![
            Exchange::patch("/api/v1/nodes/win-1?", MERGE_PATCH, json!({"spec": {"unschedulable": true}}))
                .reply(200, node("win-1", &[])),
            Exchange::patch("/api/v1/nodes/win-1?", MERGE_PATCH, json!({"spec": {"unschedulable": false}}))
                .reply(200, node("win-1", &[])),
        ];
        scenario(exchanges, |client| async move {
            let nodes = KubeNodes::new(client);
            nodes.cordon("win-1").await.unwrap();
            nodes.uncordon("win-1").await.unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn delete_tolerates_a_node_that_is_already_gone() {
        let gone = status_reply(404, "NotFound", "nodes \"win-1\" not found");
        let exchanges = vec![
            Exchange::delete("/api/v1/nodes/win-1?").reply(200, node("win-1", &[])),
            Exchange::delete("/api/v1/nodes/win-1?").reply(404, gone),
        ];
        scenario(exchanges, |client| async move {
            let nodes = KubeNodes::new(client);
            nodes.delete("win-1").await.unwrap();
            nodes.delete("win-1").await.unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn errors_name_the_verb_kind_and_node() {
        let exchanges = vec![
            Exchange::patch("/api/v1/nodes/win-1?", MERGE_PATCH, json!({"spec": {"unschedulable": true}}))
                .reply(403, status_reply(403, "Forbidden", "no")),
        ];
        let error = scenario(exchanges, |client| async move { KubeNodes::new(client).cordon("win-1").await })
            .await
            .unwrap_err();
        assert_eq!(error.to_string(), "patch Node win-1 failed");
        assert_eq!(error.status_code(), Some(403));
    }
}
