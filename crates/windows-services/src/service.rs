//! The typed desired state of one Windows service ([`ServiceSpec`]) and its parts: a validated [`ServiceName`], the
//! command line the SCM stores as ImagePath ([`ServiceCommand`]), the start type, and the recovery settings with
//! their units in the types ([`Millis`] for action delays, seconds for the reset period).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use crate::host::EnvVarName;
use crate::path::WinPath;
use crate::quote::{quote_argument, quote_program};

/// Longest service name the SCM accepts (windows-commands.md §1.1).
const MAX_SERVICE_NAME_CHARS: usize = 256;

/// A Windows service name, validated: 1–256 characters, none of `/ \ , ` or space (SCM rules, §1.1), no control
/// characters and no PowerShell wildcard characters `* ? [ ]` (the state probe reads the service's registry key by
/// a wildcard-interpreting path).
///
/// Names compare, order and hash case-insensitively, as the SCM compares them, and keep their case for display.
///
/// ```
/// use wmco_windows_services::ServiceName;
/// let kubelet = ServiceName::new("kubelet")?;
/// assert_eq!(kubelet, ServiceName::new("Kubelet")?);
/// assert!(ServiceName::new("kube let").is_err());
/// # Ok::<(), wmco_windows_services::ServiceNameError>(())
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ServiceName(String);

/// Why a text is not a usable service name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceNameError {
    /// Empty or longer than 256 characters.
    #[error("service name {name:?} must be 1 to 256 characters long")]
    Length {
        /// The text given.
        name: String,
    },
    /// Holds a character the SCM or the state probe cannot take.
    #[error(
        "service name {name:?} contains {character:?}; service names exclude / \\ , space, * ? [ ] and control characters"
    )]
    Character {
        /// The text given.
        name: String,
        /// The refused character.
        character: char,
    },
}

impl ServiceName {
    /// Validates a service name.
    ///
    /// # Errors
    /// [`ServiceNameError`] naming the rule broken.
    pub fn new(name: &str) -> Result<ServiceName, ServiceNameError> {
        let length = name.encode_utf16().count();
        if length == 0 || length > MAX_SERVICE_NAME_CHARS {
            return Err(ServiceNameError::Length { name: name.to_owned() });
        }
        let refused = |c: &char| matches!(c, '/' | '\\' | ',' | ' ' | '*' | '?' | '[' | ']') || c.is_control();
        if let Some(character) = name.chars().find(refused) {
            return Err(ServiceNameError::Character { name: name.to_owned(), character });
        }
        Ok(ServiceName(name.to_owned()))
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The case-folded key names are compared by.
    fn key(&self) -> String {
        self.0.to_lowercase()
    }
}

impl PartialEq for ServiceName {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for ServiceName {}

impl PartialOrd for ServiceName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ServiceName {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl Hash for ServiceName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl fmt::Display for ServiceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for ServiceName {
    type Err = ServiceNameError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ServiceName::new(name)
    }
}

impl TryFrom<String> for ServiceName {
    type Error = ServiceNameError;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        ServiceName::new(&name)
    }
}

impl From<ServiceName> for String {
    fn from(name: ServiceName) -> String {
        name.0
    }
}

/// When the SCM starts a service (`sc.exe ... start= <value>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StartType {
    /// Loaded by the boot loader (drivers only); code 0.
    Boot,
    /// Loaded at kernel initialisation (drivers only); code 1.
    System,
    /// Started at boot; code 2.
    Auto,
    /// Started at boot, a short while after the other automatic services; code 2 plus the delayed flag.
    DelayedAuto,
    /// Started on request; code 3.
    Demand,
    /// Never started; code 4.
    Disabled,
}

impl StartType {
    /// The `start=` value sc.exe accepts.
    pub fn sc_value(self) -> &'static str {
        match self {
            StartType::Boot => "boot",
            StartType::System => "system",
            StartType::Auto => "auto",
            StartType::DelayedAuto => "delayed-auto",
            StartType::Demand => "demand",
            StartType::Disabled => "disabled",
        }
    }

    /// Builds a start type from the SCM's numeric code (registry `Start`, `sc qc` START_TYPE) and the delayed flag.
    pub fn from_code(code: u32, delayed: bool) -> Option<StartType> {
        match (code, delayed) {
            (0, _) => Some(StartType::Boot),
            (1, _) => Some(StartType::System),
            (2, false) => Some(StartType::Auto),
            (2, true) => Some(StartType::DelayedAuto),
            (3, _) => Some(StartType::Demand),
            (4, _) => Some(StartType::Disabled),
            _ => None,
        }
    }
}

