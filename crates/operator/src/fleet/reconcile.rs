//! One whole-fleet reconcile: read the current key, the API server's version and the fleet fresh from the API
//! server, record the reboots someone asks for, plan once (pure), then carry the plan out — finish the upgrades
//! whose configure pass reported Ready, start the admitted upgrades, grant the admitted restarts and reboots, replace
//! the admitted Machines (on an old key, or refusing the key past the grace period), check the admitted BYOH hosts
//! with the new key, explain with an Event the upgrades the kubelet skew rule holds back and the requests the budget
//! holds back, and remove the Go operator's daemon identity once no host needs it.
//!
//! This is the only place the unavailability budget is handed out; the fleet controller runs one reconcile at a
//! time (and one replica leads), so no lock is needed: every unit handed out is written to the cluster (a marked
//! Node, a granted request, a deleted Machine) before the next reconcile reads the fleet.

use std::sync::Arc;

use jiff::Timestamp;
use wmco_cluster_client::{GoDaemonObject, Severity, WindowsInstanceExt};
use wmco_upgrade_planner::Plan;

use super::disruption::{announce_waiting, count_requests, grant_disruptions, record_reboot_requests};
use super::go_daemon::remove_go_daemon_identity_logged;
use super::rekey::{check_keys, replace_machines};
use super::upgrade::{finish_upgrades, publish, start_upgrades};
use super::{
    ApiServerVersionError, FleetContext, FleetError, KeyRotation, ObservedFleet, RefusedPlan, Work, decide_refused,
    observe_instances,
};
use crate::operator_key::load_operator_key;

/// What one fleet reconcile did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FleetOutcome {
    /// The `pub-key-hash` of the key the reconcile worked with.
    pub key_hash: String,
    /// The plan the work was made from.
    pub plan: Plan,
    /// What the plan meant for the executor.
    pub work: Work,
    /// Windows Machines away from the fleet (being replaced, provisioning), taken off the budget.
    pub machines_away: Vec<String>,
    /// Records whose Node was marked and cordoned in this reconcile and whose drain now runs in the background
    /// (then the record's phase becomes `Upgrading`: handed to the instances controller's configure pass).
    pub started: Vec<String>,
    /// Records whose upgrade finished: Node uncordoned and unmarked.
    pub finished: Vec<String>,
    /// Records whose host someone asked to reboot (admin, Node annotation, pending-reboot markers under the
    /// policy), recorded as `Requested` in this reconcile.
    pub reboots_requested: Vec<String>,
    /// Records whose requested restart or reboot was granted in this reconcile (Node marked, state `Granted`).
    pub granted: Vec<String>,
    /// Records whose upgrade could not start in this reconcile (marking or cordoning failed, or its configure pass
    /// had failed; retried after backoff) or could not be finished (uncordon or unmark failed; retried by the next
    /// reconcile), with the error. A failed drain is reported when it ends (Warning Event, backoff), not here.
    pub failed: Vec<(String, String)>,
    /// Records whose upgrade waits because the payload's kubelet is newer than the API server.
    pub held_by_skew: Vec<String>,
    /// The earliest instant a failed upgrade step may be retried, if one waits.
    pub next_retry: Option<Timestamp>,
    /// What was decided about Machines whose host refuses the key.
    pub refused: RefusedPlan,
    /// What the key rotation did.
    pub rotation: KeyRotation,
    /// The objects of the Go operator's daemon identity deleted in this reconcile (once no Windows Node may still
    /// run that daemon).
    pub go_daemon_removed: Vec<GoDaemonObject>,
}

impl FleetOutcome {
    /// Whether a host should be checked again soon (refused key, failed key step, or a refused Machine waiting for
    /// budget).
    pub fn needs_retry(&self) -> bool {
        !self.rotation.not_authorized.is_empty()
            || !self.rotation.failed.is_empty()
            || !self.refused.waiting_for_budget.is_empty()
    }
}

