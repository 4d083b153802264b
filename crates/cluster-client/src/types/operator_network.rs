//! `operator.openshift.io/v1` Network (named `OperatorNetwork` here to tell it from the config Network): the
//! hybrid-overlay settings of OVN-Kubernetes that Windows nodes need.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::OtherFields;

/// The cluster network operator's configuration; the operator reads the hybrid-overlay settings.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "operator.openshift.io",
    version = "v1",
    kind = "Network",
    root = "OperatorNetwork",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorNetworkSpec {
    /// The default network's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_network: Option<DefaultNetwork>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The default network of the cluster network operator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DefaultNetwork {
    /// OVN-Kubernetes settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ovn_kubernetes_config: Option<OvnKubernetesConfig>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// OVN-Kubernetes settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OvnKubernetesConfig {
    /// Hybrid overlay settings; required for Windows nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hybrid_overlay_config: Option<HybridOverlayConfig>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// Hybrid overlay settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HybridOverlayConfig {
    /// The hybrid cluster networks (`cidr`, `hostPrefix`), kept as raw JSON.
    #[serde(rename = "hybridClusterNetwork", default, skip_serializing_if = "Vec::is_empty")]
    pub hybrid_cluster_network: Vec<serde_json::Value>,
    /// A custom VXLAN port, when set.
    #[serde(rename = "hybridOverlayVXLANPort", default, skip_serializing_if = "Option::is_none")]
    pub hybrid_overlay_vxlan_port: Option<u32>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}
