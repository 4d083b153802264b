//! What the admin (or OpenShift) gives the operator before it runs: the SSH key pair every host authorizes, stored
//! as Secret `cloud-private-key` (`private-key.pem`); the `windows-machine-config-operator-tls` Secret (type
//! `kubernetes.io/tls`, a self-signed certificate for the metrics Service, as OpenShift's service CA would issue);
//! and the `kube-root-ca.crt` ConfigMap in the operator namespace (kube-controller-manager's root-CA publisher is
//! not among the e2e control plane's controllers).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ObjectMeta, PostParams};
use russh::keys::ssh_key::LineEnding;

use crate::{OPERATOR_NAMESPACE, SandboxError};

/// The Secret holding the admin's SSH private key.
pub const PRIVATE_KEY_SECRET: &str = "cloud-private-key";
/// The key of the private key inside [`PRIVATE_KEY_SECRET`].
pub const PRIVATE_KEY_FIELD: &str = "private-key.pem";
/// The Secret holding the operator's serving certificate (windows_exporter's TLS files come from it).
pub const TLS_SECRET: &str = "windows-machine-config-operator-tls";
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
