//! Typed Windows paths ([`WinPath`]): drive-qualified, backslash-joined and validated against the Windows naming
//! rules (windows-commands.md §6) at construction, so no other module ever builds a path by concatenating strings.
//!
//! A `WinPath` is stored in its canonical form: upper-case drive letter, `\` separators, no trailing separator (except
//! the drive root `C:\`). Comparison is on that canonical text, so it is case-sensitive; use
//! [`WinPath::same_location`] for the case-insensitive comparison Windows itself applies.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest path (in UTF-16 code units, without the terminating NUL) classic Win32 APIs accept: MAX_PATH − 1.
pub const MAX_PATH_CHARS: usize = 259;

/// Names Windows reserves for devices, in any case and also with an extension (§6).
const RESERVED_NAMES: [&str; 22] = [
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9", "LPT1", "LPT2",
    "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

/// Characters a path segment may not contain besides the control characters 0–31 (§6).
const FORBIDDEN_CHARS: [char; 7] = ['<', '>', ':', '"', '|', '?', '*'];

/// A drive-qualified Windows path such as `C:\k\kubelet.exe`, validated against the Windows naming rules.
///
/// Serialized (serde) as its backslash string.
///
/// ```
/// use wmco_windows_services::WinPath;
///
/// let kubelet = WinPath::parse("C:/k/kubelet.exe")?;
/// assert_eq!(kubelet.to_string(), r"C:\k\kubelet.exe");
/// assert_eq!(kubelet.to_sftp(), "C:/k/kubelet.exe");
/// assert_eq!(kubelet.file_name(), Some("kubelet.exe"));
/// assert_eq!(kubelet.parent(), Some(WinPath::parse(r"C:\k")?));
/// assert_eq!(WinPath::parse(r"C:\k")?.join(r"cni\config")?.to_string(), r"C:\k\cni\config");
/// assert!(WinPath::parse(r"C:\k\..\Windows").is_err());
/// # Ok::<(), wmco_windows_services::PathError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WinPath {
    /// Canonical text: `X:\seg\seg` (or `X:\` for a drive root).
    canonical: String,
}

/// Why a text is not an acceptable Windows path; every variant names the offending path and the rule broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path does not start with a drive letter, `:` and a separator.
    #[error("path {path:?} is not drive-qualified: it must start like `C:\\`")]
    NotDriveQualified {
        /// The text that was given.
        path: String,
    },
    /// Two separators in a row (an empty segment).
    #[error("path {path:?} has an empty segment (two separators in a row)")]
    EmptySegment {
        /// The text that was given.
        path: String,
    },
    /// A `.` or `..` segment: paths must be written without relative components.
    #[error("path {path:?} contains the relative segment {segment:?}; write the path without `.` or `..`")]
    RelativeSegment {
        /// The text that was given.
        path: String,
        /// The `.` or `..` segment.
        segment: String,
    },
    /// A segment holds a character Windows forbids in file names (`< > : " | ? *` or a control character).
    #[error("path {path:?}: segment {segment:?} contains the forbidden character {character:?}")]
    ForbiddenCharacter {
        /// The text that was given.
        path: String,
        /// The segment holding the character.
        segment: String,
        /// The forbidden character.
        character: char,
    },
    /// A segment ends in a space or a period, which Windows strips silently.
    #[error("path {path:?}: segment {segment:?} ends in a space or period, which Windows would strip")]
    TrailingSpaceOrPeriod {
        /// The text that was given.
        path: String,
        /// The offending segment.
        segment: String,
    },
    /// A segment is a reserved device name (`CON`, `NUL`, `COM1`, …), possibly with an extension.
    #[error("path {path:?}: segment {segment:?} is a reserved device name")]
    ReservedName {
        /// The text that was given.
        path: String,
        /// The offending segment.
        segment: String,
    },
    /// The path is longer than MAX_PATH allows.
    #[error("path {path:?} is {length} UTF-16 units long; the limit is {MAX_PATH_CHARS}")]
    TooLong {
        /// The text that was given.
        path: String,
        /// Its length in UTF-16 code units.
        length: usize,
    },
    /// [`WinPath::join`] was given something that is not a relative path.
    #[error("cannot join {relative:?} onto {base}: it must be a relative path (no drive, no leading separator)")]
    NotRelative {
        /// The base path.
        base: String,
        /// The text that was given to join.
        relative: String,
    },
}

