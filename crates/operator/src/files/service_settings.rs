//! [`ServiceSettingsSource`]: where each host pass reads the node service settings from — the cluster settings of
//! the latest [`MaterialSnapshot`] (so a proxy change reaches the next pass of every host), or fixed settings in
//! tests — and whether the cluster lets Windows nodes join at all.

use semver::Version;
use wmco_node_config::ServiceSettings;
use wmco_windows_services::Verbosity;

use super::refresher::MaterialSnapshot;

/// Where a host pass reads its [`ServiceSettings`] from.
#[derive(Clone, Debug)]
pub enum ServiceSettingsSource {
    /// The same settings for every pass.
    Fixed(ServiceSettings),
    /// The cluster settings of the latest snapshot, at the operator's verbosity.
    Cluster {
        /// The snapshot the [`MaterialRefresher`](super::MaterialRefresher) keeps current.
        snapshot: MaterialSnapshot,
        /// The node services' log verbosity (`--debug-node-services`).
        verbosity: Verbosity,
        /// The kubelet version the payload installs (for the version skew check).
        payload_kubelet_version: Version,
    },
}

impl ServiceSettingsSource {
    /// The settings for a pass starting now.
    ///
    /// ```
    /// # use wmco_node_config::ServiceSettings;
    /// # use wmco_operator::files::ServiceSettingsSource;
    /// # use wmco_windows_services::{LogRotation, Platform, Verbosity};
    /// let settings = ServiceSettings {
    ///     api_server_url: "https://api-int.example:6443".into(),
    ///     platform: Platform::None,
    ///     verbosity: Verbosity::Normal,
    ///     log_rotation: LogRotation::default(),
    ///     hybrid_overlay_vxlan_port: None,
    ///     cloud_provider: None,
    ///     cloud_config: None,
    ///     proxy: Default::default(),
    /// };
    /// assert_eq!(ServiceSettingsSource::Fixed(settings.clone()).current(), settings);
    /// ```
    pub fn current(&self) -> ServiceSettings {
        match self {
            ServiceSettingsSource::Fixed(settings) => settings.clone(),
            ServiceSettingsSource::Cluster { snapshot, verbosity, .. } => {
                snapshot.current().settings.service_settings(*verbosity)
            }
        }
    }

    /// Why no host may be configured now ([`ClusterSettings::refusal`](super::ClusterSettings::refusal)); never
    /// for fixed settings.
    pub fn refusal(&self) -> Option<String> {
        match self {
            ServiceSettingsSource::Fixed(_) => None,
            ServiceSettingsSource::Cluster { snapshot, payload_kubelet_version, .. } => {
                snapshot.current().settings.refusal(payload_kubelet_version)
            }
        }
    }
}
