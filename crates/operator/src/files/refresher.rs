//! The [`MaterialRefresher`]: the async task that reads the cluster material and publishes it as a
//! [`ClusterMaterial`] snapshot through a `tokio::sync::watch` channel, so the synchronous
//! [`HostFilesSource`](wmco_node_config::HostFilesSource) never does cluster IO.
//!
//! - API server CA: ConfigMap `kube-root-ca.crt` (`ca.crt`) in the operator namespace, published in every
//!   namespace by kube-controller-manager.
//! - kubelet client CA: the first ControllerConfig's `kubeAPIServerServingCAData` on OpenShift (as the Go
//!   operator), the API server CA on plain Kubernetes.
//! - registry CAs: the ControllerConfig's `imageRegistryBundleUserData` and `imageRegistryBundleData` (OpenShift),
//!   written into `C:\k\ca-bundle.crt`.
//! - node-bootstrapper token: TokenRequest for `openshift-machine-config-operator/node-bootstrapper`, minted again
//!   at half its lifetime; a failed mint keeps the previous token while it is valid.
//! - cloud-node-manager token (Azure only): TokenRequest for ServiceAccount `cloud-node-manager` of the operator
//!   namespace, the same way with a longer lifetime (a day by default), so Azure hosts keep a valid credential
//!   through an operator outage of half of it. Every registered Azure host gets the new token at once.
//! - windows_exporter TLS: Secret `windows-machine-config-operator-tls` (`tls.crt`, `tls.key`).
//! - pull secret (OpenShift): Secret `openshift-config/pull-secret` (`.dockerconfigjson`), whose credentials for
//!   image mirrors go into `hosts.toml`; none where the Secret does not exist.
//! - trusted CA bundle: ConfigMap `trusted-ca` (`ca-bundle.crt`) in the operator namespace, which the refresher keeps
//!   labelled for OpenShift's network operator to fill; with a proxy it joins `C:\k\ca-bundle.crt` and the hosts'
//!   root stores.
//! - cluster settings: the cluster's facts read again (on OpenShift the `Network`, `Infrastructure` and `Proxy`
//!   objects and the image mirror sets), so a proxy or mirror change reaches hosts without restarting the
//!   operator. Facts that cannot be read or used keep the previous settings, with a warning.
//!
//! A piece that cannot be read keeps its reason in the snapshot and is logged as a warning once per change.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use tokio::sync::watch;
use wmco_cluster_client::names::{
    CLOUD_NODE_MANAGER_SERVICE_ACCOUNT, INJECT_TRUSTED_CA_BUNDLE_LABEL, NODE_BOOTSTRAPPER_NAMESPACE,
    NODE_BOOTSTRAPPER_SERVICE_ACCOUNT, PULL_SECRET, PULL_SECRET_NAMESPACE, TRUSTED_CA_CONFIG_MAP, TRUSTED_CA_KEY,
};
use wmco_cluster_client::types::ControllerConfig;
use wmco_cluster_client::{
    ClusterFactsSource, ConfigMaps, ControllerConfigs, Secrets, ServiceAccountTokens, TokenRequestSpec,
};
use wmco_payload_manifest::render::{PemBundle, PullSecret, RegistryCa, SecretToken, ServingTls};
use wmco_vocabulary::Platform;

use super::ClusterSettings;
use super::material::{ClusterMaterial, MaterialError, MintedToken};
use crate::csr::Clock;

/// How long a refresh waits after a trigger for the rest of its burst.
const TRIGGER_SETTLE: Duration = Duration::from_secs(1);

/// The key of the pull secret holding the `.dockerconfigjson` document.
pub const PULL_SECRET_KEY: &str = ".dockerconfigjson";

/// The ConfigMap kube-controller-manager publishes in every namespace with the API server's CA bundle.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The key of [`ROOT_CA_CONFIG_MAP`] holding the bundle.
pub const ROOT_CA_KEY: &str = "ca.crt";
/// The Secret holding windows_exporter's serving certificate (OpenShift's service CA fills it).
pub const EXPORTER_TLS_SECRET: &str = "windows-machine-config-operator-tls";

