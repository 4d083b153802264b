//! One or more cases per rule A1–F4 on both sides (approved when the rule holds, the rule's verdict when it does
//! not), with requests made by rcgen in the test and openssl-made fixtures for what rcgen cannot produce.

#![allow(clippy::unwrap_used, reason = "test setup: a failure must panic")]

mod common;

use common::*;
use jiff::Timestamp;
use rcgen::{Attribute, CustomExtension, DnType, DnValue, IsCa, KeyUsagePurpose, SanType};
use wmco_csr_approver::{
    BootstrapApproval, CsrFacts, CsrState, CsrSummary, InstancePhase, ManagedInstance, RuleId, Verdict, WorldData,
};

// ---- baselines: every path approves --------------------------------------------------------------------------

#[test]
fn byoh_bootstrap_is_approved() {
    assert_approve(&Csr::bootstrap(client_pem("win-1")).decide_in(&world()));
}

#[test]
fn machine_bootstrap_is_approved() {
    assert_approve(&Csr::bootstrap(client_pem("winm-a.internal")).decide_in(&world()));
}

#[test]
fn byoh_renewal_is_approved() {
    assert_approve(&Csr::renewal(client_pem("win-2"), "win-2").decide_in(&world()));
}

#[test]
fn byoh_serving_is_approved() {
    let pem = serving_pem("win-2", &["win-2", "203.0.113.12"]);
    assert_approve(&Csr::serving(pem, "win-2").decide_in(&world()));
}

#[test]
fn machine_serving_is_approved() {
    let pem = serving_pem("winm-b.internal", &["winm-b.internal", "10.0.1.6"]);
    assert_approve(&Csr::serving(pem, "winm-b.internal").decide_in(&world()));
}

// ---- A: scope gate (IGNORE) ----------------------------------------------------------------------------------

#[test]
fn a1_approved_condition_is_ignored() {
    let mut csr = Csr::bootstrap(client_pem("win-1"));
    csr.conditions = vec!["Approved".into()];
    assert_ignore(&csr.decide_in(&world()), RuleId::A1);
}

#[test]
fn a1_attached_certificate_is_ignored() {
    let mut csr = Csr::bootstrap(client_pem("win-1"));
    csr.certificate = Some("LS0tLS1CRUdJTg==".into());
    assert_ignore(&csr.decide_in(&world()), RuleId::A1);
}

#[test]
fn a1_other_conditions_do_not_decide() {
    let mut csr = Csr::bootstrap(client_pem("win-1"));
    csr.conditions = vec!["SomethingElse".into()];
    assert_approve(&csr.decide_in(&world()));
}

#[test]
fn a2_other_signers_are_ignored() {
    for signer in ["kubernetes.io/kube-apiserver-client", "kubernetes.io/legacy-unknown", "example.com/x"] {
        let mut csr = Csr::bootstrap(client_pem("win-1"));
        csr.signer = signer.into();
        assert_ignore(&csr.decide_in(&world()), RuleId::A2);
    }
}

/// A request padded to 1 MiB (blank lines before a valid PEM block) is not decoded at all: the size is checked
/// before any parsing, so a flood of padded requests costs no parse.
#[test]
fn a3_an_oversized_request_is_ignored_before_parsing() {
    let padded = format!("{}{}", "\n".repeat(1 << 20), client_pem("win-1"));
    let verdict = Csr::bootstrap(padded).decide_in(&world());
    assert_ignore(&verdict, RuleId::A3);
    assert!(verdict.reason().contains("larger than the limit of 65536 bytes"), "{verdict:?}");
}

#[test]
fn a3_garbage_request_is_ignored() {
    assert_ignore(&Csr::bootstrap("hello").decide_in(&world()), RuleId::A3);
    let truncated = "-----BEGIN CERTIFICATE REQUEST-----\nMAMCAQA=\n-----END CERTIFICATE REQUEST-----\n";
    assert_ignore(&Csr::bootstrap(truncated).decide_in(&world()), RuleId::A3);
}

#[test]
fn a3_request_field_not_base64_is_ignored() {
    let mut manifest = Csr::bootstrap(client_pem("win-1")).manifest_json();
    manifest["spec"]["request"] = "***".into();
    let facts = CsrFacts::from_manifest(&serde_json::from_value(manifest).unwrap()).unwrap();
    let verdict = wmco_csr_approver::decide(&facts, &wmco_csr_approver::World::new(world()));
    assert_ignore(&verdict, RuleId::A3);
}

#[test]
fn a4_cn_without_node_prefix_is_ignored() {
    let pem = pem_of(&params("win-1"), &p256());
    assert_ignore(&Csr::bootstrap(pem).decide_in(&world()), RuleId::A4);
}

#[test]
fn a5_substring_and_case_variants_do_not_match() {
    for node in ["win-10", "win", "WIN-1", "win-1.corp.example"] {
        let verdict = Csr::bootstrap(client_pem(node)).decide_in(&world());
        assert_ignore(&verdict, RuleId::A5);
    }
}

#[test]
fn a5_two_instances_with_one_name_are_ambiguous() {
    let mut world = world();
    world.instances.push(ManagedInstance::Byoh(byoh("win-1", "203.0.113.99")));
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::A5);
}

/// The Node `win-2` of the reference world, claimed for the record with UID `owner`.
fn win_2_owned_by(world: &mut WorldData, owner: &str) {
    let node = world.nodes.iter_mut().find(|node| node.name == "win-2").unwrap();
    node.owner_uid = Some(owner.to_owned());
}

#[test]
fn a5_a_clone_expecting_the_name_of_a_node_its_owner_holds_leaves_the_owners_requests_to_the_owner() {
    let mut world = world();
    // A second record (a cloned host, another address) took the same host name.
    let mut clone = byoh("win-2", "203.0.113.99");
    clone.name = "win-2-clone".into();
    clone.uid = Some("uid-win-2-clone".into());
    world.instances.push(ManagedInstance::Byoh(clone));
    win_2_owned_by(&mut world, "uid-win-2");
    assert_approve(&Csr::renewal(client_pem("win-2"), "win-2").decide_in(&world));
    let pem = serving_pem("win-2", &["win-2", "203.0.113.12"]);
    assert_approve(&Csr::serving(pem, "win-2").decide_in(&world));
}

