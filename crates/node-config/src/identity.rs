//! What a host says about itself — hostname, FQDN, the IPv4 address of its default-route interface and, on a
//! cloud, the name its instance metadata gives it — read in one round trip, and the Node name the operator decides
//! from it by the cluster's platform ([`NodeNaming`], the Go operator's kubelet `--hostname-override` per platform):
//! the metadata's `local-hostname` on AWS, the metadata server's hostname on GCP, the FQDN on vSphere, the short
//! hostname elsewhere, always lower-cased, unless the record's `spec.expectedNodeName` names it, as for a Machine.
//! The kubelet gets `--hostname-override` and `--node-ip` from these; the CSR approver reads them from the record.

use std::net::Ipv4Addr;

use serde::Deserialize;
use wmco_cluster_client::types::{WindowsInstanceSpec, WindowsInstanceStatus};
use wmco_vocabulary::{Platform, excerpt};

/// The longest GCP hostname kept whole; a longer one becomes its first label (the Go operator's
/// `gcp-get-hostname.ps1`, which matches the name RHCOS workers take there).
const GCP_HOSTNAME_LIMIT: usize = 63;

/// Where a host's Node name comes from on the cluster's platform: what the cloud controller knows the instance by,
/// as the Go operator passes it to the kubelet as `--hostname-override` (wmco-anchor.md §2.6). The identity command
/// reads it in its one round trip ([`NodeNaming::source`] names what it reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeNaming {
    /// The short hostname (Azure, Nutanix, None — plain Kubernetes — and every platform this product does not
    /// know): the name the kubelet takes by itself.
    ShortHostname,
    /// The FQDN (vSphere, where the cloud provider finds the VM by the guest's DNS name).
    Fqdn,
    /// AWS: the instance metadata's `local-hostname` (`ip-10-0-1-23.ec2.internal`), read with an IMDSv2 token.
    AwsLocalHostname,
    /// GCP: the metadata server's `instance/hostname` (`win-1.us-central1-a.c.project.internal`), its first
    /// label when longer than 63 characters.
    GcpHostname,
}

impl NodeNaming {
    /// The naming rule of `platform`.
    ///
    /// ```
    /// use wmco_node_config::NodeNaming;
    /// use wmco_vocabulary::Platform;
    /// assert_eq!(NodeNaming::for_platform(Platform::Aws), NodeNaming::AwsLocalHostname);
    /// assert_eq!(NodeNaming::for_platform(Platform::None), NodeNaming::ShortHostname);
    /// ```
    pub fn for_platform(platform: Platform) -> NodeNaming {
        match platform {
            Platform::Aws => NodeNaming::AwsLocalHostname,
            Platform::Gcp => NodeNaming::GcpHostname,
            Platform::VSphere => NodeNaming::Fqdn,
            Platform::Azure | Platform::Nutanix | Platform::None => NodeNaming::ShortHostname,
        }
    }

    /// The rule for the host of `spec` on `platform`: a record that names its Node (`spec.expectedNodeName`, a
    /// Machine) needs nothing from the cloud, so the identity command reads no metadata for it.
    pub fn for_record(platform: Platform, spec: &WindowsInstanceSpec) -> NodeNaming {
        if spec.expected_node_name.is_some() { NodeNaming::ShortHostname } else { NodeNaming::for_platform(platform) }
    }

    /// What the Node name is read from, for messages.
    pub fn source(self) -> &'static str {
        match self {
            NodeNaming::ShortHostname => "the short hostname",
            NodeNaming::Fqdn => "the FQDN",
            NodeNaming::AwsLocalHostname => {
                "the AWS instance metadata's local-hostname (http://169.254.169.254/latest/meta-data/local-hostname)"
            }
            NodeNaming::GcpHostname => {
                "the GCP metadata server's hostname \
                 (http://metadata.google.internal/computeMetadata/v1/instance/hostname)"
            }
        }
    }

    /// Whether the identity command asks a cloud's metadata service.
    pub fn reads_metadata(self) -> bool {
        matches!(self, NodeNaming::AwsLocalHostname | NodeNaming::GcpHostname)
    }
}

