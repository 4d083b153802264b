//! The CA files: the bundle that verifies the API server (`bootstrap-ca.crt`), the bundle of clients the kubelet
//! accepts (`kubelet-ca.crt`), and the trusted bundle (`ca-bundle.crt`): each registry's additional CA under a
//! `# <registry>` comment, sorted by registry, then the proxy's trusted CA.

use super::destinations::{BOOTSTRAP_CA, CA_BUNDLE, KUBELET_CLIENT_CA, destination};
use super::{ClusterInputs, RenderError, RenderedFile};

/// The three CA files of `cluster`. The trusted bundle is rendered even when empty, so the file always exists.
pub fn ca_files(cluster: &ClusterInputs) -> Result<Vec<RenderedFile>, RenderError> {
    let mut registries: Vec<_> = cluster.registry_cas.iter().collect();
    registries.sort_by(|left, right| left.registry.cmp(&right.registry));
    let mut bundle = String::new();
    for registry in registries {
        bundle.push_str(&format!("# {}\n{}", registry.registry, registry.bundle.as_str()));
    }
    if let Some(trusted) = cluster.proxy.as_ref().and_then(|proxy| proxy.trusted_ca.as_ref()) {
        bundle.push_str(&format!("# proxy trusted CA\n{}", trusted.as_str()));
    }
    Ok(vec![
        RenderedFile::new(
            destination(BOOTSTRAP_CA, "API server CA")?,
            cluster.api_server_ca.as_str().as_bytes().to_vec(),
        ),
        RenderedFile::new(
            destination(KUBELET_CLIENT_CA, "kubelet client CA")?,
            cluster.kubelet_client_ca.as_str().as_bytes().to_vec(),
        ),
        RenderedFile::new(destination(CA_BUNDLE, "trusted CA bundle")?, bundle.into_bytes()),
    ])
}