#[test]
fn f3_a_node_claimed_for_another_record_is_never_the_instances() {
    let mut world = world();
    win_2_owned_by(&mut world, "uid-of-another-record");
    let verdict = Csr::renewal(client_pem("win-2"), "win-2").decide_in(&world);
    assert_ignore(&verdict, RuleId::F3);
    assert!(verdict.reason().contains("belongs to another WindowsInstance (UID uid-of-another-record)"), "{verdict:?}");
}

/// A pending client request a Linux node made for itself.
fn pending(name: &str, minutes: i64) -> CsrSummary {
    CsrSummary {
        name: name.into(),
        signer_name: CLIENT_SIGNER.into(),
        username: "system:node:linux".into(),
        creation_timestamp: minutes_ago(minutes),
        state: CsrState::Pending,
        approved_at: None,
        node_names: vec!["linux".into()],
        public_key_sha256: None,
    }
}

/// A pending bootstrap request (made with the bootstrap credential) for a node that is no managed instance.
fn bootstrap_pending(name: &str, minutes: i64) -> CsrSummary {
    CsrSummary { username: BOOTSTRAPPER.into(), node_names: vec![format!("node-{name}")], ..pending(name, minutes) }
}

#[test]
fn a6_pending_flood_stops_approvals() {
    // 5 instances, 2 Windows Nodes: limit 105; 105 bootstrap requests + this one = 106.
    let mut world = world();
    world.csrs = (0..105).map(|i| bootstrap_pending(&format!("flood-{i}"), 1)).collect();
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::A6);
}

#[test]
fn a6_at_the_limit_and_old_or_decided_csrs_do_not_count() {
    let mut world = world();
    world.csrs = (0..104).map(|i| bootstrap_pending(&format!("flood-{i}"), 1)).collect();
    world.csrs.extend((0..50).map(|i| bootstrap_pending(&format!("old-{i}"), 61)));
    world.csrs.extend(
        (0..50).map(|i| CsrSummary { state: CsrState::Approved, ..bootstrap_pending(&format!("done-{i}"), 1) }),
    );
    assert_approve(&Csr::bootstrap(client_pem("win-1")).decide_in(&world));
}

#[test]
fn a6_listed_self_is_counted_once() {
    let mut world = world();
    world.csrs = (0..104).map(|i| bootstrap_pending(&format!("flood-{i}"), 1)).collect();
    world.csrs.push(bootstrap_pending("csr-bootstrap", 5));
    assert_approve(&Csr::bootstrap(client_pem("win-1")).decide_in(&world));
}

/// A Linux scale-up (or a cluster whose admins approve Linux requests by hand): thousands of pending requests made
/// by Linux nodes for themselves name no managed instance and never stall a Windows approval.
#[test]
fn a6_does_not_count_linux_nodes_own_requests() {
    let mut world = world();
    world.csrs = (0..5_000).map(|i| pending(&format!("linux-{i}"), 1)).collect();
    world.csrs.extend(
        (0..5_000)
            .map(|i| CsrSummary { signer_name: SERVING_SIGNER.into(), ..pending(&format!("linux-serving-{i}"), 1) }),
    );
    assert_approve(&Csr::bootstrap(client_pem("win-1")).decide_in(&world));
    let pem = serving_pem("win-2", &["win-2", "203.0.113.12"]);
    assert_approve(&Csr::serving(pem, "win-2").decide_in(&world));
}

/// Requests naming a managed instance count whoever made them (a node credential naming a Windows host).
#[test]
fn a6_counts_requests_naming_a_managed_instance() {
    let mut world = world();
    world.csrs = (0..105)
        .map(|i| CsrSummary { node_names: vec!["win-2".into()], ..pending(&format!("win-2-{i}"), 1) })
        .collect();
    let verdict = Csr::bootstrap(client_pem("win-1")).decide_in(&world);
    assert_ignore(&verdict, RuleId::A6);
    assert!(verdict.reason().contains("106 undecided kubelet CSRs"), "{verdict:?}");
}

// ---- B: encoding and crypto (DENY) --------------------------------------------------------------------------

#[test]
fn b1_two_pem_blocks_fixture_is_denied() {
    assert_deny(&Csr::bootstrap(fixture("two-pem-blocks.pem")).decide_in(&world()), RuleId::B1);
}

#[test]
fn b1_text_after_the_block_is_denied() {
    let pem = format!("{}trailing", client_pem("win-1"));
    assert_deny(&Csr::bootstrap(pem).decide_in(&world()), RuleId::B1);
}

#[test]
fn b1_other_pem_label_is_denied() {
    let pem = client_pem("win-1").replace("CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST");
    assert_deny(&Csr::bootstrap(pem).decide_in(&world()), RuleId::B1);
}

#[test]
fn b1_foreign_attribute_is_denied() {
    // challengePassword (1.2.840.113549.1.9.7) as a UTF8String "secret".
    let attribute =
        Attribute { oid: &[1, 2, 840, 113549, 1, 9, 7], values: vec![0x0c, 6, b's', b'e', b'c', b'r', b'e', b't'] };
    let request = params("system:node:win-1").serialize_request_with_attributes(&p256(), vec![attribute]).unwrap();
    assert_deny(&Csr::bootstrap(request.pem().unwrap()).decide_in(&world()), RuleId::B1);
}

#[test]
fn b1_trailing_der_bytes_are_denied() {
    let request = params("system:node:win-1").serialize_request(&p256()).unwrap();
    let mut der = request.der().to_vec();
    der.extend([0x05, 0x00]);
    let pem = pem_text(&der);
    assert_deny(&Csr::bootstrap(pem).decide_in(&world()), RuleId::B1);
}

fn pem_text(der: &[u8]) -> String {
    use base64::Engine as _;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    format!("-----BEGIN CERTIFICATE REQUEST-----\n{body}\n-----END CERTIFICATE REQUEST-----\n")
}

