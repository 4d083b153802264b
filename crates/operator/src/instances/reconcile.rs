//! One instance reconcile: configure a live record through `wmco-node-config`, or deconfigure a deleted one and
//! then release its finalizer. A permanent failure publishes a Warning Event (the flow has already recorded phase
//! Failed and the reason); a retryable one is returned for the controller's backoff. A host that became Ready
//! (other than at the end of an upgrade, which the upgrade executor reports) gets a Normal `InstanceSetup` or
//! `MachineSetup`, a released one a Normal `InstanceTeardown`.
//!
//! Every Event goes on the record and, under the Go operator's reason, on the object the Go operator reports on:
//! ConfigMap `windows-instances` for a BYOH host, the Machine for a Machine's host.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use wmco_cluster_client::names::INSTANCE_FINALIZER;
use wmco_cluster_client::types::{InstanceOrigin, InstancePhase, WindowsInstance};
use wmco_cluster_client::{
    ConfigMapEntry, HOST_KEYS_CONFIG_MAP, NewEvent, Severity, WindowsInstanceExt, forget_host_key, keep_host_key,
};
use wmco_machines::names::MACHINE_API_NAMESPACE;
use wmco_node_config::{
    ConfigureInputs, ConfigureOutcome, ConfigureState, DeconfigureInputs, DeconfigureOutcome, FlowError, HostSession,
    IdentityChange, PreflightFailure, RebootStep, WithheldService, configure, deconfigure,
};

use wmco_ssh_transport::HostKey;

use super::{GO_HOST_KEYS_CONFIG_MAP, HostKeyImportError, InstancesContext, InstancesError, stored_host_key};
use crate::runtime::{Controlled, ReconcilerError};

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
        ctx.metrics.record_error(InstancesContext::NAME, error.metric_label());
        if !error.is_retryable()
            || matches!(
                error,
                InstancesError::Flow { .. }
                    | InstancesError::ClusterUnsupported { .. }
                    | InstancesError::HostKeyImport { .. }
            )
        {
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
    if let Some(reason) = ctx.settings.services.refusal() {
        return Err(InstancesError::ClusterUnsupported { instance: instance.key(), reason });
    }
    let adopted = adopt_stored_host_key(instance, ctx).await?;
    let instance = adopted.as_ref().unwrap_or(instance);
    let session = ctx.session(instance)?;
    let services = ctx.settings.services.current();
    let inputs = ConfigureInputs {
        instance,
        settings: &services,
        files: ctx.files.as_ref(),
        operator_version: &ctx.settings.operator_version,
        pub_key_hash: &ctx.settings.pub_key_hash,
        drain: &ctx.settings.drain,
    };
    let pass =
        async { configure(&session, ctx.cluster(), &inputs).await.map_err(|source| flow_error(instance, source)) };
    let outcome = counting_traffic(ctx, &session, pass).await?;
    let before = instance.status.as_ref().and_then(|status| status.phase);
    if outcome.state == ConfigureState::Ready
        && !matches!(before, Some(InstancePhase::Ready | InstancePhase::Upgrading))
    {
        publish_everywhere(instance, ctx, &setup_event(instance, &outcome, &ctx.settings.operator_version)).await;
    }
    if let Some(step) = &outcome.reboot {
        publish(instance, ctx, &reboot_event(instance, step)).await;
    }
    if let Some(key_line) = &outcome.host_key_first_use {
        publish(instance, ctx, &first_use_event(key_line)).await;
    }
    if let Some(change) = &outcome.identity_change {
        tracing::info!(instance = %instance.key(), change = %change.note(), "the host's identity changed");
        publish(instance, ctx, &identity_event(change)).await;
    }
    for withheld in ctx.newly_withheld(instance, &outcome.withheld) {
        tracing::warn!(instance = %instance.key(), service = %withheld.service, reason = %withheld.reason,
            "service withheld until its input exists; the other services go ahead");
        publish(instance, ctx, &withheld_event(&withheld)).await;
    }
    Ok(outcome)
}

/// For a record without a pinned host key, the record with the key stored for its host ([`stored_host_key`]) pinned
/// in its status (the connection then checks it and the flow records it), a copy in the operator's own ConfigMap
/// when the key came from elsewhere, and a Normal Event `HostKeyImported` naming the key and where it was found;
/// `None` when the record has a key or nothing was stored (the flow then trusts the host's key on first use).
async fn adopt_stored_host_key(
    instance: &WindowsInstance,
    ctx: &InstancesContext,
) -> Result<Option<WindowsInstance>, InstancesError> {
    if instance.pinned_host_key().is_some() {
        return Ok(None);
    }
    let import_error = |source| InstancesError::HostKeyImport { instance: instance.key(), source };
    let found = stored_host_key(ctx.nodes.as_ref(), ctx.config_maps.as_ref(), instance).await.map_err(import_error)?;
    let Some(imported) = found else { return Ok(None) };
    tracing::info!(instance = %instance.key(), fingerprint = %imported.key.fingerprint(), origin = %imported.origin,
        "pinning the host key stored for this host");
    if !imported.kept_by_operator {
        keep_host_key(ctx.config_maps.as_ref(), instance, &imported.key.to_openssh())
            .await
            .map_err(|source| import_error(HostKeyImportError::Cluster(Box::new(source))))?;
    }
    let event = NewEvent {
        severity: Severity::Normal,
        reason: "HostKeyImported".to_owned(),
        action: "Configure".to_owned(),
        note: Some(format!(
            "host key {} {} pinned from {}; the host must present it",
            imported.key.algorithm(),
            imported.key.fingerprint(),
            imported.origin
        )),
    };
    publish(instance, ctx, &event).await;
    let mut adopted = instance.clone();
    adopted.status.get_or_insert_default().pinned_host_key = Some(imported.key.to_openssh());
    Ok(Some(adopted))
}

