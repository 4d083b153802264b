//! The planner's view of the fleet: every BYOH host and Windows Machine the operator knows of, with the facts read
//! from its `WindowsInstance` record (including the restart or reboot it asks for), its Node and the admin's inputs,
//! and the Windows Machines away for a replacement, at one instant.

use jiff::Timestamp;
use semver::Version;
use serde::{Deserialize, Serialize};
use wmco_vocabulary::{DisruptionKind, InstanceOrigin, InstancePhase};

/// Every instance the operator knows of, observed at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fleet {
    /// The instant the facts were read; backoff deadlines are compared with it.
    pub now: Timestamp,
    /// Hex SHA-256 of the authorized-key line of the current `cloud-private-key` (the value the
    /// `windowsmachineconfig.openshift.io/pub-key-hash` annotation must hold).
    pub current_pub_key_hash: String,
    /// The instances, in any order; the plan orders them itself.
    #[serde(default)]
    pub instances: Vec<Instance>,
    /// Windows Machines away from the fleet for a replacement (being deleted, or their successor not yet a
    /// configured Ready Node): no instance stands for them, yet each counts against `max_unavailable`.
    #[serde(default)]
    pub machines_away: u32,
}

/// One BYOH host or Windows Machine. Unknown keys are refused when it is read; the former `rebooting: true` is read
/// as a granted reboot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "InstanceDocument")]
pub struct Instance {
    /// The instance's name: the BYOH address from `windows-instances`, or the Machine's name.
    pub name: String,
    /// Whether the instance is a BYOH host or a Machine.
    #[serde(with = "origin_label")]
    pub kind: InstanceOrigin,
    /// `true` while the admin still wants the instance: the BYOH entry is still listed, or the Machine still exists
    /// (default `true`).
    pub desired: bool,
    /// The phase recorded in the instance's `WindowsInstance` status (default `Pending`).
    pub phase: InstancePhase,
    /// The instance's Node, when one is registered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeState>,
    /// The last failed attempt on this instance, when it has not succeeded since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<Failure>,
    /// The restart or reboot the host's record asks for, if any: `Requested` waits for the budget, `Granted` is
    /// under way and counts against `max_unavailable`, with or without a Node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disruption: Option<RequestedDisruption>,
}

impl Instance {
    /// `true` when a desired instance is unavailable because of the operator: marked upgrading, in the `Upgrading`
    /// phase, with a granted restart or reboot, cordoned by the operator, or configured but not Ready. These count
    /// against `max_unavailable`; a disruption that is only requested does not.
    ///
    /// ```
    /// use wmco_upgrade_planner::{Instance, InstanceOrigin, InstancePhase};
    /// let instance = Instance {
    ///     name: "10.0.0.5".into(),
    ///     kind: InstanceOrigin::Byoh,
    ///     desired: true,
    ///     phase: InstancePhase::Upgrading,
    ///     node: None,
    ///     last_failure: None,
    ///     disruption: None,
    /// };
    /// assert!(instance.is_unavailable_by_operator());
    /// ```
    pub fn is_unavailable_by_operator(&self) -> bool {
        if !self.desired {
            return false;
        }
        let node_disrupted = self.node.as_ref().is_some_and(|node| {
            node.upgrading
                || node.cordoned_by == Some(CordonedBy::Operator)
                || (node.configured_version.is_some() && !node.ready)
        });
        node_disrupted || self.disruption_granted().is_some() || self.phase == InstancePhase::Upgrading
    }

    /// The kind of the disruption under way (granted), if any.
    pub fn disruption_granted(&self) -> Option<DisruptionKind> {
        self.disruption.filter(|request| request.state == RequestState::Granted).map(|request| request.kind)
    }

    /// The kind of the disruption waiting for the budget (requested, not granted yet), if any.
    pub fn disruption_requested(&self) -> Option<DisruptionKind> {
        self.disruption.filter(|request| request.state == RequestState::Requested).map(|request| request.kind)
    }
}

/// A restart or reboot an instance's record asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestedDisruption {
    /// What the disruption does to the host.
    pub kind: DisruptionKind,
    /// Whether the budget was handed out for it.
    pub state: RequestState,
}

/// Where a disruption request stands with the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RequestState {
    /// Asked for and waiting for the budget; the host is still in service, so it does not count as unavailable.
    Requested,
    /// The budget was handed out and the disruption is under way; it counts against `max_unavailable`.
    Granted,
}

/// An [`Instance`] as an input document spells it: the fields of [`Instance`], and the former `rebooting: true`
/// (a reboot under way), read as a granted [`DisruptionKind::Reboot`] so older `wmco plan` inputs keep working.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InstanceDocument {
    name: String,
    #[serde(with = "origin_label")]
    kind: InstanceOrigin,
    #[serde(default = "default_desired")]
    desired: bool,
    #[serde(default)]
    phase: InstancePhase,
    #[serde(default)]
    node: Option<NodeState>,
    #[serde(default)]
    last_failure: Option<Failure>,
    #[serde(default)]
    disruption: Option<RequestedDisruption>,
    #[serde(default)]
    rebooting: bool,
}

