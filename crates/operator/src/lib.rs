//! The wmco operator's controllers, composed from the library crates; the `wmco` binary only wires them up.
//!
//! - [`csr`]: the CSR controller. It decides every pending kubelet CSR with `wmco-csr-approver` against a World
//!   built from the `WindowsInstance` records, the Node and the other pending CSRs, and approves or denies it
//!   through `/approval`, with one Event per decision on the `WindowsInstance` involved.

pub mod csr;
