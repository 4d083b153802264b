//! The planner's `Fleet` from cluster state: every `WindowsInstance` record in the operator namespace with its
//! Node ([`observe_instances`], read fresh from the API server, so the executor's own marks from the last reconcile
//! are always counted), with the executor's pending step failures.

use jiff::Timestamp;
use wmco_upgrade_planner::Fleet;

use super::{UpgradesContext, UpgradesError};
use crate::fleet::{ObservedInstance, observe_instances, planner_instance};

/// The fleet as the planner sees it, and what it was built from.
#[derive(Clone, Debug)]
pub struct ObservedFleet {
    /// The planner's input.
    pub fleet: Fleet,
    /// The records and Nodes, in record-name order.
    pub instances: Vec<ObservedInstance>,
}

impl ObservedFleet {
    /// The observed instance the planner calls `name`.
    pub fn instance(&self, name: &str) -> Option<&ObservedInstance> {
        self.instances.iter().find(|observed| observed.name() == name)
    }
}

/// Reads every record of the operator namespace and each one's Node, and builds the planner's fleet at `now`
/// (with the executor's pending step failures as backoff).
///
/// # Errors
/// [`UpgradesError::ListRecords`] or [`UpgradesError::Step`] (reading a Node) when the API server fails.
pub async fn observe_fleet(ctx: &UpgradesContext, now: Timestamp) -> Result<ObservedFleet, UpgradesError> {
    let instances = observe_instances(ctx.records.as_ref(), ctx.nodes.as_ref(), &ctx.settings.namespace).await?;
    let fleet = Fleet {
        now,
        current_pub_key_hash: ctx.settings.pub_key_hash.clone(),
        instances: instances
            .iter()
            .map(|observed| {
                planner_instance(&observed.record, observed.node.as_ref(), ctx.pending_failure(observed.name()))
            })
            .collect(),
        machines_away: 0,
    };
    Ok(ObservedFleet { fleet, instances })
}
