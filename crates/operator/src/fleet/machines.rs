//! The Windows Machines of the machine API as budgeted work sees them: [`machines_away`], the Machines unavailable
//! outside the planner's view, taken off the unavailability budget before the planner hands it out. (Which listing
//! a cluster gets is decided once, in `wmco_cluster_client::Seams::for_client`.)

use std::collections::BTreeSet;

use wmco_cluster_client::types::{InstanceOrigin, Machine};
use wmco_machines::names::IGNORE_KEY;
use wmco_upgrade_planner::{CordonedBy, Instance, InstancePhase};

use super::{ObservedInstance, planner_instance};

/// The records that take part in the plan.
pub(crate) fn fleet_members<'a>(instances: &'a [ObservedInstance], machines: &[Machine]) -> Vec<&'a ObservedInstance> {
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
/// its unit. Sorted by name. The planner's budget takes them off.
///
/// ```
/// use wmco_cluster_client::types::Machine;
/// let provisioning: Machine = serde_json::from_value(serde_json::json!({
///     "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
///     "metadata": {"name": "win-d", "namespace": "openshift-machine-api"},
///     "spec": {}, "status": {"phase": "Provisioning"}
/// }))?;
/// assert_eq!(wmco_operator::fleet::machines_away(&[provisioning], &[]), vec!["win-d"]);
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
pub(crate) fn is_ignored(machine: &Machine) -> bool {
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
pub(crate) fn counted_by_planner(instance: &Instance) -> bool {
    let node_disrupted = instance.node.as_ref().is_some_and(|node| {
        node.upgrading
            || node.cordoned_by == Some(CordonedBy::Operator)
            || (node.configured_version.is_some() && !node.ready)
    });
    node_disrupted || instance.phase == InstancePhase::Upgrading
}

#[cfg(test)]
mod tests {
    use wmco_cluster_client::fake::objects;

    use super::*;

    fn machine_record(name: &str, machine: &str) -> ObservedInstance {
        let record = objects::record(name).from_machine(machine, "10.0.0.5").build();
        ObservedInstance { record, node: None }
    }

    #[test]
    fn ignored_machines_are_never_away_and_terminating_or_vanished_ones_are() {
        let machines = [
            objects::machine("win-ignored").annotated(IGNORE_KEY, "true").running().build(),
            objects::machine("win-going")
                .deleting_since("2026-11-22T04:00:00Z".parse().unwrap(), "f")
                .running()
                .build(),
            objects::machine("win-new").running().build(),
        ];
        let instances = [machine_record("gone", "win-vanished")];
        assert_eq!(machines_away(&machines, &instances), ["win-going", "win-new", "win-vanished"]);
        assert!(is_ignored(&machines[0]) && !is_ignored(&machines[2]));
    }
}
