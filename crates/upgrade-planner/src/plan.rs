//! The planner's output: one decision per instance (an action and why), warnings about the policy or the fleet,
//! and a summary, each with a human rendering for the CLI and for Events.

use std::fmt;

use jiff::Timestamp;
use semver::Version;
use serde::{Deserialize, Serialize};

use wmco_vocabulary::InstanceOrigin;

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

/// What the operator should do to an instance now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Action {
    /// Configure the host for the first time (or continue doing so). Bounded by the concurrency limit.
    Configure,
    /// Cordon, drain and reconfigure the host to the operator's version (or continue doing so). Counted in the budget.
    Upgrade,
    /// Move the instance to the current SSH key.
    Rekey {
        /// How, which depends on the instance's kind.
        method: RekeyMethod,
    },
    /// Remove the host from the cluster (or continue doing so). Bounded by the concurrency limit.
    Deconfigure,
    /// Work is needed but must not start yet.
    Wait {
        /// What blocks it.
        reason: WaitReason,
    },
    /// Nothing to do.
    None,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Configure => f.write_str("configure"),
            Action::Upgrade => f.write_str("upgrade"),
            Action::Rekey { method } => write!(f, "rekey ({method})"),
            Action::Deconfigure => f.write_str("deconfigure"),
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
    /// No Node, or a Node without a version annotation: the first configuration has not finished.
    NotConfigured,
    /// A first configuration is under way.
    ConfigurationInProgress,
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
    /// The admin removed the instance (BYOH entry no longer listed, or Machine gone).
    Removed,
    /// A deconfiguration is under way.
    DeconfigurationInProgress,
    /// Configured at the operator's version with the current key, Ready.
    UpToDate,
    /// Configured at the operator's version with the current key, but the Node is not Ready.
    NodeNotReady,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NotConfigured => f.write_str("not configured yet"),
            Reason::ConfigurationInProgress => f.write_str("configuration in progress"),
            Reason::VersionOutdated { configured, target } => {
                write!(f, "configured at {configured}, operator is {target}")
            }
            Reason::UpgradeInProgress => f.write_str("upgrade in progress (node still marked or cordoned)"),
            Reason::KeyRotated => f.write_str("configured with a previous SSH key"),
            Reason::Removed => f.write_str("removed by the admin"),
            Reason::DeconfigurationInProgress => f.write_str("deconfiguration in progress"),
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
    /// The kubelet runs; its Node has not registered yet.
    NodeRegistration,
    /// The payload's kubelet minor is newer than the API server's, so it must not be installed.
    KubeletSkew {
        /// The payload's kubelet.
        kubelet: MinorVersion,
        /// The API server.
        api_server: MinorVersion,
    },
    /// As many instances as allowed are already unavailable because of the operator.
    Budget {
        /// Instances unavailable because of the operator, including the ones this plan disrupts.
        unavailable: u32,
        /// The policy's limit.
        max_unavailable: u32,
    },
    /// As many configurations and deconfigurations as allowed are running.
    Concurrency {
        /// Running, including the ones this plan starts.
        running: u32,
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
            WaitReason::NodeRegistration => f.write_str("waiting for the Node to register"),
            WaitReason::KubeletSkew { kubelet, api_server } => {
                write!(f, "kubelet {kubelet} must not run against API server {api_server}")
            }
            WaitReason::Budget { unavailable, max_unavailable } => {
                write!(f, "budget exhausted: {unavailable} of at most {max_unavailable} unavailable")
            }
            WaitReason::Concurrency { running, max } => {
                write!(f, "concurrency limit: {running} of at most {max} running")
            }
        }
    }
}

/// A problem worth an admin's attention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum Warning {
    /// The skew rule fails: no configuration, upgrade or Machine replacement is planned.
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
    /// The budget is 0, so upgrades and Machine replacements wait.
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
                "the payload's kubelet {kubelet} is newer than the API server {api_server}: no configuration, \
                 upgrade or Machine replacement is planned; upgrade the control plane first"
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
            Warning::UpgradesPaused => f.write_str("maxUnavailable is 0: upgrades and Machine replacements are paused"),
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
    /// Decisions to configure.
    pub configure: u32,
    /// Decisions to upgrade.
    pub upgrade: u32,
    /// Decisions to rekey.
    pub rekey: u32,
    /// Decisions to deconfigure.
    pub deconfigure: u32,
    /// Decisions to wait.
    pub wait: u32,
    /// Decisions to do nothing.
    pub none: u32,
    /// Instances unavailable because of the operator before the plan.
    pub unavailable_before: u32,
    /// Instances unavailable because of the operator once the plan is carried out.
    pub unavailable_after: u32,
    /// The policy's budget.
    pub max_unavailable: u32,
    /// Configurations, deconfigurations and BYOH key checks running once the plan is carried out.
    pub concurrent_configurations: u32,
    /// The policy's concurrency bound.
    pub max_concurrent_configurations: u32,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} instances: {} configure, {} upgrade, {} rekey, {} deconfigure, {} wait, {} none; unavailable \
             because of the operator: {} now, {} after this plan (max {}); configurations running: {} (max {})",
            self.instances,
            self.configure,
            self.upgrade,
            self.rekey,
            self.deconfigure,
            self.wait,
            self.none,
            self.unavailable_before,
            self.unavailable_after,
            self.max_unavailable,
            self.concurrent_configurations,
            self.max_concurrent_configurations,
        )
    }
}
