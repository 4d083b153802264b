//! The Machine controller: keeps one `WindowsInstance` record per Windows Machine of the machine API, so the
//! instances controller configures, upgrades and deconfigures the Machine's host exactly like a BYOH host.
//!
//! - [`MachinesContext`] holds the cluster seams (records, Machines, Events) and the [`MachinesSettings`]
//!   (operator namespace, cluster platform).
//! - [`reconcile_machine`] applies `wmco-machines`' decision for one Machine: apply its record (origin Machine,
//!   address = the first IPv4 InternalIP, SSH user and expected Node name per platform), delete it when the Machine
//!   is being deleted, or leave it alone; [`machine_record`] is the record it applies.
//! - [`sweep_records`] reconciles every Machine record against its Machine (read by name), so the record of a
//!   Machine deleted while nobody watched is deleted too.
//! - [`controller`] runs both under kube-runtime: a `Controller` over the Windows Machines in
//!   `openshift-machine-api` (also triggered by their records) and a sweep after each Machine deletion.

mod context;
mod controller;
mod error;
mod reconcile;

#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tests;

pub use context::{MachinesContext, MachinesSettings};
pub use controller::{DEFAULT_CONCURRENCY, controller};
pub use error::MachinesError;
pub use reconcile::{MachineOutcome, machine_record, reconcile_machine, sweep_records};
