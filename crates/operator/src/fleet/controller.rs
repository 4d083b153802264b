//! The fleet controller's loop: it reconciles the whole fleet whenever a `WindowsInstance` changes, a Windows Node
//! changes in a way the plan reads (labels, annotations, schedulability, readiness, coming or going — not every
//! status heartbeat), a Windows Machine changes (where the machine API is served), `cloud-private-key` changes (as
//! the one `operator_key::KeyWatcher` announces it), a background drain ends, a failed upgrade step's backoff ends,
//! [`FleetSettings::retry`](super::FleetSettings) after a host's key check failed, just after a refused Machine's
//! grace period ends, and at least every [`RESYNC`]. Triggers arriving during a reconcile are coalesced into one
//! follow-up reconcile; reconciles never overlap, and each reads the key and the fleet fresh from the API server,
//! so a coalesced trigger loses nothing. A failed reconcile is retried with a doubling backoff up to [`RESYNC`].
//!
//! Exercised against a real API server by the e2e suite.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use wmco_cluster_client::names::KUBERNETES_OS_LABEL;
use wmco_cluster_client::types::{Machine, WindowsInstance};
use wmco_machines::names::{MACHINE_API_NAMESPACE, OS_ID_LABEL, WINDOWS_OS_ID};

use super::context::FLEET;
use super::{FleetContext, FleetError, FleetOutcome, fleet_node_changes, reconcile_fleet, watch_triggers};
use crate::metrics::Metrics;
use crate::runtime::{ReconcilerError, RetryBackoff, timed};

/// The longest the controller goes without reconciling the fleet.
pub const RESYNC: Duration = Duration::from_secs(60);
/// The first retry after a failed reconcile (key unusable, API server unreachable); doubled up to [`RESYNC`].
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// Runs the fleet controller until the watches end (the process shuts down). `watch_machines` is `false` where the
/// machine API is not served (plain Kubernetes: BYOH hosts only); `key_changes` yields when the operator key
/// changed ([`KeyReceiver::changes`](crate::operator_key::KeyReceiver::changes)).
///
/// ```no_run
/// # async fn run(
/// #     client: kube::Client,
/// #     context: std::sync::Arc<wmco_operator::fleet::FleetContext>,
/// #     keys: wmco_operator::operator_key::KeyReceiver,
/// # ) {
/// wmco_operator::fleet::controller(client, context, true, keys.changes()).await;
/// # }
/// ```
pub async fn controller(
    client: Client,
    ctx: Arc<FleetContext>,
    watch_machines: bool,
    key_changes: impl Stream<Item = ()> + Send + 'static,
) {
    let records = Api::<WindowsInstance>::namespaced(client.clone(), &ctx.settings.namespace);
    let record_changes =
        watch_triggers(watcher(records, watcher::Config::default()).default_backoff(), FLEET, "WindowsInstances");
    let windows_nodes = watcher::Config::default().labels(&format!("{KUBERNETES_OS_LABEL}=windows"));
    let node_changes =
        fleet_node_changes(watcher(Api::<Node>::all(client.clone()), windows_nodes).default_backoff(), FLEET);
    let mut triggers = futures::stream::select_all([key_changes.boxed(), record_changes.boxed(), node_changes.boxed()]);
    if watch_machines {
        let windows_machines = watcher::Config::default().labels(&format!("{OS_ID_LABEL}={WINDOWS_OS_ID}"));
        let machines = Api::<Machine>::namespaced(client, MACHINE_API_NAMESPACE);
        triggers.push(
            watch_triggers(watcher(machines, windows_machines).default_backoff(), FLEET, "Windows Machines").boxed(),
        );
    }
    let drains = Arc::clone(&ctx);
    let drain_ends = move || {
        let ctx = Arc::clone(&drains);
        async move { ctx.next_drain_end().await }
    };
    let reconciles = Arc::clone(&ctx);
    let reconcile = move || {
        let ctx = Arc::clone(&reconciles);
        async move { reconcile_and_log(&ctx).await }
    };
    let retries = RetryBackoff::new(FIRST_RETRY, RESYNC);
    run_loop(triggers, drain_ends, &ctx.metrics, &retries, reconcile).await;
}

