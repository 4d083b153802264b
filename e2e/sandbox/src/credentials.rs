//! What the admin (or OpenShift) gives the operator before it runs: the SSH key pair every host authorizes, stored
//! as Secret `cloud-private-key` (`private-key.pem`); the `windows-machine-config-operator-tls` Secret (type
//! `kubernetes.io/tls`, a self-signed certificate for the metrics Service, as OpenShift's service CA would issue);
//! the `windows-machine-config-operator-metrics-tls` Secret (the metrics endpoint's serving certificate, issued by
//! a CA of the sandbox's own as the service CA would issue it); a ServiceAccount allowed to read `/metrics` (what
//! Prometheus is); and the `kube-root-ca.crt` ConfigMap in the operator namespace (kube-controller-manager's
//! root-CA publisher is not among the e2e control plane's controllers).

use std::collections::BTreeMap;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, PostParams};
use russh::keys::ssh_key::LineEnding;

use crate::{OPERATOR_NAMESPACE, SandboxError};

/// The Secret holding the admin's SSH private key.
pub const PRIVATE_KEY_SECRET: &str = "cloud-private-key";
/// The key of the private key inside [`PRIVATE_KEY_SECRET`].
pub const PRIVATE_KEY_FIELD: &str = "private-key.pem";
/// The Secret holding the operator's serving certificate (windows_exporter's TLS files come from it).
pub const TLS_SECRET: &str = "windows-machine-config-operator-tls";
/// The Secret holding the metrics endpoint's serving certificate (mounted at `/etc/wmco/metrics-tls`).
pub const METRICS_TLS_SECRET: &str = "windows-machine-config-operator-metrics-tls";
/// The ClusterRole allowing `get` on the non-resource URL `/metrics` (`manifests/base/rbac/metrics-reader.yaml`).
pub const METRICS_READER_CLUSTER_ROLE: &str = "windows-machine-config-operator-metrics-reader";
/// The ServiceAccount the sandbox scrapes `/metrics` as (bound to [`METRICS_READER_CLUSTER_ROLE`]).
pub const METRICS_SCRAPER_SERVICE_ACCOUNT: &str = "wmco-sandbox-metrics-scraper";
/// The ConfigMap every namespace gets with the cluster CA (`ca.crt`).
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The DNS name of the operator's metrics Service.
const METRICS_SERVICE_DNS: &str =
    "windows-machine-config-operator-metrics.openshift-windows-machine-config-operator.svc";

/// The admin's SSH key pair (Ed25519). `Debug` never shows the private half.
pub struct AdminKey {
    private_openssh: String,
    public_line: String,
}

impl std::fmt::Debug for AdminKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("AdminKey")
            .field("public_line", &self.public_line)
            .field("private_openssh", &"<redacted>")
            .finish()
    }
}

impl AdminKey {
    /// A fresh Ed25519 key pair.
    ///
    /// ```
    /// let key = wmco_sandbox::AdminKey::generate()?;
    /// assert!(key.public_line().starts_with("ssh-ed25519 "));
    /// assert!(!format!("{key:?}").contains("PRIVATE KEY"));
    /// # Ok::<(), wmco_sandbox::SandboxError>(())
    /// ```
    ///
    /// # Errors
    /// [`SandboxError::AdminKey`] if generation or encoding fails.
    pub fn generate() -> Result<AdminKey, SandboxError> {
        let key = winhost_sim::ssh::generate_key().map_err(|error| SandboxError::AdminKey(error.to_string()))?;
        let private_openssh =
            key.to_openssh(LineEnding::LF).map_err(|error| SandboxError::AdminKey(error.to_string()))?.to_string();
        let public_line = key.public_key().to_openssh().map_err(|error| SandboxError::AdminKey(error.to_string()))?;
        Ok(AdminKey { private_openssh, public_line })
    }

    /// The public key as an `authorized_keys` line (`ssh-ed25519 AAAA...`).
    pub fn public_line(&self) -> &str {
        &self.public_line
    }

