//! PowerShell scripts of the product's closed subset (windows-commands.md §8) and their rendering into a
//! `powershell.exe -NoLogo -NonInteractive -NoProfile -ExecutionPolicy Bypass -EncodedCommand <base64 UTF-16LE>`
//! line — or, when that line would pass [`MAX_COMMAND_LINE_CHARS`], into a content-addressed script file under
//! `C:\k\wmco\scripts\` plus a `-File` line. The builder decides; the caller uploads.
//!
//! Every script starts with `$ProgressPreference = 'SilentlyContinue'` and `$ErrorActionPreference = 'Stop'` and
//! ends with `exit 0`; values only ever appear as single-quoted literals.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::command::{CommandError, MAX_COMMAND_LINE_CHARS, RenderedCommand, ScriptFile, Shell};
use crate::host::{EnvVarName, FirewallRule, RegistryData, RegistryValue};
use crate::path::WinPath;
use crate::quote::powershell_literal;
use crate::service::ServiceName;

/// The fixed start of every PowerShell command line (windows-commands.md §3).
pub const POWERSHELL_PREFIX: &str = "powershell.exe -NoLogo -NonInteractive -NoProfile -ExecutionPolicy Bypass";

/// The first statements of every script the product sends: no progress records (they would go to stderr as CLIXML)
/// and every error terminating, so a failing statement ends the script with exit code 1.
pub const POWERSHELL_PREAMBLE: [&str; 2] =
    ["$ProgressPreference = 'SilentlyContinue'", "$ErrorActionPreference = 'Stop'"];

/// The directory content-addressed script files go to.
pub const SCRIPT_DIRECTORY: &str = r"C:\k\wmco\scripts";

/// UTF-8 byte-order mark; Windows PowerShell 5.1 reads a script file without one in the ANSI code page.
const UTF8_BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// A script of the closed PowerShell subset.
///
/// ```
/// use wmco_windows_services::{PowerShellScript, Shell, WinPath, decode_encoded_command};
/// let script = PowerShellScript::ensure_directories(&[WinPath::parse(r"C:\k\cni")?])?;
/// let rendered = script.render()?;
/// assert_eq!(rendered.shell, Shell::PowerShell);
/// let encoded = rendered.line.rsplit(' ').next().unwrap_or_default();
/// assert_eq!(decode_encoded_command(encoded).as_deref(), Some(script.text()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PowerShellScript {
    /// The script text, statements separated by `\n`.
    text: String,
}

impl PowerShellScript {
    /// A script made of the standard preamble, `statements` and `exit 0`.
    pub(crate) fn from_statements(statements: &[String]) -> PowerShellScript {
        let mut lines: Vec<String> = POWERSHELL_PREAMBLE.map(str::to_owned).to_vec();
        lines.extend(statements.iter().cloned());
        lines.push("exit 0".to_owned());
        PowerShellScript { text: lines.join("\n") }
    }

    /// The script text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Creates each directory (and its parents); existing ones are left alone.
    ///
    /// # Errors
    /// [`CommandError::WildcardInPath`] for a path holding `[` or `]` (New-Item's `-Path` interprets them).
    pub fn ensure_directories(directories: &[WinPath]) -> Result<PowerShellScript, CommandError> {
        let mut statements = Vec::with_capacity(directories.len());
        for directory in directories {
            statements.push(format!(
                "New-Item -ItemType Directory -Force -Path {} | Out-Null",
                wildcard_free_literal(directory.as_str())?
            ));
        }
        Ok(PowerShellScript::from_statements(&statements))
    }

    /// Restricts directories to SYSTEM and Administrators (module `access`): each of `reset` loses its explicit
    /// entries and inherits again (`icacls /reset`), then each of `protect` stops inheriting and grants SYSTEM and
    /// Administrators full control that everything below inherits. An icacls failure ends the script with its exit
    /// code.
    ///
    /// ```
    /// use wmco_windows_services::{PowerShellScript, WinPath};
    /// let script = PowerShellScript::restrict_directories(&[], &[WinPath::parse(r"C:\k")?]);
    /// assert!(script.text().contains(
    ///     "icacls.exe $p /inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' /grant:r '*S-1-5-32-544:(OI)(CI)F' /q"
    /// ));
    /// # Ok::<(), wmco_windows_services::PathError>(())
    /// ```
    pub fn restrict_directories(reset: &[WinPath], protect: &[WinPath]) -> PowerShellScript {
        PowerShellScript::from_statements(&crate::access::restrict_statements(reset, protect))
    }

