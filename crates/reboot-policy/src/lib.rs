//! Pure decision of whether a Windows host is asked to reboot (issue 37, "Reboots as requests").
//!
//! [`reboot_request`] takes what the operator observed of one host ([`RebootInputs`]: the admin's token on the
//! `WindowsInstance`, the Go operator's `reboot-required` annotation on the Node, the pending-reboot markers the
//! state probe found, the token of the last completed admin request) with the admin's [`RebootSettings`]
//! (`--reboot-policy` and the maintenance window) and the current instant, and returns the [`RebootRequest`] the
//! fleet executor is to admit within `--max-unavailable`, or none. It does no IO and reads no clock.
//!
//! Rules:
//! - an admin's request (a token on the record) and the Node annotation are explicit: honoured under either policy
//!   and at any time of day, since the admin chose the moment (the budget still applies);
//! - the host's own markers count only under [`RebootPolicy::WhenRequired`], and a request made of markers alone
//!   waits for the [`MaintenanceWindow`] and comes at most once per [`MARKER_REBOOT_SPACING`];
//! - an admin token is answered once: the executor records the token of a completed reboot on the record and passes
//!   it back as [`RebootInputs::last_completed_token`]; the same token never asks again, a new one asks once more.
//!
//! The flag values parse with [`parse_weekday`], [`parse_time_of_day`], [`parse_time_zone`] and
//! [`RebootPolicy`]'s `FromStr`, following kured's `--reboot-days`, `--start-time`, `--end-time` and `--time-zone`.
//!
//! ```
//! use jiff::Timestamp;
//! use wmco_reboot_policy::{RebootInputs, RebootSettings, RebootSource, reboot_request};
//!
//! let inputs = RebootInputs { admin_token: Some("2026-11-29T10:00:00Z"), ..RebootInputs::default() };
//! let now: Timestamp = "2026-11-29T10:00:05Z".parse()?;
//! let request = reboot_request(&inputs, &RebootSettings::default(), now)?.expect("asked");
//! assert_eq!(request.admin_token(), Some("2026-11-29T10:00:00Z"));
//! let answered = RebootInputs { last_completed_token: Some("2026-11-29T10:00:00Z"), ..inputs };
//! assert_eq!(reboot_request(&answered, &RebootSettings::default(), now)?, None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod parse;
mod policy;
mod request;
mod window;

pub use error::{RebootRequestError, RebootSettingsError};
pub use parse::{parse_time_of_day, parse_time_zone, parse_weekday, time_zone_in};
pub use policy::{RebootPolicy, RebootSettings};
pub use request::{MARKER_REBOOT_SPACING, MAX_TOKEN_CHARS, RebootInputs, RebootRequest, RebootSource, reboot_request};
pub use window::MaintenanceWindow;
pub use wmco_vocabulary::RebootMarker;