/// The run state of a service (SERVICE_STATUS `dwCurrentState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceState {
    /// 1.
    Stopped,
    /// 2.
    StartPending,
    /// 3.
    StopPending,
    /// 4.
    Running,
    /// 5.
    ContinuePending,
    /// 6.
    PausePending,
    /// 7.
    Paused,
}

impl ServiceState {
    /// The state for a numeric code (sc.exe STATE, Get-Service `Status`).
    pub fn from_code(code: u32) -> Option<ServiceState> {
        match code {
            1 => Some(ServiceState::Stopped),
            2 => Some(ServiceState::StartPending),
            3 => Some(ServiceState::StopPending),
            4 => Some(ServiceState::Running),
            5 => Some(ServiceState::ContinuePending),
            6 => Some(ServiceState::PausePending),
            7 => Some(ServiceState::Paused),
            _ => None,
        }
    }

    /// The state for a `Win32_Service.State` string (`Running`, `Start Pending`, ...), which WMI reports in English.
    pub fn from_cim(state: &str) -> Option<ServiceState> {
        match state {
            "Stopped" => Some(ServiceState::Stopped),
            "Start Pending" => Some(ServiceState::StartPending),
            "Stop Pending" => Some(ServiceState::StopPending),
            "Running" => Some(ServiceState::Running),
            "Continue Pending" => Some(ServiceState::ContinuePending),
            "Pause Pending" => Some(ServiceState::PausePending),
            "Paused" => Some(ServiceState::Paused),
            _ => None,
        }
    }

    /// Whether a stop request makes sense: the process is up and not already stopping.
    pub fn is_stoppable(self) -> bool {
        !matches!(self, ServiceState::Stopped | ServiceState::StopPending)
    }
}

/// A duration in milliseconds: the unit sc.exe's `actions=` delays are written in (the Go operator passed seconds
/// there by mistake).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Millis(pub u32);

impl Millis {
    /// `seconds` seconds, in milliseconds (saturating).
    ///
    /// ```
    /// use wmco_windows_services::Millis;
    /// assert_eq!(Millis::from_seconds(10), Millis(10_000));
    /// ```
    pub const fn from_seconds(seconds: u32) -> Millis {
        Millis(seconds.saturating_mul(1000))
    }
}

/// After how long without failures the SCM resets the failure counter (`reset=`, in seconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResetPeriod {
    /// This many failure-free seconds.
    Seconds(u32),
    /// Never reset (`INFINITE`).
    Infinite,
}

impl ResetPeriod {
    /// The `reset=` value sc.exe accepts.
    pub fn sc_value(self) -> String {
        match self {
            ResetPeriod::Seconds(seconds) => seconds.to_string(),
            ResetPeriod::Infinite => "INFINITE".to_owned(),
        }
    }

    /// The value as the SCM stores it (`u32::MAX` for infinite).
    pub fn from_stored(seconds: u32) -> ResetPeriod {
        if seconds == u32::MAX { ResetPeriod::Infinite } else { ResetPeriod::Seconds(seconds) }
    }
}

/// What the SCM does on a failure (SC_ACTION_TYPE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureActionKind {
    /// Nothing (code 0).
    None,
    /// Restart the service (code 1).
    Restart,
    /// Reboot the computer (code 2).
    Reboot,
}

impl FailureActionKind {
    /// The action name in sc.exe's `actions=` list (empty for none).
    fn sc_value(self) -> &'static str {
        match self {
            FailureActionKind::None => "",
            FailureActionKind::Restart => "restart",
            FailureActionKind::Reboot => "reboot",
        }
    }

    /// The kind for an SC_ACTION_TYPE code (3, "run a command", is not modelled).
    pub fn from_code(code: u32) -> Option<FailureActionKind> {
        match code {
            0 => Some(FailureActionKind::None),
            1 => Some(FailureActionKind::Restart),
            2 => Some(FailureActionKind::Reboot),
            _ => None,
        }
    }
}

/// One entry of the failure-action list: what to do on the N-th failure, after which delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FailureAction {
    /// What to do.
    pub kind: FailureActionKind,
    /// How long to wait first.
    pub delay: Millis,
}

