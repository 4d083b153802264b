//! [`reboot_request`]: whether one host is asked to reboot now, and why ([`RebootRequest`]).
//!
//! Idempotency: an admin request is a token (any text, for example a timestamp) on the `WindowsInstance`; the
//! executor records the token of the request a completed reboot answered on the record and passes it back as
//! [`RebootInputs::last_completed_token`], so the same token never reboots twice, even if the annotation stays, and
//! a new token asks once more. The Node's `reboot-required` annotation keeps the Go operator's contract instead: its
//! presence asks, and the executor removes it once the host is back (before it records the reboot as completed, so
//! a crash in between repeats only the removal). The host's markers go away with the reboot that clears them.

use std::fmt;

use jiff::{SignedDuration, Timestamp};
use wmco_vocabulary::RebootMarker;

use crate::{RebootPolicy, RebootRequestError, RebootSettings};

/// The longest admin token: any timestamp or UUID fits, and the record's status stays small.
pub const MAX_TOKEN_CHARS: usize = 63;

/// How long after a reboot the host's markers alone may ask for the next one: markers that come back at once (an
/// update that needs several restarts, software that renames files at every boot) reboot the host at most this
/// often, never in a loop. Explicit requests are not held back.
pub const MARKER_REBOOT_SPACING: SignedDuration = SignedDuration::from_hours(1);

/// What the operator observed of one host, the inputs of [`reboot_request`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RebootInputs<'a> {
    /// The value of the record's `windowsmachineconfig.openshift.io/reboot-requested` annotation, if it has one.
    pub admin_token: Option<&'a str>,
    /// The token of the admin request the last completed reboot answered (from the record's status).
    pub last_completed_token: Option<&'a str>,
    /// Whether the Node carries `windowsmachineconfig.openshift.io/reboot-required` (any value).
    pub node_reboot_required: bool,
    /// The pending-reboot markers the latest state probe found.
    pub host_markers: &'a [RebootMarker],
    /// When the host last came back from a reboot the operator made, if it did.
    pub last_reboot_at: Option<Timestamp>,
}

/// Who asks for a reboot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RebootSource {
    /// The admin, with this token on the record; the executor records it once the reboot completed.
    Admin {
        /// The annotation's value.
        token: String,
    },
    /// The Node's `reboot-required` annotation; the executor removes it once the host is back.
    NodeAnnotation,
    /// Windows itself, under `--reboot-policy=when-required` (sorted, without repeats).
    HostMarkers(Vec<RebootMarker>),
}

impl fmt::Display for RebootSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RebootSource::Admin { token } => write!(f, "the admin asked (token {token:?})"),
            RebootSource::NodeAnnotation => f.write_str("the Node carries the reboot-required annotation"),
            RebootSource::HostMarkers(markers) => {
                let names: Vec<&str> = markers.iter().map(|marker| marker.name()).collect();
                write!(f, "Windows has a reboot pending ({})", names.join(", "))
            }
        }
    }
}

/// A host is to be rebooted once: one reboot answers every source at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RebootRequest {
    /// Who asks, explicit requests first (never empty).
    pub sources: Vec<RebootSource>,
    /// One line for the record's `status.disruption.reason`, Events and logs.
    pub reason: String,
}

impl RebootRequest {
    /// The admin token the executor records once the reboot completed, if the admin asked.
    pub fn admin_token(&self) -> Option<&str> {
        self.sources.iter().find_map(|source| match source {
            RebootSource::Admin { token } => Some(token.as_str()),
            _ => None,
        })
    }

    /// Whether the executor removes the Node's `reboot-required` annotation once the host is back.
    pub fn clears_node_annotation(&self) -> bool {
        self.sources.contains(&RebootSource::NodeAnnotation)
    }
}

