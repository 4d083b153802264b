//! Go build information: the blob the Go linker (1.18 and later) embeds in every binary, found by its
//! `\xff Go buildinf:` marker, and the module information text inside it (`path`, `mod`, `dep`, `=>`, `build`
//! lines).
//!
//! Layout (Go's `debug/buildinfo` documentation): a 32-byte header aligned to 16 bytes — the 14-byte marker, the
//! pointer size, a flags byte — then, when flag bit 2 says the strings are inline, two uvarint-length-prefixed
//! strings: the runtime version (`go1.26.8`) and the module information. The module information is wrapped in 16
//! sentinel bytes on each side. Binaries of Go before 1.18 store pointers instead of strings; they are refused.
//!
//! Reads are bounded: the search reads fixed-size chunks, lengths are checked against the file size before anything
//! is read, and a string longer than [`MAX_STRING_LEN`] is refused.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;

/// The marker that starts the build information blob.
pub const GO_BUILD_INFO_MAGIC: &[u8; 14] = b"\xff Go buildinf:";

/// The longest version or module information string accepted (a Kubernetes binary's is about 20 KiB).
pub const MAX_STRING_LEN: u64 = 16 << 20;

const HEADER_LEN: u64 = 32;
const ALIGNMENT: u64 = 16;
const FLAG_INLINE_STRINGS: u8 = 0x2;
const MAX_UVARINT_LEN: usize = 10;
const SCAN_CHUNK: usize = 64 << 10;
const MODULE_INFO_START: [u8; 16] =
    [0x30, 0x77, 0xaf, 0x0c, 0x92, 0x74, 0x08, 0x02, 0x41, 0xe1, 0xc1, 0x07, 0xe6, 0xd6, 0x18, 0xe6];
const MODULE_INFO_END: [u8; 16] =
    [0xf9, 0x32, 0x43, 0x31, 0x86, 0x18, 0x20, 0x72, 0x00, 0x82, 0x42, 0x10, 0x41, 0x16, 0xd8, 0xf2];

/// The Go build information of a binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoBuildInfo {
    /// The Go toolchain that built it, e.g. `go1.26.8`.
    pub go_version: String,
    /// The import path of the main package (the `path` line), e.g. `k8s.io/kubernetes/cmd/kubelet`.
    pub main_package: Option<String>,
    /// The main module (the `mod` line): the wrapper module of a payload build, the upstream module of
    /// `go install module/pkg@version`.
    pub main_module: Option<GoModule>,
    /// The modules of the build list (the `dep` lines), in recorded order.
    pub dependencies: Vec<GoModule>,
    /// The build settings (the `build` lines), in recorded order.
    pub settings: Vec<BuildSetting>,
}

/// A module recorded in the build information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoModule {
    /// The module path, e.g. `k8s.io/kubernetes`.
    pub path: String,
    /// The required version, e.g. `v1.36.3`, or `(devel)` for a main module built without version control.
    pub version: String,
    /// The `go.sum` hash, when recorded.
    pub sum: Option<String>,
    /// The `=>` replacement, when the module was replaced; the required `version` above is what the build asked
    /// for.
    pub replacement: Option<Box<GoModule>>,
}

/// One `build` line: `key=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildSetting {
    /// The setting, e.g. `GOOS` or `-trimpath`.
    pub key: String,
    /// Its value, unquoted, e.g. `windows` or `true`.
    pub value: String,
}

