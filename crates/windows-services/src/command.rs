//! What a builder hands to the caller: one command line ([`RenderedCommand`]) for the SSH exec channel, which
//! interpreter runs its payload ([`Shell`]), the script file to upload first when a PowerShell script is too long
//! for cmd.exe ([`ScriptFile`]), and the reasons a value cannot be rendered at all ([`CommandError`]).

use serde::Serialize;

use crate::path::WinPath;

/// The longest command line a builder renders, in UTF-16 code units.
///
/// cmd.exe (the Win32-OpenSSH default shell) accepts 8,191 characters; whether the pair of quotes sshd wraps around
/// the command counts is unconfirmed (windows-commands.md §3), so builders keep a margin of 191.
pub const MAX_COMMAND_LINE_CHARS: usize = 8_000;

/// The interpreter that executes a rendered command line's payload. Every line is sent to the host's default
/// shell (cmd.exe); a [`Shell::PowerShell`] line is a `powershell.exe` invocation started from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Shell {
    /// A cmd.exe command line (sc.exe and other native programs).
    Cmd,
    /// A `powershell.exe` command line carrying a script of the closed subset (windows-commands.md §8).
    PowerShell,
}

/// A script too long for an `-EncodedCommand` line: upload `contents` to `path` (over SFTP) before running the
/// command line. The name is content-addressed (`C:\k\wmco\scripts\<sha256>.ps1`), so an existing file whose
/// hash matches is already the right one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScriptFile {
    /// Where the command line expects the script.
    pub path: WinPath,
    /// The bytes to upload: UTF-8 with a byte-order mark, which Windows PowerShell 5.1 needs to read non-ASCII text.
    pub contents: Vec<u8>,
    /// Lower-case hex SHA-256 of `contents` (also the file's base name).
    pub sha256: String,
}

/// One command line to run over the SSH exec channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RenderedCommand {
    /// Which interpreter runs the payload.
    pub shell: Shell,
    /// The exact text to send; at most [`MAX_COMMAND_LINE_CHARS`] UTF-16 units.
    pub line: String,
    /// A script file to upload before running `line`, if the script did not fit on the line.
    pub script_file: Option<ScriptFile>,
}

/// Why a value cannot be rendered into a command line that Windows would parse back to the same value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// `%` on a cmd.exe command line is expanded when a variable of that name exists and cannot be escaped.
    #[error("{field} value {value:?} contains `%`, which cmd.exe may expand and cannot escape; remove it")]
    PercentSign {
        /// Which option or argument held the value.
        field: &'static str,
        /// The value.
        value: String,
    },
    /// Control characters (CR/LF end a command line) cannot be carried.
    #[error("{field} value {value:?} contains the control character {character:?}")]
    ControlCharacter {
        /// Which option or argument held the value.
        field: &'static str,
        /// The value.
        value: String,
        /// The control character.
        character: char,
    },
    /// The rendered line is longer than [`MAX_COMMAND_LINE_CHARS`] and cannot be moved into a script file.
    #[error("the {what} command line is {length} characters long; cmd.exe allows at most {limit}")]
    TooLong {
        /// What was being rendered (e.g. `sc.exe create kubelet`).
        what: String,
        /// Its length in UTF-16 units.
        length: usize,
        /// The limit that applies.
        limit: usize,
    },
    /// An empty display name (sc.exe would receive an empty argument; leave it equal to the service name instead).
    #[error("display name of service {service} is empty; use the service name")]
    EmptyDisplayName {
        /// The service.
        service: String,
    },
    /// A display name longer than the 256 characters the SCM stores.
    #[error("display name of service {service} is {length} characters long; the SCM allows at most 256")]
    DisplayNameTooLong {
        /// The service.
        service: String,
        /// Its length in UTF-16 units.
        length: usize,
    },
    /// The content-addressed script path could not be formed.
    #[error("the script file path under C:\\k\\wmco\\scripts is invalid: {source}")]
    ScriptPath {
        /// Why.
        #[source]
        source: crate::path::PathError,
    },
    /// A command that cannot share a cmd.exe line with others (it needs a script file uploaded first, or its
    /// quotes do not pair up).
    #[error("the command line {line:?} cannot be chained with others")]
    NotChainable {
        /// The command line.
        line: String,
    },
    /// A line that cannot be handed to cmd.exe from a PowerShell default shell: PowerShell's stop-parsing token
    /// (`--%`) ends at `|` or a line break.
    #[error("the command line {line:?} holds `|` or a line break and cannot run under a PowerShell default shell")]
    NotForPowerShellShell {
        /// The command line.
        line: String,
    },
    /// A path given to a PowerShell parameter that interprets wildcards (`-Path`) holds `[` or `]`.
    #[error("path {path} contains `[` or `]`, which PowerShell's -Path parameter treats as a wildcard")]
    WildcardInPath {
        /// The path.
        path: String,
    },
}

