//! File operations on a blocking connection's SFTP session: the never-partial upload (temporary file, verify,
//! remove target, rename) of one file or of a batch verified by one command, download, remove and directory
//! creation.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use sha2::{Digest as _, Sha256};
use ssh2::{OpenFlags, OpenType, Sftp};

use crate::command::{Output, RemoteCommand};
use crate::connection::{Connection, Failure, OpError, classify, is_no_such_file};
use crate::error::{TransferStep, TransportError};
use crate::exec;
use crate::source::{self, Chunks, StreamError};
use crate::upload::{BatchOutcome, UploadBatch, UploadOutcome, UploadRequest, UploadSource, staging_path};
use wmco_vocabulary::Sha256Digest;

/// Size of one read from the upload's source.
const READ_CHUNK: usize = 1024 * 1024;
/// How many unacknowledged bytes are kept in flight: libssh2 turns every byte handed to one write call into
/// pipelined SFTP write requests, and reports acknowledgements as they arrive.
const IN_FLIGHT: usize = 4 * 1024 * 1024;
/// The write buffer's size: the bytes in flight plus room for this many chunks, so the acknowledged bytes at its
/// front are dropped (the unacknowledged ones moved to the start) once per this many chunks, not once per chunk.
const CHUNKS_BETWEEN_COMPACTIONS: usize = 4;
/// Size of one SFTP read.
const READ_BUFFER: usize = 1024 * 1024;

/// Builds [`OpError`]s for one host and path.
struct Failures<'a> {
    host: &'a str,
    path: &'a str,
}

impl Failures<'_> {
    fn library(&self, step: TransferStep, error: &ssh2::Error) -> OpError {
        let failure = classify(error);
        self.failed(step, error.message().to_owned(), failure != Failure::Other)
    }

    fn io(&self, step: TransferStep, error: &std::io::Error) -> OpError {
        let lost = !matches!(error.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied);
        self.failed(step, error.to_string(), lost && step != TransferStep::ReadSource)
    }

    fn failed(&self, step: TransferStep, reason: String, connection_lost: bool) -> OpError {
        OpError {
            error: TransportError::Transfer {
                host: self.host.to_owned(),
                path: self.path.to_owned(),
                step,
                reason,
                connection_lost,
            },
            poisoned: connection_lost,
        }
    }
}

/// Places the request's bytes at its target path without ever leaving a partial file there.
pub(crate) fn upload(
    connection: &mut Connection,
    request: &UploadRequest,
    host: &str,
) -> Result<UploadOutcome, OpError> {
    let failures = Failures { host, path: &request.remote_path };
    let started = Instant::now();
    let staging = staging_path(&request.remote_path);
    let bytes = write_staging(connection, request, &staging, &failures)?;
    let write_duration = started.elapsed();

    let verified = match &request.verify {
        Some(command) => verify_by_command(connection, command, request.expected_sha256, &failures),
        None => verify_by_reading(connection, &staging, request.expected_sha256, &failures),
    };
    if let Err(failure) = verified {
        discard(connection, &staging, &failure);
        return Err(failure);
    }

    replace_target(connection, &staging, &request.remote_path, &failures)?;
    Ok(UploadOutcome::Uploaded { bytes, write_duration, duration: started.elapsed() })
}

