//! The errors of the reboot settings (a flag value the operator refuses at start) and of a request's inputs.

/// A reboot flag's value is not usable; the message names the value (clap adds the flag).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RebootSettingsError {
    /// `--reboot-policy` is neither `never` nor `when-required`.
    #[error("unknown reboot policy {0:?} (expected never or when-required)")]
    UnknownPolicy(String),
    /// A `--reboot-days` entry names no day.
    #[error(
        "unknown day {0:?} (expected su, mo, tu, we, th, fr, sa, their three-letter or full English names, or 0-6 with 0 for Sunday)"
    )]
    UnknownWeekday(String),
    /// `--start-time` or `--end-time` is no time of day.
    #[error("invalid time of day {text:?}: {why} (expected 15:04, 15:04:05, 15, 3pm or 03:04pm)")]
    BadTimeOfDay {
        /// The value given.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// `--time-zone` is no time zone this operator knows.
    #[error("unknown time zone {name:?}: {why} (expected an IANA name such as Europe/Berlin, or UTC)")]
    UnknownTimeZone {
        /// The value given.
        name: String,
        /// The time zone database's answer.
        why: String,
    },
    /// `--start-time` equals `--end-time`: the window would never (or always) be open, which one is unclear.
    #[error(
        "--start-time and --end-time are both {0}: the maintenance window would be empty; leave both unset for no window"
    )]
    EmptyWindow(String),
    /// `--reboot-days` lists no day.
    #[error("--reboot-days lists no day: the maintenance window would never open")]
    NoDays,
}

/// A host's reboot inputs cannot be decided on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RebootRequestError {
    /// The admin's token is too long to be recorded on the record's status.
    #[error(
        "the reboot token has {chars} characters, more than {max} (use a timestamp such as 2026-11-29T10:00:00Z)",
        max = crate::MAX_TOKEN_CHARS
    )]
    TokenTooLong {
        /// How many characters it has.
        chars: usize,
    },
}
