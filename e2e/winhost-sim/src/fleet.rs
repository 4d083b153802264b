//! A fleet of simulated hosts in one process: host `i` listens on `127.0.0.(10+i)` (or on the loopback address its
//! request names, such as `127.0.0.1` for a host reached as `localhost`), reports node IP `203.0.113.(10+i)`, is
//! called `winhost-<i>`, and keeps its `C:` drive under `<base>/<name>/C`. A request can set the host's Windows
//! build, kubelet, listening address and the initial state of its Containers feature.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use crate::disk::WinPath;
use crate::host::{ADMIN_AUTHORIZED_KEYS, Host, Identity, Latency};
use crate::ssh::{ServerError, SshServer, generate_key, lock};

/// Why a fleet operation failed.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The host's SSH server could not start.
    #[error("host {name}: {source}")]
    Server {
        /// Host name.
        name: String,
        /// The error.
        source: ServerError,
    },
    /// The host's disk could not be prepared.
    #[error("host {name}: {source}")]
    Disk {
        /// Host name.
        name: String,
        /// The error.
        source: crate::disk::DiskError,
    },
    /// No such host.
    #[error("no host named {0}")]
    UnknownHost(String),
    /// A host with that name exists.
    #[error("a host named {0} already exists")]
    Duplicate(String),
    /// The requested Containers feature state is not one `Get-WindowsOptionalFeature` reports.
    #[error(
        "host {name}: {state:?} is not a feature state (one of {})",
        crate::host::FEATURE_STATES.map(|(known, _)| known).join(", ")
    )]
    FeatureState {
        /// Host name.
        name: String,
        /// The refused state.
        state: String,
    },
    /// The requested listening address is not a loopback address.
    #[error("host {name}: {address} is not a loopback address (the simulator binds 127.0.0.0/8 only)")]
    NotLoopback {
        /// Host name.
        name: String,
        /// The refused address.
        address: Ipv4Addr,
    },
}

/// What to create.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct NewHost {
    /// The host's name in the fleet (default `winhost-<index>`): its key, its `C:` directory, and lower-cased the
    /// Node name the kubelet takes.
    #[serde(default)]
    pub name: Option<String>,
    /// The DNS host name Windows reports (`hostname`, `[System.Net.Dns]::GetHostName()`). Default: `name` in upper
    /// case, as stock images name their hosts (`WIN-3MQ5R0EXAMPLE`, `EC2AMAZ-EXAMPLE`). Give a lower-case name to
    /// model a host an admin renamed so.
    #[serde(default)]
    pub hostname: Option<String>,
    /// An OpenSSH public key line to authorize (none: the host waits for provisioning).
    #[serde(default)]
    pub authorized_key: Option<String>,
    /// Windows build (default 20348).
    #[serde(default)]
    pub build: Option<u32>,
    /// The build's update revision, `UBR` (default: a current one, [`crate::host::current_ubr`]); below 681 a
    /// Windows Server 2022 host lacks KB5012637.
    #[serde(default)]
    pub ubr: Option<u32>,
    /// Which kubelet the host runs: the simulated one (default) or the uploaded `kubelet.exe` under Wine.
    #[serde(default)]
    pub kubelet: crate::wine_kubelet::KubeletModel,
    /// The loopback address the SSH server listens on (default `127.0.0.(10+index)`); `127.0.0.1` makes the host
    /// reachable as `localhost`. Anything outside 127.0.0.0/8 is refused: the simulator binds loopback only.
    #[serde(default)]
    pub address: Option<Ipv4Addr>,
    /// The initial `State` of the host's Containers feature, one of `Enabled` (the default), `Disabled`,
    /// `EnablePending`, `DisablePending` and `DisabledWithPayloadRemoved` (case-insensitive). `Disabled` models a
    /// host on which `Install-WindowsFeature -Name Containers` still has to run and a reboot to follow.
    #[serde(default)]
    pub containers: Option<String>,
    /// The cloud the host runs on, as its metadata service answers (`{"cloud": "aws", "local_hostname": ..,
    /// "tokens_required": ..}`, `{"cloud": "gcp", "hostname": ..}`); none by default.
    #[serde(default)]
    pub instance_metadata: crate::metadata::InstanceMetadata,
    /// Pending-reboot markers the host starts with (`["WindowsUpdate", "ComponentBasedServicing",
    /// "PendingFileRenameOperations"]`); none by default, like a freshly patched host.
    #[serde(default)]
    pub pending_reboot: Vec<crate::pending_reboot::PendingRebootMarker>,
}

