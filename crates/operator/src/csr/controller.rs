//! The kube-runtime wiring of the CSR controller: one `Controller` per kubelet signer, each watching only its
//! signer's CertificateSigningRequests (a `spec.signerName` field selector: a selector cannot OR two values, so two
//! watches; the API server filters, so other signers' requests never reach the operator), each running at most
//! [`CONCURRENCY_PER_SIGNER`] reconciles at once, both calling [`reconcile_csr`]. A `WindowsInstance` watch feeds
//! the records store and, on every record change, triggers the pending CSRs naming that record's node (a request
//! out of scope waits for that instead of a timer). The stores of the three watches make the [`WatchedCache`] the
//! reconciles read, each once its reflector flagged its first complete list (`Controller::for_stream` over those
//! reflectors, so the cache never polls a store's own readiness future: kube-runtime wakes only its last waiter).
//! Requeues for state rules, and the runtime's error policy (exponential backoff from 0.5 s to
//! 60 s, kept in [`CsrContext`]). Exercised against a real apiserver by the e2e suite and `cargo xtask bench-csr`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::watch;
use wmco_cluster_client::types::WindowsInstance;
use wmco_csr_approver::{RuleId, Verdict};

use super::cache::{ReadyStore, WatchedCache, signal_ready};
use super::reconcile::expected_node_name;
use super::{CsrContext, CsrControllerError, CsrOutcome, KUBELET_SIGNERS, reconcile_csr};
use crate::runtime::{Controlled, error_policy, report, tracked};

/// How soon a CSR naming a managed instance and left pending by a rule that can still change (F1–F3) is decided
/// again: those rules read Nodes this controller does not watch. Only requests naming a managed instance's node
/// get here, and the node lock runs them one at a time per node.
pub const STATE_RECHECK: Duration = Duration::from_secs(10);

/// How soon a CSR left pending by the flood limit (A6) is decided again.
pub const FLOOD_RECHECK: Duration = Duration::from_secs(60);

/// How many CSRs of one signer are decided at once (two signers: at most twice as many in all).
pub const CONCURRENCY_PER_SIGNER: u16 = 2;

/// Runs the CSR controllers until their watches end (the process shuts down); `ctx` is given the
/// [`WatchedCache`] of their watches.
///
/// ```no_run
/// # async fn run(client: kube::Client, context: wmco_operator::csr::CsrContext) {
/// wmco_operator::csr::controller(client, context).await;
/// # }
/// ```
pub async fn controller(client: Client, ctx: CsrContext) {
    let records_api: Api<WindowsInstance> = Api::namespaced(client.clone(), &ctx.settings.namespace);
    let cache = Arc::new(WatchedCache::default());
    let (records, writer) = reflector::store::<WindowsInstance>();
    let (records_ready, ready) = watch::channel(false);
    cache.attach_records(ReadyStore::new(records, ready));
    let records_events = watcher(records_api.clone(), watcher::Config::default()).default_backoff().reflect(writer);
    let records_watch = signal_ready(records_events, records_ready).for_each(|event| {
        if let Err(error) = event {
            tracing::warn!(error = %error, "CSR controller: WindowsInstance watch");
        }
        std::future::ready(())
    });
    let (controllers, stores): (Vec<_>, Vec<_>) =
        KUBELET_SIGNERS.iter().map(|signer| signer_controller(&client, signer)).unzip();
    cache.attach_csrs(stores);
    let ctx = Arc::new(ctx.with_cache(cache));
    let runs = controllers.into_iter().map(|csr_controller| {
        let store = csr_controller.store();
        let triggers = Arc::clone(&ctx);
        csr_controller
            .watches(records_api.clone(), watcher::Config::default(), move |record| {
                pending_naming_record(&triggers, &store, &record)
            })
            .run(reconcile, error_policy, Arc::clone(&ctx))
            .for_each(|result| report(CsrContext::NAME, result))
    });
    futures::join!(records_watch, futures::future::join_all(runs));
}

/// The controller of one kubelet signer's CSRs, driven by a reflector of its own (a `spec.signerName` field
/// selector), and that reflector's store with its readiness flag for the [`WatchedCache`].
fn signer_controller(
    client: &Client,
    signer: &str,
) -> (Controller<CertificateSigningRequest>, ReadyStore<CertificateSigningRequest>) {
    let one_signer = watcher::Config::default().fields(&format!("spec.signerName={signer}"));
    let (store, writer) = reflector::store::<CertificateSigningRequest>();
    let (ready_sender, ready) = watch::channel(false);
    let events = watcher(Api::all(client.clone()), one_signer).default_backoff().reflect(writer);
    let triggers = signal_ready(events, ready_sender).applied_objects();
    let controller = Controller::for_stream(triggers, store.clone())
        .with_config(controller::Config::default().concurrency(CONCURRENCY_PER_SIGNER));
    (controller, ReadyStore::new(store, ready))
}

/// The pending CSRs in `store` that name the node `record` expects.
fn pending_naming_record(
    ctx: &CsrContext,
    store: &Store<CertificateSigningRequest>,
    record: &WindowsInstance,
) -> Vec<ObjectRef<CertificateSigningRequest>> {
    match expected_node_name(record) {
        Some(node_name) => ctx.summaries.pending_naming(&store.state(), node_name),
        None => Vec::new(),
    }
}

async fn reconcile(csr: Arc<CertificateSigningRequest>, ctx: Arc<CsrContext>) -> Result<Action, CsrControllerError> {
    let outcome = tracked(ctx.as_ref(), csr.as_ref(), reconcile_csr(&csr, &ctx)).await?;
    Ok(action_after(&outcome))
}

/// What to do after a successful reconcile: recheck state rules soon and the flood limit later; anything else (out
/// of scope, decided, never approvable) waits for the CSR or a record to change.
fn action_after(outcome: &CsrOutcome) -> Action {
    match outcome {
        CsrOutcome::Decided { verdict: Verdict::Ignore { rule: RuleId::F1 | RuleId::F2 | RuleId::F3, .. }, .. } => {
            Action::requeue(STATE_RECHECK)
        }
        CsrOutcome::Decided { verdict: Verdict::Ignore { rule: RuleId::A6, .. }, .. } => Action::requeue(FLOOD_RECHECK),
        CsrOutcome::Skipped | CsrOutcome::Decided { .. } => Action::await_change(),
    }
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

    /// A request naming no managed instance (A5) waits for a record change (the record watch triggers it), and one
    /// left by the flood limit (A6) is looked at again after a minute, not every 10 s.
    #[test]
    fn out_of_scope_requests_wait_for_a_record_and_a_flood_backs_off() {
        let ignored =
            |rule| CsrOutcome::Decided { verdict: Verdict::Ignore { rule, reason: String::new() }, instance: None };
        assert_eq!(action_after(&ignored(RuleId::A5)), Action::await_change());
        assert_eq!(action_after(&ignored(RuleId::A6)), Action::requeue(Duration::from_secs(60)));
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