/// A host's identity as read over SSH, plus the Node name decided from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostIdentity {
    /// The host name as Windows reports it (`[System.Net.Dns]::GetHostName()`).
    pub hostname: String,
    /// The host's DNS name (`GetHostEntry(hostname).HostName`).
    pub fqdn: String,
    /// The IPv4 address of the default-route interface (kubelet `--node-ip`).
    pub node_ip: Ipv4Addr,
    /// The Node name (kubelet `--hostname-override`), decided by [`NodeNaming`]: lower-cased, an RFC 1123
    /// subdomain.
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
    /// The cloud's metadata service did not give the host's name (not on that cloud, metadata service disabled or
    /// unreachable).
    #[error(
        "the cluster's platform names Nodes by {read_from}, but the host did not get it: {reason}; on this platform \
         a Windows host must run on the cloud's instance with its metadata service reachable"
    )]
    CloudName {
        /// What the name is read from ([`NodeNaming::source`]).
        read_from: &'static str,
        /// What the host reported (an excerpt).
        reason: String,
    },
    /// The name read from the platform's source is not an RFC 1123 subdomain once lower-cased.
    #[error("{read_from} {name:?} is not an RFC 1123 subdomain once lower-cased, so it cannot name the host's Node")]
    PlatformNodeName {
        /// What the name was read from ([`NodeNaming::source`]).
        read_from: &'static str,
        /// The name read (an excerpt).
        name: String,
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
#[serde(rename_all = "camelCase")]
struct RawIdentity {
    hostname: Option<String>,
    fqdn: Option<String>,
    ip: Option<serde_json::Value>,
    /// The name the cloud's metadata service gave, when the command asked one.
    cloud_name: Option<String>,
    /// Why the metadata service gave none (the exception's message).
    cloud_error: Option<String>,
}

impl HostIdentity {
    /// Parses the identity script's output (the last line starting with `{`) under the short-hostname rule
    /// (platform `None`); [`HostIdentity::parse_with`] for another platform's rule.
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
    /// As [`HostIdentity::parse_with`].
    pub fn parse(stdout: &str) -> Result<HostIdentity, IdentityError> {
        HostIdentity::parse_with(stdout, NodeNaming::ShortHostname)
    }

    /// Parses the identity script's output (the last line starting with `{`) and decides the Node name by
    /// `naming`.
    ///
    /// ```
    /// use wmco_node_config::{HostIdentity, NodeNaming};
    /// let stdout = r#"{"hostname":"EC2AMAZ-4B7Q2","fqdn":"EC2AMAZ-4B7Q2","ip":"10.0.1.23","cloudName":"ip-10-0-1-23.ec2.internal"}"#;
    /// let identity = HostIdentity::parse_with(stdout, NodeNaming::AwsLocalHostname)?;
    /// assert_eq!(identity.expected_node_name, "ip-10-0-1-23.ec2.internal");
    /// # Ok::<(), wmco_node_config::IdentityError>(())
    /// ```
    ///
    /// # Errors
    /// [`IdentityError`] when the output is not the document, the address is missing or not IPv4, the cloud's
    /// metadata gave no name, or the name read does not give a valid Node name.
    pub fn parse_with(stdout: &str, naming: NodeNaming) -> Result<HostIdentity, IdentityError> {
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
        let expected_node_name = match naming {
            NodeNaming::ShortHostname => expected_node_name(&hostname)?,
            NodeNaming::Fqdn => platform_node_name(naming, &fqdn)?,
            NodeNaming::AwsLocalHostname | NodeNaming::GcpHostname => {
                let cloud_name = raw.cloud_name.filter(|name| !name.trim().is_empty()).ok_or_else(|| {
                    let reason = raw.cloud_error.as_deref().unwrap_or("the metadata service answered no name");
                    IdentityError::CloudName { read_from: naming.source(), reason: excerpt(reason) }
                })?;
                platform_node_name(naming, &cloud_name)?
            }
        };
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

/// The Node name `name` (read from `naming`'s source) gives: lower-cased (as the kubelet lower-cases its
/// `--hostname-override`) without a trailing dot; on GCP a name longer than 63 characters becomes its first label
/// (or its first 63 characters); it must be an RFC 1123 subdomain.
fn platform_node_name(naming: NodeNaming, name: &str) -> Result<String, IdentityError> {
    let lowered = name.trim().trim_end_matches('.').to_ascii_lowercase();
    let node_name = if naming == NodeNaming::GcpHostname && lowered.len() > GCP_HOSTNAME_LIMIT {
        match lowered.split_once('.') {
            Some((first, _)) if !first.is_empty() && first.len() <= GCP_HOSTNAME_LIMIT => first.to_owned(),
            _ => lowered.chars().take(GCP_HOSTNAME_LIMIT).collect(),
        }
    } else {
        lowered
    };
    if is_dns_subdomain(&node_name) {
        Ok(node_name)
    } else {
        Err(IdentityError::PlatformNodeName { read_from: naming.source(), name: excerpt(name) })
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

    /// An EC2 Windows host as launched from Amazon's AMI: `EC2AMAZ-…` name, the VPC's DNS suffix.
    const AWS_HOST: &str = r#"{"hostname":"EC2AMAZ-4B7Q2LM","fqdn":"EC2AMAZ-4B7Q2LM.ec2.internal","ip":"10.0.1.23","cloudName":"ip-10-0-1-23.ec2.internal","cloudError":null}"#;

    #[test]
    fn every_platform_has_its_naming_rule() {
        let rules: Vec<(Platform, NodeNaming)> =
            Platform::ALL.iter().map(|platform| (*platform, NodeNaming::for_platform(*platform))).collect();
        assert_eq!(
            rules,
            [
                (Platform::Aws, NodeNaming::AwsLocalHostname),
                (Platform::Azure, NodeNaming::ShortHostname),
                (Platform::Gcp, NodeNaming::GcpHostname),
                (Platform::VSphere, NodeNaming::Fqdn),
                (Platform::Nutanix, NodeNaming::ShortHostname),
                (Platform::None, NodeNaming::ShortHostname),
            ]
        );
        assert!(NodeNaming::AwsLocalHostname.reads_metadata() && NodeNaming::GcpHostname.reads_metadata());
        assert!(!NodeNaming::Fqdn.reads_metadata() && !NodeNaming::ShortHostname.reads_metadata());
    }

    #[test]
    fn a_machine_record_names_its_node_so_no_metadata_is_read() {
        assert_eq!(
            NodeNaming::for_record(Platform::Aws, &spec_deciding(Some("ip-10-0-0-9.ec2.internal"))),
            NodeNaming::ShortHostname
        );
        assert_eq!(NodeNaming::for_record(Platform::Aws, &spec_deciding(None)), NodeNaming::AwsLocalHostname);
    }

    #[test]
    fn an_aws_host_is_named_by_its_local_hostname_not_its_windows_name() {
        let identity = HostIdentity::parse_with(AWS_HOST, NodeNaming::AwsLocalHostname).unwrap();
        assert_eq!(identity.expected_node_name, "ip-10-0-1-23.ec2.internal");
        assert_eq!(
            (identity.hostname.as_str(), identity.fqdn.as_str()),
            ("EC2AMAZ-4B7Q2LM", "EC2AMAZ-4B7Q2LM.ec2.internal")
        );
        let regional = AWS_HOST.replace("ip-10-0-1-23.ec2.internal", "IP-10-0-1-23.us-west-2.compute.internal.");
        let identity = HostIdentity::parse_with(&regional, NodeNaming::AwsLocalHostname).unwrap();
        assert_eq!(identity.expected_node_name, "ip-10-0-1-23.us-west-2.compute.internal");
        // The same host on platform None keeps the kubelet's own name.
        assert_eq!(HostIdentity::parse(AWS_HOST).unwrap().expected_node_name, "ec2amaz-4b7q2lm");
    }

    #[test]
    fn a_host_the_metadata_service_did_not_answer_is_refused_naming_the_service_and_the_reason() {
        let off_cloud = r#"{"hostname":"WIN-1","fqdn":"WIN-1","ip":"10.0.0.5","cloudName":null,"cloudError":"Unable to connect to the remote server"}"#;
        let error = HostIdentity::parse_with(off_cloud, NodeNaming::AwsLocalHostname).unwrap_err();
        assert_eq!(
            error,
            IdentityError::CloudName {
                read_from: NodeNaming::AwsLocalHostname.source(),
                reason: "Unable to connect to the remote server".into()
            }
        );
        let text = error.to_string();
        assert!(
            text.contains("169.254.169.254/latest/meta-data/local-hostname") && text.contains("Unable to connect"),
            "{text}"
        );
        let silent = r#"{"hostname":"WIN-1","fqdn":"WIN-1","ip":"10.0.0.5","cloudName":""}"#;
        let error = HostIdentity::parse_with(silent, NodeNaming::GcpHostname).unwrap_err().to_string();
        assert!(error.contains("metadata.google.internal") && error.contains("answered no name"), "{error}");
        let bad = r#"{"hostname":"WIN-1","fqdn":"WIN-1","ip":"10.0.0.5","cloudName":"ip_10.ec2.internal"}"#;
        assert_eq!(
            HostIdentity::parse_with(bad, NodeNaming::AwsLocalHostname),
            Err(IdentityError::PlatformNodeName {
                read_from: NodeNaming::AwsLocalHostname.source(),
                name: "ip_10.ec2.internal".into()
            })
        );
    }

    #[test]
    fn a_gcp_host_is_named_by_the_metadata_hostname_cut_to_its_first_label_past_63_characters() {
        let gcp = |name: &str| {
            let stdout = format!(r#"{{"hostname":"WIN-1","fqdn":"WIN-1","ip":"10.128.0.5","cloudName":"{name}"}}"#);
            HostIdentity::parse_with(&stdout, NodeNaming::GcpHostname).map(|identity| identity.expected_node_name)
        };
        assert_eq!(gcp("win-1.c.project-id.internal").unwrap(), "win-1.c.project-id.internal");
        let zonal = format!("{}.us-central1-a.c.my-project.internal", "w".repeat(40));
        assert_eq!(gcp(&zonal).unwrap(), "w".repeat(40));
        assert_eq!(gcp(&"x".repeat(70)).unwrap(), "x".repeat(63));
        let fits = format!("{}.c.p.internal", "w".repeat(40));
        assert_eq!(gcp(&fits).unwrap(), fits);
    }

    #[test]
    fn a_vsphere_host_is_named_by_its_lower_cased_fqdn() {
        let stdout = r#"{"hostname":"WIN-VS1","fqdn":"WIN-VS1.Corp.Example","ip":"10.0.0.5"}"#;
        let identity = HostIdentity::parse_with(stdout, NodeNaming::Fqdn).unwrap();
        assert_eq!(identity.expected_node_name, "win-vs1.corp.example");
        let no_suffix = r#"{"hostname":"WIN-VS1","fqdn":null,"ip":"10.0.0.5"}"#;
        assert_eq!(HostIdentity::parse_with(no_suffix, NodeNaming::Fqdn).unwrap().expected_node_name, "win-vs1");
        let bad = r#"{"hostname":"WIN-VS1","fqdn":"win_vs1.corp","ip":"10.0.0.5"}"#;
        assert!(matches!(
            HostIdentity::parse_with(bad, NodeNaming::Fqdn),
            Err(IdentityError::PlatformNodeName { read_from: "the FQDN", .. })
        ));
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
