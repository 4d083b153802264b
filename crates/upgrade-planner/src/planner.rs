//! The decision itself: classify what each instance needs, block what backoff or the skew rule forbids, then hand
//! out the unavailability budget and the concurrency slots in a deterministic order.

use std::cmp::Ordering;

use semver::Version;

use wmco_vocabulary::{InstanceOrigin, InstancePhase};

use crate::fleet::{CordonedBy, Fleet, Instance, NodeState};
use crate::plan::{Action, Decision, Plan, Reason, RekeyMethod, Summary, WaitReason, Warning};
use crate::policy::{Policy, Skew};

/// Decides what to do to every instance of `fleet` under `policy`. Pure and deterministic: the same inputs, in any
/// instance order, give the same plan.
///
/// ```
/// use jiff::Timestamp;
/// use semver::Version;
/// use wmco_upgrade_planner::{plan, Action, Fleet, Instance, InstanceOrigin, NodeState, InstancePhase, Policy};
///
/// let node_at = |version: Version| NodeState {
///     ready: true,
///     cordoned_by: None,
///     configured_version: Some(version),
///     upgrading: false,
///     pub_key_hash: Some("k1".into()),
/// };
/// let instance = |name: &str, version: Version| Instance {
///     name: name.into(),
///     kind: InstanceOrigin::Byoh,
///     desired: true,
///     phase: InstancePhase::Ready,
///     node: Some(node_at(version)),
///     last_failure: None,
///     rebooting: false,
/// };
/// let fleet = Fleet {
///     now: Timestamp::UNIX_EPOCH,
///     current_pub_key_hash: "k1".into(),
///     instances: vec![instance("b", Version::new(0, 9, 0)), instance("a", Version::new(0, 9, 0))],
/// };
/// let policy = Policy::new(Version::new(1, 0, 0), Version::new(1, 33, 0), Version::new(1, 33, 0));
///
/// let plan = plan(&fleet, &policy);
/// // Budget 1: "a" goes first (same version, name order), "b" waits.
/// assert_eq!(plan.decisions[0].name, "a");
/// assert_eq!(plan.decisions[0].action, Action::Upgrade);
/// assert!(matches!(plan.decisions[1].action, Action::Wait { .. }));
/// ```
pub fn plan(fleet: &Fleet, policy: &Policy) -> Plan {
    let skew = policy.kubelet_skew();
    let mut instances: Vec<&Instance> = fleet.instances.iter().collect();
    instances.sort_by(|left, right| planning_order(left, right));

    let assessed: Vec<Assessed<'_>> = instances
        .into_iter()
        .map(|instance| {
            let need = need_of(instance, fleet, policy);
            let blocker = blocker_of(instance, &need, fleet, skew);
            Assessed { instance, already_unavailable: instance.is_unavailable_by_operator(), need, blocker }
        })
        .collect();

    let unavailable_before = count(assessed.iter().filter(|item| item.already_unavailable));
    let running_before =
        count(assessed.iter().filter(|item| item.need.continues_concurrent_work() && item.blocker.is_none()));
    let mut allocation = Allocation {
        unavailable: unavailable_before,
        max_unavailable: policy.max_unavailable,
        running: running_before,
        max_running: policy.max_concurrent_configurations,
    };
    let decisions: Vec<Decision> = assessed.into_iter().map(|item| allocation.decide(item)).collect();

    let warnings = warnings_of(&decisions, fleet, policy, skew, unavailable_before);
    let summary = summarize(&decisions, policy, unavailable_before, allocation.running);
    Plan { decisions, warnings, summary }
}

/// Oldest configured version first (unconfigured before any version), then name, then kind; the build metadata
/// only breaks remaining ties so the order is total.
fn planning_order(left: &Instance, right: &Instance) -> Ordering {
    let left_version = configured_version(left);
    let right_version = configured_version(right);
    compare_versions(left_version, right_version)
        .then_with(|| left.name.cmp(&right.name))
        .then_with(|| left.kind.cmp(&right.kind))
        .then_with(|| left_version.cmp(&right_version))
}

