//! Reads a DER request with x509-parser into the owned facts of the parent module: subject attributes with their
//! string types, signature algorithm, key kind and size, and requested extensions with SANs of every type.

use std::collections::HashSet;

use x509_parser::asn1_rs::{Oid, Tag};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::oid_registry::{
    OID_EC_P256, OID_KEY_TYPE_DSA, OID_KEY_TYPE_EC_PUBLIC_KEY, OID_NIST_EC_P384, OID_PKCS1_RSAENCRYPTION,
    OID_PKCS1_SHA256WITHRSA, OID_PKCS1_SHA384WITHRSA, OID_PKCS1_SHA512WITHRSA, OID_SIG_ECDSA_WITH_SHA256,
    OID_SIG_ECDSA_WITH_SHA384, OID_SIG_ECDSA_WITH_SHA512, OID_SIG_ED25519, OID_X509_COMMON_NAME,
    OID_X509_EXT_SUBJECT_ALT_NAME, OID_X509_ORGANIZATION_NAME,
};
use x509_parser::prelude::FromDer as _;
use x509_parser::public_key::PublicKey;
use x509_parser::x509::{AttributeTypeAndValue, SubjectPublicKeyInfo, X509Name};

use super::{
    AttributeType, EncodingDefect, ExtensionContent, KeyKind, PublicKeyFacts, RequestBody, RequestedExtension,
    SanEntry, SignatureAlgorithm, StringType, Subject, SubjectAttribute, sha256,
};

/// Reads the subject Name (whole encoding) into RDNs of attributes.
pub(super) fn read_subject(name_der: &[u8]) -> Result<Subject, EncodingDefect> {
    let (rest, name) = X509Name::from_der(name_der).map_err(|_| EncodingDefect::MalformedDer { what: "subject" })?;
    if !rest.is_empty() {
        return Err(EncodingDefect::MalformedDer { what: "subject" });
    }
    Ok(subject_of(&name))
}

fn subject_of(name: &X509Name<'_>) -> Subject {
    let rdns = name.iter_rdn().map(|rdn| rdn.iter().map(subject_attribute).collect()).collect();
    Subject { rdns }
}

fn subject_attribute(attribute: &AttributeTypeAndValue<'_>) -> SubjectAttribute {
    let oid = attribute.attr_type();
    let attribute_type = if *oid == OID_X509_COMMON_NAME {
        AttributeType::CommonName
    } else if *oid == OID_X509_ORGANIZATION_NAME {
        AttributeType::Organization
    } else {
        AttributeType::Other(oid.to_id_string())
    };
    let string_type = match attribute.attr_value().tag() {
        Tag::PrintableString => StringType::Printable,
        Tag::Utf8String => StringType::Utf8,
        other => StringType::Other(other.0),
    };
    SubjectAttribute { attribute_type, string_type, value: attribute.as_str().ok().map(str::to_owned) }
}

/// Fully parses the request; returns the body and the defects only a full parse finds (repeated extensions).
pub(super) fn read_body(der: &[u8]) -> Result<(RequestBody, Vec<EncodingDefect>), EncodingDefect> {
    let (_, request) = X509CertificationRequest::from_der(der)
        .map_err(|error| EncodingDefect::Pkcs10 { message: error.to_string() })?;
    let info = &request.certification_request_info;
    let signature_algorithm = signature_algorithm_of(&request.signature_algorithm.algorithm);
    let public_key = PublicKeyFacts { kind: key_kind_of(&info.subject_pki), spki_sha256: sha256(info.subject_pki.raw) };
    let (extensions, defects) = extensions_of(&request);
    Ok((RequestBody { signature_algorithm, public_key, extensions }, defects))
}

fn signature_algorithm_of(oid: &Oid<'_>) -> SignatureAlgorithm {
    let known = [
        (OID_SIG_ECDSA_WITH_SHA256, SignatureAlgorithm::EcdsaSha256),
        (OID_SIG_ECDSA_WITH_SHA384, SignatureAlgorithm::EcdsaSha384),
        (OID_SIG_ECDSA_WITH_SHA512, SignatureAlgorithm::EcdsaSha512),
        (OID_PKCS1_SHA256WITHRSA, SignatureAlgorithm::RsaSha256),
        (OID_PKCS1_SHA384WITHRSA, SignatureAlgorithm::RsaSha384),
        (OID_PKCS1_SHA512WITHRSA, SignatureAlgorithm::RsaSha512),
    ];
    known
        .into_iter()
        .find(|(known_oid, _)| known_oid == oid)
        .map_or_else(|| SignatureAlgorithm::Other(named_oid(&oid.to_id_string())), |(_, algorithm)| algorithm)
}

