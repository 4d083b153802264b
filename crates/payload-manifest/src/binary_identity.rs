//! Proves that each payload binary is what the manifest claims: a console PE32+ image for x86-64, built by Go 1.18
//! or later from the manifest's main package, in the manifest's module at the manifest's version, for
//! `GOOS=windows GOARCH=amd64` with `CGO_ENABLED=0` and `-trimpath`.
//!
//! - [`inspect_binary`] reads one file: its PE headers (with the `object` crate) and its Go build information
//!   ([`GoBuildInfo`]), reading only the headers and the data sections, never the whole file.
//! - [`check_binary`] / [`identity_mismatches`] compare one manifest file entry with what was found, returning every
//!   [`IdentityMismatch`] (each names the file, the check, the expected and the found value).
//! - [`check_payload_binaries`] does that for every Go-built file of a verified [`Payload`], several at once; a
//!   synthetic payload is reported as [`PayloadBinaryCheck::Synthetic`] and not inspected (its binaries are
//!   pseudo-random bytes).
//!
//! The module owning the main package is found with the longest-prefix rule ([`GoBuildInfo::owner_module`]), so a
//! payload built in a wrapper module (`mod wmco-rs.payload/kubernetes`, `dep k8s.io/kubernetes v1.36.3`) and one
//! built by `go install k8s.io/kubernetes/cmd/kubelet@v1.36.3` (`mod k8s.io/kubernetes v1.36.3`) both pass.
//!
//! The manifest's version variables (`-X name=value`) are compared with the recorded `-ldflags` when Go recorded
//! them. Go leaves `-ldflags` out of the build information of a `-trimpath` build (it may hold local paths, Go
//! issue 52372), so for release builds the version variables are proven by the version check run instead
//! (`cargo xtask payload smoke`); a build without `-trimpath` already fails the `-trimpath` check.

mod build_info;
mod pe_headers;

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use object::read::ReadCache;
use serde::Serialize;

pub use build_info::{
    BuildInfoError, BuildSetting, GO_BUILD_INFO_MAGIC, GoBuildInfo, GoModule, MAX_STRING_LEN, read_go_build_info,
};
pub use pe_headers::{PeFormat, PeHeaders, PeImage};

use crate::manifest::{ComponentFile, GoSource, Manifest, Source};
use crate::parallel::map_in_parallel;
use crate::{Payload, PayloadFile, PayloadPath};

/// What a binary is, as its PE headers and Go build information say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryIdentity {
    /// The PE header facts, or why the file is not a PE image.
    pub pe: PeImage,
    /// The Go build information.
    pub build_info: GoBuildInfo,
}

/// A binary could not be inspected.
#[derive(Debug, thiserror::Error)]
pub enum BinaryIdentityError {
    /// The file could not be opened or read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The file has no usable Go build information.
    #[error("{path} has no usable Go build information")]
    BuildInfo {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: BuildInfoError,
    },
}

/// One way a payload binary is not what the manifest claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IdentityMismatch {
    /// The file, by its payload path.
    pub path: PayloadPath,
    /// What was checked.
    pub check: IdentityCheck,
    /// What the manifest (or the payload format) requires.
    pub expected: String,
    /// What the binary has.
    pub found: String,
}

impl fmt::Display for IdentityMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: expected {}, found {}", self.path, self.check, self.expected, self.found)
    }
}

/// The checks a payload binary goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentityCheck {
    /// The file can be read.
    File,
    /// It is a PE image.
    PeImage,
    /// It is PE32+ (64-bit).
    PeFormat,
    /// Its machine is x86-64.
    Machine,
    /// Its subsystem is the console.
    Subsystem,
    /// It carries Go build information (Go 1.18 or later).
    GoBuildInfo,
    /// Its main package is the manifest's.
    MainPackage,
    /// The module owning the main package is the manifest's.
    Module,
    /// That module's version is the manifest's.
    ModuleVersion,
    /// `GOOS=windows`.
    Goos,
    /// `GOARCH=amd64`.
    Goarch,
    /// `CGO_ENABLED=0`.
    CgoEnabled,
    /// `-trimpath=true`.
    Trimpath,
    /// A `-X name=value` version variable of the manifest is in the recorded `-ldflags`.
    VersionVariable,
}