    /// Writes `service`'s own `Environment` value (REG_MULTI_SZ, one `NAME=value` per entry, windows-commands.md
    /// §4.1) under its key in `HKLM\SYSTEM\CurrentControlSet\Services`, or removes the value when `entries` is
    /// empty. The service sees it from its next start.
    ///
    /// ```
    /// use wmco_windows_services::{PowerShellScript, ServiceName};
    /// let script = PowerShellScript::set_service_environment(&ServiceName::new("kubelet")?, &["NO_PROXY=.svc".into()]);
    /// assert!(script.text().contains(
    ///     "New-ItemProperty -Path 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\kubelet' -Name Environment \
    ///      -PropertyType MultiString -Value @('NO_PROXY=.svc') -Force | Out-Null"
    /// ));
    /// # Ok::<(), wmco_windows_services::ServiceNameError>(())
    /// ```
    pub fn set_service_environment(service: &ServiceName, entries: &[String]) -> PowerShellScript {
        let key = powershell_literal(&format!(r"HKLM:\SYSTEM\CurrentControlSet\Services\{}", service.as_str()));
        let statement = if entries.is_empty() {
            format!(
                "$service = Get-ItemProperty {key}; if ($null -ne $service.Environment) {{ Remove-ItemProperty -Path \
                 {key} -Name Environment }}"
            )
        } else {
            let values: Vec<String> = entries.iter().map(|entry| powershell_literal(entry)).collect();
            format!(
                "New-ItemProperty -Path {key} -Name Environment -PropertyType MultiString -Value @({}) -Force | Out-Null",
                values.join(", ")
            )
        };
        PowerShellScript::from_statements(&[statement])
    }

    /// Empties `directory`: removes it with everything in it, then creates it again with `subdirectories`.
    ///
    /// # Errors
    /// [`CommandError::WildcardInPath`] for a path holding `[` or `]`.
    pub fn reset_directory(directory: &WinPath, subdirectories: &[WinPath]) -> Result<PowerShellScript, CommandError> {
        let mut statements = vec![format!(
            "Remove-Item -LiteralPath {} -Recurse -Force -ErrorAction SilentlyContinue",
            powershell_literal(directory.as_str())
        )];
        for path in std::iter::once(directory).chain(subdirectories) {
            statements.push(format!(
                "New-Item -ItemType Directory -Force -Path {} | Out-Null",
                wildcard_free_literal(path.as_str())?
            ));
        }
        Ok(PowerShellScript::from_statements(&statements))
    }

    /// Sets (`Some`) or removes (`None`) machine environment variables.
    pub fn set_machine_env(variables: &BTreeMap<EnvVarName, Option<String>>) -> PowerShellScript {
        let statements: Vec<String> = variables
            .iter()
            .map(|(name, value)| {
                let value = value.as_deref().map_or_else(|| "$null".to_owned(), powershell_literal);
                format!(
                    "[Environment]::SetEnvironmentVariable({}, {value}, 'Machine')",
                    powershell_literal(name.as_str())
                )
            })
            .collect();
        PowerShellScript::from_statements(&statements)
    }

    /// Creates a firewall rule allowing traffic to a local port.
    pub fn new_firewall_rule(rule: &FirewallRule) -> PowerShellScript {
        let name = powershell_literal(&rule.name);
        PowerShellScript::from_statements(&[format!(
            "New-NetFirewallRule -Name {name} -DisplayName {name} -Direction {} -Protocol {} -LocalPort {} \
             -Action Allow -Enabled True | Out-Null",
            rule.direction.powershell_value(),
            rule.protocol.powershell_value(),
            rule.local_port
        )])
    }

    /// Removes the firewall rule called `name`.
    pub fn remove_firewall_rule(name: &str) -> PowerShellScript {
        PowerShellScript::from_statements(&[format!("Remove-NetFirewallRule -Name {}", powershell_literal(name))])
    }

    /// Excludes `program` from Windows Defender's scanning (`Add-MpPreference`, idempotent).
    pub fn add_defender_exclusion(program: &WinPath) -> PowerShellScript {
        PowerShellScript::from_statements(&[format!(
            "Add-MpPreference -ExclusionProcess {}",
            powershell_literal(program.as_str())
        )])
    }

