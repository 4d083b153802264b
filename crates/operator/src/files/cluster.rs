//! The cluster-wide, non-secret inputs of the rendered files and node services, derived once from
//! [`ClusterFacts`]: API server URL, service network and cluster DNS (the network's 10th address, as the Go
//! operator), platform, proxy, image mirrors, hybrid overlay, the Linux workers' kubelet cloud settings, and
//! whether Windows nodes may join at all ([`ClusterSettings::refusal`]).

use std::net::Ipv4Addr;

use semver::Version;
use wmco_cluster_client::{ClusterFacts, KubeletCloud, PodNetworking};
use wmco_node_config::ServiceSettings;
use wmco_payload_manifest::render::destinations::CLOUD_CONFIG;
use wmco_payload_manifest::render::{
    ClusterInputs, ImageMirrorRule, LogRotation, MirrorSourcePolicy, PemBundle, Proxy, PullSecret, RegistryCa,
    SecretToken,
};
use wmco_vocabulary::{IpCidr, Platform};
use wmco_windows_services::{LogRotation as ServiceLogRotation, Verbosity, go_duration};
use wmco_windows_services::{NodeProxy, WinPath};

/// The index of the cluster DNS Service's address in the service network.
pub const CLUSTER_DNS_INDEX: u32 = 10;
/// The only pod network Windows nodes join (with hybrid overlay).
pub const OVN_KUBERNETES: &str = "OVNKubernetes";
/// How many minor versions a kubelet may be older than the API server (Kubernetes' version skew policy).
pub const MAX_KUBELET_MINOR_SKEW: u64 = 3;
/// The cluster's DNS domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// The cluster material the files are rendered from besides the settings: CAs, the bootstrap token and the
/// registry credentials. Pieces that are not usable are left out by the caller (`None` or empty).
#[derive(Debug, Clone)]
pub struct RenderMaterial {
    /// The CA bundle that verifies the API server.
    pub api_server_ca: PemBundle,
    /// The CA bundle of the clients the kubelet accepts.
    pub kubelet_client_ca: PemBundle,
    /// The node-bootstrapper token (empty in the node stage, whose files carry no bootstrap kubeconfig).
    pub bootstrap_token: SecretToken,
    /// The cluster's pull secret.
    pub pull_secret: Option<PullSecret>,
    /// The registries' additional CAs.
    pub registry_cas: Vec<RegistryCa>,
    /// The cluster's trusted CA bundle (ConfigMap `trusted-ca`).
    pub trusted_ca: Option<PemBundle>,
}

/// The facts cannot be turned into render inputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterSettingsError {
    /// The service network is not an IPv4 CIDR (Windows nodes are IPv4 only).
    #[error("the cluster's service network {service_cidr:?} is not an IPv4 CIDR; Windows nodes need IPv4 services")]
    ServiceCidr {
        /// The network as read.
        service_cidr: String,
    },
    /// The service network is too small to hold the cluster DNS address.
    #[error("the cluster's service network {service_cidr} has no 10th address for the cluster DNS Service")]
    NoClusterDns {
        /// The network.
        service_cidr: IpCidr,
    },
}

/// What the rendered files and node services take from the cluster, apart from the secret material.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClusterSettings {
    /// The URL nodes reach the API server at.
    pub api_server_url: String,
    /// The service network.
    pub service_cidr: IpCidr,
    /// The cluster DNS Service address.
    pub cluster_dns: Ipv4Addr,
    /// The platform whose behaviour applies (a platform this product does not know counts as `None`).
    pub platform: Platform,
    /// The egress proxy, without its trusted CA bundle (cluster material, joined in
    /// [`ClusterSettings::cluster_inputs`]).
    pub proxy: Option<Proxy>,
    /// Registry mirror rules.
    pub image_mirrors: Vec<ImageMirrorRule>,
    /// The pod network (OpenShift; `None` on plain Kubernetes).
    pub pod_networking: Option<PodNetworking>,
    /// The API server's version.
    pub kubernetes_version: Version,
    /// The Linux workers' kubelet cloud settings (`--cloud-provider`, and the `--cloud-config` file's contents).
    pub kubelet_cloud: KubeletCloud,
    /// Rotation of the kubelet and kube-proxy logs: the operator's own setting (its `SERVICES_LOG_*` environment),
    /// not read from the cluster, kept across refreshes.
    pub log_rotation: ServiceLogRotation,
}

