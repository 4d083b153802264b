//! The CNI network configuration of the hybrid-overlay network (`win-overlay` plugin, HNS v2 policies): host-local
//! IPAM on the node's subnet starting after the source VIP (see [`OverlayNetwork`]: the gateway and kube-proxy's
//! source VIP are never given to a pod), no outbound NAT towards the service network, service traffic routed
//! through the overlay, and the management IP as provider address.

use serde_json::json;

use super::destinations::{CNI_CONFIG, destination};
use super::{ClusterInputs, OverlayNetwork, RenderError, RenderedFile, pretty_json};

/// The HNS network hybrid-overlay-node creates for pods.
pub const OVERLAY_NETWORK_NAME: &str = "OVNKubernetesHybridOverlayNetwork";

/// The CNI configuration at `C:\k\cni\config\cni.conf` for a host whose overlay network is `overlay`.
pub fn cni_config(cluster: &ClusterInputs, overlay: &OverlayNetwork) -> Result<RenderedFile, RenderError> {
    let service_cidr = cluster.service_cidr.to_string();
    let document = json!({
        "cniVersion": "0.2.0",
        "name": OVERLAY_NETWORK_NAME,
        "type": "win-overlay",
        "apiVersion": 2,
        "capabilities": { "portMappings": true, "dns": true },
        "ipam": {
            "type": "host-local",
            "subnet": overlay.node_subnet.to_string(),
            "rangeStart": overlay.first_pod_address().to_string()
        },
        "policies": [
            {
                "name": "EndpointPolicy",
                "value": { "type": "OutBoundNAT", "settings": { "exceptions": [service_cidr] } }
            },
            {
                "name": "EndpointPolicy",
                "value": { "type": "SDNRoute", "settings": { "destinationPrefix": service_cidr, "needEncap": true } }
            },
            {
                "name": "EndpointPolicy",
                "value": { "type": "ProviderAddress", "settings": { "providerAddress": overlay.management_ip.to_string() } }
            }
        ]
    });
    Ok(RenderedFile::new(destination(CNI_CONFIG, "CNI config")?, pretty_json("CNI config", &document)?))
}
