//! SHA-256 digests of file contents, as hex on the wire and in records.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// A SHA-256 digest. Displays as lower-case hex; parses hex in either case (PowerShell's `Get-FileHash` prints
/// upper case).
///
/// ```
/// use wmco_ssh_transport::Sha256Digest;
///
/// let digest = Sha256Digest::of(b"abc");
/// assert_eq!(digest.to_string(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
/// assert_eq!("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD".parse(), Ok(digest));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Digest([u8; 32]);

/// Text that is not 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a SHA-256 digest is 64 hex digits")]
pub struct DigestParseError;

impl Sha256Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Sha256Digest {
        Sha256Digest(Sha256::digest(bytes).into())
    }

    /// A digest from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Sha256Digest {
        Sha256Digest(bytes)
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl FromStr for Sha256Digest {
    type Err = DigestParseError;

    fn from_str(text: &str) -> Result<Sha256Digest, DigestParseError> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut bytes).map_err(|_| DigestParseError)?;
        Ok(Sha256Digest(bytes))
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_length_is_refused() {
        assert_eq!("abcd".parse::<Sha256Digest>(), Err(DigestParseError));
    }
}
