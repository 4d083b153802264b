//! The watches of the rotation, driving [`run_loop()`]: it reconciles the whole fleet when `cloud-private-key`
//! changes (as the one `operator_key::KeyWatcher` announces it), when a Windows Node changes in a way the decision reads (its `pub-key-hash`, version, readiness,
//! schedulability, the `upgrading` mark, or it comes or goes — not status heartbeats), when a Windows Machine or a
//! `WindowsInstance` changes, after [`RekeySettings::retry`](super::RekeySettings) while a host waits for the
//! admin, just after a refused Machine's grace period ends, and at least every [`RESYNC`]. Triggers arriving during
//! a reconcile are coalesced into one follow-up reconcile; reconciles never overlap, and each reads the key and the
//! fleet fresh from the API server.
//!
//! Exercised against a real API server by the e2e suite.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use wmco_cluster_client::names::KUBERNETES_OS_LABEL;
use wmco_cluster_client::types::{Machine, WindowsInstance};
use wmco_machines::names::{MACHINE_API_NAMESPACE, OS_ID_LABEL, WINDOWS_OS_ID};

use super::{RekeyContext, RekeyError, reconcile_rotation};
use crate::fleet::{fleet_node_changes, run_loop, watch_triggers};
use crate::runtime::{ReconcilerError, RetryBackoff};

/// The longest the rotation goes without reconciling the fleet.
pub const RESYNC: Duration = Duration::from_secs(60);
/// The first retry after a failed reconcile (key unusable, API server unreachable); doubled up to [`RESYNC`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The loop's name in the reconcile metrics (and its one key in the backoff).
const REKEY: &str = "rekey";
/// The loop's name in its log lines.
const LOOP: &str = "key rotation";

/// Runs the rotation loop until the watches end (the process shuts down). `watch_machines` is `false` where the
/// machine API is not served (plain Kubernetes: BYOH hosts only); `key_changes` yields when the operator key
/// changed ([`KeyReceiver::changes`](crate::operator_key::KeyReceiver::changes)).
///
/// ```no_run
/// # async fn run(
/// #     client: kube::Client,
/// #     context: std::sync::Arc<wmco_operator::rekey::RekeyContext>,
/// #     keys: wmco_operator::operator_key::KeyReceiver,
/// # ) {
/// wmco_operator::rekey::controller(client, context, true, keys.changes()).await;
/// # }
/// ```
pub async fn controller(
    client: Client,
    ctx: Arc<RekeyContext>,
    watch_machines: bool,
    key_changes: impl Stream<Item = ()> + Send + 'static,
) {
    let namespace = ctx.settings.namespace.clone();
    let record_changes = watch_triggers(
        watcher(Api::<WindowsInstance>::namespaced(client.clone(), &namespace), watcher::Config::default())
            .default_backoff(),
        LOOP,
        "WindowsInstances",
    );
    let windows_nodes = watcher::Config::default().labels(&format!("{KUBERNETES_OS_LABEL}=windows"));
    let node_changes =
        fleet_node_changes(watcher(Api::<Node>::all(client.clone()), windows_nodes).default_backoff(), LOOP);
    let mut triggers =
        futures::stream::select(futures::stream::select(key_changes, record_changes), node_changes).boxed();
    if watch_machines {
        let windows_machines = watcher::Config::default().labels(&format!("{OS_ID_LABEL}={WINDOWS_OS_ID}"));
        let machines = Api::<Machine>::namespaced(client, MACHINE_API_NAMESPACE);
        let machine_changes =
            watch_triggers(watcher(machines, windows_machines).default_backoff(), LOOP, "Windows Machines");
        triggers = futures::stream::select(triggers, machine_changes).boxed();
    }

    let reconciles = Arc::clone(&ctx);
    let reconcile = move || {
        let ctx = Arc::clone(&reconciles);
        async move { reconcile_and_log(&ctx).await }
    };
    let retries = RetryBackoff::new(FIRST_RETRY, RESYNC);
    run_loop(triggers, std::future::pending, REKEY, &ctx.metrics, &retries, reconcile).await;
}

/// One rotation reconcile, logged; returns how long to wait for the next one.
async fn reconcile_and_log(ctx: &RekeyContext) -> Result<Duration, RekeyError> {
    let outcome = reconcile_rotation(ctx, Timestamp::now()).await.inspect_err(|error| {
        tracing::warn!(kind = error.metric_label(), error = %error, "key rotation: reconcile failed");
    })?;
    let quiet = outcome.replaced.is_empty()
        && outcome.replaced_refused.is_empty()
        && outcome.rekeyed.is_empty()
        && !outcome.needs_retry();
    if !quiet {
        tracing::info!(
            replaced = ?outcome.replaced,
            replaced_after_refused_logins = ?outcome.replaced_refused,
            refused_waiting_for_budget = outcome.refused.waiting_for_budget.len(),
            rekeyed = ?outcome.rekeyed,
            not_authorized = ?outcome.not_authorized,
            failed = ?outcome.failed,
            waiting = outcome.plan.waiting.len(),
            machines_away = ?outcome.plan.machines_away,
            "key rotation"
        );
    }
    let mut wait = if outcome.needs_retry() { ctx.settings.retry.min(RESYNC) } else { RESYNC };
    if let Some(deadline) = outcome.refused.next_deadline() {
        wait = wait.min(until(deadline, Timestamp::now()));
    }
    Ok(wait)
}

/// How long from `now` until just after `deadline` (a grace period's end), at least zero.
fn until(deadline: Timestamp, now: Timestamp) -> Duration {
    Duration::try_from(deadline.duration_since(now)).unwrap_or(Duration::ZERO).saturating_add(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_wakes_just_after_a_grace_period_ends() {
        let now: Timestamp = "2026-11-22T04:30:00Z".parse().unwrap();
        assert_eq!(until("2026-11-22T04:30:20Z".parse().unwrap(), now), Duration::from_secs(21));
        assert_eq!(until("2026-11-22T04:29:00Z".parse().unwrap(), now), Duration::from_secs(1));
    }
}
