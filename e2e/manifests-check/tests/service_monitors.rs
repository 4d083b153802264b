//! Every label a ServiceMonitor of `manifests/` relabels from is one Prometheus sets for the monitor's service
//! discovery role. A relabeling from a label Prometheus never sets silently does nothing (the windows_exporter
//! monitor once named `__meta_kubernetes_endpointslice_endpoint_target_name`, so `instance` stayed `ip:port`
//! instead of the node name). No control plane: the files are read as they are.
//!
//! The labels are those Prometheus' `discovery/kubernetes/endpointslice.go` sets on an EndpointSlice target (with
//! the service's, the namespace's and, with `attachMetadata.node`, the node's), and `__address__`. An endpoint's
//! `targetRef` name becomes `__meta_kubernetes_endpointslice_address_target_name`; the kubelet Service's slices,
//! which the Prometheus Operator keeps, point at Nodes, so that label is the node name.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, ensure};
use serde_json::Value;

/// Exact labels of an EndpointSlice target (Prometheus `discovery/kubernetes/endpointslice.go`).
const ENDPOINTSLICE_LABELS: [&str; 18] = [
    "__meta_kubernetes_namespace",
    "__meta_kubernetes_endpointslice_name",
    "__meta_kubernetes_endpointslice_address_type",
    "__meta_kubernetes_endpointslice_port_name",
    "__meta_kubernetes_endpointslice_port_protocol",
    "__meta_kubernetes_endpointslice_port",
    "__meta_kubernetes_endpointslice_port_app_protocol",
    "__meta_kubernetes_endpointslice_endpoint_conditions_ready",
    "__meta_kubernetes_endpointslice_endpoint_conditions_serving",
    "__meta_kubernetes_endpointslice_endpoint_conditions_terminating",
    "__meta_kubernetes_endpointslice_endpoint_zone",
    "__meta_kubernetes_endpointslice_endpoint_hostname",
    "__meta_kubernetes_endpointslice_endpoint_node_name",
    "__meta_kubernetes_endpointslice_address_target_kind",
    "__meta_kubernetes_endpointslice_address_target_name",
    "__meta_kubernetes_service_name",
    "__meta_kubernetes_node_name",
    "__address__",
];

/// Label families (a prefix, then a sanitized name) of the same targets.
const ENDPOINTSLICE_PREFIXES: [&str; 9] = [
    "__meta_kubernetes_endpointslice_label_",
    "__meta_kubernetes_endpointslice_labelpresent_",
    "__meta_kubernetes_endpointslice_annotation_",
    "__meta_kubernetes_endpointslice_annotationpresent_",
    "__meta_kubernetes_endpointslice_endpoint_topology_",
    "__meta_kubernetes_service_",
    "__meta_kubernetes_node_label_",
    "__meta_kubernetes_node_labelpresent_",
    "__meta_kubernetes_node_annotation_",
];

fn set_by_prometheus(label: &str) -> bool {
    ENDPOINTSLICE_LABELS.contains(&label) || ENDPOINTSLICE_PREFIXES.iter().any(|prefix| label.starts_with(prefix))
}

fn monitoring_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests/components/monitoring")
}

/// The ServiceMonitors of the monitoring component, with their file names.
fn service_monitors() -> anyhow::Result<Vec<(String, Value)>> {
    let mut monitors = Vec::new();
    for entry in std::fs::read_dir(monitoring_dir()).context("cannot list manifests/components/monitoring")? {
        let path = entry?.path();
        if path.extension().is_none_or(|extension| extension != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let value: Value =
            serde_saphyr::from_str(&text).with_context(|| format!("{} is not one YAML document", path.display()))?;
        if value["kind"] == "ServiceMonitor" {
            monitors.push((path.display().to_string(), value));
        }
    }
    Ok(monitors)
}

#[test]
fn every_relabeling_reads_a_label_prometheus_sets_for_an_endpointslice_target() -> anyhow::Result<()> {
    let monitors = service_monitors()?;
    ensure!(!monitors.is_empty(), "no ServiceMonitor found in {}", monitoring_dir().display());
    for (file, monitor) in monitors {
        let endpoints = monitor["spec"]["endpoints"].as_array().cloned().unwrap_or_default();
        let relabelings: Vec<Value> =
            endpoints.iter().flat_map(|endpoint| endpoint["relabelings"].as_array().cloned()).flatten().collect();
        // Only the EndpointSlice role's labels are listed here: a monitor that relabels must use that role.
        ensure!(
            relabelings.is_empty() || monitor["spec"]["serviceDiscoveryRole"] == "EndpointSlice",
            "{file}: relabels without the EndpointSlice role"
        );
        for relabeling in &relabelings {
            for label in relabeling["sourceLabels"].as_array().into_iter().flatten() {
                let label = label.as_str().unwrap_or_default();
                ensure!(set_by_prometheus(label), "{file}: relabels from {label}, which Prometheus never sets");
            }
        }
    }
    Ok(())
}

#[test]
fn the_windows_exporter_instance_label_is_the_node_name() -> anyhow::Result<()> {
    let monitors = service_monitors()?;
    let (_, monitor) = monitors
        .iter()
        .find(|(_, monitor)| monitor["metadata"]["name"] == "windows-exporter")
        .context("no windows-exporter ServiceMonitor")?;
    let relabelings = monitor["spec"]["endpoints"][0]["relabelings"].as_array().context("no relabelings")?;
    let instance = relabelings
        .iter()
        .find(|relabeling| relabeling["targetLabel"] == "instance")
        .context("nothing sets instance")?;
    // The kubelet Service's EndpointSlices point at Nodes (targetRef kind Node, name the node's).
    assert_eq!(instance["sourceLabels"], serde_json::json!(["__meta_kubernetes_endpointslice_address_target_name"]));
    Ok(())
}
