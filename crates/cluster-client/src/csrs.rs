//! CertificateSigningRequests: list those of given signers (all, or only the pending ones; one field-selected,
//! paginated LIST per signer), and approve or deny one through the `/approval` subresource with a reason and
//! message, sending the resourceVersion that was read so a decision on a changed request is refused (409) instead
//! of applied.

use async_trait::async_trait;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};

use crate::error::{Error, Result, Verb};

const KIND: &str = "CertificateSigningRequest";
/// How many requests one LIST page holds.
const LIST_PAGE: u32 = 500;

/// Approve or deny, with the reason (`PascalCase`, names the rule) and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsrDecision {
    /// `true` to approve, `false` to deny.
    pub approve: bool,
    /// Machine-readable reason, e.g. `WMCOApprove`.
    pub reason: String,
    /// Human-readable explanation.
    pub message: String,
}

impl CsrDecision {
    /// An approval.
    pub fn approve(reason: impl Into<String>, message: impl Into<String>) -> Self {
        CsrDecision { approve: true, reason: reason.into(), message: message.into() }
    }

    /// A denial.
    pub fn deny(reason: impl Into<String>, message: impl Into<String>) -> Self {
        CsrDecision { approve: false, reason: reason.into(), message: message.into() }
    }

    fn verb(&self) -> Verb {
        if self.approve { Verb::Approve } else { Verb::Deny }
    }

    fn condition_type(&self) -> &'static str {
        if self.approve { "Approved" } else { "Denied" }
    }
}

/// Whether `csr` has no Approved, Denied or Failed condition yet.
pub fn is_pending(csr: &CertificateSigningRequest) -> bool {
    let conditions = csr.status.as_ref().and_then(|status| status.conditions.as_ref());
    !conditions.is_some_and(|conditions| {
        conditions.iter().any(|condition| matches!(condition.type_.as_str(), "Approved" | "Denied" | "Failed"))
    })
}

/// `csr` with the decision's condition appended, as sent to `/approval`.
pub(crate) fn with_decision(csr: &CertificateSigningRequest, decision: &CsrDecision) -> CertificateSigningRequest {
    let mut decided = csr.clone();
    let status = decided.status.get_or_insert_with(CertificateSigningRequestStatus::default);
    status.conditions.get_or_insert_default().push(CertificateSigningRequestCondition {
        type_: decision.condition_type().to_owned(),
        status: "True".to_owned(),
        reason: Some(decision.reason.clone()),
        message: Some(decision.message.clone()),
        ..CertificateSigningRequestCondition::default()
    });
    decided
}

/// What the CSR controller does to CertificateSigningRequests.
#[async_trait]
pub trait Csrs: Send + Sync {
    /// Pending requests whose `spec.signerName` is one of `signers`, in name order.
    async fn list_pending(&self, signers: &[&str]) -> Result<Vec<CertificateSigningRequest>>;

    /// Requests whose `spec.signerName` is one of `signers` in every state (pending, approved, issued, denied,
    /// failed), in name order, read from the API server (not a cache).
    async fn list(&self, signers: &[&str]) -> Result<Vec<CertificateSigningRequest>>;

    /// Approves or denies `csr` as read (its resourceVersion guards against deciding on a changed request); a
    /// changed request fails with a conflict ([`Error::is_conflict`]).
    async fn decide(
        &self,
        csr: &CertificateSigningRequest,
        decision: &CsrDecision,
    ) -> Result<CertificateSigningRequest>;
}

/// [`Csrs`] over the API server.
#[derive(Clone)]
pub struct KubeCsrs {
    api: Api<CertificateSigningRequest>,
}

impl KubeCsrs {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeCsrs { api: Api::all(client) }
    }
}

