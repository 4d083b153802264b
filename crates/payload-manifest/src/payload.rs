//! `Payload::load`: checks a payload directory against the manifest and its own `sha256sum`, hashing every file
//! (streamed, in parallel across files), and reports every problem at once, each naming its file.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::checksums::{BadChecksumLine, CHECKSUM_FILE_NAME, ChecksumList};
use crate::manifest::{Manifest, SYNTHETIC_MARKER_FILE_NAME};
use crate::parallel::map_in_parallel;
use crate::{PayloadPath, Sha256Digest};

/// A verified payload directory: every required file present, every file hashed and matching `sha256sum`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    dir: PathBuf,
    files: BTreeMap<PayloadPath, PayloadFile>,
    synthetic: bool,
}

/// One verified payload file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PayloadFile {
    /// Its path inside the payload.
    pub path: PayloadPath,
    /// Where it is on the local disk.
    pub local_path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, as computed (and equal to the `sha256sum` entry).
    pub sha256: Sha256Digest,
}

/// The payload cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    /// The directory itself cannot be listed (absent, not a directory, no permission).
    #[error("cannot read payload directory {dir}")]
    UnreadableDir {
        /// The directory.
        dir: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The directory was read but the payload is incomplete or inconsistent.
    #[error("payload {dir} has {} problem(s): {}", .problems.len(), join(.problems))]
    Incomplete {
        /// The directory.
        dir: PathBuf,
        /// Every problem found, sorted by path.
        problems: Vec<PayloadProblem>,
    },
}

/// One thing wrong with a payload directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PayloadProblem {
    /// A file of a required component is absent.
    MissingRequired {
        /// The missing file.
        path: PayloadPath,
        /// Its component.
        component: String,
    },
    /// `sha256sum` lists a file that is absent.
    ListedButMissing {
        /// The missing file.
        path: PayloadPath,
    },
    /// A file is present that the manifest does not declare.
    Unexpected {
        /// The file's path inside the payload (as found on disk).
        path: String,
    },
    /// A file's content does not match its `sha256sum` entry.
    HashMismatch {
        /// The file.
        path: PayloadPath,
        /// The digest `sha256sum` lists.
        listed: Sha256Digest,
        /// The digest of the file on disk.
        actual: Sha256Digest,
    },
    /// A manifest file is present but `sha256sum` does not list it, so it cannot be verified.
    NotListed {
        /// The file.
        path: PayloadPath,
    },
    /// A file could not be read.
    Unreadable {
        /// The file.
        path: String,
        /// The IO error's text.
        error: String,
    },
    /// The payload has no `sha256sum` file.
    ChecksumFileMissing,
    /// A `sha256sum` line could not be used.
    BadChecksumLine(BadChecksumLine),
}

impl PayloadProblem {
    /// Sorts problems by file, then kind; `sha256sum` lines by line number.
    fn sort_key(&self) -> (String, u8, usize) {
        match self {
            PayloadProblem::ChecksumFileMissing => (CHECKSUM_FILE_NAME.to_owned(), 0, 0),
            PayloadProblem::BadChecksumLine(line) => (CHECKSUM_FILE_NAME.to_owned(), 1, line.line_number),
            PayloadProblem::MissingRequired { path, .. } => (path.to_string(), 0, 0),
            PayloadProblem::ListedButMissing { path } => (path.to_string(), 1, 0),
            PayloadProblem::HashMismatch { path, .. } => (path.to_string(), 2, 0),
            PayloadProblem::NotListed { path } => (path.to_string(), 3, 0),
            PayloadProblem::Unexpected { path } => (path.clone(), 4, 0),
            PayloadProblem::Unreadable { path, .. } => (path.clone(), 5, 0),
        }
    }
}

impl fmt::Display for PayloadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadProblem::MissingRequired { path, component } => {
                write!(f, "{path}: missing (required by component {component})")
            }
            PayloadProblem::ListedButMissing { path } => {
                write!(f, "{path}: listed in {CHECKSUM_FILE_NAME} but missing")
            }
            PayloadProblem::Unexpected { path } => write!(f, "{path}: not declared in the manifest; remove it"),
            PayloadProblem::HashMismatch { path, listed, actual } => {
                write!(f, "{path}: SHA-256 is {actual}, {CHECKSUM_FILE_NAME} lists {listed}")
            }
            PayloadProblem::NotListed { path } => write!(f, "{path}: not listed in {CHECKSUM_FILE_NAME}"),
            PayloadProblem::Unreadable { path, error } => write!(f, "{path}: cannot be read: {error}"),
            PayloadProblem::ChecksumFileMissing => write!(f, "{CHECKSUM_FILE_NAME}: missing"),
            PayloadProblem::BadChecksumLine(line) => {
                write!(f, "{CHECKSUM_FILE_NAME} line {}: {:?} ({:?})", line.line_number, line.text, line.reason)
            }
        }
    }
}