/// The Go build information is absent or unusable.
#[derive(Debug, thiserror::Error)]
pub enum BuildInfoError {
    /// No marker at any 16-byte-aligned offset.
    #[error("no Go build information (no `\\xff Go buildinf:` marker): not a Go binary, or built by Go before 1.13")]
    NotFound,
    /// The blob stores pointers rather than inline strings.
    #[error(
        "the Go build information at offset {offset} uses the pointer format of Go before 1.18, which is not \
         supported; rebuild with Go 1.18 or later"
    )]
    OldFormat {
        /// The file offset of the marker.
        offset: u64,
    },
    /// The file ends inside the blob.
    #[error("the Go build information at offset {offset} is truncated: the file ends inside its {part}")]
    Truncated {
        /// The file offset of the marker.
        offset: u64,
        /// The part cut off (`header`, `length of the Go version`, …).
        part: &'static str,
    },
    /// A string's length runs past the end of the file.
    #[error(
        "the Go build information at offset {offset} gives its {part} a length of {length} bytes, past the end of \
         the file ({available} bytes left)"
    )]
    LengthPastEnd {
        /// The file offset of the marker.
        offset: u64,
        /// The string (`Go version` or `module information`).
        part: &'static str,
        /// The recorded length.
        length: u64,
        /// The bytes left in the file after the length.
        available: u64,
    },
    /// A string is longer than [`MAX_STRING_LEN`], or its length is not a valid uvarint.
    #[error(
        "the Go build information at offset {offset} gives its {part} an unusable length ({length}, at most \
         {MAX_STRING_LEN} bytes accepted)"
    )]
    BadLength {
        /// The file offset of the marker.
        offset: u64,
        /// The string.
        part: &'static str,
        /// The decoded length (saturated when the uvarint overflows).
        length: u64,
    },
    /// A string is not UTF-8.
    #[error("the Go build information at offset {offset} has a {part} that is not UTF-8")]
    NotUtf8 {
        /// The file offset of the marker.
        offset: u64,
        /// The string.
        part: &'static str,
    },
    /// A line of the module information has a known tag but an unusable shape.
    #[error("line {line_number} of the Go module information ({text:?}) is malformed: {reason}")]
    BadLine {
        /// The 1-based line number within the module information.
        line_number: usize,
        /// The line.
        text: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The binary could not be read.
    #[error("cannot read the binary at offset {offset}")]
    Read {
        /// Where the read started.
        offset: u64,
        /// The IO error.
        #[source]
        source: io::Error,
    },
}

/// Finds and parses the Go build information in `bytes`, the whole content of a binary.
///
/// ```
/// use wmco_payload_manifest::{BuildInfoError, read_go_build_info};
///
/// let text = "path\texample.com/tool\nmod\texample.com/tool\tv1.2.3\t\nbuild\tGOOS=windows\n";
/// let mut blob = b"\xff Go buildinf:\x08\x02".to_vec();
/// blob.resize(32, 0);
/// for part in ["go1.26.8", text] {
///     blob.push(part.len() as u8);
///     blob.extend_from_slice(part.as_bytes());
/// }
/// let info = read_go_build_info(&blob).unwrap();
/// assert_eq!(info.go_version, "go1.26.8");
/// assert_eq!(info.owner_module().map(|module| module.version.as_str()), Some("v1.2.3"));
/// assert_eq!(info.setting("GOOS"), Some("windows"));
/// assert!(matches!(read_go_build_info(b"MZ, but no Go"), Err(BuildInfoError::NotFound)));
/// ```
pub fn read_go_build_info(bytes: &[u8]) -> Result<GoBuildInfo, BuildInfoError> {
    let whole_file: Range<u64> = 0..bytes.len() as u64;
    find_build_info(bytes, std::slice::from_ref(&whole_file))
}

impl GoBuildInfo {
    /// Parses the module information text (sentinels already removed) recorded beside `go_version`.
    pub fn from_module_info(go_version: impl Into<String>, text: &str) -> Result<Self, BuildInfoError> {
        let mut info = GoBuildInfo {
            go_version: go_version.into(),
            main_package: None,
            main_module: None,
            dependencies: Vec::new(),
            settings: Vec::new(),
        };
        // Which module a `=>` line replaces: the one on the line before it.
        let mut replaceable: Option<Replaceable> = None;
        for (index, line) in text.lines().enumerate() {
            let bad = |reason| BuildInfoError::BadLine { line_number: index + 1, text: line.to_owned(), reason };
            let Some((tag, rest)) = line.split_once('\t') else {
                continue; // blank lines, and lines a newer Go may add
            };
            let previous = replaceable.take();
            match tag {
                "path" => info.main_package = Some(rest.to_owned()),
                "mod" => {
                    info.main_module = Some(parse_module(rest, true).ok_or_else(|| bad(MODULE_SHAPE))?);
                    replaceable = Some(Replaceable::Main);
                }
                "dep" => {
                    info.dependencies.push(parse_module(rest, true).ok_or_else(|| bad(MODULE_SHAPE))?);
                    replaceable = Some(Replaceable::Dependency);
                }
                "=>" => {
                    let replacement = parse_module(rest, false).ok_or_else(|| bad(REPLACEMENT_SHAPE))?;
                    let replaced = match previous {
                        Some(Replaceable::Main) => info.main_module.as_mut(),
                        Some(Replaceable::Dependency) => info.dependencies.last_mut(),
                        None => None,
                    };
                    let replaced =
                        replaced.ok_or_else(|| bad("a replacement (`=>`) must follow a `mod` or `dep` line"))?;
                    replaced.replacement = Some(Box::new(replacement));
                }
                "build" => info.settings.push(parse_setting(rest).ok_or_else(|| bad("expected `build\tkey=value`"))?),
                _ => {} // `go`, and tags a newer Go may add
            }
        }
        Ok(info)
    }