impl WinPath {
    /// Parses a drive-qualified path written with `\` or `/` separators (`C:\k\x` or `C:/k/x`); one trailing
    /// separator is allowed and dropped.
    ///
    /// # Errors
    /// A [`PathError`] naming the rule of windows-commands.md §6 the text breaks.
    pub fn parse(text: &str) -> Result<WinPath, PathError> {
        let mut chars = text.chars();
        let (Some(drive), Some(':'), Some('\\' | '/')) = (chars.next(), chars.next(), chars.next()) else {
            return Err(PathError::NotDriveQualified { path: text.to_owned() });
        };
        if !drive.is_ascii_alphabetic() {
            return Err(PathError::NotDriveQualified { path: text.to_owned() });
        }
        let rest = chars.as_str();
        let rest = rest.strip_suffix(['\\', '/']).unwrap_or(rest);
        let mut canonical = format!("{}:\\", drive.to_ascii_uppercase());
        if !rest.is_empty() {
            push_segments(&mut canonical, rest, text)?;
        }
        check_length(&canonical, text)?;
        Ok(WinPath { canonical })
    }

    /// Appends a relative path of one or more `\`- or `/`-separated segments.
    ///
    /// # Errors
    /// [`PathError::NotRelative`] for an absolute or drive-qualified `relative`, otherwise the rule a segment
    /// breaks or [`PathError::TooLong`].
    pub fn join(&self, relative: &str) -> Result<WinPath, PathError> {
        let is_absolute = relative.starts_with(['\\', '/']) || relative.chars().nth(1) == Some(':');
        if relative.is_empty() || is_absolute {
            return Err(PathError::NotRelative { base: self.canonical.clone(), relative: relative.to_owned() });
        }
        let mut canonical = self.canonical.clone();
        if !self.is_root() {
            canonical.push('\\');
        }
        let whole = format!("{canonical}{relative}");
        push_segments(&mut canonical, relative, &whole)?;
        check_length(&canonical, &whole)?;
        Ok(WinPath { canonical })
    }

    /// The SFTP form of the path accepted by Win32-OpenSSH's sftp-server: `C:/k/x`.
    pub fn to_sftp(&self) -> String {
        self.canonical.replace('\\', "/")
    }

    /// The last segment, or `None` for a drive root.
    pub fn file_name(&self) -> Option<&str> {
        if self.is_root() {
            return None;
        }
        self.canonical.rsplit('\\').next()
    }

    /// The path without its last segment, or `None` for a drive root.
    pub fn parent(&self) -> Option<WinPath> {
        if self.is_root() {
            return None;
        }
        let cut = self.canonical.rfind('\\')?;
        let parent = if cut == 2 { &self.canonical[..3] } else { &self.canonical[..cut] };
        Some(WinPath { canonical: parent.to_owned() })
    }

    /// The canonical backslash text, e.g. `C:\k\x`.
    pub fn as_str(&self) -> &str {
        &self.canonical
    }

    /// Whether this is a drive root such as `C:\`.
    pub fn is_root(&self) -> bool {
        self.canonical.len() == 3
    }

    /// Whether this path lies inside `directory` (at any depth; case-insensitive, as Windows compares).
    ///
    /// ```
    /// use wmco_windows_services::WinPath;
    /// let file = WinPath::parse(r"C:\k\containerd\registries\quay.io\hosts.toml")?;
    /// assert!(file.is_within(&WinPath::parse(r"C:\K\Containerd\Registries")?));
    /// assert!(!file.is_within(&WinPath::parse(r"C:\k\containerd\reg")?));
    /// assert!(!file.is_within(&file));
    /// # Ok::<(), wmco_windows_services::PathError>(())
    /// ```
    pub fn is_within(&self, directory: &WinPath) -> bool {
        let prefix = if directory.is_root() {
            directory.canonical.to_lowercase()
        } else {
            format!("{}\\", directory.canonical.to_lowercase())
        };
        self.canonical.len() > prefix.len() && self.canonical.to_lowercase().starts_with(&prefix)
    }

    /// Whether both paths name the same location under Windows' case-insensitive comparison.
    ///
    /// ```
    /// use wmco_windows_services::WinPath;
    /// let a = WinPath::parse(r"C:\K\Kubelet.exe")?;
    /// assert!(a.same_location(&WinPath::parse(r"c:\k\kubelet.exe")?));
    /// # Ok::<(), wmco_windows_services::PathError>(())
    /// ```
    pub fn same_location(&self, other: &WinPath) -> bool {
        self.canonical.to_lowercase() == other.canonical.to_lowercase()
    }
}

