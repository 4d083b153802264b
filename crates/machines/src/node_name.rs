//! Names: the Node name a Machine's `InternalDNS` address gives, RFC 1123 checks, and the name of the operator's
//! record for a Machine.

use sha2::{Digest, Sha256};
use wmco_cluster_client::Platform;

/// The longest GCP hostname kept whole (the Go operator's `gcp-get-hostname.ps1` rule).
const GCP_HOSTNAME_LIMIT: usize = 63;
/// The longest record name produced (a label value's limit, like the BYOH records' names).
const MAX_RECORD_NAME: usize = 63;
/// Hex digits of the Machine name's SHA-256 appended to cut names.
const HASH_HEX_DIGITS: usize = 10;
/// The prefix of every Machine record's name.
const RECORD_PREFIX: &str = "machine-";

/// The Node name an `InternalDNS` address gives on `platform`: lower-cased without a trailing dot; on GCP a name
/// longer than 63 characters becomes its first label (or, if that is longer too, its first 63 characters), the rule
/// the Go operator's `gcp-get-hostname.ps1` applies to the kubelet's hostname there.
pub(crate) fn node_name_from_internal_dns(internal_dns: &str, platform: &Platform) -> String {
    let name = internal_dns.trim().trim_end_matches('.').to_ascii_lowercase();
    if *platform != Platform::Gcp || name.len() <= GCP_HOSTNAME_LIMIT {
        return name;
    }
    match name.split_once('.') {
        Some((first, _)) if !first.is_empty() && first.len() <= GCP_HOSTNAME_LIMIT => first.to_owned(),
        _ => name.chars().take(GCP_HOSTNAME_LIMIT).collect(),
    }
}

/// An RFC 1123 label: 1-63 of `a-z`, `0-9`, `-`, not starting or ending with `-`.
pub(crate) fn is_dns_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 63
        && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// An RFC 1123 subdomain (what a Node name must be): at most 253 characters of dot-separated labels.
pub(crate) fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns_label)
}

/// The name of the operator's `WindowsInstance` record for the Machine `machine_name`: `machine-<name>` when that
/// is a valid name of at most 63 characters (so it also fits a label value, like the BYOH records' names), else
/// `machine-<sanitized, cut>-<10 hex digits of the Machine name's SHA-256>`, so distinct Machines keep distinct
/// records.
///
/// ```
/// assert_eq!(wmco_machines::record_name("winworker-x7k2p"), "machine-winworker-x7k2p");
/// let long = wmco_machines::record_name(&format!("cluster-{}-windows-worker-us-east-1a-x7k2p", "a".repeat(30)));
/// assert_eq!(long, "machine-cluster-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-windo-c5e7be0ebc");
/// ```
pub fn record_name(machine_name: &str) -> String {
    let plain = format!("{RECORD_PREFIX}{machine_name}");
    if plain.len() <= MAX_RECORD_NAME && is_dns_subdomain(machine_name) {
        return plain;
    }
    let digest = hex::encode(Sha256::digest(machine_name.as_bytes()));
    let suffix = &digest[..HASH_HEX_DIGITS];
    let mut sanitized = String::new();
    for character in machine_name.chars().map(|c| c.to_ascii_lowercase()) {
        if character.is_ascii_lowercase() || character.is_ascii_digit() {
            sanitized.push(character);
        } else if !sanitized.is_empty() && !sanitized.ends_with('-') {
            sanitized.push('-');
        }
    }
    sanitized.truncate(MAX_RECORD_NAME - RECORD_PREFIX.len() - HASH_HEX_DIGITS - 1);
    let sanitized = sanitized.trim_end_matches('-');
    if sanitized.is_empty() {
        format!("{RECORD_PREFIX}{suffix}")
    } else {
        format!("{RECORD_PREFIX}{sanitized}-{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_dns_is_lower_cased_and_loses_a_trailing_dot() {
        assert_eq!(
            node_name_from_internal_dns(" IP-10-0-1-5.EC2.Internal. ", &Platform::Aws),
            "ip-10-0-1-5.ec2.internal"
        );
        assert_eq!(node_name_from_internal_dns(&"x".repeat(70), &Platform::Azure), "x".repeat(70));
        assert_eq!(node_name_from_internal_dns(&"x".repeat(70), &Platform::Gcp), "x".repeat(63));
        let long = format!("{}.c.my-project.internal", "w".repeat(50));
        assert_eq!(node_name_from_internal_dns(&long, &Platform::Gcp), "w".repeat(50));
        assert_eq!(node_name_from_internal_dns(&long, &Platform::Aws), long);
        let fits = format!("{}.c.p.internal", "w".repeat(40));
        assert_eq!(node_name_from_internal_dns(&fits, &Platform::Gcp), fits);
    }

    #[test]
    fn subdomains_and_labels() {
        assert!(is_dns_subdomain("ip-10-0-1-5.ec2.internal"));
        assert!(is_dns_subdomain("winworker-abcde"));
        for bad in ["", "a..b", ".a", "a.", "A", "a_b", "-a", "a-"] {
            assert!(!is_dns_subdomain(bad), "{bad:?}");
        }
        assert!(!is_dns_subdomain(&format!("{}.{}", "a".repeat(63), "b".repeat(64))));
        let longest = ["a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61)].join(".");
        assert_eq!(longest.len(), 253);
        assert!(is_dns_subdomain(&longest));
        assert!(!is_dns_subdomain(&format!("{longest}e")));
    }

    #[test]
    fn long_or_odd_machine_names_get_cut_hashed_record_names() {
        let first = record_name(&format!("{}-b", "a".repeat(70)));
        let second = record_name(&format!("{}-c", "a".repeat(70)));
        assert_ne!(first, second);
        assert_eq!(first.len(), 63);
        assert!(is_dns_subdomain(&first), "{first}");
        assert_eq!(&first[..52], &format!("machine-{}", "a".repeat(44)));
        let odd = record_name("Win_Worker..7");
        assert_eq!(odd, "machine-win-worker-7-4187d8a3bb");
        assert_eq!(record_name("m"), "machine-m");
        assert_eq!(record_name("a.b"), "machine-a.b");
    }
}
