//! How the controller reaches a host: the [`HostConnector`] seam and its SSH implementation over the
//! `wmco-ssh-transport` [`HostPool`] (trust on first use while the record has no pinned key, pinned afterwards).

use std::sync::Arc;

use wmco_cluster_client::types::WindowsInstance;
use wmco_ssh_transport::{HostConfig, HostKey, HostKeyPolicy, HostPool, PrivateKey, RemoteHost};

use super::InstancesError;

/// Opens the transport to the host of one record.
pub trait HostConnector: Send + Sync {
    /// The transport to `instance`'s host, honouring the key pinned in its status.
    ///
    /// # Errors
    /// [`InstancesError::Connector`] when the record cannot be turned into a connection (an unreadable pinned key).
    fn connect(&self, instance: &WindowsInstance) -> Result<Arc<dyn RemoteHost>, InstancesError>;
}

/// [`HostConnector`] over SSH: one pooled [`wmco_ssh_transport::SshHost`] per host, logging in with the operator's
/// private key on `port`.
pub struct SshConnector {
    pool: HostPool,
    key: PrivateKey,
    port: u16,
    client_version_suffix: Option<String>,
}

impl SshConnector {
    /// A connector using `pool`, logging in with `key` on `port` (the `--ssh-port` flag, 22 by default).
    pub fn new(pool: HostPool, key: PrivateKey, port: u16) -> SshConnector {
        SshConnector { pool, key, port, client_version_suffix: None }
    }

    /// Adds `suffix` (the operator process's identity) to the SSH client version string, so a host's logs tell
    /// two operator processes apart.
    pub fn with_client_version_suffix(mut self, suffix: impl Into<String>) -> SshConnector {
        self.client_version_suffix = Some(suffix.into());
        self
    }

    /// The SSH configuration for `instance`: its address and user, and the pinned key if one is recorded.
    fn host_config(&self, instance: &WindowsInstance) -> Result<HostConfig, InstancesError> {
        let mut config = HostConfig::new(&instance.spec.address, &instance.spec.username, self.key.clone());
        config.port = self.port;
        config.client_version_suffix.clone_from(&self.client_version_suffix);
        let pinned = instance.status.as_ref().and_then(|status| status.pinned_host_key.as_deref());
        if let Some(line) = pinned {
            let key = HostKey::from_openssh(line).map_err(|source| InstancesError::Connector {
                instance: instance_label(instance),
                reason: format!("the pinned host key is unreadable: {source}"),
            })?;
            config.host_key_policy = HostKeyPolicy::Pinned(key);
        }
        Ok(config)
    }
}

impl HostConnector for SshConnector {
    fn connect(&self, instance: &WindowsInstance) -> Result<Arc<dyn RemoteHost>, InstancesError> {
        let config = self.host_config(instance)?;
        let host = self.pool.host(config).map_err(|source| InstancesError::Connector {
            instance: instance_label(instance),
            reason: source.to_string(),
        })?;
        Ok(host)
    }
}

/// `namespace/name` of a record.
pub(crate) fn instance_label(instance: &WindowsInstance) -> String {
    format!(
        "{}/{}",
        instance.metadata.namespace.as_deref().unwrap_or_default(),
        instance.metadata.name.as_deref().unwrap_or_default()
    )
}