/// Places every file of `batch` that needs sending: all temporary files written first, then verified by the batch's
/// one command, then each renamed over its target. A failure before the renames removes every temporary file and
/// leaves every target untouched.
pub(crate) fn upload_batch(
    connection: &mut Connection,
    batch: &UploadBatch,
    host: &str,
) -> Result<BatchOutcome, OpError> {
    let started = Instant::now();
    let sending: Vec<&UploadRequest> = batch.requests.iter().filter(|request| request.needs_sending()).collect();
    let mut written: Vec<(String, u64, Duration)> = Vec::with_capacity(sending.len());
    for request in &sending {
        let failures = Failures { host, path: &request.remote_path };
        let staging = staging_path(&request.remote_path);
        let begun = Instant::now();
        match write_staging(connection, request, &staging, &failures) {
            Ok(bytes) => written.push((staging, bytes, begun.elapsed())),
            Err(failure) => {
                discard_all(connection, written.iter().map(|(staging, ..)| staging.as_str()), &failure);
                return Err(failure);
            }
        }
    }
    if let Err(failure) = verify_batch(connection, &batch.verify, &sending, host) {
        discard_all(connection, written.iter().map(|(staging, ..)| staging.as_str()), &failure);
        return Err(failure);
    }
    for (request, (staging, ..)) in sending.iter().zip(&written) {
        let failures = Failures { host, path: &request.remote_path };
        replace_target(connection, staging, &request.remote_path, &failures)?;
    }
    let duration = started.elapsed();
    let mut placed = written.into_iter();
    let outcomes = batch
        .requests
        .iter()
        .map(|request| match request.needs_sending().then(|| placed.next()).flatten() {
            Some((_, bytes, write_duration)) => UploadOutcome::Uploaded { bytes, write_duration, duration },
            None => UploadOutcome::Skipped,
        })
        .collect();
    Ok(BatchOutcome { outcomes, verify_commands: 1 })
}

/// Runs the batch's verify command and checks it printed each sent file's expected SHA-256, in order.
fn verify_batch(
    connection: &Connection,
    command: &RemoteCommand,
    sending: &[&UploadRequest],
    host: &str,
) -> Result<(), OpError> {
    let first = sending.first().map_or("", |request| request.remote_path.as_str());
    let batch_failures = Failures { host, path: first };
    let output = exec::run(connection, command, host).map_err(|failure| OpError {
        error: batch_failures
            .failed(TransferStep::Verify, failure.error.to_string(), failure.error.is_retryable())
            .error,
        poisoned: failure.poisoned,
    })?;
    if !output.success() {
        return Err(batch_failures.failed(
            TransferStep::Verify,
            format!(
                "the verify command of {} files exited with {}: {}",
                sending.len(),
                output.exit_code,
                failure_text(&output)
            ),
            false,
        ));
    }
    let digests = printed_digests(&output.stdout_text());
    if digests.len() != sending.len() {
        return Err(batch_failures.failed(
            TransferStep::Verify,
            format!("the verify command printed {} digests for {} files", digests.len(), sending.len()),
            false,
        ));
    }
    for (request, digest) in sending.iter().zip(digests) {
        if digest != request.expected_sha256 {
            let failures = Failures { host, path: &request.remote_path };
            return Err(failures.failed(
                TransferStep::Verify,
                format!("the verify command printed {digest}, expected {}", request.expected_sha256),
                false,
            ));
        }
    }
    Ok(())
}

/// The SHA-256 digests a verify command printed, in order: each line that is one (hex, any case), surrounding
/// whitespace ignored. Other lines — the hashing program's own headers and trailers, such as certutil's — are not
/// digests and are skipped.
fn printed_digests(printed: &str) -> Vec<Sha256Digest> {
    printed.lines().filter_map(|line| line.trim().parse().ok()).collect()
}

/// What a failed command said: its standard error, or its standard output when that is empty (certutil reports
/// failures on standard output).
fn failure_text(output: &Output) -> String {
    let stderr = output.stderr_text();
    if stderr.trim().is_empty() { output.stdout_text().trim().to_owned() } else { stderr.trim().to_owned() }
}

/// Removes the target (if any) and renames the verified temporary file over it.
fn replace_target(
    connection: &mut Connection,
    staging: &str,
    target: &str,
    failures: &Failures<'_>,
) -> Result<(), OpError> {
    let sftp = open_sftp(connection, failures)?;
    match sftp.unlink(Path::new(target)) {
        Ok(()) => {}
        Err(error) if is_no_such_file(&error) => {}
        Err(error) => return Err(failures.library(TransferStep::RemoveTarget, &error)),
    }
    sftp.rename(Path::new(staging), Path::new(target), None)
        .map_err(|error| failures.library(TransferStep::Rename, &error))
}

