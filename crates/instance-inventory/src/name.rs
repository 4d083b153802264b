//! [`instance_name`]: the Kubernetes object name of a key's `WindowsInstance`.
//!
//! A canonical IPv4 key `10.1.2.3` becomes `byoh-10-1-2-3`; a lower-case DNS name `win1.example` becomes
//! `byoh-win1.example` when that fits in 63 characters. Any other key (upper case, too long, not a valid name, or a
//! DNS name spelled like a converted IPv4 address such as `10-1-2-3`) is sanitized, truncated and suffixed with the
//! first 10 hex digits of the key's SHA-256, so two different keys never share a name (short of a hash collision).
//! Every result is a valid RFC 1123 subdomain of at most 63 characters, so it also fits a label value.

use sha2::{Digest, Sha256};

use crate::address::validate_dns_name;

/// Prefix of every instance name.
const PREFIX: &str = "byoh-";
/// Longest instance name produced (a label value's limit, stricter than a subdomain's 253).
const MAX_NAME_LEN: usize = 63;
/// Hex digits of the key's SHA-256 appended to lossy names.
const HASH_HEX_DIGITS: usize = 10;

/// The `WindowsInstance` name for a `windows-instances` key: stable, lower-case, unique per key.
///
/// ```
/// use wmco_instance_inventory::instance_name;
///
/// assert_eq!(instance_name("10.1.2.3"), "byoh-10-1-2-3");
/// assert_eq!(instance_name("win1.example.com"), "byoh-win1.example.com");
/// assert_eq!(instance_name("WIN1.example.com"), "byoh-win1-example-com-dbf87fa6fd");
/// ```
pub fn instance_name(key: &str) -> String {
    if let Some(ip_form) = canonical_ipv4_form(key) {
        return format!("{PREFIX}{ip_form}");
    }
    let lossless = format!("{PREFIX}{key}");
    if is_lossless_dns_name(key) && lossless.len() <= MAX_NAME_LEN {
        return lossless;
    }
    hashed_name(key)
}

/// `10-1-2-3` for the key `10.1.2.3`, only when the key is an IPv4 address in canonical form.
fn canonical_ipv4_form(key: &str) -> Option<String> {
    let ip: std::net::Ipv4Addr = key.parse().ok()?;
    (ip.to_string() == key).then(|| key.replace('.', "-"))
}

/// A valid, lower-case DNS name that cannot be mistaken for a converted IPv4 address.
fn is_lossless_dns_name(key: &str) -> bool {
    validate_dns_name(key).is_ok() && !key.bytes().any(|byte| byte.is_ascii_uppercase()) && !looks_like_ip_form(key)
}

/// Four all-digit groups joined by hyphens, as [`canonical_ipv4_form`] produces.
fn looks_like_ip_form(key: &str) -> bool {
    let groups: Vec<&str> = key.split('-').collect();
    groups.len() == 4 && groups.iter().all(|group| !group.is_empty() && group.bytes().all(|b| b.is_ascii_digit()))
}

/// `byoh-<sanitized>-<hash>`: lower-case letters and digits kept, runs of anything else become one hyphen.
fn hashed_name(key: &str) -> String {
    let hash = hex::encode(Sha256::digest(key.as_bytes()));
    let hash_prefix = &hash[..HASH_HEX_DIGITS];
    let mut sanitized = String::new();
    for character in key.chars().map(|c| c.to_ascii_lowercase()) {
        if character.is_ascii_lowercase() || character.is_ascii_digit() {
            sanitized.push(character);
        } else if !sanitized.is_empty() && !sanitized.ends_with('-') {
            sanitized.push('-');
        }
    }
    let room = MAX_NAME_LEN - PREFIX.len() - HASH_HEX_DIGITS - 1;
    sanitized.truncate(room);
    let sanitized = sanitized.trim_end_matches('-');
    if sanitized.is_empty() { format!("{PREFIX}{hash_prefix}") } else { format!("{PREFIX}{sanitized}-{hash_prefix}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kubernetes' RFC 1123 subdomain rule.
    fn is_rfc1123_subdomain(name: &str) -> bool {
        name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            })
    }

    #[test]
    fn ipv4_and_lower_case_names_are_readable() {
        assert_eq!(instance_name("10.1.2.3"), "byoh-10-1-2-3");
        assert_eq!(instance_name("localhost"), "byoh-localhost");
        assert_eq!(instance_name("win-1.corp.example"), "byoh-win-1.corp.example");
    }

    #[test]
    fn a_name_spelled_like_an_ip_form_does_not_take_the_ips_name() {
        let name = instance_name("10-1-2-3");
        assert_ne!(name, instance_name("10.1.2.3"));
        assert!(name.starts_with("byoh-10-1-2-3-") && name.len() == "byoh-10-1-2-3-".len() + 10, "{name}");
    }

    #[test]
    fn case_variants_get_distinct_hashed_names() {
        let upper = instance_name("WIN1.example.com");
        assert_eq!(upper, "byoh-win1-example-com-dbf87fa6fd");
        assert_ne!(upper, instance_name("Win1.example.com"));
        assert_ne!(upper, instance_name("win1.example.com"));
    }

    #[test]
    fn long_and_garbage_keys_are_valid_bounded_names() {
        let long = format!("{}.example.com", "a".repeat(60));
        for key in [long.as_str(), "", "___", "fd00::1", "héllo wörld", "-a-", "A.B..C"] {
            let name = instance_name(key);
            assert!(name.len() <= MAX_NAME_LEN && is_rfc1123_subdomain(&name), "{key:?} -> {name:?}");
        }
        assert_eq!(instance_name(&long).len(), MAX_NAME_LEN);
    }

    #[test]
    fn non_canonical_ipv4_spellings_are_hashed() {
        assert!(canonical_ipv4_form("10.1.2.3").is_some());
        assert_ne!(instance_name("10.1.2.03"), instance_name("10.1.2.3"));
    }
}