/// The Normal Event on the record for a host key pinned on first use (`HostKeyTrustedOnFirstUse`): nothing was
/// stored for the host, so the key it presented is pinned from now on.
pub(crate) fn first_use_event(key_line: &str) -> NewEvent {
    let described = match HostKey::from_openssh(key_line) {
        Ok(key) => format!("{} {}", key.algorithm(), key.fingerprint()),
        Err(_) => key_line.to_owned(),
    };
    NewEvent {
        severity: Severity::Normal,
        reason: "HostKeyTrustedOnFirstUse".to_owned(),
        action: "Configure".to_owned(),
        note: Some(format!(
            "no host key was stored for this host (ConfigMap {HOST_KEYS_CONFIG_MAP}, ConfigMap \
             {GO_HOST_KEYS_CONFIG_MAP}, or a Node the Go operator configured): the key it presented, {described}, is \
             pinned and kept in ConfigMap {HOST_KEYS_CONFIG_MAP}"
        )),
    }
}

/// Removes the host's pin from the operator's ConfigMap and the Go operator's (its record is released for good, so
/// a new host may take its address and is met as new).
async fn forget_pins(instance: &WindowsInstance, ctx: &InstancesContext) -> Result<(), InstancesError> {
    let record_error = |source| InstancesError::Record {
        instance: instance.key(),
        action: "forget the pinned host key",
        source: Box::new(source),
    };
    forget_host_key(ctx.config_maps.as_ref(), instance).await.map_err(record_error)?;
    let go_entry = ConfigMapEntry {
        namespace: &ctx.settings.namespace,
        name: GO_HOST_KEYS_CONFIG_MAP,
        key: &instance.spec.address,
        labels: &[],
    };
    ctx.config_maps.set_entry(&go_entry, None).await.map_err(record_error)
}

/// The Normal Event on the record for a reboot the operator started (`HostRebooting`) or saw completed
/// (`HostRebooted`).
pub(crate) fn reboot_event(instance: &WindowsInstance, step: &RebootStep) -> NewEvent {
    let address = &instance.spec.address;
    let (reason, note) = match step {
        RebootStep::Started(why) => (
            "HostRebooting",
            format!("host {address} restarts because {why}; it counts against --max-unavailable until it is back"),
        ),
        RebootStep::Completed(why) => {
            ("HostRebooted", format!("host {address} is back from the restart made because {why}"))
        }
    };
    NewEvent { severity: Severity::Normal, reason: reason.to_owned(), action: "Configure".to_owned(), note: Some(note) }
}

/// The Normal Event on the record for a host whose recorded identity a pass changed (`HostIdentityChanged`): a new
/// DHCP address or DNS name; the note says what changed.
pub(crate) fn identity_event(change: &IdentityChange) -> NewEvent {
    NewEvent {
        severity: Severity::Normal,
        reason: "HostIdentityChanged".to_owned(),
        action: "Configure".to_owned(),
        note: Some(change.note()),
    }
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
    forget_pins(instance, ctx).await?;
    ctx.records.release_finalizer(instance).await.map_err(|source| InstancesError::Record {
        instance: instance.key(),
        action: "release finalizer",
        source: Box::new(source),
    })?;
    ctx.forget_session(instance);
    ctx.released.notify_one();
    publish_everywhere(instance, ctx, &teardown_event(instance, &outcome)).await;
    Ok(InstanceOutcome::Released(outcome))
}

/// The Normal Event for a host that became a Ready Node: `InstanceSetup` for a BYOH host, `MachineSetup` for a
/// Machine's (the Go operator's reasons).
pub(crate) fn setup_event(instance: &WindowsInstance, outcome: &ConfigureOutcome, version: &str) -> NewEvent {
    let reason = match instance.spec.origin {
        InstanceOrigin::Byoh => "InstanceSetup",
        InstanceOrigin::Machine => "MachineSetup",
    };
    NewEvent {
        severity: Severity::Normal,
        reason: reason.to_owned(),
        action: "Configure".to_owned(),
        note: Some(format!("host {} is Node {} at version {version}", instance.spec.address, outcome.node_name)),
    }
}

