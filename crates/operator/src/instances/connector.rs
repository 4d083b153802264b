//! How the controller reaches a host: the [`HostConnector`] seam and its SSH implementation over the
//! `wmco-ssh-transport` [`HostPool`] (trust on first use while the record has no pinned key, pinned afterwards).

use std::sync::Arc;

use wmco_cluster_client::WindowsInstanceExt;
use wmco_cluster_client::types::WindowsInstance;
use wmco_ssh_transport::{HostPool, PrivateKey, RemoteHost};

use super::InstancesError;
use crate::ssh::{SshSettings, host_config};

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
    settings: SshSettings,
}

impl SshConnector {
    /// A connector using `pool`, logging in with `key` on `port` (the `--ssh-port` flag, 22 by default).
    pub fn new(pool: HostPool, key: PrivateKey, port: u16) -> SshConnector {
        SshConnector { pool, key, settings: SshSettings { port, client_version_suffix: None } }
    }

    /// Adds `suffix` (the operator process's identity) to the SSH client version string, so a host's logs tell
    /// two operator processes apart.
    pub fn with_client_version_suffix(mut self, suffix: impl Into<String>) -> SshConnector {
        self.settings.client_version_suffix = Some(suffix.into());
        self
    }
}

impl HostConnector for SshConnector {
    fn connect(&self, instance: &WindowsInstance) -> Result<Arc<dyn RemoteHost>, InstancesError> {
        let config = host_config(instance, &self.key, &self.settings)
            .map_err(|error| InstancesError::Connector { instance: instance.key(), reason: error.to_string() })?;
        let host = self
            .pool
            .host(config)
            .map_err(|source| InstancesError::Connector { instance: instance.key(), reason: source.to_string() })?;
        Ok(host)
    }
}
