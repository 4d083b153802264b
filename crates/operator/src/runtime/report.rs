//! What every controller does around its reconciles, written once: time and count each reconcile
//! (`wmco_reconcile_total`, `wmco_reconcile_duration_seconds`), forget a key's failures after a success, and on a
//! failure log it, count it by controller and kind (`wmco_reconcile_errors_total`) and requeue with the controller's
//! backoff, or wait for a change when retrying cannot help. [`report`] drains a kube `Controller`'s result stream.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use kube::runtime::controller::Action;

use super::{ReconcilerError, RetryBackoff};
use crate::metrics::{Metrics, ReconcileResult};

/// What [`error_policy`] and [`tracked`] need from a kube `Controller`'s context: its name, where it counts, its
/// backoff, and the key that names an object (in logs and in the backoff).
pub trait Controlled<K>: Send + Sync {
    /// The error of the controller's reconcile.
    type Error: ReconcilerError;

    /// The controller's name: the `controller` label of the reconcile metrics and of log lines.
    const NAME: &'static str;

    /// Where reconciles and errors are counted.
    fn metrics(&self) -> &Metrics;

    /// The controller's retry backoff, per object key.
    fn retries(&self) -> &RetryBackoff;

    /// The key of `object` in logs and in the backoff (its name, or `namespace/name`).
    fn key(object: &K) -> String;

    /// Whether a failure is retried after the backoff (otherwise the controller waits for a change of the
    /// object). By default, [`ReconcilerError::is_retryable`].
    fn requeues(error: &Self::Error) -> bool {
        error.is_retryable()
    }

    /// Counts `error` in `wmco_reconcile_errors_total`. A controller whose public `reconcile_*` counts its own
    /// errors (so that callers outside the controller count them too) overrides this with nothing.
    fn count_error(&self, error: &Self::Error) {
        self.metrics().record_error(Self::NAME, error.metric_label());
    }
}

/// Runs one reconcile `pass` of `controller`, recording its result and duration in the reconcile metrics.
///
/// ```
/// use wmco_operator::metrics::Metrics;
/// use wmco_operator::runtime::timed;
/// # futures::executor::block_on(async {
/// let metrics = Metrics::new();
/// let done: Result<u8, std::fmt::Error> = timed(&metrics, "rekey", async { Ok(1) }).await;
/// assert_eq!(done, Ok(1));
/// assert!(metrics.encode()?.contains("wmco_reconcile_total{controller=\"rekey\",result=\"success\"} 1\n"));
/// # Ok::<(), std::fmt::Error>(())
/// # }).unwrap();
/// ```
pub async fn timed<T, E>(
    metrics: &Metrics,
    controller: &'static str,
    pass: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let started = Instant::now();
    let result = pass.await;
    metrics.record_reconcile(controller, ReconcileResult::of(&result), started.elapsed());
    result
}

/// Runs the reconcile `pass` of `object` under a kube `Controller`: [`timed`], and a success forgets the object's
/// failures so its next failure backs off from the start.
pub async fn tracked<K, C: Controlled<K>, T>(
    ctx: &C,
    object: &K,
    pass: impl Future<Output = Result<T, C::Error>>,
) -> Result<T, C::Error> {
    let result = timed(ctx.metrics(), C::NAME, pass).await;
    if result.is_ok() {
        ctx.retries().on_success(&C::key(object));
    }
    result
}

/// The error policy of every kube `Controller`: logs the failure, counts it by kind, and requeues the object
/// after its backoff, or waits for it to change when [`Controlled::requeues`] says a retry cannot help.
pub fn error_policy<K, C: Controlled<K>>(object: Arc<K>, error: &C::Error, ctx: Arc<C>) -> Action {
    let key = C::key(&object);
    tracing::warn!(controller = C::NAME, object = %key, kind = error.metric_label(), error = %error, "reconcile failed");
    ctx.count_error(error);
    if C::requeues(error) { Action::requeue(ctx.retries().on_failure(&key)) } else { Action::await_change() }
}