/// Whether the host `inputs` describes is asked to reboot at `now` under `settings`.
///
/// The admin's token (unless a completed reboot already answered it) and the Node annotation ask under either
/// policy and at any time; the host's markers ask only under [`RebootPolicy::WhenRequired`], and a request made of
/// markers alone only while `settings.window` is open and [`MARKER_REBOOT_SPACING`] after the last reboot. When an explicit request is made, the markers (under
/// `when-required`) are listed beside it, since the same reboot clears them.
///
/// # Errors
/// [`RebootRequestError::TokenTooLong`]: the admin's token is longer than [`MAX_TOKEN_CHARS`].
pub fn reboot_request(
    inputs: &RebootInputs<'_>,
    settings: &RebootSettings,
    now: Timestamp,
) -> Result<Option<RebootRequest>, RebootRequestError> {
    let mut sources = Vec::new();
    if let Some(token) = inputs.admin_token.filter(|token| Some(*token) != inputs.last_completed_token) {
        let chars = token.chars().count();
        if chars > MAX_TOKEN_CHARS {
            return Err(RebootRequestError::TokenTooLong { chars });
        }
        sources.push(RebootSource::Admin { token: token.to_owned() });
    }
    if inputs.node_reboot_required {
        sources.push(RebootSource::NodeAnnotation);
    }
    let explicit = !sources.is_empty();
    if settings.policy == RebootPolicy::WhenRequired && !inputs.host_markers.is_empty() {
        let too_soon = inputs.last_reboot_at.is_some_and(|last| now.duration_since(last) < MARKER_REBOOT_SPACING);
        if !explicit && (too_soon || !settings.window.contains(now)) {
            return Ok(None);
        }
        let mut markers = inputs.host_markers.to_vec();
        markers.sort_unstable();
        markers.dedup();
        sources.push(RebootSource::HostMarkers(markers));
    }
    if sources.is_empty() {
        return Ok(None);
    }
    let reasons: Vec<String> = sources.iter().map(ToString::to_string).collect();
    Ok(Some(RebootRequest { reason: reasons.join("; "), sources }))
}

#[cfg(test)]
mod tests {
    use jiff::civil::{Weekday, time};
    use jiff::tz::TimeZone;

    use super::*;
    use crate::MaintenanceWindow;

    const MARKERS: [RebootMarker; 2] = [RebootMarker::PendingFileRenameOperations, RebootMarker::WindowsUpdate];

    /// Saturday 22:00 to Sunday 04:00 UTC.
    fn weekend_night(policy: RebootPolicy) -> RebootSettings {
        let window = MaintenanceWindow::new(&[Weekday::Saturday], time(22, 0, 0, 0), time(4, 0, 0, 0), TimeZone::UTC)
            .expect("window");
        RebootSettings { policy, window }
    }

    /// A Monday noon, outside [`weekend_night`].
    fn monday_noon() -> Timestamp {
        "2026-11-30T12:00:00Z".parse().expect("timestamp")
    }

    /// A Saturday 23:00, inside [`weekend_night`].
    fn saturday_night() -> Timestamp {
        "2026-11-28T23:00:00Z".parse().expect("timestamp")
    }

    fn decide(inputs: RebootInputs<'_>, settings: &RebootSettings, now: Timestamp) -> Option<RebootRequest> {
        reboot_request(&inputs, settings, now).expect("decided")
    }

    fn sources(request: Option<RebootRequest>) -> Option<Vec<RebootSource>> {
        request.map(|request| request.sources)
    }

    #[test]
    fn nothing_asks_nothing() {
        for policy in [RebootPolicy::Never, RebootPolicy::WhenRequired] {
            assert_eq!(decide(RebootInputs::default(), &weekend_night(policy), saturday_night()), None);
        }
    }

    #[test]
    fn an_admin_token_asks_under_either_policy_and_outside_the_window() {
        let inputs = RebootInputs { admin_token: Some("2026-11-30T11:59:00Z"), ..RebootInputs::default() };
        for policy in [RebootPolicy::Never, RebootPolicy::WhenRequired] {
            let request = decide(inputs, &weekend_night(policy), monday_noon()).expect("asked");
            assert_eq!(request.sources, [RebootSource::Admin { token: "2026-11-30T11:59:00Z".into() }]);
            assert_eq!(request.admin_token(), Some("2026-11-30T11:59:00Z"));
            assert!(!request.clears_node_annotation());
            assert_eq!(request.reason, "the admin asked (token \"2026-11-30T11:59:00Z\")");
        }
    }

    #[test]
    fn an_answered_token_never_asks_again_and_a_new_one_asks_once_more() {
        let settings = RebootSettings::default();
        let answered =
            RebootInputs { admin_token: Some("first"), last_completed_token: Some("first"), ..RebootInputs::default() };
        assert_eq!(decide(answered, &settings, monday_noon()), None);
        let second = RebootInputs { admin_token: Some("second"), ..answered };
        assert_eq!(decide(second, &settings, monday_noon()).expect("asked").admin_token(), Some("second"));
        // The empty value `kubectl annotate ... reboot-requested=` sets is a token like any other.
        let empty = RebootInputs { admin_token: Some(""), ..answered };
        assert_eq!(decide(empty, &settings, monday_noon()).expect("asked").admin_token(), Some(""));
    }

