//! The synthetic payload: a payload directory with every file the manifest names, for tests and benchmarks.
//! Built files are deterministic pseudo-random bytes of a realistic (`Real`) or tiny (`Small`) size; product files
//! (scripts, configuration) are copied from the workspace so the simulated hosts run the real scripts. The
//! directory also gets a `SYNTHETIC` marker and its `sha256sum`.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::checksums::{CHECKSUM_FILE_NAME, ChecksumList};
use crate::manifest::{Manifest, SYNTHETIC_MARKER_FILE_NAME, Source};
use crate::{PayloadPath, Sha256Digest};

const MARKER_TEXT: &str = "This is a synthetic wmco payload for tests and benchmarks. Its binaries are \
pseudo-random bytes, not programs. Written by wmco_payload_manifest::write_synthetic_payload.\n";

/// Bytes generated per write.
const WRITE_BLOCK_BYTES: usize = 256 * 1024;

/// How large the synthetic built files are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyntheticScale {
    /// Each file has its manifest `typical_size` (kubelet ≈ 120 MiB): for benchmarks of hashing and transfer.
    Real,
    /// Each file is a few KiB (its typical size / 16384, between 1 KiB and 8 KiB): for CI and e2e.
    Small,
}

impl SyntheticScale {
    /// The size of a synthetic file whose real build is `typical_bytes` long.
    pub fn size_of(self, typical_bytes: u64) -> u64 {
        match self {
            SyntheticScale::Real => typical_bytes,
            SyntheticScale::Small => (typical_bytes / 16384).clamp(1024, 8192),
        }
    }
}

/// What the generator wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyntheticPayload {
    /// The payload directory.
    pub dir: PathBuf,
    /// Every file written (marker included, `sha256sum` excluded) with its digest.
    pub digests: BTreeMap<PayloadPath, Sha256Digest>,
    /// Total bytes written, `sha256sum` excluded.
    pub total_bytes: u64,
}

/// The synthetic payload could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SyntheticError {
    /// A product file is missing from the workspace directory it is copied from.
    #[error("cannot read product file {path} (component {component}); pass the workspace's payload/ directory")]
    ReadProductFile {
        /// The component declaring it.
        component: String,
        /// The local path tried.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// A built file has no `typical_size` (a manifest that skipped validation).
    #[error("manifest file {path} has no typical_size; cannot choose a synthetic size")]
    NoTypicalSize {
        /// The payload path.
        path: PayloadPath,
    },
    /// Writing into the output directory failed.
    #[error("cannot write synthetic payload file {path}")]
    Write {
        /// The local path being written.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
}

/// Writes a synthetic payload for `manifest` into `out_dir` (created if absent; files already there with the same
/// names are overwritten). Product files are copied from `product_files_dir`, normally the workspace's `payload/`
/// directory (see [`crate::MANIFEST_PATH_IN_WORKSPACE`]). Every component is written, whatever its platforms.
/// The same manifest, scale and product files always give byte-identical output.
///
/// ```
/// use wmco_payload_manifest::{Manifest, SyntheticScale, write_synthetic_payload};
///
/// let manifest = Manifest::from_yaml(r#"
/// schema: wmco.payload/v1
/// components:
///   - name: kubelet
///     version: v1.36.3
///     source: { go: { module: k8s.io/kubernetes, version: v1.36.3, build: kubernetes } }
///     required: true
///     files:
///       - path: kubelet.exe
///         destination: 'C:\k\kubelet.exe'
///         typical_size: 120MiB
///         package: ./cmd/kubelet
///         version_check: { args: [--version], expect: Kubernetes v1.36.3 }
/// "#, "example").unwrap();
/// let out = std::env::temp_dir().join(format!("wmco-synthetic-doc-{}", std::process::id()));
/// let payload = write_synthetic_payload(&manifest, std::path::Path::new("."), &out, SyntheticScale::Small).unwrap();
/// assert_eq!(payload.digests.len(), 2); // kubelet.exe and the SYNTHETIC marker
/// assert_eq!(std::fs::metadata(out.join("kubelet.exe")).unwrap().len(), 7680);
/// std::fs::remove_dir_all(&out).unwrap();
/// ```
pub fn write_synthetic_payload(
    manifest: &Manifest,
    product_files_dir: &Path,
    out_dir: &Path,
    scale: SyntheticScale,
) -> Result<SyntheticPayload, SyntheticError> {
    let mut digests = BTreeMap::new();
    let mut total_bytes = 0;
    for entry in manifest.files() {
        let target = entry.file.path.under(out_dir);
        let (digest, size) = match entry.component.source {
            Source::Product => {
                let source_path = entry.file.path.under(product_files_dir);
                let bytes = fs::read(&source_path).map_err(|source| SyntheticError::ReadProductFile {
                    component: entry.component.name.clone(),
                    path: source_path,
                    source,
                })?;
                write_bytes(&target, &bytes)?
            }
            Source::Go(_) => {
                let typical = entry
                    .file
                    .typical_size
                    .ok_or_else(|| SyntheticError::NoTypicalSize { path: entry.file.path.clone() })?;
                write_pseudo_random(&target, &entry.file.path, scale.size_of(typical.bytes()))?
            }
        };
        digests.insert(entry.file.path.clone(), digest);
        total_bytes += size;
    }
    let marker_path = PayloadPath::from_trusted(SYNTHETIC_MARKER_FILE_NAME);
    let (marker_digest, marker_size) = write_bytes(&marker_path.under(out_dir), MARKER_TEXT.as_bytes())?;
    digests.insert(marker_path, marker_digest);
    total_bytes += marker_size;
    let checksums = ChecksumList { digests, bad_lines: Vec::new() };
    write_bytes(&out_dir.join(CHECKSUM_FILE_NAME), checksums.render().as_bytes())?;
    Ok(SyntheticPayload { dir: out_dir.to_path_buf(), digests: checksums.digests, total_bytes })
}

fn create_file(target: &Path) -> Result<io::BufWriter<fs::File>, SyntheticError> {
    let write_error = |source| SyntheticError::Write { path: target.to_path_buf(), source };
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(write_error)?;
    }
    let file = fs::File::create(target).map_err(write_error)?;
    Ok(io::BufWriter::with_capacity(WRITE_BLOCK_BYTES, file))
}

