//! Rules A1–A6, the scope gate: undecided, a kubelet signer, a readable subject, a `system:node:` CN naming exactly
//! one managed instance, and the global pending limit. Every failure here is IGNORE.

use std::collections::BTreeSet;

use super::{Check, InScope, ignore};
use crate::names::NODE_NAME_PREFIX;
use crate::request::AttributeType;
use crate::world::ManagedInstance;
use crate::{CsrFacts, KubeletSigner, RuleId, World};

const DECIDED_CONDITIONS: [&str; 3] = ["Approved", "Denied", "Failed"];

pub(super) fn check<'a>(facts: &'a CsrFacts, world: &'a World) -> Check<InScope<'a>> {
    if let Some(condition) = facts.condition_types.iter().find(|c| DECIDED_CONDITIONS.contains(&c.as_str())) {
        return Err(ignore(RuleId::A1, format!("already decided: condition {condition}")));
    }
    if facts.has_certificate {
        return Err(ignore(RuleId::A1, "already carries a certificate"));
    }
    let signer = KubeletSigner::from_name(&facts.signer_name)
        .ok_or_else(|| ignore(RuleId::A2, format!("signer {:?} is not a kubelet signer", facts.signer_name)))?;
    let request =
        facts.request.as_ref().map_err(|unreadable| ignore(RuleId::A3, format!("request unreadable: {unreadable}")))?;
    let node_names: BTreeSet<&str> = request
        .subject
        .values_of(&AttributeType::CommonName)
        .filter_map(|common_name| common_name.strip_prefix(NODE_NAME_PREFIX))
        .collect();
    if node_names.is_empty() {
        return Err(ignore(RuleId::A4, "no subject CN starts with system:node:"));
    }
    let matches: Vec<_> = node_names
        .iter()
        .flat_map(|node_name| world.instances_named(node_name).map(move |instance| (*node_name, instance)))
        .collect();
    let matches = owners_only(matches, world);
    let (node_name, instance) = match matches.as_slice() {
        [] => {
            let names = node_names.into_iter().collect::<Vec<_>>().join(", ");
            return Err(ignore(RuleId::A5, format!("node name {names} is no managed instance's expected node name")));
        }
        [single] => *single,
        several => {
            let instances = several.iter().map(|(_, instance)| instance.name()).collect::<Vec<_>>().join(", ");
            return Err(ignore(RuleId::A5, format!("subject names more than one managed instance: {instances}")));
        }
    };
    let pending = world.recent_pending_count_including(&facts.name);
    let limit = world.pending_limit();
    if pending > limit {
        return Err(ignore(
            RuleId::A6,
            format!(
                "{pending} undecided kubelet CSRs in the last 60 min (naming a managed instance or from the bootstrap \
                 credential) exceed the limit {limit}; approving nothing"
            ),
        ));
    }
    Ok(InScope { signer, request, node_name, instance })
}

/// Of several instances expecting one node name, the one its existing Node belongs to (its owner annotation names
/// the instance's UID): a clone whose host took the same name never makes the owner's requests ambiguous. Matches
/// without such a Node are kept as they are.
fn owners_only<'a>(matches: Vec<(&'a str, &'a ManagedInstance)>, world: &World) -> Vec<(&'a str, &'a ManagedInstance)> {
    if matches.len() < 2 {
        return matches;
    }
    let owned: Vec<_> = matches
        .iter()
        .copied()
        .filter(|(node_name, instance)| {
            world
                .node(node_name)
                .and_then(|node| node.owner_uid.as_deref())
                .is_some_and(|owner| instance.uid() == Some(owner))
        })
        .collect();
    if owned.is_empty() { matches } else { owned }
}
