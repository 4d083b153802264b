//! The sandbox's payload: the `small` synthetic payload of the product manifest, written once into
//! `${WMCO_CACHE:-$HOME/.cache/wmco-rs}/payload/small-<key>/` and reused while the manifest and the product files
//! it copies are unchanged (`<key>` hashes both). A payload appears at its final path only complete: it is written
//! under a temporary name and renamed. [`operator_payload_args`] are the `wmco run` arguments for a payload
//! directory: `--allow-synthetic-payload` only when that directory is synthetic.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use wmco_payload_manifest::{
    MANIFEST_PATH_IN_WORKSPACE, Manifest, SYNTHETIC_MARKER_FILE_NAME, Source, SyntheticScale, write_synthetic_payload,
};

use crate::SandboxError;

/// The workspace root (this crate lives in `e2e/sandbox`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The cache root: `WMCO_CACHE`, else `$HOME/.cache/wmco-rs`, else the system temporary directory.
pub fn cache_root() -> PathBuf {
    if let Some(cache) = std::env::var_os("WMCO_CACHE").filter(|value| !value.is_empty()) {
        return PathBuf::from(cache);
    }
    match std::env::var_os("HOME").filter(|value| !value.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache").join("wmco-rs"),
        None => std::env::temp_dir().join("wmco-rs-cache"),
    }
}

/// The cache key of the synthetic payload: the first 16 hex digits of the SHA-256 over the manifest text and
/// every product file (path and bytes) it copies from `product_files_dir`.
///
/// # Errors
/// [`SandboxError::Io`] if a product file cannot be read.
pub fn payload_key(manifest: &Manifest, manifest_text: &str, product_files_dir: &Path) -> Result<String, SandboxError> {
    let mut hasher = Sha256::new();
    hasher.update(manifest_text.as_bytes());
    for entry in manifest.files().filter(|entry| matches!(entry.component.source, Source::Product)) {
        let path = entry.file.path.under(product_files_dir);
        let bytes = std::fs::read(&path).map_err(SandboxError::io("read product file", &path))?;
        hasher.update(entry.file.path.as_str().as_bytes());
        hasher.update([0]);
        hasher.update(Sha256::digest(&bytes));
    }
    Ok(hex::encode(hasher.finalize())[..16].to_owned())
}

/// Returns the cached `small` synthetic payload of the product manifest, writing it first if absent.
///
/// ```no_run
/// let dir = wmco_sandbox::cached_synthetic_payload()?;
/// assert!(dir.join("SYNTHETIC").is_file());
/// # Ok::<(), wmco_sandbox::SandboxError>(())
/// ```
///
/// # Errors
/// [`SandboxError`] if the manifest, a product file or the cache directory cannot be read or written.
pub fn cached_synthetic_payload() -> Result<PathBuf, SandboxError> {
    let manifest_path = workspace_root().join(MANIFEST_PATH_IN_WORKSPACE);
    let manifest_text = std::fs::read_to_string(&manifest_path)
        .map_err(SandboxError::io("read the payload manifest", &manifest_path))?;
    let manifest = Manifest::from_yaml(&manifest_text, &manifest_path.display().to_string())?;
    let product_files_dir = workspace_root().join("payload");
    let key = payload_key(&manifest, &manifest_text, &product_files_dir)?;
    let payload_root = cache_root().join("payload");
    let final_dir = payload_root.join(format!("small-{key}"));
    if final_dir.is_dir() {
        return Ok(final_dir);
    }
    std::fs::create_dir_all(&payload_root).map_err(SandboxError::io("create directory", &payload_root))?;
    let staging = tempfile::Builder::new()
        .prefix(".small-")
        .tempdir_in(&payload_root)
        .map_err(SandboxError::io("create a staging directory in", &payload_root))?;
    write_synthetic_payload(&manifest, &product_files_dir, staging.path(), SyntheticScale::Small)
        .map_err(|source| SandboxError::Payload { dir: staging.path().to_path_buf(), source })?;
    let staged = staging.keep();
    match std::fs::rename(&staged, &final_dir) {
        Ok(()) => Ok(final_dir),
        // Another process finished the same payload first: keep its copy.
        Err(_) if final_dir.is_dir() => {
            std::fs::remove_dir_all(&staged).map_err(SandboxError::io("remove directory", &staged))?;
            Ok(final_dir)
        }
        Err(source) => Err(SandboxError::Io { action: "rename the staged payload to", path: final_dir, source }),
    }
}

/// The environment variable naming the real payload directory (`cargo xtask test` sets it to the payload
/// `cargo xtask payload build` made).
pub const REAL_PAYLOAD_ENV: &str = "WMCO_REAL_PAYLOAD";