/// Runs `reconcile` whenever `triggers` yields, when a future made by `wake` resolves (the end of a background
/// drain), or when the wait the last reconcile returned has passed; the first reconcile runs at once. Returns when
/// `triggers` ends. A failed reconcile is counted in `wmco_reconcile_errors_total` by its
/// [`ReconcilerError::metric_label`] and retried after `retries`' next wait; a success resets it.
async fn run_loop<Wake, WakeFuture, Reconcile, ReconcileFuture, E>(
    mut triggers: impl Stream<Item = ()> + Unpin,
    mut wake: Wake,
    metrics: &Metrics,
    retries: &RetryBackoff,
    mut reconcile: Reconcile,
) where
    Wake: FnMut() -> WakeFuture,
    WakeFuture: Future<Output = ()>,
    Reconcile: FnMut() -> ReconcileFuture,
    ReconcileFuture: Future<Output = Result<Duration, E>>,
    E: ReconcilerError,
{
    let mut wait = Duration::ZERO;
    loop {
        tokio::select! {
            trigger = triggers.next() => if trigger.is_none() { return },
            () = wake() => {}
            () = tokio::time::sleep(wait) => {}
        }
        while let Some(Some(())) = triggers.next().now_or_never() {}
        match timed(metrics, FLEET, reconcile()).await {
            Ok(next_wait) => {
                retries.on_success(FLEET);
                wait = next_wait;
            }
            Err(error) => {
                metrics.record_error(FLEET, error.metric_label());
                wait = retries.on_failure(FLEET);
            }
        }
    }
}

/// One fleet reconcile, logged; returns how long to wait for the next one.
async fn reconcile_and_log(ctx: &Arc<FleetContext>) -> Result<Duration, FleetError> {
    let outcome = reconcile_fleet(ctx, Timestamp::now()).await.inspect_err(|error| {
        tracing::warn!(kind = error.metric_label(), error = %error, "fleet controller: fleet reconcile failed");
    })?;
    log_outcome(&outcome);
    Ok(next_wait(&outcome, ctx.settings.retry, Timestamp::now()))
}

fn log_outcome(outcome: &FleetOutcome) {
    if !(outcome.started.is_empty() && outcome.finished.is_empty() && outcome.failed.is_empty()) {
        tracing::info!(
            started = ?outcome.started,
            finished = ?outcome.finished,
            failed = ?outcome.failed,
            summary = %outcome.plan.summary,
            "upgrade executor"
        );
    }
    let rotation = &outcome.rotation;
    if !rotation.is_quiet() || outcome.needs_retry() {
        tracing::info!(
            replaced = ?rotation.replaced,
            replaced_after_refused_logins = ?rotation.replaced_refused,
            refused_waiting_for_budget = outcome.refused.waiting_for_budget.len(),
            rekeyed = ?rotation.rekeyed,
            not_authorized = ?rotation.not_authorized,
            failed = ?rotation.failed,
            waiting = outcome.work.key_waiting.len(),
            machines_away = ?outcome.machines_away,
            "key rotation"
        );
    }
}

/// How long to sleep after `outcome` at `now`: until the next upgrade retry is due, `retry` while a host's key
/// check waits, until just after a grace period ends; at most [`RESYNC`].
fn next_wait(outcome: &FleetOutcome, retry: Duration, now: Timestamp) -> Duration {
    let mut wait = until_next_retry(outcome.next_retry, now);
    if outcome.needs_retry() {
        wait = wait.min(retry);
    }
    if let Some(deadline) = outcome.refused.next_deadline() {
        wait = wait.min(until(deadline, now));
    }
    wait
}

