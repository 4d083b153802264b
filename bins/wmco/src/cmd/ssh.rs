//! `wmco ssh check ADDRESS --user USER --key FILE`: what an admin runs when a BYOH host will not join. Connects,
//! reports the host key (type and SHA-256 fingerprint), runs `echo <random token>` (the same under cmd.exe and
//! POSIX shells) and checks the token comes back. Exit 0 when it does, 1 with one line naming the failure class,
//! 2 for unusable arguments (an unreadable or encrypted key file, a malformed host key).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use wmco_ssh_transport::{
    ErrorClass, HostConfig, HostKey, HostKeyPolicy, PrivateKey, RemoteCommand, RemoteHost, RetryPolicy, SshHost,
    TransportError,
};

use crate::cli_support::{Outcome, OutputArgs, UnusableInput, print_stdout, render};

/// The `kind` of the document `wmco ssh check -o json|yaml` prints.
pub const KIND: &str = "SshCheck";

/// Arguments of `wmco ssh`.
#[derive(Debug, clap::Args)]
pub struct SshArgs {
    #[command(subcommand)]
    command: SshCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SshCommand {
    /// Connect to a host, show its host key, and check that a command runs.
    Check(CheckArgs),
}

/// Arguments of `wmco ssh check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// How to reach a host over SSH (shared by `wmco ssh check` and `wmco preflight`).
#[derive(Debug, clap::Args)]
pub struct ConnectArgs {
    /// The host name or IP address.
    #[arg(value_name = "ADDRESS")]
    address: String,
    /// The SSH user (e.g. Administrator).
    #[arg(long)]
    user: String,
    /// The unencrypted PEM private key file (OpenSSH, PKCS#8, PKCS#1 or SEC1; RSA, ECDSA or Ed25519).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// The SSH port.
    #[arg(long, default_value_t = 22)]
    port: u16,
    /// The expected host key, `TYPE BASE64` as in known_hosts; without it the key is shown for recording.
    #[arg(long, value_name = "TYPE BASE64")]
    host_key: Option<String>,
    /// Seconds allowed for connecting and for the command each.
    #[arg(long, value_name = "SECS", default_value_t = 15)]
    pub(crate) timeout: u64,
}

/// Dispatches `wmco ssh` subcommands.
pub fn run(args: &SshArgs) -> anyhow::Result<Outcome> {
    match &args.command {
        SshCommand::Check(check_args) => run_check(check_args),
    }
}

fn run_check(args: &CheckArgs) -> anyhow::Result<Outcome> {
    let config = host_config(&args.connect, "ssh-check")?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let report = runtime.block_on(check(config, Duration::from_secs(args.connect.timeout)));
    print_stdout(&render(args.output.format, KIND, &report, || report.render_human())?)?;
    Ok(if report.failure.is_none() { Outcome::Clean } else { Outcome::Findings })
}

/// Builds the connection settings, naming the client `SSH-2.0-…-<client>`; refuses unusable arguments (exit 2).
pub(crate) fn host_config(args: &ConnectArgs, client: &str) -> Result<HostConfig, UnusableInput> {
    let key = PrivateKey::from_file(&args.key)
        .map_err(|error| UnusableInput(format!("--key {}: {error}", args.key.display())))?;
    let policy = match &args.host_key {
        Some(text) => HostKeyPolicy::Pinned(
            HostKey::from_openssh(text).map_err(|error| UnusableInput(format!("--host-key: {error}")))?,
        ),
        None => HostKeyPolicy::TrustOnFirstUse,
    };
    let timeout = Duration::from_secs(args.timeout.max(1));
    let mut config = HostConfig::new(args.address.clone(), args.user.clone(), key);
    config.port = args.port;
    config.host_key_policy = policy;
    config.connect_timeout = timeout;
    config.io_timeout = timeout;
    config.connect_retry = RetryPolicy::never();
    config.client_version_suffix = Some(client.into());
    Ok(config)
}

/// What `wmco ssh check` found.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    /// `user@address:port`.
    host: String,
    /// The host key the server presented, if the handshake got that far.
    host_key: Option<HostKeyReport>,
    /// Whether the key was compared with `--host-key`.
    host_key_pinned: bool,
    /// Milliseconds from sending `echo` to its exit, on success.
    echo_millis: Option<u128>,
    /// Why the check failed, if it did.
    failure: Option<Failure>,
}

