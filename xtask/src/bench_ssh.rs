//! `cargo xtask bench-ssh`: builds and runs the ssh-transport benchmark (optimised) against a local OpenSSH sshd and
//! prints its figures: 256 MiB upload throughput against OpenSSH's `sftp`, commands per second on a reused
//! connection against a new connection per command, and connect time. Figures are recorded in docs/performance.md.

use crate::stages::cargo;

/// Runs the benchmark; fails if it cannot run (sshd missing: run `.ci/install-deps.sh`).
pub fn run() -> anyhow::Result<()> {
    let mut command = cargo();
    command.args(["bench", "--package", "wmco-ssh-transport", "--features", "testing", "--bench", "ssh"]);
    let status = command.status()?;
    anyhow::ensure!(status.success(), "the ssh-transport benchmark failed ({status})");
    Ok(())
}
