//! Parsers for sc.exe output (windows-commands.md §1.3–1.5): the `query`/`queryex`/`start`/`stop` status block,
//! the `qc` configuration block, and error output.
//!
//! Labels, state names and messages are localized on non-English hosts, so the parsers never read words: fields are
//! taken by position, values by their leading number, and errors by the numeric code sc.exe prints (which is also
//! its exit code).

use serde::Serialize;

use crate::service::{ServiceState, StartType};

/// Why sc.exe output could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScParseError {
    /// The output has no `SERVICE_NAME:` line (or what stands for it in the host's language).
    #[error("sc.exe output has no service name line")]
    MissingServiceName,
    /// A field the layout requires is missing.
    #[error("sc.exe output lacks field {position} ({field})")]
    MissingField {
        /// The field's position among the field lines.
        position: usize,
        /// Its English label.
        field: &'static str,
    },
    /// A field's value does not start with the number it must hold.
    #[error("sc.exe field {field} has the value {value:?}, which is not a number of the expected form")]
    BadNumber {
        /// The field's English label.
        field: &'static str,
        /// The value.
        value: String,
    },
}

/// The status block of `sc.exe query`, `queryex`, `start` and `stop`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceStatus {
    /// The service name.
    pub name: String,
    /// Service type bits (TYPE, printed in hex: `10` = own process).
    pub service_type: u32,
    /// Current state.
    pub state: ServiceState,
    /// WIN32_EXIT_CODE (e.g. 1077 if it never ran, 1067 if it crashed).
    pub win32_exit_code: u32,
    /// SERVICE_EXIT_CODE.
    pub service_exit_code: u32,
    /// CHECKPOINT.
    pub checkpoint: u32,
    /// WAIT_HINT in milliseconds.
    pub wait_hint: u32,
    /// PID (queryex and start layouts only).
    pub process_id: Option<u32>,
}

/// The configuration block of `sc.exe qc`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceConfig {
    /// The service name.
    pub name: String,
    /// Service type bits.
    pub service_type: u32,
    /// Start type (`None` for a code this crate does not model).
    pub start: Option<StartType>,
    /// ERROR_CONTROL code (0 ignore, 1 normal, 2 severe, 3 critical).
    pub error_control: u32,
    /// BINARY_PATH_NAME, verbatim.
    pub binary_path: String,
    /// LOAD_ORDER_GROUP (empty if none).
    pub load_order_group: String,
    /// TAG.
    pub tag: u32,
    /// DISPLAY_NAME.
    pub display_name: String,
    /// DEPENDENCIES, one per line in the output.
    pub dependencies: Vec<String>,
    /// SERVICE_START_NAME (the account).
    pub start_name: String,
}

/// A Win32 error code sc.exe reported; the codes the operator acts on have names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ScErrorCode {
    /// 2: the service's binary does not exist.
    FileNotFound,
    /// 5: not elevated.
    AccessDenied,
    /// 1051: stop refused because running services depend on this one.
    DependentServicesRunning,
    /// 1053: the service did not connect to the SCM in time.
    ServiceRequestTimeout,
    /// 1056: start of a running service.
    AlreadyRunning,
    /// 1058: start of a disabled service.
    ServiceDisabled,
    /// 1060: no such service.
    ServiceDoesNotExist,
    /// 1061: a pending service cannot accept the control now.
    CannotAcceptControl,
    /// 1062: stop of a service that is not running.
    NotActive,
    /// 1068: a dependency failed to start.
    DependencyFailed,
    /// 1072: the service is marked for deletion.
    MarkedForDeletion,
    /// 1073: create of an existing service.
    ServiceExists,
    /// 1075: a dependency does not exist or is marked for deletion.
    DependencyDeleted,
    /// 1639: sc.exe did not understand its command line (usage text).
    InvalidCommandLine,
    /// Any other code.
    Other(u32),
}

