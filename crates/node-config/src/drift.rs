//! Identity drift: what the host says of itself now against what its record holds. Every probing pass reads the
//! host name, DNS name and default-route address again inside its probe ([`ObservedIdentity`]). A changed address
//! (DHCP) or DNS name becomes the recorded identity, and the pass is planned again with it, so the kubelet's
//! `--node-ip` follows within the unavailability budget like any restart of a Node in service. A changed host name
//! that would give the host another Node name is refused ([`FlowError::HostnameChanged`]): the kubelet would
//! register a second Node beside the first.

use std::net::Ipv4Addr;

use wmco_cluster_client::types::WindowsInstanceSpec;
use wmco_windows_services::ObservedIdentity;

use crate::error::FlowError;
use crate::identity::{HostIdentity, NodeNaming, expected_node_name};

/// A change of a host's recorded identity, for the controller's `HostIdentityChanged` Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityChange {
    /// The identity recorded before.
    pub before: HostIdentity,
    /// The identity recorded now.
    pub after: HostIdentity,
}

impl IdentityChange {
    /// The change between the identity recorded before a pass and after it, if any (names compare
    /// case-insensitively).
    pub(crate) fn between(before: Option<HostIdentity>, after: Option<HostIdentity>) -> Option<IdentityChange> {
        let (before, after) = (before?, after?);
        let same = before.node_ip == after.node_ip
            && before.hostname.eq_ignore_ascii_case(&after.hostname)
            && before.fqdn.eq_ignore_ascii_case(&after.fqdn);
        (!same).then_some(IdentityChange { before, after })
    }

    /// One sentence for people: what changed, and what the operator does about it.
    pub fn note(&self) -> String {
        let (before, after) = (&self.before, &self.after);
        let mut changes = Vec::new();
        if before.node_ip != after.node_ip {
            changes.push(format!("node IP {} -> {}", before.node_ip, after.node_ip));
        }
        if !before.hostname.eq_ignore_ascii_case(&after.hostname) {
            changes.push(format!("host name {} -> {}", before.hostname, after.hostname));
        }
        if !before.fqdn.eq_ignore_ascii_case(&after.fqdn) {
            changes.push(format!("DNS name {} -> {}", before.fqdn, after.fqdn));
        }
        format!(
            "the host's {} (Node {}): recorded, and the kubelet is reconfigured with it within --max-unavailable",
            changes.join(", "),
            after.expected_node_name
        )
    }
}

/// The identity the host now has, when it differs from `recorded` (case-insensitively for names: RFC 4343); `None`
/// when it is the same or the probe could not tell. An address the host does not print (no default route at the
/// moment) keeps the recorded one.
///
/// # Errors
/// [`FlowError::HostnameChanged`] when the new host name or DNS name gives another Node name by `naming` (and
/// `spec` names no Node).
pub(crate) fn drifted(
    host: &str,
    naming: NodeNaming,
    spec: &WindowsInstanceSpec,
    recorded: &HostIdentity,
    observed: Option<&ObservedIdentity>,
) -> Result<Option<HostIdentity>, FlowError> {
    let Some(observed) = observed else {
        return Ok(None);
    };
    let fqdn = observed.fqdn.clone().filter(|fqdn| !fqdn.is_empty()).unwrap_or_else(|| observed.hostname.clone());
    let node_ip = observed.ip.as_deref().and_then(|ip| ip.trim().parse::<Ipv4Addr>().ok()).unwrap_or(recorded.node_ip);
    let now = HostIdentity {
        hostname: observed.hostname.clone(),
        fqdn,
        node_ip,
        expected_node_name: recorded.expected_node_name.clone(),
    };
    let same_names =
        now.hostname.eq_ignore_ascii_case(&recorded.hostname) && now.fqdn.eq_ignore_ascii_case(&recorded.fqdn);
    if same_names && now.node_ip == recorded.node_ip {
        return Ok(None);
    }
    if let Some(node_name) = name_from(naming, spec, &now).filter(|name| *name != recorded.expected_node_name) {
        return Err(FlowError::HostnameChanged {
            host: host.to_owned(),
            recorded: recorded.hostname.clone(),
            observed: now.hostname,
            recorded_node: recorded.expected_node_name.clone(),
            new_node: node_name,
        });
    }
    Ok(Some(now))
}

