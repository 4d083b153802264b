//! The `WindowsInstance` CustomResourceDefinition, generated from the Rust type and rendered as the YAML committed
//! under `manifests/base/crds/windowsinstances.yaml` (printed by `wmco crd`).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::error::{Error, Result};
use crate::types::WindowsInstance;

/// The first line of the rendered YAML.
const HEADER: &str =
    "# Generated from crates/cluster-client/src/types/windows_instance.rs by `wmco crd`; do not edit.\n";

/// The `WindowsInstance` CustomResourceDefinition.
pub fn windows_instance_crd() -> CustomResourceDefinition {
    WindowsInstance::crd()
}

/// The `WindowsInstance` CustomResourceDefinition as YAML, with a header saying where it comes from.
///
/// ```
/// let yaml = wmco_cluster_client::crd::windows_instance_crd_yaml().unwrap();
/// assert!(yaml.contains("name: windowsinstances.windowsmachineconfig.openshift.io"));
/// ```
pub fn windows_instance_crd_yaml() -> Result<String> {
    let body = serde_saphyr::to_string(&windows_instance_crd()).map_err(Error::RenderCrd)?;
    Ok(format!("{HEADER}{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMITTED: &str = include_str!("../../../manifests/base/crds/windowsinstances.yaml");

    #[test]
    fn committed_crd_matches_the_rust_type() {
        let generated = windows_instance_crd_yaml().unwrap();
        assert!(
            generated == COMMITTED,
            "manifests/base/crds/windowsinstances.yaml is stale: regenerate it with \
             `cargo run -p wmco -- crd > manifests/base/crds/windowsinstances.yaml`"
        );
    }

    #[test]
    fn crd_is_namespaced_with_status_and_printer_columns() {
        let crd = windows_instance_crd();
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.short_names, Some(vec!["wi".to_owned()]));
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        assert!(version.subresources.as_ref().unwrap().status.is_some());
        let columns: Vec<(String, String)> = version
            .additional_printer_columns
            .as_ref()
            .unwrap()
            .iter()
            .map(|column| (column.name.clone(), column.json_path.clone()))
            .collect();
        assert_eq!(
            columns,
            vec![
                ("Address".to_owned(), ".spec.address".to_owned()),
                ("Node".to_owned(), ".status.expectedNodeName".to_owned()),
                ("Ready".to_owned(), ".status.conditions[?(@.type==\"Ready\")].status".to_owned()),
                ("Reason".to_owned(), ".status.conditions[?(@.type==\"Ready\")].reason".to_owned()),
                ("Phase".to_owned(), ".status.phase".to_owned()),
                ("Version".to_owned(), ".status.configuredVersion".to_owned()),
                ("Settings".to_owned(), ".status.settingsGeneration".to_owned()),
                ("Age".to_owned(), ".metadata.creationTimestamp".to_owned()),
            ]
        );
    }

    #[test]
    fn conditions_are_a_map_list_with_kubernetes_validations() {
        let crd = windows_instance_crd();
        let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
        let conditions = &schema["openAPIV3Schema"]["properties"]["status"]["properties"]["conditions"];
        assert_eq!(conditions["x-kubernetes-list-type"], "map");
        assert_eq!(conditions["x-kubernetes-list-map-keys"], serde_json::json!(["type"]));
        let item = &conditions["items"]["properties"];
        assert_eq!(item["status"]["enum"], serde_json::json!(["True", "False", "Unknown"]));
        assert_eq!((item["type"]["maxLength"].as_u64(), item["reason"]["maxLength"].as_u64()), (Some(316), Some(1024)));
        assert!(item["reason"]["pattern"].is_string() && item["type"]["pattern"].is_string());
        let columns = crd.spec.versions[0].additional_printer_columns.as_ref().unwrap();
        let phase = columns.iter().find(|column| column.name == "Phase").unwrap();
        assert_eq!(phase.priority, Some(1), "Phase moves to -o wide; Ready and Reason replace it");
    }

    #[test]
    fn status_schema_has_every_field_of_the_design() {
        let crd = windows_instance_crd();
        let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
        let status = &schema["openAPIV3Schema"]["properties"]["status"]["properties"];
        let mut fields: Vec<&str> = status.as_object().unwrap().keys().map(String::as_str).collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            vec![
                "address",
                "approvedBootstrapKeySha256",
                "conditions",
                "configuredVersion",
                "configuringSince",
                "disruption",
                "expectedNodeName",
                "fqdn",
                "hostname",
                "lastError",
                "nodeIp",
                "observedGeneration",
                "phase",
                "pinnedHostKey",
                "reboot",
                "resolvedIpv4",
                "settingsGeneration",
                "sshUser",
            ]
        );
        // The API server prunes fields its schema lacks: the deprecated `reboot` stays for one release so an upgraded
        // operator still reads a reboot an older one recorded.
        let reboot = status["reboot"]["description"].as_str().unwrap();
        assert!(reboot.starts_with("Deprecated"), "{reboot}");
        assert_eq!(status["disruption"]["properties"]["kind"]["enum"], serde_json::json!(["Restart", "Reboot"]));
    }
}