fn open_sftp<'c>(connection: &'c mut Connection, failures: &Failures<'_>) -> Result<&'c Sftp, OpError> {
    connection.sftp().map_err(|error| failures.library(TransferStep::OpenSession, &error))
}

/// Streams the source into the temporary file, checking its hash against the expected one; returns bytes sent.
fn write_staging(
    connection: &mut Connection,
    request: &UploadRequest,
    staging: &str,
    failures: &Failures<'_>,
) -> Result<u64, OpError> {
    let mut stamped = None;
    let source: Box<dyn Read + Send> = match &request.source {
        UploadSource::File(path) => {
            let file = std::fs::File::open(path).map_err(|error| failures.io(TransferStep::ReadSource, &error))?;
            let stamp = source::FileStamp::of(&file).map_err(|error| failures.io(TransferStep::ReadSource, &error))?;
            stamped = Some((path, stamp));
            Box::new(file)
        }
        UploadSource::Bytes(bytes) => Box::new(std::io::Cursor::new(bytes.clone())),
    };
    let already_verified = stamped.is_some_and(|(path, stamp)| source::verified(path, stamp, request.expected_sha256));
    let sftp = open_sftp(connection, failures)?;
    let flags = OpenFlags::WRITE | OpenFlags::CREATE | OpenFlags::TRUNCATE;
    let mut remote = sftp
        .open_mode(Path::new(staging), flags, 0o644, OpenType::File)
        .map_err(|error| failures.library(TransferStep::OpenStaging, &error))?;
    let (total, actual) =
        source::stream(source, READ_CHUNK, !already_verified, |chunks| write_pipelined(&mut remote, chunks, failures))
            .map_err(|error| match error {
                StreamError::ReaderPanicked => {
                    failures.failed(TransferStep::ReadSource, "the source reader thread panicked".into(), false)
                }
                StreamError::Consume(failure) => failure,
            })?;
    remote.close().map_err(|error| failures.library(TransferStep::Write, &error))?;
    let Some(actual) = actual else {
        return Ok(total);
    };
    if actual == request.expected_sha256
        && let Some((path, stamp)) = stamped
    {
        source::note_verified(path, stamp, actual);
    }
    if actual != request.expected_sha256 {
        let failure = failures.failed(
            TransferStep::SourceHash,
            format!("the source's SHA-256 is {actual}, expected {}", request.expected_sha256),
            false,
        );
        discard(connection, staging, &failure);
        return Err(failure);
    }
    Ok(total)
}

/// Writes every chunk to `remote`, keeping up to [`IN_FLIGHT`] bytes outstanding so the SFTP pipeline never drains
/// between chunks. libssh2 requires the unacknowledged bytes to be passed again at the front of each call.
fn write_pipelined(remote: &mut ssh2::File, chunks: &mut Chunks, failures: &Failures<'_>) -> Result<u64, OpError> {
    let capacity = IN_FLIGHT + CHUNKS_BETWEEN_COMPACTIONS * READ_CHUNK;
    let mut pending: Vec<u8> = Vec::with_capacity(capacity);
    let mut acknowledged = 0usize;
    let mut total = 0u64;
    let mut source_done = false;
    loop {
        while !source_done && pending.len() - acknowledged < IN_FLIGHT {
            match chunks.next_chunk() {
                Some(Ok(chunk)) => {
                    if pending.len() + chunk.len() > capacity {
                        pending.drain(..acknowledged);
                        acknowledged = 0;
                    }
                    pending.extend_from_slice(&chunk);
                }
                Some(Err(error)) => return Err(failures.io(TransferStep::ReadSource, &error)),
                None => source_done = true,
            }
        }
        if acknowledged == pending.len() {
            return Ok(total);
        }
        let written =
            remote.write(&pending[acknowledged..]).map_err(|error| failures.io(TransferStep::Write, &error))?;
        acknowledged += written;
        total += written as u64;
    }
}

