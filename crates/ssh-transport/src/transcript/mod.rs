//! Command transcripts: a [`RemoteHost`](crate::RemoteHost) decorator that records every operation on a host, so
//! that a run against real hosts can be read afterwards and replayed against the simulator
//! (`e2e/winhost-sim`'s `winhost-replay`).
//!
//! [`TranscriptRecorder::wrap`] puts a recording host around any host: each call is forwarded unchanged, then one
//! JSON line ([`TranscriptEntry`]) is appended to `DIR/<label>.jsonl` ([`transcript_file_name`]): when it started,
//! the operation, for a command its line, its decoded `-EncodedCommand` script, exit code, standard output and
//! error (each at most [`MAX_RECORDED_TEXT`] bytes, marked when cut), for an upload the destination, size and
//! SHA-256 (never the contents), the duration and the error. Every text is passed through
//! [`redact`](crate::redact::redact) first: no private key, token or password reaches a transcript. A transcript
//! that cannot be written is logged once per file and never fails the operation.
//!
//! ```no_run
//! use std::path::Path;
//! use std::sync::Arc;
//! use std::time::Duration;
//! use wmco_ssh_transport::transcript::{TranscriptRecorder, prepare_directory, read_transcript, transcript_file_name};
//! use wmco_ssh_transport::{HostConfig, PrivateKey, RemoteCommand, RemoteHost, SshHost};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let directory = Path::new("/var/log/wmco-transcripts");
//! prepare_directory(directory)?; // created with mode 0700 when missing
//! let recorder = TranscriptRecorder::new(directory);
//! let key = PrivateKey::from_file("/var/run/secrets/wmco/private-key.pem".as_ref())?;
//! let host = recorder.wrap(Arc::new(SshHost::new(HostConfig::new("10.0.0.5", "Administrator", key))?));
//! host.run(&RemoteCommand::new("hostname", Duration::from_secs(30))).await?;
//!
//! let entries = read_transcript(&directory.join(transcript_file_name(host.label())))?;
//! assert_eq!(entries.len(), 1);
//! # Ok(())
//! # }
//! ```

mod entry;
mod recorder;
#[cfg(test)]
mod tests;

pub use entry::{
    MAX_RECORDED_TEXT, Operation, RecordedFile, RecordedUpload, TranscriptEntry, TranscriptError, read_transcript,
};
pub use recorder::{TranscriptRecorder, prepare_directory, transcript_file_name};
