//! windows_exporter's TLS files: the serving certificate chain and private key from the operator's
//! `windows-machine-config-operator-tls` Secret, written where the payload's web configuration
//! (`C:\k\tls\windows-exporter-webconfig.yaml`) points. Installed in configuration phase 2 only.

use std::fmt;

use super::destinations::{EXPORTER_TLS_CERT, EXPORTER_TLS_KEY, destination};
use super::{PemBundle, RenderError, RenderedFile};

/// A serving certificate chain and its private key. `Debug` prints the certificate count only, never the key.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ServingTls {
    certificate_chain: PemBundle,
    private_key: String,
}

/// The text is not a PEM private key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the private key is not PEM text (`-----BEGIN ... PRIVATE KEY-----` … `-----END ... PRIVATE KEY-----`)")]
pub struct PrivateKeyPemError;

impl ServingTls {
    /// A certificate chain and the PEM private key of its first certificate; CRLF is normalized to LF and the key
    /// ends with exactly one newline.
    ///
    /// ```
    /// use wmco_payload_manifest::render::ServingTls;
    ///
    /// let chain = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".parse().unwrap();
    /// let tls = ServingTls::new(chain, "-----BEGIN PRIVATE KEY-----\nMC4C\n-----END PRIVATE KEY-----").unwrap();
    /// assert_eq!(format!("{tls:?}"), "ServingTls { certificates: 1, private_key: \"<redacted>\" }");
    /// ```
    ///
    /// # Errors
    /// [`PrivateKeyPemError`] when `private_key` holds no PEM private key block.
    pub fn new(certificate_chain: PemBundle, private_key: &str) -> Result<Self, PrivateKeyPemError> {
        let normalized = private_key.replace("\r\n", "\n");
        let trimmed = normalized.trim();
        let is_key = trimmed.starts_with("-----BEGIN ")
            && trimmed.lines().next().is_some_and(|line| line.ends_with("PRIVATE KEY-----"))
            && trimmed.ends_with("PRIVATE KEY-----")
            && trimmed.contains("-----END ");
        if !is_key {
            return Err(PrivateKeyPemError);
        }
        Ok(Self { certificate_chain, private_key: format!("{trimmed}\n") })
    }
}

impl fmt::Debug for ServingTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServingTls")
            .field("certificates", &self.certificate_chain.certificate_count())
            .field("private_key", &"<redacted>")
            .finish()
    }
}

/// windows_exporter's `tls.crt` and `tls.key` under `C:\k\tls\certs`, sorted by destination.
pub fn exporter_tls_files(tls: &ServingTls) -> Result<Vec<RenderedFile>, RenderError> {
    Ok(vec![
        RenderedFile::new(
            destination(EXPORTER_TLS_CERT, "windows_exporter certificate")?,
            tls.certificate_chain.as_str().as_bytes().to_vec(),
        ),
        RenderedFile::new(
            destination(EXPORTER_TLS_KEY, "windows_exporter private key")?,
            tls.private_key.as_bytes().to_vec(),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN EC PRIVATE KEY-----\r\nMHcC\r\n-----END EC PRIVATE KEY-----\r\n\r\n";

    #[test]
    fn the_files_hold_the_chain_and_the_normalized_key_where_the_web_config_points() {
        let tls = ServingTls::new(CERT.parse().unwrap(), KEY).unwrap();
        let files = exporter_tls_files(&tls).unwrap();
        let listed: Vec<(&str, &[u8])> = files.iter().map(|file| (file.destination().as_str(), file.bytes())).collect();
        assert_eq!(
            listed,
            [
                (r"C:\k\tls\certs\tls.crt", CERT.as_bytes()),
                (
                    r"C:\k\tls\certs\tls.key",
                    b"-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n".as_slice()
                ),
            ]
        );
        let web_config = include_str!("../../../../payload/windows-exporter/windows-exporter-webconfig.yaml");
        assert!(web_config.contains(&format!("cert_file: {}\n", super::super::destinations::EXPORTER_TLS_CERT)));
        assert!(web_config.contains(&format!("key_file: {}\n", super::super::destinations::EXPORTER_TLS_KEY)));
    }

    #[test]
    fn a_non_key_is_refused_and_the_key_never_reaches_debug() {
        for bad in
            ["", "MHcC", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "-----BEGIN PRIVATE KEY-----"]
        {
            assert_eq!(ServingTls::new(CERT.parse().unwrap(), bad), Err(PrivateKeyPemError), "{bad:?}");
        }
        let tls = ServingTls::new(CERT.parse().unwrap(), KEY).unwrap();
        assert!(!format!("{tls:?}").contains("MHcC"));
        for file in exporter_tls_files(&tls).unwrap() {
            assert!(!format!("{file:?}").contains("MHcC"));
        }
    }
}
