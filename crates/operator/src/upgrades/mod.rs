//! The upgrade executor: carries out the `wmco-upgrade-planner`'s upgrade decisions for the whole fleet, BYOH
//! hosts and Machines together, within the unavailability budget (`--max-unavailable`).
//!
//! Every reconcile reads the fleet afresh from the API server (the `WindowsInstance` records and their Nodes: the
//! version annotation, the `windowsmachineconfig.openshift.io/upgrading` label, `spec.unschedulable`, the Ready
//! condition, the record's phase), so the budget holds across restarts and with two replicas; nothing but the
//! retry backoff lives in the process. For each instance the plan admits, the executor
//!
//! 1. marks its Node (label `windowsmachineconfig.openshift.io/upgrading=true`), which claims the budget;
//! 2. cordons and drains it (eviction API, PodDisruptionBudgets honoured);
//! 3. writes the record's phase `Upgrading`, the permission the instances controller's configure pass waits for
//!    (`wmco-node-config` returns `WaitingForUpgrade` for a Node at another version until then);
//! 4. once that pass reports Ready with the operator's version (record phase Ready, Node annotated and Ready),
//!    uncordons the Node and removes the mark.
//!
//! A failed drain leaves the Node marked and cordoned and is retried with backoff; an upgrade whose kubelet would
//! be newer than the API server waits with a Warning Event on the record.
//!
//! - [`UpgradesContext`] / [`UpgradeSettings`]: the cluster seams, the API server version source and the policy;
//!   the budget lock and Windows Machines it shares with the key rotation come from a
//!   [`SharedBudget`](crate::fleet::SharedBudget).
//! - [`reconcile_fleet`]: one whole-fleet reconcile; [`observe_fleet`] builds the planner's `Fleet` from cluster
//!   state (on [`crate::fleet::observe_instances`] and [`crate::fleet::planner_instance`]).
//! - [`controller`]: the watches (records and Windows Nodes) driving [`crate::fleet::run_loop()`], woken also when a
//!   background drain ends.
//! - `go_daemon`: after the upgrades, each reconcile deletes the Go operator's daemon identity (ServiceAccount, token
//!   Secret, RBAC) once no Windows Node may still run that daemon, with a `GoDaemonIdentityRemoved` Event.
//! - [`operator_version`]: the version written to Nodes; [`payload_kubelet_version`]: the kubelet the payload
//!   installs (for the skew rule).

mod context;
mod controller;
mod error;
mod go_daemon;
mod observe;
mod reconcile;
mod version;

#[cfg(test)]
mod tests;

pub use context::{UpgradeSettings, UpgradesContext};
pub use controller::{RESYNC, controller};
pub use error::UpgradesError;
pub use observe::{ObservedFleet, observe_fleet};
pub use reconcile::{FleetOutcome, reconcile_fleet};
pub use version::{operator_version, payload_kubelet_version};
