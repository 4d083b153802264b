//! One CSR reconcile: scope (cached records), observe (records, Node, the other kubelet CSRs), decide (pure,
//! `wmco-csr-approver`), confirm an approval or denial on fresh reads, record (a bootstrap approval's key hash,
//! before the approval), act (`/approval`) and tell (one Event).
//!
//! The bootstrap guard (rule F2) rests on two things, so that no failure or crash leads to a second client identity
//! for one node: before a bootstrap approval the World holds every kubelet client CSR naming the node in every
//! state, read live (not from the watch cache, which may lag), so a CSR approved by anyone since the attempt began
//! counts; and the key is recorded on the `WindowsInstance` before `/approval` is written, so a retry after a failed
//! approval can only approve that same key.

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::{Resource, ResourceExt};
use wmco_cluster_client::names::{KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER};
use wmco_cluster_client::types::{InstanceOrigin, WindowsInstance};
use wmco_cluster_client::{CsrDecision, NewEvent, Severity, WindowsInstanceExt, is_pending};
use wmco_csr_approver::{
    AttributeType, CsrFacts, CsrManifest, CsrState, CsrSummary, NODE_BOOTSTRAPPER_USERNAME, NODE_NAME_PREFIX, RuleId,
    Verdict, World, WorldData, decide,
};

use super::world::{machine_instance, managed_instance, node_record};
use super::{CsrContext, CsrControllerError};
use crate::metrics::CsrVerdictLabel;
use wmco_machines::names::MACHINE_API_NAMESPACE;

/// The two kubelet signers this controller decides for.
pub const KUBELET_SIGNERS: [&str; 2] = [KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER];

/// The condition reason of an approval (a denial's reason is the rule ID).
pub const APPROVED_CONDITION_REASON: &str = "AllRulesPassed";

/// What one reconcile did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsrOutcome {
    /// Not ours to decide: another signer, already decided, or already carrying a certificate.
    Skipped,
    /// The approver decided; approvals and denials were written through `/approval`, ignores were not.
    Decided {
        /// The verdict that was applied.
        verdict: Verdict,
        /// The `WindowsInstance` the CSR names, if exactly one does.
        instance: Option<String>,
    },
}