impl KubeCsrs {
    /// The requests of `signers` that `keep` accepts, in name order; `what` names them in errors. Each signer is
    /// listed with a `spec.signerName` field selector (the API server filters, so other signers' requests never
    /// arrive), in pages of [`LIST_PAGE`].
    async fn list_where(
        &self,
        signers: &[&str],
        what: &str,
        keep: impl Fn(&CertificateSigningRequest) -> bool,
    ) -> Result<Vec<CertificateSigningRequest>> {
        let mut kept = Vec::new();
        for signer in signers {
            let mut params = ListParams::default().fields(&format!("spec.signerName={signer}")).limit(LIST_PAGE);
            loop {
                let page = self.api.list(&params).await.map_err(|source| Error::api(Verb::List, KIND, what, source))?;
                kept.extend(page.items.into_iter().filter(|csr| keep(csr)));
                match page.metadata.continue_.filter(|token| !token.is_empty()) {
                    Some(token) => params = params.continue_token(&token),
                    None => break,
                }
            }
        }
        kept.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(kept)
    }
}

#[async_trait]
impl Csrs for KubeCsrs {
    async fn list_pending(&self, signers: &[&str]) -> Result<Vec<CertificateSigningRequest>> {
        self.list_where(signers, "pending", is_pending).await
    }

    async fn list(&self, signers: &[&str]) -> Result<Vec<CertificateSigningRequest>> {
        self.list_where(signers, &format!("of signers {}", signers.join(", ")), |_| true).await
    }

