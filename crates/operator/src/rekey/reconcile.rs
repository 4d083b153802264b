//! One rotation reconcile: read the current key and the fleet fresh from the API server, decide (pure, see
//! [`decide`] and [`decide_refused`]), then act — delete the admitted Machines (those on an old key, then those
//! whose host has refused the key longer than the grace period) and check the admitted BYOH hosts with the new key,
//! annotating the Node on success and telling the admin exactly what to add where on refusal. The budget lock is
//! held from reading the fleet until the Machines are deleted (the BYOH checks take no budget). A failure on one
//! host never stops the others; it is reported in the outcome and retried on a later reconcile.

use futures::future::join_all;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use wmco_cluster_client::names::PUB_KEY_HASH_ANNOTATION;
use wmco_cluster_client::{NewEvent, NodeMetadataPatch, Severity, WindowsInstanceExt};
use wmco_machines::names::MACHINE_API_NAMESPACE;

use super::{
    KeyCheckFailure, RefusedMachine, RefusedPlan, RekeyContext, RekeyError, RekeyInputs, RekeyPlan, Replacement,
    decide, decide_refused,
};
use crate::fleet::{ObservedInstance, observe_instances};
use crate::operator_key::{OperatorKey, load_operator_key};

/// Where Win32-OpenSSH reads the authorized keys of members of the Administrators group (the operator's SSH user
/// is one: it manages services).
pub const ADMINISTRATORS_AUTHORIZED_KEYS: &str = r"C:\ProgramData\ssh\administrators_authorized_keys";

/// What one rotation reconcile did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RekeyOutcome {
    /// The `pub-key-hash` of the key the reconcile worked with.
    pub key_hash: String,
    /// The decision it acted on.
    pub plan: RekeyPlan,
    /// Machines deleted in this reconcile because they were configured with an old key
    /// (`openshift-machine-api/<name>`).
    pub replaced: Vec<String>,
    /// What was decided about Machines whose host refuses the key.
    pub refused: RefusedPlan,
    /// Machines deleted in this reconcile because their host refused the key past the grace period
    /// (`openshift-machine-api/<name>`).
    pub replaced_refused: Vec<String>,
    /// Records whose host accepted the new key and whose Node now carries its hash.
    pub rekeyed: Vec<String>,
    /// Records whose host refused the new key (the admin has not authorized it yet).
    pub not_authorized: Vec<String>,
    /// Records whose step failed otherwise, with the error as a sentence.
    pub failed: Vec<(String, String)>,
}

impl RekeyOutcome {
    /// Whether a host should be checked again soon (refused key, failed step, or a refused Machine waiting for
    /// budget).
    pub fn needs_retry(&self) -> bool {
        !self.not_authorized.is_empty() || !self.failed.is_empty() || !self.refused.waiting_for_budget.is_empty()
    }
}

