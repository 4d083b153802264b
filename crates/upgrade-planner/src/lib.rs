//! Pure decision of which Windows instances to upgrade, rekey, restart or reboot, within one unavailability budget.
//!
//! [`plan`] takes a [`Fleet`] (every BYOH host and Windows Machine with the facts of its record and Node, the
//! restart or reboot its record asks for, and the Windows Machines away for a replacement, observed at one instant)
//! and a [`Policy`] (operator version, disruption budget, key-check bound, version skew) and returns a [`Plan`]:
//! one [`Decision`] per instance with an [`Action`] and a [`Reason`], plus [`Warning`]s and a [`Summary`]. It does
//! no IO: the operator's fleet executor and `wmco plan` feed it, and every action but [`Action::None`] and
//! [`Action::Wait`] is something the executor carries out. First-time configuration and removal are the instances
//! controller's (outside the budget): those instances get `None` with a reason saying so.
//!
//! One need per instance, first match wins:
//! 1. removed, or being deconfigured: `None` (the instances controller's);
//! 2. a granted restart or reboot: `Disrupt` (it goes on; already counted);
//! 3. not configured yet: `Disrupt` when a restart or reboot is requested (a first configuration's reboot),
//!    otherwise `None`;
//! 4. configured with a previous SSH key: `Rekey` (a Machine replacement makes a new host, so it supersedes any
//!    request; a BYOH key check takes no budget and restores SSH with the current key, which the request's pass
//!    needs);
//! 5. at another version, or an upgrade not finished: `Upgrade`. The upgrade's configure pass applies the current
//!    cluster settings and files too, so it subsumes a requested restart. A requested reboot is not subsumed: it is
//!    granted (`Disrupt`) as soon as the instance is out of service because of the operator, which the upgrade's
//!    first step makes it, so the host reboots inside the upgrade's drain at no extra budget and the upgrade goes on
//!    afterwards;
//! 6. a requested restart or reboot: `Disrupt`;
//! 7. otherwise `None` (`UpToDate` or `NodeNotReady`).
//!
//! Invariants (property-tested in `tests/properties.rs`):
//! - instances unavailable because of the operator (marked upgrading, in the `Upgrading` phase, with a granted
//!   disruption, cordoned by the operator, or configured but not Ready), plus the Windows Machines away, plus the
//!   ones the plan disrupts (upgrades, Machine replacements, granted requests) never exceed `max_unavailable`, BYOH
//!   and Machines together; when more are already unavailable, nothing more is disrupted. An instance already
//!   counted takes no more budget for any of its work. A request only waits for budget while the budget is spent;
//! - BYOH key checks ignore the budget but at most `max_concurrent_key_checks` are planned at once;
//! - decisions, and the hand-out of the budget, come oldest configured version first (unconfigured first of all),
//!   then by name, whatever the kind of work;
//! - an instance whose `retry_after` lies in the future gets no work;
//! - no kubelet is installed (upgrade, Machine replacement) while the payload's kubelet minor is newer than the API
//!   server's; restarts and reboots install none, so the skew rule does not hold them.

mod fleet;
mod need;
mod plan;
mod planner;
mod policy;

pub use fleet::{CordonedBy, Failure, Fleet, Instance, NodeState, RequestState, RequestedDisruption};
pub use plan::{Action, Decision, Plan, Reason, RekeyMethod, Summary, WaitReason, Warning};
pub use planner::plan;
pub use policy::{MAX_KUBELET_MINORS_BEHIND, MinorVersion, Policy, Skew};
pub use wmco_vocabulary::{DisruptionKind, InstanceOrigin, InstancePhase};
