//! [`build_inventory`]: every `windows-instances` entry validated on its own (address, value, resolution), then
//! hosts reached through two keys collapsed into one instance with a warning. The result is deterministic: instances
//! and problems are sorted by key.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::address::{Address, AddressError, parse_address};
use crate::entry::{ValueError, parse_value};
use crate::name::instance_name;
use crate::resolve::Resolver;

/// One BYOH host the admin wants as a Windows node. Serialized with camelCase keys, like Kubernetes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DesiredInstance {
    /// The ConfigMap key, as written.
    pub key: String,
    /// The key, parsed.
    pub address: Address,
    /// The IPv4 address the operator connects to: the key itself, or the first IPv4 address the name resolved to.
    pub resolved_ipv4: Ipv4Addr,
    /// The Windows user the operator logs in as.
    pub username: String,
}

impl DesiredInstance {
    /// The name of this host's `WindowsInstance` object (see [`instance_name`]).
    pub fn instance_name(&self) -> String {
        instance_name(&self.key)
    }
}

/// How serious a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The entry is refused.
    Error,
    /// The entry is not used as written, but its host is still managed.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "ERROR",
            Severity::Warning => "WARNING",
        })
    }
}

/// Why an entry was refused or dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum ProblemReason {
    /// The key is not a usable address.
    #[error("{0}")]
    Address(AddressError),
    /// The value is not `username=<name>` with a valid Windows user name.
    #[error("{0}")]
    Value(ValueError),
    /// The DNS name did not resolve.
    #[error("DNS name {name:?} does not resolve: {detail}")]
    Unresolvable {
        /// The name.
        name: String,
        /// What the resolver said.
        detail: String,
    },
    /// The DNS name resolves only to IPv6 addresses.
    #[error("DNS name {name:?} resolves only to IPv6 addresses ({}); IPv6 is not supported", join(addresses))]
    OnlyIpv6 {
        /// The name.
        name: String,
        /// What it resolved to.
        addresses: Vec<Ipv6Addr>,
    },
    /// Another key reaches the same host; that key's entry is used instead.
    #[error("same host as {kept_key:?} (both reach {ipv4}); only {kept_key:?} is used")]
    DuplicateHost {
        /// The key that is kept (the one sorting first).
        kept_key: String,
        /// The IPv4 address both reach.
        ipv4: Ipv4Addr,
    },
}

fn join(addresses: &[Ipv6Addr]) -> String {
    addresses.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// A problem with one entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryProblem {
    /// The ConfigMap key of the entry.
    pub key: String,
    /// Whether the entry is refused (error) or merely dropped in favour of another (warning).
    pub severity: Severity,
    /// What is wrong.
    pub reason: ProblemReason,
}

impl fmt::Display for EntryProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.reason)
    }
}

/// The desired BYOH fleet: the valid instances and every problem, both sorted by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    /// The hosts to manage.
    pub instances: Vec<DesiredInstance>,
    /// Every refused or dropped entry, one problem per key.
    pub problems: Vec<EntryProblem>,
}

impl Inventory {
    /// Whether any entry was refused.
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|problem| problem.severity == Severity::Error)
    }
}

/// An entry whose key and value are well-formed, waiting for its address.
struct WellFormedEntry<'a> {
    key: &'a str,
    address: Address,
    username: String,
}

