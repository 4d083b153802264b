//! The planner's output: one decision per instance (an action the fleet executor carries out, and why), warnings
//! about the policy or the fleet, and a summary, each with a human rendering for the CLI and for Events.

use std::fmt;

use jiff::Timestamp;
use semver::Version;
use serde::{Deserialize, Serialize};

use wmco_vocabulary::{DisruptionKind, InstanceOrigin};

use crate::fleet::origin_label;
use crate::policy::MinorVersion;

/// What to do to every instance of a fleet, in the order the work should start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// One decision per instance, ordered oldest configured version first (unconfigured first of all), then name.
    pub decisions: Vec<Decision>,
    /// Problems of the policy or the fleet worth an admin's attention.
    pub warnings: Vec<Warning>,
    /// Counts of the plan.
    pub summary: Summary,
}

impl Plan {
    /// The decision for the instance called `name` (the first, should a BYOH host and a Machine share a name).
    pub fn decision(&self, name: &str) -> Option<&Decision> {
        self.decisions.iter().find(|decision| decision.name == name)
    }
}

/// The planner's decision for one instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The instance's name.
    pub name: String,
    /// BYOH host or Machine.
    #[serde(with = "origin_label")]
    pub kind: InstanceOrigin,
    /// The version its Node is configured at, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_version: Option<Version>,
    /// What to do now.
    pub action: Action,
    /// Why the instance needs this (or, for `Wait`, what it needs once unblocked).
    pub reason: Reason,
    /// `true` when the instance counts against the unavailability budget once this plan is carried out.
    pub unavailable: bool,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {} — {}", self.name, self.kind, self.action, self.reason)
    }
}

/// What the fleet executor should do to an instance now. First-time configuration and removal are the instances
/// controller's, outside the budget: such an instance gets [`Action::None`] with a [`Reason`] saying so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Action {
    /// Cordon, drain and reconfigure the host to the operator's version (or continue doing so). Counted in the budget.
    Upgrade,
    /// Move the instance to the current SSH key.
    Rekey {
        /// How, which depends on the instance's kind.
        method: RekeyMethod,
    },
    /// Grant the restart or reboot the instance's record asks for (or let the one under way go on). Counted in the
    /// budget.
    Disrupt {
        /// What the disruption does to the host.
        kind: DisruptionKind,
    },
    /// Work is needed but must not start yet.
    Wait {
        /// What blocks it.
        reason: WaitReason,
    },
    /// Nothing for the fleet executor to do.
    None,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Upgrade => f.write_str("upgrade"),
            Action::Rekey { method } => write!(f, "rekey ({method})"),
            Action::Disrupt { kind: DisruptionKind::Restart } => f.write_str("restart (services, no drain)"),
            Action::Disrupt { kind: DisruptionKind::Reboot } => f.write_str("reboot (drained first)"),
            Action::Wait { reason } => write!(f, "wait ({reason})"),
            Action::None => f.write_str("none"),
        }
    }
}

/// How an instance moves to a new SSH key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RekeyMethod {
    /// Delete the Machine so its MachineSet recreates it with the new user data. Counted in the budget.
    ReplaceMachine,
    /// Check that SSH works with the new key and update the Node's `pub-key-hash`; no drain, not counted.
    VerifyByohKey,
}

impl fmt::Display for RekeyMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RekeyMethod::ReplaceMachine => "delete the Machine so its MachineSet recreates it",
            RekeyMethod::VerifyByohKey => "check SSH with the new key, then update pub-key-hash",
        })
    }
}

