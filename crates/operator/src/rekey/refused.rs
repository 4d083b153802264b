//! The pure decision about Machines whose host refuses the operator's SSH key (issue 10): a Machine's record
//! carrying the `AuthenticationFailed` condition for longer than the grace period has its Machine deleted, so its
//! MachineSet recreates it from the current `windows-user-data`, within the unavailability budget the rotation and
//! upgrades share. BYOH hosts are never deleted (they stay Failed with the flow's Warning).
//!
//! A Machine already away (its host never became a Ready Node) costs no budget of its own: the units the others
//! hold (Machines away, instances the planner counts, this reconcile's rotation replacements) are taken off, and
//! each admitted replacement takes one. So with budget 1 the next refused Machine goes only once the previous one
//! came back, and refused Machines never wait on each other.

use std::collections::BTreeSet;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use wmco_cluster_client::types::InstanceOrigin;

use super::{RekeyInputs, RekeyPlan};
use crate::fleet::machines::{counted_by_planner, fleet_members, is_ignored};
use crate::fleet::{machines_away, planner_instance};

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
    /// The earliest end of a grace period still running (when the rotation should look again).
    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.in_grace.iter().map(|(_, until)| *until).min()
    }
}

/// Decides which refused Machines to replace now, after the rotation's own `plan` (whose replacements take budget
/// first and are not replaced twice). Pure and deterministic.
///
/// ```
/// use std::time::Duration;
/// use semver::Version;
/// use wmco_operator::rekey::{RekeyInputs, decide, decide_refused};
/// use wmco_upgrade_planner::Policy;
/// let policy = Policy::new(Version::new(1, 0, 0), Version::new(1, 33, 0), Version::new(1, 33, 0));
/// let inputs = RekeyInputs {
///     now: jiff::Timestamp::UNIX_EPOCH,
///     key_hash: "0f1e",
///     instances: &[],
///     machines: &[],
///     policy: &policy,
/// };
/// let refused = decide_refused(&inputs, &decide(&inputs), Duration::from_secs(300));
/// assert!(refused.replace.is_empty() && refused.next_deadline().is_none());
/// ```
pub fn decide_refused(inputs: &RekeyInputs<'_>, plan: &RekeyPlan, grace: Duration) -> RefusedPlan {
    let grace = SignedDuration::try_from(grace).unwrap_or(SignedDuration::MAX);
    let rotating: BTreeSet<&str> = plan.replace.iter().map(|replacement| replacement.machine.as_str()).collect();
    let live_unignored: BTreeSet<&str> = inputs
        .machines
        .iter()
        .filter(|machine| machine.metadata.deletion_timestamp.is_none() && !is_ignored(machine))
        .filter_map(|machine| machine.metadata.name.as_deref())
        .collect();
    let members = fleet_members(inputs.instances, inputs.machines);

    let mut refused = RefusedPlan::default();
    let mut candidates = Vec::new();
    for observed in &members {
        let spec = &observed.record.spec;
        let Some(machine) = spec.machine_name.as_deref() else { continue };
        let since = observed.record.status.as_ref().and_then(|status| status.authentication_failing_since());
        let Some(failing_since) = since else { continue };
        if spec.origin != InstanceOrigin::Machine || !live_unignored.contains(machine) || rotating.contains(machine) {
            continue;
        }
        let until = failing_since.checked_add(grace).unwrap_or(Timestamp::MAX);
        if until > inputs.now {
            refused.in_grace.push((observed.name().to_owned(), until));
            continue;
        }
        candidates.push(RefusedMachine {
            record: observed.name().to_owned(),
            machine: machine.to_owned(),
            failing_since,
        });
    }
    candidates.sort_by(|left, right| (left.failing_since, &left.machine).cmp(&(right.failing_since, &right.machine)));

    let candidate_machines: BTreeSet<&str> = candidates.iter().map(|candidate| candidate.machine.as_str()).collect();
    let mut unavailable: BTreeSet<String> = machines_away(inputs.machines, inputs.instances).into_iter().collect();
    for observed in &members {
        if counted_by_planner(&planner_instance(&observed.record, observed.node.as_ref(), None)) {
            let unit = match observed.record.spec.machine_name.as_deref() {
                Some(machine) if observed.record.spec.origin == InstanceOrigin::Machine => machine.to_owned(),
                _ => format!("record {}", observed.name()),
            };
            unavailable.insert(unit);
        }
    }
    unavailable.extend(rotating.iter().map(|machine| (*machine).to_owned()));
    unavailable.retain(|unit| !candidate_machines.contains(unit.as_str()));
    let held = u32::try_from(unavailable.len()).unwrap_or(u32::MAX);
    let mut budget_left = inputs.policy.max_unavailable.saturating_sub(held);
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
