//! Rules C1–C3: one CN and one O in single-valued RDNs with Printable/UTF8 strings, O = `system:nodes`, and
//! CN = `system:node:` + a lowercase RFC 1123 subdomain. Failures are DENY.

use super::{Check, InScope, deny};
use crate::RuleId;
use crate::names::{NODE_NAME_PREFIX, NODES_ORGANIZATION, is_rfc1123_subdomain};
use crate::request::{AttributeType, StringType};

pub(super) fn check(scope: &InScope<'_>) -> Check<()> {
    let subject = &scope.request.subject;
    if let Some(rdn) = subject.rdns.iter().find(|rdn| rdn.len() != 1) {
        return Err(deny(RuleId::C1, format!("multi-valued RDN with {} attributes", rdn.len())));
    }
    let count = |wanted: &AttributeType| subject.attributes().filter(|a| &a.attribute_type == wanted).count();
    let (common_names, organizations) = (count(&AttributeType::CommonName), count(&AttributeType::Organization));
    if (common_names, organizations) != (1, 1) {
        return Err(deny(RuleId::C1, format!("{common_names} CNs and {organizations} Os; exactly one each required")));
    }
    if let Some(other) = subject.attributes().find_map(|a| match &a.attribute_type {
        AttributeType::Other(oid) => Some(oid),
        _ => None,
    }) {
        return Err(deny(RuleId::C1, format!("subject attribute {other} is not allowed")));
    }
    if let Some(attribute) =
        subject.attributes().find(|a| !matches!(a.string_type, StringType::Printable | StringType::Utf8))
    {
        return Err(deny(
            RuleId::C1,
            format!("subject value of ASN.1 type {:?} is not PrintableString or UTF8String", attribute.string_type),
        ));
    }
    if subject.attributes().any(|a| a.value.is_none()) {
        return Err(deny(RuleId::C1, "a subject value is not valid text"));
    }
    let organization = subject.values_of(&AttributeType::Organization).next().unwrap_or_default();
    if organization != NODES_ORGANIZATION {
        return Err(deny(RuleId::C2, format!("O {organization:?} is not {NODES_ORGANIZATION:?}")));
    }
    let common_name = subject.values_of(&AttributeType::CommonName).next().unwrap_or_default();
    let node_name = common_name.strip_prefix(NODE_NAME_PREFIX).unwrap_or_default();
    if !is_rfc1123_subdomain(node_name) || node_name != scope.node_name {
        return Err(deny(RuleId::C3, format!("CN {common_name:?} is not system:node: + a lowercase RFC 1123 name")));
    }
    Ok(())
}
