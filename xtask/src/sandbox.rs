//! `cargo xtask sandbox`: the product's main job on one machine. Builds what it needs — the control-plane binaries
//! (once, cached outside the clone), and `wmco` with the `wmco-sandbox` program (`e2e/sandbox`) in one cargo build —
//! then runs the program:
//! the control plane, N simulated Windows hosts, the OVN stand-in and the operator, the `windows-instances`
//! ConfigMap for every host, and a line per change until all are Ready. `--payload real` serves the real payload
//! (`cargo xtask payload build`, cached) instead of the small synthetic one; `--image` runs the operator from its
//! image (`cargo xtask image`) the way a kubelet runs its pod.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use crate::controlplane;
use crate::payload::build_real_payload;
use crate::stages::{cargo, describe, workspace_root};

/// Which payload the operator serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum PayloadChoice {
    /// The small synthetic payload (pseudo-random stand-ins for the binaries, a few MiB; written once and cached);
    /// the operator runs with `--allow-synthetic-payload`.
    #[default]
    Small,
    /// The real payload: the Windows binaries cross-compiled by `cargo xtask payload build` (about 300 MiB per
    /// host; built once and cached, long the first time); the operator runs without `--allow-synthetic-payload`.
    Real,
}

impl PayloadChoice {
    /// The payload directory to pass to the sandbox program: `None` for the small payload (the program writes or
    /// finds it itself), the real payload's directory after building it if needed.
    pub fn payload_dir(self) -> anyhow::Result<Option<PathBuf>> {
        match self {
            PayloadChoice::Small => Ok(None),
            PayloadChoice::Real => Ok(Some(build_real_payload().context("building the real payload")?.dir)),
        }
    }
}

/// The cargo profile `wmco` is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// `cargo build` (the default `dev` profile: fast to build, slow to run).
    Dev,
    /// `cargo build --release`.
    Release,
}

/// Options of `cargo xtask sandbox`.
#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// How many simulated Windows hosts to start (the last one is named `localhost` in the ConfigMap).
    #[arg(long, default_value_t = 3)]
    pub hosts: u8,
    /// Exit 0 once every instance is Ready instead of staying up until Ctrl-C (non-zero on timeout).
    #[arg(long)]
    pub exit_when_ready: bool,
    /// How long the hosts may take to become Ready, in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Keep the sandbox directory (operator log, hosts' disks) after exit.
    #[arg(long)]
    pub keep: bool,
    /// Which payload the operator serves: `small` (fast, the default) or `real` (built first if not cached).
    #[arg(long, value_enum, default_value_t = PayloadChoice::Small)]
    pub payload: PayloadChoice,
    /// Run the operator from its image (`cargo xtask image`, built first if needed) the way a kubelet runs the
    /// Deployment's pod; the image carries the real payload.
    #[arg(long, conflicts_with = "payload")]
    pub image: bool,
}

/// Builds the control plane and `wmco`, then runs the sandbox program in the foreground.
pub fn run(args: &SandboxArgs) -> anyhow::Result<()> {
    run_checked(crate::deps::install_command(), "installing the Debian packages the sandbox needs")?;
    run_checked(controlplane::build_command(), "building the control plane")?;
    let payload_dir = if args.image { None } else { args.payload.payload_dir()? };
    let image = if args.image { Some(crate::image::build_operator_image(None, None)?.archive) } else { None };
    let [wmco, program] = build_dev_binaries([("wmco", "wmco"), ("wmco-sandbox", "wmco-sandbox")])?;
    let mut sandbox = Command::new(program);
    sandbox.current_dir(workspace_root());
    sandbox.arg(format!("--hosts={}", args.hosts)).arg(format!("--timeout={}", args.timeout)).env("WMCO_BIN", &wmco);
    if args.exit_when_ready {
        sandbox.arg("--exit-when-ready");
    }
    if args.keep {
        sandbox.arg("--keep");
    }
    if let Some(dir) = payload_dir {
        sandbox.arg("--payload-dir").arg(dir);
    }
    if let Some(archive) = image {
        sandbox.arg("--image").arg(archive);
    }
    run_checked(sandbox, "the sandbox")
}

/// The dev-profile executables of `(package, binary)` pairs, built by one `cargo build` so the packages share one
/// resolution of their dependencies' features (two builds, `-p wmco` then `-p wmco-sandbox`, resolve different
/// features for crates such as `rustix` and compile them, and all that depends on them, twice).
pub fn build_dev_binaries<const N: usize>(wanted: [(&str, &str); N]) -> anyhow::Result<[PathBuf; N]> {
    let mut build = cargo();
    build.args(["build", "--message-format=json-render-diagnostics"]);
    for (package, binary) in wanted {
        build.args(["--package", package, "--bin", binary]);
    }
    build.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let output = build.output().with_context(|| format!("could not run {}", describe(&build)))?;
    if !output.status.success() {
        bail!("{} failed ({})", describe(&build), output.status);
    }
    let messages = String::from_utf8_lossy(&output.stdout);
    let mut found = Vec::with_capacity(N);
    for (_, binary) in wanted {
        let executable = executable_in_messages(&messages, binary)
            .with_context(|| format!("{} reported no {binary} executable", describe(&build)))?;
        found.push(executable);
    }
    found.try_into().map_err(|_| anyhow::anyhow!("{} executables for {N} binaries", N))
}

/// `cargo build -p wmco` with `profile`; returns the path of the built executable (read from cargo's JSON
/// messages, so any `CARGO_TARGET_DIR` or profile works). Compiler diagnostics go to the terminal.
pub fn build_wmco_with(profile: Profile) -> anyhow::Result<PathBuf> {
    let mut build = cargo();
    build.args(["build", "--package", "wmco", "--bin", "wmco", "--message-format=json-render-diagnostics"]);
    if profile == Profile::Release {
        build.arg("--release");
    }
    build.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let what = match profile {
        Profile::Dev => "cargo build -p wmco",
        Profile::Release => "cargo build --release -p wmco",
    };
    let output = build.output().with_context(|| format!("could not run {what}"))?;
    if !output.status.success() {
        bail!("{what} failed ({})", output.status);
    }
    executable_in_messages(&String::from_utf8_lossy(&output.stdout), "wmco")
        .with_context(|| format!("{what} reported no wmco executable"))
}

/// The `executable` of the `compiler-artifact` message for binary target `name`.
pub fn executable_in_messages(messages: &str, name: &str) -> Option<PathBuf> {
    messages.lines().filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok()).find_map(|message| {
        let is_target = message["reason"] == "compiler-artifact"
            && message["target"]["name"] == name
            && message["profile"]["test"] != true;
        let executable = message["executable"].as_str()?;
        is_target.then(|| PathBuf::from(executable))
    })
}

/// Runs `command` in the foreground; fails naming `what` if it does.
pub fn run_checked(mut command: Command, what: &str) -> anyhow::Result<()> {
    let status = command.status().with_context(|| format!("{what}: could not start {command:?}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wmco_executable_is_read_from_its_artifact_message() {
        let messages = concat!(
            r#"{"reason":"compiler-artifact","target":{"name":"wmco_operator"},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"name":"wmco"},"profile":{"test":true},"executable":"/t/x"}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"name":"wmco"},"executable":"/t/debug/wmco"}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(executable_in_messages(messages, "wmco"), Some(PathBuf::from("/t/debug/wmco")));
        assert_eq!(executable_in_messages(messages, "xtask"), None);
    }
}
