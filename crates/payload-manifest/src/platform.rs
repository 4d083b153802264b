//! `Platform`: the infrastructure a cluster runs on, as OpenShift's `Infrastructure` object names it
//! (`status.platformStatus.type`). Payload components and rendered files depend on it (ECR credentials on AWS,
//! cloud-node-manager on Azure).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The cluster's infrastructure platform. Serialized with OpenShift's spelling (`AWS`, `Azure`, `GCP`, `VSphere`,
/// `Nutanix`, `None`).
///
/// ```
/// use wmco_payload_manifest::Platform;
///
/// let platform: Platform = serde_json::from_str("\"AWS\"").unwrap();
/// assert_eq!(platform, Platform::Aws);
/// assert_eq!(Platform::NoCloud.to_string(), "None");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    VSphere,
    /// Nutanix AHV.
    Nutanix,
    /// No cloud integration (OpenShift's platform `None`, and any plain Kubernetes cluster).
    #[serde(rename = "None")]
    NoCloud,
}

impl Platform {
    /// Every platform, in declaration order.
    pub const ALL: [Platform; 6] =
        [Platform::Aws, Platform::Azure, Platform::Gcp, Platform::VSphere, Platform::Nutanix, Platform::NoCloud];

    /// OpenShift's name of the platform.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Aws => "AWS",
            Platform::Azure => "Azure",
            Platform::Gcp => "GCP",
            Platform::VSphere => "VSphere",
            Platform::Nutanix => "Nutanix",
            Platform::NoCloud => "None",
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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
}
