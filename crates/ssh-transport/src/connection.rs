//! One blocking SSH connection (ssh2): TCP connect, handshake with the configured version string, host key check
//! against the policy, public-key authentication, and the lazily opened SFTP session. Runs on the host's worker
//! thread only.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use ssh2::{ErrorCode, Session, Sftp};

use crate::config::HostConfig;
use crate::error::TransportError;
use crate::host_key::{HostKey, HostKeyPolicy};

/// libssh2 error codes this crate tells apart.
pub(crate) mod code {
    pub const SOCKET_NONE: i32 = -1;
    pub const BANNER_RECV: i32 = -2;
    pub const BANNER_SEND: i32 = -3;
    pub const SOCKET_SEND: i32 = -7;
    pub const TIMEOUT: i32 = -9;
    pub const SOCKET_DISCONNECT: i32 = -13;
    pub const AUTHENTICATION_FAILED: i32 = -18;
    pub const PUBLICKEY_UNVERIFIED: i32 = -19;
    pub const CHANNEL_CLOSED: i32 = -26;
    pub const SOCKET_TIMEOUT: i32 = -30;
    pub const SOCKET_RECV: i32 = -43;
    pub const KEYFILE_AUTH_FAILED: i32 = -48;
    pub const SFTP_NO_SUCH_FILE: i32 = 2;
}

/// How a library error affects the connection it happened on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The connection is gone (socket error, disconnect).
    ConnectionLost,
    /// A blocking call ran out of time; the connection state is unknown.
    TimedOut,
    /// Anything else; the connection may still be usable.
    Other,
}

/// Classifies an ssh2 error.
pub(crate) fn classify(error: &ssh2::Error) -> Failure {
    match error.code() {
        ErrorCode::Session(
            code::SOCKET_NONE
            | code::BANNER_RECV
            | code::BANNER_SEND
            | code::SOCKET_SEND
            | code::SOCKET_DISCONNECT
            | code::SOCKET_RECV
            | code::CHANNEL_CLOSED,
        ) => Failure::ConnectionLost,
        ErrorCode::Session(code::TIMEOUT | code::SOCKET_TIMEOUT) => Failure::TimedOut,
        _ => Failure::Other,
    }
}

/// Whether an ssh2 error is SFTP's "no such file".
pub(crate) fn is_no_such_file(error: &ssh2::Error) -> bool {
    error.code() == ErrorCode::SFTP(code::SFTP_NO_SUCH_FILE)
}

/// A failed operation on a connection; `poisoned` means the connection is unusable and must be dropped so the
/// next operation reconnects.
pub(crate) struct OpError {
    pub(crate) error: TransportError,
    pub(crate) poisoned: bool,
}

/// An authenticated SSH session with its socket and, once used, its SFTP session.
pub(crate) struct Connection {
    pub(crate) session: Session,
    /// A second handle on the session's socket, used only to wait for readiness.
    pub(crate) socket: TcpStream,
    sftp: Option<Sftp>,
    pub(crate) host_key: HostKey,
    /// The blocking-call timeout restored after a command's own deadline.
    pub(crate) io_timeout_ms: u32,
    /// The cap on one command's output.
    pub(crate) max_output_bytes: usize,
}

impl Connection {
    /// Opens (once) and returns the connection's SFTP session.
    pub(crate) fn sftp(&mut self) -> Result<&Sftp, ssh2::Error> {
        if self.sftp.is_none() {
            self.sftp = Some(self.session.sftp()?);
        }
        self.sftp.as_ref().ok_or_else(|| ssh2::Error::from_errno(ErrorCode::Session(code::SOCKET_NONE)))
    }
}

/// Connects, retrying unreachable and timed-out attempts per the configured policy. `known_key` is the key seen
/// before under trust-on-first-use (it must not change).
pub(crate) fn connect(config: &HostConfig, known_key: Option<&HostKey>) -> Result<Connection, TransportError> {
    let started = Instant::now();
    let mut retries = 0;
    loop {
        match connect_once(config, known_key) {
            Err(error) if error.is_retryable() => match config.connect_retry.next_delay(retries, started) {
                Some(delay) => {
                    tracing::debug!(host = %config.label(), %error, ?delay, "connection attempt failed; retrying");
                    std::thread::sleep(delay);
                    retries += 1;
                }
                None => return Err(error),
            },
            other => return other,
        }
    }
}

