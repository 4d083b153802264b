//! The transport's error type: one variant per failure class, each naming the host and the step.

use std::fmt;
use std::time::Duration;

use crate::host_key::Fingerprint;
use crate::key::KeyError;

/// What went wrong talking to a host. Variants carry the host (`user@address:port`) and the step.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// No SSH session could be established or the connection broke (refused, reset, DNS, banner). Retryable.
    #[error("host {host}: unreachable while {during}: {reason}")]
    Unreachable {
        /// The host.
        host: String,
        /// The step, e.g. `connecting`, `SSH handshake`, `reading command output`.
        during: String,
        /// What the network or library said.
        reason: String,
    },
    /// A step did not finish in time. Retryable.
    #[error("host {host}: timed out after {after:?} while {during}")]
    TimedOut {
        /// The host.
        host: String,
        /// The step, e.g. `connecting` or ``running `hostname` ``.
        during: String,
        /// The time limit that expired.
        after: Duration,
    },
    /// The server refused the key. Check that the public key is in the host's authorized keys for this user.
    #[error("host {host}: authentication as {user} with the private key failed: {reason}")]
    Authentication {
        /// The host.
        host: String,
        /// The user name.
        user: String,
        /// What the library said.
        reason: String,
    },
    /// The server presented a different host key than the pinned one. Never retried.
    #[error("host {host}: host key changed (pinned {pinned}, offered {offered}); refusing to connect")]
    HostKeyMismatch {
        /// The host.
        host: String,
        /// The fingerprint the caller pinned (or that was first seen).
        pinned: Fingerprint,
        /// The fingerprint the server presented.
        offered: Fingerprint,
    },
    /// A command exited with a non-zero code (returned by [`crate::RemoteHost::run_checked`]).
    #[error("host {host}: command `{command}` exited with {exit_code}: {stderr}")]
    CommandFailed {
        /// The host.
        host: String,
        /// The start of the command line.
        command: String,
        /// The exit code.
        exit_code: u32,
        /// Standard error, trimmed, at most [`wmco_vocabulary::EXCERPT_CHARS`] characters of it.
        stderr: String,
    },
    /// A command printed more than the configured cap; the connection was dropped. Retryable (a later run may
    /// print less), but a host that always does stays failing.
    #[error(
        "host {host}: command `{command}` printed more than {limit} bytes; output discarded and the connection closed"
    )]
    OutputTooLarge {
        /// The host.
        host: String,
        /// The start of the command line.
        command: String,
        /// The cap in bytes.
        limit: usize,
    },
    /// A file transfer failed at a step.
    #[error("host {host}: transfer of {path} failed at {step}: {reason}")]
    Transfer {
        /// The host.
        host: String,
        /// The remote path (SFTP form).
        path: String,
        /// The step that failed.
        step: TransferStep,
        /// What went wrong.
        reason: String,
        /// Whether the cause was the connection breaking (then a retry may succeed).
        connection_lost: bool,
    },
    /// The server or the library did something unexpected.
    #[error("host {host}: SSH protocol error while {during}: {reason}")]
    Protocol {
        /// The host.
        host: String,
        /// The step.
        during: String,
        /// What the library said.
        reason: String,
    },
    /// The host's worker thread could not be started or is gone.
    #[error("host {host}: connection worker failed: {reason}")]
    Worker {
        /// The host.
        host: String,
        /// What happened.
        reason: String,
    },
    /// The private key cannot be used.
    #[error(transparent)]
    Key(#[from] KeyError),
}

/// The failure classes of [`TransportError`], for one-line reports and metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// [`TransportError::Unreachable`].
    Unreachable,
    /// [`TransportError::TimedOut`].
    TimedOut,
    /// [`TransportError::Authentication`].
    Authentication,
    /// [`TransportError::HostKeyMismatch`].
    HostKeyMismatch,
    /// [`TransportError::CommandFailed`].
    CommandFailed,
    /// [`TransportError::OutputTooLarge`].
    OutputTooLarge,
    /// [`TransportError::Transfer`].
    Transfer,
    /// [`TransportError::Protocol`].
    Protocol,
    /// [`TransportError::Worker`].
    Worker,
    /// [`TransportError::Key`].
    Key,
}

