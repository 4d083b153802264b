//! The kubelet's key material: a fresh ECDSA P-256 key and PKCS#10 request per attempt (subject
//! `O=system:nodes, CN=system:node:<name>`), the certificate store files (`kubelet-client-<timestamp>.pem` holding the
//! issued chain then the key as `EC PRIVATE KEY`, and the `-current.pem` symlink), and the validity check of a
//! stored pair (kubelet-bootstrap.md §1.2, §2).

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    CertificateParams, DistinguishedName, DnType, KeyPair, PKCS_ECDSA_P256_SHA256, PublicKeyData as _, SanType,
};

/// A new private key and the PEM request signed with it.
pub(crate) struct KeyAndRequest {
    /// The private key as an `EC PRIVATE KEY` PEM block (SEC1, as Go's `x509.MarshalECPrivateKey` writes).
    pub key_pem: String,
    /// The `CERTIFICATE REQUEST` PEM block.
    pub request_pem: String,
}

/// Subject alternative names of a serving request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SubjectAltNames {
    /// DNS names, sorted.
    pub dns: Vec<String>,
    /// IP addresses, sorted by their string form.
    pub ips: Vec<IpAddr>,
}

/// Generates a P-256 key and a request for `system:node:<node_name>` in `system:nodes` with `sans`.
pub(crate) fn new_request(node_name: &str, sans: &SubjectAltNames) -> Result<KeyAndRequest, String> {
    request_with_key(&generate_key()?, node_name, sans)
}

/// A fresh ECDSA P-256 key.
pub(crate) fn generate_key() -> Result<KeyPair, String> {
    KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|error| format!("generate key: {error}"))
}

/// A request for `system:node:<node_name>` in `system:nodes` with `sans`, signed with `key`.
pub(crate) fn request_with_key(
    key: &KeyPair,
    node_name: &str,
    sans: &SubjectAltNames,
) -> Result<KeyAndRequest, String> {
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::OrganizationName, "system:nodes");
    subject.push(DnType::CommonName, format!("system:node:{node_name}"));
    params.distinguished_name = subject;
    for dns in &sans.dns {
        let name = dns.clone().try_into().map_err(|error| format!("DNS SAN {dns:?}: {error}"))?;
        params.subject_alt_names.push(SanType::DnsName(name));
    }
    params.subject_alt_names.extend(sans.ips.iter().copied().map(SanType::IpAddress));
    let request = params.serialize_request(key).map_err(|error| format!("create request: {error}"))?;
    let request_pem = request.pem().map_err(|error| format!("encode request: {error}"))?;
    let key_pem = sec1_pem(key)?;
    Ok(KeyAndRequest { key_pem, request_pem })
}

/// The P-256 key of the first `EC PRIVATE KEY` block of `pem` (SEC1, as [`sec1_pem`] writes it), if any parses.
pub(crate) fn key_from_sec1_pem(pem: &[u8]) -> Option<KeyPair> {
    const PKCS8_PREFIX: [u8; 26] = [
        0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86,
        0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04, 0x00,
    ];
    let block = x509_parser::pem::Pem::iter_from_buffer(pem)
        .filter_map(Result::ok)
        .find(|block| block.label == "EC PRIVATE KEY")?;
    let sec1 = block.contents;
    let mut body = PKCS8_PREFIX.to_vec();
    *body.last_mut()? = u8::try_from(sec1.len()).ok().filter(|length| *length < 0x80)?;
    body.extend_from_slice(&sec1);
    let mut pkcs8 = vec![0x30, 0x81, u8::try_from(body.len()).ok()?];
    pkcs8.extend(body);
    let key = KeyPair::try_from(pkcs8.as_slice()).ok()?;
    (key.algorithm() == &PKCS_ECDSA_P256_SHA256).then_some(key)
}

/// The deterministic name of a rotation-off bootstrap request (client-go's `digestedName`): `node-csr-` and the
/// unpadded base64url SHA-512/256 over the base64url of the PKIX public key, the CN, each O and each usage, each
/// followed by `|`.
pub(crate) fn digested_name(key: &KeyPair, node_name: &str, usages: &[&str]) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let encode = |data: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data);
    let mut hash = sha2::Sha512_256::new();
    let mut write = |data: &[u8]| {
        hash.update(encode(data).as_bytes());
        hash.update(b"|");
    };
    write(&key.subject_public_key_info());
    write(format!("system:node:{node_name}").as_bytes());
    write(b"system:nodes");
    for usage in usages {
        write(usage.as_bytes());
    }
    format!("node-csr-{}", encode(&hash.finalize()))
}

