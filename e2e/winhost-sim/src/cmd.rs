//! cmd.exe as Win32-OpenSSH's exec shell (windows-commands.md §2): the 8,191-character limit, `%VAR%` expansion,
//! `^` escapes and `"..."` quoting, the `&`, `&&`, `||` operators, `>nul`/`2>nul`/`2>&1`/`> file` redirections,
//! the built-ins `if [not] exist`, `mkdir`/`md`, `echo`, `ver`, `exit /b`, and dispatch of native programs. Unknown
//! commands print the standard message, exit 9009 and are recorded.

use crate::disk::{Entry, WinPath};
use crate::host::{Host, Output};
use crate::native;

/// cmd.exe's limit on one command line.
pub const MAX_LINE_CHARS: usize = 8191;

/// The exit code of `cmd /c` for an unknown command.
pub const NOT_RECOGNIZED_EXIT: u32 = 9009;

/// How a command is joined to the previous one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Join {
    Always,
    OnSuccess,
    OnFailure,
}

/// Runs one command line as `cmd.exe /c "<line>"` does.
pub fn run_line(host: &mut Host, line: &str) -> Output {
    if line.chars().count() > MAX_LINE_CHARS {
        return Output::new("", "The command line is too long.\r\n", 1);
    }
    let expanded = expand_variables(host, line);
    let mut output = Output::default();
    let mut last_code = 0;
    for (join, segment) in split_segments(&expanded) {
        let run = match join {
            Join::Always => true,
            Join::OnSuccess => last_code == 0,
            Join::OnFailure => last_code != 0,
        };
        if !run {
            continue;
        }
        let result = run_segment(host, &segment);
        output.stdout.push_str(&result.stdout);
        output.stderr.push_str(&result.stderr);
        last_code = result.code;
    }
    output.code = last_code;
    output
}

/// Replaces `%NAME%` with the session environment's value; undefined names stay literal.
fn expand_variables(host: &Host, line: &str) -> String {
    let mut result = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('%') {
        result.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('%') {
            Some(end) if end > 0 => match host.session_env(&after[..end]) {
                Some(value) => {
                    result.push_str(&value);
                    rest = &after[end + 1..];
                }
                None => {
                    result.push('%');
                    rest = after;
                }
            },
            _ => {
                result.push('%');
                rest = after;
            }
        }
    }
    result.push_str(rest);
    result
}

/// Splits at `&`, `&&`, `||` outside quotes; `^` escapes the next character (and is removed) outside quotes.
fn split_segments(line: &str) -> Vec<(Join, String)> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut join = Join::Always;
    let mut in_quotes = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                in_quotes = !in_quotes;
                current.push(c);
            }
            '^' if !in_quotes => {
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            '&' if !in_quotes && current.ends_with('>') => current.push(c),
            '&' if !in_quotes => {
                segments.push((join, std::mem::take(&mut current)));
                join = if chars.peek() == Some(&'&') {
                    chars.next();
                    Join::OnSuccess
                } else {
                    Join::Always
                };
            }
            '|' if !in_quotes && chars.peek() == Some(&'|') => {
                chars.next();
                segments.push((join, std::mem::take(&mut current)));
                join = Join::OnFailure;
            }
            other => current.push(other),
        }
    }
    segments.push((join, current));
    segments.into_iter().filter(|(_, text)| !text.trim().is_empty()).collect()
}

/// Where a stream goes.
#[derive(Default)]
struct Redirections {
    stdout_null: bool,
    stderr_null: bool,
    stderr_to_stdout: bool,
    stdout_file: Option<(String, bool)>,
}

