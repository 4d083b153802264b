//! `powershell.exe` (Windows PowerShell 5.1) over the host's state: the command-line switches of
//! windows-commands.md §3 (`-EncodedCommand` with UTF-16LE Base64, `-File`, `-Command`), a parser and evaluator of
//! the closed subset of §8, exit codes per §3, and stderr as CLIXML under `-EncodedCommand` or as console text
//! otherwise.

pub mod ast;
pub mod cmdlets;
pub mod eval;
pub mod format;
pub mod parser;
pub mod provisioning;
pub mod rest;
pub mod value;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::disk::WinPath;
use crate::host::{Host, Output};

/// powershell.exe's exit code for an unusable command line (`-File` naming a missing script).
pub const BAD_COMMAND_LINE_EXIT: u32 = 4_294_770_688;

/// How errors reach stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorStream {
    /// `#< CLIXML` serialized records (`-EncodedCommand` with redirected stderr).
    Clixml,
    /// Console text.
    Text,
}

/// Runs `powershell.exe` with its argv (after the program name).
pub fn run_powershell_exe(host: &mut Host, arguments: &[String]) -> Output {
    let mut index = 0;
    while index < arguments.len() {
        let argument = arguments[index].to_ascii_lowercase();
        let switch = argument.trim_start_matches(['-', '/']);
        match switch {
            "nologo" | "noninteractive" | "noni" | "noprofile" | "nop" | "sta" | "mta" => index += 1,
            "executionpolicy" | "ep" | "ex" | "inputformat" | "outputformat" | "windowstyle" | "w" => index += 2,
            "encodedcommand" | "enc" | "ec" | "e" => {
                let Some(encoded) = arguments.get(index + 1) else {
                    return Output::new(
                        "",
                        "Missing argument for parameter EncodedCommand.\r\n",
                        BAD_COMMAND_LINE_EXIT,
                    );
                };
                return match decode(encoded) {
                    Some(script) => run_script(host, &script, ErrorStream::Clixml),
                    None => Output::new(
                        "",
                        "Cannot process the command because the value specified with -EncodedCommand is not properly encoded. The value must be Base64 encoded.\r\n",
                        BAD_COMMAND_LINE_EXIT,
                    ),
                };
            }
            "file" | "f" => {
                let Some(path_text) = arguments.get(index + 1) else {
                    return Output::new("", "Missing argument for parameter File.\r\n", BAD_COMMAND_LINE_EXIT);
                };
                let script = WinPath::parse(path_text).ok().and_then(|path| host.disk.read(&path).ok());
                return match script {
                    Some(bytes) => {
                        let text = String::from_utf8_lossy(bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(&bytes))
                            .into_owned();
                        run_script(host, &text, ErrorStream::Text)
                    }
                    None => Output::new(
                        "",
                        format!(
                            "The argument '{path_text}' to the -File parameter does not exist. Provide the path to an existing '.ps1' file as an argument to the -File parameter.\r\n"
                        ),
                        BAD_COMMAND_LINE_EXIT,
                    ),
                };
            }
            "command" | "c" => return run_script(host, &arguments[index + 1..].join(" "), ErrorStream::Text),
            _ if argument.starts_with('-') => {
                return Output::new(
                    "",
                    format!("-{switch} : The term '-{switch}' is not a valid parameter.\r\n"),
                    BAD_COMMAND_LINE_EXIT,
                );
            }
            _ => return run_script(host, &arguments[index..].join(" "), ErrorStream::Text),
        }
    }
    Output::new("", "powershell.exe: an interactive session cannot be opened without a console.\r\n", 1)
}

/// Decodes an `-EncodedCommand` argument (Base64 of UTF-16LE).
pub fn decode(encoded: &str) -> Option<String> {
    let bytes = STANDARD.decode(encoded.trim()).ok()?;
    if bytes.len() % 2 != 0 {
        return None;
    }
    let units: Vec<u16> = bytes.chunks_exact(2).map(|pair| u16::from_le_bytes([pair[0], pair[1]])).collect();
    String::from_utf16(&units).ok()
}

/// Parses and runs a script; stdout, stderr in `stream`'s form, and the §3 exit code.
pub fn run_script(host: &mut Host, script: &str, stream: ErrorStream) -> Output {
    host.refresh();
    let statements = match parser::parse(script) {
        Ok(statements) => statements,
        Err(error) => {
            let record = eval::PsError::new(
                "",
                format!("{error}"),
                "ParserError",
                "ParentContainsErrorRecordException",
                "ParseException",
                "",
            );
            return Output::new("", render_errors(&[record], stream), 1);
        }
    };
    let mut session = eval::Session::new(host);
    let code = session.run_script(&statements);
    let stdout = std::mem::take(&mut session.stdout);
    let stderr = render_errors(&session.errors, stream);
    Output::new(stdout, stderr, code)
}

fn render_errors(errors: &[eval::PsError], stream: ErrorStream) -> String {
    if errors.is_empty() {
        return String::new();
    }
    let text: String = errors.iter().map(eval::PsError::render).collect();
    match stream {
        ErrorStream::Text => text,
        ErrorStream::Clixml => {
            let mut xml = String::from(
                "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\">",
            );
            for line in text.split("\r\n").filter(|line| !line.is_empty()) {
                xml.push_str("<S S=\"Error\">");
                xml.push_str(&xml_escape(line));
                xml.push_str("_x000D__x000A_</S>");
            }
            xml.push_str("</Objs>");
            xml
        }
    }
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

/// Base64 of a script's UTF-16LE encoding, as `-EncodedCommand` takes it.
pub fn encode(script: &str) -> String {
    let bytes: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
    STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests;
