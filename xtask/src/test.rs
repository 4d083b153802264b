//! `cargo xtask test`: every check CI runs, as timed stages.

use clap::Args;

use std::process::Command;

use crate::controlplane;
use crate::payload::{build_real_payload, smoke_real_payload};
use crate::sandbox::build_wmco;
use crate::stages::{StageClock, cargo};

/// Options of `cargo xtask test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Skip the format, lint and doc stages and run only the tests.
    #[arg(long)]
    pub tests_only: bool,
}

/// Runs the stages in order, stopping at the first failure, and prints the stage times either way.
pub fn run(args: &TestArgs) -> anyhow::Result<()> {
    let mut clock = StageClock::default();
    let result = run_stages(args, &mut clock);
    clock.print_summary();
    result
}

fn run_stages(args: &TestArgs, clock: &mut StageClock) -> anyhow::Result<()> {
    if !args.tests_only {
        let mut fmt = cargo();
        fmt.args(["fmt", "--all", "--", "--check"]);
        clock.run("fmt", fmt)?;

        let mut clippy = cargo();
        clippy.args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]);
        clock.run("clippy", clippy)?;

        let mut doc = cargo();
        doc.args(["doc", "--workspace", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings");
        clock.run("doc", doc)?;
    }

    // The e2e tests need the control-plane binaries; building them is a no-op once they are cached.
    clock.run("controlplane", controlplane::build_command())?;

    // The sandbox e2e tests run the operator as its own process: build it and tell them where it is.
    let wmco = clock.time("build wmco", build_wmco)?;

    // The real payload: built from the pinned Go modules (a no-op once cached), verified by the product's own
    // check (hashes, PE headers, Go build information), and every binary's version printed under Wine.
    let real_payload = clock.time("payload build", build_real_payload)?;
    let mut verify = Command::new(&wmco);
    verify.args(["payload", "verify"]).arg(&real_payload.dir);
    clock.run("payload verify", verify)?;
    clock.time("payload smoke", || smoke_real_payload(&real_payload.dir))?;

    // Every test binary runs even after one failed (--no-fail-fast), so one CI run lists every failure.
    let mut test = cargo();
    test.args(["test", "--workspace", "--no-fail-fast"])
        .env("WMCO_BIN", wmco)
        .env("WMCO_REAL_PAYLOAD", &real_payload.dir);
    clock.run("test", test)
}
