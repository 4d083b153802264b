//! Where a record without a pinned host key finds the key its host must present, so that a host met before (by this
//! operator or by the Go operator) is never trusted again on first use. [`stored_host_key`] looks, in this order:
//! 1. the operator's own copy, ConfigMap `windows-instance-host-keys` entry `<record name>` (kept on first use, so a
//!    lost and recreated record finds it; an admin may also pin a key there before a host's first connection);
//! 2. the Go operator's ConfigMap `windows-ssh-host-keys` entry `<address>` (wmco-anchor.md §2.4: where it kept a key
//!    before the host's Node existed);
//! 3. the annotations `ssh-host-key` (base64 of the key's SSH wire format) and `ssh-host-key-type` of a Node the Go
//!    operator configured for this host: a Windows Node reporting the record's address that carries the Go
//!    operator's version annotation, and its BYOH label exactly when the record is a BYOH host's.
//!
//! The ConfigMaps come first because only the operator and the namespace's admins write them; a Node's labels,
//! annotations and addresses are also written by its own kubelet. Two such Nodes with different keys are refused
//! (never the first by name), so a Node claiming another host's address cannot hide the genuine key. Nothing is
//! read once the record has a pin.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::core::v1::Node;
use wmco_cluster_client::names::{
    BYOH_LABEL, SSH_HOST_KEY_ANNOTATION, SSH_HOST_KEY_TYPE_ANNOTATION, VERSION_ANNOTATION,
};
use wmco_cluster_client::types::{InstanceOrigin, WindowsInstance};
use wmco_cluster_client::{ConfigMaps, HOST_KEYS_CONFIG_MAP, NodeExt, Nodes, kept_host_key, reports_address};
use wmco_ssh_transport::HostKey;

/// The Go operator's ConfigMap of host keys by instance address (before the host's Node existed).
pub const GO_HOST_KEYS_CONFIG_MAP: &str = "windows-ssh-host-keys";

/// A stored host key, and where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedHostKey {
    /// The key.
    pub key: HostKey,
    /// Where it was found (`ConfigMap windows-instance-host-keys entry byoh-10-0-0-5`, `the annotations of Node
    /// win-a, which the Go operator configured`).
    pub origin: String,
    /// Whether it was found in the operator's own ConfigMap (nothing to copy there).
    pub kept_by_operator: bool,
}

/// Why a stored key could not be taken over.
#[derive(Debug, thiserror::Error)]
pub enum HostKeyImportError {
    /// Reading the Nodes or a ConfigMap failed.
    #[error("reading the host's stored key failed: {0}")]
    Cluster(#[source] Box<wmco_cluster_client::Error>),
    /// The stored value is not a key.
    #[error("the host key in {origin} is unreadable ({reason}); fix or remove it, or the host is never connected")]
    Unreadable {
        /// Where the value was found.
        origin: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Several Nodes the Go operator configured report the address, with different keys.
    #[error(
        "the annotations of Nodes {nodes} all claim address {address} with different host keys; remove the wrong \
         one, or pin the key in ConfigMap {HOST_KEYS_CONFIG_MAP}, or the host is never connected"
    )]
    Ambiguous {
        /// The address.
        address: String,
        /// The Nodes, comma-separated.
        nodes: String,
    },
}

/// The key stored for `record`'s host, if any, from the first of the places the module doc lists.
///
/// ```
/// use wmco_cluster_client::fake::{FakeCluster, objects};
/// use wmco_operator::instances::stored_host_key;
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let cluster = FakeCluster::default();
/// let seams = cluster.seams();
/// let record = objects::record("byoh-10-0-0-5").byoh("10.0.0.5").build();
/// let found = stored_host_key(seams.nodes.as_ref(), seams.config_maps.as_ref(), &record).await?;
/// assert!(found.is_none(), "nothing stored: the first connection trusts the host's key");
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`HostKeyImportError`] when the cluster cannot be read, a stored value is not a host key, or Nodes disagree.
pub async fn stored_host_key(
    nodes: &dyn Nodes,
    config_maps: &dyn ConfigMaps,
    record: &WindowsInstance,
) -> Result<Option<ImportedHostKey>, HostKeyImportError> {
    let cluster = |error| HostKeyImportError::Cluster(Box::new(error));
    let name = record.metadata.name.as_deref().unwrap_or_default();
    if let Some(line) = kept_host_key(config_maps, record).await.map_err(cluster)? {
        let origin = format!("ConfigMap {HOST_KEYS_CONFIG_MAP} entry {name}");
        let key = HostKey::from_openssh(&line)
            .map_err(|error| HostKeyImportError::Unreadable { origin: origin.clone(), reason: error.to_string() })?;
        return Ok(Some(ImportedHostKey { key, origin, kept_by_operator: true }));
    }
    let address = &record.spec.address;
    let namespace = record.metadata.namespace.as_deref().unwrap_or_default();
    let go_entry = config_maps.get(namespace, GO_HOST_KEYS_CONFIG_MAP).await.map_err(cluster)?;
    if let Some(encoded) = go_entry.and_then(|config_map| config_map.data?.remove(address)) {
        let origin = format!("ConfigMap {GO_HOST_KEYS_CONFIG_MAP} entry {address}");
        return Ok(Some(ImportedHostKey { key: decode(&encoded, &origin)?, origin, kept_by_operator: false }));
    }
    let windows = nodes.list_windows().await.map_err(cluster)?;
    let candidates: Vec<&Node> = windows.iter().filter(|node| configured_by_go_for(node, record)).collect();
    let mut found: Option<(&str, ImportedHostKey)> = None;
    for node in candidates {
        let Some(imported) = node_key(node)? else { continue };
        let name = node.metadata.name.as_deref().unwrap_or_default();
        match &found {
            Some((first, kept)) if kept.key != imported.key => {
                return Err(HostKeyImportError::Ambiguous {
                    address: address.clone(),
                    nodes: format!("{first}, {name}"),
                });
            }
            Some(_) => {}
            None => found = Some((name, imported)),
        }
    }
    Ok(found.map(|(_, imported)| imported))
}

