//! The operator's public key: read from a private key (OpenSSH, PKCS#8, PKCS#1, SEC1) or an OpenSSH public key
//! line, classified, checked against the weak-key rules, and rendered as the authorized-key line.

pub(crate) mod kind;
mod pem;
mod private;
mod wire;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest as _, Sha256};

use crate::error::{KeyError, KeyFormat};
use crate::strength::weakness_of;
use wire::{WireReader, WireWriter, bit_length};

pub use kind::{EcdsaCurve, KeyKind};

/// An operator public key that passed the weak-key rules: every value of this type is usable.
///
/// ```
/// use wmco_user_data::{KeyKind, PublicKey};
///
/// let line = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDJqxXtLTB09WrBv58kWkXoCkTTC3YJP1KolNbUZY5jp admin@example";
/// let key = PublicKey::parse(line)?;
/// assert_eq!(key.kind(), KeyKind::Ed25519);
/// // The comment is dropped: the line is exactly what `administrators_authorized_keys` gets.
/// assert_eq!(key.authorized_key_line(), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDJqxXtLTB09WrBv58kWkXoCkTTC3YJP1KolNbUZY5jp");
/// # Ok::<(), wmco_user_data::KeyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    kind: KeyKind,
    type_name: String,
    blob: Vec<u8>,
}

impl PublicKey {
    /// Reads either a PEM private key (anything containing `-----BEGIN `) or an OpenSSH public key line.
    ///
    /// # Errors
    /// [`KeyError::Weak`] for a weak key, another [`KeyError`] when the text is not a usable key.
    pub fn parse(text: &str) -> Result<PublicKey, KeyError> {
        if text.contains("-----BEGIN ") { PublicKey::from_private_key_pem(text) } else { PublicKey::from_openssh(text) }
    }

    /// Derives the public key from an unencrypted PEM private key: `OPENSSH PRIVATE KEY`, `PRIVATE KEY` (PKCS#8:
    /// RSA, ECDSA or Ed25519), `RSA PRIVATE KEY` (PKCS#1) or `EC PRIVATE KEY` (SEC1). DSA keys in any encoding are
    /// recognised and refused as weak.
    ///
    /// # Errors
    /// [`KeyError::Weak`] for a weak key, another [`KeyError`] when the text is not a usable private key.
    pub fn from_private_key_pem(text: &str) -> Result<PublicKey, KeyError> {
        private::public_key_of(text)
    }