/// Decides one CSR and applies the verdict.
///
/// Scope comes first, from the cached records ([`CsrContext::cache`]): a request whose `system:node:` CNs name no
/// record's node (a Linux node's, garbage, an oversized request) is decided with no API call at all, and left
/// alone (rules A3–A5).
///
/// An in-scope request is decided under the lock of its node name with: the cached records, the other kubelet CSRs
/// from the cache (every pending one for rule A6, every client CSR naming the same node in any state for F2), the
/// Machine of each Machine-backed record that expects the node name (when the context can read Machines) and the
/// Node it names (live GET). An ignore is final there. An approval or a denial is first confirmed by deciding again
/// on fresh reads: the records (one LIST of the operator namespace), the Machines and the Node again, and, for a
/// bootstrap approval, the kubelet client CSRs (one LIST with a `spec.signerName` field selector), so no lag of a
/// watch can let a second client identity through (rule F2) or deny on a stale record.
///
/// An approved bootstrap CSR's key is recorded on its `WindowsInstance` first; only then is the approval written
/// (a failed record write approves nothing: [`CsrControllerError::RecordApproval`]). Approve and deny go through
/// `/approval` with the resourceVersion read; a 409 is [`CsrControllerError::Conflict`] (requeue, decide again from
/// scratch), and after a failed approval the recorded key lets only a CSR with that key through (rule F2).
pub async fn reconcile_csr(
    csr: &CertificateSigningRequest,
    ctx: &CsrContext,
) -> Result<CsrOutcome, CsrControllerError> {
    let csr_name = csr.name_any();
    let has_certificate = csr.status.as_ref().is_some_and(|status| status.certificate.is_some());
    tracing::debug!(csr = %csr_name, signer = %csr.spec.signer_name, pending = is_pending(csr), has_certificate,
        resource_version = ?csr.metadata.resource_version, "CSR seen");
    if !KUBELET_SIGNERS.contains(&csr.spec.signer_name.as_str()) || !is_pending(csr) || has_certificate {
        return Ok(CsrOutcome::Skipped);
    }
    let facts = facts_of(csr, &csr_name)?;
    let cached: Vec<WindowsInstance> = ctx.cache.records().await.iter().map(|record| (**record).clone()).collect();
    if !names_a_record(&facts, &cached) {
        let verdict = decide(&facts, &World::new(world_data(ctx, &cached, Vec::new())));
        // Logged once per change of the request (it is not requeued), so an admin sees why it stays pending.
        tracing::info!(csr = %csr_name, verdict = verdict.kind(), rule = ?verdict.rule(), reason = verdict.reason(), "CSR decided");
        count_verdict(ctx, &verdict);
        return Ok(CsrOutcome::Decided { verdict, instance: None });
    }
    let node_name = facts.summary().node_names.pop();
    let _node_guard = match &node_name {
        Some(node_name) => Some(ctx.lock_node(node_name).await),
        None => None,
    };

    let other_csrs = cached_csr_summaries(ctx, &csr_name, node_name.as_deref()).await;
    let world = observe(ctx, &csr_name, node_name.as_deref(), &cached, other_csrs).await?;
    let mut verdict = decide(&facts, &world);
    let mut records = cached;
    if matches!(verdict, Verdict::Approve | Verdict::Deny { .. }) {
        records = live_records(ctx, &csr_name).await?;
        let other_csrs = if verdict == Verdict::Approve && is_bootstrap(&facts) {
            live_csr_summaries(ctx, &csr_name, node_name.as_deref()).await?
        } else {
            WorldData::from(world).csrs
        };
        let world = observe(ctx, &csr_name, node_name.as_deref(), &records, other_csrs).await?;
        verdict = decide(&facts, &world);
    }

    let instance = node_name.as_deref().and_then(|node_name| instance_named(&records, node_name));
    if verdict == Verdict::Approve && is_bootstrap(&facts) {
        let node = node_name.as_deref().unwrap_or_default();
        let key = facts.summary().public_key_sha256;
        let (Some(instance), Some(key)) = (instance, key) else {
            return Err(CsrControllerError::NoRecordForKey { csr: csr_name, node: node.to_owned() });
        };
        record_bootstrap_key(ctx, &csr_name, instance, key).await?;
    }
    apply(csr, &csr_name, &verdict, ctx).await?;
    publish_event(ctx, &csr_name, instance, &verdict).await;
    count_verdict(ctx, &verdict);
    tracing::info!(csr = %csr_name, verdict = verdict.kind(), rule = ?verdict.rule(), reason = verdict.reason(), "CSR decided");
    let instance = instance.and_then(|instance| instance.metadata.name.clone());
    Ok(CsrOutcome::Decided { verdict, instance })
}

/// Whether a `system:node:` CN of the request names the node a record expects (an unreadable request names none).
fn names_a_record(facts: &CsrFacts, records: &[WindowsInstance]) -> bool {
    let Ok(request) = &facts.request else {
        return false;
    };
    request
        .subject
        .values_of(&AttributeType::CommonName)
        .filter_map(|common_name| common_name.strip_prefix(NODE_NAME_PREFIX))
        .any(|node_name| records.iter().any(|record| expected_node_name(record) == Some(node_name)))
}

/// The World's data with the BYOH instances of `records` and the other CSRs `csrs`; no Nodes yet.
fn world_data(ctx: &CsrContext, records: &[WindowsInstance], csrs: Vec<CsrSummary>) -> WorldData {
    WorldData {
        now: (ctx.settings.clock)(),
        service_network: ctx.settings.service_network.clone(),
        cluster_network: ctx.settings.cluster_network.clone(),
        instances: records.iter().filter_map(managed_instance).collect(),
        nodes: Vec::new(),
        csrs,
    }
}

