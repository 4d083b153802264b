//! The seam every host operation goes through: the [`RemoteHost`] trait.

use async_trait::async_trait;

use crate::command::{Output, RemoteCommand};
use crate::error::TransportError;
use crate::host_key::HostKey;
use crate::upload::{BatchOutcome, UploadBatch, UploadOutcome, UploadRequest};

/// A host reached over SSH: run command lines, move files. Flows are written against this trait; production uses
/// [`crate::SshHost`], tests use the fake host of the `testing` feature or their own implementation.
#[async_trait]
pub trait RemoteHost: Send + Sync {
    /// The host as errors and logs name it (`user@address:port`).
    fn label(&self) -> &str;

    /// Runs a command line in the host's default shell with EOF on its standard input, and returns its output
    /// and exit code whatever the code is.
    async fn run(&self, command: &RemoteCommand) -> Result<Output, TransportError>;

    /// Like [`RemoteHost::run`], but a non-zero exit code is [`TransportError::CommandFailed`].
    async fn run_checked(&self, command: &RemoteCommand) -> Result<Output, TransportError> {
        let output = self.run(command).await?;
        if output.success() {
            Ok(output)
        } else {
            Err(TransportError::CommandFailed {
                host: self.label().to_owned(),
                command: command.summary(),
                exit_code: output.exit_code,
                stderr: wmco_vocabulary::excerpt(&output.stderr_text()),
            })
        }
    }

    /// Places a file so that its path holds the old file, no file, or the verified new file, never a partial one.
    async fn upload(&self, request: &UploadRequest) -> Result<UploadOutcome, TransportError>;

    /// Places every file of `batch` like [`RemoteHost::upload`]. This default places them one at a time, each
    /// verified by its own request's `verify`; [`crate::SshHost`] verifies them all with the batch's one command.
    async fn upload_batch(&self, batch: &UploadBatch) -> Result<BatchOutcome, TransportError> {
        let mut outcomes = Vec::with_capacity(batch.requests.len());
        let mut verify_commands = 0;
        for request in &batch.requests {
            let outcome = self.upload(request).await?;
            if matches!(outcome, UploadOutcome::Uploaded { .. }) && request.verify.is_some() {
                verify_commands += 1;
            }
            outcomes.push(outcome);
        }
        Ok(BatchOutcome { outcomes, verify_commands })
    }

    /// Reads a whole remote file.
    async fn download(&self, remote_path: &str) -> Result<Vec<u8>, TransportError>;

    /// Removes a remote file; a missing file is not an error.
    async fn remove(&self, remote_path: &str) -> Result<(), TransportError>;

    /// Creates a remote directory and its missing parents.
    async fn mkdir_all(&self, remote_path: &str) -> Result<(), TransportError>;

    /// The size of the regular file at `remote_path`, or `None` when there is none; one SFTP request, no command
    /// (a caller checks whether a content-addressed file is already there without starting a process).
    async fn file_size(&self, remote_path: &str) -> Result<Option<u64>, TransportError>;

    /// The host key of the connection (connecting if needed); under trust on first use, the key to record.
    async fn host_key(&self) -> Result<HostKey, TransportError>;
}
