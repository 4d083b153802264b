//! `cargo xtask controlplane build|up`: the e2e control plane (etcd, kube-apiserver, kube-controller-manager,
//! kubectl built from pinned Go modules by `e2e/controlplane/build.sh`, cached outside the clone), and a running
//! instance of it for manual work and the sandbox.

use std::process::Command;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use crate::stages::{cargo, workspace_root};

/// Options of `cargo xtask controlplane`.
#[derive(Debug, Args)]
pub struct ControlPlaneArgs {
    #[command(subcommand)]
    action: ControlPlaneAction,
}

#[derive(Debug, Subcommand)]
enum ControlPlaneAction {
    /// Build the control-plane binaries from the pinned Go modules into
    /// `${WMCO_CACHE:-~/.cache/wmco-rs}/controlplane/<version>/bin` (skipped when already built).
    Build,
    /// Build if needed, then start the control plane, print the admin kubeconfig path and the startup time, and
    /// keep it running until Ctrl-C.
    Up,
}

/// Runs the chosen action.
pub fn run(args: &ControlPlaneArgs) -> anyhow::Result<()> {
    match args.action {
        ControlPlaneAction::Build => run_to_success(build_command(), "building the control plane"),
        ControlPlaneAction::Up => {
            run_to_success(build_command(), "building the control plane")?;
            let mut up = cargo();
            up.args(["run", "--quiet", "--package", "wmco-e2e-harness", "--bin", "wmco-e2e-controlplane"]);
            run_to_success(up, "running the control plane")
        }
    }
}

/// The command that builds the control-plane binaries (`bash e2e/controlplane/build.sh`); also a stage of
/// `cargo xtask test`.
pub fn build_command() -> Command {
    let root = workspace_root();
    let mut command = Command::new("bash");
    command.arg(root.join("e2e/controlplane/build.sh")).current_dir(root);
    command
}

/// The control plane's `kubectl` (`${WMCO_CACHE:-~/.cache/wmco-rs}/controlplane/<version>/bin/kubectl`, the
/// version read from `e2e/controlplane/go.mod` as `build.sh` does); build it with [`build_command`] first.
///
/// # Errors
/// `go.mod` names no `k8s.io/kubernetes` version, or `HOME` is unset without `WMCO_CACHE`.
pub fn kubectl() -> anyhow::Result<std::path::PathBuf> {
    let go_mod = std::fs::read_to_string(workspace_root().join("e2e/controlplane/go.mod"))
        .context("cannot read e2e/controlplane/go.mod")?;
    let version = go_mod
        .lines()
        .filter_map(|line| line.trim().strip_prefix("k8s.io/kubernetes "))
        .filter_map(|rest| rest.split_whitespace().next())
        .find(|version| version.starts_with('v'))
        .context("e2e/controlplane/go.mod requires no k8s.io/kubernetes version")?;
    let cache = match std::env::var_os("WMCO_CACHE").filter(|value| !value.is_empty()) {
        Some(cache) => std::path::PathBuf::from(cache),
        None => std::path::PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?).join(".cache/wmco-rs"),
    };
    Ok(cache.join("controlplane").join(version).join("bin/kubectl"))
}

fn run_to_success(mut command: Command, what: &str) -> anyhow::Result<()> {
    let status = command.status().with_context(|| format!("{what}: could not start {command:?}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}
