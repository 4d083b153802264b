//! One Machine's reconcile: `wmco-machines` decides, this module acts on the Machine's `WindowsInstance` record
//! (apply when it changes, delete when the Machine goes) and tells the admin, with one Warning Event on the Machine,
//! when a Windows Machine can never be configured as it is.

use kube::api::ObjectMeta;
use kube::{Resource, ResourceExt};
use wmco_cluster_client::names::INSTANCE_FINALIZER;
use wmco_cluster_client::types::{InstanceOrigin, Machine, WindowsInstance, WindowsInstanceSpec};
use wmco_cluster_client::{NewEvent, Severity};
use wmco_machines::names::MACHINE_API_NAMESPACE;
use wmco_machines::{MachineDecision, MachineInstance, SkipReason, desired_instance, record_name};

use super::{MachinesContext, MachinesError};

/// What one Machine reconcile did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MachineOutcome {
    /// The record was created or changed (server-side apply).
    Applied {
        /// The record's name.
        record: String,
    },
    /// The record already holds what the Machine asks for; nothing was written.
    Unchanged {
        /// The record's name.
        record: String,
    },
    /// The Machine is being deleted or is gone: deletion of its record was requested (its finalizer keeps it until
    /// the host is deconfigured).
    DeletionRequested {
        /// The record's name.
        record: String,
    },
    /// The record is already being deleted; it is re-created once it is gone if the Machine still asks for it.
    RecordDeleting {
        /// The record's name.
        record: String,
    },
    /// The Machine needs nothing (gone or being deleted without a record).
    NothingToDo,
    /// The Machine is left alone, for this reason.
    Skipped(SkipReason),
}

/// The record for a Machine the operator configures, in `namespace`: origin Machine, the Machine's IPv4 address,
/// SSH user and expected Node name, the finalizer set, no ownerReference (a deleted Machine must not
/// garbage-collect the record its deconfiguration needs).
///
/// ```
/// use std::net::Ipv4Addr;
/// use wmco_machines::{ConfigurablePhase, MachineInstance};
/// use wmco_operator::machines::machine_record;
/// let instance = MachineInstance {
///     machine_name: "winworker-x7k2p".into(),
///     address: Ipv4Addr::new(10, 0, 128, 9),
///     username: "capi".into(),
///     expected_node_name: "winworker-x7k2p".into(),
///     phase: ConfigurablePhase::Provisioned,
/// };
/// let record = machine_record("wmco", &instance);
/// assert_eq!(record.metadata.name.as_deref(), Some("machine-winworker-x7k2p"));
/// assert_eq!(record.spec.address, "10.0.128.9");
/// assert_eq!(record.spec.expected_node_name.as_deref(), Some("winworker-x7k2p"));
/// assert!(record.metadata.owner_references.is_none());
/// ```
pub fn machine_record(namespace: &str, instance: &MachineInstance) -> WindowsInstance {
    WindowsInstance {
        metadata: ObjectMeta {
            name: Some(record_name(&instance.machine_name)),
            namespace: Some(namespace.to_owned()),
            finalizers: Some(vec![INSTANCE_FINALIZER.to_owned()]),
            ..ObjectMeta::default()
        },
        spec: WindowsInstanceSpec {
            address: instance.address.to_string(),
            username: instance.username.clone(),
            origin: InstanceOrigin::Machine,
            machine_name: Some(instance.machine_name.clone()),
            expected_node_name: Some(instance.expected_node_name.clone()),
        },
        status: None,
    }
}

/// Reconciles the record of `machine` with what `wmco-machines` decides for it on the context's platform.
///
/// ```no_run
/// # async fn example(ctx: &wmco_operator::machines::MachinesContext, machine: &wmco_cluster_client::types::Machine)
/// # -> Result<(), wmco_operator::machines::MachinesError> {
/// let outcome = wmco_operator::machines::reconcile_machine(machine, ctx).await?;
/// println!("{outcome:?}");
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`MachinesError::Record`] when reading, applying or deleting the record fails (retryable). A failed Event
/// publication is logged, not returned.
pub async fn reconcile_machine(machine: &Machine, ctx: &MachinesContext) -> Result<MachineOutcome, MachinesError> {
    let machine_name = machine.name_any();
    match desired_instance(machine, &ctx.settings.platform) {
        MachineDecision::Configure(instance) => {
            apply_record(&machine_record(&ctx.settings.namespace, &instance), ctx).await
        }
        MachineDecision::Deconfigure => delete_record(&machine_name, ctx).await,
        MachineDecision::Skip(reason) => {
            tracing::debug!(machine = %machine_name, reason = %reason, "Machine left alone");
            if matches!(reason, SkipReason::UnusableNodeName { .. }) {
                publish_unusable(machine, &reason, ctx).await;
            }
            Ok(MachineOutcome::Skipped(reason))
        }
    }
}

