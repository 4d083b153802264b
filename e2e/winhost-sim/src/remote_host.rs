//! An in-process simulated host behind the product's `RemoteHost` trait (feature `remote-host`): commands go
//! straight to the host model's shells and files to its `C:` drive with the transport's staging / verify / remove /
//! rename sequence (and its batch form: every staging file, one verify command, every rename), so flow and
//! controller tests exercise the real interpreters without SSH or sockets.

use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tempfile::TempDir;
use wmco_ssh_transport::{
    BatchOutcome, HostKey, Output, RemoteCommand, RemoteHost, Sha256Digest, TransferStep, TransportError, UploadBatch,
    UploadOutcome, UploadRequest, UploadSource, staging_path,
};

use crate::disk::{DiskError, WinPath};
use crate::host::{Host, Identity, Latency};

/// The host key line every [`InProcessHost::sample`] host reports.
pub const SAMPLE_HOST_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey";

/// A simulated host with zero latency on a temporary `C:` drive, usable wherever a `RemoteHost` is expected.
///
/// ```
/// use winhost_sim::host::Identity;
/// use winhost_sim::remote_host::InProcessHost;
/// use wmco_ssh_transport::{RemoteCommand, RemoteHost};
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let identity = Identity {
///     hostname: "WinWorker-1".into(),
///     fqdn: "winworker-1.lab.example".into(),
///     build: 20348,
///     ubr: 2849,
///     node_ip: "203.0.113.10".parse()?,
/// };
/// let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey";
/// let host = InProcessHost::new(identity, "administrator@127.0.0.10:22", "SSH-2.0-doc", key)?;
/// let output = host.run(&RemoteCommand::new("sc.exe query nosuch", std::time::Duration::from_secs(5))).await?;
/// assert_eq!(output.exit_code, 1060);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct InProcessHost {
    host: Mutex<Host>,
    label: String,
    client_version: String,
    host_key_line: String,
    _root: TempDir,
}

impl InProcessHost {
    /// A fresh host with `identity` on a new temporary directory; `label` names it in errors, `client_version` is
    /// recorded in its command log, `host_key_line` (`TYPE BASE64`) is what `host_key()` reports.
    pub fn new(
        identity: Identity,
        label: &str,
        client_version: &str,
        host_key_line: &str,
    ) -> Result<InProcessHost, DiskError> {
        let root = tempfile::tempdir().map_err(|source| DiskError::Io { path: "temporary root".into(), source })?;
        let host = Host::new(identity, root.path(), Latency::zero())?;
        Ok(InProcessHost {
            host: Mutex::new(host),
            label: label.to_owned(),
            client_version: client_version.to_owned(),
            host_key_line: host_key_line.to_owned(),
            _root: root,
        })
    }

    /// Sample Windows worker `number` for flow and controller tests: hostname `WinWorker-<number>`, FQDN
    /// `winworker-<number>.lab.example`, Windows Server 2022 (build 20348, UBR 1), node IP
    /// `203.0.113.<10 × number>`, labelled `administrator@127.0.0.<10 × number>:22` and reporting
    /// [`SAMPLE_HOST_KEY`]; numbers above 25 use the address octet 255.
    ///
    /// ```
    /// let host = winhost_sim::remote_host::InProcessHost::sample(3)?;
    /// assert_eq!(host.host().identity.fqdn, "winworker-3.lab.example");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`InProcessHost::new`]: the temporary directory could not be created.
    pub fn sample(number: u8) -> Result<InProcessHost, DiskError> {
        let octet = number.saturating_mul(10);
        let identity = Identity {
            hostname: format!("WinWorker-{number}"),
            fqdn: format!("winworker-{number}.lab.example"),
            build: 20348,
            ubr: 2849,
            node_ip: Ipv4Addr::new(203, 0, 113, octet),
        };
        let label = format!("administrator@127.0.0.{octet}:22");
        InProcessHost::new(identity, &label, "SSH-2.0-winhost-sim-sample", SAMPLE_HOST_KEY)
    }

    /// The host model, for setting up state and for assertions.
    pub fn host(&self) -> MutexGuard<'_, Host> {
        self.host.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The directory backing the host's drives.
    pub fn root(&self) -> &Path {
        self._root.path()
    }

    fn transfer_error(&self, path: &str, step: TransferStep, reason: impl ToString) -> TransportError {
        TransportError::Transfer {
            host: self.label.clone(),
            path: path.to_owned(),
            step,
            reason: reason.to_string(),
            connection_lost: false,
        }
    }

    fn parse_path(&self, path: &str, step: TransferStep) -> Result<WinPath, TransportError> {
        WinPath::parse(path).map_err(|error| self.transfer_error(path, step, error))
    }

    /// Writes the request's bytes to its staging file; returns the staging path, the target and the size.
    fn write_staging(&self, request: &UploadRequest) -> Result<(WinPath, WinPath, u64), TransportError> {
        let path = &request.remote_path;
        let bytes = match &request.source {
            UploadSource::Bytes(bytes) => bytes.to_vec(),
            UploadSource::File(local) => {
                std::fs::read(local).map_err(|error| self.transfer_error(path, TransferStep::ReadSource, error))?
            }
        };
        let target = self.parse_path(path, TransferStep::OpenStaging)?;
        let staging = self.parse_path(&staging_path(path), TransferStep::OpenStaging)?;
        self.host()
            .disk
            .write(&staging, &bytes)
            .map_err(|error| self.transfer_error(path, TransferStep::Write, error))?;
        Ok((staging, target, bytes.len() as u64))
    }

