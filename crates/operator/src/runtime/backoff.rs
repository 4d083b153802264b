//! The retry backoff of failed reconciles, counted per key (a CSR name, a record's `namespace/name`, a Machine):
//! the first retry waits `first`, each later one twice as long as the last, at most `max`; a success forgets the
//! key's failures.
//!
//! Why a small type of our own: kube-runtime's `Controller` keeps no per-object backoff (its `error_policy` gets
//! no attempt count; kube-rs/kube#1916 is open). `backon`'s `ExponentialBuilder` and kube's
//! `watcher::DefaultBackoff` (built on it, with jitter) are delay iterators for one retried operation, so either
//! would still need the per-key map kept here, and an iterator per key to hold the state one counter holds. The
//! delays are the ones every controller computed before this type existed: `first × 2^min(attempt − 1, 16)`,
//! capped at `max`, without jitter.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Consecutive failures by key and the doubling wait they earn. Shared by reference (`&self`); one per controller
/// (or per loop).
///
/// ```
/// use std::time::Duration;
/// use wmco_operator::runtime::RetryBackoff;
/// let retries = RetryBackoff::new(Duration::from_secs(1), Duration::from_secs(5));
/// let waits: Vec<_> = (0..4).map(|_| retries.on_failure("wmco/win-1").as_secs()).collect();
/// assert_eq!(waits, [1, 2, 4, 5]);
/// assert_eq!(retries.on_failure("wmco/win-2"), Duration::from_secs(1));
/// retries.on_success("wmco/win-1");
/// assert_eq!(retries.on_failure("wmco/win-1"), Duration::from_secs(1));
/// ```
#[derive(Debug)]
pub struct RetryBackoff {
    first: Duration,
    max: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl RetryBackoff {
    /// A backoff whose first retry waits `first` and whose waits never exceed `max` (`first == max`: a fixed
    /// pause).
    pub fn new(first: Duration, max: Duration) -> Self {
        Self { first, max, failures: Mutex::default() }
    }

    /// Counts one more consecutive failure of `key` and returns how long to wait before retrying it.
    pub fn on_failure(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let attempt = failures.entry(key.to_owned()).or_default();
        *attempt = attempt.saturating_add(1);
        self.delay(*attempt)
    }

    /// Forgets the failures of `key` (its reconcile succeeded); its next failure waits `first` again.
    pub fn on_success(&self, key: &str) {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
    }

    /// The wait before retry number `attempt` (1-based).
    fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
        self.first.saturating_mul(factor).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The waits of the first `attempts` consecutive failures of one key.
    fn waits(retries: &RetryBackoff, attempts: usize) -> Vec<Duration> {
        (0..attempts).map(|_| retries.on_failure("key")).collect()
    }

    #[test]
    fn the_csr_timing_doubles_from_half_a_second_up_to_a_minute() {
        let delays = waits(&RetryBackoff::new(Duration::from_millis(500), Duration::from_secs(60)), 50);
        let picked: Vec<_> = [1, 2, 3, 8, 50].map(|attempt| delays[attempt - 1]).into();
        assert_eq!(picked, [500, 1_000, 2_000, 60_000, 60_000].map(Duration::from_millis));
    }

    #[test]
    fn the_host_timing_doubles_from_a_second_up_to_five_minutes() {
        let delays = waits(&RetryBackoff::new(Duration::from_secs(1), Duration::from_secs(300)), 50);
        let picked: Vec<_> = [1, 2, 3, 9, 50].map(|attempt| delays[attempt - 1]).into();
        assert_eq!(picked, [1, 2, 4, 256, 300].map(Duration::from_secs));
    }

    #[test]
    fn a_long_failing_key_waits_the_maximum_without_overflowing() {
        let retries = RetryBackoff::new(Duration::from_secs(30), Duration::from_secs(600));
        let delays = waits(&retries, 40);
        assert_eq!(delays[..6], [30, 60, 120, 240, 480, 600].map(Duration::from_secs));
        assert!(delays[6..].iter().all(|wait| *wait == Duration::from_secs(600)));
        let unbounded = RetryBackoff::new(Duration::from_secs(1), Duration::MAX);
        assert_eq!(waits(&unbounded, 40)[39], Duration::from_secs(1 << 16));
    }

    #[test]
    fn equal_first_and_max_is_a_fixed_pause() {
        let retries = RetryBackoff::new(Duration::from_secs(5), Duration::from_secs(5));
        assert_eq!(waits(&retries, 3), [5, 5, 5].map(Duration::from_secs));
    }

    #[test]
    fn keys_back_off_independently_and_a_success_starts_over() {
        let retries = RetryBackoff::new(Duration::from_secs(1), Duration::from_secs(300));
        assert_eq!(retries.on_failure("a"), Duration::from_secs(1));
        assert_eq!(retries.on_failure("a"), Duration::from_secs(2));
        assert_eq!(retries.on_failure("b"), Duration::from_secs(1));
        retries.on_success("a");
        retries.on_success("never-failed");
        assert_eq!(retries.on_failure("a"), Duration::from_secs(1));
        assert_eq!(retries.on_failure("b"), Duration::from_secs(2));
    }
}
