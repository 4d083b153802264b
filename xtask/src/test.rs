//! `cargo xtask test`: every check CI runs, as timed stages.
//!
//! The Go builds (the control plane, the real payload, the bundle validator, promtool; each a no-op once cached)
//! start first and run beside the Rust stages ([`crate::background`]), which compile the workspace once for clippy
//! and rustdoc (check metadata) and once for the tests (`cargo test --no-run`, which also builds the `wmco` the e2e
//! tests run). The test binaries and the README's main command then run side by side ([`crate::test_pool`]). The
//! operator image of the run carries the dev-profile `wmco` the tests use; `cargo xtask image` ships the release one.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context as _, bail};
use clap::Args;

use crate::background::{Background, Step};
use crate::bundle::BundleArgs;
use crate::controlplane;
use crate::image::{build_operator_image_from, target_dir};
use crate::payload::{cache_root, smoke_real_payload};
use crate::repeat::Repetition;
use crate::stages::{StageClock, cargo, workspace_root};
use crate::test_binaries::{TestBinary, TestBuild, build_all};
use crate::test_pool::{Job, PoolPaths};

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
    /// How many test binaries run at once (each runs its own tests on as many threads as libtest chooses). The
    /// default, twice the cores, keeps a 2-core machine busy while the e2e binaries wait on their simulated hosts.
    #[arg(long, value_name = "N")]
    pub jobs: Option<NonZeroU32>,
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
    let background = Background::start(go_builds()?, &target_dir().join("background-builds"))?;
    if !args.tests_only {
        check_sources(clock)?;
    }
    let TestBuild { binaries, wmco } = clock.time("build tests", build_all)?;
    background.join(clock)?;
    let real_payload = crate::payload::build_real_payload()?.dir;

    // The real payload, verified by the product's own check (hashes, PE headers, Go build information) and every
    // binary's version printed under Wine.
    let mut verify = Command::new(&wmco);
    verify.args(["payload", "verify"]).arg(&real_payload);
    clock.run("payload verify", verify)?;
    clock.time("payload smoke", || smoke_real_payload(&real_payload))?;

    // The operator image (reused while its inputs are unchanged) for the e2e test that runs it as a pod, and the OLM
    // bundle: committed bundle/ up to date, validated, its image built.
    let image = clock.time("image", || build_operator_image_from(&wmco, None, None))?;
    println!("    image {} {} ({})", image.image.name, image.image.digest, image.archive.display());
    clock.time("bundle", || crate::bundle::run(&BundleArgs { check: true, image: None }))?;

    let environment = TestEnvironment { wmco, real_payload, image: image.archive, binaries };
    let workers = args.jobs.map_or_else(default_jobs, |jobs| jobs.get() as usize);
    match args.repeat.get() {
        1 => run_once(clock, &environment, workers),
        runs => run_repeated(clock, runs, &environment, workers),
    }
}

/// fmt, clippy, rustdoc and cargo deny.
fn check_sources(clock: &mut StageClock) -> anyhow::Result<()> {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    clock.run("fmt", fmt)?;

    // Licenses, duplicate crates and sources against deny.toml; not advisories (see deny.toml).
    let cargo_deny = clock.time("cargo-deny install", crate::deny::install)?;
    clock.run("deny", crate::deny::check_command(&cargo_deny))?;

    let mut clippy = cargo();
    clippy.args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]);
    clock.run("clippy", clippy)?;

    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings");
    clock.run("doc", doc)
}

/// The Go builds that run beside the Rust stages: the control plane, the real payload, the bundle validator and
/// promtool (for the rule tests of `wmco-manifests-check`).
fn go_builds() -> anyhow::Result<Vec<Step>> {
    let xtask = std::env::current_exe().context("cannot find the running xtask executable")?;
    let mut payload = Command::new(xtask);
    payload.args(["payload", "build"]).current_dir(workspace_root());
    let mut validator = Command::new("bash");
    validator.arg(workspace_root().join("e2e/bundle-validate/build.sh"));
    let mut promtool = Command::new("bash");
    promtool.arg(workspace_root().join("e2e/promtool/build.sh"));
    Ok(vec![
        Step { name: "controlplane".to_owned(), command: controlplane::build_command() },
        Step { name: "payload build".to_owned(), command: payload },
        Step { name: "bundle-validate build".to_owned(), command: validator },
        Step { name: "promtool build".to_owned(), command: promtool },
    ])
}