/// How long until the next retry is due, at most [`RESYNC`].
fn until_next_retry(next_retry: Option<Timestamp>, now: Timestamp) -> Duration {
    next_retry
        .and_then(|due| Duration::try_from(due.duration_since(now)).ok())
        .map_or(RESYNC, |until_due| until_due.min(RESYNC))
}

/// How long from `now` until just after `deadline` (a grace period's end), at least zero.
fn until(deadline: Timestamp, now: Timestamp) -> Duration {
    Duration::try_from(deadline.duration_since(now)).unwrap_or(Duration::ZERO).saturating_add(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::channel::mpsc;
    use tokio::sync::Notify;

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the API server did not answer")]
    struct Unreachable;

    impl ReconcilerError for Unreachable {
        fn metric_label(&self) -> &'static str {
            "unreachable"
        }
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn the_loop_sleeps_until_the_next_retry_at_most_one_resync() {
        let now: Timestamp = "2026-11-22T04:00:00Z".parse().unwrap();
        let soon: Timestamp = "2026-11-22T04:00:30Z".parse().unwrap();
        let late: Timestamp = "2026-11-22T05:00:00Z".parse().unwrap();
        assert_eq!(until_next_retry(Some(soon), now), Duration::from_secs(30));
        assert_eq!(until_next_retry(Some(late), now), RESYNC);
        assert_eq!(
            until_next_retry(Some(now), soon),
            RESYNC,
            "a retry already due was made by the reconcile that just ran"
        );
        assert_eq!(until_next_retry(None, now), RESYNC);
    }

    #[test]
    fn the_loop_wakes_just_after_a_grace_period_ends() {
        let now: Timestamp = "2026-11-22T04:30:00Z".parse().unwrap();
        assert_eq!(until("2026-11-22T04:30:20Z".parse().unwrap(), now), Duration::from_secs(21));
        assert_eq!(until("2026-11-22T04:29:00Z".parse().unwrap(), now), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn triggers_that_arrive_together_make_one_reconcile_and_the_loop_ends_with_them() {
        let (send, receive) = mpsc::unbounded::<()>();
        for _ in 0..3 {
            send.unbounded_send(()).unwrap();
        }
        drop(send);
        let runs = AtomicUsize::new(0);
        let counted = &runs;
        let retries = RetryBackoff::new(Duration::from_secs(1), Duration::from_secs(60));
        run_loop(receive, std::future::pending, &Metrics::new(), &retries, move || async move {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Unreachable>(HOUR)
        })
        .await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_backs_off_doubling_and_a_wake_or_the_returned_wait_runs_the_next_reconcile() {
        let (_send, receive) = mpsc::unbounded::<()>();
        let started = tokio::time::Instant::now();
        let runs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let wake = Arc::new(Notify::new());
        let metrics = Arc::new(Metrics::new());
        let looping = tokio::spawn({
            let (runs, wake, metrics) = (Arc::clone(&runs), Arc::clone(&wake), Arc::clone(&metrics));
            async move {
                let retries = RetryBackoff::new(Duration::from_secs(1), Duration::from_secs(60));
                let wakes = move || {
                    let wake = Arc::clone(&wake);
                    async move { wake.notified().await }
                };
                run_loop(receive, wakes, &metrics, &retries, || {
                    let runs = Arc::clone(&runs);
                    async move {
                        let mut runs = runs.lock().unwrap();
                        runs.push(started.elapsed().as_secs());
                        if runs.len() <= 2 { Err(Unreachable) } else { Ok(HOUR) }
                    }
                })
                .await;
            }
        });
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(*runs.lock().unwrap(), [0, 1, 3], "at once, then 1 s and 2 s after the failures");
        wake.notify_one();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(runs.lock().unwrap().len(), 4, "the wake-up ran a reconcile before the hour was up");
        tokio::time::sleep(HOUR).await;
        assert_eq!(runs.lock().unwrap()[4], 3600 + 10);
        let exposition = metrics.encode().unwrap();
        assert!(exposition.contains("kind=\"unreachable\""), "{exposition}");
        looping.abort();
    }
}
