//! Typed desired state of a Windows host, the sc.exe / PowerShell command builders and their output parsers.
//!
//! This crate performs no IO of any kind: it turns typed values into command-line strings and command output back
//! into typed values. Start with [`WinPath`].

mod path;

pub use path::{MAX_PATH_CHARS, PathError, WinPath};
