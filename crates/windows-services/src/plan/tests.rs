//! Tests of `plan`: one per step kind, the ordering rules, and the error cases.

use super::*;
use crate::host::{Protocol, RegistryData, RegistryKey, RegistryValueName, Sha256Hex};
use crate::service::{Millis, ServiceCommand, ServiceState, StartType};

fn name(text: &str) -> ServiceName {
    ServiceName::new(text).unwrap()
}

fn path(text: &str) -> WinPath {
    WinPath::parse(text).unwrap()
}

fn digest(byte: char) -> Sha256Hex {
    Sha256Hex::new(&byte.to_string().repeat(64)).unwrap()
}

/// A service running `C:\k\<name>.exe` with the given dependencies.
fn spec(service: &str, dependencies: &[&str]) -> ServiceSpec {
    ServiceSpec {
        name: name(service),
        display_name: service.to_owned(),
        description: format!("OpenShift managed {service}"),
        command: ServiceCommand::new(path(&format!(r"C:\k\{service}.exe")), ["--windows-service"]),
        start: StartType::Auto,
        dependencies: dependencies.iter().map(|dependency| name(dependency)).collect(),
        recovery: FailureActions::restart_after(300, &[Millis(10_000)]),
        failure_flag: true,
        extra_binaries: vec![],
        environment: Default::default(),
    }
}

/// The node chain containerd <- kubelet <- hybrid-overlay-node <- kube-proxy, plus independent csi-proxy.
fn node_specs() -> Vec<ServiceSpec> {
    vec![
        spec("kube-proxy", &["hybrid-overlay-node"]),
        spec("kubelet", &["containerd"]),
        spec("csi-proxy", &[]),
        spec("containerd", &[]),
        spec("hybrid-overlay-node", &["kubelet"]),
    ]
}

/// What the probe reports for a service installed exactly as `spec` says, in `state`.
fn installed(spec: &ServiceSpec, state: ServiceState) -> ObservedService {
    ObservedService {
        state: Some(state),
        process_id: Some(if state == ServiceState::Stopped { 0 } else { 100 }),
        image_path: Some(spec.command.image_path()),
        display_name: Some(spec.display_name.clone()),
        description: Some(spec.description.clone()),
        start: Some(spec.start),
        dependencies: spec.dependencies.clone(),
        recovery: Some(spec.recovery.clone()),
        failure_flag: spec.failure_flag,
        marked_for_deletion: false,
        environment: spec.environment_entries(),
    }
}

fn converged(desired: &HostState) -> ObservedHost {
    let mut observed = ObservedHost::default();
    for spec in &desired.services {
        observed.services.insert(spec.name.clone(), installed(spec, ServiceState::Running));
    }
    for (file, hash) in &desired.files {
        observed.files.insert(file.clone(), Some(hash.clone()));
    }
    for directory in &desired.directories {
        observed.directories.insert(directory.clone(), true);
    }
    for (variable, value) in &desired.machine_env {
        observed.machine_env.insert(variable.clone(), value.clone());
    }
    for rule in &desired.firewall_rules {
        let found = ObservedFirewallRule { direction: Some(1), enabled: Some(1), action: Some(2) };
        observed.firewall_rules.insert(rule.name.clone(), Some(found));
    }
    for value in &desired.registry_values {
        observed.registry_values.insert((value.key.clone(), value.name.clone()), Some(value.data.clone()));
    }
    observed
}

fn node_state() -> HostState {
    HostState { services: node_specs(), ..HostState::default() }
}

fn stop(service: &str) -> Step {
    Step::StopService(name(service))
}

fn start(service: &str) -> Step {
    Step::StartService(name(service))
}

fn create(spec: &ServiceSpec) -> Step {
    Step::CreateService(Box::new(spec.clone()))
}

fn spec_named<'a>(specs: &'a [ServiceSpec], service: &str) -> &'a ServiceSpec {
    specs.iter().find(|spec| spec.name.as_str() == service).unwrap()
}

#[test]
fn an_empty_host_gets_everything_created_then_started_in_dependency_order() {
    let desired = node_state();
    let specs = &desired.services;
    let steps = plan(&desired, &ObservedHost::default()).unwrap();
    let expected = vec![
        create(spec_named(specs, "containerd")),
        create(spec_named(specs, "csi-proxy")),
        create(spec_named(specs, "kubelet")),
        create(spec_named(specs, "hybrid-overlay-node")),
        create(spec_named(specs, "kube-proxy")),
        start("containerd"),
        start("csi-proxy"),
        start("kubelet"),
        start("hybrid-overlay-node"),
        start("kube-proxy"),
    ];
    assert_eq!(steps, expected);
}

#[test]
fn a_converged_host_needs_no_step() {
    let mut desired = node_state();
    desired.directories.insert(path(r"C:\k"));
    desired.files.insert(path(r"C:\k\kubelet.exe"), digest('a'));
    desired.machine_env.insert(EnvVarName::new("HTTP_PROXY").unwrap(), None);
    desired
        .firewall_rules
        .insert(FirewallRule::new("ContainerLogsPort", Direction::Inbound, Protocol::Tcp, 10250).unwrap());
    assert_eq!(plan(&desired, &converged(&desired)).unwrap(), Vec::<Step>::new());
}