fn write_bytes(target: &Path, bytes: &[u8]) -> Result<(Sha256Digest, u64), SyntheticError> {
    let mut writer = create_file(target)?;
    let write_error = |source| SyntheticError::Write { path: target.to_path_buf(), source };
    writer.write_all(bytes).and_then(|()| writer.flush()).map_err(write_error)?;
    Ok((Sha256Digest::of_bytes(bytes), bytes.len() as u64))
}

fn write_pseudo_random(target: &Path, path: &PayloadPath, size: u64) -> Result<(Sha256Digest, u64), SyntheticError> {
    let write_error = |source| SyntheticError::Write { path: target.to_path_buf(), source };
    let mut writer = create_file(target)?;
    let mut generator = SplitMix64::seeded_by(path);
    let mut hasher = Sha256::new();
    let mut block = vec![0_u8; WRITE_BLOCK_BYTES];
    let mut remaining = size;
    while remaining > 0 {
        let length = usize::try_from(remaining).map_or(WRITE_BLOCK_BYTES, |left| left.min(WRITE_BLOCK_BYTES));
        generator.fill(&mut block[..length]);
        hasher.update(&block[..length]);
        writer.write_all(&block[..length]).map_err(write_error)?;
        remaining -= length as u64;
    }
    writer.flush().map_err(write_error)?;
    Ok((Sha256Digest::from(<[u8; 32]>::from(hasher.finalize())), size))
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, fast generator, ample for filler bytes; seeded from the file's
/// payload path so every file differs and every run is identical.
struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    fn seeded_by(path: &PayloadPath) -> Self {
        let digest = Sha256Digest::of_bytes(path.as_str().as_bytes());
        let mut seed = [0_u8; 8];
        seed.copy_from_slice(&digest.as_bytes()[..8]);
        Self { state: u64::from_le_bytes(seed) }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut mixed = self.state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        mixed ^ (mixed >> 31)
    }

    fn fill(&mut self, bytes: &mut [u8]) {
        for chunk in bytes.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_scale_keeps_files_between_one_and_eight_kib() {
        assert_eq!(SyntheticScale::Small.size_of(120 << 20), 7680);
        assert_eq!(SyntheticScale::Small.size_of(3 << 20), 1024);
        assert_eq!(SyntheticScale::Small.size_of(1 << 30), 8192);
        assert_eq!(SyntheticScale::Real.size_of(120 << 20), 120 << 20);
    }

    #[test]
    fn generator_is_deterministic_per_path_and_differs_between_paths() {
        let path: PayloadPath = "kubelet.exe".parse().unwrap();
        let other: PayloadPath = "kube-proxy.exe".parse().unwrap();
        let mut first = [0_u8; 13];
        let mut second = [0_u8; 13];
        let mut third = [0_u8; 13];
        SplitMix64::seeded_by(&path).fill(&mut first);
        SplitMix64::seeded_by(&path).fill(&mut second);
        SplitMix64::seeded_by(&other).fill(&mut third);
        assert_eq!(first, second);
        assert_ne!(first, third);
    }

    #[test]
    fn splitmix_matches_the_reference_sequence_for_seed_zero() {
        let mut generator = SplitMix64 { state: 0 };
        assert_eq!(generator.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(generator.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }
}