fn compare_versions(left: Option<&Version>, right: Option<&Version>) -> Ordering {
    match (left, right) {
        (Some(left), Some(right)) => left.cmp_precedence(right),
        (left, right) => left.is_some().cmp(&right.is_some()),
    }
}

fn configured_version(instance: &Instance) -> Option<&Version> {
    instance.node.as_ref().and_then(|node| node.configured_version.as_ref())
}

/// What an instance needs, before backoff, skew, budget and concurrency are considered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Need {
    /// Deconfigure a removed instance (concurrency-bounded).
    Removal { in_progress: bool },
    /// Configure for the first time (concurrency-bounded).
    FirstConfiguration { in_progress: bool },
    /// Configuration is waiting for the Node to register.
    NodeRegistration,
    /// Check the new key on a BYOH host (concurrency-bounded).
    ByohRekey,
    /// Replace a Machine configured with an old key (budgeted).
    MachineReplacement,
    /// Reconfigure to the operator's version (budgeted).
    Upgrade { reason: Reason },
    /// Nothing to do.
    Nothing { reason: Reason },
}

impl Need {
    fn installs_kubelet(&self) -> bool {
        matches!(self, Need::FirstConfiguration { .. } | Need::Upgrade { .. } | Need::MachineReplacement)
    }

    fn is_concurrent_work(&self) -> bool {
        matches!(self, Need::Removal { .. } | Need::FirstConfiguration { .. } | Need::ByohRekey)
    }

    fn continues_concurrent_work(&self) -> bool {
        matches!(self, Need::Removal { in_progress: true } | Need::FirstConfiguration { in_progress: true })
    }

    fn is_budgeted(&self) -> bool {
        matches!(self, Need::MachineReplacement | Need::Upgrade { .. })
    }

    fn reason(&self) -> Reason {
        match self {
            Need::Removal { in_progress: true } => Reason::DeconfigurationInProgress,
            Need::Removal { in_progress: false } => Reason::Removed,
            Need::FirstConfiguration { in_progress: true } | Need::NodeRegistration => Reason::ConfigurationInProgress,
            Need::FirstConfiguration { in_progress: false } => Reason::NotConfigured,
            Need::ByohRekey | Need::MachineReplacement => Reason::KeyRotated,
            Need::Upgrade { reason } | Need::Nothing { reason } => reason.clone(),
        }
    }

    fn action(&self) -> Action {
        match self {
            Need::Removal { .. } => Action::Deconfigure,
            Need::FirstConfiguration { .. } => Action::Configure,
            Need::NodeRegistration => Action::Wait { reason: WaitReason::NodeRegistration },
            Need::ByohRekey => Action::Rekey { method: RekeyMethod::VerifyByohKey },
            Need::MachineReplacement => Action::Rekey { method: RekeyMethod::ReplaceMachine },
            Need::Upgrade { .. } => Action::Upgrade,
            Need::Nothing { .. } => Action::None,
        }
    }
}

fn need_of(instance: &Instance, fleet: &Fleet, policy: &Policy) -> Need {
    if instance.phase == InstancePhase::Deconfiguring {
        return Need::Removal { in_progress: true };
    }
    if !instance.desired {
        return Need::Removal { in_progress: false };
    }
    let configuring = matches!(instance.phase, InstancePhase::Configuring | InstancePhase::WaitingForNode);
    let Some(node) = &instance.node else {
        return if instance.phase == InstancePhase::WaitingForNode {
            Need::NodeRegistration
        } else {
            Need::FirstConfiguration { in_progress: configuring }
        };
    };
    let Some(configured) = &node.configured_version else {
        return Need::FirstConfiguration { in_progress: configuring };
    };
    need_of_configured(instance, node, configured, fleet, policy)
}

