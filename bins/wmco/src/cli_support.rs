//! What every subcommand shares: the output and log formats, the outcome of a command, the error that means
//! "unusable input" (exit 2), logging setup, and the mapping of results to exit codes (design §7).

use std::fmt;
use std::process::ExitCode;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How a subcommand writes its result to standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Lines meant for people.
    Human,
    /// One JSON document meant for programs.
    Json,
}

/// How log lines are written to standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// What a subcommand found, when it could run at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything checked is fine (exit 0).
    Clean,
    /// The command ran and found problems, such as a bad entry or a failed check (exit 1).
    Findings,
}

impl Outcome {
    /// The process exit code of this outcome.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Clean => 0,
            Outcome::Findings => 1,
        }
    }
}

/// An input the command cannot use at all (an unreadable file, a malformed argument): exit code 2.
///
/// Subcommands return it inside `anyhow::Error`; any other error means the command's check failed (exit 1).
#[derive(Debug)]
pub struct UnusableInput(pub String);

impl fmt::Display for UnusableInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnusableInput {}

/// Sets up the tracing subscriber on standard error, filtered by `RUST_LOG` (default `info`).
pub fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

/// Maps a subcommand's result to the process exit code, printing an error with its causes to standard error.
pub fn finish(result: anyhow::Result<Outcome>) -> ExitCode {
    match result {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(exit_code_of_error(&error))
        }
    }
}

/// The exit code of a failed command: 2 when unusable input is anywhere in the error chain, else 1.
pub(crate) fn exit_code_of_error(error: &anyhow::Error) -> u8 {
    if error.chain().any(|cause| cause.is::<UnusableInput>()) { 2 } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusable_input_exits_2_even_when_wrapped_in_context() {
        let error = anyhow::Error::new(UnusableInput("cannot read world.yaml".into())).context("csr check");
        assert_eq!(exit_code_of_error(&error), 2);
    }

    #[test]
    fn other_errors_exit_1() {
        assert_eq!(exit_code_of_error(&anyhow::anyhow!("host 10.0.0.1 unreachable")), 1);
    }
}