/// Reconciles every Machine record of the operator namespace against its Machine, read by name: a record whose
/// Machine is gone is deleted; the others get [`reconcile_machine`]. Records already being deleted are left alone.
///
/// ```no_run
/// # async fn example(ctx: &wmco_operator::machines::MachinesContext) -> Result<(), wmco_operator::machines::MachinesError> {
/// let outcomes = wmco_operator::machines::sweep_records(ctx).await?;
/// println!("{} Machine records checked", outcomes.len());
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`MachinesError::ListRecords`] or [`MachinesError::ReadMachine`] when a read fails, and the errors of
/// [`reconcile_machine`]; the sweep stops at the first error (it is retried as a whole).
pub async fn sweep_records(ctx: &MachinesContext) -> Result<Vec<MachineOutcome>, MachinesError> {
    let namespace = ctx.settings.namespace.as_str();
    let records = ctx
        .records
        .list(namespace)
        .await
        .map_err(|source| MachinesError::ListRecords { namespace: namespace.to_owned(), source: Box::new(source) })?;
    let machine_names = records
        .iter()
        .filter(|record| record.spec.origin == InstanceOrigin::Machine)
        .filter(|record| record.metadata.deletion_timestamp.is_none())
        .filter_map(|record| record.spec.machine_name.clone());
    let mut outcomes = Vec::new();
    for machine_name in machine_names {
        let machine = ctx.machines.get(MACHINE_API_NAMESPACE, &machine_name).await.map_err(|source| {
            MachinesError::ReadMachine {
                machine: format!("{MACHINE_API_NAMESPACE}/{machine_name}"),
                source: Box::new(source),
            }
        })?;
        outcomes.push(match machine {
            Some(machine) => reconcile_machine(&machine, ctx).await?,
            None => delete_record(&machine_name, ctx).await?,
        });
    }
    Ok(outcomes)
}

/// Applies `desired` unless the record already holds its spec and finalizer, or is being deleted.
async fn apply_record(desired: &WindowsInstance, ctx: &MachinesContext) -> Result<MachineOutcome, MachinesError> {
    let record = desired.name_any();
    let machine = desired.spec.machine_name.clone().unwrap_or_default();
    let error = |action: &'static str| {
        let (record, machine, namespace) = (record.clone(), machine.clone(), ctx.settings.namespace.clone());
        move |source| MachinesError::Record {
            record: format!("{namespace}/{record}"),
            machine,
            action,
            source: Box::new(source),
        }
    };
    let existing = ctx.records.get(&ctx.settings.namespace, &record).await.map_err(error("read"))?;
    if let Some(existing) = existing {
        if existing.metadata.deletion_timestamp.is_some() {
            return Ok(MachineOutcome::RecordDeleting { record });
        }
        let has_finalizer =
            existing.metadata.finalizers.iter().flatten().any(|finalizer| finalizer == INSTANCE_FINALIZER);
        if existing.spec == desired.spec && has_finalizer {
            return Ok(MachineOutcome::Unchanged { record });
        }
    }
    ctx.records.apply(desired).await.map_err(error("apply"))?;
    tracing::info!(machine = %machine, record = %record, address = %desired.spec.address, "Machine record applied");
    Ok(MachineOutcome::Applied { record })
}

/// Requests deletion of the record of `machine_name`, if there is one not already being deleted.
async fn delete_record(machine_name: &str, ctx: &MachinesContext) -> Result<MachineOutcome, MachinesError> {
    let namespace = ctx.settings.namespace.as_str();
    let record = record_name(machine_name);
    let error = |action: &'static str| {
        move |source| MachinesError::Record {
            record: format!("{namespace}/{}", record_name(machine_name)),
            machine: machine_name.to_owned(),
            action,
            source: Box::new(source),
        }
    };
    match ctx.records.get(namespace, &record).await.map_err(error("read"))? {
        None => Ok(MachineOutcome::NothingToDo),
        Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
            Ok(MachineOutcome::RecordDeleting { record })
        }
        Some(_) => {
            ctx.records.delete(namespace, &record).await.map_err(error("delete"))?;
            tracing::info!(machine = %machine_name, record = %record, "Machine going; deconfiguration requested");
            Ok(MachineOutcome::DeletionRequested { record })
        }
    }
}

/// The Warning Event telling the admin why a Windows Machine cannot be configured as it is.
pub(crate) fn unusable_event(reason: &SkipReason) -> NewEvent {
    NewEvent {
        severity: Severity::Warning,
        reason: "MachineNotConfigurable".to_owned(),
        action: "Configure".to_owned(),
        note: Some(format!("the operator cannot configure this Windows Machine: {reason}")),
    }
}

async fn publish_unusable(machine: &Machine, reason: &SkipReason, ctx: &MachinesContext) {
    if let Err(error) = ctx.events.publish(&machine.object_ref(&()), &unusable_event(reason)).await {
        tracing::warn!(machine = ?machine.metadata.name, error = %error, "could not publish the Machine's Warning Event");
    }
}
