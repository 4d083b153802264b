//! Host keys the Go operator pinned, taken over so that a host it configured is never trusted again on first use
//! (wmco-anchor.md §2.4). The Go operator keeps a host's key in the annotations `ssh-host-key` (base64 of the key's
//! SSH wire format) and `ssh-host-key-type` of its Node, and, before the Node exists, in ConfigMap
//! `windows-ssh-host-keys` of the operator namespace, keyed by the instance's address. A record without a pinned key
//! looks for one there before its first connection ([`go_operator_host_key`]): the Node reporting the record's
//! address first, then the ConfigMap entry. The key found is pinned for that connection and recorded in the record's
//! status by the configure flow; the Go operator's annotations and ConfigMap are left as they are.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use wmco_cluster_client::names::{SSH_HOST_KEY_ANNOTATION, SSH_HOST_KEY_TYPE_ANNOTATION};
use wmco_cluster_client::{ConfigMaps, Nodes};
use wmco_ssh_transport::HostKey;

/// The Go operator's ConfigMap of host keys by instance address (before the host's Node existed).
pub const GO_HOST_KEYS_CONFIG_MAP: &str = "windows-ssh-host-keys";

/// A host key the Go operator stored, and where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedHostKey {
    /// The key.
    pub key: HostKey,
    /// Where it was found (`the annotations of Node win-a`, `ConfigMap windows-ssh-host-keys entry 10.0.0.5`).
    pub origin: String,
}

