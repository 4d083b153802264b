//! A pool of host handles keyed by `user@address:port`, with a global cap on open connections: when the cap is
//! reached, a host that needs to connect closes the least recently used idle connection, or waits for one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::config::HostConfig;
use crate::error::TransportError;
use crate::host::SshHost;
use crate::limiter::Limiter;

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
        self.limiter.open_connections()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
