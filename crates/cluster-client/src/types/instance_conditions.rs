//! The conditions of a `WindowsInstance`, by the Kubernetes API conventions: every condition type is always present
//! with status `True` or `False` (never removed), a CamelCase reason, a message saying what to do, the generation
//! it was computed for, and a `lastTransitionTime` that moves only when the status flips.
//!
//! Three summary conditions, positive polarity, derived from the record alone by [`WindowsInstanceStatus::summarize`]:
//! - [`READY_CONDITION`]: the host is a Ready Node at its configured version (phase `Ready`);
//! - [`PROGRESSING_CONDITION`]: the operator is working on it (pending, configuring, waiting for the Node,
//!   upgrading, deconfiguring);
//! - [`DEGRADED_CONDITION`]: something needs attention (phase `Failed`, an error being retried, a refused key, a
//!   changed host key).
//!
//! And the specific ones, set by whoever learns the fact: [`AUTHENTICATION_FAILED_CONDITION`] (the host refuses the
//! operator's key), [`HOST_KEY_MISMATCH_CONDITION`] (the host presents another key than the pinned one),
//! [`PREFLIGHT_FAILED_CONDITION`] (the host failed a check before anything was installed),
//! [`REBOOT_REQUIRED_CONDITION`] (Windows keeps pending-reboot markers) and [`UPGRADING_CONDITION`] (derived from the
//! phase).
//!
//! `kubectl wait --for=condition=Ready windowsinstance/NAME` therefore works, and `status.observedGeneration` says
//! which spec the status describes.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use wmco_vocabulary::{DisruptionKind, InstancePhase, RebootMarker};

use super::WindowsInstanceStatus;

/// The host is a Ready Node configured at its recorded version.
pub const READY_CONDITION: &str = "Ready";
/// The operator is acting on the host.
pub const PROGRESSING_CONDITION: &str = "Progressing";
/// The host needs attention: it failed, an error is being retried, or its key or host key is wrong.
pub const DEGRADED_CONDITION: &str = "Degraded";
/// The host refuses the operator's SSH key (`True` from the first refusal, its `lastTransitionTime` kept while the
/// refusals go on; `False` once a login succeeds). A Machine's record failing longer than the grace period gets its
/// Machine replaced.
pub const AUTHENTICATION_FAILED_CONDITION: &str = "AuthenticationFailed";
/// The host presented another SSH host key than the one pinned on first contact; the operator refuses it.
pub const HOST_KEY_MISMATCH_CONDITION: &str = "HostKeyMismatch";
/// The host is being reconfigured for a new operator version (phase `Upgrading`).
pub const UPGRADING_CONDITION: &str = "Upgrading";
/// The host failed a preflight check on first contact (an unsupported Windows build, the Containers feature off,
/// too little free space on `C:`, Docker installed): nothing was installed, the record is `Failed`, and the operator checks again
/// with backoff. `False` once the checks pass, and on records never checked.
pub const PREFLIGHT_FAILED_CONDITION: &str = "PreflightFailed";
/// The Node named after the host is another's (another record's, a Linux Node, a Windows Node at another address),
/// or another record already expects that name: the host is refused and that Node never touched. `False` once the
/// name is the host's, and on records never checked.
pub const NODE_NAME_CONFLICT_CONDITION: &str = "NodeNameConflict";
/// The host reports another host name than the recorded one, which would give it another Node: the operator leaves
/// it as it is until the name is back or the host is added again. `False` while the name is the recorded one.
pub const HOSTNAME_CHANGED_CONDITION: &str = "HostnameChanged";
/// Windows keeps markers of a pending reboot on the host (Windows Update's `RebootRequired` key, Component Based
/// Servicing's `RebootPending` key, Session Manager's `PendingFileRenameOperations`), as the state probe read them:
/// the message names the markers. An observation only: whether the operator reboots is its reboot policy's call.
/// `False` once a probe finds none, and on records never probed.
pub const REBOOT_REQUIRED_CONDITION: &str = "RebootRequired";

/// How a `True` [`REBOOT_REQUIRED_CONDITION`]'s message lists the markers: prefix, separator, suffix.
const PENDING_MARKERS_PREFIX: &str = "Windows keeps pending-reboot markers on the host: ";
const PENDING_MARKERS_SEPARATOR: &str = ", ";
const PENDING_MARKERS_SUFFIX: &str = ". The pending operations complete at its next restart.";

