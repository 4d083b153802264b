//! One host's SSH server (russh): public-key authentication against `administrators_authorized_keys` on the
//! simulated disk (read at each authentication, refused when its ACL grants anyone but SYSTEM and Administrators,
//! as sshd's StrictModes does), exec requests run through cmd.exe, the `sftp` subsystem, and injected faults
//! (dropped or refused connections, hanging or failing commands, host-key change, SFTP throttling, reboot, and the
//! targeted rules of [`crate::faults`]). A reboot kills every connection opened before it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use russh::keys::{Algorithm, PrivateKey};
use russh::server::{Auth, Msg, Session, VerifiedPublicKey};
use russh::{Channel, ChannelId, SshId};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::disk::WinPath;
use crate::faults::{DISK_FULL_MESSAGE, FaultAction, FaultRule, Request, hostile_output};
use crate::host::{ADMIN_AUTHORIZED_KEYS, Host, Output};
use crate::sftp::{SftpSession, Throttle};

/// Faults injected through the control interface.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Faults {
    /// New exec/SFTP requests drop the connection.
    #[serde(default)]
    pub drop_connections: bool,
    /// New TCP connections are closed at once.
    #[serde(default)]
    pub refuse_connections: bool,
    /// Exec requests are accepted and never answered.
    #[serde(default)]
    pub hang_commands: bool,
    /// The next N exec requests fail (exit 1, a message on stderr) without running.
    #[serde(default)]
    pub fail_next: u32,
    /// The host is rebooting (connections refused).
    #[serde(default)]
    pub rebooting: bool,
    /// Targeted faults ([`crate::faults`]), tried in order.
    #[serde(default)]
    pub rules: Vec<FaultRule>,
    /// How many requests a rule has answered so far (read-only for clients: a test sees its fault was hit).
    #[serde(default)]
    pub rule_hits: u64,
}

impl Faults {
    /// The action of the first rule matching `request` ([`FaultRule::take`]), counted in [`Faults::rule_hits`].
    pub fn take_rule(&mut self, request: &Request<'_>) -> Option<FaultAction> {
        let action = FaultRule::take(&mut self.rules, request);
        if action.is_some() {
            self.rule_hits += 1;
        }
        action
    }
}

/// Locks a mutex, recovering from poisoning (state stays usable after a panicking test thread).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Binding the listener failed.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// Key generation failed.
    #[error("cannot generate a host key: {0}")]
    Key(String),
}

/// A running SSH server of one host.
#[derive(Debug)]
pub struct SshServer {
    /// The listening address.
    pub address: SocketAddr,
    /// The host's state.
    pub host: Arc<Mutex<Host>>,
    /// Injected faults.
    pub faults: Arc<Mutex<Faults>>,
    /// SFTP bandwidth limit (bytes per second, 0 = none).
    pub throttle: Throttle,
    config: Arc<Mutex<Arc<russh::server::Config>>>,
    task: JoinHandle<()>,
}

impl Drop for SshServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn server_config(key: PrivateKey) -> Arc<russh::server::Config> {
    Arc::new(russh::server::Config {
        server_id: SshId::Standard("SSH-2.0-OpenSSH_for_Windows_8.1".into()),
        keys: vec![key],
        auth_rejection_time: Duration::from_millis(10),
        auth_rejection_time_initial: Some(Duration::ZERO),
        inactivity_timeout: None,
        nodelay: true,
        ..Default::default()
    })
}

/// A new Ed25519 host key.
///
/// # Errors
/// [`ServerError::Key`] if the generator fails.
pub fn generate_key() -> Result<PrivateKey, ServerError> {
    PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).map_err(|error| ServerError::Key(error.to_string()))
}

impl SshServer {
    /// Listens on `address` for `host` with `key`.
    ///
    /// # Errors
    /// [`ServerError::Bind`] if the address is taken.
    pub async fn start(address: SocketAddr, host: Host, key: PrivateKey) -> Result<SshServer, ServerError> {
        let listener = TcpListener::bind(address).await.map_err(|source| ServerError::Bind { address, source })?;
        let address = listener.local_addr().map_err(|source| ServerError::Bind { address, source })?;
        let host = Arc::new(Mutex::new(host));
        let faults = Arc::new(Mutex::new(Faults::default()));
        let throttle: Throttle = Arc::new(Mutex::new(0));
        let config = Arc::new(Mutex::new(server_config(key)));
        let shared = Shared {
            host: Arc::clone(&host),
            faults: Arc::clone(&faults),
            throttle: Arc::clone(&throttle),
            config: Arc::clone(&config),
        };
        let task = tokio::spawn(accept(listener, shared));
        Ok(SshServer { address, host, faults, throttle, config, task })
    }

    /// The host key's public half in OpenSSH format.
    pub fn host_key(&self) -> String {
        let config = lock(&self.config);
        config.keys.first().and_then(|key| key.public_key().to_openssh().ok()).unwrap_or_default()
    }

    /// Replaces the host key (new connections see the new one).
    ///
    /// # Errors
    /// [`ServerError::Key`] if generation fails.
    pub fn change_host_key(&self) -> Result<String, ServerError> {
        *lock(&self.config) = server_config(generate_key()?);
        Ok(self.host_key())
    }
}

