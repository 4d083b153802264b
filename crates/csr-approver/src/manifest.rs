//! A minimal serde mirror of a `certificates.k8s.io/v1` CertificateSigningRequest, exactly the fields the rules
//! read, so `kubectl get csr NAME -o yaml` output deserializes directly and the crate needs no k8s-openapi.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The API version this crate reads.
pub const CSR_API_VERSION: &str = "certificates.k8s.io/v1";
/// The kind this crate reads.
pub const CSR_KIND: &str = "CertificateSigningRequest";

/// A CertificateSigningRequest as the apiserver returns it (unknown fields such as `managedFields` are skipped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsrManifest {
    /// Must be `certificates.k8s.io/v1`.
    pub api_version: String,
    /// Must be `CertificateSigningRequest`.
    pub kind: String,
    /// Name and creation time.
    pub metadata: CsrMetadata,
    /// The request and its requester.
    pub spec: CsrSpec,
    /// Conditions and certificate.
    #[serde(default)]
    pub status: CsrStatus,
}

/// `metadata` of a CSR.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsrMetadata {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.creationTimestamp`, set by the apiserver.
    pub creation_timestamp: Timestamp,
}

/// `spec` of a CSR.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsrSpec {
    /// `spec.request`: base64 of the PEM text.
    pub request: String,
    /// `spec.signerName`.
    pub signer_name: String,
    /// `spec.usages`.
    #[serde(default)]
    pub usages: Vec<String>,
    /// `spec.username`, filled by the apiserver from the creator.
    #[serde(default)]
    pub username: String,
    /// `spec.groups`, filled by the apiserver from the creator.
    #[serde(default)]
    pub groups: Vec<String>,
    /// `spec.extra`, filled by the apiserver from the creator.
    #[serde(default)]
    pub extra: BTreeMap<String, Vec<String>>,
    /// `spec.expirationSeconds`.
    #[serde(default)]
    pub expiration_seconds: Option<i64>,
}

/// `status` of a CSR.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsrStatus {
    /// `status.conditions`.
    #[serde(default)]
    pub conditions: Vec<CsrCondition>,
    /// `status.certificate` (base64), once signed.
    #[serde(default)]
    pub certificate: Option<String>,
}

/// One entry of `status.conditions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsrCondition {
    /// `Approved`, `Denied`, `Failed`, or another type.
    #[serde(rename = "type")]
    pub condition_type: String,
    /// `True` or `False`.
    #[serde(default)]
    pub status: String,
    /// `lastUpdateTime`: the API server sets it to the time of the write that adds the condition, unless the writer
    /// did (`kubectl certificate approve` sends its own clock's time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Timestamp>,
    /// `lastTransitionTime`: the API server sets it to the time of the write that adds the condition, unless the
    /// writer did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Timestamp>,
}
