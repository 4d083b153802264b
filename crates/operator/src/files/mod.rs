//! The files a Windows host must hold, rendered from the real payload and cluster material: the operator's
//! [`HostFilesSource`](wmco_node_config::HostFilesSource).
//!
//! - [`NodeFiles`] (synchronous, no IO): verified payload + [`ClusterSettings`] (from `ClusterFacts`) + the latest
//!   [`ClusterMaterial`] snapshot + the Node's hybrid-overlay subnet → `HostFileSet`.
//! - [`MaterialRefresher`] (an async task): reads the API server CA (`kube-root-ca.crt`), the kubelet client CA
//!   (ControllerConfig, or the API server CA on plain Kubernetes), mints the node-bootstrapper token with
//!   TokenRequest and reads windows_exporter's TLS Secret, and publishes them through a watch channel
//!   ([`MaterialSnapshot`]).
//!
//! A missing piece fails only the stage that needs it, with an error naming the object: the TLS Secret blocks the
//! node stage, never a bootstrap.

mod cluster;
mod material;
mod node_files;
mod refresher;

#[cfg(test)]
mod tests;

pub use cluster::{CLUSTER_DNS_INDEX, CLUSTER_DOMAIN, ClusterSettings, ClusterSettingsError};
pub use material::{BootstrapToken, ClusterMaterial, MaterialError};
pub use node_files::{FilesError, NodeFiles};
pub use refresher::{
    EXPORTER_TLS_SECRET, KubeletCaSource, MaterialRefresher, MaterialSnapshot, MaterialSources, ROOT_CA_CONFIG_MAP,
    ROOT_CA_KEY, RefreshSettings,
};
