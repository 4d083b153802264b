//! Which Windows Machine becomes which host record: [`desired_instance`] decides, for one Machine and the cluster's
//! platform, whether the operator configures it (and with which address, SSH user and Node name), deconfigures it
//! (the Machine is being deleted) or leaves it alone, and why.

use std::fmt;
use std::net::Ipv4Addr;

use serde::Serialize;
use wmco_cluster_client::Platform;
use wmco_cluster_client::types::Machine;

use crate::names::{IGNORE_KEY, OS_ID_LABEL, WINDOWS_OS_ID};
use crate::node_name::{is_dns_subdomain, node_name_from_internal_dns};

/// The Machine phases in which the operator configures a Machine's host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ConfigurablePhase {
    /// The instance exists and has addresses; the operator configures it for the first time.
    Provisioned,
    /// The Machine has a Node; the operator keeps it up to date (upgrades, re-keying, drift).
    Running,
}

/// What the operator's record of a Machine holds: where to reach the host, as whom, and the Node it must become.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineInstance {
    /// The Machine's name.
    pub machine_name: String,
    /// The Machine's first IPv4 `InternalIP`: the SSH address.
    pub address: Ipv4Addr,
    /// The SSH user: `capi` on Azure, `Administrator` elsewhere.
    pub username: String,
    /// The Node name: the Machine's name on vSphere and Nutanix, else its first `InternalDNS` address.
    pub expected_node_name: String,
    /// The phase the decision was made in.
    pub phase: ConfigurablePhase,
}

/// Why the operator leaves a Machine alone (its record, if any, is not touched).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum SkipReason {
    /// The Machine is not labelled `machine.openshift.io/os-id: Windows`.
    NotWindows,
    /// The Machine carries `windowsmachineconfig.openshift.io/ignore: "true"`.
    Ignored,
    /// The Machine is in a phase other than `Provisioned` or `Running` (or has none yet).
    Phase {
        /// The phase, if any.
        phase: Option<String>,
    },
    /// The Machine has no IPv4 `InternalIP` address yet.
    NoIpv4InternalIp,
    /// The platform names Nodes by `InternalDNS` address and the Machine has none yet.
    NoInternalDns,
    /// The Node name the platform rule gives is not a valid Node name.
    UnusableNodeName {
        /// The name the rule gave.
        node_name: String,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::NotWindows => write!(f, "not labelled {OS_ID_LABEL}: {WINDOWS_OS_ID}"),
            SkipReason::Ignored => write!(f, "{IGNORE_KEY} is \"true\""),
            SkipReason::Phase { phase: Some(phase) } => {
                write!(f, "phase {phase} (configured only when Provisioned or Running)")
            }
            SkipReason::Phase { phase: None } => f.write_str("no phase yet"),
            SkipReason::NoIpv4InternalIp => f.write_str("no IPv4 InternalIP address yet"),
            SkipReason::NoInternalDns => f.write_str("no InternalDNS address yet (it names the Node on this platform)"),
            SkipReason::UnusableNodeName { node_name } => {
                write!(f, "node name {node_name:?} is not an RFC 1123 subdomain")
            }
        }
    }
}

/// What to do about one Machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "camelCase")]
pub enum MachineDecision {
    /// Keep one record for the Machine with these values (the instances controller configures the host).
    Configure(MachineInstance),
    /// The Machine is being deleted: delete its record, so the host is deconfigured before the record goes.
    Deconfigure,
    /// Leave the Machine and its record alone.
    Skip(SkipReason),
}

/// The SSH user the operator logs in as on a Machine of `platform`: `capi` on Azure (the image's own user),
/// `Administrator` elsewhere.
///
/// ```
/// use wmco_cluster_client::Platform;
/// assert_eq!(wmco_machines::ssh_user(&Platform::Azure), "capi");
/// assert_eq!(wmco_machines::ssh_user(&Platform::Aws), "Administrator");
/// ```
pub fn ssh_user(platform: &Platform) -> &'static str {
    match platform {
        Platform::Azure => "capi",
        _ => "Administrator",
    }
}

