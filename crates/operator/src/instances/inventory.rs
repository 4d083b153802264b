//! The inventory half of the controller: the `windows-instances` ConfigMap becomes one `WindowsInstance` per
//! valid entry (finalizer set, no ownerReference, so deleting the ConfigMap cannot cascade past deconfiguration),
//! one Warning Event on the ConfigMap per problem, and deletion requests for records whose entry is gone.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube::{Resource, ResourceExt};
use wmco_cluster_client::names::INSTANCE_FINALIZER;
use wmco_cluster_client::types::{InstanceOrigin, WindowsInstance, WindowsInstanceSpec};
use wmco_cluster_client::{NewEvent, Severity};
use wmco_instance_inventory::{DesiredInstance, EntryProblem, Resolver, build_inventory};

use super::{InstancesContext, InstancesError};

/// The name of the admin's ConfigMap listing the BYOH hosts.
pub const INSTANCES_CONFIG_MAP: &str = "windows-instances";

/// What the inventory asks of the records: apply these, delete those.
#[derive(Clone, Debug)]
pub struct RecordPlan {
    /// Records to create or update (server-side apply), one per valid entry.
    pub apply: Vec<WindowsInstance>,
    /// Names of BYOH records whose entry is gone and that are not already being deleted.
    pub delete: Vec<String>,
}

/// What one inventory reconcile did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InventoryOutcome {
    /// Names of the records applied.
    pub applied: Vec<String>,
    /// Names of the records whose deletion was requested.
    pub deleted: Vec<String>,
    /// How many Warning Events were published (one per entry problem).
    pub warnings: usize,
}

/// The record for one desired host in `namespace`: BYOH origin, the entry's key as address, the finalizer set.
///
/// ```
/// use std::collections::BTreeMap;
/// use wmco_instance_inventory::{StaticResolver, build_inventory};
/// use wmco_operator::instances::desired_record;
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let data = BTreeMap::from([("10.0.0.5".to_owned(), "username=Administrator".to_owned())]);
/// let inventory = build_inventory(&data, &StaticResolver::default()).await;
/// let record = desired_record("wmco", &inventory.instances[0]);
/// assert_eq!(record.spec.address, "10.0.0.5");
/// assert_eq!(record.metadata.finalizers, Some(vec!["windowsmachineconfig.openshift.io/deconfigure".to_owned()]));
/// assert!(record.metadata.owner_references.is_none());
/// # });
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn desired_record(namespace: &str, desired: &DesiredInstance) -> WindowsInstance {
    WindowsInstance {
        metadata: ObjectMeta {
            name: Some(desired.instance_name()),
            namespace: Some(namespace.to_owned()),
            finalizers: Some(vec![INSTANCE_FINALIZER.to_owned()]),
            ..ObjectMeta::default()
        },
        spec: WindowsInstanceSpec {
            address: desired.key.clone(),
            username: desired.username.clone(),
            origin: InstanceOrigin::Byoh,
            machine_name: None,
            expected_node_name: None,
        },
        status: None,
    }
}

/// The pure diff: the records `desired` needs against the `existing` ones. Records of another origin are never
/// deleted here; records already being deleted are not deleted again.
///
/// ```
/// use wmco_operator::instances::plan_records;
/// let plan = plan_records("wmco", &[], &[]);
/// assert!(plan.apply.is_empty() && plan.delete.is_empty());
/// ```
pub fn plan_records(namespace: &str, desired: &[DesiredInstance], existing: &[WindowsInstance]) -> RecordPlan {
    let live_byoh: Vec<&WindowsInstance> = existing
        .iter()
        .filter(|record| record.spec.origin == InstanceOrigin::Byoh)
        .filter(|record| record.metadata.deletion_timestamp.is_none())
        .collect();
    let apply: Vec<WindowsInstance> = desired
        .iter()
        .map(|instance| {
            let mut record = desired_record(namespace, instance);
            if let Some(name) = respelt_record(&live_byoh, instance) {
                record.metadata.name = Some(name);
            }
            record
        })
        .collect();
    let wanted: BTreeSet<String> = apply.iter().filter_map(|record| record.metadata.name.clone()).collect();
    let delete = live_byoh
        .iter()
        .filter_map(|record| record.metadata.name.clone())
        .filter(|name| !wanted.contains(name))
        .collect();
    RecordPlan { apply, delete }
}