/// Logs one item of a kube `Controller`'s result stream that is an error (a failed reconcile, already counted by
/// [`error_policy`], or a watch or queue error); successes say nothing. Use as
/// `.for_each(|result| report("csr", result))`.
pub async fn report<T, E: std::error::Error>(controller: &'static str, result: Result<T, E>) {
    if let Err(error) = result {
        tracing::warn!(controller, error = %error, "controller reported an error");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    use tracing::Level;

    use crate::runtime::error::TestFailure as Failure;
    use crate::test_logs::{CapturedLogs, LogFormat};

    struct Context {
        metrics: Metrics,
        retries: RetryBackoff,
    }

    impl Controlled<String> for Context {
        type Error = Failure;
        const NAME: &'static str = "test";

        fn metrics(&self) -> &Metrics {
            &self.metrics
        }

        fn retries(&self) -> &RetryBackoff {
            &self.retries
        }

        fn key(object: &String) -> String {
            object.clone()
        }
    }

    fn context() -> Arc<Context> {
        Arc::new(Context {
            metrics: Metrics::new(),
            retries: RetryBackoff::new(Duration::from_secs(1), Duration::from_secs(300)),
        })
    }

    fn policy(ctx: &Arc<Context>, object: &str, error: &Failure) -> Action {
        error_policy(Arc::new(object.to_owned()), error, Arc::clone(ctx))
    }

    #[test]
    fn a_retryable_failure_is_counted_and_backs_off_longer_each_time() {
        let ctx = context();
        let waits = [policy(&ctx, "a", &Failure::Unreachable), policy(&ctx, "a", &Failure::Unreachable)];
        assert_eq!(waits, [Action::requeue(Duration::from_secs(1)), Action::requeue(Duration::from_secs(2))]);
        assert_eq!(policy(&ctx, "b", &Failure::Unreachable), Action::requeue(Duration::from_secs(1)));
        let text = ctx.metrics.encode().unwrap();
        assert!(text.contains("wmco_reconcile_errors_total{controller=\"test\",kind=\"unreachable\"} 3\n"), "{text}");
    }

    #[test]
    fn a_failure_a_retry_cannot_fix_waits_for_a_change() {
        let ctx = context();
        assert_eq!(policy(&ctx, "a", &Failure::Unreadable), Action::await_change());
        assert_eq!(policy(&ctx, "a", &Failure::Unreachable), Action::requeue(Duration::from_secs(1)));
        assert!(
            ctx.metrics
                .encode()
                .unwrap()
                .contains("wmco_reconcile_errors_total{controller=\"test\",kind=\"unreadable\"} 1\n")
        );
    }

    #[tokio::test]
    async fn a_tracked_success_is_timed_and_forgets_the_failures() {
        let ctx = context();
        policy(&ctx, "a", &Failure::Unreachable);
        policy(&ctx, "a", &Failure::Unreachable);
        let failed = tracked(ctx.as_ref(), &"a".to_owned(), async { Err::<(), _>(Failure::Unreachable) }).await;
        assert!(failed.is_err());
        assert_eq!(tracked(ctx.as_ref(), &"a".to_owned(), async { Ok::<_, Failure>(7) }).await.unwrap(), 7);
        assert_eq!(policy(&ctx, "a", &Failure::Unreachable), Action::requeue(Duration::from_secs(1)));
        let text = ctx.metrics.encode().unwrap();
        assert!(text.contains("wmco_reconcile_total{controller=\"test\",result=\"error\"} 1\n"), "{text}");
        assert!(text.contains("wmco_reconcile_total{controller=\"test\",result=\"success\"} 1\n"), "{text}");
        assert!(text.contains("wmco_reconcile_duration_seconds_count{controller=\"test\"} 2\n"), "{text}");
    }

    #[tokio::test]
    async fn report_logs_each_error_with_its_controller_and_nothing_for_a_success() {
        let logs = CapturedLogs::start(LogFormat::Json, Level::INFO);
        report("test", Ok::<_, Failure>(())).await;
        assert_eq!(logs.contents(), "", "a success logs nothing");
        report("test", Err::<(), _>(Failure::Unreachable)).await;
        let lines: Vec<serde_json::Value> =
            logs.contents().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        let [line] = lines.as_slice() else { panic!("expected one line: {lines:?}") };
        assert_eq!(line["level"], "WARN", "{line}");
        assert_eq!(line["controller"], "test", "{line}");
        assert_eq!(line["error"], Failure::Unreachable.to_string(), "{line}");
        assert_eq!(line["message"], "controller reported an error", "{line}");
    }
}
