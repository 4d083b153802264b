//! The payload manifest (`payload/manifest.yaml`): which components the product ships, where each comes from, and
//! which payload file goes to which Windows destination on which platforms. Parsing validates the whole document
//! and reports every problem at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wmco_windows_services::WinPath;

use crate::{ByteSize, PayloadPath, Platform, checksums::CHECKSUM_FILE_NAME};

/// The product's manifest text, compiled in from `payload/manifest.yaml`.
pub const PRODUCT_MANIFEST_YAML: &str = include_str!("../../../payload/manifest.yaml");

/// Where the manifest lives, relative to the workspace root. Product-authored payload files live beside it, at
/// their payload path (e.g. `payload/windows-exporter/windows-exporter-webconfig.yaml`).
pub const MANIFEST_PATH_IN_WORKSPACE: &str = "payload/manifest.yaml";

/// The schema identifier the manifest must declare.
pub const MANIFEST_SCHEMA: &str = "wmco.payload/v1";

/// The marker file at the root of every synthetic payload. Its presence means "not a real payload: tests only".
/// A reserved payload path: no manifest file may use it.
pub const SYNTHETIC_MARKER_FILE_NAME: &str = "SYNTHETIC";

/// The validated payload manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`MANIFEST_SCHEMA`].
    pub schema: String,
    /// Every component, in manifest order.
    pub components: Vec<Component>,
}

/// One shipped component (a program, a plugin set, the product's scripts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// Unique name, e.g. `kubelet`.
    pub name: String,
    /// The upstream release this component is built from (e.g. `v1.36.3`); absent for product-authored files,
    /// which are versioned with the product.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Where the files come from.
    pub source: Source,
    /// Whether a payload without this component's files is incomplete.
    pub required: bool,
    /// The platforms this component is installed on; empty means every platform.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<Platform>,
    /// The files the component contributes.
    pub files: Vec<ManifestFile>,
}

/// Where a component's files come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// Built from a Go module with `GOOS=windows GOARCH=amd64` by `cargo xtask payload build`.
    Go(GoSource),
    /// Written by this project; the file is committed beside the manifest at its payload path.
    Product,
}

/// A component built from an upstream Go module at an exact version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoSource {
    /// The Go module path, e.g. `k8s.io/kubernetes`.
    pub module: String,
    /// The module version served by the Go module proxy, e.g. `v1.36.3` (a pseudo-version where upstream tags none).
    pub version: String,
    /// The upstream commit, required when `version` is a pseudo-version (its 12-digit suffix must be a prefix of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The wrapper module under `payload/build/` whose `go.mod` and `go.sum` pin upstream's build list.
    pub build: String,
    /// The `-X package.variable=value` settings upstream's release build passes to the linker.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub version_variables: BTreeMap<String, String>,
}

/// How a built binary shows its version: run with `args`, its output contains `expect`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionCheck {
    /// The arguments, e.g. `["--version"]`.
    pub args: Vec<String>,
    /// Text the output (standard output and error together) must contain, e.g. `Kubernetes v1.36.3`.
    pub expect: String,
}

/// One file of a component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    /// Path inside the payload directory.
    pub path: PayloadPath,
    /// Where the file is installed on the Windows host.
    pub destination: WinPath,
    /// The approximate size of a real build of this file (used by the synthetic payload generator); required for
    /// built files, absent for product files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typical_size: Option<ByteSize>,
    /// The main package this file is built from, relative to the module (`./cmd/kubelet`, or `.`); required for
    /// built files, absent for product files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// How the built binary shows its version; required for built files, absent for product files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_check: Option<VersionCheck>,
}

impl GoSource {
    /// The import path of `package` (relative to this module): `k8s.io/kubernetes/cmd/kubelet` for `./cmd/kubelet`.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use wmco_payload_manifest::GoSource;
    ///
    /// let source = GoSource {
    ///     module: "k8s.io/kubernetes".into(),
    ///     version: "v1.36.3".into(),
    ///     commit: None,
    ///     build: "kubernetes".into(),
    ///     version_variables: BTreeMap::new(),
    /// };
    /// assert_eq!(source.import_path("./cmd/kubelet"), "k8s.io/kubernetes/cmd/kubelet");
    /// assert_eq!(source.import_path("."), "k8s.io/kubernetes");
    /// ```
    pub fn import_path(&self, package: &str) -> String {
        match package.trim_start_matches("./").trim_end_matches('/') {
            "" | "." => self.module.clone(),
            relative => format!("{}/{relative}", self.module),
        }
    }