/// Where the kubelet client CA comes from.
#[derive(Clone)]
pub enum KubeletCaSource {
    /// OpenShift: the first ControllerConfig carrying `kubeAPIServerServingCAData`.
    ControllerConfigs(Arc<dyn ControllerConfigs>),
    /// Plain Kubernetes: the API server CA bundle.
    ApiServerCa,
}

/// The cluster seams the refresher reads through.
#[derive(Clone)]
pub struct MaterialSources {
    /// ConfigMaps (the root CA).
    pub config_maps: Arc<dyn ConfigMaps>,
    /// Secrets (the TLS pair).
    pub secrets: Arc<dyn Secrets>,
    /// TokenRequest (the node-bootstrapper token).
    pub tokens: Arc<dyn ServiceAccountTokens>,
    /// The kubelet client CA's origin.
    pub kubelet_ca: KubeletCaSource,
    /// Where the cluster settings are read again from; `None` keeps the startup settings (plain Kubernetes, whose
    /// settings are the operator's flags).
    pub facts: Option<Arc<dyn ClusterFactsSource>>,
    /// Whether to read the cluster's pull secret (`openshift-config/pull-secret`, OpenShift only).
    pub read_pull_secret: bool,
}

/// How the refresher behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefreshSettings {
    /// The operator namespace (root CA ConfigMap and TLS Secret).
    pub namespace: String,
    /// The lifetime asked for the node-bootstrapper token; it is minted again at half of it.
    pub token_lifetime: Duration,
    /// The lifetime asked for the cloud-node-manager token (Azure); it is minted again at half of it.
    pub cloud_node_manager_token_lifetime: Duration,
    /// How often the CAs and the TLS Secret are read again while everything is usable.
    pub resync: Duration,
    /// How often a piece that is not usable is read again.
    pub retry: Duration,
}

impl RefreshSettings {
    /// Defaults: a one-hour bootstrap token, a one-day cloud-node-manager token, everything re-read every minute,
    /// missing pieces every five seconds.
    pub fn new(namespace: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            token_lifetime: Duration::from_secs(3600),
            cloud_node_manager_token_lifetime: Duration::from_secs(24 * 3600),
            resync: Duration::from_secs(60),
            retry: Duration::from_secs(5),
        }
    }
}

/// A read-only handle on the latest [`ClusterMaterial`]; cheap to clone, never blocks on IO.
#[derive(Clone, Debug)]
pub struct MaterialSnapshot {
    receiver: watch::Receiver<Arc<ClusterMaterial>>,
}

impl MaterialSnapshot {
    /// A snapshot that always holds `material` (nothing refreshes it): for tests and tools.
    pub fn fixed(material: ClusterMaterial) -> Self {
        let (_sender, receiver) = watch::channel(Arc::new(material));
        Self { receiver }
    }

    /// The latest material.
    pub fn current(&self) -> Arc<ClusterMaterial> {
        Arc::clone(&self.receiver.borrow())
    }

    /// One item each time a refresh publishes material that changes registered hosts' files (see
    /// [`ClusterMaterial::same_node_files`]): a rotated CA, or windows_exporter's TLS Secret created, renewed or
    /// deleted. The instances controller reconciles every host on it, so the change reaches the fleet at once
    /// rather than at the next drift check. Ends when the refresher is dropped.
    pub fn node_file_changes(&self) -> impl futures::Stream<Item = ()> + Send + 'static {
        let receiver = self.receiver.clone();
        let seen = self.current();
        futures::stream::unfold((receiver, seen), |(mut receiver, mut seen)| async move {
            loop {
                receiver.changed().await.ok()?;
                let current = Arc::clone(&receiver.borrow_and_update());
                if !current.same_node_files(&seen) {
                    return Some(((), (receiver, current)));
                }
                seen = current;
            }
        })
    }
}

