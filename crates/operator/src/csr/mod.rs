//! The CSR controller: decides every pending kubelet CSR with `wmco-csr-approver` and applies the verdict.
//!
//! - [`CsrContext`] holds the cluster seams (`Csrs`, `Nodes`, `InstanceRecords`, `EventPublisher`), the
//!   namespace, networks and clock ([`CsrSettings`]), and the per-node-name locks.
//! - [`reconcile_csr`] is one decision: observe, decide, act through `/approval`, record the bootstrap key, and
//!   publish one Event on the `WindowsInstance` involved.
//! - [`controller`] runs it under kube-runtime.
//!
//! Only BYOH records feed the World for now; Machine-backed records need the Machine object (issue #9's Machine
//! work), so their CSRs are left pending by rule A5.

mod context;
mod controller;
mod error;
mod reconcile;
mod world;

#[cfg(test)]
mod tests;

pub use context::{Clock, CsrContext, CsrSettings, system_clock};
pub use controller::{STATE_RECHECK, controller};
pub use error::CsrControllerError;
pub use reconcile::{APPROVED_CONDITION_REASON, CsrOutcome, KUBELET_SIGNERS, reconcile_csr};
