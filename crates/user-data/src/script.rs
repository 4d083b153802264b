//! The provisioning script: PowerShell of the product's own, inside the closed subset of
//! `windows-commands.md` §8, that makes a fresh Windows Server host reachable by the operator over SSH with its key
//! and nothing else.

use crate::key::PublicKey;

/// Where Win32-OpenSSH keeps its server configuration.
pub const SSH_DIRECTORY: &str = r"C:\ProgramData\ssh";
/// The server configuration file the script writes.
pub const SSHD_CONFIG: &str = r"C:\ProgramData\ssh\sshd_config";
/// The keys file sshd reads for members of Administrators (the shipped `Match Group administrators` block).
pub const ADMINISTRATORS_AUTHORIZED_KEYS: &str = r"C:\ProgramData\ssh\administrators_authorized_keys";
/// The Windows capability that installs OpenSSH Server.
pub const OPENSSH_SERVER_CAPABILITY: &str = "OpenSSH.Server~~~~0.0.1.0";

/// An inbound TCP rule the script (re)creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirewallRule {
    /// The rule's `-Name` (the names Windows and the node configuration use, so nothing is duplicated).
    pub name: &'static str,
    /// The rule's `-DisplayName`.
    pub display_name: &'static str,
    /// The local TCP port.
    pub port: u16,
}

/// The inbound ports opened: SSH, the kubelet (logs, exec, metrics) and windows_exporter.
pub const FIREWALL_RULES: [FirewallRule; 3] = [
    FirewallRule { name: "OpenSSH-Server-In-TCP", display_name: "OpenSSH SSH Server (sshd)", port: 22 },
    FirewallRule { name: "ContainerLogsPort", display_name: "Kubelet API (container logs and exec)", port: 10250 },
    FirewallRule { name: "WindowsExporter", display_name: "windows_exporter metrics", port: 9182 },
];

/// The complete `sshd_config` the script writes: public-key authentication only, SFTP for the operator's
/// uploads, and administrators' keys read from [`ADMINISTRATORS_AUTHORIZED_KEYS`]. Every keyword is valid in the
/// Win32-OpenSSH 7.7 and 8.1 builds shipped with Windows Server 2019 and 2022 (an unknown keyword would stop sshd).
pub const SSHD_CONFIG_LINES: [&str; 8] = [
    "AuthorizedKeysFile .ssh/authorized_keys",
    "PubkeyAuthentication yes",
    "PasswordAuthentication no",
    "ChallengeResponseAuthentication no",
    "PermitEmptyPasswords no",
    "Subsystem sftp sftp-server.exe",
    "Match Group administrators",
    "       AuthorizedKeysFile __PROGRAMDATA__/ssh/administrators_authorized_keys",
];

/// The provisioning script for `key`, without any platform wrapper.
///
/// In order: install the OpenSSH Server capability; make `sshd` start automatically and start it once (its first
/// start creates the host keys); replace the three inbound firewall rules; write [`SSHD_CONFIG_LINES`]; write the
/// key as the only line of [`ADMINISTRATORS_AUTHORIZED_KEYS`] (the old file is removed first, so no explicit
/// entry of an earlier ACL survives) and limit the file's ACL to Administrators and SYSTEM, by SID so localized
/// systems work too; restart `sshd` to read the configuration. Every failure stops the script with a non-zero
/// exit code; running it again is harmless.
///
/// ```
/// let key = wmco_user_data::PublicKey::parse(
///     "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDJqxXtLTB09WrBv58kWkXoCkTTC3YJP1KolNbUZY5jp",
/// )?;
/// let script = wmco_user_data::provisioning_script(&key);
/// assert!(script.starts_with("$ProgressPreference = 'SilentlyContinue'\n"));
/// assert!(script.contains("Set-Content -LiteralPath 'C:\\ProgramData\\ssh\\administrators_authorized_keys' -Value 'ssh-ed25519 AAAAC3"));
/// assert!(script.ends_with("exit 0\n"));
/// # Ok::<(), wmco_user_data::KeyError>(())
/// ```
pub fn provisioning_script(key: &PublicKey) -> String {
    let mut lines = vec![
        "$ProgressPreference = 'SilentlyContinue'".to_owned(),
        "$ErrorActionPreference = 'Stop'".to_owned(),
        format!("Add-WindowsCapability -Online -Name {OPENSSH_SERVER_CAPABILITY} | Out-Null"),
        "Set-Service -Name sshd -StartupType Automatic".to_owned(),
        "Start-Service sshd".to_owned(),
    ];
    for rule in FIREWALL_RULES {
        let name = literal(rule.name);
        lines.push(format!("if (Get-NetFirewallRule -Name {name} -ErrorAction SilentlyContinue) {{"));
        lines.push(format!("    Remove-NetFirewallRule -Name {name}"));
        lines.push("}".to_owned());
        lines.push(format!(
            "New-NetFirewallRule -Name {name} -DisplayName {} -Direction Inbound -Protocol TCP -LocalPort {} \
             -Action Allow -Enabled True | Out-Null",
            literal(rule.display_name),
            rule.port
        ));
    }
    let config_values: Vec<String> = SSHD_CONFIG_LINES.iter().map(|line| literal(line)).collect();
    lines.extend([
        format!("New-Item -ItemType Directory -Force -Path {} | Out-Null", literal(SSH_DIRECTORY)),
        format!(
            "Set-Content -LiteralPath {} -Value @({}) -Encoding ascii",
            literal(SSHD_CONFIG),
            config_values.join(", ")
        ),
        format!(
            "Remove-Item -LiteralPath {} -Recurse -Force -ErrorAction SilentlyContinue",
            literal(ADMINISTRATORS_AUTHORIZED_KEYS)
        ),
        format!(
            "Set-Content -LiteralPath {} -Value {} -Encoding ascii",
            literal(ADMINISTRATORS_AUTHORIZED_KEYS),
            literal(&key.authorized_key_line())
        ),
        format!(
            "icacls.exe {} /inheritance:r /grant '*S-1-5-32-544:F' /grant '*S-1-5-18:F' | Out-Null",
            literal(ADMINISTRATORS_AUTHORIZED_KEYS)
        ),
        "if ($LASTEXITCODE -ne 0) { exit $LASTEXITCODE }".to_owned(),
        "Restart-Service sshd".to_owned(),
        "exit 0".to_owned(),
    ]);
    let mut script = lines.join("\n");
    script.push('\n');
    script
}

/// A PowerShell single-quoted literal (`'` doubled).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_double_single_quotes() {
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(literal(r"C:\a b"), r"'C:\a b'");
    }

    #[test]
    fn every_port_the_nodes_need_is_opened() {
        let ports: Vec<u16> = FIREWALL_RULES.iter().map(|rule| rule.port).collect();
        assert_eq!(ports, [22, 10250, 9182]);
    }

    #[test]
    fn the_configuration_allows_keys_only() {
        assert!(SSHD_CONFIG_LINES.contains(&"PasswordAuthentication no"));
        assert!(SSHD_CONFIG_LINES.contains(&"PubkeyAuthentication yes"));
        assert!(!SSHD_CONFIG_LINES.iter().any(|line| line.contains("yes") && line.contains("Password")));
    }
}
