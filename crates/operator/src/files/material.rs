//! The cluster material a host's files are rendered from — the API server CA, the kubelet client CA, the
//! node-bootstrapper token, windows_exporter's TLS pair and (Azure) cloud-node-manager's token — and the cluster-wide settings (proxy, mirrors, …), as
//! one immutable snapshot. Each piece of material is either usable or the reason it is not, so a missing TLS Secret
//! blocks only the node stage, never a bootstrap; the settings are always those last read successfully.

use std::fmt;
use std::sync::Arc;

use jiff::Timestamp;
use wmco_payload_manifest::render::{PemBundle, PullSecret, RegistryCa, SecretToken, ServingTls};

use super::ClusterSettings;

/// A snapshot of the cluster material, as last read by the [`MaterialRefresher`](super::MaterialRefresher).
#[derive(Clone, Debug)]
pub struct ClusterMaterial {
    /// The CA bundle verifying the API server (`C:\k\bootstrap-ca.crt`).
    pub api_server_ca: Result<PemBundle, MaterialError>,
    /// The CA bundle of the clients the kubelet accepts (`C:\k\kubelet-ca.crt`).
    pub kubelet_client_ca: Result<PemBundle, MaterialError>,
    /// The short-lived node-bootstrapper token for the bootstrap kubeconfig.
    pub bootstrap_token: Result<MintedToken, MaterialError>,
    /// The token of ServiceAccount `cloud-node-manager` (`C:\k\cloud-node-manager-token`), azure-cloud-node-manager's
    /// own identity; `None` on every platform but Azure, which runs no cloud-node-manager.
    pub cloud_node_manager_token: Result<Option<MintedToken>, MaterialError>,
    /// windows_exporter's serving certificate and key (`C:\k\tls\certs`).
    pub exporter_tls: Result<ServingTls, MaterialError>,
    /// The cluster's global pull secret (OpenShift's `openshift-config/pull-secret`; `None` where there is none):
    /// the credentials of image mirrors in `hosts.toml`. `Debug` shows its registries only.
    pub pull_secret: Result<Option<PullSecret>, MaterialError>,
    /// The additional trusted CAs of image registries (ControllerConfig; none on plain Kubernetes), written into
    /// `C:\k\ca-bundle.crt`.
    pub registry_cas: Result<Vec<RegistryCa>, MaterialError>,
    /// The cluster's trusted CA bundle (ConfigMap `trusted-ca` in the operator namespace, key `ca-bundle.crt`;
    /// `None` while it holds none). With a proxy it joins `C:\k\ca-bundle.crt`, and each certificate the host's root
    /// store.
    pub trusted_ca: Result<Option<PemBundle>, MaterialError>,
    /// The cluster-wide settings last read: API server URL, networks, platform, proxy, image mirrors.
    pub settings: Arc<ClusterSettings>,
}

impl ClusterMaterial {
    /// The snapshot before the first refresh: every piece is [`MaterialError::NotReadYet`], the settings those the
    /// operator read at startup.
    pub fn not_read_yet(settings: Arc<ClusterSettings>) -> Self {
        Self {
            settings,
            pull_secret: Err(MaterialError::NotReadYet { what: "the cluster's pull secret" }),
            registry_cas: Err(MaterialError::NotReadYet { what: "the registry CAs" }),
            trusted_ca: Err(MaterialError::NotReadYet { what: "the trusted CA bundle" }),
            api_server_ca: Err(MaterialError::NotReadYet { what: "the API server CA" }),
            kubelet_client_ca: Err(MaterialError::NotReadYet { what: "the kubelet client CA" }),
            bootstrap_token: Err(MaterialError::NotReadYet { what: "the node-bootstrapper token" }),
            cloud_node_manager_token: Err(MaterialError::NotReadYet { what: "the cloud-node-manager token" }),
            exporter_tls: Err(MaterialError::NotReadYet { what: "the windows_exporter TLS pair" }),
        }
    }

    /// Whether `other` renders registered hosts the same files and services: both CA bundles, windows_exporter's TLS
    /// pair, the pull secret, the registry CAs, the trusted CA bundle, cloud-node-manager's token (or the reasons
    /// they are unusable) and the cluster settings are equal, so a rotated cloud-node-manager token reaches every
    /// Azure host at once. The bootstrap token is left out: only hosts without a Node use it, and each of their
    /// passes reads the current one.
    pub fn same_node_files(&self, other: &ClusterMaterial) -> bool {
        self.settings == other.settings
            && self.cloud_node_manager_token == other.cloud_node_manager_token
            && self.pull_secret == other.pull_secret
            && self.registry_cas == other.registry_cas
            && self.trusted_ca == other.trusted_ca
            && self.api_server_ca == other.api_server_ca
            && self.kubelet_client_ca == other.kubelet_client_ca
            && self.exporter_tls == other.exporter_tls
    }