/// What every connection of a host shares.
#[derive(Clone)]
struct Shared {
    host: Arc<Mutex<Host>>,
    faults: Arc<Mutex<Faults>>,
    throttle: Throttle,
    config: Arc<Mutex<Arc<russh::server::Config>>>,
}

async fn accept(listener: TcpListener, shared: Shared) {
    let mut connections = tokio::task::JoinSet::new();
    while let Ok((socket, _)) = listener.accept().await {
        let refuse = {
            let faults = lock(&shared.faults);
            faults.refuse_connections || faults.rebooting
        };
        if refuse {
            drop(socket);
            continue;
        }
        let config = Arc::clone(&lock(&shared.config));
        let handler = Connection {
            boot: lock(&shared.host).boots,
            shared: shared.clone(),
            channels: std::collections::HashMap::new(),
            shell: crate::host::ExecShell::Cmd,
        };
        connections.spawn(async move {
            if let Ok(session) = russh::server::run_stream(config, socket, handler).await {
                let _ = session.await;
            }
        });
        while connections.try_join_next().is_some() {}
    }
}

/// One client connection.
struct Connection {
    /// The host's boot count when the connection was accepted.
    boot: u64,
    shared: Shared,
    channels: std::collections::HashMap<ChannelId, Channel<Msg>>,
    /// The default shell as configured when the client authenticated.
    shell: crate::host::ExecShell,
}

/// Why a connection ends.
#[derive(Debug, thiserror::Error)]
enum ConnectionError {
    #[error("SSH: {0}")]
    Russh(#[from] russh::Error),
    #[error("fault injected: connection dropped")]
    Dropped,
}

/// `TYPE BASE64` of a key line.
fn key_identity(line: &str) -> String {
    line.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

impl Connection {
    /// Whether the connection is dead: dropped by a fault, or opened before the host's latest reboot.
    fn is_dead(&self) -> bool {
        let dropped = {
            let faults = lock(&self.shared.faults);
            faults.drop_connections || faults.rebooting
        };
        dropped || lock(&self.shared.host).boots != self.boot
    }

    fn authorized(&self, offered: &str) -> bool {
        let host = lock(&self.shared.host);
        let Ok(path) = WinPath::parse(ADMIN_AUTHORIZED_KEYS) else { return false };
        let Ok(bytes) = host.disk.read(&path) else { return false };
        // StrictModes: only SYSTEM and Administrators may hold any access (windows-commands.md §5).
        if !host.disk.dacl(&path).is_some_and(|dacl| dacl.only_system_and_administrators()) {
            return false;
        }
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|line| !line.trim_start().starts_with('#'))
            .any(|line| key_identity(line) == offered)
    }
}

impl russh::server::Handler for Connection {
    type Error = ConnectionError;

    async fn auth_publickey_offered(
        &mut self,
        _user: &str,
        offer: russh::server::PublicKeyOffer<'_>,
    ) -> Result<Auth, ConnectionError> {
        let offered = offer.public_key.to_openssh().map(|line| key_identity(&line)).unwrap_or_default();
        Ok(if self.authorized(&offered) { Auth::Accept } else { Auth::reject() })
    }

    async fn auth_publickey(&mut self, _user: &str, key: VerifiedPublicKey<'_>) -> Result<Auth, ConnectionError> {
        let offered = key.public_key.to_openssh().map(|line| key_identity(&line)).unwrap_or_default();
        Ok(if self.authorized(&offered) { Auth::Accept } else { Auth::reject() })
    }

