//! Leader election through a Lease: the process stands by as follower and runs the controllers while it holds the
//! lease. Losing the lease aborts every controller at once and is an error (another replica may already lead); the
//! shutdown signal stops them gracefully and releases the lease, so the next leader need not wait for it to expire.

use std::future::Future;
use std::time::Duration;

use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::RunError;
use super::supervisor::{Controllers, Operator, start_controllers};
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
}

/// Takes part in leader election on `lease`: standing by as follower (ready), running controllers as leader, until
/// `shutdown` completes (controllers stopped gracefully, lease released: `Ok`) or the lease is lost (controllers
/// aborted: an error).
pub(crate) async fn lead_then_run(
    client: &Client,
    lease: &LeaseSettings,
    operator: &Operator,
    readiness: &Readiness,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let namespace = operator.config.namespace().to_owned();
    let identity = operator.config.flags.identity.clone();
    let manager = LeaseManagerBuilder::new(client.clone(), &lease.name)
        .with_namespace(&namespace)
        .with_identity(&identity)
        .build()
        .await
        .map_err(|source| RunError::Lease { namespace: namespace.clone(), name: lease.name.clone(), source })?;
    let (mut leading, lease_task) = manager.watch().await;
    readiness.set_ready(true);
    tracing::info!(lease = %lease.name, "standing by for the lease");
    let mut controllers: Option<Controllers> = None;
    tokio::pin!(shutdown);
    let outcome = loop {
        tokio::select! {
            () = &mut shutdown => break Ok(()),
            changed = leading.changed() => {
                if changed.is_err() {
                    break Err(RunError::ElectionStopped { name: lease.name.clone() });
                }
                match (is_leader(&mut leading), controllers.is_some()) {
                    (true, false) => {
                        tracing::info!(lease = %lease.name, identity, "acquired the lease: starting controllers");
                        controllers = Some(start_controllers(operator));
                        operator.metrics.set_leader(true);
                    }
                    (false, true) => break Err(RunError::LeaseLost { name: lease.name.clone() }),
                    _ => {}
                }
            }
        }
    };
    if let Some(controllers) = controllers {
        match &outcome {
            Ok(()) => controllers.stop_gracefully(lease.grace).await,
            Err(_) => controllers.abort().await,
        }
    }
    operator.metrics.set_leader(false);
    release_lease(leading, lease_task).await;
    outcome
}

fn is_leader(leading: &mut watch::Receiver<bool>) -> bool {
    *leading.borrow_and_update()
}

/// Closing the channel makes the lease manager release the lease; waits a bounded time for it.
async fn release_lease(
    leading: watch::Receiver<bool>,
    lease_task: JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
) {
    drop(leading);
    match tokio::time::timeout(RELEASE_TIMEOUT, lease_task).await {
        Ok(Ok(Ok(_))) => tracing::info!("lease released"),
        Ok(Ok(Err(error))) => tracing::warn!(error = %error, "could not release the lease"),
        Ok(Err(error)) => tracing::warn!(error = %error, "lease task"),
        Err(_) => tracing::warn!(timeout = ?RELEASE_TIMEOUT, "lease not released in time"),
    }
}