/// The World of an in-scope request: [`world_data`] with the Machine instances expecting `node_name` and, when an
/// instance expects it, the Node `node_name` (both read live).
async fn observe(
    ctx: &CsrContext,
    csr_name: &str,
    node_name: Option<&str>,
    records: &[WindowsInstance],
    other_csrs: Vec<CsrSummary>,
) -> Result<World, CsrControllerError> {
    let mut data = world_data(ctx, records, other_csrs);
    if let Some(node_name) = node_name {
        data.instances.extend(machine_instances(ctx, records, node_name, csr_name).await?);
        if data.instances.iter().any(|instance| instance.expected_node_name() == Some(node_name)) {
            data.nodes = live_node(ctx, csr_name, node_name).await?;
        }
    }
    Ok(World::new(data))
}

/// Counts the verdict in the metrics.
fn count_verdict(ctx: &CsrContext, verdict: &Verdict) {
    ctx.metrics.record_csr_verdict(
        verdict_label(verdict),
        &verdict.rule().map_or_else(|| "all".to_owned(), |rule| rule.to_string()),
    );
}

/// The `WindowsInstance` records of the operator namespace, read live (one LIST).
async fn live_records(ctx: &CsrContext, csr_name: &str) -> Result<Vec<WindowsInstance>, CsrControllerError> {
    ctx.instances.list(&ctx.settings.namespace).await.map_err(|source| CsrControllerError::ListInstances {
        csr: csr_name.to_owned(),
        namespace: ctx.settings.namespace.clone(),
        source: Box::new(source),
    })
}

/// The metric label of a verdict.
fn verdict_label(verdict: &Verdict) -> CsrVerdictLabel {
    match verdict {
        Verdict::Approve => CsrVerdictLabel::Approved,
        Verdict::Deny { .. } => CsrVerdictLabel::Denied,
        Verdict::Ignore { .. } => CsrVerdictLabel::Ignored,
    }
}

/// The approver's facts of a CSR, converted through its JSON form.
pub(super) fn facts_of(csr: &CertificateSigningRequest, csr_name: &str) -> Result<CsrFacts, CsrControllerError> {
    let manifest: CsrManifest = serde_json::to_value(csr)
        .and_then(serde_json::from_value)
        .map_err(|source| CsrControllerError::Manifest { csr: csr_name.to_owned(), source })?;
    CsrFacts::from_manifest(&manifest)
        .map_err(|source| CsrControllerError::ManifestKind { csr: csr_name.to_owned(), source })
}

/// Whether `facts` is a bootstrap request: a kubelet client CSR made with the bootstrap credential.
fn is_bootstrap(facts: &CsrFacts) -> bool {
    facts.signer_name == KUBELET_CLIENT_SIGNER && facts.username == NODE_BOOTSTRAPPER_USERNAME
}

/// Summaries of the other kubelet CSRs from the cache: every pending one (rule A6), and every client CSR naming
/// `node_name` in any state — pending, approved by the operator or anyone else, issued, denied, failed — whatever
/// its age (rule F2 counts those created since the configuration attempt began). Ones that cannot be read are left
/// out.
async fn cached_csr_summaries(ctx: &CsrContext, csr_name: &str, node_name: Option<&str>) -> Vec<CsrSummary> {
    let cached = ctx.cache.kubelet_csrs().await;
    ctx.summaries.retain(&cached);
    let summaries = ctx.summaries.of(cached.iter().map(AsRef::as_ref));
    relevant(summaries, csr_name, node_name)
}

/// [`cached_csr_summaries`] with the client CSRs read live (one LIST of the client signer): a bootstrap approval
/// must see every client identity issued for the node, including one approved a moment ago (rule F2). The
/// serving CSRs still come from the cache: they only count for A6.
async fn live_csr_summaries(
    ctx: &CsrContext,
    csr_name: &str,
    node_name: Option<&str>,
) -> Result<Vec<CsrSummary>, CsrControllerError> {
    let listed = ctx
        .csrs
        .list(&[KUBELET_CLIENT_SIGNER])
        .await
        .map_err(|source| CsrControllerError::ListCsrs { csr: csr_name.to_owned(), source: Box::new(source) })?;
    let cached = ctx.cache.kubelet_csrs().await;
    let serving = cached.iter().map(AsRef::as_ref).filter(|csr| csr.spec.signer_name == KUBELET_SERVING_SIGNER);
    let summaries = ctx.summaries.of(listed.iter().chain(serving));
    Ok(relevant(summaries, csr_name, node_name))
}

