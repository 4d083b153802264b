//! The kube-runtime wiring of the instances controller:
//!
//! - an inventory loop over the `windows-instances` ConfigMap's watch events, calling [`reconcile_inventory`]
//!   on every change and with `None` once it is deleted (or absent at start), retrying failures with backoff;
//! - a `Controller` over the `WindowsInstance` records calling [`reconcile_instance`] with bounded concurrency,
//!   triggered also by their Windows Nodes (a Node maps to the record whose `expectedNodeName` it carries), with
//!   requeues while a host waits and the runtime's error policy (exponential backoff from 1 s to 5 minutes for
//!   retryable errors and refused logins).
//!
//! Exercised against a real apiserver by the e2e suite.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client};
use tracing::Instrument;
use wmco_cluster_client::WindowsInstanceExt;
use wmco_cluster_client::names::KUBERNETES_OS_LABEL;
use wmco_cluster_client::types::WindowsInstance;
use wmco_instance_inventory::SystemResolver;
use wmco_node_config::ConfigureState;

use super::context::{FIRST_RETRY, MAX_RETRY};
use super::{
    INSTANCES_CONFIG_MAP, InstanceOutcome, InstancesContext, InstancesError, reconcile_instance, reconcile_inventory,
};
use crate::runtime::{Controlled, ReconcilerError, RetryBackoff, error_policy, report, timed, tracked};
use crate::shutdown::ShutdownSignal;

/// How many hosts are reconciled at once unless the caller says otherwise.
pub const DEFAULT_CONCURRENCY: u16 = 8;
/// How soon a Ready host is probed again for drift.
pub const READY_RECHECK: Duration = Duration::from_secs(600);
/// How soon a host waiting for its services to run is looked at again. Short, because a service leaving
/// START_PENDING changes nothing the controller watches, and a recheck costs one probe round trip.
pub const WAITING_RECHECK: Duration = Duration::from_secs(3);
/// How soon a host whose services were started is looked at again while its Node is not Ready, at the latest: the
/// Node turning Ready triggers a pass through the Node watch at once. The session answers passes with unchanged
/// inputs from memory for as long (`SessionSettings::node_wait_window`), so this recheck is the one that probes.
pub const NODE_WAIT_RECHECK: Duration = Duration::from_secs(30);

/// How soon a host the operator is rebooting is looked at again: one identity command (or a refused connection)
/// per pass tells whether it is back with a new boot time.
pub const REBOOT_RECHECK: Duration = Duration::from_secs(5);

/// The controller name of the `windows-instances` loop in the reconcile metrics.
const INVENTORY: &str = "inventory";

/// Runs the inventory loop and the instance controller (at most `concurrency` hosts at once) until `shutdown` is
/// triggered: then the inventory loop stops, no new host reconcile starts, and this returns once the reconciles
/// in flight finished (the caller bounds that wait). Every item of `files_changed` (cluster material that changes
/// registered hosts' files, see `MaterialSnapshot::node_file_changes`) reconciles every record.
///
/// ```no_run
/// # async fn run(client: kube::Client, context: std::sync::Arc<wmco_operator::instances::InstancesContext>) {
/// use wmco_operator::instances::{DEFAULT_CONCURRENCY, controller};
/// use wmco_operator::shutdown::ShutdownSignal;
/// controller(client, context, DEFAULT_CONCURRENCY, futures::stream::pending(), ShutdownSignal::never()).await;
/// # }
/// ```
pub async fn controller(
    client: Client,
    ctx: Arc<InstancesContext>,
    concurrency: u16,
    files_changed: impl Stream<Item = ()> + Send + 'static,
    shutdown: ShutdownSignal,
) {
    let inventory = shutdown.clone().unless_triggered(inventory_loop(client.clone(), Arc::clone(&ctx)));
    let instances = instance_controller(client, ctx, concurrency, files_changed, shutdown);
    futures::join!(inventory, instances);
}