fn join(problems: &[PayloadProblem]) -> String {
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

impl Payload {
    /// Verifies the payload directory `dir` against `manifest` and the directory's `sha256sum`.
    ///
    /// Every file the manifest declares or `sha256sum` lists is hashed (streamed, several files at once). Optional
    /// components may be absent, but a file listed in `sha256sum` must be present and match whatever its
    /// component. Files the manifest does not declare are problems, except `sha256sum` itself and the `SYNTHETIC`
    /// marker of a synthetic payload.
    ///
    /// ```
    /// use wmco_payload_manifest::{Manifest, Payload, PayloadError, SyntheticScale, write_synthetic_payload};
    ///
    /// let manifest = Manifest::product().unwrap();
    /// let dir = std::env::temp_dir().join(format!("wmco-payload-doc-{}", std::process::id()));
    /// let workspace_payload = concat!(env!("CARGO_MANIFEST_DIR"), "/../../payload");
    /// write_synthetic_payload(&manifest, workspace_payload.as_ref(), &dir, SyntheticScale::Small).unwrap();
    /// let payload = Payload::load(&dir, &manifest).unwrap();
    /// assert!(payload.is_synthetic());
    ///
    /// std::fs::remove_file(dir.join("kube-node/kubelet.exe")).unwrap();
    /// let Err(PayloadError::Incomplete { problems, .. }) = Payload::load(&dir, &manifest) else { panic!() };
    /// assert_eq!(problems[0].to_string(), "kube-node/kubelet.exe: missing (required by component kubelet)");
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn load(dir: &Path, manifest: &Manifest) -> Result<Payload, PayloadError> {
        let found = list_files(dir)?;
        let mut problems = Vec::new();
        let checksums = read_checksums(dir, &found, &mut problems);
        let declared: BTreeMap<&PayloadPath, &str> =
            manifest.files().map(|entry| (&entry.file.path, entry.component.name.as_str())).collect();
        let marker = PayloadPath::from_trusted(SYNTHETIC_MARKER_FILE_NAME);

        let mut to_hash = BTreeSet::new();
        for (path, component) in &declared {
            let present = found.files.contains(*path);
            let listed = checksums.as_ref().is_some_and(|list| list.digests.contains_key(*path));
            let required = manifest.component(component).is_some_and(|component| component.required);
            match (present, listed) {
                (true, true) => {
                    to_hash.insert((*path).clone());
                }
                (true, false) if checksums.is_some() => {
                    problems.push(PayloadProblem::NotListed { path: (*path).clone() })
                }
                (true, false) => {}
                (false, _) if required => problems.push(PayloadProblem::MissingRequired {
                    path: (*path).clone(),
                    component: (*component).to_owned(),
                }),
                (false, true) => problems.push(PayloadProblem::ListedButMissing { path: (*path).clone() }),
                (false, false) => {}
            }
        }
        for listed in checksums.iter().flat_map(|list| list.digests.keys()) {
            if declared.contains_key(listed) {
                continue;
            }
            if !found.files.contains(listed) {
                problems.push(PayloadProblem::ListedButMissing { path: listed.clone() });
            } else if listed == &marker {
                to_hash.insert(listed.clone());
            }
        }
        for path in &found.files {
            let known = declared.contains_key(path) || path == &marker || path.as_str() == CHECKSUM_FILE_NAME;
            if !known {
                problems.push(PayloadProblem::Unexpected { path: path.to_string() });
            }
        }
        problems.extend(found.odd_names.iter().map(|name| PayloadProblem::Unexpected { path: name.clone() }));
        problems.extend(found.unreadable.iter().cloned());

        let mut files = BTreeMap::new();
        for outcome in hash_in_parallel(dir, to_hash) {
            match outcome {
                HashOutcome::Hashed(file) => {
                    let listed = checksums.as_ref().and_then(|list| list.digests.get(&file.path));
                    match listed {
                        Some(listed) if *listed != file.sha256 => problems.push(PayloadProblem::HashMismatch {
                            path: file.path.clone(),
                            listed: *listed,
                            actual: file.sha256,
                        }),
                        _ => {
                            files.insert(file.path.clone(), file);
                        }
                    }
                }
                HashOutcome::Failed { path, error } => {
                    problems.push(PayloadProblem::Unreadable { path: path.to_string(), error })
                }
            }
        }

        if problems.is_empty() {
            let synthetic = files.contains_key(&marker);
            files.remove(&marker);
            Ok(Payload { dir: dir.to_path_buf(), files, synthetic })
        } else {
            problems.sort_by_key(PayloadProblem::sort_key);
            Err(PayloadError::Incomplete { dir: dir.to_path_buf(), problems })
        }
    }

    /// The payload directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether this is a synthetic payload (it carries the `SYNTHETIC` marker): fine for tests, never for hosts.
    pub fn is_synthetic(&self) -> bool {
        self.synthetic
    }

    /// The verified file at `path`, if the payload has it (optional components may be absent).
    pub fn file(&self, path: &PayloadPath) -> Option<&PayloadFile> {
        self.files.get(path)
    }

    /// Every verified manifest file, sorted by path.
    pub fn files(&self) -> impl Iterator<Item = &PayloadFile> {
        self.files.values()
    }

    /// The total size of the verified files in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.files.values().map(|file| file.size).sum()
    }
}

