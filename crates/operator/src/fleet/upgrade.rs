//! The upgrade's steps on one instance: start or continue an admitted upgrade (mark the Node, which claims the
//! budget; cordon; then, in the background, drain and write phase `Upgrading`, the permission the instances
//! controller's configure pass waits for), and finish one whose configure pass reported Ready (uncordon, unmark).
//! A failed start is published as a Warning Event and retried after backoff with the Node still marked.

use std::sync::Arc;

use futures::future::join_all;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Node;
use kube::Resource;
use semver::Version;
use wmco_cluster_client::names::{UPGRADING_LABEL, VERSION_ANNOTATION};
use wmco_cluster_client::types::{InstancePhase, WindowsInstanceStatus};
use wmco_cluster_client::{NewEvent, NodeExt, NodeMetadataPatch, Severity, WindowsInstanceExt};

use super::context::FLEET;
use super::{FleetContext, FleetError, ObservedFleet, ObservedInstance};
use crate::runtime::ReconcilerError;

/// Finishes the upgrades under way in `in_progress` whose configure pass is done; `observed` takes the Nodes as
/// left. Returns the records finished and those whose finish failed, with the error (retried by the next reconcile).
pub(crate) async fn finish_upgrades(
    ctx: &FleetContext,
    observed: &mut ObservedFleet,
    in_progress: &[String],
) -> (Vec<String>, Vec<(String, String)>) {
    let mut finished = Vec::new();
    let mut failed = Vec::new();
    for name in in_progress {
        let Some(instance) = observed.instance(name).filter(|instance| is_finished(instance, ctx)) else {
            continue;
        };
        match finish(ctx, instance).await {
            Ok(node) => {
                finished.push(instance.record.key());
                if let Some(node) = node {
                    observed.update_node(name, node);
                }
            }
            Err(error) => {
                let message = error_chain(&error);
                ctx.metrics.record_error(FLEET, error.metric_label());
                tracing::warn!(instance = %instance.record.key(), error = %message, "finishing the upgrade failed");
                failed.push((instance.record.key(), message));
            }
        }
    }
    (finished, failed)
}

/// Starts or continues the admitted upgrades of `admitted` at once. Returns the records whose upgrade started in
/// this reconcile and those whose start failed, with the error.
pub(crate) async fn start_upgrades(
    ctx: &Arc<FleetContext>,
    observed: &ObservedFleet,
    admitted: &[String],
    now: Timestamp,
) -> (Vec<String>, Vec<(String, String)>) {
    let instances: Vec<&ObservedInstance> = admitted.iter().filter_map(|name| observed.instance(name)).collect();
    let results = join_all(instances.iter().map(|instance| advance(ctx, instance, now))).await;
    let mut started = Vec::new();
    let mut failed = Vec::new();
    for (instance, result) in instances.iter().zip(results) {
        match result {
            Ok(Advance::Started) => started.push(instance.record.key()),
            Ok(Advance::InProgress) => {}
            Err(message) => failed.push((instance.record.key(), message)),
        }
    }
    (started, failed)
}

/// Whether an upgrade under way is done: the configure pass wrote phase Ready with the operator's version and the
/// Node is Ready at that version.
fn is_finished(instance: &ObservedInstance, ctx: &FleetContext) -> bool {
    let target = &ctx.settings.operator_version;
    let at_target = |text: &str| Version::parse(text).is_ok_and(|version| version.cmp_precedence(target).is_eq());
    let status = instance.record.status.as_ref();
    status.and_then(|status| status.phase) == Some(InstancePhase::Ready)
        && status.and_then(|status| status.configured_version.as_deref()).is_some_and(at_target)
        && instance
            .node
            .as_ref()
            .is_some_and(|node| node.is_ready() && node.annotation(VERSION_ANNOTATION).is_some_and(at_target))
}