    /// The private key in OpenSSH PEM form (what `private-key.pem` holds).
    pub fn private_openssh(&self) -> &str {
        &self.private_openssh
    }
}

/// Creates Secret `cloud-private-key` with the admin's private key.
///
/// # Errors
/// [`SandboxError::Kube`] if the API refuses it.
pub async fn create_private_key_secret(client: &kube::Client, key: &AdminKey) -> Result<(), SandboxError> {
    let data = BTreeMap::from([(PRIVATE_KEY_FIELD.to_owned(), ByteString(key.private_openssh.clone().into_bytes()))]);
    create_secret(client, PRIVATE_KEY_SECRET, "Opaque", data).await
}

/// Creates Secret `windows-machine-config-operator-tls` (type `kubernetes.io/tls`) with a fresh self-signed
/// certificate for the metrics Service.
///
/// # Errors
/// [`SandboxError::Certificate`] or [`SandboxError::Kube`].
pub async fn create_tls_secret(client: &kube::Client) -> Result<(), SandboxError> {
    let key = rcgen::KeyPair::generate()?;
    let params = rcgen::CertificateParams::new(vec![
        METRICS_SERVICE_DNS.to_owned(),
        format!("{METRICS_SERVICE_DNS}.cluster.local"),
    ])?;
    let certificate = params.self_signed(&key)?;
    let data = BTreeMap::from([
        ("tls.crt".to_owned(), ByteString(certificate.pem().into_bytes())),
        ("tls.key".to_owned(), ByteString(key.serialize_pem().into_bytes())),
    ]);
    create_secret(client, TLS_SECRET, "kubernetes.io/tls", data).await
}

/// The metrics endpoint's serving certificate and the CA that issued it. `Debug` never shows the key.
pub struct MetricsServingCertificate {
    ca_pem: String,
    certificate_pem: String,
    key_pem: String,
}

