//! [`CsrFacts`]: everything the rules read about one CSR, built from its manifest, with the PKCS#10 request decoded.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use jiff::Timestamp;

use crate::manifest::{CSR_API_VERSION, CSR_KIND, CsrCondition, CsrManifest};
use crate::names::NODE_NAME_PREFIX;
use crate::request::{AttributeType, MAX_REQUEST_BYTES, ParsedRequest, UnreadableRequest};
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
    /// When the `Approved` condition was written: the later of its `lastUpdateTime` and `lastTransitionTime` (the
    /// API server stamps both when the condition is added; cluster-machine-approver reads the latter). `None`
    /// without an `Approved` condition, or when it carries neither time.
    pub approved_at: Option<Timestamp>,
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
        let request = decode_request(&spec.request);
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
            approved_at: approval_time(&manifest.status.conditions),
            has_certificate: manifest.status.certificate.as_deref().is_some_and(|certificate| !certificate.is_empty()),
            request,
        })
    }

    /// Where the CSR stands, whatever the order of its conditions: `Approved` if a certificate is attached (it was
    /// issued); else `Denied`, `Failed` or `Approved` if such a condition is present, in that precedence (a signer
    /// marks an approved request it will not sign `Failed`, and kube-controller-manager's signers never sign a
    /// failed one); else `Pending`.
    pub fn state(&self) -> CsrState {
        if self.has_certificate {
            return CsrState::Approved;
        }
        let present = |wanted: &str| self.condition_types.iter().any(|condition| condition == wanted);
        [("Denied", CsrState::Denied), ("Failed", CsrState::Failed), ("Approved", CsrState::Approved)]
            .into_iter()
            .find_map(|(condition, state)| present(condition).then_some(state))
            .unwrap_or(CsrState::Pending)
    }

    /// The summary of this CSR that other decisions read from the World (pending limit, one approval per instance).
    pub fn summary(&self) -> CsrSummary {
        let parsed = self.request.as_ref().ok();
        let node_names = parsed.map(node_names_of).unwrap_or_default();
        let public_key_sha256 =
            parsed.and_then(|request| request.body.as_ref()).map(|body| body.public_key.spki_sha256_hex());
        CsrSummary {
            name: self.name.clone(),
            signer_name: self.signer_name.clone(),
            username: self.username.clone(),
            creation_timestamp: self.creation_timestamp,
            state: self.state(),
            approved_at: self.approved_at,
            node_names,
            public_key_sha256,
        }
    }
}

/// The node names after `system:node:` in the subject's CNs, each once, in subject order.
fn node_names_of(request: &ParsedRequest) -> Vec<String> {
    let mut node_names: Vec<String> = Vec::new();
    let common_names = request.subject.values_of(&AttributeType::CommonName);
    for node_name in common_names.filter_map(|common_name| common_name.strip_prefix(NODE_NAME_PREFIX)) {
        if !node_names.iter().any(|known| known == node_name) {
            node_names.push(node_name.to_owned());
        }
    }
    node_names
}

/// The later of the `lastUpdateTime` and `lastTransitionTime` of the `Approved` conditions, if any carries one.
fn approval_time(conditions: &[CsrCondition]) -> Option<Timestamp> {
    conditions
        .iter()
        .filter(|condition| condition.condition_type == "Approved")
        .flat_map(|condition| [condition.last_update_time, condition.last_transition_time])
        .flatten()
        .max()
}

/// Decodes `spec.request` (base64 of the PEM), refusing one longer than [`MAX_REQUEST_BYTES`] before any decoding.
fn decode_request(request: &str) -> Result<ParsedRequest, UnreadableRequest> {
    let request = request.trim();
    if request.len() > MAX_REQUEST_BYTES {
        return Err(UnreadableRequest::TooLarge { bytes: request.len(), limit: MAX_REQUEST_BYTES });
    }
    let pem_text = STANDARD.decode(request).map_err(|_| UnreadableRequest::ManifestBase64)?;
    ParsedRequest::from_pem(&pem_text)
}
