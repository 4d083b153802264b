//! Host keys as the server presents them, their OpenSSH-style SHA-256 fingerprints, and the policy that decides
//! whether a presented key is accepted.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use sha2::{Digest as _, Sha256};

use crate::key::read_string;

/// A server's public host key: its algorithm name and its SSH wire-format blob.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HostKey {
    algorithm: String,
    blob: Vec<u8>,
}

/// Why a host key text or blob cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HostKeyParseError {
    /// The text is not `TYPE BASE64`.
    #[error("a host key is written `TYPE BASE64` (as in known_hosts), got {0} field(s)")]
    Fields(usize),
    /// The base64 part does not decode.
    #[error("the host key's base64 does not decode")]
    Base64,
    /// The blob does not start with an algorithm name.
    #[error("the host key blob does not start with its algorithm name")]
    Blob,
    /// The algorithm written before the key differs from the one inside the blob.
    #[error("the host key is labelled {written} but its blob holds a {inside} key")]
    AlgorithmMismatch {
        /// The `TYPE` field.
        written: String,
        /// The algorithm inside the blob.
        inside: String,
    },
}

impl HostKey {
    /// A host key from its SSH wire-format blob (the algorithm is read from the blob).
    pub fn from_blob(blob: Vec<u8>) -> Result<HostKey, HostKeyParseError> {
        let mut reader = blob.as_slice();
        let algorithm = read_string(&mut reader).ok_or(HostKeyParseError::Blob)?;
        let algorithm = String::from_utf8(algorithm.to_vec()).map_err(|_| HostKeyParseError::Blob)?;
        Ok(HostKey { algorithm, blob })
    }

    /// A host key from `TYPE BASE64` text, the form of a `known_hosts` entry or a `.pub` file (a trailing comment
    /// is ignored).
    ///
    /// ```
    /// use wmco_ssh_transport::HostKey;
    ///
    /// let key = HostKey::from_openssh("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey").unwrap();
    /// assert_eq!(key.algorithm(), "ssh-ed25519");
    /// assert_eq!(key.fingerprint().to_string(), "SHA256:AC9Rqa8b49G9SdQIxp8AxvHLAYbT4XZ2HwrlY5Semk0");
    /// ```
    pub fn from_openssh(text: &str) -> Result<HostKey, HostKeyParseError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let [written, encoded, ..] = fields.as_slice() else {
            return Err(HostKeyParseError::Fields(fields.len()));
        };
        let blob = STANDARD.decode(encoded).map_err(|_| HostKeyParseError::Base64)?;
        let key = HostKey::from_blob(blob)?;
        if key.algorithm != *written {
            return Err(HostKeyParseError::AlgorithmMismatch { written: (*written).to_owned(), inside: key.algorithm });
        }
        Ok(key)
    }

    /// The key algorithm, e.g. `ssh-ed25519`, `ecdsa-sha2-nistp256`, `ssh-rsa`.
    pub fn algorithm(&self) -> &str {
        &self.algorithm
    }

    /// The SSH wire-format blob.
    pub fn blob(&self) -> &[u8] {
        &self.blob
    }

    /// `TYPE BASE64`, the form [`HostKey::from_openssh`] reads and operators record.
    pub fn to_openssh(&self) -> String {
        format!("{} {}", self.algorithm, STANDARD.encode(&self.blob))
    }

    /// The SHA-256 fingerprint, as `ssh-keygen -l` prints it.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint(Sha256::digest(&self.blob).into())
    }
}

impl fmt::Debug for HostKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostKey({} {})", self.algorithm, self.fingerprint())
    }
}

impl fmt::Display for HostKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.algorithm, self.fingerprint())
    }
}

/// The SHA-256 digest of a host key blob; displays as OpenSSH does: `SHA256:` and unpadded base64.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SHA256:{}", STANDARD_NO_PAD.encode(self.0))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Which host keys a connection accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyPolicy {
    /// Only this key; anything else is [`crate::TransportError::HostKeyMismatch`].
    Pinned(HostKey),
    /// Accept the first key seen and return it through [`crate::RemoteHost::host_key`] so the caller records it;
    /// later connections of the same host handle must present the same key.
    TrustOnFirstUse,
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED25519_LINE: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey";

    #[test]
    fn openssh_text_round_trips() {
        let key = HostKey::from_openssh(&format!("{ED25519_LINE} root@host")).unwrap();
        assert_eq!(key.to_openssh(), ED25519_LINE);
        assert_eq!(key.blob().len(), 51);
    }

    #[test]
    fn label_must_match_blob() {
        let text = ED25519_LINE.replace("ssh-ed25519", "ssh-rsa");
        assert_eq!(
            HostKey::from_openssh(&text),
            Err(HostKeyParseError::AlgorithmMismatch { written: "ssh-rsa".into(), inside: "ssh-ed25519".into() })
        );
    }

    #[test]
    fn single_field_is_refused() {
        assert_eq!(HostKey::from_openssh("ssh-ed25519"), Err(HostKeyParseError::Fields(1)));
    }

    #[test]
    fn bad_base64_is_refused() {
        assert_eq!(HostKey::from_openssh("ssh-ed25519 !!!"), Err(HostKeyParseError::Base64));
    }
}