impl ScErrorCode {
    /// The name for a numeric code.
    pub fn from_code(code: u32) -> ScErrorCode {
        match code {
            2 => ScErrorCode::FileNotFound,
            5 => ScErrorCode::AccessDenied,
            1051 => ScErrorCode::DependentServicesRunning,
            1053 => ScErrorCode::ServiceRequestTimeout,
            1056 => ScErrorCode::AlreadyRunning,
            1058 => ScErrorCode::ServiceDisabled,
            1060 => ScErrorCode::ServiceDoesNotExist,
            1061 => ScErrorCode::CannotAcceptControl,
            1062 => ScErrorCode::NotActive,
            1068 => ScErrorCode::DependencyFailed,
            1072 => ScErrorCode::MarkedForDeletion,
            1073 => ScErrorCode::ServiceExists,
            1075 => ScErrorCode::DependencyDeleted,
            1639 => ScErrorCode::InvalidCommandLine,
            other => ScErrorCode::Other(other),
        }
    }

    /// The numeric code.
    pub fn code(self) -> u32 {
        match self {
            ScErrorCode::FileNotFound => 2,
            ScErrorCode::AccessDenied => 5,
            ScErrorCode::DependentServicesRunning => 1051,
            ScErrorCode::ServiceRequestTimeout => 1053,
            ScErrorCode::AlreadyRunning => 1056,
            ScErrorCode::ServiceDisabled => 1058,
            ScErrorCode::ServiceDoesNotExist => 1060,
            ScErrorCode::CannotAcceptControl => 1061,
            ScErrorCode::NotActive => 1062,
            ScErrorCode::DependencyFailed => 1068,
            ScErrorCode::MarkedForDeletion => 1072,
            ScErrorCode::ServiceExists => 1073,
            ScErrorCode::DependencyDeleted => 1075,
            ScErrorCode::InvalidCommandLine => 1639,
            ScErrorCode::Other(code) => code,
        }
    }
}

/// A failed sc.exe call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScFailure {
    /// The error code.
    pub code: ScErrorCode,
    /// The API sc.exe named (`OpenService`, `ControlService`, ...); empty when only the exit code was available.
    pub api: String,
    /// The system message line, as printed (localized).
    pub message: String,
}

/// Interprets a finished sc.exe call: `None` for exit code 0, else the failure keyed on the printed code (falling
/// back to the exit code, e.g. for the usage text of 1639).
///
/// ```
/// use wmco_windows_services::{ScErrorCode, parse_sc_failure};
/// let stdout = "[SC] OpenService FAILED 1060:\r\n\r\nThe specified service does not exist as an installed service.\r\n\r\n";
/// let failure = parse_sc_failure(stdout, 1060).expect("a failure");
/// assert_eq!(failure.code, ScErrorCode::ServiceDoesNotExist);
/// assert_eq!(failure.api, "OpenService");
/// ```
pub fn parse_sc_failure(stdout: &str, exit_code: u32) -> Option<ScFailure> {
    if exit_code == 0 {
        return None;
    }
    let lines: Vec<&str> = lines(stdout).collect();
    let headline = lines.iter().position(|line| line.starts_with("[SC]") && failure_code(line).is_some());
    let Some(index) = headline else {
        return Some(ScFailure { code: ScErrorCode::from_code(exit_code), api: String::new(), message: String::new() });
    };
    let words: Vec<&str> = lines[index].split_whitespace().collect();
    let api = words.get(1..words.len().saturating_sub(2)).map(|middle| middle.join(" ")).unwrap_or_default();
    let message = lines[index + 1..].iter().find(|line| !line.trim().is_empty()).map(|line| line.trim().to_owned());
    Some(ScFailure {
        code: ScErrorCode::from_code(failure_code(lines[index]).unwrap_or(exit_code)),
        api,
        message: message.unwrap_or_default(),
    })
}

/// The number in a `[SC] <Api> <word> <code>:` line.
fn failure_code(line: &str) -> Option<u32> {
    line.trim_end().strip_suffix(':')?.split_whitespace().last()?.parse().ok()
}