/// Reconciles the fleet with the current `cloud-private-key` at `now`.
///
/// ```no_run
/// # async fn example(ctx: &wmco_operator::rekey::RekeyContext) -> Result<(), wmco_operator::rekey::RekeyError> {
/// let outcome = wmco_operator::rekey::reconcile_rotation(ctx, jiff::Timestamp::now()).await?;
/// println!("replaced {:?}, re-keyed {:?}, waiting for the admin {:?}",
///     outcome.replaced, outcome.rekeyed, outcome.not_authorized);
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`RekeyError`] when the key, the API server's version, the records, a Node or the Machines cannot be read.
/// Failures on single hosts are in [`RekeyOutcome::failed`] and [`RekeyOutcome::not_authorized`].
pub async fn reconcile_rotation(ctx: &RekeyContext, now: Timestamp) -> Result<RekeyOutcome, RekeyError> {
    let budget_lock = ctx.budget_lock();
    let budget = budget_lock.lock().await;
    let key = load_operator_key(ctx.secrets.as_ref(), &ctx.settings.namespace)
        .await
        .map_err(|source| RekeyError::Key { source })?;
    let api_server = ctx
        .api_server
        .kubernetes_version()
        .await
        .map_err(|source| RekeyError::ApiServerVersion { source: Box::new(source.into()) })?;
    let instances = observe_instances(ctx.records.as_ref(), ctx.nodes.as_ref(), &ctx.settings.namespace).await?;
    let machines = ctx.windows_machines.list().await.map_err(|source| RekeyError::Read {
        what: format!("the Windows Machines in {MACHINE_API_NAMESPACE}"),
        source: Box::new(source),
    })?;
    let policy = ctx.settings.policy(api_server);
    let inputs =
        RekeyInputs { now, key_hash: &key.pub_key_hash, instances: &instances, machines: &machines, policy: &policy };
    let plan = decide(&inputs);
    let refused = decide_refused(&inputs, &plan, ctx.settings.authentication_grace);

    let mut outcome = RekeyOutcome {
        key_hash: key.pub_key_hash.clone(),
        plan: plan.clone(),
        refused: refused.clone(),
        replaced_refused: Vec::new(),
        replaced: Vec::new(),
        rekeyed: Vec::new(),
        not_authorized: Vec::new(),
        failed: Vec::new(),
    };
    for replacement in &plan.replace {
        let Some(observed) = find(&instances, &replacement.record) else {
            continue;
        };
        match replace_machine(ctx, observed, replacement, &key).await {
            Ok(true) => outcome.replaced.push(format!("{MACHINE_API_NAMESPACE}/{}", replacement.machine)),
            Ok(false) => {}
            Err(message) => outcome.failed.push((replacement.record.clone(), message)),
        }
    }
    for refused_machine in &refused.replace {
        let Some(observed) = find(&instances, &refused_machine.record) else {
            continue;
        };
        match replace_refused_machine(ctx, observed, refused_machine, &key, now).await {
            Ok(true) => outcome.replaced_refused.push(format!("{MACHINE_API_NAMESPACE}/{}", refused_machine.machine)),
            Ok(false) => {}
            Err(message) => outcome.failed.push((refused_machine.record.clone(), message)),
        }
    }
    drop(budget);
    let hosts: Vec<&ObservedInstance> = plan.verify.iter().filter_map(|name| find(&instances, name)).collect();
    let results = join_all(hosts.iter().map(|observed| rekey_host(ctx, observed, &key))).await;
    for (observed, result) in hosts.iter().zip(results) {
        let name = observed.name().to_owned();
        match result {
            HostRekey::Rekeyed => outcome.rekeyed.push(name),
            HostRekey::NotAuthorized => outcome.not_authorized.push(name),
            HostRekey::Failed(message) => outcome.failed.push((name, message)),
        }
    }
    Ok(outcome)
}

fn find<'a>(instances: &'a [ObservedInstance], name: &str) -> Option<&'a ObservedInstance> {
    instances.iter().find(|observed| observed.name() == name)
}

/// Deletes the Machine of `replacement` unless it is already gone or going. `Ok(true)` when this call deleted it.
async fn replace_machine(
    ctx: &RekeyContext,
    observed: &ObservedInstance,
    replacement: &Replacement,
    key: &OperatorKey,
) -> Result<bool, String> {
    let machine = &replacement.machine;
    let object = format!("{MACHINE_API_NAMESPACE}/{machine}");
    let current = match ctx.machines.get(MACHINE_API_NAMESPACE, machine).await {
        Ok(current) => current,
        Err(error) => return Err(step_failed(ctx, observed, key, &format!("reading Machine {object}"), &error).await),
    };
    if current.is_none_or(|current| current.metadata.deletion_timestamp.is_some()) {
        return Ok(false);
    }
    if let Err(error) = ctx.machines.delete(MACHINE_API_NAMESPACE, machine).await {
        return Err(step_failed(ctx, observed, key, &format!("deleting Machine {object}"), &error).await);
    }
    let old = replacement.node_key_hash.as_deref().unwrap_or("none");
    let note = format!(
        "Machine {object} was configured with a previous SSH key (pub-key-hash {old}); deleted so its MachineSet \
         recreates it with the new user data (pub-key-hash {})",
        key.pub_key_hash
    );
    tracing::info!(instance = %observed.record.key(), "{note}");
    publish(ctx, observed, Severity::Normal, MACHINE_DELETED, note.clone()).await;
    publish_on_machine(ctx, machine, Severity::Normal, MACHINE_DELETED, note).await;
    Ok(true)
}

