//! sc.exe command builders ([`ScCommand`]): `create`, `config`, `description`, `failure`, `failureflag`, `start`,
//! `stop`, `delete`, `query` and `qc`, rendered for cmd.exe with the `option= value` syntax (space after `=`,
//! windows-commands.md §1.1–1.2).

use serde::Serialize;

use crate::command::{CommandError, RenderedCommand, Shell, check_length};
use crate::quote::{check_cmd_value, protect_for_cmd, quote_argument};
use crate::service::{FailureActions, ServiceCommand, ServiceName, ServiceSpec, StartType};

/// Longest display name the SCM stores.
const MAX_DISPLAY_NAME_CHARS: usize = 256;

/// The options `sc.exe config` changes; `None` leaves an option as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ConfigChanges {
    /// New command line (`binPath=`).
    pub command: Option<ServiceCommand>,
    /// New start type (`start=`).
    pub start: Option<StartType>,
    /// New dependency list (`depend=`; an empty list is written `depend= /`, which clears it).
    pub dependencies: Option<Vec<ServiceName>>,
    /// New display name (`DisplayName=`).
    pub display_name: Option<String>,
}

impl ConfigChanges {
    /// Whether nothing would change.
    pub fn is_empty(&self) -> bool {
        self.command.is_none() && self.start.is_none() && self.dependencies.is_none() && self.display_name.is_none()
    }

    /// Whether the change only takes effect when the service next starts (command line or dependencies).
    pub fn needs_restart(&self) -> bool {
        self.command.is_some() || self.dependencies.is_some()
    }
}

/// One sc.exe invocation.
///
/// ```
/// use wmco_windows_services::{ScCommand, ServiceName, Shell};
/// let stop = ScCommand::Stop(ServiceName::new("kube-proxy")?).render()?;
/// assert_eq!(stop.shell, Shell::Cmd);
/// assert_eq!(stop.line, "sc.exe stop kube-proxy");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum ScCommand {
    /// `sc.exe create <svc> binPath= .. start= .. [depend= a/b] DisplayName= ..`.
    Create(Box<ServiceSpec>),
    /// `sc.exe config <svc> <changed options>`.
    Config {
        /// The service.
        name: ServiceName,
        /// What to change.
        changes: ConfigChanges,
    },
    /// `sc.exe description <svc> <text>`.
    Description {
        /// The service.
        name: ServiceName,
        /// The new description.
        text: String,
    },
    /// `sc.exe failure <svc> reset= <seconds> actions= <type>/<ms>...`.
    Failure {
        /// The service.
        name: ServiceName,
        /// The recovery settings.
        actions: FailureActions,
    },
    /// `sc.exe failureflag <svc> 0|1`.
    FailureFlag {
        /// The service.
        name: ServiceName,
        /// Whether failure actions also fire on a stop with a non-zero exit code.
        enabled: bool,
    },
    /// `sc.exe start <svc>`.
    Start(ServiceName),
    /// `sc.exe stop <svc>`.
    Stop(ServiceName),
    /// `sc.exe delete <svc>`.
    Delete(ServiceName),
    /// `sc.exe query <svc>`.
    Query(ServiceName),
    /// `sc.exe qc <svc>`.
    Qc(ServiceName),
}

impl ScCommand {
    /// Renders the cmd.exe command line.
    ///
    /// # Errors
    /// [`CommandError`] when a value holds `%` or a control character, a display name is longer than 256
    /// characters, or the line exceeds [`crate::MAX_COMMAND_LINE_CHARS`].
    pub fn render(&self) -> Result<RenderedCommand, CommandError> {
        let mut tokens =
            vec![Token::bare("sc.exe"), Token::bare(self.verb()), Token::value("service name", self.name().as_str())];
        match self {
            ScCommand::Create(spec) => {
                push_option(&mut tokens, "binPath=", "binPath", spec.command.image_path());
                push_option(&mut tokens, "start=", "start", spec.start.sc_value().to_owned());
                if !spec.dependencies.is_empty() {
                    push_option(&mut tokens, "depend=", "depend", depend_value(&spec.dependencies));
                }
                check_display_name(&spec.name, &spec.display_name)?;
                push_option(&mut tokens, "DisplayName=", "DisplayName", spec.display_name.clone());
            }
            ScCommand::Config { name, changes } => push_config_options(&mut tokens, name, changes)?,
            ScCommand::Description { text, .. } => tokens.push(Token::value("description", text)),
            ScCommand::Failure { actions, .. } => {
                push_option(&mut tokens, "reset=", "reset", actions.reset.sc_value());
                push_option(&mut tokens, "actions=", "actions", actions.sc_actions_value());
            }
            ScCommand::FailureFlag { enabled, .. } => tokens.push(Token::bare(if *enabled { "1" } else { "0" })),
            ScCommand::Start(_)
            | ScCommand::Stop(_)
            | ScCommand::Delete(_)
            | ScCommand::Query(_)
            | ScCommand::Qc(_) => {}
        }
        let mut quoted = Vec::with_capacity(tokens.len());
        for token in &tokens {
            quoted.push(token.quoted()?);
        }
        let line = protect_for_cmd(&quoted.join(" "));
        let line = check_length(|| format!("sc.exe {} {}", self.verb(), self.name()), line)?;
        Ok(RenderedCommand { shell: Shell::Cmd, line, script_file: None })
    }

