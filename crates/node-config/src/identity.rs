//! What a host says about itself — hostname, FQDN and the IPv4 address of its default-route interface — read in
//! one round trip, and the Node name the operator decides from it (the lower-cased short hostname, an RFC 1123
//! label, unless the record's `spec.expectedNodeName` names it, as for a Machine). The kubelet gets
//! `--hostname-override` and `--node-ip` from these; the CSR approver reads them from the record.

use std::net::Ipv4Addr;

use serde::Deserialize;
use wmco_cluster_client::types::{WindowsInstanceSpec, WindowsInstanceStatus};
use wmco_vocabulary::excerpt;

/// A host's identity as read over SSH, plus the Node name decided from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostIdentity {
    /// The host name as Windows reports it (`[System.Net.Dns]::GetHostName()`).
    pub hostname: String,
    /// The host's DNS name (`GetHostEntry(hostname).HostName`).
    pub fqdn: String,
    /// The IPv4 address of the default-route interface (kubelet `--node-ip`).
    pub node_ip: Ipv4Addr,
    /// The Node name: the lower-cased short hostname (kubelet `--hostname-override`).
    pub expected_node_name: String,
}

/// Why a host's identity is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// The identity script printed no JSON document of the expected shape.
    #[error("the identity probe printed no usable JSON ({reason}); output: {output:?}")]
    Output {
        /// What was wrong.
        reason: String,
        /// An excerpt of the output ([`wmco_vocabulary::excerpt`]).
        output: String,
    },
    /// No IPv4 address was found on the default-route interface.
    #[error("no IPv4 default route: the host needs a default route over an interface with an IPv4 address")]
    NoDefaultRouteAddress,
    /// The address printed is not an IPv4 address.
    #[error("the default-route interface address {address:?} is not an IPv4 address")]
    BadAddress {
        /// The text printed.
        address: String,
    },
    /// The Node name the record decides is not an RFC 1123 subdomain.
    #[error(
        "the record's spec.expectedNodeName {node_name:?} is not an RFC 1123 subdomain (at most 253 characters, \
         dot-separated labels of a-z, 0-9, '-', not starting or ending with '-'); fix the Machine it comes from"
    )]
    DecidedNodeName {
        /// The name in the record.
        node_name: String,
    },
    /// The short hostname is not an RFC 1123 label once lower-cased.
    #[error(
        "hostname {hostname:?} gives node name {node_name:?}, which is not an RFC 1123 label (1-63 of a-z, 0-9, '-', \
         not starting or ending with '-'); rename the host"
    )]
    NodeName {
        /// The hostname read.
        hostname: String,
        /// The name derived from it.
        node_name: String,
    },
}

#[derive(Deserialize)]
struct RawIdentity {
    hostname: Option<String>,
    fqdn: Option<String>,
    ip: Option<serde_json::Value>,
}

impl HostIdentity {
    /// Parses the identity script's output (the last line starting with `{`).
    ///
    /// ```
    /// use wmco_node_config::HostIdentity;
    /// let identity = HostIdentity::parse(r#"{"hostname":"WIN-A1","fqdn":"win-a1.corp.example","ip":"203.0.113.7"}"#)?;
    /// assert_eq!(identity.expected_node_name, "win-a1");
    /// assert_eq!(identity.node_ip.to_string(), "203.0.113.7");
    /// # Ok::<(), wmco_node_config::IdentityError>(())
    /// ```
    ///
    /// # Errors
    /// [`IdentityError`] when the output is not the document, the address is missing or not IPv4, or the hostname
    /// does not give a valid node name.
    pub fn parse(stdout: &str) -> Result<HostIdentity, IdentityError> {
        let output_error = |reason: String| IdentityError::Output { reason, output: excerpt(stdout) };
        let json = json_line(stdout).ok_or_else(|| output_error("no JSON line".to_owned()))?;
        let raw: RawIdentity = serde_json::from_str(json).map_err(|error| output_error(error.to_string()))?;
        let hostname =
            raw.hostname.filter(|name| !name.is_empty()).ok_or_else(|| output_error("no hostname".into()))?;
        let fqdn = raw.fqdn.filter(|name| !name.is_empty()).unwrap_or_else(|| hostname.clone());
        let address = match raw.ip {
            None | Some(serde_json::Value::Null) => return Err(IdentityError::NoDefaultRouteAddress),
            Some(serde_json::Value::String(text)) => text,
            Some(other) => other.to_string(),
        };
        let node_ip: Ipv4Addr =
            address.trim().parse().map_err(|_| IdentityError::BadAddress { address: excerpt(&address) })?;
        let expected_node_name = expected_node_name(&hostname)?;
        Ok(HostIdentity { hostname, fqdn, node_ip, expected_node_name })
    }

