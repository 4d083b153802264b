//! `cargo xtask soak`: the soak of issue 21. Builds the control plane (once) and `wmco`, then runs the `wmco-soak`
//! program (`e2e/sandbox`): `--hosts` simulated hosts churned for `--minutes` (one leaves or comes back every
//! `--churn-seconds`), one API-server restart and one operator restart, printing the operator's resident set, Events
//! and reconciles per minute and any host not converged at the end (which fails the run).

use clap::Args;

use crate::controlplane;
use crate::sandbox::{Profile, build_wmco_with, run_checked};
use crate::stages::cargo;

/// Options of `cargo xtask soak`.
#[derive(Debug, Args)]
pub struct SoakArgs {
    /// How many simulated hosts.
    #[arg(long, default_value_t = 50)]
    pub hosts: u8,
    /// How long the churn lasts, in minutes.
    #[arg(long, default_value_t = 30)]
    pub minutes: u64,
    /// Seconds between two changes of the ConfigMap.
    #[arg(long, default_value_t = 20)]
    pub churn_seconds: u64,
    /// The seed of the churn (default: from the clock; printed either way).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Build the operator with `cargo build --release`.
    #[arg(long)]
    pub release: bool,
}

/// Builds what the soak needs and runs it in the foreground.
pub fn run(args: &SoakArgs) -> anyhow::Result<()> {
    run_checked(controlplane::build_command(), "building the control plane")?;
    let wmco = build_wmco_with(if args.release { Profile::Release } else { Profile::Dev })?;
    let mut soak = cargo();
    soak.args(["run", "--quiet", "--package", "wmco-sandbox", "--bin", "wmco-soak", "--"])
        .arg(format!("--hosts={}", args.hosts))
        .arg(format!("--minutes={}", args.minutes))
        .arg(format!("--churn-seconds={}", args.churn_seconds))
        .env("WMCO_BIN", &wmco);
    if let Some(seed) = args.seed {
        soak.arg(format!("--seed={seed}"));
    }
    run_checked(soak, "the soak")
}
