//! The payload's `sha256sum` file: parsing (every bad line is reported, not only the first) and writing, in the
//! format GNU `sha256sum` reads and writes: `<64 hex>  <path>` (text mode) or `<64 hex> *<path>` (binary mode).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{PayloadPath, Sha256Digest};

/// The name of the checksum file at the root of a payload directory.
pub const CHECKSUM_FILE_NAME: &str = "sha256sum";

/// The parsed `sha256sum` file: one digest per payload path, plus the lines that could not be used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChecksumList {
    /// The digest listed for each path (the first one when a path is listed twice).
    pub digests: BTreeMap<PayloadPath, Sha256Digest>,
    /// Lines that are malformed or repeat a path, in file order.
    pub bad_lines: Vec<BadChecksumLine>,
}

/// A line of `sha256sum` that was not used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BadChecksumLine {
    /// 1-based line number.
    pub line_number: usize,
    /// The line's text.
    pub text: String,
    /// Why it was not used.
    pub reason: BadChecksumReason,
}

/// Why a `sha256sum` line was not used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BadChecksumReason {
    /// Not `<64 hex><space><space or *><path>`.
    Malformed,
    /// The path is not a valid payload path (absolute, `..`, backslash, …).
    InvalidPath,
    /// The path was already listed on an earlier line.
    Duplicate,
}

impl ChecksumList {
    /// Parses the text of a `sha256sum` file. Blank lines are ignored; every other unusable line is recorded.
    ///
    /// ```
    /// use wmco_payload_manifest::ChecksumList;
    ///
    /// let text = format!("{}  cni/host-local.exe\nnot a line\n", "ab".repeat(32));
    /// let list = ChecksumList::parse(&text);
    /// assert_eq!(list.digests.len(), 1);
    /// assert_eq!(list.bad_lines[0].line_number, 2);
    /// ```
    pub fn parse(text: &str) -> Self {
        let mut list = Self::default();
        for (index, line) in text.lines().enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.trim().is_empty() {
                continue;
            }
            let bad = |reason| BadChecksumLine { line_number: index + 1, text: line.to_owned(), reason };
            let Some((digest, path_text)) = split_line(line) else {
                list.bad_lines.push(bad(BadChecksumReason::Malformed));
                continue;
            };
            let Ok(path) = path_text.parse::<PayloadPath>() else {
                list.bad_lines.push(bad(BadChecksumReason::InvalidPath));
                continue;
            };
            if list.digests.contains_key(&path) {
                list.bad_lines.push(bad(BadChecksumReason::Duplicate));
                continue;
            }
            list.digests.insert(path, digest);
        }
        list
    }

    /// Renders the list in `sha256sum` text format, sorted by path, one `\n`-terminated line per file.
    pub fn render(&self) -> String {
        self.digests.iter().map(|(path, digest)| format!("{digest}  {path}\n")).collect()
    }
}

fn split_line(line: &str) -> Option<(Sha256Digest, &str)> {
    let digest_text = line.get(..64)?;
    let rest = line.get(64..)?;
    let path = rest.strip_prefix("  ").or_else(|| rest.strip_prefix(" *"))?;
    if path.is_empty() {
        return None;
    }
    Some((digest_text.parse().ok()?, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> PayloadPath {
        text.parse().unwrap()
    }

    #[test]
    fn parses_text_and_binary_mode_lines_and_crlf() {
        let a = Sha256Digest::of_bytes(b"a");
        let b = Sha256Digest::of_bytes(b"b");
        let text = format!("{a}  kubelet.exe\r\n\n{} *cni/win-overlay.exe\n", b.to_string().to_uppercase());
        let list = ChecksumList::parse(&text);
        assert_eq!(list.bad_lines, vec![]);
        assert_eq!(list.digests, BTreeMap::from([(path("kubelet.exe"), a), (path("cni/win-overlay.exe"), b)]));
    }

    #[test]
    fn reports_every_bad_line_with_its_number_and_keeps_the_first_duplicate() {
        let a = Sha256Digest::of_bytes(b"a");
        let b = Sha256Digest::of_bytes(b"b");
        let text = format!("{a}  x.exe\n{b}  x.exe\n{a} x.exe\n{a}  ../x.exe\nzz  y.exe\n");
        let list = ChecksumList::parse(&text);
        let reasons: Vec<(usize, BadChecksumReason)> =
            list.bad_lines.iter().map(|line| (line.line_number, line.reason.clone())).collect();
        assert_eq!(
            reasons,
            vec![
                (2, BadChecksumReason::Duplicate),
                (3, BadChecksumReason::Malformed),
                (4, BadChecksumReason::InvalidPath),
                (5, BadChecksumReason::Malformed),
            ]
        );
        assert_eq!(list.digests, BTreeMap::from([(path("x.exe"), a)]));
    }

    #[test]
    fn render_then_parse_round_trips() {
        let list = ChecksumList {
            digests: BTreeMap::from([
                (path("b.exe"), Sha256Digest::of_bytes(b"b")),
                (path("a/c.ps1"), Sha256Digest::of_bytes(b"c")),
            ]),
            bad_lines: vec![],
        };
        let text = list.render();
        assert!(text.starts_with(&format!("{}  a/c.ps1\n", Sha256Digest::of_bytes(b"c"))));
        assert_eq!(ChecksumList::parse(&text), list);
    }
}