/// The Node name `identity`'s names give by `naming`, when the names decide it (the short host name or the FQDN,
/// and no Node named by `spec`); an unusable name counts as another name.
fn name_from(naming: NodeNaming, spec: &WindowsInstanceSpec, identity: &HostIdentity) -> Option<String> {
    if spec.expected_node_name.is_some() {
        return None;
    }
    match naming {
        NodeNaming::ShortHostname => {
            Some(expected_node_name(&identity.hostname).unwrap_or_else(|_| identity.hostname.to_ascii_lowercase()))
        }
        NodeNaming::Fqdn => Some(identity.fqdn.trim_end_matches('.').to_ascii_lowercase()),
        NodeNaming::AwsLocalHostname | NodeNaming::GcpHostname => None,
    }
}

#[cfg(test)]
mod tests {
    use wmco_cluster_client::types::InstanceOrigin;

    use super::*;

    fn recorded() -> HostIdentity {
        HostIdentity {
            hostname: "WIN-A".into(),
            fqdn: "WIN-A.corp.example".into(),
            node_ip: Ipv4Addr::new(10, 0, 0, 7),
            expected_node_name: "win-a".into(),
        }
    }

    fn byoh() -> WindowsInstanceSpec {
        WindowsInstanceSpec {
            address: "10.0.0.7".into(),
            username: "Administrator".into(),
            origin: InstanceOrigin::Byoh,
            machine_name: None,
            expected_node_name: None,
        }
    }

    fn observed(hostname: &str, ip: Option<&str>) -> ObservedIdentity {
        ObservedIdentity {
            hostname: hostname.into(),
            fqdn: Some(format!("{hostname}.corp.example")),
            ip: ip.map(str::to_owned),
        }
    }

    fn check(
        naming: NodeNaming,
        spec: &WindowsInstanceSpec,
        now: &ObservedIdentity,
    ) -> Result<Option<HostIdentity>, FlowError> {
        drifted("admin@10.0.0.7:22", naming, spec, &recorded(), Some(now))
    }

    #[test]
    fn the_same_identity_in_another_case_or_without_a_route_is_no_drift() {
        let spec = byoh();
        assert!(check(NodeNaming::ShortHostname, &spec, &observed("win-a", Some("10.0.0.7"))).unwrap().is_none());
        assert!(check(NodeNaming::ShortHostname, &spec, &observed("WIN-A", None)).unwrap().is_none());
        assert!(drifted("h", NodeNaming::ShortHostname, &spec, &recorded(), None).unwrap().is_none());
    }

    #[test]
    fn a_new_dhcp_address_is_the_new_identity_under_the_same_node_name() {
        let now = check(NodeNaming::ShortHostname, &byoh(), &observed("WIN-A", Some("10.0.0.42"))).unwrap().unwrap();
        assert_eq!((now.node_ip, now.expected_node_name.as_str()), (Ipv4Addr::new(10, 0, 0, 42), "win-a"));
    }

    #[test]
    fn a_new_host_name_that_names_another_node_is_refused_naming_both() {
        let error = check(NodeNaming::ShortHostname, &byoh(), &observed("WIN-B", Some("10.0.0.7"))).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("from WIN-A to WIN-B") && message.contains("win-b") && message.contains("win-a"),
            "{message}"
        );
        assert!(error.fails_the_record() && error.is_retryable());
    }

    #[test]
    fn a_new_host_name_that_names_no_node_is_recorded() {
        // On AWS the Node name is the instance metadata's, and a Machine's is its spec's: the host name is only
        // recorded (the approver checks serving names against it).
        let now = check(NodeNaming::AwsLocalHostname, &byoh(), &observed("WIN-B", None)).unwrap().unwrap();
        assert_eq!(now.hostname, "WIN-B");
        let machine = WindowsInstanceSpec { expected_node_name: Some("win-a".into()), ..byoh() };
        assert!(check(NodeNaming::ShortHostname, &machine, &observed("WIN-B", None)).unwrap().is_some());
    }
}