async fn instance_controller(
    client: Client,
    ctx: Arc<InstancesContext>,
    concurrency: u16,
    files_changed: impl Stream<Item = ()> + Send + 'static,
    shutdown: ShutdownSignal,
) {
    let records: Api<WindowsInstance> = Api::namespaced(client.clone(), &ctx.settings.namespace);
    let nodes: Api<Node> = Api::all(client);
    let windows_nodes = watcher::Config::default().labels(&format!("{KUBERNETES_OS_LABEL}=windows"));
    let instances = Controller::new(records, watcher::Config::default())
        .with_config(controller::Config::default().concurrency(concurrency.max(1)))
        .reconcile_all_on(files_changed)
        .graceful_shutdown_on(shutdown.triggered());
    let store = instances.store();
    instances
        .watches(nodes, windows_nodes, move |node| records_of_node(&store, &node))
        .run(reconcile, error_policy, ctx)
        .for_each(|result| report(InstancesContext::NAME, result))
        .await;
}

/// The records whose expected node name is `node`'s name.
fn records_of_node(store: &Store<WindowsInstance>, node: &Node) -> Vec<ObjectRef<WindowsInstance>> {
    let Some(node_name) = node.metadata.name.as_deref() else {
        return Vec::new();
    };
    store
        .state()
        .iter()
        .filter(|record| record.expected_node_name() == Some(node_name))
        .map(|record| ObjectRef::from_obj(record.as_ref()))
        .collect()
}

async fn reconcile(instance: Arc<WindowsInstance>, ctx: Arc<InstancesContext>) -> Result<Action, InstancesError> {
    let pass = reconcile_instance(&instance, &ctx).instrument(reconcile_span(&instance));
    let outcome = tracked(ctx.as_ref(), instance.as_ref(), pass).await?;
    Ok(action_after(&outcome))
}

/// The span of one host reconcile: every log line inside it carries the record (`instance`), its address (`host`)
/// and the flow step the host session last ran (`step`, recorded by `wmco-node-config`).
pub(crate) fn reconcile_span(instance: &WindowsInstance) -> tracing::Span {
    tracing::info_span!(
        "reconcile",
        instance = %instance.key(),
        host = %instance.spec.address,
        step = tracing::field::Empty,
    )
}

/// What to do after a successful reconcile: drift checks for Ready hosts, a short recheck while services start,
/// otherwise wait for the record or its Node to change.
fn action_after(outcome: &InstanceOutcome) -> Action {
    match outcome {
        InstanceOutcome::Configured(configured) => match configured.state {
            ConfigureState::Ready => Action::requeue(READY_RECHECK),
            ConfigureState::WaitingForServices => Action::requeue(WAITING_RECHECK),
            ConfigureState::WaitingForReady => Action::requeue(NODE_WAIT_RECHECK),
            ConfigureState::Rebooting => Action::requeue(REBOOT_RECHECK),
            ConfigureState::WaitingForNode
            | ConfigureState::WaitingForSubnet
            | ConfigureState::WaitingForUpgrade
            | ConfigureState::WaitingForBudget => Action::await_change(),
        },
        InstanceOutcome::Released(_) | InstanceOutcome::Gone => Action::await_change(),
    }
}

/// Follows the ConfigMap's watch: every applied version and every deletion (or its absence once the initial
/// listing is done) is reconciled, retrying with backoff until it succeeds (later events wait meanwhile). After a
/// record was released the last state is reconciled again: an entry added back while its old record was still
/// being deleted was applied to the terminating record, and needs a new one now.
async fn inventory_loop(client: Client, ctx: Arc<InstancesContext>) {
    let config_maps: Api<ConfigMap> = Api::namespaced(client, &ctx.settings.namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={INSTANCES_CONFIG_MAP}"));
    let mut seen_in_listing = false;
    let mut events = watcher(config_maps, config).default_backoff().boxed();
    let mut last: Option<Option<ConfigMap>> = None;
    loop {
        let next = tokio::select! {
            event = events.try_next() => event,
            () = ctx.released.notified() => {
                if let Some(desired) = &last {
                    reconcile_inventory_until_done(desired.as_ref(), &ctx).await;
                }
                continue;
            }
        };
        let desired = match next {
            Ok(Some(watcher::Event::Apply(config_map) | watcher::Event::InitApply(config_map))) => {
                seen_in_listing = true;
                Some(config_map)
            }
            Ok(Some(watcher::Event::Delete(_))) => None,
            Ok(Some(watcher::Event::Init)) => {
                seen_in_listing = false;
                continue;
            }
            Ok(Some(watcher::Event::InitDone)) if !seen_in_listing => None,
            Ok(Some(watcher::Event::InitDone)) => continue,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(error = %error, "watching the windows-instances ConfigMap");
                continue;
            }
        };
        reconcile_inventory_until_done(desired.as_ref(), &ctx).await;
        last = Some(desired);
    }
}

