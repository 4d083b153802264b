//! Async SSH and SFTP transport to Windows hosts.
//!
//! This crate will own the `RemoteHost` trait and its ssh2-backed implementation: key authentication, host-key
//! pinning, command execution with exit codes and timeouts, and uploads that never leave a partial file at the final
//! path. It is built under issue #4; until then it holds nothing.
