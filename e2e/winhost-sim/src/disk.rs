//! The simulated `C:` drive: Windows path parsing in the forms cmd, PowerShell and Win32-OpenSSH's SFTP server
//! accept (windows-commands.md §5–6), case-insensitive lookup over a real directory tree (`C:\k\kubelet.exe` is
//! `<root>/C/k/kubelet.exe`), and Windows file semantics (rename onto an existing file fails).

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::acl::{ADMINISTRATORS, AclSettings, Dacl, TRUSTED_INSTALLER};

/// Why a Windows path or file operation failed.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// The text is not an absolute path on a drive this host has.
    #[error("`{path}` is not a path on the simulated C: drive")]
    BadPath {
        /// The path as given.
        path: String,
    },
    /// The path or one of its parents does not exist.
    #[error("cannot find path '{path}' because it does not exist")]
    NotFound {
        /// The Windows path.
        path: String,
    },
    /// The target of a plain rename already exists.
    #[error("cannot create '{path}' because a file with that name already exists")]
    AlreadyExists {
        /// The Windows path.
        path: String,
    },
    /// An I/O error of the backing directory tree.
    #[error("disk I/O on '{path}': {source}")]
    Io {
        /// The Windows path.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
}

/// A normalised absolute Windows path on drive `C:` (components without separators, `..` resolved).
///
/// ```
/// use winhost_sim::disk::WinPath;
/// let path = WinPath::parse("/C:/k/../k/kubelet.exe").unwrap();
/// assert_eq!(path.to_string(), r"C:\k\kubelet.exe");
/// assert_eq!(WinPath::parse(r"c:\K\Kubelet.exe").unwrap(), path);
/// ```
#[derive(Clone, Debug, Eq)]
pub struct WinPath {
    components: Vec<String>,
}

impl PartialEq for WinPath {
    fn eq(&self, other: &WinPath) -> bool {
        self.key() == other.key()
    }
}

impl std::fmt::Display for WinPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "C:\\{}", self.components.join("\\"))
    }
}

impl WinPath {
    /// Parses `C:\a\b`, `C:/a/b`, `/C:/a/b` (the SFTP form) and `\a\b` (root of the current drive).
    ///
    /// # Errors
    /// [`DiskError::BadPath`] for relative paths, other drives, and names with characters Windows forbids.
    pub fn parse(text: &str) -> Result<WinPath, DiskError> {
        let bad = || DiskError::BadPath { path: text.to_owned() };
        let trimmed = text.strip_prefix('/').filter(|rest| rest.get(1..2) == Some(":")).unwrap_or(text);
        let rest = if let Some(rest) = trimmed.strip_prefix("C:").or_else(|| trimmed.strip_prefix("c:")) {
            if !(rest.is_empty() || rest.starts_with(['\\', '/'])) {
                return Err(bad());
            }
            rest
        } else if trimmed.starts_with(['\\', '/']) && !trimmed.starts_with("\\\\") {
            trimmed
        } else {
            return Err(bad());
        };
        let mut components: Vec<String> = Vec::new();
        for part in rest.split(['\\', '/']) {
            match part {
                "" | "." => {}
                ".." => {
                    components.pop();
                }
                name => {
                    if name.chars().any(|c| "<>:\"|?*".contains(c) || u32::from(c) < 32) {
                        return Err(bad());
                    }
                    let stripped = name.trim_end_matches([' ', '.']);
                    if stripped.is_empty() {
                        return Err(bad());
                    }
                    components.push(stripped.to_owned());
                }
            }
        }
        Ok(WinPath { components })
    }

    /// The lower-cased form used to compare paths (Windows names are case-insensitive).
    pub fn key(&self) -> String {
        self.to_string().to_lowercase()
    }

    /// The parent directory (`None` for `C:\`).
    pub fn parent(&self) -> Option<WinPath> {
        let (_, head) = self.components.split_last()?;
        Some(WinPath { components: head.to_vec() })
    }

    /// The last component (`None` for `C:\`).
    pub fn file_name(&self) -> Option<&str> {
        self.components.last().map(String::as_str)
    }

    /// This path with `name` appended.
    pub fn join(&self, name: &str) -> WinPath {
        let mut components = self.components.clone();
        components.push(name.to_owned());
        WinPath { components }
    }

    /// Whether `self` is `other` or lies below it.
    pub fn starts_with(&self, other: &WinPath) -> bool {
        self.components.len() >= other.components.len()
            && self.components.iter().zip(&other.components).all(|(a, b)| a.eq_ignore_ascii_case(b))
    }

    /// The SFTP form Win32-OpenSSH reports (`/C:/k/x`).
    pub fn sftp_form(&self) -> String {
        format!("/C:/{}", self.components.join("/"))
    }
}

/// What a path names on the simulated disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entry {
    /// A regular file.
    File,
    /// A directory.
    Directory,
}

