//! One whole-fleet reconcile: observe (records and Nodes, fresh), plan (pure), then act on the plan's upgrade
//! decisions — finish the upgrades whose configure pass reported Ready, start or continue the admitted ones, and
//! explain with an Event the ones the kubelet skew rule holds back.

use std::sync::Arc;

use futures::future::join_all;
use jiff::{SignedDuration, Timestamp};
use kube::Resource;
use semver::Version;
use wmco_cluster_client::names::{UPGRADING_LABEL, VERSION_ANNOTATION};
use wmco_cluster_client::types::InstancePhase;
use wmco_cluster_client::{GoDaemonObject, NewEvent, NodeExt, NodeMetadataPatch, Severity, WindowsInstanceExt};
use wmco_upgrade_planner::{Action, Plan, Policy, Reason, WaitReason, plan};

use super::controller::UPGRADES;
use super::go_daemon::remove_go_daemon_identity_logged;
use super::{ObservedFleet, UpgradesContext, UpgradesError, observe_fleet};
use crate::fleet::{ApiServerVersionError, ObservedInstance, machines_away};
use crate::runtime::ReconcilerError;

/// What one fleet reconcile did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FleetOutcome {
    /// The plan the starts were made from.
    pub plan: Plan,
    /// Records whose Node was marked and cordoned in this reconcile and whose drain now runs in the background
    /// (then the record's phase becomes `Upgrading`: handed to the instances controller's configure pass).
    pub started: Vec<String>,
    /// Records whose upgrade finished: Node uncordoned and unmarked.
    pub finished: Vec<String>,
    /// Records whose upgrade could not start in this reconcile (marking or cordoning failed, or its configure pass
    /// had failed; retried after backoff) or could not be finished (uncordon or unmark failed; retried by the next
    /// reconcile), with the error. A failed drain is reported when it ends (Warning Event, backoff), not here.
    pub failed: Vec<(String, String)>,
    /// Records whose upgrade waits because the payload's kubelet is newer than the API server.
    pub held_by_skew: Vec<String>,
    /// The earliest instant a failed step may be retried, if one waits.
    pub next_retry: Option<Timestamp>,
    /// Windows Machines away from the fleet (being replaced, provisioning), taken off the budget.
    pub machines_away: Vec<String>,
    /// The objects of the Go operator's daemon identity deleted in this reconcile (once no Windows Node may still
    /// run that daemon).
    pub go_daemon_removed: Vec<GoDaemonObject>,
}

