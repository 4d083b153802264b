//! The pure decision of a key rotation: which Machines to replace now and which BYOH hosts to check with the new
//! key, from the records, their Nodes and the Windows Machines as read, with the unavailability budget handed out
//! by `wmco-upgrade-planner` (the same budget the upgrade executor uses).
//!
//! The planner counts the instances it knows to be unavailable (marked, cordoned by the operator, configured but
//! not Ready). A replaced Machine leaves its fleet while it is away: its Machine is being deleted, then its
//! MachineSet's new Machine provisions and is configured. Those Machines are counted here, from cluster state, and
//! taken off the budget before the planner hands it out ([`machines_away`]), so a replacement starts only when the
//! previous one came back as a Ready Node.

use jiff::Timestamp;
use wmco_cluster_client::types::Machine;
use wmco_upgrade_planner::{Action, Fleet, Plan, Policy, Reason, RekeyMethod, WaitReason, plan};

use crate::fleet::machines::fleet_members;
use crate::fleet::{ObservedInstance, machines_away, planner_instance};

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
        machines_away: 0,
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

fn fleet_node_key_hash(fleet: &Fleet, name: &str) -> Option<String> {
    fleet
        .instances
        .iter()
        .find(|instance| instance.name == name)
        .and_then(|instance| instance.node.as_ref())
        .and_then(|node| node.pub_key_hash.clone())
}