#[test]
fn replacing_a_binary_stops_its_service_and_running_dependents_first_and_restarts_them() {
    let mut desired = node_state();
    let kubelet_binary = path(r"C:\k\kubelet.exe");
    desired.files.insert(kubelet_binary.clone(), digest('b'));
    desired.files.insert(path(r"C:\k\kubelet.conf"), digest('c'));
    let mut observed = converged(&desired);
    observed.files.insert(kubelet_binary.clone(), Some(digest('a')));
    let steps = plan(&desired, &observed).unwrap();
    assert_eq!(
        steps,
        vec![
            stop("kube-proxy"),
            stop("hybrid-overlay-node"),
            stop("kubelet"),
            Step::ReplaceFiles(vec![kubelet_binary]),
            start("kubelet"),
            start("hybrid-overlay-node"),
            start("kube-proxy"),
        ]
    );
}

#[test]
fn a_missing_file_is_replaced_and_an_extra_binary_counts_as_held_open() {
    let mut desired = node_state();
    let shim = path(r"C:\k\containerd\containerd-shim-runhcs-v1.exe");
    desired.services.iter_mut().filter(|spec| spec.name.as_str() == "containerd").for_each(|spec| {
        spec.extra_binaries.push(shim.clone());
    });
    desired.files.insert(shim.clone(), digest('d'));
    let mut observed = converged(&desired);
    observed.files.insert(shim.clone(), None);
    // A stopped dependent is not stopped again; being desired running, it is started after its dependencies.
    observed.services.get_mut(&name("kube-proxy")).unwrap().state = Some(ServiceState::Stopped);
    let steps = plan(&desired, &observed).unwrap();
    assert_eq!(
        steps,
        vec![
            stop("hybrid-overlay-node"),
            stop("kubelet"),
            stop("containerd"),
            Step::ReplaceFiles(vec![shim]),
            start("containerd"),
            start("kubelet"),
            start("hybrid-overlay-node"),
            start("kube-proxy"),
        ]
    );
}

#[test]
fn description_recovery_and_flag_changes_reconfigure_without_a_restart() {
    let desired = node_state();
    let mut observed = converged(&desired);
    let csi = observed.services.get_mut(&name("csi-proxy")).unwrap();
    csi.description = None;
    csi.recovery = None;
    csi.failure_flag = false;
    csi.start = Some(StartType::Demand);
    csi.display_name = Some("old".into());
    let steps = plan(&desired, &observed).unwrap();
    let expected = Reconfiguration {
        name: name("csi-proxy"),
        config: ConfigChanges {
            start: Some(StartType::Auto),
            display_name: Some("csi-proxy".into()),
            ..ConfigChanges::default()
        },
        description: Some("OpenShift managed csi-proxy".into()),
        recovery: Some(FailureActions::restart_after(300, &[Millis(10_000)])),
        failure_flag: Some(true),
        environment: None,
    };
    assert_eq!(steps, vec![Step::ReconfigureService(Box::new(expected.clone()))]);
    let lines: Vec<String> = steps[0].commands().unwrap().into_iter().map(|command| command.line).collect();
    assert_eq!(
        lines,
        [
            "sc.exe config csi-proxy start= auto DisplayName= csi-proxy",
            r#"sc.exe description csi-proxy "OpenShift managed csi-proxy""#,
            "sc.exe failure csi-proxy reset= 300 actions= restart/10000",
            "sc.exe failureflag csi-proxy 1",
        ]
    );
}

/// hybrid-overlay-node reconfigured with `change` while it and its running dependent kube-proxy are stopped.
fn hybrid_overlay_restarted_with(change: Reconfiguration) -> Vec<Step> {
    vec![
        stop("kube-proxy"),
        stop("hybrid-overlay-node"),
        Step::ReconfigureService(Box::new(change)),
        start("hybrid-overlay-node"),
        start("kube-proxy"),
    ]
}

#[test]
fn a_changed_command_line_restarts_the_service_and_its_running_dependents() {
    let mut desired = node_state();
    desired.services.iter_mut().filter(|spec| spec.name.as_str() == "hybrid-overlay-node").for_each(|spec| {
        spec.command.arguments.push("--loglevel".into());
        spec.command.arguments.push("5".into());
    });
    let mut observed = converged(&desired);
    let old = spec("hybrid-overlay-node", &["kubelet"]).command.image_path();
    observed.services.get_mut(&name("hybrid-overlay-node")).unwrap().image_path = Some(old);
    let steps = plan(&desired, &observed).unwrap();
    let new_command = spec_named(&desired.services, "hybrid-overlay-node").command.clone();
    assert_eq!(
        steps,
        hybrid_overlay_restarted_with(Reconfiguration {
            name: name("hybrid-overlay-node"),
            config: ConfigChanges { command: Some(new_command), ..ConfigChanges::default() },
            description: None,
            recovery: None,
            failure_flag: None,
            environment: None,
        })
    );
    assert_eq!(
        steps[2].commands().unwrap()[0].line,
        r#"sc.exe config hybrid-overlay-node binPath= "C:\k\hybrid-overlay-node.exe --windows-service --loglevel 5""#
    );
}

/// The script of a `powershell.exe ... -EncodedCommand <base64>` line.
fn script_of(line: &str) -> String {
    crate::powershell::decode_encoded_command(line.rsplit(' ').next().unwrap()).unwrap()
}

fn proxy_environment() -> BTreeMap<EnvVarName, String> {
    BTreeMap::from([
        (EnvVarName::new("HTTPS_PROXY").unwrap(), "http://proxy.example:3128".to_owned()),
        (EnvVarName::new("NO_PROXY").unwrap(), ".svc,10.0.0.0/8".to_owned()),
    ])
}