/// The regular files found under a payload directory.
#[derive(Debug, Default)]
struct FoundFiles {
    files: BTreeSet<PayloadPath>,
    /// Files whose name cannot be a payload path (not UTF-8, backslash, …), as lossy text.
    odd_names: Vec<String>,
    /// Entries that could not be inspected.
    unreadable: Vec<PayloadProblem>,
}

fn list_files(dir: &Path) -> Result<FoundFiles, PayloadError> {
    let entries = fs::read_dir(dir).map_err(|source| PayloadError::UnreadableDir { dir: dir.to_path_buf(), source })?;
    let mut found = FoundFiles::default();
    walk(entries, "", &mut found);
    Ok(found)
}

fn walk(entries: fs::ReadDir, prefix: &str, found: &mut FoundFiles) {
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                let path = if prefix.is_empty() { ".".to_owned() } else { prefix.to_owned() };
                found.unreadable.push(PayloadProblem::Unreadable { path, error: error.to_string() });
                continue;
            }
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let relative = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        let metadata = match fs::metadata(entry.path()) {
            Ok(metadata) => metadata,
            Err(error) => {
                found.unreadable.push(PayloadProblem::Unreadable { path: relative, error: error.to_string() });
                continue;
            }
        };
        if metadata.is_dir() {
            match fs::read_dir(entry.path()) {
                Ok(children) => walk(children, &relative, found),
                Err(error) => {
                    found.unreadable.push(PayloadProblem::Unreadable { path: relative, error: error.to_string() })
                }
            }
        } else {
            match relative.parse::<PayloadPath>() {
                Ok(path) if entry.file_name().to_str().is_some() => {
                    found.files.insert(path);
                }
                _ => found.odd_names.push(relative),
            }
        }
    }
}

fn read_checksums(dir: &Path, found: &FoundFiles, problems: &mut Vec<PayloadProblem>) -> Option<ChecksumList> {
    if !found.files.iter().any(|path| path.as_str() == CHECKSUM_FILE_NAME) {
        problems.push(PayloadProblem::ChecksumFileMissing);
        return None;
    }
    match fs::read_to_string(dir.join(CHECKSUM_FILE_NAME)) {
        Ok(text) => {
            let list = ChecksumList::parse(&text);
            problems.extend(list.bad_lines.iter().cloned().map(PayloadProblem::BadChecksumLine));
            Some(list)
        }
        Err(error) => {
            problems.push(PayloadProblem::Unreadable { path: CHECKSUM_FILE_NAME.to_owned(), error: error.to_string() });
            None
        }
    }
}

enum HashOutcome {
    Hashed(PayloadFile),
    Failed { path: PayloadPath, error: String },
}