    /// The settings generation: a short digest of everything registered hosts' files and services are rendered
    /// from (what [`ClusterMaterial::same_node_files`] compares), so two snapshots that render the same have the same
    /// generation. A host's record carries the generation it last converged to; hosts behind a cluster setting
    /// change show an older one. cloud-node-manager's token is left out: a rotation is not a setting. Stable for one build of the operator (it hashes the values as Rust sees them).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use wmco_operator::files::{ClusterMaterial, ClusterSettings};
    /// # fn example(settings: ClusterSettings) {
    /// let material = ClusterMaterial::not_read_yet(Arc::new(settings));
    /// assert_eq!(material.settings_generation().len(), 12);
    /// assert_eq!(material.settings_generation(), material.clone().settings_generation());
    /// # }
    /// ```
    pub fn settings_generation(&self) -> String {
        use std::hash::Hash as _;
        let mut hasher = DigestHasher::default();
        self.settings.hash(&mut hasher);
        self.pull_secret.hash(&mut hasher);
        self.registry_cas.hash(&mut hasher);
        self.trusted_ca.hash(&mut hasher);
        self.api_server_ca.hash(&mut hasher);
        self.kubelet_client_ca.hash(&mut hasher);
        self.exporter_tls.hash(&mut hasher);
        let digest = sha2::Digest::finalize(hasher.0);
        hex::encode(&digest[..6])
    }

    /// Whether every piece is usable.
    pub fn is_complete(&self) -> bool {
        self.api_server_ca.is_ok()
            && self.kubelet_client_ca.is_ok()
            && self.bootstrap_token.is_ok()
            && self.cloud_node_manager_token.is_ok()
            && self.exporter_tls.is_ok()
            && self.pull_secret.is_ok()
            && self.registry_cas.is_ok()
            && self.trusted_ca.is_ok()
    }
}

/// Feeds [`std::hash::Hash`] output into SHA-256, so a digest of many values needs no serialization.
#[derive(Default)]
struct DigestHasher(sha2::Sha256);

impl std::hash::Hasher for DigestHasher {
    fn write(&mut self, bytes: &[u8]) {
        sha2::Digest::update(&mut self.0, bytes);
    }

    /// Unused: the digest is read from the SHA-256 state.
    fn finish(&self) -> u64 {
        0
    }
}

/// A ServiceAccount token the operator minted (node-bootstrapper, cloud-node-manager) and when it expires. `Debug`
/// hides the token.
#[derive(Clone, PartialEq, Eq)]
pub struct MintedToken {
    /// The bearer token.
    pub token: SecretToken,
    /// When the operator received it.
    pub issued_at: Timestamp,
    /// When the API server stops accepting it.
    pub expires_at: Timestamp,
}

impl MintedToken {
    /// When the token is to be replaced: at half the lifetime the API server granted, which may be shorter than the
    /// one asked for (`--service-account-max-token-expiration`), so a shortened token is not replaced at every
    /// refresh.
    ///
    /// ```
    /// # use wmco_operator::files::MintedToken;
    /// # use wmco_payload_manifest::render::SecretToken;
    /// let issued_at: jiff::Timestamp = "2026-11-22T03:00:00Z".parse().unwrap();
    /// let expires_at = issued_at.checked_add(jiff::SignedDuration::from_hours(1)).unwrap();
    /// let token = MintedToken { token: SecretToken::new("t"), issued_at, expires_at };
    /// assert_eq!(token.refresh_due(), issued_at.checked_add(jiff::SignedDuration::from_mins(30)).unwrap());
    /// ```
    pub fn refresh_due(&self) -> Timestamp {
        let granted = self.expires_at.duration_since(self.issued_at).max(jiff::SignedDuration::ZERO);
        self.issued_at.checked_add(granted / 2).unwrap_or(self.expires_at)
    }
}

impl fmt::Debug for MintedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MintedToken")
            .field("token", &self.token)
            .field("issued_at", &self.issued_at)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Why a piece of cluster material is not usable. Every variant names the object to create or fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Hash)]
pub enum MaterialError {
    /// The refresher has not read it yet (the operator is starting).
    #[error("{what} has not been read from the cluster yet")]
    NotReadYet {
        /// What.
        what: &'static str,
    },
    /// The object does not exist.
    #[error("{kind} {object} does not exist: {hint}")]
    Missing {
        /// `ConfigMap`, `Secret`, …
        kind: &'static str,
        /// `namespace/name`.
        object: String,
        /// What creates it.
        hint: &'static str,
    },
    /// The object lacks a key.
    #[error("{kind} {object} has no data key {key:?}")]
    MissingKey {
        /// `ConfigMap`, `Secret`, …
        kind: &'static str,
        /// `namespace/name`.
        object: String,
        /// The key.
        key: &'static str,
    },
    /// A key holds something unusable.
    #[error("{kind} {object}: data key {key:?} is unusable: {reason}")]
    Invalid {
        /// `ConfigMap`, `Secret`, …
        kind: &'static str,
        /// `namespace/name`.
        object: String,
        /// The key.
        key: &'static str,
        /// Why.
        reason: String,
    },
    /// The API call failed.
    #[error("cannot read {what}: {reason}")]
    Read {
        /// What was read.
        what: String,
        /// The API error.
        reason: String,
    },
    /// No ControllerConfig carries the kubelet client CA.
    #[error("no ControllerConfig carries spec.kubeAPIServerServingCAData (the machine-config operator publishes it)")]
    NoControllerConfigCa,
}
