//! What a client of the operator's HTTP listeners (the health server, the metrics endpoint) may hold: at most
//! [`ConnectionLimits::max_connections`] connections at once (a semaphore: the listener accepts the next connection
//! only once one has closed, so the rest wait in the kernel's backlog and cost the process nothing), the TLS
//! handshake within [`ConnectionLimits::handshake_timeout`], each request head within
//! [`ConnectionLimits::header_read_timeout`] (hyper's own timeout, driven by hyper-util's `TokioTimer`), and a
//! request head of at most [`ConnectionLimits::max_buffer_bytes`] (hyper answers a longer one with 431 and closes).
//! A client that sends nothing, or trickles an endless head, is disconnected instead of holding a task, a
//! descriptor and a growing buffer for as long as it likes.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::TokioTimer;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Connections one listener serves at once: above the few hundred slow clients a misbehaving pod can hold before
/// the timeouts close them, with the kubelet's probes and Prometheus among them.
pub const MAX_CONNECTIONS: usize = 512;
/// How long a client may take to complete the TLS handshake (a kubelet or Prometheus needs milliseconds).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's head.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest read buffer (and so request head) of a connection: a probe's or a scrape's head is a few hundred
/// bytes, a bearer token a few kilobytes. hyper's smallest allowed value is 8 KiB.
pub const MAX_BUFFER_BYTES: usize = 16 * 1024;

/// The limits of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections served at once.
    pub max_connections: usize,
    /// Time allowed for the TLS handshake.
    pub handshake_timeout: Duration,
    /// Time allowed for each request head.
    pub header_read_timeout: Duration,
    /// Largest read buffer per connection (at least 8 KiB: hyper's minimum).
    pub max_buffer_bytes: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: MAX_CONNECTIONS,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            header_read_timeout: HEADER_READ_TIMEOUT,
            max_buffer_bytes: MAX_BUFFER_BYTES,
        }
    }
}

/// A listener's admission: the connection slots and the HTTP/1 settings every connection is served with.
#[derive(Debug, Clone)]
pub struct ConnectionGate {
    limits: ConnectionLimits,
    slots: Arc<Semaphore>,
}

impl ConnectionGate {
    /// A gate with `limits.max_connections` slots.
    pub fn new(limits: ConnectionLimits) -> Self {
        ConnectionGate { limits, slots: Arc::new(Semaphore::new(limits.max_connections)) }
    }

    /// Waits for a free slot.
    async fn admit(&self) -> OwnedSemaphorePermit {
        // The semaphore is never closed, so acquiring cannot fail; a closed one would admit nothing more.
        match Arc::clone(&self.slots).acquire_owned().await {
            Ok(permit) => permit,
            Err(_) => std::future::pending().await,
        }
    }

    /// Waits for a free slot, then accepts the next connection on `listener`; the connection holds the permit
    /// until it closes (an accept error gives it back when dropped).
    pub async fn accept(&self, listener: &TcpListener) -> (OwnedSemaphorePermit, io::Result<(TcpStream, SocketAddr)>) {
        let permit = self.admit().await;
        (permit, listener.accept().await)
    }

    /// How many connections are open now.
    pub fn open_connections(&self) -> usize {
        self.limits.max_connections - self.slots.available_permits()
    }

    /// The time allowed for a TLS handshake.
    pub fn handshake_timeout(&self) -> Duration {
        self.limits.handshake_timeout
    }

    /// An HTTP/1 connection builder with the header timeout (on tokio's clock) and the buffer limit.
    pub fn http1(&self) -> http1::Builder {
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_read_timeout)
            .max_buf_size(self.limits.max_buffer_bytes.max(8192));
        builder
    }
}