/// A dotted OID with the common name of the refused curves and algorithms it may denote, for readable reasons.
fn named_oid(dotted: &str) -> String {
    let name = match dotted {
        "1.3.132.0.33" => "P-224",
        "1.3.132.0.35" => "P-521",
        "1.3.132.0.10" => "secp256k1",
        "1.2.840.113549.1.1.4" => "md5WithRSAEncryption",
        "1.2.840.113549.1.1.5" => "sha1WithRSAEncryption",
        "1.2.840.113549.1.1.10" => "RSASSA-PSS",
        "1.2.840.10045.4.1" => "ecdsa-with-SHA1",
        "1.2.840.10040.4.3" => "dsa-with-SHA1",
        "2.16.840.1.101.3.4.3.2" => "dsa-with-SHA256",
        "1.3.101.112" => "Ed25519",
        _ => return dotted.to_owned(),
    };
    format!("{name} ({dotted})")
}

fn key_kind_of(spki: &SubjectPublicKeyInfo<'_>) -> KeyKind {
    let algorithm = &spki.algorithm.algorithm;
    if *algorithm == OID_KEY_TYPE_EC_PUBLIC_KEY {
        let curve = spki.algorithm.parameters.as_ref().and_then(|parameters| parameters.as_oid().ok());
        match curve {
            Some(curve) if curve == OID_EC_P256 => KeyKind::EcdsaP256,
            Some(curve) if curve == OID_NIST_EC_P384 => KeyKind::EcdsaP384,
            Some(curve) => KeyKind::EcdsaOther { curve: named_oid(&curve.to_id_string()) },
            None => KeyKind::EcdsaOther { curve: String::from("unnamed") },
        }
    } else if *algorithm == OID_PKCS1_RSAENCRYPTION {
        match spki.parsed() {
            Ok(PublicKey::RSA(rsa)) => {
                KeyKind::Rsa { modulus_bits: significant_bits(rsa.modulus), exponent: rsa.try_exponent().ok() }
            }
            _ => KeyKind::Rsa { modulus_bits: 0, exponent: None },
        }
    } else if *algorithm == OID_SIG_ED25519 {
        KeyKind::Ed25519
    } else if *algorithm == OID_KEY_TYPE_DSA {
        KeyKind::Dsa
    } else {
        KeyKind::Other { algorithm: algorithm.to_id_string() }
    }
}

/// Bits of a big-endian unsigned integer without its leading zeros.
fn significant_bits(big_endian: &[u8]) -> usize {
    let significant = big_endian.iter().position(|byte| *byte != 0).map_or(&[][..], |start| &big_endian[start..]);
    match significant.first() {
        Some(first) => (significant.len() - 1) * 8 + (8 - first.leading_zeros() as usize),
        None => 0,
    }
}

fn extensions_of(request: &X509CertificationRequest<'_>) -> (Vec<RequestedExtension>, Vec<EncodingDefect>) {
    let mut extensions = Vec::new();
    let mut defects = Vec::new();
    let mut seen = HashSet::new();
    let requested = request.certification_request_info.iter_attributes().filter_map(|attribute| {
        match attribute.parsed_attribute() {
            x509_parser::cri_attributes::ParsedCriAttribute::ExtensionRequest(request) => Some(&request.extensions),
            _ => None,
        }
    });
    for extension in requested.flatten() {
        let oid = extension.oid.to_id_string();
        if !seen.insert(oid.clone()) {
            defects.push(EncodingDefect::RepeatedExtension { oid: oid.clone() });
        }
        let content = if extension.oid == OID_X509_EXT_SUBJECT_ALT_NAME {
            match extension.parsed_extension() {
                ParsedExtension::SubjectAlternativeName(names) => {
                    ExtensionContent::SubjectAltName(names.general_names.iter().map(san_entry).collect())
                }
                _ => ExtensionContent::MalformedSubjectAltName,
            }
        } else {
            ExtensionContent::Other
        };
        extensions.push(RequestedExtension { oid, critical: extension.critical, content });
    }
    (extensions, defects)
}

fn san_entry(name: &GeneralName<'_>) -> SanEntry {
    match name {
        GeneralName::DNSName(dns) => SanEntry::Dns((*dns).to_owned()),
        GeneralName::IPAddress(bytes) => SanEntry::Ip(bytes.to_vec()),
        GeneralName::RFC822Name(email) => SanEntry::Email((*email).to_owned()),
        GeneralName::URI(uri) => SanEntry::Uri((*uri).to_owned()),
        GeneralName::OtherName(..) => SanEntry::Other("otherName"),
        GeneralName::X400Address(_) => SanEntry::Other("x400Address"),
        GeneralName::DirectoryName(_) => SanEntry::Other("directoryName"),
        GeneralName::EDIPartyName(_) => SanEntry::Other("ediPartyName"),
        GeneralName::RegisteredID(_) => SanEntry::Other("registeredID"),
        GeneralName::Invalid(..) => SanEntry::Other("invalid GeneralName"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_bits_ignores_leading_zeros() {
        assert_eq!(significant_bits(&[0x00, 0x80, 0x00]), 16);
        assert_eq!(significant_bits(&[0x01, 0xff]), 9);
        assert_eq!(significant_bits(&[0x00, 0x00]), 0);
        assert_eq!(significant_bits(&[]), 0);
    }
}