async fn reconcile_inventory_until_done(config_map: Option<&ConfigMap>, ctx: &InstancesContext) {
    let retries = RetryBackoff::new(FIRST_RETRY, MAX_RETRY);
    loop {
        match timed(&ctx.metrics, INVENTORY, reconcile_inventory(config_map, ctx, &SystemResolver)).await {
            Ok(outcome) => {
                tracing::info!(
                    applied = outcome.applied.len(),
                    deleted = outcome.deleted.len(),
                    warnings = outcome.warnings,
                    "windows-instances reconciled"
                );
                return;
            }
            Err(error) => {
                tracing::warn!(kind = error.metric_label(), error = %error, "windows-instances reconcile failed");
                ctx.metrics.record_error(INVENTORY, error.metric_label());
                tokio::time::sleep(retries.on_failure(INSTANCES_CONFIG_MAP)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport_failure(source: wmco_ssh_transport::TransportError) -> InstancesError {
        let flow = wmco_node_config::FlowError::Transport {
            host: "admin@10.0.0.5:22".into(),
            step: wmco_node_config::FlowStep::PinHostKey,
            source: Box::new(source),
        };
        InstancesError::Flow { instance: "wmco/byoh-10-0-0-5".into(), source: Box::new(flow) }
    }

    #[test]
    fn a_refused_login_is_retried_with_backoff_but_a_changed_host_key_waits_for_an_admin() {
        let refused = transport_failure(wmco_ssh_transport::TransportError::Authentication {
            host: "10.0.0.5".into(),
            user: "admin".into(),
            reason: "denied".into(),
        });
        assert!(!refused.is_retryable());
        assert!(refused.is_authentication_failure());
        assert_eq!(retry_action(&refused, 3), Action::requeue(Duration::from_secs(4)));

        let key = wmco_ssh_transport::HostKey::from_openssh(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey",
        )
        .unwrap();
        let changed = transport_failure(wmco_ssh_transport::TransportError::HostKeyMismatch {
            host: "10.0.0.5".into(),
            pinned: key.fingerprint(),
            offered: key.fingerprint(),
        });
        assert!(!changed.is_authentication_failure());
        assert_eq!(retry_action(&changed, 3), Action::await_change());
    }

    /// What the error policy does after failure number `attempt` (1-based) of one record: the controller's
    /// requeue rule and its backoff (the policy itself is tested in `runtime`).
    fn retry_action(error: &InstancesError, attempt: usize) -> Action {
        if !<InstancesContext as Controlled<WindowsInstance>>::requeues(error) {
            return Action::await_change();
        }
        let retries = RetryBackoff::new(FIRST_RETRY, MAX_RETRY);
        let waits: Vec<_> = (0..attempt).map(|_| retries.on_failure("wmco/byoh-10-0-0-5")).collect();
        Action::requeue(waits[attempt - 1])
    }

    #[test]
    fn backoff_doubles_up_to_five_minutes() {
        let retries = RetryBackoff::new(FIRST_RETRY, MAX_RETRY);
        let all: Vec<_> = (0..50).map(|_| retries.on_failure("wmco/byoh-10-0-0-5")).collect();
        let waits: Vec<_> = [1, 2, 3, 9, 50].map(|attempt| all[attempt - 1]).into();
        let expected = [1, 2, 4, 256, 300].map(Duration::from_secs);
        assert_eq!(waits, expected);
    }
}