    /// Reads an OpenSSH public key line (`<type> <base64> [comment]`, as in a `.pub` file). Empty and `#` lines
    /// before it are skipped.
    ///
    /// # Errors
    /// [`KeyError::Weak`] for a weak key, another [`KeyError`] when the line is not a usable public key.
    pub fn from_openssh(text: &str) -> Result<PublicKey, KeyError> {
        let format = KeyFormat::OpenSshPublic;
        let line = text
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with('#'))
            .ok_or_else(|| KeyError::NotAKey { reason: "the text is empty".to_owned() })?;
        let mut fields = line.split_whitespace();
        let type_name = fields.next().unwrap_or_default();
        let Some(encoded) = fields.next() else {
            return Err(KeyError::NotAKey {
                reason: "expected a PEM private key or an OpenSSH public key line `<type> <base64> [comment]`"
                    .to_owned(),
            });
        };
        let blob = STANDARD.decode(encoded).map_err(|_| KeyError::malformed(format, "the key field is not base64"))?;
        let key = PublicKey::from_blob(blob, format)?;
        if key.type_name != type_name {
            return Err(KeyError::malformed(
                format,
                format!("the line says `{type_name}` but the key inside is `{}`", key.type_name),
            ));
        }
        Ok(key)
    }

    /// Classifies an SSH public key blob, validating its structure, and refuses weak keys.
    fn from_blob(blob: Vec<u8>, format: KeyFormat) -> Result<PublicKey, KeyError> {
        let (type_name, kind) = classify_blob(&blob, format)?;
        if let Some(weakness) = weakness_of(kind) {
            return Err(KeyError::Weak(weakness));
        }
        Ok(PublicKey { kind, type_name, blob })
    }

    /// An RSA key from its modulus and public exponent (unsigned big-endian).
    fn rsa(modulus: &[u8], exponent: &[u8], format: KeyFormat) -> Result<PublicKey, KeyError> {
        let blob = WireWriter::default().string(b"ssh-rsa").mpint(exponent).mpint(modulus).finish();
        PublicKey::from_blob(blob, format)
    }

    /// An ECDSA key from its curve and uncompressed point.
    fn ecdsa(curve: EcdsaCurve, point: &[u8], format: KeyFormat) -> Result<PublicKey, KeyError> {
        let identifier = curve.ssh_identifier();
        let type_name = format!("ecdsa-sha2-{identifier}");
        let blob = WireWriter::default().string(type_name.as_bytes()).string(identifier.as_bytes()).string(point);
        PublicKey::from_blob(blob.finish(), format)
    }

    /// An Ed25519 key from its 32 public bytes.
    fn ed25519(public: &[u8], format: KeyFormat) -> Result<PublicKey, KeyError> {
        PublicKey::from_blob(WireWriter::default().string(b"ssh-ed25519").string(public).finish(), format)
    }

    /// The key's kind (never a weak one).
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The SSH key type name (`ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`, ...).
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// `<type> <base64>` without a comment: the line written to `administrators_authorized_keys`.
    pub fn authorized_key_line(&self) -> String {
        format!("{} {}", self.type_name, STANDARD.encode(&self.blob))
    }

    /// Lower-case hex SHA-256 of [`authorized_key_line`](Self::authorized_key_line): the value of the Node
    /// annotation `windowsmachineconfig.openshift.io/pub-key-hash`, computed as the Go operator does (its
    /// authorized-key line without the trailing newline), so nodes it configured keep a matching hash.
    pub fn pub_key_hash(&self) -> String {
        hex::encode(Sha256::digest(self.authorized_key_line().as_bytes()))
    }
}

/// The type name and kind of a public key blob, after checking that every field is present and nothing trails.
fn classify_blob(blob: &[u8], format: KeyFormat) -> Result<(String, KeyKind), KeyError> {
    let truncated = || KeyError::malformed(format, "the public key blob is truncated");
    let mut reader = WireReader::new(blob);
    let type_bytes = reader.string().ok_or_else(truncated)?;
    let type_name =
        String::from_utf8(type_bytes.to_vec()).map_err(|_| KeyError::malformed(format, "the key type is not text"))?;
    let kind = match type_name.as_str() {
        "ssh-rsa" => {
            let _exponent = reader.string().ok_or_else(truncated)?;
            let modulus = reader.string().ok_or_else(truncated)?;
            KeyKind::Rsa { bits: bit_length(modulus) }
        }
        "ssh-dss" => {
            for _ in 0..4 {
                reader.string().ok_or_else(truncated)?;
            }
            KeyKind::Dsa
        }
        "ssh-ed25519" => {
            let public = reader.string().ok_or_else(truncated)?;
            if public.len() != 32 {
                return Err(KeyError::malformed(format, format!("an Ed25519 key has 32 bytes, not {}", public.len())));
            }
            KeyKind::Ed25519
        }
        other => match EcdsaCurve::from_ssh_type(other) {
            Some(curve) => {
                let _identifier = reader.string().ok_or_else(truncated)?;
                let point = reader.string().ok_or_else(truncated)?;
                check_point(curve, point, format)?;
                KeyKind::Ecdsa(curve)
            }
            None => return Err(KeyError::UnsupportedAlgorithm { format, algorithm: other.to_owned() }),
        },
    };
    if !reader.is_empty() {
        return Err(KeyError::malformed(format, "bytes follow the public key"));
    }
    Ok((type_name, kind))
}