/// Uncordons the Node, then removes the mark (in that order, so a crash in between leaves a marked Node that the
/// next reconcile finishes, never a cordoned Node that looks like an admin's). A Node marked but never cordoned
/// was restarted in place for a cluster setting (a granted restart request): its Event says
/// `Reconfigured`, an upgrade's `Upgraded`. Returns the Node as left.
async fn finish(ctx: &FleetContext, instance: &ObservedInstance) -> Result<Option<Node>, FleetError> {
    let Some(node) = &instance.node else {
        return Ok(None);
    };
    let mut left = None;
    let node_name = instance.node_name().unwrap_or_default();
    // An upgrade always cordons; a granted restart (marked, never cordoned) never does.
    let upgraded = node.is_unschedulable();
    if upgraded {
        let uncordoned = ctx.nodes.uncordon(node_name).await;
        left = Some(uncordoned.map_err(|source| step_error(instance, format!("uncordon Node {node_name}"), source))?);
    }
    if node.is_marked() {
        let patch = NodeMetadataPatch::default().remove_label(UPGRADING_LABEL);
        let unmarked = ctx.nodes.patch_metadata(node_name, &patch).await;
        left = Some(unmarked.map_err(|source| step_error(instance, format!("unmark Node {node_name}"), source))?);
    }
    ctx.clear_failures(instance.name());
    let (reason, note) = if upgraded {
        ("Upgraded", format!("upgraded to {}; Node {node_name} uncordoned and unmarked", ctx.settings.operator_version))
    } else {
        let generation = instance.record.status.as_ref().and_then(|status| status.settings_generation.as_deref());
        let note = format!(
            "services restarted for settings generation {}; Node {node_name} unmarked",
            generation.unwrap_or("unknown")
        );
        ("Reconfigured", note)
    };
    tracing::info!(instance = %instance.record.key(), "{note}");
    publish(ctx, instance, Severity::Normal, reason, note).await;
    Ok(left)
}

/// What [`advance`] did.
enum Advance {
    /// Marked (if needed) and cordoned; the drain (then phase `Upgrading`) runs in the background.
    Started,
    /// Already draining, or handed to the configure pass (phase `Upgrading`); nothing to do.
    InProgress,
}

/// Starts or continues an admitted upgrade: mark, cordon, then drain and write phase `Upgrading` in the
/// background. A failure is recorded for backoff and published as a Warning Event; the Node stays marked (its
/// budget stays claimed).
async fn advance(ctx: &Arc<FleetContext>, instance: &ObservedInstance, now: Timestamp) -> Result<Advance, String> {
    let phase = instance.record.status.as_ref().and_then(|status| status.phase);
    if phase == Some(InstancePhase::Upgrading) || ctx.is_draining(instance.name()) {
        return Ok(Advance::InProgress);
    }
    if phase == Some(InstancePhase::Failed) && !ctx.is_retrying(instance.name()) {
        let last_error = instance.record.status.as_ref().and_then(|status| status.last_error.clone());
        let message =
            format!("the upgrade's configure pass failed: {}", last_error.as_deref().unwrap_or("no error recorded"));
        let retry_after = ctx.note_failure(instance.name(), message.clone(), now);
        tracing::warn!(instance = %instance.record.key(), %retry_after, "{message}");
        return Err(message);
    }
    if let Err(error) = mark_and_cordon(ctx, instance).await {
        return Err(step_failed(ctx, instance, &error, now).await);
    }
    ctx.note_retried(instance.name());
    let (task_ctx, task_instance) = (Arc::clone(ctx), instance.clone());
    let started = std::time::Instant::now();
    let drain = tokio::spawn(async move {
        if let Err(error) = drain_and_hand_over(&task_ctx, &task_instance).await {
            let elapsed = SignedDuration::try_from(started.elapsed()).unwrap_or(SignedDuration::ZERO);
            let failed_at = now.checked_add(elapsed).unwrap_or(now);
            step_failed(&task_ctx, &task_instance, &error, failed_at).await;
        }
        task_ctx.drain_ended();
    });
    ctx.track_drain(instance.name(), drain);
    Ok(Advance::Started)
}

/// Records a failed step for backoff and publishes it; returns the error as one sentence.
async fn step_failed(ctx: &FleetContext, instance: &ObservedInstance, error: &FleetError, at: Timestamp) -> String {
    let message = error_chain(error);
    ctx.metrics.record_error(FLEET, error.metric_label());
    let retry_after = ctx.note_failure(instance.name(), message.clone(), at);
    tracing::warn!(instance = %instance.record.key(), %retry_after, error = %message, "upgrade step failed");
    let note = format!("{message}; the Node stays marked and cordoned, retried after {retry_after}");
    publish(ctx, instance, Severity::Warning, "UpgradeStepFailed", note).await;
    message
}

