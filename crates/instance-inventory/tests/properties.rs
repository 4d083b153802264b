//! Properties of `build_inventory` and `instance_name` over arbitrary ConfigMap data: no panic, every key accounted
//! for exactly once, names unique and valid.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use wmco_instance_inventory::{ProblemReason, Severity, StaticResolver, build_inventory, instance_name};

fn resolver() -> StaticResolver {
    StaticResolver::new([
        ("a.example", vec![IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))]),
        ("b.example", vec![IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2))]),
        ("c.example", vec![IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1))]),
    ])
}

/// Keys mixing plausible addresses (some colliding with the resolver's hosts) and arbitrary text.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..3, 0u8..3).prop_map(|(c, d)| format!("10.0.{c}.{d}")),
        prop::sample::select(vec!["a.example", "b.example", "c.example", "A.example", "d.example", "fd00::1"])
            .prop_map(str::to_owned),
        "[a-zA-Z0-9.:_-]{0,20}",
        any::<String>(),
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ \n]{0,2}username=[A-Za-z .]{0,24}[ \n]{0,2}",
        "(username|password|foo)=[a-z]{0,5}(,[a-z]{0,8}=[a-z]{0,3}){0,2}",
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn every_key_is_accounted_for_exactly_once(data in prop::collection::btree_map(key(), value(), 0..12)) {
        let inventory = futures::executor::block_on(build_inventory(&data, &resolver()));
        let mut seen = BTreeSet::new();
        for instance in &inventory.instances {
            prop_assert!(seen.insert(instance.key.clone()), "{} twice", instance.key);
        }
        let kept: BTreeMap<&str, Ipv4Addr> =
            inventory.instances.iter().map(|instance| (instance.key.as_str(), instance.resolved_ipv4)).collect();
        for problem in &inventory.problems {
            prop_assert!(seen.insert(problem.key.clone()), "{} twice", problem.key);
            match (&problem.severity, &problem.reason) {
                (Severity::Warning, ProblemReason::DuplicateHost { kept_key, ipv4 }) => {
                    prop_assert_eq!(kept.get(kept_key.as_str()), Some(ipv4));
                    prop_assert!(kept_key < &problem.key);
                }
                (Severity::Warning, reason) => prop_assert!(false, "warning for {reason:?}"),
                (Severity::Error, ProblemReason::DuplicateHost { .. }) => prop_assert!(false, "duplicate as error"),
                (Severity::Error, _) => {}
            }
        }
        prop_assert_eq!(seen, data.keys().cloned().collect::<BTreeSet<_>>());
        let ipv4s: BTreeSet<Ipv4Addr> = kept.values().copied().collect();
        prop_assert_eq!(ipv4s.len(), inventory.instances.len(), "two instances reach one host");
        let keys: Vec<&str> = inventory.instances.iter().map(|instance| instance.key.as_str()).collect();
        prop_assert!(keys.windows(2).all(|pair| pair[0] < pair[1]), "instances not sorted: {keys:?}");
    }

    #[test]
    fn instance_names_are_unique_valid_subdomains(keys in prop::collection::btree_set(key(), 0..40)) {
        let mut names = BTreeSet::new();
        for key in &keys {
            let name = instance_name(key);
            prop_assert!(name.len() <= 63, "{name}");
            prop_assert!(name.split('.').all(|label| !label.is_empty()
                && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-') && !label.ends_with('-')), "{key:?} -> {name:?}");
            prop_assert_eq!(instance_name(key), name.clone(), "not stable");
            prop_assert!(names.insert(name.clone()), "{key:?} -> {name:?} collides");
        }
    }
}
