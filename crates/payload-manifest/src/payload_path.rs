//! `PayloadPath`: the path of a file inside the payload directory, relative and `/`-separated, as the manifest and
//! the `sha256sum` file write it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A relative path inside the payload directory: `/`-separated, no empty, `.` or `..` component, no backslash,
/// no leading `/`. It can therefore never escape the payload directory.
///
/// ```
/// use wmco_payload_manifest::PayloadPath;
///
/// let path: PayloadPath = "kube-node/kubelet.exe".parse().unwrap();
/// assert_eq!(path.file_name(), "kubelet.exe");
/// assert!("../etc/passwd".parse::<PayloadPath>().is_err());
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PayloadPath(String);

/// Why a text is not a payload path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a payload path: {reason}")]
pub struct PayloadPathError {
    /// The rejected text.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl PayloadPath {
    /// A path from a constant of this crate that is known to be valid (checked in debug builds and tests).
    pub(crate) fn from_trusted(text: &'static str) -> Self {
        debug_assert!(text.parse::<PayloadPath>().is_ok(), "{text} is not a payload path");
        Self(text.to_owned())
    }

    /// The path as written (`/`-separated).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last component.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// This path under the local directory `root`.
    pub fn under(&self, root: &Path) -> PathBuf {
        self.0.split('/').fold(root.to_path_buf(), |path, component| path.join(component))
    }
}

impl FromStr for PayloadPath {
    type Err = PayloadPathError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let reject = |reason| Err(PayloadPathError { text: text.to_owned(), reason });
        if text.is_empty() {
            return reject("it is empty");
        }
        if text.starts_with('/') {
            return reject("it is absolute");
        }
        if text.contains('\\') {
            return reject("it contains a backslash; use /");
        }
        if text.split('/').any(|component| component.is_empty() || component == "." || component == "..") {
            return reject("it has an empty, `.` or `..` component");
        }
        if text.chars().any(char::is_control) {
            return reject("it contains a control character");
        }
        Ok(Self(text.to_owned()))
    }
}

impl fmt::Display for PayloadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for PayloadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl Serialize for PayloadPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for PayloadPath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_nested_relative_paths() {
        let path: PayloadPath = "cni/win-overlay.exe".parse().unwrap();
        assert_eq!(path.as_str(), "cni/win-overlay.exe");
        assert_eq!(path.file_name(), "win-overlay.exe");
        assert_eq!(path.under(Path::new("/payload")), PathBuf::from("/payload/cni/win-overlay.exe"));
    }

    #[test]
    fn rejects_paths_that_could_escape_or_are_ambiguous() {
        for (text, reason) in [
            ("", "it is empty"),
            ("/etc/passwd", "it is absolute"),
            ("cni\\host-local.exe", "it contains a backslash; use /"),
            ("a//b", "it has an empty, `.` or `..` component"),
            ("a/../b", "it has an empty, `.` or `..` component"),
            ("./a", "it has an empty, `.` or `..` component"),
            ("a/", "it has an empty, `.` or `..` component"),
            ("a\nb", "it contains a control character"),
        ] {
            assert_eq!(text.parse::<PayloadPath>(), Err(PayloadPathError { text: text.to_owned(), reason }));
        }
    }
}
