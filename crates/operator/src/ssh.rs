//! How the operator reaches a record's host over SSH: [`host_config`], the one translation of a `WindowsInstance`
//! into a `wmco-ssh-transport` [`HostConfig`], shared by the instances controller's connector and the key
//! rotation's key check (trust on first use while the record has no pinned key, pinned afterwards).

use std::time::Duration;

use wmco_cluster_client::WindowsInstanceExt;
use wmco_cluster_client::types::WindowsInstance;
use wmco_ssh_transport::{HostConfig, HostKey, HostKeyParseError, HostKeyPolicy, PrivateKey};

/// The operator's SSH settings for every host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshSettings {
    /// The port sshd listens on (the `--ssh-port` flag, 22 by default).
    pub port: u16,
    /// Added to the SSH client version string (the operator process's identity), so a host's logs tell two
    /// operator processes apart.
    pub client_version_suffix: Option<String>,
    /// How long one remote command may run (`--ssh-command-timeout`, 120 s by default).
    pub command_timeout: Duration,
    /// How long one blocking SSH step may take: a handshake, one SFTP write (`--ssh-io-timeout`, 60 s by default).
    pub io_timeout: Duration,
}

impl Default for SshSettings {
    /// Port 22, no identity, 120 s per command, 60 s per SSH step.
    fn default() -> Self {
        SshSettings {
            port: 22,
            client_version_suffix: None,
            command_timeout: Duration::from_secs(120),
            io_timeout: Duration::from_secs(60),
        }
    }
}

/// The record's pinned host key cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("the pinned host key is unreadable: {source}")]
pub struct UnreadablePinnedKey {
    /// Why the OpenSSH line was refused.
    #[source]
    pub source: HostKeyParseError,
}

/// The SSH configuration for `instance`: its address and user, logging in with `key` under `settings`, and the host
/// key pinned in its status if one is recorded.
///
/// # Errors
/// [`UnreadablePinnedKey`] when the recorded host key is not an OpenSSH public key line.
///
/// ```
/// use wmco_operator::ssh::{SshSettings, host_config};
/// use wmco_ssh_transport::{HostKeyPolicy, PrivateKey};
/// # fn example(key: PrivateKey) -> Result<(), Box<dyn std::error::Error>> {
/// let record: wmco_cluster_client::types::WindowsInstance = serde_json::from_value(serde_json::json!({
///     "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
///     "metadata": {"name": "byoh-10-0-0-5", "namespace": "wmco"},
///     "spec": {"address": "10.0.0.5", "username": "admin", "origin": "Byoh"}
/// }))?;
/// let settings = SshSettings { port: 2222, io_timeout: std::time::Duration::from_secs(20), ..SshSettings::default() };
/// let config = host_config(&record, &key, &settings)?;
/// assert_eq!((config.address.as_str(), config.port, config.user.as_str()), ("10.0.0.5", 2222, "admin"));
/// assert_eq!(config.io_timeout, std::time::Duration::from_secs(20));
/// # Ok(())
/// # }
/// ```
pub fn host_config(
    instance: &WindowsInstance,
    key: &PrivateKey,
    settings: &SshSettings,
) -> Result<HostConfig, UnreadablePinnedKey> {
    let mut config = HostConfig::new(&instance.spec.address, &instance.spec.username, key.clone());
    config.port = settings.port;
    config.io_timeout = settings.io_timeout;
    config.client_version_suffix.clone_from(&settings.client_version_suffix);
    if let Some(line) = instance.pinned_host_key() {
        let pinned = HostKey::from_openssh(line).map_err(|source| UnreadablePinnedKey { source })?;
        config.host_key_policy = HostKeyPolicy::Pinned(pinned);
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use wmco_cluster_client::fake::objects;

    use super::*;

    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n";
    const HOST_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb0IkHe+vJ0sFwTGc7P0nK1Ib2qD2oZNq3KpJ+Iu5Hh";

    fn record(pinned: Option<&str>) -> WindowsInstance {
        let record = objects::record("byoh-10-0-0-5").byoh("10.0.0.5").status(objects::status());
        match pinned {
            Some(key) => record.pinned_host_key(key).build(),
            None => record.build(),
        }
    }

    #[test]
    fn a_record_without_a_pinned_key_trusts_on_first_use_and_one_with_a_key_pins_it() {
        let key = PrivateKey::from_pem(KEY).unwrap();
        let settings =
            SshSettings { port: 2222, client_version_suffix: Some("wmco-0".into()), ..SshSettings::default() };
        let first = host_config(&record(None), &key, &settings).unwrap();
        assert_eq!((first.address.as_str(), first.user.as_str(), first.port), ("10.0.0.5", "admin", 2222));
        assert_eq!(first.client_version_suffix.as_deref(), Some("wmco-0"));
        assert!(!matches!(first.host_key_policy, HostKeyPolicy::Pinned(_)));
        let pinned = host_config(&record(Some(HOST_KEY)), &key, &settings).unwrap();
        assert!(matches!(&pinned.host_key_policy, HostKeyPolicy::Pinned(pinned) if pinned.to_openssh() == HOST_KEY));
    }

    #[test]
    fn an_unreadable_pinned_key_is_named_as_such() {
        let key = PrivateKey::from_pem(KEY).unwrap();
        let error = host_config(&record(Some("ssh-ed25519")), &key, &SshSettings::default()).unwrap_err();
        assert!(error.to_string().starts_with("the pinned host key is unreadable: "), "{error}");
    }
}
