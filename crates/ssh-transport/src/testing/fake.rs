//! [`FakeHost`]: an in-process SSH server (russh) on 127.0.0.1 for flow tests without processes. It answers exec
//! requests from a script, records every command line, serves an in-memory SFTP file system (with Win32-OpenSSH's
//! rename that refuses to overwrite), and injects faults: dropped connections, hanging commands, a replaced host key.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::keys::{Algorithm, PrivateKey as RusshPrivateKey};
use russh::server::{Auth, ChannelOpenHandle, Msg, Session, VerifiedPublicKey};
use russh::{Channel, ChannelId, SshId};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::fake_sftp::FakeSftp;
use super::state::{FakeState, Fault, Reply, Responder, SharedState, lock};
use crate::config::HostConfig;
use crate::host_key::{HostKey, HostKeyPolicy};
use crate::key::PrivateKey;
use crate::retry::RetryPolicy;

/// An in-process SSH server on 127.0.0.1; stops when dropped.
///
/// ```
/// use std::time::Duration;
/// use wmco_ssh_transport::testing::{FakeHost, Reply};
/// use wmco_ssh_transport::{PrivateKey, RemoteCommand, RemoteHost, SshHost};
///
/// # let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
/// # runtime.block_on(async {
/// let fake = FakeHost::start().await.unwrap();
/// fake.reply("hostname", Reply::ok("WIN-NODE-1\r\n"));
/// let (key, _public_line) = FakeHost::generate_client_key().unwrap();
/// let host = SshHost::new(fake.host_config(key)).unwrap();
/// let output = host.run(&RemoteCommand::new("hostname", Duration::from_secs(5))).await.unwrap();
/// assert_eq!(output.stdout, b"WIN-NODE-1\r\n");
/// assert_eq!(fake.commands(), ["hostname"]);
/// # });
/// ```
pub struct FakeHost {
    port: u16,
    state: SharedState,
    accept_loop: JoinHandle<()>,
}

impl fmt::Debug for FakeHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeHost").field("port", &self.port).finish_non_exhaustive()
    }
}

impl Drop for FakeHost {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

impl FakeHost {
    /// Starts a fake host with a new Ed25519 host key on a free port of 127.0.0.1.
    pub async fn start() -> std::io::Result<FakeHost> {
        let (config, host_key) = server_config()?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(Mutex::new(FakeState::new(config, host_key)));
        let accept_loop = tokio::spawn(accept(listener, Arc::clone(&state)));
        Ok(FakeHost { port, state, accept_loop })
    }

    /// A new Ed25519 client key (OpenSSH encoding) and its `authorized_keys` line. The fake accepts any key
    /// unless [`FakeHost::authorize_only`] is used.
    pub fn generate_client_key() -> std::io::Result<(PrivateKey, String)> {
        let key = RusshPrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).map_err(std::io::Error::other)?;
        let pem = key.to_openssh(russh::keys::ssh_key::LineEnding::LF).map_err(std::io::Error::other)?;
        let public_line = key.public_key().to_openssh().map_err(std::io::Error::other)?;
        let private_key = PrivateKey::from_pem(&pem).map_err(std::io::Error::other)?;
        Ok((private_key, public_line))
    }

    /// The port the host listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The host key presented now.
    pub fn host_key(&self) -> HostKey {
        lock(&self.state).host_key.clone()
    }

    /// A config for this host: 127.0.0.1, its port, user `Administrator`, its host key pinned, short timeouts and
    /// no connection retries.
    pub fn host_config(&self, key: PrivateKey) -> HostConfig {
        let mut config = HostConfig::new("127.0.0.1", "Administrator", key);
        config.port = self.port;
        config.host_key_policy = HostKeyPolicy::Pinned(self.host_key());
        config.connect_timeout = Duration::from_secs(5);
        config.connect_retry = RetryPolicy::never();
        config.io_timeout = Duration::from_secs(10);
        config
    }

