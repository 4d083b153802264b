//! The KubeProxyConfiguration (`kubeproxy.config.k8s.io/v1alpha1`, JSON) of a Windows node on the hybrid overlay:
//! kernelspace (winkernel) mode with DSR on the overlay network, the node's pod subnet as cluster CIDR, and the
//! node's name and IP.

use serde_json::json;

use super::cni::OVERLAY_NETWORK_NAME;
use super::destinations::{KUBE_PROXY_CONFIG, KUBELET_KUBECONFIG, destination};
use super::{HostInputs, OverlayNetwork, RenderError, RenderedFile, pretty_json};

/// The KubeProxyConfiguration at `C:\k\kube-proxy.conf`. kube-proxy authenticates with the kubelet's kubeconfig;
/// `bindAddress` is the node IP, which kube-proxy also takes as the node's primary address.
pub fn kube_proxy_config(host: &HostInputs, overlay: &OverlayNetwork) -> Result<RenderedFile, RenderError> {
    let document = json!({
        "kind": "KubeProxyConfiguration",
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "featureGates": { "WinDSR": true, "WinOverlay": true },
        "clientConnection": { "kubeconfig": KUBELET_KUBECONFIG },
        "hostnameOverride": host.node_name,
        "bindAddress": host.node_ip.to_string(),
        "clusterCIDR": overlay.node_subnet.to_string(),
        "mode": "kernelspace",
        "winkernel": {
            "networkName": OVERLAY_NETWORK_NAME,
            "enableDSR": true,
            "sourceVip": overlay.source_vip.to_string()
        }
    });
    Ok(RenderedFile::new(
        destination(KUBE_PROXY_CONFIG, "kube-proxy config")?,
        pretty_json("kube-proxy config", &document)?,
    ))
}
