//! The reboot flow (windows-commands.md §4.1, wmco-anchor.md §6): one resumable sequence for every reboot — the
//! `Containers` feature a host met for the first time lacks, and the reboots the fleet executor records for an admin,
//! the Node's `reboot-required` annotation or the host's pending-reboot markers.
//!
//! 1. **Request** ([`request`]): the record's `status.disruption` says kind `Reboot`, state `Requested`, the reason
//!    and the host's boot time before it; the pass changes nothing more and says
//!    [`ConfigureState::WaitingForBudget`]. The fleet executor grants it within `--max-unavailable` (the Node, if
//!    any, marked `upgrading`; state `Granted`).
//! 2. **Cordon and drain** a Node that exists and is schedulable (the record notes that the operator cordoned it);
//!    the drain goes through the eviction API, so PodDisruptionBudgets hold it back.
//! 3. **Restart**: state `Restarting` and the time are written first, then `Restart-Computer -Force` is sent; a
//!    connection that drops while it runs is the expected outcome, not an error.
//! 4. **Wait** ([`advance`], one identity command per pass): a host that does not answer, or answers with the old
//!    boot time, is still rebooting ([`ConfigureState::Rebooting`]); the restart is sent again when the host stays up
//!    [`RESEND_AFTER`] after it; after [`REBOOT_TIMEOUT`] each pass fails with [`FlowError::Reboot`] (retried with
//!    backoff) until the host is back.
//! 5. **Back**: a new boot time completes the reboot — the Node uncordoned (if the operator cordoned it), unmarked
//!    and rid of the `reboot-required` annotation, then state `Completed` — and the pass goes on with the identity
//!    command's fresh output.
//!
//! Every step is written before it is taken, so an operator restarted at any point resumes from the record: a
//! `Granted` reboot cordons, drains and restarts; a `Restarting` one waits for the new boot time.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use wmco_cluster_client::names::{REBOOT_REQUIRED_ANNOTATION, UPGRADING_LABEL};
use wmco_cluster_client::types::{DisruptionState, HostDisruption, InstancePhase};
use wmco_cluster_client::{NodeExt, NodeMetadataPatch};
use wmco_ssh_transport::TransportError;
use wmco_vocabulary::DisruptionKind;

use crate::error::{FlowError, FlowStep};
use crate::facts::HostFacts;
use crate::pass::{ClusterAccess, ConfigureInputs, ConfigureState};
use crate::preflight::run_identity_command;
use crate::record::Recorder;
use crate::script;
use crate::session::HostSession;

/// Why the configuration reboots a host whose `Containers` feature it installed (or found installed, pending).
pub const CONTAINERS_REBOOT_REASON: &str = "the Windows feature Containers was installed";

/// How long a host that still reports its old boot time may stay up after `Restart-Computer` before it is sent
/// again (Windows shuts down in seconds to a minute).
pub const RESEND_AFTER: SignedDuration = SignedDuration::from_mins(2);

/// How long a host may take to come back after `Restart-Computer` before each pass reports it (the Go operator
/// waits as long).
pub const REBOOT_TIMEOUT: SignedDuration = SignedDuration::from_mins(10);

/// Where an [`advance`] left the reboot.
pub(crate) enum Progress {
    /// The host is back; the identity command's output read after the reboot.
    Back(String),
    /// The reboot is still under way.
    Waiting(ConfigureState),
}

/// Requests a reboot of the host for `reason`, with `boot_before` its current boot time and `node_name` its Node if
/// one exists (unless a disruption is already requested or under way); the pass then waits for the grant.
pub(crate) async fn request(
    session: &HostSession,
    recorder: &mut Recorder<'_>,
    reason: &str,
    boot_before: &str,
    node_name: Option<&str>,
) -> Result<ConfigureState, FlowError> {
    if let Some(request) = recorder.status.request_disruption(DisruptionKind::Reboot, reason, Timestamp::now(), None) {
        request.boot_before = Some(boot_before.to_owned());
        request.node = node_name.map(str::to_owned);
        tracing::info!(host = session.label(), reason, "reboot requested: waiting for the fleet executor's grant");
        recorder.save().await?;
    }
    Ok(ConfigureState::WaitingForBudget)
}

