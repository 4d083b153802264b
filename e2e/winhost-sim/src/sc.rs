//! `sc.exe` (windows-commands.md §1): the verbs create, config, description, failure, failureflag, start, stop,
//! delete, query, queryex and qc with the `option= value` syntax (a joined `option=value` prints the usage text and
//! exits 1639), the §1.3–1.5 output layouts, errors on stdout, and the Win32 error number as the exit code.

use crate::host::{Host, Output};
use crate::scm::{
    ERROR_INVALID_COMMAND_LINE, ERROR_SERVICE_DOES_NOT_EXIST, ERROR_SERVICE_MARKED_FOR_DELETE, FailureAction,
    FailureActions, Service, ServiceConfig, StartType, State, Win32Error, win32_message,
};

/// Runs `sc.exe` with its arguments (after the program name).
pub fn run(host: &mut Host, arguments: &[String]) -> Output {
    host.refresh();
    let Some((verb, rest)) = arguments.split_first() else {
        return usage("");
    };
    let verb = verb.to_ascii_lowercase();
    match verb.as_str() {
        "query" | "queryex" if rest.is_empty() => enumerate(host, verb == "queryex"),
        "create" | "config" | "description" | "failure" | "failureflag" | "start" | "stop" | "delete" | "query"
        | "queryex" | "qc" => {
            let Some((name, options)) = rest.split_first() else { return usage(&verb) };
            run_verb(host, &verb, name, options)
        }
        _ => usage(&verb),
    }
}

fn run_verb(host: &mut Host, verb: &str, name: &str, options: &[String]) -> Output {
    match verb {
        "create" | "config" => {
            let Some(config) = parse_config(options) else { return usage(verb) };
            if verb == "create" {
                if config.image_path.is_none() {
                    return usage(verb);
                }
                match host.scm.create(name, config) {
                    Ok(()) => success("CreateService"),
                    Err(error) => failed("CreateService", error),
                }
            } else {
                let changes_start = config.start.is_some();
                match host.scm.configure(name, config) {
                    Ok(()) => success("ChangeServiceConfig"),
                    Err(error) if error.0 == ERROR_SERVICE_DOES_NOT_EXIST => failed("OpenService", error),
                    Err(error) if error.0 == ERROR_SERVICE_MARKED_FOR_DELETE && changes_start => {
                        failed("ChangeServiceConfig2 (delayed autostart flag)", error)
                    }
                    Err(error) => failed("ChangeServiceConfig", error),
                }
            }
        }
        "description" => {
            let text = options.join(" ");
            config2(host.scm.set_description(name, &text))
        }
        "failure" => match parse_failure(options) {
            Some(actions) => config2(host.scm.set_failure_actions(name, actions)),
            None => usage(verb),
        },
        "failureflag" => match options {
            [flag] if flag == "0" || flag == "1" => config2(host.scm.set_failure_flag(name, flag == "1")),
            _ => usage(verb),
        },
        "start" => match host.start_service(name) {
            Ok(()) => host
                .scm
                .get(name)
                .map_or_else(Output::default, |service| Output::ok(status_block(service, true, Some(0x7d0)))),
            Err(error) if error.0 == ERROR_SERVICE_DOES_NOT_EXIST => failed("StartService: OpenService", error),
            Err(error) => failed("StartService", error),
        },
        "stop" => match host.stop_service(name) {
            Ok(()) => host.scm.get(name).map_or_else(
                || Output::ok(stopped_block(name)),
                |service| Output::ok(status_block(service, false, None)),
            ),
            Err(error) if error.0 == ERROR_SERVICE_DOES_NOT_EXIST => failed("OpenService", error),
            Err(error) => failed("ControlService", error),
        },
        "delete" => match host.scm.delete(name) {
            Ok(()) => success("DeleteService"),
            Err(error) if error.0 == ERROR_SERVICE_DOES_NOT_EXIST => failed("OpenService", error),
            Err(error) => failed("DeleteService", error),
        },
        "qc" => match host.scm.get(name) {
            Some(service) => Output::ok(config_block(service)),
            None => failed("OpenService", Win32Error(ERROR_SERVICE_DOES_NOT_EXIST)),
        },
        _ => match host.scm.get(name) {
            Some(service) => Output::ok(status_block(service, verb == "queryex", None)),
            None => failed("EnumQueryServicesStatus:OpenService", Win32Error(ERROR_SERVICE_DOES_NOT_EXIST)),
        },
    }
}