impl fmt::Display for IdentityCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdentityCheck::File => "file",
            IdentityCheck::PeImage => "PE image",
            IdentityCheck::PeFormat => "PE format",
            IdentityCheck::Machine => "machine",
            IdentityCheck::Subsystem => "subsystem",
            IdentityCheck::GoBuildInfo => "Go build information",
            IdentityCheck::MainPackage => "main package",
            IdentityCheck::Module => "module",
            IdentityCheck::ModuleVersion => "module version",
            IdentityCheck::Goos => "GOOS",
            IdentityCheck::Goarch => "GOARCH",
            IdentityCheck::CgoEnabled => "CGO_ENABLED",
            IdentityCheck::Trimpath => "-trimpath",
            IdentityCheck::VersionVariable => "version variable",
        })
    }
}

/// The outcome of [`check_payload_binaries`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadBinaryCheck {
    /// The payload is synthetic: its binaries are pseudo-random bytes and were not inspected.
    Synthetic,
    /// A real payload: every Go-built file it holds was inspected.
    Real {
        /// How many binaries were checked.
        checked: usize,
        /// Every mismatch, sorted by file (checks of one file in the order above).
        mismatches: Vec<IdentityMismatch>,
    },
}

impl PayloadBinaryCheck {
    /// Whether the payload was synthetic (nothing checked).
    pub fn is_synthetic(&self) -> bool {
        matches!(self, PayloadBinaryCheck::Synthetic)
    }

    /// The mismatches found (none for a synthetic payload).
    pub fn mismatches(&self) -> &[IdentityMismatch] {
        match self {
            PayloadBinaryCheck::Synthetic => &[],
            PayloadBinaryCheck::Real { mismatches, .. } => mismatches,
        }
    }
}

/// Reads the PE headers and the Go build information of the binary at `path`.
///
/// A file that is not a PE image still yields its Go build information (a Linux build has one), with
/// [`PeImage::NotPe`]; a file without usable Go build information is an error.
///
/// ```no_run
/// use wmco_payload_manifest::{PeImage, inspect_binary};
///
/// let identity = inspect_binary("payload/kube-node/kubelet.exe".as_ref())?;
/// assert!(matches!(identity.pe, PeImage::Image(headers) if headers.is_x86_64() && headers.is_console()));
/// assert_eq!(identity.build_info.main_package.as_deref(), Some("k8s.io/kubernetes/cmd/kubelet"));
/// assert_eq!(identity.build_info.setting("GOOS"), Some("windows"));
/// let owner = identity.build_info.owner_module().expect("a module owns the main package");
/// assert_eq!((owner.path.as_str(), owner.version.as_str()), ("k8s.io/kubernetes", "v1.36.3"));
/// # Ok::<(), wmco_payload_manifest::BinaryIdentityError>(())
/// ```
pub fn inspect_binary(path: &Path) -> Result<BinaryIdentity, BinaryIdentityError> {
    let (pe, build_info) =
        inspect_parts(path).map_err(|source| BinaryIdentityError::Read { path: path.into(), source })?;
    match build_info {
        Ok(build_info) => Ok(BinaryIdentity { pe, build_info }),
        Err(BuildInfoError::Read { source, .. }) => Err(BinaryIdentityError::Read { path: path.into(), source }),
        Err(source) => Err(BinaryIdentityError::BuildInfo { path: path.into(), source }),
    }
}

/// The PE facts and the build information (or why there is none) of the binary at `path`; `Err` only when the
/// file cannot be opened.
fn inspect_parts(path: &Path) -> io::Result<(PeImage, Result<GoBuildInfo, BuildInfoError>)> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    // The cache reads only the byte ranges the PE parser asks for (headers and section table).
    let pe = pe_headers::read_pe(&ReadCache::new(&file));
    // The Go linker writes the build information at the start of the first writable data section; search those
    // first, then the whole file (an ELF file, an unusual layout).
    let mut ranges = pe.data_sections;
    ranges.push(0..size);
    let build_info = build_info::find_build_info(&build_info::FileBytes { file: &file, size }, &ranges);
    Ok((pe.image, build_info))
}

