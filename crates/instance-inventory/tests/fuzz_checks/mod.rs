//! What the `instance_entry` fuzz target checks on each input: `fuzz/fuzz_targets/instance_entry.rs` includes this
//! file, and `tests/fuzz_replay.rs` runs the committed corpus through it, so both check the same thing.
//!
//! An input is one `windows-instances` entry: its first line is the key, the rest is the value. The key goes
//! through [`parse_address`] and [`instance_name`], the value through [`parse_value`], and the entry through
//! [`build_inventory`] with a resolver that knows the key. Beyond "no panic": a parsed address is the key, every
//! instance name is a valid bounded object name, a user name passes the Windows rules and reads back, and the
//! entry becomes an instance exactly when its key and its value are both valid.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use wmco_instance_inventory::{
    Address, StaticResolver, build_inventory, instance_name, parse_address, parse_value, validate_username,
};

/// The IPv4 address the test resolver gives any DNS key.
const RESOLVED: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// Checks one fuzz input (see the module documentation); panics when a property fails. Returns whether the entry
/// became an instance.
pub fn instance_entry(data: &[u8]) -> bool {
    // ConfigMap data is UTF-8: other bytes never reach the parser.
    let Ok(text) = std::str::from_utf8(data) else { return false };
    let (key, value) = text.split_once('\n').unwrap_or((text, ""));

    let address = parse_address(key);
    match &address {
        Ok(Address::Ipv4 { ip }) => assert_eq!(key.parse::<Ipv4Addr>().ok(), Some(*ip), "{key:?}"),
        Ok(Address::Dns { name }) => assert_eq!(name, key),
        Err(error) => assert!(!error.to_string().is_empty()),
    }
    let name = instance_name(key);
    assert!(is_instance_name(&name), "{key:?} -> {name:?}");
    assert_eq!(instance_name(key), name, "instance_name is not stable for {key:?}");

    let username = parse_value(value);
    match &username {
        Ok(username) => {
            assert!(!username.is_empty() && username.trim() == username, "{username:?}");
            assert_eq!(validate_username(username), Ok(()));
            assert_eq!(parse_value(&format!("username={username}")).as_ref(), Ok(username));
        }
        Err(error) => assert!(!error.to_string().is_empty()),
    }

    let resolver = StaticResolver::new([(key, vec![IpAddr::V4(RESOLVED)])]);
    let entries = BTreeMap::from([(key.to_owned(), value.to_owned())]);
    let inventory = futures::executor::block_on(build_inventory(&entries, &resolver));
    assert_eq!(inventory.instances.len() + inventory.problems.len(), 1, "{inventory:?}");
    assert_eq!(inventory.instances.len() == 1, address.is_ok() && username.is_ok(), "{inventory:?}");
    for instance in &inventory.instances {
        assert_eq!(instance.instance_name(), name);
        assert_eq!(Ok(&instance.username), username.as_ref());
    }
    for problem in &inventory.problems {
        assert!(problem.to_string().starts_with(key));
    }
    inventory.instances.len() == 1
}

/// A `WindowsInstance` name: `byoh-` prefixed, at most 63 characters, an RFC 1123 subdomain.
fn is_instance_name(name: &str) -> bool {
    name.starts_with("byoh-")
        && name.len() <= 63
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}