/// The Go operator's reason for a Machine it deleted (for a key rotation, or after its host refused the key).
const MACHINE_DELETED: &str = "MachineDeleted";
/// The Go operator's reason for a Machine whose host could not be configured (here: it refuses the key).
const MACHINE_SETUP_FAILURE: &str = "MachineSetupFailure";

/// Publishes an Event on Machine `name` in `openshift-machine-api` (where the Go operator reports on Machines).
async fn publish_on_machine(ctx: &RekeyContext, name: &str, severity: Severity, reason: &str, note: String) {
    let machine = ObjectReference {
        api_version: Some("machine.openshift.io/v1beta1".to_owned()),
        kind: Some("Machine".to_owned()),
        name: Some(name.to_owned()),
        namespace: Some(MACHINE_API_NAMESPACE.to_owned()),
        ..ObjectReference::default()
    };
    let event = NewEvent { severity, reason: reason.to_owned(), action: "Replace".to_owned(), note: Some(note) };
    if let Err(error) = ctx.events.publish(&machine, &event).await {
        tracing::warn!(machine = %name, error = %error, reason, "could not publish the Event on the Machine");
    }
}

/// Deletes the Machine of a record whose host has refused the key since `refused.failing_since`, unless it is
/// already gone or going, with a Warning `MachineSetupFailure` on the record and on the Machine and a Normal
/// `MachineDeleted` on the Machine (the Go operator's reasons). `Ok(true)` when this call deleted it.
async fn replace_refused_machine(
    ctx: &RekeyContext,
    observed: &ObservedInstance,
    refused: &RefusedMachine,
    key: &OperatorKey,
    now: Timestamp,
) -> Result<bool, String> {
    let object = format!("{MACHINE_API_NAMESPACE}/{}", refused.machine);
    let current = match ctx.machines.get(MACHINE_API_NAMESPACE, &refused.machine).await {
        Ok(current) => current,
        Err(error) => return Err(step_failed(ctx, observed, key, &format!("reading Machine {object}"), &error).await),
    };
    if current.is_none_or(|machine| machine.metadata.deletion_timestamp.is_some()) {
        return Ok(false);
    }
    if let Err(error) = ctx.machines.delete(MACHINE_API_NAMESPACE, &refused.machine).await {
        return Err(step_failed(ctx, observed, key, &format!("deleting Machine {object}"), &error).await);
    }
    let spec = &observed.record.spec;
    let minutes = now.duration_since(refused.failing_since).as_secs() / 60;
    let note = format!(
        "the host of Machine {object} ({}@{}) has refused the operator's SSH key (pub-key-hash {}) since {} \
         ({minutes} min, longer than the {}s grace period); Machine deleted so its MachineSet recreates it with the \
         current user data",
        spec.username,
        spec.address,
        key.pub_key_hash,
        refused.failing_since,
        ctx.settings.authentication_grace.as_secs()
    );
    tracing::warn!(instance = %observed.record.key(), "{note}");
    publish(ctx, observed, Severity::Warning, MACHINE_SETUP_FAILURE, note.clone()).await;
    publish_on_machine(ctx, &refused.machine, Severity::Warning, MACHINE_SETUP_FAILURE, note).await;
    let deleted =
        format!("Machine {object} deleted after its host refused the operator's SSH key; its MachineSet recreates it");
    publish_on_machine(ctx, &refused.machine, Severity::Normal, MACHINE_DELETED, deleted).await;
    Ok(true)
}

/// What checking one BYOH host with the new key came to.
enum HostRekey {
    Rekeyed,
    NotAuthorized,
    Failed(String),
}

