//! Rules E1–E3: exact usage sets, the expiration bound, and the requester binding (bootstrapper, or the node
//! itself). Failures are DENY.

use std::collections::BTreeSet;

use super::{Check, InScope, RequestRole, deny};
use crate::names::{
    NODE_BOOTSTRAPPER_GROUPS, NODE_BOOTSTRAPPER_USERNAME, NODE_GROUPS, NODE_NAME_PREFIX, POD_NAME_EXTRA_KEY,
};
use crate::{CsrFacts, KubeletSigner, RuleId};

const DIGITAL_SIGNATURE: &str = "digital signature";
const KEY_ENCIPHERMENT: &str = "key encipherment";
const CLIENT_AUTH: &str = "client auth";
const SERVER_AUTH: &str = "server auth";
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 31_536_000;

pub(super) fn check(facts: &CsrFacts, scope: &InScope<'_>) -> Check<RequestRole> {
    check_usages(&facts.usages, scope.signer)?;
    if let Some(seconds) = facts.expiration_seconds
        && !(MIN_EXPIRATION_SECONDS..=MAX_EXPIRATION_SECONDS).contains(&seconds)
    {
        return Err(deny(
            RuleId::E2,
            format!("expirationSeconds {seconds} is outside {MIN_EXPIRATION_SECONDS}..={MAX_EXPIRATION_SECONDS}"),
        ));
    }
    requester_role(facts, scope)
}

fn check_usages(usages: &[String], signer: KubeletSigner) -> Check<()> {
    let set: BTreeSet<&str> = usages.iter().map(String::as_str).collect();
    if set.len() != usages.len() {
        return Err(deny(RuleId::E1, format!("usages {usages:?} repeat a value")));
    }
    let purpose = match signer {
        KubeletSigner::Client => CLIENT_AUTH,
        KubeletSigner::Serving => SERVER_AUTH,
    };
    let without_ke = BTreeSet::from([DIGITAL_SIGNATURE, purpose]);
    let with_ke = BTreeSet::from([KEY_ENCIPHERMENT, DIGITAL_SIGNATURE, purpose]);
    if set == without_ke || set == with_ke {
        Ok(())
    } else {
        Err(deny(
            RuleId::E1,
            format!("usages {usages:?} are not [{DIGITAL_SIGNATURE}, {purpose}] (+ {KEY_ENCIPHERMENT})"),
        ))
    }
}

fn requester_role(facts: &CsrFacts, scope: &InScope<'_>) -> Check<RequestRole> {
    let groups: BTreeSet<&str> = facts.groups.iter().map(String::as_str).collect();
    let node_username = format!("{NODE_NAME_PREFIX}{}", scope.node_name);
    let requester = format!("requester {:?} with groups {:?}", facts.username, facts.groups);
    match scope.signer {
        KubeletSigner::Client if facts.username == NODE_BOOTSTRAPPER_USERNAME => {
            if groups != BTreeSet::from(NODE_BOOTSTRAPPER_GROUPS) {
                return Err(deny(RuleId::E3, format!("bootstrap {requester}: groups are not the bootstrapper's")));
            }
            if facts.extra.contains_key(POD_NAME_EXTRA_KEY) {
                return Err(deny(RuleId::E3, "bootstrap token was minted for a pod (extra pod-name present)"));
            }
            Ok(RequestRole::Bootstrap)
        }
        KubeletSigner::Client | KubeletSigner::Serving if facts.username == node_username => {
            if groups != BTreeSet::from(NODE_GROUPS) {
                return Err(deny(RuleId::E3, format!("{requester}: groups are not exactly the node groups")));
            }
            Ok(if scope.signer == KubeletSigner::Client { RequestRole::Renewal } else { RequestRole::Serving })
        }
        _ => Err(deny(RuleId::E3, format!("{requester} may not request a certificate for {node_username}"))),
    }
}