/// Reads the cluster material and publishes each refresh to its [`MaterialSnapshot`]s.
pub struct MaterialRefresher {
    sources: MaterialSources,
    settings: RefreshSettings,
    clock: Clock,
    sender: watch::Sender<Arc<ClusterMaterial>>,
}

impl MaterialRefresher {
    /// A refresher and the snapshot handle it publishes to (holding [`ClusterMaterial::not_read_yet`] with the
    /// startup `cluster` settings until the first refresh).
    ///
    /// ```no_run
    /// # async fn example(sources: wmco_operator::files::MaterialSources, cluster: wmco_operator::files::ClusterSettings) {
    /// use wmco_operator::csr::system_clock;
    /// use wmco_operator::files::{MaterialRefresher, RefreshSettings};
    ///
    /// let (refresher, snapshot) =
    ///     MaterialRefresher::new(sources, RefreshSettings::new("wmco"), cluster, system_clock());
    /// tokio::spawn(refresher.run());
    /// let material = snapshot.current();
    /// # }
    /// ```
    pub fn new(
        sources: MaterialSources,
        settings: RefreshSettings,
        cluster: ClusterSettings,
        clock: Clock,
    ) -> (Self, MaterialSnapshot) {
        let (sender, receiver) = watch::channel(Arc::new(ClusterMaterial::not_read_yet(Arc::new(cluster))));
        (Self { sources, settings, clock, sender }, MaterialSnapshot { receiver })
    }

    /// Another handle on the snapshot this refresher publishes.
    pub fn snapshot(&self) -> MaterialSnapshot {
        MaterialSnapshot { receiver: self.sender.subscribe() }
    }

    /// Reads every piece once (the token only when it is due) and publishes the result; returns how long to wait
    /// before the next refresh.
    pub async fn refresh(&self) -> Duration {
        let previous = self.sender.borrow().clone();
        let now = (self.clock)();
        let api_server_ca = self.api_server_ca().await;
        let (kubelet_client_ca, registry_cas) = match &self.sources.kubelet_ca {
            KubeletCaSource::ControllerConfigs(configs) => controller_config_material(configs.as_ref()).await,
            KubeletCaSource::ApiServerCa => (api_server_ca.clone(), Ok(Vec::new())),
        };
        let bootstrap_token = self.bootstrap_token(&previous.bootstrap_token, now).await;
        let exporter_tls = self.exporter_tls().await;
        let settings = self.cluster_settings(&previous.settings).await;
        let cloud_node_manager_token =
            self.cloud_node_manager_token(&previous.cloud_node_manager_token, settings.platform, now).await;
        let pull_secret = self.pull_secret().await;
        let trusted_ca = self.trusted_ca().await;
        let material = ClusterMaterial {
            api_server_ca,
            kubelet_client_ca,
            bootstrap_token,
            cloud_node_manager_token,
            exporter_tls,
            pull_secret,
            registry_cas,
            trusted_ca,
            settings,
        };
        log_changes(&previous, &material);
        let wait = self.next_wait(&material, now);
        self.sender.send_replace(Arc::new(material));
        wait
    }

    /// Refreshes forever (spawn it; abort the task to stop).
    pub async fn run(self) {
        self.run_with_triggers(futures::stream::pending()).await;
    }