fn der_of(pem: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    let text = std::str::from_utf8(pem).unwrap();
    let body: String = text.lines().filter(|line| !line.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD.decode(body).unwrap()
}

/// Rewrites one byte at `offset` from the last occurrence of `pattern` (the outer, unsigned signatureAlgorithm).
fn rewrite_after_last(der: &[u8], pattern: &[u8], offset: usize, byte: u8) -> String {
    let start = der.windows(pattern.len()).rposition(|window| window == pattern).unwrap();
    let mut der = der.to_vec();
    der[start + offset] = byte;
    pem_text(&der)
}

const ECDSA_SHA256_ALGORITHM: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
const RSA_SHA256_ALGORITHM: [u8; 13] = [0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05, 0x00];

#[test]
fn b1_unsigned_algorithm_oid_tag_change_is_denied() {
    // Found by the PEM-flip property: the PKCS#10 parser ignores the tag of the outer algorithm OID.
    let der = params("system:node:win-1").serialize_request(&p256()).unwrap().der().to_vec();
    let pem = rewrite_after_last(&der, &ECDSA_SHA256_ALGORITHM, 0, 0x16);
    assert_deny(&Csr::bootstrap(pem).decide_in(&world()), RuleId::B1);
}

#[test]
fn b1_unsigned_rsa_null_parameter_change_is_denied() {
    let der = der_of(&fixture("rsa2048-sha256.pem"));
    let pem = rewrite_after_last(&der, &RSA_SHA256_ALGORITHM, 11, 0x04);
    let csr = Csr::bootstrap(pem).with_usages(&["key encipherment", "digital signature", "client auth"]);
    assert_deny(&csr.decide_in(&world()), RuleId::B1);
}

#[test]
fn b1_signature_unused_bits_octet_change_is_denied() {
    let der = params("system:node:win-1").serialize_request(&p256()).unwrap().der().to_vec();
    // signatureAlgorithm, then BIT STRING tag, length, unused-bits octet.
    let pem = rewrite_after_last(&der, &ECDSA_SHA256_ALGORITHM, ECDSA_SHA256_ALGORITHM.len() + 2, 0x01);
    assert_deny(&Csr::bootstrap(pem).decide_in(&world()), RuleId::B1);
}

/// (header length, content length) of the DER element at the start of `bytes`.
fn element_lengths(bytes: &[u8]) -> (usize, usize) {
    match bytes[1] {
        short @ 0..=0x7f => (2, usize::from(short)),
        long => {
            let count = usize::from(long & 0x7f);
            (2 + count, bytes[2..2 + count].iter().fold(0, |length, byte| (length << 8) | usize::from(*byte)))
        }
    }
}

fn sequence(content: &[u8]) -> Vec<u8> {
    let length = content.len();
    let mut encoded = vec![0x30];
    if length < 0x80 {
        encoded.push(length as u8);
    } else if length < 0x100 {
        encoded.extend([0x81, length as u8]);
    } else {
        encoded.extend([0x82, (length >> 8) as u8, length as u8]);
    }
    encoded.extend(content);
    encoded
}

#[test]
fn b1_absent_attribute_set_is_denied() {
    // rcgen ends the CertificationRequestInfo with an empty attribute set A0 00; drop it and re-frame.
    let der = params("system:node:win-1").serialize_request(&p256()).unwrap().der().to_vec();
    let (outer_header, _) = element_lengths(&der);
    let body = &der[outer_header..];
    let (info_header, info_length) = element_lengths(body);
    let info_content = &body[info_header..info_header + info_length];
    assert_eq!(&info_content[info_content.len() - 2..], &[0xa0, 0x00]);
    let mut content = sequence(&info_content[..info_content.len() - 2]);
    content.extend(&body[info_header + info_length..]);
    let pem = pem_text(&sequence(&content));
    assert_deny(&Csr::bootstrap(pem).decide_in(&world()), RuleId::B1);
}

#[test]
fn b2_sha1_fixture_is_denied() {
    let csr = Csr::bootstrap(fixture("rsa2048-sha1.pem")).with_usages(&[
        "key encipherment",
        "digital signature",
        "client auth",
    ]);
    assert_deny(&csr.decide_in(&world()), RuleId::B2);
}

#[test]
fn b2_tampered_body_fixture_is_denied() {
    assert_deny(&Csr::bootstrap(fixture("tampered-body.pem")).decide_in(&world()), RuleId::B2);
}

#[test]
fn b2_flipped_signature_fixture_is_denied() {
    assert_deny(&Csr::bootstrap(fixture("flipped-signature.pem")).decide_in(&world()), RuleId::B2);
}

#[test]
fn b2_dsa_fixture_is_denied() {
    assert_deny(&Csr::bootstrap(fixture("dsa-sha256.pem")).decide_in(&world()), RuleId::B2);
}

#[test]
fn b2_ed25519_is_denied() {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    assert_deny(&Csr::bootstrap(pem_of(&params("system:node:win-1"), &key)).decide_in(&world()), RuleId::B2);
    assert_deny(&Csr::bootstrap(fixture("ed25519.pem")).decide_in(&world()), RuleId::B2);
}

#[test]
fn b2_b3_openssl_p256_fixture_is_approved() {
    let mut world = world();
    world.instances.retain(|instance| instance.name() != "win-1");
    assert_approve(&Csr::bootstrap(fixture("p256-sha256.pem")).decide_in(&world));
}

#[test]
fn b3_rsa_2048_fixture_is_approved() {
    let csr = Csr::bootstrap(fixture("rsa2048-sha256.pem")).with_usages(&[
        "key encipherment",
        "digital signature",
        "client auth",
    ]);
    assert_approve(&csr.decide_in(&world()));
}

#[test]
fn b3_p384_is_approved() {
    assert_approve(&Csr::bootstrap(fixture("p384-sha384.pem")).decide_in(&world()));
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap();
    assert_approve(&Csr::bootstrap(pem_of(&params("system:node:win-1"), &key)).decide_in(&world()));
}

#[test]
fn b3_weak_or_foreign_keys_are_denied() {
    for name in
        ["rsa1024-sha256.pem", "rsa2048-e3-sha256.pem", "p224-sha256.pem", "p521-sha512.pem", "secp256k1-sha256.pem"]
    {
        let csr = Csr::bootstrap(fixture(name)).with_usages(&["key encipherment", "digital signature", "client auth"]);
        let verdict = csr.decide_in(&world());
        assert!(matches!(&verdict, Verdict::Deny { rule: RuleId::B3, .. }), "{name}: {verdict:?}");
    }
}

// ---- C: subject (DENY) ---------------------------------------------------------------------------------------

#[test]
fn c1_multi_valued_rdn_fixture_is_denied() {
    assert_deny(&Csr::bootstrap(fixture("multi-valued-rdn.pem")).decide_in(&world()), RuleId::C1);
}

#[test]
fn c1_two_cns_fixture_is_denied() {
    assert_deny(&Csr::bootstrap(fixture("two-cns.pem")).decide_in(&world()), RuleId::C1);
}

#[test]
fn c1_extra_attribute_is_denied() {
    let mut params = params("system:node:win-1");
    params.distinguished_name.push(DnType::OrganizationalUnitName, "ops");
    assert_deny(&Csr::bootstrap(pem_of(&params, &p256())).decide_in(&world()), RuleId::C1);
}

#[test]
fn c1_missing_organization_is_denied() {
    let mut params = params("system:node:win-1");
    params.distinguished_name.remove(DnType::OrganizationName);
    assert_deny(&Csr::bootstrap(pem_of(&params, &p256())).decide_in(&world()), RuleId::C1);
}

#[test]
fn c1_ia5_string_value_is_denied() {
    let mut params = params("system:node:win-1");
    params.distinguished_name.push(DnType::CommonName, DnValue::Ia5String("system:node:win-1".try_into().unwrap()));
    assert_deny(&Csr::bootstrap(pem_of(&params, &p256())).decide_in(&world()), RuleId::C1);
}

#[test]
fn c1_utf8_and_printable_values_are_approved() {
    let mut params = params("system:node:win-1");
    params
        .distinguished_name
        .push(DnType::CommonName, DnValue::PrintableString("system:node:win-1".try_into().unwrap()));
    assert_approve(&Csr::bootstrap(pem_of(&params, &p256())).decide_in(&world()));
}

#[test]
fn c2_system_masters_is_denied() {
    let mut params = params("system:node:win-1");
    params.distinguished_name.push(DnType::OrganizationName, "system:masters");
    assert_deny(&Csr::bootstrap(pem_of(&params, &p256())).decide_in(&world()), RuleId::C2);
}

#[test]
fn c3_non_rfc1123_node_name_is_denied() {
    let mut world = world();
    world.instances.push(ManagedInstance::Byoh(byoh("win_3", "203.0.113.13")));
    assert_deny(&Csr::bootstrap(client_pem("win_3")).decide_in(&world), RuleId::C3);
}

// ---- D: extensions and SANs (DENY) ---------------------------------------------------------------------------

#[test]
fn d1_key_usage_extension_is_denied() {
    let mut params = params("system:node:win-2");
    params.subject_alt_names = vec![san_of("win-2")];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    assert_deny(&Csr::serving(pem_of(&params, &p256()), "win-2").decide_in(&world()), RuleId::D1);
}

#[test]
fn d1_basic_constraints_on_client_is_denied() {
    let mut params = params("system:node:win-1");
    params.is_ca = IsCa::ExplicitNoCa;
    assert_deny(&Csr::bootstrap(pem_of(&params, &p256())).decide_in(&world()), RuleId::D1);
}

#[test]
fn d1_unknown_extension_is_denied() {
    let mut params = params("system:node:win-1");
    params.custom_extensions = vec![CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 99999, 1], vec![0x05, 0x00])];
    assert_deny(&Csr::bootstrap(pem_of(&params, &p256())).decide_in(&world()), RuleId::D1);
}

