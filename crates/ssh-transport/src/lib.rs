//! Async SSH and SFTP transport to hosts: run command lines, move files, nothing more. This crate knows nothing of
//! Windows; callers hand it command lines and SFTP paths (`C:/k/kubelet.exe` on Win32-OpenSSH).
//!
//! - [`RemoteHost`] is the seam flows are written against; [`SshHost`] implements it over ssh2 (libssh2 with
//!   OpenSSL). Each [`SshHost`] owns a worker thread holding one SSH connection and one SFTP session, reused for
//!   every operation; the async methods queue jobs to it, so the tokio runtime never blocks.
//! - [`HostConfig`] says how to connect: address, user, [`PrivateKey`] (RSA, ECDSA, Ed25519 in OpenSSH, PKCS#8,
//!   PKCS#1 or SEC1 PEM; encrypted keys are refused), [`HostKeyPolicy`] (pinned, or trust on first use), time
//!   limits, connection retries ([`RetryPolicy`]) and the client version suffix.
//! - Uploads ([`UploadRequest`]) never leave a partial file at the target: bytes go to [`staging_path`], are
//!   verified (a caller command or a read-back hash), the target is removed and the temporary file renamed.
//! - [`TransportError`] tells apart unreachable and timed-out hosts (retryable, see [`retry`]), authentication
//!   failures, host key mismatches, failed commands, failed transfers and protocol errors.
//! - [`HostPool`] shares one handle per host and caps the number of open connections.
//! - [`transcript`] records every operation on a host (a [`RemoteHost`] decorator writing one JSON line each), with
//!   every text passed through [`redact`] first: no key, token or password reaches a transcript.
//!
//! ```no_run
//! use std::time::Duration;
//! use wmco_ssh_transport::{HostConfig, PrivateKey, RemoteCommand, RemoteHost, Sha256Digest, SshHost, UploadRequest, UploadSource};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let key = PrivateKey::from_file("/var/run/secrets/wmco/private-key.pem".as_ref())?;
//! let host = SshHost::new(HostConfig::new("10.0.0.5", "Administrator", key))?;
//! let first_key = host.host_key().await?; // trust on first use: record it
//! println!("{} presents {first_key}", host.label());
//!
//! let output = host.run(&RemoteCommand::new("echo hello", Duration::from_secs(30))).await?;
//! assert_eq!(output.exit_code, 0);
//!
//! let config = b"kind: KubeletConfiguration\n";
//! host.mkdir_all("C:/k").await?;
//! host.upload(&UploadRequest {
//!     source: UploadSource::Bytes(config.as_slice().into()),
//!     remote_path: "C:/k/kubelet.conf".into(),
//!     expected_sha256: Sha256Digest::of_bytes(config),
//!     remote_sha256: None,
//!     verify: None,
//! }).await?;
//! # Ok(())
//! # }
//! ```

mod command;
mod config;
mod connection;
mod error;
mod exec;
mod host;
mod host_key;
mod key;
mod limiter;
mod pool;
mod remote;
mod retry;
mod sftp_ops;
mod source;
pub mod transcript;
mod upload;
mod worker;

#[cfg(feature = "testing")]
pub mod testing;

pub use command::{Output, RemoteCommand};
pub use config::{DEFAULT_MAX_OUTPUT_BYTES, HostConfig};
pub use error::{ErrorClass, TransferStep, TransportError};
pub use host::SshHost;
pub use host_key::{Fingerprint, HostKey, HostKeyParseError, HostKeyPolicy};
pub use key::{KeyEncoding, KeyError, PrivateKey};
pub use pool::HostPool;
pub use remote::RemoteHost;
pub use retry::{RetryPolicy, retry};
pub use source::source_hashes;
pub use upload::{BatchOutcome, UploadBatch, UploadOutcome, UploadRequest, UploadSource, staging_path};
/// Redaction of credentials, which transcripts apply to every text (the `wmco-redact` crate, kept here under its old
/// path).
pub use wmco_redact as redact;
pub use wmco_vocabulary::{DigestParseError, Sha256Digest};