    /// Refreshes forever, and also soon after each item of `triggers` (watch events of the objects the settings
    /// come from), so a change reaches hosts in seconds rather than at the next resync. A burst of triggers
    /// costs one refresh.
    pub async fn run_with_triggers(self, triggers: impl futures::Stream<Item = ()> + Send) {
        use futures::{FutureExt as _, StreamExt as _};
        let mut triggers = std::pin::pin!(triggers.fuse());
        loop {
            let wait = self.refresh().await;
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                Some(()) = triggers.next() => {
                    tokio::time::sleep(TRIGGER_SETTLE).await;
                    while let Some(Some(())) = triggers.next().now_or_never() {}
                }
            }
        }
    }

    /// The resync interval, the retry interval when a piece is unusable, and never past a token's half-life.
    fn next_wait(&self, material: &ClusterMaterial, now: Timestamp) -> Duration {
        let mut wait = if material.is_complete() { self.settings.resync } else { self.settings.retry };
        let tokens = [
            material.bootstrap_token.as_ref().ok(),
            material.cloud_node_manager_token.as_ref().ok().and_then(Option::as_ref),
        ];
        for token in tokens.into_iter().flatten() {
            let until_due = token.refresh_due().duration_since(now);
            wait = wait.min(Duration::try_from(until_due).unwrap_or(Duration::ZERO));
        }
        wait
    }

    fn cloud_node_manager_lifetime(&self) -> Duration {
        self.settings.cloud_node_manager_token_lifetime
    }

    /// The cluster settings read again; the `previous` ones when the facts cannot be read or used.
    async fn cluster_settings(&self, previous: &Arc<ClusterSettings>) -> Arc<ClusterSettings> {
        let Some(facts) = &self.sources.facts else { return Arc::clone(previous) };
        let read = match facts.gather().await {
            Ok(facts) => ClusterSettings::from_facts(&facts)
                .map(|settings| settings.with_log_rotation(previous.log_rotation))
                .map_err(|error| error.to_string()),
            Err(error) => Err(format!("cannot read the cluster facts: {error}")),
        };
        match read {
            Ok(settings) if settings == **previous => Arc::clone(previous),
            Ok(settings) => {
                // Names only: a proxy URL may carry credentials, and mirror hosts are the admin's business.
                tracing::info!(
                    changed = ?previous.changed_fields(&settings),
                    "cluster settings changed; every host is reconciled with them"
                );
                Arc::new(settings)
            }
            Err(error) => {
                tracing::warn!(error = %error, "keeping the previous cluster settings");
                Arc::clone(previous)
            }
        }
    }

    /// The cluster's pull secret: `None` when not asked to read it or when the Secret does not exist.
    async fn pull_secret(&self) -> Result<Option<PullSecret>, MaterialError> {
        if !self.sources.read_pull_secret {
            return Ok(None);
        }
        let object = format!("{PULL_SECRET_NAMESPACE}/{PULL_SECRET}");
        let Some(secret) = self
            .sources
            .secrets
            .get(PULL_SECRET_NAMESPACE, PULL_SECRET)
            .await
            .map_err(|error| MaterialError::Read { what: format!("Secret {object}"), reason: error.to_string() })?
        else {
            return Ok(None);
        };
        let data = secret.data.unwrap_or_default();
        let bytes = data.get(PULL_SECRET_KEY).ok_or_else(|| MaterialError::MissingKey {
            kind: "Secret",
            object: object.clone(),
            key: PULL_SECRET_KEY,
        })?;
        PullSecret::from_docker_config_json(&bytes.0).map(Some).map_err(|error| MaterialError::Invalid {
            kind: "Secret",
            object,
            key: PULL_SECRET_KEY,
            reason: error.to_string(),
        })
    }

    /// The trusted CA bundle of ConfigMap `trusted-ca` in the operator namespace (`None` while it holds none). The
    /// operator owns the ConfigMap: a missing one is created, and a missing injection label put back, by a
    /// server-side apply of the label alone, which leaves the data to whoever fills it (OpenShift's network
    /// operator, or the admin on plain Kubernetes).
    async fn trusted_ca(&self) -> Result<Option<PemBundle>, MaterialError> {
        let namespace = &self.settings.namespace;
        let object = format!("{namespace}/{TRUSTED_CA_CONFIG_MAP}");
        let read_error = |error: wmco_cluster_client::Error| MaterialError::Read {
            what: format!("ConfigMap {object}"),
            reason: error.to_string(),
        };
        let found = self.sources.config_maps.get(namespace, TRUSTED_CA_CONFIG_MAP).await.map_err(read_error)?;
        let labelled = found
            .as_ref()
            .is_some_and(|map| map.labels().get(INJECT_TRUSTED_CA_BUNDLE_LABEL).is_some_and(|v| v == "true"));
        if !labelled {
            let owned = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(TRUSTED_CA_CONFIG_MAP.to_owned()),
                    namespace: Some(namespace.clone()),
                    labels: Some([(INJECT_TRUSTED_CA_BUNDLE_LABEL.to_owned(), "true".to_owned())].into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            match self.sources.config_maps.apply(&owned).await {
                Ok(_) => tracing::info!(
                    config_map = %object,
                    label = INJECT_TRUSTED_CA_BUNDLE_LABEL,
                    "the trusted CA ConfigMap was missing or unlabelled; created or labelled it"
                ),
                Err(error) => {
                    tracing::warn!(config_map = %object, error = %error, "cannot keep the trusted CA ConfigMap")
                }
            }
        }
        let Some(text) = found.and_then(|map| map.data).and_then(|mut data| data.remove(TRUSTED_CA_KEY)) else {
            return Ok(None);
        };
        if text.trim().is_empty() {
            return Ok(None);
        }
        text.parse().map(Some).map_err(|error: wmco_payload_manifest::render::PemBundleError| MaterialError::Invalid {
            kind: "ConfigMap",
            object,
            key: TRUSTED_CA_KEY,
            reason: error.to_string(),
        })
    }

    async fn api_server_ca(&self) -> Result<PemBundle, MaterialError> {
        let namespace = &self.settings.namespace;
        let object = format!("{namespace}/{ROOT_CA_CONFIG_MAP}");
        let config_map = self
            .sources
            .config_maps
            .get(namespace, ROOT_CA_CONFIG_MAP)
            .await
            .map_err(|error| MaterialError::Read { what: format!("ConfigMap {object}"), reason: error.to_string() })?
            .ok_or_else(|| MaterialError::Missing {
                kind: "ConfigMap",
                object: object.clone(),
                hint: "kube-controller-manager's root-ca-certificate-publisher-controller creates it",
            })?;
        let text =
            config_map.data.as_ref().and_then(|data| data.get(ROOT_CA_KEY)).ok_or_else(|| {
                MaterialError::MissingKey { kind: "ConfigMap", object: object.clone(), key: ROOT_CA_KEY }
            })?;
        text.parse().map_err(|error: wmco_payload_manifest::render::PemBundleError| MaterialError::Invalid {
            kind: "ConfigMap",
            object,
            key: ROOT_CA_KEY,
            reason: error.to_string(),
        })
    }

    async fn bootstrap_token(
        &self,
        previous: &Result<MintedToken, MaterialError>,
        now: Timestamp,
    ) -> Result<MintedToken, MaterialError> {
        let account = (NODE_BOOTSTRAPPER_NAMESPACE, NODE_BOOTSTRAPPER_SERVICE_ACCOUNT);
        self.token(previous, now, account, self.settings.token_lifetime, "node-bootstrapper").await
    }

    /// cloud-node-manager's token on Azure; `None` on every other platform (no host runs cloud-node-manager).
    async fn cloud_node_manager_token(
        &self,
        previous: &Result<Option<MintedToken>, MaterialError>,
        platform: Platform,
        now: Timestamp,
    ) -> Result<Option<MintedToken>, MaterialError> {
        if platform != Platform::Azure {
            return Ok(None);
        }
        let previous = match previous {
            Ok(Some(token)) => Ok(token.clone()),
            Ok(None) => Err(MaterialError::NotReadYet { what: "the cloud-node-manager token" }),
            Err(error) => Err(error.clone()),
        };
        let account = (self.settings.namespace.as_str(), CLOUD_NODE_MANAGER_SERVICE_ACCOUNT);
        self.token(&previous, now, account, self.cloud_node_manager_lifetime(), "cloud-node-manager").await.map(Some)
    }

    /// The `previous` token while it is not due; otherwise a token of ServiceAccount `account` (namespace, name) for
    /// `lifetime`, or, when the mint fails, the previous one while it is still valid.
    async fn token(
        &self,
        previous: &Result<MintedToken, MaterialError>,
        now: Timestamp,
        (namespace, service_account): (&str, &str),
        lifetime: Duration,
        what: &'static str,
    ) -> Result<MintedToken, MaterialError> {
        if let Ok(token) = previous
            && now < token.refresh_due()
        {
            return Ok(token.clone());
        }
        let spec = TokenRequestSpec { audiences: Vec::new(), lifetime };
        match self.sources.tokens.request(namespace, service_account, &spec).await {
            Ok(minted) => {
                tracing::info!(expires_at = %minted.expires_at(), "minted a {what} token");
                Ok(MintedToken {
                    token: SecretToken::new(minted.secret()),
                    issued_at: now,
                    expires_at: minted.expires_at(),
                })
            }
            Err(error) => {
                let error = MaterialError::Read {
                    what: format!("a token of ServiceAccount {namespace}/{service_account}"),
                    reason: error.to_string(),
                };
                match previous {
                    Ok(token) if now < token.expires_at => {
                        tracing::warn!(error = %error, "keeping the previous {what} token until it expires");
                        Ok(token.clone())
                    }
                    _ => Err(error),
                }
            }
        }
    }

    async fn exporter_tls(&self) -> Result<ServingTls, MaterialError> {
        let namespace = &self.settings.namespace;
        let object = format!("{namespace}/{EXPORTER_TLS_SECRET}");
        let secret = self
            .sources
            .secrets
            .get(namespace, EXPORTER_TLS_SECRET)
            .await
            .map_err(|error| MaterialError::Read { what: format!("Secret {object}"), reason: error.to_string() })?
            .ok_or_else(|| MaterialError::Missing {
                kind: "Secret",
                object: object.clone(),
                hint: "OpenShift's service CA fills it for the windows-exporter Service; elsewhere create it with \
                       tls.crt and tls.key",
            })?;
        let data = secret.data.unwrap_or_default();
        let text = |key: &'static str| -> Result<String, MaterialError> {
            let bytes = data.get(key).ok_or_else(|| MaterialError::MissingKey {
                kind: "Secret",
                object: object.clone(),
                key,
            })?;
            String::from_utf8(bytes.0.clone()).map_err(|_| MaterialError::Invalid {
                kind: "Secret",
                object: object.clone(),
                key,
                reason: "not UTF-8 text".to_owned(),
            })
        };
        let invalid = |key: &'static str, reason: String| MaterialError::Invalid {
            kind: "Secret",
            object: object.clone(),
            key,
            reason,
        };
        let chain: PemBundle = text("tls.crt")?.parse().map_err(|error| invalid("tls.crt", format!("{error}")))?;
        ServingTls::new(chain, &text("tls.key")?).map_err(|error| invalid("tls.key", error.to_string()))
    }
}