/// Validates every entry of the ConfigMap's `data` on its own and returns the desired fleet.
///
/// Each key ends up exactly once: as an instance, as an error, or (when another key reaches the same IPv4 address
/// and sorts before it) as a warning naming the kept key. DNS names are resolved concurrently.
///
/// ```
/// use std::collections::BTreeMap;
/// use std::net::{IpAddr, Ipv4Addr};
/// use wmco_instance_inventory::{Severity, StaticResolver, build_inventory};
///
/// let data = BTreeMap::from([
///     ("10.1.2.3".to_owned(), "username=Administrator".to_owned()),
///     ("win1.example".to_owned(), "username=Administrator".to_owned()),
///     ("10.1.2.4".to_owned(), "password=hunter2".to_owned()),
/// ]);
/// let resolver = StaticResolver::new([("win1.example", vec![IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3))])]);
/// let inventory = futures::executor::block_on(build_inventory(&data, &resolver));
///
/// assert_eq!(inventory.instances.len(), 1);
/// assert_eq!(inventory.instances[0].instance_name(), "byoh-10-1-2-3");
/// let problems: Vec<String> = inventory.problems.iter().map(|p| format!("{} {p}", p.severity)).collect();
/// assert_eq!(problems, [
///     "ERROR 10.1.2.4: unknown field \"password\"; the value must be exactly `username=<name>`",
///     "WARNING win1.example: same host as \"10.1.2.3\" (both reach 10.1.2.3); only \"10.1.2.3\" is used",
/// ]);
/// ```
pub async fn build_inventory<R: Resolver>(data: &BTreeMap<String, String>, resolver: &R) -> Inventory {
    let mut problems = Vec::new();
    let mut well_formed = Vec::new();
    for (key, value) in data {
        match check_entry(key, value) {
            Ok(entry) => well_formed.push(entry),
            Err(reason) => problems.push(EntryProblem { key: key.clone(), severity: Severity::Error, reason }),
        }
    }
    let resolutions =
        futures::future::join_all(well_formed.iter().map(|entry| resolve(&entry.address, resolver))).await;
    let mut kept_key_by_ipv4: BTreeMap<Ipv4Addr, &str> = BTreeMap::new();
    let mut instances = Vec::new();
    for (entry, resolution) in well_formed.into_iter().zip(resolutions) {
        let key = entry.key.to_owned();
        match resolution {
            Err(reason) => problems.push(EntryProblem { key, severity: Severity::Error, reason }),
            Ok(ipv4) => match kept_key_by_ipv4.get(&ipv4) {
                Some(kept_key) => problems.push(EntryProblem {
                    key,
                    severity: Severity::Warning,
                    reason: ProblemReason::DuplicateHost { kept_key: (*kept_key).to_owned(), ipv4 },
                }),
                None => {
                    kept_key_by_ipv4.insert(ipv4, entry.key);
                    instances.push(DesiredInstance {
                        key,
                        address: entry.address,
                        resolved_ipv4: ipv4,
                        username: entry.username,
                    });
                }
            },
        }
    }
    problems.sort_by(|left, right| left.key.cmp(&right.key));
    Inventory { instances, problems }
}

fn check_entry<'a>(key: &'a str, value: &str) -> Result<WellFormedEntry<'a>, ProblemReason> {
    let address = parse_address(key).map_err(ProblemReason::Address)?;
    let username = parse_value(value).map_err(ProblemReason::Value)?;
    Ok(WellFormedEntry { key, address, username })
}