#[test]
fn a_changed_own_environment_is_written_and_restarts_the_service_and_its_running_dependents() {
    let mut desired = node_state();
    let observed = converged(&desired);
    desired.services.iter_mut().filter(|spec| spec.name.as_str() == "hybrid-overlay-node").for_each(|spec| {
        spec.environment = proxy_environment();
    });
    let steps = plan(&desired, &observed).unwrap();
    let entries = vec!["HTTPS_PROXY=http://proxy.example:3128".to_owned(), "NO_PROXY=.svc,10.0.0.0/8".to_owned()];
    assert_eq!(
        steps,
        hybrid_overlay_restarted_with(Reconfiguration {
            name: name("hybrid-overlay-node"),
            config: ConfigChanges::default(),
            description: None,
            recovery: None,
            failure_flag: None,
            environment: Some(entries),
        })
    );
    let commands = steps[2].commands().unwrap();
    assert_eq!(commands.len(), 1, "only the environment changes: no sc.exe config");
    let script = script_of(&commands[0].line);
    assert!(
        script.contains(
            "New-ItemProperty -Path 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\hybrid-overlay-node' -Name \
             Environment -PropertyType MultiString -Value @('HTTPS_PROXY=http://proxy.example:3128', \
             'NO_PROXY=.svc,10.0.0.0/8') -Force | Out-Null"
        ),
        "{script}"
    );
    // Once written, the same environment is converged.
    assert!(plan(&desired, &converged(&desired)).unwrap().is_empty());
}

#[test]
fn an_own_environment_no_longer_wanted_is_removed_with_a_restart() {
    let desired = node_state();
    let mut observed = converged(&desired);
    observed.services.get_mut(&name("csi-proxy")).unwrap().environment = vec!["HTTP_PROXY=http://old:3128".into()];
    let steps = plan(&desired, &observed).unwrap();
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert_eq!(steps[0], stop("csi-proxy"));
    let Step::ReconfigureService(change) = &steps[1] else { panic!("{steps:?}") };
    assert_eq!(change.environment, Some(Vec::new()));
    let script = script_of(&steps[1].commands().unwrap()[0].line);
    assert!(
        script.contains(
            "Remove-ItemProperty -Path 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\csi-proxy' -Name Environment"
        ),
        "{script}"
    );
    assert_eq!(steps[2], start("csi-proxy"));
}

#[test]
fn a_new_service_gets_its_own_environment_after_sc_create() {
    let mut containerd = spec("containerd", &[]);
    containerd.environment = proxy_environment();
    let desired = HostState { services: vec![containerd.clone()], ..HostState::default() };
    let steps = plan(&desired, &ObservedHost::default()).unwrap();
    assert_eq!(steps, vec![create(&containerd), start("containerd")]);
    let commands = steps[0].commands().unwrap();
    assert!(commands[0].line.starts_with("sc.exe create containerd"), "{}", commands[0].line);
    let last = script_of(&commands.last().unwrap().line);
    assert!(last.contains("-Name Environment -PropertyType MultiString"), "{last}");
}

#[test]
fn changed_dependencies_are_written_and_need_a_restart() {
    let desired = node_state();
    let mut observed = converged(&desired);
    observed.services.get_mut(&name("kubelet")).unwrap().dependencies = vec![name("containerd"), name("hns")];
    observed.services.get_mut(&name("kube-proxy")).unwrap().state = Some(ServiceState::Stopped);
    let steps = plan(&desired, &observed).unwrap();
    assert_eq!(steps[0], stop("hybrid-overlay-node"));
    assert_eq!(steps[1], stop("kubelet"));
    assert_eq!(steps[2].commands().unwrap()[0].line, "sc.exe config kubelet depend= containerd");
    assert_eq!(&steps[3..], &[start("kubelet"), start("hybrid-overlay-node"), start("kube-proxy")]);
}

#[test]
fn stopped_services_are_started_and_pending_ones_left_alone() {
    let desired = node_state();
    let mut observed = converged(&desired);
    observed.services.get_mut(&name("csi-proxy")).unwrap().state = Some(ServiceState::Stopped);
    observed.services.get_mut(&name("kubelet")).unwrap().state = Some(ServiceState::StartPending);
    observed.services.get_mut(&name("containerd")).unwrap().state = None;
    assert_eq!(plan(&desired, &observed).unwrap(), vec![start("containerd"), start("csi-proxy")]);
}

#[test]
fn a_disabled_service_is_stopped_and_not_started() {
    let mut desired = node_state();
    desired.services.iter_mut().filter(|spec| spec.name.as_str() == "csi-proxy").for_each(|spec| {
        spec.start = StartType::Disabled;
    });
    let mut observed = converged(&desired);
    observed.services.get_mut(&name("csi-proxy")).unwrap().start = Some(StartType::Auto);
    let steps = plan(&desired, &observed).unwrap();
    assert_eq!(steps[0], stop("csi-proxy"));
    assert_eq!(steps[1].commands().unwrap()[0].line, "sc.exe config csi-proxy start= disabled");
    assert_eq!(steps.len(), 2);
}

