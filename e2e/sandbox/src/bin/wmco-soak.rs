//! `wmco-soak`: the soak of issue 21 ([`wmco_sandbox::soak`]) on a fresh sandbox, for `cargo xtask soak`. Prints
//! the operator's resident set, Events and reconciles per minute under churn, the restarts, and any host not
//! converged at the end; exits 1 when a host did not converge.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use wmco_sandbox::program::{exit_code, seed_or_clock};
use wmco_sandbox::soak::{SoakOptions, run as soak};
use wmco_sandbox::{Sandbox, SandboxOptions};

/// The soak of the wmco operator on simulated hosts.
#[derive(Debug, Parser)]
#[command(name = "wmco-soak", version)]
struct Cli {
    /// How many simulated hosts.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(1..=200))]
    hosts: u8,
    /// How long the churn lasts, in minutes.
    #[arg(long, default_value_t = 30)]
    minutes: u64,
    /// Seconds between two changes of the ConfigMap (one host leaves or comes back).
    #[arg(long, default_value_t = 20)]
    churn_seconds: u64,
    /// The seed of the churn (default: from the clock, printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Keep the sandbox directory (operator log, hosts' files).
    #[arg(long)]
    keep_directory: bool,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    exit_code("wmco-soak", run(Cli::parse()).await)
}

async fn run(cli: Cli) -> anyhow::Result<bool> {
    let seed = seed_or_clock(cli.seed);
    println!("seed {seed}");
    let sandbox = Sandbox::start(SandboxOptions {
        hosts: cli.hosts,
        localhost_host: false,
        keep_directory: cli.keep_directory,
        operator_ready_timeout: Duration::from_secs(120),
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    let options = SoakOptions {
        duration: Duration::from_secs(cli.minutes * 60),
        churn_interval: Duration::from_secs(cli.churn_seconds.max(1)),
        seed,
        ..SoakOptions::default()
    };
    let report = soak(&sandbox, &options).await?;
    println!("{}", report.table());
    sandbox.assert_no_secret_leaked().await?;
    Ok(report.not_converged.is_empty())
}
