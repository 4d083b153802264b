//! `machineconfiguration.openshift.io/v1` ControllerConfig (the kubelet CA bundle) and MachineConfig (the rendered
//! worker ignition), as far as the operator reads them.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::OtherFields;

/// The machine-config controller's configuration; the operator reads the API server's serving CA.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "machineconfiguration.openshift.io", version = "v1", kind = "ControllerConfig", schema = "disabled")]
pub struct ControllerConfigSpec {
    /// Base64 PEM bundle of the CAs that sign the API server's serving certificate (the kubelet's CA file).
    #[serde(rename = "kubeAPIServerServingCAData", default, skip_serializing_if = "Option::is_none")]
    pub kube_api_server_serving_ca_data: Option<String>,
    /// The additional trusted CAs of image registries from the cluster's image configuration.
    #[serde(rename = "imageRegistryBundleData", default, skip_serializing_if = "Vec::is_empty")]
    pub image_registry_bundle_data: Vec<ImageRegistryBundle>,
    /// The additional trusted CAs of image registries the admin gave (`image.config` `additionalTrustedCA`).
    #[serde(rename = "imageRegistryBundleUserData", default, skip_serializing_if = "Vec::is_empty")]
    pub image_registry_bundle_user_data: Vec<ImageRegistryBundle>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// One registry's CA bundle in a ControllerConfig.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRegistryBundle {
    /// The registry, `host` or `host..port` (`..` stands for `:`).
    pub file: String,
    /// Base64 of the PEM bundle.
    pub data: String,
}

/// A MachineConfig; the operator reads the ignition config of the newest `rendered-worker-*`.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "machineconfiguration.openshift.io", version = "v1", kind = "MachineConfig", schema = "disabled")]
pub struct MachineConfigSpec {
    /// The ignition config, kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}
