//! The weak-key rules: which key kinds the operator refuses to put on every Windows node.

use crate::error::Weakness;
use crate::key::kind::{EcdsaCurve, KeyKind};

/// The shortest RSA modulus accepted, in bits.
pub const MIN_RSA_BITS: u32 = 2048;

/// Why `kind` is too weak, or `None` when it is acceptable.
///
/// RSA below [`MIN_RSA_BITS`], DSA and ECDSA on P-224 are weak; Ed25519 and ECDSA on P-256, P-384 and P-521 are not.
///
/// ```
/// use wmco_user_data::{EcdsaCurve, KeyKind, Weakness, weakness_of};
///
/// assert_eq!(weakness_of(KeyKind::Rsa { bits: 1024 }), Some(Weakness::RsaTooShort { bits: 1024 }));
/// assert_eq!(weakness_of(KeyKind::Ecdsa(EcdsaCurve::P224)), Some(Weakness::EcdsaP224));
/// assert_eq!(weakness_of(KeyKind::Ed25519), None);
/// ```
pub fn weakness_of(kind: KeyKind) -> Option<Weakness> {
    match kind {
        KeyKind::Rsa { bits } if bits < MIN_RSA_BITS => Some(Weakness::RsaTooShort { bits }),
        KeyKind::Dsa => Some(Weakness::Dsa),
        KeyKind::Ecdsa(EcdsaCurve::P224) => Some(Weakness::EcdsaP224),
        KeyKind::Rsa { .. } | KeyKind::Ecdsa(_) | KeyKind::Ed25519 => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_boundary_is_2048_bits() {
        assert_eq!(weakness_of(KeyKind::Rsa { bits: 2047 }), Some(Weakness::RsaTooShort { bits: 2047 }));
        assert_eq!(weakness_of(KeyKind::Rsa { bits: 2048 }), None);
    }

    #[test]
    fn dsa_and_p224_are_weak_other_curves_are_not() {
        assert_eq!(weakness_of(KeyKind::Dsa), Some(Weakness::Dsa));
        assert_eq!(weakness_of(KeyKind::Ecdsa(EcdsaCurve::P224)), Some(Weakness::EcdsaP224));
        for curve in [EcdsaCurve::P256, EcdsaCurve::P384, EcdsaCurve::P521] {
            assert_eq!(weakness_of(KeyKind::Ecdsa(curve)), None, "{curve:?}");
        }
        assert_eq!(weakness_of(KeyKind::Ed25519), None);
    }

    #[test]
    fn weaknesses_name_the_problem() {
        assert_eq!(
            Weakness::RsaTooShort { bits: 1024 }.to_string(),
            "RSA key of 1024 bits is shorter than the 2048 bits required"
        );
        assert!(Weakness::Dsa.to_string().starts_with("DSA keys are not accepted"));
        assert!(Weakness::EcdsaP224.to_string().starts_with("ECDSA keys on curve P-224 are not accepted"));
    }

    proptest! {
        #[test]
        fn rsa_is_weak_exactly_below_2048_bits(bits in 0u32..16_384) {
            let weak = weakness_of(KeyKind::Rsa { bits });
            prop_assert_eq!(weak.is_some(), bits < 2048);
            if let Some(weakness) = weak {
                prop_assert_eq!(weakness, Weakness::RsaTooShort { bits });
            }
        }
    }
}
