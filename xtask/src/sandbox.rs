//! `cargo xtask sandbox`: the product's main job on one machine. Builds what it needs — the control-plane binaries
//! (once, cached outside the clone) and the `wmco` binary — then runs the `wmco-sandbox` program (`e2e/sandbox`):
//! the control plane, N simulated Windows hosts, the OVN stand-in and the operator, the `windows-instances`
//! ConfigMap for every host, and a line per change until all are Ready.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use clap::Args;

use crate::controlplane;
use crate::stages::cargo;

/// Options of `cargo xtask sandbox`.
#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// How many simulated Windows hosts to start (the last one is named `localhost` in the ConfigMap).
    #[arg(long, default_value_t = 3)]
    pub hosts: u8,
    /// Exit 0 once every instance is Ready instead of staying up until Ctrl-C (non-zero on timeout).
    #[arg(long)]
    pub exit_when_ready: bool,
    /// How long the hosts may take to become Ready, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Keep the sandbox directory (operator log, hosts' disks) after exit.
    #[arg(long)]
    pub keep: bool,
}

/// Builds the control plane and `wmco`, then runs the sandbox program in the foreground.
pub fn run(args: &SandboxArgs) -> anyhow::Result<()> {
    run_checked(controlplane::build_command(), "building the control plane")?;
    let wmco = build_wmco()?;
    let mut sandbox = cargo();
    sandbox
        .args(["run", "--quiet", "--package", "wmco-sandbox", "--bin", "wmco-sandbox", "--"])
        .arg(format!("--hosts={}", args.hosts))
        .arg(format!("--timeout={}", args.timeout))
        .env("WMCO_BIN", &wmco);
    if args.exit_when_ready {
        sandbox.arg("--exit-when-ready");
    }
    if args.keep {
        sandbox.arg("--keep");
    }
    run_checked(sandbox, "the sandbox")
}

/// `cargo build -p wmco`; returns the path of the built executable (read from cargo's JSON messages, so any
/// `CARGO_TARGET_DIR` or profile works). Compiler diagnostics go to the terminal.
pub fn build_wmco() -> anyhow::Result<PathBuf> {
    let mut build = cargo();
    build
        .args(["build", "--package", "wmco", "--bin", "wmco", "--message-format=json-render-diagnostics"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let output = build.output().context("could not run cargo build -p wmco")?;
    if !output.status.success() {
        bail!("cargo build -p wmco failed ({})", output.status);
    }
    executable_in_messages(&String::from_utf8_lossy(&output.stdout), "wmco")
        .context("cargo build -p wmco reported no wmco executable")
}

/// The `executable` of the `compiler-artifact` message for binary target `name`.
fn executable_in_messages(messages: &str, name: &str) -> Option<PathBuf> {
    messages.lines().filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok()).find_map(|message| {
        let is_target = message["reason"] == "compiler-artifact" && message["target"]["name"] == name;
        let executable = message["executable"].as_str()?;
        is_target.then(|| PathBuf::from(executable))
    })
}

/// Runs `command` in the foreground; fails naming `what` if it does.
pub fn run_checked(mut command: Command, what: &str) -> anyhow::Result<()> {
    let status = command.status().with_context(|| format!("{what}: could not start {command:?}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wmco_executable_is_read_from_its_artifact_message() {
        let messages = concat!(
            r#"{"reason":"compiler-artifact","target":{"name":"wmco_operator"},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"name":"wmco"},"executable":"/t/debug/wmco"}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(executable_in_messages(messages, "wmco"), Some(PathBuf::from("/t/debug/wmco")));
        assert_eq!(executable_in_messages(messages, "xtask"), None);
    }
}