    /// The value of the build setting `key` (the last one recorded), e.g. `setting("GOOS") == Some("windows")`.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings.iter().rev().find(|setting| setting.key == key).map(|setting| setting.value.as_str())
    }

    /// The module that owns the main package: the `mod` or `dep` whose path is the longest prefix of the main
    /// package's import path on a `/` boundary. A payload built in a wrapper module finds the upstream module among
    /// the `dep` lines; one built by `go install module/pkg@version` finds it as the `mod` line.
    pub fn owner_module(&self) -> Option<&GoModule> {
        let package = self.main_package.as_deref()?;
        self.main_module
            .iter()
            .chain(&self.dependencies)
            .filter(|module| module_owns(&module.path, package))
            .max_by_key(|module| module.path.len())
    }

    /// The `-X name=value` settings of the recorded `-ldflags`, by variable name (the last one wins, as in the
    /// linker); `None` when no `-ldflags` is recorded. Go does not record `-ldflags` for a `-trimpath` build (it may
    /// hold local paths), so a release build's version variables are not visible here.
    pub fn linker_variables(&self) -> Option<BTreeMap<String, String>> {
        let flags = self.setting("-ldflags")?;
        let mut variables = BTreeMap::new();
        let mut words = split_flags(flags).into_iter();
        while let Some(word) = words.next() {
            let assignment = match word.as_str() {
                "-X" | "--X" => words.next(),
                other => other.strip_prefix("-X=").or_else(|| other.strip_prefix("--X=")).map(str::to_owned),
            };
            if let Some((name, value)) = assignment.as_deref().and_then(|text| text.split_once('=')) {
                variables.insert(name.to_owned(), value.to_owned());
            }
        }
        Some(variables)
    }
}

const MODULE_SHAPE: &str = "expected a module path, a version and an optional sum, separated by tabs";
const REPLACEMENT_SHAPE: &str = "expected a replacement path, an optional version and an optional sum";

#[derive(Debug, Clone, Copy)]
enum Replaceable {
    Main,
    Dependency,
}