#[test]
fn d2_client_with_san_is_denied() {
    let pem = serving_pem("win-1", &["win-1"]);
    assert_deny(&Csr::bootstrap(pem).decide_in(&world()), RuleId::D2);
}

#[test]
fn d3_serving_without_san_is_denied() {
    assert_deny(&Csr::serving(client_pem("win-2"), "win-2").decide_in(&world()), RuleId::D3);
}

#[test]
fn d3_more_than_ten_sans_are_denied() {
    let sans: Vec<String> = (0..11).map(|i| format!("n{i}.win-2")).collect();
    let sans: Vec<&str> = sans.iter().map(String::as_str).collect();
    assert_deny(&Csr::serving(serving_pem("win-2", &sans), "win-2").decide_in(&world()), RuleId::D3);
}

#[test]
fn d3_malformed_dns_names_are_denied() {
    for name in ["Win-2", "*.corp.example", "win-2."] {
        let verdict = Csr::serving(serving_pem("win-2", &[name]), "win-2").decide_in(&world());
        assert!(matches!(&verdict, Verdict::Deny { rule: RuleId::D3, .. }), "{name}: {verdict:?}");
    }
}

#[test]
fn d3_unroutable_and_cluster_ips_are_denied() {
    for ip in [
        "127.0.0.1",
        "0.0.0.0",
        "169.254.1.1",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "fe80::1",
        "::ffff:203.0.113.12",
        "172.30.0.10",
        "10.129.0.5",
    ] {
        let verdict = Csr::serving(serving_pem("win-2", &[ip]), "win-2").decide_in(&world());
        assert!(matches!(&verdict, Verdict::Deny { rule: RuleId::D3, .. }), "{ip}: {verdict:?}");
    }
}

#[test]
fn d3_email_and_uri_sans_are_denied() {
    let mut params = params("system:node:win-2");
    params.subject_alt_names = vec![SanType::Rfc822Name("a@b.example".try_into().unwrap())];
    assert_deny(&Csr::serving(pem_of(&params, &p256()), "win-2").decide_in(&world()), RuleId::D3);
    params.subject_alt_names = vec![SanType::URI("spiffe://x/y".try_into().unwrap())];
    assert_deny(&Csr::serving(pem_of(&params, &p256()), "win-2").decide_in(&world()), RuleId::D3);
}

#[test]
fn d4_san_outside_the_record_is_denied() {
    for san in ["evil.example", "203.0.113.99", "win-2.corp.example.evil"] {
        let verdict = Csr::serving(serving_pem("win-2", &["win-2", san]), "win-2").decide_in(&world());
        assert!(matches!(&verdict, Verdict::Deny { rule: RuleId::D4, .. }), "{san}: {verdict:?}");
    }
}

#[test]
fn d4_machine_san_must_be_a_machine_address() {
    let pem = serving_pem("winm-b.internal", &["winm-b.internal", "10.0.1.7"]);
    assert_deny(&Csr::serving(pem, "winm-b.internal").decide_in(&world()), RuleId::D4);
}

#[test]
fn d4_every_byoh_record_entry_is_accepted() {
    let mut world = world();
    world.nodes[0].addresses.extend([
        wmco_csr_approver::NodeAddress {
            address_type: wmco_csr_approver::AddressType::InternalDns,
            address: "win-2.corp.example".into(),
        },
        wmco_csr_approver::NodeAddress {
            address_type: wmco_csr_approver::AddressType::ExternalIp,
            address: "10.0.0.11".into(),
        },
    ]);
    let pem = serving_pem("win-2", &["win-2", "win-2.corp.example", "10.0.0.11", "203.0.113.12"]);
    assert_approve(&Csr::serving(pem, "win-2").decide_in(&world));
}