/// The real payload named by `WMCO_REAL_PAYLOAD`; an unset variable or a directory without `sha256sum` is an
/// error saying how to build one, never a silent fallback to the synthetic payload.
///
/// # Errors
/// [`SandboxError::RealPayload`] naming the variable and the command that builds the payload.
pub fn real_payload_from_env() -> Result<PathBuf, SandboxError> {
    let Some(dir) = std::env::var_os(REAL_PAYLOAD_ENV).filter(|value| !value.is_empty()).map(PathBuf::from) else {
        return Err(SandboxError::RealPayload(format!(
            "{REAL_PAYLOAD_ENV} is not set: build the real payload with `cargo xtask payload build` and set \
             {REAL_PAYLOAD_ENV} to the directory it prints (cargo xtask test does both)"
        )));
    };
    if !dir.join(wmco_payload_manifest::CHECKSUM_FILE_NAME).is_file() || is_synthetic_payload(&dir) {
        return Err(SandboxError::RealPayload(format!(
            "{REAL_PAYLOAD_ENV}={} is not a real payload (no sha256sum, or a SYNTHETIC marker)",
            dir.display()
        )));
    }
    Ok(dir)
}

/// The `wmco run` flag that lets the operator start with a synthetic payload.
pub const ALLOW_SYNTHETIC_PAYLOAD_FLAG: &str = "--allow-synthetic-payload";

/// Whether the payload directory `dir` is synthetic: it carries the `SYNTHETIC` marker the synthetic payload
/// generator writes (what `Payload::is_synthetic` reports once `wmco run` has verified it).
pub fn is_synthetic_payload(dir: &Path) -> bool {
    dir.join(SYNTHETIC_MARKER_FILE_NAME).is_file()
}

/// The `wmco run` arguments for the payload directory `dir`: `--payload-dir DIR`, followed by
/// [`ALLOW_SYNTHETIC_PAYLOAD_FLAG`] only if `dir` is synthetic, so a real payload runs without the flag.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// assert_eq!(wmco_sandbox::operator_payload_args(dir.path()).len(), 2);
/// std::fs::write(dir.path().join("SYNTHETIC"), "synthetic")?;
/// assert_eq!(wmco_sandbox::operator_payload_args(dir.path())[2], "--allow-synthetic-payload");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn operator_payload_args(dir: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--payload-dir".into(), dir.into()];
    if is_synthetic_payload(dir) {
        args.push(ALLOW_SYNTHETIC_PAYLOAD_FLAG.into());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
schema: wmco.payload/v1
components:
  - name: scripts
    source: product
    required: true
    files: [{ path: scripts/a.ps1, destination: 'C:\k\a.ps1' }]
"#;

    #[test]
    fn the_key_changes_with_a_product_file_and_with_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("scripts")).unwrap();
        std::fs::write(dir.path().join("scripts/a.ps1"), "Write-Output 1").unwrap();
        let manifest = Manifest::from_yaml(MANIFEST, "test").unwrap();
        let first = payload_key(&manifest, MANIFEST, dir.path()).unwrap();
        assert_eq!(first.len(), 16);
        assert_eq!(payload_key(&manifest, MANIFEST, dir.path()).unwrap(), first);
        std::fs::write(dir.path().join("scripts/a.ps1"), "Write-Output 2").unwrap();
        let changed_file = payload_key(&manifest, MANIFEST, dir.path()).unwrap();
        assert_ne!(changed_file, first);
        let edited = format!("{MANIFEST}# a comment\n");
        assert_ne!(payload_key(&manifest, &edited, dir.path()).unwrap(), changed_file);
    }

    #[test]
    fn a_missing_product_file_names_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = Manifest::from_yaml(MANIFEST, "test").unwrap();
        let error = payload_key(&manifest, MANIFEST, dir.path()).unwrap_err();
        assert!(error.to_string().contains("scripts/a.ps1"), "{error}");
    }

    #[test]
    fn only_a_synthetic_payload_gets_the_allow_flag() {
        let dir = tempfile::tempdir().unwrap();
        let text = |args: Vec<OsString>| -> Vec<String> {
            args.iter().map(|arg| arg.to_string_lossy().into_owned()).collect()
        };
        let path = dir.path().display().to_string();
        assert!(!is_synthetic_payload(dir.path()));
        assert_eq!(text(operator_payload_args(dir.path())), ["--payload-dir", path.as_str()]);
        std::fs::write(dir.path().join(SYNTHETIC_MARKER_FILE_NAME), "synthetic").unwrap();
        assert!(is_synthetic_payload(dir.path()));
        assert_eq!(
            text(operator_payload_args(dir.path())),
            ["--payload-dir", path.as_str(), ALLOW_SYNTHETIC_PAYLOAD_FLAG]
        );
    }
}