/// Hashes the files on up to `available_parallelism` threads, largest first so the long files start early.
fn hash_in_parallel(dir: &Path, paths: BTreeSet<PayloadPath>) -> Vec<HashOutcome> {
    let mut jobs: Vec<(PayloadPath, PathBuf, u64)> = paths
        .into_iter()
        .map(|path| {
            let local_path = path.under(dir);
            let size = fs::metadata(&local_path).map_or(0, |metadata| metadata.len());
            (path, local_path, size)
        })
        .collect();
    jobs.sort_by(|left, right| right.2.cmp(&left.2).then_with(|| left.0.cmp(&right.0)));
    map_in_parallel(&jobs, |(path, local_path, _)| hash_one(path, local_path))
}

fn hash_one(path: &PayloadPath, local_path: &Path) -> HashOutcome {
    match Sha256Digest::of_file(local_path) {
        Ok((sha256, size)) => {
            HashOutcome::Hashed(PayloadFile { path: path.clone(), local_path: local_path.to_path_buf(), size, sha256 })
        }
        Err(error) => HashOutcome::Failed { path: path.clone(), error: error.to_string() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
schema: wmco.payload/v1
components:
  - name: tool
    version: v1
    source: { go: { module: example.com/tool, version: v1, build: tool } }
    required: true
    files:
      - path: bin/tool.exe
        destination: 'C:\k\tool.exe'
        typical_size: 1KiB
        package: .
        version_check: { args: [--version], expect: tool v1 }
"#;

    fn write_payload(files: &[(&str, &[u8])], listed: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, bytes) in files {
            let target = dir.path().join(path);
            fs::create_dir_all(target.parent().unwrap()).unwrap();
            fs::write(target, bytes).unwrap();
        }
        let checksums: String =
            listed.iter().map(|(path, bytes)| format!("{}  {path}\n", Sha256Digest::of_bytes(bytes))).collect();
        fs::write(dir.path().join(CHECKSUM_FILE_NAME), checksums).unwrap();
        dir
    }

    #[test]
    fn verified_payload_exposes_sizes_digests_and_local_paths() {
        let manifest = Manifest::from_yaml(MANIFEST, "test").unwrap();
        let dir = write_payload(&[("bin/tool.exe", b"tool")], &[("bin/tool.exe", b"tool")]);
        let payload = Payload::load(dir.path(), &manifest).unwrap();
        let file = payload.file(&"bin/tool.exe".parse().unwrap()).unwrap();
        assert_eq!((file.size, file.sha256), (4, Sha256Digest::of_bytes(b"tool")));
        assert_eq!(file.local_path, dir.path().join("bin").join("tool.exe"));
        assert_eq!((payload.total_bytes(), payload.is_synthetic()), (4, false));
    }

    #[test]
    fn odd_names_and_listed_strangers_are_unexpected_and_not_hashed() {
        let manifest = Manifest::from_yaml(MANIFEST, "test").unwrap();
        let dir = write_payload(
            &[("bin/tool.exe", b"tool"), ("bin/a\\b.exe", b"odd"), ("stranger.exe", b"s")],
            &[("bin/tool.exe", b"tool"), ("stranger.exe", b"other content")],
        );
        let Err(PayloadError::Incomplete { problems, .. }) = Payload::load(dir.path(), &manifest) else {
            panic!("expected problems")
        };
        assert_eq!(
            problems,
            vec![
                PayloadProblem::Unexpected { path: "bin/a\\b.exe".into() },
                PayloadProblem::Unexpected { path: "stranger.exe".into() },
            ]
        );
    }

    #[test]
    fn bad_checksum_lines_sort_by_line_number() {
        let manifest = Manifest::from_yaml(MANIFEST, "test").unwrap();
        let dir = write_payload(&[("bin/tool.exe", b"tool")], &[("bin/tool.exe", b"tool")]);
        let listed = fs::read_to_string(dir.path().join(CHECKSUM_FILE_NAME)).unwrap();
        let padding = "\n".repeat(300);
        fs::write(dir.path().join(CHECKSUM_FILE_NAME), format!("{listed}bad one{padding}bad two\n")).unwrap();
        let Err(PayloadError::Incomplete { problems, .. }) = Payload::load(dir.path(), &manifest) else {
            panic!("expected problems")
        };
        let numbers: Vec<usize> = problems
            .iter()
            .map(|problem| match problem {
                PayloadProblem::BadChecksumLine(line) => line.line_number,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(numbers, vec![2, 302]);
    }
}
