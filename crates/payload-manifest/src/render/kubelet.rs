//! The KubeletConfiguration (`kubelet.config.k8s.io/v1beta1`, JSON) with the settings of the Go operator
//! (anchor §2.6), and the image credential provider configuration the kubelet uses on AWS.

use serde_json::json;

use super::destinations::{CREDENTIAL_PROVIDER_CONFIG, KUBELET_CLIENT_CA, KUBELET_CONFIG, destination};
use super::{ClusterInputs, RenderError, RenderedFile, pretty_json};

/// The kubelet's log flush interval when log rotation sets none.
const DEFAULT_FLUSH_FREQUENCY: &str = "5s";

/// containerd's CRI endpoint on Windows (a named pipe).
const CONTAINERD_PIPE_ENDPOINT: &str = "npipe://./pipe/containerd-containerd";

/// The KubeletConfiguration at `C:\k\kubelet.conf`: certificate rotation and serving-certificate bootstrap on,
/// client CA `C:\k\kubelet-ca.crt`, anonymous access off, cluster DNS and domain, no cgroups per QoS, 250 pods, API
/// QPS 50 / burst 100, parallel image pulls, node log query, 50Mi container logs, no node-allocatable
/// enforcement, hard eviction at 10% nodefs / 15% imagefs, 500m CPU / 2Gi memory / 1Gi storage reserved, containerd's
/// named pipe, and the `os=Windows:NoSchedule` taint at registration.
pub fn kubelet_config(cluster: &ClusterInputs) -> Result<RenderedFile, RenderError> {
    let flush_frequency = cluster.log_rotation.flush_interval.as_deref().unwrap_or(DEFAULT_FLUSH_FREQUENCY);
    let document = json!({
        "kind": "KubeletConfiguration",
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "rotateCertificates": true,
        "serverTLSBootstrap": true,
        "authentication": {
            "x509": { "clientCAFile": KUBELET_CLIENT_CA },
            "webhook": { "enabled": true },
            "anonymous": { "enabled": false }
        },
        "authorization": { "mode": "Webhook" },
        "clusterDomain": cluster.cluster_domain,
        "clusterDNS": [cluster.cluster_dns.to_string()],
        "cgroupsPerQOS": false,
        "runtimeRequestTimeout": "10m0s",
        "maxPods": 250,
        "kubeAPIQPS": 50,
        "kubeAPIBurst": 100,
        "serializeImagePulls": false,
        "featureGates": { "NodeLogQuery": true, "RotateKubeletServerCertificate": true },
        "logging": { "flushFrequency": flush_frequency },
        "enableSystemLogHandler": true,
        "enableSystemLogQuery": true,
        "containerLogMaxSize": "50Mi",
        "enforceNodeAllocatable": ["none"],
        "evictionHard": { "nodefs.available": "10%", "imagefs.available": "15%" },
        "systemReserved": { "cpu": "500m", "ephemeral-storage": "1Gi", "memory": "2Gi" },
        "containerRuntimeEndpoint": CONTAINERD_PIPE_ENDPOINT,
        "registerNode": true,
        "registerWithTaints": [{ "key": "os", "value": "Windows", "effect": "NoSchedule" }],
        "resolvConf": ""
    });
    Ok(RenderedFile::new(destination(KUBELET_CONFIG, "kubelet config")?, pretty_json("kubelet config", &document)?))
}

/// The kubelet's `CredentialProviderConfig` (`kubelet.config.k8s.io/v1`, JSON) on AWS: images from ECR registries
/// get credentials from `ecr-credential-provider.exe` (looked up in `C:\k`), cached for 12 hours.
pub fn credential_provider_config() -> Result<RenderedFile, RenderError> {
    let document = json!({
        "apiVersion": "kubelet.config.k8s.io/v1",
        "kind": "CredentialProviderConfig",
        "providers": [{
            "name": "ecr-credential-provider.exe",
            "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
            "defaultCacheDuration": "12h",
            "matchImages": [
                "*.dkr.ecr.*.amazonaws.com",
                "*.dkr.ecr.*.amazonaws.com.cn",
                "*.dkr.ecr-fips.*.amazonaws.com",
                "*.dkr.ecr.*.c2s.ic.gov",
                "*.dkr.ecr.*.sc2s.sgov.gov"
            ]
        }]
    });
    Ok(RenderedFile::new(
        destination(CREDENTIAL_PROVIDER_CONFIG, "credential provider config")?,
        pretty_json("credential provider config", &document)?,
    ))
}