    /// Answers the exact command line `line` with `reply`.
    pub fn reply(&self, line: &str, reply: Reply) {
        lock(&self.state).exact.insert(line.to_owned(), reply);
    }

    /// Answers every command line starting with `prefix` (when no exact reply matches) with `reply`; the first
    /// matching prefix wins.
    pub fn reply_to_prefix(&self, prefix: &str, reply: Reply) {
        lock(&self.state).prefixes.push((prefix.to_owned(), reply));
    }

    /// Computes replies with `responder` first (it sees the files, so it can answer e.g. hash commands).
    pub fn respond_with(&self, responder: Responder) {
        lock(&self.state).responder = Some(responder);
    }

    /// Every command line received, in order.
    pub fn commands(&self) -> Vec<String> {
        lock(&self.state).commands.clone()
    }

    /// The SSH identification strings clients sent.
    pub fn client_ids(&self) -> Vec<String> {
        lock(&self.state).client_ids.clone()
    }

    /// Injects `fault` into every following request; `None` heals the host.
    pub fn set_fault(&self, fault: Option<Fault>) {
        lock(&self.state).fault = fault;
    }

    /// Presents a new host key to every following connection (a reinstalled host, or a machine in the middle).
    pub fn replace_host_key(&self) -> std::io::Result<HostKey> {
        let (config, host_key) = server_config()?;
        let mut state = lock(&self.state);
        state.config = config;
        state.host_key = host_key.clone();
        Ok(host_key)
    }

    /// Accepts only this public key (an `authorized_keys` line) from now on.
    pub fn authorize_only(&self, public_line: &str) {
        lock(&self.state).authorized_key = Some(key_identity(public_line));
    }

    /// The content of a file in the SFTP file system.
    pub fn file(&self, path: &str) -> Option<Vec<u8>> {
        lock(&self.state).files.get(path).cloned()
    }

    /// Every file path in the SFTP file system.
    pub fn file_paths(&self) -> Vec<String> {
        lock(&self.state).files.keys().cloned().collect()
    }

    /// Puts a file into the SFTP file system (its directories are created).
    pub fn put_file(&self, path: &str, content: impl Into<Vec<u8>>) {
        let mut state = lock(&self.state);
        let mut parent = path;
        while let Some((head, _)) = parent.rsplit_once('/') {
            if !head.is_empty() && !head.ends_with(':') {
                state.directories.insert(head.to_owned());
            }
            parent = head;
        }
        state.files.insert(path.to_owned(), content.into());
    }

    /// Whether a directory exists in the SFTP file system.
    pub fn has_directory(&self, path: &str) -> bool {
        lock(&self.state).directories.contains(path)
    }
}

/// `TYPE BASE64` of a key line, without its comment.
fn key_identity(line: &str) -> String {
    line.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

fn server_config() -> std::io::Result<(Arc<russh::server::Config>, HostKey)> {
    let key = RusshPrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).map_err(std::io::Error::other)?;
    let blob = key.public_key().to_bytes().map_err(std::io::Error::other)?;
    let host_key = HostKey::from_blob(blob).map_err(std::io::Error::other)?;
    let config = russh::server::Config {
        server_id: SshId::Standard("SSH-2.0-wmco_fake_host".into()),
        keys: vec![key],
        auth_rejection_time: Duration::from_millis(10),
        auth_rejection_time_initial: Some(Duration::ZERO),
        inactivity_timeout: None,
        nodelay: true,
        ..Default::default()
    };
    Ok((Arc::new(config), host_key))
}