/// One condition as a writer states it; [`WindowsInstanceStatus::set_condition`] adds the time and generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionState {
    /// The condition type.
    pub type_: &'static str,
    /// `True` or `False`.
    pub status: bool,
    /// CamelCase reason.
    pub reason: String,
    /// What it means and what to do.
    pub message: String,
}

impl ConditionState {
    /// A condition `type_` with `status`, `reason` and `message`.
    pub fn new(type_: &'static str, status: bool, reason: impl Into<String>, message: impl Into<String>) -> Self {
        ConditionState { type_, status, reason: reason.into(), message: message.into() }
    }

    /// [`AUTHENTICATION_FAILED_CONDITION`] `False`: no login was refused since the last accepted one.
    pub fn key_accepted() -> Self {
        ConditionState::new(
            AUTHENTICATION_FAILED_CONDITION,
            false,
            "KeyAccepted",
            "The host accepts the operator's key.",
        )
    }

    /// [`PREFLIGHT_FAILED_CONDITION`] `False` on a record that has not failed a preflight check.
    pub fn no_failed_preflight() -> Self {
        ConditionState::new(PREFLIGHT_FAILED_CONDITION, false, "NoFailedCheck", "No preflight check failed.")
    }

    /// [`HOSTNAME_CHANGED_CONDITION`] `False`: the host reports the recorded host name.
    pub fn hostname_as_recorded() -> Self {
        ConditionState::new(
            HOSTNAME_CHANGED_CONDITION,
            false,
            "HostnameAsRecorded",
            "The host reports the recorded host name.",
        )
    }

    /// [`NODE_NAME_CONFLICT_CONDITION`] `False`: no other Node or record holds the host's Node name.
    pub fn node_name_free() -> Self {
        ConditionState::new(
            NODE_NAME_CONFLICT_CONDITION,
            false,
            "NodeNameFree",
            "No other Node or record holds the host's Node name.",
        )
    }

    /// [`REBOOT_REQUIRED_CONDITION`] from the pending-reboot markers a probe found (their names): `True` naming them,
    /// `False` when there are none.
    ///
    /// ```
    /// use wmco_cluster_client::types::ConditionState;
    /// let state = ConditionState::reboot_required(&["WindowsUpdate", "PendingFileRenameOperations"]);
    /// assert!(state.status && state.message.contains("WindowsUpdate, PendingFileRenameOperations"));
    /// assert_eq!(ConditionState::reboot_required::<&str>(&[]), ConditionState::no_pending_reboot());
    /// ```
    pub fn reboot_required<S: AsRef<str>>(markers: &[S]) -> Self {
        if markers.is_empty() {
            return ConditionState::no_pending_reboot();
        }
        let names: Vec<&str> = markers.iter().map(AsRef::as_ref).collect();
        ConditionState::new(
            REBOOT_REQUIRED_CONDITION,
            true,
            "RebootPending",
            format!("{PENDING_MARKERS_PREFIX}{}{PENDING_MARKERS_SUFFIX}", names.join(PENDING_MARKERS_SEPARATOR)),
        )
    }

    /// [`REBOOT_REQUIRED_CONDITION`] `False`: no pending-reboot marker was seen on the host.
    pub fn no_pending_reboot() -> Self {
        ConditionState::new(
            REBOOT_REQUIRED_CONDITION,
            false,
            "NoPendingReboot",
            "No pending-reboot marker was seen on the host.",
        )
    }

    /// [`HOST_KEY_MISMATCH_CONDITION`] `False`: the host presents its pinned host key.
    pub fn host_key_as_pinned() -> Self {
        ConditionState::new(
            HOST_KEY_MISMATCH_CONDITION,
            false,
            "HostKeyAsPinned",
            "The host presents the host key pinned on first contact.",
        )
    }
}

