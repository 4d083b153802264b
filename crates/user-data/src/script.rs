//! The provisioning script: PowerShell of the product's own, inside the closed subset of
//! `windows-commands.md` §8 (plus the few statements `docs/user-data.md` lists as used beyond it), that makes a fresh
//! Windows Server host reachable by the operator over SSH with its key and nothing else: the local `Administrator`
//! account enabled where it is the login, OpenSSH Server, the firewall, key-only access; on AWS also a current
//! EC2Launch v2 keeping the instance metadata routes across reboots.

use wmco_vocabulary::Platform;

use crate::key::PublicKey;

/// Where Win32-OpenSSH keeps its server configuration.
pub const SSH_DIRECTORY: &str = r"C:\ProgramData\ssh";
/// The server configuration file the script writes.
pub const SSHD_CONFIG: &str = r"C:\ProgramData\ssh\sshd_config";
/// The keys file sshd reads for members of Administrators (the shipped `Match Group administrators` block).
pub const ADMINISTRATORS_AUTHORIZED_KEYS: &str = r"C:\ProgramData\ssh\administrators_authorized_keys";
/// The Windows capability that installs OpenSSH Server.
pub const OPENSSH_SERVER_CAPABILITY: &str = "OpenSSH.Server~~~~0.0.1.0";

/// The local account Azure images log in with; where it exists, `Administrator` is left as it is.
pub const CAPI_USER: &str = "capi";
/// The local account enabled (with a random password made on the host) when there is no [`CAPI_USER`].
pub const ADMINISTRATOR_USER: &str = "Administrator";
/// Where EC2Launch v2 installs its program (`%ProgramFiles%\Amazon\EC2Launch`).
pub const EC2LAUNCH_EXE: &str = r"C:\Program Files\Amazon\EC2Launch\EC2Launch.exe";
/// The oldest EC2Launch v2 the AWS user data keeps (the Go operator's minimum; OpenShift asks disconnected clusters
/// for an AMI with at least this version, since the download below needs the internet).
pub const EC2LAUNCH_MINIMUM_VERSION: &str = "2.0.2107";
/// The installer of the latest EC2Launch v2, as AWS's "Install the latest version of EC2Launch v2" page lists it.
pub const EC2LAUNCH_MSI_URL: &str =
    "https://s3.amazonaws.com/amazon-ec2launch-v2/windows/amd64/latest/AmazonEC2Launch.msi";
/// Where the AWS user data downloads [`EC2LAUNCH_MSI_URL`] to (and deletes it from after the install).
pub const EC2LAUNCH_MSI_DOWNLOAD: &str = r"C:\Windows\Temp\AmazonEC2Launch.msi";
/// The exit code of the AWS user data when SSH was set up but EC2Launch v2 could not be brought to
/// [`EC2LAUNCH_MINIMUM_VERSION`] or could not make the metadata routes persistent.
pub const EC2LAUNCH_FAILED_EXIT_CODE: i32 = 1;

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