impl ClusterSettings {
    /// The settings of the cluster `facts` describe.
    ///
    /// ```
    /// use wmco_cluster_client::{ClusterFacts, Platform, PlatformName, ProxySettings};
    /// use wmco_operator::files::ClusterSettings;
    ///
    /// let facts = ClusterFacts {
    ///     service_cidr: "172.30.0.0/16".parse().unwrap(),
    ///     api_server_internal_url: "https://api-int.example:6443".into(),
    ///     platform: PlatformName::Known(Platform::None),
    ///     proxy: ProxySettings::default(),
    ///     kubernetes_version: semver::Version::new(1, 36, 3),
    ///     mirror_sets: vec![],
    ///     pod_networking: None,
    ///     kubelet_cloud: Default::default(),
    /// };
    /// let settings = ClusterSettings::from_facts(&facts).unwrap();
    /// assert_eq!(settings.cluster_dns.to_string(), "172.30.0.10");
    /// assert_eq!(settings.proxy, None);
    /// ```
    ///
    /// # Errors
    /// [`ClusterSettingsError`] when the service network is not IPv4 or too small.
    pub fn from_facts(facts: &ClusterFacts) -> Result<Self, ClusterSettingsError> {
        let service_cidr = facts.service_cidr;
        if !service_cidr.is_ipv4() {
            return Err(ClusterSettingsError::ServiceCidr { service_cidr: service_cidr.to_string() });
        }
        let cluster_dns =
            service_cidr.nth_address(CLUSTER_DNS_INDEX).ok_or(ClusterSettingsError::NoClusterDns { service_cidr })?;
        let proxy = &facts.proxy;
        let proxy =
            (proxy.http_proxy.is_some() || proxy.https_proxy.is_some() || proxy.no_proxy.is_some()).then(|| Proxy {
                http_proxy: proxy.http_proxy.clone(),
                https_proxy: proxy.https_proxy.clone(),
                no_proxy: proxy.no_proxy.clone(),
                trusted_ca: None,
            });
        let image_mirrors = facts
            .mirror_sets
            .iter()
            .map(|set| ImageMirrorRule {
                source: set.source.clone(),
                mirrors: set.mirrors.clone(),
                kind: set.kind,
                source_policy: if set.never_contact_source {
                    MirrorSourcePolicy::NeverContactSource
                } else {
                    MirrorSourcePolicy::AllowContactingSource
                },
            })
            .collect();
        Ok(Self {
            api_server_url: facts.api_server_internal_url.clone(),
            service_cidr,
            cluster_dns,
            platform: facts.platform.known_or_none(),
            proxy,
            image_mirrors,
            pod_networking: facts.pod_networking.clone(),
            kubernetes_version: facts.kubernetes_version.clone(),
            kubelet_cloud: facts.kubelet_cloud.clone(),
            log_rotation: ServiceLogRotation::default(),
        })
    }

    /// These settings with the operator's log rotation.
    pub fn with_log_rotation(self, log_rotation: ServiceLogRotation) -> Self {
        Self { log_rotation, ..self }
    }

    /// The render inputs: these settings with the cluster's `material`. The trusted CA bundle joins the proxy (it
    /// counts only while there is one, as in the Go operator).
    pub fn cluster_inputs(&self, material: RenderMaterial) -> ClusterInputs {
        let RenderMaterial { api_server_ca, kubelet_client_ca, bootstrap_token, pull_secret, registry_cas, trusted_ca } =
            material;
        ClusterInputs {
            api_server_url: self.api_server_url.clone(),
            api_server_ca,
            kubelet_client_ca,
            bootstrap_token,
            service_cidr: self.service_cidr,
            cluster_dns: self.cluster_dns,
            cluster_domain: CLUSTER_DOMAIN.to_owned(),
            platform: self.platform,
            proxy: self.proxy.clone().map(|proxy| Proxy { trusted_ca, ..proxy }),
            log_rotation: LogRotation {
                file_size: self.log_rotation.max_size_bytes.map(|bytes| bytes.to_string()),
                file_age: self.log_rotation.max_age.map(go_duration),
                flush_interval: self.log_rotation.flush_interval.map(go_duration),
            },
            image_mirrors: self.image_mirrors.clone(),
            pull_secret,
            registry_cas,
            cloud_config: self.kubelet_cloud.cloud_config.clone(),
        }
    }

    /// The host-independent node service settings for this cluster at `verbosity`.
    pub fn service_settings(&self, verbosity: Verbosity) -> ServiceSettings {
        ServiceSettings {
            api_server_url: self.api_server_url.clone(),
            platform: self.platform,
            verbosity,
            log_rotation: self.log_rotation,
            hybrid_overlay_vxlan_port: self.hybrid_overlay_vxlan_port(),
            cloud_provider: self.kubelet_cloud.provider.clone(),
            cloud_config: self.kubelet_cloud.cloud_config.as_ref().and_then(|_| WinPath::parse(CLOUD_CONFIG).ok()),
            proxy: self.node_proxy(),
        }
    }

