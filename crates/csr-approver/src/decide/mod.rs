//! The decision: rules A → F in order, the first failing rule decides (csr-rules.md). Each submodule owns one rule
//! group; this module chains them and turns the first failure into the verdict.

mod crypto;
mod extensions;
mod san;
mod scope;
mod spec;
mod state;
mod subject;

use crate::request::{ParsedRequest, RequestBody};
use crate::world::ManagedInstance;
use crate::{CsrFacts, KubeletSigner, RuleId, Verdict, World};

/// Decides one CSR against the World. Pure: no IO, no clock (the time is `world.now`).
///
/// ```
/// use wmco_csr_approver::{decide, CsrFacts, CsrManifest, RuleId, Verdict, World};
/// let manifest: CsrManifest = serde_json::from_value(serde_json::json!({
///     "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
///     "metadata": {"name": "csr-x", "creationTimestamp": "2026-11-22T00:00:00Z"},
///     "spec": {"request": "", "signerName": "kubernetes.io/kube-apiserver-client"}
/// }))?;
/// let world: World = serde_json::from_str(r#"{"now": "2026-11-22T00:01:00Z"}"#)?;
/// let verdict = decide(&CsrFacts::from_manifest(&manifest)?, &world);
/// assert_eq!(verdict.rule(), Some(RuleId::A2));
/// assert!(matches!(verdict, Verdict::Ignore { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn decide(facts: &CsrFacts, world: &World) -> Verdict {
    match evaluate(facts, world) {
        Ok(()) => Verdict::Approve,
        Err(verdict) => verdict,
    }
}

/// A rule group's result: the value later groups need, or the deciding verdict.
type Check<T> = Result<T, Verdict>;

fn deny(rule: RuleId, reason: impl Into<String>) -> Verdict {
    Verdict::Deny { rule, reason: reason.into() }
}

fn ignore(rule: RuleId, reason: impl Into<String>) -> Verdict {
    Verdict::Ignore { rule, reason: reason.into() }
}

/// What the scope gate established about an in-scope request.
#[derive(Debug, Clone, Copy)]
struct InScope<'a> {
    signer: KubeletSigner,
    request: &'a ParsedRequest,
    node_name: &'a str,
    instance: &'a ManagedInstance,
}

/// Which kind of kubelet request this is, from signer and requester (rule E3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RequestRole {
    /// First client certificate, requested with the bootstrap credential.
    Bootstrap,
    /// Client certificate renewal, requested by the node itself.
    Renewal,
    /// Serving certificate, requested by the node itself.
    Serving,
}

fn evaluate(facts: &CsrFacts, world: &World) -> Check<()> {
    let scope = scope::check(facts, world)?;
    let body: &RequestBody = crypto::check(scope.request)?;
    subject::check(&scope)?;
    let sans = extensions::check(&scope, body, world)?;
    let role = spec::check(facts, &scope)?;
    state::check(facts, &scope, body, &sans, role, world)
}
