//! `cargo xtask payload build|smoke|synthetic`: the Windows node payload. `build` cross-compiles the real payload
//! from the pinned upstream Go modules into a cache outside the clone; `smoke` runs every binary's version command
//! under Wine; `synthetic` writes the test-only synthetic payload.

mod build;
mod smoke;
mod synthetic;

use clap::{Args, Subcommand};

pub use build::{build_real_payload, cache_root};
pub use smoke::smoke as smoke_real_payload;

/// Options of `cargo xtask payload`.
#[derive(Debug, Args)]
pub struct PayloadArgs {
    #[command(subcommand)]
    action: PayloadAction,
}

#[derive(Debug, Subcommand)]
enum PayloadAction {
    /// Build the real payload: every Go component of `payload/manifest.yaml` cross-compiled for Windows from its
    /// pinned module (`payload/build/<build>/go.mod`), plus the product's files and `sha256sum`, cached under
    /// `${WMCO_CACHE:-~/.cache/wmco-rs}/payload/real-<inputs hash>/`; skipped when that directory exists.
    Build(build::BuildArgs),
    /// Run each built binary's version command under Wine and check it prints the manifest's version.
    Smoke(smoke::SmokeArgs),
    /// Write a synthetic payload (deterministic pseudo-random binaries, real scripts, sha256sum, the SYNTHETIC
    /// marker) for tests and benchmarks. Never installable: `wmco run` refuses it without
    /// `--allow-synthetic-payload`.
    Synthetic(synthetic::PayloadSyntheticArgs),
}

/// Runs the chosen action.
pub fn run(args: &PayloadArgs) -> anyhow::Result<()> {
    match &args.action {
        PayloadAction::Build(build_args) => build::run(build_args).map(|_| ()),
        PayloadAction::Smoke(smoke_args) => smoke::run(smoke_args),
        PayloadAction::Synthetic(synthetic_args) => synthetic::run(synthetic_args),
    }
}
