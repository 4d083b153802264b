//! Cluster facts the node configuration needs — service CIDR, the API server URL nodes use, platform, proxy, Kubernetes
//! version, image mirror sets, the pod network's type and hybrid overlay — gathered into one typed [`ClusterFacts`],
//! from OpenShift's config objects ([`OpenShiftFacts`]) or, on plain Kubernetes, from the operator's own configuration
//! ([`PlainKubernetesFacts`]).

use std::fmt;

use async_trait::async_trait;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use serde::{Deserialize, Serialize};
use wmco_vocabulary::{IpCidr, MirrorKind, Platform, PlatformName};

use crate::error::{Error, Result, Verb};
use crate::ignition::{KubeletCloud, RENDERED_WORKER_PREFIX, kubelet_cloud};
use crate::types::{
    ImageDigestMirrorSet, ImageTagMirrorSet, Infrastructure, MachineConfig, Network, OperatorNetwork, Proxy,
};

/// How an OpenShift cluster networks pods, as far as Windows nodes care: they join only OVN-Kubernetes with hybrid
/// overlay (wmco-anchor.md §2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PodNetworking {
    /// `spec.networkType` of config Network `cluster` (`OVNKubernetes`), if set.
    pub network_type: Option<String>,
    /// Whether operator Network `cluster` gives OVN-Kubernetes a hybrid cluster network.
    pub hybrid_overlay: bool,
    /// Its `hybridOverlayVXLANPort`, when set.
    pub hybrid_overlay_vxlan_port: Option<u16>,
}

/// The cluster-wide proxy, as given to services on the hosts. `Debug` hides the user info of the URLs (a proxy URL
/// may carry a password).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxySettings {
    /// Proxy for plain HTTP.
    #[serde(default)]
    pub http_proxy: Option<String>,
    /// Proxy for HTTPS.
    #[serde(default)]
    pub https_proxy: Option<String>,
    /// Comma-separated destinations reached without the proxy.
    #[serde(default)]
    pub no_proxy: Option<String>,
}

impl fmt::Debug for ProxySettings {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redacted = |url: &Option<String>| url.as_deref().map(wmco_redact::redact);
        formatter
            .debug_struct("ProxySettings")
            .field("http_proxy", &redacted(&self.http_proxy))
            .field("https_proxy", &redacted(&self.https_proxy))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

/// The mirrors of one source repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MirrorSet {
    /// The source repository.
    pub source: String,
    /// The mirrors, in order of preference.
    pub mirrors: Vec<String>,
    /// Digest or tag pulls.
    pub kind: MirrorKind,
    /// Whether the source must never be contacted.
    #[serde(default)]
    pub never_contact_source: bool,
}

/// Everything about the cluster the node configuration needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterFacts {
    /// The service network, e.g. `172.30.0.0/16`.
    pub service_cidr: IpCidr,
    /// The URL nodes reach the API server at.
    pub api_server_internal_url: String,
    /// The platform, as the cluster reports it; it decides SSH user, hostname and cloud-provider details.
    pub platform: PlatformName,
    /// The cluster-wide proxy.
    pub proxy: ProxySettings,
    /// The API server's version.
    pub kubernetes_version: semver::Version,
    /// Image mirrors, digest sets first, each in source order.
    pub mirror_sets: Vec<MirrorSet>,
    /// The pod network (OpenShift; `None` on plain Kubernetes, where the operator cannot tell).
    pub pod_networking: Option<PodNetworking>,
    /// The Linux workers' kubelet cloud settings (OpenShift: the newest `rendered-worker-*` MachineConfig; none on
    /// plain Kubernetes).
    pub kubelet_cloud: KubeletCloud,
}

/// Where cluster facts come from.
#[async_trait]
pub trait ClusterFactsSource: Send + Sync {
    /// Reads the facts now.
    async fn gather(&self) -> Result<ClusterFacts>;
}

