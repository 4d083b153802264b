//! [`OperatorConfig`]: everything the controllers are told, decided once at startup from the operator's flags
//! ([`OperatorFlags`]), the cluster's facts and the payload manifest. Every controller's settings are derived from
//! it here, so the namespace, versions, budget and concurrency are written in one place.

use std::path::PathBuf;
use std::time::Duration;

use semver::Version;
use wmco_cluster_client::{ClusterFacts, DrainOptions};
use wmco_payload_manifest::Manifest;
use wmco_reboot_policy::RebootSettings;
use wmco_vocabulary::{IpCidr, Platform};
use wmco_windows_services::{LogRotation, Verbosity};

use crate::csr::{CsrSettings, system_clock};
use crate::files::{ClusterSettings, ClusterSettingsError, MaterialSnapshot, ServiceSettingsSource};
use crate::fleet::{FleetError, FleetSettings, operator_version, payload_kubelet_version};
use crate::instances::InstancesSettings;
use crate::machines::MachinesSettings;
use crate::ssh::SshSettings;
use crate::user_data::UserDataSettings;

/// The controller name on Events and the prefix of a default process identity.
pub const CONTROLLER_NAME: &str = "windows-machine-config-operator";

/// What the admin decides through `wmco run`'s flags (the operator's own settings, not the cluster's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorFlags {
    /// The operator namespace (records, Lease, `windows-instances`, `cloud-private-key`).
    pub namespace: String,
    /// This process's identity: the lease holder and the SSH client version suffix.
    pub identity: String,
    /// The SSH port of every host.
    pub ssh_port: u16,
    /// How long one remote command may run.
    pub ssh_command_timeout: Duration,
    /// How long one blocking SSH step (handshake, one SFTP write) may take.
    pub ssh_io_timeout: Duration,
    /// How many hosts are configured at once.
    pub concurrency: u16,
    /// How many Windows nodes may be unavailable at once (BYOH and Machines together).
    pub max_unavailable: u32,
    /// How long a Machine's host may refuse the operator's key before the Machine is replaced.
    pub authentication_grace: Duration,
    /// The version recorded on Nodes instead of this crate's version (tests and development only).
    pub version_override: Option<String>,
    /// Log verbosity of the node services.
    pub verbosity: Verbosity,
    /// The pod networks kubelet serving CSRs must not claim addresses in.
    pub cluster_networks: Vec<IpCidr>,
    /// Rotation of the kubelet and kube-proxy logs (`SERVICES_LOG_FILE_SIZE`, `SERVICES_LOG_FILE_AGE`,
    /// `SERVICES_LOG_FLUSH_INTERVAL`).
    pub log_rotation: LogRotation,
    /// Where every host's command transcript is written (`--record-transcripts`); `None` records nothing.
    pub record_transcripts: Option<PathBuf>,
    /// `--reboot-policy` and the maintenance window (`--reboot-days`, `--start-time`, `--end-time`, `--time-zone`).
    pub reboot: RebootSettings,
}

/// What the cluster is, as discovered at startup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterShape {
    /// The cluster serves `config.openshift.io` (kubelet client CA from ControllerConfig).
    pub openshift: bool,
    /// The cluster serves `machine.openshift.io` (the Machine and user-data controllers run).
    pub machine_api: bool,
}