    /// The identity recorded in a `WindowsInstance` status, if all of it was recorded.
    pub fn from_status(status: &WindowsInstanceStatus) -> Option<HostIdentity> {
        Some(HostIdentity {
            hostname: status.hostname.clone()?,
            fqdn: status.fqdn.clone()?,
            node_ip: status.node_ip?,
            expected_node_name: status.expected_node_name.clone()?,
        })
    }

    /// The identity with the Node name `spec` decided (`spec.expectedNodeName`, set for Machines) in place of the
    /// hostname-derived one; unchanged when `spec` decides none.
    ///
    /// ```
    /// use wmco_cluster_client::types::{InstanceOrigin, WindowsInstanceSpec};
    /// use wmco_node_config::HostIdentity;
    /// let spec = WindowsInstanceSpec {
    ///     address: "10.0.0.7".into(),
    ///     username: "Administrator".into(),
    ///     origin: InstanceOrigin::Machine,
    ///     machine_name: Some("winworker-abc12".into()),
    ///     expected_node_name: Some("ip-10-0-0-7.ec2.internal".into()),
    /// };
    /// let identity = HostIdentity::parse(r#"{"hostname":"EC2AMAZ-1","fqdn":"EC2AMAZ-1","ip":"10.0.0.7"}"#)?;
    /// assert_eq!(identity.named_by(&spec)?.expected_node_name, "ip-10-0-0-7.ec2.internal");
    /// # Ok::<(), wmco_node_config::IdentityError>(())
    /// ```
    ///
    /// # Errors
    /// [`IdentityError::DecidedNodeName`] when the decided name is not an RFC 1123 subdomain.
    pub fn named_by(self, spec: &WindowsInstanceSpec) -> Result<HostIdentity, IdentityError> {
        let Some(decided) = spec.expected_node_name.as_deref() else {
            return Ok(self);
        };
        if !is_dns_subdomain(decided) {
            return Err(IdentityError::DecidedNodeName { node_name: decided.to_owned() });
        }
        Ok(HostIdentity { expected_node_name: decided.to_owned(), ..self })
    }

    /// Writes the identity into a `WindowsInstance` status.
    pub fn record_in(&self, status: &mut WindowsInstanceStatus) {
        status.hostname = Some(self.hostname.clone());
        status.fqdn = Some(self.fqdn.clone());
        status.node_ip = Some(self.node_ip);
        status.expected_node_name = Some(self.expected_node_name.clone());
    }
}

/// The identity command's document: the last line of `stdout` starting with `{` (a profile or warning may print
/// before it).
pub(crate) fn json_line(stdout: &str) -> Option<&str> {
    stdout.lines().rev().map(str::trim).find(|line| line.starts_with('{'))
}

/// The Node name for `hostname`: its first label, lower-cased, which must be an RFC 1123 label.
///
/// ```
/// use wmco_node_config::expected_node_name;
/// assert_eq!(expected_node_name("WINWORKER-7.corp.example")?, "winworker-7");
/// assert!(expected_node_name("-bad").is_err());
/// # Ok::<(), wmco_node_config::IdentityError>(())
/// ```
///
/// # Errors
/// [`IdentityError::NodeName`] when the lower-cased short name is not an RFC 1123 label.
pub fn expected_node_name(hostname: &str) -> Result<String, IdentityError> {
    let short = hostname.trim().split('.').next().unwrap_or_default().to_ascii_lowercase();
    if is_dns_label(&short) {
        Ok(short)
    } else {
        Err(IdentityError::NodeName { hostname: excerpt(hostname), node_name: excerpt(&short) })
    }
}

