//! `HostFileSet`: every file one host must hold — the manifest's payload files for the host's platform plus the
//! rendered configuration files — with one content hash over (destination, SHA-256) pairs, so comparing a host's
//! recorded hash with the desired one tells in O(1) whether the host is up to date.

use std::collections::BTreeSet;
use std::path::PathBuf;

use wmco_windows_services::WinPath;

use crate::render::RenderedFile;
use crate::{Manifest, Payload, PayloadPath, Platform, Sha256Digest};

/// The desired files of one host, sorted by destination, and their content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFileSet {
    files: Vec<HostFile>,
    content_hash: Sha256Digest,
}

/// One desired file of a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFile {
    /// Where it goes on the host.
    pub destination: WinPath,
    /// Its SHA-256.
    pub sha256: Sha256Digest,
    /// Its size in bytes.
    pub size: u64,
    /// Where its bytes come from.
    pub content: HostFileContent,
}

/// Where a host file's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostFileContent {
    /// A verified payload file on the operator's disk.
    Payload {
        /// Its payload path.
        path: PayloadPath,
        /// Its local path.
        local_path: PathBuf,
    },
    /// A rendered file, bytes in memory.
    Rendered(RenderedFile),
}

/// The host's file set cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostFileSetError {
    /// A file the host's platform needs is not in the payload.
    #[error("payload file {path} (component {component}) is needed on platform {platform} but absent from the payload")]
    MissingPayloadFile {
        /// The payload path.
        path: PayloadPath,
        /// Its component.
        component: String,
        /// The host's platform.
        platform: Platform,
    },
    /// Two files would be written to the same destination.
    #[error("two files would be written to {destination}")]
    DuplicateDestination {
        /// The destination.
        destination: WinPath,
    },
}

impl HostFileSet {
    /// The files of a host on `platform`: each manifest file whose component applies to the platform (present in
    /// `payload`; an absent optional component without platform condition is skipped, while one that names the
    /// platform is needed), plus `rendered`.
    ///
    /// ```
    /// use wmco_payload_manifest::render::RenderedFile;
    /// use wmco_payload_manifest::{HostFileSet, Manifest, Payload, Platform, SyntheticScale, write_synthetic_payload};
    /// use wmco_windows_services::WinPath;
    ///
    /// let manifest = Manifest::product().unwrap();
    /// let dir = std::env::temp_dir().join(format!("wmco-host-files-doc-{}", std::process::id()));
    /// let workspace_payload = concat!(env!("CARGO_MANIFEST_DIR"), "/../../payload");
    /// write_synthetic_payload(&manifest, workspace_payload.as_ref(), &dir, SyntheticScale::Small).unwrap();
    /// let payload = Payload::load(&dir, &manifest).unwrap();
    /// let note = RenderedFile::new(WinPath::parse(r"C:\k\note.txt").unwrap(), b"hello".to_vec());
    ///
    /// let set = HostFileSet::new(&manifest, &payload, Platform::None, vec![note.clone()]).unwrap();
    /// let again = HostFileSet::new(&manifest, &payload, Platform::None, vec![note]).unwrap();
    /// assert_eq!(set.content_hash(), again.content_hash());
    /// assert!(set.file(&WinPath::parse(r"C:\k\kubelet.exe").unwrap()).is_some());
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn new(
        manifest: &Manifest,
        payload: &Payload,
        platform: Platform,
        rendered: Vec<RenderedFile>,
    ) -> Result<Self, HostFileSetError> {
        let mut files = Vec::new();
        for entry in manifest.files_for(platform) {
            let Some(payload_file) = payload.file(&entry.file.path) else {
                if entry.component.required || !entry.component.platforms.is_empty() {
                    return Err(HostFileSetError::MissingPayloadFile {
                        path: entry.file.path.clone(),
                        component: entry.component.name.clone(),
                        platform,
                    });
                }
                continue;
            };
            files.push(HostFile {
                destination: entry.file.destination.clone(),
                sha256: payload_file.sha256,
                size: payload_file.size,
                content: HostFileContent::Payload {
                    path: payload_file.path.clone(),
                    local_path: payload_file.local_path.clone(),
                },
            });
        }
        files.extend(rendered.into_iter().map(|file| HostFile {
            destination: file.destination().clone(),
            sha256: file.sha256(),
            size: file.bytes().len() as u64,
            content: HostFileContent::Rendered(file),
        }));
        Self::from_files(files)
    }

