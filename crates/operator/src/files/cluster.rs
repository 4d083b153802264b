//! The cluster-wide, non-secret inputs of the rendered files and node services, derived once from
//! [`ClusterFacts`]: API server URL, service network and cluster DNS (the network's 10th address, as the Go
//! operator), platform, proxy and image mirrors.

use std::net::Ipv4Addr;

use wmco_cluster_client::ClusterFacts;
use wmco_node_config::ServiceSettings;
use wmco_payload_manifest::render::{
    ClusterInputs, ImageMirrorRule, LogRotation, MirrorSourcePolicy, PemBundle, Proxy, SecretToken,
};
use wmco_vocabulary::{IpCidr, Platform};
use wmco_windows_services::{LogRotation as ServiceLogRotation, Verbosity};

/// The index of the cluster DNS Service's address in the service network.
pub const CLUSTER_DNS_INDEX: u32 = 10;
/// The cluster's DNS domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// The URL nodes reach the API server at.
    pub api_server_url: String,
    /// The service network.
    pub service_cidr: IpCidr,
    /// The cluster DNS Service address.
    pub cluster_dns: Ipv4Addr,
    /// The platform whose behaviour applies (a platform this product does not know counts as `None`).
    pub platform: Platform,
    /// The egress proxy.
    pub proxy: Option<Proxy>,
    /// Registry mirror rules.
    pub image_mirrors: Vec<ImageMirrorRule>,
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
        })
    }

    /// The render inputs with the given secret material.
    pub fn cluster_inputs(
        &self,
        api_server_ca: PemBundle,
        kubelet_client_ca: PemBundle,
        bootstrap_token: SecretToken,
    ) -> ClusterInputs {
        ClusterInputs {
            api_server_url: self.api_server_url.clone(),
            api_server_ca,
            kubelet_client_ca,
            bootstrap_token,
            service_cidr: self.service_cidr,
            cluster_dns: self.cluster_dns,
            cluster_domain: CLUSTER_DOMAIN.to_owned(),
            platform: self.platform,
            proxy: self.proxy.clone(),
            log_rotation: LogRotation::default(),
            image_mirrors: self.image_mirrors.clone(),
            pull_secret: None,
            registry_cas: Vec::new(),
        }
    }

    /// The host-independent node service settings for this cluster at `verbosity`.
    pub fn service_settings(&self, verbosity: Verbosity) -> ServiceSettings {
        ServiceSettings {
            api_server_url: self.api_server_url.clone(),
            platform: self.platform,
            verbosity,
            log_rotation: ServiceLogRotation::default(),
            hybrid_overlay_vxlan_port: None,
            cloud_provider: None,
            cloud_config: None,
        }
    }
}