/// The recovery settings of a service (`sc.exe failure`): the N-th failure runs action N; past the end the last
/// action repeats.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FailureActions {
    /// When the failure counter returns to zero.
    pub reset: ResetPeriod,
    /// The actions, first failure first.
    pub actions: Vec<FailureAction>,
}

impl FailureActions {
    /// Restart after each of `delays`, resetting after `reset_seconds` without failure.
    ///
    /// ```
    /// use wmco_windows_services::{FailureActions, Millis};
    /// let recovery = FailureActions::restart_after(300, &[Millis::from_seconds(10), Millis::from_seconds(30)]);
    /// assert_eq!(recovery.sc_actions_value(), "restart/10000/restart/30000");
    /// ```
    pub fn restart_after(reset_seconds: u32, delays: &[Millis]) -> FailureActions {
        FailureActions {
            reset: ResetPeriod::Seconds(reset_seconds),
            actions: delays.iter().map(|&delay| FailureAction { kind: FailureActionKind::Restart, delay }).collect(),
        }
    }

    /// The `actions=` value: `type/delay` pairs joined by `/`, delays in milliseconds.
    pub fn sc_actions_value(&self) -> String {
        self.actions
            .iter()
            .map(|action| format!("{}/{}", action.kind.sc_value(), action.delay.0))
            .collect::<Vec<_>>()
            .join("/")
    }
}

/// The command line a service runs: an executable and its arguments, rendered into the ImagePath string the SCM
/// stores and splits with the MSVC rules.
///
/// ```
/// use wmco_windows_services::{ServiceCommand, WinPath};
/// let command = ServiceCommand::new(WinPath::parse(r"C:\Program Files\x\x.exe")?, ["--flag", "a b"]);
/// assert_eq!(command.image_path(), r#""C:\Program Files\x\x.exe" --flag "a b""#);
/// # Ok::<(), wmco_windows_services::PathError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServiceCommand {
    /// The program.
    pub executable: WinPath,
    /// Its arguments, each one argv element.
    pub arguments: Vec<String>,
}

impl ServiceCommand {
    /// A command line from a program and its arguments.
    pub fn new<I, S>(executable: WinPath, arguments: I) -> ServiceCommand
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ServiceCommand { executable, arguments: arguments.into_iter().map(Into::into).collect() }
    }

    /// The ImagePath text: the program (quoted when it holds spaces) and the MSVC-quoted arguments.
    pub fn image_path(&self) -> String {
        let mut line = quote_program(self.executable.as_str());
        for argument in &self.arguments {
            line.push(' ');
            line.push_str(&quote_argument(argument));
        }
        line
    }
}

/// The desired state of one service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceSpec {
    /// The service name.
    pub name: ServiceName,
    /// The display name (at most 256 characters).
    pub display_name: String,
    /// The description.
    pub description: String,
    /// What the service runs.
    pub command: ServiceCommand,
    /// When it starts. Services other than [`StartType::Disabled`] are kept running.
    pub start: StartType,
    /// Services that must run before this one (sc.exe `depend=`).
    pub dependencies: Vec<ServiceName>,
    /// Recovery settings.
    pub recovery: FailureActions,
    /// Whether failure actions also fire when the service stops with a non-zero exit code (`failureflag`).
    pub failure_flag: bool,
    /// Further binaries the running service holds open besides its executable (e.g. the program a wrapper
    /// starts); replacing any of them requires stopping the service first.
    pub extra_binaries: Vec<WinPath>,
    /// Variables added to the service's process environment at each start: the service's own `Environment`
    /// registry value (REG_MULTI_SZ of `NAME=value`, windows-commands.md §4.1). The service control manager reads
    /// it at every start, so a change takes a restart of this service, never a reboot (machine variables reach
    /// services only after a reboot).
    #[serde(default)]
    pub environment: BTreeMap<EnvVarName, String>,
}

impl ServiceSpec {
    /// [`ServiceSpec::environment`] as the registry value holds it: `NAME=value` strings in name order.
    pub fn environment_entries(&self) -> Vec<String> {
        self.environment.iter().map(|(name, value)| format!("{name}={value}")).collect()
    }

    /// Every binary the running service holds open: its executable, then [`ServiceSpec::extra_binaries`].
    pub fn binaries(&self) -> impl Iterator<Item = &WinPath> {
        std::iter::once(&self.command.executable).chain(&self.extra_binaries)
    }

