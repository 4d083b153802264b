//! A pool of host handles keyed by `user@address:port`, with a global cap on open connections: when the cap is
//! reached, a host that needs to connect closes the least recently used idle connection, or waits for one.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::config::HostConfig;
use crate::error::TransportError;
use crate::host::SshHost;
use crate::worker::Job;

/// Host handles shared by the whole process, at most `max_connections` of them connected at once.
///
/// ```
/// use std::time::Duration;
/// use wmco_ssh_transport::{HostConfig, HostPool, PrivateKey};
///
/// # let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// # runtime.block_on(async {
/// let key = PrivateKey::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").unwrap();
/// let pool = HostPool::new(64, Duration::from_secs(120));
/// let first = pool.host(HostConfig::new("10.0.0.5", "Administrator", key.clone())).unwrap();
/// let again = pool.host(HostConfig::new("10.0.0.5", "Administrator", key)).unwrap();
/// assert!(std::sync::Arc::ptr_eq(&first, &again));
/// assert_eq!(pool.open_connections(), 0); // connections open on first use
/// # });
/// ```
pub struct HostPool {
    hosts: Mutex<HashMap<String, Arc<SshHost>>>,
    limiter: Arc<Limiter>,
    idle_timeout: Duration,
}

impl HostPool {
    /// A pool allowing `max_connections` open connections (at least 1); a connection unused for `idle_timeout`
    /// is closed.
    pub fn new(max_connections: usize, idle_timeout: Duration) -> HostPool {
        HostPool {
            hosts: Mutex::new(HashMap::new()),
            limiter: Arc::new(Limiter::new(max_connections.max(1))),
            idle_timeout,
        }
    }

    /// The handle for `config`'s host, created on first request. Later requests for the same `user@address:port`
    /// return the same handle (and ignore the new config: call [`HostPool::forget`] first after a key change).
    pub fn host(&self, mut config: HostConfig) -> Result<Arc<SshHost>, TransportError> {
        let label = config.label();
        let mut hosts = lock(&self.hosts);
        if let Some(existing) = hosts.get(&label) {
            return Ok(Arc::clone(existing));
        }
        config.idle_timeout = Some(self.idle_timeout);
        let host = Arc::new(SshHost::with_limiter(config, Some(Arc::clone(&self.limiter)))?);
        hosts.insert(label, Arc::clone(&host));
        Ok(host)
    }

    /// Drops the pool's handle for `user@address:port`; its connection closes once no caller holds it.
    pub fn forget(&self, label: &str) {
        lock(&self.hosts).remove(label);
    }

    /// How many connections are open now.
    pub fn open_connections(&self) -> usize {
        lock(&self.limiter.state).open
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Counts open connections against the cap and knows which connected hosts are idle.
pub(crate) struct Limiter {
    cap: usize,
    state: Mutex<LimiterState>,
    freed: Condvar,
}

struct LimiterState {
    open: usize,
    idle: HashMap<String, Idle>,
}

struct Idle {
    since: Instant,
    sender: Weak<Mutex<std::sync::mpsc::Sender<Job>>>,
}

/// One open connection's share of the cap; given back on drop.
pub(crate) struct Slot {
    limiter: Arc<Limiter>,
    label: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = lock(&self.limiter.state);
        state.open = state.open.saturating_sub(1);
        state.idle.remove(&self.label);
        drop(state);
        self.limiter.freed.notify_all();
    }
}

impl Limiter {
    fn new(cap: usize) -> Limiter {
        Limiter { cap, state: Mutex::new(LimiterState { open: 0, idle: HashMap::new() }), freed: Condvar::new() }
    }

    /// Takes a slot for `label`, closing the least recently used idle connection when the cap is reached, and
    /// waiting at most `wait` for one to be given back.
    pub(crate) fn acquire(self: &Arc<Self>, label: &str, wait: Duration) -> Result<Slot, TransportError> {
        let deadline = Instant::now() + wait;
        let mut state = lock(&self.state);
        loop {
            if state.open < self.cap {
                state.open += 1;
                return Ok(Slot { limiter: Arc::clone(self), label: label.to_owned() });
            }
            evict_least_recently_used(&mut state);
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(TransportError::TimedOut {
                    host: label.to_owned(),
                    during: format!("waiting for one of the pool's {} connection slots", self.cap),
                    after: wait,
                });
            }
            state = self.freed.wait_timeout(state, left).map(|(guard, _)| guard).unwrap_or_else(|poison| {
                let (guard, _) = poison.into_inner();
                guard
            });
        }
    }

    pub(crate) fn mark_busy(&self, label: &str) {
        lock(&self.state).idle.remove(label);
    }

    pub(crate) fn mark_idle(&self, label: &str, sender: Weak<Mutex<std::sync::mpsc::Sender<Job>>>) {
        lock(&self.state).idle.insert(label.to_owned(), Idle { since: Instant::now(), sender });
    }
}

/// Asks the idle host unused for the longest time to disconnect (its slot comes back through [`Slot`]'s drop).
fn evict_least_recently_used(state: &mut LimiterState) {
    let Some(oldest) = state.idle.iter().min_by_key(|(_, idle)| idle.since).map(|(label, _)| label.clone()) else {
        return;
    };
    let Some(idle) = state.idle.remove(&oldest) else { return };
    if let Some(sender) = idle.sender.upgrade() {
        let disconnect: Job = Box::new(|worker| worker.disconnect());
        if lock(&sender).send(disconnect).is_ok() {
            tracing::debug!(host = %oldest, "closing idle connection to make room under the connection cap");
        }
    }
}
