//! `eventually`: retry an asynchronous check until it passes or a deadline passes, for e2e tests that wait on
//! controllers (no timed assertions: the deadline is only a generous upper bound). [`eventually_some`] waits for a
//! value to appear while any error ends the wait at once; [`eventually_true`] waits for a plain condition.

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

/// Polls `probe` every [`RETRY_INTERVAL`] until it returns `Ok(Some(value))`; an error ends the wait at once (the
/// thing waited for can no longer come), and `timeout` without a value fails with "timed out after … waiting for
/// `what`".
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
/// use std::time::Duration;
/// let mut tries = 0;
/// let value = wmco_e2e_harness::eventually_some("the second try", Duration::from_secs(5), || {
///     tries += 1;
///     let seen = tries;
///     async move { anyhow::Ok((seen >= 2).then_some(seen)) }
/// })
/// .await?;
/// assert_eq!(value, 2);
/// let failed = wmco_e2e_harness::eventually_some("a value", Duration::from_secs(5), || async {
///     anyhow::bail!("the source is gone") as anyhow::Result<Option<u32>>
/// })
/// .await;
/// assert!(failed.is_err());
/// # Ok::<(), anyhow::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn eventually_some<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = probe().await? {
            return Ok(value);
        }
        if started.elapsed() > timeout {
            anyhow::bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(RETRY_INTERVAL).await;
    }
}

/// Checks `condition` every [`RETRY_INTERVAL`] until it holds, or fails with "timed out after … waiting for
/// `what`" once `timeout` has passed; for state the test reads directly (a simulated host, a watch's snapshot).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
/// use std::time::Duration;
/// let mut tries = 0;
/// wmco_e2e_harness::eventually_true("the third try", Duration::from_secs(5), || {
///     tries += 1;
///     tries >= 3
/// })
/// .await?;
/// assert_eq!(tries, 3);
/// # Ok::<(), anyhow::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn eventually_true(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) -> anyhow::Result<()> {
    eventually_some(what, timeout, || std::future::ready(Ok(condition().then_some(())))).await
}