/// Twice the cores.
fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |cores| cores.get() * 2)
}

/// What the test jobs are given.
#[derive(Debug)]
struct TestEnvironment {
    wmco: PathBuf,
    real_payload: PathBuf,
    image: PathBuf,
    binaries: Vec<TestBinary>,
}

impl TestEnvironment {
    /// One job per test binary, one for the doc tests and one for the README's main command.
    fn jobs(&self) -> anyhow::Result<Vec<Job>> {
        let mut jobs: Vec<Job> = self.binaries.iter().map(|binary| self.binary_job(binary)).collect();
        let mut doc = cargo();
        doc.args(["test", "--workspace", "--doc", "--no-fail-fast"]);
        jobs.push(self.job("doc tests".to_owned(), None, false, doc));
        jobs.push(self.job("sandbox (cargo xtask sandbox)".to_owned(), None, true, sandbox_command()?));
        Ok(jobs)
    }

    fn binary_job(&self, binary: &TestBinary) -> Job {
        // The e2e binaries start first: they are the longest.
        let slow_kind = binary.integration && binary.package == "wmco-sandbox";
        let name = format!("{} {}", binary.package, binary.source);
        self.job(name, Some(binary.announcement()), slow_kind, binary.command())
    }

    fn job(&self, name: String, header: Option<String>, slow_kind: bool, mut command: Command) -> Job {
        command.env("WMCO_BIN", &self.wmco).env("WMCO_REAL_PAYLOAD", &self.real_payload).env("WMCO_IMAGE", &self.image);
        Job { name, header, slow_kind, command }
    }
}

/// The README's main command as a newcomer runs it (one host, until it is Ready): `cargo xtask sandbox` through this
/// executable, whose builds are done by now.
fn sandbox_command() -> anyhow::Result<Command> {
    let xtask = std::env::current_exe().context("cannot find the running xtask executable")?;
    let mut command = Command::new(xtask);
    command.args(["sandbox", "--hosts", "1", "--exit-when-ready", "--timeout", "600"]).current_dir(workspace_root());
    Ok(command)
}

fn pool_paths() -> PoolPaths {
    PoolPaths { logs: target_dir().join("test-output"), durations: cache_root().join("test-durations.tsv") }
}

fn run_pool(environment: &TestEnvironment, workers: usize) -> anyhow::Result<crate::test_pool::PoolOutcome> {
    let mut stdout = std::io::stdout();
    crate::test_pool::run(environment.jobs()?, workers, &pool_paths(), &mut stdout)
}

fn run_once(clock: &mut StageClock, environment: &TestEnvironment, workers: usize) -> anyhow::Result<()> {
    let outcome = clock.time("test", || run_pool(environment, workers))?;
    print_totals(&outcome.tests);
    if !outcome.success() {
        let failed: Vec<&str> = outcome
            .results
            .iter()
            .filter(|result| !result.status.is_some_and(|status| status.success()))
            .map(|result| result.name.as_str())
            .collect();
        bail!("stage test: {} job(s) failed: {}", failed.len(), failed.join(", "));
    }
    Ok(())
}

/// Runs the test stage `runs` times, then prints the table of tests that were not green every time with the
/// totals; fails if any run failed.
fn run_repeated(
    clock: &mut StageClock,
    runs: u32,
    environment: &TestEnvironment,
    workers: usize,
) -> anyhow::Result<()> {
    let mut repetition = Repetition::default();
    for run in 1..=runs {
        println!("==> test run {run}/{runs}");
        let outcome = clock.time(&format!("test {run}/{runs}"), || run_pool(environment, workers))?;
        repetition.add_pool(outcome.success(), outcome.tests);
    }
    print!("{}", repetition.report());
    if !repetition.all_green() {
        bail!("stage test: not every test was green in all {runs} runs (see the table above)");
    }
    Ok(())
}

/// The plain closing line: `N passed, N failed, N ignored` over every test binary.
fn print_totals(tests: &crate::repeat::RunOutcome) {
    let (passed, failed, ignored) = tests.totals();
    println!("{passed} passed, {failed} failed, {ignored} ignored");
}
