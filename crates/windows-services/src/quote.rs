//! Quoting for the two parsers every cmd.exe command line goes through (windows-commands.md §1.1, §2): the MSVC
//! argv rules each program applies to its own command line, and cmd.exe's own pass (quote tracking, `^` escapes,
//! metacharacters, `%` expansion) that runs first.
//!
//! Rendering is two-staged: each value is quoted for MSVC ([`quote_argument`], [`quote_program`]), the quoted
//! values are joined with spaces, and [`protect_for_cmd`] then `^`-escapes every cmd.exe metacharacter that cmd's
//! quote tracking would see outside quotes (an argument holding `\"` flips cmd's quote state, so this is decided
//! on the joined line, not per value). Values cmd.exe cannot carry at all — `%` (expanded, not escapable on a
//! command line) and control characters (a CR or LF ends the command) — are refused by [`check_cmd_value`].

use crate::command::CommandError;

/// cmd.exe metacharacters that must be inside quotes or `^`-escaped (§2).
const CMD_METACHARACTERS: [char; 7] = ['&', '|', '<', '>', '(', ')', '^'];

/// Refuses a value that no cmd.exe command line can carry literally: one holding `%` (cmd expands `%NAME%` when the
/// variable exists and offers no escape on a command line) or a control character (CR/LF end the command line).
///
/// `field` names the value in the error (e.g. `"binPath"`).
pub(crate) fn check_cmd_value(field: &'static str, value: &str) -> Result<(), CommandError> {
    if value.contains('%') {
        return Err(CommandError::PercentSign { field, value: value.to_owned() });
    }
    if let Some(character) = value.chars().find(|c| c.is_control()) {
        return Err(CommandError::ControlCharacter { field, value: value.to_owned(), character });
    }
    Ok(())
}

/// Quotes one argument (not the program name) so the MSVC argv rules recover it exactly.
///
/// Arguments that hold no whitespace, `"` or cmd.exe metacharacter and are not empty stay bare; all others are
/// wrapped in `"`, with `\` runs doubled before a `"` or the closing quote and every inner `"` written `\"`.
pub(crate) fn quote_argument(argument: &str) -> String {
    let needs_quotes = argument.is_empty()
        || argument.chars().any(|c| c == ' ' || c == '\t' || c == '"' || CMD_METACHARACTERS.contains(&c));
    if !needs_quotes {
        return argument.to_owned();
    }
    let mut quoted = String::with_capacity(argument.len() + 2);
    quoted.push('"');
    let mut pending_backslashes = 0usize;
    for c in argument.chars() {
        match c {
            '\\' => pending_backslashes += 1,
            '"' => {
                quoted.extend(std::iter::repeat_n('\\', pending_backslashes * 2 + 1));
                quoted.push('"');
                pending_backslashes = 0;
            }
            other => {
                quoted.extend(std::iter::repeat_n('\\', pending_backslashes));
                quoted.push(other);
                pending_backslashes = 0;
            }
        }
    }
    quoted.extend(std::iter::repeat_n('\\', pending_backslashes * 2));
    quoted.push('"');
    quoted
}

/// Quotes a program path in first position (argv\[0\]): MSVC reads a leading `"` to the next `"` without backslash
/// processing, and CreateProcess needs quotes around a path with spaces (§1.2). A path never holds `"`.
pub(crate) fn quote_program(program: &str) -> String {
    if program.chars().any(|c| c == ' ' || c == '\t' || CMD_METACHARACTERS.contains(&c)) {
        format!("\"{program}\"")
    } else {
        program.to_owned()
    }
}

/// `^`-escapes every cmd.exe metacharacter that cmd's quote tracking (toggled by every `"`, backslashes
/// notwithstanding) sees outside quotes, so that cmd hands exactly `line` to the program it starts.
pub(crate) fn protect_for_cmd(line: &str) -> String {
    let mut protected = String::with_capacity(line.len());
    let mut inside_quotes = false;
    for c in line.chars() {
        if c == '"' {
            inside_quotes = !inside_quotes;
        } else if !inside_quotes && CMD_METACHARACTERS.contains(&c) {
            protected.push('^');
        }
        protected.push(c);
    }
    protected
}

/// Single-quotes a PowerShell string literal: every single-quote character — including the typographic ones
/// PowerShell also accepts as quotes (U+2018–U+201B) — is doubled.
pub(crate) fn powershell_literal(value: &str) -> String {
    let mut literal = String::with_capacity(value.len() + 2);
    literal.push('\'');
    for c in value.chars() {
        if matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}') {
            literal.push(c);
        }
        literal.push(c);
    }
    literal.push('\'');
    literal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_arguments_stay_bare() {
        assert_eq!(quote_argument("--config=C:\\k\\kubelet.conf"), r"--config=C:\k\kubelet.conf");
        assert_eq!(quote_argument("containerd/hns"), "containerd/hns");
    }

    #[test]
    fn arguments_with_spaces_quotes_or_metacharacters_are_quoted() {
        assert_eq!(quote_argument(""), r#""""#);
        assert_eq!(quote_argument("OpenShift managed kubelet"), r#""OpenShift managed kubelet""#);
        assert_eq!(quote_argument("a&b"), r#""a&b""#);
        assert_eq!(quote_argument(r#"say "hi""#), r#""say \"hi\"""#);
        assert_eq!(quote_argument(r#"C:\dir with space\"#), r#""C:\dir with space\\""#);
        assert_eq!(quote_argument(r#"a\"b c"#), r#""a\\\"b c""#);
        assert_eq!(quote_argument(r"a\\b c"), r#""a\\b c""#);
    }

    #[test]
    fn program_paths_are_quoted_only_when_needed() {
        assert_eq!(quote_program(r"C:\k\kubelet.exe"), r"C:\k\kubelet.exe");
        assert_eq!(quote_program(r"C:\Program Files\x\x.exe"), r#""C:\Program Files\x\x.exe""#);
        assert_eq!(quote_program(r"C:\a&b\x.exe"), r#""C:\a&b\x.exe""#);
    }

    #[test]
    fn cmd_protection_escapes_only_what_cmd_sees_unquoted() {
        assert_eq!(protect_for_cmd(r#"sc.exe description x "a & b""#), r#"sc.exe description x "a & b""#);
        assert_eq!(protect_for_cmd(r#"x "\"a\" & b""#), r#"x "\"a\" & b""#);
        assert_eq!(protect_for_cmd(r#"x "a\" & b""#), r#"x "a\" ^& b""#);
        assert_eq!(protect_for_cmd("a^b|c"), "a^^b^|c");
    }

    #[test]
    fn cmd_values_with_percent_or_control_characters_are_refused() {
        assert_eq!(
            check_cmd_value("description", "100%"),
            Err(CommandError::PercentSign { field: "description", value: "100%".into() })
        );
        assert_eq!(
            check_cmd_value("binPath", "a\r\nb"),
            Err(CommandError::ControlCharacter { field: "binPath", value: "a\r\nb".into(), character: '\r' })
        );
        assert_eq!(check_cmd_value("binPath", "ünïcode & ^ ! $ `"), Ok(()));
    }

    #[test]
    fn powershell_literals_double_every_single_quote_form() {
        assert_eq!(powershell_literal(r"C:\k\x"), r"'C:\k\x'");
        assert_eq!(powershell_literal("it's"), "'it''s'");
        assert_eq!(powershell_literal("\u{2019}x$y`z\""), "'\u{2019}\u{2019}x$y`z\"'");
        assert_eq!(powershell_literal(""), "''");
    }
}
