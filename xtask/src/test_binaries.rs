//! The test binaries of the workspace, built once by `cargo test --workspace --no-run` and read back from cargo's
//! JSON messages, so [`crate::test_pool`] can run them side by side (cargo runs them one after another).
//!
//! Each binary is run the way `cargo test` runs it: from its package's directory, with the `CARGO_MANIFEST_DIR`,
//! `CARGO_PKG_NAME` and `CARGO_PKG_VERSION` cargo sets, and announced with cargo's own line
//! (`Running tests/byoh.rs (<path>)`, `Running unittests src/lib.rs (<path>)`), so the output reads and parses as
//! a `cargo test` run's. The doc tests stay with cargo (`cargo test --workspace --doc`), as one more job.
//!
//! The same build gives the `wmco` the e2e tests run (`WMCO_BIN`) and the run's image carries: built once, with the
//! features the whole workspace's tests unify (a `cargo build -p wmco` resolves other features for shared crates
//! such as `libc` and `subtle`, and so compiled most of the dependency graph a second time). Those features only add
//! the crates' `testing` modules; no code path of the binary depends on them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use serde_json::Value;

use crate::sandbox::executable_in_messages;
use crate::stages::{cargo, describe};

/// One test executable and where cargo would run it from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestBinary {
    /// The package's name (`wmco-sandbox`).
    pub package: String,
    /// The package's version.
    pub version: String,
    /// The package's directory (the test's working directory).
    pub package_dir: PathBuf,
    /// The source cargo names the binary by: `tests/byoh.rs`, or `unittests src/lib.rs`.
    pub source: String,
    /// Whether it is an integration test (`tests/*.rs`) rather than a crate's unit tests.
    pub integration: bool,
    /// The executable.
    pub executable: PathBuf,
}

impl TestBinary {
    /// Cargo's announcement of the binary: `Running tests/byoh.rs (<executable>)`.
    pub fn announcement(&self) -> String {
        format!("Running {} ({})", self.source, self.executable.display())
    }

    /// The command that runs it as `cargo test` would.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.executable);
        command
            .current_dir(&self.package_dir)
            .env("CARGO_MANIFEST_DIR", &self.package_dir)
            .env("CARGO_PKG_NAME", &self.package)
            .env("CARGO_PKG_VERSION", &self.version);
        command
    }
}

/// What `cargo test --workspace --no-run` built.
#[derive(Debug, Clone)]
pub struct TestBuild {
    /// Every test binary.
    pub binaries: Vec<TestBinary>,
    /// The `wmco` executable (built for `bins/wmco`'s integration tests).
    pub wmco: PathBuf,
}

/// `cargo test --workspace --no-run`: builds every test binary and `wmco` (diagnostics to the terminal).
///
/// # Errors
/// The build fails, or cargo's messages name no test binary or no `wmco` executable.
pub fn build_all() -> anyhow::Result<TestBuild> {
    let mut build = cargo();
    build
        .args(["test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let output = build.output().with_context(|| format!("could not run {}", describe(&build)))?;
    if !output.status.success() {
        bail!("{} failed ({})", describe(&build), output.status);
    }
    let messages = String::from_utf8_lossy(&output.stdout);
    let binaries = from_messages(&messages);
    if binaries.is_empty() {
        bail!("{} reported no test executable", describe(&build));
    }
    let wmco = executable_in_messages(&messages, "wmco")
        .with_context(|| format!("{} reported no wmco executable", describe(&build)))?;
    Ok(TestBuild { binaries, wmco })
}

/// The test binaries among cargo's JSON messages, in the order cargo reported them.
pub fn from_messages(messages: &str) -> Vec<TestBinary> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|message| from_artifact(&message))
        .collect()
}

fn from_artifact(message: &Value) -> Option<TestBinary> {
    if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
        return None;
    }
    let executable = PathBuf::from(message["executable"].as_str()?);
    let manifest = Path::new(message["manifest_path"].as_str()?);
    let package_dir = manifest.parent()?.to_path_buf();
    let src_path = Path::new(message["target"]["src_path"].as_str()?);
    let relative = src_path.strip_prefix(&package_dir).unwrap_or(src_path).display().to_string();
    let integration = message["target"]["kind"].as_array()?.iter().any(|kind| kind == "test");
    let source = if integration { relative } else { format!("unittests {relative}") };
    let (package, version) = package_of(message["package_id"].as_str()?)?;
    Some(TestBinary { package, version, package_dir, source, integration, executable })
}

/// The name and version in a package id: `path+file:///work/main/e2e/sandbox#wmco-sandbox@0.1.0`, or
/// `path+file:///work/main/xtask#0.1.0` when the directory is named after the package.
fn package_of(id: &str) -> Option<(String, String)> {
    let (location, fragment) = id.rsplit_once('#')?;
    match fragment.split_once('@') {
        Some((name, version)) => Some((name.to_owned(), version.to_owned())),
        None => Some((location.rsplit('/').next()?.to_owned(), fragment.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(kind: &str, src: &str, test: bool, executable: Option<&str>) -> String {
        serde_json::json!({
            "reason": "compiler-artifact",
            "package_id": "path+file:///w/e2e/sandbox#wmco-sandbox@0.1.0",
            "manifest_path": "/w/e2e/sandbox/Cargo.toml",
            "target": {"kind": [kind], "name": "x", "src_path": src},
            "profile": {"test": test},
            "executable": executable,
        })
        .to_string()
    }

    #[test]
    fn integration_and_unit_test_binaries_are_named_as_cargo_announces_them() {
        let messages = [
            artifact("test", "/w/e2e/sandbox/tests/byoh.rs", true, Some("/t/debug/deps/byoh-0123456789abcdef")),
            artifact("lib", "/w/e2e/sandbox/src/lib.rs", true, Some("/t/debug/deps/wmco_sandbox-00aa")),
            artifact("lib", "/w/e2e/sandbox/src/lib.rs", false, None),
            artifact("bin", "/w/e2e/sandbox/src/main.rs", false, Some("/t/debug/wmco-sandbox")),
            r#"{"reason":"build-finished","success":true}"#.to_owned(),
        ]
        .join("\n");
        let binaries = from_messages(&messages);
        assert_eq!(binaries.len(), 2);
        assert_eq!(binaries[0].announcement(), "Running tests/byoh.rs (/t/debug/deps/byoh-0123456789abcdef)");
        assert!(binaries[0].integration);
        assert_eq!(binaries[1].source, "unittests src/lib.rs");
        assert!(!binaries[1].integration);
        assert_eq!(binaries[1].package, "wmco-sandbox");
        assert_eq!(binaries[1].version, "0.1.0");
        assert_eq!(binaries[1].package_dir, Path::new("/w/e2e/sandbox"));
    }

    #[test]
    fn a_package_id_without_a_name_takes_the_directory_name() {
        assert_eq!(package_of("path+file:///w/xtask#0.1.0"), Some(("xtask".to_owned(), "0.1.0".to_owned())));
        assert_eq!(package_of("registry+https://x#serde@1.0.0"), Some(("serde".to_owned(), "1.0.0".to_owned())));
    }
}