    /// Whether the service is meant to be running.
    pub fn should_run(&self) -> bool {
        self.start != StartType::Disabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names_follow_scm_rules_and_compare_case_insensitively() {
        assert_eq!(ServiceName::new("hybrid-overlay-node").unwrap().as_str(), "hybrid-overlay-node");
        assert_eq!(ServiceName::new("windows_exporter").unwrap().to_string(), "windows_exporter");
        assert_eq!(ServiceName::new("Kubelet").unwrap(), ServiceName::new("kubelet").unwrap());
        assert_eq!(ServiceName::new("").unwrap_err(), ServiceNameError::Length { name: String::new() });
        assert_eq!(ServiceName::new(&"x".repeat(257)).unwrap_err(), ServiceNameError::Length { name: "x".repeat(257) });
        assert!(ServiceName::new(&"x".repeat(256)).is_ok());
        for (name, character) in [("a b", ' '), ("a/b", '/'), (r"a\b", '\\'), ("a,b", ','), ("a*", '*'), ("a[1]", '[')]
        {
            assert_eq!(
                ServiceName::new(name).unwrap_err(),
                ServiceNameError::Character { name: name.into(), character },
                "{name}"
            );
        }
    }

    #[test]
    fn service_names_round_trip_through_serde_with_validation() {
        let name: ServiceName = serde_json::from_str(r#""csi-proxy""#).unwrap();
        assert_eq!(serde_json::to_string(&name).unwrap(), r#""csi-proxy""#);
        assert!(serde_json::from_str::<ServiceName>(r#""a b""#).is_err());
    }

    #[test]
    fn start_types_map_to_sc_values_and_codes() {
        assert_eq!(StartType::DelayedAuto.sc_value(), "delayed-auto");
        assert_eq!(StartType::Demand.sc_value(), "demand");
        assert_eq!(StartType::from_code(2, true), Some(StartType::DelayedAuto));
        assert_eq!(StartType::from_code(2, false), Some(StartType::Auto));
        assert_eq!(StartType::from_code(4, false), Some(StartType::Disabled));
        assert_eq!(StartType::from_code(5, false), None);
    }

    #[test]
    fn service_states_from_codes_and_cim_strings() {
        assert_eq!(ServiceState::from_code(1), Some(ServiceState::Stopped));
        assert_eq!(ServiceState::from_code(4), Some(ServiceState::Running));
        assert_eq!(ServiceState::from_code(7), Some(ServiceState::Paused));
        assert_eq!(ServiceState::from_code(0), None);
        assert_eq!(ServiceState::from_cim("Start Pending"), Some(ServiceState::StartPending));
        assert_eq!(ServiceState::from_cim("Unknown"), None);
        assert!(ServiceState::Running.is_stoppable());
        assert!(ServiceState::StartPending.is_stoppable());
        assert!(!ServiceState::StopPending.is_stoppable());
        assert!(!ServiceState::Stopped.is_stoppable());
    }

    #[test]
    fn failure_actions_render_delays_in_milliseconds() {
        let recovery = FailureActions {
            reset: ResetPeriod::Infinite,
            actions: vec![
                FailureAction { kind: FailureActionKind::Restart, delay: Millis(1500) },
                FailureAction { kind: FailureActionKind::None, delay: Millis(0) },
                FailureAction { kind: FailureActionKind::Reboot, delay: Millis::from_seconds(60) },
            ],
        };
        assert_eq!(recovery.sc_actions_value(), "restart/1500//0/reboot/60000");
        assert_eq!(recovery.reset.sc_value(), "INFINITE");
        assert_eq!(ResetPeriod::Seconds(300).sc_value(), "300");
        assert_eq!(ResetPeriod::from_stored(u32::MAX), ResetPeriod::Infinite);
        assert_eq!(Millis::from_seconds(u32::MAX), Millis(u32::MAX));
    }

    #[test]
    fn image_path_quotes_program_and_arguments_as_needed() {
        let command = ServiceCommand::new(
            WinPath::parse(r"C:\k\kubelet.exe").unwrap(),
            ["--config=C:\\k\\kubelet.conf", "", r#"say "hi""#, r"C:\dir x\"],
        );
        assert_eq!(command.image_path(), r#"C:\k\kubelet.exe --config=C:\k\kubelet.conf "" "say \"hi\"" "C:\dir x\\""#);
    }
}