/// Validates each `\`/`/`-separated segment of `segments` and appends them to `canonical`, `\`-joined.
fn push_segments(canonical: &mut String, segments: &str, whole: &str) -> Result<(), PathError> {
    for (index, segment) in segments.split(['\\', '/']).enumerate() {
        check_segment(segment, whole)?;
        if index > 0 {
            canonical.push('\\');
        }
        canonical.push_str(segment);
    }
    Ok(())
}

/// Checks one path segment against §6.
fn check_segment(segment: &str, whole: &str) -> Result<(), PathError> {
    let path = || whole.to_owned();
    if segment.is_empty() {
        return Err(PathError::EmptySegment { path: path() });
    }
    if segment == "." || segment == ".." {
        return Err(PathError::RelativeSegment { path: path(), segment: segment.to_owned() });
    }
    if let Some(character) = segment.chars().find(|c| FORBIDDEN_CHARS.contains(c) || u32::from(*c) < 32) {
        return Err(PathError::ForbiddenCharacter { path: path(), segment: segment.to_owned(), character });
    }
    if segment.ends_with([' ', '.']) {
        return Err(PathError::TrailingSpaceOrPeriod { path: path(), segment: segment.to_owned() });
    }
    let stem = segment.split('.').next().unwrap_or(segment).trim_end();
    if RESERVED_NAMES.iter().any(|reserved| stem.eq_ignore_ascii_case(reserved)) {
        return Err(PathError::ReservedName { path: path(), segment: segment.to_owned() });
    }
    Ok(())
}

/// Rejects canonical paths longer than [`MAX_PATH_CHARS`] UTF-16 units.
fn check_length(canonical: &str, whole: &str) -> Result<(), PathError> {
    let length = canonical.encode_utf16().count();
    if length > MAX_PATH_CHARS {
        return Err(PathError::TooLong { path: whole.to_owned(), length });
    }
    Ok(())
}

impl fmt::Display for WinPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical)
    }
}

impl FromStr for WinPath {
    type Err = PathError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        WinPath::parse(text)
    }
}

impl Serialize for WinPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.canonical)
    }
}

