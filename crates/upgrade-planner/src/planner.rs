//! The decision itself: classify what each instance needs ([`crate::need`]), block what backoff or the skew rule
//! forbids, then hand out the unavailability budget and the key-check slots in a deterministic order.

use std::cmp::Ordering;

use semver::Version;

use crate::fleet::{Fleet, Instance};
use crate::need::{Need, blocker_of, need_of};
use crate::plan::{Action, Decision, Plan, Summary, WaitReason, Warning};
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
///     disruption: None,
/// };
/// let fleet = Fleet {
///     now: Timestamp::UNIX_EPOCH,
///     current_pub_key_hash: "k1".into(),
///     instances: vec![instance("b", Version::new(0, 9, 0)), instance("a", Version::new(0, 9, 0))],
///     machines_away: 0,
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
            let already_unavailable = instance.is_unavailable_by_operator();
            let need = need_of(instance, already_unavailable, fleet, policy);
            let blocker = blocker_of(instance, &need, fleet, skew);
            Assessed { instance, already_unavailable, need, blocker }
        })
        .collect();

    let unavailable_before =
        count(assessed.iter().filter(|item| item.already_unavailable)).saturating_add(fleet.machines_away);
    let mut allocation = Allocation {
        unavailable: unavailable_before,
        max_unavailable: policy.max_unavailable,
        key_checks: 0,
        max_key_checks: policy.max_concurrent_key_checks,
    };
    let decisions: Vec<Decision> = assessed.into_iter().map(|item| allocation.decide(item)).collect();

    let warnings = warnings_of(&decisions, fleet, policy, skew, unavailable_before);
    let summary = summarize(&decisions, fleet, policy, unavailable_before, allocation.key_checks);
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

struct Assessed<'fleet> {
    instance: &'fleet Instance,
    already_unavailable: bool,
    need: Need,
    blocker: Option<WaitReason>,
}

/// The budget and the key-check slots, handed out in planning order.
struct Allocation {
    unavailable: u32,
    max_unavailable: u32,
    key_checks: u32,
    max_key_checks: u32,
}

impl Allocation {
    fn decide(&mut self, item: Assessed<'_>) -> Decision {
        let Assessed { instance, already_unavailable, need, blocker } = item;
        let action = match blocker {
            Some(reason) => Action::Wait { reason },
            None => self.admit(&need, already_unavailable).unwrap_or_else(|| need.action()),
        };
        let disrupts = need.is_budgeted() && !matches!(action, Action::Wait { .. });
        Decision {
            name: instance.name.clone(),
            kind: instance.kind,
            configured_version: configured_version(instance).cloned(),
            action,
            reason: need.reason(),
            unavailable: already_unavailable || disrupts,
        }
    }

