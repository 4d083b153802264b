//! The CA files: the bundle that verifies the API server (`bootstrap-ca.crt`), the bundle of clients the kubelet
//! accepts (`kubelet-ca.crt`), and the trusted bundle (`ca-bundle.crt`): each registry's additional CA under a
//! `# <registry>` comment, sorted by registry, then the proxy's trusted CA; and each certificate of the trusted
//! bundle alone in `C:\k\certs\<thumbprint>.crt` (what `Import-Certificate` takes), with the directory's index.

use super::destinations::{
    BOOTSTRAP_CA, CA_BUNDLE, KUBELET_CLIENT_CA, TRUSTED_CERTIFICATES_DIR, TRUSTED_CERTIFICATES_INDEX, destination,
};
use super::{ClusterInputs, PemBundle, RenderError, RenderedFile};

/// The three CA files of `cluster` and the trusted bundle's certificates one per file. The trusted bundle and the
/// certificates' index ([`TRUSTED_CERTIFICATES_INDEX`]: the thumbprints, one per line) are rendered even when empty,
/// so both files always exist.
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
    let certificates = bundle.parse::<PemBundle>().map(|bundle| bundle.certificates()).unwrap_or_default();
    let mut files = vec![
        RenderedFile::new(
            destination(BOOTSTRAP_CA, "API server CA")?,
            cluster.api_server_ca.as_str().as_bytes().to_vec(),
        ),
        RenderedFile::new(
            destination(KUBELET_CLIENT_CA, "kubelet client CA")?,
            cluster.kubelet_client_ca.as_str().as_bytes().to_vec(),
        ),
        RenderedFile::new(destination(CA_BUNDLE, "trusted CA bundle")?, bundle.into_bytes()),
    ];
    let directory = destination(TRUSTED_CERTIFICATES_DIR, "trusted certificates")?;
    let mut index = String::new();
    for certificate in certificates {
        let label = format!("trusted certificate {}", certificate.thumbprint);
        let path = directory
            .join(&format!("{}.crt", certificate.thumbprint))
            .map_err(|source| RenderError::Destination { file: label, source })?;
        index.push_str(&format!("{}\r\n", certificate.thumbprint));
        files.push(RenderedFile::new(path, certificate.pem.into_bytes()));
    }
    files.push(RenderedFile::new(
        destination(TRUSTED_CERTIFICATES_INDEX, "trusted certificates index")?,
        index.into_bytes(),
    ));
    Ok(files)
}