/// The reference world's instance `name`.
fn instance_named<'a>(
    world: &'a mut wmco_csr_approver::WorldData,
    name: &str,
) -> &'a mut wmco_csr_approver::ManagedInstance {
    world.instances.iter_mut().find(|instance| instance.name() == name).expect("an instance of the reference world")
}

/// A name entry of a Node's or Machine's addresses.
fn name_entry(address_type: wmco_csr_approver::AddressType, name: &str) -> wmco_csr_approver::NodeAddress {
    wmco_csr_approver::NodeAddress { address_type, address: name.into() }
}

#[test]
fn d4_and_f3_match_a_windows_host_s_upper_case_names_with_the_kubelet_s_lower_case_sans() {
    use wmco_csr_approver::AddressType::{ExternalDns, InternalDns};
    // Stock Windows images name hosts in upper case; the kubelet lower-cases its name and SANs (D3 requires it), and
    // DNS names compare without regard to case (RFC 4343).
    let mut world = world();
    let wmco_csr_approver::ManagedInstance::Byoh(byoh) = instance_named(&mut world, "win-2") else {
        panic!("win-2 is a BYOH instance of the reference world")
    };
    byoh.hostname = Some("WIN-2".into());
    byoh.fqdn = Some("WIN-2.Corp.Example".into());
    byoh.address = "Win-2.Lab.Example".into();
    let node = &mut world.nodes[0].addresses;
    node.extend([name_entry(InternalDns, "WIN-2.Corp.Example"), name_entry(ExternalDns, "Win-2.Lab.Example")]);
    let pem = serving_pem("win-2", &["win-2", "win-2.corp.example", "win-2.lab.example"]);
    assert_approve(&Csr::serving(pem, "win-2").decide_in(&world));
}

/// On AWS the operator names a BYOH host's Node after the instance metadata's `local-hostname`; the kubelet reports
/// that name as its Hostname address and asks for it as a serving SAN. Before issue 35 only the Windows host name
/// and FQDN counted, so the request was denied by D4.
#[test]
fn d4_accepts_the_recorded_node_name_a_cloud_platform_gave_the_byoh_host() {
    use wmco_csr_approver::AddressType::{Hostname, InternalDns, InternalIp};
    let mut world = world();
    let byoh = common::byoh_mut(&mut world, "win-2");
    byoh.hostname = Some("EC2AMAZ-4B7Q2LM".into());
    byoh.fqdn = Some("EC2AMAZ-4B7Q2LM.ec2.internal".into());
    byoh.expected_node_name = Some("ip-10-0-1-23.ec2.internal".into());
    world.nodes[0] = common::windows_node(
        "ip-10-0-1-23.ec2.internal",
        vec![
            name_entry(InternalIp, "203.0.113.12"),
            name_entry(InternalDns, "ip-10-0-1-23.ec2.internal"),
            name_entry(Hostname, "ip-10-0-1-23.ec2.internal"),
        ],
    );
    let node = "ip-10-0-1-23.ec2.internal";
    let pem = serving_pem(node, &[node, "203.0.113.12"]);
    assert_approve(&Csr::serving(pem, node).decide_in(&world));
    let other = serving_pem(node, &[node, "ip-10-0-9-9.ec2.internal"]);
    assert_deny(&Csr::serving(other, node).decide_in(&world), RuleId::D4);
}

#[test]
fn d4_a_machine_s_mixed_case_dns_address_matches_the_lower_case_san() {
    use wmco_csr_approver::AddressType::InternalDns;
    let mut world = world();
    let wmco_csr_approver::ManagedInstance::Machine(machine) = instance_named(&mut world, "winm-b") else {
        panic!("winm-b is a Machine instance of the reference world")
    };
    machine.addresses.push(name_entry(InternalDns, "WinM-B.Internal.Cloudapp.Net"));
    world.nodes[1].addresses.push(name_entry(InternalDns, "winm-b.internal.cloudapp.net"));
    let pem = serving_pem("winm-b.internal", &["winm-b.internal", "winm-b.internal.cloudapp.net", "10.0.1.6"]);
    assert_approve(&Csr::serving(pem, "winm-b.internal").decide_in(&world));
}

// ---- E: spec (DENY) ------------------------------------------------------------------------------------------

#[test]
fn e1_key_encipherment_is_allowed() {
    let csr =
        Csr::bootstrap(client_pem("win-1")).with_usages(&["key encipherment", "digital signature", "client auth"]);
    assert_approve(&csr.decide_in(&world()));
}

#[test]
fn e1_wrong_usage_sets_are_denied() {
    let cases: [&[&str]; 4] = [
        &["digital signature", "client auth", "server auth"],
        &["digital signature", "client auth", "client auth"],
        &["client auth"],
        &["digital signature", "server auth"],
    ];
    for usages in cases {
        let verdict = Csr::bootstrap(client_pem("win-1")).with_usages(usages).decide_in(&world());
        assert!(matches!(&verdict, Verdict::Deny { rule: RuleId::E1, .. }), "{usages:?}: {verdict:?}");
    }
}

#[test]
fn e1_serving_with_client_usages_is_denied() {
    let csr =
        Csr::serving(serving_pem("win-2", &["win-2"]), "win-2").with_usages(&["digital signature", "client auth"]);
    assert_deny(&csr.decide_in(&world()), RuleId::E1);
}

#[test]
fn e2_expiration_bounds() {
    for (seconds, approved) in [(600, true), (31_536_000, true), (599, false), (31_536_001, false), (-1, false)] {
        let mut csr = Csr::bootstrap(client_pem("win-1"));
        csr.expiration_seconds = Some(seconds);
        let verdict = csr.decide_in(&world());
        if approved {
            assert_approve(&verdict);
        } else {
            assert_deny(&verdict, RuleId::E2);
        }
    }
}

#[test]
fn e3_bootstrap_groups_must_match_exactly() {
    let mut csr = Csr::bootstrap(client_pem("win-1"));
    csr.groups.pop();
    assert_deny(&csr.decide_in(&world()), RuleId::E3);
    let mut csr = Csr::bootstrap(client_pem("win-1"));
    csr.groups.push("system:masters".into());
    assert_deny(&csr.decide_in(&world()), RuleId::E3);
}