/// What the API server said (the cluster error's source), as the reason of a failed ControllerConfig listing.
fn api_reason(error: &wmco_cluster_client::Error) -> String {
    std::error::Error::source(error).map_or_else(|| error.to_string(), ToString::to_string)
}

/// From the ControllerConfigs: the first one's `kubeAPIServerServingCAData` (base64 PEM), and the registry CAs of
/// the first one carrying any (`imageRegistryBundleUserData`, then `imageRegistryBundleData`; `host..port` names
/// `host:port`).
async fn controller_config_material(
    configs: &dyn ControllerConfigs,
) -> (Result<PemBundle, MaterialError>, Result<Vec<RegistryCa>, MaterialError>) {
    let items = match configs.list().await {
        Ok(items) => items,
        Err(error) => {
            let error = MaterialError::Read { what: "ControllerConfigs".to_owned(), reason: api_reason(&error) };
            return (Err(error.clone()), Err(error));
        }
    };
    let kubelet_ca = items
        .iter()
        .find_map(|config| {
            let data = config.spec.kube_api_server_serving_ca_data.as_ref().filter(|data| !data.is_empty())?;
            Some((config.name_any(), data))
        })
        .ok_or(MaterialError::NoControllerConfigCa)
        .and_then(|(name, encoded)| decode_pem(&name, "spec.kubeAPIServerServingCAData", encoded));
    let registry_cas = items
        .iter()
        .find(|config| {
            !config.spec.image_registry_bundle_user_data.is_empty()
                || !config.spec.image_registry_bundle_data.is_empty()
        })
        .map_or_else(|| Ok(Vec::new()), registry_cas);
    (kubelet_ca, registry_cas)
}

