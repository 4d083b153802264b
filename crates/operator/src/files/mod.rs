//! The files a Windows host must hold, rendered from the real payload and cluster material: the operator's
//! [`HostFilesSource`](wmco_node_config::HostFilesSource).
//!
//! - [`NodeFiles`] (synchronous, no IO): verified payload + the latest [`ClusterMaterial`] snapshot (with the
//!   [`ClusterSettings`] from `ClusterFacts`) + the Node's hybrid-overlay subnet → `HostFileSet`.
//! - [`MaterialRefresher`] (an async task): reads the API server CA (`kube-root-ca.crt`), the kubelet client CA
//!   (ControllerConfig, or the API server CA on plain Kubernetes), mints the node-bootstrapper token with
//!   TokenRequest, reads windows_exporter's TLS Secret and the cluster settings again, and publishes them through
//!   a watch channel ([`MaterialSnapshot`]).
//! - [`ServiceSettingsSource`]: each host pass's node service settings, from the same snapshot.
//!
//! A missing piece fails only the stage that needs it, with an error naming the object: the TLS Secret blocks the
//! node stage, never a bootstrap.

mod cluster;
mod material;
mod node_files;
mod refresher;
mod service_settings;

#[cfg(test)]
mod tests;

pub use cluster::{
    CLUSTER_DNS_INDEX, CLUSTER_DOMAIN, ClusterSettings, ClusterSettingsError, MAX_KUBELET_MINOR_SKEW, OVN_KUBERNETES,
    RenderMaterial,
};
pub use material::{ClusterMaterial, MaterialError, MintedToken};
pub use node_files::{FilesError, NodeFiles};
pub use refresher::{
    EXPORTER_TLS_SECRET, KubeletCaSource, MaterialRefresher, MaterialSnapshot, MaterialSources, PULL_SECRET_KEY,
    ROOT_CA_CONFIG_MAP, ROOT_CA_KEY, RefreshSettings,
};
pub use service_settings::ServiceSettingsSource;
