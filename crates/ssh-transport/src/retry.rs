//! Exponential backoff with jitter, bounded by a deadline, for retryable transport failures.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use crate::error::TransportError;

/// How often and how long a retryable operation is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The delay before the first retry (before jitter).
    pub initial_delay: Duration,
    /// The largest delay between two attempts (before jitter).
    pub max_delay: Duration,
    /// No attempt starts later than this after the first one.
    pub deadline: Duration,
}

impl Default for RetryPolicy {
    /// 1 s doubling to 30 s, for up to 2 minutes.
    fn default() -> RetryPolicy {
        RetryPolicy {
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            deadline: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn never() -> RetryPolicy {
        RetryPolicy { initial_delay: Duration::ZERO, max_delay: Duration::ZERO, deadline: Duration::ZERO }
    }

    /// The delay before retry number `retry` (0-based): `initial · 2^retry` capped at `max_delay`, then scaled by
    /// a random factor in [0.5, 1.0] so that many clients do not retry in lockstep.
    pub fn delay(&self, retry: u32) -> Duration {
        let exponential = self.initial_delay.saturating_mul(2u32.saturating_pow(retry.min(20)));
        let capped = exponential.min(self.max_delay);
        let fraction = 0.5 + 0.5 * random_unit();
        capped.mul_f64(fraction)
    }

    /// The delay before the next attempt, or `None` when that attempt would start after the deadline.
    pub fn next_delay(&self, retry: u32, started: Instant) -> Option<Duration> {
        let delay = self.delay(retry);
        (started.elapsed() + delay <= self.deadline).then_some(delay)
    }
}

/// A random number in [0, 1) from the standard library's randomly keyed hasher (enough for jitter).
fn random_unit() -> f64 {
    let bits = RandomState::new().hash_one(Instant::now()) >> 11;
    bits as f64 / (1u64 << 53) as f64
}

/// Runs `operation` until it succeeds, fails with a non-retryable error, or the policy's deadline passes; then
/// returns the last result.
///
/// ```
/// # let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// # runtime.block_on(async {
/// use std::time::Duration;
/// use wmco_ssh_transport::{retry, RetryPolicy, TransportError};
///
/// let policy = RetryPolicy { initial_delay: Duration::from_millis(1), max_delay: Duration::from_millis(2), deadline: Duration::from_secs(5) };
/// let mut attempts = 0;
/// let result: Result<u32, TransportError> = retry(&policy, || {
///     attempts += 1;
///     let attempt = attempts;
///     async move {
///         if attempt < 3 {
///             Err(TransportError::Unreachable { host: "h".into(), during: "connecting".into(), reason: "refused".into() })
///         } else {
///             Ok(attempt)
///         }
///     }
/// }).await;
/// assert_eq!(result.unwrap(), 3);
/// # });
/// ```
pub async fn retry<T, F, Fut>(policy: &RetryPolicy, mut operation: F) -> Result<T, TransportError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, TransportError>>,
{
    let started = Instant::now();
    let mut retries = 0;
    loop {
        match operation().await {
            Err(error) if error.is_retryable() => match policy.next_delay(retries, started) {
                Some(delay) => {
                    tracing::debug!(%error, ?delay, "retrying");
                    tokio::time::sleep(delay).await;
                    retries += 1;
                }
                None => return Err(error),
            },
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_with_jitter() {
        let policy = RetryPolicy {
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            deadline: Duration::from_secs(60),
        };
        for (retry, ceiling) in [(0, 100), (1, 200), (2, 400), (3, 800), (4, 1000), (30, 1000)] {
            let delay = policy.delay(retry);
            assert!(delay <= Duration::from_millis(ceiling), "retry {retry}: {delay:?}");
            assert!(delay >= Duration::from_millis(ceiling / 2), "retry {retry}: {delay:?}");
        }
    }

    #[test]
    fn never_policy_gives_no_retry() {
        assert_eq!(RetryPolicy::never().next_delay(0, Instant::now() - Duration::from_millis(1)), None);
    }
}