/// The operator's configuration of facts on plain Kubernetes, where no OpenShift config objects exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlainKubernetesConfig {
    /// The service network.
    pub service_cidr: String,
    /// The URL nodes reach the API server at.
    pub api_server_internal_url: String,
    /// The proxy, if any.
    #[serde(default)]
    pub proxy: ProxySettings,
    /// Image mirrors, if any.
    #[serde(default)]
    pub mirror_sets: Vec<MirrorSet>,
}

/// `cidr` as a network: `<ip>/<prefix>` with a prefix that fits the address family.
pub(crate) fn parse_cidr(kind: &'static str, name: &str, field: &'static str, cidr: &str) -> Result<IpCidr> {
    cidr.parse().map_err(|_| Error::InvalidField {
        kind,
        name: name.to_owned(),
        field,
        value: cidr.to_owned(),
        expected: "a CIDR such as 172.30.0.0/16",
    })
}

/// Parses a `gitVersion` such as `v1.36.2+abc` into a semantic version.
pub(crate) fn parse_git_version(git_version: &str) -> Result<semver::Version> {
    semver::Version::parse(git_version.trim_start_matches('v')).map_err(|_| Error::InvalidField {
        kind: "APIServer",
        name: "version".into(),
        field: "gitVersion",
        value: git_version.to_owned(),
        expected: "a version such as v1.36.0",
    })
}

pub(crate) async fn kubernetes_version(client: &Client) -> Result<semver::Version> {
    let info = client
        .apiserver_version()
        .await
        .map_err(|source| Error::api(Verb::Discover, "APIServer", "version", source))?;
    parse_git_version(&info.git_version)
}

/// Whether the API server serves the `config.openshift.io` group, i.e. whether facts come from [`OpenShiftFacts`]
/// rather than [`PlainKubernetesFacts`].
pub async fn serves_openshift_config(client: &Client) -> Result<bool> {
    let groups = client
        .list_api_groups()
        .await
        .map_err(|source| Error::api(Verb::Discover, "APIGroup", "config.openshift.io", source))?;
    Ok(groups.groups.iter().any(|group| group.name == "config.openshift.io"))
}

/// Facts from OpenShift's config objects (`Network`, `Infrastructure`, `Proxy`, mirror sets, all named `cluster`).
#[derive(Clone)]
pub struct OpenShiftFacts {
    client: Client,
}

impl OpenShiftFacts {
    /// Reads through `client`.
    pub fn new(client: Client) -> Self {
        OpenShiftFacts { client }
    }
}

/// The facts in OpenShift's config objects.
pub(crate) fn facts_from_openshift(
    network: &Network,
    infrastructure: &Infrastructure,
    proxy: &Proxy,
    digest_sets: &[ImageDigestMirrorSet],
    tag_sets: &[ImageTagMirrorSet],
    operator_network: Option<&OperatorNetwork>,
    kubernetes_version: semver::Version,
) -> Result<ClusterFacts> {
    let service_cidr = network.spec.service_network.first().ok_or(Error::MissingField {
        verb: Verb::Get,
        kind: "Network",
        name: "cluster".into(),
        field: "spec.serviceNetwork",
    })?;
    let service_cidr = parse_cidr("Network", "cluster", "spec.serviceNetwork[0]", service_cidr)?;
    let status = infrastructure.status.as_ref();
    let api_server_internal_url =
        status.and_then(|status| status.api_server_internal_uri.clone()).ok_or(Error::MissingField {
            verb: Verb::Get,
            kind: "Infrastructure",
            name: "cluster".into(),
            field: "status.apiServerInternalURI",
        })?;
    let platform = status
        .and_then(|status| status.platform_status.as_ref())
        .and_then(|platform| platform.type_.as_deref())
        .map_or(PlatformName::Known(Platform::None), PlatformName::from_openshift_name);
    let proxy = proxy
        .status
        .as_ref()
        .map(|status| ProxySettings {
            http_proxy: status.http_proxy.clone().filter(|value| !value.is_empty()),
            https_proxy: status.https_proxy.clone().filter(|value| !value.is_empty()),
            no_proxy: status.no_proxy.clone().filter(|value| !value.is_empty()),
        })
        .unwrap_or_default();
    let never = |policy: &Option<String>| policy.as_deref() == Some("NeverContactSource");
    let digest_mirrors = digest_sets.iter().flat_map(|set| &set.spec.image_digest_mirrors).map(|entry| MirrorSet {
        source: entry.source.clone(),
        mirrors: entry.mirrors.clone(),
        kind: MirrorKind::Digest,
        never_contact_source: never(&entry.mirror_source_policy),
    });
    let tag_mirrors = tag_sets.iter().flat_map(|set| &set.spec.image_tag_mirrors).map(|entry| MirrorSet {
        source: entry.source.clone(),
        mirrors: entry.mirrors.clone(),
        kind: MirrorKind::Tag,
        never_contact_source: never(&entry.mirror_source_policy),
    });
    Ok(ClusterFacts {
        service_cidr,
        api_server_internal_url,
        platform,
        proxy,
        kubernetes_version,
        mirror_sets: digest_mirrors.chain(tag_mirrors).collect(),
        pod_networking: Some(pod_networking(network, operator_network)?),
        kubelet_cloud: KubeletCloud::default(),
    })
}

