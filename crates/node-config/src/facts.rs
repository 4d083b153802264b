//! What the identity command reads about a host besides its identity ([`HostFacts`]: Windows build, free space,
//! the `Containers` feature, services already there, default shell, boot time, CNI state), what a configuration does
//! about the `Containers` feature ([`containers_to_enable`]), and the preflight's verdicts ([`PreflightCheck`],
//! [`PreflightFailure`]) that [`preflight`](crate::preflight) gives from them.

use std::fmt;

use serde::Deserialize;

/// What the identity command reads about the host besides its identity. `None`: the host printed nothing usable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// `CurrentBuildNumber` of `HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion`.
    pub build: Option<u32>,
    /// `UBR` (update build revision, a `REG_DWORD`) of the same key: the build's monthly patch level, `20348.<ubr>`.
    pub ubr: Option<u32>,
    /// `FreeSpace` of `Win32_LogicalDisk` `C:`, in bytes.
    pub free_bytes: Option<u64>,
    /// The state of the optional feature `Containers`.
    pub containers: Option<FeatureState>,
    /// The binPath of a `docker` service, if one is installed.
    pub docker_service: Option<String>,
    /// The binPath of a `containerd` service, if one is installed (before the operator's first pass: preinstalled,
    /// or left by an earlier configuration; the operator takes it over).
    pub containerd_service: Option<String>,
    /// Whether Windows Defender runs (its `MsMpEng` process exists): the configuration then excludes containerd
    /// from its scanning.
    pub defender_running: Option<bool>,
    /// Win32-OpenSSH's `DefaultShell` registry value (`None`: unset, so cmd.exe).
    pub default_shell: Option<String>,
    /// `LastBootUpTime` of `Win32_OperatingSystem` as the host printed it: compared, never interpreted, to tell a
    /// completed reboot from one still to come.
    pub last_boot: Option<String>,
    /// Whether `C:\var\lib\cni` (the CNI plugins' state: host-local IPAM's address leases) exists: before its first
    /// join a host must not keep another configuration's leases.
    pub cni_state: Option<bool>,
}

/// The state of a Windows optional feature (`Get-WindowsOptionalFeature`'s `State`, windows-commands.md §4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeatureState {
    /// Installed and active.
    Enabled,
    /// Not installed.
    Disabled,
    /// Not installed, and its files removed from the image (installing needs a source).
    DisabledWithPayloadRemoved,
    /// Installed; active after the next reboot.
    EnablePending,
    /// Being removed; gone after the next reboot.
    DisablePending,
    /// A state this operator does not know.
    Other(String),
}

impl FeatureState {
    /// The state as Windows names it.
    ///
    /// ```
    /// use wmco_node_config::FeatureState;
    /// assert_eq!(FeatureState::parse("EnablePending"), FeatureState::EnablePending);
    /// assert_eq!(FeatureState::parse("Staged").as_str(), "Staged");
    /// ```
    pub fn parse(text: &str) -> FeatureState {
        match text.trim() {
            "Enabled" => FeatureState::Enabled,
            "Disabled" => FeatureState::Disabled,
            "DisabledWithPayloadRemoved" => FeatureState::DisabledWithPayloadRemoved,
            "EnablePending" => FeatureState::EnablePending,
            "DisablePending" => FeatureState::DisablePending,
            other => FeatureState::Other(other.to_owned()),
        }
    }

    /// The state's name, as Windows prints it.
    pub fn as_str(&self) -> &str {
        match self {
            FeatureState::Enabled => "Enabled",
            FeatureState::Disabled => "Disabled",
            FeatureState::DisabledWithPayloadRemoved => "DisabledWithPayloadRemoved",
            FeatureState::EnablePending => "EnablePending",
            FeatureState::DisablePending => "DisablePending",
            FeatureState::Other(state) => state,
        }
    }
}

