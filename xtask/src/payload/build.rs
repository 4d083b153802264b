//! `cargo xtask payload build [--out DIR]`: the real Windows payload.
//!
//! Every Go-built file of `payload/manifest.yaml` is compiled with `GOOS=windows GOARCH=amd64 CGO_ENABLED=0
//! GOTOOLCHAIN=local go build -trimpath -ldflags "-s -w -X ..."` inside its wrapper module `payload/build/<build>/`,
//! whose `go.mod` and `go.sum` pin upstream's build list (`-mod=readonly`: a module whose hash is not pinned there
//! fails the build). The product's own files are copied beside them and `sha256sum` written last. The result lives
//! in `${WMCO_CACHE:-~/.cache/wmco-rs}/payload/real-<inputs hash>/`: the hash covers the manifest's sources, every wrapper
//! module, the product's files, this builder's source and the Go version, so an unchanged tree is not rebuilt. The
//! payload is built in a `.partial` directory and renamed, so an interrupted build never looks complete. Go's module
//! and build caches are shared with the control-plane build (`go/mod`, `go/build` under the same cache root).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use sha2::{Digest, Sha256};
use wmco_payload_manifest::{
    CHECKSUM_FILE_NAME, ChecksumList, MANIFEST_PATH_IN_WORKSPACE, Manifest, Payload, Sha256Digest, Source,
};

use crate::stages::workspace_root;

/// This file's text: a change to how the payload is built changes the cache key.
const BUILDER_SOURCE: &str = include_str!("build.rs");

/// Where the wrapper modules live, relative to the workspace root.
const BUILD_MODULES_DIR: &str = "payload/build";

/// Options of `cargo xtask payload build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Also place a copy of the payload in DIR (absent or empty).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// A built real payload.
#[derive(Debug, Clone)]
pub struct RealPayload {
    /// The cached payload directory.
    pub dir: PathBuf,
}

/// Builds (or finds) the real payload and, with `--out`, places a copy there.
pub fn run(args: &BuildArgs) -> anyhow::Result<RealPayload> {
    let payload = build_real_payload()?;
    if let Some(out) = &args.out {
        place_copy(&payload.dir, out)?;
        println!("payload copied to {}", out.display());
    }
    Ok(payload)
}

/// Builds the real payload into the cache unless the current inputs were already built; returns its directory.
pub fn build_real_payload() -> anyhow::Result<RealPayload> {
    let started = Instant::now();
    let root = workspace_root();
    let manifest_path = root.join(MANIFEST_PATH_IN_WORKSPACE);
    let manifest = Manifest::load(&manifest_path)?;
    let cache = cache_root();
    let go = GoToolchain::new(&cache)?;
    let key = inputs_hash(&root, &manifest, &go)?;
    let dir = cache.join("payload").join(format!("real-{}", &key[..16]));
    if dir.join(CHECKSUM_FILE_NAME).is_file() {
        println!("real payload up to date: {} ({:.2} s)", dir.display(), started.elapsed().as_secs_f64());
        return Ok(RealPayload { dir });
    }

    let partial = dir.with_file_name(format!(".real-{}.partial-{}", &key[..16], std::process::id()));
    if partial.exists() {
        fs::remove_dir_all(&partial).with_context(|| format!("removing {}", partial.display()))?;
    }
    fs::create_dir_all(&partial).with_context(|| format!("creating {}", partial.display()))?;
    println!("building the real payload into {} ({})", dir.display(), go.version);
    let built = build_into(&root, &manifest, &go, &partial);
    if let Err(error) = built {
        // Keep nothing that could be mistaken for a payload; the Go build cache keeps the finished work.
        let _ = fs::remove_dir_all(&partial);
        return Err(error);
    }
    Payload::load(&partial, &manifest).context("the freshly built payload does not verify")?;
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing the stale {}", dir.display()))?;
    }
    fs::rename(&partial, &dir).with_context(|| format!("renaming {} to {}", partial.display(), dir.display()))?;
    println!("real payload built: {} in {:.1} s", dir.display(), started.elapsed().as_secs_f64());
    Ok(RealPayload { dir })
}

