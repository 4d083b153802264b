//! What an upload is asked to do and what it did: the source, the target in SFTP path form, the expected hash,
//! the optional remote verification, and the name of the temporary file beside the target.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::command::RemoteCommand;
use wmco_vocabulary::Sha256Digest;

/// Where the bytes of an upload come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadSource {
    /// A local file, streamed.
    File(PathBuf),
    /// Bytes in memory (rendered configuration files, scripts).
    Bytes(Arc<[u8]>),
}

/// One file to place on a host such that the target path never holds a partial file.
///
/// ```
/// use std::time::Duration;
/// use wmco_ssh_transport::{staging_path, RemoteCommand, Sha256Digest, UploadRequest, UploadSource};
///
/// let bytes: &[u8] = b"kind: KubeletConfiguration\n";
/// let request = UploadRequest {
///     source: UploadSource::Bytes(bytes.into()),
///     remote_path: "C:/k/kubelet.conf".into(),
///     expected_sha256: Sha256Digest::of_bytes(bytes),
///     remote_sha256: None,
///     verify: Some(RemoteCommand::new(
///         format!("powershell.exe -NoProfile -Command (Get-FileHash -LiteralPath '{}').Hash", staging_path("C:/k/kubelet.conf")),
///         Duration::from_secs(60),
///     )),
/// };
/// assert_eq!(staging_path(&request.remote_path), "C:/k/kubelet.conf.wmco-upload");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRequest {
    /// The bytes to send.
    pub source: UploadSource,
    /// The target, in the server's SFTP path form (`C:/k/kubelet.exe` on Win32-OpenSSH).
    pub remote_path: String,
    /// The SHA-256 the source must have; a source that differs is not sent.
    pub expected_sha256: Sha256Digest,
    /// The target's SHA-256 as the caller last observed it on the host; when it equals `expected_sha256` nothing
    /// is sent ([`UploadOutcome::Skipped`]).
    pub remote_sha256: Option<Sha256Digest>,
    /// A command that prints the SHA-256 (hex, any case, on a line of its own; other lines are skipped) of the
    /// temporary file [`staging_path`]`(remote_path)` and exits 0. Without it the temporary file is read back over
    /// SFTP and hashed locally.
    pub verify: Option<RemoteCommand>,
}

impl UploadRequest {
    /// Whether the file is sent: the caller did not see the expected content at the target already.
    ///
    /// ```
    /// use wmco_ssh_transport::{Sha256Digest, UploadRequest, UploadSource};
    /// let expected = Sha256Digest::of_bytes(b"new");
    /// let request = UploadRequest {
    ///     source: UploadSource::Bytes(b"new".as_slice().into()),
    ///     remote_path: "C:/k/kubelet.conf".into(),
    ///     expected_sha256: expected,
    ///     remote_sha256: Some(Sha256Digest::of_bytes(b"old")),
    ///     verify: None,
    /// };
    /// assert!(request.needs_sending());
    /// assert!(!UploadRequest { remote_sha256: Some(expected), ..request }.needs_sending());
    /// ```
    pub fn needs_sending(&self) -> bool {
        self.remote_sha256 != Some(self.expected_sha256)
    }
}

/// Several files placed together, their temporary files verified by one remote command: one round trip for the
/// lot instead of one per file. Each target still holds the old file, no file, or the verified new file, never a
/// partial one; a file that fails verification leaves every target of the batch untouched.
///
/// ```
/// use std::time::Duration;
/// use wmco_ssh_transport::{RemoteCommand, Sha256Digest, UploadBatch, UploadRequest, UploadSource, staging_path};
///
/// let files: [(&str, &[u8]); 2] = [("C:/k/kubelet.conf", b"kind: KubeletConfiguration\n"), ("C:/k/cni.conf", b"{}")];
/// let requests: Vec<UploadRequest> = files
///     .iter()
///     .map(|(path, bytes)| UploadRequest {
///         source: UploadSource::Bytes((*bytes).into()),
///         remote_path: (*path).into(),
///         expected_sha256: Sha256Digest::of_bytes(bytes),
///         remote_sha256: None,
///         verify: None,
///     })
///     .collect();
/// let staged: Vec<String> = requests.iter().filter(|r| r.needs_sending()).map(|r| staging_path(&r.remote_path)).collect();
/// let verify = RemoteCommand::new(format!("hash-each {}", staged.join(" ")), Duration::from_secs(60));
/// let batch = UploadBatch { requests, verify };
/// assert_eq!(batch.requests.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadBatch {
    /// The files, in order. Each one's own `verify` is used only by hosts that place files one at a time (the
    /// default [`RemoteHost::upload_batch`](crate::RemoteHost::upload_batch)).
    pub requests: Vec<UploadRequest>,
    /// Prints the SHA-256 (hex, any case) of the temporary file [`staging_path`] of every request that
    /// [`UploadRequest::needs_sending`], each on a line of its own in request order, and exits 0. Lines that are not
    /// a digest (a hashing program's headers, such as `certutil -hashfile`'s) are skipped.
    pub verify: RemoteCommand,
}

/// What a batch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchOutcome {
    /// Per request, in order.
    pub outcomes: Vec<UploadOutcome>,
    /// How many verify commands ran on the host (round trips beyond the transfers).
    pub verify_commands: u64,
}

/// What an upload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadOutcome {
    /// The target already had the expected content; nothing was sent.
    Skipped,
    /// The verified file is now at the target path.
    Uploaded {
        /// Bytes sent.
        bytes: u64,
        /// Time spent writing the temporary file (the transfer itself).
        write_duration: Duration,
        /// Time from opening the temporary file to the rename (transfer, verification, rename).
        duration: Duration,
    },
}

/// The temporary name an upload writes beside `remote_path` before verifying and renaming it. A leftover from an
/// interrupted upload is overwritten by the next one.
pub fn staging_path(remote_path: &str) -> String {
    format!("{remote_path}.wmco-upload")
}