impl TryFrom<InstanceDocument> for Instance {
    type Error = String;

    fn try_from(document: InstanceDocument) -> Result<Self, Self::Error> {
        let InstanceDocument { name, kind, desired, phase, node, last_failure, disruption, rebooting } = document;
        let disruption = match (disruption, rebooting) {
            (Some(_), true) => {
                return Err(format!(
                    "instance {name}: give either `disruption` or the former `rebooting`, not both (`rebooting: \
                     true` means `disruption: {{kind: Reboot, state: Granted}}`)"
                ));
            }
            (None, true) => Some(RequestedDisruption { kind: DisruptionKind::Reboot, state: RequestState::Granted }),
            (disruption, false) => disruption,
        };
        Ok(Instance { name, kind, desired, phase, node, last_failure, disruption })
    }
}

fn default_desired() -> bool {
    true
}

/// The planner's spelling of an [`InstanceOrigin`] (`BYOH`, `Machine`: its label, as in the plan's human output),
/// for `#[serde(with)]`; the `WindowsInstance` record spells the same origin `Byoh`.
pub(crate) mod origin_label {
    use serde::{Deserialize, Deserializer, Serializer};
    use wmco_vocabulary::InstanceOrigin;

    const LABELS: [&str; 2] = ["BYOH", "Machine"];

    pub(crate) fn serialize<S: Serializer>(origin: &InstanceOrigin, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(origin.label())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<InstanceOrigin, D::Error> {
        let label = String::deserialize(deserializer)?;
        [InstanceOrigin::Byoh, InstanceOrigin::Machine]
            .into_iter()
            .find(|origin| origin.label() == label)
            .ok_or_else(|| serde::de::Error::unknown_variant(&label, &LABELS))
    }
}

/// What the instance's Node says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeState {
    /// The Node's `Ready` condition is `True`.
    pub ready: bool,
    /// Who cordoned the Node; absent while it is schedulable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cordoned_by: Option<CordonedBy>,
    /// The `windowsmachineconfig.openshift.io/version` annotation; absent until a configuration finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_version: Option<Version>,
    /// The `windowsmachineconfig.openshift.io/upgrading` mark, set by the operator before it disrupts the Node.
    #[serde(default)]
    pub upgrading: bool,
    /// The `windowsmachineconfig.openshift.io/pub-key-hash` annotation, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pub_key_hash: Option<String>,
}

/// Who made a Node unschedulable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CordonedBy {
    /// The operator, for an upgrade or a Machine replacement.
    Operator,
    /// Anyone else (an admin's maintenance); such a Node does not count against the operator's budget.
    Other,
}

/// The last failed attempt on an instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Failure {
    /// What failed, as recorded in the instance's status.
    pub message: String,
    /// The instant before which the instance must not be retried.
    pub retry_after: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_former_rebooting_flag_reads_as_a_granted_reboot() {
        let instance: Instance =
            serde_json::from_str(r#"{"name": "10.0.0.5", "kind": "BYOH", "rebooting": true}"#).expect("parses");
        assert_eq!(
            instance.disruption,
            Some(RequestedDisruption { kind: DisruptionKind::Reboot, state: RequestState::Granted })
        );
        assert!(instance.is_unavailable_by_operator());
        let written = serde_json::to_value(&instance).expect("serializes");
        assert_eq!(written["disruption"], serde_json::json!({"kind": "Reboot", "state": "Granted"}));
        assert!(written.get("rebooting").is_none());
    }

    #[test]
    fn a_requested_disruption_is_not_unavailable_and_both_spellings_together_are_refused() {
        let instance: Instance = serde_json::from_str(
            r#"{"name": "w", "kind": "Machine", "disruption": {"kind": "Restart", "state": "Requested"}}"#,
        )
        .expect("parses");
        assert_eq!(instance.disruption_requested(), Some(DisruptionKind::Restart));
        assert!(!instance.is_unavailable_by_operator());

        let error = serde_json::from_str::<Instance>(
            r#"{"name": "w", "kind": "BYOH", "rebooting": true, "disruption": {"kind": "Reboot", "state": "Granted"}}"#,
        )
        .expect_err("both spellings are refused");
        assert!(
            error.to_string().contains("instance w: give either `disruption` or the former `rebooting`"),
            "{error}"
        );
        let unknown = serde_json::from_str::<Instance>(r#"{"name": "w", "kind": "BYOH", "rebot": true}"#)
            .expect_err("unknown keys are refused");
        assert!(unknown.to_string().contains("rebot"), "{unknown}");
    }
}