/// Logs in to the record's host with the new key; on success writes the new hash to its Node.
async fn rekey_host(ctx: &RekeyContext, observed: &ObservedInstance, key: &OperatorKey) -> HostRekey {
    let spec = &observed.record.spec;
    match ctx.key_checker.check(&observed.record, &key.private_key).await {
        Ok(()) => {}
        Err(KeyCheckFailure::NotAuthorized { reason }) => {
            let note = not_authorized_note(&spec.username, &spec.address, &key.authorized_key, ctx.settings.retry);
            tracing::warn!(instance = %observed.record.key(), reason = %reason, "the new SSH key is not authorized on the host");
            if ctx.first_publication(format!("{}/{}/not-authorized", observed.record.key(), key.pub_key_hash)) {
                publish(ctx, observed, Severity::Warning, "NewKeyNotAuthorized", note).await;
            }
            return HostRekey::NotAuthorized;
        }
        Err(KeyCheckFailure::Failed { reason }) => {
            let message = format!("checking the new SSH key on {}@{} failed: {reason}", spec.username, spec.address);
            tracing::warn!(instance = %observed.record.key(), "{message}");
            if ctx.first_publication(format!("{}/{}/check-failed", observed.record.key(), key.pub_key_hash)) {
                let note = format!("{message}; retried every {}s", ctx.settings.retry.as_secs());
                publish(ctx, observed, Severity::Warning, "RekeyCheckFailed", note).await;
            }
            return HostRekey::Failed(message);
        }
    }
    let Some(node_name) = observed.node_name() else {
        return HostRekey::Failed(format!("WindowsInstance {} has no Node to annotate", observed.record.key()));
    };
    let patch = NodeMetadataPatch::default().set_annotation(PUB_KEY_HASH_ANNOTATION, key.pub_key_hash.clone());
    if let Err(error) = ctx.nodes.patch_metadata(node_name, &patch).await {
        return HostRekey::Failed(
            step_failed(ctx, observed, key, &format!("annotating Node {node_name} with the new pub-key-hash"), &error)
                .await,
        );
    }
    let note = format!(
        "the new SSH key (pub-key-hash {}) logs in to {}@{}; Node {node_name} annotated",
        key.pub_key_hash, spec.username, spec.address
    );
    tracing::info!(instance = %observed.record.key(), "{note}");
    publish(ctx, observed, Severity::Normal, "Rekeyed", note).await;
    HostRekey::Rekeyed
}

/// The Warning Event's note for a host that refused the new key: what to add, where, for which user on which host.
///
/// ```
/// use std::time::Duration;
/// use wmco_operator::rekey::not_authorized_note;
/// let note = not_authorized_note("Administrator", "10.0.0.5", "ssh-ed25519 AAAAC3Nz", Duration::from_secs(30));
/// assert!(note.starts_with("the operator's new SSH key is not authorized for user Administrator on host 10.0.0.5: \
///     add the line \"ssh-ed25519 AAAAC3Nz\" to C:\\ProgramData\\ssh\\administrators_authorized_keys on 10.0.0.5"));
/// ```
pub fn not_authorized_note(username: &str, address: &str, authorized_key: &str, retry: std::time::Duration) -> String {
    format!(
        "the operator's new SSH key is not authorized for user {username} on host {address}: add the line \
         \"{authorized_key}\" to {ADMINISTRATORS_AUTHORIZED_KEYS} on {address} (keep the file's ACL limited to \
         Administrators and SYSTEM); the operator checks again every {}s, and until then the host keeps running but \
         is not reconfigured or upgraded",
        retry.as_secs()
    )
}

/// Logs a failed cluster step, publishes it once per record, key and step, and returns it as a sentence.
async fn step_failed(
    ctx: &RekeyContext,
    observed: &ObservedInstance,
    key: &OperatorKey,
    step: &str,
    error: &wmco_cluster_client::Error,
) -> String {
    let message = format!("{step} failed: {error}");
    tracing::warn!(instance = %observed.record.key(), "{message}");
    if ctx.first_publication(format!("{}/{}/{step}", observed.record.key(), key.pub_key_hash)) {
        publish(ctx, observed, Severity::Warning, "RekeyStepFailed", format!("{message}; retried")).await;
    }
    message
}

async fn publish(ctx: &RekeyContext, observed: &ObservedInstance, severity: Severity, reason: &str, note: String) {
    let event = NewEvent { severity, reason: reason.to_owned(), action: "Rekey".to_owned(), note: Some(note) };
    if let Err(error) = ctx.events.publish(&observed.record.object_ref(&()), &event).await {
        tracing::warn!(instance = %observed.record.key(), error = %error, reason, "could not publish the Event");
    }
}
