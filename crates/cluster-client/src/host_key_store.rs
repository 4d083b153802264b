//! The operator's own copy of every host's pinned SSH key: ConfigMap [`HOST_KEYS_CONFIG_MAP`] of the operator
//! namespace, one entry per `WindowsInstance` record (keyed by the record's name, the key as an OpenSSH line). A
//! record's status holds its pin too, but a record can be lost (the CRD deleted, an etcd restore, a finalizer
//! stripped); the inventory then recreates it under the same name, and its first connection finds the pin here
//! instead of trusting whatever key answers. Only the operator and the namespace's admins can write here (Node
//! credentials cannot), so an admin may also pin a key before a host's first connection. The entry is written before
//! the record's status and removed when the record is released.

use k8s_openapi::api::core::v1::ConfigMap;

use crate::error::{Error, Result, Verb};
use crate::objects::{ConfigMapEntry, ConfigMaps};
use crate::types::WindowsInstance;

/// The operator's ConfigMap of pinned host keys, by record name.
pub const HOST_KEYS_CONFIG_MAP: &str = "windows-instance-host-keys";

/// The labels of [`HOST_KEYS_CONFIG_MAP`] when the operator creates it.
const LABELS: [(&str, &str); 1] = [("app.kubernetes.io/managed-by", "windows-machine-config-operator")];

/// The entry of `record` in [`HOST_KEYS_CONFIG_MAP`] of the record's namespace.
fn entry(record: &WindowsInstance) -> Result<ConfigMapEntry<'_>> {
    let missing = |field| Error::MissingField {
        verb: Verb::Patch,
        kind: "WindowsInstance",
        name: record.metadata.name.clone().unwrap_or_default(),
        field,
    };
    Ok(ConfigMapEntry {
        namespace: record.metadata.namespace.as_deref().ok_or_else(|| missing("metadata.namespace"))?,
        name: HOST_KEYS_CONFIG_MAP,
        key: record.metadata.name.as_deref().ok_or_else(|| missing("metadata.name"))?,
        labels: &LABELS,
    })
}

/// Keeps `key_line` (an OpenSSH `algorithm base64` line) as the pin of `record`'s host.
///
/// # Errors
/// The cluster call's error, or [`Error::MissingField`] for a record without a name or namespace.
pub async fn keep_host_key(config_maps: &dyn ConfigMaps, record: &WindowsInstance, key_line: &str) -> Result<()> {
    config_maps.set_entry(&entry(record)?, Some(key_line)).await
}

/// Removes the pin of `record`'s host (its record is released: a new host may take its address).
///
/// # Errors
/// The cluster call's error, or [`Error::MissingField`] for a record without a name or namespace.
pub async fn forget_host_key(config_maps: &dyn ConfigMaps, record: &WindowsInstance) -> Result<()> {
    config_maps.set_entry(&entry(record)?, None).await
}

/// The pin kept for `record`'s host, if any.
///
/// # Errors
/// The cluster call's error, or [`Error::MissingField`] for a record without a name or namespace.
pub async fn kept_host_key(config_maps: &dyn ConfigMaps, record: &WindowsInstance) -> Result<Option<String>> {
    let entry = entry(record)?;
    let config_map: Option<ConfigMap> = config_maps.get(entry.namespace, entry.name).await?;
    Ok(config_map.and_then(|config_map| config_map.data?.remove(entry.key)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeConfigMaps, objects};

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb0IkHe+vJ0sFwTGc7P0nK1Ib2qD2oZNq3KpJ+Iu5Hh";

    #[tokio::test]
    async fn each_record_keeps_its_own_entry_and_forgetting_one_leaves_the_others() {
        let config_maps = FakeConfigMaps::default();
        let first = objects::record("byoh-10-0-0-5").byoh("10.0.0.5").build();
        let second = objects::record("byoh-10-0-0-6").byoh("10.0.0.6").build();
        assert_eq!(kept_host_key(&config_maps, &first).await.unwrap(), None);
        keep_host_key(&config_maps, &first, KEY).await.unwrap();
        keep_host_key(&config_maps, &second, "ssh-rsa AAAAB3").await.unwrap();
        assert_eq!(kept_host_key(&config_maps, &first).await.unwrap().as_deref(), Some(KEY));

        forget_host_key(&config_maps, &first).await.unwrap();
        assert_eq!(kept_host_key(&config_maps, &first).await.unwrap(), None);
        assert_eq!(kept_host_key(&config_maps, &second).await.unwrap().as_deref(), Some("ssh-rsa AAAAB3"));
        let namespace = first.metadata.namespace.as_deref().unwrap();
        let stored = config_maps.get(namespace, HOST_KEYS_CONFIG_MAP).await.unwrap().unwrap();
        let labels = stored.metadata.labels.unwrap();
        assert_eq!(labels["app.kubernetes.io/managed-by"], "windows-machine-config-operator");
    }
}