#[test]
fn removed_services_are_stopped_and_deleted_dependents_first() {
    let desired = HostState {
        services: vec![spec("containerd", &[])],
        removed_services: [name("windows-instance-config-daemon"), name("old-agent"), name("absent")].into(),
        ..HostState::default()
    };
    let mut observed = converged(&desired);
    let agent = spec("old-agent", &["windows-instance-config-daemon"]);
    let wicd = spec("windows-instance-config-daemon", &[]);
    observed.services.insert(name("old-agent"), installed(&agent, ServiceState::Running));
    observed.services.insert(name("windows-instance-config-daemon"), installed(&wicd, ServiceState::Stopped));
    assert_eq!(
        plan(&desired, &observed).unwrap(),
        vec![
            stop("old-agent"),
            Step::DeleteService(name("old-agent")),
            Step::DeleteService(name("windows-instance-config-daemon")),
        ]
    );
}

#[test]
fn a_removed_service_already_marked_for_deletion_is_only_stopped() {
    let desired = HostState { removed_services: [name("wicd")].into(), ..HostState::default() };
    let mut observed = ObservedHost::default();
    let mut wicd = installed(&spec("wicd", &[]), ServiceState::Running);
    wicd.marked_for_deletion = true;
    observed.services.insert(name("wicd"), wicd.clone());
    assert_eq!(plan(&desired, &observed).unwrap(), vec![stop("wicd")]);
    wicd.state = Some(ServiceState::Stopped);
    observed.services.insert(name("wicd"), wicd);
    assert_eq!(plan(&desired, &observed).unwrap(), Vec::<Step>::new());
}

#[test]
fn host_settings_are_planned_only_when_they_differ() {
    let mut desired = node_state();
    desired.directories = [path(r"C:\k"), path(r"C:\k\cni"), path(r"C:\var\log")].into();
    desired.machine_env.insert(EnvVarName::new("HTTP_PROXY").unwrap(), Some("http://p:3128".into()));
    desired.machine_env.insert(EnvVarName::new("NO_PROXY").unwrap(), None);
    let logs = FirewallRule::new("ContainerLogsPort", Direction::Inbound, Protocol::Tcp, 10250).unwrap();
    let exporter = FirewallRule::new("WindowsExporter", Direction::Inbound, Protocol::Tcp, 9182).unwrap();
    desired.firewall_rules = [logs.clone(), exporter.clone()].into();
    let shell = RegistryValue {
        key: RegistryKey::new(r"HKLM\SOFTWARE\OpenSSH").unwrap(),
        name: RegistryValueName::new("DefaultShell").unwrap(),
        data: RegistryData::String(r"C:\Windows\System32\cmd.exe".into()),
    };
    desired.registry_values.insert(shell.clone());
    let mut observed = converged(&desired);
    observed.directories.insert(path(r"C:\k\cni"), false);
    observed.directories.remove(&path(r"C:\var\log"));
    observed.machine_env.insert(EnvVarName::new("NO_PROXY").unwrap(), Some("x".into()));
    observed.firewall_rules.insert("ContainerLogsPort".into(), None);
    observed.firewall_rules.insert(
        "WindowsExporter".into(),
        Some(ObservedFirewallRule { direction: Some(1), enabled: Some(2), action: Some(2) }),
    );
    observed.registry_values.insert((shell.key.clone(), shell.name.clone()), Some(RegistryData::Dword(1)));
    assert_eq!(
        plan(&desired, &observed).unwrap(),
        vec![
            Step::EnsureDirectories(vec![path(r"C:\k\cni"), path(r"C:\var\log")]),
            Step::SetMachineEnv([(EnvVarName::new("NO_PROXY").unwrap(), None)].into()),
            Step::SetRegistryValue(shell),
            Step::CreateFirewallRule(logs),
            Step::RemoveFirewallRule("WindowsExporter".into()),
            Step::CreateFirewallRule(exporter),
        ]
    );
}

#[test]
fn directories_come_before_the_files_and_host_settings_just_before_the_services() {
    let mut desired = graph_state(1, &[]);
    desired.directories.insert(path(r"C:\k"));
    desired.files.insert(path(r"C:\k\s0.exe"), digest('a'));
    let rule = FirewallRule::new("s0", Direction::Inbound, Protocol::Tcp, 10250).unwrap();
    desired.firewall_rules.insert(rule.clone());
    desired.machine_env.insert(EnvVarName::new("NO_PROXY").unwrap(), Some("x".into()));
    let mut observed = converged(&desired);
    observed.services.clear();
    observed.directories.clear();
    observed.files.clear();
    observed.machine_env.clear();
    observed.firewall_rules.clear();
    assert_eq!(
        plan(&desired, &observed).unwrap(),
        vec![
            Step::EnsureDirectories(vec![path(r"C:\k")]),
            Step::ReplaceFiles(vec![path(r"C:\k\s0.exe")]),
            Step::SetMachineEnv([(EnvVarName::new("NO_PROXY").unwrap(), Some("x".into()))].into()),
            Step::CreateFirewallRule(rule),
            create(&desired.services[0]),
            start("s0"),
        ]
    );
}

#[test]
fn an_empty_environment_value_means_absent() {
    let mut desired = HostState::default();
    desired.machine_env.insert(EnvVarName::new("NO_PROXY").unwrap(), Some(String::new()));
    let mut observed = ObservedHost::default();
    observed.machine_env.insert(EnvVarName::new("NO_PROXY").unwrap(), None);
    assert_eq!(plan(&desired, &observed).unwrap(), Vec::<Step>::new());
    observed.machine_env.insert(EnvVarName::new("NO_PROXY").unwrap(), Some("x".into()));
    assert_eq!(
        plan(&desired, &observed).unwrap(),
        vec![Step::SetMachineEnv([(EnvVarName::new("NO_PROXY").unwrap(), Some(String::new()))].into())]
    );
}