/// The name of the live BYOH record of `instance`'s host when its key is a DNS name the admin spelt in another case
/// since (`WIN-1.corp.example` for `win-1.corp.example`): DNS names compare case-insensitively (RFC 4343), so it
/// is the same host and keeps its record rather than being deconfigured and configured again under a new name.
/// `None` when a record already has the instance's own name, or none names the host.
fn respelt_record(live_byoh: &[&WindowsInstance], instance: &DesiredInstance) -> Option<String> {
    let own_name = instance.instance_name();
    if live_byoh.iter().any(|record| record.metadata.name.as_deref() == Some(own_name.as_str())) {
        return None;
    }
    live_byoh
        .iter()
        .find(|record| record.spec.address.eq_ignore_ascii_case(&instance.key))
        .and_then(|record| record.metadata.name.clone())
}

/// Reconciles the records with `config_map` (`None`: the ConfigMap is deleted, so every BYOH record goes).
/// DNS names are resolved with `resolver`. Every problem entry gets one Warning Event on the ConfigMap naming the
/// key and the reason; it never blocks the valid entries.
///
/// ```no_run
/// # async fn example(ctx: &wmco_operator::instances::InstancesContext, cm: &k8s_openapi::api::core::v1::ConfigMap)
/// # -> Result<(), wmco_operator::instances::InstancesError> {
/// use wmco_instance_inventory::SystemResolver;
/// let outcome = wmco_operator::instances::reconcile_inventory(Some(cm), ctx, &SystemResolver).await?;
/// println!("{} applied, {} deleted", outcome.applied.len(), outcome.deleted.len());
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`InstancesError::ListRecords`] or [`InstancesError::Record`] when a cluster call fails (retryable). A failed
/// Event publication is logged, not returned.
pub async fn reconcile_inventory<R: Resolver>(
    config_map: Option<&ConfigMap>,
    ctx: &InstancesContext,
    resolver: &R,
) -> Result<InventoryOutcome, InstancesError> {
    let namespace = ctx.settings.namespace.as_str();
    let live = config_map.filter(|config_map| config_map.metadata.deletion_timestamp.is_none());
    let empty = BTreeMap::new();
    let data = live.and_then(|config_map| config_map.data.as_ref()).unwrap_or(&empty);
    let inventory = build_inventory(data, resolver).await;
    let existing = ctx
        .records
        .list(namespace)
        .await
        .map_err(|source| InstancesError::ListRecords { namespace: namespace.to_owned(), source: Box::new(source) })?;
    let plan = plan_records(namespace, &inventory.instances, &existing);
    let mut applied = Vec::with_capacity(plan.apply.len());
    for record in &plan.apply {
        let name = record.name_any();
        ctx.records.apply(record).await.map_err(|source| InstancesError::Record {
            instance: format!("{namespace}/{name}"),
            action: "apply",
            source: Box::new(source),
        })?;
        applied.push(name);
    }
    for name in &plan.delete {
        ctx.records.delete(namespace, name).await.map_err(|source| InstancesError::Record {
            instance: format!("{namespace}/{name}"),
            action: "delete",
            source: Box::new(source),
        })?;
        tracing::info!(instance = %name, "entry removed; deconfiguration requested");
    }
    if let Some(config_map) = live {
        for problem in &inventory.problems {
            publish_problem(ctx, config_map, problem).await;
        }
    }
    Ok(InventoryOutcome { applied, deleted: plan.delete, warnings: inventory.problems.len() })
}

/// The Warning Event for one problem entry.
pub(crate) fn problem_event(problem: &EntryProblem) -> NewEvent {
    NewEvent {
        severity: Severity::Warning,
        reason: "InvalidInstanceEntry".to_owned(),
        action: "Validate".to_owned(),
        note: Some(format!("entry {:?}: {}", problem.key, problem.reason)),
    }
}

async fn publish_problem(ctx: &InstancesContext, config_map: &ConfigMap, problem: &EntryProblem) {
    let regarding = config_map.object_ref(&());
    if let Err(error) = ctx.events.publish(&regarding, &problem_event(problem)).await {
        tracing::warn!(key = %problem.key, error = %error, "could not publish the entry's Warning Event");
    }
}