    /// Replaces `target` with the verified `staging` file (refused while a running service holds the target).
    fn place(&self, host: &mut Host, path: &str, staging: &WinPath, target: &WinPath) -> Result<(), TransportError> {
        if host.is_locked(target) {
            return Err(self.transfer_error(path, TransferStep::RemoveTarget, "the file is in use"));
        }
        if host.disk.entry(target).is_some() {
            host.disk.remove(target).map_err(|error| self.transfer_error(path, TransferStep::RemoveTarget, error))?;
        }
        host.disk.rename(staging, target).map_err(|error| self.transfer_error(path, TransferStep::Rename, error))
    }
}

#[async_trait]
impl RemoteHost for InProcessHost {
    fn label(&self) -> &str {
        &self.label
    }

    async fn run(&self, command: &RemoteCommand) -> Result<Output, TransportError> {
        let output = self.host().exec(&self.client_version, &command.line);
        Ok(Output {
            exit_code: output.code,
            stdout: output.stdout.into_bytes(),
            stderr: output.stderr.into_bytes(),
            duration: Duration::ZERO,
        })
    }

    async fn upload(&self, request: &UploadRequest) -> Result<UploadOutcome, TransportError> {
        let path = &request.remote_path;
        let (staging, target, bytes) = self.write_staging(request)?;
        let mut host = self.host();
        if let Some(verify) = &request.verify {
            let output = host.exec(&self.client_version, &verify.line);
            let printed = printed_digests(&output.stdout);
            if output.code != 0 || printed != [request.expected_sha256] {
                let reason = format!("verify printed {printed:?} (exit {})", output.code);
                return Err(self.transfer_error(path, TransferStep::Verify, reason));
            }
        }
        self.place(&mut host, path, &staging, &target)?;
        Ok(UploadOutcome::Uploaded { bytes, write_duration: Duration::ZERO, duration: Duration::ZERO })
    }

    /// Every staging file first, the batch's one verify command through the host's shells, then each rename: the
    /// transport's batch sequence.
    async fn upload_batch(&self, batch: &UploadBatch) -> Result<BatchOutcome, TransportError> {
        let sending: Vec<&UploadRequest> = batch.requests.iter().filter(|request| request.needs_sending()).collect();
        if sending.is_empty() {
            return Ok(BatchOutcome {
                outcomes: vec![UploadOutcome::Skipped; batch.requests.len()],
                verify_commands: 0,
            });
        }
        let mut written = Vec::with_capacity(sending.len());
        for request in &sending {
            written.push(self.write_staging(request)?);
        }
        let mut host = self.host();
        let output = host.exec(&self.client_version, &batch.verify.line);
        let printed = printed_digests(&output.stdout);
        for (index, request) in sending.iter().enumerate() {
            let line = printed.get(index);
            if output.code != 0 || line != Some(&request.expected_sha256) {
                let reason = format!("verify printed {line:?} for it (exit {})", output.code);
                return Err(self.transfer_error(&request.remote_path, TransferStep::Verify, reason));
            }
        }
        for (request, (staging, target, _)) in sending.iter().zip(&written) {
            self.place(&mut host, &request.remote_path, staging, target)?;
        }
        let mut sizes = written.into_iter().map(|(_, _, bytes)| bytes);
        let outcomes = batch
            .requests
            .iter()
            .map(|request| match request.needs_sending().then(|| sizes.next()).flatten() {
                Some(bytes) => {
                    UploadOutcome::Uploaded { bytes, write_duration: Duration::ZERO, duration: Duration::ZERO }
                }
                None => UploadOutcome::Skipped,
            })
            .collect();
        Ok(BatchOutcome { outcomes, verify_commands: 1 })
    }

    async fn download(&self, remote_path: &str) -> Result<Vec<u8>, TransportError> {
        let path = self.parse_path(remote_path, TransferStep::Read)?;
        self.host().disk.read(&path).map_err(|error| self.transfer_error(remote_path, TransferStep::Read, error))
    }

    async fn remove(&self, remote_path: &str) -> Result<(), TransportError> {
        let path = self.parse_path(remote_path, TransferStep::Remove)?;
        let host = self.host();
        if host.disk.entry(&path).is_some() {
            host.disk.remove(&path).map_err(|error| self.transfer_error(remote_path, TransferStep::Remove, error))?;
        }
        Ok(())
    }

    async fn mkdir_all(&self, remote_path: &str) -> Result<(), TransportError> {
        let path = self.parse_path(remote_path, TransferStep::CreateDirectory)?;
        self.host()
            .disk
            .create_dir_all(&path)
            .map_err(|error| self.transfer_error(remote_path, TransferStep::CreateDirectory, error))
    }

    async fn file_size(&self, remote_path: &str) -> Result<Option<u64>, TransportError> {
        let path = self.parse_path(remote_path, TransferStep::Stat)?;
        Ok(self.host().disk.file_size(&path))
    }

    async fn host_key(&self) -> Result<HostKey, TransportError> {
        HostKey::from_openssh(&self.host_key_line).map_err(|error| TransportError::Protocol {
            host: self.label.clone(),
            during: "reading the simulated host key".into(),
            reason: error.to_string(),
        })
    }
}

/// The digests a verify command printed, each on a line of its own; other lines (certutil's header and trailer)
/// are skipped, as the transport skips them.
fn printed_digests(stdout: &str) -> Vec<Sha256Digest> {
    stdout.lines().filter_map(|line| line.trim().parse().ok()).collect()
}
