//! The wrapper each platform's provisioning agent expects around the script.

use wmco_vocabulary::Platform;

use crate::key::PublicKey;
use crate::script::provisioning_script;

/// True when the script travels inside `<powershell>` … `</powershell>` plus `<persist>true</persist>` (every
/// platform but GCP, whose agent runs the metadata value as a script; EC2Launch on AWS reads `<powershell>` and
/// `<persist>`; platform `None`, bring your own hosts, gets the tagged form, as most platforms).
///
/// ```
/// use wmco_user_data::{Platform, wraps_in_tags};
/// assert!(wraps_in_tags(Platform::Aws));
/// assert!(!wraps_in_tags(Platform::Gcp));
/// ```
pub fn wraps_in_tags(platform: Platform) -> bool {
    platform != Platform::Gcp
}

const OPEN_TAG: &str = "<powershell>\n";
const CLOSE_TAGS: &str = "</powershell>\n<persist>true</persist>\n";

/// The `userData` value of the `windows-user-data` Secret for `platform`: the platform's [`provisioning_script`],
/// wrapped when [`wraps_in_tags`].
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
    let script = provisioning_script(key, platform);
    if wraps_in_tags(platform) { format!("{OPEN_TAG}{script}{CLOSE_TAGS}") } else { script }
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
    fn only_gcp_goes_without_tags() {
        let untagged: Vec<Platform> = Platform::ALL.into_iter().filter(|p| !wraps_in_tags(*p)).collect();
        assert_eq!(untagged, [Platform::Gcp]);
    }

    #[test]
    fn unwrapping_inverts_wrapping() {
        let key = PublicKey::parse("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDJqxXtLTB09WrBv58kWkXoCkTTC3YJP1KolNbUZY5jp")
            .unwrap();
        for platform in Platform::ALL {
            assert_eq!(script_from_user_data(&render_user_data(&key, platform)), provisioning_script(&key, platform));
        }
    }
}