/// Decides what the operator does about `machine` on `platform`.
///
/// A Windows Machine is configured when its phase is `Provisioned` (first configuration) or `Running` (kept up to
/// date), it has an IPv4 `InternalIP` and it is not marked ignored; a Windows Machine being deleted (deletion
/// timestamp or phase `Deleting`) is deconfigured; anything else is skipped with the reason.
///
/// ```
/// use wmco_cluster_client::Platform;
/// use wmco_cluster_client::types::Machine;
/// use wmco_machines::{MachineDecision, desired_instance};
///
/// let machine: Machine = serde_json::from_value(serde_json::json!({
///     "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
///     "metadata": {"name": "winworker-x7k2p", "namespace": "openshift-machine-api",
///                  "labels": {"machine.openshift.io/os-id": "Windows"}},
///     "spec": {},
///     "status": {"phase": "Provisioned", "addresses": [
///         {"type": "InternalIP", "address": "10.0.128.9"},
///         {"type": "InternalDNS", "address": "winworker-x7k2p"}]}
/// }))?;
/// let MachineDecision::Configure(instance) = desired_instance(&machine, &Platform::VSphere) else { panic!() };
/// assert_eq!(instance.address.to_string(), "10.0.128.9");
/// assert_eq!(instance.username, "Administrator");
/// assert_eq!(instance.expected_node_name, "winworker-x7k2p");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn desired_instance(machine: &Machine, platform: &Platform) -> MachineDecision {
    if !is_windows(machine) {
        return MachineDecision::Skip(SkipReason::NotWindows);
    }
    let phase = machine.status.as_ref().and_then(|status| status.phase.as_deref());
    if machine.metadata.deletion_timestamp.is_some() || phase == Some("Deleting") {
        return MachineDecision::Deconfigure;
    }
    if is_ignored(machine) {
        return MachineDecision::Skip(SkipReason::Ignored);
    }
    let phase = match phase {
        Some("Provisioned") => ConfigurablePhase::Provisioned,
        Some("Running") => ConfigurablePhase::Running,
        other => return MachineDecision::Skip(SkipReason::Phase { phase: other.map(str::to_owned) }),
    };
    let Some(address) = first_ipv4_internal_ip(machine) else {
        return MachineDecision::Skip(SkipReason::NoIpv4InternalIp);
    };
    let machine_name = machine.metadata.name.clone().unwrap_or_default();
    let expected_node_name = match expected_node_name(machine, &machine_name, platform) {
        Ok(name) => name,
        Err(reason) => return MachineDecision::Skip(reason),
    };
    MachineDecision::Configure(MachineInstance {
        machine_name,
        address,
        username: ssh_user(platform).to_owned(),
        expected_node_name,
        phase,
    })
}

/// Whether `machine` is labelled as a Windows Machine.
pub fn is_windows(machine: &Machine) -> bool {
    machine.metadata.labels.as_ref().and_then(|labels| labels.get(OS_ID_LABEL)).map(String::as_str)
        == Some(WINDOWS_OS_ID)
}

/// Whether `machine` carries the ignore key set to `"true"`, as an annotation (this product) or a label (the Go
/// operator).
fn is_ignored(machine: &Machine) -> bool {
    let metadata = &machine.metadata;
    [metadata.annotations.as_ref(), metadata.labels.as_ref()]
        .into_iter()
        .flatten()
        .any(|map| map.get(IGNORE_KEY).map(String::as_str) == Some("true"))
}

/// The first `InternalIP` address that parses as IPv4 (IPv6 addresses are passed over, as the Go operator does).
fn first_ipv4_internal_ip(machine: &Machine) -> Option<Ipv4Addr> {
    addresses_of(machine, "InternalIP").find_map(|address| address.trim().parse().ok())
}

fn addresses_of<'a>(machine: &'a Machine, kind: &'a str) -> impl Iterator<Item = &'a str> {
    machine
        .status
        .iter()
        .flat_map(|status| status.addresses.iter())
        .filter(move |address| address.type_ == kind)
        .map(|address| address.address.as_str())
}