    async fn decide(
        &self,
        csr: &CertificateSigningRequest,
        decision: &CsrDecision,
    ) -> Result<CertificateSigningRequest> {
        let name = csr.metadata.name.clone().unwrap_or_default();
        if csr.metadata.resource_version.is_none() {
            return Err(Error::MissingField {
                verb: decision.verb(),
                kind: KIND,
                name,
                field: "metadata.resourceVersion",
            });
        }
        self.api
            .replace_subresource("approval", &name, &PostParams::default(), &with_decision(csr, decision))
            .await
            .map_err(|source| Error::api(decision.verb(), KIND, name, source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER};
    use crate::test_support::{Exchange, scenario, status_reply};
    use serde_json::{Value, json};

    fn csr(name: &str, signer: &str, conditions: Value) -> Value {
        json!({
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name, "resourceVersion": "41"},
            "spec": {"request": "", "signerName": signer, "usages": ["client auth"]},
            "status": {"conditions": conditions}
        })
    }

    fn csr_list(items: Vec<Value>, continue_token: Option<&str>) -> Value {
        json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequestList",
            "metadata": {"continue": continue_token}, "items": items})
    }

    /// The LIST of one signer's requests, page by page (`continue` empty on the first page).
    fn signer_list(signer: &str, continue_token: &str) -> String {
        let selector = format!("spec.signerName%3D{}", signer.replace('/', "%2F"));
        let token = if continue_token.is_empty() { String::new() } else { format!("&continue={continue_token}") };
        format!("/apis/certificates.k8s.io/v1/certificatesigningrequests?&fieldSelector={selector}&limit=500{token}")
    }

    /// Each signer is listed on its own with a `spec.signerName` field selector (the API server filters; other
    /// signers' requests never reach the operator), in pages of 500.
    #[tokio::test]
    async fn list_pending_keeps_undecided_requests_of_the_given_signers() {
        let exchanges = vec![
            Exchange::get(&signer_list(KUBELET_CLIENT_SIGNER, "")).reply(
                200,
                csr_list(
                    vec![
                        csr("csr-b", KUBELET_CLIENT_SIGNER, json!([])),
                        csr("csr-d", KUBELET_CLIENT_SIGNER, json!([{"type": "Approved", "status": "True"}])),
                    ],
                    None,
                ),
            ),
            Exchange::get(&signer_list(KUBELET_SERVING_SIGNER, ""))
                .reply(200, csr_list(vec![csr("csr-a", KUBELET_SERVING_SIGNER, json!([]))], None)),
        ];
        let pending = scenario(exchanges, |client| async move {
            KubeCsrs::new(client).list_pending(&[KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER]).await.unwrap()
        })
        .await;
        let names: Vec<_> = pending.iter().map(|csr| csr.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, vec!["csr-a".to_owned(), "csr-b".to_owned()]);
    }

    #[tokio::test]
    async fn list_reads_every_page_of_one_signer_in_every_state() {
        let exchanges = vec![
            Exchange::get(&signer_list(KUBELET_CLIENT_SIGNER, "")).reply(
                200,
                csr_list(
                    vec![
                        csr("csr-e", KUBELET_CLIENT_SIGNER, json!([{"type": "Denied", "status": "True"}])),
                        csr("csr-b", KUBELET_CLIENT_SIGNER, json!([])),
                    ],
                    Some("page-2"),
                ),
            ),
            Exchange::get(&signer_list(KUBELET_CLIENT_SIGNER, "page-2")).reply(
                200,
                csr_list(
                    vec![csr("csr-d", KUBELET_CLIENT_SIGNER, json!([{"type": "Approved", "status": "True"}]))],
                    None,
                ),
            ),
        ];
        let listed =
            scenario(
                exchanges,
                |client| async move { KubeCsrs::new(client).list(&[KUBELET_CLIENT_SIGNER]).await.unwrap() },
            )
            .await;
        let names: Vec<_> = listed.iter().map(|csr| csr.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["csr-b", "csr-d", "csr-e"]);
    }

    #[tokio::test]
    async fn approve_puts_the_read_object_with_an_approved_condition_to_approval() {
        let read: CertificateSigningRequest =
            serde_json::from_value(csr("csr-a", KUBELET_CLIENT_SIGNER, json!([]))).unwrap();
        let expected = csr(
            "csr-a",
            KUBELET_CLIENT_SIGNER,
            json!([{"type": "Approved", "status": "True", "reason": "WMCOApprove", "message": "node win-1 bootstrap"}]),
        );
        let exchanges = vec![
            Exchange::put("/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-a/approval?", expected.clone())
                .reply(200, expected),
        ];
        let decided = scenario(exchanges, |client| async move {
            KubeCsrs::new(client)
                .decide(&read, &CsrDecision::approve("WMCOApprove", "node win-1 bootstrap"))
                .await
                .unwrap()
        })
        .await;
        assert!(!is_pending(&decided));
    }

    #[tokio::test]
    async fn deny_on_a_changed_request_reports_a_conflict() {
        let read: CertificateSigningRequest =
            serde_json::from_value(csr("csr-a", KUBELET_SERVING_SIGNER, json!([]))).unwrap();
        let expected = csr(
            "csr-a",
            KUBELET_SERVING_SIGNER,
            json!([{"type": "Denied", "status": "True", "reason": "UnknownAddress", "message": "10.9.9.9 is not a host"}]),
        );
        let exchanges = vec![
            Exchange::put("/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-a/approval?", expected)
                .reply(409, status_reply(409, "Conflict", "the object has been modified")),
        ];
        let error = scenario(exchanges, |client| async move {
            KubeCsrs::new(client)
                .decide(&read, &CsrDecision::deny("UnknownAddress", "10.9.9.9 is not a host"))
                .await
                .unwrap_err()
        })
        .await;
        assert!(error.is_conflict());
        assert_eq!(error.to_string(), "deny CertificateSigningRequest csr-a failed");
    }

    #[tokio::test]
    async fn decide_refuses_an_object_without_resource_version() {
        let mut read: CertificateSigningRequest =
            serde_json::from_value(csr("csr-a", KUBELET_SERVING_SIGNER, json!([]))).unwrap();
        read.metadata.resource_version = None;
        let error = scenario(vec![], |client| async move {
            KubeCsrs::new(client).decide(&read, &CsrDecision::approve("R", "m")).await.unwrap_err()
        })
        .await;
        assert_eq!(error.to_string(), "approve CertificateSigningRequest csr-a: metadata.resourceVersion is missing");
    }
}