impl fmt::Display for FeatureState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a configuration does about the `Containers` feature of a host with `facts` before anything else:
/// [`ContainersStep::Install`] it (then reboot), [`ContainersStep::Reboot`] for an install still pending, or nothing
/// (`None`: enabled, or in a state the preflight refuses).
///
/// ```
/// use wmco_node_config::{ContainersStep, FeatureState, HostFacts, containers_to_enable};
/// let fresh = HostFacts { containers: Some(FeatureState::Disabled), ..HostFacts::default() };
/// assert_eq!(containers_to_enable(&fresh), Some(ContainersStep::Install));
/// let ready = HostFacts { containers: Some(FeatureState::Enabled), ..HostFacts::default() };
/// assert_eq!(containers_to_enable(&ready), None);
/// ```
pub fn containers_to_enable(facts: &HostFacts) -> Option<ContainersStep> {
    match facts.containers.as_ref()? {
        FeatureState::Disabled | FeatureState::DisabledWithPayloadRemoved => Some(ContainersStep::Install),
        FeatureState::EnablePending => Some(ContainersStep::Reboot),
        FeatureState::Enabled | FeatureState::DisablePending | FeatureState::Other(_) => None,
    }
}

/// See [`containers_to_enable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContainersStep {
    /// `Install-WindowsFeature -Name Containers`, then a reboot.
    Install,
    /// The feature is installed and waits for a reboot.
    Reboot,
}

#[derive(Deserialize)]
struct RawFacts {
    build: Option<serde_json::Value>,
    ubr: Option<serde_json::Value>,
    #[serde(rename = "freeBytes")]
    free_bytes: Option<serde_json::Value>,
    containers: Option<serde_json::Value>,
    docker: Option<String>,
    containerd: Option<String>,
    defender: Option<bool>,
    shell: Option<String>,
    boot: Option<serde_json::Value>,
    cni: Option<bool>,
}

impl HostFacts {
    /// Reads the facts from the identity command's output (its last line starting with `{`); absent or unreadable
    /// fields are `None`.
    ///
    /// ```
    /// use wmco_node_config::HostFacts;
    /// use wmco_node_config::FeatureState;
    /// let facts = HostFacts::parse(r#"{"hostname":"W","ip":"10.0.0.5","build":"20348","freeBytes":8589934592,"containers":"Enabled"}"#);
    /// assert_eq!((facts.build, facts.free_bytes), (Some(20348), Some(8 << 30)));
    /// assert_eq!(facts.containers, Some(FeatureState::Enabled));
    /// ```
    pub fn parse(stdout: &str) -> HostFacts {
        let raw = crate::identity::json_line(stdout).and_then(|json| serde_json::from_str::<RawFacts>(json).ok());
        let Some(raw) = raw else {
            return HostFacts::default();
        };
        HostFacts {
            build: raw.build.as_ref().and_then(number).and_then(|build| u32::try_from(build).ok()),
            ubr: raw.ubr.as_ref().and_then(number).and_then(|ubr| u32::try_from(ubr).ok()),
            free_bytes: raw.free_bytes.as_ref().and_then(number),
            containers: raw.containers.as_ref().and_then(feature_state),
            docker_service: raw.docker.filter(|path| !path.is_empty()),
            containerd_service: raw.containerd.filter(|path| !path.is_empty()),
            defender_running: raw.defender,
            default_shell: raw.shell.filter(|shell| !shell.trim().is_empty()),
            last_boot: raw.boot.as_ref().and_then(boot_text),
            cni_state: raw.cni,
        }
    }
}

/// A feature state printed as its name (the identity command's form), or as `true`/`false` (enabled or not).
fn feature_state(value: &serde_json::Value) -> Option<FeatureState> {
    match value {
        serde_json::Value::String(text) if !text.trim().is_empty() => Some(FeatureState::parse(text)),
        serde_json::Value::Bool(true) => Some(FeatureState::Enabled),
        serde_json::Value::Bool(false) => Some(FeatureState::Disabled),
        _ => None,
    }
}

/// The boot time as printed: a string as is, any other non-null value as its JSON text.
fn boot_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::Null => None,
        serde_json::Value::String(text) if text.trim().is_empty() => None,
        serde_json::Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// A number printed as a JSON number or as a string of digits (a registry `REG_SZ`).
