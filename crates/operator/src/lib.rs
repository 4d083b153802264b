//! The wmco operator's controllers, composed from the library crates; the `wmco` binary only wires them up.
//!
//! - [`csr`]: the CSR controller. It decides every pending kubelet CSR with `wmco-csr-approver` against a World
//!   built from the `WindowsInstance` records, the Node and the other pending CSRs, and approves or denies it
//!   through `/approval`, with one Event per decision on the `WindowsInstance` involved.
//! - [`instances`]: the instances controller. It turns the `windows-instances` ConfigMap into `WindowsInstance`
//!   records and configures (or, once a record is deleted, deconfigures) each host with `wmco-node-config`.

pub mod csr;
pub mod instances;