impl WindowsInstanceStatus {
    /// The condition of `type_`, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|condition| condition.type_ == type_)
    }

    /// The pending-reboot markers the latest probe found, as its [`REBOOT_REQUIRED_CONDITION`] names them (none
    /// while it is `False` or absent; names this operator does not know are skipped).
    ///
    /// ```
    /// use wmco_cluster_client::types::{ConditionState, WindowsInstanceStatus};
    /// use wmco_vocabulary::RebootMarker;
    /// let mut status = WindowsInstanceStatus::default();
    /// let now = jiff::Timestamp::UNIX_EPOCH;
    /// status.set_condition(ConditionState::reboot_required(&["WindowsUpdate"]), None, now);
    /// assert_eq!(status.pending_reboot_markers(), [RebootMarker::WindowsUpdate]);
    /// ```
    pub fn pending_reboot_markers(&self) -> Vec<RebootMarker> {
        let Some(condition) = self.condition(REBOOT_REQUIRED_CONDITION).filter(|condition| condition.status == "True")
        else {
            return Vec::new();
        };
        let names = condition
            .message
            .strip_prefix(PENDING_MARKERS_PREFIX)
            .and_then(|rest| rest.strip_suffix(PENDING_MARKERS_SUFFIX));
        names
            .into_iter()
            .flat_map(|names| names.split(PENDING_MARKERS_SEPARATOR))
            .filter_map(|name| name.parse().ok())
            .collect()
    }

    /// Whether the condition of `type_` is present with status `True`.
    pub fn condition_is_true(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(|condition| condition.status == "True")
    }

    /// Sets `state` for the record's `generation` at `now`: a new condition is added; an existing one keeps its
    /// `lastTransitionTime` unless its status flips. The list stays sorted by type.
    ///
    /// ```
    /// use wmco_cluster_client::types::{ConditionState, WindowsInstanceStatus};
    /// let mut status = WindowsInstanceStatus::default();
    /// let t0: jiff::Timestamp = "2026-11-26T10:00:00Z".parse()?;
    /// let t1: jiff::Timestamp = "2026-11-26T10:05:00Z".parse()?;
    /// status.set_condition(ConditionState::new("AuthenticationFailed", true, "KeyRefused", "denied"), Some(1), t0);
    /// status.set_condition(ConditionState::new("AuthenticationFailed", true, "KeyRefused", "denied again"), Some(1), t1);
    /// let condition = status.condition("AuthenticationFailed").unwrap();
    /// assert_eq!((condition.message.as_str(), condition.last_transition_time.0), ("denied again", t0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_condition(&mut self, state: ConditionState, generation: Option<i64>, now: Timestamp) {
        let status = if state.status { "True" } else { "False" }.to_owned();
        match self.conditions.iter_mut().find(|condition| condition.type_ == state.type_) {
            Some(condition) => {
                if condition.status != status {
                    condition.last_transition_time = Time(now);
                    condition.status = status;
                }
                condition.reason = state.reason;
                condition.message = state.message;
                condition.observed_generation = generation;
            }
            None => {
                self.conditions.push(Condition {
                    type_: state.type_.to_owned(),
                    status,
                    reason: state.reason,
                    message: state.message,
                    last_transition_time: Time(now),
                    observed_generation: generation,
                });
                self.conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
            }
        }
    }

    /// Derives the summary conditions (Ready, Progressing, Degraded) and [`UPGRADING_CONDITION`] from the phase,
    /// the last error and the specific conditions, adds [`AUTHENTICATION_FAILED_CONDITION`],
    /// [`HOST_KEY_MISMATCH_CONDITION`], [`PREFLIGHT_FAILED_CONDITION`], [`NODE_NAME_CONFLICT_CONDITION`],
    /// [`HOSTNAME_CHANGED_CONDITION`] and [`REBOOT_REQUIRED_CONDITION`] as `False`
    /// where they are missing, and records `generation` as
    /// `observedGeneration`. Idempotent: a second call with the same record changes nothing.
    ///
    /// ```
    /// use wmco_cluster_client::types::{InstancePhase, WindowsInstanceStatus};
    /// let mut status = WindowsInstanceStatus { phase: Some(InstancePhase::Ready), ..Default::default() };
    /// status.summarize(Some(3), "2026-11-26T10:00:00Z".parse()?);
    /// assert!(status.condition_is_true("Ready"));
    /// assert!(!status.condition_is_true("Progressing") && !status.condition_is_true("Degraded"));
    /// assert_eq!(status.observed_generation, Some(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn summarize(&mut self, generation: Option<i64>, now: Timestamp) {
        for default in [
            ConditionState::key_accepted(),
            ConditionState::host_key_as_pinned(),
            ConditionState::no_failed_preflight(),
            ConditionState::node_name_free(),
            ConditionState::hostname_as_recorded(),
            ConditionState::no_pending_reboot(),
        ] {
            match self.conditions.iter_mut().find(|condition| condition.type_ == default.type_) {
                Some(condition) => condition.observed_generation = generation,
                None => self.set_condition(default, generation, now),
            }
        }
        for state in self.summary() {
            self.set_condition(state, generation, now);
        }
        self.observed_generation = generation;
    }

    /// The summary conditions this status implies.
    fn summary(&self) -> [ConditionState; 4] {
        let phase = self.phase.unwrap_or(InstancePhase::Pending);
        let version = self.configured_version.as_deref().unwrap_or("unknown");
        let error = self.last_error.as_deref();
        let (ready_reason, ready_message) = match phase {
            InstancePhase::Ready => {
                ("Configured".to_owned(), format!("The host is a Ready Node at version {version}."))
            }
            InstancePhase::Failed => (
                "Failed".to_owned(),
                format!(
                    "{} Fix the cause; the operator picks the fix up by itself.",
                    error.unwrap_or("The last step failed.")
                ),
            ),
            other => (other.to_string(), progress_message(other).to_owned()),
        };
        let disruption = self.disruption_in_effect();
        let rebooting =
            disruption.filter(|disruption| disruption.kind == DisruptionKind::Reboot && disruption.is_under_way());
        let progressing = rebooting.is_some() || !matches!(phase, InstancePhase::Ready | InstancePhase::Failed);
        let (progressing_reason, progressing_message) = if let Some(reboot) = rebooting {
            ("Rebooting".to_owned(), format!("The host restarts ({}); waiting for it to come back.", reboot.reason))
        } else if progressing {
            (phase.to_string(), progress_message(phase).to_owned())
        } else {
            (ready_reason.clone(), "The operator is not changing the host.".to_owned())
        };
        let degraded = if self.condition_is_true(HOST_KEY_MISMATCH_CONDITION) {
            Some((HOST_KEY_MISMATCH_CONDITION, self.condition_message(HOST_KEY_MISMATCH_CONDITION)))
        } else if self.condition_is_true(AUTHENTICATION_FAILED_CONDITION) {
            Some((AUTHENTICATION_FAILED_CONDITION, self.condition_message(AUTHENTICATION_FAILED_CONDITION)))
        } else if self.condition_is_true(NODE_NAME_CONFLICT_CONDITION) {
            Some((NODE_NAME_CONFLICT_CONDITION, self.condition_message(NODE_NAME_CONFLICT_CONDITION)))
        } else if self.condition_is_true(HOSTNAME_CHANGED_CONDITION) {
            Some((HOSTNAME_CHANGED_CONDITION, self.condition_message(HOSTNAME_CHANGED_CONDITION)))
        } else if phase == InstancePhase::Failed {
            Some(("Failed", error.unwrap_or("The last step failed.").to_owned()))
        } else {
            error.map(|error| ("RetryingAfterError", format!("{error} The operator retries with backoff.")))
        };
        let degraded = match degraded {
            Some((reason, message)) => ConditionState::new(DEGRADED_CONDITION, true, reason, message),
            None => ConditionState::new(DEGRADED_CONDITION, false, "AsExpected", "Nothing needs attention."),
        };
        let upgrading = if phase == InstancePhase::Upgrading {
            ConditionState::new(UPGRADING_CONDITION, true, "UpgradeInProgress", progress_message(phase))
        } else {
            ConditionState::new(UPGRADING_CONDITION, false, "NotUpgrading", "No upgrade is under way.")
        };
        [
            ConditionState::new(READY_CONDITION, phase == InstancePhase::Ready, ready_reason, ready_message),
            ConditionState::new(PROGRESSING_CONDITION, progressing, progressing_reason, progressing_message),
            degraded,
            upgrading,
        ]
    }

    fn condition_message(&self, type_: &str) -> String {
        self.condition(type_).map(|condition| condition.message.clone()).unwrap_or_default()
    }
}

