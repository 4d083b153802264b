//! Leader election through a Lease ([`super::election`]): the process stands by as follower and runs the controllers
//! while it holds the lease. A term ends in one of three ways:
//! - the shutdown signal: the controllers stop gracefully while the lease is still renewed, then the lease is
//!   released, so the next leader need not wait for it to expire (`Ok`);
//! - no renewal succeeded for the renew deadline (the API server is unreachable from this process): every
//!   controller is aborted at once and the process exits with an error, before any other replica may take the lease
//!   over (it waits the full lease duration after it last saw the lease renewed);
//! - another replica holds the lease: the same, at once.
//!
//! The fenced process exits rather than standing by again: its watches, caches and in-process locks belong to the
//! term that ended, and the kubelet restarts the pod as a fresh follower.

use std::future::Future;
use std::time::Duration;

use kube::Client;

use super::RunError;
use super::election::{ElectionTimings, Elector, KubeLeaseStore, TermEnd};
use super::supervisor::{Operator, start_controllers};
use crate::health::Readiness;

/// How long shutdown waits for the lease to be released before exiting anyway.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(10);

/// The Lease of one operator deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseSettings {
    /// The Lease's name, in the operator namespace.
    pub name: String,
    /// How long a graceful stop lets the host reconciles in flight finish.
    pub grace: Duration,
    /// The lease duration, renew deadline and retry period.
    pub timings: ElectionTimings,
}

/// Takes part in leader election on `lease`: standing by as follower (ready), running controllers as leader, until
/// `shutdown` completes (controllers stopped gracefully, lease released: `Ok`) or the term ends without it
/// (controllers aborted: an error).
pub(crate) async fn lead_then_run(
    client: &Client,
    lease: &LeaseSettings,
    operator: &Operator,
    readiness: &Readiness,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let namespace = operator.config.namespace().to_owned();
    let identity = operator.config.flags.identity.clone();
    let store = KubeLeaseStore::new(client.clone(), &namespace, &lease.name);
    let mut elector = Elector::new(store, &identity, lease.timings);
    readiness.set_ready(true);
    tracing::info!(lease = %lease.name, "standing by for the lease");
    tokio::pin!(shutdown);
    tokio::select! {
        () = &mut shutdown => return Ok(()),
        () = elector.acquire() => {}
    }
    tracing::info!(lease = %lease.name, identity, "acquired the lease: starting controllers");
    let controllers = start_controllers(operator);
    operator.metrics.set_leader(true);
    let fenced = tokio::select! {
        () = &mut shutdown => None,
        end = elector.keep_renewing() => Some(end),
    };
    let outcome = match fenced {
        Some(end) => {
            tracing::error!(lease = %lease.name, identity, reason = ?end, "leadership ended: aborting every controller");
            controllers.abort().await;
            Err(term_error(&lease.name, lease.timings, end))
        }
        None => {
            let mut lost = None;
            controllers.stop_gracefully(lease.grace, async { lost = Some(elector.keep_renewing().await) }).await;
            match lost {
                Some(end) => Err(term_error(&lease.name, lease.timings, end)),
                None => {
                    release_lease(&mut elector).await;
                    Ok(())
                }
            }
        }
    };
    operator.metrics.set_leader(false);
    outcome
}

fn term_error(name: &str, timings: ElectionTimings, end: TermEnd) -> RunError {
    match end {
        TermEnd::RenewDeadlinePassed => {
            RunError::RenewDeadlinePassed { name: name.to_owned(), renew_deadline: timings.renew_deadline }
        }
        TermEnd::TakenOver { holder } => RunError::LeaseLost { name: name.to_owned(), holder },
    }
}

/// Releases the lease (only if this process still holds it); waits a bounded time.
async fn release_lease(elector: &mut Elector<KubeLeaseStore>) {
    match tokio::time::timeout(RELEASE_TIMEOUT, elector.release()).await {
        Ok(Ok(true)) => tracing::info!("lease released"),
        Ok(Ok(false)) => tracing::info!("lease not held: nothing to release"),
        Ok(Err(error)) => tracing::warn!(error = %error, "could not release the lease"),
        Err(_) => tracing::warn!(timeout = ?RELEASE_TIMEOUT, "lease not released in time"),
    }
}
