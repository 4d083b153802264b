//! The fleet executor's part of restarts and reboots, the one place the unavailability budget is handed out to them:
//!
//! - [`record_reboot_requests`]: the hosts someone asks to reboot — the admin (a token in the record's
//!   `reboot-requested` annotation), the Go operator's `reboot-required` annotation on the Node, or Windows itself
//!   (pending-reboot markers, under `--reboot-policy=when-required` and inside the maintenance window) — get a
//!   `Requested` reboot in `status.disruption` (Event `RebootRequested`), which the plan then admits or holds back
//!   beside every other disruption.
//! - [`grant_disruptions`]: each request the plan admits is granted — the Node (if any) marked `upgrading`, then state
//!   `Granted` written, the record re-read first so only that field and the conditions change
//!   (Event `DisruptionGranted`). The host's configure pass, triggered by that write, carries it out.
//! - [`announce_waiting`]: one Event `DisruptionWaiting` per request the budget holds back, saying why.
//! - [`count_requests`]: the `wmco_disruption_requests` gauge.
//!
//! A grant is written before anything happens on the host, so an operator restarted at any point finds it, and a
//! Node marked by a grant that was never written is counted (and finished, or granted again) by the next plan.

use jiff::Timestamp;
use wmco_cluster_client::names::{REBOOT_REQUESTED_ANNOTATION, REBOOT_REQUIRED_ANNOTATION};
use wmco_cluster_client::types::HostDisruption;
use wmco_cluster_client::{NodeExt, ResourceExt, Severity, WindowsInstanceExt};
use wmco_reboot_policy::{RebootInputs, RebootRequest, reboot_request};
use wmco_upgrade_planner::{DisruptionKind, RequestState, RequestedDisruption, WaitReason};

use super::context::FLEET;
use super::upgrade::{error_chain, mark_node, publish, update_status};
use super::{FleetContext, FleetError, ObservedFleet, ObservedInstance};
use crate::runtime::ReconcilerError;

/// Records a `Requested` reboot for every host someone asks to reboot now and that has no disruption requested or
/// under way; returns the records asked. A failure on one record is logged and counted, never holds back the others.
pub(crate) async fn record_reboot_requests(
    ctx: &FleetContext,
    observed: &ObservedFleet,
    now: Timestamp,
) -> Vec<String> {
    let mut requested = Vec::new();
    for instance in observed.instances.iter().filter(|instance| instance.record.metadata.deletion_timestamp.is_none()) {
        let Some(request) = reboot_asked(ctx, instance, now).await else {
            continue;
        };
        match write_request(ctx, instance, &request, now).await {
            Ok(true) => {
                tracing::info!(instance = %instance.record.key(), reason = %request.reason, "reboot requested");
                let note = format!("reboot requested: {}; it waits for a unit of --max-unavailable", request.reason);
                publish(ctx, instance, Severity::Normal, "RebootRequested", note).await;
                requested.push(instance.record.key());
            }
            Ok(false) => {}
            Err(error) => failed(ctx, instance, "recording the reboot request", &error),
        }
    }
    requested
}

/// The reboot `instance` is asked for now, if any (a refused admin token is published once as a Warning).
async fn reboot_asked(ctx: &FleetContext, instance: &ObservedInstance, now: Timestamp) -> Option<RebootRequest> {
    let status = instance.record.status.clone().unwrap_or_default();
    let disruption = status.disruption_in_effect();
    if disruption.as_ref().is_some_and(|disruption| disruption.is_requested() || disruption.is_under_way()) {
        return None;
    }
    let markers = status.pending_reboot_markers();
    let inputs = RebootInputs {
        admin_token: instance.record.annotations().get(REBOOT_REQUESTED_ANNOTATION).map(String::as_str),
        last_completed_token: disruption.as_ref().and_then(HostDisruption::completed_admin_token),
        node_reboot_required: instance
            .node
            .as_ref()
            .is_some_and(|node| node.annotation(REBOOT_REQUIRED_ANNOTATION).is_some()),
        host_markers: &markers,
        last_reboot_at: disruption
            .as_ref()
            .filter(|done| done.kind == DisruptionKind::Reboot)
            .and_then(|done| done.completed_at.as_ref())
            .map(|time| time.0),
    };
    match reboot_request(&inputs, &ctx.settings.reboot, now) {
        Ok(request) => request,
        Err(error) => {
            let note = format!("annotation {REBOOT_REQUESTED_ANNOTATION}: {error}; no reboot is requested");
            if ctx.first_publication(format!(
                "reboot-token/{}/{}",
                instance.record.key(),
                inputs.admin_token.unwrap_or("")
            )) {
                tracing::warn!(instance = %instance.record.key(), "{note}");
                publish(ctx, instance, Severity::Warning, "RebootRequestRefused", note).await;
            }
            None
        }
    }
}