/// The kubelet cloud settings of the newest `rendered-worker-*` MachineConfig (by creation time, then name); none
/// when there is none. Only metadata is listed: rendered configs are large, and only the newest is read whole.
async fn newest_rendered_worker_cloud(client: &Client) -> Result<KubeletCloud> {
    let configs = Api::<MachineConfig>::all(client.clone());
    let listed = configs
        .list_metadata(&ListParams::default())
        .await
        .map_err(|source| Error::api(Verb::List, "MachineConfig", "all", source))?;
    let newest = listed
        .items
        .iter()
        .filter(|config| config.name_any().starts_with(RENDERED_WORKER_PREFIX))
        .max_by_key(|config| (config.metadata.creation_timestamp.clone().map(|time| time.0), config.name_any()))
        .map(ResourceExt::name_any);
    let Some(name) = newest else { return Ok(KubeletCloud::default()) };
    let config = configs.get(&name).await.map_err(|source| Error::api(Verb::Get, "MachineConfig", &name, source))?;
    kubelet_cloud(config.spec.config.as_ref().unwrap_or(&serde_json::Value::Null)).map_err(|error| {
        Error::InvalidField {
            kind: "MachineConfig",
            name,
            field: "spec.config",
            value: error.to_string(),
            expected: "MCO's rendered ignition config: the kubelet unit's --cloud-config file in storage.files",
        }
    })
}

/// The pod network type and hybrid overlay settings of the config and operator Networks.
fn pod_networking(network: &Network, operator_network: Option<&OperatorNetwork>) -> Result<PodNetworking> {
    let hybrid = operator_network
        .and_then(|network| network.spec.default_network.as_ref())
        .and_then(|default| default.ovn_kubernetes_config.as_ref())
        .and_then(|ovn| ovn.hybrid_overlay_config.as_ref());
    let vxlan_port = hybrid
        .and_then(|hybrid| hybrid.hybrid_overlay_vxlan_port)
        .map(|port| {
            u16::try_from(port).ok().filter(|port| *port > 0).ok_or_else(|| Error::InvalidField {
                kind: "operator Network",
                name: "cluster".into(),
                field: "spec.defaultNetwork.ovnKubernetesConfig.hybridOverlayConfig.hybridOverlayVXLANPort",
                value: port.to_string(),
                expected: "a UDP port from 1 to 65535",
            })
        })
        .transpose()?;
    Ok(PodNetworking {
        network_type: network.spec.network_type.clone().filter(|value| !value.is_empty()),
        hybrid_overlay: hybrid.is_some_and(|hybrid| !hybrid.hybrid_cluster_network.is_empty()),
        hybrid_overlay_vxlan_port: vxlan_port,
    })
}

