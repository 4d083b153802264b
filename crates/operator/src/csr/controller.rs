//! The kube-runtime wiring of the CSR controller: a `Controller` over CertificateSigningRequests calling
//! [`reconcile_csr`], with requeues for state rules and the runtime's error policy (exponential backoff from 0.5 s
//! to 60 s, kept in [`CsrContext`]).
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
use crate::runtime::{Controlled, error_policy, report, tracked};

/// How soon a CSR left pending by a rule that can still change (A5, A6, F1–F3) is decided again: those rules read
/// records and Nodes this controller does not watch.
pub const STATE_RECHECK: Duration = Duration::from_secs(10);

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
        .for_each(|result| report(CsrContext::NAME, result))
        .await;
}

async fn reconcile(csr: Arc<CertificateSigningRequest>, ctx: Arc<CsrContext>) -> Result<Action, CsrControllerError> {
    let outcome = tracked(ctx.as_ref(), csr.as_ref(), reconcile_csr(&csr, &ctx)).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_minute() {
        let ctx = context();
        let csr = Arc::new(CertificateSigningRequest {
            metadata: kube::api::ObjectMeta { name: Some("csr-1".into()), ..Default::default() },
            ..Default::default()
        });
        let conflict = || CsrControllerError::Conflict {
            csr: "csr-1".into(),
            source: Box::new(wmco_cluster_client::Error::MissingField {
                verb: wmco_cluster_client::Verb::Get,
                kind: "CertificateSigningRequest",
                name: "csr-1".into(),
                field: "metadata",
            }),
        };
        let waits: Vec<_> = (1..=50).map(|_| error_policy(Arc::clone(&csr), &conflict(), Arc::clone(&ctx))).collect();
        let picked: Vec<_> = [1, 2, 3, 8, 50].map(|attempt| waits[attempt - 1].clone()).into();
        let expected = [500, 1_000, 2_000, 60_000, 60_000].map(|millis| Action::requeue(Duration::from_millis(millis)));
        assert_eq!(picked, expected);
    }

    fn context() -> Arc<CsrContext> {
        use wmco_cluster_client::fake::FakeCluster;
        let settings = super::super::CsrSettings {
            namespace: "wmco".into(),
            service_network: Vec::new(),
            cluster_network: Vec::new(),
            clock: super::super::system_clock(),
        };
        Arc::new(CsrContext::new(&FakeCluster::default().seams(), settings))
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