fn config2(result: Result<(), Win32Error>) -> Output {
    match result {
        Ok(()) => success("ChangeServiceConfig2"),
        Err(error) if error.0 == ERROR_SERVICE_DOES_NOT_EXIST => failed("OpenService", error),
        Err(error) => failed("ChangeServiceConfig2", error),
    }
}

fn success(api: &str) -> Output {
    Output::ok(format!("[SC] {api} SUCCESS\r\n"))
}

/// The §1.3 error shape, on stdout, with the error number as exit code.
fn failed(api: &str, error: Win32Error) -> Output {
    Output::new(format!("[SC] {api} FAILED {}:\r\n\r\n{}\r\n\r\n", error.0, win32_message(error.0)), "", error.0)
}

/// The verb's usage text, exit 1639.
fn usage(verb: &str) -> Output {
    let verb = if verb.is_empty() { "<command>" } else { verb };
    let text = format!(
        "DESCRIPTION:\r\n        Performs the {verb} operation on a service in the registry and Service Database.\r\n\
         USAGE:\r\n        sc <server> {verb} [service name] <option1> <option2>...\r\n\r\n\
         OPTIONS:\r\nNOTE: The option name includes the equal sign.\r\n      \
         A space is required between the equal sign and the value.\r\n"
    );
    Output::new(text, "", ERROR_INVALID_COMMAND_LINE)
}

/// Parses `option= value` pairs; `None` for a joined `option=value`, an unknown option or a missing value.
fn parse_config(options: &[String]) -> Option<ServiceConfig> {
    let mut config = ServiceConfig::default();
    let mut iter = options.iter();
    while let Some(option) = iter.next() {
        let name = option.to_ascii_lowercase();
        let name = name.strip_suffix('=')?;
        let value = iter.next()?;
        match name {
            "binpath" => config.image_path = Some(value.clone()),
            "start" => {
                config.start = Some(match value.to_ascii_lowercase().as_str() {
                    "boot" => (StartType::Boot, false),
                    "system" => (StartType::System, false),
                    "auto" => (StartType::Auto, false),
                    "delayed-auto" => (StartType::Auto, true),
                    "demand" => (StartType::Demand, false),
                    "disabled" => (StartType::Disabled, false),
                    _ => return None,
                });
            }
            "depend" => {
                config.dependencies =
                    Some(value.split('/').filter(|name| !name.is_empty()).map(str::to_owned).collect());
            }
            "displayname" => config.display_name = Some(value.clone()),
            "obj" => config.account = Some(value.clone()),
            "password" => {}
            "type" => {
                config.service_type = Some(match value.to_ascii_lowercase().as_str() {
                    "own" => 0x10,
                    "share" => 0x20,
                    "kernel" => 0x1,
                    "filesys" => 0x2,
                    _ => return None,
                });
            }
            "error" => {
                config.error_control = Some(match value.to_ascii_lowercase().as_str() {
                    "ignore" => 0,
                    "normal" => 1,
                    "severe" => 2,
                    "critical" => 3,
                    _ => return None,
                });
            }
            _ => return None,
        }
    }
    Some(config)
}

/// `reset= <sec> actions= type/ms/...` (both required).
fn parse_failure(options: &[String]) -> Option<FailureActions> {
    let mut reset = None;
    let mut actions = None;
    let mut iter = options.iter();
    while let Some(option) = iter.next() {
        let value = iter.next()?;
        match option.to_ascii_lowercase().as_str() {
            "reset=" => {
                reset = Some(if value.eq_ignore_ascii_case("infinite") { u32::MAX } else { value.parse().ok()? });
            }
            "actions=" => {
                let parts: Vec<&str> = value.split('/').collect();
                if value.is_empty() {
                    actions = Some(Vec::new());
                    continue;
                }
                if !parts.len().is_multiple_of(2) {
                    return None;
                }
                let mut list = Vec::new();
                for pair in parts.chunks(2) {
                    let kind = match pair[0].to_ascii_lowercase().as_str() {
                        "" | "none" => 0,
                        "restart" => 1,
                        "reboot" => 2,
                        "run" => 3,
                        _ => return None,
                    };
                    list.push(FailureAction { kind, delay_ms: pair[1].parse().ok()? });
                }
                actions = Some(list);
            }
            "reboot=" | "command=" => {}
            _ => return None,
        }
    }
    Some(FailureActions { reset_seconds: reset?, actions: actions? })
}

