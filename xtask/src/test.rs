//! `cargo xtask test`: every check CI runs, as timed stages.

use std::num::NonZeroU32;
use std::process::Command;

use anyhow::bail;
use clap::Args;

use crate::bundle::BundleArgs;
use crate::controlplane;
use crate::image::build_operator_image;
use crate::payload::{build_real_payload, smoke_real_payload};
use crate::repeat::{Repetition, run_and_parse};
use crate::sandbox::{PayloadChoice, SandboxArgs, build_wmco};
use crate::stages::{StageClock, cargo, describe};

/// Options of `cargo xtask test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Skip the format, lint, doc and deny stages and run only the tests.
    #[arg(long)]
    pub tests_only: bool,
    /// Run the test stage (every unit and e2e test) N times, then print every test that was not green in every
    /// run with its passes out of N; fails if any test failed in any run. With 1 (the default) the stage runs once
    /// as it always did.
    #[arg(long, value_name = "N", default_value = "1")]
    pub repeat: NonZeroU32,
}

/// Runs the stages in order, stopping at the first failure, and prints the stage times either way.
pub fn run(args: &TestArgs) -> anyhow::Result<()> {
    let mut clock = StageClock::default();
    let result = run_stages(args, &mut clock);
    clock.print_summary();
    result
}

fn run_stages(args: &TestArgs, clock: &mut StageClock) -> anyhow::Result<()> {
    // The Debian packages the build and tests need (a no-op once installed).
    clock.run("deps", crate::deps::install_command())?;
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

        // Licenses, duplicate crates and sources against deny.toml; not advisories (see deny.toml).
        let cargo_deny = clock.time("cargo-deny install", crate::deny::install)?;
        clock.run("deny", crate::deny::check_command(&cargo_deny))?;
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

    // The operator image (the release binary and the real payload; reused while its inputs are unchanged) for the
    // e2e test that runs it as a pod, and the OLM bundle: committed bundle/ up to date, validated, its image built.
    let image = clock.time("image", || build_operator_image(None, None))?;
    println!("    image {} {} ({})", image.image.name, image.image.digest, image.archive.display());
    clock.time("bundle", || crate::bundle::run(&BundleArgs { check: true, image: None }))?;

    // The README's main command, as a newcomer runs it (one host, until it is Ready).
    let sandbox = SandboxArgs {
        hosts: 1,
        exit_when_ready: true,
        timeout: 600,
        keep: false,
        payload: PayloadChoice::Small,
        image: false,
    };
    clock.time("sandbox", || crate::sandbox::run(&sandbox))?;

    let test_command = || {
        // Every test binary runs even after one failed (--no-fail-fast), so one CI run lists every failure.
        let mut test = cargo();
        test.args(["test", "--workspace", "--no-fail-fast"])
            .env("WMCO_BIN", &wmco)
            .env("WMCO_REAL_PAYLOAD", &real_payload.dir)
            .env("WMCO_IMAGE", &image.archive);
        test
    };
    match args.repeat.get() {
        1 => clock.run("test", test_command()),
        runs => run_repeated(clock, runs, test_command),
    }
}

/// Runs the test stage `runs` times, each run's output echoed and parsed, and prints the table of tests that were
/// not green every time with the totals; fails if any run failed.
fn run_repeated(clock: &mut StageClock, runs: u32, test_command: impl Fn() -> Command) -> anyhow::Result<()> {
    let mut repetition = Repetition::default();
    for run in 1..=runs {
        let command = test_command();
        println!("==> test run {run}/{runs}: {}", describe(&command));
        let (status, outcome) =
            clock.time(&format!("test {run}/{runs}"), || run_and_parse(command, std::io::stdout()))?;
        repetition.add(status, outcome);
    }
    print!("{}", repetition.report());
    if !repetition.all_green() {
        bail!("stage test: not every test was green in all {runs} runs (see the table above)");
    }
    Ok(())
}