/// Why an instance needs attention, or why it needs none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Reason {
    /// No Node, or a Node without a version annotation: the instances controller has not begun its first
    /// configuration.
    NotConfigured,
    /// The instances controller's first configuration is under way.
    ConfigurationInProgress,
    /// The first configuration started the kubelet; its Node has not registered yet.
    WaitingForNode,
    /// The Node is configured at another version than the operator's.
    VersionOutdated {
        /// The Node's version annotation.
        configured: Version,
        /// The operator's version.
        target: Version,
    },
    /// The Node is at the operator's version but still marked upgrading or cordoned by the operator.
    UpgradeInProgress,
    /// The Node's `pub-key-hash` is not the current key's.
    KeyRotated,
    /// The instance's record asks for a restart or reboot that has not been granted yet.
    DisruptionRequested {
        /// What was asked for.
        kind: DisruptionKind,
    },
    /// A granted restart or reboot is under way.
    DisruptionInProgress {
        /// What is under way.
        kind: DisruptionKind,
    },
    /// The admin removed the instance (BYOH entry no longer listed, or Machine gone); the instances controller
    /// deconfigures it.
    Removed,
    /// The instances controller's deconfiguration is under way.
    DeconfigurationInProgress,
    /// Configured at the operator's version with the current key, Ready.
    UpToDate,
    /// Configured at the operator's version with the current key, but the Node is not Ready.
    NodeNotReady,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NotConfigured => f.write_str("not configured yet (the instances controller configures it)"),
            Reason::ConfigurationInProgress => f.write_str("configuration in progress (instances controller)"),
            Reason::WaitingForNode => f.write_str("configured, waiting for the Node to register"),
            Reason::VersionOutdated { configured, target } => {
                write!(f, "configured at {configured}, operator is {target}")
            }
            Reason::UpgradeInProgress => f.write_str("upgrade in progress (node still marked or cordoned)"),
            Reason::KeyRotated => f.write_str("configured with a previous SSH key"),
            Reason::DisruptionRequested { kind: DisruptionKind::Restart } => {
                f.write_str("restart requested for changed cluster settings or files")
            }
            Reason::DisruptionRequested { kind: DisruptionKind::Reboot } => f.write_str("reboot requested"),
            Reason::DisruptionInProgress { kind: DisruptionKind::Restart } => f.write_str("restart in progress"),
            Reason::DisruptionInProgress { kind: DisruptionKind::Reboot } => f.write_str("reboot in progress"),
            Reason::Removed => f.write_str("removed by the admin (the instances controller deconfigures it)"),
            Reason::DeconfigurationInProgress => f.write_str("deconfiguration in progress (instances controller)"),
            Reason::UpToDate => f.write_str("up to date"),
            Reason::NodeNotReady => f.write_str("up to date but the node is not Ready"),
        }
    }
}

/// What keeps needed work from starting now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum WaitReason {
    /// The last attempt failed; the instance is not retried before `until`.
    Backoff {
        /// The retry-after instant.
        until: Timestamp,
        /// The recorded failure.
        last_error: String,
    },
    /// The payload's kubelet minor is newer than the API server's, so it must not be installed.
    KubeletSkew {
        /// The payload's kubelet.
        kubelet: MinorVersion,
        /// The API server.
        api_server: MinorVersion,
    },
    /// As many instances as allowed are already unavailable because of the operator.
    Budget {
        /// Instances unavailable because of the operator (Machines away included), including the ones this plan
        /// disrupts.
        unavailable: u32,
        /// The policy's limit.
        max_unavailable: u32,
    },
    /// As many BYOH key checks as allowed are already planned.
    KeyCheckLimit {
        /// Key checks this plan starts.
        planned: u32,
        /// The policy's limit.
        max: u32,
    },
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitReason::Backoff { until, last_error } => {
                write!(f, "backing off until {until} after: {last_error}")
            }
            WaitReason::KubeletSkew { kubelet, api_server } => {
                write!(f, "kubelet {kubelet} must not run against API server {api_server}")
            }
            WaitReason::Budget { unavailable, max_unavailable } => {
                write!(f, "budget exhausted: {unavailable} of at most {max_unavailable} unavailable")
            }
            WaitReason::KeyCheckLimit { planned, max } => {
                write!(f, "key-check limit: {planned} of at most {max} planned")
            }
        }
    }
}

