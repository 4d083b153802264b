//! Property tests of the planner's invariants over random fleets and policies: the unavailability budget, the
//! concurrency bound, deterministic order, backoff and the version-skew rule.

use std::cmp::Ordering;

use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;
use semver::Version;
use wmco_upgrade_planner::{
    Action, CordonedBy, Decision, Failure, Fleet, Instance, InstanceOrigin, InstancePhase, NodeState, Plan, Policy,
    RekeyMethod, Skew, WaitReason, plan,
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

fn instance_strategy()
-> impl Strategy<Value = (String, InstanceOrigin, bool, InstancePhase, Option<NodeState>, Option<Failure>)> {
    (
        "[a-f]{1,3}",
        prop_oneof![Just(InstanceOrigin::Byoh), Just(InstanceOrigin::Machine)],
        prop::bool::weighted(0.85),
        phase_strategy(),
        prop::option::weighted(0.8, node_strategy()),
        failure_strategy(),
    )
}

fn fleet_strategy() -> impl Strategy<Value = Fleet> {
    prop::collection::vec(instance_strategy(), 0..40).prop_map(|specs| Fleet {
        now: now(),
        current_pub_key_hash: CURRENT_KEY.into(),
        instances: specs
            .into_iter()
            .enumerate()
            // The index keeps names unique; the random prefix keeps name order unrelated to input order.
            .map(|(index, (prefix, kind, desired, phase, node, last_failure))| Instance {
                name: format!("{prefix}-{index}"),
                kind,
                desired,
                phase,
                node,
                last_failure,
                rebooting: false,
            })
            .collect(),
    })
}

fn policy_strategy() -> impl Strategy<Value = Policy> {
    (0u32..4, 0u32..5, 30u64..36).prop_map(|(max_unavailable, max_concurrent, kubelet_minor)| Policy {
        operator_version: Version::new(1, 0, 0),
        max_unavailable,
        max_concurrent_configurations: max_concurrent,
        cluster_kubernetes_version: Version::new(1, 33, 4),
        payload_kubelet_version: Version::new(1, kubelet_minor, 0),
    })
}

/// The test's own statement of "unavailable because of the operator", independent of the crate's.
fn unavailable_by_operator(instance: &Instance) -> bool {
    instance.desired
        && (instance.phase == InstancePhase::Upgrading
            || instance.node.as_ref().is_some_and(|node| {
                node.upgrading
                    || node.cordoned_by == Some(CordonedBy::Operator)
                    || (node.configured_version.is_some() && !node.ready)
            }))
}

fn disrupts(decision: &Decision) -> bool {
    matches!(decision.action, Action::Upgrade | Action::Rekey { method: RekeyMethod::ReplaceMachine })
}

fn instance_of<'fleet>(fleet: &'fleet Fleet, decision: &Decision) -> &'fleet Instance {
    fleet
        .instances
        .iter()
        .find(|instance| instance.name == decision.name)
        .expect("every decision names an instance of the fleet")
}

fn is_concurrent_work(decision: &Decision) -> bool {
    matches!(
        decision.action,
        Action::Configure | Action::Deconfigure | Action::Rekey { method: RekeyMethod::VerifyByohKey }
    )
}

fn continues_work(decision: &Decision, instance: &Instance) -> bool {
    match decision.action {
        Action::Configure => matches!(instance.phase, InstancePhase::Configuring | InstancePhase::WaitingForNode),
        Action::Deconfigure => instance.phase == InstancePhase::Deconfiguring,
        _ => false,
    }
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
    fn operator_caused_unavailability_stays_within_budget(fleet in fleet_strategy(), policy in policy_strategy()) {
        let plan = plan(&fleet, &policy);
        let before = fleet.instances.iter().filter(|instance| unavailable_by_operator(instance)).count();
        let newly_disrupted = plan
            .decisions
            .iter()
            .filter(|decision| disrupts(decision) && !unavailable_by_operator(instance_of(&fleet, decision)))
            .count();
        let after = before + newly_disrupted;
        let max = usize::try_from(policy.max_unavailable).expect("fits");
        prop_assert!(newly_disrupted == 0 || after <= max, "before {before}, disrupted {newly_disrupted}, max {max}");
        let flagged = plan.decisions.iter().filter(|decision| decision.unavailable).count();
        prop_assert_eq!(flagged, after);
        prop_assert_eq!(usize::try_from(plan.summary.unavailable_after).expect("fits"), after);
    }

    #[test]
    fn admin_requested_work_is_bounded_by_concurrency_not_budget(
        fleet in fleet_strategy(),
        policy in policy_strategy(),
    ) {
        let plan = plan(&fleet, &policy);
        let (mut continuing, mut started) = (0usize, 0usize);
        for decision in plan.decisions.iter().filter(|decision| is_concurrent_work(decision)) {
            if continues_work(decision, instance_of(&fleet, decision)) {
                continuing += 1;
            } else {
                started += 1;
            }
        }
        let max = usize::try_from(policy.max_concurrent_configurations).expect("fits");
        prop_assert!(started == 0 || continuing + started <= max, "continuing {continuing}, started {started}, max {max}");
        for decision in &plan.decisions {
            let instance = instance_of(&fleet, decision);
            let first_time = instance.desired
                && instance.phase == InstancePhase::Pending
                && instance.node.is_none()
                && instance.last_failure.is_none()
                && policy.kubelet_skew() == Skew::Supported;
            if first_time {
                prop_assert!(
                    matches!(
                        decision.action,
                        Action::Configure | Action::Wait { reason: WaitReason::Concurrency { .. } }
                    ),
                    "{decision}"
                );
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
                let installs = matches!(
                    decision.action,
                    Action::Upgrade | Action::Configure | Action::Rekey { method: RekeyMethod::ReplaceMachine }
                );
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