/// An ECDSA public point must be uncompressed and of the curve's length.
fn check_point(curve: EcdsaCurve, point: &[u8], format: KeyFormat) -> Result<(), KeyError> {
    match point.first() {
        Some(0x04) if point.len() == curve.uncompressed_point_len() => Ok(()),
        Some(0x02 | 0x03) => Err(KeyError::UnsupportedAlgorithm {
            format,
            algorithm: format!("ECDSA {} with a compressed public point", curve.ssh_identifier()),
        }),
        _ => Err(KeyError::malformed(
            format,
            format!(
                "the ECDSA {} public point is not {} bytes starting with 0x04",
                curve.ssh_identifier(),
                curve.uncompressed_point_len()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Weakness;

    fn line(blob: &[u8]) -> String {
        let mut reader = WireReader::new(blob);
        let type_name = String::from_utf8(reader.string().unwrap().to_vec()).unwrap();
        format!("{type_name} {}", STANDARD.encode(blob))
    }

    fn rsa_blob(bits: usize) -> Vec<u8> {
        let mut modulus = vec![0xC5; bits / 8];
        modulus[0] = 0x80 | 0x45;
        WireWriter::default().string(b"ssh-rsa").mpint(&[1, 0, 1]).mpint(&modulus).finish()
    }

    #[test]
    fn rsa_lines_are_classified_by_modulus_length() {
        let key = PublicKey::from_openssh(&line(&rsa_blob(4096))).unwrap();
        assert_eq!(key.kind(), KeyKind::Rsa { bits: 4096 });
        let error = PublicKey::from_openssh(&line(&rsa_blob(1024))).unwrap_err();
        assert_eq!(error, KeyError::Weak(Weakness::RsaTooShort { bits: 1024 }));
        assert_eq!(error.to_string(), "weak key: RSA key of 1024 bits is shorter than the 2048 bits required");
    }

    #[test]
    fn p224_lines_are_weak_in_both_spellings() {
        let mut point = vec![4];
        point.extend([7; 56]);
        for (type_name, identifier) in
            [("ecdsa-sha2-nistp224", "nistp224"), ("ecdsa-sha2-1.3.132.0.33", "1.3.132.0.33")]
        {
            let blob = WireWriter::default()
                .string(type_name.as_bytes())
                .string(identifier.as_bytes())
                .string(&point)
                .finish();
            assert_eq!(PublicKey::from_openssh(&line(&blob)).unwrap_err(), KeyError::Weak(Weakness::EcdsaP224));
        }
    }

    #[test]
    fn a_compressed_point_is_unsupported() {
        let mut point = vec![2];
        point.extend([7; 32]);
        let blob = WireWriter::default().string(b"ecdsa-sha2-nistp256").string(b"nistp256").string(&point).finish();
        let error = PublicKey::from_openssh(&line(&blob)).unwrap_err();
        assert!(matches!(error, KeyError::UnsupportedAlgorithm { .. }), "{error:?}");
    }

    #[test]
    fn a_type_that_disagrees_with_the_blob_is_malformed() {
        let text = line(&rsa_blob(2048)).replacen("ssh-rsa", "ssh-ed25519", 1);
        let error = PublicKey::from_openssh(&text).unwrap_err();
        assert_eq!(
            error.to_string(),
            "malformed OpenSSH public key: the line says `ssh-ed25519` but the key inside is `ssh-rsa`"
        );
    }

    #[test]
    fn trailing_bytes_and_truncation_are_malformed() {
        let mut blob = WireWriter::default().string(b"ssh-ed25519").string(&[1; 32]).finish();
        blob.push(0);
        let error = PublicKey::from_openssh(&line(&blob)).unwrap_err();
        assert_eq!(error.to_string(), "malformed OpenSSH public key: bytes follow the public key");
        let blob = WireWriter::default().string(b"ssh-ed25519").finish();
        let error = PublicKey::from_openssh(&line(&blob)).unwrap_err();
        assert_eq!(error.to_string(), "malformed OpenSSH public key: the public key blob is truncated");
    }

    #[test]
    fn unknown_types_and_non_keys_are_refused() {
        let blob = WireWriter::default().string(b"sk-ssh-ed25519@openssh.com").string(&[1; 32]).finish();
        let error = PublicKey::from_openssh(&line(&blob)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the OpenSSH public key uses an unsupported algorithm: sk-ssh-ed25519@openssh.com"
        );
        assert!(matches!(PublicKey::parse("hello"), Err(KeyError::NotAKey { .. })));
        assert!(matches!(PublicKey::parse("\n# only a comment\n"), Err(KeyError::NotAKey { .. })));
    }
}