/// Returns `line` if it is within [`MAX_COMMAND_LINE_CHARS`], else [`CommandError::TooLong`] naming `what`.
pub(crate) fn check_length(what: impl FnOnce() -> String, line: String) -> Result<String, CommandError> {
    let length = line.encode_utf16().count();
    if length > MAX_COMMAND_LINE_CHARS {
        return Err(CommandError::TooLong { what: what(), length, limit: MAX_COMMAND_LINE_CHARS });
    }
    Ok(line)
}

/// The program Win32-OpenSSH starts for an exec request: `HKLM\SOFTWARE\OpenSSH` `DefaultShell`, cmd.exe when it is
/// unset (windows-commands.md §2). Builders render for cmd.exe; [`DefaultShell::exec_line`] carries such a line to a
/// host whose default shell is PowerShell with the same meaning and exit code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum DefaultShell {
    /// `cmd.exe /c "<line>"`.
    #[default]
    Cmd,
    /// `powershell.exe -c "<line>"` (Windows PowerShell, or PowerShell 7's `pwsh.exe`).
    PowerShell,
}

impl DefaultShell {
    /// The shell a `DefaultShell` registry value names: cmd.exe when unset or empty; `None` for a shell this
    /// product does not drive (bash, a custom shell).
    ///
    /// ```
    /// use wmco_windows_services::DefaultShell;
    /// let value = r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe";
    /// assert_eq!(DefaultShell::from_registry(Some(value)), Some(DefaultShell::PowerShell));
    /// assert_eq!(DefaultShell::from_registry(None), Some(DefaultShell::Cmd));
    /// assert_eq!(DefaultShell::from_registry(Some(r"C:\Program Files\Git\bin\bash.exe")), None);
    /// ```
    pub fn from_registry(value: Option<&str>) -> Option<DefaultShell> {
        let Some(path) = value.map(str::trim).filter(|path| !path.is_empty()) else { return Some(DefaultShell::Cmd) };
        let program = path.trim_matches('"').rsplit(['\\', '/']).next().unwrap_or_default().to_ascii_lowercase();
        match program.strip_suffix(".exe").unwrap_or(&program) {
            "cmd" => Some(DefaultShell::Cmd),
            "powershell" | "pwsh" => Some(DefaultShell::PowerShell),
            _ => None,
        }
    }

    /// The exec request text that runs `line` (rendered for cmd.exe) under this shell. Under cmd.exe it is `line`
    /// itself. Under PowerShell it is `cmd.exe /c --% <line>`, then `exit $LASTEXITCODE` on the next line: the
    /// stop-parsing token hands the rest of the line to cmd.exe as written (so quoting, `&&` chains and `sc.exe`
    /// mean what they mean under cmd.exe, where PowerShell would take `sc` for Set-Content), and the exit keeps
    /// cmd.exe's code, which PowerShell would otherwise reduce to 0 or 1 (windows-commands.md §3).
    ///
    /// ```
    /// use wmco_windows_services::DefaultShell;
    /// let line = r#"sc.exe create a binPath= "C:\k\a.exe --v=2" && echo ##wmco-done 0"#;
    /// assert_eq!(DefaultShell::Cmd.exec_line(line)?, line);
    /// assert_eq!(DefaultShell::PowerShell.exec_line(line)?, format!("cmd.exe /c --% {line}\nexit $LASTEXITCODE"));
    /// # Ok::<(), wmco_windows_services::CommandError>(())
    /// ```
    ///
    /// # Errors
    /// [`CommandError::NotForPowerShellShell`] under PowerShell for a line holding `|` or a line break, where the
    /// stop-parsing token ends.
    pub fn exec_line(self, line: &str) -> Result<String, CommandError> {
        match self {
            DefaultShell::Cmd => Ok(line.to_owned()),
            DefaultShell::PowerShell if line.contains(['|', '\n', '\r']) => {
                Err(CommandError::NotForPowerShellShell { line: line.to_owned() })
            }
            DefaultShell::PowerShell => Ok(format!("cmd.exe /c --% {line}\nexit $LASTEXITCODE")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cmd_and_powershell_are_driven() {
        for (value, shell) in [
            (Some(""), Some(DefaultShell::Cmd)),
            (Some(r"C:\Windows\System32\cmd.exe"), Some(DefaultShell::Cmd)),
            (Some(r"c:/program files/powershell/7/PWSH.EXE"), Some(DefaultShell::PowerShell)),
            (Some(r#""C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe""#), Some(DefaultShell::PowerShell)),
            (Some(r"C:\cygwin\bin\bash.exe"), None),
        ] {
            assert_eq!(DefaultShell::from_registry(value), shell, "{value:?}");
        }
    }

    #[test]
    fn a_pipe_or_line_break_cannot_cross_the_stop_parsing_token() {
        for line in ["a | b", "a\nb"] {
            assert_eq!(
                DefaultShell::PowerShell.exec_line(line),
                Err(CommandError::NotForPowerShellShell { line: line.to_owned() })
            );
            assert!(DefaultShell::Cmd.exec_line(line).is_ok(), "cmd.exe lines are the builders' business");
        }
    }
}
