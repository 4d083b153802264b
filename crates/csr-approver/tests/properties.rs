//! Property tests with independent oracles:
//! - a byte flipped anywhere in the DER (signed part, algorithm, signature) or in the PEM text of a valid request
//!   is never approved;
//! - a re-signed serving request with random subject, SAN, extension and key edits gets exactly the verdict that
//!   the rules give for those edits, computed here without the crate's code.

#![allow(clippy::unwrap_used, reason = "test setup: a failure must panic")]

mod common;

use std::sync::OnceLock;

use base64::Engine as _;
use common::*;
use proptest::prelude::*;
use rcgen::{CustomExtension, DnType, KeyPair, KeyUsagePurpose};
use wmco_csr_approver::{RuleId, Verdict};

/// A valid, approvable bootstrap request for win-1 (DER), made once.
fn valid_der() -> &'static [u8] {
    static DER: OnceLock<Vec<u8>> = OnceLock::new();
    DER.get_or_init(|| {
        let der = params("system:node:win-1").serialize_request(&p256()).unwrap().der().to_vec();
        assert_eq!(Csr::bootstrap(pem_text(&der)).decide_in(&world()), Verdict::Approve);
        der
    })
}

fn pem_text(der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body.as_bytes().chunks(64).map(|line| std::str::from_utf8(line).unwrap()).collect();
    format!("-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n", lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn flipped_der_byte_is_never_approved(position in any::<prop::sample::Index>(), mask in 1u8..=255) {
        let mut der = valid_der().to_vec();
        let index = position.index(der.len());
        der[index] ^= mask;
        let verdict = Csr::bootstrap(pem_text(&der)).decide_in(&world());
        prop_assert_ne!(verdict, Verdict::Approve, "byte {} ^ {:#04x} approved", index, mask);
    }

    #[test]
    fn flipped_pem_character_is_never_approved(position in any::<prop::sample::Index>(), replacement in 0x21u8..0x7f) {
        let mut pem = pem_text(valid_der()).into_bytes();
        let index = position.index(pem.len());
        prop_assume!(pem[index] != replacement && !pem[index].is_ascii_whitespace());
        pem[index] = replacement;
        let verdict = Csr::bootstrap(pem).decide_in(&world());
        prop_assert_ne!(verdict, Verdict::Approve);
    }
}

// ---- re-signed edits of a serving request by node win-2 -------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CommonName {
    Own,
    OtherManaged,
    Unmanaged,
    NoPrefix,
}

