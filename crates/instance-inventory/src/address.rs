//! The key of a `windows-instances` entry: an IPv4 address or an RFC 1123 DNS name. IPv6 is refused, and so is
//! anything that is neither (including dotted numbers that are not a valid IPv4 address, such as `10.1.2` or
//! `256.1.1.1`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use serde::{Deserialize, Serialize};

/// Longest DNS name accepted, in bytes (RFC 1035 §2.3.4, without the trailing dot).
const MAX_DNS_NAME_LEN: usize = 253;
/// Longest DNS label accepted, in bytes.
const MAX_DNS_LABEL_LEN: usize = 63;

/// Where a host is reached, as the admin wrote it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Address {
    /// A literal IPv4 address.
    Ipv4 {
        /// The address.
        ip: Ipv4Addr,
    },
    /// A DNS name, resolved to an IPv4 address.
    Dns {
        /// The name, as written in the key.
        name: String,
    },
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Ipv4 { ip } => write!(f, "{ip}"),
            Address::Dns { name } => f.write_str(name),
        }
    }
}

/// Why a key is not a usable address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AddressError {
    /// The key is an IPv6 address.
    #[error("IPv6 addresses are not supported; use the host's IPv4 address or a DNS name that resolves to it")]
    Ipv6,
    /// The key is neither an IPv4 address nor a valid DNS name.
    #[error("not an IPv4 address and not a valid DNS name: {reason}")]
    Invalid {
        /// What is wrong with it as a DNS name.
        reason: DnsNameError,
    },
}

/// Why a string is not a valid RFC 1123 DNS name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DnsNameError {
    /// The name is empty.
    #[error("the name is empty")]
    Empty,
    /// The name is longer than 253 bytes.
    #[error("the name is {length} bytes long; at most {MAX_DNS_NAME_LEN} are allowed")]
    TooLong {
        /// Its length in bytes.
        length: usize,
    },
    /// Two dots in a row, or a leading or trailing dot.
    #[error("it has an empty label (a leading, trailing or doubled dot)")]
    EmptyLabel,
    /// A label is longer than 63 bytes.
    #[error("label {label:?} is {length} bytes long; at most {MAX_DNS_LABEL_LEN} are allowed")]
    LabelTooLong {
        /// The label.
        label: String,
        /// Its length in bytes.
        length: usize,
    },
    /// A character other than a letter, a digit or a hyphen.
    #[error("label {label:?} contains {character:?}; only letters, digits and hyphens are allowed")]
    BadCharacter {
        /// The label.
        label: String,
        /// The first offending character.
        character: char,
    },
    /// A label starts or ends with a hyphen.
    #[error("label {label:?} starts or ends with a hyphen")]
    HyphenAtEdge {
        /// The label.
        label: String,
    },
    /// The last label is all digits, so the name looks like a malformed IPv4 address.
    #[error("its last label {label:?} is all digits (a malformed IPv4 address?)")]
    NumericTopLabel {
        /// The last label.
        label: String,
    },
}

/// Parses a `windows-instances` key into an [`Address`].
///
/// ```
/// use std::net::Ipv4Addr;
/// use wmco_instance_inventory::{Address, AddressError, parse_address};
///
/// assert_eq!(parse_address("10.1.2.3"), Ok(Address::Ipv4 { ip: Ipv4Addr::new(10, 1, 2, 3) }));
/// assert_eq!(parse_address("win1.example.com"), Ok(Address::Dns { name: "win1.example.com".into() }));
/// assert_eq!(parse_address("fd00::1"), Err(AddressError::Ipv6));
/// ```
pub fn parse_address(key: &str) -> Result<Address, AddressError> {
    match key.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => return Ok(Address::Ipv4 { ip }),
        Ok(IpAddr::V6(_)) => return Err(AddressError::Ipv6),
        Err(_) => {}
    }
    if looks_like_ipv6(key) {
        return Err(AddressError::Ipv6);
    }
    validate_dns_name(key).map_err(|reason| AddressError::Invalid { reason })?;
    Ok(Address::Dns { name: key.to_owned() })
}

/// Bracketed or zone-qualified IPv6 literals (`[fd00::1]`, `fe80::1%eth0`) that `IpAddr` does not parse.
fn looks_like_ipv6(key: &str) -> bool {
    let unbracketed = key.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')).unwrap_or(key);
    let without_zone = unbracketed.split_once('%').map_or(unbracketed, |(address, _zone)| address);
    without_zone.parse::<std::net::Ipv6Addr>().is_ok()
}