    async fn auth_succeeded(&mut self, _session: &mut Session) -> Result<(), ConnectionError> {
        self.shell = lock(&self.shared.host).default_shell();
        Ok(())
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: russh::server::ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), ConnectionError> {
        self.channels.insert(channel.id(), channel);
        reply.accept().await;
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), ConnectionError> {
        let line = String::from_utf8_lossy(data).into_owned();
        let client = String::from_utf8_lossy(session.remote_sshid()).trim_end().to_owned();
        self.channels.remove(&channel);
        if self.is_dead() {
            return Err(ConnectionError::Dropped);
        }
        let (hang, fail, rule) = {
            let mut faults = lock(&self.shared.faults);
            let fail = faults.fail_next > 0;
            if fail {
                faults.fail_next -= 1;
            }
            let rule = faults.take_rule(&Request::Command(&line));
            (faults.hang_commands, fail, rule)
        };
        match rule {
            Some(FaultAction::Drop) => return Err(ConnectionError::Dropped),
            Some(FaultAction::Reboot) => {
                tokio::spawn(reboot_host(self.shared.clone()));
                return Err(ConnectionError::Dropped);
            }
            _ => {}
        }
        session.channel_success(channel)?;
        if hang || rule == Some(FaultAction::Hang) {
            return Ok(());
        }
        let handle = session.handle();
        if let Some(action) = rule {
            tokio::spawn(answer_with_fault(handle, channel, action));
            return Ok(());
        }
        let shared = self.shared.clone();
        let shell = self.shell;
        tokio::spawn(async move {
            let output = if fail {
                Output::new("", "winhost-sim: injected command failure\r\n", 1)
            } else {
                let latency = lock(&shared.host).latency.command;
                tokio::time::sleep(latency).await;
                let host = Arc::clone(&shared.host);
                let client = client.clone();
                let line = line.clone();
                tokio::task::spawn_blocking(move || lock(&host).exec_in(shell, &client, &line))
                    .await
                    .unwrap_or_else(|_| Output::new("", "winhost-sim: the command panicked\r\n", 1))
            };
            let reboot = std::mem::take(&mut lock(&shared.host).reboot_requested);
            if !output.stdout.is_empty() {
                let _ = handle.data(channel, output.stdout.into_bytes()).await;
            }
            if !output.stderr.is_empty() {
                let _ = handle.extended_data(channel, 1, output.stderr.into_bytes()).await;
            }
            if reboot {
                let _ = handle
                    .disconnect(russh::Disconnect::ByApplication, "the system is restarting".into(), "en-US".into())
                    .await;
                reboot_host(shared).await;
                return;
            }
            let _ = handle.exit_status_request(channel, output.code).await;
            let _ = handle.eof(channel).await;
            let _ = handle.close(channel).await;
        });
        Ok(())
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        session: &mut Session,
    ) -> Result<(), ConnectionError> {
        if self.is_dead() {
            return Err(ConnectionError::Dropped);
        }
        match (name, self.channels.remove(&channel)) {
            ("sftp", Some(stream)) => {
                session.channel_success(channel)?;
                let shared = self.shared.clone();
                let reboot = Box::new(move || drop(tokio::spawn(reboot_host(shared.clone()))));
                let sftp = SftpSession::new(Arc::clone(&self.shared.host), Arc::clone(&self.shared.throttle))
                    .with_faults(Arc::clone(&self.shared.faults), self.boot, session.handle(), reboot);
                tokio::spawn(russh_sftp::server::run(stream.into_stream(), sftp));
            }
            _ => session.channel_failure(channel)?,
        }
        Ok(())
    }
}

/// Answers a command with what a targeted fault says instead of running it.
async fn answer_with_fault(handle: russh::server::Handle, channel: ChannelId, action: FaultAction) {
    let (stdout, stderr, code) = match (&action, hostile_output(&action)) {
        (_, Some(stdout)) => (stdout, Vec::new(), 0),
        (FaultAction::DiskFull, None) => (Vec::new(), format!("{DISK_FULL_MESSAGE}\r\n").into_bytes(), 1),
        _ => (Vec::new(), b"winhost-sim: injected command failure\r\n".to_vec(), 1),
    };
    for chunk in stdout.chunks(256 * 1024) {
        if handle.data(channel, chunk.to_vec()).await.is_err() {
            return;
        }
    }
    if !stderr.is_empty() {
        let _ = handle.extended_data(channel, 1, stderr).await;
    }
    let _ = handle.exit_status_request(channel, code).await;
    let _ = handle.eof(channel).await;
    let _ = handle.close(channel).await;
}

/// Reboots: every open connection dies, new ones are refused for a moment, then the host comes back with its
/// automatic services started.
async fn reboot_host(shared: Shared) {
    let began = std::time::SystemTime::now();
    lock(&shared.host).boots += 1;
    lock(&shared.faults).rebooting = true;
    let pause = {
        let host = lock(&shared.host);
        host.reboot_pause.unwrap_or(host.latency.service_transition * 2)
    };
    tokio::time::sleep(pause).await;
    lock(&shared.host).reboot();
    lock(&shared.faults).rebooting = false;
    let window = crate::host::RebootWindow { began, back: std::time::SystemTime::now() };
    lock(&shared.host).reboot_windows.push(window);
}

/// Reboots a host through its server (the control interface's `reboot`).
pub async fn reboot(server: &SshServer) {
    let shared = Shared {
        host: Arc::clone(&server.host),
        faults: Arc::clone(&server.faults),
        throttle: Arc::clone(&server.throttle),
        config: Arc::clone(&server.config),
    };
    reboot_host(shared).await;
}

#[cfg(test)]
mod tests {
    use crate::acl::{ADMINISTRATORS, Ace, Dacl, FULL_CONTROL, READ_EXECUTE, SYSTEM, USERS};

    #[test]
    fn strict_modes_accept_only_system_and_administrators() {
        let strict = Dacl {
            protected: true,
            entries: vec![
                Ace::allow(ADMINISTRATORS, FULL_CONTROL, false, false),
                Ace::allow(SYSTEM, FULL_CONTROL, false, false),
            ],
        };
        assert!(strict.only_system_and_administrators());
        let mut loose = strict.clone();
        loose.entries.push(Ace { inherited: true, ..Ace::allow(USERS, READ_EXECUTE, false, false) });
        assert!(!loose.only_system_and_administrators());
        let mut inherit_only = strict;
        inherit_only.entries.push(Ace { inherit_only: true, ..Ace::allow(USERS, READ_EXECUTE, true, true) });
        assert!(inherit_only.only_system_and_administrators(), "an inherit-only entry grants nothing here");
    }
}