impl std::fmt::Debug for MetricsServingCertificate {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("MetricsServingCertificate")
            .field("ca_pem", &self.ca_pem)
            .field("certificate_pem", &self.certificate_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

impl MetricsServingCertificate {
    /// A fresh CA and a certificate it issues for the metrics Service's DNS names, `localhost` and `127.0.0.1`
    /// (the sandbox's operator listens on loopback).
    ///
    /// ```
    /// let serving = wmco_sandbox::credentials::MetricsServingCertificate::issue()?;
    /// assert!(serving.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
    /// assert!(!format!("{serving:?}").contains("PRIVATE KEY"));
    /// # Ok::<(), wmco_sandbox::SandboxError>(())
    /// ```
    ///
    /// # Errors
    /// [`SandboxError::Certificate`] if generation fails.
    pub fn issue() -> Result<MetricsServingCertificate, SandboxError> {
        let ca_key = rcgen::KeyPair::generate()?;
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "wmco-sandbox service CA");
        ca_params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key)?;
        let key = rcgen::KeyPair::generate()?;
        let params = rcgen::CertificateParams::new(vec![
            METRICS_SERVICE_DNS.to_owned(),
            format!("{METRICS_SERVICE_DNS}.cluster.local"),
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
        ])?;
        let certificate = params.signed_by(&key, &ca)?;
        Ok(MetricsServingCertificate {
            ca_pem: ca.pem(),
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// The issuing CA (PEM): what a scraper trusts.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The Secret's data: `tls.crt`, `tls.key`.
    pub fn secret_data(&self) -> BTreeMap<String, ByteString> {
        BTreeMap::from([
            ("tls.crt".to_owned(), ByteString(self.certificate_pem.clone().into_bytes())),
            ("tls.key".to_owned(), ByteString(self.key_pem.clone().into_bytes())),
        ])
    }

    /// Writes `tls.crt` and `tls.key` (mode 0600) into `dir`; returns their paths.
    ///
    /// # Errors
    /// [`SandboxError::Io`].
    pub fn write_files(&self, dir: &Path) -> Result<(PathBuf, PathBuf), SandboxError> {
        std::fs::create_dir_all(dir).map_err(SandboxError::io("create directory", dir))?;
        let certificate = dir.join("tls.crt");
        let key = dir.join("tls.key");
        for (path, contents) in [(&certificate, &self.certificate_pem), (&key, &self.key_pem)] {
            std::fs::write(path, contents).map_err(SandboxError::io("write", path))?;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(SandboxError::io("restrict the permissions of", path))?;
        }
        Ok((certificate, key))
    }
}

/// Creates Secret `windows-machine-config-operator-metrics-tls` (type `kubernetes.io/tls`) with `serving`.
///
/// # Errors
/// [`SandboxError::Kube`] if the API refuses it.
pub async fn create_metrics_tls_secret(
    client: &kube::Client,
    serving: &MetricsServingCertificate,
) -> Result<(), SandboxError> {
    create_secret(client, METRICS_TLS_SECRET, "kubernetes.io/tls", serving.secret_data()).await
}

/// The data of Secret `name` in the operator namespace, or `None` if there is no such Secret.
///
/// # Errors
/// [`SandboxError::Kube`] if the API fails.
pub async fn secret_data(
    client: &kube::Client,
    name: &str,
) -> Result<Option<BTreeMap<String, ByteString>>, SandboxError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let secret =
        secrets.get_opt(name).await.map_err(SandboxError::kube(format!("read Secret {OPERATOR_NAMESPACE}/{name}")))?;
    Ok(secret.map(|secret| secret.data.unwrap_or_default()))
}

/// Creates ServiceAccount `name` in the operator namespace and, when `cluster_role` is given, a
/// ClusterRoleBinding of the same name granting it that ClusterRole.
///
/// # Errors
/// [`SandboxError::Kube`] if the API refuses either.
pub async fn create_service_account(
    client: &kube::Client,
    name: &str,
    cluster_role: Option<&str>,
) -> Result<(), SandboxError> {
    let service_accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let service_account = ServiceAccount {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        ..ServiceAccount::default()
    };
    service_accounts
        .create(&PostParams::default(), &service_account)
        .await
        .map_err(SandboxError::kube(format!("create ServiceAccount {OPERATOR_NAMESPACE}/{name}")))?;
    let Some(cluster_role) = cluster_role else { return Ok(()) };
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: cluster_role.to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: name.to_owned(),
            namespace: Some(OPERATOR_NAMESPACE.to_owned()),
            ..Subject::default()
        }]),
    };
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .map_err(SandboxError::kube(format!("create ClusterRoleBinding {name}")))?;
    Ok(())
}

/// Creates ConfigMap `kube-root-ca.crt` (`ca.crt`) in the operator namespace unless it exists.
///
/// # Errors
/// [`SandboxError::Kube`] if the API refuses it.
pub async fn ensure_root_ca_config_map(client: &kube::Client, ca_pem: &str) -> Result<(), SandboxError> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let action = format!("create ConfigMap {OPERATOR_NAMESPACE}/{ROOT_CA_CONFIG_MAP}");
    if config_maps.get_opt(ROOT_CA_CONFIG_MAP).await.map_err(SandboxError::kube(action.clone()))?.is_some() {
        return Ok(());
    }
    let config_map = ConfigMap {
        metadata: ObjectMeta { name: Some(ROOT_CA_CONFIG_MAP.to_owned()), ..ObjectMeta::default() },
        data: Some(BTreeMap::from([("ca.crt".to_owned(), ca_pem.to_owned())])),
        ..ConfigMap::default()
    };
    config_maps.create(&PostParams::default(), &config_map).await.map_err(SandboxError::kube(action))?;
    Ok(())
}

async fn create_secret(
    client: &kube::Client,
    name: &str,
    type_: &str,
    data: BTreeMap<String, ByteString>,
) -> Result<(), SandboxError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let secret = Secret {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        type_: Some(type_.to_owned()),
        data: Some(data),
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .map_err(SandboxError::kube(format!("create Secret {OPERATOR_NAMESPACE}/{name}")))?;
    Ok(())
}