/// The key as SEC1 `ECPrivateKey` with the named-curve parameters and public key.
pub(crate) fn sec1_pem(key: &KeyPair) -> Result<String, String> {
    const PRIME256V1: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let pkcs8 = key.serialize_der();
    let scalar = p256_scalar_from_pkcs8(&pkcs8).ok_or("the generated key is not PKCS#8 P-256")?;
    let public_point = key.public_key_raw();
    if public_point.len() != 65 {
        return Err("the generated public key is not an uncompressed P-256 point".to_owned());
    }
    let mut body = vec![0x02, 0x01, 0x01, 0x04, 0x20];
    body.extend_from_slice(scalar);
    body.extend([0xa0, 0x0a]);
    body.extend(PRIME256V1);
    body.extend([0xa1, 0x44, 0x03, 0x42, 0x00]);
    body.extend_from_slice(public_point);
    let mut der = vec![0x30, u8::try_from(body.len()).map_err(|_| "SEC1 key too long")?];
    der.extend(body);
    Ok(pem_block("EC PRIVATE KEY", &der))
}

/// The 32-byte private scalar inside a PKCS#8 `PrivateKeyInfo` wrapping a SEC1 `ECPrivateKey`.
fn p256_scalar_from_pkcs8(der: &[u8]) -> Option<&[u8]> {
    let (0x30, info, _) = tlv(der)? else { return None };
    let (0x02, _, rest) = tlv(info)? else { return None };
    let (0x30, _, rest) = tlv(rest)? else { return None };
    let (0x04, private_key, _) = tlv(rest)? else { return None };
    let (0x30, ec_private_key, _) = tlv(private_key)? else { return None };
    let (0x02, _, rest) = tlv(ec_private_key)? else { return None };
    let (0x04, scalar, _) = tlv(rest)? else { return None };
    (scalar.len() == 32).then_some(scalar)
}

/// One DER tag-length-value: (tag, value, rest).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 2 || rest.len() < count {
            return None;
        }
        let length = rest[..count].iter().fold(0usize, |length, &byte| (length << 8) | usize::from(byte));
        (length, &rest[count..])
    };
    (rest.len() >= length).then(|| (tag, &rest[..length], &rest[length..]))
}

fn pem_block(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(der);
    let mut text = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        text.push_str(&String::from_utf8_lossy(line));
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
}

/// Checks a certificate chain and key as the kubelet checks a stored pair: at least one certificate, none past
/// `NotAfter`, a private key present.
pub(crate) fn check_pair(certificate_pem: &[u8], key_pem: &[u8]) -> Result<(), String> {
    let mut certificates = 0;
    for pem in x509_parser::pem::Pem::iter_from_buffer(certificate_pem) {
        let pem = pem.map_err(|error| format!("certificate PEM: {error}"))?;
        if pem.label != "CERTIFICATE" {
            continue;
        }
        let certificate = pem.parse_x509().map_err(|error| format!("certificate: {error}"))?;
        if !certificate.validity().is_valid() {
            return Err(format!("certificate {} is outside its validity period", certificate.subject()));
        }
        certificates += 1;
    }
    if certificates == 0 {
        return Err("no certificate".to_owned());
    }
    let has_key = x509_parser::pem::Pem::iter_from_buffer(key_pem)
        .filter_map(Result::ok)
        .any(|pem| pem.label.ends_with("PRIVATE KEY"));
    if has_key { Ok(()) } else { Err("no private key".to_owned()) }
}

/// Writes an issued pair as the certificate store does: `<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem` (chain then key,
/// mode 0600), a `<prefix>-updated.pem` symlink to it renamed over `<prefix>-current.pem`. Returns the current path.
pub(crate) fn store(cert_dir: &Path, prefix: &str, certificate_pem: &str, key_pem: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(cert_dir)?;
    let stamp = jiff::Timestamp::now().strftime("%Y-%m-%d-%H-%M-%S").to_string();
    let file_name = format!("{prefix}-{stamp}.pem");
    let mut contents = certificate_pem.trim_end().to_owned();
    contents.push('\n');
    contents.push_str(key_pem);
    crate::disk::write_private(&cert_dir.join(&file_name), contents.as_bytes())?;
    let updated = cert_dir.join(format!("{prefix}-updated.pem"));
    let current = cert_dir.join(format!("{prefix}-current.pem"));
    let _ = std::fs::remove_file(&updated);
    link(&file_name, &updated)?;
    std::fs::rename(&updated, &current)?;
    Ok(current)
}

#[cfg(unix)]
fn link(target_file_name: &str, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target_file_name, link)
}

#[cfg(not(unix))]
fn link(target_file_name: &str, link: &Path) -> std::io::Result<()> {
    let directory = link.parent().unwrap_or(Path::new("."));
    std::fs::copy(directory.join(target_file_name), link).map(|_| ())
}

#[cfg(test)]
mod tests {
    use x509_parser::prelude::FromDer as _;

    use super::*;

    #[test]
    fn client_requests_carry_the_node_subject_and_no_extensions() {
        let generated = new_request("win-a", &SubjectAltNames::default()).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(generated.request_pem.as_bytes()).unwrap();
        assert_eq!(pem.label, "CERTIFICATE REQUEST");
        let (_, request) =
            x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents).unwrap();
        let info = &request.certification_request_info;
        assert_eq!(info.subject.to_string(), "O=system:nodes, CN=system:node:win-a");
        assert!(request.requested_extensions().is_none());
        request.verify_signature().unwrap();
        assert!(generated.key_pem.starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
    }