    /// The sc.exe verb.
    pub fn verb(&self) -> &'static str {
        match self {
            ScCommand::Create(_) => "create",
            ScCommand::Config { .. } => "config",
            ScCommand::Description { .. } => "description",
            ScCommand::Failure { .. } => "failure",
            ScCommand::FailureFlag { .. } => "failureflag",
            ScCommand::Start(_) => "start",
            ScCommand::Stop(_) => "stop",
            ScCommand::Delete(_) => "delete",
            ScCommand::Query(_) => "query",
            ScCommand::Qc(_) => "qc",
        }
    }

    /// The service the command is about.
    pub fn name(&self) -> &ServiceName {
        match self {
            ScCommand::Create(spec) => &spec.name,
            ScCommand::Config { name, .. }
            | ScCommand::Description { name, .. }
            | ScCommand::Failure { name, .. }
            | ScCommand::FailureFlag { name, .. }
            | ScCommand::Start(name)
            | ScCommand::Stop(name)
            | ScCommand::Delete(name)
            | ScCommand::Query(name)
            | ScCommand::Qc(name) => name,
        }
    }
}

/// One argv element of an sc.exe line: fixed words go out bare, values are checked and quoted.
struct Token {
    /// The option or argument the value belongs to (for errors); `None` for fixed words.
    field: Option<&'static str>,
    /// The argv element.
    text: String,
}

impl Token {
    fn bare(word: &str) -> Token {
        Token { field: None, text: word.to_owned() }
    }

    fn value(field: &'static str, text: &str) -> Token {
        Token { field: Some(field), text: text.to_owned() }
    }

    fn quoted(&self) -> Result<String, CommandError> {
        match self.field {
            None => Ok(self.text.clone()),
            Some(field) => {
                check_cmd_value(field, &self.text)?;
                Ok(quote_argument(&self.text))
            }
        }
    }
}

/// Appends `option= value` as two argv elements.
fn push_option(tokens: &mut Vec<Token>, option: &str, field: &'static str, value: String) {
    tokens.push(Token::bare(option));
    tokens.push(Token { field: Some(field), text: value });
}

/// Appends the options of an `sc.exe config` call, in a fixed order.
fn push_config_options(
    tokens: &mut Vec<Token>,
    name: &ServiceName,
    changes: &ConfigChanges,
) -> Result<(), CommandError> {
    if let Some(command) = &changes.command {
        push_option(tokens, "binPath=", "binPath", command.image_path());
    }
    if let Some(start) = changes.start {
        push_option(tokens, "start=", "start", start.sc_value().to_owned());
    }
    if let Some(dependencies) = &changes.dependencies {
        push_option(tokens, "depend=", "depend", depend_value(dependencies));
    }
    if let Some(display_name) = &changes.display_name {
        check_display_name(name, display_name)?;
        push_option(tokens, "DisplayName=", "DisplayName", display_name.clone());
    }
    Ok(())
}

/// The `depend=` value: names joined by `/`; `/` alone clears the list.
fn depend_value(dependencies: &[ServiceName]) -> String {
    if dependencies.is_empty() {
        return "/".to_owned();
    }
    dependencies.iter().map(ServiceName::as_str).collect::<Vec<_>>().join("/")
}