    /// The 12-digit commit prefix of a pseudo-version (`v0.0.0-20250901081027-bc4f9b80d20d`), if `version` is one.
    pub fn pseudo_version_commit(&self) -> Option<&str> {
        let (rest, suffix) = self.version.rsplit_once('-')?;
        let timestamp = rest.rsplit(['-', '.']).next()?;
        let is_pseudo = suffix.len() == 12
            && suffix.bytes().all(|byte| byte.is_ascii_hexdigit())
            && timestamp.len() == 14
            && timestamp.bytes().all(|byte| byte.is_ascii_digit());
        is_pseudo.then_some(suffix)
    }

    /// The linker flags of the release build: `-s -w` and one `-X` per version variable, in name order.
    pub fn ldflags(&self) -> String {
        let mut flags = String::from("-s -w");
        for (variable, value) in &self.version_variables {
            flags.push_str(&format!(" -X {variable}={value}"));
        }
        flags
    }
}

/// A manifest file together with the component that declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComponentFile<'manifest> {
    /// The declaring component.
    pub component: &'manifest Component,
    /// The file.
    pub file: &'manifest ManifestFile,
}

/// The manifest could not be read or is invalid.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("cannot read the payload manifest {path}")]
    Read {
        /// The manifest path.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not YAML of the manifest's shape.
    #[error("the payload manifest {origin} is not valid YAML of the manifest schema")]
    Parse {
        /// Where the text came from (a path, or `the compiled-in manifest`).
        origin: String,
        /// The parser's error, with line and column.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// The document parsed but breaks the manifest's rules.
    #[error("the payload manifest {origin} is invalid: {}", join_problems(.problems))]
    Invalid {
        /// Where the text came from.
        origin: String,
        /// Every rule broken, in manifest order.
        problems: Vec<ManifestProblem>,
    },
}

/// One broken manifest rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestProblem {
    /// `schema` is not [`MANIFEST_SCHEMA`].
    #[error("schema is {found:?}, expected {MANIFEST_SCHEMA:?}")]
    UnknownSchema {
        /// The declared schema.
        found: String,
    },
    /// Two components share a name.
    #[error("component {name} is declared twice")]
    DuplicateComponent {
        /// The repeated name.
        name: String,
    },
    /// A component lists no file.
    #[error("component {component} has no files")]
    NoFiles {
        /// The component.
        component: String,
    },
    /// Two files share a payload path.
    #[error("payload path {path} is declared by both {first} and {second}")]
    DuplicatePath {
        /// The repeated path.
        path: PayloadPath,
        /// The component that declared it first.
        first: String,
        /// The component that declared it again.
        second: String,
    },
    /// Two files on a common platform share a destination (compared case-insensitively, as Windows does).
    #[error("destination {destination} is declared by both {first} and {second}")]
    DuplicateDestination {
        /// The repeated destination.
        destination: String,
        /// The first payload path with it.
        first: PayloadPath,
        /// The second payload path with it.
        second: PayloadPath,
    },
    /// A payload path collides with a name the payload format reserves.
    #[error("payload path {path} is reserved by the payload format")]
    ReservedPath {
        /// The reserved path.
        path: PayloadPath,
    },
    /// A Go-built component has no `version`, or a product component has one.
    #[error("component {component}: {reason}")]
    Version {
        /// The component.
        component: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A Go source breaks a rule (a pseudo-version without its commit, a commit that does not match it).
    #[error("component {component}: {reason}")]
    GoSource {
        /// The component.
        component: String,
        /// What is wrong.
        reason: String,
    },
    /// A Go-built file has no `package` or `version_check`, or a product file has one.
    #[error("component {component}, file {path}: {reason}")]
    BuildRecipe {
        /// The component.
        component: String,
        /// The file.
        path: PayloadPath,
        /// What is wrong.
        reason: &'static str,
    },
    /// A Go-built file has no `typical_size`, or a product file has one.
    #[error("component {component}, file {path}: {reason}")]
    TypicalSize {
        /// The component.
        component: String,
        /// The file.
        path: PayloadPath,
        /// What is wrong.
        reason: &'static str,
    },
}

fn join_problems(problems: &[ManifestProblem]) -> String {
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

impl Manifest {
    /// Parses and validates a manifest. `origin` names the text's source in error messages.
    ///
    /// ```
    /// use wmco_payload_manifest::Manifest;
    ///
    /// let yaml = r#"
    /// schema: wmco.payload/v1
    /// components:
    ///   - name: kubelet
    ///     version: v1.36.3
    ///     source: { go: { module: k8s.io/kubernetes, version: v1.36.3, build: kubernetes } }
    ///     required: true
    ///     files:
    ///       - path: kube-node/kubelet.exe
    ///         destination: 'C:\k\kubelet.exe'
    ///         typical_size: 120MiB
    ///         package: ./cmd/kubelet
    ///         version_check: { args: [--version], expect: Kubernetes v1.36.3 }
    /// "#;
    /// let manifest = Manifest::from_yaml(yaml, "example").unwrap();
    /// assert_eq!(manifest.files().count(), 1);
    /// ```
    pub fn from_yaml(text: &str, origin: &str) -> Result<Self, ManifestError> {
        let manifest: Manifest = serde_saphyr::from_str(text)
            .map_err(|source| ManifestError::Parse { origin: origin.to_owned(), source: Box::new(source) })?;
        let problems = manifest.problems();
        if problems.is_empty() {
            Ok(manifest)
        } else {
            Err(ManifestError::Invalid { origin: origin.to_owned(), problems })
        }
    }

    /// Reads and validates the manifest file at `path`.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ManifestError::Read { path: path.to_path_buf(), source })?;
        Self::from_yaml(&text, &path.display().to_string())
    }

    /// The product's own manifest, compiled into this crate from `payload/manifest.yaml`.
    pub fn product() -> Result<Self, ManifestError> {
        Self::from_yaml(PRODUCT_MANIFEST_YAML, "the compiled-in manifest")
    }

    /// Every file of every component, in manifest order.
    pub fn files(&self) -> impl Iterator<Item = ComponentFile<'_>> {
        self.components
            .iter()
            .flat_map(|component| component.files.iter().map(move |file| ComponentFile { component, file }))
    }

    /// The files installed on `platform`, in manifest order.
    pub fn files_for(&self, platform: Platform) -> impl Iterator<Item = ComponentFile<'_>> {
        self.files().filter(move |entry| entry.component.applies_to(platform))
    }

    /// The file with payload path `path`, if the manifest declares it.
    pub fn file(&self, path: &PayloadPath) -> Option<ComponentFile<'_>> {
        self.files().find(|entry| &entry.file.path == path)
    }

    /// The component named `name`.
    pub fn component(&self, name: &str) -> Option<&Component> {
        self.components.iter().find(|component| component.name == name)
    }

    fn problems(&self) -> Vec<ManifestProblem> {
        let mut problems = Vec::new();
        if self.schema != MANIFEST_SCHEMA {
            problems.push(ManifestProblem::UnknownSchema { found: self.schema.clone() });
        }
        let mut names = BTreeMap::new();
        for component in &self.components {
            if names.insert(component.name.as_str(), ()).is_some() {
                problems.push(ManifestProblem::DuplicateComponent { name: component.name.clone() });
            }
            problems.extend(component.problems());
        }
        problems.extend(self.path_problems());
        problems.extend(self.destination_problems());
        problems
    }

    fn path_problems(&self) -> Vec<ManifestProblem> {
        let mut problems = Vec::new();
        let mut owners: BTreeMap<&PayloadPath, &str> = BTreeMap::new();
        for ComponentFile { component, file } in self.files() {
            if [CHECKSUM_FILE_NAME, SYNTHETIC_MARKER_FILE_NAME].contains(&file.path.as_str()) {
                problems.push(ManifestProblem::ReservedPath { path: file.path.clone() });
            }
            if let Some(first) = owners.insert(&file.path, &component.name) {
                problems.push(ManifestProblem::DuplicatePath {
                    path: file.path.clone(),
                    first: first.to_owned(),
                    second: component.name.clone(),
                });
            }
        }
        problems
    }

    fn destination_problems(&self) -> Vec<ManifestProblem> {
        let mut problems = Vec::new();
        let entries: Vec<ComponentFile<'_>> = self.files().collect();
        for (index, later) in entries.iter().enumerate() {
            let clash = entries[..index].iter().find(|earlier| {
                earlier.file.destination.same_location(&later.file.destination)
                    && earlier.component.shares_a_platform_with(later.component)
            });
            if let Some(earlier) = clash {
                problems.push(ManifestProblem::DuplicateDestination {
                    destination: later.file.destination.to_string(),
                    first: earlier.file.path.clone(),
                    second: later.file.path.clone(),
                });
            }
        }
        problems
    }
}

