//! The few PowerShell scripts this flow sends that `wmco-windows-services` has no builder for — host identity,
//! the `Containers` feature's installation, the host's restart, directory removal and HNS network removal —
//! rendered the same way
//! (standard preamble, single-quoted literals, `-EncodedCommand`) and kept inside the closed subset of
//! windows-commands.md §8.

use wmco_windows_services::{
    CommandError, MAX_COMMAND_LINE_CHARS, POWERSHELL_PREAMBLE, POWERSHELL_PREFIX, RenderedCommand, Shell, WinPath,
    encode_command,
};

use crate::identity::NodeNaming;

/// The HNS networks hybrid-overlay-node creates (wmco-anchor.md §2.6); deconfiguration removes them.
pub const HYBRID_OVERLAY_NETWORKS: [&str; 2] =
    ["BaseOVNKubernetesHybridOverlayNetwork", "OVNKubernetesHybridOverlayNetwork"];

/// The CNI plugins' state directory (host-local IPAM's leases): the identity command says whether it exists.
pub(crate) const CNI_STATE_DIRECTORY: &str = r"C:\var\lib\cni";

/// A single-quoted PowerShell literal (`'` doubled).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Renders statements between the standard preamble and `exit 0` as an `-EncodedCommand` line.
fn render(what: &str, statements: &[String]) -> Result<RenderedCommand, CommandError> {
    let mut lines: Vec<String> = POWERSHELL_PREAMBLE.map(str::to_owned).to_vec();
    lines.extend(statements.iter().cloned());
    lines.push("exit 0".to_owned());
    let line = format!("{POWERSHELL_PREFIX} -EncodedCommand {}", encode_command(&lines.join("\n")));
    let length = line.encode_utf16().count();
    if length > MAX_COMMAND_LINE_CHARS {
        return Err(CommandError::TooLong { what: what.to_owned(), length, limit: MAX_COMMAND_LINE_CHARS });
    }
    Ok(RenderedCommand { shell: Shell::PowerShell, line, script_file: None })
}

/// Prints `{"hostname":..,"fqdn":..,"ip":..,"build":..,"ubr":..,"freeBytes":..,"containers":..,"docker":..,
/// "containerd":..,"defender":..,"shell":..,"boot":..,"cni":..}`: the host name, its DNS name, the IPv4 address of the
/// interface of the first default route, and the preflight facts (the Windows build and its update revision, read
/// from the same registry key, the free bytes of `C:`, the state of the `Containers` feature by name, the binPath of
/// a `docker` and of a `containerd` service, `null` when absent, whether Defender's `MsMpEng` runs, OpenSSH's default
/// shell; windows-commands.md §4.1), the last boot time (which tells a completed reboot from a pending one) and
/// whether [`CNI_STATE_DIRECTORY`] exists. When `naming` reads a cloud's metadata service ([`NodeNaming::reads_metadata`]), the
/// document also holds `cloudName` (what the service answered) and `cloudError` (why it did not); still one round
/// trip.
pub(crate) fn identity(naming: NodeNaming) -> Result<RenderedCommand, CommandError> {
    // The feature's State is an enum; comparing it with each name prints the name without a method call (the
    // subset has none) and without relying on the enum's numbers.
    let mut statements = vec![
        "$h = [System.Net.Dns]::GetHostName()".to_owned(),
        "$f = [System.Net.Dns]::GetHostEntry($h).HostName".to_owned(),
        "$r = Get-NetRoute -DestinationPrefix '0.0.0.0/0' | Select-Object -First 1".to_owned(),
        "$a = Get-NetIPAddress -InterfaceIndex $r.InterfaceIndex -AddressFamily IPv4 | Select-Object -First 1"
            .to_owned(),
        r"$v = Get-ItemProperty 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'".to_owned(),
        r#"$d = Get-CimInstance Win32_LogicalDisk -Filter "DeviceID='C:'""#.to_owned(),
        "$c = Get-WindowsOptionalFeature -Online -FeatureName Containers".to_owned(),
        format!("$cs = {FEATURE_STATES} | Where-Object {{ $c.State -eq $_ }} | Select-Object -First 1"),
        "$os = Get-CimInstance Win32_OperatingSystem".to_owned(),
        r#"$dk = Get-CimInstance Win32_Service -Filter "Name='docker'""#.to_owned(),
        r#"$ct = Get-CimInstance Win32_Service -Filter "Name='containerd'""#.to_owned(),
        "$mp = Get-Process -Name MsMpEng -ErrorAction SilentlyContinue".to_owned(),
        r"$sh = (Get-ItemProperty 'HKLM:\SOFTWARE\OpenSSH' -ErrorAction SilentlyContinue).DefaultShell".to_owned(),
        format!("$cn = Test-Path -LiteralPath {} -PathType Container", literal(CNI_STATE_DIRECTORY)),
    ];
    let metadata = metadata_requests(naming);
    let cloud_fields = if metadata.is_empty() { "" } else { "; cloudName = $n; cloudError = $ne" };
    if !metadata.is_empty() {
        statements.extend(["$n = $null".to_owned(), "$ne = $null".to_owned(), "try {".to_owned()]);
        statements.extend(metadata);
        statements.extend(["} catch {".to_owned(), "$ne = $_.Exception.Message".to_owned(), "}".to_owned()]);
    }
    statements.push(format!(
        "[ordered]@{{ hostname = $h; fqdn = $f; ip = $a.IPAddress; build = $v.CurrentBuildNumber; ubr = $v.UBR; \
         freeBytes = $d.FreeSpace; containers = $cs; docker = $dk.PathName; containerd = $ct.PathName; \
         defender = $null -ne $mp; shell = $sh; boot = $os.LastBootUpTime; cni = $cn{cloud_fields} }} | \
         ConvertTo-Json -Compress -Depth 2"
    ));
    render("host identity", &statements)
}

