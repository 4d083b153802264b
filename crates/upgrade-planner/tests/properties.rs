//! Property tests of the planner's invariants over random fleets and policies: one unavailability budget over every
//! kind of disruption (upgrades, Machine replacements, requested and granted restarts and reboots, Machines away),
//! the key-check bound, deterministic order, no idle budget while work waits, backoff and the version-skew rule.

use std::cmp::Ordering;

use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;
use semver::Version;
use wmco_upgrade_planner::{
    Action, CordonedBy, Decision, DisruptionKind, Failure, Fleet, Instance, InstanceOrigin, InstancePhase, NodeState,
    Plan, Policy, RekeyMethod, RequestState, RequestedDisruption, Skew, WaitReason, plan,
};

const CURRENT_KEY: &str = "current-key";

fn now() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("valid timestamp")
}

fn version_strategy() -> impl Strategy<Value = Option<Version>> {
    prop_oneof![
        Just(None),
        Just(Some(Version::new(0, 8, 0))),
        Just(Some(Version::new(0, 9, 0))),
        Just(Some(Version::new(1, 0, 0))),
        Just(Some(Version::parse("1.0.0+abc1234").expect("version"))),
        Just(Some(Version::new(1, 1, 0))),
    ]
}

fn phase_strategy() -> impl Strategy<Value = InstancePhase> {
    prop_oneof![
        Just(InstancePhase::Pending),
        Just(InstancePhase::Configuring),
        Just(InstancePhase::WaitingForNode),
        Just(InstancePhase::Ready),
        Just(InstancePhase::Upgrading),
        Just(InstancePhase::Deconfiguring),
        Just(InstancePhase::Failed),
    ]
}

fn node_strategy() -> impl Strategy<Value = NodeState> {
    (
        any::<bool>(),
        prop_oneof![Just(None), Just(Some(CordonedBy::Operator)), Just(Some(CordonedBy::Other))],
        version_strategy(),
        any::<bool>(),
        prop_oneof![Just(Some(CURRENT_KEY.to_owned())), Just(Some("old-key".to_owned())), Just(None)],
    )
        .prop_map(|(ready, cordoned_by, configured_version, upgrading, pub_key_hash)| NodeState {
            ready,
            cordoned_by,
            configured_version,
            upgrading,
            pub_key_hash,
        })
}

fn failure_strategy() -> impl Strategy<Value = Option<Failure>> {
    prop::option::of((-600i64..600).prop_map(|offset_seconds| Failure {
        message: "ssh: connection refused".into(),
        retry_after: now() + SignedDuration::from_secs(offset_seconds),
    }))
}

fn disruption_strategy() -> impl Strategy<Value = Option<RequestedDisruption>> {
    prop::option::weighted(
        0.3,
        (
            prop_oneof![Just(DisruptionKind::Restart), Just(DisruptionKind::Reboot)],
            prop_oneof![Just(RequestState::Requested), Just(RequestState::Granted)],
        )
            .prop_map(|(kind, state)| RequestedDisruption { kind, state }),
    )
}

type InstanceSpec =
    (String, InstanceOrigin, bool, InstancePhase, Option<NodeState>, Option<Failure>, Option<RequestedDisruption>);

fn instance_strategy() -> impl Strategy<Value = InstanceSpec> {
    (
        "[a-f]{1,3}",
        prop_oneof![Just(InstanceOrigin::Byoh), Just(InstanceOrigin::Machine)],
        prop::bool::weighted(0.85),
        phase_strategy(),
        prop::option::weighted(0.8, node_strategy()),
        failure_strategy(),
        disruption_strategy(),
    )
}

fn fleet_strategy() -> impl Strategy<Value = Fleet> {
    (prop::collection::vec(instance_strategy(), 0..40), prop_oneof![4 => Just(0u32), 1 => 1u32..4]).prop_map(
        |(specs, machines_away)| Fleet {
            now: now(),
            current_pub_key_hash: CURRENT_KEY.into(),
            instances: specs
                .into_iter()
                .enumerate()
                // The index keeps names unique; the random prefix keeps name order unrelated to input order.
                .map(|(index, (prefix, kind, desired, phase, node, last_failure, disruption))| Instance {
                    name: format!("{prefix}-{index}"),
                    kind,
                    desired,
                    phase,
                    node,
                    last_failure,
                    disruption,
                })
                .collect(),
            machines_away,
        },
    )
}

fn policy_strategy() -> impl Strategy<Value = Policy> {
    (0u32..4, 0u32..5, 30u64..36).prop_map(|(max_unavailable, max_key_checks, kubelet_minor)| Policy {
        operator_version: Version::new(1, 0, 0),
        max_unavailable,
        max_concurrent_key_checks: max_key_checks,
        cluster_kubernetes_version: Version::new(1, 33, 4),
        payload_kubelet_version: Version::new(1, kubelet_minor, 0),
    })
}