/// Removes redirections (outside quotes) from a segment.
fn take_redirections(segment: &str) -> (String, Redirections) {
    let mut redirections = Redirections::default();
    let mut command = String::new();
    let mut in_quotes = false;
    let chars: Vec<char> = segment.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if c == '"' {
            in_quotes = !in_quotes;
        }
        if c == '>' && !in_quotes {
            let stream = match command.chars().last() {
                Some('2') => {
                    command.pop();
                    2
                }
                Some('1') => {
                    command.pop();
                    1
                }
                _ => 1,
            };
            index += 1;
            let append = chars.get(index) == Some(&'>');
            if append {
                index += 1;
            }
            while chars.get(index) == Some(&' ') {
                index += 1;
            }
            let mut target = String::new();
            let mut target_quoted = false;
            while let Some(&t) = chars.get(index) {
                if t == '"' {
                    target_quoted = !target_quoted;
                } else if t == ' ' && !target_quoted {
                    break;
                } else {
                    target.push(t);
                }
                index += 1;
            }
            match (stream, target.to_ascii_lowercase().as_str()) {
                (2, "&1") => redirections.stderr_to_stdout = true,
                (2, "nul") => redirections.stderr_null = true,
                (1, "nul") => redirections.stdout_null = true,
                (2, _) => redirections.stderr_null = true,
                _ => redirections.stdout_file = Some((target, append)),
            }
            continue;
        }
        command.push(c);
        index += 1;
    }
    (command, redirections)
}

fn run_segment(host: &mut Host, segment: &str) -> Output {
    let (command, redirections) = take_redirections(segment);
    let mut output = run_command(host, command.trim_start().trim_start_matches('@'));
    if redirections.stderr_to_stdout {
        let stderr = std::mem::take(&mut output.stderr);
        output.stdout.push_str(&stderr);
    }
    if redirections.stderr_null {
        output.stderr.clear();
    }
    if let Some((target, append)) = redirections.stdout_file {
        let text = std::mem::take(&mut output.stdout);
        match WinPath::parse(&target) {
            Ok(path) => {
                let mut contents = if append { host.disk.read(&path).unwrap_or_default() } else { Vec::new() };
                contents.extend_from_slice(text.as_bytes());
                if host.disk.write(&path, &contents).is_err() {
                    output.stderr.push_str("The system cannot find the path specified.\r\n");
                    output.code = 1;
                }
            }
            Err(_) => {
                output.stderr.push_str("The system cannot find the path specified.\r\n");
                output.code = 1;
            }
        }
    }
    if redirections.stdout_null {
        output.stdout.clear();
    }
    output
}

/// Splits off the first word (quotes group, and are removed).
fn first_word(text: &str) -> (String, &str) {
    let text = text.trim_start();
    let mut word = String::new();
    let mut in_quotes = false;
    for (index, c) in text.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            ' ' | '\t' if !in_quotes => return (word, &text[index..]),
            other => word.push(other),
        }
    }
    (word, "")
}

fn run_command(host: &mut Host, command: &str) -> Output {
    let (name, rest) = first_word(command);
    match name.to_ascii_lowercase().as_str() {
        "" => Output::default(),
        "if" => run_if(host, rest),
        "mkdir" | "md" => mkdir(host, rest),
        "echo" => Output::ok(format!("{}\r\n", rest.trim_start())),
        "exit" => {
            let arguments = crate::argv::split(rest);
            let code = arguments.iter().find(|a| !a.eq_ignore_ascii_case("/b")).and_then(|a| a.parse::<i64>().ok());
            Output::new("", "", code.map_or(0, |code| code as u32))
        }
        "ver" => Output::ok(format!(
            "\r\nMicrosoft Windows [Version 10.0.{}.{}]\r\n",
            host.identity.build, host.identity.ubr
        )),
        _ => {
            let arguments = crate::argv::split(rest);
            match native::run(host, &name, &arguments, rest) {
                Some(output) => output,
                None => {
                    host.record_unknown("cmd", &name);
                    Output::new(
                        "",
                        format!(
                            "'{name}' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n"
                        ),
                        NOT_RECOGNIZED_EXIT,
                    )
                }
            }
        }
    }
}

/// `if [not] exist <path> <command>`.
fn run_if(host: &mut Host, rest: &str) -> Output {
    let (mut word, mut rest) = first_word(rest);
    let negate = word.eq_ignore_ascii_case("not");
    if negate {
        (word, rest) = first_word(rest);
    }
    if !word.eq_ignore_ascii_case("exist") {
        host.record_unknown("cmd", &format!("if {word}"));
        return Output::new("", format!("{word} was unexpected at this time.\r\n"), 255);
    }
    let (path_text, command) = first_word(rest);
    let wants_directory = path_text.ends_with('\\');
    let exists = WinPath::parse(&path_text)
        .ok()
        .and_then(|path| host.disk.entry(&path))
        .is_some_and(|entry| !wants_directory || entry == Entry::Directory);
    if exists != negate { run_command(host, command.trim()) } else { Output::default() }
}