async fn accept(listener: TcpListener, state: SharedState) {
    let mut connections = tokio::task::JoinSet::new();
    while let Ok((socket, _)) = listener.accept().await {
        let config = Arc::clone(&lock(&state).config);
        let handler =
            Connection { state: Arc::clone(&state), channels: HashMap::new(), exec_channels: BTreeSet::new() };
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
    state: SharedState,
    /// Session channels not yet used for a command or a subsystem.
    channels: HashMap<ChannelId, Channel<Msg>>,
    /// Channels running a command, closed when the client sends EOF.
    exec_channels: BTreeSet<ChannelId>,
}

/// Why the fake ends a connection.
#[derive(Debug, thiserror::Error)]
enum FakeError {
    #[error("SSH: {0}")]
    Russh(#[from] russh::Error),
    #[error("fault injected: connection dropped")]
    Dropped,
}

impl Connection {
    fn fault(&self) -> Option<Fault> {
        lock(&self.state).fault
    }

    fn answer(&self, line: &str) -> Reply {
        let state = lock(&self.state);
        if let Some(reply) = state.responder.as_ref().and_then(|responder| responder(line, &state.files)) {
            return reply;
        }
        if let Some(reply) = state.exact.get(line) {
            return reply.clone();
        }
        if let Some((_, reply)) = state.prefixes.iter().find(|(prefix, _)| line.starts_with(prefix.as_str())) {
            return reply.clone();
        }
        Reply::fail(127, format!("fake host: no reply scripted for `{line}`\n"))
    }
}

impl russh::server::Handler for Connection {
    type Error = FakeError;

    async fn auth_publickey(&mut self, _user: &str, key: VerifiedPublicKey<'_>) -> Result<Auth, FakeError> {
        let authorized = lock(&self.state).authorized_key.clone();
        let offered = key.public_key.to_openssh().map(|line| key_identity(&line)).unwrap_or_default();
        Ok(match authorized {
            Some(only) if only != offered => Auth::reject(),
            _ => Auth::Accept,
        })
    }

    async fn auth_succeeded(&mut self, session: &mut Session) -> Result<(), FakeError> {
        let client_id = String::from_utf8_lossy(session.remote_sshid()).trim_end().to_owned();
        lock(&self.state).client_ids.push(client_id);
        Ok(())
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), FakeError> {
        self.channels.insert(channel.id(), channel);
        reply.accept().await;
        Ok(())
    }

    async fn exec_request(&mut self, channel: ChannelId, data: &[u8], session: &mut Session) -> Result<(), FakeError> {
        let line = String::from_utf8_lossy(data).into_owned();
        lock(&self.state).commands.push(line.clone());
        // The command is answered through `session`; the channel's own message stream is not needed.
        self.channels.remove(&channel);
        self.exec_channels.insert(channel);
        match self.fault() {
            Some(Fault::DropConnection) => return Err(FakeError::Dropped),
            Some(Fault::Hang) => {
                session.channel_success(channel)?;
                return Ok(());
            }
            None => {}
        }
        let reply = self.answer(&line);
        session.channel_success(channel)?;
        if !reply.stdout.is_empty() {
            session.data(channel, reply.stdout)?;
        }
        if !reply.stderr.is_empty() {
            session.extended_data(channel, 1, reply.stderr)?;
        }
        session.exit_status_request(channel, reply.exit_code)?;
        session.eof(channel)?;
        Ok(())
    }

    async fn channel_eof(&mut self, channel: ChannelId, session: &mut Session) -> Result<(), FakeError> {
        if self.fault() != Some(Fault::Hang) && self.exec_channels.remove(&channel) {
            session.close(channel)?;
        }
        Ok(())
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        session: &mut Session,
    ) -> Result<(), FakeError> {
        if self.fault() == Some(Fault::DropConnection) {
            return Err(FakeError::Dropped);
        }
        match (name, self.channels.remove(&channel)) {
            ("sftp", Some(stream)) => {
                session.channel_success(channel)?;
                russh_sftp::server::run(stream.into_stream(), FakeSftp::new(Arc::clone(&self.state))).await;
            }
            _ => session.channel_failure(channel)?,
        }
        Ok(())
    }
}