/// Whether `module` owns `package`: equal, or a prefix followed by `/`.
fn module_owns(module: &str, package: &str) -> bool {
    package.strip_prefix(module).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// `path\tversion[\tsum]`; the version may be empty only in a replacement (a local directory).
fn parse_module(fields: &str, version_required: bool) -> Option<GoModule> {
    let parts: Vec<&str> = fields.split('\t').collect();
    let (path, version, sum) = match parts.as_slice() {
        [path] => (*path, "", ""),
        [path, version] => (*path, *version, ""),
        [path, version, sum] => (*path, *version, *sum),
        _ => return None,
    };
    if path.is_empty() || (version_required && version.is_empty()) {
        return None;
    }
    Some(GoModule {
        path: path.to_owned(),
        version: version.to_owned(),
        sum: (!sum.is_empty()).then(|| sum.to_owned()),
        replacement: None,
    })
}

/// `key=value`, where key and value may each be a Go double-quoted string (when they hold spaces, `=` or quotes).
fn parse_setting(text: &str) -> Option<BuildSetting> {
    let (key, after_key) = if text.starts_with('"') {
        unquote_prefix(text)?
    } else {
        let end = text.find('=')?;
        (text[..end].to_owned(), &text[end..])
    };
    let raw_value = after_key.strip_prefix('=')?;
    let value = if raw_value.starts_with('"') {
        let (value, rest) = unquote_prefix(raw_value)?;
        rest.is_empty().then_some(value)?
    } else {
        raw_value.to_owned()
    };
    (!key.is_empty()).then_some(BuildSetting { key, value })
}

/// Decodes the Go double-quoted string at the start of `text` (Go's escapes: `\a \b \f \n \r \t \v \\ \" \'`,
/// `\xHH`, `\ooo`, `\uHHHH`, `\UHHHHHHHH`); returns it and the text after the closing quote.
fn unquote_prefix(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let mut bytes = Vec::new();
    let mut chars = body.char_indices();
    while let Some((index, character)) = chars.next() {
        match character {
            '"' => return Some((String::from_utf8(bytes).ok()?, &body[index + 1..])),
            '\n' => return None,
            '\\' => {
                let (_, escape) = chars.next()?;
                let simple = match escape {
                    'a' => Some(0x07),
                    'b' => Some(0x08),
                    'f' => Some(0x0c),
                    'n' => Some(b'\n'),
                    'r' => Some(b'\r'),
                    't' => Some(b'\t'),
                    'v' => Some(0x0b),
                    '\\' | '"' | '\'' => Some(escape as u8),
                    _ => None,
                };
                if let Some(byte) = simple {
                    bytes.push(byte);
                    continue;
                }
                let (digits, radix) = match escape {
                    'x' => (2, 16),
                    'u' => (4, 16),
                    'U' => (8, 16),
                    '0'..='7' => (2, 8),
                    _ => return None,
                };
                let mut value = if radix == 8 { escape.to_digit(8)? } else { 0 };
                for _ in 0..digits {
                    value = value.checked_mul(radix)?.checked_add(chars.next()?.1.to_digit(radix)?)?;
                }
                match escape {
                    'x' | '0'..='7' => bytes.push(u8::try_from(value).ok()?),
                    _ => bytes.extend_from_slice(char::from_u32(value)?.encode_utf8(&mut [0; 4]).as_bytes()),
                }
            }
            other => bytes.extend_from_slice(other.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    None
}

/// Splits a Go flag list the way the go command does: on white space, where a field may be wrapped in single or
/// double quotes (no escapes inside).
fn split_flags(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let quote = rest.chars().next().filter(|first| *first == '\'' || *first == '"');
        let (word, after) = match quote.and_then(|quote| rest[1..].find(quote).map(|end| (quote, end))) {
            Some((_, end)) => (&rest[1..end + 1], &rest[end + 2..]),
            None => rest.split_at(rest.find(char::is_whitespace).unwrap_or(rest.len())),
        };
        words.push(word.to_owned());
        rest = after.trim_start();
    }
    words
}

/// Random access to a binary's bytes: a file read piece by piece, or bytes already in memory.
pub(crate) trait ReadAt {
    /// The size in bytes.
    fn size(&self) -> u64;
    /// Fills `buffer` from `offset`; the caller keeps `offset + buffer.len()` within `size()`.
    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> io::Result<()>;
}

impl ReadAt for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> io::Result<()> {
        let source = usize::try_from(offset)
            .ok()
            .and_then(|start| self.get(start..start.checked_add(buffer.len())?))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buffer.copy_from_slice(source);
        Ok(())
    }
}

/// A binary on disk, of a size taken once when it was opened.
pub(crate) struct FileBytes<'file> {
    pub(crate) file: &'file File,
    pub(crate) size: u64,
}

impl ReadAt for FileBytes<'_> {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> io::Result<()> {
        let mut file = self.file;
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(buffer)
    }
}

/// Searches `ranges` of `source` in order for the marker at 16-byte-aligned offsets and parses the first blob that
/// parses; when none does, returns the first blob's error (or [`BuildInfoError::NotFound`]).
pub(crate) fn find_build_info(
    source: &(impl ReadAt + ?Sized),
    ranges: &[Range<u64>],
) -> Result<GoBuildInfo, BuildInfoError> {
    let size = source.size();
    let mut first_error = None;
    let mut tried = BTreeSet::new();
    let mut chunk = vec![0; SCAN_CHUNK];
    for range in ranges {
        let end = range.end.min(size);
        let mut chunk_start = range.start.next_multiple_of(ALIGNMENT);
        while chunk_start + GO_BUILD_INFO_MAGIC.len() as u64 <= end {
            // SCAN_CHUNK is a multiple of the alignment and the marker is shorter than it: no marker straddles.
            let length = (end - chunk_start).min(SCAN_CHUNK as u64) as usize;
            let bytes = &mut chunk[..length];
            source
                .read_at(chunk_start, bytes)
                .map_err(|source| BuildInfoError::Read { offset: chunk_start, source })?;
            for at in (0..length).step_by(ALIGNMENT as usize) {
                let offset = chunk_start + at as u64;
                if !bytes[at..].starts_with(GO_BUILD_INFO_MAGIC) || !tried.insert(offset) {
                    continue;
                }
                match parse_blob_at(source, offset) {
                    Ok(info) => return Ok(info),
                    Err(error @ BuildInfoError::Read { .. }) => return Err(error),
                    Err(error) => {
                        first_error.get_or_insert(error);
                    }
                }
            }
            chunk_start += length as u64;
        }
    }
    Err(first_error.unwrap_or(BuildInfoError::NotFound))
}

