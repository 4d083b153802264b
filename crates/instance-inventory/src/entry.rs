//! The value of a `windows-instances` entry: exactly one field `username=<name>`, surrounding whitespace trimmed.
//! Fields are separated by commas or line breaks (neither can appear in a Windows user name), so
//! `username=a,foo=b` is an unknown field rather than a strange user name. Field values other than the user name
//! are never echoed back: an admin may have put a password there.

use serde::{Deserialize, Serialize};

use crate::username::{UsernameError, validate_username};

/// The only field an entry's value may hold.
const USERNAME_FIELD: &str = "username";

/// Why an entry's value is not `username=<name>` with a valid Windows user name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ValueError {
    /// No `username` field at all (an empty value included).
    #[error("no username given; the value must be `username=<name>`")]
    MissingUsername,
    /// `username=` with nothing after it.
    #[error("the username is empty; the value must be `username=<name>`")]
    EmptyUsername,
    /// A field without `=` (its text is not repeated, it may be a secret).
    #[error("a field has no `=`; the value must be exactly `username=<name>`")]
    FieldWithoutEquals,
    /// An empty field between separators.
    #[error("the value has an empty field (a stray comma or blank line); it must be exactly `username=<name>`")]
    EmptyField,
    /// A field other than `username`.
    #[error("unknown field {field:?}; the value must be exactly `username=<name>`")]
    UnknownField {
        /// The field's name (never its value).
        field: String,
    },
    /// `username` given more than once.
    #[error("username is given {count} times; give it once")]
    RepeatedUsername {
        /// How many times.
        count: usize,
    },
    /// A user name Windows does not allow.
    #[error("user name {username:?} is not a valid Windows user name: {reason}")]
    InvalidUsername {
        /// The user name.
        username: String,
        /// The rule it breaks.
        reason: UsernameError,
    },
}

/// Parses an entry's value and returns the Windows user name it holds.
///
/// ```
/// use wmco_instance_inventory::{ValueError, parse_value};
///
/// assert_eq!(parse_value("  username=Administrator\n"), Ok("Administrator".to_owned()));
/// assert_eq!(parse_value("password=hunter2"), Err(ValueError::UnknownField { field: "password".into() }));
/// ```
pub fn parse_value(value: &str) -> Result<String, ValueError> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(ValueError::MissingUsername);
    }
    let mut usernames = Vec::new();
    for field in trimmed.split([',', '\n']).map(str::trim) {
        if field.is_empty() {
            return Err(ValueError::EmptyField);
        }
        let (name, field_value) = field.split_once('=').ok_or(ValueError::FieldWithoutEquals)?;
        let name = name.trim();
        if name != USERNAME_FIELD {
            return Err(ValueError::UnknownField { field: name.to_owned() });
        }
        usernames.push(field_value.trim());
    }
    let username = match usernames.as_slice() {
        [] => return Err(ValueError::MissingUsername),
        [username] => *username,
        more => return Err(ValueError::RepeatedUsername { count: more.len() }),
    };
    if username.is_empty() {
        return Err(ValueError::EmptyUsername);
    }
    validate_username(username)
        .map_err(|reason| ValueError::InvalidUsername { username: username.to_owned(), reason })?;
    Ok(username.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_around_the_field_and_its_parts_is_trimmed() {
        assert_eq!(parse_value("username=Administrator"), Ok("Administrator".into()));
        assert_eq!(parse_value("\n  username = Administrator  \n"), Ok("Administrator".into()));
        assert_eq!(parse_value("username=John Smith"), Ok("John Smith".into()));
    }

    #[test]
    fn missing_and_empty_usernames() {
        assert_eq!(parse_value(""), Err(ValueError::MissingUsername));
        assert_eq!(parse_value("   \n"), Err(ValueError::MissingUsername));
        assert_eq!(parse_value("username="), Err(ValueError::EmptyUsername));
        assert_eq!(parse_value("username=   "), Err(ValueError::EmptyUsername));
        assert_eq!(parse_value("username"), Err(ValueError::FieldWithoutEquals));
        assert_eq!(parse_value("Administrator"), Err(ValueError::FieldWithoutEquals));
    }

    #[test]
    fn other_fields_are_refused_by_name_only() {
        assert_eq!(parse_value("username=a,foo=b"), Err(ValueError::UnknownField { field: "foo".into() }));
        assert_eq!(
            parse_value("username=a\npassword=s3cret"),
            Err(ValueError::UnknownField { field: "password".into() })
        );
        assert_eq!(parse_value("user=a"), Err(ValueError::UnknownField { field: "user".into() }));
        assert_eq!(parse_value("Username=a"), Err(ValueError::UnknownField { field: "Username".into() }));
        assert!(!parse_value("password=s3cret").unwrap_err().to_string().contains("s3cret"));
    }

    #[test]
    fn stray_separators_and_repeats() {
        assert_eq!(parse_value("username=a,"), Err(ValueError::EmptyField));
        assert_eq!(parse_value("username=a\n\nusername=b"), Err(ValueError::EmptyField));
        assert_eq!(parse_value("username=a,username=b"), Err(ValueError::RepeatedUsername { count: 2 }));
    }

    #[test]
    fn windows_rules_apply_to_the_name() {
        assert_eq!(
            parse_value("username=admin."),
            Err(ValueError::InvalidUsername { username: "admin.".into(), reason: UsernameError::TrailingPeriod })
        );
        assert_eq!(
            parse_value("username=a=b"),
            Err(ValueError::InvalidUsername {
                username: "a=b".into(),
                reason: UsernameError::ForbiddenCharacter { character: '=' }
            })
        );
    }
}
