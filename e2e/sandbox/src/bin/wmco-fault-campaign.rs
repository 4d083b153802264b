//! `wmco-fault-campaign`: the fault campaign of issue 21 ([`wmco_sandbox::campaign`]) on a fresh sandbox, for
//! `cargo xtask fault-campaign`. Prints the seed, the fault-free baselines and a table of every step × fault with
//! its outcome and the times to converge of the faulted host and its healthy neighbour; exits 1 when a cell failed
//! (a host that did not converge, a state that differs from a clean host's, a fault that never hit its step).
//! The neighbour's time over its baseline is printed, never judged here.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser;
use wmco_sandbox::campaign::{Campaign, all_cells, smoke_cells};
use wmco_sandbox::program::{exit_code, seed_or_clock};
use wmco_sandbox::{Sandbox, SandboxOptions};

/// The fault campaign of the wmco operator on simulated hosts.
#[derive(Debug, Parser)]
#[command(name = "wmco-fault-campaign", version)]
struct Cli {
    /// The seed of the chaos cells (default: from the clock, printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Run the few cells CI runs instead of every step × fault.
    #[arg(long)]
    smoke: bool,
    /// How many chaos cells (operator SIGKILL or API-server restart at a random moment) follow the matrix.
    #[arg(long, default_value_t = 4)]
    chaos: usize,
    /// Keep the sandbox directory (operator log, hosts' files).
    #[arg(long)]
    keep_directory: bool,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    exit_code("wmco-fault-campaign", run(Cli::parse()).await)
}

async fn run(cli: Cli) -> anyhow::Result<bool> {
    let seed = seed_or_clock(cli.seed);
    println!("seed {seed}");
    let sandbox = Sandbox::start(SandboxOptions {
        hosts: 0,
        localhost_host: false,
        operator_args: vec!["--ssh-command-timeout-seconds=10".to_owned(), "--ssh-io-timeout-seconds=10".to_owned()],
        keep_directory: cli.keep_directory,
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    sandbox.write_instances(&Default::default()).await?;
    let cells = if cli.smoke { smoke_cells() } else { all_cells() };
    let report = Campaign::new(&sandbox, seed).run(&cells, cli.chaos).await?;
    println!("{}", report.table());
    sandbox.assert_no_secret_leaked().await?;
    Ok(report.failures().is_empty())
}
