//! Typed desired state of a Windows host, the sc.exe / PowerShell command builders and their output parsers.
//!
//! This crate performs no IO of any kind: it turns typed values into command-line strings and command output back
//! into typed values. The flow a caller drives over SSH:
//!
//! 1. Describe what must hold: a [`HostState`] (for a node: [`node_host_state`], plus the payload files).
//! 2. Read the host in one round trip: [`ProbeRequest::for_state`], run its [`ProbeRequest::script`], parse the
//!    output with [`ProbeRequest::parse_output`] into an [`ObservedHost`].
//! 3. Decide: [`plan`] gives the ordered [`Step`]s.
//! 4. Act: each [`Step::commands`] renders the command lines ([`RenderedCommand`]) to run, in order; sc.exe failures
//!    are read with [`parse_sc_failure`]. A [`CommandChain`] sends many of them as one line and tells which failed.
//!
//! ```
//! use std::net::Ipv4Addr;
//! use wmco_windows_services::{
//!     LogRotation, NodeInputs, ServiceStage, Platform, ProbeRequest, Step, Verbosity, node_host_state, plan,
//! };
//!
//! let inputs = NodeInputs {
//!     node_ip: Ipv4Addr::new(203, 0, 113, 7),
//!     node_name: "winworker-1".into(),
//!     api_server_url: "https://api-int.example.com:6443".into(),
//!     platform: Platform::None,
//!     verbosity: Verbosity::Normal,
//!     log_rotation: LogRotation::default(),
//!     hybrid_overlay_vxlan_port: None,
//!     cloud_provider: None,
//!     cloud_config: None,
//!     proxy: Default::default(),
//! };
//! let desired = node_host_state(&inputs, ServiceStage::Bootstrap)?;
//! let request = ProbeRequest::for_state(&desired);
//! let probe = request.script().render()?; // run `probe.line` (after uploading `probe.script_file`, if any)
//! assert!(probe.line.starts_with("powershell.exe -NoLogo"));
//! // What a fresh host answers: nothing exists yet.
//! let dirs = vec!["false"; request.directories.len()].join(",");
//! let acls = vec!["null"; request.directory_acls.len()].join(",");
//! let stdout = format!(
//!     r#"{{"services":[{{"key":false}},{{"key":false}},{{"key":false}}],"files":[],"dirs":[{dirs}],"acls":[{acls}],"env":[null,null,null],"firewall":[{{"exists":false}}],"registry":[],"defender":{{"running":true,"exclusions":[null]}}}}"#
//! );
//! let observed = request.parse_output(&stdout)?;
//! let steps = plan(&desired, &observed)?;
//! assert!(matches!(steps[0], Step::EnsureDirectories(_)));
//! assert!(matches!(steps[1], Step::RestrictDirectories { .. }), "C:\\k and the others for SYSTEM and Administrators");
//! assert!(steps.contains(&Step::AddDefenderExclusion(r"C:\k\containerd\containerd.exe".parse()?)));
//! assert_eq!(steps.last(), Some(&Step::StartService("kubelet".parse()?)));
//! for step in &steps {
//!     for command in step.commands()? {
//!         assert!(command.line.len() <= wmco_windows_services::MAX_COMMAND_LINE_CHARS);
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod access;
mod certutil;
mod chain;
mod command;
mod host;
mod host_state;
mod node;
mod path;
mod plan;
mod powershell;
mod probe;
mod probe_identity;
mod probe_reboot;
mod quote;
mod sc;
mod sc_output;
mod service;
mod trust;

pub use access::{
    ADMINISTRATORS_SID, SYSTEM_SID, grants_only_system_and_administrators, has_explicit_entry_for_others,
};
pub use certutil::FileHashes;
pub use chain::{CHAIN_MARKER, ChainFailure, ChainReadError, ChainReport, CommandChain};
pub use command::{CommandError, DefaultShell, MAX_COMMAND_LINE_CHARS, RenderedCommand, ScriptFile, Shell};
pub use host::{
    Direction, EnvVarName, FirewallRule, HostValueError, Protocol, RegistryData, RegistryKey, RegistryValue,
    RegistryValueName, RotatedFiles, Sha256Hex,
};
pub use host_state::HostState;
pub use node::{
    CLOUD_NODE_MANAGER_KUBECONFIG, CLOUD_NODE_MANAGER_SERVICE, DEFENDER_EXCLUDED_PROGRAMS, FIREWALL_RULES,
    KEPT_CLIENT_CERTIFICATES, LEGACY_DAEMON_SERVICE, LogRotation, NodeError, NodeInputs, NodeProxy, NodeService,
    PRIVATE_DIRECTORIES, PROXY_SERVICES, PROXY_VARIABLES, SERVICE_LOG_DIRECTORIES, ServiceStage, Verbosity,
    WINDOWS_EXPORTER_SERVICE, defender_excluded_programs, go_duration, hybrid_overlay_client_certificates,
    node_host_state, node_services,
};
pub use path::{MAX_PATH_CHARS, PathError, WinPath};
pub use plan::{PlanError, Reconfiguration, Step, plan};
pub use powershell::{
    POWERSHELL_PREAMBLE, POWERSHELL_PREFIX, PowerShellScript, SCRIPT_DIRECTORY, decode_encoded_command, encode_command,
};
pub use probe::{
    ObservedDefender, ObservedFirewallRule, ObservedHost, ObservedService, ProbeError, ProbeRequest,
    decode_failure_actions,
};
pub use probe_identity::ObservedIdentity;
pub use probe_reboot::RebootMarker;
pub use sc::{ConfigChanges, ScCommand};
pub use sc_output::{
    ScErrorCode, ScFailure, ScParseError, ServiceConfig, ServiceStatus, parse_sc_failure, parse_sc_qc, parse_sc_query,
};
pub use service::{
    FailureAction, FailureActionKind, FailureActions, Millis, ResetPeriod, ServiceCommand, ServiceName,
    ServiceNameError, ServiceSpec, ServiceState, StartType,
};
pub use trust::{ObservedRoots, ROOT_STORE, RootSync, Thumbprint, TrustedRoots};
pub use wmco_vocabulary::Platform;
