//! Rules D1–D4: which extensions a request may carry, and which SANs (none on client requests; on serving requests
//! 1–10 well-formed DNS names and routable IPs, all in the operator's record of the instance, DNS names compared
//! without regard to case). Failures are DENY.
//!
//! D1 refuses every extension other than subjectAltName; D2 refuses a subjectAltName (even an empty one) on a
//! client request. Together they say "client requests carry no extension; serving requests only subjectAltName".

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use x509_parser::oid_registry::OID_X509_EXT_SUBJECT_ALT_NAME;

use super::san::{ServingSan, addresses_list, same_dns_name, san_text};
use super::{Check, InScope, deny};
use crate::request::{ExtensionContent, RequestBody, SanEntry, ip_from_san};
use crate::world::{ByohInstance, MachineInstance, ManagedInstance};
use crate::{KubeletSigner, RuleId, World};

const MAX_SERVING_SANS: usize = 10;

pub(super) fn check<'a>(scope: &InScope<'_>, body: &'a RequestBody, world: &World) -> Check<Vec<ServingSan<'a>>> {
    let san_oid = OID_X509_EXT_SUBJECT_ALT_NAME.to_id_string();
    if let Some(extension) = body.extensions.iter().find(|extension| extension.oid != san_oid) {
        return Err(deny(RuleId::D1, format!("extension {} is not allowed", extension.oid)));
    }
    let mut entries: Vec<&SanEntry> = Vec::new();
    for extension in &body.extensions {
        match &extension.content {
            ExtensionContent::SubjectAltName(names) => entries.extend(names),
            ExtensionContent::MalformedSubjectAltName | ExtensionContent::Other => {
                return Err(deny(RuleId::D1, "subjectAltName extension does not parse"));
            }
        }
    }
    match scope.signer {
        KubeletSigner::Client if body.extensions.is_empty() => Ok(Vec::new()),
        KubeletSigner::Client => Err(deny(RuleId::D2, format!("client request carries {} SAN entries", entries.len()))),
        KubeletSigner::Serving => {
            let sans = well_formed_serving_sans(&entries, world)?;
            check_sans_in_record(&sans, scope.instance)?;
            Ok(sans)
        }
    }
}

fn well_formed_serving_sans<'a>(entries: &[&'a SanEntry], world: &World) -> Check<Vec<ServingSan<'a>>> {
    if entries.is_empty() || entries.len() > MAX_SERVING_SANS {
        return Err(deny(RuleId::D3, format!("{} SAN entries; 1 to {MAX_SERVING_SANS} required", entries.len())));
    }
    entries.iter().map(|entry| serving_san(entry, world)).collect()
}

fn serving_san<'a>(entry: &'a SanEntry, world: &World) -> Check<ServingSan<'a>> {
    match entry {
        SanEntry::Dns(name) => {
            let well_formed = !name.is_empty()
                && !name.contains('*')
                && !name.ends_with('.')
                && name.bytes().all(|byte| byte.is_ascii_graphic() && !byte.is_ascii_uppercase());
            if well_formed {
                Ok(ServingSan::Dns(name))
            } else {
                Err(deny(RuleId::D3, format!("DNS SAN {name:?} is not a lowercase name without * or trailing dot")))
            }
        }
        SanEntry::Ip(bytes) => {
            let ip = ip_from_san(bytes).ok_or_else(|| deny(RuleId::D3, format!("{entry} is not 4 or 16 bytes")))?;
            if let Some(problem) = unroutable(ip, world) {
                return Err(deny(RuleId::D3, format!("IP SAN {ip} is {problem}")));
            }
            Ok(ServingSan::Ip(ip))
        }
        SanEntry::Email(_) | SanEntry::Uri(_) | SanEntry::Other(_) => {
            Err(deny(RuleId::D3, format!("SAN {entry} is not a DNS name or IP address")))
        }
    }
}

fn unroutable(ip: IpAddr, world: &World) -> Option<String> {
    let problem = match ip {
        IpAddr::V4(v4) => v4_problem(v4),
        IpAddr::V6(v6) => v6_problem(v6),
    };
    if let Some(problem) = problem {
        return Some(problem.to_owned());
    }
    let data = world.data();
    let service = data.service_network.iter().map(|cidr| (cidr, "service"));
    let cluster = data.cluster_network.iter().map(|cidr| (cidr, "cluster"));
    service
        .chain(cluster)
        .find(|(cidr, _)| cidr.contains(ip))
        .map(|(cidr, kind)| format!("in the {kind} network {cidr}"))
}

fn v4_problem(ip: Ipv4Addr) -> Option<&'static str> {
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() {
        Some("broadcast")
    } else {
        None
    }
}

fn v6_problem(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.to_ipv4_mapped().is_some() {
        Some("a v4-mapped IPv6 address")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if ip.is_unicast_link_local() {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else {
        None
    }
}

fn check_sans_in_record(sans: &[ServingSan<'_>], instance: &ManagedInstance) -> Check<()> {
    let missing = sans.iter().find(|san| match instance {
        ManagedInstance::Byoh(byoh) => !byoh_record_has(byoh, san),
        ManagedInstance::Machine(machine) => !machine_record_has(machine, san),
    });
    match missing {
        None => Ok(()),
        Some(san) => Err(deny(
            RuleId::D4,
            format!("SAN {} is not in the operator's record of instance {}", san_text(san), instance.name()),
        )),
    }
}

fn byoh_record_has(byoh: &ByohInstance, san: &ServingSan<'_>) -> bool {
    match san {
        ServingSan::Dns(name) => {
            let address_is_name = byoh.address.parse::<IpAddr>().is_err();
            let recorded = |value: Option<&str>| value.is_some_and(|value| same_dns_name(value, name));
            // The Node name the operator decided (on a cloud, the name its metadata gives, which the kubelet
            // reports as its Hostname address) is the CN's own name as well.
            recorded(byoh.hostname.as_deref())
                || recorded(byoh.fqdn.as_deref())
                || recorded(byoh.expected_node_name.as_deref())
                || (address_is_name && same_dns_name(&byoh.address, name))
        }
        ServingSan::Ip(ip) => byoh.resolved_address.map(IpAddr::V4) == Some(*ip) || byoh.node_ip == Some(*ip),
    }
}

fn machine_record_has(machine: &MachineInstance, san: &ServingSan<'_>) -> bool {
    addresses_list(&machine.addresses, san)
}