    /// A set of arbitrary host files (for callers that assemble files themselves).
    pub fn from_files(mut files: Vec<HostFile>) -> Result<Self, HostFileSetError> {
        files.sort_by(|left, right| sort_key(&left.destination).cmp(&sort_key(&right.destination)));
        if let Some(pair) = files.windows(2).find(|pair| pair[0].destination.same_location(&pair[1].destination)) {
            return Err(HostFileSetError::DuplicateDestination { destination: pair[1].destination.clone() });
        }
        let listing: String = files.iter().map(|file| format!("{}\t{}\n", file.destination, file.sha256)).collect();
        Ok(Self { content_hash: Sha256Digest::of_bytes(listing.as_bytes()), files })
    }

    /// The hash over every (destination, SHA-256) pair: equal sets have equal hashes whatever order their files
    /// were given in, and changing any file's content or destination changes it.
    pub fn content_hash(&self) -> Sha256Digest {
        self.content_hash
    }

    /// The files, sorted by destination (case-insensitively, as Windows compares paths).
    pub fn files(&self) -> &[HostFile] {
        &self.files
    }

    /// The file at `destination` (compared case-insensitively).
    pub fn file(&self, destination: &WinPath) -> Option<&HostFile> {
        self.files.iter().find(|file| file.destination.same_location(destination))
    }

    /// The directories the files go into, to create before uploading.
    pub fn directories(&self) -> BTreeSet<WinPath> {
        self.files.iter().filter_map(|file| file.destination.parent()).collect()
    }
}

fn sort_key(destination: &WinPath) -> (String, &str) {
    (destination.as_str().to_lowercase(), destination.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(path: &str, bytes: &[u8]) -> HostFile {
        let file = RenderedFile::new(WinPath::parse(path).unwrap(), bytes.to_vec());
        HostFile {
            destination: file.destination().clone(),
            sha256: file.sha256(),
            size: bytes.len() as u64,
            content: HostFileContent::Rendered(file),
        }
    }

    #[test]
    fn content_hash_is_order_independent_and_covers_destination_and_content() {
        let a = rendered(r"C:\k\a.conf", b"a");
        let b = rendered(r"C:\k\b.conf", b"b");
        let forward = HostFileSet::from_files(vec![a.clone(), b.clone()]).unwrap();
        let backward = HostFileSet::from_files(vec![b.clone(), a.clone()]).unwrap();
        assert_eq!(forward.content_hash(), backward.content_hash());
        let expected_listing = format!("C:\\k\\a.conf\t{}\nC:\\k\\b.conf\t{}\n", a.sha256, b.sha256);
        assert_eq!(forward.content_hash(), Sha256Digest::of_bytes(expected_listing.as_bytes()));

        let changed_content = HostFileSet::from_files(vec![a.clone(), rendered(r"C:\k\b.conf", b"B")]).unwrap();
        let moved = HostFileSet::from_files(vec![a, rendered(r"C:\k\c.conf", b"b")]).unwrap();
        assert_ne!(changed_content.content_hash(), forward.content_hash());
        assert_ne!(moved.content_hash(), forward.content_hash());
    }

    #[test]
    fn rejects_two_files_at_the_same_location_in_any_case() {
        let error =
            HostFileSet::from_files(vec![rendered(r"C:\k\a.conf", b"1"), rendered(r"C:\K\A.CONF", b"2")]).unwrap_err();
        assert!(matches!(error, HostFileSetError::DuplicateDestination { .. }), "{error:?}");
    }

    #[test]
    fn directories_are_the_parents_of_the_files() {
        let set = HostFileSet::from_files(vec![rendered(r"C:\k\cni\config\cni.conf", b"x"), rendered(r"C:\k\a", b"y")])
            .unwrap();
        let directories: Vec<String> = set.directories().iter().map(ToString::to_string).collect();
        assert_eq!(directories, vec![r"C:\k".to_owned(), r"C:\k\cni\config".to_owned()]);
    }
}
