//! Test support (cargo feature `testing`) for this crate's tests, for later crates' flow tests and for the
//! benchmark: [`Sshd`] runs a real OpenSSH server on 127.0.0.1, [`FakeHost`] is an in-process SSH server with
//! scripted replies, recorded commands, an in-memory SFTP file system and fault injection.

mod fake;
mod fake_sftp;
mod sshd;
mod state;

pub use fake::FakeHost;
pub use sshd::{ClientKey, KeyFormat, KeyType, Sshd};
pub use state::{Fault, Reply, Responder};
