//! The wmco operator's controllers, composed from the library crates; the `wmco` binary parses flags, verifies the
//! payload and calls [`process::run`].
//!
//! - [`csr`]: the CSR controller. It decides every pending kubelet CSR with `wmco-csr-approver` against a World
//!   built from the `WindowsInstance` records, the Node and the other pending CSRs, and approves or denies it
//!   through `/approval`, with one Event per decision on the `WindowsInstance` involved.
//! - [`files`]: the files each host must hold, rendered from the verified payload and the cluster material
//!   (CAs, node-bootstrapper token, windows_exporter TLS) that an async refresher keeps in a snapshot.
//! - [`operator_key`]: the operator's SSH key from Secret `cloud-private-key` and its `pub-key-hash`.
//! - [`shutdown`]: the graceful-shutdown signal: controllers running host steps stop taking work and finish
//!   the reconciles in flight.
//! - [`fleet_metrics`]: the per-phase instance gauges and the configure-duration histogram, from the records.
//! - [`metrics`]: the Prometheus registry and the typed API controllers record through.
//! - [`process`]: the composition root, [`process::run`]: one configuration and one set of cluster seams built at
//!   startup, leader election, the controllers' start and graceful stop.
//! - [`runtime`]: what every controller shares: the error trait (metric label, retryable or not), the per-key
//!   retry backoff, the generic error policy, and the timing and counting of reconciles.
//! - [`ssh`]: the one translation of a `WindowsInstance` into an SSH host configuration (address, user, key,
//!   port, pinned host key), shared by the instances connector and the key rotation's key check.
//! - [`health`]: the HTTP listener serving `/healthz` and `/readyz`.
//! - [`connection_limits`]: what a client of the health and metrics listeners may hold (connections at once,
//!   handshake and header timeouts, the request head's size).
//! - [`machines`]: the Machine controller. It keeps one `WindowsInstance` record per Windows Machine of the
//!   machine API (address, SSH user and Node name per platform), so the instances controller configures it.
//! - [`instances`]: the instances controller. It turns the `windows-instances` ConfigMap into `WindowsInstance`
//!   records and configures (or, once a record is deleted, deconfigures) each host with `wmco-node-config`.
//! - [`user_data`]: the user-data controller. It keeps Secret `windows-user-data` (`openshift-machine-api`) equal to
//!   the script rendered from `cloud-private-key`, reverting hand edits; a weak key gets a Warning Event instead.
//! - [`fleet`]: the fleet controller, the one loop that carries out the upgrade-planner's decisions for the whole
//!   fleet within the unavailability budget read from cluster state: upgrades (mark, cordon, drain, hand over to the
//!   configure pass, then uncordon and unmark) and the key rotation (after `cloud-private-key` changes it replaces
//!   the Machines configured with the old key and checks BYOH hosts with the new key, telling the admin what to add
//!   where).

pub mod connection_limits;
pub mod csr;
pub mod files;
pub mod fleet;
pub mod fleet_metrics;
pub mod health;
pub mod instances;
pub mod machines;
pub mod metrics;
pub mod metrics_server;
pub mod operator_key;
pub mod process;
pub mod process_metrics;
pub mod runtime;
pub mod shutdown;
pub mod ssh;
#[cfg(test)]
mod test_logs;
pub mod user_data;