/// Why a stored key could not be taken over.
#[derive(Debug, thiserror::Error)]
pub enum HostKeyImportError {
    /// Reading the Node or the ConfigMap failed.
    #[error("reading the Go operator's host key failed: {0}")]
    Cluster(#[source] Box<wmco_cluster_client::Error>),
    /// The stored value is not a key.
    #[error("the host key in {origin} is unreadable ({reason}); fix or remove it, or the host is never connected")]
    Unreadable {
        /// Where the value was found.
        origin: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The key the Go operator pinned for the host at `address`, if it stored one: the annotations of the Windows Node
/// reporting `address`, else the entry `address` of [`GO_HOST_KEYS_CONFIG_MAP`] in `namespace`.
///
/// ```
/// use wmco_cluster_client::fake::FakeCluster;
/// use wmco_operator::instances::go_operator_host_key;
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let cluster = FakeCluster::default();
/// let seams = cluster.seams();
/// let found = go_operator_host_key(seams.nodes.as_ref(), seams.config_maps.as_ref(), "wmco", "10.0.0.5").await?;
/// assert!(found.is_none(), "nothing stored: the first connection trusts the host's key");
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`HostKeyImportError`] when the cluster cannot be read or the stored value is not a host key.
pub async fn go_operator_host_key(
    nodes: &dyn Nodes,
    config_maps: &dyn ConfigMaps,
    namespace: &str,
    address: &str,
) -> Result<Option<ImportedHostKey>, HostKeyImportError> {
    let cluster = |error| HostKeyImportError::Cluster(Box::new(error));
    if let Some(node) = nodes.find_by_address(address).await.map_err(cluster)? {
        let annotations = node.metadata.annotations.unwrap_or_default();
        if let Some(encoded) = annotations.get(SSH_HOST_KEY_ANNOTATION) {
            let origin = format!("the annotations of Node {}", node.metadata.name.unwrap_or_default());
            let key = decode(encoded, &origin)?;
            if let Some(written) = annotations.get(SSH_HOST_KEY_TYPE_ANNOTATION)
                && written != key.algorithm()
            {
                let reason = format!("{SSH_HOST_KEY_TYPE_ANNOTATION} says {written}, the key is {}", key.algorithm());
                return Err(HostKeyImportError::Unreadable { origin, reason });
            }
            return Ok(Some(ImportedHostKey { key, origin }));
        }
    }
    let Some(config_map) = config_maps.get(namespace, GO_HOST_KEYS_CONFIG_MAP).await.map_err(cluster)? else {
        return Ok(None);
    };
    let Some(encoded) = config_map.data.unwrap_or_default().remove(address) else { return Ok(None) };
    let origin = format!("ConfigMap {GO_HOST_KEYS_CONFIG_MAP} entry {address}");
    Ok(Some(ImportedHostKey { key: decode(&encoded, &origin)?, origin }))
}

/// A key from the base64 of its wire format, as the Go operator writes it.
fn decode(encoded: &str, origin: &str) -> Result<HostKey, HostKeyImportError> {
    let unreadable = |reason: String| HostKeyImportError::Unreadable { origin: origin.to_owned(), reason };
    let blob = STANDARD.decode(encoded.trim()).map_err(|error| unreadable(format!("not base64: {error}")))?;
    HostKey::from_blob(blob).map_err(|error| unreadable(error.to_string()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{ConfigMap, Node};
    use kube::api::ObjectMeta;
    use wmco_cluster_client::fake::{FakeCluster, objects};

    use super::*;

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb0IkHe+vJ0sFwTGc7P0nK1Ib2qD2oZNq3KpJ+Iu5Hh";
    const OTHER: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey";

    fn blob(line: &str) -> String {
        line.split(' ').nth(1).unwrap().to_owned()
    }

    fn go_node(annotations: &[(&str, &str)]) -> Node {
        let node = objects::windows_node("win-a").internal_ip("10.0.0.5");
        annotations.iter().fold(node, |node, (key, value)| node.annotated(key, value)).build()
    }

    fn go_config_map(address: &str, value: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(GO_HOST_KEYS_CONFIG_MAP.into()),
                namespace: Some("wmco".into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(address.to_owned(), value.to_owned())])),
            ..ConfigMap::default()
        }
    }

    async fn lookup(cluster: &FakeCluster) -> Result<Option<ImportedHostKey>, HostKeyImportError> {
        let seams = cluster.seams();
        go_operator_host_key(seams.nodes.as_ref(), seams.config_maps.as_ref(), "wmco", "10.0.0.5").await
    }

    #[tokio::test]
    async fn the_node_annotations_come_first_then_the_config_map_entry_of_the_address() {
        let cluster = FakeCluster::default();
        cluster.config_maps.replace(go_config_map("10.0.0.5", &blob(OTHER))).unwrap();
        let found = lookup(&cluster).await.unwrap().unwrap();
        assert_eq!(found.key.to_openssh(), OTHER);
        assert_eq!(found.origin, "ConfigMap windows-ssh-host-keys entry 10.0.0.5");

        cluster
            .nodes
            .insert(go_node(&[(SSH_HOST_KEY_ANNOTATION, &blob(KEY)), (SSH_HOST_KEY_TYPE_ANNOTATION, "ssh-ed25519")]));
        let found = lookup(&cluster).await.unwrap().unwrap();
        assert_eq!(found.key.to_openssh(), KEY);
        assert_eq!(found.origin, "the annotations of Node win-a");
    }

    #[tokio::test]
    async fn nothing_stored_or_another_address_is_none() {
        let cluster = FakeCluster::default();
        assert!(lookup(&cluster).await.unwrap().is_none());
        cluster.config_maps.replace(go_config_map("10.0.0.6", &blob(KEY))).unwrap();
        cluster.nodes.insert(go_node(&[]));
        assert!(lookup(&cluster).await.unwrap().is_none(), "a Node without the annotation and another address's key");
    }

    #[tokio::test]
    async fn an_unreadable_or_contradicted_key_is_an_error_naming_where_it_was() {
        let cluster = FakeCluster::default();
        cluster.config_maps.replace(go_config_map("10.0.0.5", "not base64!")).unwrap();
        let error = lookup(&cluster).await.unwrap_err().to_string();
        assert!(
            error.contains("ConfigMap windows-ssh-host-keys entry 10.0.0.5") && error.contains("not base64"),
            "{error}"
        );

        cluster
            .nodes
            .insert(go_node(&[(SSH_HOST_KEY_ANNOTATION, &blob(KEY)), (SSH_HOST_KEY_TYPE_ANNOTATION, "ssh-rsa")]));
        let error = lookup(&cluster).await.unwrap_err().to_string();
        assert!(error.contains("the annotations of Node win-a") && error.contains("says ssh-rsa"), "{error}");
    }
}