/// Parses the status block printed by `sc.exe query`, `queryex`, `start` and `stop` (§1.4).
///
/// # Errors
/// [`ScParseError`] when the block is missing or a numeric field is malformed.
pub fn parse_sc_query(stdout: &str) -> Result<ServiceStatus, ScParseError> {
    let block = Block::parse(stdout)?;
    let state_code = leading_decimal("STATE", block.field(1, "STATE")?)?;
    let state = ServiceState::from_code(state_code)
        .ok_or_else(|| ScParseError::BadNumber { field: "STATE", value: state_code.to_string() })?;
    let process_id = match block.fields.get(6) {
        Some(value) => Some(leading_decimal("PID", value)?),
        None => None,
    };
    Ok(ServiceStatus {
        name: block.name.clone(),
        service_type: leading_hex("TYPE", block.field(0, "TYPE")?)?,
        state,
        win32_exit_code: leading_decimal("WIN32_EXIT_CODE", block.field(2, "WIN32_EXIT_CODE")?)?,
        service_exit_code: leading_decimal("SERVICE_EXIT_CODE", block.field(3, "SERVICE_EXIT_CODE")?)?,
        checkpoint: prefixed_hex("CHECKPOINT", block.field(4, "CHECKPOINT")?)?,
        wait_hint: prefixed_hex("WAIT_HINT", block.field(5, "WAIT_HINT")?)?,
        process_id,
    })
}

/// Parses the configuration block printed by `sc.exe qc` (§1.5).
///
/// ```
/// use wmco_windows_services::{StartType, parse_sc_qc};
/// let stdout = "[SC] QueryServiceConfig SUCCESS\r\n\r\nSERVICE_NAME: kubelet\r\n        TYPE               : 10  WIN32_OWN_PROCESS\r\n        START_TYPE         : 2   AUTO_START\r\n        ERROR_CONTROL      : 1   NORMAL\r\n        BINARY_PATH_NAME   : C:\\k\\kubelet.exe\r\n        LOAD_ORDER_GROUP   :\r\n        TAG                : 0\r\n        DISPLAY_NAME       : kubelet\r\n        DEPENDENCIES       : containerd\r\n        SERVICE_START_NAME : LocalSystem\r\n";
/// let config = parse_sc_qc(stdout)?;
/// assert_eq!(config.start, Some(StartType::Auto));
/// assert_eq!(config.dependencies, vec!["containerd".to_owned()]);
/// # Ok::<(), wmco_windows_services::ScParseError>(())
/// ```
///
/// # Errors
/// [`ScParseError`] when the block is missing or a numeric field is malformed.
pub fn parse_sc_qc(stdout: &str) -> Result<ServiceConfig, ScParseError> {
    let block = Block::parse(stdout)?;
    let start_value = block.field(1, "START_TYPE")?;
    let start_code = leading_decimal("START_TYPE", start_value)?;
    let delayed = start_value.contains('(');
    let first_dependency = block.field(7, "DEPENDENCIES")?;
    let dependencies = std::iter::once(first_dependency)
        .chain(block.continuations.iter().map(String::as_str))
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect();
    Ok(ServiceConfig {
        name: block.name.clone(),
        service_type: leading_hex("TYPE", block.field(0, "TYPE")?)?,
        start: StartType::from_code(start_code, delayed),
        error_control: leading_decimal("ERROR_CONTROL", block.field(2, "ERROR_CONTROL")?)?,
        binary_path: block.field(3, "BINARY_PATH_NAME")?.to_owned(),
        load_order_group: block.field(4, "LOAD_ORDER_GROUP")?.to_owned(),
        tag: leading_decimal("TAG", block.field(5, "TAG")?)?,
        display_name: block.field(6, "DISPLAY_NAME")?.to_owned(),
        dependencies,
        start_name: block.field(8, "SERVICE_START_NAME")?.to_owned(),
    })
}

/// One service block: its name, its field values by position, and the continuation values (`qc` dependencies).
struct Block {
    name: String,
    fields: Vec<String>,
    continuations: Vec<String>,
}

impl Block {
    /// Splits the output into the service-name line, field lines (`<label> : value`) and continuation lines
    /// (only spaces before the `:`). Lines without `:` (the status line, controls, blank lines) are skipped.
    fn parse(stdout: &str) -> Result<Block, ScParseError> {
        let mut name = None;
        let mut fields = Vec::new();
        let mut continuations = Vec::new();
        for line in lines(stdout) {
            if line.starts_with("[SC]") {
                continue;
            }
            let Some((label, value)) = line.split_once(':') else { continue };
            let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
            if name.is_none() {
                if !label.starts_with(' ') && !label.trim().is_empty() {
                    name = Some(value.trim().to_owned());
                }
                continue;
            }
            if label.trim().is_empty() {
                continuations.push(value.trim().to_owned());
            } else {
                fields.push(value);
            }
        }
        let name = name.ok_or(ScParseError::MissingServiceName)?;
        Ok(Block { name, fields, continuations })
    }

