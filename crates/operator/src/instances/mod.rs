//! The instances controller: turns the `windows-instances` ConfigMap into `WindowsInstance` records and each record
//! into a configured (or, once deleted, deconfigured) Windows node.
//!
//! - [`InstancesContext`] holds the cluster seams, the [`HostConnector`] that opens a host's transport, the
//!   per-host [`HostSession`](wmco_node_config::HostSession) cache, the [`HostFilesSource`](wmco_node_config::HostFilesSource)
//!   the caller supplies, and the [`InstancesSettings`].
//! - [`reconcile_inventory`] parses the ConfigMap with `wmco-instance-inventory`, applies one record per valid
//!   entry, publishes one Warning Event per problem and requests deletion of records whose entry is gone;
//!   [`plan_records`] is its pure diff.
//! - [`reconcile_instance`] configures a live record or deconfigures a deleted one and releases its finalizer; a
//!   record without a pinned host key first takes over the key stored for its host ([`stored_host_key`]).
//! - [`controller`] runs both under kube-runtime with bounded concurrency and backoff.

mod connector;
mod context;
mod controller;
mod error;
mod host_keys;
mod inventory;
mod reconcile;

#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tests;

pub use connector::{HostConnector, SshConnector};
pub use context::{InstancesContext, InstancesSettings};
pub use controller::{
    DEFAULT_CONCURRENCY, NODE_WAIT_RECHECK, READY_RECHECK, REBOOT_RECHECK, WAITING_RECHECK, controller,
};
pub use error::InstancesError;
pub use host_keys::{GO_HOST_KEYS_CONFIG_MAP, HostKeyImportError, ImportedHostKey, stored_host_key};
pub use inventory::{
    INSTANCES_CONFIG_MAP, InventoryOutcome, RecordPlan, desired_record, plan_records, reconcile_inventory,
};
pub use reconcile::{InstanceOutcome, reconcile_instance};
