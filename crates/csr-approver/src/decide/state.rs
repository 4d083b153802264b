//! Rules F1–F4, the state rules: bootstrap only before the Node exists and within the configuration window, one
//! bootstrap key per attempt, renewal and serving only for a live Windows Node linked to the instance that lists
//! the SANs, and CSRs at most 60 minutes old. Failures are IGNORE (the state may still change).

use jiff::{SignedDuration, Timestamp};

use super::san::{ServingSan, addresses_list, parse_ip, san_text};
use super::{Check, InScope, RequestRole, ignore};
use crate::InstancePhase;
use crate::names::{NODE_BOOTSTRAPPER_USERNAME, OS_LABEL, OS_WINDOWS, SIGNER_KUBELET_CLIENT};
use crate::request::RequestBody;
use crate::verdict::OUTSIDE_BOOTSTRAP_WINDOW;
use crate::world::{AddressType, CsrState, ManagedInstance};
use crate::{CsrFacts, RuleId, World};

const EARLY_TOLERANCE: SignedDuration = SignedDuration::from_secs(10);
const MAX_CSR_AGE: SignedDuration = SignedDuration::from_mins(60);

pub(super) fn check(
    facts: &CsrFacts,
    scope: &InScope<'_>,
    body: &RequestBody,
    sans: &[ServingSan<'_>],
    role: RequestRole,
    world: &World,
) -> Check<()> {
    match role {
        RequestRole::Bootstrap => {
            let window_start = check_bootstrap_window(facts, scope, world)?;
            check_single_bootstrap_key(facts, scope, body, window_start, world)?;
        }
        RequestRole::Renewal | RequestRole::Serving => check_linked_node(scope, sans, world)?,
    }
    let age = world.data().now.duration_since(facts.creation_timestamp);
    if age > MAX_CSR_AGE {
        return Err(ignore(RuleId::F4, format!("created {} min ago; older than 60 min", age.as_mins())));
    }
    Ok(())
}

/// F1; returns T0, the start of the configuration attempt.
fn check_bootstrap_window(facts: &CsrFacts, scope: &InScope<'_>, world: &World) -> Check<Timestamp> {
    if world.node(scope.node_name).is_some() {
        return Err(ignore(
            RuleId::F1,
            format!("Node {} already exists; a bootstrap CSR is not expected", scope.node_name),
        ));
    }
    let attempt_start = match scope.instance {
        ManagedInstance::Byoh(byoh) => {
            if !matches!(byoh.phase, InstancePhase::Configuring | InstancePhase::WaitingForNode) {
                return Err(ignore(
                    RuleId::F1,
                    format!("instance {} is in phase {:?}, not configuring", byoh.name, byoh.phase),
                ));
            }
            byoh.configuring_since.ok_or_else(|| {
                ignore(RuleId::F1, format!("instance {} has no recorded configuration start", byoh.name))
            })?
        }
        ManagedInstance::Machine(machine) => {
            if let Some(node_ref) = &machine.node_ref {
                return Err(ignore(RuleId::F1, format!("Machine {} already has nodeRef {node_ref}", machine.name)));
            }
            machine.creation_timestamp
        }
    };
    let created = facts.creation_timestamp;
    let earliest = attempt_start.saturating_sub(EARLY_TOLERANCE).unwrap_or(attempt_start);
    let window = SignedDuration::try_from(wmco_vocabulary::BOOTSTRAP_WINDOW).unwrap_or(SignedDuration::ZERO);
    let latest = attempt_start.saturating_add(window).unwrap_or(attempt_start);
    if created < earliest || created > latest {
        return Err(ignore(
            RuleId::F1,
            format!(
                "created {created}, {OUTSIDE_BOOTSTRAP_WINDOW} {earliest} .. {latest} of {}",
                scope.instance.name()
            ),
        ));
    }
    Ok(attempt_start)
}

/// F2: one bootstrap key per configuration attempt, which starts at `attempt_start` (T0: `configuringSince` of a
/// BYOH record, the Machine's creation).
///
/// - A recorded bootstrap key of the attempt that is not this CSR's key → IGNORE. The operator records the key
///   before it writes the approval, so a recorded key binds the attempt even when that approval never got written.
/// - Any client CSR naming the node in one of its CNs (Go's x509, and so the signer, issues the last one), approved
///   since T0 − 10 s (issued or not, by anyone: the operator, an admin, another approver) with another or an
///   unreadable key → IGNORE: a client certificate for the node may already exist, whatever the record says. What
///   counts is when it was approved, not when it was filed: a request filed before the attempt and approved during
///   it (an admin's routine mass approval) counts. An approval of unknown time counts too.
/// - A pending bootstrap CSR for the node created since T0 − 10 s with another or an unreadable key → IGNORE (two
///   kubelets, or a kubelet and an impostor; neither is chosen) — unless this CSR carries the key recorded for the
///   attempt: the choice was made then. A pending CSR from before the attempt does not compete: F1 keeps this
///   operator from ever approving it in this attempt (it is typically the kubelet of the host's previous
///   configuration, stopped and removed by the deconfigure; left pending until kube-controller-manager's cleaner
///   removes it, it would otherwise block the host for a day). If someone else approves it during the attempt, it
///   counts from then on, as above.
///
/// Denied and failed CSRs without a certificate do not count: no certificate comes from them.
fn check_single_bootstrap_key(
    facts: &CsrFacts,
    scope: &InScope<'_>,
    body: &RequestBody,
    attempt_start: Timestamp,
    world: &World,
) -> Check<()> {
    let key = body.public_key.spki_sha256_hex();
    let recorded = scope.instance.bootstrap_approval().filter(|approval| approval.approved_at >= attempt_start);
    if let Some(approval) = recorded
        && approval.public_key_sha256 != key
    {
        return Err(ignore(
            RuleId::F2,
            format!(
                "a bootstrap CSR with another key was already approved for {} at {}",
                scope.node_name, approval.approved_at
            ),
        ));
    }
    let bound_to_this_key = recorded.is_some();
    let earliest = attempt_start.saturating_sub(EARLY_TOLERANCE).unwrap_or(attempt_start);
    let other_keys = world.csrs_for_node(scope.node_name).filter(|other| {
        other.name != facts.name
            && other.signer_name == SIGNER_KUBELET_CLIENT
            && other.public_key_sha256.as_deref() != Some(key.as_str())
    });
    let mut pending_competitor = None;
    for other in other_keys {
        match other.state {
            CsrState::Approved if other.approved_at.is_none_or(|approved_at| approved_at >= earliest) => {
                let when = other.approved_at.map_or_else(
                    || "at an unknown time".to_owned(),
                    |approved_at| format!("at {approved_at}, in this configuration attempt,"),
                );
                return Err(ignore(
                    RuleId::F2,
                    format!("client CSR {} for {}, approved {when} carries another key", other.name, scope.node_name),
                ));
            }
            CsrState::Pending
                if other.username == NODE_BOOTSTRAPPER_USERNAME
                    && !bound_to_this_key
                    && other.creation_timestamp >= earliest =>
            {
                pending_competitor = pending_competitor.or(Some(other));
            }
            CsrState::Approved | CsrState::Pending | CsrState::Denied | CsrState::Failed => {}
        }
    }
    match pending_competitor {
        None => Ok(()),
        Some(other) => Err(ignore(
            RuleId::F2,
            format!("bootstrap CSR {} ({:?}) for {} carries another key", other.name, other.state, scope.node_name),
        )),
    }
}

/// F3.
fn check_linked_node(scope: &InScope<'_>, sans: &[ServingSan<'_>], world: &World) -> Check<()> {
    let node_name = scope.node_name;
    let node =
        world.node(node_name).ok_or_else(|| ignore(RuleId::F3, format!("Node {node_name} does not exist yet")))?;
    if node.deletion_timestamp.is_some() {
        return Err(ignore(RuleId::F3, format!("Node {node_name} is being deleted")));
    }
    if node.labels.get(OS_LABEL).map(String::as_str) != Some(OS_WINDOWS) {
        return Err(ignore(RuleId::F3, format!("Node {node_name} is not labelled {OS_LABEL}={OS_WINDOWS}")));
    }
    let linked = match scope.instance {
        ManagedInstance::Byoh(byoh) => byoh.node_ip.is_some_and(|node_ip| {
            node.addresses
                .iter()
                .any(|a| a.address_type == AddressType::InternalIp && parse_ip(&a.address) == Some(node_ip))
        }),
        ManagedInstance::Machine(machine) => machine.node_ref.as_deref() == Some(node_name),
    };
    if !linked {
        return Err(ignore(
            RuleId::F3,
            format!("Node {node_name} is not linked to instance {}", scope.instance.name()),
        ));
    }
    if let Some(owner) = &node.owner_uid
        && scope.instance.uid() != Some(owner.as_str())
    {
        return Err(ignore(
            RuleId::F3,
            format!("Node {node_name} belongs to another WindowsInstance (UID {owner}), not {}", scope.instance.name()),
        ));
    }
    if let Some(missing) = sans.iter().find(|san| !addresses_list(&node.addresses, san)) {
        return Err(ignore(
            RuleId::F3,
            format!("SAN {} is not (yet) in Node {node_name} status.addresses", san_text(missing)),
        ));
    }
    Ok(())
}
