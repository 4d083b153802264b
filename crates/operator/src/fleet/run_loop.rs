//! The loop both whole-fleet loops run on (the upgrade executor and the key rotation): wait for a trigger, an
//! extra wake-up or the wait the last reconcile asked for; coalesce every trigger that arrived meanwhile into one
//! reconcile; time and count it; after a failure wait as long as the loop's [`RetryBackoff`] says. Reconciles never
//! overlap, and each reads the fleet fresh, so a coalesced trigger loses nothing.

use std::future::Future;
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};

use crate::metrics::Metrics;
use crate::runtime::{ReconcilerError, RetryBackoff, timed};

/// Runs `reconcile` whenever `triggers` yields, when a future made by `wake` resolves (the upgrade executor's end of
/// a background drain; `std::future::pending` for none), or when the wait the last reconcile returned has passed;
/// the first reconcile runs at once. Returns when `triggers` ends (the watches ended: the process shuts down).
///
/// `name` labels the reconcile metrics and is the one key of `retries`: a failed reconcile is counted in
/// `wmco_reconcile_errors_total` by `name` and its [`ReconcilerError::metric_label`] and retried after `retries`' next
/// wait, a success resets it. Each loop logs its own outcome (and its error) inside `reconcile`.
///
/// ```no_run
/// use std::time::Duration;
/// use wmco_operator::metrics::Metrics;
/// use wmco_operator::runtime::RetryBackoff;
/// # #[derive(Debug, thiserror::Error)] #[error("never")] struct Never;
/// # impl wmco_operator::runtime::ReconcilerError for Never { fn metric_label(&self) -> &'static str { "never" } }
/// # async fn example(triggers: impl futures::Stream<Item = ()> + Unpin) {
/// let retries = RetryBackoff::new(Duration::from_secs(1), Duration::from_secs(60));
/// wmco_operator::fleet::run_loop(triggers, std::future::pending, "example", &Metrics::new(), &retries, || async {
///     Ok::<_, Never>(Duration::from_secs(60))
/// })
/// .await;
/// # }
/// ```
pub async fn run_loop<Wake, WakeFuture, Reconcile, ReconcileFuture, E>(
    mut triggers: impl Stream<Item = ()> + Unpin,
    mut wake: Wake,
    name: &'static str,
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
        match timed(metrics, name, reconcile()).await {
            Ok(next_wait) => {
                retries.on_success(name);
                wait = next_wait;
            }
            Err(error) => {
                metrics.record_error(name, error.metric_label());
                wait = retries.on_failure(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
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
        run_loop(receive, std::future::pending, "test", &Metrics::new(), &retries, move || async move {
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
                run_loop(receive, wakes, "test", &metrics, &retries, || {
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
