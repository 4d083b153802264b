//! Client credentials: a PEM private key (RSA, ECDSA or Ed25519; OpenSSH, PKCS#8, PKCS#1 or SEC1 encoding) held so
//! that its material never reaches logs, errors or `Debug` output.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// The text encoding a private key file uses, read from its PEM label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEncoding {
    /// `-----BEGIN OPENSSH PRIVATE KEY-----` (the `ssh-keygen` default).
    OpenSsh,
    /// `-----BEGIN PRIVATE KEY-----` (PKCS#8, any algorithm).
    Pkcs8,
    /// `-----BEGIN RSA PRIVATE KEY-----` (PKCS#1).
    Pkcs1,
    /// `-----BEGIN EC PRIVATE KEY-----` (SEC1, written by `ssh-keygen -m PEM` for ECDSA).
    Sec1,
}

impl fmt::Display for KeyEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyEncoding::OpenSsh => "OpenSSH",
            KeyEncoding::Pkcs8 => "PKCS#8",
            KeyEncoding::Pkcs1 => "PKCS#1",
            KeyEncoding::Sec1 => "SEC1",
        })
    }
}

/// Why a private key cannot be used. No variant carries key material.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key file could not be read.
    #[error("cannot read private key file {path}: {source}")]
    Unreadable {
        /// The file that was read.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The key is protected by a passphrase; the operator needs an unencrypted key.
    #[error("the {encoding} private key is encrypted with a passphrase; provide an unencrypted key")]
    Encrypted {
        /// The key's encoding.
        encoding: KeyEncoding,
    },
    /// The text is not a PEM private key this crate understands.
    #[error("not a supported private key: {reason}")]
    Unsupported {
        /// What was wrong, without any of the key's content.
        reason: String,
    },
}

/// An unencrypted private key in PEM text, ready for SSH public-key authentication.
///
/// Cloning is cheap (the text is shared). `Debug` shows only the encoding and, for OpenSSH keys, the algorithm.
///
/// ```
/// use wmco_ssh_transport::{KeyEncoding, PrivateKey};
///
/// let encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n";
/// let error = PrivateKey::from_pem(encrypted).unwrap_err();
/// assert_eq!(error.to_string(), "the PKCS#8 private key is encrypted with a passphrase; provide an unencrypted key");
/// ```
#[derive(Clone)]
pub struct PrivateKey {
    pem: Arc<str>,
    encoding: KeyEncoding,
    algorithm: Option<String>,
}

impl PrivateKey {
    /// Reads and checks a PEM private key file.
    pub fn from_file(path: &Path) -> Result<PrivateKey, KeyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| KeyError::Unreadable { path: path.to_path_buf(), source })?;
        PrivateKey::from_pem(&text)
    }

    /// Checks PEM text: a supported label, and no passphrase encryption.
    pub fn from_pem(text: &str) -> Result<PrivateKey, KeyError> {
        let (label, body) = pem_block(text)?;
        let (encoding, algorithm) = match label {
            "OPENSSH PRIVATE KEY" => (KeyEncoding::OpenSsh, Some(openssh_algorithm(&body)?)),
            "PRIVATE KEY" => (KeyEncoding::Pkcs8, None),
            "ENCRYPTED PRIVATE KEY" => return Err(KeyError::Encrypted { encoding: KeyEncoding::Pkcs8 }),
            "RSA PRIVATE KEY" => (KeyEncoding::Pkcs1, Some("ssh-rsa".to_owned())),
            "EC PRIVATE KEY" => (KeyEncoding::Sec1, Some("ecdsa".to_owned())),
            other => {
                return Err(KeyError::Unsupported { reason: format!("PEM label `{other}` is not a private key") });
            }
        };
        if text.contains("Proc-Type: 4,ENCRYPTED") {
            return Err(KeyError::Encrypted { encoding });
        }
        Ok(PrivateKey { pem: Arc::from(text), encoding, algorithm })
    }

    /// The key's encoding.
    pub fn encoding(&self) -> KeyEncoding {
        self.encoding
    }

    /// The key's algorithm as far as the encoding says without decoding key material (`ssh-ed25519`, `ssh-rsa`,
    /// `ecdsa`, `ecdsa-sha2-nistp256`, ...); `None` for PKCS#8, whose algorithm sits inside the DER.
    pub fn algorithm(&self) -> Option<&str> {
        self.algorithm.as_deref()
    }

    /// The PEM text, for handing to libssh2 only.
    pub(crate) fn pem(&self) -> &str {
        &self.pem
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateKey")
            .field("encoding", &self.encoding)
            .field("algorithm", &self.algorithm)
            .field("material", &"<redacted>")
            .finish()
    }
}