impl<'de> Deserialize<'de> for WinPath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        WinPath::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> WinPath {
        WinPath::parse(text).unwrap()
    }

    #[test]
    fn parse_canonicalizes_separators_drive_case_and_trailing_separator() {
        assert_eq!(path(r"C:\k\x").as_str(), r"C:\k\x");
        assert_eq!(path("c:/k/x/").as_str(), r"C:\k\x");
        assert_eq!(path(r"C:\k/x\").as_str(), r"C:\k\x");
        assert_eq!(path(r"D:\").as_str(), r"D:\");
        assert_eq!(path("e:/").as_str(), r"E:\");
    }

    #[test]
    fn parse_keeps_legal_unusual_characters() {
        let odd = path(r"C:\Program Files\a&b^c%d$e`f'g[h]\ü ñ.exe");
        assert_eq!(odd.file_name(), Some("ü ñ.exe"));
    }

    #[test]
    fn parse_rejects_non_drive_qualified_text() {
        for text in ["", "C:", "C:k", r"\k\x", "k/x", r"\\server\share", r"1:\k", r"CC:\k"] {
            assert_eq!(WinPath::parse(text), Err(PathError::NotDriveQualified { path: text.to_owned() }), "{text}");
        }
    }

    #[test]
    fn parse_rejects_each_naming_rule() {
        assert_eq!(WinPath::parse(r"C:\k\\x"), Err(PathError::EmptySegment { path: r"C:\k\\x".into() }));
        assert_eq!(
            WinPath::parse(r"C:\k\..\x"),
            Err(PathError::RelativeSegment { path: r"C:\k\..\x".into(), segment: "..".into() })
        );
        assert_eq!(
            WinPath::parse(r"C:\.\x"),
            Err(PathError::RelativeSegment { path: r"C:\.\x".into(), segment: ".".into() })
        );
        for bad in ['<', '>', ':', '"', '|', '?', '*', '\u{0}', '\n', '\u{1f}'] {
            let text = format!(r"C:\k\a{bad}b");
            assert_eq!(
                WinPath::parse(&text),
                Err(PathError::ForbiddenCharacter { path: text.clone(), segment: format!("a{bad}b"), character: bad })
            );
        }
        assert_eq!(
            WinPath::parse(r"C:\k\x.\y"),
            Err(PathError::TrailingSpaceOrPeriod { path: r"C:\k\x.\y".into(), segment: "x.".into() })
        );
        assert_eq!(
            WinPath::parse(r"C:\k\x \y"),
            Err(PathError::TrailingSpaceOrPeriod { path: r"C:\k\x \y".into(), segment: "x ".into() })
        );
    }

    #[test]
    fn parse_rejects_reserved_device_names_in_any_case_and_with_extension() {
        for name in ["CON", "prn", "Aux", "nul.txt", "COM1", "com9.log", "LPT1", "lpt9", "NUL .txt"] {
            let text = format!(r"C:\k\{name}");
            assert_eq!(
                WinPath::parse(&text),
                Err(PathError::ReservedName { path: text.clone(), segment: name.into() }),
                "{name}"
            );
        }
        for allowed in ["CONSOLE", "COM10", "LPT0", "nul_", "auxiliary.txt"] {
            assert!(WinPath::parse(&format!(r"C:\k\{allowed}")).is_ok(), "{allowed}");
        }
    }

    #[test]
    fn parse_enforces_max_path() {
        let longest = format!(r"C:\{}", "a".repeat(256));
        assert_eq!(path(&longest).as_str().len(), 259);
        let too_long = format!(r"C:\{}", "a".repeat(257));
        assert_eq!(WinPath::parse(&too_long), Err(PathError::TooLong { path: too_long.clone(), length: 260 }));
    }

    #[test]
    fn join_appends_one_or_several_segments() {
        let k = path(r"C:\k");
        assert_eq!(k.join("kubelet.exe").unwrap().as_str(), r"C:\k\kubelet.exe");
        assert_eq!(k.join(r"cni\config").unwrap().as_str(), r"C:\k\cni\config");
        assert_eq!(
            k.join("containerd/registries/").unwrap_err(),
            PathError::EmptySegment { path: r"C:\k\containerd/registries/".into() }
        );
        assert_eq!(path(r"C:\").join("k").unwrap().as_str(), r"C:\k");
    }

    #[test]
    fn join_rejects_absolute_and_invalid_relatives() {
        let k = path(r"C:\k");
        for relative in ["", r"\x", "/x", r"D:\x", "D:x"] {
            assert_eq!(
                k.join(relative),
                Err(PathError::NotRelative { base: r"C:\k".into(), relative: relative.into() }),
                "{relative}"
            );
        }
        assert_eq!(
            k.join(r"a\..\b"),
            Err(PathError::RelativeSegment { path: r"C:\k\a\..\b".into(), segment: "..".into() })
        );
        assert!(matches!(k.join("nul"), Err(PathError::ReservedName { .. })));
    }

    #[test]
    fn sftp_form_file_name_and_parent() {
        let shim = path(r"C:\k\containerd\containerd-shim-runhcs-v1.exe");
        assert_eq!(shim.to_sftp(), "C:/k/containerd/containerd-shim-runhcs-v1.exe");
        assert_eq!(shim.file_name(), Some("containerd-shim-runhcs-v1.exe"));
        assert_eq!(shim.parent(), Some(path(r"C:\k\containerd")));
        assert_eq!(path(r"C:\k").parent(), Some(path(r"C:\")));
        assert_eq!(path(r"C:\").parent(), None);
        assert_eq!(path(r"C:\").file_name(), None);
        assert_eq!(path(r"C:\").to_sftp(), "C:/");
    }

    #[test]
    fn display_and_from_str_round_trip() {
        let parsed: WinPath = "c:/var/log/kubelet".parse().unwrap();
        assert_eq!(parsed.to_string(), r"C:\var\log\kubelet");
        assert_eq!(parsed.to_string().parse::<WinPath>().unwrap(), parsed);
    }

    #[test]
    fn serde_uses_the_backslash_string_and_validates() {
        let json = serde_json::to_string(&path("C:/k/x")).unwrap();
        assert_eq!(json, r#""C:\\k\\x""#);
        let back: WinPath = serde_json::from_str(r#""c:/k/x""#).unwrap();
        assert_eq!(back, path(r"C:\k\x"));
        let err = serde_json::from_str::<WinPath>(r#""k/x""#).unwrap_err();
        assert!(err.to_string().contains("not drive-qualified"), "{err}");
    }

    #[test]
    fn same_location_ignores_case_but_equality_does_not() {
        let upper = path(r"C:\K\X.EXE");
        let lower = path(r"c:\k\x.exe");
        assert!(upper.same_location(&lower));
        assert_ne!(upper, lower);
    }
}