/// What the operator is doing in `phase`.
fn progress_message(phase: InstancePhase) -> &'static str {
    match phase {
        InstancePhase::Pending => "The operator has not looked at the host yet.",
        InstancePhase::Configuring => "Installing the payload, configuration and services on the host.",
        InstancePhase::WaitingForNode => {
            "The kubelet runs; waiting for the Node to register, get its hybrid-overlay subnet and become Ready."
        }
        InstancePhase::Upgrading => {
            "Reconfiguring the host for the operator's version (cordoned and drained, within the upgrade budget)."
        }
        InstancePhase::Deconfiguring => "The host was removed: draining the Node, then cleaning the host.",
        InstancePhase::Ready => "The host is a Ready Node.",
        InstancePhase::Failed => "The last step failed.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minute: u8) -> Timestamp {
        format!("2026-11-26T10:{minute:02}:00Z").parse().unwrap()
    }

    fn summarized(status: &WindowsInstanceStatus) -> Vec<(String, String, String)> {
        status
            .conditions
            .iter()
            .map(|condition| (condition.type_.clone(), condition.status.clone(), condition.reason.clone()))
            .collect()
    }

    fn row(type_: &str, status: &str, reason: &str) -> (String, String, String) {
        (type_.to_owned(), status.to_owned(), reason.to_owned())
    }

    #[test]
    fn every_phase_gives_all_conditions_with_one_meaning() {
        let expectations = [
            (InstancePhase::Pending, "False", "Pending", "True", "False", "AsExpected"),
            (InstancePhase::Configuring, "False", "Configuring", "True", "False", "AsExpected"),
            (InstancePhase::WaitingForNode, "False", "WaitingForNode", "True", "False", "AsExpected"),
            (InstancePhase::Ready, "True", "Configured", "False", "False", "AsExpected"),
            (InstancePhase::Upgrading, "False", "Upgrading", "True", "False", "AsExpected"),
            (InstancePhase::Deconfiguring, "False", "Deconfiguring", "True", "False", "AsExpected"),
            (InstancePhase::Failed, "False", "Failed", "False", "True", "Failed"),
        ];
        for (phase, ready, reason, progressing, degraded, degraded_reason) in expectations {
            let mut status = WindowsInstanceStatus { phase: Some(phase), ..WindowsInstanceStatus::default() };
            status.summarize(Some(7), at(0));
            let upgrading = if phase == InstancePhase::Upgrading { "True" } else { "False" };
            let upgrading_reason = if phase == InstancePhase::Upgrading { "UpgradeInProgress" } else { "NotUpgrading" };
            assert_eq!(
                summarized(&status),
                [
                    row(AUTHENTICATION_FAILED_CONDITION, "False", "KeyAccepted"),
                    row(DEGRADED_CONDITION, degraded, degraded_reason),
                    row(HOST_KEY_MISMATCH_CONDITION, "False", "HostKeyAsPinned"),
                    row(HOSTNAME_CHANGED_CONDITION, "False", "HostnameAsRecorded"),
                    row(NODE_NAME_CONFLICT_CONDITION, "False", "NodeNameFree"),
                    row(PREFLIGHT_FAILED_CONDITION, "False", "NoFailedCheck"),
                    row(PROGRESSING_CONDITION, progressing, reason),
                    row(READY_CONDITION, ready, reason),
                    row(REBOOT_REQUIRED_CONDITION, "False", "NoPendingReboot"),
                    row(UPGRADING_CONDITION, upgrading, upgrading_reason),
                ],
                "{phase:?}"
            );
            assert!(status.conditions.iter().all(|condition| condition.observed_generation == Some(7)));
            assert!(status.conditions.iter().all(|condition| !condition.message.is_empty()), "{phase:?}");
        }
    }

    #[test]
    fn a_reboot_under_way_is_progress_and_a_completed_one_is_not() {
        let reboot = |state| crate::types::HostReboot {
            reason: "the Windows feature Containers was installed".to_owned(),
            state,
            boot_before: "/Date(1)/".to_owned(),
            requested_at: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(0)),
            restart_sent_at: None,
            node: None,
            cordoned: false,
            completed_at: None,
        };
        let mut status = WindowsInstanceStatus {
            phase: Some(InstancePhase::Ready),
            reboot: Some(reboot(crate::types::RebootState::Restarting)),
            ..WindowsInstanceStatus::default()
        };
        status.summarize(None, at(0));
        let progressing = status.condition(PROGRESSING_CONDITION).unwrap();
        assert_eq!((progressing.status.as_str(), progressing.reason.as_str()), ("True", "Rebooting"));
        assert!(progressing.message.contains("Containers was installed"), "{}", progressing.message);
        status.migrate_legacy_reboot();
        status.summarize(None, at(1));
        let progressing = status.condition(PROGRESSING_CONDITION).unwrap();
        assert_eq!((progressing.status.as_str(), progressing.reason.as_str()), ("True", "Rebooting"));
        status.disruption = Some(reboot(crate::types::RebootState::Completed).into());
        status.summarize(None, at(2));
        let progressing = status.condition(PROGRESSING_CONDITION).unwrap();
        assert_eq!((progressing.status.as_str(), progressing.reason.as_str()), ("False", "Configured"));
    }

    #[test]
    fn pending_reboot_markers_are_named_and_neither_degrade_nor_progress_a_ready_host() {
        let mut status =
            WindowsInstanceStatus { phase: Some(InstancePhase::Ready), ..WindowsInstanceStatus::default() };
        status.summarize(None, at(0));
        let condition = status.condition(REBOOT_REQUIRED_CONDITION).unwrap();
        assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("False", "NoPendingReboot"));
        status.set_condition(ConditionState::reboot_required(&["ComponentBasedServicing"]), None, at(1));
        status.set_condition(
            ConditionState::reboot_required(&["WindowsUpdate", "ComponentBasedServicing"]),
            None,
            at(2),
        );
        status.summarize(None, at(2));
        let condition = status.condition(REBOOT_REQUIRED_CONDITION).unwrap();
        assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("True", "RebootPending"));
        assert_eq!(condition.last_transition_time.0, at(1), "kept while markers stay");
        assert!(condition.message.contains("WindowsUpdate, ComponentBasedServicing"), "{}", condition.message);
        assert!(!status.condition_is_true(DEGRADED_CONDITION) && !status.condition_is_true(PROGRESSING_CONDITION));
        status.set_condition(ConditionState::reboot_required::<&str>(&[]), None, at(3));
        let condition = status.condition(REBOOT_REQUIRED_CONDITION).unwrap();
        assert_eq!((condition.status.as_str(), condition.last_transition_time.0), ("False", at(3)));
    }

    #[test]
    fn a_retried_error_degrades_and_says_the_operator_retries() {
        let mut status = WindowsInstanceStatus {
            phase: Some(InstancePhase::Configuring),
            last_error: Some("host 10.0.0.5: unreachable.".to_owned()),
            ..WindowsInstanceStatus::default()
        };
        status.summarize(None, at(0));
        let degraded = status.condition(DEGRADED_CONDITION).unwrap();
        assert_eq!((degraded.status.as_str(), degraded.reason.as_str()), ("True", "RetryingAfterError"));
        assert_eq!(degraded.message, "host 10.0.0.5: unreachable. The operator retries with backoff.");
    }

    #[test]
    fn a_refused_key_or_changed_host_key_degrades_even_a_ready_host() {
        let mut status =
            WindowsInstanceStatus { phase: Some(InstancePhase::Ready), ..WindowsInstanceStatus::default() };
        status.set_condition(
            ConditionState::new(AUTHENTICATION_FAILED_CONDITION, true, "KeyRefused", "the host refused the key"),
            None,
            at(0),
        );
        status.summarize(None, at(1));
        let degraded = status.condition(DEGRADED_CONDITION).unwrap();
        assert_eq!(
            (degraded.reason.as_str(), degraded.message.as_str()),
            ("AuthenticationFailed", "the host refused the key")
        );
        status.set_condition(
            ConditionState::new(HOST_KEY_MISMATCH_CONDITION, true, "HostKeyChanged", "pinned A, offered B"),
            None,
            at(2),
        );
        status.summarize(None, at(2));
        assert_eq!(status.condition(DEGRADED_CONDITION).unwrap().reason, "HostKeyMismatch");
    }

    #[test]
    fn transition_times_move_only_when_a_status_flips_and_a_second_summary_changes_nothing() {
        let mut status =
            WindowsInstanceStatus { phase: Some(InstancePhase::Configuring), ..WindowsInstanceStatus::default() };
        status.summarize(Some(1), at(0));
        let once = status.clone();
        status.summarize(Some(1), at(5));
        assert_eq!(status, once, "idempotent");
        status.phase = Some(InstancePhase::WaitingForNode);
        status.summarize(Some(1), at(6));
        let ready = status.condition(READY_CONDITION).unwrap();
        assert_eq!((ready.reason.as_str(), ready.last_transition_time.0), ("WaitingForNode", at(0)), "still False");
        status.phase = Some(InstancePhase::Ready);
        status.summarize(Some(2), at(9));
        let ready = status.condition(READY_CONDITION).unwrap();
        assert_eq!((ready.status.as_str(), ready.last_transition_time.0), ("True", at(9)));
        assert_eq!(status.condition(PROGRESSING_CONDITION).unwrap().last_transition_time.0, at(9));
        assert_eq!(status.observed_generation, Some(2));
    }
}