/// Advances the reboot recorded in the status (which must be under way) by one step.
pub(crate) async fn advance(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    inputs: &ConfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
) -> Result<Progress, FlowError> {
    let Some(reboot) = under_way(&recorder.status.disruption).cloned() else {
        return Err(FlowError::Record { instance: session.label().to_owned(), what: "status.disruption under way" });
    };
    let node_name = reboot.node.clone();
    match reboot.state {
        DisruptionState::Requested | DisruptionState::Granted => {
            if reboot.boot_before.is_none() {
                note_boot_before(session, inputs, recorder).await?;
            }
            if let Some(node_name) = &node_name {
                cordon_and_drain(session, cluster, inputs, recorder, node_name).await?;
            }
            send_restart(session, recorder).await?;
            Ok(Progress::Waiting(ConfigureState::Rebooting))
        }
        DisruptionState::Restarting | DisruptionState::Completed => {
            let sent = reboot.restart_sent_at.as_ref().map_or(reboot.requested_at.0, |time| time.0);
            let since = Timestamp::now().duration_since(sent);
            let stdout = match run_identity_command(session, inputs.node_naming()).await {
                Ok(stdout) => stdout,
                Err(error) if is_down(&error) => {
                    tracing::debug!(host = session.label(), error = %error, "the host is not back yet");
                    return waiting_or_timed_out(session, since);
                }
                Err(error) => return Err(error),
            };
            match HostFacts::parse(&stdout).last_boot {
                Some(boot) if reboot.boot_before.as_deref() != Some(boot.as_str()) => {
                    complete(session, cluster, recorder, node_name.as_deref(), &boot).await?;
                    Ok(Progress::Back(stdout))
                }
                _ if since >= RESEND_AFTER => {
                    tracing::warn!(host = session.label(), after = %since, "the host is still up: restarting it again");
                    send_restart(session, recorder).await?;
                    waiting_or_timed_out(session, since)
                }
                _ => waiting_or_timed_out(session, since),
            }
        }
    }
}

/// The reboot `disruption` records, if one is granted and under way (a restart of services is not this flow's).
pub(crate) fn under_way(disruption: &Option<HostDisruption>) -> Option<&HostDisruption> {
    disruption.as_ref().filter(|disruption| disruption.kind == DisruptionKind::Reboot && disruption.is_under_way())
}

/// Records the host's boot time before a reboot the fleet executor requested (it cannot read it), so the reboot's
/// end can be told: one identity command.
async fn note_boot_before(
    session: &HostSession,
    inputs: &ConfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
) -> Result<(), FlowError> {
    let stdout = run_identity_command(session, inputs.node_naming()).await?;
    let facts = HostFacts::parse(&stdout);
    let boot = boot_time(session, &facts)?;
    if let Some(reboot) = recorder.status.disruption.as_mut() {
        reboot.boot_before = Some(boot.to_owned());
    }
    recorder.save().await
}

/// The host's boot time as its identity command reported it; without it a completed reboot cannot be told from a
/// pending one, so nothing that reboots the host goes on.
pub(crate) fn boot_time<'a>(session: &HostSession, facts: &'a HostFacts) -> Result<&'a str, FlowError> {
    facts.last_boot.as_deref().ok_or_else(|| FlowError::Reboot {
        host: session.label().to_owned(),
        message: "the host did not report its boot time (Win32_OperatingSystem LastBootUpTime), so a completed \
                  reboot cannot be told from a pending one; nothing was changed for the reboot"
            .to_owned(),
    })
}

/// Still rebooting, or [`FlowError::Reboot`] once `since` passed [`REBOOT_TIMEOUT`].
fn waiting_or_timed_out(session: &HostSession, since: SignedDuration) -> Result<Progress, FlowError> {
    if since >= REBOOT_TIMEOUT {
        return Err(FlowError::Reboot {
            host: session.label().to_owned(),
            message: format!(
                "the host did not come back with a new boot time within {REBOOT_TIMEOUT:#} of Restart-Computer \
                 ({since:#} so far); check its console, the operator keeps waiting"
            ),
        });
    }
    Ok(Progress::Waiting(ConfigureState::Rebooting))
}

/// Whether `error` says the host cannot be reached (down or restarting), rather than that it refused the operator.
fn is_down(error: &FlowError) -> bool {
    match error {
        FlowError::Transport { source, .. } => !matches!(
            source.as_ref(),
            TransportError::Authentication { .. }
                | TransportError::HostKeyMismatch { .. }
                | TransportError::Key(_)
                | TransportError::CommandFailed { .. }
                | TransportError::OutputTooLarge { .. }
        ),
        _ => false,
    }
}

