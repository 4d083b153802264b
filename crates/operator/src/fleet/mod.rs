//! What the two whole-fleet loops share (the upgrade executor in [`crate::upgrades`] and the key rotation in
//! [`crate::rekey`]): both read the same records and Nodes, hand out the same unavailability budget, count the same
//! Windows Machines away from the fleet, and run the same coalescing loop. Both depend on this module; neither
//! depends on the other.
//!
//! - [`observe`]: [`ObservedInstance`] and [`observe_instances`] (every record of the operator namespace with its
//!   Node, read fresh) and [`planner_instance`] (the planner's view of one of them; the Node accessors are
//!   `wmco_cluster_client::NodeExt`).
//! - [`node_changes`]: [`fleet_node_changes`] (Node events that change what the planner reads) and
//!   [`watch_triggers`] (any other watch as loop triggers).
//! - [`machines`]: [`machines_away`], the Machines unavailable outside the planner's view (the seam is
//!   `wmco_cluster_client::WindowsMachines`).
//! - [`budget`]: [`SharedBudget`], the budget lock and Machines source every piece of budgeted work shares.
//! - [`disruption`]: [`BudgetedDisruptions`], the same budget handed to configure passes that restart services on
//!   a Node in service (the instances controller's `DisruptionGate`).
//! - [`api_server`]: [`ApiServerVersionError`], the loops' words for an unknown API server version (read through
//!   `wmco_cluster_client::ClusterVersion` for the skew rule).
//! - [`run_loop`](mod@run_loop): [`run_loop()`], the trigger / coalesce / backoff loop both loops run on.

pub mod api_server;
pub mod budget;
pub mod disruption;
pub mod machines;
pub mod node_changes;
pub mod observe;
pub mod run_loop;

pub use api_server::ApiServerVersionError;
pub use budget::SharedBudget;
pub use disruption::BudgetedDisruptions;
pub use machines::machines_away;
pub use node_changes::{fleet_node_changes, watch_triggers};
pub use observe::{ObserveError, ObservedInstance, observe_instances, planner_instance};
pub use run_loop::run_loop;
