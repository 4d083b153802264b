//! `cargo xtask fault-campaign`: the fault campaign of issue 21. Builds the control plane (once) and `wmco`, then
//! runs the `wmco-fault-campaign` program (`e2e/sandbox`): every step of a first configure and of a deconfigure
//! broken in turn by a dropped connection, a failing command, a hung command or stalled SFTP write, a reboot and a
//! full disk, then chaos cells (operator SIGKILL or API-server restart at a seeded random moment); it prints the
//! table of outcomes and times to converge and fails when a cell did not converge cleanly.

use clap::Args;

use crate::controlplane;
use crate::sandbox::{Profile, build_wmco_with, run_checked};
use crate::stages::cargo;

/// Options of `cargo xtask fault-campaign`.
#[derive(Debug, Args)]
pub struct FaultCampaignArgs {
    /// The seed of the chaos cells (default: from the clock; printed either way).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only the few cells CI runs.
    #[arg(long)]
    pub smoke: bool,
    /// How many chaos cells follow the matrix.
    #[arg(long, default_value_t = 4)]
    pub chaos: usize,
    /// Keep the sandbox directory (operator log, hosts' files).
    #[arg(long)]
    pub keep_directory: bool,
}

/// Builds what the campaign needs and runs it in the foreground.
pub fn run(args: &FaultCampaignArgs) -> anyhow::Result<()> {
    run_checked(controlplane::build_command(), "building the control plane")?;
    let wmco = build_wmco_with(Profile::Dev)?;
    let mut campaign = cargo();
    campaign
        .args(["run", "--quiet", "--package", "wmco-sandbox", "--bin", "wmco-fault-campaign", "--"])
        .arg(format!("--chaos={}", args.chaos))
        .env("WMCO_BIN", &wmco);
    if let Some(seed) = args.seed {
        campaign.arg(format!("--seed={seed}"));
    }
    if args.smoke {
        campaign.arg("--smoke");
    }
    if args.keep_directory {
        campaign.arg("--keep-directory");
    }
    run_checked(campaign, "the fault campaign")
}
