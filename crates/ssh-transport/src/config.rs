//! How to reach one host: address, user, key, host key policy, time limits and the client's version string.

use std::fmt;
use std::time::Duration;

use crate::host_key::HostKeyPolicy;
use crate::key::PrivateKey;
use crate::retry::RetryPolicy;

/// The default cap on one command's output (standard output and standard error together): 4 MiB, far above what
/// any command of the product prints (the state probe of a configured host prints a few kilobytes), and small
/// enough that a fleet of hostile hosts cannot grow the operator's memory by more than the cap times the
/// configuration concurrency.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// Everything needed to open an SSH connection to one host.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Host name or IP address.
    pub address: String,
    /// TCP port (22 by default).
    pub port: u16,
    /// The SSH user.
    pub user: String,
    /// The client's private key.
    pub key: PrivateKey,
    /// Which host keys are accepted.
    pub host_key_policy: HostKeyPolicy,
    /// Time limit for one connection attempt (TCP connect, handshake, authentication).
    pub connect_timeout: Duration,
    /// How failed connection attempts are retried (only unreachable and timed-out attempts are).
    pub connect_retry: RetryPolicy,
    /// Time limit for one blocking SFTP step (opening, writing one buffer, renaming).
    pub io_timeout: Duration,
    /// Close the connection after this long without use (`None`: keep it until the handle is dropped).
    pub idle_timeout: Option<Duration>,
    /// The most a command may print (standard output and error together); more ends the command with
    /// [`crate::TransportError::OutputTooLarge`] and drops the connection, so a host printing without end costs
    /// the operator this much memory at most.
    pub max_output_bytes: usize,
    /// Added to the client's SSH version string (`SSH-2.0-wmco_<version> <suffix>`), so a host's logs tell two
    /// operator processes apart. Printable ASCII without spaces.
    pub client_version_suffix: Option<String>,
}

impl HostConfig {
    /// A configuration with defaults: port 22, trust on first use, 15 s connect timeout, connection retries for up
    /// to 2 minutes, 60 s IO timeout, idle connections kept, at most [`DEFAULT_MAX_OUTPUT_BYTES`] of output per
    /// command.
    pub fn new(address: impl Into<String>, user: impl Into<String>, key: PrivateKey) -> HostConfig {
        HostConfig {
            address: address.into(),
            port: 22,
            user: user.into(),
            key,
            host_key_policy: HostKeyPolicy::TrustOnFirstUse,
            connect_timeout: Duration::from_secs(15),
            connect_retry: RetryPolicy::default(),
            io_timeout: Duration::from_secs(60),
            idle_timeout: None,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            client_version_suffix: None,
        }
    }

    /// The host as errors and logs name it: `user@address:port`.
    pub fn label(&self) -> String {
        HostLabel(self).to_string()
    }

    /// The SSH identification string this client sends.
    pub fn client_banner(&self) -> String {
        let base = concat!("SSH-2.0-wmco_", env!("CARGO_PKG_VERSION"));
        match &self.client_version_suffix {
            Some(suffix) => {
                let clean: String = suffix.chars().filter(|c| c.is_ascii_graphic()).collect();
                format!("{base} {clean}")
            }
            None => base.to_owned(),
        }
    }
}

struct HostLabel<'a>(&'a HostConfig);

impl fmt::Display for HostLabel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let config = self.0;
        if config.address.contains(':') {
            write!(f, "{}@[{}]:{}", config.user, config.address, config.port)
        } else {
            write!(f, "{}@{}:{}", config.user, config.address, config.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> PrivateKey {
        PrivateKey::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").unwrap()
    }

    #[test]
    fn banner_carries_the_suffix_without_whitespace() {
        let mut config = HostConfig::new("10.0.0.5", "Administrator", key());
        assert_eq!(config.client_banner(), format!("SSH-2.0-wmco_{}", env!("CARGO_PKG_VERSION")));
        config.client_version_suffix = Some("pod a\r\nb".into());
        assert_eq!(config.client_banner(), format!("SSH-2.0-wmco_{} podab", env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn label_brackets_ipv6() {
        let mut config = HostConfig::new("fd00::5", "admin", key());
        config.port = 2222;
        assert_eq!(config.label(), "admin@[fd00::5]:2222");
        config.address = "win1.example".into();
        assert_eq!(config.label(), "admin@win1.example:2222");
    }
}
