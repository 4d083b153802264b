//! What one instance needs from the fleet executor, before the budget is handed out: one [`Need`] per instance,
//! chosen by the per-instance precedence the crate documentation states, and what blocks it regardless of budget
//! (backoff, the kubelet skew rule).

use semver::Version;

use wmco_vocabulary::{DisruptionKind, InstanceOrigin, InstancePhase};

use crate::fleet::{CordonedBy, Fleet, Instance, NodeState};
use crate::plan::{Action, Reason, RekeyMethod, WaitReason};
use crate::policy::{Policy, Skew};

/// What an instance needs, before backoff, skew, budget and the key-check bound are considered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// Check the new key on a BYOH host (bounded by the key-check limit, not budgeted).
    ByohRekey,
    /// Replace a Machine configured with an old key (budgeted).
    MachineReplacement,
    /// Reconfigure to the operator's version, or finish doing so (budgeted).
    Upgrade { reason: Reason },
    /// Grant the requested restart or reboot, or let the granted one go on (budgeted).
    Disruption { kind: DisruptionKind, granted: bool },
    /// Nothing for the fleet executor: up to date, or the instances controller's (configuration, removal).
    Nothing { reason: Reason },
}

impl Need {
    /// Whether the work installs a kubelet (the skew rule holds it back).
    fn installs_kubelet(&self) -> bool {
        matches!(self, Need::Upgrade { .. } | Need::MachineReplacement)
    }

    /// Whether the work takes the instance out of service, so it needs a unit of budget unless already counted.
    pub(crate) fn is_budgeted(&self) -> bool {
        matches!(self, Need::MachineReplacement | Need::Upgrade { .. } | Need::Disruption { .. })
    }

    pub(crate) fn reason(&self) -> Reason {
        match self {
            Need::ByohRekey | Need::MachineReplacement => Reason::KeyRotated,
            Need::Upgrade { reason } | Need::Nothing { reason } => reason.clone(),
            Need::Disruption { kind, granted: true } => Reason::DisruptionInProgress { kind: *kind },
            Need::Disruption { kind, granted: false } => Reason::DisruptionRequested { kind: *kind },
        }
    }

    pub(crate) fn action(&self) -> Action {
        match self {
            Need::ByohRekey => Action::Rekey { method: RekeyMethod::VerifyByohKey },
            Need::MachineReplacement => Action::Rekey { method: RekeyMethod::ReplaceMachine },
            Need::Upgrade { .. } => Action::Upgrade,
            Need::Disruption { kind, .. } => Action::Disrupt { kind: *kind },
            Need::Nothing { .. } => Action::None,
        }
    }
}

/// The need of `instance`, first match wins: removal (the instances controller's), a granted disruption (goes
/// on; a granted restart on a Node at another version is its upgrade instead), first configuration (the instances controller's, unless a disruption is requested), then
/// [`need_of_configured`].
pub(crate) fn need_of(instance: &Instance, already_unavailable: bool, fleet: &Fleet, policy: &Policy) -> Need {
    if instance.phase == InstancePhase::Deconfiguring {
        return Need::Nothing { reason: Reason::DeconfigurationInProgress };
    }
    if !instance.desired {
        return Need::Nothing { reason: Reason::Removed };
    }
    let configured =
        instance.node.as_ref().and_then(|node| node.configured_version.as_ref().map(|configured| (node, configured)));
    if let Some(kind) = instance.disruption_granted() {
        // A restart granted on a Node at another version is carried out by its upgrade (cordon, drain first), never
        // in place: the pass would replace the binaries of a Node still in service.
        let outdated = configured.is_some_and(|(_, configured)| !policy.is_current(configured));
        if !(kind == DisruptionKind::Restart && outdated) {
            return Need::Disruption { kind, granted: true };
        }
    }
    let Some((node, configured)) = configured else {
        return match instance.disruption_requested() {
            Some(kind) => Need::Disruption { kind, granted: false },
            None => Need::Nothing { reason: configuration_reason(instance) },
        };
    };
    need_of_configured(instance, node, configured, already_unavailable, fleet, policy)
}

/// Why an instance without a configured Node needs nothing from the fleet executor.
fn configuration_reason(instance: &Instance) -> Reason {
    match instance.phase {
        InstancePhase::WaitingForNode if instance.node.is_none() => Reason::WaitingForNode,
        InstancePhase::Configuring | InstancePhase::WaitingForNode => Reason::ConfigurationInProgress,
        _ => Reason::NotConfigured,
    }
}

/// The need of a configured instance: a key rotation first, then an upgrade (which subsumes a requested restart;
/// a requested reboot is granted inside the upgrade's window once the instance is out of service), then a
/// requested disruption.
fn need_of_configured(
    instance: &Instance,
    node: &NodeState,
    configured: &Version,
    already_unavailable: bool,
    fleet: &Fleet,
    policy: &Policy,
) -> Need {
    if node.pub_key_hash.as_deref() != Some(fleet.current_pub_key_hash.as_str()) {
        return match instance.kind {
            InstanceOrigin::Byoh => Need::ByohRekey,
            InstanceOrigin::Machine => Need::MachineReplacement,
        };
    }
    let requested = instance.disruption_requested();
    if let Some(reason) = upgrade_reason(instance, node, configured, policy) {
        if requested == Some(DisruptionKind::Reboot) && already_unavailable {
            return Need::Disruption { kind: DisruptionKind::Reboot, granted: false };
        }
        return Need::Upgrade { reason };
    }
    if let Some(kind) = requested {
        return Need::Disruption { kind, granted: false };
    }
    if !node.ready {
        return Need::Nothing { reason: Reason::NodeNotReady };
    }
    Need::Nothing { reason: Reason::UpToDate }
}

/// Why a configured instance needs an upgrade (or its end), if it does: another version than the operator's, or
/// the operator's version with the Node still marked, cordoned by the operator or the record `Upgrading`.
fn upgrade_reason(instance: &Instance, node: &NodeState, configured: &Version, policy: &Policy) -> Option<Reason> {
    if !policy.is_current(configured) {
        return Some(Reason::VersionOutdated {
            configured: configured.clone(),
            target: policy.operator_version.clone(),
        });
    }
    let in_progress =
        node.upgrading || node.cordoned_by == Some(CordonedBy::Operator) || instance.phase == InstancePhase::Upgrading;
    in_progress.then_some(Reason::UpgradeInProgress)
}

/// What forbids starting the needed work now, regardless of budget and the key-check bound.
pub(crate) fn blocker_of(instance: &Instance, need: &Need, fleet: &Fleet, skew: Skew) -> Option<WaitReason> {
    if matches!(need, Need::Nothing { .. }) {
        return None;
    }
    if let Some(failure) = &instance.last_failure
        && fleet.now < failure.retry_after
    {
        return Some(WaitReason::Backoff { until: failure.retry_after, last_error: failure.message.clone() });
    }
    if let Skew::KubeletNewer { kubelet, api_server } = skew
        && need.installs_kubelet()
    {
        return Some(WaitReason::KubeletSkew { kubelet, api_server });
    }
    None
}