/// Parses the blob whose marker is at `offset`.
fn parse_blob_at(source: &(impl ReadAt + ?Sized), offset: u64) -> Result<GoBuildInfo, BuildInfoError> {
    let size = source.size();
    if size - offset < HEADER_LEN {
        return Err(BuildInfoError::Truncated { offset, part: "header" });
    }
    let mut header = [0; HEADER_LEN as usize];
    source.read_at(offset, &mut header).map_err(|source| BuildInfoError::Read { offset, source })?;
    // header[14] is the pointer size, used only by the pointer format.
    let flags = header[15];
    if flags & FLAG_INLINE_STRINGS == 0 {
        return Err(BuildInfoError::OldFormat { offset });
    }
    let mut cursor = offset + HEADER_LEN;
    let go_version = read_string(source, offset, &mut cursor, "Go version")?;
    let module_info = read_string(source, offset, &mut cursor, "module information")?;
    let go_version =
        String::from_utf8(go_version).map_err(|_| BuildInfoError::NotUtf8 { offset, part: "Go version" })?;
    let text = strip_sentinels(&module_info);
    let text = std::str::from_utf8(text).map_err(|_| BuildInfoError::NotUtf8 { offset, part: "module information" })?;
    GoBuildInfo::from_module_info(go_version, text)
}

/// Reads one uvarint-length-prefixed string at `cursor` and moves the cursor past it.
fn read_string(
    source: &(impl ReadAt + ?Sized),
    offset: u64,
    cursor: &mut u64,
    part: &'static str,
) -> Result<Vec<u8>, BuildInfoError> {
    let size = source.size();
    let mut prefix = [0; MAX_UVARINT_LEN];
    let prefix_len = (size - *cursor).min(MAX_UVARINT_LEN as u64) as usize;
    let prefix = &mut prefix[..prefix_len];
    source.read_at(*cursor, prefix).map_err(|source| BuildInfoError::Read { offset: *cursor, source })?;
    let (length, used) = decode_uvarint(prefix).map_err(|problem| match problem {
        UvarintProblem::Truncated => BuildInfoError::Truncated {
            offset,
            part: if part == "Go version" { "length of the Go version" } else { "length of the module information" },
        },
        UvarintProblem::Overflow => BuildInfoError::BadLength { offset, part, length: u64::MAX },
    })?;
    *cursor += used as u64;
    let available = size - *cursor;
    if length > available {
        return Err(BuildInfoError::LengthPastEnd { offset, part, length, available });
    }
    if length > MAX_STRING_LEN {
        return Err(BuildInfoError::BadLength { offset, part, length });
    }
    let mut bytes = vec![0; length as usize];
    source.read_at(*cursor, &mut bytes).map_err(|source| BuildInfoError::Read { offset: *cursor, source })?;
    *cursor += length;
    Ok(bytes)
}

enum UvarintProblem {
    Truncated,
    Overflow,
}

/// Decodes an unsigned LEB128 integer (Go's `binary.Uvarint`): the value and the bytes it used.
fn decode_uvarint(bytes: &[u8]) -> Result<(u64, usize), UvarintProblem> {
    let mut value: u64 = 0;
    for (index, byte) in bytes.iter().enumerate().take(MAX_UVARINT_LEN) {
        if index == MAX_UVARINT_LEN - 1 && *byte > 1 {
            return Err(UvarintProblem::Overflow);
        }
        value |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return Ok((value, index + 1));
        }
    }
    if bytes.len() >= MAX_UVARINT_LEN { Err(UvarintProblem::Overflow) } else { Err(UvarintProblem::Truncated) }
}

