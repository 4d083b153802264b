//! The pure decisions of a fleet reconcile, from the records, their Nodes and the Windows Machines as read at one
//! instant:
//!
//! - [`ObservedFleet`]: the planner's `Fleet` (built in [`ObservedFleet::new`], the one place) and its plan
//!   ([`ObservedFleet::plan`], the one `wmco_upgrade_planner::plan` call), under the budget left once the Windows
//!   Machines away from the fleet ([`machines_away`]) count against it (the planner's `Fleet::machines_away`).
//! - [`Work`]: what the executor does of a plan ([`Work::of`], the one place a plan's actions are read).
//! - [`decide_refused`]: which Machines whose host has refused the operator's key longer than the grace period to
//!   replace (issue 10), within the budget the plan left.
//!
//! The planner counts the instances it knows to be unavailable (marked, cordoned by the operator, configured but
//! not Ready, rebooting). A replaced Machine leaves the fleet while it is away: its Machine is being deleted, then
//! its MachineSet's new Machine provisions and is configured. Those Machines are counted from cluster state and
//! taken off the budget before the planner hands it out, so a replacement starts only when the previous one came
//! back as a Ready Node. A refused Machine already away (its host never became a Ready Node) costs no budget of its
//! own: the units the others hold are taken off, and each admitted replacement takes one, so refused Machines never
//! wait on each other. BYOH hosts are never deleted.

use std::collections::BTreeSet;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Node;
use wmco_cluster_client::types::{InstanceOrigin, Machine};
use wmco_upgrade_planner::{
    Action, DisruptionKind, Failure, Fleet, Plan, Policy, Reason, RekeyMethod, WaitReason, plan,
};

use super::machines::{counted_by_planner, fleet_members, is_ignored};
use super::observe::node_state;
use super::{ObservedInstance, machines_away, planner_instance};

/// The fleet as the planner sees it, and what it was built from.
#[derive(Clone, Debug)]
pub struct ObservedFleet {
    /// The planner's input: the records taking part in the plan (not being deleted; a Machine's only while its
    /// Machine is live).
    pub fleet: Fleet,
    /// Every record with its Node, in record-name order.
    pub instances: Vec<ObservedInstance>,
    /// Every Windows Machine (label `machine.openshift.io/os-id: Windows`) of `openshift-machine-api`.
    pub machines: Vec<Machine>,
    /// Windows Machines unavailable outside the planner's view (being deleted, not yet recorded, or recorded but
    /// not yet a configured Ready Node), taken off the budget.
    pub machines_away: Vec<String>,
}

impl ObservedFleet {
    /// The planner's fleet at `now` on the key hashing to `key_hash`, with `failure` giving each instance's failed
    /// step the planner must honour (backoff).
    ///
    /// ```
    /// use wmco_operator::fleet::ObservedFleet;
    /// let observed = ObservedFleet::new(Vec::new(), Vec::new(), "0f1e", jiff::Timestamp::UNIX_EPOCH, |_| None);
    /// assert!(observed.fleet.instances.is_empty() && observed.machines_away.is_empty());
    /// ```
    pub fn new(
        instances: Vec<ObservedInstance>,
        machines: Vec<Machine>,
        key_hash: &str,
        now: Timestamp,
        failure: impl Fn(&str) -> Option<Failure>,
    ) -> Self {
        let machines_away = machines_away(&machines, &instances);
        let fleet = Fleet {
            now,
            current_pub_key_hash: key_hash.to_owned(),
            instances: fleet_members(&instances, &machines)
                .into_iter()
                .map(|observed| planner_instance(&observed.record, observed.node.as_ref(), failure(observed.name())))
                .collect(),
            machines_away: u32::try_from(machines_away.len()).unwrap_or(u32::MAX),
        };
        ObservedFleet { fleet, instances, machines, machines_away }
    }

    /// The observed instance the planner calls `name`.
    pub fn instance(&self, name: &str) -> Option<&ObservedInstance> {
        self.instances.iter().find(|observed| observed.name() == name)
    }

    /// The plan under `policy` (the planner counts the Machines away against its budget).
    pub fn plan(&self, policy: &Policy) -> Plan {
        plan(&self.fleet, policy)
    }

