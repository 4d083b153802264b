//! Windows local user-name rules (windows-commands.md §6): at most 20 characters, none of
//! `" / \ [ ] : ; | = , + * ? < >` and no control characters, not ending in a period, not only dots and spaces, and
//! not a reserved device name (`CON`, `PRN`, `AUX`, `NUL`, `COM1`–`COM9`, `LPT1`–`LPT9`, in any case).

use serde::{Deserialize, Serialize};

/// Longest local user name Windows accepts, in characters.
const MAX_USERNAME_CHARS: usize = 20;
/// Characters Windows refuses in a local user name.
const FORBIDDEN_CHARACTERS: &[char] = &['"', '/', '\\', '[', ']', ':', ';', '|', '=', ',', '+', '*', '?', '<', '>'];
/// Device names Windows reserves, in upper case.
const RESERVED_NAMES: &[&str] = &[
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9", "LPT1", "LPT2",
    "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

/// Why Windows would not accept a user name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UsernameError {
    /// Longer than 20 characters.
    #[error("it is {length} characters long; Windows allows at most {MAX_USERNAME_CHARS}")]
    TooLong {
        /// Its length in characters.
        length: usize,
    },
    /// A character Windows refuses.
    #[error("it contains {character:?}, which Windows does not allow in a user name")]
    ForbiddenCharacter {
        /// The first offending character.
        character: char,
    },
    /// A control character.
    #[error("it contains the control character U+{code:04X}")]
    ControlCharacter {
        /// Its code point.
        code: u32,
    },
    /// Ends with a period.
    #[error("it ends with a period, which Windows does not allow")]
    TrailingPeriod,
    /// Only dots and spaces.
    #[error("it consists only of dots and spaces")]
    OnlyDotsAndSpaces,
    /// A reserved device name.
    #[error("{name:?} is a reserved Windows device name")]
    ReservedName {
        /// The name as written.
        name: String,
    },
}

/// Checks a (trimmed, non-empty) user name against the Windows local user-name rules.
///
/// ```
/// use wmco_instance_inventory::{UsernameError, validate_username};
///
/// assert_eq!(validate_username("Administrator"), Ok(()));
/// assert_eq!(validate_username("admin."), Err(UsernameError::TrailingPeriod));
/// ```
pub fn validate_username(username: &str) -> Result<(), UsernameError> {
    if let Some(control) = username.chars().find(|c| c.is_control()) {
        return Err(UsernameError::ControlCharacter { code: u32::from(control) });
    }
    if let Some(character) = username.chars().find(|c| FORBIDDEN_CHARACTERS.contains(c)) {
        return Err(UsernameError::ForbiddenCharacter { character });
    }
    let length = username.chars().count();
    if length > MAX_USERNAME_CHARS {
        return Err(UsernameError::TooLong { length });
    }
    if username.chars().all(|c| c == '.' || c == ' ') {
        return Err(UsernameError::OnlyDotsAndSpaces);
    }
    if username.ends_with('.') {
        return Err(UsernameError::TrailingPeriod);
    }
    if RESERVED_NAMES.iter().any(|reserved| reserved.eq_ignore_ascii_case(username)) {
        return Err(UsernameError::ReservedName { name: username.to_owned() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_pass() {
        for name in ["Administrator", "capi", "svc-wmco", "John Smith", "a.b", "admin@corp", "x".repeat(20).as_str()] {
            assert_eq!(validate_username(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn every_forbidden_character_is_named() {
        for &character in FORBIDDEN_CHARACTERS {
            let name = format!("ad{character}min");
            assert_eq!(validate_username(&name), Err(UsernameError::ForbiddenCharacter { character }), "{name}");
        }
        assert_eq!(validate_username(r"CORP\admin"), Err(UsernameError::ForbiddenCharacter { character: '\\' }));
    }

    #[test]
    fn control_characters_are_refused() {
        assert_eq!(validate_username("ad\tmin"), Err(UsernameError::ControlCharacter { code: 9 }));
        assert_eq!(validate_username("a\u{7f}"), Err(UsernameError::ControlCharacter { code: 0x7f }));
    }

    #[test]
    fn length_limit_counts_characters() {
        assert_eq!(validate_username(&"x".repeat(21)), Err(UsernameError::TooLong { length: 21 }));
        assert_eq!(validate_username(&"é".repeat(20)), Ok(()));
    }

    #[test]
    fn dots_spaces_and_reserved_names() {
        assert_eq!(validate_username("admin."), Err(UsernameError::TrailingPeriod));
        assert_eq!(validate_username(". ."), Err(UsernameError::OnlyDotsAndSpaces));
        assert_eq!(validate_username("..."), Err(UsernameError::OnlyDotsAndSpaces));
        assert_eq!(validate_username("nul"), Err(UsernameError::ReservedName { name: "nul".into() }));
        assert_eq!(validate_username("Com7"), Err(UsernameError::ReservedName { name: "Com7".into() }));
        assert_eq!(validate_username("COM10"), Ok(()));
    }

    #[test]
    fn messages_read_as_sentences() {
        assert_eq!(
            validate_username("a=b").unwrap_err().to_string(),
            "it contains '=', which Windows does not allow in a user name"
        );
    }
}