/// An RFC 1123 label: 1-63 of `a-z`, `0-9`, `-`, not starting or ending with `-`.
fn is_dns_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 63
        && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// An RFC 1123 subdomain (what a Node name must be): at most 253 characters of dot-separated labels.
fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_last_json_line_and_lower_cases_the_short_name() {
        let output = "warning: something\r\n{\"hostname\":\"WIN-B\",\"fqdn\":\"WIN-B.lab\",\"ip\":\"10.1.2.3\"}\r\n";
        let identity = HostIdentity::parse(output).unwrap();
        assert_eq!(
            identity,
            HostIdentity {
                hostname: "WIN-B".into(),
                fqdn: "WIN-B.lab".into(),
                node_ip: Ipv4Addr::new(10, 1, 2, 3),
                expected_node_name: "win-b".into(),
            }
        );
    }

    #[test]
    fn missing_fqdn_falls_back_to_the_hostname() {
        let identity = HostIdentity::parse(r#"{"hostname":"a1","fqdn":null,"ip":"10.0.0.1"}"#).unwrap();
        assert_eq!(identity.fqdn, "a1");
    }

    #[test]
    fn refuses_missing_or_non_ipv4_addresses_and_bad_names() {
        assert_eq!(
            HostIdentity::parse(r#"{"hostname":"a","fqdn":"a","ip":null}"#),
            Err(IdentityError::NoDefaultRouteAddress)
        );
        assert_eq!(
            HostIdentity::parse(r#"{"hostname":"a","fqdn":"a","ip":"fe80::1"}"#),
            Err(IdentityError::BadAddress { address: "fe80::1".into() })
        );
        assert_eq!(
            HostIdentity::parse(r#"{"hostname":"win_1","fqdn":"a","ip":"10.0.0.1"}"#),
            Err(IdentityError::NodeName { hostname: "win_1".into(), node_name: "win_1".into() })
        );
        assert!(matches!(HostIdentity::parse("nothing"), Err(IdentityError::Output { .. })));
        assert!(expected_node_name(&"a".repeat(64)).unwrap_err().to_string().contains("RFC 1123"));
        assert_eq!(expected_node_name(&"a".repeat(63)).unwrap(), "a".repeat(63));
    }

    fn spec_deciding(expected_node_name: Option<&str>) -> WindowsInstanceSpec {
        WindowsInstanceSpec {
            address: "10.0.0.9".into(),
            username: "capi".into(),
            origin: wmco_cluster_client::types::InstanceOrigin::Machine,
            machine_name: Some("win-m".into()),
            expected_node_name: expected_node_name.map(str::to_owned),
        }
    }

    #[test]
    fn the_record_decides_the_node_name_when_it_names_one() {
        let identity = HostIdentity::parse(r#"{"hostname":"WIN-X","fqdn":"win-x.lab","ip":"10.0.0.9"}"#).unwrap();
        let named = identity.clone().named_by(&spec_deciding(Some("win-m"))).unwrap();
        assert_eq!(named, HostIdentity { expected_node_name: "win-m".into(), ..identity.clone() });
        assert_eq!(identity.clone().named_by(&spec_deciding(None)).unwrap(), identity);
        let fqdn = identity.clone().named_by(&spec_deciding(Some("ip-10-0-0-9.ec2.internal"))).unwrap();
        assert_eq!(fqdn.expected_node_name, "ip-10-0-0-9.ec2.internal");
        for bad in ["Win-M", "win_m", "a..b", "-a", "", &"a".repeat(254)] {
            assert_eq!(
                identity.clone().named_by(&spec_deciding(Some(bad))),
                Err(IdentityError::DecidedNodeName { node_name: bad.to_owned() }),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn round_trips_through_the_status() {
        let identity = HostIdentity::parse(r#"{"hostname":"W","fqdn":"w.x","ip":"10.0.0.9"}"#).unwrap();
        let mut status = WindowsInstanceStatus::default();
        assert_eq!(HostIdentity::from_status(&status), None);
        identity.record_in(&mut status);
        assert_eq!(HostIdentity::from_status(&status), Some(identity));
    }
}