/// The registry CAs of `config`, the admin's (`imageRegistryBundleUserData`) before the cluster's.
fn registry_cas(config: &ControllerConfig) -> Result<Vec<RegistryCa>, MaterialError> {
    let name = config.name_any();
    let user =
        config.spec.image_registry_bundle_user_data.iter().map(|bundle| ("spec.imageRegistryBundleUserData", bundle));
    let cluster = config.spec.image_registry_bundle_data.iter().map(|bundle| ("spec.imageRegistryBundleData", bundle));
    user.chain(cluster)
        .map(|(key, bundle)| {
            Ok(RegistryCa { registry: bundle.file.replace("..", ":"), bundle: decode_pem(&name, key, &bundle.data)? })
        })
        .collect()
}

/// A base64 PEM bundle of ControllerConfig `name`'s field `key`.
fn decode_pem(name: &str, key: &'static str, encoded: &str) -> Result<PemBundle, MaterialError> {
    let invalid =
        |reason: String| MaterialError::Invalid { kind: "ControllerConfig", object: name.to_owned(), key, reason };
    let bytes =
        base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|error| invalid(error.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| invalid("not UTF-8 text".to_owned()))?;
    text.parse().map_err(|error: wmco_payload_manifest::render::PemBundleError| invalid(error.to_string()))
}