fn field(label: &str, value: &str) -> String {
    if value.is_empty() { format!("        {label:<19}:\r\n") } else { format!("        {label:<19}: {value}\r\n") }
}

fn type_text(service_type: u32) -> String {
    let name = match service_type {
        0x10 => "WIN32_OWN_PROCESS",
        0x20 => "WIN32_SHARE_PROCESS",
        0x1 => "KERNEL_DRIVER",
        0x2 => "FILE_SYSTEM_DRIVER",
        _ => "WIN32",
    };
    format!("{service_type:x}  {name}")
}

/// The §1.4 status block (`queryex` adds PID and FLAGS); `wait_hint` overrides 0.
fn status_block(service: &Service, extended: bool, wait_hint: Option<u32>) -> String {
    let mut text = format!("\r\nSERVICE_NAME: {}\r\n", service.name);
    text.push_str(&field("TYPE", &type_text(service.service_type)));
    text.push_str(&field("STATE", &format!("{}  {}", service.state.code(), service.state.sc_name())));
    match service.state {
        State::Stopped => {}
        State::Running => text.push_str(&format!("{}(STOPPABLE, NOT_PAUSABLE, ACCEPTS_SHUTDOWN)\r\n", " ".repeat(32))),
        State::StartPending | State::StopPending => {
            text.push_str(&format!("{}(NOT_STOPPABLE, NOT_PAUSABLE, IGNORES_SHUTDOWN)\r\n", " ".repeat(32)));
        }
    }
    text.push_str(&field("WIN32_EXIT_CODE", &format!("{0}  (0x{0:x})", service.exit_code)));
    text.push_str(&field("SERVICE_EXIT_CODE", "0  (0x0)"));
    text.push_str(&field("CHECKPOINT", "0x0"));
    let hint = if service.state == State::StartPending { wait_hint.unwrap_or(0x7d0) } else { 0 };
    text.push_str(&field("WAIT_HINT", &format!("0x{hint:x}")));
    if extended {
        text.push_str(&field("PID", &service.pid.to_string()));
        text.push_str(&field("FLAGS", ""));
    }
    text
}

/// The status of a service that stopped and vanished (deleted while running) within the stop call.
fn stopped_block(name: &str) -> String {
    let mut text = format!("\r\nSERVICE_NAME: {name}\r\n");
    text.push_str(&field("TYPE", &type_text(0x10)));
    text.push_str(&field("STATE", "1  STOPPED"));
    text.push_str(&field("WIN32_EXIT_CODE", "0  (0x0)"));
    text.push_str(&field("SERVICE_EXIT_CODE", "0  (0x0)"));
    text.push_str(&field("CHECKPOINT", "0x0"));
    text.push_str(&field("WAIT_HINT", "0x0"));
    text
}

/// The §1.5 configuration block.
fn config_block(service: &Service) -> String {
    let start = match service.start_type {
        StartType::Boot => "BOOT_START",
        StartType::System => "SYSTEM_START",
        StartType::Auto if service.delayed => "AUTO_START  (DELAYED)",
        StartType::Auto => "AUTO_START",
        StartType::Demand => "DEMAND_START",
        StartType::Disabled => "DISABLED",
    };
    let error_control = match service.error_control {
        0 => "IGNORE",
        2 => "SEVERE",
        3 => "CRITICAL",
        _ => "NORMAL",
    };
    let mut text = format!("[SC] QueryServiceConfig SUCCESS\r\n\r\nSERVICE_NAME: {}\r\n", service.name);
    let (type_code, type_name) = type_text(service.service_type)
        .split_once("  ")
        .map_or_else(|| (String::new(), String::new()), |(code, name)| (code.to_owned(), name.to_owned()));
    text.push_str(&field("TYPE", &format!("{type_code:<4}{type_name}")));
    text.push_str(&field("START_TYPE", &format!("{:<4}{start}", service.start_type.code())));
    text.push_str(&field("ERROR_CONTROL", &format!("{:<4}{error_control}", service.error_control)));
    text.push_str(&field("BINARY_PATH_NAME", &service.image_path));
    text.push_str(&field("LOAD_ORDER_GROUP", ""));
    text.push_str(&field("TAG", "0"));
    text.push_str(&field("DISPLAY_NAME", &service.display_name));
    let mut dependencies = service.dependencies.iter();
    text.push_str(&field("DEPENDENCIES", dependencies.next().map_or("", String::as_str)));
    for dependency in dependencies {
        text.push_str(&format!("{}: {dependency}\r\n", " ".repeat(27)));
    }
    text.push_str(&field("SERVICE_START_NAME", &service.account));
    text
}