fn need_of_configured(
    instance: &Instance,
    node: &NodeState,
    configured: &Version,
    fleet: &Fleet,
    policy: &Policy,
) -> Need {
    if node.pub_key_hash.as_deref() != Some(fleet.current_pub_key_hash.as_str()) {
        return match instance.kind {
            InstanceOrigin::Byoh => Need::ByohRekey,
            InstanceOrigin::Machine => Need::MachineReplacement,
        };
    }
    if !policy.is_current(configured) {
        let reason =
            Reason::VersionOutdated { configured: configured.clone(), target: policy.operator_version.clone() };
        return Need::Upgrade { reason };
    }
    if node.upgrading || node.cordoned_by == Some(CordonedBy::Operator) || instance.phase == InstancePhase::Upgrading {
        return Need::Upgrade { reason: Reason::UpgradeInProgress };
    }
    if !node.ready {
        return Need::Nothing { reason: Reason::NodeNotReady };
    }
    Need::Nothing { reason: Reason::UpToDate }
}

/// What forbids starting the needed work now, regardless of budget and concurrency.
fn blocker_of(instance: &Instance, need: &Need, fleet: &Fleet, skew: Skew) -> Option<WaitReason> {
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

struct Assessed<'fleet> {
    instance: &'fleet Instance,
    already_unavailable: bool,
    need: Need,
    blocker: Option<WaitReason>,
}

/// The budget and the concurrency slots, handed out in planning order.
struct Allocation {
    unavailable: u32,
    max_unavailable: u32,
    running: u32,
    max_running: u32,
}

impl Allocation {
    fn decide(&mut self, item: Assessed<'_>) -> Decision {
        let Assessed { instance, already_unavailable, need, blocker } = item;
        let action = match blocker {
            Some(reason) => Action::Wait { reason },
            None => self.admit(&need, already_unavailable).unwrap_or_else(|| need.action()),
        };
        let disrupts = need.is_budgeted() && matches!(action, Action::Upgrade | Action::Rekey { .. });
        Decision {
            name: instance.name.clone(),
            kind: instance.kind,
            configured_version: configured_version(instance).cloned(),
            action,
            reason: need.reason(),
            unavailable: already_unavailable || disrupts,
        }
    }

    /// Takes a budget unit or a concurrency slot for `need` when it needs one; returns the wait when none is left.
    fn admit(&mut self, need: &Need, already_unavailable: bool) -> Option<Action> {
        if need.is_budgeted() && !already_unavailable {
            if self.unavailable >= self.max_unavailable {
                let reason =
                    WaitReason::Budget { unavailable: self.unavailable, max_unavailable: self.max_unavailable };
                return Some(Action::Wait { reason });
            }
            self.unavailable += 1;
        }
        if need.is_concurrent_work() && !need.continues_concurrent_work() {
            if self.running >= self.max_running {
                return Some(Action::Wait {
                    reason: WaitReason::Concurrency { running: self.running, max: self.max_running },
                });
            }
            self.running += 1;
        }
        None
    }
}

fn warnings_of(
    decisions: &[Decision],
    fleet: &Fleet,
    policy: &Policy,
    skew: Skew,
    unavailable_before: u32,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    match skew {
        Skew::Supported => {}
        Skew::KubeletNewer { kubelet, api_server } => {
            warnings.push(Warning::KubeletNewerThanApiServer { kubelet, api_server });
        }
        Skew::KubeletFarBehind { kubelet, api_server, minors_behind } => {
            warnings.push(Warning::KubeletFarBehind { kubelet, api_server, minors_behind });
        }
    }
    if unavailable_before > policy.max_unavailable {
        warnings.push(Warning::OverBudget { unavailable: unavailable_before, max_unavailable: policy.max_unavailable });
    }
    let budget_blocks =
        decisions.iter().any(|decision| matches!(decision.action, Action::Wait { reason: WaitReason::Budget { .. } }));
    if policy.max_unavailable == 0 && budget_blocks {
        warnings.push(Warning::UpgradesPaused);
    }
    let mut newer: Vec<&Instance> = fleet
        .instances
        .iter()
        .filter(|instance| {
            configured_version(instance)
                .is_some_and(|configured| configured.cmp_precedence(&policy.operator_version) == Ordering::Greater)
        })
        .collect();
    newer.sort_by(|left, right| planning_order(left, right));
    warnings.extend(newer.into_iter().filter_map(|instance| {
        configured_version(instance).map(|configured| Warning::NodeNewerThanOperator {
            instance: instance.name.clone(),
            configured: configured.clone(),
            operator: policy.operator_version.clone(),
        })
    }));
    warnings
}