    /// Takes `node` as the Node of instance `name` (as the API server answered a patch of it).
    pub(crate) fn update_node(&mut self, name: &str, node: Node) {
        if let Some(planned) = self.fleet.instances.iter_mut().find(|instance| instance.name == name) {
            planned.node = Some(node_state(&node));
        }
        if let Some(observed) = self.instances.iter_mut().find(|observed| observed.name() == name) {
            observed.node = Some(node);
        }
    }
}

/// A Machine to delete so its MachineSet recreates it with the new user data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// The record's name.
    pub record: String,
    /// The Machine's name (in `openshift-machine-api`).
    pub machine: String,
    /// The `pub-key-hash` its Node carries (absent when unannotated).
    pub node_key_hash: Option<String>,
}

/// An upgrade the kubelet skew rule holds back, with the Warning Event it is explained by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkewHold {
    /// The record's name.
    pub record: String,
    /// One warning per record, target and API server version.
    pub warning_key: String,
    /// The Event's note.
    pub note: String,
}

/// What the executor does of one plan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Records whose upgrade is under way (finished once their configure pass reported Ready).
    pub in_progress: Vec<String>,
    /// Records whose upgrade is admitted (started, or continued).
    pub upgrade: Vec<String>,
    /// Upgrades the skew rule holds back.
    pub held_by_skew: Vec<SkewHold>,
    /// Machines to delete now, within the budget, because they were configured with an old key.
    pub replace: Vec<Replacement>,
    /// BYOH records whose host to check with the new key now (bounded by the planner's concurrency limit).
    pub verify: Vec<String>,
    /// Records on an old key whose turn has not come, with what they wait for.
    pub key_waiting: Vec<(String, WaitReason)>,
    /// Records whose requested restart or reboot the budget admits now: the executor grants them.
    pub grant: Vec<(String, DisruptionKind)>,
    /// Records whose requested restart or reboot waits, with what for.
    pub disruption_waiting: Vec<(String, DisruptionKind, WaitReason)>,
}

impl Work {
    /// Sorts the decisions of `plan` for `observed` into the work they mean.
    pub fn of(plan: &Plan, observed: &ObservedFleet) -> Work {
        let mut work = Work::default();
        for decision in &plan.decisions {
            let name = decision.name.clone();
            match (&decision.action, &decision.reason) {
                (Action::Upgrade, Reason::UpgradeInProgress) => work.in_progress.push(name),
                (Action::Upgrade, Reason::VersionOutdated { .. }) => work.upgrade.push(name),
                (
                    Action::Wait { reason: WaitReason::KubeletSkew { kubelet, api_server } },
                    Reason::VersionOutdated { configured, target },
                ) => work.held_by_skew.push(SkewHold {
                    warning_key: format!("skew/{name}/{target}/{api_server}"),
                    note: format!(
                        "upgrade from {configured} to {target} waits: its kubelet {kubelet} must not run against the \
                         API server {api_server}; upgrade the control plane first"
                    ),
                    record: name,
                }),
                (Action::Rekey { method: RekeyMethod::ReplaceMachine }, _) => {
                    let machine =
                        observed.instance(&name).and_then(|observed| observed.record.spec.machine_name.clone());
                    let node_key_hash = observed
                        .fleet
                        .instances
                        .iter()
                        .find(|instance| instance.name == name)
                        .and_then(|instance| instance.node.as_ref()?.pub_key_hash.clone());
                    if let Some(machine) = machine {
                        work.replace.push(Replacement { record: name, machine, node_key_hash });
                    }
                }
                (Action::Rekey { method: RekeyMethod::VerifyByohKey }, _) => work.verify.push(name),
                (Action::Wait { reason }, Reason::KeyRotated) => work.key_waiting.push((name, reason.clone())),
                (Action::Disrupt { kind }, Reason::DisruptionRequested { .. }) => work.grant.push((name, *kind)),
                (Action::Wait { reason }, Reason::DisruptionRequested { kind }) => {
                    work.disruption_waiting.push((name, *kind, reason.clone()));
                }
                _ => {}
            }
        }
        work
    }

    /// Whether the fleet is entirely on the current key (nothing to do and nothing waiting).
    pub fn key_converged(&self) -> bool {
        self.replace.is_empty() && self.verify.is_empty() && self.key_waiting.is_empty()
    }
}