#[test]
fn e3_bootstrap_token_minted_for_a_pod_is_denied() {
    let mut csr = Csr::bootstrap(client_pem("win-1"));
    csr.extra.insert("authentication.kubernetes.io/pod-name".into(), serde_json::json!(["attacker"]));
    assert_deny(&csr.decide_in(&world()), RuleId::E3);
}

#[test]
fn e3_credential_id_extra_is_fine() {
    let mut csr = Csr::renewal(client_pem("win-2"), "win-2");
    csr.extra.insert("authentication.kubernetes.io/credential-id".into(), serde_json::json!(["X509SHA256=ab"]));
    assert_approve(&csr.decide_in(&world()));
}

#[test]
fn e3_node_asking_for_another_node_is_denied() {
    assert_deny(&Csr::renewal(client_pem("win-2"), "win-1").decide_in(&world()), RuleId::E3);
    let pem = serving_pem("win-2", &["win-2"]);
    assert_deny(&Csr::serving(pem, "winm-b.internal").decide_in(&world()), RuleId::E3);
}

#[test]
fn e3_serving_by_the_bootstrapper_is_denied() {
    let mut csr = Csr::serving(serving_pem("win-2", &["win-2"]), "win-2");
    csr.username = BOOTSTRAPPER.into();
    csr.groups = BOOTSTRAP_GROUPS.iter().map(|g| (*g).to_owned()).collect();
    assert_deny(&csr.decide_in(&world()), RuleId::E3);
}

#[test]
fn e3_any_other_requester_is_denied() {
    let mut csr = Csr::bootstrap(client_pem("win-1"));
    csr.username = "system:admin".into();
    assert_deny(&csr.decide_in(&world()), RuleId::E3);
}

// ---- F: state (IGNORE) ---------------------------------------------------------------------------------------

#[test]
fn f1_bootstrap_when_the_node_exists_is_ignored() {
    let mut world = world();
    world.nodes.push(windows_node("win-1", vec![]));
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F1);
}

#[test]
fn f1_bootstrap_outside_configuring_phases_is_ignored() {
    for phase in [InstancePhase::Pending, InstancePhase::Ready, InstancePhase::Failed, InstancePhase::Deconfiguring] {
        let mut world = world();
        byoh_mut(&mut world, "win-1").phase = phase;
        assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F1);
    }
    let mut world = world();
    byoh_mut(&mut world, "win-1").phase = InstancePhase::Configuring;
    assert_approve(&Csr::bootstrap(client_pem("win-1")).decide_in(&world));
}

#[test]
fn f1_bootstrap_window_edges() {
    // T0 is 30 minutes ago; window [T0 - 10 s, T0 + 2 h].
    let t0 = minutes_ago(30);
    for (offset_seconds, approved) in [(-10, true), (-11, false), (7200, true), (7201, false)] {
        let mut world = world();
        world.now = t0 + jiff::SignedDuration::from_secs(offset_seconds.max(0) + 60);
        let mut csr = Csr::bootstrap(client_pem("win-1"));
        csr.created = t0 + jiff::SignedDuration::from_secs(offset_seconds);
        let verdict = csr.decide_in(&world);
        if approved {
            assert_approve(&verdict);
        } else {
            assert_ignore(&verdict, RuleId::F1);
        }
    }
}

#[test]
fn f1_byoh_without_configuration_start_is_ignored() {
    let mut world = world();
    byoh_mut(&mut world, "win-1").configuring_since = None;
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F1);
}

#[test]
fn f1_machine_with_node_ref_is_ignored() {
    let mut world = world();
    machine_mut(&mut world, "winm-a").node_ref = Some("winm-a.internal".into());
    assert_ignore(&Csr::bootstrap(client_pem("winm-a.internal")).decide_in(&world), RuleId::F1);
}

#[test]
fn f1_machine_bootstrap_before_machine_creation_is_ignored() {
    let mut csr = Csr::bootstrap(client_pem("winm-a.internal"));
    csr.created = minutes_ago(21);
    assert_ignore(&csr.decide_in(&world()), RuleId::F1);
}

fn key_sha256(pem: &str) -> String {
    let csr = Csr::bootstrap(pem);
    let facts = csr.facts();
    facts.request.expect("readable request").body.expect("parsed body").public_key.spki_sha256_hex()
}

#[test]
fn f2_recorded_approval_of_another_key_is_ignored() {
    let mut world = world();
    byoh_mut(&mut world, "win-1").bootstrap_approval =
        Some(BootstrapApproval { public_key_sha256: key_sha256(&client_pem("win-1")), approved_at: minutes_ago(10) });
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F2);
}

#[test]
fn f2_recorded_approval_of_the_same_key_or_an_older_attempt_is_fine() {
    let pem = client_pem("win-1");
    let mut world = world();
    byoh_mut(&mut world, "win-1").bootstrap_approval =
        Some(BootstrapApproval { public_key_sha256: key_sha256(&pem), approved_at: minutes_ago(10) });
    assert_approve(&Csr::bootstrap(pem).decide_in(&world));
    let mut world = self::world();
    byoh_mut(&mut world, "win-1").bootstrap_approval =
        Some(BootstrapApproval { public_key_sha256: "00".repeat(32), approved_at: minutes_ago(31) });
    assert_approve(&Csr::bootstrap(client_pem("win-1")).decide_in(&world));
}

fn bootstrap_summary(name: &str, key: String, state: CsrState) -> CsrSummary {
    CsrSummary {
        name: name.into(),
        signer_name: CLIENT_SIGNER.into(),
        username: BOOTSTRAPPER.into(),
        creation_timestamp: minutes_ago(3),
        state,
        approved_at: None,
        node_names: vec!["win-1".into()],
        public_key_sha256: Some(key),
    }
}

#[test]
fn f2_pending_bootstrap_with_another_key_is_ignored() {
    let mut world = world();
    world.csrs.push(bootstrap_summary("csr-other", key_sha256(&client_pem("win-1")), CsrState::Pending));
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F2);
}