fn verify_by_command(
    connection: &Connection,
    command: &RemoteCommand,
    expected: Sha256Digest,
    failures: &Failures<'_>,
) -> Result<(), OpError> {
    let output = exec::run(connection, command, failures.host).map_err(|failure| OpError {
        error: failures.failed(TransferStep::Verify, failure.error.to_string(), failure.error.is_retryable()).error,
        poisoned: failure.poisoned,
    })?;
    if !output.success() {
        return Err(failures.failed(
            TransferStep::Verify,
            format!("the verify command exited with {}: {}", output.exit_code, failure_text(&output)),
            false,
        ));
    }
    let printed = output.stdout_text();
    match printed_digests(&printed).as_slice() {
        [digest] if *digest == expected => Ok(()),
        _ => Err(failures.failed(
            TransferStep::Verify,
            format!("the verify command printed `{}`, expected {expected}", printed.trim()),
            false,
        )),
    }
}

fn verify_by_reading(
    connection: &mut Connection,
    staging: &str,
    expected: Sha256Digest,
    failures: &Failures<'_>,
) -> Result<(), OpError> {
    let content_hash = hash_remote(connection, staging, failures, TransferStep::Verify)?;
    if content_hash == expected {
        Ok(())
    } else {
        Err(failures.failed(
            TransferStep::Verify,
            format!("the written file's SHA-256 is {content_hash}, expected {expected}"),
            false,
        ))
    }
}

fn hash_remote(
    connection: &mut Connection,
    path: &str,
    failures: &Failures<'_>,
    step: TransferStep,
) -> Result<Sha256Digest, OpError> {
    let mut hasher = Sha256::new();
    read_remote(connection, path, failures, step, |chunk| hasher.update(chunk))?;
    Ok(Sha256Digest::from(<[u8; 32]>::from(hasher.finalize())))
}

fn read_remote(
    connection: &mut Connection,
    path: &str,
    failures: &Failures<'_>,
    step: TransferStep,
    mut sink: impl FnMut(&[u8]),
) -> Result<(), OpError> {
    let sftp = open_sftp(connection, failures)?;
    let mut file = sftp.open(Path::new(path)).map_err(|error| failures.library(step, &error))?;
    let mut buffer = vec![0u8; READ_BUFFER];
    loop {
        let count = file.read(&mut buffer).map_err(|error| failures.io(step, &error))?;
        if count == 0 {
            return Ok(());
        }
        sink(&buffer[..count]);
    }
}

/// Removes a temporary file after a failed step, best effort: the target was not touched, and the next upload
/// overwrites the temporary file anyway.
fn discard(connection: &mut Connection, staging: &str, failure: &OpError) {
    discard_all(connection, [staging], failure);
}

/// Removes temporary files after a failed step, best effort (see [`discard`]).
fn discard_all<'s>(connection: &mut Connection, stagings: impl IntoIterator<Item = &'s str>, failure: &OpError) {
    if failure.poisoned {
        return;
    }
    let Ok(sftp) = connection.sftp() else {
        return;
    };
    for staging in stagings {
        if let Err(error) = sftp.unlink(Path::new(staging)) {
            tracing::debug!(path = staging, error = error.message(), "could not remove the temporary file");
        }
    }
}

/// Reads a whole remote file.
pub(crate) fn download(connection: &mut Connection, path: &str, host: &str) -> Result<Vec<u8>, OpError> {
    let failures = Failures { host, path };
    let mut content = Vec::new();
    read_remote(connection, path, &failures, TransferStep::Read, |chunk| content.extend_from_slice(chunk))?;
    Ok(content)
}