    /// Removes each file; an absent one is skipped.
    pub fn remove_files(files: &[WinPath]) -> PowerShellScript {
        let statements: Vec<String> = files
            .iter()
            .map(|file| {
                format!(
                    "Remove-Item -LiteralPath {} -Force -ErrorAction SilentlyContinue",
                    powershell_literal(file.as_str())
                )
            })
            .collect();
        PowerShellScript::from_statements(&statements)
    }

    /// Removes the process exclusion of `program` from Windows Defender.
    pub fn remove_defender_exclusion(program: &WinPath) -> PowerShellScript {
        PowerShellScript::from_statements(&[format!(
            "Remove-MpPreference -ExclusionProcess {}",
            powershell_literal(program.as_str())
        )])
    }

    /// Writes a registry value (its key must exist).
    pub fn set_registry_value(value: &RegistryValue) -> PowerShellScript {
        let (data, property_type) = match &value.data {
            RegistryData::Dword(number) => (number.to_string(), "DWORD"),
            RegistryData::String(text) => (powershell_literal(text), "String"),
        };
        PowerShellScript::from_statements(&[format!(
            "New-ItemProperty -Path {} -Name {} -Value {data} -PropertyType {property_type} -Force | Out-Null",
            powershell_literal(&value.key.provider_path()),
            powershell_literal(value.name.as_str()),
        )])
    }

    /// Renders the command line: `-EncodedCommand` when it fits in [`MAX_COMMAND_LINE_CHARS`], else a `-File`
    /// line plus the [`ScriptFile`] to upload first.
    ///
    /// # Errors
    /// [`CommandError::ScriptPath`] if the script file's path were invalid (it is built from a constant directory
    /// and a hex digest).
    pub fn render(&self) -> Result<RenderedCommand, CommandError> {
        let encoded_line = format!("{POWERSHELL_PREFIX} -EncodedCommand {}", encode_command(&self.text));
        if encoded_line.len() <= MAX_COMMAND_LINE_CHARS {
            return Ok(RenderedCommand { shell: Shell::PowerShell, line: encoded_line, script_file: None });
        }
        let mut contents = UTF8_BOM.to_vec();
        contents.extend_from_slice(self.text.as_bytes());
        let sha256 = hex::encode(Sha256::digest(&contents));
        let path = WinPath::parse(SCRIPT_DIRECTORY).and_then(|directory| directory.join(&format!("{sha256}.ps1")));
        let path = path.map_err(|source| CommandError::ScriptPath { source })?;
        let line = format!("{POWERSHELL_PREFIX} -File {path}");
        Ok(RenderedCommand { shell: Shell::PowerShell, line, script_file: Some(ScriptFile { path, contents, sha256 }) })
    }
}

/// Base64 of the script's UTF-16LE encoding (no BOM), as `-EncodedCommand` expects.
pub fn encode_command(script: &str) -> String {
    let bytes: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
    STANDARD.encode(bytes)
}

/// Decodes an `-EncodedCommand` argument back to the script text (`None` if it is not base64 of UTF-16LE).
pub fn decode_encoded_command(encoded: &str) -> Option<String> {
    let bytes = STANDARD.decode(encoded).ok()?;
    if bytes.len() % 2 != 0 {
        return None;
    }
    let units: Vec<u16> = bytes.chunks_exact(2).map(|pair| u16::from_le_bytes([pair[0], pair[1]])).collect();
    String::from_utf16(&units).ok()
}

/// The statements of a command this crate rendered as `-EncodedCommand` (the preamble, statements, `exit 0`), when
/// none of them holds `exit`: such statements can run inside another script of the same form and end nowhere but at
/// their end (a terminating error, under `$ErrorActionPreference = 'Stop'`, ends the whole script with exit code 1).
pub(crate) fn plain_statements(command: &RenderedCommand) -> Option<Vec<String>> {
    let encoded = command.line.strip_prefix(POWERSHELL_PREFIX)?.strip_prefix(" -EncodedCommand ")?;
    if command.shell != Shell::PowerShell || command.script_file.is_some() {
        return None;
    }
    let text = decode_encoded_command(encoded)?;
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.len() < 3 || lines[..2] != POWERSHELL_PREAMBLE || lines.pop() != Some("exit 0") {
        return None;
    }
    let statements = &lines[2..];
    let ends_early = statements.iter().any(|line| line.to_ascii_lowercase().contains("exit"));
    (!ends_early).then(|| statements.iter().map(|line| (*line).to_owned()).collect())
}

