//! Files' SHA-256 read on the host by native programs: [`FileHashes`] renders one cmd.exe line of `certutil
//! -hashfile` calls joined by `&&` (windows-commands.md §2.1), so verifying a batch of uploads starts no
//! PowerShell, and [`FileHashes::read`] takes the digests back out of certutil's header and trailer lines.

use crate::command::{CommandError, RenderedCommand, Shell, check_length};
use crate::path::WinPath;
use crate::quote::{check_cmd_value, protect_for_cmd, quote_argument};

/// One command line printing the SHA-256 of each of several files, in order.
///
/// ```
/// use wmco_windows_services::{FileHashes, WinPath};
/// let paths = [WinPath::parse(r"C:\k\kubelet.exe")?, WinPath::parse(r"C:\Program Files\a b.conf")?];
/// let hashes = FileHashes::new(&paths)?;
/// assert_eq!(
///     hashes.command().line,
///     r#"certutil.exe -hashfile C:\k\kubelet.exe SHA256 && certutil.exe -hashfile "C:\Program Files\a b.conf" SHA256"#
/// );
/// let stdout = "SHA256 hash of C:\\k\\kubelet.exe:\r\n\
///     ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\r\n\
///     CertUtil: -hashfile command completed successfully.\r\n";
/// assert_eq!(FileHashes::read(stdout), ["ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHashes {
    command: RenderedCommand,
}

impl FileHashes {
    /// The line hashing `paths` in order; cmd.exe stops at the first file certutil cannot hash, so the line prints
    /// fewer digests than paths and exits with certutil's HRESULT.
    ///
    /// # Errors
    /// [`CommandError::PercentSign`] or [`CommandError::ControlCharacter`] for a path cmd.exe cannot carry;
    /// [`CommandError::TooLong`] when the line would pass [`MAX_COMMAND_LINE_CHARS`](crate::MAX_COMMAND_LINE_CHARS)
    /// (hash fewer files at once).
    pub fn new(paths: &[WinPath]) -> Result<FileHashes, CommandError> {
        let mut calls = Vec::with_capacity(paths.len());
        for path in paths {
            check_cmd_value("file to hash", path.as_str())?;
            calls.push(protect_for_cmd(&format!("certutil.exe -hashfile {} SHA256", quote_argument(path.as_str()))));
        }
        let line = check_length(|| format!("hashes of {} files", paths.len()), calls.join(" && "))?;
        Ok(FileHashes { command: RenderedCommand { shell: Shell::Cmd, line, script_file: None } })
    }

    /// The line to run.
    pub fn command(&self) -> &RenderedCommand {
        &self.command
    }

    /// The digests certutil printed, in order: every line that is exactly 64 hex digits, lower-cased. Its header
    /// (`SHA256 hash of <path>:`) and trailer lines never are.
    pub fn read(stdout: &str) -> Vec<String> {
        stdout
            .lines()
            .map(str::trim)
            .filter(|line| line.len() == 64 && line.bytes().all(|byte| byte.is_ascii_hexdigit()))
            .map(str::to_ascii_lowercase)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> WinPath {
        WinPath::parse(text).unwrap()
    }

    #[test]
    fn paths_are_quoted_for_msvc_and_protected_for_cmd() {
        let hashes = FileHashes::new(&[path(r"C:\k\a&b (x).exe")]).unwrap();
        assert_eq!(hashes.command().line, r#"certutil.exe -hashfile "C:\k\a&b (x).exe" SHA256"#);
        assert_eq!(hashes.command().shell, Shell::Cmd);
        assert!(matches!(FileHashes::new(&[path(r"C:\k\100%.exe")]), Err(CommandError::PercentSign { .. })));
    }

    #[test]
    fn a_line_too_long_is_refused_so_the_caller_hashes_fewer_files() {
        let many: Vec<WinPath> = (0..200).map(|index| path(&format!(r"C:\k\wmco\file-{index}.wmco-upload"))).collect();
        assert!(matches!(FileHashes::new(&many), Err(CommandError::TooLong { .. })));
        assert!(FileHashes::new(&many[..50]).is_ok());
    }

    #[test]
    fn only_digest_lines_are_read_and_a_failure_prints_none() {
        let upper = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
        let stdout = format!(
            "SHA256 hash of a:\r\n{upper}\r\nCertUtil: -hashfile command completed successfully.\r\n\
             CertUtil: -hashfile command FAILED: 0x80070002 (WIN32: 2 ERROR_FILE_NOT_FOUND)\r\n\
             CertUtil: The system cannot find the file specified.\r\n"
        );
        assert_eq!(FileHashes::read(&stdout), [upper.to_ascii_lowercase()]);
        assert!(FileHashes::read("ba7816bf 8f01cfea\r\n").is_empty());
    }
}
