//! The `deny` stage of `cargo xtask test`: `cargo deny check licenses bans sources` against the root `deny.toml`
//! (allowed licenses, tolerated duplicate crates, crates.io as the only source). The pinned cargo-deny is installed
//! once into `${WMCO_CACHE:-~/.cache/wmco-rs}/tools` and reused afterwards.
//!
//! `advisories` is not checked: it needs the RustSec advisory database, cloned from GitHub, and CI machines reach
//! only package registries (see `deny.toml` and `docs/testing.md`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::payload::cache_root;
use crate::stages::{cargo, describe, workspace_root};

/// The cargo-deny release the stage runs (`cargo info cargo-deny`); a cached binary of another version is replaced.
pub const CARGO_DENY_VERSION: &str = "0.20.2";

/// The checks of the stage, in cargo-deny's order; `advisories` is left out on purpose (see the module doc).
pub const CHECKS: [&str; 3] = ["licenses", "bans", "sources"];

/// The cached cargo-deny binary, installed first when it is missing or of another version than
/// [`CARGO_DENY_VERSION`] (a few minutes of compiling, once per machine).
pub fn install() -> anyhow::Result<PathBuf> {
    let root = cache_root().join("tools");
    let binary = root.join("bin").join("cargo-deny");
    if installed_version(&binary).as_deref() == Some(CARGO_DENY_VERSION) {
        println!("cargo-deny {CARGO_DENY_VERSION} already installed: {}", binary.display());
        return Ok(binary);
    }
    let mut install = cargo();
    install.args(["install", "cargo-deny", "--locked", "--version", CARGO_DENY_VERSION, "--root"]).arg(&root);
    println!("installing cargo-deny {CARGO_DENY_VERSION}: {}", describe(&install));
    let status = install.status().with_context(|| format!("could not start {}", describe(&install)))?;
    if !status.success() {
        bail!("installing cargo-deny {CARGO_DENY_VERSION} failed ({status}); the command was: {}", describe(&install));
    }
    match installed_version(&binary) {
        Some(version) if version == CARGO_DENY_VERSION => Ok(binary),
        other => bail!(
            "{} reports version {} after installing cargo-deny {CARGO_DENY_VERSION}",
            binary.display(),
            other.as_deref().unwrap_or("nothing")
        ),
    }
}

/// `cargo-deny check licenses bans sources` in the workspace root, with the lock file as it is.
pub fn check_command(cargo_deny: &Path) -> Command {
    let mut command = Command::new(cargo_deny);
    command.current_dir(workspace_root()).args(["deny", "--locked", "check"]).args(CHECKS);
    command
}

/// The version `binary --version` prints (`cargo-deny 0.20.2`), or `None` when it is missing or says nothing else.
fn installed_version(binary: &Path) -> Option<String> {
    let output = Command::new(binary).arg("--version").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    version_from(&text)
}

fn version_from(text: &str) -> Option<String> {
    let version = text.trim().strip_prefix("cargo-deny ")?;
    let version = version.split_whitespace().next()?;
    Some(version.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_cargo_deny_output() {
        assert_eq!(version_from("cargo-deny 0.20.2\n").as_deref(), Some("0.20.2"));
        assert_eq!(version_from("something else 1.0"), None);
    }
}