/// Checks the binary at `local_path` against the manifest entry `entry` and returns every mismatch (none when it
/// is what the manifest claims, or when the entry is not Go-built).
///
/// ```no_run
/// use wmco_payload_manifest::{Manifest, PayloadPath, check_binary};
///
/// let manifest = Manifest::product()?;
/// let kubelet: PayloadPath = "kube-node/kubelet.exe".parse()?;
/// let entry = manifest.file(&kubelet).expect("the manifest declares the kubelet");
/// for mismatch in check_binary(entry, "payload/kube-node/kubelet.exe".as_ref()) {
///     // e.g. "kube-node/kubelet.exe: GOOS: expected windows, found linux"
///     eprintln!("{mismatch}");
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_binary(entry: ComponentFile<'_>, local_path: &Path) -> Vec<IdentityMismatch> {
    let Source::Go(source) = &entry.component.source else { return Vec::new() };
    let mut found = Mismatches { path: &entry.file.path, list: Vec::new() };
    match inspect_parts(local_path) {
        Ok((pe, build_info)) => {
            check_pe(&pe, &mut found);
            match build_info {
                Ok(info) => check_build_info(entry, source, &info, &mut found),
                Err(error) => found.push(IdentityCheck::GoBuildInfo, BUILD_INFO_EXPECTED, error.to_string()),
            }
        }
        Err(error) => found.push(IdentityCheck::File, "a readable file", error.to_string()),
    }
    found.list
}

/// Compares an inspected binary with the manifest entry `entry` and returns every mismatch (none when the entry is
/// not Go-built).
///
/// ```
/// use wmco_payload_manifest::{
///     BinaryIdentity, GoBuildInfo, IdentityCheck, Manifest, PeImage, identity_mismatches,
/// };
///
/// let manifest = Manifest::product().unwrap();
/// let entry = manifest.file(&"kube-node/kubelet.exe".parse().unwrap()).unwrap();
/// let text = "path\tk8s.io/kubernetes/cmd/kubelet\nmod\twmco-rs.payload/kubernetes\t(devel)\t\n\
///             dep\tk8s.io/kubernetes\tv1.36.2\t\nbuild\t-trimpath=true\nbuild\tCGO_ENABLED=0\n\
///             build\tGOARCH=amd64\nbuild\tGOOS=linux\n";
/// let identity = BinaryIdentity {
///     pe: PeImage::NotPe { reason: "Unknown file magic".into() },
///     build_info: GoBuildInfo::from_module_info("go1.26.8", text).unwrap(),
/// };
/// let mismatches: Vec<String> = identity_mismatches(entry, &identity).iter().map(ToString::to_string).collect();
/// assert_eq!(
///     mismatches,
///     [
///         "kube-node/kubelet.exe: PE image: expected a PE32+ image, found not a PE image (Unknown file magic)",
///         "kube-node/kubelet.exe: module version: expected v1.36.3, found v1.36.2",
///         "kube-node/kubelet.exe: GOOS: expected windows, found linux",
///     ]
/// );
/// ```
pub fn identity_mismatches(entry: ComponentFile<'_>, identity: &BinaryIdentity) -> Vec<IdentityMismatch> {
    let Source::Go(source) = &entry.component.source else { return Vec::new() };
    let mut found = Mismatches { path: &entry.file.path, list: Vec::new() };
    check_pe(&identity.pe, &mut found);
    check_build_info(entry, source, &identity.build_info, &mut found);
    found.list
}

