//! The fixed Windows paths of the rendered files and of the files they refer to. Renderers and the services that
//! read these files (built elsewhere) share these constants, so a path is written once.

use wmco_windows_services::WinPath;

use super::RenderError;

/// The KubeletConfiguration file (`--config`).
pub const KUBELET_CONFIG: &str = r"C:\k\kubelet.conf";
/// The bootstrap kubeconfig (`--bootstrap-kubeconfig`); deleted once the kubelet holds its client certificate.
pub const BOOTSTRAP_KUBECONFIG: &str = r"C:\k\bootstrap-kubeconfig";
/// The kubeconfig the kubelet writes after bootstrapping (`--kubeconfig`); kube-proxy uses it too.
pub const KUBELET_KUBECONFIG: &str = r"C:\k\kubeconfig";
/// azure-cloud-node-manager's kubeconfig (Azure; `--kubeconfig`): the API server, [`BOOTSTRAP_CA`] and
/// [`CLOUD_NODE_MANAGER_TOKEN`] as its token file.
pub const CLOUD_NODE_MANAGER_KUBECONFIG: &str = wmco_windows_services::CLOUD_NODE_MANAGER_KUBECONFIG;
/// The bearer token of ServiceAccount `cloud-node-manager` (Azure), rotated by the operator.
pub const CLOUD_NODE_MANAGER_TOKEN: &str = r"C:\k\cloud-node-manager-token";
/// The CA bundle that verifies the API server.
pub const BOOTSTRAP_CA: &str = r"C:\k\bootstrap-ca.crt";
/// The CA bundle of clients the kubelet accepts.
pub const KUBELET_CLIENT_CA: &str = r"C:\k\kubelet-ca.crt";
/// The trusted CA bundle (registry CAs and the proxy's CA).
pub const CA_BUNDLE: &str = r"C:\k\ca-bundle.crt";
/// The directory of the trusted certificates, one per file named `<thumbprint>.crt`, each imported into the
/// machine's root store.
pub const TRUSTED_CERTIFICATES_DIR: &str = r"C:\k\certs";
/// The index of [`TRUSTED_CERTIFICATES_DIR`]: the thumbprints of its certificates, one per line. The operator owns
/// the directory: when the index on a host differs, the directory is emptied before the files are written.
pub const TRUSTED_CERTIFICATES_INDEX: &str = r"C:\k\certs\wmco-certs.txt";
/// The record of the root certificates the operator imported (thumbprints, one per line), written on the host by
/// the import itself, so only those are ever removed.
pub const IMPORTED_ROOTS_RECORD: &str = r"C:\k\wmco\imported-root-certificates.txt";
/// The containerd configuration (`--config`).
pub const CONTAINERD_CONFIG: &str = r"C:\k\containerd\containerd_conf.toml";
/// The directory of containerd's per-registry `hosts.toml` files.
pub const REGISTRIES_DIR: &str = r"C:\k\containerd\registries";
/// The index of [`REGISTRIES_DIR`]: the directory names of the rendered `hosts.toml` files, one per line. The
/// operator owns the directory: when the index on a host differs, the directory is emptied before the files are
/// written, so a registry whose mirror rules are gone loses its `hosts.toml`.
pub const REGISTRIES_INDEX: &str = r"C:\k\containerd\registries\wmco-registries.txt";
/// The directory holding the CNI plugin binaries.
pub const CNI_BIN_DIR: &str = r"C:\k\cni";
/// The directory holding the CNI network configuration.
pub const CNI_CONFIG_DIR: &str = r"C:\k\cni\config";
/// The CNI network configuration.
pub const CNI_CONFIG: &str = r"C:\k\cni\config\cni.conf";
/// The KubeProxyConfiguration file (`--config`).
pub const KUBE_PROXY_CONFIG: &str = r"C:\k\kube-proxy.conf";
/// The cloud provider configuration (`--cloud-config`), copied from the Linux workers' rendered config.
pub const CLOUD_CONFIG: &str = r"C:\k\cloud.conf";
/// The kubelet's image credential provider configuration (AWS).
pub const CREDENTIAL_PROVIDER_CONFIG: &str = r"C:\k\credential-provider-config.yaml";
/// The directory the kubelet looks up credential provider binaries in (AWS).
pub const CREDENTIAL_PROVIDER_BIN_DIR: &str = r"C:\k";
/// windows_exporter's serving certificate chain (from the operator's TLS Secret, `tls.crt`).
pub const EXPORTER_TLS_CERT: &str = r"C:\k\tls\certs\tls.crt";
/// windows_exporter's serving private key (from the operator's TLS Secret, `tls.key`).
pub const EXPORTER_TLS_KEY: &str = r"C:\k\tls\certs\tls.key";
/// windows_exporter's web configuration (a payload file) naming [`EXPORTER_TLS_CERT`] and [`EXPORTER_TLS_KEY`].
pub const EXPORTER_WEB_CONFIG: &str = r"C:\k\tls\windows-exporter-webconfig.yaml";
/// containerd's persistent data.
pub const CONTAINERD_ROOT: &str = r"C:\ProgramData\containerd\root";
/// containerd's transient state.
pub const CONTAINERD_STATE: &str = r"C:\ProgramData\containerd\state";

/// Parses one of this module's constants (or a path derived from one) for the file `file`.
pub(crate) fn destination(text: &str, file: &str) -> Result<WinPath, RenderError> {
    WinPath::parse(text).map_err(|source| RenderError::Destination { file: file.to_owned(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_constant_is_a_canonical_windows_path() {
        for text in [
            KUBELET_CONFIG,
            BOOTSTRAP_KUBECONFIG,
            KUBELET_KUBECONFIG,
            CLOUD_NODE_MANAGER_KUBECONFIG,
            CLOUD_NODE_MANAGER_TOKEN,
            BOOTSTRAP_CA,
            KUBELET_CLIENT_CA,
            CA_BUNDLE,
            TRUSTED_CERTIFICATES_DIR,
            TRUSTED_CERTIFICATES_INDEX,
            IMPORTED_ROOTS_RECORD,
            CONTAINERD_CONFIG,
            REGISTRIES_DIR,
            REGISTRIES_INDEX,
            CNI_BIN_DIR,
            CNI_CONFIG_DIR,
            CNI_CONFIG,
            KUBE_PROXY_CONFIG,
            CREDENTIAL_PROVIDER_CONFIG,
            CLOUD_CONFIG,
            CREDENTIAL_PROVIDER_BIN_DIR,
            EXPORTER_TLS_CERT,
            EXPORTER_TLS_KEY,
            EXPORTER_WEB_CONFIG,
            CONTAINERD_ROOT,
            CONTAINERD_STATE,
        ] {
            assert_eq!(destination(text, "test").unwrap().as_str(), text);
        }
    }
}
