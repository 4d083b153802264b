//! The dedicated thread behind each host handle: it owns the blocking ssh2 connection, runs the jobs the async side
//! sends it one at a time, reconnects lazily after a failure, and closes the connection when it has been idle.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::config::HostConfig;
use crate::connection::{self, Connection, OpError};
use crate::error::TransportError;
use crate::host_key::HostKey;
use crate::limiter::{CloseRequest, Limiter, Slot};

/// Work for the thread: a closure that gets the worker and sends its result back itself.
pub(crate) type Job = Box<dyn FnOnce(&mut Worker) + Send>;

/// The sending side of a worker's queue, shared so that a pool can reach idle workers without keeping them alive.
pub(crate) type JobSender = Arc<Mutex<Sender<Job>>>;

/// The state owned by one worker thread.
pub(crate) struct Worker {
    config: Arc<HostConfig>,
    pub(crate) label: String,
    connection: Option<Connection>,
    /// The first host key seen (trust on first use), shared with the async handle.
    seen_key: Arc<Mutex<Option<HostKey>>>,
    limiter: Option<Arc<Limiter>>,
    slot: Option<Slot>,
}

impl Worker {
    /// Runs `operation` on the connection, connecting first when needed and dropping the connection when the
    /// operation says it is broken.
    pub(crate) fn with_connection<T>(
        &mut self,
        operation: impl FnOnce(&mut Connection, &str) -> Result<T, OpError>,
    ) -> Result<T, TransportError> {
        let label = self.label.clone();
        let connection = self.connection()?;
        operation(connection, &label).map_err(|failure| {
            if failure.poisoned {
                self.disconnect();
            }
            failure.error
        })
    }

    fn connection(&mut self) -> Result<&mut Connection, TransportError> {
        if self.connection.is_none() {
            let slot = match &self.limiter {
                Some(limiter) => Some(limiter.acquire(&self.label, self.config.connect_timeout)?),
                None => None,
            };
            let known_key = self.seen_key.lock().map(|seen| seen.clone()).unwrap_or(None);
            let connection = connection::connect(&self.config, known_key.as_ref())?;
            if let Ok(mut seen) = self.seen_key.lock() {
                seen.get_or_insert_with(|| connection.host_key.clone());
            }
            self.slot = slot;
            self.connection = Some(connection);
        }
        self.connection
            .as_mut()
            .ok_or_else(|| TransportError::Worker { host: self.label.clone(), reason: "connection vanished".into() })
    }

    /// Closes the connection (if any) and gives its slot back to the pool.
    pub(crate) fn disconnect(&mut self) {
        if let Some(connection) = self.connection.take() {
            connection.session.set_blocking(false);
            drop(connection);
            tracing::debug!(host = %self.label, "disconnected");
        }
        self.slot = None;
    }

    fn is_connected(&self) -> bool {
        self.connection.is_some()
    }
}

/// Starts the worker thread of one host; it ends when every sender is dropped.
pub(crate) fn spawn(
    config: Arc<HostConfig>,
    seen_key: Arc<Mutex<Option<HostKey>>>,
    limiter: Option<Arc<Limiter>>,
) -> Result<JobSender, TransportError> {
    let label = config.label();
    let (sender, receiver) = mpsc::channel::<Job>();
    let sender = Arc::new(Mutex::new(sender));
    let weak_sender = Arc::downgrade(&sender);
    let worker = Worker { config, label: label.clone(), connection: None, seen_key, limiter, slot: None };
    std::thread::Builder::new()
        .name(format!("ssh {label}"))
        .spawn(move || serve(worker, &receiver, &weak_sender))
        .map_err(|error| TransportError::Worker { host: label, reason: format!("cannot start thread: {error}") })?;
    Ok(sender)
}

fn serve(mut worker: Worker, receiver: &Receiver<Job>, weak_sender: &Weak<Mutex<Sender<Job>>>) {
    let idle_timeout = worker.config.idle_timeout;
    loop {
        let next = match idle_timeout {
            Some(limit) if worker.is_connected() => receiver.recv_timeout(limit),
            _ => receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(job) => {
                if let Some(limiter) = &worker.limiter {
                    limiter.mark_busy(&worker.label);
                }
                job(&mut worker);
                if worker.is_connected()
                    && let Some(limiter) = &worker.limiter
                {
                    limiter.mark_idle(&worker.label, close_request(weak_sender));
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                tracing::debug!(host = %worker.label, "closing idle connection");
                worker.disconnect();
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    worker.disconnect();
}

/// How the limiter asks this worker to disconnect when it needs the slot: a disconnect job on the worker's queue.
fn close_request(sender: &Weak<Mutex<Sender<Job>>>) -> CloseRequest {
    let sender = sender.clone();
    Box::new(move || {
        let Some(sender) = sender.upgrade() else { return false };
        let disconnect: Job = Box::new(|worker| worker.disconnect());
        sender.lock().unwrap_or_else(PoisonError::into_inner).send(disconnect).is_ok()
    })
}