    /// Takes a budget unit or a key-check slot for `need` when it needs one; returns the wait when none is left.
    fn admit(&mut self, need: &Need, already_unavailable: bool) -> Option<Action> {
        if need.is_budgeted() && !already_unavailable {
            if self.unavailable >= self.max_unavailable {
                let reason =
                    WaitReason::Budget { unavailable: self.unavailable, max_unavailable: self.max_unavailable };
                return Some(Action::Wait { reason });
            }
            self.unavailable += 1;
        }
        if *need == Need::ByohRekey {
            if self.key_checks >= self.max_key_checks {
                let reason = WaitReason::KeyCheckLimit { planned: self.key_checks, max: self.max_key_checks };
                return Some(Action::Wait { reason });
            }
            self.key_checks += 1;
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

fn summarize(
    decisions: &[Decision],
    fleet: &Fleet,
    policy: &Policy,
    unavailable_before: u32,
    key_checks: u32,
) -> Summary {
    let flagged = count(decisions.iter().filter(|decision| decision.unavailable));
    let mut summary = Summary {
        instances: count(decisions.iter()),
        machines_away: fleet.machines_away,
        unavailable_before,
        unavailable_after: flagged.saturating_add(fleet.machines_away),
        max_unavailable: policy.max_unavailable,
        key_checks,
        max_concurrent_key_checks: policy.max_concurrent_key_checks,
        ..Summary::default()
    };
    for decision in decisions {
        let counter = match decision.action {
            Action::Upgrade => &mut summary.upgrade,
            Action::Rekey { .. } => &mut summary.rekey,
            Action::Disrupt { .. } => &mut summary.disrupt,
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
    use crate::fleet::{CordonedBy, Failure, NodeState, RequestState, RequestedDisruption};
    use crate::plan::{Reason, RekeyMethod};
    use crate::policy::MinorVersion;
    use wmco_vocabulary::{DisruptionKind, InstanceOrigin, InstancePhase};

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
        Fleet { now: at("2026-11-22T01:00:00Z"), current_pub_key_hash: KEY.into(), instances, machines_away: 0 }
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
            disruption: None,
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
            disruption: None,
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
                ("new", Action::None),
                ("b-old", Action::Upgrade),
                ("a-old", budget_wait(1, 1)),
                ("b-rotated", Action::Rekey { method: RekeyMethod::VerifyByohKey }),
                ("gone", Action::None),
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
                upgrade: 1,
                rekey: 1,
                disrupt: 0,
                wait: 2,
                none: 3,
                machines_away: 0,
                unavailable_before: 0,
                unavailable_after: 1,
                max_unavailable: 1,
                key_checks: 1,
                max_concurrent_key_checks: 8,
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
    fn configuration_and_removal_are_the_instances_controllers_and_take_no_budget() {
        let mut configuring = new_host("d-configuring", InstanceOrigin::Machine);
        configuring.phase = InstancePhase::Configuring;
        let mut removed = new_host("c-removed", InstanceOrigin::Byoh);
        removed.desired = false;
        let mut deconfiguring = configured("e-deconfiguring", InstanceOrigin::Byoh, "0.9.0");
        deconfiguring.phase = InstancePhase::Deconfiguring;
        let mut policy = policy();
        policy.max_unavailable = 0;
        let fleet = fleet(vec![configuring, removed, new_host("a-new", InstanceOrigin::Byoh), deconfiguring]);

        let plan = plan(&fleet, &policy);

        let decided: Vec<(&str, Action, Reason)> =
            plan.decisions.iter().map(|d| (d.name.as_str(), d.action.clone(), d.reason.clone())).collect();
        assert_eq!(
            decided,
            vec![
                ("a-new", Action::None, Reason::NotConfigured),
                ("c-removed", Action::None, Reason::Removed),
                ("d-configuring", Action::None, Reason::ConfigurationInProgress),
                ("e-deconfiguring", Action::None, Reason::DeconfigurationInProgress),
            ]
        );
        assert_eq!(plan.warnings, vec![]);
    }

    #[test]
    fn byoh_key_checks_are_bounded_by_the_key_check_limit() {
        let rotated = |name: &str| {
            let mut host = configured(name, InstanceOrigin::Byoh, "1.0.0");
            node_mut(&mut host).pub_key_hash = Some("old".into());
            host
        };
        let mut policy = policy();
        policy.max_concurrent_key_checks = 2;

        let plan = plan(&fleet(vec![rotated("c"), rotated("a"), rotated("b")]), &policy);

        let check = Action::Rekey { method: RekeyMethod::VerifyByohKey };
        let limit = Action::Wait { reason: WaitReason::KeyCheckLimit { planned: 2, max: 2 } };
        assert_eq!(actions(&plan), vec![("a", check.clone()), ("b", check), ("c", limit)]);
        assert_eq!(plan.summary.key_checks, 2);
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
                ("new", Action::None),
                ("old", Action::Wait { reason: skew.clone() }),
                ("b-rotated", Action::Rekey { method: RekeyMethod::VerifyByohKey }),
                ("gone", Action::None),
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
        assert_eq!(plan.summary.key_checks, 1);
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
    fn registered_node_without_version_is_not_configured_and_missing_node_is_awaited() {
        let mut unversioned = configured("a-unversioned", InstanceOrigin::Byoh, "1.0.0");
        node_mut(&mut unversioned).configured_version = None;
        let mut registering = new_host("b-registering", InstanceOrigin::Machine);
        registering.phase = InstancePhase::WaitingForNode;
        let plan = plan(&fleet(vec![unversioned, registering]), &policy());

        assert_eq!(actions(&plan), vec![("a-unversioned", Action::None), ("b-registering", Action::None),]);
        let reasons: Vec<Reason> = plan.decisions.iter().map(|decision| decision.reason.clone()).collect();
        assert_eq!(reasons, vec![Reason::NotConfigured, Reason::WaitingForNode]);
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

    fn with_request(mut instance: Instance, kind: DisruptionKind, state: RequestState) -> Instance {
        instance.disruption = Some(RequestedDisruption { kind, state });
        instance
    }

    fn disrupt(kind: DisruptionKind) -> Action {
        Action::Disrupt { kind }
    }

    #[test]
    fn requested_disruptions_share_the_budget_in_planning_order() {
        let fleet = fleet(vec![
            with_request(
                configured("c", InstanceOrigin::Byoh, "1.0.0"),
                DisruptionKind::Reboot,
                RequestState::Requested,
            ),
            with_request(
                configured("b", InstanceOrigin::Machine, "1.0.0"),
                DisruptionKind::Restart,
                RequestState::Requested,
            ),
            configured("a-old", InstanceOrigin::Byoh, "0.9.0"),
        ]);
        let mut policy = policy();
        policy.max_unavailable = 2;

        let plan = plan(&fleet, &policy);

        assert_eq!(
            actions(&plan),
            vec![("a-old", Action::Upgrade), ("b", disrupt(DisruptionKind::Restart)), ("c", budget_wait(2, 2))]
        );
        assert_eq!(
            plan.decision("b").map(|d| (d.reason.clone(), d.unavailable)),
            Some((Reason::DisruptionRequested { kind: DisruptionKind::Restart }, true))
        );
        assert_eq!(plan.decision("c").map(|d| d.unavailable), Some(false));
        assert_eq!((plan.summary.disrupt, plan.summary.unavailable_after), (1, 2));
    }

    #[test]
    fn a_granted_disruption_goes_on_and_counts_with_or_without_a_node() {
        let mut first_boot = new_host("a-first-boot", InstanceOrigin::Byoh);
        first_boot.phase = InstancePhase::Configuring;
        let fleet = fleet(vec![
            with_request(first_boot, DisruptionKind::Reboot, RequestState::Granted),
            with_request(
                configured("b", InstanceOrigin::Byoh, "1.0.0"),
                DisruptionKind::Restart,
                RequestState::Granted,
            ),
            configured("c-old", InstanceOrigin::Byoh, "0.9.0"),
        ]);
        let mut policy = policy();
        policy.max_unavailable = 2;

        let plan = plan(&fleet, &policy);

        assert_eq!(
            actions(&plan),
            vec![
                ("a-first-boot", disrupt(DisruptionKind::Reboot)),
                ("c-old", budget_wait(2, 2)),
                ("b", disrupt(DisruptionKind::Restart)),
            ]
        );
        assert_eq!(plan.decisions[0].reason, Reason::DisruptionInProgress { kind: DisruptionKind::Reboot });
        assert_eq!((plan.summary.unavailable_before, plan.summary.unavailable_after), (2, 2));
    }

    #[test]
    fn a_requested_disruption_on_a_host_without_a_node_takes_budget() {
        let fleet = fleet(vec![
            with_request(new_host("a-new", InstanceOrigin::Byoh), DisruptionKind::Reboot, RequestState::Requested),
            with_request(new_host("b-new", InstanceOrigin::Byoh), DisruptionKind::Reboot, RequestState::Requested),
        ]);

        let plan = plan(&fleet, &policy());

        assert_eq!(actions(&plan), vec![("a-new", disrupt(DisruptionKind::Reboot)), ("b-new", budget_wait(1, 1))]);
    }

    #[test]
    fn machines_away_count_against_the_budget() {
        let mut fleet = fleet(vec![
            configured("a-old", InstanceOrigin::Byoh, "0.9.0"),
            with_request(
                configured("b", InstanceOrigin::Byoh, "1.0.0"),
                DisruptionKind::Restart,
                RequestState::Requested,
            ),
        ]);
        fleet.machines_away = 1;
        let mut policy = policy();
        policy.max_unavailable = 2;

        let plan = plan(&fleet, &policy);

        assert_eq!(actions(&plan), vec![("a-old", Action::Upgrade), ("b", budget_wait(2, 2))]);
        assert_eq!(
            (plan.summary.machines_away, plan.summary.unavailable_before, plan.summary.unavailable_after),
            (1, 1, 2)
        );

        fleet.machines_away = 3;
        let over = super::plan(&fleet, &policy);
        assert_eq!(over.warnings, vec![Warning::OverBudget { unavailable: 3, max_unavailable: 2 }]);
        assert_eq!(actions(&over), vec![("a-old", budget_wait(3, 2)), ("b", budget_wait(3, 2))]);
    }

    #[test]
    fn an_upgrade_subsumes_a_requested_restart() {
        let host = with_request(
            configured("old", InstanceOrigin::Byoh, "0.9.0"),
            DisruptionKind::Restart,
            RequestState::Requested,
        );
        let mut marked = host.clone();
        node_mut(&mut marked).upgrading = true;

        assert_eq!(actions(&plan(&fleet(vec![host]), &policy())), vec![("old", Action::Upgrade)]);
        assert_eq!(actions(&plan(&fleet(vec![marked]), &policy())), vec![("old", Action::Upgrade)]);
    }

    #[test]
    fn a_granted_restart_on_a_host_at_another_version_becomes_its_upgrade_without_more_budget() {
        // Granted by an operator at the old version, found by the new one: the restart must not replace the
        // binaries of an undrained Node, the upgrade (cordon, drain) carries it out.
        let mut granted = with_request(
            configured("old", InstanceOrigin::Byoh, "0.9.0"),
            DisruptionKind::Restart,
            RequestState::Granted,
        );
        node_mut(&mut granted).upgrading = true;
        let plan = plan(&fleet(vec![granted.clone(), configured("z-old", InstanceOrigin::Byoh, "0.9.0")]), &policy());
        assert_eq!(actions(&plan), vec![("old", Action::Upgrade), ("z-old", budget_wait(1, 1))]);

        let mut current = granted;
        node_mut(&mut current).configured_version = Some(Version::new(1, 0, 0));
        assert_eq!(
            actions(&super::plan(&fleet(vec![current]), &policy())),
            vec![("old", disrupt(DisruptionKind::Restart))]
        );
    }

    #[test]
    fn a_requested_reboot_is_granted_inside_an_upgrade_without_more_budget() {
        let host = with_request(
            configured("old", InstanceOrigin::Byoh, "0.9.0"),
            DisruptionKind::Reboot,
            RequestState::Requested,
        );
        let in_service = fleet(vec![host.clone(), configured("z-old", InstanceOrigin::Byoh, "0.9.0")]);
        assert_eq!(
            actions(&plan(&in_service, &policy())),
            vec![("old", Action::Upgrade), ("z-old", budget_wait(1, 1))]
        );

        let mut upgrading = host;
        node_mut(&mut upgrading).upgrading = true;
        node_mut(&mut upgrading).cordoned_by = Some(CordonedBy::Operator);
        let started =
            plan(&fleet(vec![upgrading.clone(), configured("z-old", InstanceOrigin::Byoh, "0.9.0")]), &policy());
        assert_eq!(actions(&started), vec![("old", disrupt(DisruptionKind::Reboot)), ("z-old", budget_wait(1, 1))]);
        assert_eq!(started.summary.unavailable_after, 1);

        upgrading.disruption = None;
        assert_eq!(actions(&plan(&fleet(vec![upgrading]), &policy())), vec![("old", Action::Upgrade)]);
    }

    #[test]
    fn a_request_on_a_host_already_out_of_service_takes_no_more_budget() {
        let mut not_ready = with_request(
            configured("b", InstanceOrigin::Byoh, "1.0.0"),
            DisruptionKind::Restart,
            RequestState::Requested,
        );
        node_mut(&mut not_ready).ready = false;
        let fleet = fleet(vec![not_ready, configured("a-old", InstanceOrigin::Byoh, "0.9.0")]);

        let plan = plan(&fleet, &policy());

        assert_eq!(actions(&plan), vec![("a-old", budget_wait(1, 1)), ("b", disrupt(DisruptionKind::Restart))]);
        assert_eq!(plan.summary.unavailable_after, 1);
    }

    #[test]
    fn a_key_rotation_comes_before_a_request_and_removal_before_anything() {
        let mut machine = with_request(
            configured("a", InstanceOrigin::Machine, "1.0.0"),
            DisruptionKind::Reboot,
            RequestState::Requested,
        );
        node_mut(&mut machine).pub_key_hash = Some("old".into());
        let mut byoh = with_request(
            configured("b", InstanceOrigin::Byoh, "1.0.0"),
            DisruptionKind::Restart,
            RequestState::Requested,
        );
        node_mut(&mut byoh).pub_key_hash = Some("old".into());
        let mut removed =
            with_request(configured("c", InstanceOrigin::Byoh, "1.0.0"), DisruptionKind::Reboot, RequestState::Granted);
        removed.desired = false;
        let mut policy = policy();
        policy.max_unavailable = 3;

        let plan = plan(&fleet(vec![machine, byoh, removed]), &policy);

        assert_eq!(
            actions(&plan),
            vec![
                ("a", Action::Rekey { method: RekeyMethod::ReplaceMachine }),
                ("b", Action::Rekey { method: RekeyMethod::VerifyByohKey }),
                ("c", Action::None),
            ]
        );
        assert_eq!(plan.summary.unavailable_after, 1);
    }

    #[test]
    fn the_skew_rule_does_not_hold_restarts_and_reboots() {
        let mut policy = policy();
        policy.payload_kubelet_version = version("1.34.0");
        let requested = with_request(
            configured("a", InstanceOrigin::Byoh, "1.0.0"),
            DisruptionKind::Reboot,
            RequestState::Requested,
        );

        assert_eq!(actions(&plan(&fleet(vec![requested]), &policy)), vec![("a", disrupt(DisruptionKind::Reboot))]);
    }
}
