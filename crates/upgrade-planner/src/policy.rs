//! The rules the planner applies: the operator's version, the disruption budget, the bound on BYOH key checks, and
//! the kubelet/API-server version-skew rule.

use std::cmp::Ordering;
use std::fmt;

use semver::Version;
use serde::{Deserialize, Serialize};

/// The most minor versions a kubelet may trail the API server before the plan warns.
pub const MAX_KUBELET_MINORS_BEHIND: u64 = 3;

/// How the planner decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// The running operator's version; configured instances at another version are upgraded to it. Build metadata
    /// (`+…`) is ignored when versions are compared.
    pub operator_version: Version,
    /// At most this many desired instances may be unavailable because of the operator at once, BYOH and Machines
    /// together, Machines away for a replacement included (default 1; 0 pauses upgrades, Machine replacements,
    /// restarts and reboots).
    #[serde(default = "default_max_unavailable")]
    pub max_unavailable: u32,
    /// At most this many BYOH key checks are planned at once (default 8; the operator passes its
    /// `--max-concurrent-configurations`). The former key `maxConcurrentConfigurations` is read as this one.
    #[serde(default = "default_max_concurrent_key_checks", alias = "maxConcurrentConfigurations")]
    pub max_concurrent_key_checks: u32,
    /// The API server's Kubernetes version.
    pub cluster_kubernetes_version: Version,
    /// The kubelet version the operator's payload installs.
    pub payload_kubelet_version: Version,
}

fn default_max_unavailable() -> u32 {
    1
}

fn default_max_concurrent_key_checks() -> u32 {
    8
}

impl Policy {
    /// A policy with the default budget (1) and key-check bound (8).
    ///
    /// ```
    /// use semver::Version;
    /// use wmco_upgrade_planner::Policy;
    ///
    /// let policy = Policy::new(Version::new(1, 0, 0), Version::new(1, 33, 2), Version::new(1, 33, 1));
    /// assert_eq!((policy.max_unavailable, policy.max_concurrent_key_checks), (1, 8));
    /// ```
    pub fn new(
        operator_version: Version,
        cluster_kubernetes_version: Version,
        payload_kubelet_version: Version,
    ) -> Self {
        Policy {
            operator_version,
            max_unavailable: default_max_unavailable(),
            max_concurrent_key_checks: default_max_concurrent_key_checks(),
            cluster_kubernetes_version,
            payload_kubelet_version,
        }
    }

    /// The skew between the payload's kubelet and the API server, on major.minor only.
    ///
    /// ```
    /// use semver::Version;
    /// use wmco_upgrade_planner::{Policy, Skew};
    ///
    /// let policy = Policy::new(Version::new(1, 0, 0), Version::new(1, 33, 0), Version::new(1, 34, 0));
    /// assert!(matches!(policy.kubelet_skew(), Skew::KubeletNewer { .. }));
    /// ```
    pub fn kubelet_skew(&self) -> Skew {
        let kubelet = MinorVersion::of(&self.payload_kubelet_version);
        let api_server = MinorVersion::of(&self.cluster_kubernetes_version);
        match kubelet.cmp(&api_server) {
            Ordering::Greater => Skew::KubeletNewer { kubelet, api_server },
            Ordering::Equal => Skew::Supported,
            Ordering::Less if kubelet.major == api_server.major => {
                let minors_behind = api_server.minor - kubelet.minor;
                if minors_behind > MAX_KUBELET_MINORS_BEHIND {
                    Skew::KubeletFarBehind { kubelet, api_server, minors_behind: Some(minors_behind) }
                } else {
                    Skew::Supported
                }
            }
            Ordering::Less => Skew::KubeletFarBehind { kubelet, api_server, minors_behind: None },
        }
    }

    /// `true` when `configured` is the operator's version, ignoring build metadata.
    pub fn is_current(&self, configured: &Version) -> bool {
        configured.cmp_precedence(&self.operator_version) == Ordering::Equal
    }
}

