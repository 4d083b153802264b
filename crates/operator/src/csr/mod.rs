//! The CSR controller: decides every pending kubelet CSR with `wmco-csr-approver` and applies the verdict.
//!
//! - [`CsrContext`] holds the cluster seams (`Csrs`, `Nodes`, `InstanceRecords`, `EventPublisher`), the watch-fed
//!   [`CsrCache`] of kubelet CSRs and records with their parsed [`CsrSummaries`], the namespace, networks and clock
//!   ([`CsrSettings`]), and the per-node-name locks.
//! - [`reconcile_csr`] is one decision: observe, decide, act through `/approval`, record the bootstrap key, and
//!   publish one Event on the `WindowsInstance` involved.
//! - [`controller`] runs it under kube-runtime: one controller per kubelet signer (field-selected watches, bounded
//!   concurrency), triggered also by record changes, over a [`WatchedCache`].
//! - [`managed_instance`], [`machine_instance`] and [`node_record`] turn records, Machines and Nodes into the
//!   approver's World records (`wmco diagnose` builds its World with them too).
//!
//! BYOH records feed the World directly. A Machine-backed record that expects the CSR's node name feeds it with its
//! Machine (creation time, addresses, nodeRef), read through the `Machines` given with
//! [`CsrContext::with_machines`]; without them Machine-backed records take no part, so their CSRs stay pending.

mod cache;
mod context;
mod controller;
mod error;
mod reconcile;
mod world;

#[cfg(test)]
mod fake_cache;
#[cfg(test)]
mod machine_tests;
#[cfg(test)]
mod tests;

pub use cache::{CsrCache, CsrSummaries, ReadyStore, WatchedCache, signal_ready};
pub use context::{Clock, CsrContext, CsrSettings, system_clock};
pub use controller::{CONCURRENCY_PER_SIGNER, FLOOD_RECHECK, STATE_RECHECK, controller};
pub use error::CsrControllerError;
pub use reconcile::{APPROVED_CONDITION_REASON, CsrOutcome, KUBELET_SIGNERS, reconcile_csr};
pub use world::{machine_instance, managed_instance, node_record};

/// The scenarios in `tests.rs` read errors' metric labels through `use super::*`.
#[cfg(test)]
use crate::runtime::ReconcilerError;