/// The platform rule for the Node name: the Machine name on vSphere and Nutanix (the operator's flow there names
/// the host after its Machine), otherwise the first `InternalDNS` address, as the kubelet registers it (on GCP a
/// name over 63 characters is shortened to its first label).
fn expected_node_name(machine: &Machine, machine_name: &str, platform: &Platform) -> Result<String, SkipReason> {
    let node_name = match platform {
        Platform::VSphere | Platform::Nutanix => machine_name.to_owned(),
        _ => {
            let internal_dns = addresses_of(machine, "InternalDNS")
                .map(str::trim)
                .find(|address| !address.is_empty())
                .ok_or(SkipReason::NoInternalDns)?;
            node_name_from_internal_dns(internal_dns, platform)
        }
    };
    if is_dns_subdomain(&node_name) { Ok(node_name) } else { Err(SkipReason::UnusableNodeName { node_name }) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn machine(phase: Option<&str>, addresses: serde_json::Value) -> Machine {
        serde_json::from_value(json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": "winworker-abcde", "namespace": "openshift-machine-api",
                         "labels": {"machine.openshift.io/os-id": "Windows"}},
            "spec": {"providerID": "aws:///us-east-1a/i-0abc"},
            "status": {"phase": phase, "addresses": addresses}
        }))
        .unwrap()
    }

    fn aws_addresses() -> serde_json::Value {
        json!([
            {"type": "InternalIP", "address": "fd00::5"},
            {"type": "InternalIP", "address": "10.0.1.5"},
            {"type": "InternalDNS", "address": "IP-10-0-1-5.ec2.internal"},
            {"type": "InternalDNS", "address": "ip-10-0-1-5.other"},
            {"type": "Hostname", "address": "ip-10-0-1-5.ec2.internal"}
        ])
    }

    fn configured(decision: MachineDecision) -> MachineInstance {
        match decision {
            MachineDecision::Configure(instance) => instance,
            other => panic!("expected Configure, got {other:?}"),
        }
    }

    #[test]
    fn a_provisioned_aws_machine_is_configured_as_administrator_named_by_its_first_internal_dns() {
        let instance = configured(desired_instance(&machine(Some("Provisioned"), aws_addresses()), &Platform::Aws));
        assert_eq!(
            instance,
            MachineInstance {
                machine_name: "winworker-abcde".into(),
                address: Ipv4Addr::new(10, 0, 1, 5),
                username: "Administrator".into(),
                expected_node_name: "ip-10-0-1-5.ec2.internal".into(),
                phase: ConfigurablePhase::Provisioned,
            }
        );
    }

    #[test]
    fn running_machines_are_kept_up_to_date() {
        let instance = configured(desired_instance(&machine(Some("Running"), aws_addresses()), &Platform::Aws));
        assert_eq!(instance.phase, ConfigurablePhase::Running);
    }

    #[test]
    fn platform_rules_for_user_and_node_name() {
        let addresses = json!([
            {"type": "InternalIP", "address": "10.0.1.5"},
            {"type": "InternalDNS", "address": "winworker-abcde"}
        ]);
        let cases = [
            (Platform::Azure, "capi", "winworker-abcde"),
            (Platform::Gcp, "Administrator", "winworker-abcde"),
            (Platform::VSphere, "Administrator", "winworker-abcde"),
            (Platform::Nutanix, "Administrator", "winworker-abcde"),
            (Platform::None, "Administrator", "winworker-abcde"),
        ];
        for (platform, user, node_name) in cases {
            let instance = configured(desired_instance(&machine(Some("Provisioned"), addresses.clone()), &platform));
            assert_eq!((instance.username.as_str(), instance.expected_node_name.as_str()), (user, node_name));
        }
        let no_dns = json!([{"type": "InternalIP", "address": "10.0.1.5"}]);
        let vsphere = configured(desired_instance(&machine(Some("Running"), no_dns.clone()), &Platform::VSphere));
        assert_eq!(vsphere.expected_node_name, "winworker-abcde");
        assert_eq!(
            desired_instance(&machine(Some("Running"), no_dns), &Platform::Azure),
            MachineDecision::Skip(SkipReason::NoInternalDns)
        );
    }

    #[test]
    fn long_gcp_node_names_keep_their_first_label_like_the_hostname_the_kubelet_registers() {
        let long = format!("{}.c.my-project.internal", "w".repeat(50));
        let addresses =
            json!([{"type": "InternalIP", "address": "10.0.1.5"}, {"type": "InternalDNS", "address": long}]);
        let instance = configured(desired_instance(&machine(Some("Running"), addresses.clone()), &Platform::Gcp));
        assert_eq!(instance.expected_node_name, "w".repeat(50));
        let aws = configured(desired_instance(&machine(Some("Running"), addresses), &Platform::Aws));
        assert_eq!(aws.expected_node_name, long);
    }

    #[test]
    fn skips_with_a_reason() {
        let mut linux = machine(Some("Running"), aws_addresses());
        linux.metadata.labels = None;
        assert_eq!(desired_instance(&linux, &Platform::Aws), MachineDecision::Skip(SkipReason::NotWindows));

        for phase in [None, Some("Provisioning"), Some("Failed")] {
            assert_eq!(
                desired_instance(&machine(phase, aws_addresses()), &Platform::Aws),
                MachineDecision::Skip(SkipReason::Phase { phase: phase.map(str::to_owned) })
            );
        }
        let ipv6_only =
            json!([{"type": "InternalIP", "address": "fd00::5"}, {"type": "ExternalIP", "address": "1.2.3.4"}]);
        assert_eq!(
            desired_instance(&machine(Some("Provisioned"), ipv6_only), &Platform::Aws),
            MachineDecision::Skip(SkipReason::NoIpv4InternalIp)
        );
        let bad_dns =
            json!([{"type": "InternalIP", "address": "10.0.1.5"}, {"type": "InternalDNS", "address": "a_b.x"}]);
        assert_eq!(
            desired_instance(&machine(Some("Provisioned"), bad_dns), &Platform::Aws),
            MachineDecision::Skip(SkipReason::UnusableNodeName { node_name: "a_b.x".into() })
        );
    }

    #[test]
    fn the_ignore_key_counts_as_annotation_or_label_only_when_true() {
        let mut annotated = machine(Some("Running"), aws_addresses());
        annotated.metadata.annotations = Some([(IGNORE_KEY.to_owned(), "true".to_owned())].into());
        assert_eq!(desired_instance(&annotated, &Platform::Aws), MachineDecision::Skip(SkipReason::Ignored));

        let mut labelled = machine(Some("Running"), aws_addresses());
        labelled.metadata.labels.as_mut().unwrap().insert(IGNORE_KEY.to_owned(), "true".to_owned());
        assert_eq!(desired_instance(&labelled, &Platform::Aws), MachineDecision::Skip(SkipReason::Ignored));

        let mut not_true = machine(Some("Running"), aws_addresses());
        not_true.metadata.annotations = Some([(IGNORE_KEY.to_owned(), "false".to_owned())].into());
        assert!(matches!(desired_instance(&not_true, &Platform::Aws), MachineDecision::Configure(_)));
    }

    #[test]
    fn deleting_machines_are_deconfigured_even_when_ignored_or_without_addresses() {
        let deleting = machine(Some("Deleting"), json!([]));
        assert_eq!(desired_instance(&deleting, &Platform::Aws), MachineDecision::Deconfigure);
        let mut marked: Machine = machine(Some("Running"), aws_addresses());
        marked.metadata.deletion_timestamp = serde_json::from_value(json!("2026-11-22T03:00:00Z")).unwrap();
        marked.metadata.annotations = Some([(IGNORE_KEY.to_owned(), "true".to_owned())].into());
        assert_eq!(desired_instance(&marked, &Platform::Aws), MachineDecision::Deconfigure);
    }

    #[test]
    fn skip_reasons_read_as_sentences() {
        let rendered: Vec<String> = [
            SkipReason::NotWindows,
            SkipReason::Ignored,
            SkipReason::Phase { phase: Some("Failed".into()) },
            SkipReason::Phase { phase: None },
            SkipReason::NoIpv4InternalIp,
            SkipReason::NoInternalDns,
            SkipReason::UnusableNodeName { node_name: "a_b".into() },
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            rendered,
            [
                "not labelled machine.openshift.io/os-id: Windows",
                "windowsmachineconfig.openshift.io/ignore is \"true\"",
                "phase Failed (configured only when Provisioned or Running)",
                "no phase yet",
                "no IPv4 InternalIP address yet",
                "no InternalDNS address yet (it names the Node on this platform)",
                "node name \"a_b\" is not an RFC 1123 subdomain",
            ]
        );
    }
}
