//! `cargo xtask man [--output DIR]`: the man pages of `wmco` — `wmco.1` and one page per subcommand
//! (`wmco-ssh-check.1`, `wmco-status.1`, …) — in `<target dir>/man` by default. Builds `wmco` and runs its hidden
//! `generate-man-pages DIR`, which renders them with clap_mangen from the binary's own clap definition: that
//! definition is built from library types (the operator's flags among them), so running the binary keeps kube and
//! the operator out of xtask's build, and the pages describe exactly the flags the binary parses.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context as _, ensure};
use clap::Args;

use crate::image::target_dir;
use crate::sandbox::{Profile, build_wmco_with};

/// Options of `cargo xtask man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The directory to write the pages into (default: `man` in the cargo target directory).
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
}

/// Builds `wmco` and writes its man pages.
pub fn run(args: &ManArgs) -> anyhow::Result<()> {
    let wmco = build_wmco_with(Profile::Dev)?;
    let dir = args.output.clone().unwrap_or_else(|| target_dir().join("man"));
    let output = Command::new(&wmco)
        .arg("generate-man-pages")
        .arg(&dir)
        .output()
        .with_context(|| format!("cannot run {}", wmco.display()))?;
    ensure!(
        output.status.success(),
        "{} generate-man-pages {} failed ({}): {}",
        wmco.display(),
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let pages = String::from_utf8_lossy(&output.stdout).lines().count();
    println!("wrote {pages} man pages into {} (read one with `man -l {}/wmco.1`)", dir.display(), dir.display());
    Ok(())
}
