//! The watches of the upgrade executor, driving [`run_loop()`]: it reconciles the whole fleet whenever a
//! `WindowsInstance` changes or a Windows Node changes in a way the plan reads (labels, annotations,
//! schedulability, readiness — not every status heartbeat), when a background drain ends, when a failed step's
//! backoff ends, and at least every [`RESYNC`]. Triggers arriving during a reconcile are coalesced into one
//! follow-up reconcile; reconciles never overlap, and each reads the fleet fresh from the API server.
//!
//! Exercised against a real API server by the e2e suite.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use wmco_cluster_client::names::KUBERNETES_OS_LABEL;
use wmco_cluster_client::types::WindowsInstance;

use super::{UpgradesContext, UpgradesError, reconcile_fleet};
use crate::fleet::{fleet_node_changes, run_loop, watch_triggers};
use crate::runtime::{ReconcilerError, RetryBackoff};

/// The longest the executor goes without reconciling the fleet.
pub const RESYNC: Duration = Duration::from_secs(60);
/// The first retry after a failed reconcile (API server unreachable); doubled up to [`RESYNC`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The loop's name in the reconcile metrics (and its one key in the backoff).
pub(crate) const UPGRADES: &str = "upgrades";
/// The loop's name in its log lines.
const LOOP: &str = "upgrade executor";

/// Runs the executor until the watches end (the process shuts down).
///
/// ```no_run
/// # async fn run(client: kube::Client, context: std::sync::Arc<wmco_operator::upgrades::UpgradesContext>) {
/// wmco_operator::upgrades::controller(client, context).await;
/// # }
/// ```
pub async fn controller(client: Client, ctx: Arc<UpgradesContext>) {
    let records: Api<WindowsInstance> = Api::namespaced(client.clone(), &ctx.settings.namespace);
    let nodes: Api<Node> = Api::all(client);
    let record_changes =
        watch_triggers(watcher(records, watcher::Config::default()).default_backoff(), LOOP, "WindowsInstances");
    let windows_nodes = watcher::Config::default().labels(&format!("{KUBERNETES_OS_LABEL}=windows"));
    let node_changes = fleet_node_changes(watcher(nodes, windows_nodes).default_backoff(), LOOP);
    let triggers = futures::stream::select(record_changes, node_changes).boxed();

    let drains = Arc::clone(&ctx);
    let drain_ends = move || {
        let ctx = Arc::clone(&drains);
        async move { ctx.next_drain_end().await }
    };
    let reconciles = Arc::clone(&ctx);
    let reconcile = move || {
        let ctx = Arc::clone(&reconciles);
        async move { reconcile_and_log(&ctx).await }
    };
    let retries = RetryBackoff::new(FIRST_RETRY, RESYNC);
    run_loop(triggers, drain_ends, UPGRADES, &ctx.metrics, &retries, reconcile).await;
}

/// One fleet reconcile, logged; returns how long to wait for the next one.
async fn reconcile_and_log(ctx: &Arc<UpgradesContext>) -> Result<Duration, UpgradesError> {
    let outcome = reconcile_fleet(ctx, Timestamp::now()).await.inspect_err(|error| {
        tracing::warn!(kind = error.metric_label(), error = %error, "upgrade executor: fleet reconcile failed");
    })?;
    if !(outcome.started.is_empty() && outcome.finished.is_empty() && outcome.failed.is_empty()) {
        tracing::info!(
            started = ?outcome.started,
            finished = ?outcome.finished,
            failed = ?outcome.failed,
            summary = %outcome.plan.summary,
            "upgrade executor"
        );
    }
    Ok(until_next_retry(outcome.next_retry, Timestamp::now()))
}

/// How long to sleep: until the next retry is due, at most [`RESYNC`].
fn until_next_retry(next_retry: Option<Timestamp>, now: Timestamp) -> Duration {
    next_retry
        .and_then(|due| Duration::try_from(due.duration_since(now)).ok())
        .map_or(RESYNC, |until_due| until_due.min(RESYNC))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_sleeps_until_the_next_retry_at_most_one_resync() {
        let now: Timestamp = "2026-11-22T04:00:00Z".parse().unwrap();
        let soon: Timestamp = "2026-11-22T04:00:30Z".parse().unwrap();
        let late: Timestamp = "2026-11-22T05:00:00Z".parse().unwrap();
        assert_eq!(until_next_retry(Some(soon), now), Duration::from_secs(30));
        assert_eq!(until_next_retry(Some(late), now), RESYNC);
        assert_eq!(
            until_next_retry(Some(now), soon),
            RESYNC,
            "a retry already due was made by the reconcile that just ran"
        );
        assert_eq!(until_next_retry(None, now), RESYNC);
    }
}