/// The test's own statement of "unavailable because of the operator", independent of the crate's: a granted
/// disruption counts with or without a Node, a requested one does not.
fn unavailable_by_operator(instance: &Instance) -> bool {
    let granted = instance.disruption.is_some_and(|disruption| disruption.state == RequestState::Granted);
    instance.desired
        && (instance.phase == InstancePhase::Upgrading
            || granted
            || instance.node.as_ref().is_some_and(|node| {
                node.upgrading
                    || node.cordoned_by == Some(CordonedBy::Operator)
                    || (node.configured_version.is_some() && !node.ready)
            }))
}

/// Actions that take the instance out of service: every kind of disruption the budget covers.
fn disrupts(decision: &Decision) -> bool {
    matches!(
        decision.action,
        Action::Upgrade | Action::Rekey { method: RekeyMethod::ReplaceMachine } | Action::Disrupt { .. }
    )
}

fn usize_of(value: u32) -> usize {
    usize::try_from(value).expect("fits")
}

fn instance_of<'fleet>(fleet: &'fleet Fleet, decision: &Decision) -> &'fleet Instance {
    fleet
        .instances
        .iter()
        .find(|instance| instance.name == decision.name)
        .expect("every decision names an instance of the fleet")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn one_decision_per_instance(fleet in fleet_strategy(), policy in policy_strategy()) {
        let plan = plan(&fleet, &policy);
        let mut planned: Vec<&str> = plan.decisions.iter().map(|decision| decision.name.as_str()).collect();
        let mut listed: Vec<&str> = fleet.instances.iter().map(|instance| instance.name.as_str()).collect();
        planned.sort_unstable();
        listed.sort_unstable();
        prop_assert_eq!(planned, listed);
    }

    #[test]
    fn every_kind_of_disruption_stays_within_one_budget(fleet in fleet_strategy(), policy in policy_strategy()) {
        let plan = plan(&fleet, &policy);
        let away = usize_of(fleet.machines_away);
        let before = fleet.instances.iter().filter(|instance| unavailable_by_operator(instance)).count() + away;
        let newly_disrupted = plan
            .decisions
            .iter()
            .filter(|decision| disrupts(decision) && !unavailable_by_operator(instance_of(&fleet, decision)))
            .count();
        let after = before + newly_disrupted;
        let max = usize_of(policy.max_unavailable);
        prop_assert!(newly_disrupted == 0 || after <= max, "before {before}, disrupted {newly_disrupted}, max {max}");
        let flagged = plan.decisions.iter().filter(|decision| decision.unavailable).count();
        prop_assert_eq!(flagged + away, after);
        prop_assert_eq!(usize_of(plan.summary.unavailable_before), before);
        prop_assert_eq!(usize_of(plan.summary.unavailable_after), after);
    }

    #[test]
    fn requested_disruptions_are_never_admitted_beyond_the_budget(
        fleet in fleet_strategy(),
        policy in policy_strategy(),
    ) {
        let plan = plan(&fleet, &policy);
        let before = usize_of(plan.summary.unavailable_before);
        let admitted_requests = plan
            .decisions
            .iter()
            .filter(|decision| {
                let instance = instance_of(&fleet, decision);
                let requested = instance.disruption.is_some_and(|disruption| disruption.state == RequestState::Requested);
                matches!(decision.action, Action::Disrupt { .. }) && requested && !unavailable_by_operator(instance)
            })
            .count();
        prop_assert!(admitted_requests <= usize_of(policy.max_unavailable).saturating_sub(before));
        for decision in &plan.decisions {
            let instance = instance_of(&fleet, decision);
            let Some(disruption) = instance.disruption.filter(|disruption| disruption.state == RequestState::Granted)
            else {
                continue;
            };
            prop_assert_eq!(decision.unavailable, instance.desired, "{}", decision);
            let outdated = instance
                .node
                .as_ref()
                .and_then(|node| node.configured_version.as_ref())
                .is_some_and(|configured| !policy.is_current(configured));
            if disruption.kind == DisruptionKind::Restart && outdated {
                // Carried out by the upgrade (or waiting for it), never in place on an undrained Node.
                prop_assert!(!matches!(decision.action, Action::Disrupt { .. }), "{decision}");
            } else if instance.desired && instance.phase != InstancePhase::Deconfiguring {
                prop_assert!(
                    matches!(decision.action, Action::Disrupt { kind } if kind == disruption.kind)
                        || matches!(decision.action, Action::Wait { reason: WaitReason::Backoff { .. } }),
                    "{decision}"
                );
            }
        }
    }

    #[test]
    fn an_admitted_request_is_counted_once_granted_in_service_or_not(
        fleet in fleet_strategy(),
        policy in policy_strategy(),
    ) {
        let first = plan(&fleet, &policy);
        let mut granted = fleet.clone();
        let mut newly_counted = 0;
        for instance in &mut granted.instances {
            let admitted = first
                .decision(&instance.name)
                .is_some_and(|decision| matches!(decision.action, Action::Disrupt { .. }));
            if !admitted {
                continue;
            }
            let requested = instance.disruption.is_some_and(|disruption| disruption.state == RequestState::Requested);
            if requested && !unavailable_by_operator(instance) {
                newly_counted += 1;
            }
            if let Some(disruption) = &mut instance.disruption {
                disruption.state = RequestState::Granted;
            }
        }
        let second = plan(&granted, &policy);
        prop_assert_eq!(second.summary.unavailable_before, first.summary.unavailable_before + newly_counted);
        for instance in granted.instances.iter().filter(|instance| instance.desired) {
            if instance.disruption.is_some_and(|disruption| disruption.state == RequestState::Granted) {
                prop_assert!(second.decision(&instance.name).is_some_and(|decision| decision.unavailable));
            }
        }
    }

    #[test]
    fn budgeted_work_waits_only_while_the_budget_is_spent(fleet in fleet_strategy(), policy in policy_strategy()) {
        // With a total order and a fleet whose upgrades and replacements end, no request is starved: it waits only
        // for budget that instances ahead of it (or already out of service) hold.
        let plan = plan(&fleet, &policy);
        for decision in &plan.decisions {
            if let Action::Wait { reason: WaitReason::Budget { unavailable, max_unavailable } } = decision.action {
                prop_assert_eq!(max_unavailable, policy.max_unavailable);
                prop_assert!(unavailable >= max_unavailable, "{decision}");
                prop_assert!(plan.summary.unavailable_after >= policy.max_unavailable, "{decision}");
            }
        }
    }

    #[test]
    fn key_checks_are_bounded_and_configuration_and_removal_are_left_to_the_instances_controller(
        fleet in fleet_strategy(),
        policy in policy_strategy(),
    ) {
        let plan = plan(&fleet, &policy);
        let key_checks = plan
            .decisions
            .iter()
            .filter(|decision| decision.action == Action::Rekey { method: RekeyMethod::VerifyByohKey })
            .count();
        prop_assert!(key_checks <= usize_of(policy.max_concurrent_key_checks));
        prop_assert_eq!(usize_of(plan.summary.key_checks), key_checks);
        for decision in &plan.decisions {
            let instance = instance_of(&fleet, decision);
            let configured = instance.node.as_ref().is_some_and(|node| node.configured_version.is_some());
            let removed = !instance.desired || instance.phase == InstancePhase::Deconfiguring;
            let unconfigured_without_request = !configured && instance.disruption.is_none();
            if removed || unconfigured_without_request {
                prop_assert_eq!(&decision.action, &Action::None, "{}", decision);
            }
            let budget_blocked = matches!(decision.action, Action::Wait { reason: WaitReason::Budget { .. } });
            prop_assert!(!budget_blocked || instance.desired, "{decision}");
        }
    }

    #[test]
    fn plan_is_deterministic_and_ordered(
        (fleet, shuffled) in fleet_strategy().prop_flat_map(|fleet| {
            let instances = fleet.instances.clone();
            (Just(fleet), Just(instances).prop_shuffle())
        }),
        policy in policy_strategy(),
    ) {
        let first = plan(&fleet, &policy);
        let second = plan(&Fleet { instances: shuffled, ..fleet.clone() }, &policy);
        prop_assert_eq!(&first, &second);
        for pair in first.decisions.windows(2) {
            let order = match (&pair[0].configured_version, &pair[1].configured_version) {
                (Some(left), Some(right)) => left.cmp_precedence(right),
                (left, right) => left.is_some().cmp(&right.is_some()),
            }
            .then_with(|| pair[0].name.cmp(&pair[1].name));
            prop_assert_eq!(order, Ordering::Less, "{} before {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn instances_in_backoff_get_no_work(fleet in fleet_strategy(), policy in policy_strategy()) {
        let plan = plan(&fleet, &policy);
        for decision in &plan.decisions {
            let backing_off = instance_of(&fleet, decision)
                .last_failure
                .as_ref()
                .is_some_and(|failure| fleet.now < failure.retry_after);
            if backing_off {
                prop_assert!(
                    matches!(decision.action, Action::None | Action::Wait { reason: WaitReason::Backoff { .. } }),
                    "{decision}"
                );
            }
        }
    }

    #[test]
    fn no_kubelet_is_installed_when_skew_fails(fleet in fleet_strategy(), policy in policy_strategy()) {
        let plan = plan(&fleet, &policy);
        if matches!(policy.kubelet_skew(), Skew::KubeletNewer { .. }) {
            for decision in &plan.decisions {
                let installs =
                    matches!(decision.action, Action::Upgrade | Action::Rekey { method: RekeyMethod::ReplaceMachine });
                prop_assert!(!installs, "{decision}");
            }
        }
    }

    #[test]
    fn plan_survives_a_json_round_trip(fleet in fleet_strategy(), policy in policy_strategy()) {
        let plan = plan(&fleet, &policy);
        let json = serde_json::to_string(&plan).expect("plan serializes");
        let parsed: Plan = serde_json::from_str(&json).expect("plan deserializes");
        prop_assert_eq!(parsed, plan);
        let fleet_json = serde_json::to_string(&fleet).expect("fleet serializes");
        prop_assert_eq!(serde_json::from_str::<Fleet>(&fleet_json).expect("fleet deserializes"), fleet);
    }
}
