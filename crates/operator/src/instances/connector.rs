//! How the controller reaches a host: the [`HostConnector`] seam and its SSH implementation over the
//! `wmco-ssh-transport` [`HostPool`] (trust on first use while the record has no pinned key, pinned afterwards),
//! each host recorded to its command transcript when a [`TranscriptRecorder`] is given (`--record-transcripts`).

use std::sync::Arc;

use wmco_cluster_client::WindowsInstanceExt;
use wmco_cluster_client::types::WindowsInstance;
use wmco_ssh_transport::transcript::TranscriptRecorder;
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
    transcripts: Option<Arc<TranscriptRecorder>>,
}

impl SshConnector {
    /// A connector using `pool`, logging in with `key` under `settings` (port, identity, time limits).
    pub fn new(pool: HostPool, key: PrivateKey, settings: SshSettings) -> SshConnector {
        SshConnector { pool, key, settings, transcripts: None }
    }

    /// The same connector, every host it hands out recorded by `recorder` (one transcript file per host).
    pub fn with_transcripts(self, recorder: Arc<TranscriptRecorder>) -> SshConnector {
        SshConnector { transcripts: Some(recorder), ..self }
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
        Ok(match &self.transcripts {
            Some(recorder) => recorder.wrap(host),
            None => host,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use wmco_ssh_transport::RemoteCommand;
    use wmco_ssh_transport::testing::{FakeHost, Reply};
    use wmco_ssh_transport::transcript::{Operation, read_transcript, transcript_file_name};

    use super::*;

    #[tokio::test]
    async fn with_transcripts_every_host_handed_out_is_recorded() {
        let fake = FakeHost::start().await.unwrap();
        fake.reply("hostname", Reply::ok("WIN-1\r\n"));
        let (key, _) = FakeHost::generate_client_key().unwrap();
        let record: WindowsInstance = serde_json::from_value(serde_json::json!({
            "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
            "metadata": {"name": "byoh-127-0-0-1", "namespace": "wmco"},
            "spec": {"address": "127.0.0.1", "username": "Administrator", "origin": "Byoh"}
        }))
        .unwrap();
        let settings = SshSettings { port: fake.port(), io_timeout: Duration::from_secs(10), ..SshSettings::default() };
        let directory = tempfile::tempdir().unwrap();
        let recorder = Arc::new(TranscriptRecorder::new(directory.path()));
        let pool = HostPool::new(2, Duration::from_secs(10));
        let connector = SshConnector::new(pool, key, settings).with_transcripts(recorder);
        for _ in 0..2 {
            let host = connector.connect(&record).unwrap();
            host.run(&RemoteCommand::new("hostname", Duration::from_secs(10))).await.unwrap();
        }
        let host = connector.connect(&record).unwrap();
        assert_eq!(host.label(), format!("Administrator@127.0.0.1:{}", fake.port()));
        let entries = read_transcript(&directory.path().join(transcript_file_name(host.label()))).unwrap();
        assert_eq!(entries.len(), 2);
        assert!(matches!(&entries[0].operation, Operation::Run { command, .. } if command == "hostname"));
    }
}
