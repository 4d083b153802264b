//! Strict, explainable approval decisions for kubelet certificate signing requests.
//!
//! The crate is the pure core of the operator's CSR approver (rules A1–F4 of the project's CSR rule set, documented
//! in `docs/csr-approval.md`):
//!
//! - [`CsrManifest`] mirrors a `certificates.k8s.io/v1` CertificateSigningRequest (as `kubectl get csr -o yaml`
//!   prints it); [`CsrFacts::from_manifest`] decodes it, including the PKCS#10 request ([`ParsedRequest`]).
//! - [`World`] is what the operator knows (instances, Nodes, other CSRs, networks, the time), plain serde data.
//! - [`decide`] returns a [`Verdict`]: approve, deny (in scope and statically wrong) or ignore, with the
//!   [`RuleId`] that decided and a one-line reason.
//!
//! No DNS, SSH or cluster calls happen here; the operator gathers the World (with a live Node GET before a
//! bootstrap approval) and applies the verdict.
//!
//! ```
//! use wmco_csr_approver::{decide, CsrFacts, CsrManifest, RuleId, World};
//! let manifest: CsrManifest = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
//!     "metadata": {"name": "csr-1", "creationTimestamp": "2026-11-22T00:00:00Z"},
//!     "spec": {"request": "", "signerName": "kubernetes.io/kubelet-serving"},
//!     "status": {"conditions": [{"type": "Approved", "status": "True"}]}
//! }))?;
//! let world: World = serde_json::from_str(r#"{"now": "2026-11-22T00:01:00Z"}"#)?;
//! assert_eq!(decide(&CsrFacts::from_manifest(&manifest)?, &world).rule(), Some(RuleId::A1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod decide;
mod facts;
mod manifest;
mod names;
mod request;
mod rule;
mod verdict;
mod world;

pub use decide::decide;
pub use facts::{CsrFacts, ManifestError};
pub use manifest::{CSR_API_VERSION, CSR_KIND, CsrCondition, CsrManifest, CsrMetadata, CsrSpec, CsrStatus};
pub use names::{
    KubeletSigner, NODE_BOOTSTRAPPER_GROUPS, NODE_BOOTSTRAPPER_USERNAME, NODE_GROUPS, NODE_NAME_PREFIX,
    NODES_ORGANIZATION, OS_LABEL, OS_WINDOWS, POD_NAME_EXTRA_KEY, SIGNER_KUBELET_CLIENT, SIGNER_KUBELET_SERVING,
    is_rfc1123_subdomain,
};
pub use request::{
    AttributeType, EncodingDefect, ExtensionContent, KeyKind, MAX_REQUEST_BYTES, ParsedRequest, PublicKeyFacts,
    RequestBody, RequestedExtension, SanEntry, SignatureAlgorithm, SignatureError, StringType, Subject,
    SubjectAttribute, UnreadableRequest,
};
pub use rule::RuleId;
pub use verdict::{APPROVE_REASON, Verdict, VerdictReport};
pub use wmco_vocabulary::{CidrError, InstancePhase, IpCidr};
pub use world::{
    AddressType, BootstrapApproval, ByohInstance, CsrState, CsrSummary, MachineInstance, ManagedInstance, NodeAddress,
    NodeRecord, World, WorldData,
};