/// Removes a remote file; a missing file is not an error.
pub(crate) fn remove(connection: &mut Connection, path: &str, host: &str) -> Result<(), OpError> {
    let failures = Failures { host, path };
    let sftp = open_sftp(connection, &failures)?;
    match sftp.unlink(Path::new(path)) {
        Ok(()) => Ok(()),
        Err(error) if is_no_such_file(&error) => Ok(()),
        Err(error) => Err(failures.library(TransferStep::Remove, &error)),
    }
}

/// The size of the regular file at `path`, or `None` when there is none (nothing, or a directory).
pub(crate) fn file_size(connection: &mut Connection, path: &str, host: &str) -> Result<Option<u64>, OpError> {
    let failures = Failures { host, path };
    let sftp = open_sftp(connection, &failures)?;
    match sftp.stat(Path::new(path)) {
        Ok(stat) if stat.is_file() => Ok(stat.size),
        Ok(_) => Ok(None),
        Err(error) if is_no_such_file(&error) => Ok(None),
        Err(error) => Err(failures.library(TransferStep::Stat, &error)),
    }
}

/// Creates a remote directory and its missing parents.
pub(crate) fn mkdir_all(connection: &mut Connection, path: &str, host: &str) -> Result<(), OpError> {
    let failures = Failures { host, path };
    let sftp = open_sftp(connection, &failures)?;
    for prefix in directory_prefixes(path) {
        let prefix = Path::new(prefix);
        if sftp.stat(prefix).is_ok_and(|stat| stat.is_dir()) {
            continue;
        }
        if let Err(error) = sftp.mkdir(prefix, 0o755) {
            // Another writer may have created it in between; only a directory that still is not there is an error.
            if !sftp.stat(prefix).is_ok_and(|stat| stat.is_dir()) {
                return Err(failures.library(TransferStep::CreateDirectory, &error));
            }
        }
    }
    Ok(())
}

/// The directories to ensure for `path`, shortest first, skipping the root and drive letters (`C:`).
fn directory_prefixes(path: &str) -> Vec<&str> {
    let trimmed = path.trim_end_matches('/');
    trimmed
        .match_indices('/')
        .map(|(index, _)| &trimmed[..index])
        .chain(std::iter::once(trimmed))
        .filter(|prefix| !prefix.is_empty() && !prefix.trim_start_matches('/').ends_with(':'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_skip_drive_and_root() {
        assert_eq!(directory_prefixes("C:/k/cni/config/"), ["C:/k", "C:/k/cni", "C:/k/cni/config"]);
        assert_eq!(directory_prefixes("/tmp/a/b"), ["/tmp", "/tmp/a", "/tmp/a/b"]);
        assert_eq!(directory_prefixes("/C:/k"), ["/C:/k"]);
        assert_eq!(directory_prefixes("relative/dir"), ["relative", "relative/dir"]);
    }

    #[test]
    fn digests_are_read_from_their_own_lines_and_headers_are_skipped() {
        let digest = Sha256Digest::of_bytes(b"abc");
        let upper = digest.to_string().to_ascii_uppercase();
        let certutil = format!(
            "SHA256 hash of C:\\k\\a.wmco-upload:\r\n{digest}\r\nCertUtil: -hashfile command completed successfully.\r\n"
        );
        assert_eq!(printed_digests(&certutil), [digest]);
        assert_eq!(printed_digests(&format!("  {upper}  \n\n{digest}\n")), [digest, digest]);
        assert!(printed_digests(&format!("{digest}0\nCertUtil: failed\n")).is_empty());
    }

    #[test]
    fn a_failure_is_described_by_stderr_or_else_stdout() {
        let output = |stdout: &str, stderr: &str| Output {
            exit_code: 2_147_942_402,
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            duration: Duration::ZERO,
        };
        assert_eq!(failure_text(&output("CertUtil: not found\r\n", "")), "CertUtil: not found");
        assert_eq!(failure_text(&output("ignored", " denied \n")), "denied");
    }
}
