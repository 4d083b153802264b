//! `cargo xtask sandbox`: the product's main job on an embedded default.
//!
//! The sandbox needs the e2e control plane (issue #6), the simulated Windows hosts (issue #7) and the operator
//! (issue #9). Until those land it states what it will do and which pieces are missing, and exits non-zero so no
//! script mistakes it for a working sandbox.

use anyhow::bail;
use clap::Args;

/// Options of `cargo xtask sandbox`.
#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// How many simulated Windows hosts to start.
    #[arg(long, default_value_t = 3)]
    pub hosts: u32,
    /// Exit 0 once every instance is Ready instead of staying up until Ctrl-C.
    #[arg(long)]
    pub exit_when_ready: bool,
}

/// Explains the sandbox and fails, because its pieces are not built yet.
pub fn run(args: &SandboxArgs) -> anyhow::Result<()> {
    println!("The sandbox will:");
    println!(
        "  1. build (once, cached in ~/.cache/wmco-rs) and start kube-apiserver, etcd and kube-controller-manager;"
    );
    println!("  2. start {} simulated Windows hosts speaking SSH on 127.0.0.x;", args.hosts);
    println!("  3. start the wmco operator with its own ServiceAccount and write the windows-instances ConfigMap;");
    println!("  4. show instances and nodes converging until all are Ready, then stay up until Ctrl-C");
    println!("     (or exit 0 with --exit-when-ready).");
    bail!("the sandbox is not available yet: it needs the control plane (#6), the simulator (#7) and the operator (#9)")
}
