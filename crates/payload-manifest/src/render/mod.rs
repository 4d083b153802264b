//! The configuration files rendered for one host: pure functions from [`ClusterInputs`] and [`HostInputs`] to
//! [`RenderedFile`]s (destination, bytes, SHA-256). Same inputs, same bytes: the operator compares digests to
//! decide what to upload.
//!
//! | file | destination | renderer |
//! |---|---|---|
//! | KubeletConfiguration (JSON) | `C:\k\kubelet.conf` | [`kubelet_config`] |
//! | bootstrap kubeconfig | `C:\k\bootstrap-kubeconfig` | [`bootstrap_kubeconfig`] |
//! | API server CA, kubelet client CA | `C:\k\bootstrap-ca.crt`, `C:\k\kubelet-ca.crt` | [`ca_files`] |
//! | trusted CA bundle | `C:\k\ca-bundle.crt` | [`ca_files`] |
//! | containerd config (TOML) | `C:\k\containerd\containerd_conf.toml` | [`containerd_config`] |
//! | registry mirrors | `C:\k\containerd\registries\<registry>\hosts.toml` | [`registry_hosts_files`] |
//! | ECR credential provider config (AWS) | `C:\k\credential-provider-config.yaml` | [`credential_provider_config`] |
//! | CNI config (phase 2) | `C:\k\cni\config\cni.conf` | [`cni_config`] |
//! | KubeProxyConfiguration (phase 2) | `C:\k\kube-proxy.conf` | [`kube_proxy_config`] |
//! | windows_exporter TLS (phase 2) | `C:\k\tls\certs\tls.crt`, `tls.key` | [`exporter_tls_files`] |
//! | cloud-node-manager kubeconfig and token (Azure, phase 2) | `C:\k\cloud-node-manager-kubeconfig`, `-token` | [`cloud_node_manager_files`] |
//!
//! windows_exporter's web configuration is a payload file (`payload/windows-exporter/`), not rendered: it only
//! names the two TLS files. The TLS files and cloud-node-manager's credential are not part of [`render_host_files`]:
//! they come from a Secret or a token the caller may not have yet, and only the node stage needs them.

mod ca;
mod cni;
mod containerd;
pub mod destinations;
mod inputs;
mod kube_proxy;
mod kubeconfig;
mod kubelet;
mod registries;
mod tls;

use std::fmt;

use wmco_windows_services::{PathError, WinPath};

use crate::{Platform, Sha256Digest};

pub use ca::ca_files;
pub use cni::cni_config;
pub use containerd::containerd_config;
pub use inputs::{
    BundleCertificate, ClusterInputs, HostInputs, ImageMirrorRule, LogRotation, MirrorSourcePolicy, OverlayNetwork,
    OverlayNetworkError, PemBundle, PemBundleError, Proxy, PullSecret, PullSecretError, RegistryCa, SecretToken,
};
pub use kube_proxy::kube_proxy_config;
pub use kubeconfig::{bootstrap_kubeconfig, cloud_node_manager_files};
pub use kubelet::{credential_provider_config, kubelet_config};
pub use registries::{MirrorHost, RegistryHosts, plan_registry_hosts, registry_hosts_files};
pub use tls::{PrivateKeyPemError, ServingTls, exporter_tls_files};
pub use wmco_vocabulary::{IpCidr, MirrorKind};

/// One rendered file: where it goes on the host, its bytes and their SHA-256.
///
/// `Debug` prints the destination, size and digest, never the bytes (a kubeconfig holds a token, a `hosts.toml`
/// may hold registry credentials).
#[derive(Clone, PartialEq, Eq)]
pub struct RenderedFile {
    destination: WinPath,
    bytes: Vec<u8>,
    sha256: Sha256Digest,
}

impl RenderedFile {
    /// A file with these bytes at `destination`; computes the digest.
    ///
    /// ```
    /// use wmco_payload_manifest::render::RenderedFile;
    /// use wmco_windows_services::WinPath;
    ///
    /// let file = RenderedFile::new(WinPath::parse(r"C:\k\x.txt").unwrap(), b"token: s3cret".to_vec());
    /// assert_eq!(file.bytes().len(), 13);
    /// assert!(!format!("{file:?}").contains("s3cret"));
    /// ```
    pub fn new(destination: WinPath, bytes: Vec<u8>) -> Self {
        let sha256 = Sha256Digest::of_bytes(&bytes);
        Self { destination, bytes, sha256 }
    }