/// The label and decoded body of the first PEM block in `text`.
fn pem_block(text: &str) -> Result<(&str, Vec<u8>), KeyError> {
    let unsupported = |reason: &str| KeyError::Unsupported { reason: reason.to_owned() };
    let begin = text.find("-----BEGIN ").ok_or_else(|| unsupported("no `-----BEGIN` line (is this a PEM file?)"))?;
    let after_begin = &text[begin + "-----BEGIN ".len()..];
    let label_end = after_begin.find("-----").ok_or_else(|| unsupported("malformed BEGIN line"))?;
    let label = &after_begin[..label_end];
    let end_marker = format!("-----END {label}-----");
    let body_start = &after_begin[label_end + "-----".len()..];
    let body_end = body_start.find(&end_marker).ok_or_else(|| unsupported("no matching END line"))?;
    let base64_text: String = body_start[..body_end]
        .lines()
        .filter(|line| !line.contains(':'))
        .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
        .collect();
    let body = STANDARD.decode(base64_text.as_bytes()).map_err(|_| unsupported("the PEM body is not base64"))?;
    Ok((label, body))
}

/// Reads the cipher and the key algorithm of an `openssh-key-v1` blob, refusing encrypted keys.
fn openssh_algorithm(blob: &[u8]) -> Result<String, KeyError> {
    const MAGIC: &[u8] = b"openssh-key-v1\0";
    let malformed = || KeyError::Unsupported { reason: "malformed OpenSSH private key".to_owned() };
    let mut reader = blob.strip_prefix(MAGIC).ok_or_else(malformed)?;
    let cipher = read_string(&mut reader).ok_or_else(malformed)?;
    if cipher != b"none" {
        return Err(KeyError::Encrypted { encoding: KeyEncoding::OpenSsh });
    }
    let _kdf_name = read_string(&mut reader).ok_or_else(malformed)?;
    let _kdf_options = read_string(&mut reader).ok_or_else(malformed)?;
    let key_count = read_u32(&mut reader).ok_or_else(malformed)?;
    if key_count != 1 {
        return Err(KeyError::Unsupported { reason: format!("the OpenSSH key file holds {key_count} keys, not 1") });
    }
    let mut public_blob = read_string(&mut reader).ok_or_else(malformed)?;
    let algorithm = read_string(&mut public_blob).ok_or_else(malformed)?;
    String::from_utf8(algorithm.to_vec()).map_err(|_| malformed())
}

/// Reads an SSH wire-format `uint32`, advancing `reader`.
pub(crate) fn read_u32(reader: &mut &[u8]) -> Option<u32> {
    let (head, rest) = reader.split_first_chunk::<4>()?;
    *reader = rest;
    Some(u32::from_be_bytes(*head))
}

/// Reads an SSH wire-format `string`, advancing `reader`.
pub(crate) fn read_string<'a>(reader: &mut &'a [u8]) -> Option<&'a [u8]> {
    let length = usize::try_from(read_u32(reader)?).ok()?;
    if reader.len() < length {
        return None;
    }
    let (value, rest) = reader.split_at(length);
    *reader = rest;
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(value: &[u8]) -> Vec<u8> {
        let mut out = u32::try_from(value.len()).unwrap().to_be_bytes().to_vec();
        out.extend_from_slice(value);
        out
    }

    fn openssh_pem(cipher: &str) -> String {
        let mut blob = b"openssh-key-v1\0".to_vec();
        blob.extend(string(cipher.as_bytes()));
        blob.extend(string(b"none"));
        blob.extend(string(b""));
        blob.extend(1u32.to_be_bytes());
        let mut public = string(b"ssh-ed25519");
        public.extend(string(&[7; 32]));
        blob.extend(string(&public));
        blob.extend(string(b"private section"));
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n", STANDARD.encode(blob))
    }

    #[test]
    fn openssh_key_reports_its_algorithm() {
        let key = PrivateKey::from_pem(&openssh_pem("none")).unwrap();
        assert_eq!(key.encoding(), KeyEncoding::OpenSsh);
        assert_eq!(key.algorithm(), Some("ssh-ed25519"));
    }

    #[test]
    fn encrypted_openssh_key_is_refused() {
        let error = PrivateKey::from_pem(&openssh_pem("aes256-ctr")).unwrap_err();
        assert!(matches!(error, KeyError::Encrypted { encoding: KeyEncoding::OpenSsh }), "{error:?}");
    }

    #[test]
    fn encrypted_legacy_pem_is_refused() {
        let text = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        let error = PrivateKey::from_pem(text).unwrap_err();
        assert!(matches!(error, KeyError::Encrypted { encoding: KeyEncoding::Pkcs1 }), "{error:?}");
    }

    #[test]
    fn public_key_is_not_a_private_key() {
        let error = PrivateKey::from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n").unwrap_err();
        assert_eq!(error.to_string(), "not a supported private key: PEM label `PUBLIC KEY` is not a private key");
    }

    #[test]
    fn non_pem_text_is_refused() {
        let error = PrivateKey::from_pem("ssh-ed25519 AAAA user@host").unwrap_err();
        assert!(matches!(error, KeyError::Unsupported { .. }), "{error:?}");
    }

    #[test]
    fn debug_output_never_shows_key_material() {
        let pem = openssh_pem("none");
        let key = PrivateKey::from_pem(&pem).unwrap();
        let debug = format!("{key:?}");
        assert_eq!(
            debug,
            "PrivateKey { encoding: OpenSsh, algorithm: Some(\"ssh-ed25519\"), material: \"<redacted>\" }"
        );
        let body_line = pem.lines().nth(1).unwrap();
        assert!(!debug.contains(&body_line[..16]));
    }
}