/// `sc query` without a name: every active service, with DISPLAY_NAME.
fn enumerate(host: &Host, extended: bool) -> Output {
    let mut text = String::new();
    for service in host.scm.services().filter(|service| service.state != State::Stopped) {
        let block = status_block(service, extended, None);
        let (first, rest) = block.trim_start_matches("\r\n").split_once("\r\n").unwrap_or_default();
        text.push_str(&format!("\r\n{first}\r\nDISPLAY_NAME: {}\r\n{rest}", service.display_name));
    }
    Output::ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::WinPath;
    use crate::host::tests::test_host;

    fn install(host: &Host, path: &str) {
        let path = WinPath::parse(path).unwrap();
        host.disk.create_dir_all(&path.parent().unwrap()).unwrap();
        host.disk.write(&path, b"MZ").unwrap();
    }

    #[test]
    fn create_qc_start_query_stop_delete_with_exact_layouts() {
        let (_root, mut host) = test_host();
        install(&host, r"C:\k\agent.exe");
        install(&host, r"C:\k\containerd.exe");
        assert_eq!(host.exec("c", r#"sc.exe create containerd binPath= "C:\k\containerd.exe""#).code, 0);
        let output = host.exec(
            "c",
            r#"sc.exe create kubelet binPath= "C:\k\agent.exe --config-file=C:\k\kubelet.conf" start= auto depend= containerd/hns DisplayName= kubelet"#,
        );
        assert_eq!((output.stdout.as_str(), output.code), ("[SC] CreateService SUCCESS\r\n", 0));
        assert_eq!(
            host.exec("c", "sc.exe qc kubelet").stdout,
            "[SC] QueryServiceConfig SUCCESS\r\n\r\nSERVICE_NAME: kubelet\r\n\
             \x20       TYPE               : 10  WIN32_OWN_PROCESS\r\n\
             \x20       START_TYPE         : 2   AUTO_START\r\n\
             \x20       ERROR_CONTROL      : 1   NORMAL\r\n\
             \x20       BINARY_PATH_NAME   : C:\\k\\agent.exe --config-file=C:\\k\\kubelet.conf\r\n\
             \x20       LOAD_ORDER_GROUP   :\r\n\
             \x20       TAG                : 0\r\n\
             \x20       DISPLAY_NAME       : kubelet\r\n\
             \x20       DEPENDENCIES       : containerd\r\n\
             \x20                          : hns\r\n\
             \x20       SERVICE_START_NAME : LocalSystem\r\n"
        );
        assert_eq!(
            host.exec("c", "sc.exe query kubelet").stdout,
            "\r\nSERVICE_NAME: kubelet\r\n\
             \x20       TYPE               : 10  WIN32_OWN_PROCESS\r\n\
             \x20       STATE              : 1  STOPPED\r\n\
             \x20       WIN32_EXIT_CODE    : 1077  (0x435)\r\n\
             \x20       SERVICE_EXIT_CODE  : 0  (0x0)\r\n\
             \x20       CHECKPOINT         : 0x0\r\n\
             \x20       WAIT_HINT          : 0x0\r\n"
        );
        let output = host.exec("c", "sc.exe start kubelet");
        assert_eq!(output.code, 1075, "hns does not exist");
        assert_eq!(
            output.stdout,
            "[SC] StartService FAILED 1075:\r\n\r\nThe dependency service does not exist or has been marked for deletion.\r\n\r\n"
        );
        assert_eq!(host.exec("c", "sc.exe config kubelet depend= containerd").code, 0);
        let output = host.exec("c", "sc.exe start kubelet");
        assert_eq!(output.code, 0);
        assert!(output.stdout.contains("STATE              : 2  START_PENDING\r\n                                (NOT_STOPPABLE, NOT_PAUSABLE, IGNORES_SHUTDOWN)\r\n"), "{}", output.stdout);
        assert!(output.stdout.contains("WAIT_HINT          : 0x7d0\r\n        PID                : "));
        assert!(output.stdout.ends_with("FLAGS              :\r\n"));
        assert!(
            host.exec("c", "sc.exe query containerd")
                .stdout
                .contains("4  RUNNING\r\n                                (STOPPABLE, NOT_PAUSABLE, ACCEPTS_SHUTDOWN)")
        );
        assert_eq!(host.exec("c", "sc.exe stop containerd").code, 1051);
        assert_eq!(host.exec("c", "sc.exe start kubelet").code, 1056);
        assert!(host.exec("c", "sc.exe stop kubelet").stdout.contains("1  STOPPED"));
        assert_eq!(host.exec("c", "sc.exe stop kubelet").code, 1062);
        assert_eq!(host.exec("c", "sc.exe delete kubelet").stdout, "[SC] DeleteService SUCCESS\r\n");
        assert_eq!(host.exec("c", "sc.exe query kubelet").code, 1060);
    }

    #[test]
    fn error_first_lines_and_usage() {
        let (_root, mut host) = test_host();
        let output = host.exec("c", "sc.exe query nosuch");
        assert_eq!(
            output.stdout,
            "[SC] EnumQueryServicesStatus:OpenService FAILED 1060:\r\n\r\nThe specified service does not exist as an installed service.\r\n\r\n"
        );
        assert_eq!((output.code, output.stderr.as_str()), (1060, ""));
        assert!(
            host.exec("c", "sc.exe start nosuch").stdout.starts_with("[SC] StartService: OpenService FAILED 1060:")
        );
        assert!(host.exec("c", "sc.exe qc nosuch").stdout.starts_with("[SC] OpenService FAILED 1060:"));
        let output = host.exec("c", r"sc.exe create x binPath= C:\k\x.exe start=auto");
        assert_eq!(output.code, 1639);
        assert!(output.stdout.contains("A space is required between the equal sign and the value."));
        assert_eq!(host.exec("c", r"sc.exe create x binPath= C:\k\x.exe").code, 0);
        assert_eq!(host.exec("c", r"sc.exe create x binPath= C:\k\x.exe").code, 1073);
        let output = host.exec("c", "sc.exe start x");
        assert_eq!((output.code, output.stdout.lines().next()), (2, Some("[SC] StartService FAILED 2:")));
        assert_eq!(host.exec("c", "sc.exe config x start= disabled").code, 0);
        assert_eq!(host.exec("c", "sc.exe start x").code, 1058);
        assert_eq!(host.exec("c", "sc.exe description x \"OpenShift managed x\"").code, 0);
        assert_eq!(host.scm.get("x").unwrap().description.as_deref(), Some("OpenShift managed x"));
        let output = host.exec("c", "sc.exe failure x reset= 300 actions= restart/10000/restart/30000");
        assert_eq!(output.stdout, "[SC] ChangeServiceConfig2 SUCCESS\r\n");
        let actions = host.scm.get("x").unwrap().failure_actions.clone().unwrap();
        assert_eq!((actions.reset_seconds, actions.actions.len(), actions.actions[1].delay_ms), (300, 2, 30000));
        assert_eq!(host.exec("c", r#"sc.exe failure x reset= 0 actions= """#).code, 0);
        assert!(host.scm.get("x").unwrap().failure_actions.as_ref().unwrap().actions.is_empty());
        assert_eq!(host.exec("c", "sc.exe failureflag x 1").code, 0);
        assert_eq!(host.exec("c", "sc.exe delete x").code, 0);
        assert_eq!(host.exec("c", "sc.exe query x").code, 1060, "a stopped service goes at once");
    }

    #[test]
    fn marked_services_refuse_with_1072_and_pending_ones_with_1061() {
        let (_root, mut host) = test_host();
        install(&host, r"C:\k\x.exe");
        host.scm.timing.stop = std::time::Duration::from_secs(60);
        assert_eq!(host.exec("c", r"sc.exe create x binPath= C:\k\x.exe").code, 0);
        assert_eq!(host.exec("c", "sc.exe start x").code, 0);
        host.exec("c", "sc.exe query x");
        assert!(host.exec("c", "sc.exe stop x").stdout.contains("3  STOP_PENDING"));
        assert_eq!(host.exec("c", "sc.exe stop x").code, 1061);
        assert_eq!(host.exec("c", "sc.exe delete x").code, 0);
        assert_eq!(host.exec("c", "sc.exe delete x").code, 1072);
        assert_eq!(host.exec("c", r"sc.exe create x binPath= C:\k\x.exe").code, 1072);
        let output = host.exec("c", "sc.exe config x start= auto");
        assert!(output.stdout.starts_with("[SC] ChangeServiceConfig2 (delayed autostart flag) FAILED 1072:"));
        assert_eq!(host.exec("c", "sc.exe start x").code, 1072);
    }
}
