//! The connection cap of a [`HostPool`](crate::HostPool): a [`Limiter`] counts open connections, hands out one
//! [`Slot`] per connection, and when the cap is reached asks the least recently used idle host to disconnect.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::TransportError;

/// Asks one idle host's worker to disconnect (its slot then comes back through [`Slot`]'s drop); false when the
/// worker is gone.
pub(crate) type CloseRequest = Box<dyn Fn() -> bool + Send>;

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
    close: CloseRequest,
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
    pub(crate) fn new(cap: usize) -> Limiter {
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

    /// How many connections are open now.
    pub(crate) fn open_connections(&self) -> usize {
        lock(&self.state).open
    }

    pub(crate) fn mark_busy(&self, label: &str) {
        lock(&self.state).idle.remove(label);
    }

    /// Records `label` as connected and idle; `close` asks its worker to disconnect when the slot is needed.
    pub(crate) fn mark_idle(&self, label: &str, close: CloseRequest) {
        lock(&self.state).idle.insert(label.to_owned(), Idle { since: Instant::now(), close });
    }
}

/// Asks the idle host unused for the longest time to disconnect (its slot comes back through [`Slot`]'s drop).
fn evict_least_recently_used(state: &mut LimiterState) {
    let Some(oldest) = state.idle.iter().min_by_key(|(_, idle)| idle.since).map(|(label, _)| label.clone()) else {
        return;
    };
    let Some(idle) = state.idle.remove(&oldest) else { return };
    if (idle.close)() {
        tracing::debug!(host = %oldest, "closing idle connection to make room under the connection cap");
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
