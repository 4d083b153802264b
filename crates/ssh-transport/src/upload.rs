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
    /// A command that prints the SHA-256 (hex, any case) of the temporary file [`staging_path`]`(remote_path)`
    /// and exits 0. Without it the temporary file is read back over SFTP and hashed locally.
    pub verify: Option<RemoteCommand>,
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