/// Checks `name` against RFC 1123 host-name syntax (letters, digits, hyphens; labels of 1–63 bytes not starting or
/// ending with a hyphen; at most 253 bytes) and refuses an all-digit last label.
pub(crate) fn validate_dns_name(name: &str) -> Result<(), DnsNameError> {
    if name.is_empty() {
        return Err(DnsNameError::Empty);
    }
    if name.len() > MAX_DNS_NAME_LEN {
        return Err(DnsNameError::TooLong { length: name.len() });
    }
    let labels: Vec<&str> = name.split('.').collect();
    for label in &labels {
        validate_label(label)?;
    }
    match labels.last() {
        Some(last) if last.bytes().all(|byte| byte.is_ascii_digit()) => {
            Err(DnsNameError::NumericTopLabel { label: (*last).to_owned() })
        }
        _ => Ok(()),
    }
}

fn validate_label(label: &str) -> Result<(), DnsNameError> {
    if label.is_empty() {
        return Err(DnsNameError::EmptyLabel);
    }
    if label.len() > MAX_DNS_LABEL_LEN {
        return Err(DnsNameError::LabelTooLong { label: label.to_owned(), length: label.len() });
    }
    if let Some(character) = label.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '-')) {
        return Err(DnsNameError::BadCharacter { label: label.to_owned(), character });
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Err(DnsNameError::HyphenAtEdge { label: label.to_owned() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(key: &str) -> DnsNameError {
        match parse_address(key) {
            Err(AddressError::Invalid { reason }) => reason,
            other => panic!("{key}: expected an invalid-name error, got {other:?}"),
        }
    }

    #[test]
    fn ipv4_and_dns_names_are_accepted() {
        assert_eq!(parse_address("192.168.0.10"), Ok(Address::Ipv4 { ip: Ipv4Addr::new(192, 168, 0, 10) }));
        assert_eq!(parse_address("localhost"), Ok(Address::Dns { name: "localhost".into() }));
        assert_eq!(parse_address("Win-1.Corp.example"), Ok(Address::Dns { name: "Win-1.Corp.example".into() }));
        assert_eq!(parse_address("1host.example"), Ok(Address::Dns { name: "1host.example".into() }));
    }

    #[test]
    fn ipv6_in_every_spelling_is_refused_as_ipv6() {
        for key in ["fd00::1", "::1", "[fd00::1]", "fe80::1%eth0", "::ffff:10.1.2.3"] {
            assert_eq!(parse_address(key), Err(AddressError::Ipv6), "{key}");
        }
    }

    #[test]
    fn malformed_dotted_numbers_are_not_names() {
        assert_eq!(invalid("10.1.2"), DnsNameError::NumericTopLabel { label: "2".into() });
        assert_eq!(invalid("256.1.1.1"), DnsNameError::NumericTopLabel { label: "1".into() });
        assert_eq!(invalid("010.1.2.3"), DnsNameError::NumericTopLabel { label: "3".into() });
    }

    #[test]
    fn every_name_rule_is_enforced() {
        assert_eq!(invalid(""), DnsNameError::Empty);
        assert_eq!(invalid("a..b"), DnsNameError::EmptyLabel);
        assert_eq!(invalid("host."), DnsNameError::EmptyLabel);
        assert_eq!(invalid(".host"), DnsNameError::EmptyLabel);
        assert_eq!(invalid("win_1"), DnsNameError::BadCharacter { label: "win_1".into(), character: '_' });
        assert_eq!(invalid("w i"), DnsNameError::BadCharacter { label: "w i".into(), character: ' ' });
        assert_eq!(invalid("-win.example"), DnsNameError::HyphenAtEdge { label: "-win".into() });
        assert_eq!(invalid("win.example-"), DnsNameError::HyphenAtEdge { label: "example-".into() });
        let long_label = "a".repeat(64);
        assert_eq!(invalid(&long_label), DnsNameError::LabelTooLong { label: long_label.clone(), length: 64 });
        let long_name = vec!["abcdefghi"; 26].join(".");
        assert_eq!(invalid(&long_name), DnsNameError::TooLong { length: 259 });
    }

    #[test]
    fn limits_are_inclusive() {
        assert!(parse_address(&"a".repeat(63)).is_ok());
        let name = format!("{}.{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61));
        assert_eq!(name.len(), 253);
        assert!(parse_address(&name).is_ok());
    }

    #[test]
    fn errors_read_as_sentences() {
        assert_eq!(
            parse_address("win_1").unwrap_err().to_string(),
            "not an IPv4 address and not a valid DNS name: label \"win_1\" contains '_'; only letters, digits and \
             hyphens are allowed"
        );
    }
}