/// How long each metadata request may take (`-TimeoutSec`): the services answer in milliseconds on their cloud;
/// elsewhere the address does not answer and the request would wait for .NET's 100 s default.
const METADATA_TIMEOUT_SECONDS: u32 = 10;

/// The statements that set `$n` to the host's name in its cloud's metadata service (none when `naming` reads
/// none): AWS's `local-hostname` with an IMDSv2 session token (a PUT for the token, then the GET with it, which
/// works whether or not the instance requires tokens; AWS's instancedata-data-retrieval docs), GCP's
/// `instance/hostname` with the `Metadata-Flavor: Google` header the server requires (GCP's querying-metadata
/// docs; the Go operator's `gcp-get-hostname.ps1`).
fn metadata_requests(naming: NodeNaming) -> Vec<String> {
    let request =
        |extra: &str| format!("Invoke-RestMethod -UseBasicParsing -TimeoutSec {METADATA_TIMEOUT_SECONDS} {extra}");
    match naming {
        NodeNaming::ShortHostname | NodeNaming::Fqdn => Vec::new(),
        NodeNaming::AwsLocalHostname => vec![
            format!(
                "$t = {}",
                request(
                    "-Method PUT -Uri 'http://169.254.169.254/latest/api/token' \
                     -Headers @{ 'X-aws-ec2-metadata-token-ttl-seconds' = '60' }"
                )
            ),
            format!(
                "$n = {}",
                request(
                    "-Uri 'http://169.254.169.254/latest/meta-data/local-hostname' \
                     -Headers @{ 'X-aws-ec2-metadata-token' = $t }"
                )
            ),
        ],
        NodeNaming::GcpHostname => vec![format!(
            "$n = {}",
            request(
                "-Uri 'http://metadata.google.internal/computeMetadata/v1/instance/hostname' \
                 -Headers @{ 'Metadata-Flavor' = 'Google' }"
            )
        )],
    }
}

/// The states `Get-WindowsOptionalFeature` reports, as a PowerShell array (windows-commands.md §4).
const FEATURE_STATES: &str =
    "@('Enabled', 'Disabled', 'EnablePending', 'DisablePending', 'DisabledWithPayloadRemoved')";

/// Installs the Windows feature `Containers` (`Install-WindowsFeature`, the Go operator's command); exits 1 when the
/// result says it failed. The feature is active after the next reboot.
pub(crate) fn install_containers_feature() -> Result<RenderedCommand, CommandError> {
    render(
        "install the Containers feature",
        &["$r = Install-WindowsFeature -Name Containers".to_owned(), "if (-not $r.Success) { exit 1 }".to_owned()],
    )
}

/// Restarts the host now (`Restart-Computer -Force`); the connection drops while it runs or just after.
pub(crate) fn restart_computer() -> Result<RenderedCommand, CommandError> {
    render("restart the host", &["Restart-Computer -Force".to_owned()])
}

/// Removes each directory with everything in it; absent ones are skipped.
pub(crate) fn remove_directories(directories: &[WinPath]) -> Result<RenderedCommand, CommandError> {
    let statements: Vec<String> = directories
        .iter()
        .map(|directory| {
            format!(
                "Remove-Item -LiteralPath {} -Recurse -Force -ErrorAction SilentlyContinue",
                literal(directory.as_str())
            )
        })
        .collect();
    render("remove directories", &statements)
}

/// Removes the hybrid-overlay HNS networks, if present.
pub(crate) fn remove_hns_networks() -> Result<RenderedCommand, CommandError> {
    let statements: Vec<String> = HYBRID_OVERLAY_NETWORKS
        .iter()
        .map(|name| format!("Get-HnsNetwork | Where-Object {{ $_.Name -eq {} }} | Remove-HnsNetwork", literal(name)))
        .collect();
    render("remove HNS networks", &statements)
}

#[cfg(test)]
mod tests {
    use wmco_windows_services::decode_encoded_command;

    use super::*;

    fn script_text(command: &RenderedCommand) -> String {
        let encoded = command.line.rsplit(' ').next().unwrap();
        decode_encoded_command(encoded).unwrap()
    }

