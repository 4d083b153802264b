//! The kube-runtime wiring of the CSR controller: a `Controller` over CertificateSigningRequests calling
//! [`reconcile_csr`], with requeues for state rules and an error policy with exponential backoff.
//!
//! A field selector cannot OR two values of `spec.signerName`, so the watch covers every CSR and
//! [`reconcile_csr`] skips other signers before any work. Exercised against a real apiserver by the e2e suite.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use kube::{Api, Client};
use wmco_csr_approver::{RuleId, Verdict};

use super::{CsrContext, CsrControllerError, CsrOutcome, reconcile_csr};

/// How soon a CSR left pending by a rule that can still change (A5, A6, F1–F3) is decided again: those rules read
/// records and Nodes this controller does not watch.
pub const STATE_RECHECK: Duration = Duration::from_secs(10);

/// Backoff of a failed reconcile: the first retry waits this long, and each later one twice as long as the last.
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// Backoff ceiling.
const MAX_RETRY: Duration = Duration::from_secs(60);

/// Runs the CSR controller until the watch ends (the process shuts down).
///
/// ```no_run
/// # async fn run(client: kube::Client, context: std::sync::Arc<wmco_operator::csr::CsrContext>) {
/// wmco_operator::csr::controller(client, context).await;
/// # }
/// ```
pub async fn controller(client: Client, ctx: Arc<CsrContext>) {
    let csrs: Api<CertificateSigningRequest> = Api::all(client);
    Controller::new(csrs, watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::warn!(error = %error, "CSR controller");
            }
        })
        .await;
}

async fn reconcile(csr: Arc<CertificateSigningRequest>, ctx: Arc<CsrContext>) -> Result<Action, CsrControllerError> {
    let outcome = reconcile_csr(&csr, &ctx).await?;
    ctx.clear_failures(csr.metadata.name.as_deref().unwrap_or_default());
    Ok(action_after(&outcome))
}

/// What to do after a successful reconcile: recheck state rules soon, otherwise wait for the CSR to change.
fn action_after(outcome: &CsrOutcome) -> Action {
    match outcome {
        CsrOutcome::Decided { verdict: Verdict::Ignore { rule, .. }, .. } if rule_can_change(*rule) => {
            Action::requeue(STATE_RECHECK)
        }
        CsrOutcome::Skipped | CsrOutcome::Decided { .. } => Action::await_change(),
    }
}

fn rule_can_change(rule: RuleId) -> bool {
    matches!(rule, RuleId::A5 | RuleId::A6 | RuleId::F1 | RuleId::F2 | RuleId::F3)
}

fn error_policy(csr: Arc<CertificateSigningRequest>, error: &CsrControllerError, ctx: Arc<CsrContext>) -> Action {
    let csr_name = csr.metadata.name.as_deref().unwrap_or_default();
    tracing::warn!(csr = %csr_name, kind = error.metric_label(), error = %error, "CSR reconcile failed");
    ctx.metrics.record_error(error.metric_label());
    if !error.is_retryable() {
        return Action::await_change();
    }
    Action::requeue(backoff(ctx.record_failure(csr_name)))
}

/// The wait before retry number `attempt` (1-based).
fn backoff(attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
    FIRST_RETRY.saturating_mul(factor).min(MAX_RETRY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_minute() {
        let waits: Vec<_> = [1, 2, 3, 8, 50].into_iter().map(backoff).collect();
        let expected = [500, 1_000, 2_000, 60_000, 60_000].map(Duration::from_millis);
        assert_eq!(waits, expected);
    }

    #[test]
    fn state_ignores_are_rechecked_and_static_ones_wait_for_a_change() {
        let ignored =
            |rule| CsrOutcome::Decided { verdict: Verdict::Ignore { rule, reason: String::new() }, instance: None };
        assert_eq!(action_after(&ignored(RuleId::F1)), Action::requeue(STATE_RECHECK));
        assert_eq!(action_after(&ignored(RuleId::A4)), Action::await_change());
        assert_eq!(action_after(&CsrOutcome::Skipped), Action::await_change());
    }
}