async fn get_cluster_object<K>(client: &Client, kind: &'static str) -> Result<K>
where
    K: kube::Resource<Scope = kube::core::ClusterResourceScope> + Clone + fmt::Debug + serde::de::DeserializeOwned,
    K::DynamicType: Default,
{
    Api::<K>::all(client.clone()).get("cluster").await.map_err(|source| Error::api(Verb::Get, kind, "cluster", source))
}

async fn list_cluster_objects<K>(client: &Client, kind: &'static str) -> Result<Vec<K>>
where
    K: kube::Resource<Scope = kube::core::ClusterResourceScope> + Clone + fmt::Debug + serde::de::DeserializeOwned,
    K::DynamicType: Default,
{
    let mut items = Api::<K>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|source| Error::api(Verb::List, kind, "all", source))?
        .items;
    items.sort_by(|a, b| a.meta().name.cmp(&b.meta().name));
    Ok(items)
}

#[async_trait]
impl ClusterFactsSource for OpenShiftFacts {
    async fn gather(&self) -> Result<ClusterFacts> {
        let network: Network = get_cluster_object(&self.client, "Network").await?;
        let infrastructure: Infrastructure = get_cluster_object(&self.client, "Infrastructure").await?;
        let proxy: Proxy = get_cluster_object(&self.client, "Proxy").await?;
        let digest_sets: Vec<ImageDigestMirrorSet> = list_cluster_objects(&self.client, "ImageDigestMirrorSet").await?;
        let tag_sets: Vec<ImageTagMirrorSet> = list_cluster_objects(&self.client, "ImageTagMirrorSet").await?;
        let operator_network = Api::<OperatorNetwork>::all(self.client.clone())
            .get_opt("cluster")
            .await
            .map_err(|source| Error::api(Verb::Get, "operator Network", "cluster", source))?;
        let version = kubernetes_version(&self.client).await?;
        let kubelet_cloud = newest_rendered_worker_cloud(&self.client).await?;
        let facts = facts_from_openshift(
            &network,
            &infrastructure,
            &proxy,
            &digest_sets,
            &tag_sets,
            operator_network.as_ref(),
            version,
        )?;
        Ok(ClusterFacts { kubelet_cloud, ..facts })
    }
}

/// Facts on plain Kubernetes: the operator's configuration, plus the API server's version.
#[derive(Clone)]
pub struct PlainKubernetesFacts {
    client: Client,
    config: PlainKubernetesConfig,
}

impl PlainKubernetesFacts {
    /// Facts from `config`, with the version read through `client`.
    pub fn new(client: Client, config: PlainKubernetesConfig) -> Self {
        PlainKubernetesFacts { client, config }
    }
}

#[async_trait]
impl ClusterFactsSource for PlainKubernetesFacts {
    async fn gather(&self) -> Result<ClusterFacts> {
        Ok(ClusterFacts {
            service_cidr: parse_cidr("OperatorConfig", "plain-kubernetes", "serviceCidr", &self.config.service_cidr)?,
            api_server_internal_url: self.config.api_server_internal_url.clone(),
            platform: PlatformName::Known(Platform::None),
            proxy: self.config.proxy.clone(),
            kubernetes_version: kubernetes_version(&self.client).await?,
            mirror_sets: self.config.mirror_sets.clone(),
            pod_networking: None,
            kubelet_cloud: KubeletCloud::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Exchange, scenario};
    use serde_json::{Value, json};

    #[test]
    fn proxy_settings_debug_hides_the_user_info_of_the_urls() {
        let proxy = ProxySettings {
            http_proxy: Some("http://proxy.example:3128".into()),
            https_proxy: Some("http://wmco:pr0xy-s3cret@proxy.example:3129".into()),
            no_proxy: Some(".svc".into()),
        };
        assert_eq!(
            format!("{proxy:?}"),
            r#"ProxySettings { http_proxy: Some("http://proxy.example:3128"), https_proxy: Some("http://[REDACTED]@proxy.example:3129"), no_proxy: Some(".svc") }"#
        );
    }

    fn list(kind: &str, items: Vec<Value>) -> Value {
        json!({"apiVersion": "config.openshift.io/v1", "kind": format!("{kind}List"), "metadata": {}, "items": items})
    }

    fn version() -> Value {
        json!({"major": "1", "minor": "36", "gitVersion": "v1.36.2+abc", "gitCommit": "", "gitTreeState": "",
               "buildDate": "", "goVersion": "", "compiler": "", "platform": "linux/amd64"})
    }

    #[tokio::test]
    async fn openshift_facts_come_from_the_cluster_config_objects() {
        let exchanges = vec![
            Exchange::get("/apis/config.openshift.io/v1/networks/cluster").reply(200, json!({
                "apiVersion": "config.openshift.io/v1", "kind": "Network", "metadata": {"name": "cluster"},
                "spec": {"serviceNetwork": ["172.30.0.0/16"], "networkType": "OVNKubernetes", "clusterNetwork": []}})),
            Exchange::get("/apis/config.openshift.io/v1/infrastructures/cluster").reply(200, json!({
                "apiVersion": "config.openshift.io/v1", "kind": "Infrastructure", "metadata": {"name": "cluster"},
                "spec": {}, "status": {"apiServerInternalURI": "https://api-int.example:6443",
                                       "platformStatus": {"type": "VSphere"}}})),
            Exchange::get("/apis/config.openshift.io/v1/proxies/cluster").reply(200, json!({
                "apiVersion": "config.openshift.io/v1", "kind": "Proxy", "metadata": {"name": "cluster"},
                "spec": {}, "status": {"httpProxy": "http://proxy:3128", "httpsProxy": "", "noProxy": ".cluster.local"}})),
            Exchange::get("/apis/config.openshift.io/v1/imagedigestmirrorsets?").reply(200, list("ImageDigestMirrorSet", vec![json!({
                "apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", "metadata": {"name": "d"},
                "spec": {"imageDigestMirrors": [{"source": "quay.io/org", "mirrors": ["mirror.example/org"],
                                                 "mirrorSourcePolicy": "NeverContactSource"}]}})])),
            Exchange::get("/apis/config.openshift.io/v1/imagetagmirrorsets?").reply(200, list("ImageTagMirrorSet", vec![json!({
                "apiVersion": "config.openshift.io/v1", "kind": "ImageTagMirrorSet", "metadata": {"name": "t"},
                "spec": {"imageTagMirrors": [{"source": "docker.io", "mirrors": ["tags.example"]}]}})])),
            Exchange::get("/apis/operator.openshift.io/v1/networks/cluster").reply(200, json!({
                "apiVersion": "operator.openshift.io/v1", "kind": "Network", "metadata": {"name": "cluster"},
                "spec": {"defaultNetwork": {"type": "OVNKubernetes", "ovnKubernetesConfig": {"hybridOverlayConfig": {
                    "hybridClusterNetwork": [{"cidr": "10.132.0.0/14", "hostPrefix": 23}],
                    "hybridOverlayVXLANPort": 9898}}}}})),
            Exchange::get("/version").reply(200, version()),
            Exchange::get_metadata("/apis/machineconfiguration.openshift.io/v1/machineconfigs?").reply(200, list("MachineConfig", vec![
                json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                       "metadata": {"name": "rendered-worker-old", "creationTimestamp": "2026-01-01T00:00:00Z"}}),
                json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                       "metadata": {"name": "rendered-worker-new", "creationTimestamp": "2026-02-01T00:00:00Z"}}),
                json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                       "metadata": {"name": "rendered-master-newest", "creationTimestamp": "2026-03-01T00:00:00Z"}}),
            ])),
            Exchange::get("/apis/machineconfiguration.openshift.io/v1/machineconfigs/rendered-worker-new").reply(200, json!({
                "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                "metadata": {"name": "rendered-worker-new"},
                "spec": {"config": {"ignition": {"version": "3.5.0"}, "systemd": {"units": [{"name": "kubelet.service",
                    "contents": "[Service]\nExecStart=/usr/bin/kubelet \\\n  --cloud-provider=external \\\n  --v=2\n"}]}}}})),
        ];
        let facts =
            scenario(exchanges, |client| async move { OpenShiftFacts::new(client).gather().await.unwrap() }).await;
        assert_eq!(
            facts,
            ClusterFacts {
                service_cidr: "172.30.0.0/16".parse().unwrap(),
                api_server_internal_url: "https://api-int.example:6443".into(),
                platform: PlatformName::Known(Platform::VSphere),
                proxy: ProxySettings {
                    http_proxy: Some("http://proxy:3128".into()),
                    https_proxy: None,
                    no_proxy: Some(".cluster.local".into()),
                },
                kubernetes_version: semver::Version::parse("1.36.2+abc").unwrap(),
                mirror_sets: vec![
                    MirrorSet {
                        source: "quay.io/org".into(),
                        mirrors: vec!["mirror.example/org".into()],
                        kind: MirrorKind::Digest,
                        never_contact_source: true,
                    },
                    MirrorSet {
                        source: "docker.io".into(),
                        mirrors: vec!["tags.example".into()],
                        kind: MirrorKind::Tag,
                        never_contact_source: false,
                    },
                ],
                pod_networking: Some(PodNetworking {
                    network_type: Some("OVNKubernetes".into()),
                    hybrid_overlay: true,
                    hybrid_overlay_vxlan_port: Some(9898),
                }),
                kubelet_cloud: KubeletCloud { provider: Some("external".into()), cloud_config: None },
            }
        );
    }

    #[tokio::test]
    async fn plain_kubernetes_facts_come_from_the_operator_config() {
        let config: PlainKubernetesConfig = serde_json::from_value(json!({
            "serviceCidr": "10.96.0.0/12", "apiServerInternalUrl": "https://10.0.0.1:6443"
        }))
        .unwrap();
        let exchanges = vec![Exchange::get("/version").reply(200, version())];
        let facts =
            scenario(
                exchanges,
                |client| async move { PlainKubernetesFacts::new(client, config).gather().await.unwrap() },
            )
            .await;
        assert_eq!(facts.service_cidr.to_string(), "10.96.0.0/12");
        assert_eq!(facts.api_server_internal_url, "https://10.0.0.1:6443");
        assert_eq!(facts.platform, PlatformName::Known(Platform::None));
        assert_eq!(facts.proxy, ProxySettings::default());
        assert_eq!(facts.kubernetes_version, semver::Version::parse("1.36.2+abc").unwrap());
        assert!(facts.mirror_sets.is_empty());
    }

    #[tokio::test]
    async fn openshift_is_recognised_by_its_config_group() {
        let groups = |names: &[&str]| {
            let groups: Vec<Value> = names
                .iter()
                .map(
                    |name| json!({"name": name, "versions": [{"groupVersion": format!("{name}/v1"), "version": "v1"}]}),
                )
                .collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        };
        let exchanges = vec![
            Exchange::get("/apis").reply(200, groups(&["apps", "config.openshift.io"])),
            Exchange::get("/apis").reply(200, groups(&["apps", "operator.openshift.io"])),
        ];
        let answers = scenario(exchanges, |client| async move {
            (serves_openshift_config(&client).await.unwrap(), serves_openshift_config(&client).await.unwrap())
        })
        .await;
        assert_eq!(answers, (true, false));
    }

    #[test]
    fn cidrs_are_validated() {
        assert!(parse_cidr("Network", "cluster", "f", "172.30.0.0/16").is_ok());
        assert!(parse_cidr("Network", "cluster", "f", "fd02::/112").is_ok());
        let error = parse_cidr("Network", "cluster", "spec.serviceNetwork[0]", "172.30.0.0/33").unwrap_err();
        assert_eq!(
            error.to_string(),
            "Network cluster: spec.serviceNetwork[0] is \"172.30.0.0/33\", expected a CIDR such as 172.30.0.0/16"
        );
        assert!(parse_cidr("Network", "cluster", "f", "172.30.0.0").is_err());
    }

    #[test]
    fn platform_names_round_trip() {
        for name in ["AWS", "Azure", "GCP", "VSphere", "Nutanix", "None", "OpenStack"] {
            assert_eq!(PlatformName::from_openshift_name(name).to_string(), name);
        }
    }
}
