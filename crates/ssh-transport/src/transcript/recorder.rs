//! The recording decorator: [`TranscriptRecorder`] hands out hosts that forward every call to the host they wrap
//! and append what happened to the host's transcript file, one `write_all` of one JSON line per operation under
//! the file's lock.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use wmco_vocabulary::Sha256Digest;

use super::entry::{Operation, RecordedFile, RecordedUpload, TranscriptEntry, TranscriptError, capped};
use crate::command::{Output, RemoteCommand};
use crate::error::TransportError;
use crate::host_key::HostKey;
use crate::redact::{redact, redact_command};
use crate::remote::RemoteHost;
use crate::upload::{BatchOutcome, UploadBatch, UploadOutcome, UploadRequest, UploadSource};

/// Creates `directory` and its missing parents with mode 0700 (a directory that exists is left as it is).
///
/// ```
/// use std::os::unix::fs::PermissionsExt as _;
/// let root = tempfile::tempdir()?;
/// let directory = root.path().join("transcripts");
/// wmco_ssh_transport::transcript::prepare_directory(&directory)?;
/// assert_eq!(std::fs::metadata(&directory)?.permissions().mode() & 0o777, 0o700);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`TranscriptError::Directory`] when it cannot be created or is not a directory.
pub fn prepare_directory(directory: &Path) -> Result<(), TranscriptError> {
    let failed = |source| TranscriptError::Directory { path: directory.to_path_buf(), source };
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(directory).map_err(failed)?;
    if std::fs::metadata(directory).map_err(failed)?.is_dir() {
        Ok(())
    } else {
        Err(failed(std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory")))
    }
}

/// The file name of the transcript of the host labelled `label`: the label with every character other than ASCII
/// letters, digits, `.`, `-` and `_` replaced by `_`, and `.jsonl`.
///
/// ```
/// use wmco_ssh_transport::transcript::transcript_file_name;
/// assert_eq!(transcript_file_name("Administrator@10.0.0.5:22"), "Administrator_10.0.0.5_22.jsonl");
/// assert_eq!(transcript_file_name("../x"), "_.._x.jsonl");
/// ```
pub fn transcript_file_name(label: &str) -> String {
    let mut name: String = label
        .chars()
        .map(|character| if character.is_ascii_alphanumeric() || "-_.".contains(character) { character } else { '_' })
        .collect();
    if name.is_empty() || name.starts_with('.') {
        name.insert(0, '_');
    }
    name.push_str(".jsonl");
    name
}

/// Records the operations of the hosts it wraps, one transcript file per host label in one directory. Hosts wrapped
/// again (a new handle per reconcile) share their file.
pub struct TranscriptRecorder {
    directory: PathBuf,
    sinks: Mutex<HashMap<PathBuf, Arc<Sink>>>,
}

impl TranscriptRecorder {
    /// A recorder writing into `directory` (see [`prepare_directory`]); files are opened on the first operation.
    pub fn new(directory: impl Into<PathBuf>) -> TranscriptRecorder {
        TranscriptRecorder { directory: directory.into(), sinks: Mutex::new(HashMap::new()) }
    }

    /// The directory the transcripts go to.
    pub fn directory(&self) -> &Path {
        &self.directory
    }

    /// `host`, recording: every call is forwarded to `host` and then appended to
    /// `directory/`[`transcript_file_name`]`(label)`. [`RemoteHost::run_checked`] is the trait's own, over the
    /// recorded [`RemoteHost::run`].
    pub fn wrap(&self, host: Arc<dyn RemoteHost>) -> Arc<dyn RemoteHost> {
        let path = self.directory.join(transcript_file_name(host.label()));
        let sink = Arc::clone(lock(&self.sinks).entry(path.clone()).or_insert_with(|| Arc::new(Sink::new(path))));
        Arc::new(RecordingHost { inner: host, sink })
    }
}

/// One transcript file: opened on the first line (and again after a failure), written a whole line at a time.
struct Sink {
    path: PathBuf,
    file: Mutex<Option<File>>,
    warned: AtomicBool,
}

impl Sink {
    fn new(path: PathBuf) -> Sink {
        Sink { path, file: Mutex::new(None), warned: AtomicBool::new(false) }
    }

    /// Appends `entry` as one line; a failure is logged the first time only and otherwise ignored.
    fn append(&self, entry: &TranscriptEntry) {
        let mut line = match serde_json::to_string(entry) {
            Ok(line) => line,
            Err(error) => return self.warn_once(&entry.host, &error),
        };
        line.push('\n');
        let mut file = lock(&self.file);
        if file.is_none() {
            let opened = OpenOptions::new().create(true).append(true).mode(0o600).open(&self.path);
            match opened {
                Ok(opened) => *file = Some(opened),
                Err(error) => return self.warn_once(&entry.host, &error),
            }
        }
        if let Some(open) = file.as_mut()
            && let Err(error) = open.write_all(line.as_bytes()).and_then(|()| open.flush())
        {
            *file = None;
            self.warn_once(&entry.host, &error);
        }
    }

    fn warn_once(&self, host: &str, error: &dyn std::fmt::Display) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                host,
                transcript = %self.path.display(),
                error = %error,
                "cannot write the command transcript; the host's operations go on, unrecorded (logged once per file)"
            );
        }
    }
}