/// The summaries a decision about `csr_name` reads: every other pending one, and every client CSR naming
/// `node_name`.
fn relevant(summaries: Vec<CsrSummary>, csr_name: &str, node_name: Option<&str>) -> Vec<CsrSummary> {
    let names_the_node = |summary: &CsrSummary| node_name.is_some_and(|node_name| summary.names_node(node_name));
    summaries
        .into_iter()
        .filter(|summary| summary.name != csr_name)
        .filter(|summary| {
            summary.state == CsrState::Pending
                || (summary.signer_name == KUBELET_CLIENT_SIGNER && names_the_node(summary))
        })
        .collect()
}

/// The Node `node_name` as the approver's record, read with a live GET (empty if there is none).
async fn live_node(
    ctx: &CsrContext,
    csr_name: &str,
    node_name: &str,
) -> Result<Vec<wmco_csr_approver::NodeRecord>, CsrControllerError> {
    let node = ctx.nodes.get(node_name).await.map_err(|source| CsrControllerError::GetNode {
        csr: csr_name.to_owned(),
        node: node_name.to_owned(),
        source: Box::new(source),
    })?;
    Ok(node.iter().map(node_record).collect())
}

/// The approver's records of the Machine-backed records that expect `node_name` (recorded or decided), each with
/// its Machine read now; none when the context cannot read Machines or the Machine is gone.
async fn machine_instances(
    ctx: &CsrContext,
    records: &[WindowsInstance],
    node_name: &str,
    csr_name: &str,
) -> Result<Vec<wmco_csr_approver::ManagedInstance>, CsrControllerError> {
    let Some(machines) = &ctx.machines else {
        return Ok(Vec::new());
    };
    let mut instances = Vec::new();
    for record in records.iter().filter(|record| record.spec.origin == InstanceOrigin::Machine) {
        let Some(machine_name) =
            record.spec.machine_name.as_deref().filter(|_| expected_node_name(record) == Some(node_name))
        else {
            continue;
        };
        let machine = machines.get(MACHINE_API_NAMESPACE, machine_name).await.map_err(|source| {
            CsrControllerError::GetMachine {
                csr: csr_name.to_owned(),
                machine: format!("{MACHINE_API_NAMESPACE}/{machine_name}"),
                source: Box::new(source),
            }
        })?;
        instances.extend(machine.as_ref().and_then(|machine| machine_instance(record, machine)));
    }
    Ok(instances)
}

/// The node name a record expects: the one recorded in its status, or for a Machine-backed record the one decided
/// in its spec before it is recorded (BYOH records have none until the host was read over SSH).
pub(super) fn expected_node_name(record: &WindowsInstance) -> Option<&str> {
    let recorded = record.expected_node_name();
    match record.spec.origin {
        InstanceOrigin::Machine => recorded.or(record.spec.expected_node_name.as_deref()),
        InstanceOrigin::Byoh => recorded,
    }
}

/// The one `WindowsInstance` whose expected node name is `node_name`, or `None` if there is no such record or
/// several.
fn instance_named<'a>(records: &'a [WindowsInstance], node_name: &str) -> Option<&'a WindowsInstance> {
    let mut named = records.iter().filter(|record| expected_node_name(record) == Some(node_name));
    match (named.next(), named.next()) {
        (Some(instance), None) => Some(instance),
        _ => None,
    }
}

/// Approves or denies through `/approval`; an ignore writes nothing.
async fn apply(
    csr: &CertificateSigningRequest,
    csr_name: &str,
    verdict: &Verdict,
    ctx: &CsrContext,
) -> Result<(), CsrControllerError> {
    let decision = match verdict {
        Verdict::Approve => CsrDecision::approve(APPROVED_CONDITION_REASON, verdict.reason()),
        Verdict::Deny { rule, reason } => CsrDecision::deny(rule.as_str(), reason.as_str()),
        Verdict::Ignore { .. } => return Ok(()),
    };
    ctx.csrs.decide(csr, &decision).await.map(drop).map_err(|source| {
        if source.is_conflict() {
            CsrControllerError::Conflict { csr: csr_name.to_owned(), source: Box::new(source) }
        } else {
            CsrControllerError::Decide { csr: csr_name.to_owned(), verdict: verdict.kind(), source: Box::new(source) }
        }
    })
}

