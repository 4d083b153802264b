//! Public keys derived from PEM private keys: `openssh-key-v1`, PKCS#8, PKCS#1 and SEC1 (DER read with the
//! RustCrypto `der`, `pkcs8` and `sec1` crates). Only public values are copied out; the private scalar of an
//! Ed25519 PKCS#8 v1 key is used to compute its public key when the file does not carry it.

use pkcs8::der::asn1::{AnyRef, OctetStringRef, UintRef};
use pkcs8::der::{Decode as _, Reader as _, SliceReader};
use pkcs8::{ObjectIdentifier, PrivateKeyInfoRef};
use sec1::EcPrivateKey;

use super::PublicKey;
use super::kind::EcdsaCurve;
use super::pem::{PemProblem, first_block};
use super::wire::WireReader;
use crate::error::{KeyError, KeyFormat, Weakness};

const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const DSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10040.4.1");
const SECP224R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.33");
const SECP256R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const SECP384R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
const SECP521R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.35");

/// Derives the public key from a PEM body of one encoding.
type Derive = fn(&[u8]) -> Result<PublicKey, KeyError>;

/// The public key of the first PEM block of `text`.
pub(super) fn public_key_of(text: &str) -> Result<PublicKey, KeyError> {
    let block = first_block(text).map_err(|problem| match problem {
        PemProblem::NoBlock => KeyError::NotAKey { reason: "no `-----BEGIN` line (is this a PEM file?)".to_owned() },
        PemProblem::Damaged(reason) => KeyError::NotAKey { reason: format!("damaged PEM block: {reason}") },
    })?;
    let (format, derive): (KeyFormat, Derive) = match block.label.as_str() {
        "OPENSSH PRIVATE KEY" => (KeyFormat::OpenSshPrivate, openssh),
        "PRIVATE KEY" => (KeyFormat::Pkcs8, pkcs8),
        "ENCRYPTED PRIVATE KEY" => return Err(KeyError::Encrypted { format: KeyFormat::Pkcs8 }),
        "RSA PRIVATE KEY" => (KeyFormat::Pkcs1, |body| rsa(body, KeyFormat::Pkcs1)),
        "EC PRIVATE KEY" => (KeyFormat::Sec1, |body| sec1(body, None, KeyFormat::Sec1)),
        "DSA PRIVATE KEY" => (KeyFormat::DsaPem, |_| Err(KeyError::Weak(Weakness::Dsa))),
        other => return Err(KeyError::NotAKey { reason: format!("PEM label `{other}` is not a private key") }),
    };
    if block.legacy_encrypted {
        return Err(KeyError::Encrypted { format });
    }
    derive(&block.body)
}

/// `openssh-key-v1`: the public key blob sits unencrypted in the header.
fn openssh(body: &[u8]) -> Result<PublicKey, KeyError> {
    let format = KeyFormat::OpenSshPrivate;
    let truncated = || KeyError::malformed(format, "the header is truncated");
    let rest = body
        .strip_prefix(b"openssh-key-v1\0")
        .ok_or_else(|| KeyError::malformed(format, "the `openssh-key-v1` magic is missing"))?;
    let mut reader = WireReader::new(rest);
    let cipher = reader.string().ok_or_else(truncated)?;
    if cipher != b"none" {
        return Err(KeyError::Encrypted { format });
    }
    let _kdf_name = reader.string().ok_or_else(truncated)?;
    let _kdf_options = reader.string().ok_or_else(truncated)?;
    let key_count = reader.u32().ok_or_else(truncated)?;
    if key_count != 1 {
        return Err(KeyError::malformed(format, format!("the file holds {key_count} keys, not 1")));
    }
    let public_blob = reader.string().ok_or_else(truncated)?;
    PublicKey::from_blob(public_blob.to_vec(), format)
}

/// PKCS#8 `PrivateKeyInfo` / `OneAsymmetricKey`.
fn pkcs8(body: &[u8]) -> Result<PublicKey, KeyError> {
    let format = KeyFormat::Pkcs8;
    let info = PrivateKeyInfoRef::try_from(body).map_err(|error| der_error(format, &error))?;
    let inner = info.private_key.as_bytes();
    let algorithm = info.algorithm.oid;
    if algorithm == RSA_ENCRYPTION {
        rsa(inner, format)
    } else if algorithm == EC_PUBLIC_KEY {
        let curve = info.algorithm.parameters_oid().map_err(|error| der_error(format, &error))?;
        let outer_public = info.public_key.and_then(|bits| bits.as_bytes());
        sec1(inner, Some((curve, outer_public)), format)
    } else if algorithm == ED25519 {
        ed25519(inner, info.public_key.and_then(|bits| bits.as_bytes()), format)
    } else if algorithm == DSA {
        Err(KeyError::Weak(Weakness::Dsa))
    } else {
        Err(KeyError::UnsupportedAlgorithm { format, algorithm: algorithm.to_string() })
    }
}