    /// Why no host may be configured in this cluster, if none may (wmco-anchor.md §2): the pod network is not
    /// OVN-Kubernetes with hybrid overlay (hosts would wait for a subnet forever), or the payload's kubelet
    /// (`payload_kubelet`) is newer than the API server or more than [`MAX_KUBELET_MINOR_SKEW`] minors older.
    ///
    /// ```
    /// # use wmco_cluster_client::{ClusterFacts, PlatformName, PodNetworking, ProxySettings};
    /// # use wmco_operator::files::ClusterSettings;
    /// # use wmco_vocabulary::Platform;
    /// let facts = ClusterFacts {
    ///     service_cidr: "172.30.0.0/16".parse().unwrap(),
    ///     api_server_internal_url: "https://api-int.example:6443".into(),
    ///     platform: PlatformName::Known(Platform::None),
    ///     proxy: ProxySettings::default(),
    ///     kubernetes_version: semver::Version::new(1, 36, 3),
    ///     mirror_sets: vec![],
    ///     pod_networking: Some(PodNetworking {
    ///         network_type: Some("OpenShiftSDN".into()),
    ///         hybrid_overlay: false,
    ///         hybrid_overlay_vxlan_port: None,
    ///     }),
    ///     kubelet_cloud: Default::default(),
    /// };
    /// let settings = ClusterSettings::from_facts(&facts).unwrap();
    /// let reason = settings.refusal(&semver::Version::new(1, 36, 1)).unwrap();
    /// assert!(reason.contains("OpenShiftSDN"));
    /// ```
    pub fn refusal(&self, payload_kubelet: &Version) -> Option<String> {
        if let Some(networking) = &self.pod_networking {
            let network_type = networking.network_type.as_deref().unwrap_or("unset");
            if network_type != OVN_KUBERNETES {
                return Some(format!(
                    "the cluster's network type (Network cluster spec.networkType) is {network_type}: Windows nodes \
                     join only {OVN_KUBERNETES} with hybrid overlay"
                ));
            }
            if !networking.hybrid_overlay {
                return Some(
                    "OVN-Kubernetes has no hybrid overlay (operator Network cluster \
                     spec.defaultNetwork.ovnKubernetesConfig.hybridOverlayConfig.hybridClusterNetwork is empty): \
                     Windows nodes would never get a pod subnet"
                        .to_owned(),
                );
            }
        }
        let server = &self.kubernetes_version;
        let too_new = payload_kubelet.minor > server.minor;
        let too_old = server.minor > payload_kubelet.minor + MAX_KUBELET_MINOR_SKEW;
        (server.major != payload_kubelet.major || too_new || too_old).then(|| {
            format!(
                "the payload's kubelet {payload_kubelet} is outside the supported skew of the API server \
                 {server}: a kubelet may be at most {MAX_KUBELET_MINOR_SKEW} minor versions older than the API \
                 server and never newer"
            )
        })
    }

    /// hybrid-overlay's VXLAN port, when the cluster sets one other than the default 4789.
    pub fn hybrid_overlay_vxlan_port(&self) -> Option<u16> {
        self.pod_networking.as_ref().and_then(|networking| networking.hybrid_overlay_vxlan_port)
    }

    /// The proxy as the node's services get it (no proxy: every proxy variable removed).
    pub fn node_proxy(&self) -> NodeProxy {
        self.proxy.as_ref().map_or_else(NodeProxy::default, |proxy| NodeProxy {
            http_proxy: proxy.http_proxy.clone(),
            https_proxy: proxy.https_proxy.clone(),
            no_proxy: proxy.no_proxy.clone(),
        })
    }

    /// The names of the fields whose values differ in `other`, for a log line that must not show the values (a
    /// proxy URL may carry credentials).
    ///
    /// ```
    /// # use wmco_cluster_client::{ClusterFacts, PlatformName, ProxySettings};
    /// # use wmco_operator::files::ClusterSettings;
    /// # use wmco_vocabulary::Platform;
    /// # let facts = ClusterFacts {
    /// #     service_cidr: "172.30.0.0/16".parse().unwrap(),
    /// #     api_server_internal_url: "https://api-int.example:6443".into(),
    /// #     platform: PlatformName::Known(Platform::None),
    /// #     proxy: ProxySettings::default(),
    /// #     kubernetes_version: semver::Version::new(1, 36, 3),
    /// #     mirror_sets: vec![],
    /// #     pod_networking: None,
    /// #     kubelet_cloud: Default::default(),
    /// # };
    /// let before = ClusterSettings::from_facts(&facts).unwrap();
    /// let mut after = before.clone();
    /// after.api_server_url = "https://api-int.other:6443".into();
    /// assert_eq!(before.changed_fields(&after), ["api_server_url"]);
    /// ```
    pub fn changed_fields(&self, other: &ClusterSettings) -> Vec<&'static str> {
        [
            ("api_server_url", self.api_server_url != other.api_server_url),
            ("service_cidr", self.service_cidr != other.service_cidr),
            ("cluster_dns", self.cluster_dns != other.cluster_dns),
            ("platform", self.platform != other.platform),
            ("proxy", self.proxy != other.proxy),
            ("image_mirrors", self.image_mirrors != other.image_mirrors),
            ("hybrid_overlay_vxlan_port", self.hybrid_overlay_vxlan_port() != other.hybrid_overlay_vxlan_port()),
            ("pod_networking", self.pod_networking != other.pod_networking),
            ("kubernetes_version", self.kubernetes_version != other.kubernetes_version),
            ("kubelet_cloud", self.kubelet_cloud != other.kubelet_cloud),
            ("log_rotation", self.log_rotation != other.log_rotation),
        ]
        .into_iter()
        .filter_map(|(name, changed)| changed.then_some(name))
        .collect()
    }
}