/// Writes `request` into the record as re-read; `false` when a disruption was recorded meanwhile.
async fn write_request(
    ctx: &FleetContext,
    instance: &ObservedInstance,
    request: &RebootRequest,
    now: Timestamp,
) -> Result<bool, FleetError> {
    update_status(ctx, instance, "write the reboot request", |status| {
        let token = request.admin_token();
        let Some(recorded) = status.request_disruption(DisruptionKind::Reboot, &request.reason, now, token) else {
            return false;
        };
        recorded.node = instance.node_name().map(str::to_owned);
        true
    })
    .await
}

/// Grants the requests in `grants` (admitted by the plan at `now`); returns the records granted, with the kind.
pub(crate) async fn grant_disruptions(
    ctx: &FleetContext,
    observed: &ObservedFleet,
    grants: &[(String, DisruptionKind)],
    now: Timestamp,
) -> Vec<(String, DisruptionKind)> {
    let mut granted = Vec::new();
    for (name, kind) in grants {
        let Some(instance) = observed.instance(name) else {
            continue;
        };
        match grant(ctx, instance, now).await {
            Ok(Some(reason)) => {
                let note =
                    format!("{kind} granted within --max-unavailable {}: {reason}", ctx.settings.max_unavailable);
                tracing::info!(instance = %instance.record.key(), "{note}");
                publish(ctx, instance, Severity::Normal, "DisruptionGranted", note).await;
                granted.push((instance.record.key(), *kind));
            }
            Ok(None) => {}
            Err(error) => failed(ctx, instance, "granting the disruption", &error),
        }
    }
    granted
}

/// Marks the Node (if any) and writes the grant; the request's reason, or `None` when it is no longer requested.
async fn grant(ctx: &FleetContext, instance: &ObservedInstance, now: Timestamp) -> Result<Option<String>, FleetError> {
    mark_node(ctx, instance).await?;
    let mut reason = None;
    update_status(ctx, instance, "write the grant", |status| {
        reason = status.disruption.as_ref().map(|request| request.reason.clone());
        status.grant_disruption(now)
    })
    .await
    .map(|granted| reason.filter(|_| granted))
}

/// Publishes, once per request, why each request in `waiting` is held back.
pub(crate) async fn announce_waiting(
    ctx: &FleetContext,
    observed: &ObservedFleet,
    waiting: &[(String, DisruptionKind, WaitReason)],
) {
    for (name, kind, reason) in waiting {
        let Some(instance) = observed.instance(name) else {
            continue;
        };
        let requested_at = instance
            .record
            .status
            .as_ref()
            .and_then(|status| status.disruption.as_ref())
            .map(|request| request.requested_at.0.to_string());
        let key = format!("disruption-waiting/{}/{}", instance.record.key(), requested_at.unwrap_or_default());
        if ctx.first_publication(key) {
            let note = format!("{kind} waits: {reason}");
            publish(ctx, instance, Severity::Normal, "DisruptionWaiting", note).await;
        }
    }
}

/// Sets the `wmco_disruption_requests` gauge from the plan's fleet and the requests just granted.
pub(crate) fn count_requests(ctx: &FleetContext, observed: &ObservedFleet, granted: &[(String, DisruptionKind)]) {
    for kind in DisruptionKind::ALL {
        let just_granted = count(granted.iter().filter(|(_, granted)| *granted == kind));
        let in_state = |state| {
            let request = Some(RequestedDisruption { kind, state });
            count(observed.fleet.instances.iter().filter(|instance| instance.disruption == request))
        };
        ctx.metrics.set_disruption_requests(
            kind.as_str(),
            "Requested",
            in_state(RequestState::Requested) - just_granted,
        );
        ctx.metrics.set_disruption_requests(kind.as_str(), "Granted", in_state(RequestState::Granted) + just_granted);
    }
}

fn count<T>(items: impl Iterator<Item = T>) -> i64 {
    i64::try_from(items.count()).unwrap_or(i64::MAX)
}

/// Logs and counts a failed step on one record (the next reconcile tries again).
fn failed(ctx: &FleetContext, instance: &ObservedInstance, what: &str, error: &FleetError) {
    ctx.metrics.record_error(FLEET, error.metric_label());
    tracing::warn!(instance = %instance.record.key(), error = %error_chain(error), "{what} failed");
}
