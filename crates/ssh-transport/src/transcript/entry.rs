//! What a transcript holds: one [`TranscriptEntry`] per host operation, one JSON object per line, and reading a
//! transcript file back ([`read_transcript`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wmco_vocabulary::Sha256Digest;

/// The most bytes of a command's standard output, and of its standard error, a transcript keeps; the rest is cut
/// (on a character boundary) and the entry says so.
pub const MAX_RECORDED_TEXT: usize = 64 * 1024;

/// One host operation as a transcript line records it.
///
/// ```
/// use wmco_ssh_transport::transcript::{Operation, TranscriptEntry};
/// let line = r#"{"time":"2026-05-04T10:00:00Z","host":"Administrator@10.0.0.5:22","operation":"run","command":"hostname","exitCode":0,"stdout":"WIN-1\r\n","stderr":"","durationMs":12}"#;
/// let entry: TranscriptEntry = serde_json::from_str(line)?;
/// let Operation::Run { command, exit_code, .. } = &entry.operation else { panic!("a run") };
/// assert_eq!((command.as_str(), *exit_code), ("hostname", Some(0)));
/// assert_eq!(serde_json::to_string(&entry)?, line);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptEntry {
    /// When the operation started (RFC 3339, UTC).
    pub time: String,
    /// The host as the transport names it (`user@address:port`).
    pub host: String,
    /// What was done, and what came back.
    #[serde(flatten)]
    pub operation: Operation,
    /// How long the operation took, in milliseconds.
    pub duration_ms: u64,
    /// The error the operation returned (its text, redacted); absent when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A host operation, by the [`RemoteHost`](crate::RemoteHost) method that did it (`"operation"` in the JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "operation", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Operation {
    /// A command line ran.
    Run {
        /// The command line, redacted (see [`crate::redact::redact_command`]).
        command: String,
        /// Its decoded `-EncodedCommand` script, redacted, if it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        script: Option<String>,
        /// Its exit code; absent when it did not run to completion (see the entry's error).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<u32>,
        /// Its standard output (invalid UTF-8 replaced), redacted, at most [`MAX_RECORDED_TEXT`] bytes.
        #[serde(default)]
        stdout: String,
        /// Whether `stdout` was cut.
        #[serde(default, skip_serializing_if = "is_false")]
        stdout_truncated: bool,
        /// Its standard error, as `stdout`.
        #[serde(default)]
        stderr: String,
        /// Whether `stderr` was cut.
        #[serde(default, skip_serializing_if = "is_false")]
        stderr_truncated: bool,
    },
    /// One file placed.
    Upload {
        /// The file.
        file: RecordedFile,
        /// The command that verified its temporary copy, redacted, if the request had one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verify: Option<String>,
    },
    /// Several files placed, their temporary copies verified by one command.
    UploadBatch {
        /// The files, in order.
        files: Vec<RecordedFile>,
        /// The batch's verify command, redacted.
        verify: String,
        /// How many verify commands ran on the host; absent when the batch failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verify_commands: Option<u64>,
    },
    /// A whole file read.
    Download {
        /// The remote path.
        path: String,
        /// How many bytes came back; absent when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        /// Their SHA-256 (never the contents).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<Sha256Digest>,
    },
    /// A file removed.
    Remove {
        /// The remote path.
        path: String,
    },
    /// A directory and its missing parents created.
    MkdirAll {
        /// The remote path.
        path: String,
    },
    /// A file's size asked for.
    FileSize {
        /// The remote path.
        path: String,
        /// Its size; absent when there is no regular file there (or the call failed: see the entry's error).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    /// The host key asked for.
    HostKey {
        /// The key's algorithm and fingerprint (`ssh-ed25519 SHA256:…`); absent when the call failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
}

impl Operation {
    /// The operation's name as the JSON spells it (`run`, `upload`, `upload_batch`, `download`, `remove`,
    /// `mkdir_all`, `file_size`, `host_key`).
    ///
    /// ```
    /// use wmco_ssh_transport::transcript::Operation;
    /// assert_eq!(Operation::MkdirAll { path: "C:/k".into() }.name(), "mkdir_all");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Operation::Run { .. } => "run",
            Operation::Upload { .. } => "upload",
            Operation::UploadBatch { .. } => "upload_batch",
            Operation::Download { .. } => "download",
            Operation::Remove { .. } => "remove",
            Operation::MkdirAll { .. } => "mkdir_all",
            Operation::FileSize { .. } => "file_size",
            Operation::HostKey { .. } => "host_key",
        }
    }
}

