//! Simulated Windows Server hosts for e2e tests and the sandbox (issue 7). Each host has its own SSH server on a
//! loopback address, a `C:` drive backed by a directory, and interpreters for what the operator sends: cmd.exe
//! (the Win32-OpenSSH exec shell), sc.exe and the service control manager, and a PowerShell 5.1 subset parsed and
//! evaluated generically over the host's state. Behaviour follows `reference/windows-commands.md`, never the
//! product's command builders.
//!
//! ```
//! use winhost_sim::host::{Host, Identity, Latency};
//! let root = tempfile::tempdir()?;
//! let identity = Identity {
//!     hostname: "win-1".into(),
//!     fqdn: "win-1.example.test".into(),
//!     build: 20348,
//!     ubr: 2849,
//!     node_ip: "203.0.113.10".parse()?,
//! };
//! let mut host = Host::new(identity, root.path(), Latency::zero())?;
//! let output = host.exec("SSH-2.0-doc", "sc.exe query kubelet");
//! assert_eq!(output.code, 1060);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod acl;
pub mod argv;
pub mod cmd;
pub mod control;
pub mod disk;
pub mod driver;
pub mod ec2launch;
pub mod faults;
pub mod fleet;
pub mod host;
pub mod metadata;
pub mod native;
pub mod pending_reboot;
pub mod process;
pub mod ps;
#[cfg(feature = "remote-host")]
pub mod remote_host;
#[cfg(feature = "replay")]
pub mod replay;
pub mod sc;
pub mod scm;
pub mod sftp;
pub mod ssh;
pub mod wine_kubelet;