impl ErrorClass {
    /// A short snake-case name, stable for metrics and scripts.
    pub fn label(self) -> &'static str {
        match self {
            ErrorClass::Unreachable => "unreachable",
            ErrorClass::TimedOut => "timed_out",
            ErrorClass::Authentication => "authentication",
            ErrorClass::HostKeyMismatch => "host_key_mismatch",
            ErrorClass::CommandFailed => "command_failed",
            ErrorClass::OutputTooLarge => "output_too_large",
            ErrorClass::Transfer => "transfer",
            ErrorClass::Protocol => "protocol",
            ErrorClass::Worker => "worker",
            ErrorClass::Key => "private_key",
        }
    }
}

impl TransportError {
    /// The failure class.
    pub fn class(&self) -> ErrorClass {
        match self {
            TransportError::Unreachable { .. } => ErrorClass::Unreachable,
            TransportError::TimedOut { .. } => ErrorClass::TimedOut,
            TransportError::Authentication { .. } => ErrorClass::Authentication,
            TransportError::HostKeyMismatch { .. } => ErrorClass::HostKeyMismatch,
            TransportError::CommandFailed { .. } => ErrorClass::CommandFailed,
            TransportError::OutputTooLarge { .. } => ErrorClass::OutputTooLarge,
            TransportError::Transfer { .. } => ErrorClass::Transfer,
            TransportError::Protocol { .. } => ErrorClass::Protocol,
            TransportError::Worker { .. } => ErrorClass::Worker,
            TransportError::Key(_) => ErrorClass::Key,
        }
    }

    /// Whether trying again later may succeed: unreachable, timed out, too much output, or a transfer cut by a
    /// lost connection. Authentication failures and host key mismatches are never retryable.
    pub fn is_retryable(&self) -> bool {
        match self {
            TransportError::Unreachable { .. }
            | TransportError::TimedOut { .. }
            | TransportError::OutputTooLarge { .. } => true,
            TransportError::Transfer { connection_lost, .. } => *connection_lost,
            _ => false,
        }
    }
}

/// The steps of an upload or download, named in [`TransportError::Transfer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferStep {
    /// Reading the local source.
    ReadSource,
    /// The local source's SHA-256 differs from the expected one.
    SourceHash,
    /// Opening the SFTP session.
    OpenSession,
    /// Creating the temporary file beside the target.
    OpenStaging,
    /// Writing bytes to the temporary file.
    Write,
    /// Checking the temporary file's content (verify command or read-back hash).
    Verify,
    /// Removing the old target.
    RemoveTarget,
    /// Renaming the temporary file to the target.
    Rename,
    /// Reading a remote file (download).
    Read,
    /// Removing a remote file.
    Remove,
    /// Creating a remote directory.
    CreateDirectory,
    /// Reading a remote file's attributes.
    Stat,
}

impl fmt::Display for TransferStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransferStep::ReadSource => "reading the local source",
            TransferStep::SourceHash => "checking the local source's hash",
            TransferStep::OpenSession => "opening the SFTP session",
            TransferStep::OpenStaging => "creating the temporary file",
            TransferStep::Write => "writing the temporary file",
            TransferStep::Verify => "verifying the temporary file",
            TransferStep::RemoveTarget => "removing the old file",
            TransferStep::Rename => "renaming the temporary file into place",
            TransferStep::Read => "reading the remote file",
            TransferStep::Remove => "removing the remote file",
            TransferStep::CreateDirectory => "creating the remote directory",
            TransferStep::Stat => "reading the remote file's size",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transient_failures_are_retryable() {
        let host = || "admin@10.0.0.1:22".to_owned();
        let unreachable = TransportError::Unreachable { host: host(), during: "connecting".into(), reason: "x".into() };
        let auth = TransportError::Authentication { host: host(), user: "admin".into(), reason: "denied".into() };
        let cut = TransportError::Transfer {
            host: host(),
            path: "C:/k/kubelet.exe".into(),
            step: TransferStep::Write,
            reason: "connection reset".into(),
            connection_lost: true,
        };
        assert!(unreachable.is_retryable());
        assert!(cut.is_retryable());
        assert!(!auth.is_retryable());
        assert_eq!(auth.class().label(), "authentication");
        assert_eq!(
            cut.to_string(),
            "host admin@10.0.0.1:22: transfer of C:/k/kubelet.exe failed at writing the temporary file: connection reset"
        );
    }
}
