//! `cargo xtask bench-fleet`: fleet figures of the operator on simulated hosts. Builds the control plane (once)
//! and `wmco`, then runs the `wmco-bench-fleet` program (`e2e/sandbox`), which prints time to all Ready, per-host
//! p50/p95, SSH round trips and bytes per host for a first configure and a no-op reconcile, and the operator's
//! peak RSS, for each concurrency (default 8, then 1); then, on the first concurrency's Ready fleet, the upgrade
//! runs: the operator restarted one minor version higher with each `--max-unavailable` budget (default 1, then 4)
//! and once more with one payload file changed, each printing its total and per-host time, the most nodes
//! unavailable at once (above the budget fails the bench: a product bug), and round trips and bytes sent per host.
//! `--hosts 1,20,100` runs each fleet size in turn and compares each with the smallest (time to all Ready, the
//! operator's memory per host, its idle CPU). `--payload real` runs it with the real payload (`cargo xtask payload
//! build`, cached) instead of the small synthetic one; `--release` builds the operator with `--release`.

use clap::Args;

use crate::controlplane;
use crate::sandbox::{PayloadChoice, Profile, build_wmco_with, run_checked};
use crate::stages::cargo;

/// Options of `cargo xtask bench-fleet`.
#[derive(Debug, Args)]
pub struct BenchFleetArgs {
    /// How many simulated hosts: one fleet size or a comma-separated list run in turn, e.g. `1,20,100` (each at
    /// most 200).
    #[arg(long, value_delimiter = ',', default_value = "20", value_parser = clap::value_parser!(u8).range(1..=200))]
    pub hosts: Vec<u8>,
    /// The operator's `--max-concurrent-configurations` for each run (repeatable; default 8, then 1).
    #[arg(long = "concurrency", value_name = "N")]
    pub concurrency: Vec<u16>,
    /// The operator's `--max-unavailable` for each upgrade run, made after the first concurrency's run on its Ready
    /// fleet (repeatable; default 1, then 4; the run with a changed payload file uses the last).
    #[arg(long = "max-unavailable", value_name = "N")]
    pub max_unavailable: Vec<u32>,
    /// Skip the upgrade runs.
    #[arg(long)]
    pub no_upgrade: bool,
    /// Keep each sandbox directory (operator logs, hosts' files).
    #[arg(long)]
    pub keep_directory: bool,
    /// Which payload the operator serves: `small` (fast, the default) or `real` (built first if not cached).
    #[arg(long, value_enum, default_value_t = PayloadChoice::Small)]
    pub payload: PayloadChoice,
    /// Build the operator with `cargo build --release` (figures of an optimised operator; the build takes several
    /// minutes on 2 cores) instead of the dev profile.
    #[arg(long)]
    pub release: bool,
}

/// Builds what the benchmark needs and runs it in the foreground.
pub fn run(args: &BenchFleetArgs) -> anyhow::Result<()> {
    run_checked(controlplane::build_command(), "building the control plane")?;
    let payload_dir = args.payload.payload_dir()?;
    let wmco = build_wmco_with(if args.release { Profile::Release } else { Profile::Dev })?;
    let mut bench = cargo();
    bench
        .args(["run", "--quiet", "--package", "wmco-sandbox", "--bin", "wmco-bench-fleet", "--"])
        .arg(format!("--hosts={}", args.hosts.iter().map(u8::to_string).collect::<Vec<_>>().join(",")))
        .env("WMCO_BIN", &wmco);
    for concurrency in &args.concurrency {
        bench.arg(format!("--concurrency={concurrency}"));
    }
    for budget in &args.max_unavailable {
        bench.arg(format!("--max-unavailable={budget}"));
    }
    if args.no_upgrade {
        bench.arg("--no-upgrade");
    }
    if args.keep_directory {
        bench.arg("--keep-directory");
    }
    if let Some(dir) = payload_dir {
        bench.arg("--payload-dir").arg(dir);
    }
    run_checked(bench, "the fleet benchmark")
}
