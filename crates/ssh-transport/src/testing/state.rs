//! The fake host's shared state: the scripted replies ([`Reply`], [`Responder`]), the injected [`Fault`], the
//! recorded commands and client identifications, and the in-memory files, behind one lock that the SSH handler
//! and the SFTP server share.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::host_key::HostKey;

/// What a scripted command answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The exit status sent (any 32-bit value).
    pub exit_code: u32,
    /// Bytes sent on standard output.
    pub stdout: Vec<u8>,
    /// Bytes sent on standard error.
    pub stderr: Vec<u8>,
}

impl Reply {
    /// Exit 0 with this standard output.
    pub fn ok(stdout: impl Into<Vec<u8>>) -> Reply {
        Reply { exit_code: 0, stdout: stdout.into(), stderr: Vec::new() }
    }

    /// This exit code with this standard error.
    pub fn fail(exit_code: u32, stderr: impl Into<Vec<u8>>) -> Reply {
        Reply { exit_code, stdout: Vec::new(), stderr: stderr.into() }
    }
}

/// A fault the host injects into every following request until cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Close the TCP connection when a command or an SFTP session is requested.
    DropConnection,
    /// Accept commands but never answer them (no output, no exit status).
    Hang,
}

/// Computes a reply from a command line and the host's files; `None` falls through to the scripted replies.
pub type Responder = Arc<dyn Fn(&str, &BTreeMap<String, Vec<u8>>) -> Option<Reply> + Send + Sync>;

/// The host's state, shared by every connection.
pub(crate) struct FakeState {
    pub(super) exact: HashMap<String, Reply>,
    pub(super) prefixes: Vec<(String, Reply)>,
    pub(super) responder: Option<Responder>,
    pub(super) commands: Vec<String>,
    pub(super) files: BTreeMap<String, Vec<u8>>,
    pub(super) directories: BTreeSet<String>,
    pub(super) fault: Option<Fault>,
    pub(super) config: Arc<russh::server::Config>,
    pub(super) host_key: HostKey,
    pub(super) client_ids: Vec<String>,
    pub(super) authorized_key: Option<String>,
}

impl FakeState {
    /// A host with no script, no files, no fault, serving `config` with `host_key`.
    pub(super) fn new(config: Arc<russh::server::Config>, host_key: HostKey) -> FakeState {
        FakeState {
            exact: HashMap::new(),
            prefixes: Vec::new(),
            responder: None,
            commands: Vec::new(),
            files: BTreeMap::new(),
            directories: BTreeSet::new(),
            fault: None,
            config,
            host_key,
            client_ids: Vec::new(),
            authorized_key: None,
        }
    }
}

/// The host's state behind the lock every connection and SFTP session shares.
pub(crate) type SharedState = Arc<Mutex<FakeState>>;

/// Locks the state, also after a panic in another holder (tests report that panic themselves).
pub(crate) fn lock(state: &SharedState) -> MutexGuard<'_, FakeState> {
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