/// The module information without its 16-byte sentinels, when both are present.
fn strip_sentinels(module_info: &[u8]) -> &[u8] {
    module_info
        .strip_prefix(&MODULE_INFO_START)
        .and_then(|inner| inner.strip_suffix(&MODULE_INFO_END))
        .unwrap_or(module_info)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBELET_INFO: &str = "path\tk8s.io/kubernetes/cmd/kubelet\n\
        mod\twmco-rs.payload/kubernetes\t(devel)\t\n\
        dep\tk8s.io/api\tv0.36.3\th1:api=\n\
        dep\tk8s.io/kubernetes\tv1.36.3\th1:kube=\n\
        dep\tk8s.io/kubernetes/third_party\tv1.0.0\th1:tp=\n\
        build\t-buildmode=exe\n\
        build\t-compiler=gc\n\
        build\t-trimpath=true\n\
        build\tCGO_ENABLED=0\n\
        build\tGOARCH=amd64\n\
        build\tGOOS=windows\n";

    /// A blob as the linker writes it: header, then the two strings, with `flags` and optional sentinels.
    fn blob(flags: u8, go_version: &str, module_info: &[u8]) -> Vec<u8> {
        let mut bytes = GO_BUILD_INFO_MAGIC.to_vec();
        bytes.extend_from_slice(&[8, flags]);
        bytes.resize(HEADER_LEN as usize, 0);
        for part in [go_version.as_bytes(), module_info] {
            push_uvarint(&mut bytes, part.len() as u64);
            bytes.extend_from_slice(part);
        }
        bytes
    }

    fn push_uvarint(bytes: &mut Vec<u8>, mut value: u64) {
        while value >= 0x80 {
            bytes.push((value as u8) | 0x80);
            value >>= 7;
        }
        bytes.push(value as u8);
    }

    fn wrapped(text: &str) -> Vec<u8> {
        [&MODULE_INFO_START[..], text.as_bytes(), &MODULE_INFO_END[..]].concat()
    }

    /// `blob` placed at a 16-byte-aligned offset after some unrelated bytes, as in a data section.
    fn in_file(blob: &[u8]) -> Vec<u8> {
        let mut file = vec![0x90; 4096];
        file.extend_from_slice(blob);
        file.extend_from_slice(&[0; 64]);
        file
    }

    #[test]
    fn parses_the_inline_format_and_strips_the_sentinels() {
        let info = read_go_build_info(&in_file(&blob(2, "go1.26.8", &wrapped(KUBELET_INFO)))).unwrap();
        assert_eq!(info.go_version, "go1.26.8");
        assert_eq!(info.main_package.as_deref(), Some("k8s.io/kubernetes/cmd/kubelet"));
        let main = info.main_module.as_ref().unwrap();
        assert_eq!(
            (main.path.as_str(), main.version.as_str(), main.sum.as_deref()),
            ("wmco-rs.payload/kubernetes", "(devel)", None)
        );
        assert_eq!(info.dependencies.len(), 3);
        assert_eq!(info.dependencies[1].sum.as_deref(), Some("h1:kube="));
        assert_eq!(
            ["GOOS", "GOARCH", "CGO_ENABLED", "-trimpath", "-ldflags"].map(|key| info.setting(key)),
            [Some("windows"), Some("amd64"), Some("0"), Some("true"), None]
        );
        // Without sentinels (an older or hand-written blob) the text is taken as is.
        let bare = read_go_build_info(&blob(2, "go1.26.8", KUBELET_INFO.as_bytes())).unwrap();
        assert_eq!(bare, info);
        // Big-endian flag bit and a 4-byte pointer size do not matter for the inline format.
        assert!(read_go_build_info(&blob(3, "go1.26.8", KUBELET_INFO.as_bytes())).is_ok());
    }

    #[test]
    fn a_marker_off_the_16_byte_alignment_is_ignored() {
        let mut file = vec![0; 5];
        file.extend_from_slice(&blob(2, "go1.26.8", KUBELET_INFO.as_bytes()));
        assert!(matches!(read_go_build_info(&file), Err(BuildInfoError::NotFound)));
    }

    #[test]
    fn a_blob_that_does_not_parse_yields_to_a_later_one_that_does() {
        let mut file = blob(0, "", b"");
        file.resize(4096, 0);
        file.extend_from_slice(&blob(2, "go1.26.8", KUBELET_INFO.as_bytes()));
        assert_eq!(read_go_build_info(&file).unwrap().go_version, "go1.26.8");
        // With no good blob, the first blob's error is reported.
        file.truncate(4096);
        assert!(matches!(read_go_build_info(&file), Err(BuildInfoError::OldFormat { offset: 0 })));
    }

    #[test]
    fn the_pre_1_18_pointer_format_is_refused() {
        let file = in_file(&blob(0, "go1.17", b""));
        let error = read_go_build_info(&file).unwrap_err();
        assert!(matches!(error, BuildInfoError::OldFormat { offset: 4096 }), "{error:?}");
        assert!(error.to_string().contains("rebuild with Go 1.18 or later"), "{error}");
    }

    #[test]
    fn no_marker_means_no_build_information() {
        let error = read_go_build_info(&[0x4d; 10_000]).unwrap_err();
        assert!(matches!(error, BuildInfoError::NotFound));
        assert!(matches!(read_go_build_info(b""), Err(BuildInfoError::NotFound)));
    }

    #[test]
    fn truncated_blobs_are_refused() {
        let whole = blob(2, "go1.26.8", KUBELET_INFO.as_bytes());
        // The header itself is cut.
        let error = read_go_build_info(&whole[..20]).unwrap_err();
        assert!(matches!(error, BuildInfoError::Truncated { part: "header", .. }), "{error:?}");
        // The file ends right after the header.
        let error = read_go_build_info(&whole[..32]).unwrap_err();
        assert!(matches!(error, BuildInfoError::Truncated { part: "length of the Go version", .. }), "{error:?}");
        // A multi-byte length is cut in the middle.
        let mut cut = whole[..32].to_vec();
        cut.push(0x80);
        let error = read_go_build_info(&cut).unwrap_err();
        assert!(matches!(error, BuildInfoError::Truncated { .. }), "{error:?}");
        // The module information runs past the end.
        let error = read_go_build_info(&whole[..whole.len() - 1]).unwrap_err();
        assert!(
            matches!(
                error,
                BuildInfoError::LengthPastEnd { part: "module information", length, available, .. }
                    if length == KUBELET_INFO.len() as u64 && available == length - 1
            ),
            "{error:?}"
        );
    }

    #[test]
    fn lengths_past_the_end_and_overflowing_lengths_are_refused() {
        let mut huge = blob(2, "", b"");
        huge.truncate(32);
        push_uvarint(&mut huge, u64::MAX / 2);
        let error = read_go_build_info(&huge).unwrap_err();
        assert!(matches!(error, BuildInfoError::LengthPastEnd { part: "Go version", available: 0, .. }), "{error:?}");
        let mut overflow = huge[..32].to_vec();
        overflow.extend_from_slice(&[0xff; 10]);
        overflow.push(0x01);
        let error = read_go_build_info(&overflow).unwrap_err();
        assert!(matches!(error, BuildInfoError::BadLength { part: "Go version", .. }), "{error:?}");
    }

    #[test]
    fn strings_must_be_utf8() {
        let error = read_go_build_info(&blob(2, "go1.26.8", b"path\t\xff\n")).unwrap_err();
        assert!(matches!(error, BuildInfoError::NotUtf8 { part: "module information", .. }), "{error:?}");
    }

    #[test]
    fn owner_is_the_longest_module_prefix_on_a_slash_boundary() {
        let info = GoBuildInfo::from_module_info("go1.26.8", KUBELET_INFO).unwrap();
        // `k8s.io/kubernetes` owns `k8s.io/kubernetes/cmd/kubelet`; `k8s.io/kubernetes/third_party` does not.
        assert_eq!(info.owner_module().map(|module| module.path.as_str()), Some("k8s.io/kubernetes"));
        let nested = KUBELET_INFO.replace("k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/third_party/tool");
        let info = GoBuildInfo::from_module_info("go1.26.8", &nested).unwrap();
        assert_eq!(info.owner_module().map(|module| module.path.as_str()), Some("k8s.io/kubernetes/third_party"));
        // A prefix that ends inside a path element does not own: `k8s.io/api` is not `k8s.io/apiserver`.
        let sibling = KUBELET_INFO.replace("k8s.io/kubernetes/cmd/kubelet", "k8s.io/apiserver/cmd/x");
        let info = GoBuildInfo::from_module_info("go1.26.8", &sibling).unwrap();
        assert_eq!(info.owner_module(), None);
    }

    #[test]
    fn owner_may_be_the_main_module_as_with_go_install() {
        let text = "path\tgithub.com/containerd/containerd/cmd/containerd\n\
            mod\tgithub.com/containerd/containerd\tv1.7.27\th1:ctr=\n\
            dep\tgithub.com/containerd/containerd/api\tv1.8.0\th1:api=\n";
        let info = GoBuildInfo::from_module_info("go1.26.8", text).unwrap();
        let owner = info.owner_module().unwrap();
        assert_eq!((owner.path.as_str(), owner.version.as_str()), ("github.com/containerd/containerd", "v1.7.27"));
        // The main package is the module root itself.
        let root = text.replace("containerd/cmd/containerd\n", "containerd\n");
        let info = GoBuildInfo::from_module_info("go1.26.8", &root).unwrap();
        assert_eq!(info.owner_module().map(|module| module.version.as_str()), Some("v1.7.27"));
    }

    #[test]
    fn a_replacement_is_kept_beside_the_required_version() {
        let text = "path\tk8s.io/kubernetes/cmd/kubelet\n\
            mod\twmco-rs.payload/kubernetes\t(devel)\t\n\
            dep\tk8s.io/kubernetes\tv1.36.3\th1:kube=\n\
            =>\tgithub.com/fork/kubernetes\tv1.36.3-fork.1\th1:fork=\n\
            dep\tk8s.io/utils\tv0.0.1\n\
            =>\t../utils\t\t\n";
        let info = GoBuildInfo::from_module_info("go1.26.8", text).unwrap();
        let owner = info.owner_module().unwrap();
        assert_eq!((owner.path.as_str(), owner.version.as_str()), ("k8s.io/kubernetes", "v1.36.3"));
        let replacement = owner.replacement.as_deref().unwrap();
        assert_eq!(
            (replacement.path.as_str(), replacement.version.as_str()),
            ("github.com/fork/kubernetes", "v1.36.3-fork.1")
        );
        let local = info.dependencies[1].replacement.as_deref().unwrap();
        assert_eq!((local.path.as_str(), local.version.as_str(), local.sum.as_deref()), ("../utils", "", None));
    }

    #[test]
    fn malformed_lines_name_their_number() {
        let error = GoBuildInfo::from_module_info("go1.26.8", "path\tx\n=>\ty\tv1\n").unwrap_err();
        assert!(matches!(error, BuildInfoError::BadLine { line_number: 2, .. }), "{error:?}");
        let error = GoBuildInfo::from_module_info("go1.26.8", "path\tx\ndep\tonly-a-path\n").unwrap_err();
        assert!(matches!(error, BuildInfoError::BadLine { line_number: 2, .. }), "{error:?}");
        let error = GoBuildInfo::from_module_info("go1.26.8", "build\tno-equals-sign\n").unwrap_err();
        assert!(error.to_string().starts_with("line 1 of the Go module information"), "{error}");
        // Two replacements in a row: the second has no module to replace.
        let twice = "dep\ta\tv1\n=>\tb\tv2\n=>\tc\tv3\n";
        assert!(matches!(
            GoBuildInfo::from_module_info("go1.26.8", twice),
            Err(BuildInfoError::BadLine { line_number: 3, .. })
        ));
        // Unknown tags and blank lines are skipped.
        let info = GoBuildInfo::from_module_info("go1.26.8", "go\tgo1.30\n\nfuture\tx\npath\tp\n").unwrap();
        assert_eq!(info.main_package.as_deref(), Some("p"));
    }

    #[test]
    fn quoted_settings_and_linker_variables() {
        let text = "build\t-ldflags=\"-s -w -X main.version=v9.9.9 -X 'main.note=two words' -X=main.gitTreeState=clean \
                    --X main.version=v9.9.10\"\n\
                    build\t\"odd=key\"=\"tab\\there \\\"quoted\\\" \\u00e9\\x41\\101\"\n";
        let info = GoBuildInfo::from_module_info("go1.26.8", text).unwrap();
        assert_eq!(info.settings[1].key, "odd=key");
        assert_eq!(info.settings[1].value, "tab\there \"quoted\" \u{e9}AA");
        let variables = info.linker_variables().unwrap();
        assert_eq!(
            variables.into_iter().collect::<Vec<_>>(),
            [
                ("main.gitTreeState".to_owned(), "clean".to_owned()),
                ("main.note".to_owned(), "two words".to_owned()),
                ("main.version".to_owned(), "v9.9.10".to_owned()),
            ]
        );
        let no_flags = GoBuildInfo::from_module_info("go1.26.8", "build\t-trimpath=true\n").unwrap();
        assert_eq!(no_flags.linker_variables(), None);
        assert!(GoBuildInfo::from_module_info("go1.26.8", "build\tk=\"unterminated\n").is_err());
    }

    #[test]
    fn uvarints_decode_like_go() {
        assert!(matches!(decode_uvarint(&[0x08]), Ok((8, 1))));
        assert!(matches!(decode_uvarint(&[0xdc, 0x01]), Ok((220, 2))));
        assert!(matches!(
            decode_uvarint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
            Ok((u64::MAX, 10))
        ));
        assert!(matches!(decode_uvarint(&[0x80]), Err(UvarintProblem::Truncated)));
        assert!(matches!(decode_uvarint(&[]), Err(UvarintProblem::Truncated)));
        assert!(matches!(decode_uvarint(&[0xff; 10]), Err(UvarintProblem::Overflow)));
    }
}
