//! The planner's view of the fleet: every BYOH host and Windows Machine the operator knows of, with the facts read
//! from its `WindowsInstance` record, its Node and the admin's inputs, at one instant.

use jiff::Timestamp;
use semver::Version;
use serde::{Deserialize, Serialize};
use wmco_vocabulary::{InstanceOrigin, InstancePhase};

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
}

/// One BYOH host or Windows Machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Instance {
    /// The instance's name: the BYOH address from `windows-instances`, or the Machine's name.
    pub name: String,
    /// Whether the instance is a BYOH host or a Machine.
    #[serde(with = "origin_label")]
    pub kind: InstanceOrigin,
    /// `true` while the admin still wants the instance: the BYOH entry is still listed, or the Machine still exists.
    #[serde(default = "default_desired")]
    pub desired: bool,
    /// The phase recorded in the instance's `WindowsInstance` status.
    #[serde(default)]
    pub phase: InstancePhase,
    /// The instance's Node, when one is registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeState>,
    /// The last failed attempt on this instance, when it has not succeeded since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<Failure>,
    /// The operator is rebooting the host (its record's `status.reboot` is under way): it counts against
    /// `max_unavailable`, with or without a Node.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rebooting: bool,
}

impl Instance {
    /// `true` when a desired instance is unavailable because of the operator: marked upgrading, in the `Upgrading`
    /// phase, rebooting, cordoned by the operator, or configured but not Ready. These count against
    /// `max_unavailable`.
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
    ///     rebooting: false,
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
        node_disrupted || self.rebooting || self.phase == InstancePhase::Upgrading
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
