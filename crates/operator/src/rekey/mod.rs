//! The key rotation: moves the fleet to the current `cloud-private-key` after the admin replaced it.
//!
//! Every Node the operator configured carries `windowsmachineconfig.openshift.io/pub-key-hash`, the hash of the
//! key it was configured with. When that differs from the current key's hash:
//!
//! - a **Machine** is replaced: its Machine is deleted, so its MachineSet recreates it from the re-rendered
//!   `windows-user-data` (the user-data controller's job), which authorizes the new key. Replacements take the
//!   unavailability budget (`--max-unavailable`) that upgrades use, handed out by `wmco-upgrade-planner`; a Machine
//!   being deleted, not yet recorded, or recorded but not yet a configured Ready Node counts against it, so with
//!   budget 1 the next Machine goes only once the previous one came back.
//! - a **BYOH host** is checked with the new key (a fresh SSH login, pinned host key honoured; at most
//!   `max_concurrent_configurations` at once). Accepted: its Node gets the new `pub-key-hash` (the Node change lets
//!   the instances controller, which already connects with the new key, take the host up again). Refused: a Warning
//!   Event `NewKeyNotAuthorized` on its `WindowsInstance` says which line to add to which file for which user on
//!   which host; the host is checked again every [`RekeySettings::retry`] and never blocks the others.
//!
//! A **Machine whose host refuses the operator's key** (its record carries the `AuthenticationFailed` condition,
//! written by `wmco-node-config`) for longer than [`RekeySettings::authentication_grace`] is replaced the same way,
//! within the same budget, with a Warning Event on the record and on the Machine. BYOH hosts are never deleted.
//!
//! The budget is shared with the upgrade executor through one lock ([`RekeyContext::with_budget_lock`], from one
//! [`SharedBudget`](crate::fleet::SharedBudget)) held from reading the fleet until the Machines are deleted. The
//! key is read from the Secret on every reconcile, so a rotation takes effect without a restart.
//!
//! - [`decide`]: the pure decision ([`RekeyInputs`] → [`RekeyPlan`]), taking the Windows Machines away from the
//!   fleet ([`crate::fleet::machines_away`]) off the budget; [`decide_refused`]: which Machines whose host refuses
//!   the key longer than [`RekeySettings::authentication_grace`] to replace ([`RefusedPlan`]).
//! - [`reconcile_rotation`]: one reconcile (observe, decide, act) → [`RekeyOutcome`].
//! - [`RekeyContext`] / [`RekeySettings`]: the seams ([`KeyChecker`] with [`SshKeyChecker`], and the fleet's
//!   [`WindowsMachines`](wmco_cluster_client::WindowsMachines)) and the policy.
//! - [`controller`]: the watches (the key Secret, records, Windows Nodes and Machines) driving
//!   [`crate::fleet::run_loop()`].

mod context;
mod controller;
mod decide;
mod error;
mod reconcile;
mod refused;

#[cfg(test)]
mod tests;

pub use context::{AUTHENTICATION_GRACE, KeyCheckFailure, KeyChecker, RekeyContext, RekeySettings, SshKeyChecker};
pub use controller::{RESYNC, controller};
pub use decide::{RekeyInputs, RekeyPlan, Replacement, decide};
pub use error::RekeyError;
pub use reconcile::{ADMINISTRATORS_AUTHORIZED_KEYS, RekeyOutcome, not_authorized_note, reconcile_rotation};
pub use refused::{RefusedMachine, RefusedPlan, decide_refused};