/// Logs each piece whose usability or reason changed: a warning when it became unusable, info when it recovered.
fn log_changes(previous: &ClusterMaterial, current: &ClusterMaterial) {
    log_change("API server CA", previous.api_server_ca.as_ref().err(), current.api_server_ca.as_ref().err());
    log_change(
        "kubelet client CA",
        previous.kubelet_client_ca.as_ref().err(),
        current.kubelet_client_ca.as_ref().err(),
    );
    log_change(
        "node-bootstrapper token",
        previous.bootstrap_token.as_ref().err(),
        current.bootstrap_token.as_ref().err(),
    );
    log_change(
        "cloud-node-manager token",
        previous.cloud_node_manager_token.as_ref().err(),
        current.cloud_node_manager_token.as_ref().err(),
    );
    log_change("windows_exporter TLS pair", previous.exporter_tls.as_ref().err(), current.exporter_tls.as_ref().err());
    log_change("pull secret", previous.pull_secret.as_ref().err(), current.pull_secret.as_ref().err());
    log_change("registry CAs", previous.registry_cas.as_ref().err(), current.registry_cas.as_ref().err());
    log_change("trusted CA bundle", previous.trusted_ca.as_ref().err(), current.trusted_ca.as_ref().err());
}

fn log_change(piece: &str, previous: Option<&MaterialError>, current: Option<&MaterialError>) {
    match (previous, current) {
        (_, Some(error)) if previous != Some(error) => {
            tracing::warn!(piece, error = %error, "cluster material unusable; hosts needing it wait");
        }
        (Some(_), None) => tracing::info!(piece, "cluster material usable"),
        _ => {}
    }
}
