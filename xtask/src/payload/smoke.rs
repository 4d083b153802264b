//! `cargo xtask payload smoke [--payload DIR]`: runs every built binary of the payload under Wine with its manifest
//! `version_check` arguments and checks that the output names the manifest's version (`wmco-wine` prepares the
//! prefix with the `bcryptprimitives.dll` stub that Go ≥ 1.22 binaries need under Wine 8.0). A binary that keeps
//! running after it printed its version (csi-proxy serves) is stopped once the expected text appears. A run that
//! ends without printing anything at all is run once more and said so: Wine 8.0 rarely ends a start that way right
//! after the previous program was stopped (seen once in CI, on `windows_exporter.exe` after `csi-proxy.exe`), while
//! a wrong version or a crash prints something and fails at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use wmco_payload_manifest::{MANIFEST_PATH_IN_WORKSPACE, Manifest, Source};
use wmco_wine::{WineError, WinePrefix};

use super::build::build_real_payload;
use crate::stages::workspace_root;

/// How long one binary may take to print its version (Wine's first start in a prefix is slow).
const VERSION_DEADLINE: Duration = Duration::from_secs(90);

/// Options of `cargo xtask payload smoke`.
#[derive(Debug, Args)]
pub struct SmokeArgs {
    /// The payload to smoke-test; default: the real payload, built first if needed.
    #[arg(long, value_name = "DIR")]
    pub payload: Option<PathBuf>,
}

/// Runs every version check and fails naming each binary whose output lacks its manifest version.
pub fn run(args: &SmokeArgs) -> anyhow::Result<()> {
    let payload_dir = match &args.payload {
        Some(dir) => dir.clone(),
        None => build_real_payload()?.dir,
    };
    smoke(&payload_dir)
}

/// Smoke-tests the payload at `payload_dir` under Wine.
pub fn smoke(payload_dir: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let manifest = Manifest::load(&workspace_root().join(MANIFEST_PATH_IN_WORKSPACE))?;
    let wine = WinePrefix::prepare()?;
    println!("Wine prefix {} ready in {:.1} s", wine.path().display(), started.elapsed().as_secs_f64());
    let mut failures = Vec::new();
    let mut checked = 0;
    for entry in manifest.files() {
        let (Source::Go(_), Some(check)) = (&entry.component.source, &entry.file.version_check) else { continue };
        let binary = entry.file.path.under(payload_dir);
        let args: Vec<&str> = check.args.iter().map(String::as_str).collect();
        let run_started = Instant::now();
        let mut outcome = wine.run_until(&binary, &args, &check.expect, VERSION_DEADLINE);
        if let Err(WineError::NotPrinted { ended, tail, .. }) = &outcome
            && tail.is_empty()
        {
            println!("  again {:<43} its first run {ended} without printing anything", entry.file.path.as_str());
            outcome = wine.run_until(&binary, &args, &check.expect, VERSION_DEADLINE);
        }
        let seconds = run_started.elapsed().as_secs_f64();
        checked += 1;
        match outcome {
            Ok(line) => println!("  ok   {:<44} {seconds:>5.1} s  {line}", entry.file.path.as_str()),
            Err(error) => {
                println!("  FAIL {:<44} {seconds:>5.1} s  {error}", entry.file.path.as_str());
                failures.push(format!("{}: {error}", entry.file.path));
            }
        }
    }
    wine.shut_down();
    if !failures.is_empty() {
        bail!(
            "{} of {checked} binaries did not print their manifest version under Wine:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    }
    println!(
        "all {checked} binaries printed their manifest version under Wine in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