/// A single-quoted literal for a `-Path` parameter, refusing the wildcard brackets it would interpret.
pub(crate) fn wildcard_free_literal(path: &str) -> Result<String, CommandError> {
    if path.contains(['[', ']']) {
        return Err(CommandError::WildcardInPath { path: path.to_owned() });
    }
    Ok(powershell_literal(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Direction, Protocol, RegistryKey, RegistryValueName};

    fn path(text: &str) -> WinPath {
        WinPath::parse(text).unwrap()
    }

    #[test]
    fn encoded_command_is_base64_of_utf16le() {
        assert_eq!(encode_command("exit 0"), "ZQB4AGkAdAAgADAA");
        assert_eq!(decode_encoded_command("ZQB4AGkAdAAgADAA").as_deref(), Some("exit 0"));
        assert_eq!(encode_command("ü"), "/AA=");
        assert_eq!(decode_encoded_command("not base64!"), None);
        assert_eq!(decode_encoded_command("QQ=="), None);
    }

    #[test]
    fn directory_script_is_exact() {
        let script = PowerShellScript::ensure_directories(&[path(r"C:\k\cni"), path(r"C:\var\log\it's")]).unwrap();
        assert_eq!(
            script.text(),
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             New-Item -ItemType Directory -Force -Path 'C:\\k\\cni' | Out-Null\n\
             New-Item -ItemType Directory -Force -Path 'C:\\var\\log\\it''s' | Out-Null\nexit 0"
        );
        assert_eq!(
            PowerShellScript::ensure_directories(&[path(r"C:\k\[x]")]),
            Err(CommandError::WildcardInPath { path: r"C:\k\[x]".into() })
        );
    }

    #[test]
    fn restricting_script_is_exact_and_stays_on_the_command_line() {
        let log_directories: Vec<WinPath> = crate::SERVICE_LOG_DIRECTORIES.iter().map(|text| path(text)).collect();
        let mut protect = vec![path(r"C:\k"), path(r"C:\var\lib\kubelet")];
        protect.extend(log_directories);
        let script = PowerShellScript::restrict_directories(&[path(r"C:\k\cni")], &protect);
        assert_eq!(
            script.text(),
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             foreach ($p in @('C:\\k\\cni')) { icacls.exe $p /reset /q; if ($LASTEXITCODE -ne 0) { exit $LASTEXITCODE } }\n\
             foreach ($p in @('C:\\k', 'C:\\var\\lib\\kubelet', 'C:\\var\\log\\containerd', 'C:\\var\\log\\csi-proxy', \
             'C:\\var\\log\\hybrid-overlay', 'C:\\var\\log\\kube-proxy', 'C:\\var\\log\\kubelet', \
             'C:\\var\\log\\windows_exporter')) { icacls.exe $p /inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' \
             /grant:r '*S-1-5-32-544:(OI)(CI)F' /q; if ($LASTEXITCODE -ne 0) { exit $LASTEXITCODE } }\nexit 0"
        );
        let rendered = script.render().unwrap();
        assert!(rendered.script_file.is_none(), "every directory of a node fits one -EncodedCommand line");
        assert_eq!(plain_statements(&rendered), None, "it exits early, so it keeps its own process in a chain");
    }

    #[test]
    fn env_firewall_and_registry_scripts_are_exact() {
        let mut variables = BTreeMap::new();
        variables.insert(EnvVarName::new("HTTP_PROXY").unwrap(), Some("http://proxy:3128".to_owned()));
        variables.insert(EnvVarName::new("NO_PROXY").unwrap(), None);
        assert_eq!(
            PowerShellScript::set_machine_env(&variables).text(),
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             [Environment]::SetEnvironmentVariable('HTTP_PROXY', 'http://proxy:3128', 'Machine')\n\
             [Environment]::SetEnvironmentVariable('NO_PROXY', $null, 'Machine')\nexit 0"
        );
        let rule = FirewallRule::new("ContainerLogsPort", Direction::Inbound, Protocol::Tcp, 10250).unwrap();
        assert_eq!(
            PowerShellScript::new_firewall_rule(&rule).text(),
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             New-NetFirewallRule -Name 'ContainerLogsPort' -DisplayName 'ContainerLogsPort' -Direction Inbound \
             -Protocol TCP -LocalPort 10250 -Action Allow -Enabled True | Out-Null\nexit 0"
        );
        let containerd = path(r"C:\k\containerd\containerd.exe");
        assert!(
            PowerShellScript::add_defender_exclusion(&containerd)
                .text()
                .contains("\nAdd-MpPreference -ExclusionProcess 'C:\\k\\containerd\\containerd.exe'\n")
        );
        assert!(
            PowerShellScript::remove_defender_exclusion(&containerd)
                .text()
                .contains("\nRemove-MpPreference -ExclusionProcess 'C:\\k\\containerd\\containerd.exe'\n")
        );
        assert_eq!(
            PowerShellScript::remove_firewall_rule("WindowsExporter").text(),
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             Remove-NetFirewallRule -Name 'WindowsExporter'\nexit 0"
        );
        let value = RegistryValue {
            key: RegistryKey::new(r"HKLM\SOFTWARE\OpenSSH").unwrap(),
            name: RegistryValueName::new("DefaultShell").unwrap(),
            data: RegistryData::String(r"C:\Windows\System32\cmd.exe".into()),
        };
        assert_eq!(
            PowerShellScript::set_registry_value(&value).text(),
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             New-ItemProperty -Path 'HKLM:\\SOFTWARE\\OpenSSH' -Name 'DefaultShell' \
             -Value 'C:\\Windows\\System32\\cmd.exe' -PropertyType String -Force | Out-Null\nexit 0"
        );
        let dword = RegistryValue { data: RegistryData::Dword(1), ..value };
        assert!(PowerShellScript::set_registry_value(&dword).text().contains("-Value 1 -PropertyType DWORD -Force"));
    }

    #[test]
    fn short_scripts_render_as_encoded_command() {
        let script = PowerShellScript::remove_firewall_rule("x");
        let rendered = script.render().unwrap();
        assert_eq!(rendered.shell, Shell::PowerShell);
        assert_eq!(rendered.script_file, None);
        let prefix = "powershell.exe -NoLogo -NonInteractive -NoProfile -ExecutionPolicy Bypass -EncodedCommand ";
        let encoded = rendered.line.strip_prefix(prefix).unwrap();
        assert_eq!(decode_encoded_command(encoded).unwrap(), script.text());
    }

    #[test]
    fn long_scripts_render_as_content_addressed_file() {
        let directories: Vec<WinPath> =
            (0..200).map(|index| path(&format!(r"C:\var\log\directory-number-{index}"))).collect();
        let script = PowerShellScript::ensure_directories(&directories).unwrap();
        let rendered = script.render().unwrap();
        let file = rendered.script_file.unwrap();
        assert_eq!(&file.contents[..3], &[0xEF, 0xBB, 0xBF]);
        assert_eq!(&file.contents[3..], script.text().as_bytes());
        assert_eq!(file.sha256, hex::encode(Sha256::digest(&file.contents)));
        assert_eq!(file.path.to_string(), format!(r"C:\k\wmco\scripts\{}.ps1", file.sha256));
        assert_eq!(
            rendered.line,
            format!(
                r"powershell.exe -NoLogo -NonInteractive -NoProfile -ExecutionPolicy Bypass -File C:\k\wmco\scripts\{}.ps1",
                file.sha256
            )
        );
    }

    #[test]
    fn the_switch_to_a_file_happens_exactly_past_the_limit() {
        // windows-commands.md §3: the prefix is 90 characters and Base64 of BMP text is 4*ceil(2*chars/3) long.
        assert_eq!(POWERSHELL_PREFIX.len() + " -EncodedCommand ".len(), 90);
        let fits = |script: &PowerShellScript| {
            90 + 4 * (2 * script.text().chars().count()).div_ceil(3) <= MAX_COMMAND_LINE_CHARS
        };
        let mut directories = Vec::new();
        let mut index = 0;
        loop {
            directories.push(path(&format!(r"C:\d{index}")));
            let script = PowerShellScript::ensure_directories(&directories).unwrap();
            let rendered = script.render().unwrap();
            assert_eq!(rendered.script_file.is_none(), fits(&script), "{index}");
            assert!(rendered.line.len() <= MAX_COMMAND_LINE_CHARS);
            if rendered.script_file.is_some() {
                break;
            }
            index += 1;
        }
        assert!(index > 40, "{index}");
    }
}