    #[test]
    fn the_sec1_key_matches_the_request_key_and_loads_in_rcgen() {
        let generated = new_request("win-a", &SubjectAltNames::default()).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(generated.key_pem.as_bytes()).unwrap();
        assert_eq!(pem.contents.len(), 121);
        assert_eq!(&pem.contents[..7], &[0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20]);
        let (_, request_pem) = x509_parser::pem::parse_x509_pem(generated.request_pem.as_bytes()).unwrap();
        let (_, request) =
            x509_parser::certification_request::X509CertificationRequest::from_der(&request_pem.contents).unwrap();
        let public = request.certification_request_info.subject_pki.subject_public_key.data.to_vec();
        assert_eq!(&pem.contents[56..], public.as_slice());
    }

    #[test]
    fn sec1_keys_load_back_and_name_the_same_request() {
        let key = generate_key().unwrap();
        let pem = sec1_pem(&key).unwrap();
        let loaded = key_from_sec1_pem(pem.as_bytes()).unwrap();
        assert_eq!(loaded.public_key_raw(), key.public_key_raw());
        let usages = ["digital signature", "client auth"];
        let name = digested_name(&loaded, "win-a", &usages);
        assert_eq!(name, digested_name(&key, "win-a", &usages));
        assert!(name.starts_with("node-csr-"));
        assert_eq!(name.len(), "node-csr-".len() + 43);
        assert_ne!(name, digested_name(&key, "win-b", &usages));
        assert_ne!(name, digested_name(&generate_key().unwrap(), "win-a", &usages));
        assert!(key_from_sec1_pem(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").is_none());
    }

    /// A test-only P-256 key made by `openssl ecparam -name prime256v1 -genkey -noout`, and the name client-go's
    /// `digestedName` computes for it (Go 1.26, `crypto/x509` + `sha512.New512_256`, node `win-a`, usages
    /// `digital signature`, `client auth`).
    const OPENSSL_KEY: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIPUCKeBB5HyiAyfCC+OoXnT8LuP8NTdevosFQRHmTRdXoAoGCCqGSM49
AwEHoUQDQgAEn7PTzA7p87gzaEHy+0Lmq0/LM25e41l8XmisJxfKdJ/u7V1vi1Dt
lvyyBKcElmBhv1ZAtO6fTaHEMoKELGTyng==
-----END EC PRIVATE KEY-----
";
    const GO_DIGESTED_NAME: &str = "node-csr-A2DmsK61neYXdzKN1dzM5CBJ4esMXrIgsWx9ATcKHlQ";

    #[test]
    fn the_digested_name_matches_client_go_for_an_openssl_key() {
        let key = key_from_sec1_pem(OPENSSL_KEY.as_bytes()).unwrap();
        assert_eq!(digested_name(&key, "win-a", &["digital signature", "client auth"]), GO_DIGESTED_NAME);
        assert_eq!(sec1_pem(&key).unwrap(), OPENSSL_KEY);
    }

    #[test]
    fn serving_requests_carry_dns_and_ip_sans() {
        let sans = SubjectAltNames { dns: vec!["win-a".into()], ips: vec!["203.0.113.10".parse().unwrap()] };
        let generated = new_request("win-a", &sans).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(generated.request_pem.as_bytes()).unwrap();
        let (_, request) =
            x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents).unwrap();
        let extensions: Vec<_> = request.requested_extensions().unwrap().collect();
        let names: Vec<String> = extensions
            .iter()
            .filter_map(|extension| match extension {
                x509_parser::extensions::ParsedExtension::SubjectAlternativeName(san) => {
                    Some(san.general_names.iter().map(ToString::to_string).collect::<Vec<_>>())
                }
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(names, ["DNSName(win-a)", "IPAddress(cb:00:71:0a)"]); // 203.0.113.10
    }

    #[test]
    fn stored_pairs_are_found_through_the_current_symlink() {
        let directory = tempfile::tempdir().unwrap();
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let certificate = CertificateParams::new(vec!["x".to_owned()]).unwrap().self_signed(&key).unwrap();
        let current = store(directory.path(), "kubelet-client", &certificate.pem(), &sec1_pem(&key).unwrap()).unwrap();
        assert_eq!(current, directory.path().join("kubelet-client-current.pem"));
        let contents = std::fs::read(&current).unwrap();
        assert_eq!(check_pair(&contents, &contents), Ok(()));
        let target = std::fs::read_link(&current).unwrap();
        assert!(target.to_string_lossy().starts_with("kubelet-client-2"));
        assert!(!directory.path().join("kubelet-client-updated.pem").exists());
        assert_eq!(check_pair(b"", &contents), Err("no certificate".to_owned()));
        assert_eq!(check_pair(certificate.pem().as_bytes(), b""), Err("no private key".to_owned()));
    }
}
