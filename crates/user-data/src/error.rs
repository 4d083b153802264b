//! Why an operator key cannot be used for user data: unreadable or unsupported input, or a weak key.

use std::fmt;

/// Why a key is too weak to be trusted with every Windows node (the rules of [`crate::weakness_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weakness {
    /// An RSA key shorter than [`crate::MIN_RSA_BITS`].
    RsaTooShort {
        /// The modulus length in bits.
        bits: u32,
    },
    /// A DSA key (`ssh-dss`): 1024-bit keys only in OpenSSH, disabled by default since OpenSSH 7.0.
    Dsa,
    /// An ECDSA key on NIST P-224 (about 112 bits of security).
    EcdsaP224,
}

impl fmt::Display for Weakness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Weakness::RsaTooShort { bits } => {
                write!(f, "RSA key of {bits} bits is shorter than the {} bits required", crate::MIN_RSA_BITS)
            }
            Weakness::Dsa => {
                f.write_str("DSA keys are not accepted (use Ed25519, ECDSA P-256 or larger, or RSA >= 2048)")
            }
            Weakness::EcdsaP224 => {
                f.write_str("ECDSA keys on curve P-224 are not accepted (use P-256 or larger, Ed25519, or RSA >= 2048)")
            }
        }
    }
}

/// The encoding a key was read from, named in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFormat {
    /// `-----BEGIN OPENSSH PRIVATE KEY-----`.
    OpenSshPrivate,
    /// `-----BEGIN PRIVATE KEY-----` (PKCS#8).
    Pkcs8,
    /// `-----BEGIN RSA PRIVATE KEY-----` (PKCS#1).
    Pkcs1,
    /// `-----BEGIN EC PRIVATE KEY-----` (SEC1).
    Sec1,
    /// `-----BEGIN DSA PRIVATE KEY-----` (OpenSSL's legacy DSA encoding).
    DsaPem,
    /// An OpenSSH public key line (`ssh-ed25519 AAAA... comment`).
    OpenSshPublic,
}

impl fmt::Display for KeyFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyFormat::OpenSshPrivate => "OpenSSH private key",
            KeyFormat::Pkcs8 => "PKCS#8 private key",
            KeyFormat::Pkcs1 => "PKCS#1 RSA private key",
            KeyFormat::Sec1 => "SEC1 EC private key",
            KeyFormat::DsaPem => "PEM DSA private key",
            KeyFormat::OpenSshPublic => "OpenSSH public key",
        })
    }
}

/// Why no public key could be taken from the input. No variant carries key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The text is neither a PEM private key nor an OpenSSH public key line.
    #[error("not a key: {reason}")]
    NotAKey {
        /// What the text looked like instead.
        reason: String,
    },
    /// The private key is protected by a passphrase; the operator needs it unencrypted.
    #[error("the {format} is encrypted with a passphrase; provide an unencrypted key")]
    Encrypted {
        /// The encoding read.
        format: KeyFormat,
    },
    /// The key's algorithm is not one an SSH client can authenticate with here.
    #[error("the {format} uses an unsupported algorithm: {algorithm}")]
    UnsupportedAlgorithm {
        /// The encoding read.
        format: KeyFormat,
        /// The algorithm's name or object identifier.
        algorithm: String,
    },
    /// The encoding is damaged or incomplete.
    #[error("malformed {format}: {reason}")]
    Malformed {
        /// The encoding read.
        format: KeyFormat,
        /// What is wrong, without any of the key's content.
        reason: String,
    },
    /// The key is readable but too weak (see [`Weakness`]).
    #[error("weak key: {0}")]
    Weak(Weakness),
}

impl KeyError {
    /// The weakness, when the key was refused for being weak rather than unreadable.
    pub fn weakness(&self) -> Option<Weakness> {
        match self {
            KeyError::Weak(weakness) => Some(*weakness),
            _ => None,
        }
    }

    pub(crate) fn malformed(format: KeyFormat, reason: impl Into<String>) -> KeyError {
        KeyError::Malformed { format, reason: reason.into() }
    }
}