/// A Kubernetes version cut to major.minor, the only part the skew rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MinorVersion {
    /// The major version.
    pub major: u64,
    /// The minor version.
    pub minor: u64,
}

impl MinorVersion {
    /// The major.minor part of `version`.
    pub fn of(version: &Version) -> Self {
        MinorVersion { major: version.major, minor: version.minor }
    }
}

impl fmt::Display for MinorVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The outcome of the skew rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skew {
    /// The kubelet may run against this API server.
    Supported,
    /// The kubelet's minor is newer than the API server's: nothing may install it.
    KubeletNewer {
        /// The payload's kubelet.
        kubelet: MinorVersion,
        /// The API server.
        api_server: MinorVersion,
    },
    /// The kubelet trails the API server by more than [`MAX_KUBELET_MINORS_BEHIND`] minors (or a major): allowed,
    /// with a warning.
    KubeletFarBehind {
        /// The payload's kubelet.
        kubelet: MinorVersion,
        /// The API server.
        api_server: MinorVersion,
        /// How many minors behind, when the majors are equal.
        minors_behind: Option<u64>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(cluster: &str, kubelet: &str) -> Policy {
        Policy::new(
            Version::new(1, 0, 0),
            Version::parse(cluster).expect("cluster version"),
            Version::parse(kubelet).expect("kubelet version"),
        )
    }

    #[test]
    fn same_minor_with_newer_patch_is_supported() {
        assert_eq!(policy("1.33.0", "1.33.9").kubelet_skew(), Skew::Supported);
    }

    #[test]
    fn three_minors_behind_is_supported_four_warns() {
        assert_eq!(policy("1.36.0", "1.33.0").kubelet_skew(), Skew::Supported);
        assert_eq!(
            policy("1.36.0", "1.32.5").kubelet_skew(),
            Skew::KubeletFarBehind {
                kubelet: MinorVersion { major: 1, minor: 32 },
                api_server: MinorVersion { major: 1, minor: 36 },
                minors_behind: Some(4),
            }
        );
    }

    #[test]
    fn newer_minor_fails() {
        assert_eq!(
            policy("1.33.7", "1.34.0").kubelet_skew(),
            Skew::KubeletNewer {
                kubelet: MinorVersion { major: 1, minor: 34 },
                api_server: MinorVersion { major: 1, minor: 33 },
            }
        );
    }

    #[test]
    fn older_major_warns_without_a_minor_count() {
        assert_eq!(
            policy("2.1.0", "1.40.0").kubelet_skew(),
            Skew::KubeletFarBehind {
                kubelet: MinorVersion { major: 1, minor: 40 },
                api_server: MinorVersion { major: 2, minor: 1 },
                minors_behind: None,
            }
        );
    }

    #[test]
    fn build_metadata_is_ignored_but_prerelease_is_not() {
        let mut policy = policy("1.33.0", "1.33.0");
        policy.operator_version = Version::parse("1.2.0+abc1234").expect("version");
        assert!(policy.is_current(&Version::parse("1.2.0+def5678").expect("version")));
        assert!(policy.is_current(&Version::new(1, 2, 0)));
        assert!(!policy.is_current(&Version::parse("1.2.0-rc.1").expect("version")));
    }

    #[test]
    fn defaults_apply_when_absent_from_input() {
        let policy: Policy = serde_json::from_str(
            r#"{"operatorVersion":"1.0.0","clusterKubernetesVersion":"1.33.0","payloadKubeletVersion":"1.33.0"}"#,
        )
        .expect("policy parses");
        assert_eq!((policy.max_unavailable, policy.max_concurrent_key_checks), (1, 8));
    }

    #[test]
    fn the_former_concurrency_key_is_read_as_the_key_check_bound() {
        let policy: Policy = serde_json::from_str(
            r#"{"operatorVersion":"1.0.0","maxConcurrentConfigurations":3,"clusterKubernetesVersion":"1.33.0",
                "payloadKubeletVersion":"1.33.0"}"#,
        )
        .expect("policy parses");
        assert_eq!(policy.max_concurrent_key_checks, 3);
    }
}
