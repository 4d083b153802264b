//! SHA-256 digests: the typed value, its hex text form (lower case, as `sha256sum` writes it; either case and
//! surrounding white space read, as PowerShell's `Get-FileHash` prints it), and streamed hashing of files and byte
//! slices. The payload's checksums and the SSH transport's upload checks use this one type.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

/// Bytes read from a file per `read` call while hashing it (large enough that syscalls do not dominate).
const READ_CHUNK_BYTES: usize = 256 * 1024;

/// A SHA-256 digest. Displays and serializes as 64 lower-case hex characters; parses either case (PowerShell's
/// `Get-FileHash` prints upper case).
///
/// ```
/// use wmco_vocabulary::Sha256Digest;
///
/// let digest = Sha256Digest::of_bytes(b"abc");
/// assert_eq!(digest.to_string(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
/// assert_eq!(digest.to_string().to_uppercase().parse::<Sha256Digest>(), Ok(digest));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256Digest([u8; 32]);

/// The text is not 64 hex characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a SHA-256 digest (expected 64 hex characters)")]
pub struct DigestParseError {
    /// The rejected text.
    pub text: String,
}

impl Sha256Digest {
    /// The digest of `bytes`.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// The digest of everything `reader` yields, read in chunks so memory stays constant whatever the size.
    ///
    /// Returns the digest and the number of bytes read.
    pub fn of_reader(mut reader: impl Read) -> io::Result<(Self, u64)> {
        let mut hasher = Sha256::new();
        let mut buffer = vec![0_u8; READ_CHUNK_BYTES];
        let mut total_bytes = 0_u64;
        loop {
            let read = match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            hasher.update(&buffer[..read]);
            total_bytes += read as u64;
        }
        Ok((Self(hasher.finalize().into()), total_bytes))
    }

    /// The digest of the file at `path`, streamed. Returns the digest and the file's size in bytes.
    pub fn of_file(path: &Path) -> io::Result<(Self, u64)> {
        Self::of_reader(File::open(path)?)
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl From<[u8; 32]> for Sha256Digest {
    fn from(bytes: [u8; 32]) -> Self {
        Self(bytes)
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

impl FromStr for Sha256Digest {
    type Err = DigestParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut bytes = [0_u8; 32];
        hex::decode_to_slice(text.trim(), &mut bytes).map_err(|_| DigestParseError { text: text.to_owned() })?;
        Ok(Self(bytes))
    }
}

impl Serialize for Sha256Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Sha256Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn empty_input_has_the_well_known_digest() {
        assert_eq!(Sha256Digest::of_bytes(b"").to_string(), EMPTY_SHA256);
        let (digest, size) = Sha256Digest::of_reader(io::empty()).unwrap();
        assert_eq!((digest.to_string().as_str(), size), (EMPTY_SHA256, 0));
    }

    #[test]
    fn streamed_digest_equals_one_shot_digest_across_chunk_boundaries() {
        let bytes: Vec<u8> = (0..READ_CHUNK_BYTES * 2 + 17).map(|index| (index % 251) as u8).collect();
        let (streamed, size) = Sha256Digest::of_reader(bytes.as_slice()).unwrap();
        assert_eq!(streamed, Sha256Digest::of_bytes(&bytes));
        assert_eq!(size, bytes.len() as u64);
    }

    #[test]
    fn parse_rejects_wrong_length_and_non_hex() {
        assert!("abc".parse::<Sha256Digest>().is_err());
        let not_hex = "g".repeat(64);
        assert_eq!(not_hex.parse::<Sha256Digest>(), Err(DigestParseError { text: not_hex.clone() }));
    }

    #[test]
    fn parse_reads_get_file_hash_output_with_its_line_end() {
        let printed = format!("{}\r\n", EMPTY_SHA256.to_uppercase());
        assert_eq!(printed.parse::<Sha256Digest>(), Ok(Sha256Digest::of_bytes(b"")));
    }

    #[test]
    fn serde_round_trips_as_lower_case_hex() {
        let digest = Sha256Digest::of_bytes(b"");
        let json = serde_json::to_string(&digest).unwrap();
        assert_eq!(json, format!("\"{EMPTY_SHA256}\""));
        assert_eq!(serde_json::from_str::<Sha256Digest>(&json.to_uppercase()).unwrap(), digest);
    }
}