/// Cordons the Node (noting it, unless it was already unschedulable: an admin's cordon is left to the admin) and
/// drains it.
async fn cordon_and_drain(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    inputs: &ConfigureInputs<'_>,
    recorder: &mut Recorder<'_>,
    node_name: &str,
) -> Result<(), FlowError> {
    let cluster_error = |step, source| FlowError::Cluster { host: session.label().to_owned(), step, source };
    let Some(node) = cluster.nodes.get(node_name).await.map_err(|source| cluster_error(FlowStep::ReadNode, source))?
    else {
        return Ok(());
    };
    let already_ours = recorder.status.disruption.as_ref().is_some_and(|reboot| reboot.cordoned);
    if !already_ours && !node.is_unschedulable() {
        if let Some(reboot) = recorder.status.disruption.as_mut() {
            reboot.cordoned = true;
        }
        recorder.save().await?;
        cluster.nodes.cordon(node_name).await.map_err(|source| cluster_error(FlowStep::Cordon, source))?;
    }
    cluster.drainer.drain(node_name, inputs.drain).await.map_err(|source| cluster_error(FlowStep::Drain, source))?;
    Ok(())
}

/// Records state `Restarting` and the time, then sends `Restart-Computer -Force`. A transport failure while it runs
/// is the restart under way; a command that ran and failed is an error.
async fn send_restart(session: &HostSession, recorder: &mut Recorder<'_>) -> Result<(), FlowError> {
    if let Some(reboot) = recorder.status.disruption.as_mut() {
        reboot.state = DisruptionState::Restarting;
        reboot.restart_sent_at = Some(Time(Timestamp::now()));
    }
    recorder.save().await?;
    let command = script::restart_computer().map_err(|source| FlowError::Render {
        host: session.label().to_owned(),
        step: FlowStep::Reboot,
        source,
    })?;
    tracing::info!(host = session.label(), "Restart-Computer sent");
    match session.run_powershell(FlowStep::Reboot, "restart the host", &command).await {
        Ok(_) => Ok(()),
        Err(error) if is_down(&error) => {
            tracing::debug!(host = session.label(), error = %error, "the connection dropped as the host restarts");
            Ok(())
        }
        Err(error) => Err(error),
    }
}

/// Completes the reboot: the Node uncordoned if the operator cordoned it, unmarked if marked (the grant's mark; an
/// upgrade's stays until the fleet executor finishes it) and rid of the `reboot-required` annotation the reboot
/// answered, then state `Completed` with the time and no pending-reboot marker (until the next probe reads them
/// again: a marker left from before would ask for a second reboot).
async fn complete(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    recorder: &mut Recorder<'_>,
    node_name: Option<&str>,
    boot: &str,
) -> Result<(), FlowError> {
    let cluster_error = |step, source| FlowError::Cluster { host: session.label().to_owned(), step, source };
    let cordoned = recorder.status.disruption.as_ref().is_some_and(|reboot| reboot.cordoned);
    if let Some(node_name) = node_name
        && let Some(node) =
            cluster.nodes.get(node_name).await.map_err(|source| cluster_error(FlowStep::ReadNode, source))?
    {
        if cordoned && node.is_unschedulable() {
            cluster.nodes.uncordon(node_name).await.map_err(|source| cluster_error(FlowStep::Cordon, source))?;
        }
        let mut patch = NodeMetadataPatch::default();
        if node.is_marked() && recorder.status.phase != Some(InstancePhase::Upgrading) {
            patch = patch.remove_label(UPGRADING_LABEL);
        }
        if node.annotation(REBOOT_REQUIRED_ANNOTATION).is_some() {
            patch = patch.remove_annotation(REBOOT_REQUIRED_ANNOTATION);
        }
        if patch != NodeMetadataPatch::default() {
            cluster
                .nodes
                .patch_metadata(node_name, &patch)
                .await
                .map_err(|source| cluster_error(FlowStep::LabelNode, source))?;
        }
    }
    if let Some(reboot) = recorder.status.disruption.as_mut() {
        reboot.state = DisruptionState::Completed;
        reboot.completed_at = Some(Time(Timestamp::now()));
    }
    // The markers read before the reboot were its reason; the next probe reads what is pending now.
    recorder.note_pending_reboot(&[]);
    recorder.save().await?;
    tracing::info!(host = session.label(), boot, "the host is back from its reboot");
    Ok(())
}