    /// Where the file goes on the host.
    pub fn destination(&self) -> &WinPath {
        &self.destination
    }

    /// The file's content.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The SHA-256 of the content.
    pub fn sha256(&self) -> Sha256Digest {
        self.sha256
    }
}

impl fmt::Debug for RenderedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RenderedFile")
            .field("destination", &self.destination.as_str())
            .field("size", &self.bytes.len())
            .field("sha256", &self.sha256)
            .finish()
    }
}

/// A file could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A destination path is not a valid Windows path (a registry name with characters Windows forbids).
    #[error("cannot render {file}: destination is not a valid Windows path")]
    Destination {
        /// Which file.
        file: String,
        /// The path error.
        #[source]
        source: PathError,
    },
    /// Serializing the document failed.
    #[error("cannot serialize {file}: {message}")]
    Serialize {
        /// Which file.
        file: &'static str,
        /// The serializer's message.
        message: String,
    },
    /// A mirror rule names no registry host.
    #[error("image mirror rule for source {source_location:?} is invalid: {reason}")]
    InvalidMirrorRule {
        /// The rule's source.
        source_location: String,
        /// What is wrong.
        reason: &'static str,
    },
}

/// Every file rendered for `host` in `cluster`: the phase-1 files always, the registry files for each mirrored
/// registry, the ECR credential provider configuration on AWS, and the CNI and kube-proxy configurations once the
/// host's overlay network is known. Sorted by destination.
///
/// ```
/// use wmco_payload_manifest::render::{self, ClusterInputs, HostInputs, LogRotation, SecretToken};
/// use wmco_payload_manifest::Platform;
///
/// let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
/// let cluster = ClusterInputs {
///     api_server_url: "https://api-int.example.com:6443".into(),
///     api_server_ca: pem.parse().unwrap(),
///     kubelet_client_ca: pem.parse().unwrap(),
///     bootstrap_token: SecretToken::new("token"),
///     service_cidr: "172.30.0.0/16".parse().unwrap(),
///     cluster_dns: "172.30.0.10".parse().unwrap(),
///     cluster_domain: "cluster.local".into(),
///     platform: Platform::None,
///     proxy: None,
///     log_rotation: LogRotation::default(),
///     image_mirrors: vec![],
///     pull_secret: None,
///     registry_cas: vec![],
///     cloud_config: None,
/// };
/// let host = HostInputs { node_name: "win-a".into(), node_ip: "10.0.0.5".parse().unwrap(), overlay: None };
/// let files = render::render_host_files(&cluster, &host).unwrap();
/// let names: Vec<&str> = files.iter().map(|file| file.destination().as_str()).collect();
/// assert_eq!(names, [r"C:\k\bootstrap-ca.crt", r"C:\k\bootstrap-kubeconfig", r"C:\k\ca-bundle.crt",
///                    r"C:\k\certs\wmco-certs.txt", r"C:\k\containerd\containerd_conf.toml", r"C:\k\containerd\registries\wmco-registries.txt",
///                    r"C:\k\kubelet-ca.crt", r"C:\k\kubelet.conf"]);
/// ```
pub fn render_host_files(cluster: &ClusterInputs, host: &HostInputs) -> Result<Vec<RenderedFile>, RenderError> {
    let mut files = vec![kubelet_config(cluster)?, bootstrap_kubeconfig(cluster)?, containerd_config()?];
    files.extend(ca_files(cluster)?);
    files.extend(registry_hosts_files(&cluster.image_mirrors, cluster.pull_secret.as_ref())?);
    if cluster.platform == Platform::Aws {
        files.push(credential_provider_config()?);
    }
    if let Some(cloud_config) = &cluster.cloud_config {
        files.push(RenderedFile::new(
            destinations::destination(destinations::CLOUD_CONFIG, "cloud provider configuration")?,
            cloud_config.clone().into_bytes(),
        ));
    }
    if let Some(overlay) = &host.overlay {
        files.push(cni_config(cluster, overlay)?);
        files.push(kube_proxy_config(host, overlay)?);
    }
    files.sort_by(|left, right| left.destination.cmp(&right.destination));
    Ok(files)
}

/// Serializes `value` as pretty JSON with a final newline.
fn pretty_json(file: &'static str, value: &serde_json::Value) -> Result<Vec<u8>, RenderError> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|error| RenderError::Serialize { file, message: error.to_string() })?;
    bytes.push(b'\n');
    Ok(bytes)
}
