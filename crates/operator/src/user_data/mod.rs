//! The user-data controller: keeps Secret `windows-user-data` in `openshift-machine-api` (field `userData`), and its
//! mirror in `openshift-cluster-api` when that namespace exists, equal to the script `wmco-user-data` renders from
//! the operator's key in `cloud-private-key`.
//!
//! - [`UserDataContext`] holds the cluster seams (`Secrets`, `EventPublisher`), the operator namespace and the
//!   platform ([`UserDataSettings`]; a platform the cluster reports but this product does not know counts as `None`).
//! - [`reconcile_user_data`] is one pass: read the key Secret as watched, derive the public key, render, compare
//!   with the live `windows-user-data`, and server-side apply it only when it differs, so a hand edit is reverted
//!   and a converged cluster costs one GET. A weak or unusable key gets one Warning Event on `cloud-private-key`
//!   per distinct problem and leaves `windows-user-data` as it is. The same Secret is then mirrored into
//!   `openshift-cluster-api` while that namespace exists (one more GET for the namespace, one for the mirror); the
//!   operator's Role there comes from an optional kustomize component, so a Forbidden answer is one Warning Event
//!   naming that component, not an error.
//! - [`controller`] runs it under kube-runtime, watching both Secrets by name, and passes again every few minutes
//!   (the mirror's namespace is not watched: it may appear later, and its Secret may be edited by hand).
//!
//! Key material never reaches logs, Events or errors: only the public key's hash is logged.

mod context;
mod controller;
mod error;
mod reconcile;

#[cfg(test)]
mod tests;

pub use context::{UserDataContext, UserDataSettings};
pub use controller::controller;
pub use error::UserDataError;
pub use reconcile::{
    KEY_REFUSED_REASON, MIRROR_COMPONENT, MIRROR_FORBIDDEN_REASON, USER_DATA_KEY, USER_DATA_MIRROR_NAMESPACE,
    USER_DATA_NAMESPACE, USER_DATA_SECRET, UserDataOutcome, WEAK_KEY_REASON, desired_user_data_secret,
    reconcile_user_data,
};