/// A Machine to delete because its host has refused the operator's key since `failing_since`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedMachine {
    /// The record's name.
    pub record: String,
    /// The Machine's name (in `openshift-machine-api`).
    pub machine: String,
    /// When the host began refusing the key (the condition's `lastTransitionTime`).
    pub failing_since: Timestamp,
}

/// What to do about the Machines whose host refuses the key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RefusedPlan {
    /// Machines to delete now, oldest refusal first.
    pub replace: Vec<RefusedMachine>,
    /// Machines past the grace period waiting for a unit of budget.
    pub waiting_for_budget: Vec<RefusedMachine>,
    /// Records still within the grace period, with when it ends.
    pub in_grace: Vec<(String, Timestamp)>,
}

impl RefusedPlan {
    /// The earliest end of a grace period still running (when the controller should look again).
    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.in_grace.iter().map(|(_, until)| *until).min()
    }
}

/// Decides which refused Machines of `observed` to replace at `now`, after the work of this reconcile: the records
/// in `claimed` (upgrades started, Machines replaced for the key) take budget first and are not replaced twice.
/// Pure and deterministic.
///
/// ```
/// use std::time::Duration;
/// use wmco_operator::fleet::{ObservedFleet, decide_refused};
/// let now = jiff::Timestamp::UNIX_EPOCH;
/// let observed = ObservedFleet::new(Vec::new(), Vec::new(), "0f1e", now, |_| None);
/// let refused = decide_refused(&observed, &[], Duration::from_secs(300), 1);
/// assert!(refused.replace.is_empty() && refused.next_deadline().is_none());
/// ```
pub fn decide_refused(
    observed: &ObservedFleet,
    claimed: &[&str],
    grace: Duration,
    max_unavailable: u32,
) -> RefusedPlan {
    let now = observed.fleet.now;
    let grace = SignedDuration::try_from(grace).unwrap_or(SignedDuration::MAX);
    let live_unignored: BTreeSet<&str> = observed
        .machines
        .iter()
        .filter(|machine| machine.metadata.deletion_timestamp.is_none() && !is_ignored(machine))
        .filter_map(|machine| machine.metadata.name.as_deref())
        .collect();
    let members = fleet_members(&observed.instances, &observed.machines);

    let mut refused = RefusedPlan::default();
    let mut candidates = Vec::new();
    for member in &members {
        let spec = &member.record.spec;
        let Some(machine) = spec.machine_name.as_deref() else { continue };
        let since = member.record.status.as_ref().and_then(|status| status.authentication_failing_since());
        let Some(failing_since) = since else { continue };
        if spec.origin != InstanceOrigin::Machine
            || !live_unignored.contains(machine)
            || claimed.contains(&member.name())
        {
            continue;
        }
        let until = failing_since.checked_add(grace).unwrap_or(Timestamp::MAX);
        if until > now {
            refused.in_grace.push((member.name().to_owned(), until));
            continue;
        }
        candidates.push(RefusedMachine {
            record: member.name().to_owned(),
            machine: machine.to_owned(),
            failing_since,
        });
    }
    candidates.sort_by(|left, right| (left.failing_since, &left.machine).cmp(&(right.failing_since, &right.machine)));

    let candidate_machines: BTreeSet<&str> = candidates.iter().map(|candidate| candidate.machine.as_str()).collect();
    let mut unavailable: BTreeSet<String> = observed.machines_away.iter().cloned().collect();
    for member in &members {
        let counted = counted_by_planner(&planner_instance(&member.record, member.node.as_ref(), None));
        if counted || claimed.contains(&member.name()) {
            unavailable.insert(budget_unit(member));
        }
    }
    unavailable.retain(|unit| !candidate_machines.contains(unit.as_str()));
    let held = u32::try_from(unavailable.len()).unwrap_or(u32::MAX);
    let mut budget_left = max_unavailable.saturating_sub(held);
    for candidate in candidates {
        if budget_left > 0 {
            budget_left -= 1;
            refused.replace.push(candidate);
        } else {
            refused.waiting_for_budget.push(candidate);
        }
    }
    refused
}

/// What one unit of budget held by `member` is called: its Machine's name, or `record <name>` for a BYOH host.
fn budget_unit(member: &ObservedInstance) -> String {
    match member.record.spec.machine_name.as_deref() {
        Some(machine) if member.record.spec.origin == InstanceOrigin::Machine => machine.to_owned(),
        _ => format!("record {}", member.name()),
    }
}