/// A bootstrap CSR for the node of `pem` named `name`, created at `created`, with an `Approved` condition stamped
/// `approved_at` (`None`: a condition without times), summarized as the operator puts it into the World.
fn approved_summary(
    name: &str,
    pem: impl Into<Vec<u8>>,
    created: Timestamp,
    approved_at: Option<Timestamp>,
) -> CsrSummary {
    let mut csr = Csr::bootstrap(pem);
    csr.name = name.into();
    csr.created = created;
    csr.conditions = vec!["Approved".into()];
    csr.approved_at = approved_at;
    csr.facts().summary()
}

#[test]
fn f2_pending_bootstrap_from_before_the_attempt_does_not_compete_until_it_is_approved() {
    // T0 is 30 minutes ago. Filed a minute before it: by the kubelet of the host's previous configuration (removed
    // since), or by someone holding the bootstrap token, waiting for an admin's approval.
    let mut stale = Csr::bootstrap(client_pem("win-1"));
    stale.name = "csr-stale".into();
    stale.created = minutes_ago(31);
    let mut world = world();
    world.csrs.push(stale.facts().summary());
    assert_approve(&Csr::bootstrap(client_pem("win-1")).decide_in(&world));
    world.csrs[0].creation_timestamp = minutes_ago(29);
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F2);
    // An admin approves it during the attempt (a routine mass approval): a client certificate for win-1 may exist.
    stale.conditions = vec!["Approved".into()];
    stale.approved_at = Some(minutes_ago(2));
    world.csrs[0] = stale.facts().summary();
    let verdict = Csr::bootstrap(client_pem("win-1")).decide_in(&world);
    assert_ignore(&verdict, RuleId::F2);
    assert!(verdict.reason().contains("csr-stale"), "{verdict:?}");
}

#[test]
fn f2_a_client_csr_approved_in_the_attempt_counts_whenever_it_was_created() {
    // T0 is 30 minutes ago; filed 50 minutes ago, approved 5 minutes ago.
    let mut world = world();
    world.csrs.push(approved_summary("csr-filed-early", client_pem("win-1"), minutes_ago(50), Some(minutes_ago(5))));
    let verdict = Csr::bootstrap(client_pem("win-1")).decide_in(&world);
    assert_ignore(&verdict, RuleId::F2);
    assert!(verdict.reason().contains("csr-filed-early"), "{verdict:?}");
}

#[test]
fn f2_an_approval_without_a_time_counts() {
    let mut world = world();
    world.csrs.push(approved_summary("csr-untimed", client_pem("win-1"), minutes_ago(50), None));
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F2);
}

#[test]
fn f2_an_approved_csr_counts_under_every_node_name_of_its_subject() {
    // CN=system:node:decoy, CN=system:node:win-fx: Go's x509, and so the kubelet client signer, issues it for win-fx.
    let mut world = world();
    world.csrs.push(approved_summary(
        "csr-decoy",
        fixture("decoy-then-win-fx.pem"),
        minutes_ago(5),
        Some(minutes_ago(4)),
    ));
    let verdict = Csr::bootstrap(client_pem("win-fx")).decide_in(&world);
    assert_ignore(&verdict, RuleId::F2);
    assert!(verdict.reason().contains("csr-decoy"), "{verdict:?}");
}

#[test]
fn f2_a_csr_carrying_a_certificate_counts_as_issued_whatever_its_conditions() {
    for conditions in [&[][..], &["Failed", "Approved"]] {
        let mut issued = Csr::bootstrap(client_pem("win-1"));
        issued.name = "csr-issued".into();
        issued.conditions = conditions.iter().map(|condition| (*condition).to_owned()).collect();
        issued.approved_at = Some(minutes_ago(4));
        issued.certificate = Some("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t".into());
        let summary = issued.facts().summary();
        assert_eq!(summary.state, CsrState::Approved, "{conditions:?}");
        let mut world = world();
        world.csrs.push(summary);
        assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F2);
    }
}

#[test]
fn f2_an_approval_the_signer_failed_does_not_count_in_either_order() {
    for conditions in [["Approved", "Failed"], ["Failed", "Approved"]] {
        let mut failed = Csr::bootstrap(client_pem("win-1"));
        failed.name = "csr-failed".into();
        failed.conditions = conditions.iter().map(|condition| (*condition).to_owned()).collect();
        failed.approved_at = Some(minutes_ago(4));
        let summary = failed.facts().summary();
        assert_eq!(summary.state, CsrState::Failed, "{conditions:?}");
        let mut world = world();
        world.csrs.push(summary);
        assert_approve(&Csr::bootstrap(client_pem("win-1")).decide_in(&world));
    }
}

#[test]
fn f2_approved_bootstrap_with_another_key_is_ignored() {
    let mut world = world();
    world.csrs.push(bootstrap_summary("csr-other", key_sha256(&client_pem("win-1")), CsrState::Approved));
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F2);
}

#[test]
fn f2_kubelet_retry_with_the_same_key_is_approved() {
    let pem = client_pem("win-1");
    let mut world = world();
    world.csrs.push(bootstrap_summary("csr-retry", key_sha256(&pem), CsrState::Pending));
    world.csrs.push(bootstrap_summary("csr-denied", "11".repeat(32), CsrState::Denied));
    assert_approve(&Csr::bootstrap(pem).decide_in(&world));
}

/// A client CSR for win-1 in `state`, requested by `username`, created `minutes` ago.
fn client_summary(name: &str, key: String, state: CsrState, username: &str, minutes: i64) -> CsrSummary {
    CsrSummary {
        username: username.into(),
        creation_timestamp: minutes_ago(minutes),
        ..bootstrap_summary(name, key, state)
    }
}

#[test]
fn f2_client_csr_approved_by_an_admin_with_another_key_is_ignored_whoever_requested_it() {
    for requester in [BOOTSTRAPPER, "system:node:win-1", "system:serviceaccount:default:csr-maker"] {
        let mut world = world();
        let other_key = key_sha256(&client_pem("win-1"));
        world.csrs.push(client_summary("csr-by-hand", other_key, CsrState::Approved, requester, 20));
        let verdict = Csr::bootstrap(client_pem("win-1")).decide_in(&world);
        assert_ignore(&verdict, RuleId::F2);
        assert!(verdict.reason().contains("csr-by-hand"), "{verdict:?}");
    }
}

#[test]
fn f2_approved_client_csr_with_an_unreadable_key_is_ignored() {
    let mut world = world();
    let mut unreadable = bootstrap_summary("csr-unreadable", String::new(), CsrState::Approved);
    unreadable.public_key_sha256 = None;
    world.csrs.push(unreadable);
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F2);
}