/// Marks the instance's Node upgrading (the budget's claim), unless it has none or is marked; returns whether it
/// marked it.
pub(crate) async fn mark_node(ctx: &FleetContext, instance: &ObservedInstance) -> Result<bool, FleetError> {
    let (Some(node), Some(node_name)) = (&instance.node, instance.node_name()) else {
        return Ok(false);
    };
    if node.is_marked() {
        return Ok(false);
    }
    let patch = NodeMetadataPatch::default().set_label(UPGRADING_LABEL, "true");
    let marked = ctx.nodes.patch_metadata(node_name, &patch).await;
    marked.map_err(|source| step_error(instance, format!("mark Node {node_name} upgrading"), source))?;
    Ok(true)
}

/// Marks the Node upgrading (claiming the budget) and cordons it.
async fn mark_and_cordon(ctx: &FleetContext, instance: &ObservedInstance) -> Result<(), FleetError> {
    let (Some(node), Some(node_name)) = (&instance.node, instance.node_name()) else {
        return Ok(());
    };
    if mark_node(ctx, instance).await? {
        let note = format!(
            "upgrading to {}: Node {node_name} marked upgrading; cordoning and draining it",
            ctx.settings.operator_version
        );
        publish(ctx, instance, Severity::Normal, "UpgradeStarted", note).await;
    }
    if !node.is_unschedulable() {
        ctx.nodes
            .cordon(node_name)
            .await
            .map_err(|source| step_error(instance, format!("cordon Node {node_name}"), source))?;
    }
    Ok(())
}

/// Drains the Node (eviction API, budgets honoured), then writes phase `Upgrading`.
async fn drain_and_hand_over(ctx: &FleetContext, instance: &ObservedInstance) -> Result<(), FleetError> {
    let Some(node_name) = instance.node_name() else {
        return Ok(());
    };
    let report = ctx
        .drainer
        .drain(node_name, &ctx.settings.drain)
        .await
        .map_err(|source| step_error(instance, format!("drain Node {node_name}"), source))?;
    tracing::info!(instance = %instance.record.key(), evicted = report.evicted.len(), "drained for the upgrade");
    enter_upgrading(ctx, instance).await
}

/// Writes phase `Upgrading` to the record (re-read first, so only the phase and the conditions it implies change).
async fn enter_upgrading(ctx: &FleetContext, instance: &ObservedInstance) -> Result<(), FleetError> {
    update_status(ctx, instance, "write phase Upgrading", |status| {
        status.phase = Some(InstancePhase::Upgrading);
        true
    })
    .await
    .map(|_| ())
}

/// Re-reads the record, lets `change` edit its status and, when it says it changed something, writes it with the
/// conditions it implies (`step` names the write in errors). Returns whether it wrote.
pub(crate) async fn update_status(
    ctx: &FleetContext,
    instance: &ObservedInstance,
    step: &str,
    change: impl FnOnce(&mut WindowsInstanceStatus) -> bool,
) -> Result<bool, FleetError> {
    let (namespace, name) = (&ctx.settings.namespace, instance.name());
    let current = ctx.records.get(namespace, name).await;
    let current = current.map_err(|source| step_error(instance, "read the record".to_owned(), source))?;
    let generation = current.as_ref().and_then(|record| record.metadata.generation);
    let mut status = current.and_then(|record| record.status).unwrap_or_default();
    if !change(&mut status) {
        return Ok(false);
    }
    status.summarize(generation, Timestamp::now());
    let written = ctx.records.apply_status(namespace, name, &status).await;
    written.map_err(|source| step_error(instance, step.to_owned(), source))?;
    Ok(true)
}

pub(crate) async fn publish(
    ctx: &FleetContext,
    instance: &ObservedInstance,
    severity: Severity,
    reason: &str,
    note: String,
) {
    let event = NewEvent { severity, reason: reason.to_owned(), action: "Upgrade".to_owned(), note: Some(note) };
    if let Err(error) = ctx.events.publish(&instance.record.object_ref(&()), &event).await {
        tracing::warn!(instance = %instance.record.key(), error = %error, reason, "could not publish the Event");
    }
}

fn step_error(instance: &ObservedInstance, step: String, source: wmco_cluster_client::Error) -> FleetError {
    FleetError::Step { instance: instance.record.key(), step, source: Box::new(source) }
}

/// The error and its sources as one sentence.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
