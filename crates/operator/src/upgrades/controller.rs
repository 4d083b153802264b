//! The kube-runtime wiring of the upgrade executor: one loop that reconciles the whole fleet whenever a
//! `WindowsInstance` changes or a Windows Node changes in a way the plan reads (labels, annotations,
//! schedulability, readiness — not every status heartbeat), when a background drain ends, when a failed step's
//! backoff ends, and at least every [`RESYNC`]. Triggers arriving during a reconcile are coalesced into one
//! follow-up reconcile; reconciles never overlap, and each reads the fleet fresh from the API server.
//!
//! Exercised against a real API server by the e2e suite.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use wmco_cluster_client::names::{KUBERNETES_OS_LABEL, PUB_KEY_HASH_ANNOTATION, VERSION_ANNOTATION};
use wmco_cluster_client::types::WindowsInstance;

use super::observe::{annotation, is_marked, is_ready, is_unschedulable};
use super::{UpgradesContext, reconcile_fleet};
use crate::runtime::{ReconcilerError, RetryBackoff, timed};

/// The longest the executor goes without reconciling the fleet.
pub const RESYNC: Duration = Duration::from_secs(60);
/// The first retry after a failed reconcile (API server unreachable); doubled up to [`RESYNC`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The loop's name in the reconcile metrics (and its one key in the backoff).
const UPGRADES: &str = "upgrades";

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
    let record_changes = watcher(records, watcher::Config::default()).default_backoff().map(|event| {
        if let Err(error) = event {
            tracing::warn!(error = %error, "upgrade executor: watching WindowsInstances");
        }
    });
    let windows_nodes = watcher::Config::default().labels(&format!("{KUBERNETES_OS_LABEL}=windows"));
    let node_changes = fleet_node_changes(watcher(nodes, windows_nodes).default_backoff(), "upgrade executor");
    let mut triggers = futures::stream::select(record_changes, node_changes).boxed();

    let mut wait = Duration::ZERO;
    let retries = RetryBackoff::new(FIRST_RETRY, RESYNC);
    loop {
        tokio::select! {
            trigger = triggers.next() => if trigger.is_none() { return },
            () = ctx.next_drain_end() => {}
            () = tokio::time::sleep(wait) => {}
        }
        while let Some(Some(())) = triggers.next().now_or_never() {}
        match timed(&ctx.metrics, UPGRADES, reconcile_fleet(&ctx, Timestamp::now())).await {
            Ok(outcome) => {
                retries.on_success(UPGRADES);
                if !(outcome.started.is_empty() && outcome.finished.is_empty() && outcome.failed.is_empty()) {
                    tracing::info!(
                        started = ?outcome.started,
                        finished = ?outcome.finished,
                        failed = ?outcome.failed,
                        summary = %outcome.plan.summary,
                        "upgrade executor"
                    );
                }
                wait = until_next_retry(outcome.next_retry, Timestamp::now());
            }
            Err(error) => {
                ctx.metrics.record_error(error.metric_label());
                tracing::warn!(kind = error.metric_label(), error = %error, "upgrade executor: fleet reconcile failed");
                wait = retries.on_failure(UPGRADES);
            }
        }
    }
}

/// How long to sleep: until the next retry is due, at most [`RESYNC`].
fn until_next_retry(next_retry: Option<Timestamp>, now: Timestamp) -> Duration {
    next_retry
        .and_then(|due| Duration::try_from(due.duration_since(now)).ok())
        .map_or(RESYNC, |until_due| until_due.min(RESYNC))
}

/// One item per Node event that changes what the planner reads (Ready, unschedulable, the `upgrading` mark, the
/// version and `pub-key-hash` annotations); heartbeats that change nothing it reads are dropped. The key rotation
/// reads the same facts and uses it too; `watching` names the loop in the log line of a watch error.
pub(crate) fn fleet_node_changes(
    events: impl Stream<Item = Result<watcher::Event<Node>, watcher::Error>> + Send + 'static,
    watching: &'static str,
) -> impl Stream<Item = ()> + Send + 'static {
    let mut seen: HashMap<String, NodeFacts> = HashMap::new();
    events.filter_map(move |event| {
        let changed = match event {
            Ok(watcher::Event::Apply(node) | watcher::Event::InitApply(node)) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                let facts = NodeFacts::of(&node);
                seen.insert(name, facts.clone()).is_none_or(|previous| previous != facts)
            }
            Ok(watcher::Event::Delete(node)) => {
                seen.remove(node.metadata.name.as_deref().unwrap_or_default());
                true
            }
            Ok(watcher::Event::Init) => false,
            Ok(watcher::Event::InitDone) => true,
            Err(error) => {
                tracing::warn!(error = %error, "{watching}: watching Windows Nodes");
                false
            }
        };
        futures::future::ready(changed.then_some(()))
    })
}

/// What the planner (and the key rotation) reads from a Node.
#[derive(Clone, Debug, PartialEq, Eq)]
struct NodeFacts {
    ready: bool,
    unschedulable: bool,
    marked: bool,
    version: Option<String>,
    pub_key_hash: Option<String>,
}

impl NodeFacts {
    fn of(node: &Node) -> Self {
        NodeFacts {
            ready: is_ready(node),
            unschedulable: is_unschedulable(node),
            marked: is_marked(node),
            version: annotation(node, VERSION_ANNOTATION).map(str::to_owned),
            pub_key_hash: annotation(node, PUB_KEY_HASH_ANNOTATION).map(str::to_owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wmco_cluster_client::names::UPGRADING_LABEL;

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

    #[test]
    fn only_changes_the_planner_reads_trigger_a_reconcile() {
        let node = |ready: &str, unschedulable: bool| -> Node {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "win-1", "labels": {UPGRADING_LABEL: "true"}},
                "spec": {"unschedulable": unschedulable},
                "status": {"conditions": [{"type": "Ready", "status": ready}]}
            }))
            .unwrap()
        };
        let events = futures::stream::iter([
            Ok(watcher::Event::InitApply(node("True", false))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(node("True", false))),
            Ok(watcher::Event::Apply(node("True", true))),
            Ok(watcher::Event::Apply(node("False", true))),
        ]);
        let triggers: Vec<()> = futures::executor::block_on(fleet_node_changes(events, "upgrade executor").collect());
        assert_eq!(triggers.len(), 4);
    }
}