#[test]
fn a_desired_dependency_cycle_is_reported_whole() {
    let desired = HostState {
        services: vec![spec("a", &["b"]), spec("b", &["c"]), spec("c", &["a"]), spec("d", &["a"])],
        ..HostState::default()
    };
    assert_eq!(
        plan(&desired, &ObservedHost::default()),
        Err(PlanError::DependencyCycle { cycle: vec![name("a"), name("b"), name("c"), name("a")] })
    );
    let error = plan(&desired, &ObservedHost::default()).unwrap_err();
    assert_eq!(error.to_string(), "desired services form a dependency cycle: a -> b -> c -> a");
    let reached_late = HostState {
        services: vec![spec("a", &["x"]), spec("x", &["y"]), spec("y", &["z"]), spec("z", &["x"])],
        ..HostState::default()
    };
    assert_eq!(
        plan(&reached_late, &ObservedHost::default()),
        Err(PlanError::DependencyCycle { cycle: vec![name("x"), name("y"), name("z"), name("x")] })
    );
    let itself = HostState { services: vec![spec("a", &["a"])], ..HostState::default() };
    assert_eq!(
        plan(&itself, &ObservedHost::default()),
        Err(PlanError::DependencyCycle { cycle: vec![name("a"), name("a")] })
    );
}

#[test]
fn an_observed_dependency_cycle_among_services_to_stop_is_reported() {
    let desired = HostState { removed_services: [name("p"), name("q")].into(), ..HostState::default() };
    let mut observed = ObservedHost::default();
    observed.services.insert(name("p"), installed(&spec("p", &["q"]), ServiceState::Running));
    observed.services.insert(name("q"), installed(&spec("q", &["p"]), ServiceState::Running));
    assert_eq!(
        plan(&desired, &observed),
        Err(PlanError::ObservedDependencyCycle { cycle: vec![name("p"), name("q"), name("p")] })
    );
}

#[test]
fn inconsistent_desired_states_are_refused() {
    let duplicate = HostState { services: vec![spec("a", &[]), spec("A", &[])], ..HostState::default() };
    assert_eq!(plan(&duplicate, &ObservedHost::default()), Err(PlanError::DuplicateService { name: name("a") }));
    let both =
        HostState { services: vec![spec("a", &[])], removed_services: [name("a")].into(), ..HostState::default() };
    assert_eq!(plan(&both, &ObservedHost::default()), Err(PlanError::DesiredAndRemoved { name: name("a") }));
    let on_removed = HostState {
        services: vec![spec("a", &["old"])],
        removed_services: [name("old")].into(),
        ..HostState::default()
    };
    assert_eq!(
        plan(&on_removed, &ObservedHost::default()),
        Err(PlanError::DependsOnRemoved { service: name("a"), dependency: name("old") })
    );
    let desired = node_state();
    let mut observed = converged(&desired);
    observed.services.get_mut(&name("kubelet")).unwrap().marked_for_deletion = true;
    assert_eq!(plan(&desired, &observed), Err(PlanError::MarkedForDeletion { service: name("kubelet") }));
}

#[test]
fn plans_are_deterministic_whatever_the_input_order() {
    let mut reversed = node_state();
    reversed.services.reverse();
    let forward = plan(&node_state(), &ObservedHost::default()).unwrap();
    assert_eq!(plan(&reversed, &ObservedHost::default()).unwrap(), forward);
}

#[test]
fn every_step_renders_its_command_lines() {
    let kubelet = spec("kubelet", &["containerd"]);
    let lines = |step: Step| -> Vec<String> { step.commands().unwrap().into_iter().map(|c| c.line).collect() };
    assert_eq!(
        lines(create(&kubelet)),
        [
            r#"sc.exe create kubelet binPath= "C:\k\kubelet.exe --windows-service" start= auto depend= containerd DisplayName= kubelet"#,
            r#"sc.exe description kubelet "OpenShift managed kubelet""#,
            "sc.exe failure kubelet reset= 300 actions= restart/10000",
            "sc.exe failureflag kubelet 1",
        ]
    );
    let bare = ServiceSpec {
        description: String::new(),
        recovery: FailureActions::restart_after(0, &[]),
        failure_flag: false,
        ..kubelet
    };
    assert_eq!(lines(create(&bare)).len(), 1);
    assert_eq!(lines(stop("kubelet")), ["sc.exe stop kubelet"]);
    assert_eq!(lines(start("kubelet")), ["sc.exe start kubelet"]);
    assert_eq!(lines(Step::DeleteService(name("kubelet"))), ["sc.exe delete kubelet"]);
    assert_eq!(lines(Step::ReplaceFiles(vec![path(r"C:\k\kubelet.exe")])), Vec::<String>::new());
    for step in [
        Step::EnsureDirectories(vec![path(r"C:\k")]),
        Step::SetMachineEnv([(EnvVarName::new("X").unwrap(), None)].into()),
        Step::RemoveFirewallRule("r".into()),
        Step::CreateFirewallRule(FirewallRule::new("r", Direction::Outbound, Protocol::Udp, 53).unwrap()),
        Step::SetRegistryValue(RegistryValue {
            key: RegistryKey::new(r"HKLM\SOFTWARE\x").unwrap(),
            name: RegistryValueName::new("v").unwrap(),
            data: RegistryData::Dword(1),
        }),
    ] {
        let commands = step.commands().unwrap();
        assert_eq!(commands.len(), 1, "{step}");
        assert_eq!(commands[0].shell, crate::command::Shell::PowerShell, "{step}");
    }
    assert_eq!(stop("kubelet").to_string(), "stop service kubelet");
    assert_eq!(Step::ReplaceFiles(vec![]).to_string(), "replace 0 files");
}