/// Reconciles the whole fleet at `now`.
///
/// ```no_run
/// use wmco_operator::upgrades::{UpgradesContext, UpgradesError, reconcile_fleet};
/// # async fn example(ctx: std::sync::Arc<UpgradesContext>) -> Result<(), UpgradesError> {
/// let outcome = reconcile_fleet(&ctx, jiff::Timestamp::now()).await?;
/// println!("{} started, {} finished; {}", outcome.started.len(), outcome.finished.len(), outcome.plan.summary);
/// # Ok(())
/// # }
/// ```
///
/// Drains run in the background (a PodDisruptionBudget may hold one for minutes), so a reconcile returns once the
/// admitted Nodes are marked and cordoned; [`UpgradesContext::wait_for_drains`] waits for them.
///
/// # Errors
/// [`UpgradesError`] when the API server's version, the records or a Node cannot be read. A failed step of one
/// host's upgrade is not an error, so it never holds back the others: a failed start (mark, cordon, drain, phase)
/// is published as a Warning Event and retried after backoff, a failed finish (uncordon, unmark) is retried by
/// the next reconcile; both are listed in [`FleetOutcome::failed`] unless they happened in a background drain.
pub async fn reconcile_fleet(ctx: &Arc<UpgradesContext>, now: Timestamp) -> Result<FleetOutcome, UpgradesError> {
    let budget_lock = ctx.budget_lock();
    let _budget = budget_lock.lock().await;
    let full_policy = ctx.policy(ctx.api_server.kubernetes_version().await.map_err(ApiServerVersionError::from)?);
    let mut observed = observe_fleet(ctx, now).await?;
    let (mut policy, mut machines_away) = budget_left(ctx, &full_policy, &observed).await?;
    let mut current = plan(&observed.fleet, &policy);

    let mut finished = Vec::new();
    let mut failed = Vec::new();
    for decision in &current.decisions {
        if decision.action == Action::Upgrade
            && decision.reason == Reason::UpgradeInProgress
            && let Some(instance) = observed.instance(&decision.name)
            && is_finished(instance, ctx)
        {
            match finish(ctx, instance).await {
                Ok(()) => finished.push(instance.record.key()),
                Err(error) => {
                    let message = error_chain(&error);
                    ctx.metrics.record_error(UPGRADES, error.metric_label());
                    tracing::warn!(instance = %instance.record.key(), error = %message, "finishing the upgrade failed");
                    failed.push((instance.record.key(), message));
                }
            }
        }
    }
    if !finished.is_empty() {
        observed = observe_fleet(ctx, now).await?;
        (policy, machines_away) = budget_left(ctx, &full_policy, &observed).await?;
        current = plan(&observed.fleet, &policy);
    }

    let refusal = ctx.cluster_refusal();
    if let Some(reason) = &refusal {
        tracing::debug!(reason = %reason, "the cluster does not support Windows nodes: no upgrade starts");
    }
    let admitted: Vec<&ObservedInstance> = current
        .decisions
        .iter()
        .filter(|decision| {
            refusal.is_none()
                && decision.action == Action::Upgrade
                && matches!(decision.reason, Reason::VersionOutdated { .. })
        })
        .filter_map(|decision| observed.instance(&decision.name))
        .collect();
    let results = join_all(admitted.iter().map(|instance| advance(ctx, instance, now))).await;
    let mut started = Vec::new();
    for (instance, result) in admitted.iter().zip(results) {
        match result {
            Ok(Advance::Started) => started.push(instance.record.key()),
            Ok(Advance::InProgress) => {}
            Err(message) => failed.push((instance.record.key(), message)),
        }
    }

    let held_by_skew = warn_about_skew(ctx, &current, &observed).await;
    let go_daemon_removed = remove_go_daemon_identity_logged(ctx).await;
    Ok(FleetOutcome {
        plan: current,
        started,
        finished,
        failed,
        held_by_skew,
        next_retry: ctx.next_retry(),
        machines_away,
        go_daemon_removed,
    })
}

/// The policy with the Windows Machines away from the fleet taken off the budget, and those Machines.
async fn budget_left(
    ctx: &UpgradesContext,
    policy: &Policy,
    observed: &ObservedFleet,
) -> Result<(Policy, Vec<String>), UpgradesError> {
    let machines =
        ctx.windows_machines.list().await.map_err(|source| UpgradesError::ListMachines { source: Box::new(source) })?;
    let away = machines_away(&machines, &observed.instances);
    let count = u32::try_from(away.len()).unwrap_or(u32::MAX);
    Ok((Policy { max_unavailable: policy.max_unavailable.saturating_sub(count), ..policy.clone() }, away))
}

