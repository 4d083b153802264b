//! The configure / deconfigure flow for ONE Windows host (design §2 "node-config", §4 two-phase configuration),
//! written against the [`RemoteHost`](wmco_ssh_transport::RemoteHost) trait and the `wmco-cluster-client`
//! capability traits, so every path is unit-tested with fakes and the operator's reconcile calls it directly.
//!
//! - [`HostSession`]: one per host for the operator's lifetime; reuses the connection, remembers which
//!   content-addressed script files are on the host (a new one is first run as is and uploaded only if that
//!   fails), counts round trips and bytes.
//! - [`configure`]: one resumable, idempotent pass — pin the host key, read the [`HostIdentity`] (once), one
//!   batched state probe, `plan`, directories, uploads of changed files only (services holding a replaced binary
//!   stopped first), phase-1 services; once the Node exists the bootstrap kubeconfig is deleted; once it has its
//!   hybrid-overlay subnet, phase-2 services and Node labels; the version annotation and phase Ready once every
//!   service runs and the Node is Ready. Progress is written to the `WindowsInstance` status. A converged host
//!   costs one probe round trip and no upload.
//! - [`deconfigure`]: cordon, drain, stop and delete services (dependents first), remove directories and HNS
//!   networks, delete the Node — never deleting the Node of an unreachable host unless force-remove is set.
//! - Node ownership: the flow touches the host's Node only when it is the record's (its UID in the Node's
//!   `instance-uid` annotation, written on first sight of a Windows Node at the host's node IP); a Node or a
//!   name that is another's fails the pass with [`FlowError::NodeNameConflict`] and is never touched.
//! - Disruptions as requests: a pass that would stop services on a Node in service, or reboot the host, records a
//!   request in the record's `status.disruption` and waits ([`ConfigureState::WaitingForBudget`]) until the fleet
//!   executor grants it within the unavailability budget; the passes after the grant carry it out.
//! - [`preflight`]: on first contact, before anything is installed, the host's Windows build (and its update
//!   revision, against the cluster's VXLAN port), `Containers` feature and free space on `C:` ([`HostFacts`], read
//!   by the identity command in the same round trip); a failed check fails the pass with [`FlowError::Preflight`]
//!   naming every failing check.
//! - `leftovers`: what earlier configurations left that a pass removes: the CNI state before the first join, the
//!   Go operator's daemon kubeconfig ([`GO_DAEMON_KUBECONFIG`]).
//! - [`FlowError`]: names host, step and file; [`FlowError::is_retryable`] and [`FlowError::metric_label`].
//!
//! - `testing` (feature `testing`): the sample service settings and bootstrap files shared by flow and controller
//!   tests.
//!
//! Waiting for the Node is not done here: [`configure`] returns [`ConfigureState::WaitingForNode`] (or
//! `WaitingForSubnet`, `WaitingForReady`) and the controller calls it again when its Node watch fires; a host
//! whose services are still starting returns [`ConfigureState::WaitingForServices`] and is called again shortly.

mod configure;
mod deconfigure;
mod disruption;
mod drift;
mod error;
mod facts;
mod identity;
mod leftovers;
mod memo;
mod ownership;
mod pass;
mod preflight;
mod reboot;
mod record;
mod script;
mod session;

#[cfg(feature = "testing")]
pub mod testing;
#[cfg(test)]
mod tests;

pub use configure::configure;
pub use deconfigure::{
    DeconfigureInputs, DeconfigureOutcome, MANAGED_SERVICES, REMOVED_DIRECTORIES, deconfigure, force_remove_requested,
};
pub use drift::IdentityChange;
pub use error::{FlowError, FlowStep, SourceError};
pub use facts::{ContainersStep, FeatureState, HostFacts, PreflightCheck, PreflightFailure, containers_to_enable};
pub use identity::{HostIdentity, IdentityError, NodeNaming, expected_node_name};
pub use leftovers::GO_DAEMON_KUBECONFIG;
pub use pass::{
    ClusterAccess, ConfigureInputs, ConfigureOutcome, ConfigureState, FileStage, HostFilesSource, RebootStep,
    ServiceSettings, SessionSettings, StageFiles, WithheldService,
};
pub use preflight::{
    CHECKS, DEFAULT_VXLAN_PORT, DISK_HEADROOM_BYTES, HostCheck, KB5012637_UBR, SERVER_2019_BUILD, SERVER_2022_BUILD,
    SUPPORTED_BUILDS, check_host, preflight,
};
pub use reboot::{CONTAINERS_REBOOT_REASON, REBOOT_TIMEOUT, RESEND_AFTER};
pub use script::HYBRID_OVERLAY_NETWORKS;
pub use session::{HostSession, SessionCounters};
