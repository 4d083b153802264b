//! What the kubelet's tasks share: [`Shared`] (its status channel, current node client and journal, also read by
//! the [`KubeletHandle`](crate::KubeletHandle)) and the doubling [`Backoff`] with the certificate request timings.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

use crate::{KubeletPhase, KubeletStatus};

/// How long one certificate request waits for its certificate (`certificateWaitTimeout`).
pub(crate) const CERTIFICATE_WAIT: Duration = Duration::from_secs(15 * 60);
/// First pause after a failed certificate request; doubled up to [`CERTIFICATE_RETRY_MAX`].
pub(crate) const CERTIFICATE_RETRY_INITIAL: Duration = Duration::from_secs(2);
/// Longest pause between certificate requests.
pub(crate) const CERTIFICATE_RETRY_MAX: Duration = Duration::from_secs(32);
/// How many journal lines a kubelet keeps (the oldest are dropped first).
const JOURNAL_LINES: usize = 10_000;

/// Shared between the task and its handle.
pub(crate) struct Shared {
    pub node_name: String,
    pub status: watch::Sender<KubeletStatus>,
    pub node_client: Mutex<Option<kube::Client>>,
    pub journal: Mutex<VecDeque<String>>,
}

impl Shared {
    pub(crate) fn new(node_name: String, status: watch::Sender<KubeletStatus>) -> Self {
        Self { node_name, status, node_client: Mutex::new(None), journal: Mutex::new(VecDeque::new()) }
    }

    /// Publishes the current node client for [`crate::KubeletHandle::node_client`].
    pub(crate) fn set_node_client(&self, client: kube::Client) {
        *self.node_client.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(client);
    }

    /// Publishes the phase the kubelet is in.
    pub(crate) fn phase(&self, phase: KubeletPhase) {
        self.status.send_modify(|status| status.phase = phase);
    }

    /// Records a notable event (klog severity `I`).
    pub(crate) fn info(&self, message: String) {
        tracing::info!(node = %self.node_name, "{message}");
        self.record('I', &message);
    }

    /// Records a problem (klog severity `E`) and remembers it as the last one.
    pub(crate) fn problem(&self, problem: String) {
        tracing::warn!(node = %self.node_name, "{problem}");
        self.record('E', &problem);
        self.status.send_modify(|status| status.last_problem = Some(problem));
    }

    fn record(&self, severity: char, message: &str) {
        let line = format!("{severity} {} {message}", jiff::Timestamp::now());
        let mut journal = self.journal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if journal.len() == JOURNAL_LINES {
            journal.pop_front();
        }
        journal.push_back(line);
    }
}

/// A doubling pause between `initial` and `max`.
pub(crate) struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    pub(crate) fn new(initial: Duration, max: Duration) -> Self {
        Self { next: initial, max }
    }

    pub(crate) async fn pause(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(self.max);
    }
}