#[test]
fn f2_approvals_before_the_attempt_and_other_csrs_do_not_count() {
    let mut world = world();
    let other_key = || key_sha256(&client_pem("win-1"));
    // T0 is 30 minutes ago: approved before T0 − 10 s, in an earlier attempt.
    world.csrs.push(approved_summary("csr-old", client_pem("win-1"), minutes_ago(45), Some(minutes_ago(31))));
    world.csrs.push(client_summary("csr-denied", other_key(), CsrState::Denied, BOOTSTRAPPER, 5));
    world.csrs.push(client_summary("csr-failed", other_key(), CsrState::Failed, BOOTSTRAPPER, 5));
    let serving = CsrSummary {
        signer_name: SERVING_SIGNER.into(),
        ..bootstrap_summary("csr-serving", other_key(), CsrState::Approved)
    };
    world.csrs.push(serving);
    let mut other_node = bootstrap_summary("csr-win-fx", other_key(), CsrState::Approved);
    other_node.node_names = vec!["win-fx".into()];
    world.csrs.push(other_node);
    assert_approve(&Csr::bootstrap(client_pem("win-1")).decide_in(&world));
}

#[test]
fn f2_approved_csr_approved_at_the_early_tolerance_counts() {
    // T0 is 30 minutes ago; both were filed before the attempt.
    let edge = minutes_ago(30) - jiff::SignedDuration::from_secs(10);
    let mut world = world();
    world.csrs.push(approved_summary("csr-edge", client_pem("win-1"), minutes_ago(45), Some(edge)));
    assert_ignore(&Csr::bootstrap(client_pem("win-1")).decide_in(&world), RuleId::F2);
    let before = edge - jiff::SignedDuration::from_secs(1);
    world.csrs[0] = approved_summary("csr-edge", client_pem("win-1"), minutes_ago(45), Some(before));
    assert_approve(&Csr::bootstrap(client_pem("win-1")).decide_in(&world));
}

#[test]
fn f2_recorded_key_outranks_pending_competitors() {
    let pem = client_pem("win-1");
    let mut world = world();
    byoh_mut(&mut world, "win-1").bootstrap_approval =
        Some(BootstrapApproval { public_key_sha256: key_sha256(&pem), approved_at: minutes_ago(30) });
    let competitor_pem = client_pem("win-1");
    world.csrs.push(bootstrap_summary("csr-competitor", key_sha256(&competitor_pem), CsrState::Pending));
    assert_approve(&Csr::bootstrap(pem).decide_in(&world));
    // The competitor itself stays pending: the attempt is bound to the recorded key.
    let mut competitor = Csr::bootstrap(competitor_pem);
    competitor.name = "csr-competitor".into();
    assert_ignore(&competitor.decide_in(&world), RuleId::F2);
}

#[test]
fn f2_recorded_key_does_not_outrank_an_approved_csr_with_another_key() {
    let pem = client_pem("win-1");
    let mut world = world();
    byoh_mut(&mut world, "win-1").bootstrap_approval =
        Some(BootstrapApproval { public_key_sha256: key_sha256(&pem), approved_at: minutes_ago(30) });
    world.csrs.push(bootstrap_summary("csr-by-hand", key_sha256(&client_pem("win-1")), CsrState::Approved));
    assert_ignore(&Csr::bootstrap(pem).decide_in(&world), RuleId::F2);
}

#[test]
fn f2_machine_attempt_starts_at_the_machine_creation() {
    // The Machine was created 20 minutes ago; the CSR was filed 25 minutes ago.
    let pem = || client_pem("winm-a.internal");
    let mut world = world();
    world.csrs.push(approved_summary("csr-by-hand", pem(), minutes_ago(25), Some(minutes_ago(19))));
    assert_ignore(&Csr::bootstrap(pem()).decide_in(&world), RuleId::F2);
    world.csrs[0] = approved_summary("csr-by-hand", pem(), minutes_ago(25), Some(minutes_ago(21)));
    assert_approve(&Csr::bootstrap(pem()).decide_in(&world));
}

#[test]
fn f3_renewal_without_node_is_ignored() {
    let mut world = world();
    world.nodes.retain(|node| node.name != "win-2");
    assert_ignore(&Csr::renewal(client_pem("win-2"), "win-2").decide_in(&world), RuleId::F3);
}

#[test]
fn f3_node_being_deleted_is_ignored() {
    let mut world = world();
    world.nodes[0].deletion_timestamp = Some(minutes_ago(1));
    assert_ignore(&Csr::renewal(client_pem("win-2"), "win-2").decide_in(&world), RuleId::F3);
}

#[test]
fn f3_node_not_windows_is_ignored() {
    let mut world = world();
    world.nodes[0].labels.insert("kubernetes.io/os".into(), "linux".into());
    assert_ignore(&Csr::renewal(client_pem("win-2"), "win-2").decide_in(&world), RuleId::F3);
}

#[test]
fn f3_node_not_linked_to_the_instance_is_ignored() {
    let mut world = world();
    byoh_mut(&mut world, "win-2").node_ip = Some("203.0.113.77".parse().unwrap());
    assert_ignore(&Csr::renewal(client_pem("win-2"), "win-2").decide_in(&world), RuleId::F3);
    let mut world = self::world();
    machine_mut(&mut world, "winm-b").node_ref = Some("someone-else".into());
    assert_ignore(&Csr::renewal(client_pem("winm-b.internal"), "winm-b.internal").decide_in(&world), RuleId::F3);
}

#[test]
fn f3_serving_san_missing_from_node_status_is_ignored() {
    // win-2.corp.example is in the operator's record (D4 passes) but not yet in the Node's addresses.
    let pem = serving_pem("win-2", &["win-2", "win-2.corp.example"]);
    assert_ignore(&Csr::serving(pem, "win-2").decide_in(&world()), RuleId::F3);
}

#[test]
fn f4_age_limit() {
    for (minutes, approved) in [(59, true), (60, true), (61, false)] {
        let mut csr = Csr::renewal(client_pem("win-2"), "win-2");
        csr.created = minutes_ago(minutes);
        let verdict = csr.decide_in(&world());
        if approved {
            assert_approve(&verdict);
        } else {
            assert_ignore(&verdict, RuleId::F4);
        }
    }
}
