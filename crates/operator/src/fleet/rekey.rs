//! The key rotation's steps, moving the fleet to the current `cloud-private-key` after the admin replaced it
//! (every Node the operator configured carries `windowsmachineconfig.openshift.io/pub-key-hash`, the hash of the
//! key it was configured with):
//!
//! - a **Machine** on an old key is replaced: its Machine is deleted, so its MachineSet recreates it from the
//!   re-rendered `windows-user-data` (the user-data controller's job), which authorizes the new key; so is a
//!   **Machine whose host refuses the operator's key** (its record carries the `AuthenticationFailed` condition,
//!   written by `wmco-node-config`) for longer than the grace period, with a Warning Event on the record and on the
//!   Machine. Both within the budget the plan hands out ([`super::decide`]); BYOH hosts are never deleted.
//! - a **BYOH host** is checked with the new key (a fresh SSH login, pinned host key honoured). Accepted: its Node
//!   gets the new `pub-key-hash` (the Node change lets the instances controller, which already connects with the
//!   new key, take the host up again). Refused: a Warning Event `NewKeyNotAuthorized` on its `WindowsInstance` says
//!   which line to add to which file for which user on which host; the host is checked again every
//!   [`FleetSettings::retry`](super::FleetSettings) and never blocks the others.
//!
//! A failure on one host never stops the others; it is reported in [`KeyRotation`] and retried on a later
//! reconcile, its Warning Event published once per record, key and step.

use futures::future::join_all;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use wmco_cluster_client::names::PUB_KEY_HASH_ANNOTATION;
use wmco_cluster_client::{NewEvent, NodeMetadataPatch, Severity, WindowsInstanceExt};
use wmco_machines::names::MACHINE_API_NAMESPACE;

use super::{FleetContext, KeyCheckFailure, ObservedFleet, ObservedInstance, RefusedMachine, Replacement};
use crate::operator_key::OperatorKey;

/// Where Win32-OpenSSH reads the authorized keys of members of the Administrators group (the operator's SSH user
/// is one: it manages services).
pub const ADMINISTRATORS_AUTHORIZED_KEYS: &str = r"C:\ProgramData\ssh\administrators_authorized_keys";

/// What the key rotation did in one reconcile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyRotation {
    /// Machines deleted because they were configured with an old key (`openshift-machine-api/<name>`).
    pub replaced: Vec<String>,
    /// Machines deleted because their host refused the key past the grace period (`openshift-machine-api/<name>`).
    pub replaced_refused: Vec<String>,
    /// Records whose host accepted the new key and whose Node now carries its hash.
    pub rekeyed: Vec<String>,
    /// Records whose host refused the new key (the admin has not authorized it yet).
    pub not_authorized: Vec<String>,
    /// Records whose step failed otherwise, with the error as a sentence.
    pub failed: Vec<(String, String)>,
}

impl KeyRotation {
    /// Whether nothing was done and nothing failed.
    pub fn is_quiet(&self) -> bool {
        self.replaced.is_empty()
            && self.replaced_refused.is_empty()
            && self.rekeyed.is_empty()
            && self.not_authorized.is_empty()
            && self.failed.is_empty()
    }
}

/// Deletes the Machines of `replace` (configured with an old key) and of `refused` (whose host refused the key past
/// the grace period at `now`), unless already gone or going.
pub(crate) async fn replace_machines(
    ctx: &FleetContext,
    observed: &ObservedFleet,
    replace: &[Replacement],
    refused: &[RefusedMachine],
    key: &OperatorKey,
    rotation: &mut KeyRotation,
) {
    for replacement in replace {
        let Some(instance) = observed.instance(&replacement.record) else {
            continue;
        };
        match replace_machine(ctx, instance, replacement, key).await {
            Ok(true) => rotation.replaced.push(format!("{MACHINE_API_NAMESPACE}/{}", replacement.machine)),
            Ok(false) => {}
            Err(message) => rotation.failed.push((replacement.record.clone(), message)),
        }
    }
    for refused_machine in refused {
        let Some(instance) = observed.instance(&refused_machine.record) else {
            continue;
        };
        match replace_refused_machine(ctx, instance, refused_machine, key, observed.fleet.now).await {
            Ok(true) => rotation.replaced_refused.push(format!("{MACHINE_API_NAMESPACE}/{}", refused_machine.machine)),
            Ok(false) => {}
            Err(message) => rotation.failed.push((refused_machine.record.clone(), message)),
        }
    }
}

/// Checks the BYOH hosts of `verify` with the new key at once (the checks take no budget).
pub(crate) async fn check_keys(
    ctx: &FleetContext,
    observed: &ObservedFleet,
    verify: &[String],
    key: &OperatorKey,
    rotation: &mut KeyRotation,
) {
    let hosts: Vec<&ObservedInstance> = verify.iter().filter_map(|name| observed.instance(name)).collect();
    let results = join_all(hosts.iter().map(|instance| rekey_host(ctx, instance, key))).await;
    for (instance, result) in hosts.iter().zip(results) {
        let name = instance.name().to_owned();
        match result {
            HostRekey::Rekeyed => rotation.rekeyed.push(name),
            HostRekey::NotAuthorized => rotation.not_authorized.push(name),
            HostRekey::Failed(message) => rotation.failed.push((name, message)),
        }
    }
}

/// Deletes the Machine of `replacement` unless it is already gone or going. `Ok(true)` when this call deleted it.
async fn replace_machine(
    ctx: &FleetContext,
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
async fn publish_on_machine(ctx: &FleetContext, name: &str, severity: Severity, reason: &str, note: String) {
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
    ctx: &FleetContext,
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
async fn rekey_host(ctx: &FleetContext, observed: &ObservedInstance, key: &OperatorKey) -> HostRekey {
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
/// use wmco_operator::fleet::not_authorized_note;
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
    ctx: &FleetContext,
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

async fn publish(ctx: &FleetContext, observed: &ObservedInstance, severity: Severity, reason: &str, note: String) {
    let event = NewEvent { severity, reason: reason.to_owned(), action: "Rekey".to_owned(), note: Some(note) };
    if let Err(error) = ctx.events.publish(&observed.record.object_ref(&()), &event).await {
        tracing::warn!(instance = %observed.record.key(), error = %error, reason, "could not publish the Event");
    }
}