    #[test]
    fn a_token_too_long_to_record_is_refused_naming_its_length() {
        let long = "x".repeat(MAX_TOKEN_CHARS + 1);
        let inputs = RebootInputs { admin_token: Some(&long), ..RebootInputs::default() };
        let error = reboot_request(&inputs, &RebootSettings::default(), monday_noon()).expect_err("too long");
        assert_eq!(error, RebootRequestError::TokenTooLong { chars: 64 });
        assert!(error.to_string().starts_with("the reboot token has 64 characters, more than 63"), "{error}");
        let longest = "x".repeat(MAX_TOKEN_CHARS);
        let inputs = RebootInputs { admin_token: Some(&longest), ..RebootInputs::default() };
        assert!(reboot_request(&inputs, &RebootSettings::default(), monday_noon()).expect("fits").is_some());
    }

    #[test]
    fn the_node_annotation_asks_under_either_policy_and_outside_the_window() {
        let inputs = RebootInputs { node_reboot_required: true, ..RebootInputs::default() };
        for policy in [RebootPolicy::Never, RebootPolicy::WhenRequired] {
            let request = decide(inputs, &weekend_night(policy), monday_noon()).expect("asked");
            assert_eq!(request.sources, [RebootSource::NodeAnnotation]);
            assert!(request.clears_node_annotation());
            assert_eq!(request.admin_token(), None);
        }
    }

    #[test]
    fn host_markers_ask_only_when_required_and_inside_the_window() {
        let inputs = RebootInputs { host_markers: &MARKERS, ..RebootInputs::default() };
        assert_eq!(decide(inputs, &weekend_night(RebootPolicy::Never), saturday_night()), None);
        assert_eq!(decide(inputs, &weekend_night(RebootPolicy::WhenRequired), monday_noon()), None);
        let request = decide(inputs, &weekend_night(RebootPolicy::WhenRequired), saturday_night()).expect("asked");
        let sorted = vec![RebootMarker::WindowsUpdate, RebootMarker::PendingFileRenameOperations];
        assert_eq!(request.sources, [RebootSource::HostMarkers(sorted)]);
        assert_eq!(request.reason, "Windows has a reboot pending (WindowsUpdate, PendingFileRenameOperations)");
        let always = RebootSettings { policy: RebootPolicy::WhenRequired, ..RebootSettings::default() };
        assert!(decide(inputs, &always, monday_noon()).is_some());
    }

    #[test]
    fn markers_back_soon_after_a_reboot_wait_for_the_spacing_but_an_explicit_request_does_not() {
        let always = RebootSettings { policy: RebootPolicy::WhenRequired, ..RebootSettings::default() };
        let recent = monday_noon().checked_sub(SignedDuration::from_mins(10)).expect("earlier");
        let inputs = RebootInputs { host_markers: &MARKERS, last_reboot_at: Some(recent), ..RebootInputs::default() };
        assert_eq!(decide(inputs, &always, monday_noon()), None);
        let later = monday_noon().checked_add(MARKER_REBOOT_SPACING).expect("later");
        assert!(decide(inputs, &always, later).is_some());
        let asked = RebootInputs { node_reboot_required: true, ..inputs };
        assert!(decide(asked, &always, monday_noon()).is_some());
    }

    #[test]
    fn an_explicit_request_lists_the_markers_it_also_clears() {
        let inputs = RebootInputs {
            admin_token: Some("t1"),
            node_reboot_required: true,
            host_markers: &[RebootMarker::ComponentBasedServicing, RebootMarker::ComponentBasedServicing],
            ..RebootInputs::default()
        };
        let request = decide(inputs, &weekend_night(RebootPolicy::WhenRequired), monday_noon()).expect("asked");
        assert_eq!(
            request.sources,
            [
                RebootSource::Admin { token: "t1".into() },
                RebootSource::NodeAnnotation,
                RebootSource::HostMarkers(vec![RebootMarker::ComponentBasedServicing]),
            ]
        );
        assert_eq!(
            request.reason,
            "the admin asked (token \"t1\"); the Node carries the reboot-required annotation; Windows has a reboot \
             pending (ComponentBasedServicing)"
        );
        assert_eq!(
            sources(decide(inputs, &weekend_night(RebootPolicy::Never), monday_noon())),
            Some(vec![RebootSource::Admin { token: "t1".into() }, RebootSource::NodeAnnotation])
        );
    }
}
