//! The key check on a host ([`KeyChecker`], over SSH in production: [`SshKeyChecker`]): whether the operator's
//! current key logs in to a BYOH host, before its Node gets the new `pub-key-hash`.

use async_trait::async_trait;
use wmco_cluster_client::types::WindowsInstance;
use wmco_ssh_transport::{PrivateKey, SshHost, TransportError};

use crate::ssh::{SshSettings, host_config};

/// Why the new key could not be confirmed on a host.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyCheckFailure {
    /// The host refused the key: the admin has not added it to the host's authorized keys yet.
    #[error("the host refused the key: {reason}")]
    NotAuthorized {
        /// What the SSH library said.
        reason: String,
    },
    /// Anything else (unreachable, timed out, host key mismatch): the key's status is unknown.
    #[error("{reason}")]
    Failed {
        /// The transport's error.
        reason: String,
    },
}

/// Logs in to a record's host with a given key; nothing else.
#[async_trait]
pub trait KeyChecker: Send + Sync {
    /// Whether `key` logs in to `instance`'s host as its SSH user (honouring the host key pinned in the record).
    ///
    /// # Errors
    /// [`KeyCheckFailure::NotAuthorized`] when the host refuses the key, [`KeyCheckFailure::Failed`] otherwise.
    async fn check(&self, instance: &WindowsInstance, key: &PrivateKey) -> Result<(), KeyCheckFailure>;
}

/// [`KeyChecker`] over SSH: a fresh, unpooled connection per check (a pooled handle may still hold the old key),
/// closed at once.
#[derive(Clone, Debug)]
pub struct SshKeyChecker {
    settings: SshSettings,
}

impl SshKeyChecker {
    /// Checks under `settings` (the `--ssh-port` flag, the process identity, the time limits).
    pub fn new(settings: SshSettings) -> Self {
        SshKeyChecker { settings }
    }
}

#[async_trait]
impl KeyChecker for SshKeyChecker {
    async fn check(&self, instance: &WindowsInstance, key: &PrivateKey) -> Result<(), KeyCheckFailure> {
        let config = host_config(instance, key, &self.settings)
            .map_err(|error| KeyCheckFailure::Failed { reason: error.to_string() })?;
        let host = SshHost::new(config).map_err(classify)?;
        host.connect().await.map_err(classify)?;
        if let Err(error) = host.disconnect().await {
            tracing::debug!(host = %host_label(instance), error = %error, "closing the key check's connection");
        }
        Ok(())
    }
}

fn classify(error: TransportError) -> KeyCheckFailure {
    match error {
        TransportError::Authentication { reason, .. } => KeyCheckFailure::NotAuthorized { reason },
        other => KeyCheckFailure::Failed { reason: other.to_string() },
    }
}

fn host_label(instance: &WindowsInstance) -> String {
    format!("{}@{}", instance.spec.username, instance.spec.address)
}
