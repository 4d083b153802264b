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
/// private key under the operator's [`SshSettings`].
pub struct SshConnector {
    pool: HostPool,
    key: PrivateKey,
    settings: SshSettings,
}

impl SshConnector {
    /// A connector using `pool`, logging in with `key` under `settings` (port, identity, time limits).
    pub fn new(pool: HostPool, key: PrivateKey, settings: SshSettings) -> SshConnector {
        SshConnector { pool, key, settings }
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