/// One file of an upload: where it went, how big it is and its hash, never its contents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedFile {
    /// The destination, in the server's SFTP path form.
    pub path: String,
    /// The source's size in bytes; absent when a local source file could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The SHA-256 the file has once placed.
    pub sha256: Sha256Digest,
    /// What the upload did; absent when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<RecordedUpload>,
}

/// What an upload did to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedUpload {
    /// The verified file is at its destination.
    Uploaded,
    /// The destination already had the content; nothing was sent.
    Skipped,
}

/// A transcript directory or file is not usable.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// The transcript directory cannot be created or is not a directory.
    #[error("transcript directory {path}: {source}; pass a directory the operator may create and write")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// A transcript file cannot be read.
    #[error("cannot read transcript {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// A line of a transcript file is no transcript entry.
    #[error("transcript {path}, line {line}: not a transcript entry: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line (from 1).
        line: usize,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
}

/// Every entry of a transcript file, in order (blank lines skipped).
///
/// # Errors
/// [`TranscriptError::Read`] when the file cannot be read, [`TranscriptError::Parse`] naming the first line that is
/// not an entry.
pub fn read_transcript(path: &Path) -> Result<Vec<TranscriptEntry>, TranscriptError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| TranscriptError::Read { path: path.to_path_buf(), source })?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line).map_err(|source| TranscriptError::Parse {
                path: path.to_path_buf(),
                line: index + 1,
                source,
            })
        })
        .collect()
}

/// `text` cut to at most [`MAX_RECORDED_TEXT`] bytes on a character boundary, and whether it was cut.
pub(super) fn capped(mut text: String) -> (String, bool) {
    if text.len() <= MAX_RECORDED_TEXT {
        return (text, false);
    }
    let mut cut = MAX_RECORDED_TEXT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    (text, true)
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_on_a_character_boundary() {
        let (short, cut) = capped("ok".to_owned());
        assert_eq!((short.as_str(), cut), ("ok", false));
        let (long, cut) = capped("é".repeat(MAX_RECORDED_TEXT));
        assert!(cut);
        assert_eq!(long.len(), MAX_RECORDED_TEXT);
        let (odd, cut) = capped(format!("a{}", "é".repeat(MAX_RECORDED_TEXT)));
        assert!(cut);
        assert_eq!(odd.len(), MAX_RECORDED_TEXT - 1);
    }

    #[test]
    fn every_operation_round_trips_through_json() {
        let digest = Sha256Digest::of_bytes(b"x");
        let file = RecordedFile {
            path: "C:/k/a".into(),
            size: Some(1),
            sha256: digest,
            outcome: Some(RecordedUpload::Uploaded),
        };
        let operations = [
            Operation::Run {
                command: "sc.exe query kubelet".into(),
                script: None,
                exit_code: Some(1060),
                stdout: String::new(),
                stdout_truncated: false,
                stderr: "no such service".into(),
                stderr_truncated: true,
            },
            Operation::Upload { file: file.clone(), verify: Some("certutil".into()) },
            Operation::UploadBatch { files: vec![file], verify: "certutil".into(), verify_commands: Some(1) },
            Operation::Download { path: "C:/k/a".into(), size: Some(1), sha256: Some(digest) },
            Operation::Remove { path: "C:/k/a".into() },
            Operation::MkdirAll { path: "C:/k".into() },
            Operation::FileSize { path: "C:/k/a".into(), size: None },
            Operation::HostKey { key: Some("ssh-ed25519 SHA256:abc".into()) },
        ];
        for operation in operations {
            let entry = TranscriptEntry {
                time: "2026-05-04T10:00:00Z".into(),
                host: "a@b:22".into(),
                operation,
                duration_ms: 3,
                error: None,
            };
            let json = serde_json::to_string(&entry).unwrap();
            assert!(json.contains(&format!(r#""operation":"{}""#, entry.operation.name())), "{json}");
            assert_eq!(serde_json::from_str::<TranscriptEntry>(&json).unwrap(), entry);
        }
    }

    #[test]
    fn reading_names_the_line_that_is_no_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let good = r#"{"time":"t","host":"h","operation":"remove","path":"C:/x","durationMs":0}"#;
        std::fs::write(&path, format!("{good}\n\n{good}\nnot json\n")).unwrap();
        match read_transcript(&path) {
            Err(TranscriptError::Parse { line, .. }) => assert_eq!(line, 4),
            other => panic!("expected a parse error, got {other:?}"),
        }
        std::fs::write(&path, format!("{good}\n{good}\n")).unwrap();
        assert_eq!(read_transcript(&path).unwrap().len(), 2);
        assert!(matches!(read_transcript(&dir.path().join("absent")), Err(TranscriptError::Read { .. })));
    }
}