/// What tests and people need to reach a host.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HostInfo {
    /// The host's name in the fleet (lower-cased, the Node name its kubelet takes).
    pub name: String,
    /// The DNS host name Windows reports (upper case unless the host was created with a lower-case `hostname`).
    pub hostname: String,
    /// FQDN, as Windows reports it.
    pub fqdn: String,
    /// SSH address.
    pub ssh_address: SocketAddr,
    /// Node IP (default-route address).
    pub node_ip: Ipv4Addr,
    /// Windows build.
    pub build: u32,
    /// Host key (OpenSSH public key line).
    pub host_key: String,
    /// Directory backing `C:\`.
    pub c_drive: PathBuf,
}

/// The hosts of one simulator process.
#[derive(Debug)]
pub struct Fleet {
    base: PathBuf,
    port: u16,
    latency: Latency,
    next_index: u8,
    hosts: BTreeMap<String, Arc<SshServer>>,
    kept_files: Vec<WinPath>,
}

impl Fleet {
    /// An empty fleet keeping disks under `base`, listening on `port`.
    pub fn new(base: PathBuf, port: u16, latency: Latency) -> Fleet {
        Fleet { base, port, latency, next_index: 0, hosts: BTreeMap::new(), kept_files: Vec::new() }
    }

    /// Keeps every earlier version of the file at `path` on every host, those running and those added later (see
    /// [`crate::disk::Disk::keep_versions`]).
    pub fn keep_versions_on_every_host(&mut self, path: &WinPath) {
        if !self.kept_files.contains(path) {
            self.kept_files.push(path.clone());
        }
        for server in self.hosts.values() {
            lock(&server.host).disk.keep_versions(path);
        }
    }

    /// Starts a host.
    ///
    /// # Errors
    /// [`FleetError`] if the name is taken, the disk or the server cannot be set up.
    pub async fn add(&mut self, request: NewHost) -> Result<HostInfo, FleetError> {
        let index = self.next_index;
        self.next_index = self.next_index.wrapping_add(1);
        let name = request.name.unwrap_or_else(|| format!("winhost-{index}"));
        if self.hosts.contains_key(&name) {
            return Err(FleetError::Duplicate(name));
        }
        let containers = match request.containers.as_deref().map(crate::host::feature_state) {
            None => None,
            Some(Some((state, _))) => Some(state),
            Some(None) => {
                return Err(FleetError::FeatureState { name, state: request.containers.unwrap_or_default() });
            }
        };
        let octet = 10u8.saturating_add(index);
        let listen_ip = request.address.unwrap_or(Ipv4Addr::new(127, 0, 0, octet));
        if !listen_ip.is_loopback() {
            return Err(FleetError::NotLoopback { name, address: listen_ip });
        }
        let hostname = request.hostname.unwrap_or_else(|| name.to_ascii_uppercase());
        let identity = Identity {
            // The primary DNS suffix keeps the case it was configured with; the host label keeps its own.
            fqdn: format!("{hostname}.sim.test"),
            hostname,
            build: request.build.unwrap_or(20348),
            ubr: request.ubr.unwrap_or_else(|| crate::host::current_ubr(request.build.unwrap_or(20348))),
            node_ip: Ipv4Addr::new(203, 0, 113, octet),
        };
        let disk_error = |source| FleetError::Disk { name: name.clone(), source };
        let mut host = Host::new(identity, &self.base.join(&name), self.latency).map_err(disk_error)?;
        host.kubelet_model = request.kubelet;
        host.instance_metadata = request.instance_metadata;
        if let Some(state) = containers {
            host.features.insert("Containers".to_owned(), state.to_owned());
        }
        for path in &self.kept_files {
            host.disk.keep_versions(path);
        }
        for marker in &request.pending_reboot {
            host.mark_pending_reboot(*marker).map_err(disk_error)?;
        }
        if let Some(key) = &request.authorized_key {
            let path = WinPath::parse(ADMIN_AUTHORIZED_KEYS).map_err(disk_error)?;
            host.disk.write(&path, format!("{}\r\n", key.trim()).as_bytes()).map_err(disk_error)?;
        }
        let server_error = |source| FleetError::Server { name: name.clone(), source };
        let address = SocketAddr::from((listen_ip, self.port));
        let server =
            SshServer::start(address, host, generate_key().map_err(server_error)?).await.map_err(server_error)?;
        let server = Arc::new(server);
        crate::driver::spawn(Arc::clone(&server));
        self.hosts.insert(name.clone(), server);
        self.info(&name)
    }

