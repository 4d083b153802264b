//! The pure decision of a key rotation: which Machines to replace now and which BYOH hosts to check with the new
//! key, from the records, their Nodes and the Windows Machines as read, with the unavailability budget handed out
//! by `wmco-upgrade-planner` (the same budget the upgrade executor uses).
//!
//! The planner counts the instances it knows to be unavailable (marked, cordoned by the operator, configured but
//! not Ready). A replaced Machine leaves its fleet while it is away: its Machine is being deleted, then its
//! MachineSet's new Machine provisions and is configured. Those Machines are counted here, from cluster state, and
//! taken off the budget before the planner hands it out, so a replacement starts only when the previous one came
//! back as a Ready Node.

use std::collections::BTreeSet;

use jiff::Timestamp;
use wmco_cluster_client::types::{InstanceOrigin, Machine};
use wmco_machines::names::IGNORE_KEY;
use wmco_upgrade_planner::{
    Action, CordonedBy, Fleet, Instance, Phase, Plan, Policy, Reason, RekeyMethod, WaitReason, plan,
};

use crate::upgrades::{ObservedInstance, planner_instance};

/// What the decision reads, observed at one instant.
#[derive(Clone, Debug)]
pub struct RekeyInputs<'a> {
    /// When the facts were read.
    pub now: Timestamp,
    /// `pub-key-hash` of the current `cloud-private-key`.
    pub key_hash: &'a str,
    /// Every record of the operator namespace with its Node.
    pub instances: &'a [ObservedInstance],
    /// Every Windows Machine (label `machine.openshift.io/os-id: Windows`) of `openshift-machine-api`.
    pub machines: &'a [Machine],
    /// The planner's policy (operator version, budget, concurrency, versions for the skew rule).
    pub policy: &'a Policy,
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

/// What to do now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RekeyPlan {
    /// Machines to delete now, within the budget.
    pub replace: Vec<Replacement>,
    /// BYOH records whose host to check with the new key now (bounded by the planner's concurrency limit).
    pub verify: Vec<String>,
    /// Records on an old key whose turn has not come, with what they wait for.
    pub waiting: Vec<(String, WaitReason)>,
    /// Windows Machines unavailable outside the planner's view (being deleted, not yet recorded, or recorded but
    /// not yet a configured Ready Node), taken off the budget.
    pub machines_away: Vec<String>,
    /// The planner's plan the lists come from.
    pub plan: Plan,
}

impl RekeyPlan {
    /// Whether the fleet is entirely on the current key (nothing to do and nothing waiting).
    pub fn is_converged(&self) -> bool {
        self.replace.is_empty() && self.verify.is_empty() && self.waiting.is_empty()
    }
}

/// Decides the rotation's next steps. Pure and deterministic.
///
/// ```
/// use semver::Version;
/// use wmco_operator::rekey::{RekeyInputs, decide};
/// use wmco_upgrade_planner::Policy;
/// let policy = Policy::new(Version::new(1, 0, 0), Version::new(1, 33, 0), Version::new(1, 33, 0));
/// let inputs = RekeyInputs {
///     now: jiff::Timestamp::UNIX_EPOCH,
///     key_hash: "0f1e",
///     instances: &[],
///     machines: &[],
///     policy: &policy,
/// };
/// assert!(decide(&inputs).is_converged());
/// ```
pub fn decide(inputs: &RekeyInputs<'_>) -> RekeyPlan {
    let in_fleet = fleet_members(inputs.instances, inputs.machines);
    let fleet = Fleet {
        now: inputs.now,
        current_pub_key_hash: inputs.key_hash.to_owned(),
        instances: in_fleet
            .iter()
            .map(|observed| planner_instance(&observed.record, observed.node.as_ref(), None))
            .collect(),
    };
    let machines_away = machines_away(inputs.machines, inputs.instances);
    let away = u32::try_from(machines_away.len()).unwrap_or(u32::MAX);
    let policy =
        Policy { max_unavailable: inputs.policy.max_unavailable.saturating_sub(away), ..inputs.policy.clone() };
    let plan = plan(&fleet, &policy);

    let mut replace = Vec::new();
    let mut verify = Vec::new();
    let mut waiting = Vec::new();
    for decision in &plan.decisions {
        let Some(observed) = in_fleet.iter().find(|observed| observed.name() == decision.name) else {
            continue;
        };
        match &decision.action {
            Action::Rekey { method: RekeyMethod::ReplaceMachine } => {
                if let Some(machine) = observed.record.spec.machine_name.clone() {
                    replace.push(Replacement {
                        record: decision.name.clone(),
                        machine,
                        node_key_hash: fleet_node_key_hash(&fleet, &decision.name),
                    });
                }
            }
            Action::Rekey { method: RekeyMethod::VerifyByohKey } => verify.push(decision.name.clone()),
            Action::Wait { reason } if decision.reason == Reason::KeyRotated => {
                waiting.push((decision.name.clone(), reason.clone()));
            }
            _ => {}
        }
    }
    RekeyPlan { replace, verify, waiting, machines_away, plan }
}