fn summarize(decisions: &[Decision], policy: &Policy, unavailable_before: u32, running: u32) -> Summary {
    let mut summary = Summary {
        instances: count(decisions.iter()),
        unavailable_before,
        unavailable_after: count(decisions.iter().filter(|decision| decision.unavailable)),
        max_unavailable: policy.max_unavailable,
        concurrent_configurations: running,
        max_concurrent_configurations: policy.max_concurrent_configurations,
        ..Summary::default()
    };
    for decision in decisions {
        let counter = match decision.action {
            Action::Configure => &mut summary.configure,
            Action::Upgrade => &mut summary.upgrade,
            Action::Rekey { .. } => &mut summary.rekey,
            Action::Deconfigure => &mut summary.deconfigure,
            Action::Wait { .. } => &mut summary.wait,
            Action::None => &mut summary.none,
        };
        *counter += 1;
    }
    summary
}

/// Counts items, saturating at `u32::MAX` (a fleet is far smaller).
fn count<T>(items: impl Iterator<Item = T>) -> u32 {
    u32::try_from(items.count()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::*;
    use crate::fleet::Failure;
    use crate::policy::MinorVersion;

    const KEY: &str = "current-key";

    fn version(text: &str) -> Version {
        Version::parse(text).expect("test version parses")
    }

    fn at(text: &str) -> Timestamp {
        text.parse().expect("test timestamp parses")
    }

    fn policy() -> Policy {
        Policy::new(version("1.0.0"), version("1.33.2"), version("1.33.1"))
    }

    fn fleet(instances: Vec<Instance>) -> Fleet {
        Fleet { now: at("2026-11-22T01:00:00Z"), current_pub_key_hash: KEY.into(), instances }
    }

    fn configured(name: &str, kind: InstanceOrigin, at_version: &str) -> Instance {
        Instance {
            name: name.into(),
            kind,
            desired: true,
            phase: InstancePhase::Ready,
            node: Some(NodeState {
                ready: true,
                cordoned_by: None,
                configured_version: Some(version(at_version)),
                upgrading: false,
                pub_key_hash: Some(KEY.into()),
            }),
            last_failure: None,
            rebooting: false,
        }
    }

    fn new_host(name: &str, kind: InstanceOrigin) -> Instance {
        Instance {
            name: name.into(),
            kind,
            desired: true,
            phase: InstancePhase::Pending,
            node: None,
            last_failure: None,
            rebooting: false,
        }
    }

    fn node_mut(instance: &mut Instance) -> &mut NodeState {
        instance.node.as_mut().expect("test instance has a node")
    }

    fn actions(plan: &Plan) -> Vec<(&str, Action)> {
        plan.decisions.iter().map(|decision| (decision.name.as_str(), decision.action.clone())).collect()
    }

    fn budget_wait(unavailable: u32, max_unavailable: u32) -> Action {
        Action::Wait { reason: WaitReason::Budget { unavailable, max_unavailable } }
    }

    #[test]
    fn mixed_fleet_gets_exact_plan() {
        let mut removed = configured("gone", InstanceOrigin::Byoh, "1.0.0");
        removed.desired = false;
        let mut rotated = configured("m-rotated", InstanceOrigin::Machine, "1.0.0");
        node_mut(&mut rotated).pub_key_hash = Some("old-key".into());
        let mut byoh_rotated = configured("b-rotated", InstanceOrigin::Byoh, "1.0.0");
        node_mut(&mut byoh_rotated).pub_key_hash = None;
        let fleet = fleet(vec![
            configured("m-current", InstanceOrigin::Machine, "1.0.0"),
            configured("b-old", InstanceOrigin::Byoh, "0.8.0"),
            rotated,
            configured("a-old", InstanceOrigin::Machine, "0.9.0"),
            new_host("new", InstanceOrigin::Byoh),
            removed,
            byoh_rotated,
        ]);

        let plan = plan(&fleet, &policy());

        assert_eq!(
            actions(&plan),
            vec![
                ("new", Action::Configure),
                ("b-old", Action::Upgrade),
                ("a-old", budget_wait(1, 1)),
                ("b-rotated", Action::Rekey { method: RekeyMethod::VerifyByohKey }),
                ("gone", Action::Deconfigure),
                ("m-current", Action::None),
                ("m-rotated", budget_wait(1, 1)),
            ]
        );
        let reasons: Vec<Reason> = plan.decisions.iter().map(|decision| decision.reason.clone()).collect();
        assert_eq!(
            reasons,
            vec![
                Reason::NotConfigured,
                Reason::VersionOutdated { configured: version("0.8.0"), target: version("1.0.0") },
                Reason::VersionOutdated { configured: version("0.9.0"), target: version("1.0.0") },
                Reason::KeyRotated,
                Reason::Removed,
                Reason::UpToDate,
                Reason::KeyRotated,
            ]
        );
        let unavailable: Vec<&str> = plan
            .decisions
            .iter()
            .filter(|decision| decision.unavailable)
            .map(|decision| decision.name.as_str())
            .collect();
        assert_eq!(unavailable, vec!["b-old"]);
        assert_eq!(plan.warnings, vec![]);
        assert_eq!(
            plan.summary,
            Summary {
                instances: 7,
                configure: 1,
                upgrade: 1,
                rekey: 1,
                deconfigure: 1,
                wait: 2,
                none: 1,
                unavailable_before: 0,
                unavailable_after: 1,
                max_unavailable: 1,
                concurrent_configurations: 3,
                max_concurrent_configurations: 8,
            }
        );
    }

    #[test]
    fn already_unavailable_nodes_use_the_budget_first() {
        let mut not_ready = configured("c-current-not-ready", InstanceOrigin::Machine, "1.0.0");
        node_mut(&mut not_ready).ready = false;
        let fleet = fleet(vec![
            not_ready,
            configured("a-old", InstanceOrigin::Byoh, "0.9.0"),
            configured("b-old", InstanceOrigin::Machine, "0.9.0"),
        ]);
        let mut policy = policy();
        policy.max_unavailable = 2;

        let plan = plan(&fleet, &policy);

        assert_eq!(
            actions(&plan),
            vec![("a-old", Action::Upgrade), ("b-old", budget_wait(2, 2)), ("c-current-not-ready", Action::None)]
        );
        assert_eq!(plan.decision("c-current-not-ready").map(|d| d.reason.clone()), Some(Reason::NodeNotReady));
        assert_eq!((plan.summary.unavailable_before, plan.summary.unavailable_after), (1, 2));
    }

    #[test]
    fn an_unavailable_outdated_node_is_upgraded_without_taking_more_budget() {
        let mut broken = configured("b-broken", InstanceOrigin::Byoh, "0.9.0");
        node_mut(&mut broken).ready = false;
        let fleet = fleet(vec![configured("a-old", InstanceOrigin::Byoh, "0.9.0"), broken]);

        let plan = plan(&fleet, &policy());

        assert_eq!(actions(&plan), vec![("a-old", budget_wait(1, 1)), ("b-broken", Action::Upgrade)]);
        assert_eq!(plan.summary.unavailable_after, 1);
    }

    #[test]
    fn an_upgrade_in_progress_continues_and_blocks_new_ones() {
        let mut upgrading = configured("z-upgrading", InstanceOrigin::Machine, "0.9.0");
        node_mut(&mut upgrading).upgrading = true;
        node_mut(&mut upgrading).cordoned_by = Some(CordonedBy::Operator);
        let fleet = fleet(vec![configured("a-old", InstanceOrigin::Byoh, "0.9.0"), upgrading]);

        let plan = plan(&fleet, &policy());

        assert_eq!(actions(&plan), vec![("a-old", budget_wait(1, 1)), ("z-upgrading", Action::Upgrade)]);
    }

    #[test]
    fn a_finished_upgrade_still_marked_is_finished() {
        let mut marked = configured("m", InstanceOrigin::Byoh, "1.0.0");
        node_mut(&mut marked).upgrading = true;

        let plan = plan(&fleet(vec![marked]), &policy());

        assert_eq!(actions(&plan), vec![("m", Action::Upgrade)]);
        assert_eq!(plan.decisions[0].reason, Reason::UpgradeInProgress);
    }

    #[test]
    fn admin_cordon_does_not_count_against_the_budget() {
        let mut cordoned = configured("a-maintenance", InstanceOrigin::Byoh, "1.0.0");
        node_mut(&mut cordoned).cordoned_by = Some(CordonedBy::Other);
        let fleet = fleet(vec![cordoned, configured("b-old", InstanceOrigin::Byoh, "0.9.0")]);

        let plan = plan(&fleet, &policy());

        assert_eq!(actions(&plan), vec![("b-old", Action::Upgrade), ("a-maintenance", Action::None)]);
    }

    #[test]
    fn over_budget_fleet_disrupts_nothing_and_warns() {
        let mut first = configured("a", InstanceOrigin::Byoh, "1.0.0");
        node_mut(&mut first).ready = false;
        let mut second = configured("b", InstanceOrigin::Machine, "1.0.0");
        node_mut(&mut second).cordoned_by = Some(CordonedBy::Operator);
        let fleet = fleet(vec![first, second, configured("c-old", InstanceOrigin::Byoh, "0.9.0")]);

        let plan = plan(&fleet, &policy());

        assert_eq!(plan.decision("c-old").map(|d| d.action.clone()), Some(budget_wait(2, 1)));
        assert_eq!(plan.warnings, vec![Warning::OverBudget { unavailable: 2, max_unavailable: 1 }]);
    }

    #[test]
    fn zero_budget_pauses_upgrades_with_a_warning() {
        let mut policy = policy();
        policy.max_unavailable = 0;
        let plan = plan(&fleet(vec![configured("old", InstanceOrigin::Byoh, "0.9.0")]), &policy);

        assert_eq!(actions(&plan), vec![("old", budget_wait(0, 0))]);
        assert_eq!(plan.warnings, vec![Warning::UpgradesPaused]);
    }

    #[test]
    fn first_time_work_ignores_the_budget_but_respects_the_concurrency_bound() {
        let mut upgrading = configured("upgrading", InstanceOrigin::Byoh, "0.9.0");
        node_mut(&mut upgrading).upgrading = true;
        let mut configuring = new_host("d-configuring", InstanceOrigin::Machine);
        configuring.phase = InstancePhase::Configuring;
        let mut removed = new_host("c-removed", InstanceOrigin::Byoh);
        removed.desired = false;
        let fleet = fleet(vec![
            upgrading,
            configuring,
            removed,
            new_host("a-new", InstanceOrigin::Byoh),
            new_host("b-new", InstanceOrigin::Machine),
        ]);
        let mut policy = policy();
        policy.max_concurrent_configurations = 2;

        let plan = plan(&fleet, &policy);

        assert_eq!(
            actions(&plan),
            vec![
                ("a-new", Action::Configure),
                ("b-new", Action::Wait { reason: WaitReason::Concurrency { running: 2, max: 2 } }),
                ("c-removed", Action::Wait { reason: WaitReason::Concurrency { running: 2, max: 2 } }),
                ("d-configuring", Action::Configure),
                ("upgrading", Action::Upgrade),
            ]
        );
        assert_eq!(plan.summary.concurrent_configurations, 2);
    }

    #[test]
    fn in_progress_work_continues_beyond_a_lowered_bound() {
        let mut first = new_host("a", InstanceOrigin::Byoh);
        first.phase = InstancePhase::Configuring;
        let mut second = configured("b", InstanceOrigin::Byoh, "1.0.0");
        second.phase = InstancePhase::Deconfiguring;
        let fleet = fleet(vec![first, second, new_host("c", InstanceOrigin::Byoh)]);
        let mut policy = policy();
        policy.max_concurrent_configurations = 1;

        let plan = plan(&fleet, &policy);

        assert_eq!(
            actions(&plan),
            vec![
                ("a", Action::Configure),
                ("c", Action::Wait { reason: WaitReason::Concurrency { running: 2, max: 1 } }),
                ("b", Action::Deconfigure),
            ]
        );
        assert_eq!(plan.decision("b").map(|d| d.reason.clone()), Some(Reason::DeconfigurationInProgress));
    }

    #[test]
    fn backoff_holds_until_retry_after_then_releases() {
        let mut failing = configured("old", InstanceOrigin::Byoh, "0.9.0");
        failing.phase = InstancePhase::Failed;
        failing.last_failure =
            Some(Failure { message: "drain timed out".into(), retry_after: at("2026-11-22T01:05:00Z") });
        let mut fleet = fleet(vec![failing, configured("other-old", InstanceOrigin::Byoh, "0.9.0")]);

        let waiting = plan(&fleet, &policy());
        assert_eq!(
            actions(&waiting),
            vec![
                (
                    "old",
                    Action::Wait {
                        reason: WaitReason::Backoff {
                            until: at("2026-11-22T01:05:00Z"),
                            last_error: "drain timed out".into(),
                        },
                    },
                ),
                ("other-old", Action::Upgrade),
            ]
        );

        fleet.now = at("2026-11-22T01:05:00Z");
        let retried = plan(&fleet, &policy());
        assert_eq!(actions(&retried), vec![("old", Action::Upgrade), ("other-old", budget_wait(1, 1))]);
    }

    #[test]
    fn kubelet_newer_than_api_server_blocks_every_kubelet_install() {
        let mut policy = policy();
        policy.payload_kubelet_version = version("1.34.0");
        let mut machine_rotated = configured("m-rotated", InstanceOrigin::Machine, "1.0.0");
        node_mut(&mut machine_rotated).pub_key_hash = Some("old".into());
        let mut byoh_rotated = configured("b-rotated", InstanceOrigin::Byoh, "1.0.0");
        node_mut(&mut byoh_rotated).pub_key_hash = Some("old".into());
        let mut removed = configured("gone", InstanceOrigin::Byoh, "1.0.0");
        removed.desired = false;
        let fleet = fleet(vec![
            configured("old", InstanceOrigin::Byoh, "0.9.0"),
            new_host("new", InstanceOrigin::Byoh),
            machine_rotated,
            byoh_rotated,
            removed,
        ]);

        let plan = plan(&fleet, &policy);

        let skew = WaitReason::KubeletSkew {
            kubelet: MinorVersion { major: 1, minor: 34 },
            api_server: MinorVersion { major: 1, minor: 33 },
        };
        assert_eq!(
            actions(&plan),
            vec![
                ("new", Action::Wait { reason: skew.clone() }),
                ("old", Action::Wait { reason: skew.clone() }),
                ("b-rotated", Action::Rekey { method: RekeyMethod::VerifyByohKey }),
                ("gone", Action::Deconfigure),
                ("m-rotated", Action::Wait { reason: skew }),
            ]
        );
        assert_eq!(
            plan.warnings,
            vec![Warning::KubeletNewerThanApiServer {
                kubelet: MinorVersion { major: 1, minor: 34 },
                api_server: MinorVersion { major: 1, minor: 33 },
            }]
        );
    }

    #[test]
    fn machine_with_an_old_key_is_replaced_within_the_budget_and_counted() {
        let mut rotated = configured("b-rotated", InstanceOrigin::Machine, "0.9.0");
        node_mut(&mut rotated).pub_key_hash = Some("old-key".into());
        let fleet = fleet(vec![rotated, configured("a-old", InstanceOrigin::Machine, "0.9.0")]);
        let mut policy = policy();
        policy.max_unavailable = 2;

        let plan = plan(&fleet, &policy);

        assert_eq!(
            actions(&plan),
            vec![("a-old", Action::Upgrade), ("b-rotated", Action::Rekey { method: RekeyMethod::ReplaceMachine })]
        );
        assert_eq!(
            plan.decision("b-rotated").map(|d| (d.reason.clone(), d.unavailable)),
            Some((Reason::KeyRotated, true))
        );
        assert_eq!(plan.summary.unavailable_after, 2);
    }

    #[test]
    fn byoh_with_an_old_key_and_an_old_version_is_rekeyed_first_without_budget() {
        let mut stale = configured("stale", InstanceOrigin::Byoh, "0.9.0");
        node_mut(&mut stale).pub_key_hash = Some("old-key".into());
        let mut policy = policy();
        policy.max_unavailable = 0;

        let plan = plan(&fleet(vec![stale]), &policy);

        assert_eq!(actions(&plan), vec![("stale", Action::Rekey { method: RekeyMethod::VerifyByohKey })]);
        assert!(!plan.decisions[0].unavailable);
        assert_eq!(plan.summary.concurrent_configurations, 1);
        assert_eq!(plan.warnings, vec![]);
    }

    #[test]
    fn node_newer_than_operator_is_reconfigured_with_a_warning() {
        let plan = plan(&fleet(vec![configured("ahead", InstanceOrigin::Byoh, "1.1.0")]), &policy());

        assert_eq!(actions(&plan), vec![("ahead", Action::Upgrade)]);
        assert_eq!(
            plan.warnings,
            vec![Warning::NodeNewerThanOperator {
                instance: "ahead".into(),
                configured: version("1.1.0"),
                operator: version("1.0.0"),
            }]
        );
    }

    #[test]
    fn build_metadata_alone_is_not_an_upgrade() {
        let plan = plan(&fleet(vec![configured("same", InstanceOrigin::Machine, "1.0.0+abc1234")]), &policy());

        assert_eq!(actions(&plan), vec![("same", Action::None)]);
    }

    #[test]
    fn registered_node_without_version_is_configured_and_missing_node_is_awaited() {
        let mut unversioned = configured("a-unversioned", InstanceOrigin::Byoh, "1.0.0");
        node_mut(&mut unversioned).configured_version = None;
        let mut registering = new_host("b-registering", InstanceOrigin::Machine);
        registering.phase = InstancePhase::WaitingForNode;
        let plan = plan(&fleet(vec![unversioned, registering]), &policy());

        assert_eq!(
            actions(&plan),
            vec![
                ("a-unversioned", Action::Configure),
                ("b-registering", Action::Wait { reason: WaitReason::NodeRegistration }),
            ]
        );
        assert_eq!(plan.summary.concurrent_configurations, 1);
    }

    #[test]
    fn order_of_input_does_not_change_the_plan() {
        let instances = vec![
            configured("c", InstanceOrigin::Byoh, "0.9.0"),
            configured("a", InstanceOrigin::Machine, "0.9.1"),
            configured("b", InstanceOrigin::Byoh, "0.8.5"),
            new_host("d", InstanceOrigin::Machine),
        ];
        let mut reversed = instances.clone();
        reversed.reverse();

        let forward = plan(&fleet(instances), &policy());
        let backward = plan(&fleet(reversed), &policy());

        assert_eq!(forward, backward);
        let names: Vec<&str> = forward.decisions.iter().map(|decision| decision.name.as_str()).collect();
        assert_eq!(names, vec!["d", "b", "c", "a"]);
    }
}
