//! Test support (cargo feature `testing`) for this crate's tests, for later crates' flow tests and for the
//! benchmark: [`Sshd`] runs a real OpenSSH server on 127.0.0.1.

mod sshd;

pub use sshd::{ClientKey, KeyFormat, KeyType, Sshd};
