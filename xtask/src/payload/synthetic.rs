//! `cargo xtask payload synthetic --out DIR [--scale real|small]`: writes a synthetic payload for the workspace's
//! `payload/manifest.yaml` (see `wmco_payload_manifest::write_synthetic_payload`) and prints what it wrote.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, ValueEnum};
use wmco_payload_manifest::{MANIFEST_PATH_IN_WORKSPACE, Manifest, SyntheticScale, write_synthetic_payload};

use crate::stages::workspace_root;

/// Options of `cargo xtask payload synthetic`.
#[derive(Debug, Args)]
pub struct PayloadSyntheticArgs {
    /// The directory to write the payload into (created if absent).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// `real` for realistic file sizes (kubelet ≈ 120 MiB, ≈ 430 MiB in all), `small` for a few KiB per file.
    #[arg(long, value_enum, default_value_t = Scale::Small)]
    scale: Scale,
}

/// The size of the synthetic files.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Scale {
    Real,
    Small,
}

/// Writes the synthetic payload and prints its file count, size and the time it took.
pub fn run(args: &PayloadSyntheticArgs) -> anyhow::Result<()> {
    let manifest_path = workspace_root().join(MANIFEST_PATH_IN_WORKSPACE);
    let manifest = Manifest::load(&manifest_path)?;
    let product_files_dir = manifest_path.parent().context("the manifest path has no parent directory")?;
    let scale = match args.scale {
        Scale::Real => SyntheticScale::Real,
        Scale::Small => SyntheticScale::Small,
    };
    let started = Instant::now();
    let payload = write_synthetic_payload(&manifest, product_files_dir, &args.out, scale)?;
    println!(
        "wrote synthetic payload {}: {} files, {} bytes ({:.1} MiB) in {:.2} s",
        payload.dir.display(),
        payload.digests.len(),
        payload.total_bytes,
        payload.total_bytes as f64 / (1024.0 * 1024.0),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