/// PKCS#1 `RSAPrivateKey`: version, modulus, public exponent, then private values that are skipped.
fn rsa(der: &[u8], format: KeyFormat) -> Result<PublicKey, KeyError> {
    let parse = || -> pkcs8::der::Result<(Vec<u8>, Vec<u8>)> {
        let mut reader = SliceReader::new(der)?;
        let numbers = reader.sequence(|body: &mut SliceReader<'_>| {
            let _version = UintRef::decode(body)?;
            let modulus = UintRef::decode(body)?;
            let exponent = UintRef::decode(body)?;
            while !body.is_finished() {
                AnyRef::decode(body)?;
            }
            Ok::<_, pkcs8::der::Error>((modulus.as_bytes().to_vec(), exponent.as_bytes().to_vec()))
        })?;
        reader.finish()?;
        Ok(numbers)
    };
    let (modulus, exponent) = parse().map_err(|error| der_error(format, &error))?;
    PublicKey::rsa(&modulus, &exponent, format)
}

/// SEC1 `ECPrivateKey`; inside PKCS#8 the curve (and possibly the public key) come from the outer structure.
fn sec1(
    der: &[u8],
    outer: Option<(ObjectIdentifier, Option<&[u8]>)>,
    format: KeyFormat,
) -> Result<PublicKey, KeyError> {
    let key = EcPrivateKey::try_from(der).map_err(|error| KeyError::malformed(format, error.to_string()))?;
    let curve_oid = match (outer.map(|(curve, _)| curve), key.parameters.and_then(|p| p.named_curve())) {
        (Some(curve), _) | (None, Some(curve)) => curve,
        (None, None) => return Err(KeyError::malformed(format, "the EC private key does not name its curve")),
    };
    let curve = curve_of(curve_oid)
        .ok_or_else(|| KeyError::UnsupportedAlgorithm { format, algorithm: format!("ECDSA on curve {curve_oid}") })?;
    if curve == EcdsaCurve::P224 {
        return Err(KeyError::Weak(Weakness::EcdsaP224));
    }
    let point = key
        .public_key
        .or_else(|| outer.and_then(|(_, public)| public))
        .ok_or_else(|| KeyError::malformed(format, "the EC private key does not carry its public key"))?;
    PublicKey::ecdsa(curve, point, format)
}

/// Ed25519 in PKCS#8: `privateKey` wraps the 32-byte seed in an OCTET STRING; the public key is optional (v2).
fn ed25519(inner: &[u8], public: Option<&[u8]>, format: KeyFormat) -> Result<PublicKey, KeyError> {
    if let Some(public) = public {
        return PublicKey::ed25519(public, format);
    }
    let seed = <&OctetStringRef>::from_der(inner).map_err(|error| der_error(format, &error))?;
    let seed: &[u8; 32] =
        seed.as_bytes().try_into().map_err(|_| KeyError::malformed(format, "an Ed25519 private key has 32 bytes"))?;
    let verifying = ed25519_dalek::SigningKey::from_bytes(seed).verifying_key();
    PublicKey::ed25519(verifying.as_bytes(), format)
}

fn curve_of(oid: ObjectIdentifier) -> Option<EcdsaCurve> {
    [
        (SECP224R1, EcdsaCurve::P224),
        (SECP256R1, EcdsaCurve::P256),
        (SECP384R1, EcdsaCurve::P384),
        (SECP521R1, EcdsaCurve::P521),
    ]
    .into_iter()
    .find_map(|(known, curve)| (known == oid).then_some(curve))
}

fn der_error(format: KeyFormat, error: &impl std::fmt::Display) -> KeyError {
    KeyError::malformed(format, format!("DER: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::kind::KeyKind;

    #[test]
    fn non_private_labels_and_encryption_are_refused() {
        let public = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
        assert_eq!(
            public_key_of(public).unwrap_err().to_string(),
            "not a key: PEM label `PUBLIC KEY` is not a private key"
        );
        let encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        assert_eq!(
            public_key_of(encrypted).unwrap_err().to_string(),
            "the PKCS#8 private key is encrypted with a passphrase; provide an unencrypted key"
        );
        let legacy = "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END EC PRIVATE KEY-----\n";
        assert_eq!(public_key_of(legacy).unwrap_err(), KeyError::Encrypted { format: KeyFormat::Sec1 });
    }

    #[test]
    fn garbage_der_is_malformed_not_a_panic() {
        let text = "-----BEGIN RSA PRIVATE KEY-----\nAAEC\n-----END RSA PRIVATE KEY-----\n";
        let error = public_key_of(text).unwrap_err();
        assert!(matches!(error, KeyError::Malformed { format: KeyFormat::Pkcs1, .. }), "{error:?}");
    }

    #[test]
    fn curves_map_from_their_oids() {
        assert_eq!(curve_of(SECP384R1), Some(EcdsaCurve::P384));
        assert_eq!(curve_of(ObjectIdentifier::new_unwrap("1.3.132.0.10")), None);
        assert_eq!(KeyKind::Ecdsa(EcdsaCurve::P521).to_string(), "ECDSA nistp521");
    }
}