/// The `C:` drive of one host, backed by `<root>/C`. Clones share the drive, its [`Disk::keep_versions`] list and
/// its access control lists ([`crate::acl`]).
#[derive(Clone, Debug)]
pub struct Disk {
    drive_root: PathBuf,
    history: Arc<Mutex<History>>,
    /// The paths' own ACL settings by [`WinPath::key`]; a path without any inherits everything.
    acls: Arc<Mutex<BTreeMap<String, AclSettings>>>,
}

/// The files whose replaced contents are kept, and those contents in the order they were replaced.
#[derive(Debug, Default)]
struct History {
    kept: Vec<WinPath>,
    versions: Vec<(WinPath, Vec<u8>)>,
}

impl Disk {
    /// A drive backed by `<root>/C` (created if missing).
    ///
    /// # Errors
    /// [`DiskError::Io`] if the directory cannot be created.
    pub fn new(root: &Path) -> Result<Disk, DiskError> {
        let drive_root = root.join("C");
        fs::create_dir_all(&drive_root).map_err(|source| DiskError::Io { path: "C:\\".into(), source })?;
        let root_acl = BTreeMap::from([(WinPath { components: Vec::new() }.key(), AclSettings::drive_root())]);
        Ok(Disk { drive_root, history: Arc::default(), acls: Arc::new(Mutex::new(root_acl)) })
    }

    /// The DACL of `path` (`None` if nothing is there): its own settings, and what it inherits from its parents.
    ///
    /// ```
    /// use winhost_sim::acl::{AclSettings, USERS};
    /// use winhost_sim::disk::{Disk, WinPath};
    /// let root = tempfile::tempdir().unwrap();
    /// let disk = Disk::new(root.path()).unwrap();
    /// let k = WinPath::parse(r"C:\k").unwrap();
    /// disk.create_dir_all(&k).unwrap();
    /// assert!(disk.dacl(&k).unwrap().grantees().contains(&USERS.to_owned()), "C:\\ lets Users read");
    /// disk.set_acl(&k, AclSettings::system_and_administrators());
    /// assert!(disk.dacl(&k).unwrap().only_system_and_administrators());
    /// ```
    pub fn dacl(&self, path: &WinPath) -> Option<Dacl> {
        let directory = self.entry(path)? == Entry::Directory;
        let acls = self.acls.lock().unwrap_or_else(PoisonError::into_inner);
        let mut walked = WinPath { components: Vec::new() };
        let root = acls.get(&walked.key()).cloned().unwrap_or_else(AclSettings::drive_root);
        let mut current = Dacl::compose(&root, None, true, TRUSTED_INSTALLER);
        for (index, component) in path.components.iter().enumerate() {
            walked = walked.join(component);
            let is_directory = directory || index + 1 < path.components.len();
            let settings = acls.get(&walked.key()).cloned().unwrap_or_default();
            current = Dacl::compose(&settings, Some(&current), is_directory, ADMINISTRATORS);
        }
        Some(current)
    }