/// A host key as reported.
#[derive(Debug, Serialize, PartialEq, Eq)]
struct HostKeyReport {
    algorithm: String,
    fingerprint: String,
    /// `TYPE BASE64`, ready for `--host-key` or a record.
    openssh: String,
}

/// A failed check: its class and the full message.
#[derive(Debug, Serialize, PartialEq, Eq)]
struct Failure {
    /// `unreachable`, `authentication`, `host key mismatch`, `command failed` or `protocol`.
    class: &'static str,
    message: String,
}

/// Connects, records the host key, and runs `echo <token>`.
pub async fn check(config: HostConfig, timeout: Duration) -> CheckReport {
    let host_key_pinned = matches!(config.host_key_policy, HostKeyPolicy::Pinned(_));
    let mut report =
        CheckReport { host: config.label(), host_key: None, host_key_pinned, echo_millis: None, failure: None };
    let host = match SshHost::new(config) {
        Ok(host) => host,
        Err(error) => {
            report.failure = Some(connect_failure(&error));
            return report;
        }
    };
    match host.host_key().await {
        Ok(key) => report.host_key = Some(describe(&key)),
        Err(error) => {
            report.failure = Some(connect_failure(&error));
            return report;
        }
    }
    let token = random_token();
    let started = Instant::now();
    report.failure = match host.run(&RemoteCommand::new(format!("echo {token}"), timeout)).await {
        Ok(output) if output.exit_code == 0 && output.stdout_text().trim() == token => {
            report.echo_millis = Some(started.elapsed().as_millis());
            None
        }
        Ok(output) => Some(Failure {
            class: "command failed",
            message: format!(
                "`echo {token}` exited with {} and printed {:?} (stderr {:?})",
                output.exit_code,
                output.stdout_text().trim(),
                output.stderr_text().trim()
            ),
        }),
        Err(error) => Some(Failure { class: "command failed", message: error.to_string() }),
    };
    report
}

fn connect_failure(error: &TransportError) -> Failure {
    let class = match error.class() {
        ErrorClass::Unreachable | ErrorClass::TimedOut => "unreachable",
        ErrorClass::Authentication | ErrorClass::Key => "authentication",
        ErrorClass::HostKeyMismatch => "host key mismatch",
        ErrorClass::CommandFailed | ErrorClass::Transfer | ErrorClass::OutputTooLarge => "command failed",
        ErrorClass::Protocol | ErrorClass::Worker => "protocol",
    };
    Failure { class, message: error.to_string() }
}

fn describe(key: &HostKey) -> HostKeyReport {
    HostKeyReport {
        algorithm: key.algorithm().to_owned(),
        fingerprint: key.fingerprint().to_string(),
        openssh: key.to_openssh(),
    }
}

/// 16 hex digits that the host cannot guess, so an echo of them proves the command really ran.
fn random_token() -> String {
    let high = RandomState::new().hash_one(Instant::now());
    format!("wmco{high:016x}")
}

