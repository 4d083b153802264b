//! What kind of key the operator holds, as far as the weak-key rules care: [`KeyKind`] and, for ECDSA, its
//! [`EcdsaCurve`].

use std::fmt;

/// A NIST curve an ECDSA key can sit on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcdsaCurve {
    /// NIST P-224 (secp224r1); weak.
    P224,
    /// NIST P-256 (secp256r1).
    P256,
    /// NIST P-384 (secp384r1).
    P384,
    /// NIST P-521 (secp521r1).
    P521,
}

impl EcdsaCurve {
    /// The curve's SSH identifier (RFC 5656 §6.1).
    pub fn ssh_identifier(self) -> &'static str {
        match self {
            EcdsaCurve::P224 => "nistp224",
            EcdsaCurve::P256 => "nistp256",
            EcdsaCurve::P384 => "nistp384",
            EcdsaCurve::P521 => "nistp521",
        }
    }

    /// The length of an uncompressed point (`0x04 || X || Y`) on this curve.
    pub(super) fn uncompressed_point_len(self) -> usize {
        match self {
            EcdsaCurve::P224 => 57,
            EcdsaCurve::P256 => 65,
            EcdsaCurve::P384 => 97,
            EcdsaCurve::P521 => 133,
        }
    }

    /// The curve of an SSH key type name: `ecdsa-sha2-nistp256`, or the RFC 5656 OID form for P-224.
    pub(super) fn from_ssh_type(type_name: &str) -> Option<EcdsaCurve> {
        match type_name.strip_prefix("ecdsa-sha2-")? {
            "nistp224" | "1.3.132.0.33" => Some(EcdsaCurve::P224),
            "nistp256" => Some(EcdsaCurve::P256),
            "nistp384" => Some(EcdsaCurve::P384),
            "nistp521" => Some(EcdsaCurve::P521),
            _ => None,
        }
    }
}

/// What kind of key it is, as far as the weak-key rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// RSA with a modulus of `bits` bits.
    Rsa {
        /// The modulus length.
        bits: u32,
    },
    /// DSA (`ssh-dss`).
    Dsa,
    /// ECDSA on a NIST curve.
    Ecdsa(EcdsaCurve),
    /// Ed25519.
    Ed25519,
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyKind::Rsa { bits } => write!(f, "RSA {bits}"),
            KeyKind::Dsa => f.write_str("DSA"),
            KeyKind::Ecdsa(curve) => write!(f, "ECDSA {}", curve.ssh_identifier()),
            KeyKind::Ed25519 => f.write_str("Ed25519"),
        }
    }
}
