//! Shared test support: a reference World, CSR manifests built around a PEM request, rcgen request builders,
//! the committed openssl fixtures, and verdict assertions.
#![allow(dead_code, reason = "each test binary uses a different subset of the helpers")]
#![allow(clippy::unwrap_used, reason = "test support: a failed setup must panic")]

use std::net::IpAddr;

use base64::Engine as _;
use jiff::{SignedDuration, Timestamp};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, SanType};
use wmco_csr_approver::{
    AddressType, ByohInstance, CsrFacts, CsrManifest, InstancePhase, MachineInstance, ManagedInstance, NodeAddress,
    NodeRecord, RuleId, Verdict, World, WorldData, decide,
};

pub const NOW: &str = "2026-11-22T12:00:00Z";
pub const BOOTSTRAPPER: &str = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper";
pub const BOOTSTRAP_GROUPS: [&str; 3] =
    ["system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator", "system:authenticated"];
pub const NODE_GROUPS: [&str; 2] = ["system:nodes", "system:authenticated"];
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
pub const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";

pub fn now() -> Timestamp {
    NOW.parse().unwrap()
}

/// `minutes` before NOW (negative: after).
pub fn minutes_ago(minutes: i64) -> Timestamp {
    now() - SignedDuration::from_mins(minutes)
}

fn address(address_type: AddressType, address: &str) -> NodeAddress {
    NodeAddress { address_type, address: address.into() }
}

pub fn windows_node(name: &str, addresses: Vec<NodeAddress>) -> NodeRecord {
    NodeRecord {
        name: name.into(),
        labels: [("kubernetes.io/os".to_owned(), "windows".to_owned())].into(),
        addresses,
        deletion_timestamp: None,
        owner_uid: None,
    }
}

/// A BYOH instance configured 30 minutes ago, waiting for its node.
pub fn byoh(name: &str, node_ip: &str) -> ByohInstance {
    ByohInstance {
        name: name.into(),
        uid: Some(format!("uid-{name}")),
        address: format!("{name}.corp.example"),
        expected_node_name: Some(name.into()),
        phase: InstancePhase::WaitingForNode,
        configuring_since: Some(minutes_ago(30)),
        hostname: Some(name.into()),
        fqdn: Some(format!("{name}.corp.example")),
        resolved_address: Some("10.0.0.11".parse().unwrap()),
        node_ip: Some(node_ip.parse().unwrap()),
        bootstrap_approval: None,
    }
}

/// The reference world:
/// - `win-1`, `win-fx`: BYOH waiting for their node (bootstrap path);
/// - `win-2`: BYOH, Ready, Node `win-2` linked by node IP 203.0.113.12 (renewal / serving path);
/// - `winm-a.internal`: Machine created 20 min ago, no nodeRef (bootstrap path);
/// - `winm-b.internal`: Machine with nodeRef and Node (renewal / serving path).
pub fn world() -> WorldData {
    let mut win_2 = byoh("win-2", "203.0.113.12");
    win_2.phase = InstancePhase::Ready;
    let machine_a = MachineInstance {
        name: "winm-a".into(),
        uid: Some("uid-winm-a".into()),
        expected_node_name: Some("winm-a.internal".into()),
        creation_timestamp: minutes_ago(20),
        addresses: vec![
            address(AddressType::InternalIp, "10.0.1.5"),
            address(AddressType::InternalDns, "winm-a.internal"),
        ],
        node_ref: None,
        bootstrap_approval: None,
    };
    let machine_b_addresses =
        vec![address(AddressType::InternalIp, "10.0.1.6"), address(AddressType::InternalDns, "winm-b.internal")];
    let machine_b = MachineInstance {
        name: "winm-b".into(),
        uid: Some("uid-winm-b".into()),
        expected_node_name: Some("winm-b.internal".into()),
        creation_timestamp: minutes_ago(600),
        addresses: machine_b_addresses.clone(),
        node_ref: Some("winm-b.internal".into()),
        bootstrap_approval: None,
    };
    WorldData {
        now: now(),
        service_network: vec!["172.30.0.0/16".parse().unwrap()],
        cluster_network: vec!["10.128.0.0/14".parse().unwrap()],
        instances: vec![
            ManagedInstance::Byoh(byoh("win-1", "203.0.113.11")),
            ManagedInstance::Byoh(byoh("win-fx", "203.0.113.19")),
            ManagedInstance::Byoh(win_2),
            ManagedInstance::Machine(machine_a),
            ManagedInstance::Machine(machine_b),
        ],
        nodes: vec![
            windows_node(
                "win-2",
                vec![address(AddressType::InternalIp, "203.0.113.12"), address(AddressType::Hostname, "win-2")],
            ),
            windows_node("winm-b.internal", machine_b_addresses),
        ],
        csrs: vec![],
    }
}

/// Mutable access to the BYOH instance `name` of a world.
pub fn byoh_mut<'a>(world: &'a mut WorldData, name: &str) -> &'a mut ByohInstance {
    world
        .instances
        .iter_mut()
        .find_map(|instance| match instance {
            ManagedInstance::Byoh(byoh) if byoh.name == name => Some(byoh),
            _ => None,
        })
        .unwrap()
}

/// Mutable access to the Machine instance `name` of a world.
pub fn machine_mut<'a>(world: &'a mut WorldData, name: &str) -> &'a mut MachineInstance {
    world
        .instances
        .iter_mut()
        .find_map(|instance| match instance {
            ManagedInstance::Machine(machine) if machine.name == name => Some(machine),
            _ => None,
        })
        .unwrap()
}