/// Checks every Go-built manifest file `payload` holds, several files at once (largest first), unless the payload
/// is synthetic.
///
/// ```
/// use wmco_payload_manifest::{
///     Manifest, Payload, PayloadBinaryCheck, SyntheticScale, check_payload_binaries, write_synthetic_payload,
/// };
///
/// let manifest = Manifest::product().unwrap();
/// let dir = std::env::temp_dir().join(format!("wmco-binary-identity-doc-{}", std::process::id()));
/// let workspace_payload = concat!(env!("CARGO_MANIFEST_DIR"), "/../../payload");
/// write_synthetic_payload(&manifest, workspace_payload.as_ref(), &dir, SyntheticScale::Small).unwrap();
/// let payload = Payload::load(&dir, &manifest).unwrap();
/// assert_eq!(check_payload_binaries(&payload, &manifest), PayloadBinaryCheck::Synthetic);
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn check_payload_binaries(payload: &Payload, manifest: &Manifest) -> PayloadBinaryCheck {
    if payload.is_synthetic() {
        return PayloadBinaryCheck::Synthetic;
    }
    let mut jobs: Vec<(ComponentFile<'_>, &PayloadFile)> = manifest
        .files()
        .filter(|entry| matches!(entry.component.source, Source::Go(_)))
        .filter_map(|entry| payload.file(&entry.file.path).map(|file| (entry, file)))
        .collect();
    jobs.sort_by(|left, right| right.1.size.cmp(&left.1.size).then_with(|| left.1.path.cmp(&right.1.path)));
    let mut mismatches: Vec<IdentityMismatch> =
        map_in_parallel(&jobs, |(entry, file)| check_binary(*entry, &file.local_path)).into_iter().flatten().collect();
    mismatches.sort_by(|left, right| left.path.cmp(&right.path));
    PayloadBinaryCheck::Real { checked: jobs.len(), mismatches }
}

const BUILD_INFO_EXPECTED: &str = "Go build information (Go 1.18 or later)";

/// The mismatches of one file, as they are found.
struct Mismatches<'entry> {
    path: &'entry PayloadPath,
    list: Vec<IdentityMismatch>,
}

impl Mismatches<'_> {
    fn push(&mut self, check: IdentityCheck, expected: impl Into<String>, found: impl Into<String>) {
        self.list.push(IdentityMismatch {
            path: self.path.clone(),
            check,
            expected: expected.into(),
            found: found.into(),
        });
    }

    /// Records a mismatch when `found` is not `expected`; an absent value reads `not recorded`.
    fn compare(&mut self, check: IdentityCheck, expected: &str, found: Option<&str>) {
        if found != Some(expected) {
            self.push(check, expected, found.unwrap_or("not recorded"));
        }
    }
}

fn check_pe(pe: &PeImage, found: &mut Mismatches<'_>) {
    match pe {
        PeImage::NotPe { reason } => {
            found.push(IdentityCheck::PeImage, "a PE32+ image", format!("not a PE image ({reason})"))
        }
        PeImage::Image(headers) => {
            if headers.format != PeFormat::Pe32Plus {
                found.push(IdentityCheck::PeFormat, PeFormat::Pe32Plus.to_string(), headers.format.to_string());
            }
            if !headers.is_x86_64() {
                found.push(IdentityCheck::Machine, "x86-64", headers.machine_name());
            }
            if !headers.is_console() {
                found.push(IdentityCheck::Subsystem, "console", headers.subsystem_name());
            }
        }
    }
}

fn check_build_info(entry: ComponentFile<'_>, source: &GoSource, info: &GoBuildInfo, found: &mut Mismatches<'_>) {
    // A validated manifest names the package of every Go-built file; `.` (the module root) is only a fallback.
    let expected_package = source.import_path(entry.file.package.as_deref().unwrap_or("."));
    found.compare(IdentityCheck::MainPackage, &expected_package, info.main_package.as_deref());
    match info.owner_module() {
        None => found.push(
            IdentityCheck::Module,
            source.module.as_str(),
            format!("no recorded module owning {}", info.main_package.as_deref().unwrap_or("the main package")),
        ),
        Some(owner) if owner.path != source.module => {
            found.push(IdentityCheck::Module, source.module.as_str(), owner.path.as_str())
        }
        // The required version, even when replaced: the manifest pins what the build list asks for.
        Some(owner) => found.compare(IdentityCheck::ModuleVersion, &source.version, Some(&owner.version)),
    }
    found.compare(IdentityCheck::Goos, "windows", info.setting("GOOS"));
    found.compare(IdentityCheck::Goarch, "amd64", info.setting("GOARCH"));
    found.compare(IdentityCheck::CgoEnabled, "0", info.setting("CGO_ENABLED"));
    found.compare(IdentityCheck::Trimpath, "true", info.setting("-trimpath"));
    check_version_variables(source, info, found);
}

