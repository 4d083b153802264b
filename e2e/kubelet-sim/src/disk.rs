//! The simulated host's `C:` drive: maps the Windows paths a kubelet reads from its flags and files
//! (`C:\k\kubelet.conf`, `c:\var\lib\kubelet\pki\`, `C:/k/x`) to paths under the host's `<root>/C` directory, matching
//! existing names case-insensitively as Windows does, and writes files as the kubelet writes them.

use std::path::{Path, PathBuf};

/// The `C:` drive of one simulated host, backed by a directory.
#[derive(Clone, Debug)]
pub struct Drive {
    root: PathBuf,
}

/// Why a path cannot be mapped onto the drive.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathProblem {
    /// Not an absolute path on drive `C:`.
    #[error("{path:?} is not an absolute path on drive C: (the simulated host has no other drive)")]
    NotOnDriveC {
        /// The path given.
        path: String,
    },
    /// A component is `..`, which could leave the drive.
    #[error("{path:?} contains '..'")]
    ParentComponent {
        /// The path given.
        path: String,
    },
}

impl Drive {
    /// A drive whose `C:\` is `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory holding `C:\`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The backing path of a Windows path; existing names are matched case-insensitively, missing ones keep their
    /// case. Accepts `\` and `/` separators, any case of the drive letter, and trailing separators.
    ///
    /// ```
    /// let drive = wmco_kubelet_sim::Drive::new("/hosts/win-a/C");
    /// let path = drive.resolve(r"c:\var\lib\kubelet\pki\").unwrap();
    /// assert_eq!(path, std::path::Path::new("/hosts/win-a/C/var/lib/kubelet/pki"));
    /// ```
    ///
    /// # Errors
    /// [`PathProblem`] when the path is not absolute on `C:` or climbs with `..`.
    pub fn resolve(&self, windows_path: &str) -> Result<PathBuf, PathProblem> {
        let rest = windows_path
            .strip_prefix("C:")
            .or_else(|| windows_path.strip_prefix("c:"))
            .filter(|rest| rest.starts_with(['\\', '/']))
            .ok_or_else(|| PathProblem::NotOnDriveC { path: windows_path.to_owned() })?;
        let mut resolved = self.root.clone();
        for component in rest.split(['\\', '/']).filter(|c| !c.is_empty() && *c != ".") {
            if component == ".." {
                return Err(PathProblem::ParentComponent { path: windows_path.to_owned() });
            }
            let existing = existing_name(&resolved, component);
            resolved.push(existing.as_deref().unwrap_or(component));
        }
        Ok(resolved)
    }
}

/// The name of the entry of `directory` equal to `component` ignoring ASCII case, if there is one.
fn existing_name(directory: &Path, component: &str) -> Option<String> {
    if directory.join(component).exists() {
        return Some(component.to_owned());
    }
    std::fs::read_dir(directory)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .find(|name| name.eq_ignore_ascii_case(component))
}

/// Joins a file name to a Windows directory path the way Go's `filepath.Join` does on Windows.
pub(crate) fn windows_join(directory: &str, file_name: &str) -> String {
    format!("{}\\{file_name}", directory.trim_end_matches(['\\', '/']))
}

/// Writes `contents` to `path` through a temporary file and a rename, with mode 0600 on Unix (the kubelet's
/// certificate and kubeconfig files are private).
pub(crate) fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temporary = path.with_extension("tmp-write");
    std::fs::write(&temporary, contents)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o600))?;
    }
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_paths_map_under_the_root_case_insensitively() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("K")).unwrap();
        let drive = Drive::new(root.path());
        assert_eq!(drive.resolve(r"C:\k\kubelet.conf").unwrap(), root.path().join("K/kubelet.conf"));
        assert_eq!(drive.resolve("C:/k/x").unwrap(), root.path().join("K/x"));
        assert_eq!(drive.resolve(r"C:\").unwrap(), root.path());
    }

    #[test]
    fn paths_off_drive_c_or_climbing_are_refused() {
        let drive = Drive::new("/r");
        assert_eq!(drive.resolve(r"D:\k").unwrap_err(), PathProblem::NotOnDriveC { path: r"D:\k".into() });
        assert_eq!(drive.resolve(r"k\x").unwrap_err(), PathProblem::NotOnDriveC { path: r"k\x".into() });
        assert_eq!(drive.resolve("C:k").unwrap_err(), PathProblem::NotOnDriveC { path: "C:k".into() });
        assert_eq!(
            drive.resolve(r"C:\k\..\..\etc").unwrap_err(),
            PathProblem::ParentComponent { path: r"C:\k\..\..\etc".into() }
        );
    }

    #[test]
    fn joins_use_one_backslash() {
        assert_eq!(windows_join(r"c:\var\lib\kubelet\pki\", "a.pem"), r"c:\var\lib\kubelet\pki\a.pem");
        assert_eq!(windows_join(r"C:\pki", "a.pem"), r"C:\pki\a.pem");
    }
}
