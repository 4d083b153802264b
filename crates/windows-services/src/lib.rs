//! Typed desired state of a Windows host, the sc.exe / PowerShell command builders and their output parsers.
//!
//! This crate performs no IO of any kind: it turns typed values into command-line strings and command output back
//! into typed values. Start with [`WinPath`].

mod command;
mod host;
mod node;
mod path;
mod plan;
mod powershell;
mod probe;
mod quote;
mod sc;
mod sc_output;
mod service;

pub use command::{CommandError, MAX_COMMAND_LINE_CHARS, RenderedCommand, ScriptFile, Shell};
pub use host::{
    Direction, EnvVarName, FirewallRule, HostState, HostValueError, Protocol, RegistryData, RegistryKey, RegistryValue,
    RegistryValueName, Sha256Hex,
};
pub use node::{
    LEGACY_DAEMON_SERVICE, LogRotation, NodeError, NodeInputs, NodeService, Phase, Platform, Verbosity,
    node_host_state, node_services,
};
pub use path::{MAX_PATH_CHARS, PathError, WinPath};
pub use plan::{PlanError, Reconfiguration, Step, plan};
pub use powershell::{POWERSHELL_PREFIX, PowerShellScript, SCRIPT_DIRECTORY, decode_encoded_command, encode_command};
pub use probe::{
    ObservedFirewallRule, ObservedHost, ObservedService, ProbeError, ProbeRequest, decode_failure_actions,
};
pub use sc::{ConfigChanges, ScCommand};
pub use sc_output::{
    ScErrorCode, ScFailure, ScParseError, ServiceConfig, ServiceStatus, parse_sc_failure, parse_sc_qc, parse_sc_query,
};
pub use service::{
    FailureAction, FailureActionKind, FailureActions, Millis, ResetPeriod, ServiceCommand, ServiceName,
    ServiceNameError, ServiceSpec, ServiceState, StartType,
};
