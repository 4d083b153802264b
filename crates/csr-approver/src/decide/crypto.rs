//! Rules B1–B3: strict encoding, an allowed and verifying signature, an allowed key. Failures are DENY.
//!
//! Order inside the group: B1, the B2 algorithm allow-list, B3, then B2's signature verification — so a request
//! with a refused key (RSA-1024, P-224, secp256k1) is reported as B3 rather than as a signature the verifier
//! cannot check.

use super::{Check, deny};
use crate::RuleId;
use crate::request::{KeyKind, ParsedRequest, RequestBody, SignatureAlgorithm};

const MIN_RSA_BITS: usize = 2048;
const MAX_RSA_BITS: usize = 8192;
const RSA_EXPONENT: u64 = 65537;

pub(super) fn check(request: &ParsedRequest) -> Check<&RequestBody> {
    if let Some(defect) = request.defects.first() {
        return Err(deny(RuleId::B1, format!("not a strict PKCS#10 request: {defect}")));
    }
    let body = request.body.as_ref().ok_or_else(|| deny(RuleId::B1, "the PKCS#10 request does not parse"))?;
    if matches!(body.signature_algorithm, SignatureAlgorithm::Other(_)) {
        return Err(deny(RuleId::B2, format!("signature {} is not allowed", body.signature_algorithm)));
    }
    check_key(&body.public_key.kind)?;
    request.verify_signature().map_err(|error| deny(RuleId::B2, format!("{}: {error}", body.signature_algorithm)))?;
    Ok(body)
}

fn check_key(kind: &KeyKind) -> Check<()> {
    let allowed = match kind {
        KeyKind::EcdsaP256 | KeyKind::EcdsaP384 => true,
        KeyKind::Rsa { modulus_bits, exponent } => {
            (MIN_RSA_BITS..=MAX_RSA_BITS).contains(modulus_bits) && *exponent == Some(RSA_EXPONENT)
        }
        KeyKind::EcdsaOther { .. } | KeyKind::Ed25519 | KeyKind::Dsa | KeyKind::Other { .. } => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(deny(RuleId::B3, format!("key {kind} is not allowed (P-256, P-384, or RSA 2048-8192 with e = 65537)")))
    }
}
