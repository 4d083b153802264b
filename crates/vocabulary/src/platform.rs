//! [`Platform`]: the infrastructure a cluster runs on, as OpenShift's `Infrastructure` object names it
//! (`status.platformStatus.type`), and [`PlatformName`] for what a cluster reports, which may be a platform this
//! product does not know.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The cluster's infrastructure platform. Serialized with OpenShift's spelling (`AWS`, `Azure`, `GCP`, `VSphere`,
/// `Nutanix`, `None`); the command line uses the lower-case [`Platform::cli_name`] (`aws`, …, `none`).
///
/// ```
/// use wmco_vocabulary::Platform;
///
/// let platform: Platform = serde_json::from_str("\"AWS\"")?;
/// assert_eq!(platform, Platform::Aws);
/// assert_eq!(Platform::None.to_string(), "None");
/// assert_eq!("vsphere".parse::<Platform>(), Ok(Platform::VSphere));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Platform {
    /// Amazon Web Services.
    #[serde(rename = "AWS")]
    Aws,
    /// Microsoft Azure.
    Azure,
    /// Google Cloud.
    #[serde(rename = "GCP")]
    Gcp,
    /// VMware vSphere.
    #[cfg_attr(feature = "clap", value(name = "vsphere"))]
    VSphere,
    /// Nutanix.
    Nutanix,
    /// No cloud integration (bring your own hosts; OpenShift's platform `None`, and any plain Kubernetes cluster).
    None,
}

impl Platform {
    /// Every platform, in declaration order (the order the CLI lists them).
    pub const ALL: [Platform; 6] =
        [Platform::Aws, Platform::Azure, Platform::Gcp, Platform::VSphere, Platform::Nutanix, Platform::None];

    /// OpenShift's name of the platform, as in `Infrastructure.status.platformStatus.type`.
    ///
    /// ```
    /// assert_eq!(wmco_vocabulary::Platform::Gcp.as_str(), "GCP");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Aws => "AWS",
            Platform::Azure => "Azure",
            Platform::Gcp => "GCP",
            Platform::VSphere => "VSphere",
            Platform::Nutanix => "Nutanix",
            Platform::None => "None",
        }
    }

    /// The lower-case name the CLI uses (`aws`, `azure`, `gcp`, `vsphere`, `nutanix`, `none`).
    ///
    /// ```
    /// assert_eq!(wmco_vocabulary::Platform::VSphere.cli_name(), "vsphere");
    /// ```
    pub fn cli_name(self) -> &'static str {
        match self {
            Platform::Aws => "aws",
            Platform::Azure => "azure",
            Platform::Gcp => "gcp",
            Platform::VSphere => "vsphere",
            Platform::Nutanix => "nutanix",
            Platform::None => "none",
        }
    }
}

impl fmt::Display for Platform {
    /// OpenShift's name ([`Platform::as_str`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A platform name that is not one of [`Platform::ALL`].
///
/// ```
/// let error = "openstack".parse::<wmco_vocabulary::Platform>().unwrap_err();
/// assert_eq!(error.to_string(), "unknown platform `openstack` (expected aws, azure, gcp, vsphere, nutanix or none)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown platform `{0}` (expected aws, azure, gcp, vsphere, nutanix or none)")]
pub struct UnknownPlatform(pub String);

impl FromStr for Platform {
    type Err = UnknownPlatform;

    /// Parses a CLI name or an OpenShift `Infrastructure` platform type, case-insensitively.
    fn from_str(name: &str) -> Result<Platform, UnknownPlatform> {
        Platform::ALL
            .into_iter()
            .find(|platform| platform.cli_name().eq_ignore_ascii_case(name))
            .ok_or_else(|| UnknownPlatform(name.to_owned()))
    }
}

/// The platform a cluster reports: one this product knows, or any other OpenShift platform type by its name.
///
/// ```
/// use wmco_vocabulary::{Platform, PlatformName};
///
/// assert_eq!(PlatformName::from_openshift_name("Azure"), PlatformName::Known(Platform::Azure));
/// let openstack = PlatformName::from_openshift_name("OpenStack");
/// assert_eq!(openstack.to_string(), "OpenStack");
/// assert_eq!(openstack.known_or_none(), Platform::None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PlatformName {
    /// A platform of [`Platform::ALL`].
    Known(Platform),
    /// Any other platform, by its OpenShift name.
    Other(String),
}

impl PlatformName {
    /// The platform named `name` as in `Infrastructure.status.platformStatus.type` (exact spelling); an empty
    /// name is [`Platform::None`].
    ///
    /// ```
    /// use wmco_vocabulary::{Platform, PlatformName};
    /// assert_eq!(PlatformName::from_openshift_name(""), PlatformName::Known(Platform::None));
    /// assert_eq!(PlatformName::from_openshift_name("aws"), PlatformName::Other("aws".into()));
    /// ```
    pub fn from_openshift_name(name: &str) -> Self {
        if name.is_empty() {
            return PlatformName::Known(Platform::None);
        }
        Platform::ALL
            .into_iter()
            .find(|platform| platform.as_str() == name)
            .map_or_else(|| PlatformName::Other(name.to_owned()), PlatformName::Known)
    }

    /// The platform whose behaviour applies: a known platform as is, any other as [`Platform::None`] (no cloud
    /// integration, the tagged user data, the default SSH user and node names).
    ///
    /// ```
    /// use wmco_vocabulary::{Platform, PlatformName};
    /// assert_eq!(PlatformName::Known(Platform::Gcp).known_or_none(), Platform::Gcp);
    /// assert_eq!(PlatformName::Other("OpenStack".into()).known_or_none(), Platform::None);
    /// ```
    pub fn known_or_none(&self) -> Platform {
        match self {
            PlatformName::Known(platform) => *platform,
            PlatformName::Other(_) => Platform::None,
        }
    }
}

impl From<Platform> for PlatformName {
    fn from(platform: Platform) -> Self {
        PlatformName::Known(platform)
    }
}

impl fmt::Display for PlatformName {
    /// OpenShift's name of the platform.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlatformName::Known(platform) => f.write_str(platform.as_str()),
            PlatformName::Other(name) => f.write_str(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_serde_name_for_every_platform() {
        for platform in Platform::ALL {
            assert_eq!(serde_json::to_string(&platform).unwrap(), format!("\"{platform}\""));
        }
    }

    #[test]
    fn names_round_trip_case_insensitively() {
        for platform in Platform::ALL {
            assert_eq!(platform.cli_name().parse::<Platform>(), Ok(platform));
            assert_eq!(platform.as_str().parse::<Platform>(), Ok(platform));
        }
        assert_eq!("VSphere".parse::<Platform>(), Ok(Platform::VSphere));
        assert_eq!("AWS".parse::<Platform>(), Ok(Platform::Aws));
        assert_eq!(
            "openstack".parse::<Platform>().unwrap_err().to_string(),
            "unknown platform `openstack` (expected aws, azure, gcp, vsphere, nutanix or none)"
        );
    }

    #[test]
    fn openshift_names_round_trip() {
        for name in ["AWS", "Azure", "GCP", "VSphere", "Nutanix", "None", "OpenStack"] {
            assert_eq!(PlatformName::from_openshift_name(name).to_string(), name);
        }
    }

    #[cfg(feature = "clap")]
    #[test]
    fn cli_values_are_the_cli_names() {
        use clap::ValueEnum;
        for platform in Platform::ALL {
            let value = platform.to_possible_value().unwrap();
            assert_eq!(value.get_name(), platform.cli_name());
        }
    }
}
