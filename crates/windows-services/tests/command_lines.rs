//! Rendered command lines checked by an independent model of how Windows reads them.
//!
//! `model` is a separate, test-only implementation of cmd.exe's command-line pass and of the MSVC argv rules
//! (windows-commands.md §1.1 and §2) and of PowerShell single-quoted literals — written from those rules, not as the
//! inverse of the crate's quoting. Property tests feed names, paths and arguments full of spaces, quotes, `&`, `%`,
//! `^`, `$`, backticks and non-ASCII through the builders: each either renders into a line the model parses back to
//! the same values, or is refused with an error. Further properties check that no parser panics on any input.

use proptest::prelude::*;
use wmco_windows_services::{
    CommandError, FailureActions, FileHashes, FirewallRule, Millis, PowerShellScript, ProbeRequest, ScCommand,
    ServiceCommand, ServiceName, ServiceSpec, Shell, StartType, WinPath, decode_encoded_command, parse_sc_failure,
    parse_sc_qc, parse_sc_query,
};

/// Independent models of cmd.exe, the MSVC argv rules and PowerShell single-quoted strings.
mod model {
    /// Why cmd.exe would not pass a line to the program unchanged.
    #[derive(Debug, PartialEq, Eq)]
    pub enum Hazard {
        /// An unquoted, unescaped `& | < > ( )` would split or redirect the command.
        Metacharacter(char),
        /// `%` may be expanded.
        Percent,
        /// A control character (CR/LF end the command).
        Control(char),
        /// A trailing `^` continues the line.
        TrailingCaret,
    }

    /// What cmd.exe hands to the program for `line` typed at a prompt: quote state toggles on every `"`;
    /// outside quotes `^` takes the next character literally and metacharacters act; `%` may expand anywhere.
    pub fn cmd(line: &str) -> Result<String, Hazard> {
        let mut out = String::new();
        let mut quoted = false;
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            if c == '%' {
                return Err(Hazard::Percent);
            }
            if c.is_control() {
                return Err(Hazard::Control(c));
            }
            if c == '"' {
                quoted = !quoted;
                out.push(c);
            } else if !quoted && c == '^' {
                let escaped = chars.next().ok_or(Hazard::TrailingCaret)?;
                out.push(escaped);
            } else if !quoted && "&|<>()".contains(c) {
                return Err(Hazard::Metacharacter(c));
            } else {
                out.push(c);
            }
        }
        Ok(out)
    }

    fn is_blank(c: char) -> bool {
        c == ' ' || c == '\t'
    }

    /// argv as the MSVC runtime splits a command line (2008+ rules).
    pub fn argv(line: &str) -> Vec<String> {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        let mut args = Vec::new();
        // argv[0]: a leading quote runs to the next quote, no backslash processing; otherwise up to a blank.
        let mut program = String::new();
        let mut in_quotes = false;
        while i < chars.len() {
            let c = chars[i];
            if c == '"' {
                in_quotes = !in_quotes;
            } else if is_blank(c) && !in_quotes {
                break;
            } else {
                program.push(c);
            }
            i += 1;
        }
        args.push(program);
        loop {
            while i < chars.len() && is_blank(chars[i]) {
                i += 1;
            }
            if i >= chars.len() {
                break;
            }
            let mut arg = String::new();
            let mut in_quotes = false;
            while i < chars.len() {
                let mut backslashes = 0;
                while i < chars.len() && chars[i] == '\\' {
                    backslashes += 1;
                    i += 1;
                }
                if i < chars.len() && chars[i] == '"' {
                    arg.extend(std::iter::repeat_n('\\', backslashes / 2));
                    if backslashes % 2 == 1 {
                        arg.push('"');
                        i += 1;
                    } else if in_quotes && i + 1 < chars.len() && chars[i + 1] == '"' {
                        arg.push('"');
                        i += 2;
                    } else {
                        in_quotes = !in_quotes;
                        i += 1;
                    }
                    continue;
                }
                arg.extend(std::iter::repeat_n('\\', backslashes));
                if i >= chars.len() || (is_blank(chars[i]) && !in_quotes) {
                    break;
                }
                arg.push(chars[i]);
                i += 1;
            }
            args.push(arg);
        }
        args
    }

    fn is_single_quote(c: char) -> bool {
        matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}')
    }

    /// Reads a PowerShell single-quoted string at the start of `text`; returns its value and the rest of the text.
    /// Inside, two consecutive quote characters (any of `' ‘ ’ ‚ ‛`) stand for one; a single one ends the string.
    pub fn single_quoted(text: &str) -> Option<(String, &str)> {
        let mut chars = text.char_indices().peekable();
        let (_, first) = chars.next()?;
        if !is_single_quote(first) {
            return None;
        }
        let mut value = String::new();
        while let Some((index, c)) = chars.next() {
            if is_single_quote(c) {
                match chars.peek() {
                    Some(&(_, next)) if is_single_quote(next) => {
                        value.push(next);
                        chars.next();
                    }
                    _ => return Some((value, &text[index + c.len_utf8()..])),
                }
            } else {
                value.push(c);
            }
        }
        None
    }
}