impl CheckReport {
    fn render_human(&self) -> String {
        let mut text = String::new();
        if let Some(key) = &self.host_key {
            let note = if self.host_key_pinned {
                "matches --host-key".to_owned()
            } else {
                format!("not pinned; record it with --host-key \"{}\"", key.openssh)
            };
            text.push_str(&format!("host key: {} {} ({note})\n", key.algorithm, key.fingerprint));
        }
        match (&self.failure, self.echo_millis) {
            (Some(failure), _) => text.push_str(&format!("FAILED {}: {}\n", failure.class, failure.message)),
            (None, Some(millis)) => text.push_str(&format!("ok: {} ran echo in {millis} ms\n", self.host)),
            (None, None) => text.push_str(&format!("ok: {}\n", self.host)),
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wmco_ssh_transport::testing::{FakeHost, Reply};

    #[tokio::test]
    async fn echo_of_the_token_passes_and_reports_the_key() {
        let fake = FakeHost::start().await.unwrap();
        fake.respond_with(std::sync::Arc::new(|line, _| {
            line.strip_prefix("echo ").map(|token| Reply::ok(format!("{token}\r\n")))
        }));
        let (key, _) = FakeHost::generate_client_key().unwrap();
        let report = check(fake.host_config(key), Duration::from_secs(5)).await;
        assert_eq!(report.failure, None);
        let expected_key = fake.host_key();
        assert_eq!(report.host_key, Some(describe(&expected_key)));
        assert!(report.render_human().starts_with(&format!(
            "host key: ssh-ed25519 {} (matches --host-key)\nok: Administrator@127.0.0.1:{} ran echo in ",
            expected_key.fingerprint(),
            fake.port()
        )));
    }

    #[tokio::test]
    async fn a_wrong_echo_is_a_failed_command() {
        let fake = FakeHost::start().await.unwrap();
        fake.reply_to_prefix("echo ", Reply::ok("something else\r\n"));
        let (key, _) = FakeHost::generate_client_key().unwrap();
        let report = check(fake.host_config(key), Duration::from_secs(5)).await;
        assert_eq!(report.failure.map(|failure| failure.class), Some("command failed"));
    }

    #[tokio::test]
    async fn a_changed_host_key_is_named() {
        let fake = FakeHost::start().await.unwrap();
        let (key, _) = FakeHost::generate_client_key().unwrap();
        let config = fake.host_config(key);
        fake.replace_host_key().unwrap();
        let report = check(config, Duration::from_secs(5)).await;
        let failure = report.failure.unwrap();
        assert_eq!(failure.class, "host key mismatch");
        assert_eq!(report.host_key, None);
    }

    #[tokio::test]
    async fn a_refused_key_is_an_authentication_failure() {
        let fake = FakeHost::start().await.unwrap();
        let (allowed, allowed_line) = FakeHost::generate_client_key().unwrap();
        drop(allowed);
        fake.authorize_only(&allowed_line);
        let (other, _) = FakeHost::generate_client_key().unwrap();
        let report = check(fake.host_config(other), Duration::from_secs(5)).await;
        assert_eq!(report.failure.unwrap().class, "authentication");
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable() {
        let fake = FakeHost::start().await.unwrap();
        let (key, _) = FakeHost::generate_client_key().unwrap();
        let config = fake.host_config(key);
        drop(fake);
        let report = check(config, Duration::from_secs(5)).await;
        assert_eq!(report.failure.as_ref().map(|failure| failure.class), Some("unreachable"));
        assert_eq!(report.render_human().lines().count(), 1);
    }

    #[test]
    fn an_encrypted_key_file_is_unusable_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n")
            .unwrap();
        let args = ConnectArgs {
            address: "10.0.0.5".into(),
            user: "Administrator".into(),
            key: path.clone(),
            port: 22,
            host_key: None,
            timeout: 5,
        };
        let error = host_config(&args, "ssh-check").unwrap_err();
        assert_eq!(
            error.0,
            format!(
                "--key {}: the PKCS#8 private key is encrypted with a passphrase; provide an unencrypted key",
                path.display()
            )
        );
    }

    #[test]
    fn a_malformed_host_key_is_unusable_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").unwrap();
        let args = ConnectArgs {
            address: "10.0.0.5".into(),
            user: "Administrator".into(),
            key: path,
            port: 22,
            host_key: Some("ssh-ed25519".into()),
            timeout: 5,
        };
        assert_eq!(
            host_config(&args, "ssh-check").unwrap_err().0,
            "--host-key: a host key is written `TYPE BASE64` (as in known_hosts), got 1 field(s)"
        );
    }
}