/// Whether `node` looks like the Node the Go operator configured for `record`'s host: it reports the address,
/// carries the version annotation, and its BYOH label says what kind of host the record is.
fn configured_by_go_for(node: &Node, record: &WindowsInstance) -> bool {
    let byoh_label = node.metadata.labels.as_ref().and_then(|labels| labels.get(BYOH_LABEL)).map(String::as_str);
    let is_byoh = record.spec.origin == InstanceOrigin::Byoh;
    reports_address(node, &record.spec.address)
        && node.annotation(VERSION_ANNOTATION).is_some_and(|version| !version.is_empty())
        && (byoh_label == Some("true")) == is_byoh
}

/// The key in `node`'s annotations, if it has one.
fn node_key(node: &Node) -> Result<Option<ImportedHostKey>, HostKeyImportError> {
    let Some(encoded) = node.annotation(SSH_HOST_KEY_ANNOTATION) else { return Ok(None) };
    let name = node.metadata.name.as_deref().unwrap_or_default();
    let origin = format!("the annotations of Node {name}, which the Go operator configured");
    let key = decode(encoded, &origin)?;
    if let Some(written) = node.annotation(SSH_HOST_KEY_TYPE_ANNOTATION)
        && written != key.algorithm()
    {
        let reason = format!("{SSH_HOST_KEY_TYPE_ANNOTATION} says {written}, the key is {}", key.algorithm());
        return Err(HostKeyImportError::Unreadable { origin, reason });
    }
    Ok(Some(ImportedHostKey { key, origin, kept_by_operator: false }))
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
    use wmco_cluster_client::keep_host_key;

    use super::*;

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb0IkHe+vJ0sFwTGc7P0nK1Ib2qD2oZNq3KpJ+Iu5Hh";
    const OTHER: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey";

    fn blob(line: &str) -> String {
        line.split(' ').nth(1).unwrap().to_owned()
    }

    fn byoh_record() -> WindowsInstance {
        objects::record("byoh-10-0-0-5").in_namespace("wmco").byoh("10.0.0.5").build()
    }

    /// A Windows Node `name` reporting 10.0.0.5 with the key `line` in the Go operator's annotations and `marks`.
    fn node_with_key(name: &str, line: &str, marks: &[(&str, &str)]) -> Node {
        node_at(name, "10.0.0.5", line, marks)
    }

    /// A Windows Node `name` reporting `address` with the key `line` in the Go operator's annotations and `marks`
    /// (the BYOH label as a label, the others as annotations).
    fn node_at(name: &str, address: &str, line: &str, marks: &[(&str, &str)]) -> Node {
        let node = objects::windows_node(name)
            .internal_ip(address)
            .annotated(SSH_HOST_KEY_ANNOTATION, &blob(line))
            .annotated(SSH_HOST_KEY_TYPE_ANNOTATION, "ssh-ed25519");
        marks
            .iter()
            .fold(node, |node, (key, value)| match *key {
                BYOH_LABEL => node.labelled(key, value),
                _ => node.annotated(key, value),
            })
            .build()
    }

    /// The marks of a BYOH Node the Go operator configured.
    const GO_BYOH: [(&str, &str); 2] = [(VERSION_ANNOTATION, "10.19.0"), (BYOH_LABEL, "true")];

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

    async fn lookup(
        cluster: &FakeCluster,
        record: &WindowsInstance,
    ) -> Result<Option<ImportedHostKey>, HostKeyImportError> {
        let seams = cluster.seams();
        stored_host_key(seams.nodes.as_ref(), seams.config_maps.as_ref(), record).await
    }

    #[tokio::test]
    async fn the_operator_s_own_copy_comes_first_then_the_go_config_map_then_a_go_configured_node() {
        let cluster = FakeCluster::default();
        let record = byoh_record();
        cluster.nodes.insert(node_with_key("win-a", KEY, &GO_BYOH));
        let found = lookup(&cluster, &record).await.unwrap().unwrap();
        assert_eq!((found.key.to_openssh().as_str(), found.kept_by_operator), (KEY, false));
        assert_eq!(found.origin, "the annotations of Node win-a, which the Go operator configured");

        cluster.config_maps.replace(go_config_map("10.0.0.5", &blob(OTHER))).unwrap();
        let found = lookup(&cluster, &record).await.unwrap().unwrap();
        assert_eq!(found.key.to_openssh(), OTHER, "a ConfigMap cannot be written with a Node's credentials");
        assert_eq!(found.origin, "ConfigMap windows-ssh-host-keys entry 10.0.0.5");

        keep_host_key(cluster.config_maps.as_ref(), &record, KEY).await.unwrap();
        let found = lookup(&cluster, &record).await.unwrap().unwrap();
        assert_eq!((found.key.to_openssh().as_str(), found.kept_by_operator), (KEY, true));
        assert_eq!(found.origin, "ConfigMap windows-instance-host-keys entry byoh-10-0-0-5");
    }

    #[tokio::test]
    async fn a_node_the_go_operator_did_not_configure_for_this_kind_of_host_is_never_trusted() {
        let cluster = FakeCluster::default();
        // A kubelet can label its own Node Windows, claim any address and annotate itself (NodeRestriction allows
        // all three); without the Go operator's version annotation its key is not taken.
        cluster.nodes.insert(node_with_key("linux-1", OTHER, &[(BYOH_LABEL, "true")]));
        assert_eq!(lookup(&cluster, &byoh_record()).await.unwrap(), None, "no version annotation");
        // A Machine's Node never carries the BYOH label, a BYOH host's always does.
        cluster.nodes.insert(node_with_key("win-m", OTHER, &[(VERSION_ANNOTATION, "10.19.0")]));
        assert_eq!(lookup(&cluster, &byoh_record()).await.unwrap(), None, "a Machine's Node for a BYOH record");
        let machine = objects::record("win-m").in_namespace("wmco").from_machine("win-m", "10.0.0.5").build();
        assert_eq!(lookup(&cluster, &machine).await.unwrap().unwrap().key.to_openssh(), OTHER);
    }

    #[tokio::test]
    async fn go_configured_nodes_that_disagree_are_refused_naming_both() {
        let cluster = FakeCluster::default();
        cluster.nodes.insert(node_with_key("win-b", KEY, &GO_BYOH));
        cluster.nodes.insert(node_with_key("win-a", OTHER, &GO_BYOH));
        let error = lookup(&cluster, &byoh_record()).await.unwrap_err().to_string();
        assert!(error.contains("Nodes win-a, win-b all claim address 10.0.0.5"), "{error}");
        cluster.nodes.insert(node_with_key("win-a", KEY, &GO_BYOH));
        assert_eq!(lookup(&cluster, &byoh_record()).await.unwrap().unwrap().key.to_openssh(), KEY, "they agree");
    }

    #[tokio::test]
    async fn nothing_stored_or_another_address_is_none() {
        let cluster = FakeCluster::default();
        assert!(lookup(&cluster, &byoh_record()).await.unwrap().is_none());
        cluster.config_maps.replace(go_config_map("10.0.0.6", &blob(KEY))).unwrap();
        cluster.nodes.insert(node_at("win-b", "10.0.0.6", KEY, &GO_BYOH));
        assert!(lookup(&cluster, &byoh_record()).await.unwrap().is_none(), "another address's key");
    }

    #[tokio::test]
    async fn an_unreadable_or_contradicted_key_is_an_error_naming_where_it_was() {
        let cluster = FakeCluster::default();
        cluster.config_maps.replace(go_config_map("10.0.0.5", "not base64!")).unwrap();
        let error = lookup(&cluster, &byoh_record()).await.unwrap_err().to_string();
        assert!(
            error.contains("ConfigMap windows-ssh-host-keys entry 10.0.0.5") && error.contains("not base64"),
            "{error}"
        );

        let cluster = FakeCluster::default();
        let node = node_with_key("win-a", KEY, &GO_BYOH);
        let mut annotations = node.metadata.annotations.clone().unwrap();
        annotations.insert(SSH_HOST_KEY_TYPE_ANNOTATION.into(), "ssh-rsa".into());
        cluster.nodes.insert(Node { metadata: ObjectMeta { annotations: Some(annotations), ..node.metadata }, ..node });
        let error = lookup(&cluster, &byoh_record()).await.unwrap_err().to_string();
        assert!(error.contains("the annotations of Node win-a") && error.contains("says ssh-rsa"), "{error}");
    }
}