fn number(value: &serde_json::Value) -> Option<u64> {
    match value {
        serde_json::Value::Number(number) => number.as_u64(),
        serde_json::Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// A preflight check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PreflightCheck {
    /// The host's name gives an RFC 1123 Node name and it has an IPv4 default route
    /// ([`HostIdentity::parse`](crate::HostIdentity::parse)).
    Identity,
    /// The Windows Server build is one of [`SUPPORTED_BUILDS`](crate::SUPPORTED_BUILDS), Windows Server 2022 at
    /// revision [`KB5012637_UBR`](crate::KB5012637_UBR) or later, and Windows Server 2019 only on a cluster with the
    /// default VXLAN port.
    WindowsBuild,
    /// The `Containers` feature is enabled, or can be installed by the configuration (which reboots the host once).
    ContainersFeature,
    /// `C:` has room for the payload and [`DISK_HEADROOM_BYTES`](crate::DISK_HEADROOM_BYTES).
    DiskSpace,
    /// No Docker service: the node's runtime is the payload's containerd, which does not share a host with Docker
    /// (both manage the host's HNS networks and containers). A containerd service already there is taken over.
    ContainerRuntime,
    /// OpenSSH's default shell is cmd.exe or PowerShell (`DefaultShell`), the two the operator renders for.
    DefaultShell,
}

impl PreflightCheck {
    /// The check's CamelCase name, as Events and conditions show it.
    pub fn name(self) -> &'static str {
        match self {
            PreflightCheck::Identity => "Identity",
            PreflightCheck::WindowsBuild => "WindowsBuild",
            PreflightCheck::ContainersFeature => "ContainersFeature",
            PreflightCheck::DiskSpace => "DiskSpace",
            PreflightCheck::ContainerRuntime => "ContainerRuntime",
            PreflightCheck::DefaultShell => "DefaultShell",
        }
    }
}

impl fmt::Display for PreflightCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed check and why, with what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreflightFailure {
    /// The check.
    pub check: PreflightCheck,
    /// What was found and what to do.
    pub message: String,
}

impl fmt::Display for PreflightFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.check, self.message)
    }
}

/// The failed [`PreflightCheck::DefaultShell`] of a host whose OpenSSH default shell is `shell`.
pub(crate) fn unsupported_shell(shell: &str) -> PreflightFailure {
    PreflightFailure {
        check: PreflightCheck::DefaultShell,
        message: format!(
            "OpenSSH's default shell is {shell}, which the operator does not drive: set HKLM\\SOFTWARE\\OpenSSH \
             DefaultShell to cmd.exe or powershell.exe, or remove the value"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_feature_state_and_the_boot_time_are_read_as_printed() {
        let facts = HostFacts::parse(r#"{"containers":"EnablePending","boot":"\/Date(1795000000000)\/"}"#);
        assert_eq!(facts.containers, Some(FeatureState::EnablePending));
        assert_eq!(facts.last_boot.as_deref(), Some("/Date(1795000000000)/"));
        let facts = HostFacts::parse(r#"{"containers":true,"boot":1795000000000}"#);
        assert_eq!(
            (facts.containers, facts.last_boot.as_deref()),
            (Some(FeatureState::Enabled), Some("1795000000000"))
        );
        assert_eq!(HostFacts::parse(r#"{"containers":null,"boot":null}"#), HostFacts::default());
    }

    #[test]
    fn facts_are_read_from_numbers_or_digit_strings_and_garbage_is_none() {
        let facts = HostFacts::parse(
            "noise\r\n{\"build\":17763,\"ubr\":6532,\"cni\":true,\"freeBytes\":\"1024\",\"containers\":false,\"docker\":null,\"containerd\":\"C:\\\\c.exe\",\"defender\":true}\r\n",
        );
        assert_eq!(
            facts,
            HostFacts {
                build: Some(17_763),
                ubr: Some(6532),
                free_bytes: Some(1024),
                containers: Some(FeatureState::Disabled),
                docker_service: None,
                containerd_service: Some(r"C:\c.exe".into()),
                defender_running: Some(true),
                default_shell: None,
                last_boot: None,
                cni_state: Some(true),
            }
        );
        assert_eq!(HostFacts::parse("{\"build\":\"x\",\"freeBytes\":-1}"), HostFacts::default());
        assert_eq!(HostFacts::parse("no json"), HostFacts::default());
    }
}
