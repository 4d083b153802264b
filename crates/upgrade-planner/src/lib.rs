//! Pure decision of which Windows instances to configure, upgrade, rekey or deconfigure, within a budget.
//!
//! [`plan`] takes a [`Fleet`] (every BYOH host and Windows Machine with the facts of its record and Node, observed at
//! one instant) and a [`Policy`] (operator version, disruption budget, concurrency bound, version skew) and returns a
//! [`Plan`]: one [`Decision`] per instance with an [`Action`] and a [`Reason`], plus [`Warning`]s and a [`Summary`].
//! It does no IO: the operator's controllers and `wmco plan` feed it and carry the plan out.
//!
//! Invariants (property-tested in `tests/properties.rs`):
//! - instances unavailable because of the operator (marked upgrading, in the `Upgrading` phase, cordoned by the
//!   operator, or configured but not Ready) plus the ones the plan disrupts (upgrades, Machine replacements) never
//!   exceed `max_unavailable`, BYOH and Machines together; when more are already unavailable, nothing is disrupted;
//! - first-time configurations, deconfigurations and BYOH key checks ignore the budget but never start beyond
//!   `max_concurrent_configurations`;
//! - decisions come oldest configured version first, then by name;
//! - an instance whose `retry_after` lies in the future gets no work;
//! - no kubelet is installed (configure, upgrade, Machine replacement) while the payload's kubelet minor is newer
//!   than the API server's.

mod fleet;
mod plan;
mod planner;
mod policy;

pub use fleet::{CordonedBy, Failure, Fleet, Instance, NodeState};
pub use plan::{Action, Decision, Plan, Reason, RekeyMethod, Summary, WaitReason, Warning};
pub use planner::plan;
pub use policy::{MAX_KUBELET_MINORS_BEHIND, MinorVersion, Policy, Skew};
pub use wmco_vocabulary::{InstanceOrigin, InstancePhase};
