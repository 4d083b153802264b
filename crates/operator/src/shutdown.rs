//! The graceful-shutdown signal the binary hands to the controllers that run host steps: once triggered they start
//! no new work and let the reconciles already running finish (the binary bounds how long it waits for them).
//!
//! A [`ShutdownTrigger`] and its [`ShutdownSignal`]s come from [`shutdown_channel`]; dropping the trigger without
//! triggering never stops anything (a signal whose trigger is gone stays pending forever).
//! [`termination_requested`] is the process's own cue: SIGTERM or Ctrl-C.

use tokio::sync::watch;

/// The sending half: [`ShutdownTrigger::trigger`] tells every [`ShutdownSignal`] to stop taking work.
#[derive(Debug)]
pub struct ShutdownTrigger {
    sender: watch::Sender<bool>,
}

/// The receiving half, cloned into every controller that must stop gracefully.
#[derive(Clone, Debug)]
pub struct ShutdownSignal {
    receiver: watch::Receiver<bool>,
}

/// A new trigger and the signal it drives.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let (trigger, signal) = wmco_operator::shutdown::shutdown_channel();
/// assert!(!signal.is_triggered());
/// trigger.trigger();
/// signal.clone().triggered().await;
/// assert!(signal.is_triggered());
/// # });
/// ```
pub fn shutdown_channel() -> (ShutdownTrigger, ShutdownSignal) {
    let (sender, receiver) = watch::channel(false);
    (ShutdownTrigger { sender }, ShutdownSignal { receiver })
}

impl ShutdownTrigger {
    /// Starts the graceful shutdown (idempotent).
    pub fn trigger(&self) {
        self.sender.send_replace(true);
    }
}

impl ShutdownSignal {
    /// A signal that is never triggered, for callers without a graceful shutdown (tests, one-shot tools).
    pub fn never() -> Self {
        let (sender, receiver) = watch::channel(false);
        drop(sender);
        ShutdownSignal { receiver }
    }

    /// Whether the shutdown has been triggered.
    pub fn is_triggered(&self) -> bool {
        *self.receiver.borrow()
    }

    /// Resolves once the shutdown is triggered; never when the trigger is dropped untriggered. Owns the signal, so
    /// the future is `'static` (what `kube::runtime::Controller::graceful_shutdown_on` takes).
    pub async fn triggered(mut self) {
        if self.receiver.wait_for(|triggered| *triggered).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Runs `work` until it completes (`Some`) or the shutdown is triggered (`None`, `work` dropped at its current
    /// await point; not started at all once triggered). For work that holds no host step open: API writes and
    /// watches.
    pub async fn unless_triggered<T>(self, work: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            biased;
            () = self.triggered() => None,
            output = work => Some(output),
        }
    }
}

/// Completes on SIGTERM (Kubernetes stopping the pod) or Ctrl-C: the start of a graceful shutdown.
pub async fn termination_requested() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(error = %error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn triggering_wakes_every_clone() {
        let (trigger, signal) = shutdown_channel();
        let first = tokio::spawn(signal.clone().triggered());
        let second = tokio::spawn(signal.clone().triggered());
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!first.is_finished() && !second.is_finished());
        trigger.trigger();
        first.await.expect("first woke");
        second.await.expect("second woke");
        assert!(signal.is_triggered());
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_trigger_never_fires() {
        let (trigger, signal) = shutdown_channel();
        drop(trigger);
        let waited = tokio::time::timeout(Duration::from_secs(3600), signal.clone().triggered()).await;
        assert!(waited.is_err());
        assert!(!signal.is_triggered());
        let never = ShutdownSignal::never();
        assert!(tokio::time::timeout(Duration::from_secs(3600), never.triggered()).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn unless_triggered_returns_the_output_or_stops_the_work() {
        let (trigger, signal) = shutdown_channel();
        assert_eq!(signal.clone().unless_triggered(async { 7 }).await, Some(7));
        let stopped = tokio::spawn(signal.clone().unless_triggered(std::future::pending::<u8>()));
        tokio::time::sleep(Duration::from_secs(1)).await;
        trigger.trigger();
        assert_eq!(stopped.await.expect("task"), None);
        assert_eq!(signal.unless_triggered(async { 8 }).await, None);
    }
}