/// Refuses display names the SCM cannot store or sc.exe would receive as an empty argument.
fn check_display_name(service: &ServiceName, display_name: &str) -> Result<(), CommandError> {
    if display_name.is_empty() {
        return Err(CommandError::EmptyDisplayName { service: service.to_string() });
    }
    let length = display_name.encode_utf16().count();
    if length > MAX_DISPLAY_NAME_CHARS {
        return Err(CommandError::DisplayNameTooLong { service: service.to_string(), length });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::WinPath;
    use crate::service::{FailureAction, FailureActionKind, Millis, ResetPeriod};

    fn name(text: &str) -> ServiceName {
        ServiceName::new(text).unwrap()
    }

    fn kubelet_spec() -> ServiceSpec {
        ServiceSpec {
            name: name("kubelet"),
            display_name: "kubelet".into(),
            description: "OpenShift managed kubelet".into(),
            command: ServiceCommand::new(
                WinPath::parse(r"C:\k\kubelet.exe").unwrap(),
                [r"--config-file=C:\k\kubelet.conf"],
            ),
            start: StartType::Auto,
            dependencies: vec![name("containerd"), name("hns")],
            recovery: FailureActions::restart_after(300, &[Millis(10_000)]),
            failure_flag: false,
            extra_binaries: vec![],
            environment: Default::default(),
        }
    }

    fn line(command: ScCommand) -> String {
        let rendered = command.render().unwrap();
        assert_eq!(rendered.shell, Shell::Cmd);
        assert_eq!(rendered.script_file, None);
        rendered.line
    }

    #[test]
    fn create_renders_every_option_with_a_space_after_the_equal_sign() {
        assert_eq!(
            line(ScCommand::Create(Box::new(kubelet_spec()))),
            r#"sc.exe create kubelet binPath= "C:\k\kubelet.exe --config-file=C:\k\kubelet.conf" start= auto depend= containerd/hns DisplayName= kubelet"#
        );
    }

    #[test]
    fn create_quotes_a_program_path_with_spaces_inside_the_bin_path_value() {
        let spec = ServiceSpec {
            name: name("x"),
            display_name: "X service".into(),
            command: ServiceCommand::new(WinPath::parse(r"C:\Program Files\x\x.exe").unwrap(), ["--flag"]),
            start: StartType::DelayedAuto,
            dependencies: vec![],
            ..kubelet_spec()
        };
        assert_eq!(
            line(ScCommand::Create(Box::new(spec))),
            r#"sc.exe create x binPath= "\"C:\Program Files\x\x.exe\" --flag" start= delayed-auto DisplayName= "X service""#
        );
    }

    #[test]
    fn create_escapes_metacharacters_cmd_would_see_outside_quotes() {
        let spec = ServiceSpec {
            name: name("a&b"),
            display_name: "q\"&".into(),
            command: ServiceCommand::new(WinPath::parse(r"C:\k\x.exe").unwrap(), ["plain"]),
            dependencies: vec![],
            ..kubelet_spec()
        };
        assert_eq!(
            line(ScCommand::Create(Box::new(spec))),
            r#"sc.exe create "a&b" binPath= "C:\k\x.exe plain" start= auto DisplayName= "q\"^&""#
        );
    }

    #[test]
    fn create_leaves_metacharacters_alone_when_cmd_sees_them_quoted() {
        let spec = ServiceSpec {
            name: name("x"),
            display_name: "q\"&".into(),
            command: ServiceCommand::new(WinPath::parse(r"C:\k\x.exe").unwrap(), ["a\" & b"]),
            dependencies: vec![],
            ..kubelet_spec()
        };
        // binPath's five quotes leave cmd's quote state open, so the display name's `&` is inside quotes for cmd.
        assert_eq!(
            line(ScCommand::Create(Box::new(spec))),
            r#"sc.exe create x binPath= "C:\k\x.exe \"a\\\" & b\"" start= auto DisplayName= "q\"&""#
        );
    }

    #[test]
    fn config_renders_only_the_changed_options_and_clears_dependencies_with_a_slash() {
        let changes = ConfigChanges {
            command: None,
            start: Some(StartType::Demand),
            dependencies: Some(vec![]),
            display_name: Some("Kube Proxy".into()),
        };
        assert_eq!(
            line(ScCommand::Config { name: name("kube-proxy"), changes }),
            r#"sc.exe config kube-proxy start= demand depend= / DisplayName= "Kube Proxy""#
        );
        let changes = ConfigChanges {
            command: Some(ServiceCommand::new(WinPath::parse(r"C:\k\csi-proxy.exe").unwrap(), ["-windows-service"])),
            dependencies: Some(vec![name("kubelet")]),
            ..ConfigChanges::default()
        };
        assert_eq!(
            line(ScCommand::Config { name: name("csi-proxy"), changes }),
            r#"sc.exe config csi-proxy binPath= "C:\k\csi-proxy.exe -windows-service" depend= kubelet"#
        );
    }

    #[test]
    fn description_failure_and_failureflag() {
        assert_eq!(
            line(ScCommand::Description { name: name("kubelet"), text: "OpenShift managed kubelet".into() }),
            r#"sc.exe description kubelet "OpenShift managed kubelet""#
        );
        let actions =
            FailureActions::restart_after(300, &[Millis(10_000), Millis(30_000), Millis(60_000), Millis(120_000)]);
        assert_eq!(
            line(ScCommand::Failure { name: name("kubelet"), actions }),
            "sc.exe failure kubelet reset= 300 actions= restart/10000/restart/30000/restart/60000/restart/120000"
        );
        let actions = FailureActions {
            reset: ResetPeriod::Infinite,
            actions: vec![FailureAction { kind: FailureActionKind::Reboot, delay: Millis(5) }],
        };
        assert_eq!(
            line(ScCommand::Failure { name: name("x"), actions }),
            "sc.exe failure x reset= INFINITE actions= reboot/5"
        );
        let none = FailureActions { reset: ResetPeriod::Seconds(0), actions: vec![] };
        assert_eq!(
            line(ScCommand::Failure { name: name("x"), actions: none }),
            r#"sc.exe failure x reset= 0 actions= """#
        );
        assert_eq!(
            line(ScCommand::FailureFlag { name: name("kubelet"), enabled: true }),
            "sc.exe failureflag kubelet 1"
        );
        assert_eq!(
            line(ScCommand::FailureFlag { name: name("kubelet"), enabled: false }),
            "sc.exe failureflag kubelet 0"
        );
    }

    #[test]
    fn single_name_verbs() {
        assert_eq!(line(ScCommand::Start(name("containerd"))), "sc.exe start containerd");
        assert_eq!(line(ScCommand::Stop(name("kube-proxy"))), "sc.exe stop kube-proxy");
        assert_eq!(line(ScCommand::Delete(name("windows_exporter"))), "sc.exe delete windows_exporter");
        assert_eq!(line(ScCommand::Query(name("kubelet"))), "sc.exe query kubelet");
        assert_eq!(line(ScCommand::Qc(name("hybrid-overlay-node"))), "sc.exe qc hybrid-overlay-node");
        assert_eq!(line(ScCommand::Start(name("a^b"))), r#"sc.exe start "a^b""#);
    }

    #[test]
    fn unrepresentable_values_are_refused() {
        assert_eq!(
            ScCommand::Description { name: name("x"), text: "100% sure".into() }.render(),
            Err(CommandError::PercentSign { field: "description", value: "100% sure".into() })
        );
        assert_eq!(
            ScCommand::Stop(name("%PATH%")).render(),
            Err(CommandError::PercentSign { field: "service name", value: "%PATH%".into() })
        );
        let empty_name = ServiceSpec { display_name: String::new(), ..kubelet_spec() };
        assert_eq!(
            ScCommand::Create(Box::new(empty_name)).render(),
            Err(CommandError::EmptyDisplayName { service: "kubelet".into() })
        );
        let long_name = ServiceSpec { display_name: "d".repeat(257), ..kubelet_spec() };
        assert_eq!(
            ScCommand::Create(Box::new(long_name)).render(),
            Err(CommandError::DisplayNameTooLong { service: "kubelet".into(), length: 257 })
        );
        let long_args = ServiceSpec {
            command: ServiceCommand::new(WinPath::parse(r"C:\k\x.exe").unwrap(), vec!["a".repeat(8000)]),
            ..kubelet_spec()
        };
        assert!(matches!(
            ScCommand::Create(Box::new(long_args)).render(),
            Err(CommandError::TooLong { limit: 8000, .. })
        ));
    }
}