/// Records the key SHA-256 of a bootstrap CSR about to be approved on the instance's status (rule F2), re-reading
/// the record first so the status written is the newest one, and writing on condition that it is still as read (a
/// replica that led before cannot overwrite a newer record). Called before `/approval` is written: once this
/// returns, the configuration attempt is bound to this key, whether or not the approval gets written. A record that
/// already holds this key (a retry after a failed approval) is not written again; one that holds another key
/// changed since the World was read ([`CsrControllerError::BootstrapKeyChanged`], decide again).
async fn record_bootstrap_key(
    ctx: &CsrContext,
    csr_name: &str,
    instance: &WindowsInstance,
    public_key_sha256: String,
) -> Result<(), CsrControllerError> {
    let namespace = instance.metadata.namespace.clone().unwrap_or_else(|| ctx.settings.namespace.clone());
    let name = instance.name_any();
    let failed = |source: wmco_cluster_client::Error| CsrControllerError::RecordApproval {
        csr: csr_name.to_owned(),
        instance: name.clone(),
        source: Box::new(source),
    };
    let current = ctx.instances.get(&namespace, &name).await.map_err(failed)?;
    let status = current.as_ref().unwrap_or(instance).status.clone().unwrap_or_default();
    let decided_with = instance.status.as_ref().and_then(|status| status.approved_bootstrap_key_sha256.as_deref());
    match status.approved_bootstrap_key_sha256.as_deref() {
        Some(recorded) if recorded == public_key_sha256 => return Ok(()),
        recorded if recorded != decided_with => {
            return Err(CsrControllerError::BootstrapKeyChanged { csr: csr_name.to_owned(), instance: name });
        }
        _ => {}
    }
    let read = current.as_ref().unwrap_or(instance);
    ctx.instances.apply_bootstrap_key_if_unchanged(read, &public_key_sha256).await.map_err(failed)?;
    Ok(())
}

/// Ignores that deserve a Warning: an unreadable request (A3, logged only: it names no instance), a flood (A6),
/// competing bootstrap keys (F2) and a bootstrap request created outside its record's bootstrap window (F1, whose
/// reason names the window): none of them is ever approved without an admin.
fn warns_when_ignored(verdict: &Verdict) -> bool {
    matches!(verdict.rule(), Some(RuleId::A3 | RuleId::A6 | RuleId::F2)) || verdict.is_outside_bootstrap_window()
}

/// Publishes the decision's Event on the instance; a failure is logged, never fails the reconcile.
async fn publish_event(ctx: &CsrContext, csr_name: &str, instance: Option<&WindowsInstance>, verdict: &Verdict) {
    let (severity, reason, action) = match verdict {
        Verdict::Approve => (Severity::Normal, "CsrApproved", "Approve"),
        Verdict::Deny { .. } => (Severity::Warning, "CsrDenied", "Deny"),
        Verdict::Ignore { .. } if warns_when_ignored(verdict) => (Severity::Warning, "CsrLeftPending", "Ignore"),
        Verdict::Ignore { .. } => return,
    };
    let Some(instance) = instance else {
        tracing::warn!(csr = %csr_name, verdict = verdict.kind(), "no single WindowsInstance names this CSR's node; no Event");
        return;
    };
    let note = match verdict.rule() {
        Some(rule) => format!("CSR {csr_name}: {} by rule {rule}: {}", verdict.kind(), verdict.reason()),
        None => format!("CSR {csr_name}: approved, {}", verdict.reason()),
    };
    let event = NewEvent { severity, reason: reason.to_owned(), action: action.to_owned(), note: Some(note) };
    if let Err(error) = ctx.events.publish(&instance.object_ref(&()), &event).await {
        tracing::warn!(csr = %csr_name, error = %error, "publishing the CSR decision Event failed");
    }
}