/// The cache root: `$WMCO_CACHE`, or `~/.cache/wmco-rs`.
pub fn cache_root() -> PathBuf {
    if let Some(explicit) = std::env::var_os("WMCO_CACHE") {
        return PathBuf::from(explicit);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache/wmco-rs")
}

/// The Go toolchain on PATH, with the project's caches and no toolchain downloads.
struct GoToolchain {
    version: String,
    module_cache: PathBuf,
    build_cache: PathBuf,
}

impl GoToolchain {
    fn new(cache: &Path) -> anyhow::Result<Self> {
        let output = Command::new("go").arg("version").env("GOTOOLCHAIN", "local").output().context(
            "cannot run `go version`: the real payload is built with the machine's Go (1.26 here); install Go",
        )?;
        if !output.status.success() {
            bail!("`go version` failed: {}", String::from_utf8_lossy(&output.stderr).trim());
        }
        Ok(Self {
            version: String::from_utf8_lossy(&output.stdout).trim().to_owned(),
            module_cache: cache.join("go/mod"),
            build_cache: cache.join("go/build"),
        })
    }

    /// `go build` for Windows x86-64 in `module_dir`, writing `output`.
    fn build(&self, module_dir: &Path, import_path: &str, ldflags: &str, output: &Path) -> Command {
        let mut command = Command::new("go");
        command
            .current_dir(module_dir)
            .args(["build", "-trimpath", "-ldflags", ldflags, "-o"])
            .arg(output)
            .arg(import_path)
            .env("GOOS", "windows")
            .env("GOARCH", "amd64")
            .env("CGO_ENABLED", "0")
            .env("GOTOOLCHAIN", "local")
            .env("GOFLAGS", "-mod=readonly")
            .env("GOMODCACHE", &self.module_cache)
            .env("GOCACHE", &self.build_cache)
            .env_remove("GOWORK");
        command
    }
}

/// The hex SHA-256 of everything the payload is built from: the Go version, this builder, the build-shaping part
/// of the manifest, the wrapper modules and the product files.
fn inputs_hash(root: &Path, manifest: &Manifest, go: &GoToolchain) -> anyhow::Result<String> {
    let mut hasher = Sha256::new();
    let mut add = |label: &str, bytes: &[u8]| {
        hasher.update((label.len() as u64).to_le_bytes());
        hasher.update(label.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    add("go version", go.version.as_bytes());
    add("builder", BUILDER_SOURCE.as_bytes());
    // What of the manifest shapes the binaries: each component's source and each file's path and package (not
    // comments, sizes or version checks, so editing those does not rebuild).
    for component in &manifest.components {
        add("component", component.name.as_bytes());
        add("source", format!("{:?}", component.source).as_bytes());
        for file in &component.files {
            add("file", format!("{} {:?}", file.path, file.package).as_bytes());
        }
    }
    let manifest_path = root.join(MANIFEST_PATH_IN_WORKSPACE);
    let mut modules: Vec<&str> = manifest
        .components
        .iter()
        .filter_map(|component| match &component.source {
            Source::Go(source) => Some(source.build.as_str()),
            Source::Product => None,
        })
        .collect();
    modules.sort_unstable();
    modules.dedup();
    for module in modules {
        for file in ["go.mod", "go.sum"] {
            let path = root.join(BUILD_MODULES_DIR).join(module).join(file);
            add(&format!("{module}/{file}"), &fs::read(&path).with_context(|| format!("reading {}", path.display()))?);
        }
    }
    let product_dir = manifest_path.parent().context("the manifest path has no parent")?;
    for entry in manifest.files().filter(|entry| matches!(entry.component.source, Source::Product)) {
        let path = entry.file.path.under(product_dir);
        add(entry.file.path.as_str(), &fs::read(&path).with_context(|| format!("reading {}", path.display()))?);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Builds every file of the manifest into `out` and writes `sha256sum`.
fn build_into(root: &Path, manifest: &Manifest, go: &GoToolchain, out: &Path) -> anyhow::Result<()> {
    let product_dir = root.join(MANIFEST_PATH_IN_WORKSPACE);
    let product_dir = product_dir.parent().context("the manifest path has no parent")?;
    let mut checksums = ChecksumList::default();
    let mut total_bytes = 0;
    println!("  {:<28} {:<44} {:>9} {:>8}", "component", "file", "MiB", "seconds");
    for component in &manifest.components {
        let component_started = Instant::now();
        for file in &component.files {
            let target = file.path.under(out);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
            }
            let file_started = Instant::now();
            match &component.source {
                Source::Product => {
                    let source = file.path.under(product_dir);
                    fs::copy(&source, &target)
                        .with_context(|| format!("copying {} to {}", source.display(), target.display()))?;
                }
                Source::Go(source) => {
                    let package = file.package.as_deref().with_context(|| {
                        format!("component {}: file {} names no package", component.name, file.path)
                    })?;
                    let module_dir = root.join(BUILD_MODULES_DIR).join(&source.build);
                    let import_path = source.import_path(package);
                    let mut command = go.build(&module_dir, &import_path, &source.ldflags(), &target);
                    let status = command.status().with_context(|| format!("running go build {import_path}"))?;
                    if !status.success() {
                        bail!(
                            "component {}: go build {import_path} in {} failed ({status})",
                            component.name,
                            module_dir.display()
                        );
                    }
                }
            }
            let (digest, size) =
                Sha256Digest::of_file(&target).with_context(|| format!("hashing {}", target.display()))?;
            checksums.digests.insert(file.path.clone(), digest);
            total_bytes += size;
            println!(
                "  {:<28} {:<44} {:>9.1} {:>8.1}",
                component.name,
                file.path.as_str(),
                size as f64 / (1024.0 * 1024.0),
                file_started.elapsed().as_secs_f64()
            );
        }
        if component.files.len() > 1 {
            println!(
                "  {:<28} {:<44} {:>9} {:>8.1}",
                component.name,
                "(all files)",
                "",
                component_started.elapsed().as_secs_f64()
            );
        }
    }
    let checksum_path = out.join(CHECKSUM_FILE_NAME);
    fs::write(&checksum_path, checksums.render()).with_context(|| format!("writing {}", checksum_path.display()))?;
    println!("  total {:.1} MiB in {} files", total_bytes as f64 / (1024.0 * 1024.0), checksums.digests.len());
    Ok(())
}

/// Places a copy of the payload at `out` (absent or empty). Copies, never hard links: the cache must not change when
/// someone edits the copy.
fn place_copy(payload: &Path, out: &Path) -> anyhow::Result<()> {
    if out.exists() && fs::read_dir(out).with_context(|| format!("reading {}", out.display()))?.next().is_some() {
        bail!("--out {}: the directory is not empty", out.display());
    }
    copy_tree(payload, out)
}

fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&source, &target)?;
        } else {
            fs::copy(&source, &target)
                .with_context(|| format!("copying {} to {}", source.display(), target.display()))?;
        }
    }
    Ok(())
}