    /// The owner of `path`: TrustedInstaller for `C:\`, Administrators for everything the (elevated) sessions
    /// create.
    pub fn owner(&self, path: &WinPath) -> &'static str {
        if path.components.is_empty() { TRUSTED_INSTALLER } else { ADMINISTRATORS }
    }

    /// The own ACL settings of `path` (none: it inherits everything).
    pub fn acl_settings(&self, path: &WinPath) -> AclSettings {
        self.acls.lock().unwrap_or_else(PoisonError::into_inner).get(&path.key()).cloned().unwrap_or_default()
    }

    /// Replaces the own ACL settings of `path`; what lies below inherits from them.
    pub fn set_acl(&self, path: &WinPath, settings: AclSettings) {
        self.acls.lock().unwrap_or_else(PoisonError::into_inner).insert(path.key(), settings);
    }

    /// Every path with its own ACL settings (by [`WinPath::key`]), `C:\` included.
    pub fn acl_overrides(&self) -> Vec<(String, AclSettings)> {
        let acls = self.acls.lock().unwrap_or_else(PoisonError::into_inner);
        acls.iter().map(|(key, settings)| (key.clone(), settings.clone())).collect()
    }

    /// Drops the ACL settings of `path` and everything below it (they went with it), or moves them to `to`.
    fn move_acls(&self, path: &WinPath, to: Option<&WinPath>) {
        let mut acls = self.acls.lock().unwrap_or_else(PoisonError::into_inner);
        let prefix = format!("{}\\", path.key());
        let moved: Vec<String> =
            acls.keys().filter(|key| **key == path.key() || key.starts_with(&prefix)).cloned().collect();
        for key in moved {
            let Some(settings) = acls.remove(&key) else { continue };
            if let Some(to) = to {
                acls.insert(format!("{}{}", to.key(), &key[path.key().len()..]), settings);
            }
        }
    }

    /// Keeps, from now on, every version of the file at `path` that this disk (or a clone) overwrites, removes
    /// (also with a directory above it) or renames away, for tests that look for what the file held earlier — such
    /// as a secret the product wrote and deleted again.
    ///
    /// ```
    /// use winhost_sim::disk::{Disk, WinPath};
    /// let root = tempfile::tempdir().unwrap();
    /// let disk = Disk::new(root.path()).unwrap();
    /// let file = WinPath::parse(r"C:\k\token").unwrap();
    /// disk.create_dir_all(&file.parent().unwrap()).unwrap();
    /// disk.keep_versions(&file);
    /// disk.write(&file, b"first").unwrap();
    /// disk.write(&file, b"second").unwrap();
    /// disk.remove(&WinPath::parse(r"C:\k").unwrap()).unwrap();
    /// assert_eq!(disk.earlier_versions(&file), [b"first".to_vec(), b"second".to_vec()]);
    /// ```
    pub fn keep_versions(&self, path: &WinPath) {
        let mut history = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        if !history.kept.contains(path) {
            history.kept.push(path.clone());
        }
    }

    /// The contents of `path` replaced, removed or renamed away since [`Disk::keep_versions`], oldest first (not
    /// its current contents).
    pub fn earlier_versions(&self, path: &WinPath) -> Vec<Vec<u8>> {
        let history = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        history.versions.iter().filter(|(kept, _)| kept == path).map(|(_, contents)| contents.clone()).collect()
    }

    /// Keeps the current contents of every kept file at or below `path` (see [`Disk::keep_versions`]) before a
    /// change. This type's `write`, `remove` and `rename` call it; code that changes files through
    /// [`Disk::host_path`] (the SFTP server's truncating open) calls it first.
    pub fn before_change(&self, path: &WinPath) {
        let mut history = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        let affected: Vec<WinPath> = history.kept.iter().filter(|kept| kept.starts_with(path)).cloned().collect();
        for kept in affected {
            if self.entry(&kept) == Some(Entry::File)
                && let Ok(contents) = fs::read(self.host_path(&kept))
            {
                history.versions.push((kept, contents));
            }
        }
    }

    /// The directory standing for `C:\`.
    pub fn drive_root(&self) -> &Path {
        &self.drive_root
    }

    /// The backing path of `path`, matching existing names case-insensitively (missing tails keep their case).
    pub fn host_path(&self, path: &WinPath) -> PathBuf {
        let mut current = self.drive_root.clone();
        for component in &path.components {
            let existing = fs::read_dir(&current).ok().and_then(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .find(|name| name.eq_ignore_ascii_case(component))
            });
            current.push(existing.as_deref().unwrap_or(component));
        }
        current
    }

    /// What `path` names, if anything.
    pub fn entry(&self, path: &WinPath) -> Option<Entry> {
        let metadata = fs::metadata(self.host_path(path)).ok()?;
        Some(if metadata.is_dir() { Entry::Directory } else { Entry::File })
    }

    /// The size of the regular file at `path`, if there is one.
    pub fn file_size(&self, path: &WinPath) -> Option<u64> {
        fs::metadata(self.host_path(path)).ok().filter(fs::Metadata::is_file).map(|metadata| metadata.len())
    }

    /// Reads a file.
    ///
    /// # Errors
    /// [`DiskError::NotFound`] if it is not a file.
    pub fn read(&self, path: &WinPath) -> Result<Vec<u8>, DiskError> {
        if self.entry(path) != Some(Entry::File) {
            return Err(DiskError::NotFound { path: path.to_string() });
        }
        fs::read(self.host_path(path)).map_err(|source| DiskError::Io { path: path.to_string(), source })
    }

    /// Writes a file whose parent directory exists.
    ///
    /// # Errors
    /// [`DiskError::NotFound`] if the parent is missing.
    pub fn write(&self, path: &WinPath, contents: &[u8]) -> Result<(), DiskError> {
        let parent_ok = path.parent().is_some_and(|parent| self.entry(&parent) == Some(Entry::Directory));
        if !parent_ok || self.entry(path) == Some(Entry::Directory) {
            return Err(DiskError::NotFound { path: path.to_string() });
        }
        self.before_change(path);
        fs::write(self.host_path(path), contents).map_err(|source| DiskError::Io { path: path.to_string(), source })
    }

    /// Creates a directory and its parents.
    ///
    /// # Errors
    /// [`DiskError::AlreadyExists`] if a file is in the way.
    pub fn create_dir_all(&self, path: &WinPath) -> Result<(), DiskError> {
        let mut current = WinPath { components: Vec::new() };
        for component in &path.components {
            current = current.join(component);
            match self.entry(&current) {
                Some(Entry::Directory) => {}
                Some(Entry::File) => return Err(DiskError::AlreadyExists { path: current.to_string() }),
                None => fs::create_dir(self.host_path(&current))
                    .map_err(|source| DiskError::Io { path: current.to_string(), source })?,
            }
        }
        Ok(())
    }

    /// Removes a file, or a directory with everything below it.
    ///
    /// # Errors
    /// [`DiskError::NotFound`] if nothing is there.
    pub fn remove(&self, path: &WinPath) -> Result<(), DiskError> {
        let host = self.host_path(path);
        if self.entry(path).is_some() {
            self.before_change(path);
        }
        let result = match self.entry(path) {
            None => return Err(DiskError::NotFound { path: path.to_string() }),
            Some(Entry::File) => fs::remove_file(host),
            Some(Entry::Directory) => fs::remove_dir_all(host),
        };
        result.map_err(|source| DiskError::Io { path: path.to_string(), source })?;
        self.move_acls(path, None);
        Ok(())
    }

    /// Renames like `MoveFileW` without replace: the target must not exist.
    ///
    /// # Errors
    /// [`DiskError::NotFound`] for a missing source or target parent, [`DiskError::AlreadyExists`] for an existing
    /// target.
    pub fn rename(&self, from: &WinPath, to: &WinPath) -> Result<(), DiskError> {
        if self.entry(from).is_none() {
            return Err(DiskError::NotFound { path: from.to_string() });
        }
        if self.entry(to).is_some() && from != to {
            return Err(DiskError::AlreadyExists { path: to.to_string() });
        }
        if to.parent().is_none_or(|parent| self.entry(&parent) != Some(Entry::Directory)) {
            return Err(DiskError::NotFound { path: to.to_string() });
        }
        if from != to {
            self.before_change(from);
        }
        fs::rename(self.host_path(from), self.host_path(to))
            .map_err(|source| DiskError::Io { path: to.to_string(), source })?;
        if from != to {
            self.move_acls(from, Some(to));
        }
        Ok(())
    }

    /// The names in a directory.
    ///
    /// # Errors
    /// [`DiskError::NotFound`] if it is not a directory.
    pub fn list(&self, path: &WinPath) -> Result<Vec<(String, Entry, u64)>, DiskError> {
        if self.entry(path) != Some(Entry::Directory) {
            return Err(DiskError::NotFound { path: path.to_string() });
        }
        let entries =
            fs::read_dir(self.host_path(path)).map_err(|source| DiskError::Io { path: path.to_string(), source })?;
        let mut listed = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let Ok(metadata) = entry.metadata() else { continue };
            let kind = if metadata.is_dir() { Entry::Directory } else { Entry::File };
            listed.push((entry.file_name().to_string_lossy().into_owned(), kind, metadata.len()));
        }
        listed.sort();
        Ok(listed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_win32_openssh_path_forms() {
        for form in [r"C:\k\a.exe", "C:/k/a.exe", "/C:/k/a.exe", r"c:\K\.\x\..\A.EXE", r"\k\a.exe"] {
            assert_eq!(WinPath::parse(form).unwrap().key(), r"c:\k\a.exe", "{form}");
        }
        for bad in ["k\\a", "D:\\x", "C:k", r"C:\a<b", r"\\server\share"] {
            assert!(WinPath::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(WinPath::parse(r"C:\k\x.exe").unwrap().sftp_form(), "/C:/k/x.exe");
    }

    #[test]
    fn lookups_are_case_insensitive_and_rename_refuses_existing_targets() {
        let root = tempfile::tempdir().unwrap();
        let disk = Disk::new(root.path()).unwrap();
        disk.create_dir_all(&WinPath::parse(r"C:\K\Sub").unwrap()).unwrap();
        let file = WinPath::parse(r"C:\k\sub\A.txt").unwrap();
        disk.write(&file, b"one").unwrap();
        assert!(root.path().join("C/K/Sub/A.txt").is_file());
        assert_eq!(disk.read(&WinPath::parse(r"c:\K\SUB\a.TXT").unwrap()).unwrap(), b"one");
        assert_eq!(disk.file_size(&WinPath::parse(r"c:\K\SUB\a.TXT").unwrap()), Some(3));
        assert_eq!(disk.file_size(&WinPath::parse(r"C:\k\sub").unwrap()), None, "a directory has no file size");
        let other = WinPath::parse(r"C:\k\b.txt").unwrap();
        disk.write(&other, b"two").unwrap();
        assert!(matches!(disk.rename(&other, &file), Err(DiskError::AlreadyExists { .. })));
        disk.remove(&file).unwrap();
        disk.rename(&other, &file).unwrap();
        assert_eq!(disk.read(&file).unwrap(), b"two");
        assert!(matches!(disk.write(&WinPath::parse(r"C:\none\x").unwrap(), b""), Err(DiskError::NotFound { .. })));
    }
}
