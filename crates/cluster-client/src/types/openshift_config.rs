//! `config.openshift.io/v1` cluster configuration the operator reads: Infrastructure (platform, internal API URL),
//! Network (service CIDR), Proxy, APIServer (TLS profile), and the image mirror sets (IDMS, ITMS).

use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::OtherFields;

/// The cluster's infrastructure; everything the operator reads is in the status.
///
/// ```
/// use wmco_cluster_client::types::Infrastructure;
///
/// let infrastructure: Infrastructure = serde_json::from_value(serde_json::json!({
///     "apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
///     "metadata": {"name": "cluster"}, "spec": {},
///     "status": {"apiServerInternalURI": "https://api-int.example:6443", "platformStatus": {"type": "AWS"}}
/// })).unwrap();
/// let status = infrastructure.status.unwrap();
/// assert_eq!(status.api_server_internal_uri.as_deref(), Some("https://api-int.example:6443"));
/// assert_eq!(status.platform_status.unwrap().type_.as_deref(), Some("AWS"));
/// ```
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "Infrastructure",
    status = "InfrastructureStatus",
    schema = "disabled"
)]
pub struct InfrastructureSpec {
    /// Every field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The observed infrastructure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InfrastructureStatus {
    /// The URL nodes use to reach the API server.
    #[serde(rename = "apiServerInternalURI", default, skip_serializing_if = "Option::is_none")]
    pub api_server_internal_uri: Option<String>,
    /// The platform the cluster runs on.
    #[serde(rename = "platformStatus", default, skip_serializing_if = "Option::is_none")]
    pub platform_status: Option<PlatformStatus>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The platform the cluster runs on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlatformStatus {
    /// `AWS`, `Azure`, `GCP`, `VSphere`, `Nutanix`, `None`, …
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The cluster network configuration; the operator reads the service network.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "config.openshift.io", version = "v1", kind = "Network", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct NetworkSpec {
    /// The service CIDRs; the first one is used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_network: Vec<String>,
    /// The network plugin, e.g. `OVNKubernetes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_type: Option<String>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The cluster-wide proxy.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "config.openshift.io", version = "v1", kind = "Proxy", status = "ProxyStatus", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct ProxySpec {
    /// Every field, preserved (the operator reads the status, which holds the effective values).
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The effective cluster-wide proxy settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyStatus {
    /// Proxy for plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// Proxy for HTTPS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// Comma-separated destinations reached without the proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The API server configuration; the operator reads the TLS security profile.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "config.openshift.io", version = "v1", kind = "APIServer", root = "ApiServer", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct ApiServerSpec {
    /// The TLS security profile, kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_security_profile: Option<serde_json::Value>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// Mirrors pulled by digest.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "config.openshift.io", version = "v1", kind = "ImageDigestMirrorSet", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct ImageDigestMirrorSetSpec {
    /// One entry per source repository.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_digest_mirrors: Vec<ImageDigestMirrors>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The mirrors of one source repository, pulled by digest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageDigestMirrors {
    /// The source repository.
    pub source: String,
    /// The mirrors, in order of preference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mirrors: Vec<String>,
    /// `AllowContactingSource` (default) or `NeverContactSource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror_source_policy: Option<String>,
}

/// Mirrors pulled by tag.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "config.openshift.io", version = "v1", kind = "ImageTagMirrorSet", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct ImageTagMirrorSetSpec {
    /// One entry per source repository.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_tag_mirrors: Vec<ImageTagMirrors>,
    /// Every other field, preserved.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// The mirrors of one source repository, pulled by tag.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageTagMirrors {
    /// The source repository.
    pub source: String,
    /// The mirrors, in order of preference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mirrors: Vec<String>,
    /// `AllowContactingSource` (default) or `NeverContactSource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror_source_policy: Option<String>,
}
