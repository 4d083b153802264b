//! The fleet controller: the one loop that carries out `wmco-upgrade-planner`'s decisions for the whole fleet, BYOH
//! hosts and Machines together, within the unavailability budget (`--max-unavailable`): upgrades to the operator's
//! version, the move to a rotated `cloud-private-key`, and the restarts and reboots hosts ask for. It is the one
//! budget authority: host passes only record requests in `status.disruption`; nothing else hands out a unit.
//!
//! Every reconcile reads the key, the API server's version and the fleet afresh from the API server (the
//! `WindowsInstance` records and their Nodes: the version and `pub-key-hash` annotations, the
//! `windowsmachineconfig.openshift.io/upgrading` label, `spec.unschedulable`, the Ready condition, the record's
//! phase; and the Windows Machines), so the budget holds across restarts and with two replicas; nothing but the
//! retry backoff and the Events already published lives in the process. It plans once, then
//!
//! 1. finishes the upgrades whose configure pass reported Ready with the operator's version (uncordon, unmark);
//! 2. starts the admitted upgrades: marks the Node (label `upgrading=true`, which claims the budget), cordons and
//!    drains it (eviction API, PodDisruptionBudgets honoured), then writes the record's phase `Upgrading`, the
//!    permission the instances controller's configure pass waits for;
//! 3. grants the admitted restart and reboot requests (Node marked, state `Granted`; the host's configure pass
//!    carries them out), after recording the reboots an admin, the Node's annotation or the host's markers ask for;
//! 4. replaces the admitted Machines on an old key, and those whose host refused the key past the grace period
//!    (the Machine is deleted; its MachineSet recreates it with the current user data);
//! 5. checks the admitted BYOH hosts with the new key (Node annotated, or a Warning Event saying what to add where);
//! 6. warns about upgrades the kubelet skew rule holds back, and removes the Go operator's daemon identity once no
//!    Windows Node may still run that daemon.
//!
//! A failed drain leaves the Node marked and cordoned and is retried with backoff; a failure on one host never
//! holds back the others.
//!
//! - [`FleetContext`] / [`FleetSettings`] ([`context`]): the seams, the policy and the process-local state;
//!   [`KeyChecker`] ([`key_check`], over SSH: [`SshKeyChecker`]) logs in to a host with the new key.
//! - [`controller()`] ([`controller`](mod@controller)): the triggers (records, Windows Nodes, Windows Machines, key
//!   changes, drain ends, retries, resync) and the coalescing loop.
//! - [`reconcile_fleet`] ([`reconcile`]): one reconcile → [`FleetOutcome`]; its steps in [`upgrade`] (finish, start)
//!   and [`rekey`] (Machine replacements, key checks → [`KeyRotation`]); `go_daemon` the Go daemon identity.
//! - [`decide`]: the pure part — [`ObservedFleet`] (the planner's `Fleet` and the one `plan` call), [`Work`] (what
//!   a plan's actions mean), [`decide_refused`] (Machines whose host refuses the key).
//! - [`observe`]: [`ObservedInstance`], [`observe_instances`] and [`planner_instance`]; [`machines`]:
//!   [`machines_away`]; [`node_changes`]: the watch triggers.
//! - `disruption`: restarts and reboots — the reboots asked for (admin token, the Node's `reboot-required`
//!   annotation, pending-reboot markers under `--reboot-policy`) recorded as requests, the admitted requests granted
//!   (Node marked, state `Granted`), Events for requests held back, the `wmco_disruption_requests` gauge.
//! - [`error`]: [`FleetError`]; [`api_server`]: [`ApiServerVersionError`]; [`version`]: [`operator_version`] and
//!   [`payload_kubelet_version`].

pub mod api_server;
pub mod context;
pub mod controller;
pub mod decide;
mod disruption;
pub mod error;
mod go_daemon;
pub mod key_check;
pub mod machines;
pub mod node_changes;
pub mod observe;
pub mod reconcile;
pub mod rekey;
pub mod upgrade;
pub mod version;

#[cfg(test)]
mod disruption_tests;
#[cfg(test)]
mod rekey_tests;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod upgrade_tests;

pub use api_server::ApiServerVersionError;
pub use context::{AUTHENTICATION_GRACE, FleetContext, FleetSettings};
pub use controller::{RESYNC, controller};
pub use decide::{ObservedFleet, RefusedMachine, RefusedPlan, Replacement, SkewHold, Work, decide_refused};
pub use error::FleetError;
pub use key_check::{KeyCheckFailure, KeyChecker, SshKeyChecker};
pub use machines::machines_away;
pub use node_changes::{fleet_node_changes, watch_triggers};
pub use observe::{ObservedInstance, observe_instances, planner_instance};
pub use reconcile::{FleetOutcome, reconcile_fleet};
pub use rekey::{ADMINISTRATORS_AUTHORIZED_KEYS, KeyRotation, not_authorized_note};
pub use version::{operator_version, payload_kubelet_version};