/// cmd.exe then MSVC: the argv the program receives, or the hazard.
fn program_argv(line: &str) -> Result<Vec<String>, model::Hazard> {
    Ok(model::argv(&model::cmd(line)?))
}

#[test]
fn the_model_reads_the_reference_examples_as_documented() {
    // windows-commands.md §1.2: a binPath whose program path holds spaces carries inner quotes.
    let argv = program_argv(r#"sc.exe create x binPath= "\"C:\Program Files\x\x.exe\" --flag" start= auto"#).unwrap();
    assert_eq!(argv, ["sc.exe", "create", "x", "binPath=", r#""C:\Program Files\x\x.exe" --flag"#, "start=", "auto"]);
    assert_eq!(model::argv(&argv[4]), [r"C:\Program Files\x\x.exe", "--flag"]);
    // §2: metacharacters act outside quotes, `^` escapes them, `%` may expand.
    assert_eq!(program_argv("sc.exe query a&b"), Err(model::Hazard::Metacharacter('&')));
    assert_eq!(program_argv("sc.exe query a^&b").unwrap(), ["sc.exe", "query", "a&b"]);
    assert_eq!(program_argv(r#"x "a&b""#).unwrap(), ["x", "a&b"]);
    assert_eq!(program_argv("x %PATH%"), Err(model::Hazard::Percent));
    // MSVC backslash rules.
    assert_eq!(model::argv(r#"x a\\\"b "c d\\" e\f"#), ["x", r#"a\"b"#, r"c d\", r"e\f"]);
    assert_eq!(model::argv(r#"x "" "a""b""#), ["x", "", r#"a"b"#]);
    assert_eq!(model::single_quoted("'it''s' rest"), Some(("it's".to_owned(), " rest")));
}

fn spec(name: ServiceName, executable: WinPath, arguments: Vec<String>, display_name: String) -> ServiceSpec {
    ServiceSpec {
        name: name.clone(),
        display_name,
        description: String::new(),
        command: ServiceCommand { executable, arguments },
        start: StartType::Auto,
        dependencies: vec![ServiceName::new("containerd").expect("a valid name")],
        recovery: FailureActions::restart_after(300, &[Millis(10_000)]),
        failure_flag: false,
        extra_binaries: vec![],
        environment: Default::default(),
    }
}

/// Characters that stress the quoting rules.
const HARD: &str = " \"&%^$`'|<>()!\\/,;=*?[]\tüé€日‘’\u{1F600}";

fn text_from(alphabet: &'static str, max: usize) -> impl Strategy<Value = String> {
    let hard: Vec<char> = alphabet.chars().collect();
    let hard_char = proptest::sample::select(hard);
    let plain_char = proptest::char::range('a', 'e');
    proptest::collection::vec(prop_oneof![2 => hard_char, 1 => plain_char], 0..max)
        .prop_map(|chars| chars.into_iter().collect())
}

/// Any text from the hard alphabet (often invalid as a name or path).
fn hard_text(max: usize) -> impl Strategy<Value = String> {
    text_from(HARD, max)
}

/// Mostly valid service names (no space, `/`, `\`, `,`, wildcards or tabs), sometimes anything.
fn service_name() -> impl Strategy<Value = String> {
    prop_oneof![9 => text_from("\"&^$`'|<>()!;=üé€日‘’\u{1F600}", 12), 1 => hard_text(12)]
}

/// Mostly renderable arguments (every hard character but `%` and tab), sometimes anything.
fn argument() -> impl Strategy<Value = String> {
    prop_oneof![9 => text_from(" \"&^$`'|<>()!\\/,;=*?[]üé€日‘’\u{1F600}", 10), 1 => hard_text(10)]
}

/// Mostly valid path segments (legal characters, not ending in space or period), sometimes anything.
fn path_segment() -> impl Strategy<Value = String> {
    let legal = text_from(" &^$`'()!,;=[]üé€日‘’\u{1F600}", 8).prop_map(|text| format!("s{text}x"));
    prop_oneof![9 => legal, 1 => hard_text(8)]
}

fn has_unrenderable(text: &str) -> bool {
    text.contains('%') || text.chars().any(char::is_control)
}

proptest! {
    #[test]
    fn sc_create_round_trips_or_is_refused(
        name in service_name(),
        segments in proptest::collection::vec(path_segment(), 1..4),
        arguments in proptest::collection::vec(argument(), 0..4),
        display_name in argument(),
    ) {
        let Ok(name) = ServiceName::new(&name) else { return Ok(()) };
        let Ok(executable) = WinPath::parse(&format!(r"C:\{}.exe", segments.join(r"\"))) else { return Ok(()) };
        let spec = spec(name.clone(), executable.clone(), arguments.clone(), display_name.clone());
        let unrenderable = has_unrenderable(name.as_str())
            || has_unrenderable(executable.as_str())
            || arguments.iter().any(|argument| has_unrenderable(argument))
            || has_unrenderable(&display_name)
            || display_name.is_empty();
        match ScCommand::Create(Box::new(spec)).render() {
            Err(error) => {
                let expected = matches!(
                    error,
                    CommandError::PercentSign { .. }
                        | CommandError::ControlCharacter { .. }
                        | CommandError::EmptyDisplayName { .. }
                );
                prop_assert!(unrenderable && expected, "refused without cause: {error}");
            }
            Ok(rendered) => {
                prop_assert!(!unrenderable);
                prop_assert_eq!(rendered.shell, Shell::Cmd);
                let argv = program_argv(&rendered.line).map_err(|hazard| TestCaseError::fail(format!("{hazard:?} in {}", rendered.line)))?;
                let expected = vec![
                    "sc.exe".to_owned(), "create".to_owned(), name.as_str().to_owned(),
                    "binPath=".to_owned(), argv[4].clone(), "start=".to_owned(), "auto".to_owned(),
                    "depend=".to_owned(), "containerd".to_owned(), "DisplayName=".to_owned(), display_name.clone(),
                ];
                prop_assert_eq!(&argv, &expected, "line {}", rendered.line);
                let image = model::argv(&argv[4]);
                let mut expected_image = vec![executable.to_string()];
                expected_image.extend(arguments.iter().cloned());
                prop_assert_eq!(image, expected_image, "ImagePath {}", argv[4]);
            }
        }
    }

    #[test]
    fn certutil_paths_round_trip_or_are_refused(segments in proptest::collection::vec(path_segment(), 1..4)) {
        let Ok(path) = WinPath::parse(&format!(r"C:\{}.wmco-upload", segments.join(r"\"))) else { return Ok(()) };
        match FileHashes::new(std::slice::from_ref(&path)) {
            Err(error) => prop_assert!(
                has_unrenderable(path.as_str())
                    && matches!(error, CommandError::PercentSign { .. } | CommandError::ControlCharacter { .. }),
                "refused without cause: {error}"
            ),
            Ok(hashes) => {
                prop_assert!(!has_unrenderable(path.as_str()));
                let line = &hashes.command().line;
                let argv = program_argv(line).map_err(|hazard| TestCaseError::fail(format!("{hazard:?} in {line}")))?;
                let expected = ["certutil.exe", "-hashfile", path.as_str(), "SHA256"].map(str::to_owned);
                prop_assert_eq!(argv, expected.to_vec(), "line {}", line);
            }
        }
    }

    #[test]
    fn sc_description_and_control_verbs_round_trip_or_are_refused(name in service_name(), text in argument()) {
        let Ok(name) = ServiceName::new(&name) else { return Ok(()) };
        let description = ScCommand::Description { name: name.clone(), text: text.clone() }.render();
        if has_unrenderable(&text) || has_unrenderable(name.as_str()) {
            prop_assert!(description.is_err());
        } else {
            let line = description.unwrap().line;
            let argv = program_argv(&line).map_err(|hazard| TestCaseError::fail(format!("{hazard:?} in {line}")))?;
            prop_assert_eq!(argv, vec!["sc.exe".to_owned(), "description".to_owned(), name.to_string(), text]);
            for command in [ScCommand::Stop(name.clone()), ScCommand::Qc(name.clone())] {
                let line = command.render().unwrap().line;
                let argv = program_argv(&line).map_err(|hazard| TestCaseError::fail(format!("{hazard:?} in {line}")))?;
                prop_assert_eq!(&argv[2], name.as_str());
            }
        }
    }

    #[test]
    fn powershell_literals_survive_cmd_msvc_and_encoding(name in argument()) {
        let Ok(rule) = FirewallRule::new(&name, wmco_windows_services::Direction::Inbound, wmco_windows_services::Protocol::Tcp, 80) else {
            return Ok(());
        };
        for (script, marker) in [
            (PowerShellScript::remove_firewall_rule(&rule.name), "Remove-NetFirewallRule -Name "),
            (PowerShellScript::new_firewall_rule(&rule), "New-NetFirewallRule -Name "),
        ] {
            let rendered = script.render().unwrap();
            prop_assert_eq!(rendered.shell, Shell::PowerShell);
            let argv = program_argv(&rendered.line).map_err(|hazard| TestCaseError::fail(format!("{hazard:?}")))?;
            prop_assert_eq!(
                &argv[..7],
                &["powershell.exe", "-NoLogo", "-NonInteractive", "-NoProfile", "-ExecutionPolicy", "Bypass", "-EncodedCommand"]
            );
            prop_assert_eq!(argv.len(), 8);
            let text = decode_encoded_command(&argv[7]).unwrap();
            prop_assert_eq!(&text, script.text());
            let start = text.find(marker).unwrap() + marker.len();
            let (value, _) = model::single_quoted(&text[start..]).unwrap();
            prop_assert_eq!(&value, &name);
        }
    }

    #[test]
    fn paths_in_the_directory_script_survive_as_literals(segments in proptest::collection::vec(path_segment(), 1..4)) {
        let Ok(path) = WinPath::parse(&format!(r"C:\{}", segments.join(r"\"))) else { return Ok(()) };
        match PowerShellScript::ensure_directories(std::slice::from_ref(&path)) {
            Err(error) => {
                let refused_for_brackets = matches!(error, CommandError::WildcardInPath { .. });
                prop_assert!(refused_for_brackets && path.as_str().contains(['[', ']']));
            }
            Ok(script) => {
                let marker = "New-Item -ItemType Directory -Force -Path ";
                let start = script.text().find(marker).unwrap() + marker.len();
                let (value, rest) = model::single_quoted(&script.text()[start..]).unwrap();
                prop_assert_eq!(value, path.to_string());
                prop_assert!(rest.starts_with(" | Out-Null"));
            }
        }
    }

    #[test]
    fn win_path_parse_never_panics_and_round_trips(text in "\\PC{0,40}") {
        if let Ok(path) = WinPath::parse(&text) {
            prop_assert_eq!(WinPath::parse(&path.to_string()), Ok(path.clone()));
            prop_assert_eq!(WinPath::parse(&path.to_sftp()), Ok(path.clone()));
            if let Some(parent) = path.parent() {
                let name = path.file_name().unwrap();
                prop_assert_eq!(parent.join(name), Ok(path));
            }
        }
    }

    #[test]
    fn output_parsers_never_panic(text in "\\PC{0,200}", code in any::<u32>()) {
        let _ = parse_sc_query(&text);
        let _ = parse_sc_qc(&text);
        let _ = parse_sc_failure(&text, code);
        let _ = decode_encoded_command(&text);
        let _ = ProbeRequest::default().parse_output(&text);
        let _ = ServiceName::new(&text);
    }

    #[test]
    fn sc_parsers_never_panic_on_line_shaped_input(lines in proptest::collection::vec("[ A-Z_:0-9x(),]{0,40}", 0..14)) {
        let text = lines.join("\r\n");
        let _ = parse_sc_query(&text);
        let _ = parse_sc_qc(&text);
        let _ = parse_sc_failure(&format!("[SC] {text}"), 1060);
    }
}