/// A problem worth an admin's attention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum Warning {
    /// The skew rule fails: no upgrade or Machine replacement is planned.
    KubeletNewerThanApiServer {
        /// The payload's kubelet.
        kubelet: MinorVersion,
        /// The API server.
        api_server: MinorVersion,
    },
    /// The kubelet trails the API server by more than three minors (or a major).
    KubeletFarBehind {
        /// The payload's kubelet.
        kubelet: MinorVersion,
        /// The API server.
        api_server: MinorVersion,
        /// How many minors behind, when the majors are equal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        minors_behind: Option<u64>,
    },
    /// More instances are already unavailable than the budget allows; nothing more is disrupted.
    OverBudget {
        /// Instances unavailable because of the operator before this plan.
        unavailable: u32,
        /// The policy's limit.
        max_unavailable: u32,
    },
    /// The budget is 0, so upgrades, Machine replacements, restarts and reboots wait.
    UpgradesPaused,
    /// A Node is configured at a newer version than the operator's; it is reconfigured to the operator's version.
    NodeNewerThanOperator {
        /// The instance.
        instance: String,
        /// Its version annotation.
        configured: Version,
        /// The operator's version.
        operator: Version,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::KubeletNewerThanApiServer { kubelet, api_server } => write!(
                f,
                "the payload's kubelet {kubelet} is newer than the API server {api_server}: no upgrade or Machine \
                 replacement is planned; upgrade the control plane first"
            ),
            Warning::KubeletFarBehind { kubelet, api_server, minors_behind: Some(behind) } => write!(
                f,
                "the payload's kubelet {kubelet} is {behind} minor versions behind the API server {api_server} \
                 (more than 3): upgrade the operator"
            ),
            Warning::KubeletFarBehind { kubelet, api_server, minors_behind: None } => write!(
                f,
                "the payload's kubelet {kubelet} is a major version behind the API server {api_server}: upgrade \
                 the operator"
            ),
            Warning::OverBudget { unavailable, max_unavailable } => write!(
                f,
                "{unavailable} instances are already unavailable, more than the budget of {max_unavailable}: \
                 nothing more is disrupted until some recover"
            ),
            Warning::UpgradesPaused => {
                f.write_str("maxUnavailable is 0: upgrades, Machine replacements, restarts and reboots are paused")
            }
            Warning::NodeNewerThanOperator { instance, configured, operator } => write!(
                f,
                "{instance} is configured at {configured}, newer than the operator's {operator}: it will be \
                 reconfigured to {operator}"
            ),
        }
    }
}

/// Counts of a plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Instances in the fleet.
    pub instances: u32,
    /// Decisions to upgrade.
    pub upgrade: u32,
    /// Decisions to rekey.
    pub rekey: u32,
    /// Decisions to restart or reboot.
    pub disrupt: u32,
    /// Decisions to wait.
    pub wait: u32,
    /// Decisions to do nothing.
    pub none: u32,
    /// Windows Machines away for a replacement (counted in `unavailable_before` and `unavailable_after`).
    pub machines_away: u32,
    /// Instances unavailable because of the operator before the plan, and Machines away.
    pub unavailable_before: u32,
    /// Instances unavailable because of the operator once the plan is carried out, and Machines away.
    pub unavailable_after: u32,
    /// The policy's budget.
    pub max_unavailable: u32,
    /// BYOH key checks the plan starts.
    pub key_checks: u32,
    /// The policy's bound on them.
    pub max_concurrent_key_checks: u32,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} instances: {} upgrade, {} rekey, {} restart or reboot, {} wait, {} none; unavailable because of the \
             operator: {} now ({} Machines away), {} after this plan (max {}); key checks: {} (max {})",
            self.instances,
            self.upgrade,
            self.rekey,
            self.disrupt,
            self.wait,
            self.none,
            self.unavailable_before,
            self.machines_away,
            self.unavailable_after,
            self.max_unavailable,
            self.key_checks,
            self.max_concurrent_key_checks,
        )
    }
}