/// The provisioning script for `key` on `platform`, without the platform's wrapper.
///
/// In order:
/// 1. without a local user [`CAPI_USER`], a disabled [`ADMINISTRATOR_USER`] gets a random password, made on the host
///    (`[System.Web.Security.Membership]::GeneratePassword(16, 2)`, never written anywhere), and is enabled;
/// 2. install the OpenSSH Server capability; make `sshd` start automatically and start it once (its first start
///    creates the host keys); replace the three inbound firewall rules (a missing one is no error); write
///    [`SSHD_CONFIG_LINES`]; write the key as the only line of [`ADMINISTRATORS_AUTHORIZED_KEYS`] (the old file is
///    removed first, so no explicit entry of an earlier ACL survives) and limit the file's ACL to Administrators and
///    SYSTEM, by SID so localized systems work too; restart `sshd` to read the configuration. Every failure up to
///    here stops the script with a non-zero exit code;
/// 3. on [`Platform::Aws`] only, after SSH is set up: an EC2Launch v2 older than [`EC2LAUNCH_MINIMUM_VERSION`] (or
///    none) is upgraded (or installed) from [`EC2LAUNCH_MSI_URL`], and `EC2Launch.exe run-task add-routes
///    --persistent` keeps the instance metadata routes across reboots. A failure here is printed and ends the script
///    with [`EC2LAUNCH_FAILED_EXIT_CODE`]; the host is reachable over SSH all the same.
///
/// Running it again is harmless (AWS re-runs it at every boot).
///
/// ```
/// use wmco_user_data::{Platform, PublicKey, provisioning_script};
///
/// let key = PublicKey::parse("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDJqxXtLTB09WrBv58kWkXoCkTTC3YJP1KolNbUZY5jp")?;
/// let script = provisioning_script(&key, Platform::VSphere);
/// assert!(script.starts_with("$ProgressPreference = 'SilentlyContinue'\n"));
/// assert!(script.contains("Enable-LocalUser -Name 'Administrator'"));
/// assert!(script.contains("Set-Content -LiteralPath 'C:\\ProgramData\\ssh\\administrators_authorized_keys' -Value 'ssh-ed25519 AAAAC3"));
/// assert!(!script.contains("EC2Launch"));
/// assert!(provisioning_script(&key, Platform::Aws).contains("run-task add-routes --persistent"));
/// assert!(script.ends_with("exit 0\n"));
/// # Ok::<(), wmco_user_data::KeyError>(())
/// ```
pub fn provisioning_script(key: &PublicKey, platform: Platform) -> String {
    let mut lines =
        vec!["$ProgressPreference = 'SilentlyContinue'".to_owned(), "$ErrorActionPreference = 'Stop'".to_owned()];
    lines.extend(administrator_lines());
    lines.extend(ssh_lines(key));
    if platform == Platform::Aws {
        lines.extend(ec2launch_lines());
    }
    lines.push("exit 0".to_owned());
    let mut script = lines.join("\n");
    script.push('\n');
    script
}

/// Step 1: the Go operator's account handling. Only a disabled `Administrator` is touched, so an image whose
/// account is already usable keeps its password; the password is made on the host and passed straight to
/// `Set-LocalUser`, so it never reaches a variable, the output or the Secret.
fn administrator_lines() -> Vec<String> {
    let capi = literal(CAPI_USER);
    let administrator = literal(ADMINISTRATOR_USER);
    vec![
        format!("if (-not (Get-LocalUser -Name {capi} -ErrorAction SilentlyContinue)) {{"),
        format!("    $admin = Get-LocalUser -Name {administrator} -ErrorAction SilentlyContinue"),
        "    if ($admin -and -not $admin.Enabled) {".to_owned(),
        "        Add-Type -AssemblyName 'System.Web'".to_owned(),
        format!(
            "        Set-LocalUser -Name {administrator} -Password (ConvertTo-SecureString \
             ([System.Web.Security.Membership]::GeneratePassword(16, 2)) -AsPlainText -Force)"
        ),
        format!("        Enable-LocalUser -Name {administrator}"),
        "    }".to_owned(),
        "}".to_owned(),
    ]
}

/// Step 2: OpenSSH Server, the firewall, key-only access for the operator's key.
fn ssh_lines(key: &PublicKey) -> Vec<String> {
    let mut lines = vec![
        format!("Add-WindowsCapability -Online -Name {OPENSSH_SERVER_CAPABILITY} | Out-Null"),
        "Set-Service -Name sshd -StartupType Automatic".to_owned(),
        "Start-Service sshd".to_owned(),
    ];
    for rule in FIREWALL_RULES {
        let name = literal(rule.name);
        lines.push(format!("Remove-NetFirewallRule -Name {name} -ErrorAction SilentlyContinue"));
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
    ]);
    lines
}