/// The configuration is not usable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `--version-override` or the payload's kubelet version is not usable.
    #[error(transparent)]
    Version(#[from] FleetError),
    /// The cluster facts cannot be turned into the files' render inputs.
    #[error("cluster facts")]
    ClusterFacts(#[from] ClusterSettingsError),
}

/// The operator's configuration: flags, cluster facts and payload versions, decided once.
///
/// ```
/// use std::time::Duration;
/// use wmco_operator::process::{ClusterShape, OperatorConfig, OperatorFlags};
/// # let facts = wmco_cluster_client::ClusterFacts {
/// #     service_cidr: "172.30.0.0/16".parse().unwrap(),
/// #     api_server_internal_url: "https://api-int.example:6443".into(),
/// #     platform: wmco_vocabulary::Platform::None.into(),
/// #     proxy: Default::default(),
/// #     kubernetes_version: semver::Version::new(1, 36, 0),
/// #     mirror_sets: Vec::new(),
/// #     pod_networking: None,
/// #     kubelet_cloud: Default::default(),
/// # };
/// let flags = OperatorFlags {
///     namespace: "wmco".into(),
///     identity: "wmco-0".into(),
///     ssh_port: 22,
///     ssh_command_timeout: Duration::from_secs(120),
///     ssh_io_timeout: Duration::from_secs(60),
///     concurrency: 8,
///     max_unavailable: 1,
///     authentication_grace: Duration::from_secs(300),
///     version_override: Some("10.18.0".into()),
///     verbosity: wmco_windows_services::Verbosity::Normal,
///     cluster_networks: Vec::new(),
///     log_rotation: Default::default(),
///     record_transcripts: None,
///     reboot: Default::default(),
/// };
/// let manifest = wmco_payload_manifest::Manifest::product().unwrap();
/// let shape = ClusterShape { openshift: false, machine_api: false };
/// let config = OperatorConfig::new(flags, &facts, shape, &manifest).unwrap();
/// assert_eq!(config.fleet_settings().namespace, "wmco");
/// assert_eq!(config.operator_version.to_string(), "10.18.0");
/// ```
#[derive(Clone, Debug)]
pub struct OperatorConfig {
    /// The admin's flags.
    pub flags: OperatorFlags,
    /// What the cluster serves.
    pub shape: ClusterShape,
    /// The version written to configured Nodes (no build metadata).
    pub operator_version: Version,
    /// The kubelet version the payload installs (for the upgrade skew rule).
    pub payload_kubelet_version: Version,
    /// The cluster's platform (`None` for one this operator does not know).
    pub platform: Platform,
    /// The cluster's Service network.
    pub service_network: IpCidr,
    /// The files' render inputs from the cluster facts.
    pub cluster: ClusterSettings,
}

impl OperatorConfig {
    /// Decides the configuration from `flags`, the cluster's `facts` and `shape`, and the payload `manifest`.
    ///
    /// # Errors
    /// [`ConfigError`] naming the flag or fact that is not usable.
    pub fn new(
        flags: OperatorFlags,
        facts: &ClusterFacts,
        shape: ClusterShape,
        manifest: &Manifest,
    ) -> Result<Self, ConfigError> {
        let operator_version = operator_version(flags.version_override.as_deref())?;
        let payload_kubelet_version = payload_kubelet_version(manifest)?;
        let cluster = ClusterSettings::from_facts(facts)?.with_log_rotation(flags.log_rotation);
        Ok(OperatorConfig {
            flags,
            shape,
            operator_version,
            payload_kubelet_version,
            platform: facts.platform.known_or_none(),
            service_network: facts.service_cidr,
            cluster,
        })
    }

    /// The operator namespace.
    pub fn namespace(&self) -> &str {
        &self.flags.namespace
    }

    /// The CSR controller's settings: the namespace and the networks no serving certificate may claim.
    pub fn csr_settings(&self) -> CsrSettings {
        CsrSettings {
            namespace: self.flags.namespace.clone(),
            service_network: vec![self.service_network],
            cluster_network: self.flags.cluster_networks.clone(),
            clock: system_clock(),
        }
    }

    /// The instances controller's settings for the operator key whose public key hashes to `pub_key_hash`, with
    /// the node service settings read from `snapshot` at each pass.
    pub fn instances_settings(&self, pub_key_hash: String, snapshot: MaterialSnapshot) -> InstancesSettings {
        InstancesSettings {
            namespace: self.flags.namespace.clone(),
            services: self.service_settings_source(snapshot),
            operator_version: self.operator_version.to_string(),
            pub_key_hash,
            drain: DrainOptions::default(),
            command_timeout: self.flags.ssh_command_timeout,
        }
    }

    /// The node service settings and the cluster gate of each host pass, read from `snapshot`.
    pub fn service_settings_source(&self, snapshot: MaterialSnapshot) -> ServiceSettingsSource {
        ServiceSettingsSource::Cluster {
            snapshot,
            verbosity: self.flags.verbosity,
            payload_kubelet_version: self.payload_kubelet_version.clone(),
        }
    }

    /// How the operator reaches every host: the port, this process's identity in the client version string, and
    /// the time limits.
    pub fn ssh_settings(&self) -> SshSettings {
        SshSettings {
            port: self.flags.ssh_port,
            client_version_suffix: Some(self.flags.identity.clone()),
            command_timeout: self.flags.ssh_command_timeout,
            io_timeout: self.flags.ssh_io_timeout,
        }
    }

    /// The fleet controller's settings: the versions, the budget and concurrency, and the grace period of refused
    /// logins on Machines.
    pub fn fleet_settings(&self) -> FleetSettings {
        FleetSettings {
            max_concurrent_configurations: u32::from(self.flags.concurrency),
            authentication_grace: self.flags.authentication_grace,
            reboot: self.flags.reboot.clone(),
            ..FleetSettings::new(
                self.flags.namespace.clone(),
                self.operator_version.clone(),
                self.payload_kubelet_version.clone(),
                self.flags.max_unavailable,
            )
        }
    }

    /// The Machine controller's settings: the namespace and the cluster's platform.
    pub fn machines_settings(&self) -> MachinesSettings {
        MachinesSettings { namespace: self.flags.namespace.clone(), platform: self.platform }
    }

    /// The user-data controller's settings: the namespace and the cluster's platform.
    pub fn user_data_settings(&self) -> UserDataSettings {
        UserDataSettings { operator_namespace: self.flags.namespace.clone(), platform: self.platform }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wmco_reboot_policy::RebootPolicy;

    use super::*;
    use crate::files::ClusterMaterial;

    fn flags() -> OperatorFlags {
        OperatorFlags {
            namespace: "openshift-windows-machine-config-operator".into(),
            identity: "wmco-0".into(),
            ssh_port: 2222,
            ssh_command_timeout: Duration::from_secs(30),
            ssh_io_timeout: Duration::from_secs(10),
            concurrency: 3,
            max_unavailable: 4,
            authentication_grace: Duration::from_secs(20),
            version_override: None,
            verbosity: Verbosity::Debug,
            cluster_networks: Vec::new(),
            log_rotation: LogRotation::default(),
            record_transcripts: None,
            reboot: RebootSettings::default(),
        }
    }

    fn facts() -> ClusterFacts {
        ClusterFacts {
            service_cidr: "172.30.0.0/16".parse().expect("cidr"),
            api_server_internal_url: "https://api-int.example:6443".into(),
            platform: Platform::None.into(),
            proxy: Default::default(),
            kubernetes_version: Version::new(1, 33, 0),
            mirror_sets: Vec::new(),
            pod_networking: None,
            kubelet_cloud: Default::default(),
        }
    }

    const OPENSHIFT: ClusterShape = ClusterShape { openshift: true, machine_api: true };

    #[test]
    fn settings_come_from_the_flags_and_the_version_drops_build_metadata() {
        let manifest = Manifest::product().expect("product manifest");
        let config = OperatorConfig::new(flags(), &facts(), OPENSHIFT, &manifest).expect("config");
        assert_eq!(
            config.operator_version.to_string(),
            env!("CARGO_PKG_VERSION").split('+').next().expect("a version")
        );
        let kubelet = manifest.component("kubelet").expect("kubelet component").version.clone();
        assert_eq!(Some(format!("v{}", config.payload_kubelet_version)), kubelet);
        let fleet = config.fleet_settings();
        assert_eq!(
            (fleet.namespace.as_str(), fleet.max_unavailable, fleet.max_concurrent_configurations),
            ("openshift-windows-machine-config-operator", 4, 3)
        );
        assert_eq!(fleet.authentication_grace, Duration::from_secs(20));
        assert_eq!(
            (&fleet.operator_version, &fleet.payload_kubelet_version),
            (&config.operator_version, &config.payload_kubelet_version)
        );
        let snapshot = MaterialSnapshot::fixed(ClusterMaterial::not_read_yet(Arc::new(config.cluster.clone())));
        let instances = config.instances_settings("hash".into(), snapshot);
        assert_eq!(instances.operator_version, config.operator_version.to_string());
        assert_eq!(instances.services.current().verbosity, Verbosity::Debug);
        assert_eq!(instances.services.current().api_server_url, config.cluster.api_server_url);
        assert_eq!(instances.command_timeout, Duration::from_secs(30));
        let ssh = config.ssh_settings();
        assert_eq!(
            (ssh.port, ssh.client_version_suffix.as_deref(), ssh.command_timeout, ssh.io_timeout),
            (2222, Some("wmco-0"), Duration::from_secs(30), Duration::from_secs(10))
        );
        let overridden = OperatorFlags { version_override: Some("10.18.0-e2e+build.7".into()), ..flags() };
        let config = OperatorConfig::new(overridden, &facts(), OPENSHIFT, &manifest).expect("config");
        assert_eq!(config.operator_version.to_string(), "10.18.0-e2e");
    }

    #[test]
    fn the_reboot_settings_come_from_the_flags() {
        let manifest = Manifest::product().expect("product manifest");
        let reboot = RebootSettings { policy: RebootPolicy::WhenRequired, ..RebootSettings::default() };
        let flags = OperatorFlags { reboot: reboot.clone(), ..flags() };
        let config = OperatorConfig::new(flags, &facts(), OPENSHIFT, &manifest).expect("config");
        assert_eq!(config.fleet_settings().reboot, reboot);
    }

    #[test]
    fn a_version_override_that_is_not_semver_names_the_flag_and_the_value() {
        let manifest = Manifest::product().expect("product manifest");
        let flags = OperatorFlags { version_override: Some("10.18".into()), ..flags() };
        let error = OperatorConfig::new(flags, &facts(), OPENSHIFT, &manifest).expect_err("not semver");
        assert!(matches!(error, ConfigError::Version(_)), "{error:?}");
        assert!(error.to_string().contains("--version-override"), "{error}");
        assert!(error.to_string().contains("10.18"), "{error}");
    }

    #[test]
    fn machine_api_settings_carry_the_namespace_and_the_platform() {
        let manifest = Manifest::product().expect("product manifest");
        let flags = OperatorFlags { namespace: "wmco".into(), ..flags() };
        let config = OperatorConfig::new(flags.clone(), &facts(), OPENSHIFT, &manifest).expect("config");
        assert_eq!(config.machines_settings(), MachinesSettings { namespace: "wmco".into(), platform: Platform::None });
        assert_eq!(
            config.user_data_settings(),
            UserDataSettings { operator_namespace: "wmco".into(), platform: Platform::None }
        );
        let gcp = ClusterFacts { platform: Platform::Gcp.into(), ..facts() };
        let config = OperatorConfig::new(flags, &gcp, OPENSHIFT, &manifest).expect("config");
        assert_eq!(config.user_data_settings().platform, Platform::Gcp);
    }

    #[test]
    fn a_service_network_that_is_not_ipv4_is_a_cluster_facts_error() {
        let manifest = Manifest::product().expect("product manifest");
        let facts = ClusterFacts { service_cidr: "fd00::/108".parse().expect("cidr"), ..facts() };
        let error = OperatorConfig::new(flags(), &facts, OPENSHIFT, &manifest).expect_err("IPv6 services");
        assert_eq!(error.to_string(), "cluster facts");
        let cause = std::error::Error::source(&error).expect("the facts error").to_string();
        assert!(cause.contains("fd00::/108"), "{cause}");
    }
}
