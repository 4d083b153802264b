//! [`SshHost`]: the ssh2-backed [`RemoteHost`]. Each handle owns one worker thread with one SSH connection and one
//! SFTP session, reused for every operation; the async methods only queue a job and await its reply, so the tokio
//! runtime never blocks.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::oneshot;

use crate::command::{Output, RemoteCommand};
use crate::config::HostConfig;
use crate::connection::Connection;
use crate::error::TransportError;
use crate::host_key::HostKey;
use crate::limiter::Limiter;
use crate::remote::RemoteHost;
use crate::upload::{BatchOutcome, UploadBatch, UploadOutcome, UploadRequest};
use crate::worker::{self, Job, JobSender, Worker};
use crate::{exec, sftp_ops};

/// A host reached with ssh2. Connects on first use, reconnects after a broken connection, and keeps the host key
/// first seen (under trust on first use) for every later connection of this handle.
///
/// ```no_run
/// use std::time::Duration;
/// use wmco_ssh_transport::{HostConfig, HostKey, HostKeyPolicy, PrivateKey, RemoteCommand, RemoteHost, SshHost};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let key = PrivateKey::from_file("/etc/wmco/cloud-private-key".as_ref())?;
/// let mut config = HostConfig::new("10.0.0.5", "Administrator", key);
/// config.host_key_policy = HostKeyPolicy::Pinned(HostKey::from_openssh("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey")?);
/// let host = SshHost::new(config)?;
/// let output = host.run_checked(&RemoteCommand::new("hostname", Duration::from_secs(30))).await?;
/// println!("{} is {}", host.label(), output.stdout_text().trim());
/// # Ok(())
/// # }
/// ```
pub struct SshHost {
    label: String,
    sender: JobSender,
    seen_key: Arc<Mutex<Option<HostKey>>>,
}

impl std::fmt::Debug for SshHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshHost").field("label", &self.label).finish_non_exhaustive()
    }
}

impl SshHost {
    /// A handle for one host; starts its worker thread but does not connect yet.
    pub fn new(config: HostConfig) -> Result<SshHost, TransportError> {
        SshHost::with_limiter(config, None)
    }

    pub(crate) fn with_limiter(config: HostConfig, limiter: Option<Arc<Limiter>>) -> Result<SshHost, TransportError> {
        let label = config.label();
        let seen_key = Arc::new(Mutex::new(None));
        let sender = worker::spawn(Arc::new(config), Arc::clone(&seen_key), limiter)?;
        Ok(SshHost { label, sender, seen_key })
    }

    /// Connects now (if not connected) and returns the host key; the same as [`RemoteHost::host_key`].
    pub async fn connect(&self) -> Result<HostKey, TransportError> {
        self.on_connection(|connection, _| Ok(connection.host_key.clone())).await
    }

    /// The host key first seen by this handle, without connecting.
    pub fn seen_host_key(&self) -> Option<HostKey> {
        self.seen_key.lock().ok().and_then(|seen| seen.clone())
    }

    /// Closes the connection now; the next operation reconnects.
    pub async fn disconnect(&self) -> Result<(), TransportError> {
        self.submit(|worker| {
            worker.disconnect();
            Ok(())
        })
        .await
    }

    async fn on_connection<T: Send + 'static>(
        &self,
        operation: impl FnOnce(&mut Connection, &str) -> Result<T, crate::connection::OpError> + Send + 'static,
    ) -> Result<T, TransportError> {
        self.submit(move |worker| worker.with_connection(operation)).await
    }

    async fn submit<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Worker) -> Result<T, TransportError> + Send + 'static,
    ) -> Result<T, TransportError> {
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |worker| {
            // The caller may have stopped waiting (its future was dropped); the result is then discarded.
            let _ = reply.send(work(worker));
        });
        let sent = self
            .sender
            .lock()
            .map_err(|_| self.worker_gone())
            .and_then(|sender| sender.send(job).map_err(|_| self.worker_gone()));
        sent?;
        answer.await.map_err(|_| self.worker_gone())?
    }

    fn worker_gone(&self) -> TransportError {
        TransportError::Worker { host: self.label.clone(), reason: "the worker thread has stopped".into() }
    }
}

#[async_trait]
impl RemoteHost for SshHost {
    fn label(&self) -> &str {
        &self.label
    }

    async fn run(&self, command: &RemoteCommand) -> Result<Output, TransportError> {
        let command = command.clone();
        self.on_connection(move |connection, host| exec::run(connection, &command, host)).await
    }

    async fn upload(&self, request: &UploadRequest) -> Result<UploadOutcome, TransportError> {
        if request.remote_sha256 == Some(request.expected_sha256) {
            return Ok(UploadOutcome::Skipped);
        }
        let request = request.clone();
        self.on_connection(move |connection, host| sftp_ops::upload(connection, &request, host)).await
    }

    async fn upload_batch(&self, batch: &UploadBatch) -> Result<BatchOutcome, TransportError> {
        if !batch.requests.iter().any(UploadRequest::needs_sending) {
            let outcomes = vec![UploadOutcome::Skipped; batch.requests.len()];
            return Ok(BatchOutcome { outcomes, verify_commands: 0 });
        }
        let batch = batch.clone();
        self.on_connection(move |connection, host| sftp_ops::upload_batch(connection, &batch, host)).await
    }

    async fn download(&self, remote_path: &str) -> Result<Vec<u8>, TransportError> {
        let path = remote_path.to_owned();
        self.on_connection(move |connection, host| sftp_ops::download(connection, &path, host)).await
    }

    async fn remove(&self, remote_path: &str) -> Result<(), TransportError> {
        let path = remote_path.to_owned();
        self.on_connection(move |connection, host| sftp_ops::remove(connection, &path, host)).await
    }

    async fn mkdir_all(&self, remote_path: &str) -> Result<(), TransportError> {
        let path = remote_path.to_owned();
        self.on_connection(move |connection, host| sftp_ops::mkdir_all(connection, &path, host)).await
    }

    async fn file_size(&self, remote_path: &str) -> Result<Option<u64>, TransportError> {
        let path = remote_path.to_owned();
        self.on_connection(move |connection, host| sftp_ops::file_size(connection, &path, host)).await
    }

    async fn host_key(&self) -> Result<HostKey, TransportError> {
        self.connect().await
    }
}
