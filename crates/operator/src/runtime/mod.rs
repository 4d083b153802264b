//! The controller runtime, written once for every controller of the operator: what a reconcile error must tell
//! ([`ReconcilerError`]), how failed reconciles are retried ([`RetryBackoff`]), and how reconciles are timed,
//! counted and logged ([`tracked`], [`timed`], [`error_policy`], [`report`]). It is the operator's ground floor:
//! every controller imports it, it imports no controller (the composition root is `crate::process`).
//!
//! Each controller keeps its own domain: a public `reconcile_*` returning a domain outcome, a private mapping of
//! that outcome to a kube `Action`, and its retry timing as data (`first`, `max`) in its context. What it shares
//! lives here:
//!
//! - every error enum implements [`ReconcilerError`]: a stable `metric_label` for the `kind` of
//!   `wmco_reconcile_errors_total{controller,kind}` and `is_retryable` for the retry decision;
//! - every context of a kube `Controller` implements [`Controlled`] (its name, metrics, backoff and the key of an
//!   object), which gives it [`error_policy`] and [`tracked`] for free;
//! - the hand-rolled loops (upgrades, key rotation, the `windows-instances` loop, the Machine sweep) use
//!   [`RetryBackoff`] and [`timed`] directly.

mod backoff;
mod error;
mod report;

pub use backoff::RetryBackoff;
pub use error::ReconcilerError;
pub use report::{Controlled, error_policy, report, timed, tracked};
