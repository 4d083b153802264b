//! [`NodeFiles`]: the payload-backed [`HostFilesSource`]. It renders a host's files from the verified payload, the
//! latest [`ClusterMaterial`](super::ClusterMaterial) snapshot (material and [`ClusterSettings`]) and, in the node
//! stage, the Node's hybrid-overlay subnet. It never does IO: the snapshot is kept fresh by the
//! [`MaterialRefresher`](super::MaterialRefresher). Without windows_exporter's TLS Secret only windows_exporter waits
//! ([`WithheldService`]); networking and the kubelet never depend on metrics. On Azure the node stage carries
//! cloud-node-manager's kubeconfig and token; without a usable token only cloud-node-manager waits.

use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use wmco_cluster_client::names::HYBRID_OVERLAY_SUBNET_ANNOTATION;
use wmco_node_config::{FileStage, HostFilesSource, HostIdentity, SourceError, StageFiles, WithheldService};
use wmco_payload_manifest::render::destinations::BOOTSTRAP_KUBECONFIG;
use wmco_payload_manifest::render::{
    HostInputs, IpCidr, OverlayNetwork, OverlayNetworkError, RenderError, SecretToken, cloud_node_manager_files,
    exporter_tls_files, render_host_files,
};
use wmco_payload_manifest::{HostFileSet, HostFileSetError, Manifest, Payload};
use wmco_windows_services::{CLOUD_NODE_MANAGER_SERVICE, WINDOWS_EXPORTER_SERVICE};

use super::material::MaterialError;
use super::refresher::MaterialSnapshot;
use super::{ClusterSettings, RenderMaterial};

/// Why a host's files cannot be built now. Every variant is worth retrying once the named object is fixed.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// A piece of cluster material is not usable.
    #[error("{stage} files: {source}")]
    Material {
        /// `bootstrap` or `node`.
        stage: &'static str,
        /// Which piece and why.
        #[source]
        source: MaterialError,
    },
    /// The Node's hybrid-overlay subnet annotation is missing or unusable.
    #[error("Node {node}: annotation {HYBRID_OVERLAY_SUBNET_ANNOTATION} is {reason}")]
    NodeSubnet {
        /// The Node.
        node: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The subnet cannot hold the gateway, the source VIP and pods.
    #[error("Node {node}: {source}")]
    Overlay {
        /// The Node.
        node: String,
        /// Why.
        #[source]
        source: OverlayNetworkError,
    },
    /// A file could not be rendered.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// The payload and rendered files do not form a set.
    #[error(transparent)]
    FileSet(#[from] HostFileSetError),
}

/// The files each host must hold: the payload's files for the cluster's platform plus the rendered ones.
pub struct NodeFiles {
    manifest: Manifest,
    payload: Payload,
    material: MaterialSnapshot,
}

impl NodeFiles {
    /// A source over the verified `payload` of `manifest`, reading the cluster's material and settings from
    /// `material`.
    pub fn new(manifest: Manifest, payload: Payload, material: MaterialSnapshot) -> Self {
        Self { manifest, payload, material }
    }

    /// The file set of `identity`'s host at `stage`.
    ///
    /// - Bootstrap: the payload, kubelet and containerd configuration, CA files, registry files and the bootstrap
    ///   kubeconfig with the current node-bootstrapper token.
    /// - Node: the same without the bootstrap kubeconfig (so a token refresh or an unusable token never touches a
    ///   registered host), plus the CNI and kube-proxy configuration for the Node's subnet and windows_exporter's
    ///   TLS files, and on Azure cloud-node-manager's kubeconfig and token. Without a usable TLS Secret only
    ///   windows_exporter waits, without a usable cloud-node-manager token only cloud-node-manager: each is withheld
    ///   (with the reason naming the object) and everything else, networking included, goes ahead.
    ///
    /// # Errors
    /// [`FilesError`] naming the missing or unusable object.
    pub fn file_set(&self, identity: &HostIdentity, stage: FileStage<'_>) -> Result<StageFiles, FilesError> {
        let material = self.material.current();
        let stage_name = match stage {
            FileStage::Bootstrap => "bootstrap",
            FileStage::Node(_) => "node",
        };
        let missing = |source: &MaterialError| FilesError::Material { stage: stage_name, source: source.clone() };
        let api_server_ca = material.api_server_ca.as_ref().map_err(missing)?.clone();
        let kubelet_client_ca = material.kubelet_client_ca.as_ref().map_err(missing)?.clone();
        let (bootstrap_token, overlay) = match stage {
            FileStage::Bootstrap => (material.bootstrap_token.as_ref().map_err(missing)?.token.clone(), None),
            // The node stage drops the bootstrap kubeconfig below: its token is never written.
            FileStage::Node(node) => (SecretToken::new(String::new()), Some(overlay_network(node, identity)?)),
        };
        let node_stage = overlay.is_some();
        let settings: &ClusterSettings = &material.settings;
        // An unusable pull secret, registry CA or trusted CA bundle is logged by the refresher; the files go
        // without it.
        let cluster = settings.cluster_inputs(RenderMaterial {
            api_server_ca,
            kubelet_client_ca,
            bootstrap_token,
            pull_secret: material.pull_secret.as_ref().ok().cloned().flatten(),
            registry_cas: material.registry_cas.clone().unwrap_or_default(),
            trusted_ca: material.trusted_ca.as_ref().ok().cloned().flatten(),
        });
        let host = HostInputs { node_name: identity.expected_node_name.clone(), node_ip: identity.node_ip, overlay };
        let mut rendered = render_host_files(&cluster, &host)?;
        let mut withheld = Vec::new();
        if node_stage {
            rendered.retain(|file| file.destination().as_str() != BOOTSTRAP_KUBECONFIG);
            match &material.exporter_tls {
                Ok(tls) => rendered.extend(exporter_tls_files(tls)?),
                Err(reason) => withheld.push(WithheldService::new(WINDOWS_EXPORTER_SERVICE, reason.to_string())),
            }
            match &material.cloud_node_manager_token {
                Ok(Some(token)) => rendered.extend(cloud_node_manager_files(&settings.api_server_url, &token.token)?),
                Ok(None) => {}
                Err(reason) => withheld.push(WithheldService::new(CLOUD_NODE_MANAGER_SERVICE, reason.to_string())),
            }
        }
        let files = HostFileSet::new(&self.manifest, &self.payload, settings.platform, rendered)?;
        Ok(StageFiles { files, withheld, settings_generation: Some(material.settings_generation()) })
    }
}

impl HostFilesSource for NodeFiles {
    fn files(&self, identity: &HostIdentity, stage: FileStage<'_>) -> Result<StageFiles, SourceError> {
        Ok(self.file_set(identity, stage)?)
    }
}

/// The overlay of `node`: its hybrid-overlay subnet, the host's node IP as provider address, the source VIP.
fn overlay_network(node: &Node, identity: &HostIdentity) -> Result<OverlayNetwork, FilesError> {
    let name = node.name_any();
    let value = node
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(HYBRID_OVERLAY_SUBNET_ANNOTATION))
        .ok_or_else(|| FilesError::NodeSubnet { node: name.clone(), reason: "missing".to_owned() })?;
    let subnet = IpCidr::parse_ipv4(value)
        .map_err(|error| FilesError::NodeSubnet { node: name.clone(), reason: format!("unusable: {error}") })?;
    OverlayNetwork::for_node_subnet(subnet, identity.node_ip)
        .map_err(|source| FilesError::Overlay { node: name, source })
}