fn connect_once(config: &HostConfig, known_key: Option<&HostKey>) -> Result<Connection, TransportError> {
    let host = config.label();
    let unreachable = |during: &str, reason: String| TransportError::Unreachable {
        host: host.clone(),
        during: during.to_owned(),
        reason,
    };
    let address = resolve(config).map_err(|reason| unreachable("resolving the address", reason))?;
    let stream = TcpStream::connect_timeout(&address, config.connect_timeout).map_err(|error| {
        if error.kind() == std::io::ErrorKind::TimedOut {
            TransportError::TimedOut { host: host.clone(), during: "connecting".into(), after: config.connect_timeout }
        } else {
            unreachable("connecting", error.to_string())
        }
    })?;
    stream.set_nodelay(true).map_err(|error| unreachable("connecting", error.to_string()))?;
    let socket = stream.try_clone().map_err(|error| unreachable("connecting", error.to_string()))?;

    let library_error = |during: &str, error: ssh2::Error| match classify(&error) {
        Failure::ConnectionLost => unreachable(during, error.message().to_owned()),
        Failure::TimedOut => {
            TransportError::TimedOut { host: host.clone(), during: during.to_owned(), after: config.connect_timeout }
        }
        Failure::Other => TransportError::Protocol {
            host: host.clone(),
            during: during.to_owned(),
            reason: error.message().to_owned(),
        },
    };
    let mut session = Session::new().map_err(|error| library_error("creating the session", error))?;
    session.set_banner(&config.client_banner()).map_err(|error| library_error("setting the banner", error))?;
    session.set_timeout(millis(config.connect_timeout));
    session.set_tcp_stream(stream);
    session.handshake().map_err(|error| library_error("the SSH handshake", error))?;

    let host_key = offered_host_key(&session, &host)?;
    check_host_key(config, known_key, &host_key, &host)?;

    session.userauth_pubkey_memory(&config.user, None, config.key.pem(), None).map_err(|error| match error.code() {
        ErrorCode::Session(code::AUTHENTICATION_FAILED | code::PUBLICKEY_UNVERIFIED | code::KEYFILE_AUTH_FAILED) => {
            TransportError::Authentication {
                host: host.clone(),
                user: config.user.clone(),
                reason: error.message().to_owned(),
            }
        }
        _ => library_error("authenticating", error),
    })?;
    if !session.authenticated() {
        return Err(TransportError::Authentication {
            host,
            user: config.user.clone(),
            reason: "the server did not accept the key".into(),
        });
    }
    let io_timeout_ms = millis(config.io_timeout);
    session.set_timeout(io_timeout_ms);
    tracing::debug!(host = %host, key = %host_key, "connected");
    Ok(Connection { session, socket, sftp: None, host_key, io_timeout_ms, max_output_bytes: config.max_output_bytes })
}

fn resolve(config: &HostConfig) -> Result<SocketAddr, String> {
    (config.address.as_str(), config.port)
        .to_socket_addrs()
        .map_err(|error| error.to_string())?
        .next()
        .ok_or_else(|| format!("{} has no address", config.address))
}

fn offered_host_key(session: &Session, host: &str) -> Result<HostKey, TransportError> {
    let protocol = |reason: String| TransportError::Protocol {
        host: host.to_owned(),
        during: "reading the host key".into(),
        reason,
    };
    let (blob, _) = session.host_key().ok_or_else(|| protocol("the server sent no host key".into()))?;
    HostKey::from_blob(blob.to_vec()).map_err(|error| protocol(error.to_string()))
}

fn check_host_key(
    config: &HostConfig,
    known_key: Option<&HostKey>,
    offered: &HostKey,
    host: &str,
) -> Result<(), TransportError> {
    let expected = match (&config.host_key_policy, known_key) {
        (HostKeyPolicy::Pinned(pinned), _) => Some(pinned),
        (HostKeyPolicy::TrustOnFirstUse, known) => known,
    };
    match expected {
        Some(expected) if expected != offered => Err(TransportError::HostKeyMismatch {
            host: host.to_owned(),
            pinned: expected.fingerprint(),
            offered: offered.fingerprint(),
        }),
        _ => Ok(()),
    }
}

/// A duration as libssh2's millisecond timeout (at least 1 ms, since 0 means "no timeout").
pub(crate) fn millis(duration: Duration) -> u32 {
    u32::try_from(duration.as_millis()).unwrap_or(u32::MAX).max(1)
}