/// Reconciles the whole fleet at `now`.
///
/// ```no_run
/// use wmco_operator::fleet::{FleetContext, FleetError, reconcile_fleet};
/// # async fn example(ctx: std::sync::Arc<FleetContext>) -> Result<(), FleetError> {
/// let outcome = reconcile_fleet(&ctx, jiff::Timestamp::now()).await?;
/// println!("{} started, {} finished; {}", outcome.started.len(), outcome.finished.len(), outcome.plan.summary);
/// println!("replaced {:?}, re-keyed {:?}", outcome.rotation.replaced, outcome.rotation.rekeyed);
/// # Ok(())
/// # }
/// ```
///
/// Drains run in the background (a PodDisruptionBudget may hold one for minutes), so a reconcile returns once the
/// admitted Nodes are marked and cordoned; [`FleetContext::wait_for_drains`] waits for them.
///
/// # Errors
/// [`FleetError`] when the key, the API server's version, the records, a Node or the Windows Machines cannot be
/// read. A failed step on one host is not an error, so it never holds back the others: a failed upgrade start
/// (mark, cordon, drain, phase) is published as a Warning Event and retried after backoff, a failed finish
/// (uncordon, unmark) is retried by the next reconcile, both listed in [`FleetOutcome::failed`] unless they
/// happened in a background drain; failed key steps are in [`KeyRotation::failed`] and
/// [`KeyRotation::not_authorized`].
pub async fn reconcile_fleet(ctx: &Arc<FleetContext>, now: Timestamp) -> Result<FleetOutcome, FleetError> {
    let key = load_operator_key(ctx.secrets.as_ref(), &ctx.settings.namespace)
        .await
        .map_err(|source| FleetError::Key { source })?;
    let api_server = ctx.api_server.kubernetes_version().await.map_err(ApiServerVersionError::from)?;
    let policy = ctx.settings.policy(api_server);
    let mut observed = observe_fleet(ctx, &key.pub_key_hash, now).await?;
    let reboots_requested = record_reboot_requests(ctx, &observed, now).await;
    if !reboots_requested.is_empty() {
        observed = observe_fleet(ctx, &key.pub_key_hash, now).await?;
    }
    let mut plan = observed.plan(&policy);
    let mut work = Work::of(&plan, &observed);

    let (finished, mut failed) = finish_upgrades(ctx, &mut observed, &work.in_progress).await;
    if !finished.is_empty() {
        plan = observed.plan(&policy);
        work = Work::of(&plan, &observed);
    }
    let upgrades = match ctx.cluster_refusal() {
        Some(reason) => {
            tracing::debug!(reason = %reason, "the cluster does not support Windows nodes: no upgrade starts");
            Vec::new()
        }
        None => work.upgrade.clone(),
    };
    let (started, start_failures) = start_upgrades(ctx, &observed, &upgrades, now).await;
    failed.extend(start_failures);
    let granted = grant_disruptions(ctx, &observed, &work.grant, now).await;
    count_requests(ctx, &observed, &granted);
    let granted = granted.into_iter().map(|(name, _)| name).collect();

    let claimed: Vec<&str> = upgrades
        .iter()
        .map(String::as_str)
        .chain(work.replace.iter().map(|replacement| replacement.record.as_str()))
        .chain(work.grant.iter().map(|(name, _)| name.as_str()))
        .collect();
    let refused = decide_refused(&observed, &claimed, ctx.settings.authentication_grace, ctx.settings.max_unavailable);
    let mut rotation = KeyRotation::default();
    replace_machines(ctx, &observed, &work.replace, &refused.replace, &key, &mut rotation).await;

    check_keys(ctx, &observed, &work.verify, &key, &mut rotation).await;
    let held_by_skew = warn_about_skew(ctx, &work, &observed).await;
    announce_waiting(ctx, &observed, &work.disruption_waiting).await;
    let go_daemon_removed = remove_go_daemon_identity_logged(ctx).await;
    Ok(FleetOutcome {
        key_hash: key.pub_key_hash,
        plan,
        work,
        machines_away: observed.machines_away.clone(),
        started,
        finished,
        reboots_requested,
        granted,
        failed,
        held_by_skew,
        next_retry: ctx.next_retry(),
        refused,
        rotation,
        go_daemon_removed,
    })
}

/// Reads every record of the operator namespace with its Node, and the Windows Machines, and builds the planner's
/// fleet at `now` on the key hashing to `key_hash` (with the pending upgrade step failures as backoff).
///
/// # Errors
/// [`FleetError::ListRecords`], [`FleetError::Step`] (reading a Node) or [`FleetError::ListMachines`] when the API
/// server fails.
async fn observe_fleet(ctx: &FleetContext, key_hash: &str, now: Timestamp) -> Result<ObservedFleet, FleetError> {
    let instances = observe_instances(ctx.records.as_ref(), ctx.nodes.as_ref(), &ctx.settings.namespace).await?;
    let machines =
        ctx.windows_machines.list().await.map_err(|source| FleetError::ListMachines { source: Box::new(source) })?;
    Ok(ObservedFleet::new(instances, machines, key_hash, now, |name| ctx.pending_failure(name)))
}

/// One Warning Event per instance, target and API server version for upgrades the skew rule holds back; returns
/// the records held.
async fn warn_about_skew(ctx: &FleetContext, work: &Work, observed: &ObservedFleet) -> Vec<String> {
    let mut held = Vec::new();
    for hold in &work.held_by_skew {
        let Some(instance) = observed.instance(&hold.record) else {
            continue;
        };
        held.push(instance.record.key());
        if ctx.first_publication(hold.warning_key.clone()) {
            tracing::warn!(instance = %instance.record.key(), "{}", hold.note);
            publish(ctx, instance, Severity::Warning, "UpgradeBlockedByVersionSkew", hold.note.clone()).await;
        }
    }
    held
}
