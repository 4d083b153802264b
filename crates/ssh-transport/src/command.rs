//! A command line to run on a host and what came back.

use std::borrow::Cow;
use std::time::Duration;

/// A command line for the host's default shell, with the time it may take from exec to exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteCommand {
    /// The command line, passed verbatim to the SSH exec request.
    pub line: String,
    /// How long the command may run before the call fails with [`crate::TransportError::TimedOut`].
    pub timeout: Duration,
}

impl RemoteCommand {
    /// A command with its timeout.
    pub fn new(line: impl Into<String>, timeout: Duration) -> RemoteCommand {
        RemoteCommand { line: line.into(), timeout }
    }

    /// The start of the line, short enough for an error message or a log line.
    pub fn summary(&self) -> String {
        const LIMIT: usize = 80;
        match self.line.char_indices().nth(LIMIT) {
            Some((cut, _)) => format!("{}…", &self.line[..cut]),
            None => self.line.clone(),
        }
    }
}

/// The result of a command that ran to completion (with any exit code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The full 32-bit exit status the server reported (Windows exit codes such as `0xC0000005` are kept). A
    /// command killed by a signal reports 255, as the OpenSSH client does.
    pub exit_code: u32,
    /// Everything the command wrote to standard output.
    pub stdout: Vec<u8>,
    /// Everything the command wrote to standard error.
    pub stderr: Vec<u8>,
    /// Time from sending the exec request to the channel's close.
    pub duration: Duration,
}

impl Output {
    /// Whether the command exited with 0.
    pub fn success(&self) -> bool {
        self.exit_code == 0
    }

    /// Standard output as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.stdout)
    }

    /// Standard error as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.stderr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_cuts_long_lines_on_a_char_boundary() {
        let command = RemoteCommand::new("é".repeat(100), Duration::from_secs(1));
        assert_eq!(command.summary(), format!("{}…", "é".repeat(80)));
        assert_eq!(RemoteCommand::new("hostname", Duration::from_secs(1)).summary(), "hostname");
    }
}