/// Step 3 (AWS): EC2Launch v2 at [`EC2LAUNCH_MINIMUM_VERSION`] or later, then persistent metadata routes. A first
/// install asks for the default configuration (`Clean`, which a first install needs); an upgrade leaves it out, so
/// the image's `agent-config.yml` stays. `msiexec.exe` is a GUI program PowerShell would not wait for, hence
/// `Start-Process -Wait`; 3010 is its "success, reboot required".
fn ec2launch_lines() -> Vec<String> {
    let exe = literal(EC2LAUNCH_EXE);
    let msi = literal(EC2LAUNCH_MSI_DOWNLOAD);
    vec![
        "try {".to_owned(),
        "    $ec2launchInstall = 'ADDLOCAL=Basic,Clean'".to_owned(),
        format!("    if (Test-Path -LiteralPath {exe} -PathType Leaf) {{"),
        "        $ec2launchInstall = 'ADDLOCAL=Basic'".to_owned(),
        format!(
            "        if ([System.Version]::Parse((& {exe} version)) -ge [System.Version]::Parse({})) {{",
            literal(EC2LAUNCH_MINIMUM_VERSION)
        ),
        "            $ec2launchInstall = $null".to_owned(),
        "        }".to_owned(),
        "    }".to_owned(),
        "    if ($ec2launchInstall) {".to_owned(),
        format!("        Invoke-WebRequest -Uri {} -OutFile {msi} -UseBasicParsing", literal(EC2LAUNCH_MSI_URL)),
        format!(
            "        $msiexec = Start-Process -FilePath 'msiexec.exe' -ArgumentList '/i', {msi}, $ec2launchInstall, \
             '/qn', '/norestart' -Wait -PassThru"
        ),
        format!("        Remove-Item -LiteralPath {msi} -Recurse -Force -ErrorAction SilentlyContinue"),
        "        if ($msiexec.ExitCode -ne 0 -and $msiexec.ExitCode -ne 3010) {".to_owned(),
        "            throw 'msiexec.exe could not install AmazonEC2Launch.msi (its exit code is in the Application \
         event log)'"
            .to_owned(),
        "        }".to_owned(),
        "    }".to_owned(),
        format!("    & {exe} run-task add-routes --persistent"),
        "    if ($LASTEXITCODE -ne 0) { throw 'EC2Launch.exe run-task add-routes --persistent failed' }".to_owned(),
        "} catch {".to_owned(),
        "    Write-Output 'SSH is set up, but EC2Launch v2 is not current or the metadata routes are not persistent:'"
            .to_owned(),
        "    Write-Output $_.Exception.Message".to_owned(),
        format!("    exit {EC2LAUNCH_FAILED_EXIT_CODE}"),
        "}".to_owned(),
    ]
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

    fn key() -> PublicKey {
        PublicKey::parse("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDJqxXtLTB09WrBv58kWkXoCkTTC3YJP1KolNbUZY5jp").unwrap()
    }

    fn position(script: &str, text: &str) -> usize {
        script.find(text).unwrap_or_else(|| panic!("{text:?} not in the script"))
    }

    #[test]
    fn only_aws_gets_the_ec2launch_part_and_only_after_ssh_is_set_up() {
        for platform in Platform::ALL {
            let script = provisioning_script(&key(), platform);
            assert_eq!(script.contains("EC2Launch"), platform == Platform::Aws, "{platform}");
            assert_eq!(script.contains(EC2LAUNCH_MSI_URL), platform == Platform::Aws, "{platform}");
            assert!(script.ends_with("Restart-Service sshd\nexit 0\n") != (platform == Platform::Aws), "{platform}");
        }
        let aws = provisioning_script(&key(), Platform::Aws);
        let ssh_done = position(&aws, "Restart-Service sshd");
        for step in ["try {", "Invoke-WebRequest -Uri", "Start-Process -FilePath 'msiexec.exe'", "run-task add-routes"]
        {
            assert!(position(&aws, step) > ssh_done, "{step} runs before SSH is set up");
        }
        assert!(aws.contains(&format!("[System.Version]::Parse('{EC2LAUNCH_MINIMUM_VERSION}')")));
        assert!(aws.contains(&format!("    exit {EC2LAUNCH_FAILED_EXIT_CODE}\n}}\nexit 0\n")));
    }

    #[test]
    fn the_administrator_gets_a_password_made_on_the_host_before_ssh_is_set_up() {
        let script = provisioning_script(&key(), Platform::None);
        let account = position(&script, "Enable-LocalUser -Name 'Administrator'");
        assert!(account < position(&script, "Add-WindowsCapability"));
        assert!(position(&script, "Get-LocalUser -Name 'capi'") < account);
        // The password is generated where it is used: no literal, no variable holding it.
        assert!(script.contains(
            "-Password (ConvertTo-SecureString ([System.Web.Security.Membership]::GeneratePassword(16, 2)) \
             -AsPlainText -Force)"
        ));
        assert!(!script.contains("$password"));
    }
}
