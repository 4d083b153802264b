//! What the `sc_output` and `state_probe` fuzz targets check on each input: `fuzz/fuzz_targets/sc_output.rs` and
//! `fuzz/fuzz_targets/state_probe.rs` include this file, and `tests/fuzz_replay.rs` runs the committed corpora
//! through it, so both check the same thing. Inputs are a host's stdout, decoded as the SSH transport decodes it
//! (UTF-8, invalid bytes replaced).
#![allow(dead_code, reason = "each fuzz target uses one of the checks")]

use std::net::Ipv4Addr;

use wmco_windows_services::{
    EnvVarName, HostState, LogRotation, NodeInputs, Platform, ProbeRequest, RegistryData, RegistryKey, RegistryValue,
    RegistryValueName, ScErrorCode, ServiceName, ServiceStage, Sha256Hex, Verbosity, WinPath, decode_failure_actions,
    node_host_state, parse_sc_failure, parse_sc_qc, parse_sc_query, plan,
};

/// Exit codes each input is read with by [`parse_sc_failure`]: success, a generic failure, and "no such service".
const EXIT_CODES: [u32; 3] = [0, 1, 1060];

/// `sc_output`: the `query`/`queryex` status parser, the `qc` configuration parser and the failure parser. Returns
/// whether the status or the configuration parser accepted the input.
pub fn sc_output(data: &[u8]) -> bool {
    let stdout = String::from_utf8_lossy(data);
    let status = parse_sc_query(&stdout);
    if let Ok(status) = &status {
        assert!(!status.name.contains('\n'), "{status:?}");
    }
    let config = parse_sc_qc(&stdout);
    if let Ok(config) = &config {
        assert!(!config.name.contains('\n'), "{config:?}");
        assert!(config.dependencies.iter().all(|dependency| !dependency.is_empty()), "{config:?}");
    }
    for exit_code in EXIT_CODES {
        let failure = parse_sc_failure(&stdout, exit_code);
        assert_eq!(failure.is_none(), exit_code == 0, "{failure:?}");
        if let Some(failure) = failure {
            assert_eq!(ScErrorCode::from_code(failure.code.code()), failure.code);
            assert!(!failure.message.contains('\n'), "{failure:?}");
        }
    }
    status.is_ok() || config.is_ok()
}

/// `state_probe`: the batched probe's output parser for three requests (one item per section, where PowerShell
/// 5.1 prints bare values; two per section; a node's bootstrap state, whose observation then goes through `plan`
/// and the rendering of every step), and the `FailureActions` decoder on the raw bytes. Returns whether the output
/// parsed for one of the requests.
pub fn state_probe(data: &[u8]) -> bool {
    let stdout = String::from_utf8_lossy(data);
    let mut parsed = false;
    for request in [single_request(), pair_request()] {
        if let Ok(observed) = request.parse_output(&stdout) {
            assert_complete(&request, &observed);
            parsed = true;
        }
    }
    let desired = node_state();
    let request = ProbeRequest::for_state(&desired);
    if let Ok(observed) = request.parse_output(&stdout) {
        assert_complete(&request, &observed);
        parsed = true;
        if let Ok(steps) = plan(&desired, &observed) {
            for step in &steps {
                let _ = step.commands();
            }
        }
    }
    if let Some(actions) = decode_failure_actions(data) {
        assert_eq!(data.len(), 20 + 8 * actions.actions.len());
    }
    parsed
}

/// Every requested item has an observation (services only when present).
fn assert_complete(request: &ProbeRequest, observed: &wmco_windows_services::ObservedHost) {
    assert!(observed.services.keys().all(|name| request.services.contains(name)));
    assert!(observed.files.keys().eq(request.files.iter()));
    assert!(observed.directories.keys().eq(request.directories.iter()));
    assert!(observed.machine_env.keys().eq(request.machine_env.iter()));
    assert!(observed.firewall_rules.keys().eq(request.firewall_rules.iter()));
    assert!(observed.registry_values.keys().eq(request.registry_values.iter()));
}

fn service(name: &str) -> ServiceName {
    ServiceName::new(name).expect("valid service name")
}

fn path(text: &str) -> WinPath {
    WinPath::parse(text).expect("valid path")
}

fn env(name: &str) -> EnvVarName {
    EnvVarName::new(name).expect("valid variable name")
}

fn registry_value(key: &str, name: &str) -> (RegistryKey, RegistryValueName) {
    (RegistryKey::new(key).expect("valid key"), RegistryValueName::new(name).expect("valid value name"))
}

/// One item per section.
fn single_request() -> ProbeRequest {
    let mut request = ProbeRequest::default();
    request.services.insert(service("kubelet"));
    request.files.insert(path(r"C:\k\kubelet.exe"));
    request.directories.insert(path(r"C:\k"));
    request.machine_env.insert(env("HTTP_PROXY"));
    request.firewall_rules.insert("ContainerLogsPort".to_owned());
    request.registry_values.insert(registry_value(r"HKLM\SOFTWARE\OpenSSH", "DefaultShell"));
    request
}

/// Two items per section.
fn pair_request() -> ProbeRequest {
    let mut request = single_request();
    request.services.insert(service("containerd"));
    request.files.insert(path(r"C:\k\containerd\containerd.exe"));
    request.directories.insert(path(r"C:\var\log\kubelet"));
    request.machine_env.insert(env("NO_PROXY"));
    request.firewall_rules.insert("KubeletPort".to_owned());
    request
        .registry_values
        .insert(registry_value(r"HKLM\SYSTEM\CurrentControlSet\Services\hns\State", "EnableCompartmentNamespace"));
    request
}

/// A node's bootstrap state plus one file, one environment variable and one registry value, so every probe
/// section feeds `plan`.
fn node_state() -> HostState {
    let inputs = NodeInputs {
        node_ip: Ipv4Addr::new(203, 0, 113, 7),
        node_name: "winworker-1".into(),
        api_server_url: "https://api-int.example.com:6443".into(),
        platform: Platform::None,
        verbosity: Verbosity::Normal,
        log_rotation: LogRotation::default(),
        hybrid_overlay_vxlan_port: None,
        cloud_provider: None,
        cloud_config: None,
        proxy: Default::default(),
    };
    let mut state = node_host_state(&inputs, ServiceStage::Bootstrap).expect("valid node inputs");
    let digest = Sha256Hex::new(&"ab".repeat(32)).expect("valid digest");
    state.files.insert(path(r"C:\k\kubelet.exe"), digest);
    state.machine_env.insert(env("HTTP_PROXY"), Some("http://proxy.example:3128".into()));
    let (key, name) = registry_value(r"HKLM\SYSTEM\CurrentControlSet\Services\hns\State", "EnableCompartmentNamespace");
    state.registry_values.insert(RegistryValue { key, name, data: RegistryData::Dword(1) });
    state
}