/// Builds a desired state of services `s0..sN` with the given dependency edges (indices).
fn graph_state(count: usize, edges: &[(usize, usize)]) -> HostState {
    let names: Vec<String> = (0..count).map(|index| format!("s{index}")).collect();
    let services = names
        .iter()
        .enumerate()
        .map(|(index, service)| {
            let dependencies: Vec<&str> =
                edges.iter().filter(|(from, _)| *from == index).map(|(_, to)| names[*to].as_str()).collect();
            spec(service, &dependencies)
        })
        .collect();
    HostState { services, ..HostState::default() }
}

proptest::proptest! {
    #[test]
    fn plans_respect_dependencies_or_name_a_real_cycle(
        count in 1usize..7,
        raw_edges in proptest::collection::vec((0usize..7, 0usize..7), 0..10),
    ) {
        let edges: Vec<(usize, usize)> =
            raw_edges.into_iter().filter(|(from, to)| *from < count && *to < count).collect();
        let desired = graph_state(count, &edges);
        let is_edge = |from: &ServiceName, to: &ServiceName| {
            desired.services.iter().any(|spec| spec.name == *from && spec.dependencies.contains(to))
        };
        match plan(&desired, &ObservedHost::default()) {
            Ok(steps) => {
                let started: Vec<&ServiceName> = steps
                    .iter()
                    .filter_map(|step| if let Step::StartService(name) = step { Some(name) } else { None })
                    .collect();
                proptest::prop_assert_eq!(started.len(), count);
                for (position, service) in started.iter().enumerate() {
                    for dependency in &started[position + 1..] {
                        proptest::prop_assert!(!is_edge(service, dependency), "{service} started before {dependency}");
                    }
                }
                proptest::prop_assert_eq!(plan(&desired, &ObservedHost::default()).unwrap(), steps);
            }
            Err(PlanError::DependencyCycle { cycle }) => {
                proptest::prop_assert!(cycle.len() >= 2);
                proptest::prop_assert_eq!(cycle.first(), cycle.last());
                for pair in cycle.windows(2) {
                    proptest::prop_assert!(is_edge(&pair[0], &pair[1]), "{} -> {} is not an edge", pair[0], pair[1]);
                }
            }
            Err(other) => proptest::prop_assert!(false, "unexpected error {other}"),
        }
    }
}

proptest::proptest! {
    #[test]
    fn stops_come_dependents_first_and_every_stopped_service_restarts(
        count in 1usize..7,
        raw_edges in proptest::collection::vec((0usize..7, 0usize..7), 0..10),
        changed in proptest::collection::btree_set(0usize..7, 0..3),
        stopped in proptest::collection::btree_set(0usize..7, 0..3),
    ) {
        // Edges only point to lower indices, so the graph is acyclic.
        let edges: Vec<(usize, usize)> =
            raw_edges.into_iter().filter(|(from, to)| *from < count && *to < *from).collect();
        let mut desired = graph_state(count, &edges);
        let mut observed = converged(&desired);
        for index in changed.iter().filter(|index| **index < count) {
            let binary = path(&format!(r"C:\k\s{index}.exe"));
            desired.files.insert(binary.clone(), digest('b'));
            observed.files.insert(binary, Some(digest('a')));
        }
        for index in stopped.iter().filter(|index| **index < count) {
            observed.services.get_mut(&name(&format!("s{index}"))).unwrap().state = Some(ServiceState::Stopped);
        }
        let steps = plan(&desired, &observed).unwrap();
        let position = |wanted: &Step| steps.iter().position(|step| step == wanted);
        for (from, to) in &edges {
            let (dependent, dependency) = (format!("s{from}"), format!("s{to}"));
            if let (Some(stop_dependency), true) =
                (position(&stop(&dependency)), observed.services[&name(&dependent)].is_stoppable())
            {
                let stop_dependent = position(&stop(&dependent));
                proptest::prop_assert!(stop_dependent.is_some_and(|p| p < stop_dependency), "{steps:?}");
            }
            if let (Some(start_dependent), Some(start_dependency)) =
                (position(&start(&dependent)), position(&start(&dependency)))
            {
                proptest::prop_assert!(start_dependency < start_dependent, "{steps:?}");
            }
        }
        for step in &steps {
            if let Step::StopService(service) = step {
                proptest::prop_assert!(position(&Step::StartService(service.clone())).is_some(), "{steps:?}");
            }
        }
        for index in stopped.iter().filter(|index| **index < count) {
            proptest::prop_assert!(position(&start(&format!("s{index}"))).is_some(), "{steps:?}");
        }
    }
}