impl CommonName {
    fn text(self) -> &'static str {
        match self {
            Self::Own => "system:node:win-2",
            Self::OtherManaged => "system:node:win-1",
            Self::Unmanaged => "system:node:win-99",
            Self::NoPrefix => "win-2",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Organization {
    Nodes,
    Masters,
    Missing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    P256,
    P384,
    Ed25519,
}

/// A SAN value and what the test knows about it (independently of the crate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct San {
    text: &'static str,
    /// Loopback, in the service network, or not lowercase.
    malformed: bool,
    /// In the operator's record of win-2 (hostname, FQDN, ConfigMap key, resolved address, node IP).
    in_win2_record: bool,
    /// In the record of win-1.
    in_win1_record: bool,
    /// In Node win-2's status.addresses.
    on_win2_node: bool,
}

const SANS: [San; 9] = [
    San { text: "win-2", malformed: false, in_win2_record: true, in_win1_record: false, on_win2_node: true },
    San {
        text: "win-2.corp.example",
        malformed: false,
        in_win2_record: true,
        in_win1_record: false,
        on_win2_node: false,
    },
    San { text: "203.0.113.12", malformed: false, in_win2_record: true, in_win1_record: false, on_win2_node: true },
    San { text: "10.0.0.11", malformed: false, in_win2_record: true, in_win1_record: true, on_win2_node: false },
    San { text: "win-1", malformed: false, in_win2_record: false, in_win1_record: true, on_win2_node: false },
    San { text: "evil.example", malformed: false, in_win2_record: false, in_win1_record: false, on_win2_node: false },
    San { text: "198.51.100.7", malformed: false, in_win2_record: false, in_win1_record: false, on_win2_node: false },
    San { text: "127.0.0.1", malformed: true, in_win2_record: false, in_win1_record: false, on_win2_node: false },
    San { text: "172.30.0.1", malformed: true, in_win2_record: false, in_win1_record: false, on_win2_node: false },
];

#[derive(Debug, Clone)]
struct Edit {
    common_name: CommonName,
    organization: Organization,
    extra_ou: bool,
    sans: Vec<San>,
    key_usage_extension: bool,
    unknown_extension: bool,
    key: Key,
}

/// SANs listed on Node win-2 are drawn more often, so approvals are common among the cases.
fn san_strategy() -> impl Strategy<Value = San> {
    let weighted: Vec<(u32, Just<San>)> =
        SANS.iter().map(|san| (if san.on_win2_node { 6 } else { 1 }, Just(*san))).collect();
    prop::strategy::Union::new_weighted(weighted)
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    (
        prop_oneof![
            4 => Just(CommonName::Own),
            1 => Just(CommonName::OtherManaged),
            1 => Just(CommonName::Unmanaged),
            1 => Just(CommonName::NoPrefix)
        ],
        prop_oneof![6 => Just(Organization::Nodes), 1 => Just(Organization::Masters), 1 => Just(Organization::Missing)],
        prop::bool::weighted(0.1),
        prop::collection::vec(san_strategy(), 0..=12),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        prop_oneof![4 => Just(Key::P256), 2 => Just(Key::P384), 1 => Just(Key::Ed25519)],
    )
        .prop_map(|(common_name, organization, extra_ou, sans, key_usage_extension, unknown_extension, key)| {
            Edit { common_name, organization, extra_ou, sans, key_usage_extension, unknown_extension, key }
        })
}

fn request_pem(edit: &Edit) -> String {
    let mut params = params(edit.common_name.text());
    match edit.organization {
        Organization::Nodes => {}
        Organization::Masters => params.distinguished_name.push(DnType::OrganizationName, "system:masters"),
        Organization::Missing => {
            params.distinguished_name.remove(DnType::OrganizationName);
        }
    }
    if edit.extra_ou {
        params.distinguished_name.push(DnType::OrganizationalUnitName, "ops");
    }
    params.subject_alt_names = edit.sans.iter().map(|san| san_of(san.text)).collect();
    if edit.key_usage_extension {
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    }
    if edit.unknown_extension {
        params.custom_extensions =
            vec![CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 99999, 7], vec![0x05, 0x00])];
    }
    let algorithm = match edit.key {
        Key::P256 => &rcgen::PKCS_ECDSA_P256_SHA256,
        Key::P384 => &rcgen::PKCS_ECDSA_P384_SHA384,
        Key::Ed25519 => &rcgen::PKCS_ED25519,
    };
    pem_of(&params, &KeyPair::generate_for(algorithm).unwrap())
}

/// The oracle: the verdict kind and rule the rule set prescribes for a serving CSR filed by node win-2.
fn expected(edit: &Edit) -> (&'static str, Option<RuleId>) {
    let deny = |rule| ("deny", Some(rule));
    let ignore = |rule| ("ignore", Some(rule));
    match edit.common_name {
        CommonName::NoPrefix => return ignore(RuleId::A4),
        CommonName::Unmanaged => return ignore(RuleId::A5),
        CommonName::Own | CommonName::OtherManaged => {}
    }
    if edit.key == Key::Ed25519 {
        return deny(RuleId::B2);
    }
    if edit.extra_ou || edit.organization == Organization::Missing {
        return deny(RuleId::C1);
    }
    if edit.organization == Organization::Masters {
        return deny(RuleId::C2);
    }
    if edit.key_usage_extension || edit.unknown_extension {
        return deny(RuleId::D1);
    }
    if edit.sans.is_empty() || edit.sans.len() > 10 || edit.sans.iter().any(|san| san.malformed) {
        return deny(RuleId::D3);
    }
    let own = edit.common_name == CommonName::Own;
    if !edit.sans.iter().all(|san| if own { san.in_win2_record } else { san.in_win1_record }) {
        return deny(RuleId::D4);
    }
    if !own {
        return deny(RuleId::E3);
    }
    if !edit.sans.iter().all(|san| san.on_win2_node) {
        return ignore(RuleId::F3);
    }
    ("approve", None)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn resigned_edits_get_the_rule_verdict(edit in edit_strategy()) {
        let verdict = Csr::serving(request_pem(&edit), "win-2").decide_in(&world());
        prop_assert_eq!((verdict.kind(), verdict.rule()), expected(&edit), "{:?}", verdict);
    }
}