fn check_version_variables(source: &GoSource, info: &GoBuildInfo, found: &mut Mismatches<'_>) {
    let recorded = match info.linker_variables() {
        Some(recorded) => recorded,
        // Go never records -ldflags for a -trimpath build: nothing to compare (the version check run proves them).
        None if info.setting("-trimpath") == Some("true") => return,
        None => Default::default(),
    };
    for (name, value) in &source.version_variables {
        let expected = format!("-X {name}={value}");
        match recorded.get(name) {
            Some(recorded_value) if recorded_value == value => {}
            Some(recorded_value) => {
                found.push(IdentityCheck::VersionVariable, expected, format!("-X {name}={recorded_value}"))
            }
            None => found.push(IdentityCheck::VersionVariable, expected, format!("no -X {name} in -ldflags")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const MANIFEST: &str = r#"
schema: wmco.payload/v1
components:
  - name: kubelet
    version: v1.36.3
    source:
      go:
        module: k8s.io/kubernetes
        version: v1.36.3
        build: kubernetes
        version_variables: { k8s.io/component-base/version.gitVersion: v1.36.3 }
    required: true
    files:
      - path: kube-node/kubelet.exe
        destination: 'C:\k\kubelet.exe'
        typical_size: 120MiB
        package: ./cmd/kubelet
        version_check: { args: [--version], expect: Kubernetes v1.36.3 }
  - name: scripts
    source: product
    required: true
    files: [{ path: scripts/a.ps1, destination: 'C:\k\a.ps1' }]
"#;

    const GOOD_SETTINGS: &str =
        "build\t-trimpath=true\nbuild\tCGO_ENABLED=0\nbuild\tGOARCH=amd64\nbuild\tGOOS=windows\n";

    fn console_x86_64() -> PeImage {
        PeImage::Image(PeHeaders { format: PeFormat::Pe32Plus, machine: 0x8664, subsystem: 3 })
    }

    fn identity(pe: PeImage, text: &str) -> BinaryIdentity {
        BinaryIdentity { pe, build_info: GoBuildInfo::from_module_info("go1.26.8", text).unwrap() }
    }

    fn mismatches(identity: &BinaryIdentity) -> Vec<String> {
        let manifest = Manifest::from_yaml(MANIFEST, "test").unwrap();
        let entry = manifest.file(&"kube-node/kubelet.exe".parse().unwrap()).unwrap();
        identity_mismatches(entry, identity).iter().map(ToString::to_string).collect()
    }

    fn wrapper_build(dep_lines: &str, settings: &str) -> String {
        format!(
            "path\tk8s.io/kubernetes/cmd/kubelet\nmod\twmco-rs.payload/kubernetes\t(devel)\t\n{dep_lines}{settings}"
        )
    }

    #[test]
    fn a_wrapper_module_build_and_a_go_install_build_both_match() {
        let wrapper =
            wrapper_build("dep\tk8s.io/api\tv0.36.3\th1:a=\ndep\tk8s.io/kubernetes\tv1.36.3\th1:k=\n", GOOD_SETTINGS);
        assert_eq!(mismatches(&identity(console_x86_64(), &wrapper)), Vec::<String>::new());
        let go_install =
            format!("path\tk8s.io/kubernetes/cmd/kubelet\nmod\tk8s.io/kubernetes\tv1.36.3\th1:k=\n{GOOD_SETTINGS}");
        assert_eq!(mismatches(&identity(console_x86_64(), &go_install)), Vec::<String>::new());
    }

    #[test]
    fn a_replaced_module_is_checked_by_its_required_version() {
        let replaced = "dep\tk8s.io/kubernetes\tv1.36.3\th1:k=\n=>\tgithub.com/fork/kubernetes\tv1.99.0\th1:f=\n";
        assert_eq!(
            mismatches(&identity(console_x86_64(), &wrapper_build(replaced, GOOD_SETTINGS))),
            Vec::<String>::new()
        );
        let wrong = "dep\tk8s.io/kubernetes\tv1.36.2\th1:k=\n=>\tgithub.com/fork/kubernetes\tv1.36.3\th1:f=\n";
        assert_eq!(
            mismatches(&identity(console_x86_64(), &wrapper_build(wrong, GOOD_SETTINGS))),
            ["kube-node/kubelet.exe: module version: expected v1.36.3, found v1.36.2"]
        );
    }

    #[test]
    fn every_mismatch_is_named_with_expected_and_found_values() {
        let gui_arm = PeImage::Image(PeHeaders { format: PeFormat::Pe32, machine: 0xaa64, subsystem: 2 });
        let text = "path\tk8s.io/kubernetes/cmd/kube-proxy\nmod\tk8s.io/kubernetes\tv1.36.3\t\n\
                    build\t-ldflags=\"-X k8s.io/component-base/version.gitVersion=v1.36.2\"\n\
                    build\tCGO_ENABLED=1\nbuild\tGOARCH=arm64\nbuild\tGOOS=linux\n";
        assert_eq!(
            mismatches(&identity(gui_arm, text)),
            [
                "kube-node/kubelet.exe: PE format: expected PE32+, found PE32",
                "kube-node/kubelet.exe: machine: expected x86-64, found ARM64",
                "kube-node/kubelet.exe: subsystem: expected console, found GUI",
                "kube-node/kubelet.exe: main package: expected k8s.io/kubernetes/cmd/kubelet, found \
                 k8s.io/kubernetes/cmd/kube-proxy",
                "kube-node/kubelet.exe: GOOS: expected windows, found linux",
                "kube-node/kubelet.exe: GOARCH: expected amd64, found arm64",
                "kube-node/kubelet.exe: CGO_ENABLED: expected 0, found 1",
                "kube-node/kubelet.exe: -trimpath: expected true, found not recorded",
                "kube-node/kubelet.exe: version variable: expected -X k8s.io/component-base/version.gitVersion=v1.36.3, \
                 found -X k8s.io/component-base/version.gitVersion=v1.36.2",
            ]
        );
    }

    #[test]
    fn another_module_or_none_owning_the_package_is_a_module_mismatch() {
        let other = "path\tk8s.io/kubernetes/cmd/kubelet\nmod\tk8s.io/kubernetes-fork\tv1.36.3\t\n";
        let text = format!("{other}{GOOD_SETTINGS}");
        assert_eq!(
            mismatches(&identity(console_x86_64(), &text)),
            ["kube-node/kubelet.exe: module: expected k8s.io/kubernetes, found no recorded module owning \
              k8s.io/kubernetes/cmd/kubelet"]
        );
        let go_install = format!("path\tk8s.io/kubernetes/cmd/kubelet\nmod\tk8s.io\tv1.0.0\t\n{GOOD_SETTINGS}");
        assert_eq!(
            mismatches(&identity(console_x86_64(), &go_install)),
            ["kube-node/kubelet.exe: module: expected k8s.io/kubernetes, found k8s.io"]
        );
    }

    #[test]
    fn version_variables_are_checked_only_when_go_recorded_the_linker_flags() {
        let without_trimpath = "build\tCGO_ENABLED=0\nbuild\tGOARCH=amd64\nbuild\tGOOS=windows\n";
        let text = wrapper_build("dep\tk8s.io/kubernetes\tv1.36.3\t\n", without_trimpath);
        assert_eq!(
            mismatches(&identity(console_x86_64(), &text)),
            [
                "kube-node/kubelet.exe: -trimpath: expected true, found not recorded",
                "kube-node/kubelet.exe: version variable: expected -X k8s.io/component-base/version.gitVersion=v1.36.3, \
                 found no -X k8s.io/component-base/version.gitVersion in -ldflags",
            ]
        );
        let matching = format!(
            "{without_trimpath}build\t-ldflags=\"-s -w -X k8s.io/component-base/version.gitVersion=v1.36.3\"\n"
        );
        let text = wrapper_build("dep\tk8s.io/kubernetes\tv1.36.3\t\n", &matching);
        assert_eq!(
            mismatches(&identity(console_x86_64(), &text)),
            ["kube-node/kubelet.exe: -trimpath: expected true, found not recorded"]
        );
    }

    #[test]
    fn product_files_have_nothing_to_check() {
        let manifest = Manifest::from_yaml(MANIFEST, "test").unwrap();
        let entry = manifest.file(&"scripts/a.ps1".parse().unwrap()).unwrap();
        let anything = identity(PeImage::NotPe { reason: "text".into() }, "");
        assert!(identity_mismatches(entry, &anything).is_empty());
        assert!(check_binary(entry, Path::new("/nonexistent/a.ps1")).is_empty());
    }

    #[test]
    fn an_unreadable_or_non_go_file_is_a_mismatch_not_a_panic() {
        let manifest = Manifest::from_yaml(MANIFEST, "test").unwrap();
        let entry = manifest.file(&"kube-node/kubelet.exe".parse().unwrap()).unwrap();
        let missing = check_binary(entry, Path::new("/nonexistent/kubelet.exe"));
        assert!(matches!(&missing[..], [IdentityMismatch { check: IdentityCheck::File, .. }]), "{missing:?}");
        let dir = tempfile::tempdir().unwrap();
        let text_file = dir.path().join("kubelet.exe");
        std::fs::write(&text_file, b"#!/bin/sh\necho kubelet\n").unwrap();
        let found: Vec<(IdentityCheck, String)> =
            check_binary(entry, &text_file).into_iter().map(|mismatch| (mismatch.check, mismatch.found)).collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].0, IdentityCheck::PeImage);
        assert!(found[0].1.starts_with("not a PE image ("), "{found:?}");
        assert_eq!(found[1], (IdentityCheck::GoBuildInfo, BuildInfoError::NotFound.to_string()));
        let error = inspect_binary(&text_file).unwrap_err();
        assert!(matches!(&error, BinaryIdentityError::BuildInfo { source: BuildInfoError::NotFound, .. }), "{error:?}");
        let error = inspect_binary(Path::new("/nonexistent/kubelet.exe")).unwrap_err();
        assert!(error.to_string().starts_with("cannot read /nonexistent/kubelet.exe"), "{error}");
    }

    #[test]
    fn mismatches_serialize_with_snake_case_checks() {
        let mismatch = IdentityMismatch {
            path: "kube-node/kubelet.exe".parse().unwrap(),
            check: IdentityCheck::ModuleVersion,
            expected: "v1.36.3".into(),
            found: "v1.36.2".into(),
        };
        assert_eq!(
            serde_json::to_value(&mismatch).unwrap(),
            serde_json::json!({
                "path": "kube-node/kubelet.exe", "check": "module_version", "expected": "v1.36.3", "found": "v1.36.2"
            })
        );
    }

    #[test]
    fn a_go_source_without_version_variables_checks_none() {
        let source = GoSource {
            module: "k8s.io/kubernetes".into(),
            version: "v1.36.3".into(),
            commit: None,
            build: "kubernetes".into(),
            version_variables: BTreeMap::new(),
        };
        let path: PayloadPath = "kube-node/kubelet.exe".parse().unwrap();
        let mut found = Mismatches { path: &path, list: Vec::new() };
        let info = GoBuildInfo::from_module_info("go1.26.8", "build\tCGO_ENABLED=0\n").unwrap();
        check_version_variables(&source, &info, &mut found);
        assert!(found.list.is_empty());
    }
}