#[test]
fn an_owned_directory_is_emptied_when_its_index_changed_and_every_file_under_it_is_written_again() {
    let registries = path(r"C:\k\containerd\registries");
    let index = path(r"C:\k\containerd\registries\wmco-registries.txt");
    let quay = path(r"C:\k\containerd\registries\quay.io\hosts.toml");
    let desired = HostState {
        files: [(index.clone(), digest('a')), (quay.clone(), digest('b')), (path(r"C:\k\kubelet.conf"), digest('c'))]
            .into(),
        directories: [registries.clone(), path(r"C:\k\containerd\registries\quay.io")].into(),
        owned_directories: [(registries.clone(), index.clone())].into(),
        ..HostState::default()
    };
    assert!(plan(&desired, &converged(&desired)).unwrap().is_empty(), "the same index: nothing to do");

    let mut fresh = converged(&desired);
    fresh.files.insert(index.clone(), None);
    assert_eq!(plan(&desired, &fresh).unwrap(), [Step::ReplaceFiles(vec![index.clone()])], "no index: no reset");

    let mut changed = converged(&desired);
    changed.files.insert(index.clone(), Some(digest('f')));
    let steps = plan(&desired, &changed).unwrap();
    assert_eq!(
        steps,
        [
            Step::ResetDirectory {
                directory: registries.clone(),
                subdirectories: vec![path(r"C:\k\containerd\registries\quay.io")],
            },
            Step::ReplaceFiles(vec![quay.clone(), index.clone()]),
        ]
    );
    let script = script_of(&steps[0].commands().unwrap()[0].line);
    assert!(
        script.contains(
            "Remove-Item -LiteralPath 'C:\\k\\containerd\\registries' -Recurse -Force -ErrorAction SilentlyContinue\n\
             New-Item -ItemType Directory -Force -Path 'C:\\k\\containerd\\registries' | Out-Null\n\
             New-Item -ItemType Directory -Force -Path 'C:\\k\\containerd\\registries\\quay.io' | Out-Null"
        ),
        "{script}"
    );
}

#[test]
fn root_certificates_are_synced_right_after_their_files_are_uploaded_and_only_when_they_differ() {
    let thumbprint = crate::trust::Thumbprint::new(&"C".repeat(40)).unwrap();
    let file = path(&format!(r"C:\k\certs\{thumbprint}.crt"));
    let mut desired = node_state();
    desired.files.insert(file.clone(), digest('c'));
    desired.trusted_roots = Some(crate::trust::TrustedRoots {
        certificates: [(thumbprint.clone(), file.clone())].into(),
        record: path(r"C:\k\wmco\imported-root-certificates.txt"),
    });
    let mut observed = converged(&desired);
    observed.files.insert(file.clone(), None);
    observed.trusted_roots = Some(Default::default());
    let steps = plan(&desired, &observed).unwrap();
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[0], Step::ReplaceFiles(vec![file]));
    assert!(matches!(&steps[1], Step::SyncRootCertificates(sync) if sync.import.len() == 1));

    observed = converged(&desired);
    observed.trusted_roots =
        Some(crate::trust::ObservedRoots { store: [thumbprint.clone()].into(), imported: [thumbprint].into() });
    assert_eq!(plan(&desired, &observed).unwrap(), []);
}

#[test]
fn firewall_rules_that_must_not_exist_are_removed_when_present_and_absent_ones_are_left() {
    let desired = HostState {
        removed_firewall_rules: ["ContainerLogsPort".to_owned(), "WindowsExporter".to_owned()].into(),
        ..HostState::default()
    };
    let request = crate::ProbeRequest::for_state(&desired);
    assert_eq!(request.firewall_rules, desired.removed_firewall_rules, "the probe asks for both");
    let mut observed = ObservedHost::default();
    observed.firewall_rules.insert(
        "ContainerLogsPort".into(),
        Some(ObservedFirewallRule { direction: Some(1), enabled: Some(1), action: Some(2) }),
    );
    observed.firewall_rules.insert("WindowsExporter".into(), None);
    assert_eq!(plan(&desired, &observed).unwrap(), vec![Step::RemoveFirewallRule("ContainerLogsPort".into())]);
}

#[test]
fn defender_exclusions_are_added_and_removed_only_while_defender_runs() {
    let containerd = path(r"C:\k\containerd\containerd.exe");
    let other = path(r"C:\k\other.exe");
    let desired = HostState {
        defender_exclusions: [containerd.clone()].into(),
        removed_defender_exclusions: [other.clone()].into(),
        ..HostState::default()
    };
    assert!(crate::ProbeRequest::for_state(&desired).defender, "the probe reads Defender");
    let running = |exclusions: &[&str]| ObservedHost {
        defender: Some(crate::ObservedDefender {
            running: true,
            exclusions: exclusions.iter().map(|text| (*text).to_owned()).collect(),
        }),
        ..ObservedHost::default()
    };
    assert_eq!(
        plan(&desired, &running(&[r"C:\K\OTHER.EXE"])).unwrap(),
        [Step::AddDefenderExclusion(containerd.clone()), Step::RemoveDefenderExclusion(other)],
        "the missing one is added, the one to remove is found whatever its case"
    );
    assert_eq!(plan(&desired, &running(&[r"c:\k\containerd\containerd.exe"])).unwrap(), []);
    let stopped = ObservedHost {
        defender: Some(crate::ObservedDefender { running: false, exclusions: Vec::new() }),
        ..ObservedHost::default()
    };
    assert_eq!(plan(&desired, &stopped).unwrap(), [], "Defender's cmdlets fail while it does not run");
    assert_eq!(
        Step::AddDefenderExclusion(containerd).commands().unwrap().len(),
        1,
        "one PowerShell command per exclusion"
    );
}