async fn resolve<R: Resolver>(address: &Address, resolver: &R) -> Result<Ipv4Addr, ProblemReason> {
    let name = match address {
        Address::Ipv4 { ip } => return Ok(*ip),
        Address::Dns { name } => name,
    };
    let ips = resolver
        .resolve(name)
        .await
        .map_err(|error| ProblemReason::Unresolvable { name: name.clone(), detail: error.detail })?;
    let mut ipv6_addresses = Vec::new();
    for ip in ips {
        match ip {
            IpAddr::V4(ipv4) => return Ok(ipv4),
            IpAddr::V6(ipv6) => ipv6_addresses.push(ipv6),
        }
    }
    if ipv6_addresses.is_empty() {
        Err(ProblemReason::Unresolvable { name: name.clone(), detail: "no addresses".to_owned() })
    } else {
        Err(ProblemReason::OnlyIpv6 { name: name.clone(), addresses: ipv6_addresses })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::DnsNameError;
    use crate::resolve::StaticResolver;
    use crate::username::UsernameError;

    fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    }

    fn resolver() -> StaticResolver {
        StaticResolver::new([
            ("win1.example", vec![v4(10, 0, 0, 1)]),
            ("win2.example", vec!["fd00::2".parse().unwrap(), v4(10, 0, 0, 2), v4(10, 0, 0, 22)]),
            ("v6only.example", vec!["fd00::3".parse().unwrap(), "fd00::4".parse().unwrap()]),
            ("empty.example", vec![]),
            ("alias.example", vec![v4(10, 0, 0, 1)]),
        ])
    }

    fn inventory_of(entries: &[(&str, &str)]) -> Inventory {
        let data = entries.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect();
        futures::executor::block_on(build_inventory(&data, &resolver()))
    }

    fn error(key: &str, reason: ProblemReason) -> EntryProblem {
        EntryProblem { key: key.to_owned(), severity: Severity::Error, reason }
    }

    /// The single problem of a one-entry inventory.
    fn only_problem(key: &str, value: &str) -> EntryProblem {
        let inventory = inventory_of(&[(key, value)]);
        assert!(inventory.instances.is_empty(), "{inventory:?}");
        assert_eq!(inventory.problems.len(), 1, "{inventory:?}");
        inventory.problems[0].clone()
    }

    #[test]
    fn valid_ip_and_dns_entries_become_instances() {
        let inventory = inventory_of(&[("10.1.2.3", "username=Administrator"), ("win2.example", " username=capi \n")]);
        assert_eq!(
            inventory.instances,
            vec![
                DesiredInstance {
                    key: "10.1.2.3".into(),
                    address: Address::Ipv4 { ip: Ipv4Addr::new(10, 1, 2, 3) },
                    resolved_ipv4: Ipv4Addr::new(10, 1, 2, 3),
                    username: "Administrator".into(),
                },
                DesiredInstance {
                    key: "win2.example".into(),
                    address: Address::Dns { name: "win2.example".into() },
                    resolved_ipv4: Ipv4Addr::new(10, 0, 0, 2),
                    username: "capi".into(),
                },
            ]
        );
        assert!(inventory.problems.is_empty());
        assert!(!inventory.has_errors());
    }

    #[test]
    fn bad_addresses() {
        assert_eq!(
            only_problem("10.1.2", "username=a"),
            error(
                "10.1.2",
                ProblemReason::Address(AddressError::Invalid {
                    reason: DnsNameError::NumericTopLabel { label: "2".into() }
                })
            )
        );
        assert_eq!(
            only_problem("win_1", "username=a").to_string(),
            "win_1: not an IPv4 address and not a valid DNS name: label \"win_1\" contains '_'; only letters, \
             digits and hyphens are allowed"
        );
        assert_eq!(
            only_problem("fd00::1", "username=a").to_string(),
            "fd00::1: IPv6 addresses are not supported; use the host's IPv4 address or a DNS name that resolves to it"
        );
    }

    #[test]
    fn resolution_failures() {
        assert_eq!(
            only_problem("nowhere.example", "username=a").to_string(),
            "nowhere.example: DNS name \"nowhere.example\" does not resolve: no such host"
        );
        assert_eq!(
            only_problem("empty.example", "username=a").to_string(),
            "empty.example: DNS name \"empty.example\" does not resolve: no addresses"
        );
        assert_eq!(
            only_problem("v6only.example", "username=a"),
            error(
                "v6only.example",
                ProblemReason::OnlyIpv6 {
                    name: "v6only.example".into(),
                    addresses: vec!["fd00::3".parse().unwrap(), "fd00::4".parse().unwrap()]
                }
            )
        );
        assert_eq!(
            only_problem("v6only.example", "username=a").to_string(),
            "v6only.example: DNS name \"v6only.example\" resolves only to IPv6 addresses (fd00::3, fd00::4); IPv6 \
             is not supported"
        );
    }

    #[test]
    fn bad_values() {
        let cases = [
            ("", ValueError::MissingUsername),
            ("username=", ValueError::EmptyUsername),
            ("username", ValueError::FieldWithoutEquals),
            ("username=a,foo=b", ValueError::UnknownField { field: "foo".into() }),
            ("password=x", ValueError::UnknownField { field: "password".into() }),
            (
                "username=Administrator.",
                ValueError::InvalidUsername {
                    username: "Administrator.".into(),
                    reason: UsernameError::TrailingPeriod,
                },
            ),
            (
                "username=averyveryverylongusername",
                ValueError::InvalidUsername {
                    username: "averyveryverylongusername".into(),
                    reason: UsernameError::TooLong { length: 25 },
                },
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(only_problem("10.1.2.3", value), error("10.1.2.3", ProblemReason::Value(expected)), "{value:?}");
        }
    }

    #[test]
    fn a_bad_value_is_reported_without_resolving_the_name() {
        assert_eq!(
            only_problem("nowhere.example", "username="),
            error("nowhere.example", ProblemReason::Value(ValueError::EmptyUsername))
        );
    }

    #[test]
    fn ip_and_dns_name_of_one_host_keep_the_first_key_and_warn_on_the_other() {
        let inventory = inventory_of(&[
            ("win1.example", "username=Administrator"),
            ("10.0.0.1", "username=Administrator"),
            ("alias.example", "username=other"),
        ]);
        let kept: Vec<&str> = inventory.instances.iter().map(|instance| instance.key.as_str()).collect();
        assert_eq!(kept, ["10.0.0.1"]);
        let warning = |key: &str| EntryProblem {
            key: key.to_owned(),
            severity: Severity::Warning,
            reason: ProblemReason::DuplicateHost { kept_key: "10.0.0.1".into(), ipv4: Ipv4Addr::new(10, 0, 0, 1) },
        };
        assert_eq!(inventory.problems, vec![warning("alias.example"), warning("win1.example")]);
        assert!(!inventory.has_errors());
        assert_eq!(
            inventory.problems[1].to_string(),
            "win1.example: same host as \"10.0.0.1\" (both reach 10.0.0.1); only \"10.0.0.1\" is used"
        );
    }

    #[test]
    fn two_names_of_one_host_keep_the_one_sorting_first() {
        let inventory = inventory_of(&[("win1.example", "username=a"), ("alias.example", "username=a")]);
        assert_eq!(inventory.instances.len(), 1);
        assert_eq!(inventory.instances[0].key, "alias.example");
        assert_eq!(inventory.problems.len(), 1);
        assert_eq!(inventory.problems[0].key, "win1.example");
    }

    #[test]
    fn an_invalid_entry_never_takes_a_hosts_place() {
        let inventory = inventory_of(&[("10.0.0.1", "username="), ("win1.example", "username=a")]);
        assert_eq!(inventory.instances.len(), 1);
        assert_eq!(inventory.instances[0].key, "win1.example");
        assert_eq!(inventory.problems, vec![error("10.0.0.1", ProblemReason::Value(ValueError::EmptyUsername))]);
    }

    #[test]
    fn valid_entries_survive_every_kind_of_bad_neighbour() {
        let inventory = inventory_of(&[
            ("10.1.2.3", "username=Administrator"),
            ("10.1.2", "username=a"),
            ("fd00::1", "username=a"),
            ("nowhere.example", "username=a"),
            ("v6only.example", "username=a"),
            ("10.1.2.4", "username=a,foo=b"),
            ("win1.example", "username=capi"),
        ]);
        let kept: Vec<&str> = inventory.instances.iter().map(|instance| instance.key.as_str()).collect();
        assert_eq!(kept, ["10.1.2.3", "win1.example"]);
        let refused: Vec<&str> = inventory.problems.iter().map(|problem| problem.key.as_str()).collect();
        assert_eq!(refused, ["10.1.2", "10.1.2.4", "fd00::1", "nowhere.example", "v6only.example"]);
        assert!(inventory.has_errors());
    }

    #[test]
    fn json_form_is_tagged_and_stable() {
        let inventory = inventory_of(&[("10.1.2.3", "username=a"), ("10.1.2.4", "password=x")]);
        let json = serde_json::to_value(&inventory).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "instances": [{
                    "key": "10.1.2.3",
                    "address": {"kind": "ipv4", "ip": "10.1.2.3"},
                    "resolvedIpv4": "10.1.2.3",
                    "username": "a"
                }],
                "problems": [{
                    "key": "10.1.2.4",
                    "severity": "error",
                    "reason": {"kind": "value", "detail": {"kind": "unknown_field", "field": "password"}}
                }]
            })
        );
        let back: Inventory = serde_json::from_value(json).unwrap();
        assert_eq!(back, inventory);
    }
}
