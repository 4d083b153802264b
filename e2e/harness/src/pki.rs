//! Certificates and keys of one control plane, generated at start with rcgen (ECDSA P-256): the cluster CA (which
//! also signs kubelet CSRs through kube-controller-manager), the kube-apiserver serving certificate, the
//! service-account signing key, and client certificates for any identity.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::Error;

/// The first address of the service CIDR `172.30.0.0/16`: the `kubernetes` Service's ClusterIP.
const KUBERNETES_SERVICE_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(172, 30, 0, 1));

/// A PEM certificate and its PEM (PKCS#8) private key, for authenticating as a client.
#[derive(Clone)]
pub struct ClientCertificate {
    /// The certificate, PEM.
    pub certificate_pem: String,
    /// The private key, PEM (PKCS#8). Never log it.
    pub key_pem: String,
}

impl std::fmt::Debug for ClientCertificate {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("ClientCertificate").field("key_pem", &"<redacted>").finish_non_exhaustive()
    }
}

/// Paths of the PKI files written for the control-plane processes.
#[derive(Debug, Clone)]
pub(crate) struct PkiFiles {
    pub ca_certificate: PathBuf,
    pub ca_key: PathBuf,
    pub serving_certificate: PathBuf,
    pub serving_key: PathBuf,
    pub service_account_key: PathBuf,
    pub service_account_public_key: PathBuf,
}

/// The control plane's certificate authority and keys.
pub(crate) struct ClusterPki {
    ca_issuer: Issuer<'static, KeyPair>,
    ca_certificate_pem: String,
}

impl ClusterPki {
    /// Generates the CA and writes it, the apiserver serving pair and the service-account key pair under `dir`.
    pub(crate) fn generate(dir: &Path) -> Result<(Self, PkiFiles), Error> {
        std::fs::create_dir_all(dir).map_err(Error::io("create directory", dir))?;
        let ca_key = new_key("the cluster CA key")?;
        let mut ca_params = params_for("wmco-e2e-ca", &[], Vec::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_certificate = ca_params.self_signed(&ca_key).map_err(certificate_error("the cluster CA certificate"))?;
        let files = PkiFiles {
            ca_certificate: dir.join("ca.crt"),
            ca_key: dir.join("ca.key"),
            serving_certificate: dir.join("apiserver.crt"),
            serving_key: dir.join("apiserver.key"),
            service_account_key: dir.join("service-account.key"),
            service_account_public_key: dir.join("service-account.pub"),
        };
        write_file(&files.ca_certificate, &ca_certificate.pem())?;
        write_file(&files.ca_key, &ca_key.serialize_pem())?;
        let pki = Self { ca_issuer: Issuer::new(ca_params, ca_key), ca_certificate_pem: ca_certificate.pem() };

        let serving = pki.issue_serving_certificate()?;
        write_file(&files.serving_certificate, &serving.certificate_pem)?;
        write_file(&files.serving_key, &serving.key_pem)?;

        let service_account_key = new_key("the service-account signing key")?;
        write_file(&files.service_account_key, &service_account_key.serialize_pem())?;
        write_file(&files.service_account_public_key, &service_account_key.public_key_pem())?;
        Ok((pki, files))
    }

    /// The CA certificate, PEM.
    pub(crate) fn ca_certificate_pem(&self) -> &str {
        &self.ca_certificate_pem
    }

    /// Issues a client certificate for `common_name` with the given organizations (groups).
    pub(crate) fn issue_client_certificate(
        &self,
        common_name: &str,
        organizations: &[&str],
    ) -> Result<ClientCertificate, Error> {
        let what = format!("a client certificate for {common_name}");
        let key = new_key(&what)?;
        let mut params = params_for(common_name, organizations, Vec::new())?;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let certificate = params.signed_by(&key, &self.ca_issuer).map_err(certificate_error(&what))?;
        Ok(ClientCertificate { certificate_pem: certificate.pem(), key_pem: key.serialize_pem() })
    }

    fn issue_serving_certificate(&self) -> Result<ClientCertificate, Error> {
        let what = "the kube-apiserver serving certificate";
        let key = new_key(what)?;
        let names = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"]
            .into_iter()
            .map(str::to_owned)
            .chain([IpAddr::V4(Ipv4Addr::LOCALHOST).to_string(), KUBERNETES_SERVICE_IP.to_string()])
            .collect();
        let mut params = params_for("kube-apiserver", &[], names)?;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let certificate = params.signed_by(&key, &self.ca_issuer).map_err(certificate_error(what))?;
        Ok(ClientCertificate { certificate_pem: certificate.pem(), key_pem: key.serialize_pem() })
    }
}

fn new_key(what: &str) -> Result<KeyPair, Error> {
    KeyPair::generate().map_err(certificate_error(what))
}

fn params_for(
    common_name: &str,
    organizations: &[&str],
    subject_alt_names: Vec<String>,
) -> Result<CertificateParams, Error> {
    let mut params =
        CertificateParams::new(subject_alt_names).map_err(certificate_error(&format!("names for {common_name}")))?;
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, common_name);
    for organization in organizations {
        subject.push(DnType::OrganizationName, *organization);
    }
    params.distinguished_name = subject;
    Ok(params)
}

fn certificate_error(what: &str) -> impl FnOnce(rcgen::Error) -> Error {
    let what = what.to_owned();
    move |source| Error::Certificate { what, source }
}

fn write_file(path: &Path, contents: &str) -> Result<(), Error> {
    std::fs::write(path, contents).map_err(Error::io("write", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_certificates_name_the_identity_and_hide_the_key_in_debug() {
        let dir = tempfile::tempdir().unwrap();
        let (pki, files) = ClusterPki::generate(dir.path()).unwrap();
        let client = pki.issue_client_certificate("system:node:win-a", &["system:nodes"]).unwrap();
        assert!(client.certificate_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(client.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!(!format!("{client:?}").contains("PRIVATE"));
        let ca_on_disk = std::fs::read_to_string(&files.ca_certificate).unwrap();
        assert_eq!(ca_on_disk, pki.ca_certificate_pem());
        let public_key = std::fs::read_to_string(&files.service_account_public_key).unwrap();
        assert!(public_key.starts_with("-----BEGIN PUBLIC KEY-----"), "{public_key}");
    }
}
