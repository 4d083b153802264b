//! Reading the `windows-instances` ConfigMap manifest offline, as `kubectl get cm windows-instances -o yaml` (or
//! `-o json`) prints it: `apiVersion: v1`, `kind: ConfigMap`, `metadata`, `data`. Other fields are ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A ConfigMap manifest that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The text is neither a YAML nor a JSON ConfigMap (syntax error, or `data` values that are not strings).
    #[error("not a ConfigMap manifest: {detail}")]
    Syntax {
        /// What the parser said.
        detail: String,
    },
    /// The manifest is some other kind of object.
    #[error("expected apiVersion v1 and kind ConfigMap, found apiVersion {api_version:?} and kind {kind:?}")]
    WrongKind {
        /// The manifest's `apiVersion`.
        api_version: String,
        /// The manifest's `kind`.
        kind: String,
    },
    /// The ConfigMap has no `data` section, so it lists no instance at all.
    #[error(
        "the ConfigMap {name:?} has no `data` section; each Windows host is one entry `<address>: username=<name>`"
    )]
    MissingData {
        /// The ConfigMap's name.
        name: String,
    },
}

/// The parts of the ConfigMap that matter here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstancesConfigMap {
    /// `metadata.name` (empty when absent).
    pub name: String,
    /// `metadata.namespace`, if given.
    pub namespace: Option<String>,
    /// The entries: key = address, value = `username=<name>`.
    pub data: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawConfigMap {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: RawMetadata,
    data: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Default)]
struct RawMetadata {
    #[serde(default)]
    name: String,
    namespace: Option<String>,
}

/// Parses a ConfigMap manifest written as YAML or JSON.
///
/// ```
/// use wmco_instance_inventory::parse_config_map;
///
/// let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: windows-instances\n\
///                 data:\n  10.1.2.3: |-\n    username=Administrator\n";
/// let config_map = parse_config_map(manifest).unwrap();
/// assert_eq!(config_map.data["10.1.2.3"], "username=Administrator");
/// ```
pub fn parse_config_map(text: &str) -> Result<InstancesConfigMap, ManifestError> {
    let raw: RawConfigMap = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|error| ManifestError::Syntax { detail: error.to_string() })?
    } else {
        serde_saphyr::from_str(text).map_err(|error| ManifestError::Syntax { detail: error.to_string() })?
    };
    if raw.api_version != "v1" || raw.kind != "ConfigMap" {
        return Err(ManifestError::WrongKind { api_version: raw.api_version, kind: raw.kind });
    }
    let data = raw.data.ok_or_else(|| ManifestError::MissingData { name: raw.metadata.name.clone() })?;
    Ok(InstancesConfigMap { name: raw.metadata.name, namespace: raw.metadata.namespace, data })
}

/// Reads and parses a ConfigMap manifest file.
pub fn load_config_map(path: &Path) -> Result<InstancesConfigMap, ManifestError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ManifestError::Unreadable { path: path.to_path_buf(), source })?;
    parse_config_map(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL_YAML: &str = r#"apiVersion: v1
data:
  10.1.2.3: |-
    username=Administrator
  win1.example.com: "username=capi"
kind: ConfigMap
metadata:
  creationTimestamp: "2026-11-22T01:00:00Z"
  name: windows-instances
  namespace: openshift-windows-machine-config-operator
  resourceVersion: "1234"
  uid: 0b7e3c1e-1111-2222-3333-444455556666
"#;

    #[test]
    fn reads_kubectl_yaml() {
        let config_map = parse_config_map(KUBECTL_YAML).unwrap();
        assert_eq!(config_map.name, "windows-instances");
        assert_eq!(config_map.namespace.as_deref(), Some("openshift-windows-machine-config-operator"));
        assert_eq!(
            config_map.data,
            BTreeMap::from([
                ("10.1.2.3".to_owned(), "username=Administrator".to_owned()),
                ("win1.example.com".to_owned(), "username=capi".to_owned()),
            ])
        );
    }

    #[test]
    fn reads_kubectl_json() {
        let json = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"windows-instances"},
                       "data":{"10.1.2.3":"username=Administrator\n"}}"#;
        let config_map = parse_config_map(json).unwrap();
        assert_eq!(config_map.data["10.1.2.3"], "username=Administrator\n");
    }

    #[test]
    fn empty_data_is_an_empty_fleet() {
        let config_map = parse_config_map("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: w}\ndata: {}\n").unwrap();
        assert!(config_map.data.is_empty());
    }

    #[test]
    fn wrong_kind_and_missing_data_are_refused_with_their_reason() {
        let error = parse_config_map("apiVersion: v1\nkind: Secret\nmetadata: {name: w}\ndata: {}\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "expected apiVersion v1 and kind ConfigMap, found apiVersion \"v1\" and kind \"Secret\""
        );
        let error = parse_config_map("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: w}\n").unwrap_err();
        assert!(matches!(error, ManifestError::MissingData { ref name } if name == "w"), "{error}");
    }

    #[test]
    fn syntax_errors_and_unreadable_files() {
        assert!(matches!(parse_config_map("{not json"), Err(ManifestError::Syntax { .. })));
        assert!(matches!(parse_config_map("data: [unclosed"), Err(ManifestError::Syntax { .. })));
        let error = load_config_map(Path::new("/nonexistent/windows-instances.yaml")).unwrap_err();
        assert!(error.to_string().starts_with("cannot read /nonexistent/windows-instances.yaml: "), "{error}");
    }
}
