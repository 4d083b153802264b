//! `cargo xtask bench-csr`: the CSR controller under a flood. Builds the control plane (once) and `wmco`, then runs
//! the `wmco-bench-csr` program (`e2e/sandbox`): `--hosts` simulated Windows hosts join once without and once after
//! `--flood` pending Linux kubelet CSRs, and it prints the time to approve the Windows hosts, the API server's CSR
//! requests per operator decision and the operator's peak RSS for each run, and the flood run against the quiet one.

use clap::Args;

use crate::controlplane;
use crate::sandbox::{Profile, build_wmco_with, run_checked};
use crate::stages::cargo;

/// Options of `cargo xtask bench-csr`.
#[derive(Debug, Args)]
pub struct BenchCsrArgs {
    /// How many simulated Windows hosts join in each run.
    #[arg(long, default_value_t = 10)]
    pub hosts: u8,
    /// How many pending Linux CSRs the flood run creates first.
    #[arg(long, default_value_t = 5_000)]
    pub flood: usize,
    /// Build the operator with `cargo build --release` instead of the dev profile.
    #[arg(long)]
    pub release: bool,
}

/// Builds what the benchmark needs and runs it in the foreground.
pub fn run(args: &BenchCsrArgs) -> anyhow::Result<()> {
    run_checked(controlplane::build_command(), "building the control plane")?;
    let wmco = build_wmco_with(if args.release { Profile::Release } else { Profile::Dev })?;
    let mut bench = cargo();
    bench
        .args(["run", "--quiet", "--package", "wmco-sandbox", "--bin", "wmco-bench-csr", "--"])
        .arg(format!("--hosts={}", args.hosts))
        .arg(format!("--flood={}", args.flood))
        .env("WMCO_BIN", &wmco);
    run_checked(bench, "the CSR flood benchmark")
}