    /// Stops and forgets a host (its disk stays).
    ///
    /// # Errors
    /// [`FleetError::UnknownHost`].
    pub fn remove(&mut self, name: &str) -> Result<(), FleetError> {
        self.hosts.remove(name).map(|_| ()).ok_or_else(|| FleetError::UnknownHost(name.to_owned()))
    }

    /// A host's server.
    ///
    /// # Errors
    /// [`FleetError::UnknownHost`].
    pub fn server(&self, name: &str) -> Result<Arc<SshServer>, FleetError> {
        self.hosts.get(name).cloned().ok_or_else(|| FleetError::UnknownHost(name.to_owned()))
    }

    /// A host's connection facts.
    ///
    /// # Errors
    /// [`FleetError::UnknownHost`].
    pub fn info(&self, name: &str) -> Result<HostInfo, FleetError> {
        let server = self.server(name)?;
        let host = lock(&server.host);
        Ok(HostInfo {
            name: name.to_owned(),
            hostname: host.identity.hostname.clone(),
            fqdn: host.identity.fqdn.clone(),
            ssh_address: server.address,
            node_ip: host.identity.node_ip,
            build: host.identity.build,
            host_key: server.host_key(),
            c_drive: host.disk.drive_root().to_path_buf(),
        })
    }

    /// Every host's facts.
    pub fn list(&self) -> Vec<HostInfo> {
        self.hosts.keys().filter_map(|name| self.info(name).ok()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_host_listens_on_the_requested_loopback_address_and_keeps_its_index_identity() {
        let base = tempfile::tempdir().unwrap();
        let mut fleet = Fleet::new(base.path().to_path_buf(), 0, Latency::zero());
        let first = fleet.add(NewHost::default()).await.unwrap();
        let local = fleet.add(NewHost { address: Some(Ipv4Addr::LOCALHOST), ..NewHost::default() }).await.unwrap();
        assert_eq!(first.ssh_address.ip(), std::net::IpAddr::from([127, 0, 0, 10]));
        assert_eq!(local.ssh_address.ip(), std::net::IpAddr::from([127, 0, 0, 1]));
        assert_eq!((local.name.as_str(), local.node_ip), ("winhost-1", Ipv4Addr::new(203, 0, 113, 11)));
        tokio::net::TcpStream::connect(local.ssh_address).await.unwrap();
    }

    #[tokio::test]
    async fn the_containers_feature_starts_in_the_requested_state() {
        let base = tempfile::tempdir().unwrap();
        let mut fleet = Fleet::new(base.path().to_path_buf(), 0, Latency::zero());
        let default = fleet.add(NewHost::default()).await.unwrap();
        let request: NewHost = serde_json::from_str(r#"{"containers": "disabled"}"#).unwrap();
        let disabled = fleet.add(request).await.unwrap();
        let state = |name: &str| lock(&fleet.server(name).unwrap().host).features.get("Containers").cloned();
        assert_eq!(state(&default.name).as_deref(), Some("Enabled"));
        assert_eq!(state(&disabled.name).as_deref(), Some("Disabled"), "the name is spelled as Windows spells it");
        let error = fleet.add(NewHost { containers: Some("Off".into()), ..NewHost::default() }).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "host winhost-2: \"Off\" is not a feature state (one of Disabled, DisablePending, Enabled, EnablePending, \
             DisabledWithPayloadRemoved)"
        );
    }

    #[tokio::test]
    async fn a_non_loopback_address_is_refused_naming_the_host() {
        let base = tempfile::tempdir().unwrap();
        let mut fleet = Fleet::new(base.path().to_path_buf(), 0, Latency::zero());
        let request = NewHost { address: Some(Ipv4Addr::new(192, 0, 2, 1)), ..NewHost::default() };
        let error = fleet.add(request).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "host winhost-0: 192.0.2.1 is not a loopback address (the simulator binds 127.0.0.0/8 only)"
        );
        assert!(fleet.list().is_empty());
    }
}