impl GoSource {
    fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        match (self.pseudo_version_commit(), &self.commit) {
            (Some(prefix), None) => problems.push(format!(
                "version {} is a pseudo-version: name the upstream commit ({prefix}...) in `commit`",
                self.version
            )),
            (Some(prefix), Some(commit)) if !commit.starts_with(prefix) => problems
                .push(format!("commit {commit} does not match pseudo-version {} (which names {prefix})", self.version)),
            _ => {}
        }
        if let Some(commit) = &self.commit
            && (commit.len() != 40 || !commit.bytes().all(|byte| byte.is_ascii_hexdigit()))
        {
            problems.push(format!("commit {commit:?} is not a full 40-digit hexadecimal commit hash"));
        }
        if self.build.is_empty() || !self.build.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-') {
            problems.push(format!("build {:?} is not a directory name under payload/build/", self.build));
        }
        problems
    }
}

impl Component {
    /// Whether this component is installed on `platform`.
    pub fn applies_to(&self, platform: Platform) -> bool {
        self.platforms.is_empty() || self.platforms.contains(&platform)
    }

    fn shares_a_platform_with(&self, other: &Component) -> bool {
        Platform::ALL.iter().any(|platform| self.applies_to(*platform) && other.applies_to(*platform))
    }

    fn problems(&self) -> Vec<ManifestProblem> {
        let mut problems = Vec::new();
        if self.files.is_empty() {
            problems.push(ManifestProblem::NoFiles { component: self.name.clone() });
        }
        let built = matches!(self.source, Source::Go(_));
        let version_problem = match (built, &self.version) {
            (true, None) => Some("a Go-built component needs `version` (the upstream release)"),
            (false, Some(_)) => Some("a product component has no upstream `version`"),
            _ => None,
        };
        if let Some(reason) = version_problem {
            problems.push(ManifestProblem::Version { component: self.name.clone(), reason });
        }
        if let Source::Go(source) = &self.source {
            problems.extend(
                source
                    .problems()
                    .into_iter()
                    .map(|reason| ManifestProblem::GoSource { component: self.name.clone(), reason }),
            );
        }
        for file in &self.files {
            let recipe_problem = match (built, file.package.is_some(), file.version_check.is_some()) {
                (true, false, _) => Some("a built file needs `package` (its main package in the module)"),
                (true, true, false) => Some("a built file needs `version_check` (how it prints its version)"),
                (false, true, _) | (false, _, true) => Some("a product file has no `package` or `version_check`"),
                _ => None,
            };
            if let Some(reason) = recipe_problem {
                problems.push(ManifestProblem::BuildRecipe {
                    component: self.name.clone(),
                    path: file.path.clone(),
                    reason,
                });
            }
            let size_problem = match (built, file.typical_size) {
                (true, None) => Some("a built file needs `typical_size`"),
                (false, Some(_)) => Some("a product file has no `typical_size` (its real content is used)"),
                _ => None,
            };
            if let Some(reason) = size_problem {
                problems.push(ManifestProblem::TypicalSize {
                    component: self.name.clone(),
                    path: file.path.clone(),
                    reason,
                });
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBELET: &str = r#"
  - name: kubelet
    version: v1.36.3
    source: { go: { module: k8s.io/kubernetes, version: v1.36.3, build: kubernetes } }
    required: true
    files:
      - path: kubelet.exe
        destination: 'C:\k\kubelet.exe'
        typical_size: 120MiB
        package: ./cmd/kubelet
        version_check: { args: [--version], expect: Kubernetes v1.36.3 }
"#;

    fn manifest_with(components: &str) -> Result<Manifest, ManifestError> {
        Manifest::from_yaml(&format!("schema: wmco.payload/v1\ncomponents:{components}"), "test")
    }

    fn problems_of(components: &str) -> Vec<ManifestProblem> {
        match manifest_with(components) {
            Err(ManifestError::Invalid { problems, .. }) => problems,
            other => panic!("expected an invalid manifest, got {other:?}"),
        }
    }

    #[test]
    fn product_manifest_is_valid_and_covers_every_component_of_the_issue() {
        let manifest = Manifest::product().unwrap();
        let names: Vec<&str> = manifest.components.iter().map(|component| component.name.as_str()).collect();
        for expected in [
            "kubelet",
            "kube-proxy",
            "kube-log-runner",
            "containerd",
            "containerd-shim-runhcs-v1",
            "cni-plugins",
            "hybrid-overlay-node",
            "csi-proxy",
            "windows_exporter",
            "ecr-credential-provider",
            "azure-cloud-node-manager",
            "windows-exporter-web-config",
        ] {
            assert!(names.contains(&expected), "{expected} missing from {names:?}");
        }
        let aws_only = manifest.component("ecr-credential-provider").unwrap();
        assert_eq!(aws_only.platforms, vec![Platform::Aws]);
        assert!(!aws_only.required);
        assert_eq!(
            manifest.files_for(Platform::Azure).filter(|f| f.component.name == "ecr-credential-provider").count(),
            0
        );
    }

    #[test]
    fn parses_sources_platforms_and_sizes() {
        let manifest = manifest_with(&format!(
            "{KUBELET}
  - name: scripts
    source: product
    required: false
    platforms: [Azure, GCP]
    files:
      - {{ path: scripts/a.ps1, destination: 'C:\\k\\wmco\\a.ps1' }}
"
        ))
        .unwrap();
        let kubelet = manifest.component("kubelet").unwrap();
        assert_eq!(
            kubelet.source,
            Source::Go(GoSource {
                module: "k8s.io/kubernetes".into(),
                version: "v1.36.3".into(),
                commit: None,
                build: "kubernetes".into(),
                version_variables: BTreeMap::new(),
            })
        );
        assert_eq!(kubelet.files[0].package.as_deref(), Some("./cmd/kubelet"));
        assert_eq!(
            kubelet.files[0].version_check,
            Some(VersionCheck { args: vec!["--version".into()], expect: "Kubernetes v1.36.3".into() })
        );
        assert_eq!(kubelet.files[0].typical_size, Some(ByteSize::from_bytes(120 << 20)));
        assert_eq!(kubelet.files[0].destination.to_string(), "C:\\k\\kubelet.exe");
        let scripts = manifest.component("scripts").unwrap();
        assert_eq!(
            (scripts.source.clone(), scripts.platforms.clone()),
            (Source::Product, vec![Platform::Azure, Platform::Gcp])
        );
        assert_eq!(manifest.files_for(Platform::Gcp).count(), 2);
        assert_eq!(manifest.files_for(Platform::Aws).count(), 1);
    }

    #[test]
    fn reports_every_rule_broken_at_once() {
        let problems = problems_of(&format!(
            "{KUBELET}{KUBELET}
  - name: empty
    source: product
    required: true
    files: []
  - name: shadow
    version: v1
    source: product
    required: false
    files:
      - {{ path: sha256sum, destination: 'C:\\K\\KUBELET.EXE' }}
"
        ));
        let kubelet_path: PayloadPath = "kubelet.exe".parse().unwrap();
        assert_eq!(
            problems,
            vec![
                ManifestProblem::DuplicateComponent { name: "kubelet".into() },
                ManifestProblem::NoFiles { component: "empty".into() },
                ManifestProblem::Version {
                    component: "shadow".into(),
                    reason: "a product component has no upstream `version`"
                },
                ManifestProblem::DuplicatePath {
                    path: kubelet_path.clone(),
                    first: "kubelet".into(),
                    second: "kubelet".into()
                },
                ManifestProblem::ReservedPath { path: "sha256sum".parse().unwrap() },
                ManifestProblem::DuplicateDestination {
                    destination: "C:\\k\\kubelet.exe".into(),
                    first: kubelet_path.clone(),
                    second: kubelet_path.clone(),
                },
                ManifestProblem::DuplicateDestination {
                    destination: "C:\\K\\KUBELET.EXE".into(),
                    first: kubelet_path,
                    second: "sha256sum".parse().unwrap(),
                },
            ]
        );
    }

    #[test]
    fn same_destination_on_disjoint_platforms_is_allowed() {
        let manifest = manifest_with(
            r#"
  - name: a
    source: product
    required: false
    platforms: [AWS]
    files: [{ path: a.ps1, destination: 'C:\k\hostname.ps1' }]
  - name: b
    source: product
    required: false
    platforms: [GCP]
    files: [{ path: b.ps1, destination: 'C:\k\hostname.ps1' }]
"#,
        );
        assert!(manifest.is_ok(), "{manifest:?}");
    }

    #[test]
    fn built_files_need_a_typical_size_and_unknown_fields_are_rejected() {
        let problems = problems_of(
            r#"
  - name: k
    version: v1
    source: { go: { module: m, version: v1, build: m } }
    required: true
    files: [{ path: k.exe, destination: 'C:\k\k.exe', package: . }]
"#,
        );
        assert_eq!(
            problems,
            vec![
                ManifestProblem::BuildRecipe {
                    component: "k".into(),
                    path: "k.exe".parse().unwrap(),
                    reason: "a built file needs `version_check` (how it prints its version)"
                },
                ManifestProblem::TypicalSize {
                    component: "k".into(),
                    path: "k.exe".parse().unwrap(),
                    reason: "a built file needs `typical_size`"
                }
            ]
        );
        let unknown = manifest_with(&KUBELET.replace("required: true", "required: true\n    colour: red"));
        assert!(matches!(unknown, Err(ManifestError::Parse { .. })), "{unknown:?}");
    }

    #[test]
    fn invalid_destination_is_a_parse_error_naming_the_origin() {
        let error = manifest_with(&KUBELET.replace("C:\\k\\kubelet.exe", "kubelet.exe")).unwrap_err();
        assert!(matches!(&error, ManifestError::Parse { origin, .. } if origin == "test"), "{error:?}");
    }

    #[test]
    fn a_pseudo_version_needs_its_commit_and_the_commit_must_match() {
        let component = |commit: &str| {
            format!(
                r#"
  - name: hybrid
    version: v0.0.0-20250901081027-bc4f9b80d20d
    source: {{ go: {{ module: m, version: v0.0.0-20250901081027-bc4f9b80d20d, build: hybrid{commit} }} }}
    required: true
    files:
      - {{ path: h.exe, destination: 'C:\k\h.exe', typical_size: 1MiB, package: ., version_check: {{ args: [], expect: x }} }}
"#
            )
        };
        assert!(manifest_with(&component(", commit: bc4f9b80d20d2d584b03c6a0f24835c73833c65d")).is_ok());
        let missing = problems_of(&component(""));
        assert!(
            matches!(&missing[..], [ManifestProblem::GoSource { reason, .. }] if reason.contains("bc4f9b80d20d...")),
            "{missing:?}"
        );
        let wrong = problems_of(&component(", commit: 0000000000002d584b03c6a0f24835c73833c65d"));
        assert!(
            matches!(&wrong[..], [ManifestProblem::GoSource { reason, .. }] if reason.contains("does not match")),
            "{wrong:?}"
        );
    }

    #[test]
    fn product_manifest_pins_every_go_source_with_a_recipe() {
        let manifest = Manifest::product().unwrap();
        let kubelet = manifest.component("kubelet").unwrap();
        let Source::Go(source) = &kubelet.source else { panic!("kubelet is built") };
        assert!(
            source.ldflags().contains("-X k8s.io/component-base/version.gitVersion=v1.36.3"),
            "{}",
            source.ldflags()
        );
        let cni = manifest.component("cni-plugins").unwrap();
        let packages: Vec<_> = cni.files.iter().filter_map(|file| file.package.as_deref()).collect();
        assert_eq!(
            packages,
            ["./plugins/ipam/host-local", "./plugins/main/windows/win-bridge", "./plugins/main/windows/win-overlay"]
        );
        let hybrid = manifest.component("hybrid-overlay-node").unwrap();
        let Source::Go(source) = &hybrid.source else { panic!("hybrid-overlay is built") };
        assert_eq!(source.pseudo_version_commit(), Some("bc4f9b80d20d"));
        assert!(!PRODUCT_MANIFEST_YAML.contains("unverified"));
    }
}