/// The Normal Event for a host that was deconfigured and whose record was released.
pub(crate) fn teardown_event(instance: &WindowsInstance, outcome: &DeconfigureOutcome) -> NewEvent {
    let skipped = if outcome.forced_past.is_empty() {
        String::new()
    } else {
        format!("; force-remove skipped {} failed step(s)", outcome.forced_past.len())
    };
    NewEvent {
        severity: Severity::Normal,
        reason: "InstanceTeardown".to_owned(),
        action: "Deconfigure".to_owned(),
        note: Some(format!("host {} was drained, cleaned and removed{skipped}", instance.spec.address)),
    }
}

fn flow_error(instance: &WindowsInstance, source: FlowError) -> InstancesError {
    InstancesError::Flow { instance: instance.key(), source: Box::new(source) }
}

/// The Warning Event for a failure of the host or one that needs an admin: `HostKeyMismatch`, `NodeNameConflict`
/// (the note names the Node and whose it is), or the Go operator's
/// `InstanceSetupFailure` (BYOH) / `MachineSetupFailure` (Machine). The note names the step and says whether the
/// operator retries; repeats of one failure fold into one Event series.
pub(crate) fn failure_event(instance: &WindowsInstance, error: &InstancesError) -> NewEvent {
    let reason = match (error, instance.spec.origin) {
        (InstancesError::Flow { source, .. }, _) if source.is_host_key_mismatch() => "HostKeyMismatch",
        (InstancesError::Flow { source, .. }, _) if source.is_node_name_conflict() => "NodeNameConflict",
        (InstancesError::ClusterUnsupported { .. }, _) => "ClusterUnsupported",
        (InstancesError::HostKeyImport { .. }, _) => "HostKeyImportFailed",
        (_, InstanceOrigin::Byoh) => "InstanceSetupFailure",
        (_, InstanceOrigin::Machine) => "MachineSetupFailure",
    };
    let action = if instance.metadata.deletion_timestamp.is_some() { "Deconfigure" } else { "Configure" };
    let note =
        if error.is_retryable() { format!("{error}; the operator retries with backoff") } else { error.to_string() };
    NewEvent { severity: Severity::Warning, reason: reason.to_owned(), action: action.to_owned(), note: Some(note) }
}

async fn publish_failure(instance: &WindowsInstance, ctx: &InstancesContext, error: &InstancesError) {
    if let InstancesError::Flow { source, .. } = error
        && !source.preflight_failures().is_empty()
    {
        for failure in source.preflight_failures() {
            publish(instance, ctx, &preflight_event(failure)).await;
        }
        return;
    }
    let event = failure_event(instance, error);
    if matches!(
        event.reason.as_str(),
        "HostKeyMismatch" | "NodeNameConflict" | "ClusterUnsupported" | "HostKeyImportFailed"
    ) {
        publish(instance, ctx, &event).await;
    } else {
        publish_everywhere(instance, ctx, &event).await;
    }
}

/// The Warning Event on the record for one failed preflight check (one per check, so each is named on its own;
/// a check that keeps failing folds into one Event series).
pub(crate) fn preflight_event(failure: &PreflightFailure) -> NewEvent {
    NewEvent {
        severity: Severity::Warning,
        reason: "PreflightCheckFailed".to_owned(),
        action: "Configure".to_owned(),
        note: Some(format!("{failure}; nothing was installed, the operator checks again with backoff")),
    }
}

/// Publishes `event` on the record; a failed publish is logged, never an error of the reconcile.
async fn publish(instance: &WindowsInstance, ctx: &InstancesContext, event: &NewEvent) {
    publish_on(instance, ctx, event, [Some(instance.object_ref(&())), None]).await;
}

/// Publishes an Event the Go operator also publishes on the record and on the object the Go operator reports on
/// (see the module documentation).
async fn publish_everywhere(instance: &WindowsInstance, ctx: &InstancesContext, event: &NewEvent) {
    let go_object = go_reported_object(instance, &ctx.settings.namespace);
    publish_on(instance, ctx, event, [Some(instance.object_ref(&())), go_object]).await;
}

async fn publish_on(
    instance: &WindowsInstance,
    ctx: &InstancesContext,
    event: &NewEvent,
    regarding: [Option<ObjectReference>; 2],
) {
    for object in regarding.into_iter().flatten() {
        if let Err(publish_error) = ctx.events.publish(&object, event).await {
            tracing::warn!(instance = %instance.key(), reason = %event.reason, error = %publish_error, "could not publish an Event");
        }
    }
}

/// The object the Go operator puts a host's Events on: ConfigMap `windows-instances` in the operator namespace for a
/// BYOH host, the Machine for a Machine's host (none when the record names no Machine).
pub(crate) fn go_reported_object(instance: &WindowsInstance, namespace: &str) -> Option<ObjectReference> {
    match instance.spec.origin {
        InstanceOrigin::Byoh => Some(ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("ConfigMap".to_owned()),
            name: Some(super::INSTANCES_CONFIG_MAP.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectReference::default()
        }),
        InstanceOrigin::Machine => instance.spec.machine_name.as_ref().map(|machine| ObjectReference {
            api_version: Some("machine.openshift.io/v1beta1".to_owned()),
            kind: Some("Machine".to_owned()),
            name: Some(machine.clone()),
            namespace: Some(MACHINE_API_NAMESPACE.to_owned()),
            ..ObjectReference::default()
        }),
    }
}