/// The records that take part in the plan.
pub(super) fn fleet_members<'a>(instances: &'a [ObservedInstance], machines: &[Machine]) -> Vec<&'a ObservedInstance> {
    let live_machines: BTreeSet<&str> = machines
        .iter()
        .filter(|machine| machine.metadata.deletion_timestamp.is_none())
        .filter_map(|machine| machine.metadata.name.as_deref())
        .collect();
    instances.iter().filter(|observed| belongs_to_fleet(observed, &live_machines)).collect()
}

/// A record takes part in the plan unless it is being deleted, or it is a Machine's record whose Machine is gone or
/// being deleted (that Machine is counted in [`machines_away`] instead).
fn belongs_to_fleet(observed: &ObservedInstance, live_machines: &BTreeSet<&str>) -> bool {
    if observed.record.metadata.deletion_timestamp.is_some() {
        return false;
    }
    match observed.record.spec.origin {
        InstanceOrigin::Byoh => true,
        InstanceOrigin::Machine => {
            observed.record.spec.machine_name.as_deref().is_some_and(|machine| live_machines.contains(machine))
        }
    }
}

/// The Windows Machines (not marked ignored) that are unavailable but not counted by `wmco-upgrade-planner`:
/// being deleted, without a live record (provisioning, or recorded but the record is going), or recorded but not
/// yet a configured Ready Node while the planner does not count them; and the Machines already gone whose record is
/// still there (being deconfigured), so a Machine removed before its MachineSet created the replacement still holds
/// its unit. Sorted by name. Budgeted work other than the rotation (upgrades) can take them off its budget the same
/// way.
///
/// ```
/// use wmco_cluster_client::types::Machine;
/// let provisioning: Machine = serde_json::from_value(serde_json::json!({
///     "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
///     "metadata": {"name": "win-d", "namespace": "openshift-machine-api"},
///     "spec": {}, "status": {"phase": "Provisioning"}
/// }))?;
/// assert_eq!(wmco_operator::rekey::machines_away(&[provisioning], &[]), vec!["win-d"]);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn machines_away(machines: &[Machine], instances: &[ObservedInstance]) -> Vec<String> {
    let in_fleet = fleet_members(instances, machines);
    let mut away: Vec<String> = machines
        .iter()
        .filter(|machine| !is_ignored(machine))
        .filter_map(|machine| {
            let name = machine.metadata.name.as_deref()?;
            if machine.metadata.deletion_timestamp.is_some() {
                return Some(name.to_owned());
            }
            let observed = in_fleet.iter().find(|observed| observed.record.spec.machine_name.as_deref() == Some(name));
            match observed.map(|observed| planner_instance(&observed.record, observed.node.as_ref(), None)) {
                None => Some(name.to_owned()),
                Some(instance) if !is_serving(&instance) && !counted_by_planner(&instance) => Some(name.to_owned()),
                Some(_) => None,
            }
        })
        .collect();
    let listed: BTreeSet<&str> = machines.iter().filter_map(|machine| machine.metadata.name.as_deref()).collect();
    let vanished = instances.iter().filter_map(|observed| {
        let machine = observed.record.spec.machine_name.as_deref()?;
        let vanished = observed.record.spec.origin == InstanceOrigin::Machine && !listed.contains(machine);
        vanished.then(|| machine.to_owned())
    });
    away.extend(vanished);
    away.sort();
    away.dedup();
    away
}

/// Whether the Machine carries the ignore mark (as an annotation or a label), which keeps it out of the operator's
/// hands.
pub(super) fn is_ignored(machine: &Machine) -> bool {
    [machine.metadata.annotations.as_ref(), machine.metadata.labels.as_ref()]
        .into_iter()
        .flatten()
        .any(|map| map.get(IGNORE_KEY).map(String::as_str) == Some("true"))
}

/// A configured, Ready Node.
fn is_serving(instance: &Instance) -> bool {
    instance.node.as_ref().is_some_and(|node| node.ready && node.configured_version.is_some())
}

/// Whether the planner already counts `instance` as unavailable because of the operator (its rule: marked,
/// cordoned by the operator, configured but not Ready, or in phase Upgrading).
pub(super) fn counted_by_planner(instance: &Instance) -> bool {
    let node_disrupted = instance.node.as_ref().is_some_and(|node| {
        node.upgrading
            || node.cordoned_by == Some(CordonedBy::Operator)
            || (node.configured_version.is_some() && !node.ready)
    });
    node_disrupted || instance.phase == Phase::Upgrading
}

fn fleet_node_key_hash(fleet: &Fleet, name: &str) -> Option<String> {
    fleet
        .instances
        .iter()
        .find(|instance| instance.name == name)
        .and_then(|instance| instance.node.as_ref())
        .and_then(|node| node.pub_key_hash.clone())
}