/// A host whose operations are recorded to a [`Sink`].
struct RecordingHost {
    inner: Arc<dyn RemoteHost>,
    sink: Arc<Sink>,
}

/// When an operation started: the wall clock for the entry, the monotonic clock for its duration.
struct Started {
    time: String,
    instant: Instant,
}

impl Started {
    fn now() -> Started {
        Started { time: jiff::Timestamp::now().to_string(), instant: Instant::now() }
    }
}

impl RecordingHost {
    fn record(&self, started: Started, operation: Operation, error: Option<&TransportError>) {
        let duration_ms = u64::try_from(started.instant.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.sink.append(&TranscriptEntry {
            time: started.time,
            host: self.inner.label().to_owned(),
            operation,
            duration_ms,
            error: error.map(|error| redact(&error.to_string())),
        });
    }
}

/// The text of command output, redacted and capped.
fn recorded_text(bytes: &[u8]) -> (String, bool) {
    capped(redact(&String::from_utf8_lossy(bytes)))
}

/// An upload request as recorded, with what it did (`None`: it failed).
fn recorded_file(request: &UploadRequest, outcome: Option<&UploadOutcome>) -> RecordedFile {
    let size = match &request.source {
        UploadSource::Bytes(bytes) => Some(bytes.len() as u64),
        UploadSource::File(path) => std::fs::metadata(path).ok().map(|metadata| metadata.len()),
    };
    RecordedFile {
        path: request.remote_path.clone(),
        size,
        sha256: request.expected_sha256,
        outcome: outcome.map(|outcome| match outcome {
            UploadOutcome::Skipped => RecordedUpload::Skipped,
            UploadOutcome::Uploaded { .. } => RecordedUpload::Uploaded,
        }),
    }
}

#[async_trait]
impl RemoteHost for RecordingHost {
    fn label(&self) -> &str {
        self.inner.label()
    }

    async fn run(&self, command: &RemoteCommand) -> Result<Output, TransportError> {
        let started = Started::now();
        let result = self.inner.run(command).await;
        let redacted = redact_command(&command.line);
        let (exit_code, (stdout, stdout_truncated), (stderr, stderr_truncated)) = match &result {
            Ok(output) => (Some(output.exit_code), recorded_text(&output.stdout), recorded_text(&output.stderr)),
            Err(_) => (None, (String::new(), false), (String::new(), false)),
        };
        let operation = Operation::Run {
            command: redacted.line,
            script: redacted.script,
            exit_code,
            stdout,
            stdout_truncated,
            stderr,
            stderr_truncated,
        };
        self.record(started, operation, result.as_ref().err());
        result
    }

    async fn upload(&self, request: &UploadRequest) -> Result<UploadOutcome, TransportError> {
        let started = Started::now();
        let result = self.inner.upload(request).await;
        let operation = Operation::Upload {
            file: recorded_file(request, result.as_ref().ok()),
            verify: request.verify.as_ref().map(|verify| redact_command(&verify.line).line),
        };
        self.record(started, operation, result.as_ref().err());
        result
    }

    async fn upload_batch(&self, batch: &UploadBatch) -> Result<BatchOutcome, TransportError> {
        let started = Started::now();
        let result = self.inner.upload_batch(batch).await;
        let outcomes = result.as_ref().ok().map(|outcome| outcome.outcomes.as_slice()).unwrap_or_default();
        let files = batch
            .requests
            .iter()
            .enumerate()
            .map(|(index, request)| recorded_file(request, outcomes.get(index)))
            .collect();
        let operation = Operation::UploadBatch {
            files,
            verify: redact_command(&batch.verify.line).line,
            verify_commands: result.as_ref().ok().map(|outcome| outcome.verify_commands),
        };
        self.record(started, operation, result.as_ref().err());
        result
    }

    async fn download(&self, remote_path: &str) -> Result<Vec<u8>, TransportError> {
        let started = Started::now();
        let result = self.inner.download(remote_path).await;
        let operation = Operation::Download {
            path: remote_path.to_owned(),
            size: result.as_ref().ok().map(|bytes| bytes.len() as u64),
            sha256: result.as_ref().ok().map(|bytes| Sha256Digest::of_bytes(bytes)),
        };
        self.record(started, operation, result.as_ref().err());
        result
    }

    async fn remove(&self, remote_path: &str) -> Result<(), TransportError> {
        let started = Started::now();
        let result = self.inner.remove(remote_path).await;
        self.record(started, Operation::Remove { path: remote_path.to_owned() }, result.as_ref().err());
        result
    }

    async fn mkdir_all(&self, remote_path: &str) -> Result<(), TransportError> {
        let started = Started::now();
        let result = self.inner.mkdir_all(remote_path).await;
        self.record(started, Operation::MkdirAll { path: remote_path.to_owned() }, result.as_ref().err());
        result
    }

    async fn file_size(&self, remote_path: &str) -> Result<Option<u64>, TransportError> {
        let started = Started::now();
        let result = self.inner.file_size(remote_path).await;
        let size = result.as_ref().ok().copied().flatten();
        self.record(started, Operation::FileSize { path: remote_path.to_owned(), size }, result.as_ref().err());
        result
    }

    async fn host_key(&self) -> Result<HostKey, TransportError> {
        let started = Started::now();
        let result = self.inner.host_key().await;
        let key = result.as_ref().ok().map(ToString::to_string);
        self.record(started, Operation::HostKey { key }, result.as_ref().err());
        result
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
