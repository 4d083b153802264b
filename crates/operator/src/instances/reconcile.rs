//! One instance reconcile: configure a live record through `wmco-node-config`, or deconfigure a deleted one and
//! then release its finalizer. A permanent failure publishes a Warning Event on the record (the flow has already
//! recorded phase Failed and the reason); a retryable one is returned for the controller's backoff.

use kube::Resource;
use wmco_cluster_client::names::INSTANCE_FINALIZER;
use wmco_cluster_client::types::WindowsInstance;
use wmco_cluster_client::{NewEvent, Severity, WindowsInstanceExt};
use wmco_node_config::{
    ConfigureInputs, ConfigureOutcome, DeconfigureInputs, DeconfigureOutcome, FlowError, HostSession, WithheldService,
    configure, deconfigure,
};

use super::{InstancesContext, InstancesError};
use crate::runtime::ReconcilerError;

/// What one instance reconcile did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstanceOutcome {
    /// A configure pass ran; its outcome says where the host stands.
    Configured(ConfigureOutcome),
    /// The host was deconfigured and the record's finalizer released.
    Released(DeconfigureOutcome),
    /// The record is being deleted and no longer carries the operator's finalizer: nothing to do.
    Gone,
}

/// Reconciles one `WindowsInstance`: deconfigure and release when it is being deleted (force-remove honoured by
/// the flow), otherwise one configure pass over the host's cached session.
///
/// ```no_run
/// # async fn example(ctx: &wmco_operator::instances::InstancesContext,
/// #     instance: &wmco_cluster_client::types::WindowsInstance) {
/// use wmco_operator::instances::{InstanceOutcome, reconcile_instance};
/// use wmco_operator::runtime::ReconcilerError;
/// match reconcile_instance(instance, ctx).await {
///     Ok(InstanceOutcome::Configured(outcome)) => println!("{:?}", outcome.state),
///     Ok(_) => {}
///     Err(error) if error.is_retryable() => { /* back off and retry */ }
///     Err(error) => eprintln!("needs an admin: {error}"),
/// }
/// # }
/// ```
///
/// # Errors
/// [`InstancesError::Flow`] from the flow, [`InstancesError::Connector`] for an unusable record,
/// [`InstancesError::Record`] when releasing the finalizer fails.
pub async fn reconcile_instance(
    instance: &WindowsInstance,
    ctx: &InstancesContext,
) -> Result<InstanceOutcome, InstancesError> {
    let result = if instance.metadata.deletion_timestamp.is_some() {
        release(instance, ctx).await
    } else {
        configure_pass(instance, ctx).await.map(InstanceOutcome::Configured)
    };
    if let Err(error) = &result {
        ctx.metrics.record_error(error.metric_label());
        if !error.is_retryable() {
            publish_failure(instance, ctx, error).await;
        }
    }
    result
}

/// Counts the SSH traffic of one pass over `session` in the metrics.
async fn counting_traffic<T>(
    ctx: &InstancesContext,
    session: &HostSession,
    pass: impl Future<Output = Result<T, InstancesError>>,
) -> Result<T, InstancesError> {
    let before = session.counters();
    let result = pass.await;
    let after = session.counters();
    ctx.metrics.add_ssh_round_trips(after.commands.saturating_sub(before.commands));
    ctx.metrics.add_ssh_bytes_sent(after.bytes_uploaded.saturating_sub(before.bytes_uploaded));
    result
}

async fn configure_pass(
    instance: &WindowsInstance,
    ctx: &InstancesContext,
) -> Result<ConfigureOutcome, InstancesError> {
    let session = ctx.session(instance)?;
    let inputs = ConfigureInputs {
        instance,
        settings: &ctx.settings.services,
        files: ctx.files.as_ref(),
        operator_version: &ctx.settings.operator_version,
        pub_key_hash: &ctx.settings.pub_key_hash,
    };
    let pass =
        async { configure(&session, ctx.cluster(), &inputs).await.map_err(|source| flow_error(instance, source)) };
    let outcome = counting_traffic(ctx, &session, pass).await?;
    for withheld in ctx.newly_withheld(instance, &outcome.withheld) {
        tracing::warn!(instance = %instance.key(), service = %withheld.service, reason = %withheld.reason,
            "service withheld until its input exists; the other services go ahead");
        publish(instance, ctx, &withheld_event(&withheld)).await;
    }
    Ok(outcome)
}

/// The Warning Event on the record for a service a configure pass left out.
pub(crate) fn withheld_event(withheld: &WithheldService) -> NewEvent {
    NewEvent {
        severity: Severity::Warning,
        reason: "ServiceWithheld".to_owned(),
        action: "Configure".to_owned(),
        note: Some(format!(
            "{} is not installed until its input exists: {}; the other services go ahead",
            withheld.service, withheld.reason
        )),
    }
}

async fn release(instance: &WindowsInstance, ctx: &InstancesContext) -> Result<InstanceOutcome, InstancesError> {
    let holds_finalizer = instance
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|finalizers| finalizers.iter().any(|finalizer| finalizer == INSTANCE_FINALIZER));
    if !holds_finalizer {
        ctx.forget_session(instance);
        return Ok(InstanceOutcome::Gone);
    }
    let session = ctx.session(instance)?;
    let inputs = DeconfigureInputs { instance, drain: &ctx.settings.drain };
    let pass =
        async { deconfigure(&session, ctx.cluster(), &inputs).await.map_err(|source| flow_error(instance, source)) };
    let outcome = counting_traffic(ctx, &session, pass).await?;
    for skipped in &outcome.forced_past {
        tracing::warn!(instance = %instance.key(), skipped = %skipped, "force-remove: failure skipped");
    }
    ctx.records.release_finalizer(instance).await.map_err(|source| InstancesError::Record {
        instance: instance.key(),
        action: "release finalizer",
        source: Box::new(source),
    })?;
    ctx.forget_session(instance);
    Ok(InstanceOutcome::Released(outcome))
}

fn flow_error(instance: &WindowsInstance, source: FlowError) -> InstancesError {
    InstancesError::Flow { instance: instance.key(), source: Box::new(source) }
}

/// The Warning Event on the record for a failure that needs an admin.
pub(crate) fn failure_event(error: &InstancesError) -> NewEvent {
    let reason = match error {
        InstancesError::Flow { source, .. } if source.is_host_key_mismatch() => "HostKeyMismatch",
        _ => "InstanceSetupFailed",
    };
    NewEvent {
        severity: Severity::Warning,
        reason: reason.to_owned(),
        action: "Configure".to_owned(),
        note: Some(error.to_string()),
    }
}

async fn publish_failure(instance: &WindowsInstance, ctx: &InstancesContext, error: &InstancesError) {
    publish(instance, ctx, &failure_event(error)).await;
}

/// Publishes `event` on the record; a failed publish is logged, never an error of the reconcile.
async fn publish(instance: &WindowsInstance, ctx: &InstancesContext, event: &NewEvent) {
    let regarding = instance.object_ref(&());
    if let Err(publish_error) = ctx.events.publish(&regarding, event).await {
        tracing::warn!(instance = %instance.key(), reason = %event.reason, error = %publish_error, "could not publish an Event");
    }
}
