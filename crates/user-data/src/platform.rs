//! Platforms and the wrapper each one's provisioning agent expects around the script.

use std::fmt;
use std::str::FromStr;

use crate::key::PublicKey;
use crate::script::provisioning_script;

/// The platform a Windows Machine runs on, as far as the user data's form is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// Amazon Web Services (EC2Launch reads `<powershell>` and `<persist>`).
    Aws,
    /// Microsoft Azure.
    Azure,
    /// Google Cloud: the script is passed as is, without tags.
    Gcp,
    /// VMware vSphere.
    VSphere,
    /// Nutanix.
    Nutanix,
    /// No cloud integration (bring your own hosts); the tagged form is used, as on most platforms.
    None,
}

impl Platform {
    /// Every platform, in the order the CLI lists them.
    pub const ALL: [Platform; 6] =
        [Platform::Aws, Platform::Azure, Platform::Gcp, Platform::VSphere, Platform::Nutanix, Platform::None];

    /// The lower-case name the CLI uses (`aws`, `azure`, `gcp`, `vsphere`, `nutanix`, `none`).
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

    /// True when the script travels inside `<powershell>` … `</powershell>` plus `<persist>true</persist>` (every
    /// platform but GCP, whose agent runs the metadata value as a script).
    pub fn wraps_in_tags(self) -> bool {
        self != Platform::Gcp
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.cli_name())
    }
}

/// A platform name that is not one of [`Platform::ALL`].
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

const OPEN_TAG: &str = "<powershell>\n";
const CLOSE_TAGS: &str = "</powershell>\n<persist>true</persist>\n";

/// The `userData` value of the `windows-user-data` Secret for `platform`: [`provisioning_script`], wrapped when
/// [`Platform::wraps_in_tags`].
///
/// ```
/// use wmco_user_data::{Platform, PublicKey, render_user_data};
///
/// let key = PublicKey::parse("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDJqxXtLTB09WrBv58kWkXoCkTTC3YJP1KolNbUZY5jp")?;
/// let aws = render_user_data(&key, Platform::Aws);
/// assert!(aws.starts_with("<powershell>\n$ProgressPreference"));
/// assert!(aws.ends_with("</powershell>\n<persist>true</persist>\n"));
/// assert!(render_user_data(&key, Platform::Gcp).starts_with("$ProgressPreference"));
/// # Ok::<(), wmco_user_data::KeyError>(())
/// ```
pub fn render_user_data(key: &PublicKey, platform: Platform) -> String {
    let script = provisioning_script(key);
    if platform.wraps_in_tags() { format!("{OPEN_TAG}{script}{CLOSE_TAGS}") } else { script }
}

/// The script inside user data, as a provisioning agent runs it: the text between `<powershell>` and
/// `</powershell>` when tagged, the whole text otherwise.
///
/// ```
/// assert_eq!(wmco_user_data::script_from_user_data("<powershell>\nexit 0\n</powershell>\n<persist>true</persist>\n"), "exit 0\n");
/// assert_eq!(wmco_user_data::script_from_user_data("exit 0\n"), "exit 0\n");
/// ```
pub fn script_from_user_data(user_data: &str) -> &str {
    let Some(start) = user_data.find("<powershell>") else { return user_data };
    let body = &user_data[start + "<powershell>".len()..];
    let body = body.strip_prefix('\n').unwrap_or(body);
    match body.find("</powershell>") {
        Some(end) => &body[..end],
        None => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_case_insensitively() {
        for platform in Platform::ALL {
            assert_eq!(platform.cli_name().parse::<Platform>(), Ok(platform));
        }
        assert_eq!("VSphere".parse::<Platform>(), Ok(Platform::VSphere));
        assert_eq!("AWS".parse::<Platform>(), Ok(Platform::Aws));
        assert_eq!(
            "openstack".parse::<Platform>().unwrap_err().to_string(),
            "unknown platform `openstack` (expected aws, azure, gcp, vsphere, nutanix or none)"
        );
    }

    #[test]
    fn only_gcp_goes_without_tags() {
        let untagged: Vec<Platform> = Platform::ALL.into_iter().filter(|p| !p.wraps_in_tags()).collect();
        assert_eq!(untagged, [Platform::Gcp]);
    }

    #[test]
    fn unwrapping_inverts_wrapping() {
        let key = PublicKey::parse("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDJqxXtLTB09WrBv58kWkXoCkTTC3YJP1KolNbUZY5jp")
            .unwrap();
        for platform in Platform::ALL {
            assert_eq!(script_from_user_data(&render_user_data(&key, platform)), provisioning_script(&key));
        }
    }
}