#[test]
fn rotated_files_beyond_the_newest_are_pruned_and_the_current_pointer_stays() {
    let certificates = crate::hybrid_overlay_client_certificates().unwrap();
    let desired = HostState { rotated_files: [certificates.clone()].into(), ..HostState::default() };
    let mut observed = converged(&desired);
    let stamp = |day: u8| format!("ovnkube-client-2026-11-{day:02}-00-00-00.pem");
    observed.rotated_files.insert(certificates.clone(), vec![stamp(3), "ovnkube-client-current.pem".into(), stamp(1)]);
    assert_eq!(plan(&desired, &observed).unwrap(), [], "two rotations and the pointer: nothing to prune");
    observed.rotated_files.insert(
        certificates.clone(),
        vec![stamp(4), stamp(2), "OVNKUBE-CLIENT-CURRENT.PEM".into(), stamp(3), stamp(1), "kubeconfig".into()],
    );
    let steps = plan(&desired, &observed).unwrap();
    assert_eq!(
        steps,
        [Step::PruneFiles(vec![
            path(&format!(r"C:\k\cni\config\{}", stamp(1))),
            path(&format!(r"C:\k\cni\config\{}", stamp(2)))
        ])]
    );
    let text = steps[0].commands().unwrap()[0].line.clone();
    let script = crate::decode_encoded_command(text.rsplit(' ').next().unwrap()).unwrap();
    assert!(script.contains(&format!(
        "Remove-Item -LiteralPath 'C:\\k\\cni\\config\\{}' -Force -ErrorAction SilentlyContinue",
        stamp(1)
    )));
    assert_eq!(steps[0].to_string(), "remove 2 rotated files");
}

#[test]
fn private_directories_are_restricted_when_new_or_loose_and_left_alone_when_private() {
    let private = "O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)";
    let inherited = "O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)";
    let below_drive_root = "O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;OICIID;0x1200a9;;;BU)(A;CIID;LC;;;BU)";
    let desired = HostState {
        directories: [path(r"C:\Temp"), path(r"C:\k"), path(r"C:\k\cni"), path(r"C:\k\tls")].into(),
        private_directories: [path(r"C:\k"), path(r"C:\var\log\kubelet")].into(),
        ..HostState::default()
    };
    let every: Vec<WinPath> = desired.directories.union(&desired.private_directories).cloned().collect();
    let roots = vec![path(r"C:\k"), path(r"C:\var\log\kubelet")];

    // A fresh host: the directories are created, then the private ones restricted (nothing to reset).
    assert_eq!(
        plan(&desired, &ObservedHost::default()).unwrap(),
        vec![
            Step::EnsureDirectories(every.clone()),
            Step::RestrictDirectories { reset: Vec::new(), protect: roots.clone() },
        ]
    );

    // Restricted, and what lies within inherits it: nothing to do.
    let mut observed = ObservedHost {
        directories: every.iter().map(|directory| (directory.clone(), true)).collect(),
        directory_acls: [
            (path(r"C:\k"), Some(private.to_owned())),
            (path(r"C:\k\cni"), Some(inherited.to_owned())),
            (path(r"C:\k\tls"), Some(inherited.to_owned())),
            (path(r"C:\var\log\kubelet"), Some(private.to_owned())),
        ]
        .into(),
        ..ObservedHost::default()
    };
    assert_eq!(plan(&desired, &observed).unwrap(), Vec::<Step>::new());

    // An admin let Users in: explicitly on C:\k and C:\k\cni, by inheritance from C:\ on C:\var\log\kubelet.
    let users = "(A;OICI;0x1200a9;;;BU)";
    observed.directory_acls.insert(path(r"C:\k"), Some(format!("{private}{users}")));
    observed.directory_acls.insert(path(r"C:\k\cni"), Some(format!("{inherited}{users}")));
    observed.directory_acls.insert(path(r"C:\var\log\kubelet"), Some(below_drive_root.to_owned()));
    let step = Step::RestrictDirectories { reset: vec![path(r"C:\k"), path(r"C:\k\cni")], protect: roots.clone() };
    assert_eq!(plan(&desired, &observed).unwrap(), vec![step.clone()]);
    assert_eq!(step.to_string(), "restrict 2 directories to SYSTEM and Administrators");
    let lines: Vec<String> = step.commands().unwrap().into_iter().map(|command| command.line).collect();
    assert_eq!(lines.len(), 1, "one command: {lines:?}");

    // C:\k inherits C:\'s ACL again, so C:\k\tls does too: restricting C:\k is enough for it. Once C:\k is fine, a
    // directory within it that still lets others in (protected without them) is reset on its own.
    observed.directory_acls.insert(path(r"C:\k"), Some(below_drive_root.to_owned()));
    observed.directory_acls.insert(path(r"C:\k\cni"), Some(inherited.to_owned()));
    observed.directory_acls.insert(path(r"C:\k\tls"), Some(below_drive_root.to_owned()));
    observed.directory_acls.insert(path(r"C:\var\log\kubelet"), Some(private.to_owned()));
    assert_eq!(
        plan(&desired, &observed).unwrap(),
        vec![Step::RestrictDirectories { reset: Vec::new(), protect: vec![path(r"C:\k")] }]
    );
    observed.directory_acls.insert(path(r"C:\k"), Some(private.to_owned()));
    observed.directory_acls.insert(path(r"C:\k\tls"), Some("O:BAG:SYD:PAI(A;OICI;FA;;;SY)".to_owned()));
    assert_eq!(
        plan(&desired, &observed).unwrap(),
        vec![Step::RestrictDirectories { reset: vec![path(r"C:\k\tls")], protect: Vec::new() }]
    );
}