    fn field(&self, position: usize, label: &'static str) -> Result<&str, ScParseError> {
        self.fields.get(position).map(String::as_str).ok_or(ScParseError::MissingField { position, field: label })
    }
}

/// The lines of console output, without their CR.
fn lines(stdout: &str) -> impl Iterator<Item = &str> {
    stdout.split('\n').map(|line| line.strip_suffix('\r').unwrap_or(line))
}

fn first_word(value: &str) -> &str {
    value.split_whitespace().next().unwrap_or("")
}

fn leading_decimal(field: &'static str, value: &str) -> Result<u32, ScParseError> {
    first_word(value).parse().map_err(|_| ScParseError::BadNumber { field, value: value.to_owned() })
}

fn leading_hex(field: &'static str, value: &str) -> Result<u32, ScParseError> {
    u32::from_str_radix(first_word(value), 16).map_err(|_| ScParseError::BadNumber { field, value: value.to_owned() })
}

fn prefixed_hex(field: &'static str, value: &str) -> Result<u32, ScParseError> {
    first_word(value)
        .strip_prefix("0x")
        .and_then(|digits| u32::from_str_radix(digits, 16).ok())
        .ok_or_else(|| ScParseError::BadNumber { field, value: value.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Joins lines with CRLF, as sc.exe prints them.
    fn crlf(lines: &[&str]) -> String {
        lines.iter().map(|line| format!("{line}\r\n")).collect()
    }

    #[test]
    fn query_of_a_running_service() {
        let stdout = crlf(&[
            "",
            "SERVICE_NAME: kubelet",
            "        TYPE               : 10  WIN32_OWN_PROCESS",
            "        STATE              : 4  RUNNING",
            "                                (STOPPABLE, NOT_PAUSABLE, ACCEPTS_SHUTDOWN)",
            "        WIN32_EXIT_CODE    : 0  (0x0)",
            "        SERVICE_EXIT_CODE  : 0  (0x0)",
            "        CHECKPOINT         : 0x0",
            "        WAIT_HINT          : 0x0",
        ]);
        assert_eq!(
            parse_sc_query(&stdout).unwrap(),
            ServiceStatus {
                name: "kubelet".into(),
                service_type: 0x10,
                state: ServiceState::Running,
                win32_exit_code: 0,
                service_exit_code: 0,
                checkpoint: 0,
                wait_hint: 0,
                process_id: None,
            }
        );
    }

    #[test]
    fn start_output_in_queryex_layout_with_pid() {
        let stdout = crlf(&[
            "",
            "SERVICE_NAME: containerd",
            "        TYPE               : 10  WIN32_OWN_PROCESS",
            "        STATE              : 2  START_PENDING",
            "                                (NOT_STOPPABLE, NOT_PAUSABLE, IGNORES_SHUTDOWN)",
            "        WIN32_EXIT_CODE    : 0  (0x0)",
            "        SERVICE_EXIT_CODE  : 0  (0x0)",
            "        CHECKPOINT         : 0x0",
            "        WAIT_HINT          : 0x7d0",
            "        PID                : 3976",
            "        FLAGS              :",
        ]);
        let status = parse_sc_query(&stdout).unwrap();
        assert_eq!(status.state, ServiceState::StartPending);
        assert_eq!(status.wait_hint, 2000);
        assert_eq!(status.process_id, Some(3976));
    }

    #[test]
    fn query_of_a_stopped_crashed_service_without_controls_line() {
        let stdout = crlf(&[
            "",
            "SERVICE_NAME: kube-proxy",
            "        TYPE               : 110  WIN32_OWN_PROCESS (interactive)",
            "        STATE              : 1  STOPPED",
            "        WIN32_EXIT_CODE    : 1067  (0x42b)",
            "        SERVICE_EXIT_CODE  : 0  (0x0)",
            "        CHECKPOINT         : 0x0",
            "        WAIT_HINT          : 0x0",
        ]);
        let status = parse_sc_query(&stdout).unwrap();
        assert_eq!((status.service_type, status.state, status.win32_exit_code), (0x110, ServiceState::Stopped, 1067));
    }

    #[test]
    fn query_parsing_ignores_localized_labels_and_state_names() {
        let stdout = crlf(&[
            "",
            "SERVICE_NAME: kubelet",
            "        종류               : 10  WIN32_OWN_PROCESS",
            "        상태               : 4  РАБОТАЕТ",
            "        WIN32_EXIT_CODE    : 0  (0x0)",
            "        SERVICE_EXIT_CODE  : 0  (0x0)",
            "        CHECKPOINT         : 0x0",
            "        WAIT_HINT          : 0x0",
        ]);
        assert_eq!(parse_sc_query(&stdout).unwrap().state, ServiceState::Running);
    }

    #[test]
    fn query_errors_name_what_is_wrong() {
        assert_eq!(parse_sc_query("\r\n"), Err(ScParseError::MissingServiceName));
        let truncated = crlf(&["", "SERVICE_NAME: x", "        TYPE               : 10  WIN32_OWN_PROCESS"]);
        assert_eq!(parse_sc_query(&truncated), Err(ScParseError::MissingField { position: 1, field: "STATE" }));
        let bad_state = crlf(&[
            "",
            "SERVICE_NAME: x",
            "        TYPE               : 10  WIN32_OWN_PROCESS",
            "        STATE              : 9  ODD",
            "        WIN32_EXIT_CODE    : 0  (0x0)",
            "        SERVICE_EXIT_CODE  : 0  (0x0)",
            "        CHECKPOINT         : 0x0",
            "        WAIT_HINT          : 0x0",
        ]);
        assert_eq!(parse_sc_query(&bad_state), Err(ScParseError::BadNumber { field: "STATE", value: "9".into() }));
    }

    fn qc_output(start: &str, dependencies: &[&str]) -> String {
        let mut lines = vec![
            "[SC] QueryServiceConfig SUCCESS".to_owned(),
            String::new(),
            "SERVICE_NAME: kubelet".to_owned(),
            "        TYPE               : 10  WIN32_OWN_PROCESS".to_owned(),
            format!("        START_TYPE         : {start}"),
            "        ERROR_CONTROL      : 1   NORMAL".to_owned(),
            r#"        BINARY_PATH_NAME   : "C:\Program Files\k\kubelet.exe" --config-file=C:\k\kubelet.conf"#
                .to_owned(),
            "        LOAD_ORDER_GROUP   :".to_owned(),
            "        TAG                : 0".to_owned(),
            "        DISPLAY_NAME       : kubelet: the node agent".to_owned(),
        ];
        match dependencies.split_first() {
            None => lines.push("        DEPENDENCIES       :".to_owned()),
            Some((first, rest)) => {
                lines.push(format!("        DEPENDENCIES       : {first}"));
                lines.extend(rest.iter().map(|name| format!("                           : {name}")));
            }
        }
        lines.push(r"        SERVICE_START_NAME : NT AUTHORITY\LocalService".to_owned());
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        crlf(&refs)
    }

    #[test]
    fn qc_with_two_dependencies() {
        assert_eq!(
            parse_sc_qc(&qc_output("2   AUTO_START", &["containerd", "hns"])).unwrap(),
            ServiceConfig {
                name: "kubelet".into(),
                service_type: 0x10,
                start: Some(StartType::Auto),
                error_control: 1,
                binary_path: r#""C:\Program Files\k\kubelet.exe" --config-file=C:\k\kubelet.conf"#.into(),
                load_order_group: String::new(),
                tag: 0,
                display_name: "kubelet: the node agent".into(),
                dependencies: vec!["containerd".into(), "hns".into()],
                start_name: r"NT AUTHORITY\LocalService".into(),
            }
        );
    }

    #[test]
    fn qc_start_types_and_empty_dependencies() {
        let delayed = parse_sc_qc(&qc_output("2   AUTO_START  (DELAYED)", &[])).unwrap();
        assert_eq!(delayed.start, Some(StartType::DelayedAuto));
        assert_eq!(delayed.dependencies, Vec::<String>::new());
        assert_eq!(parse_sc_qc(&qc_output("3   DEMAND_START", &[])).unwrap().start, Some(StartType::Demand));
        assert_eq!(parse_sc_qc(&qc_output("4   DISABLED", &[])).unwrap().start, Some(StartType::Disabled));
        assert_eq!(
            parse_sc_qc(&qc_output("x   AUTO_START", &[])),
            Err(ScParseError::BadNumber { field: "START_TYPE", value: "x   AUTO_START".into() })
        );
    }

    #[test]
    fn failures_are_keyed_on_the_printed_code() {
        let cases: [(&str, u32, ScErrorCode, &str, &str); 8] = [
            (
                "[SC] EnumQueryServicesStatus:OpenService FAILED 1060:",
                1060,
                ScErrorCode::ServiceDoesNotExist,
                "EnumQueryServicesStatus:OpenService",
                "The specified service does not exist as an installed service.",
            ),
            (
                "[SC] StartService: OpenService FAILED 1060:",
                1060,
                ScErrorCode::ServiceDoesNotExist,
                "StartService: OpenService",
                "The specified service does not exist as an installed service.",
            ),
            (
                "[SC] StartService FAILED 1056:",
                1056,
                ScErrorCode::AlreadyRunning,
                "StartService",
                "An instance of the service is already running.",
            ),
            (
                "[SC] ControlService FAILED 1062:",
                1062,
                ScErrorCode::NotActive,
                "ControlService",
                "The service has not been started.",
            ),
            (
                "[SC] ControlService FAILED 1051:",
                1051,
                ScErrorCode::DependentServicesRunning,
                "ControlService",
                "A stop control has been sent to a service that other running services are dependent on.",
            ),
            (
                "[SC] ControlService FAILED 1061:",
                1061,
                ScErrorCode::CannotAcceptControl,
                "ControlService",
                "The service cannot accept control messages at this time.",
            ),
            (
                "[SC] ChangeServiceConfig2 (delayed autostart flag) FAILED 1072:",
                1072,
                ScErrorCode::MarkedForDeletion,
                "ChangeServiceConfig2 (delayed autostart flag)",
                "The specified service has been marked for deletion.",
            ),
            (
                "[SC] CreateService FAILED 1073:",
                1073,
                ScErrorCode::ServiceExists,
                "CreateService",
                "The specified service already exists.",
            ),
        ];
        for (headline, exit_code, code, api, message) in cases {
            let stdout = crlf(&[headline, "", message, ""]);
            assert_eq!(
                parse_sc_failure(&stdout, exit_code),
                Some(ScFailure { code, api: api.into(), message: message.into() }),
                "{headline}"
            );
        }
    }

    #[test]
    fn localized_failures_still_yield_the_code() {
        let stdout =
            crlf(&["[SC] OpenService FEHLER 1060:", "", "Der angegebene Dienst ist kein installierter Dienst.", ""]);
        let failure = parse_sc_failure(&stdout, 1060).unwrap();
        assert_eq!(failure.code, ScErrorCode::ServiceDoesNotExist);
        assert_eq!(failure.code.code(), 1060);
    }

    #[test]
    fn success_usage_text_and_unknown_codes() {
        assert_eq!(parse_sc_failure("[SC] DeleteService SUCCESS\r\n", 0), None);
        let usage = "DESCRIPTION:\r\n        Creates a service entry.\r\nUSAGE:\r\n        sc <server> create [service name]\r\n";
        assert_eq!(
            parse_sc_failure(usage, 1639),
            Some(ScFailure { code: ScErrorCode::InvalidCommandLine, api: String::new(), message: String::new() })
        );
        assert_eq!(ScErrorCode::from_code(1234), ScErrorCode::Other(1234));
        assert_eq!(ScErrorCode::Other(1234).code(), 1234);
        for code in [2, 5, 1051, 1053, 1056, 1058, 1060, 1061, 1062, 1068, 1072, 1073, 1075, 1639] {
            assert_eq!(ScErrorCode::from_code(code).code(), code);
            assert_ne!(ScErrorCode::from_code(code), ScErrorCode::Other(code));
        }
    }
}