/// Whether an upgrade under way is done: the configure pass wrote phase Ready with the operator's version and the
/// Node is Ready at that version.
fn is_finished(instance: &ObservedInstance, ctx: &UpgradesContext) -> bool {
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
/// was restarted in place for a cluster setting (the instances controller's disruption gate): its Event says
/// `Reconfigured`, an upgrade's `Upgraded`.
async fn finish(ctx: &UpgradesContext, instance: &ObservedInstance) -> Result<(), UpgradesError> {
    let Some(node) = &instance.node else {
        return Ok(());
    };
    let node_name = instance.node_name().unwrap_or_default();
    // An upgrade always cordons; a restart for a cluster setting (the disruption gate's mark) never does.
    let upgraded = node.is_unschedulable();
    if upgraded {
        ctx.nodes
            .uncordon(node_name)
            .await
            .map_err(|source| step_error(instance, format!("uncordon Node {node_name}"), source))?;
    }
    if node.is_marked() {
        let patch = NodeMetadataPatch::default().remove_label(UPGRADING_LABEL);
        ctx.nodes
            .patch_metadata(node_name, &patch)
            .await
            .map_err(|source| step_error(instance, format!("unmark Node {node_name}"), source))?;
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
    Ok(())
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
async fn advance(ctx: &Arc<UpgradesContext>, instance: &ObservedInstance, now: Timestamp) -> Result<Advance, String> {
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
async fn step_failed(
    ctx: &UpgradesContext,
    instance: &ObservedInstance,
    error: &UpgradesError,
    at: Timestamp,
) -> String {
    let message = error_chain(error);
    ctx.metrics.record_error(UPGRADES, error.metric_label());
    let retry_after = ctx.note_failure(instance.name(), message.clone(), at);
    tracing::warn!(instance = %instance.record.key(), %retry_after, error = %message, "upgrade step failed");
    let note = format!("{message}; the Node stays marked and cordoned, retried after {retry_after}");
    publish(ctx, instance, Severity::Warning, "UpgradeStepFailed", note).await;
    message
}

/// Marks the Node upgrading (claiming the budget) and cordons it.
async fn mark_and_cordon(ctx: &UpgradesContext, instance: &ObservedInstance) -> Result<(), UpgradesError> {
    let (Some(node), Some(node_name)) = (&instance.node, instance.node_name()) else {
        return Ok(());
    };
    if !node.is_marked() {
        let patch = NodeMetadataPatch::default().set_label(UPGRADING_LABEL, "true");
        ctx.nodes
            .patch_metadata(node_name, &patch)
            .await
            .map_err(|source| step_error(instance, format!("mark Node {node_name} upgrading"), source))?;
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
async fn drain_and_hand_over(ctx: &UpgradesContext, instance: &ObservedInstance) -> Result<(), UpgradesError> {
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
async fn enter_upgrading(ctx: &UpgradesContext, instance: &ObservedInstance) -> Result<(), UpgradesError> {
    let namespace = &ctx.settings.namespace;
    let name = instance.name();
    let current = ctx
        .records
        .get(namespace, name)
        .await
        .map_err(|source| step_error(instance, "read the record".to_owned(), source))?;
    let generation = current.as_ref().and_then(|record| record.metadata.generation);
    let mut status = current.and_then(|record| record.status).unwrap_or_default();
    status.phase = Some(InstancePhase::Upgrading);
    status.summarize(generation, jiff::Timestamp::now());
    ctx.records
        .apply_status(namespace, name, &status)
        .await
        .map_err(|source| step_error(instance, "write phase Upgrading".to_owned(), source))?;
    Ok(())
}

/// One Warning Event per instance, target and API server version for upgrades the skew rule holds back.
async fn warn_about_skew(ctx: &UpgradesContext, current: &Plan, observed: &ObservedFleet) -> Vec<String> {
    let mut held = Vec::new();
    for decision in &current.decisions {
        let (
            Action::Wait { reason: WaitReason::KubeletSkew { kubelet, api_server } },
            Reason::VersionOutdated { configured, target },
        ) = (&decision.action, &decision.reason)
        else {
            continue;
        };
        let Some(instance) = observed.instance(&decision.name) else {
            continue;
        };
        held.push(instance.record.key());
        if ctx.first_skew_warning(format!("{}/{target}/{api_server}", decision.name)) {
            let note = format!(
                "upgrade from {configured} to {target} waits: its kubelet {kubelet} must not run against the API \
                 server {api_server}; upgrade the control plane first"
            );
            tracing::warn!(instance = %instance.record.key(), "{note}");
            publish(ctx, instance, Severity::Warning, "UpgradeBlockedByVersionSkew", note).await;
        }
    }
    held
}

async fn publish(ctx: &UpgradesContext, instance: &ObservedInstance, severity: Severity, reason: &str, note: String) {
    let event = NewEvent { severity, reason: reason.to_owned(), action: "Upgrade".to_owned(), note: Some(note) };
    if let Err(error) = ctx.events.publish(&instance.record.object_ref(&()), &event).await {
        tracing::warn!(instance = %instance.record.key(), error = %error, reason, "could not publish the Event");
    }
}

fn step_error(instance: &ObservedInstance, step: String, source: wmco_cluster_client::Error) -> UpgradesError {
    UpgradesError::Step { instance: instance.record.key(), step, source: Box::new(source) }
}

/// The error and its sources as one sentence.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
