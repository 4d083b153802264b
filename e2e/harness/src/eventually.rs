//! `eventually`: retry an asynchronous check until it passes or a deadline passes, for e2e tests that wait on
//! controllers (no timed assertions: the deadline is only a generous upper bound).

use std::future::Future;
use std::time::{Duration, Instant};

/// How long `eventually` sleeps between two tries.
pub const RETRY_INTERVAL: Duration = Duration::from_millis(200);

/// Retries `probe` every [`RETRY_INTERVAL`] until it returns `Ok`, or fails with its last error (with `what` and
/// `timeout` as context) once `timeout` has passed.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
/// use std::time::Duration;
/// let mut tries = 0;
/// let value = wmco_e2e_harness::eventually("the third try", Duration::from_secs(5), || {
///     tries += 1;
///     let seen = tries;
///     async move { if seen >= 3 { Ok(seen) } else { anyhow::bail!("only {seen} tries") } }
/// })
/// .await?;
/// assert_eq!(value, 3);
/// # Ok::<(), anyhow::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let started = Instant::now();
    loop {
        match probe().await {
            Ok(value) => return Ok(value),
            Err(error) if started.elapsed() > timeout => {
                return Err(error.context(format!("{what} after {timeout:?}")));
            }
            Err(_) => tokio::time::sleep(RETRY_INTERVAL).await,
        }
    }
}
