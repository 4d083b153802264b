//! [`CsrFacts`]: everything the rules read about one CSR, built from its manifest, with the PKCS#10 request decoded.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use jiff::Timestamp;

use crate::manifest::{CSR_API_VERSION, CSR_KIND, CsrManifest};
use crate::request::{ParsedRequest, UnreadableRequest};
use crate::world::{CsrState, CsrSummary};

/// The manifest is not a `certificates.k8s.io/v1` CertificateSigningRequest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CSR {name}: expected {CSR_API_VERSION} {CSR_KIND}, found {api_version} {kind}")]
pub struct ManifestError {
    /// `metadata.name` of the offending manifest.
    pub name: String,
    /// Its `apiVersion`.
    pub api_version: String,
    /// Its `kind`.
    pub kind: String,
}

/// The facts of one CSR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsrFacts {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: Timestamp,
    /// `spec.signerName`.
    pub signer_name: String,
    /// `spec.usages`, in order.
    pub usages: Vec<String>,
    /// `spec.username`.
    pub username: String,
    /// `spec.groups`.
    pub groups: Vec<String>,
    /// `spec.extra`.
    pub extra: BTreeMap<String, Vec<String>>,
    /// `spec.expirationSeconds`.
    pub expiration_seconds: Option<i64>,
    /// The types of `status.conditions`.
    pub condition_types: Vec<String>,
    /// Whether `status.certificate` is non-empty.
    pub has_certificate: bool,
    /// The decoded request, or why it could not be read.
    pub request: Result<ParsedRequest, UnreadableRequest>,
}

impl CsrFacts {
    /// Builds the facts of a CSR manifest; fails only when it is not a v1 CertificateSigningRequest.
    ///
    /// ```
    /// use wmco_csr_approver::{CsrFacts, CsrManifest, UnreadableRequest};
    /// let manifest: CsrManifest = serde_json::from_value(serde_json::json!({
    ///     "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
    ///     "metadata": {"name": "csr-x", "creationTimestamp": "2026-01-01T00:00:00Z"},
    ///     "spec": {"request": "aGVsbG8=", "signerName": "kubernetes.io/kubelet-serving"}
    /// }))?;
    /// let facts = CsrFacts::from_manifest(&manifest)?;
    /// assert_eq!(facts.request, Err(UnreadableRequest::NoPemBlock));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_manifest(manifest: &CsrManifest) -> Result<Self, ManifestError> {
        if manifest.api_version != CSR_API_VERSION || manifest.kind != CSR_KIND {
            return Err(ManifestError {
                name: manifest.metadata.name.clone(),
                api_version: manifest.api_version.clone(),
                kind: manifest.kind.clone(),
            });
        }
        let spec = &manifest.spec;
        let request = STANDARD
            .decode(spec.request.trim())
            .map_err(|_| UnreadableRequest::ManifestBase64)
            .and_then(|pem_text| ParsedRequest::from_pem(&pem_text));
        Ok(Self {
            name: manifest.metadata.name.clone(),
            creation_timestamp: manifest.metadata.creation_timestamp,
            signer_name: spec.signer_name.clone(),
            usages: spec.usages.clone(),
            username: spec.username.clone(),
            groups: spec.groups.clone(),
            extra: spec.extra.clone(),
            expiration_seconds: spec.expiration_seconds,
            condition_types: manifest.status.conditions.iter().map(|c| c.condition_type.clone()).collect(),
            has_certificate: manifest.status.certificate.as_deref().is_some_and(|certificate| !certificate.is_empty()),
            request,
        })
    }

    /// Where the CSR stands: the first decisive condition, else `Approved` if a certificate is attached, else
    /// `Pending`.
    pub fn state(&self) -> CsrState {
        let decisive = self.condition_types.iter().find_map(|condition| match condition.as_str() {
            "Denied" => Some(CsrState::Denied),
            "Failed" => Some(CsrState::Failed),
            "Approved" => Some(CsrState::Approved),
            _ => None,
        });
        decisive.unwrap_or(if self.has_certificate { CsrState::Approved } else { CsrState::Pending })
    }

    /// The summary of this CSR that other decisions read from the World (pending limit, one approval per instance).
    pub fn summary(&self) -> CsrSummary {
        let parsed = self.request.as_ref().ok();
        let node_name = parsed.and_then(|request| {
            request
                .subject
                .values_of(&crate::request::AttributeType::CommonName)
                .find_map(|cn| cn.strip_prefix(crate::names::NODE_NAME_PREFIX))
                .map(str::to_owned)
        });
        let public_key_sha256 =
            parsed.and_then(|request| request.body.as_ref()).map(|body| body.public_key.spki_sha256_hex());
        CsrSummary {
            name: self.name.clone(),
            signer_name: self.signer_name.clone(),
            username: self.username.clone(),
            creation_timestamp: self.creation_timestamp,
            state: self.state(),
            node_name,
            public_key_sha256,
        }
    }
}