/// A CSR manifest under construction.
#[derive(Debug, Clone)]
pub struct Csr {
    pub name: String,
    pub signer: String,
    pub usages: Vec<String>,
    pub username: String,
    pub groups: Vec<String>,
    pub extra: serde_json::Map<String, serde_json::Value>,
    pub expiration_seconds: Option<i64>,
    pub created: Timestamp,
    pub conditions: Vec<String>,
    /// The `lastUpdateTime` and `lastTransitionTime` of its `Approved` condition, as the API server stamps them.
    pub approved_at: Option<Timestamp>,
    pub certificate: Option<String>,
    /// The PEM text; base64-encoded into spec.request.
    pub pem: Vec<u8>,
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|value| (*value).to_owned()).collect()
}

impl Csr {
    /// A bootstrap client CSR created 5 minutes ago.
    pub fn bootstrap(pem: impl Into<Vec<u8>>) -> Self {
        Self {
            name: "csr-bootstrap".into(),
            signer: CLIENT_SIGNER.into(),
            usages: strings(&["digital signature", "client auth"]),
            username: BOOTSTRAPPER.into(),
            groups: strings(&BOOTSTRAP_GROUPS),
            extra: serde_json::Map::new(),
            expiration_seconds: None,
            created: minutes_ago(5),
            conditions: vec![],
            approved_at: None,
            certificate: None,
            pem: pem.into(),
        }
    }

    /// A client renewal CSR by node `node`.
    pub fn renewal(pem: impl Into<Vec<u8>>, node: &str) -> Self {
        Self {
            name: "csr-renewal".into(),
            username: format!("system:node:{node}"),
            groups: strings(&NODE_GROUPS),
            ..Self::bootstrap(pem)
        }
    }

    /// A serving CSR by node `node`.
    pub fn serving(pem: impl Into<Vec<u8>>, node: &str) -> Self {
        Self {
            name: "csr-serving".into(),
            signer: SERVING_SIGNER.into(),
            usages: strings(&["digital signature", "server auth"]),
            ..Self::renewal(pem, node)
        }
    }

    pub fn with_usages(mut self, usages: &[&str]) -> Self {
        self.usages = strings(usages);
        self
    }

    pub fn manifest_json(&self) -> serde_json::Value {
        let mut status = serde_json::Map::new();
        let conditions: Vec<_> = self.conditions.iter().map(|c| self.condition_json(c)).collect();
        status.insert("conditions".into(), conditions.into());
        if let Some(certificate) = &self.certificate {
            status.insert("certificate".into(), certificate.clone().into());
        }
        let mut spec = serde_json::json!({
            "request": base64::engine::general_purpose::STANDARD.encode(&self.pem),
            "signerName": self.signer,
            "usages": self.usages,
            "username": self.username,
            "groups": self.groups,
            "extra": self.extra,
        });
        if let Some(seconds) = self.expiration_seconds {
            spec["expirationSeconds"] = seconds.into();
        }
        serde_json::json!({
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"name": self.name, "creationTimestamp": self.created.to_string()},
            "spec": spec,
            "status": status,
        })
    }

    /// One `status.conditions` entry of type `condition_type`; an `Approved` one carries [`Csr::approved_at`].
    fn condition_json(&self, condition_type: &str) -> serde_json::Value {
        let mut condition = serde_json::json!({"type": condition_type, "status": "True"});
        if let Some(at) = self.approved_at.filter(|_| condition_type == "Approved") {
            condition["lastUpdateTime"] = at.to_string().into();
            condition["lastTransitionTime"] = at.to_string().into();
        }
        condition
    }

    pub fn facts(&self) -> CsrFacts {
        let manifest: CsrManifest = serde_json::from_value(self.manifest_json()).unwrap();
        CsrFacts::from_manifest(&manifest).unwrap()
    }

    pub fn decide_in(&self, world: &WorldData) -> Verdict {
        decide(&self.facts(), &World::new(world.clone()))
    }
}

pub fn p256() -> KeyPair {
    KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap()
}

/// Request parameters with subject CN=`common_name`, O=system:nodes and no SAN.
pub fn params(common_name: &str) -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, common_name);
    subject.push(DnType::OrganizationName, "system:nodes");
    params.distinguished_name = subject;
    params
}

/// PEM of a request signed by `key`.
pub fn pem_of(params: &CertificateParams, key: &KeyPair) -> String {
    params.serialize_request(key).unwrap().pem().unwrap()
}

/// PEM of a P-256 client request for `node`.
pub fn client_pem(node: &str) -> String {
    pem_of(&params(&format!("system:node:{node}")), &p256())
}

/// PEM of a P-256 serving request for `node` with SANs parsed from strings (IPs become IP SANs).
pub fn serving_pem(node: &str, sans: &[&str]) -> String {
    let mut params = params(&format!("system:node:{node}"));
    params.subject_alt_names = sans.iter().map(|san| san_of(san)).collect();
    pem_of(&params, &p256())
}

pub fn san_of(text: &str) -> SanType {
    match text.parse::<IpAddr>() {
        Ok(ip) => SanType::IpAddress(ip),
        Err(_) => SanType::DnsName(text.try_into().unwrap()),
    }
}

/// A committed openssl fixture (tests/fixtures/NAME).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

#[track_caller]
pub fn assert_approve(verdict: &Verdict) {
    assert_eq!(verdict, &Verdict::Approve, "expected approval");
}

#[track_caller]
pub fn assert_deny(verdict: &Verdict, expected: RuleId) {
    assert!(
        matches!(verdict, Verdict::Deny { rule, .. } if *rule == expected),
        "expected deny {expected}, got {verdict:?}"
    );
}

#[track_caller]
pub fn assert_ignore(verdict: &Verdict, expected: RuleId) {
    assert!(
        matches!(verdict, Verdict::Ignore { rule, .. } if *rule == expected),
        "expected ignore {expected}, got {verdict:?}"
    );
}