    #[test]
    fn identity_reads_hostname_fqdn_default_route_address_the_preflight_facts_and_the_cni_state() {
        let command = identity(NodeNaming::ShortHostname).unwrap();
        assert!(command.line.starts_with("powershell.exe -NoLogo -NonInteractive -NoProfile"));
        assert_eq!(
            script_text(&command),
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             $h = [System.Net.Dns]::GetHostName()\n$f = [System.Net.Dns]::GetHostEntry($h).HostName\n\
             $r = Get-NetRoute -DestinationPrefix '0.0.0.0/0' | Select-Object -First 1\n\
             $a = Get-NetIPAddress -InterfaceIndex $r.InterfaceIndex -AddressFamily IPv4 | Select-Object -First 1\n\
             $v = Get-ItemProperty 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion'\n\
             $d = Get-CimInstance Win32_LogicalDisk -Filter \"DeviceID='C:'\"\n\
             $c = Get-WindowsOptionalFeature -Online -FeatureName Containers\n\
             $cs = @('Enabled', 'Disabled', 'EnablePending', 'DisablePending', 'DisabledWithPayloadRemoved') | \
             Where-Object { $c.State -eq $_ } | Select-Object -First 1\n\
             $os = Get-CimInstance Win32_OperatingSystem\n\
             $dk = Get-CimInstance Win32_Service -Filter \"Name='docker'\"\n\
             $ct = Get-CimInstance Win32_Service -Filter \"Name='containerd'\"\n\
             $mp = Get-Process -Name MsMpEng -ErrorAction SilentlyContinue\n\
             $sh = (Get-ItemProperty 'HKLM:\\SOFTWARE\\OpenSSH' -ErrorAction SilentlyContinue).DefaultShell\n\
             $cn = Test-Path -LiteralPath 'C:\\var\\lib\\cni' -PathType Container\n\
             [ordered]@{ hostname = $h; fqdn = $f; ip = $a.IPAddress; build = $v.CurrentBuildNumber; ubr = $v.UBR; \
             freeBytes = $d.FreeSpace; containers = $cs; docker = $dk.PathName; containerd = $ct.PathName; \
             defender = $null -ne $mp; shell = $sh; boot = $os.LastBootUpTime; cni = $cn } | \
             ConvertTo-Json -Compress -Depth 2\nexit 0"
        );
    }

    #[test]
    fn the_identity_command_reads_the_cloud_name_only_where_the_platform_names_nodes_by_it() {
        for naming in [NodeNaming::ShortHostname, NodeNaming::Fqdn] {
            let text = script_text(&identity(naming).unwrap());
            assert!(!text.contains("Invoke-RestMethod") && !text.contains("cloudName"), "{text}");
        }
        let aws = script_text(&identity(NodeNaming::AwsLocalHostname).unwrap());
        assert!(
            aws.contains(
                "$n = $null\n$ne = $null\ntry {\n$t = Invoke-RestMethod -UseBasicParsing -TimeoutSec 10 -Method PUT \
                 -Uri 'http://169.254.169.254/latest/api/token' \
                 -Headers @{ 'X-aws-ec2-metadata-token-ttl-seconds' = '60' }\n\
                 $n = Invoke-RestMethod -UseBasicParsing -TimeoutSec 10 \
                 -Uri 'http://169.254.169.254/latest/meta-data/local-hostname' \
                 -Headers @{ 'X-aws-ec2-metadata-token' = $t }\n} catch {\n$ne = $_.Exception.Message\n}\n"
            ),
            "{aws}"
        );
        assert!(aws.contains("boot = $os.LastBootUpTime; cni = $cn; cloudName = $n; cloudError = $ne }"), "{aws}");
        let gcp = script_text(&identity(NodeNaming::GcpHostname).unwrap());
        assert!(
            gcp.contains(
                "try {\n$n = Invoke-RestMethod -UseBasicParsing -TimeoutSec 10 \
                 -Uri 'http://metadata.google.internal/computeMetadata/v1/instance/hostname' \
                 -Headers @{ 'Metadata-Flavor' = 'Google' }\n} catch {"
            ),
            "{gcp}"
        );
    }

    #[test]
    fn the_feature_install_fails_on_an_unsuccessful_result_and_the_restart_is_forced() {
        assert_eq!(
            script_text(&install_containers_feature().unwrap()),
            "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n\
             $r = Install-WindowsFeature -Name Containers\nif (-not $r.Success) { exit 1 }\nexit 0"
        );
        assert!(script_text(&restart_computer().unwrap()).contains("\nRestart-Computer -Force\nexit 0"));
    }

    #[test]
    fn removal_scripts_quote_paths_and_names() {
        let directories = [WinPath::parse(r"C:\k").unwrap(), WinPath::parse(r"C:\it's").unwrap()];
        let text = script_text(&remove_directories(&directories).unwrap());
        assert!(text.contains("Remove-Item -LiteralPath 'C:\\k' -Recurse -Force -ErrorAction SilentlyContinue\n"));
        assert!(text.contains("Remove-Item -LiteralPath 'C:\\it''s' -Recurse"));
        let text = script_text(&remove_hns_networks().unwrap());
        assert!(text.contains(
            "Get-HnsNetwork | Where-Object { $_.Name -eq 'OVNKubernetesHybridOverlayNetwork' } | Remove-HnsNetwork"
        ));
    }
}