fn mkdir(host: &mut Host, rest: &str) -> Output {
    let mut output = Output::default();
    for argument in crate::argv::split(rest) {
        let Ok(path) = WinPath::parse(&argument) else {
            output.stderr.push_str("The filename, directory name, or volume label syntax is incorrect.\r\n");
            output.code = 1;
            continue;
        };
        if host.disk.entry(&path).is_some() {
            output.stderr.push_str(&format!("A subdirectory or file {argument} already exists.\r\n"));
            output.code = 1;
        } else if host.disk.create_dir_all(&path).is_err() {
            output.stderr.push_str("The system cannot find the path specified.\r\n");
            output.code = 1;
        }
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::tests::test_host;

    #[test]
    fn unknown_commands_exit_9009_and_are_recorded() {
        let (_root, mut host) = test_host();
        let output = host.exec("SSH-2.0-test", "frobnicate --now");
        assert_eq!(output.code, 9009);
        assert_eq!(
            output.stderr,
            "'frobnicate' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n"
        );
        assert_eq!(host.unknown_commands[0].command, "frobnicate");
        assert_eq!(host.command_log[0].client, "SSH-2.0-test");
    }

    #[test]
    fn long_lines_fail_and_operators_follow_errorlevels() {
        let (_root, mut host) = test_host();
        let long = format!("echo {}", "x".repeat(8190));
        assert_eq!(host.exec("c", &long).stderr, "The command line is too long.\r\n");
        assert_eq!(host.exec("c", &long[..8191]).code, 0);
        let output = host.exec("c", "nosuch & echo b");
        assert_eq!((output.stdout.as_str(), output.code), ("b\r\n", 0));
        let output = host.exec("c", "nosuch && echo b");
        assert_eq!((output.stdout.as_str(), output.code), ("", 9009));
        let output = host.exec("c", "nosuch 2>nul || echo fallback^&more");
        assert_eq!((output.stdout.as_str(), output.stderr.as_str(), output.code), ("fallback&more\r\n", "", 0));
        assert_eq!(host.exec("c", "echo %COMPUTERNAME% %UNDEFINED%").stdout, "WINWORKER-1 %UNDEFINED%\r\n");
        assert_eq!(host.exec("c", "echo \"a & b\"").stdout, "\"a & b\"\r\n");
    }

    #[test]
    fn if_exist_and_mkdir_behave_like_cmd() {
        let (_root, mut host) = test_host();
        assert_eq!(host.exec("c", r#"if not exist "C:\k\a" mkdir "C:\k\a""#).code, 0);
        assert_eq!(host.disk.entry(&WinPath::parse(r"C:\k\a").unwrap()), Some(Entry::Directory));
        assert_eq!(host.exec("c", r#"if not exist "C:\k\a" mkdir "C:\k\a""#), Output::default());
        let output = host.exec("c", r"mkdir C:\k\a");
        assert_eq!((output.stderr.as_str(), output.code), ("A subdirectory or file C:\\k\\a already exists.\r\n", 1));
        assert_eq!(host.exec("c", r"if exist C:\k\ echo yes").stdout, "yes\r\n");
        assert_eq!(host.exec("c", r"echo hi > C:\k\a\f.txt").stdout, "");
        assert_eq!(host.disk.read(&WinPath::parse(r"C:\k\a\f.txt").unwrap()).unwrap(), b"hi \r\n");
        assert_eq!(host.exec("c", r"if exist C:\k\a\f.txt\ echo dir").stdout, "");
        assert_eq!(host.exec("c", "ver").stdout, "\r\nMicrosoft Windows [Version 10.0.20348.2340]\r\n");
        assert_eq!(host.exec("c", "exit /b 3").code, 3);
        assert!(host.unknown_commands.is_empty());
    }
}
