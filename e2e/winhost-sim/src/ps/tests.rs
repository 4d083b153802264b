//! Tests of the PowerShell interpreter: every construct of windows-commands.md §8 over a simulated host, the exit
//! codes and stderr forms of §3 and the ConvertTo-Json quirks of §4.

use super::*;
use crate::disk::WinPath;
use crate::host::tests::test_host;
use crate::scm::{StartType, State};

fn ps(host: &mut Host, script: &str) -> Output {
    host.exec(
        "SSH-2.0-test",
        &format!(
            "powershell.exe -NoLogo -NonInteractive -NoProfile -ExecutionPolicy Bypass -EncodedCommand {}",
            encode(script)
        ),
    )
}

fn put(host: &Host, path: &str, contents: &[u8]) {
    let path = WinPath::parse(path).unwrap();
    host.disk.create_dir_all(&path.parent().unwrap()).unwrap();
    host.disk.write(&path, contents).unwrap();
}

#[test]
fn literals_variables_collections_and_json() {
    let (_root, mut host) = test_host();
    let output = ps(
        &mut host,
        "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n$a = 'it''s'; $b = \"plain\"; $n = 42\n\
         $h = [ordered]@{ s = $a; d = $b; n = $n; t = $true; f = $false; z = $null; arr = @(1, 'two'); one = @(7); empty = @() }\n\
         $h | ConvertTo-Json -Compress -Depth 3\nexit 0",
    );
    assert_eq!(output.stderr, "");
    assert_eq!(output.code, 0);
    assert_eq!(
        output.stdout,
        "{\"s\":\"it\\u0027s\",\"d\":\"plain\",\"n\":42,\"t\":true,\"f\":false,\"z\":null,\"arr\":[1,\"two\"],\"one\":[7],\"empty\":[]}\r\n"
    );
    let output = ps(&mut host, "[pscustomobject]@{ a = 1 } | ConvertTo-Json -Compress -Depth 1");
    assert_eq!(output.stdout, "{\"a\":1}\r\n", "a single object is not wrapped in an array");
    let output = ps(&mut host, "@{ a = @{ b = @{ c = 1 } } } | ConvertTo-Json -Compress -Depth 1");
    assert_eq!(output.stdout, "{\"a\":\"System.Collections.Hashtable\"}\r\n", "depth cut-off becomes ToString text");
    let output = ps(&mut host, "$x = @(1, 2, 3)\n$x[0]; $x[-1]; $x.Count\n$null | ConvertTo-Json -Compress -Depth 2");
    assert_eq!(output.stdout, "1\r\n3\r\n3\r\nnull\r\n");
}

#[test]
fn control_flow_operators_and_pipelines() {
    let (_root, mut host) = test_host();
    let script = "$r = @()\nforeach ($x in @(1, 2, 3, 4)) { if ($x -eq 1) { 'one' } elseif ($x -lt 3) { 'small' } else { 'big' } }\n\
                  if (-not $false -and !($null) -or $false) { 'logic' }\n\
                  if ('Kubelet' -like 'kube*') { 'like' }\n\
                  if ('a' -ne 'A') { 'wrong' } else { 'case-insensitive' }\n\
                  @(1, 2, 3, 4) | Where-Object { $_ -gt 2 } | ForEach-Object { $_ }\n\
                  @('a', 'b', 'c') | Select-Object -First 2\n\
                  @([pscustomobject]@{ Name = 'n1' }) | Select-Object -ExpandProperty Name\n\
                  'quiet' | Out-Null\n\
                  try { throw 'boom' } catch { 'caught' }\n\
                  try { Get-Content -LiteralPath 'C:\\nope' -Raw -ErrorAction Stop } catch { $_.ToString() }\n\
                  $env:COMPUTERNAME";
    let output = ps(&mut host, script);
    assert_eq!(
        output.stdout,
        "one\r\nsmall\r\nbig\r\nbig\r\nlogic\r\nlike\r\ncase-insensitive\r\n3\r\n4\r\na\r\nb\r\nn1\r\ncaught\r\nCannot find path 'C:\\nope' because it does not exist.\r\nWINWORKER-1\r\n"
    );
    assert_eq!((output.stderr.as_str(), output.code), ("", 0));
}

#[test]
fn exit_codes_follow_section_3() {
    let (_root, mut host) = test_host();
    assert_eq!(ps(&mut host, "exit 7").code, 7);
    assert_eq!(ps(&mut host, "exit -1").code, 4_294_967_295);
    let output = ps(&mut host, "sc.exe query nosuch | Out-Null\nexit $LASTEXITCODE");
    assert_eq!(output.code, 1060);
    assert_eq!(ps(&mut host, "sc.exe query nosuch").code, 1, "a native failure in the last statement is reduced to 1");
    let output =
        ps(&mut host, "$ErrorActionPreference = 'Stop'\nGet-Content -LiteralPath 'C:\\nope' -Raw\n'not reached'");
    assert_eq!((output.code, output.stdout.as_str()), (1, ""));
    assert!(output.stderr.starts_with("#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\"><S S=\"Error\">Get-Content : Cannot find path &apos;C:\\nope&apos; because it does not exist._x000D__x000A_</S>"), "{}", output.stderr);
    let output = ps(&mut host, "Remove-Item -LiteralPath 'C:\\nope' -Recurse -Force\n'after'");
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (0, "after\r\n"),
        "non-terminating error in an earlier statement"
    );
    let output = ps(&mut host, "Remove-Item -LiteralPath 'C:\\nope' -Recurse -Force -ErrorAction SilentlyContinue");
    assert_eq!((output.code, output.stderr.as_str()), (1, ""), "$? is false after a silenced error");
    let output = ps(&mut host, "Get-Service -Name nosuch");
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("Get-Service : Cannot find any service with service name &apos;nosuch&apos;."));
    let output = ps(&mut host, "frobnicate-thing");
    assert_eq!(output.code, 1);
    assert_eq!(host.unknown_commands.last().unwrap().command, "frobnicate-thing");
    let output = ps(&mut host, "\"a $b\"");
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("ParseException"));
}

#[test]
fn file_cmdlets() {
    let (_root, mut host) = test_host();
    let script = "New-Item -ItemType Directory -Force -Path 'C:\\k\\a\\b' | Out-Null\n\
                  New-Item -ItemType Directory -Force -Path 'C:\\k\\a\\b' | Out-Null\n\
                  Set-Content -LiteralPath 'C:\\k\\a\\f.txt' -Value 'hello' -Encoding ascii\n\
                  Test-Path -LiteralPath 'C:\\k\\a\\f.txt' -PathType Leaf\n\
                  Test-Path -LiteralPath 'C:\\k\\a' -PathType Leaf\n\
                  Test-Path -LiteralPath 'C:\\k\\a' -PathType Container\n\
                  (Get-FileHash -LiteralPath 'C:\\k\\a\\f.txt' -Algorithm SHA256).Hash\n\
                  Move-Item -LiteralPath 'C:\\k\\a\\f.txt' -Destination 'C:\\k\\g.txt' -Force\n\
                  Get-Content -LiteralPath 'C:\\k\\g.txt' -Raw\n\
                  Remove-Item -LiteralPath 'C:\\k\\a' -Recurse -Force\n\
                  Test-Path -LiteralPath 'C:\\k\\a'";
    let output = ps(&mut host, script);
    assert_eq!(output.stderr, "");
    assert_eq!(
        output.stdout,
        "True\r\nFalse\r\nTrue\r\n2D2A9F8B2A4D0F6B8E9A8F6C5F6B2B1E3E2A3F8D7E9F2C9B3A0A7C1A4A1C1E0F\r\nhello\r\n\r\nFalse\r\n"
            .replace(
                "2D2A9F8B2A4D0F6B8E9A8F6C5F6B2B1E3E2A3F8D7E9F2C9B3A0A7C1A4A1C1E0F",
                &hex::encode_upper(<sha2::Sha256 as sha2::Digest>::digest(b"hello\r\n")),
            )
    );
    assert_eq!(host.disk.read(&WinPath::parse(r"C:\k\g.txt").unwrap()).unwrap(), b"hello\r\n");
}

#[test]
fn running_service_binaries_are_locked() {
    let (_root, mut host) = test_host();
    put(&host, r"C:\k\svc.exe", b"MZ");
    assert_eq!(host.exec("c", r"sc.exe create svc binPath= C:\k\svc.exe").code, 0);
    assert_eq!(host.exec("c", "sc.exe start svc").code, 0);
    let output = ps(&mut host, "Remove-Item -LiteralPath 'C:\\k\\svc.exe' -Force\nexit 0");
    assert!(output.stderr.contains("because it is being used by another process"), "{}", output.stderr);
    let output = ps(&mut host, "Set-Content -LiteralPath 'C:\\k\\svc.exe' -Value 'x' -Encoding ascii");
    assert_eq!(output.code, 1);
    assert_eq!(host.disk.read(&WinPath::parse(r"C:\k\svc.exe").unwrap()).unwrap(), b"MZ");
    let output = ps(
        &mut host,
        "Get-Process -Name svc | Select-Object -ExpandProperty Name\nStop-Process -Name svc -Force\nGet-Process -Name svc -ErrorAction SilentlyContinue",
    );
    assert_eq!(output.stdout, "svc\r\n");
    assert_eq!(host.scm.get("svc").unwrap().exit_code, 1067);
    assert_eq!(ps(&mut host, "Remove-Item -LiteralPath 'C:\\k\\svc.exe' -Force").code, 0);
}

#[test]
fn service_cmdlets_and_cim() {
    let (_root, mut host) = test_host();
    put(&host, r"C:\k\svc.exe", b"MZ");
    assert_eq!(
        host.exec("c", r#"sc.exe create svc binPath= "C:\k\svc.exe --v=2" start= delayed-auto DisplayName= "Svc X""#)
            .code,
        0
    );
    let script = "$c = @(Get-CimInstance Win32_Service -Filter \"Name='svc'\")\n\
                  [ordered]@{ n = $c.Count; state = $c[0].State; mode = $c[0].StartMode; path = $c[0].PathName; pid = $c[0].ProcessId } | ConvertTo-Json -Compress -Depth 2\n\
                  @(Get-CimInstance Win32_Service -Filter \"Name='none'\").Count\n\
                  Set-Service -Name svc -StartupType Automatic\n\
                  Start-Service svc\n\
                  (Get-Service -Name svc).Status\n\
                  Get-Service -Name svc | ConvertTo-Json -Compress -Depth 1\n\
                  Restart-Service svc\n\
                  (Get-CimInstance Win32_Service -Filter \"Name='svc'\").State";
    let output = ps(&mut host, script);
    assert_eq!(output.stderr, "");
    assert_eq!(
        output.stdout,
        "{\"n\":1,\"state\":\"Stopped\",\"mode\":\"Auto\",\"path\":\"C:\\\\k\\\\svc.exe --v=2\",\"pid\":0}\r\n0\r\nRunning\r\n\
         {\"Name\":\"svc\",\"DisplayName\":\"Svc X\",\"Status\":4,\"StartType\":2,\"DependentServices\":\"\",\"ServicesDependedOn\":\"\"}\r\nRunning\r\n"
    );
    let output = ps(&mut host, "Start-Service nosuch");
    assert_eq!(output.code, 1);
}

#[test]
fn the_system_volume_reports_its_free_space_and_size_and_no_other_volume_exists() {
    let (_root, mut host) = test_host();
    host.volume = crate::host::Volume { free_bytes: 5 << 30, size_bytes: 40 << 30 };
    let script = "$d = Get-CimInstance Win32_LogicalDisk -Filter \"DeviceID='C:'\"\n\
                  [ordered]@{ free = $d.FreeSpace; size = $d.Size; id = $d.DeviceID } | ConvertTo-Json -Compress -Depth 2\n\
                  @(Get-CimInstance Win32_LogicalDisk -Filter \"DeviceID='D:'\").Count";
    let output = ps(&mut host, script);
    assert_eq!(output.stderr, "");
    assert_eq!(output.stdout, "{\"free\":5368709120,\"size\":42949672960,\"id\":\"C:\"}\r\n0\r\n");
    assert_eq!(ps(&mut host, "Get-CimInstance Win32_LogicalDisk -Filter \"DeviceID=C:\"").code, 1);
}

#[test]
fn registry_env_network_and_system_cmdlets() {
    let (_root, mut host) = test_host();
    let script = "$ErrorActionPreference = 'Stop'\n\
                  New-ItemProperty -Path 'HKLM:\\SOFTWARE\\OpenSSH' -Name DefaultShell -Value 'C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe' -PropertyType String -Force | Out-Null\n\
                  New-ItemProperty -Path 'HKLM:\\SOFTWARE\\OpenSSH' -Name Flag -Value 1 -PropertyType DWORD -Force | Out-Null\n\
                  Set-ItemProperty -Path 'HKLM:\\SOFTWARE\\OpenSSH' -Name Flag -Value 2 -PropertyType DWORD\n\
                  $k = Get-ItemProperty 'HKLM:\\SOFTWARE\\OpenSSH'; $k.Flag\n\
                  (Get-ItemProperty 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion').CurrentBuildNumber\n\
                  [Environment]::SetEnvironmentVariable('HTTP_PROXY', 'http://p:3128', 'Machine')\n\
                  [Environment]::GetEnvironmentVariable('HTTP_PROXY', 'Machine')\n\
                  [Environment]::SetEnvironmentVariable('HTTP_PROXY', $null, 'Machine')\n\
                  $null -eq [Environment]::GetEnvironmentVariable('HTTP_PROXY', 'Machine')\n\
                  [System.Net.Dns]::GetHostName()\n\
                  [System.Net.Dns]::GetHostEntry('winworker-1').HostName\n\
                  hostname\n\
                  $r = Get-NetRoute -DestinationPrefix '0.0.0.0/0'\n\
                  (Get-NetIPAddress -InterfaceIndex $r.InterfaceIndex -AddressFamily IPv4).IPAddress\n\
                  New-NetFirewallRule -Name 'kubelet' -DisplayName 'kubelet' -Direction Inbound -Protocol TCP -LocalPort 10250 -Action Allow -Enabled True | Out-Null\n\
                  $w = Get-NetFirewallRule -Name 'kubelet' -ErrorAction SilentlyContinue\n\
                  [ordered]@{ exists = $null -ne $w; direction = $w.Direction; enabled = $w.Enabled; action = $w.Action } | ConvertTo-Json -Compress -Depth 2\n\
                  Remove-NetFirewallRule -Name 'kubelet'\n\
                  $null -eq (Get-NetFirewallRule -Name 'kubelet' -ErrorAction SilentlyContinue)\n\
                  (Get-WindowsOptionalFeature -Online -FeatureName Containers).State.ToString()\n\
                  exit 0";
    let output = ps(&mut host, script);
    assert_eq!(output.stderr, "");
    assert_eq!(
        output.stdout,
        "2\r\n20348\r\nhttp://p:3128\r\nTrue\r\nwinworker-1\r\nwinworker-1.example.test\r\nwinworker-1\r\n203.0.113.10\r\n\
         {\"exists\":true,\"direction\":1,\"enabled\":1,\"action\":2}\r\nTrue\r\nEnabled\r\n"
    );
    let output = ps(
        &mut host,
        "New-NetFirewallRule -Name 'a' -DisplayName 'a' | Out-Null\nNew-NetFirewallRule -Name 'a' -DisplayName 'a'",
    );
    assert!(output.stderr.contains("Cannot create a file when that file already exists."));
    let output = ps(&mut host, "Get-NetFirewallRule -Name 'x'");
    assert!(
        output
            .stderr
            .contains("No MSFT_NetFirewallRule objects found with property &apos;Name&apos; equal to &apos;x&apos;.")
    );
}

#[test]
fn hns_networks_and_provisioning_cmdlets() {
    let (_root, mut host) = test_host();
    host.hns_networks.push(crate::host::HnsNetwork {
        name: "OVNKubernetesHybridOverlayNetwork".into(),
        kind: "Overlay".into(),
        id: "4E7F6A3B-0000-4000-8000-000000000001".into(),
        address_prefix: Some("10.132.1.0/24".into()),
        gateway: Some("10.132.1.1".into()),
    });
    let output = ps(
        &mut host,
        "(Get-HnsNetwork | Where-Object { $_.Name -eq 'OVNKubernetesHybridOverlayNetwork' }).Subnets[0].AddressPrefix\nGet-HnsNetwork | Where-Object { $_.Name -eq 'OVNKubernetesHybridOverlayNetwork' } | Remove-HnsNetwork\n@(Get-HnsNetwork).Count",
    );
    assert_eq!(output.stdout, "10.132.1.0/24\r\n0\r\n");
    host.hns_networks.extend(crate::driver::overlay_networks("10.132.2.0/24"));
    let output = ps(
        &mut host,
        "Get-HnsNetwork | ? Name -eq 'OVNKubernetesHybridOverlayNetwork' | Remove-HnsNetwork\n(Get-HnsNetwork).Name",
    );
    assert_eq!(output.stdout, "BaseOVNKubernetesHybridOverlayNetwork\r\n");
    put(&host, crate::host::ADMIN_AUTHORIZED_KEYS, b"ssh-ed25519 AAAA");
    let script = "Add-WindowsCapability -Online -Name OpenSSH.Server~~~~0.0.1.0 | Out-Null\n\
                  $acl = Get-Acl 'C:\\ProgramData\\ssh\\administrators_authorized_keys'\n\
                  $acl = $acl.SetAccessRuleProtection($true, $false)\n\
                  Set-Acl -Path 'C:\\ProgramData\\ssh\\administrators_authorized_keys' -AclObject $acl\n\
                  (Get-Acl 'C:\\ProgramData\\ssh\\administrators_authorized_keys').Access.Count";
    let output = ps(&mut host, script);
    assert_eq!((output.stdout.as_str(), output.stderr.as_str()), ("0\r\n", ""));
    assert_eq!(host.capabilities, vec!["OpenSSH.Server~~~~0.0.1.0".to_owned()]);
    let sshd = host.scm.get("sshd").expect("the capability registers sshd");
    assert_eq!(
        (sshd.image_path.as_str(), sshd.start_type, sshd.state),
        (r"C:\Windows\System32\OpenSSH\sshd.exe", StartType::Demand, State::Stopped)
    );
    assert!(host.disk.entry(&WinPath::parse(r"C:\Windows\System32\OpenSSH\sshd.exe").unwrap()).is_some());
    assert_eq!(ps(&mut host, "Restart-Computer -Force").code, 0);
    assert!(host.reboot_requested);
}

#[test]
fn file_mode_writes_text_errors_and_missing_scripts_fail() {
    let (_root, mut host) = test_host();
    put(&host, r"C:\k\wmco\scripts\s.ps1", b"\xEF\xBB\xBFGet-Item-Nope\n'done'\n");
    let output = host.exec(
        "c",
        r"powershell.exe -NoLogo -NonInteractive -NoProfile -ExecutionPolicy Bypass -File C:\k\wmco\scripts\s.ps1",
    );
    assert_eq!(output.stdout, "done\r\n");
    assert!(output.stderr.starts_with("The term 'Get-Item-Nope' is not recognized"), "{}", output.stderr);
    let output = host.exec("c", r"powershell.exe -File C:\k\none.ps1");
    assert_eq!(output.code, BAD_COMMAND_LINE_EXIT);
}

#[test]
fn powershell_as_default_shell_takes_later_exec_lines() {
    let (_root, mut host) = test_host();
    let set = "New-ItemProperty -Path \"HKLM:\\SOFTWARE\\OpenSSH\" -Name DefaultShell -Value \"C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe\" -PropertyType String -Force | Out-Null";
    assert_eq!(ps(&mut host, set).code, 0);
    assert_eq!(host.default_shell(), crate::host::ExecShell::PowerShell);
    let output = host.exec("c", "(Get-CimInstance Win32_Service -Filter \"Name='none'\") -eq $null; sc.exe query none | Out-Null; exit $LASTEXITCODE");
    assert_eq!((output.stdout.as_str(), output.code), ("True\r\n", 1060));
    let output = host.exec("c", "sc -LiteralPath 'C:\\alias.txt' -Value 'x'");
    assert_eq!(output.code, 0, "sc is Set-Content in PowerShell: {output:?}");
    assert_eq!(host.disk.read(&WinPath::parse(r"C:\alias.txt").unwrap()).unwrap(), b"x\r\n");
}

#[test]
fn services_get_the_boot_time_machine_environment_plus_their_own_environment_value() {
    let (_root, mut host) = test_host();
    put(&host, r"C:\k\svc.exe", b"MZ");
    assert_eq!(host.exec("c", r"sc.exe create svc binPath= C:\k\svc.exe").code, 0);
    let key = "'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\svc'";
    let output = ps(
        &mut host,
        &format!(
            "$ErrorActionPreference = 'Stop'\n\
             [Environment]::SetEnvironmentVariable('HTTP_PROXY', 'http://machine:3128', 'Machine')\n\
             New-ItemProperty -Path {key} -Name Environment -PropertyType MultiString -Value @('HTTPS_PROXY=http://own:3128', 'NO_PROXY=.svc') -Force | Out-Null\n\
             (Get-ItemProperty {key}).Environment | ConvertTo-Json -Compress -Depth 2"
        ),
    );
    assert_eq!((output.code, output.stderr.as_str()), (0, ""));
    assert_eq!(output.stdout, "[\"HTTPS_PROXY=http://own:3128\",\"NO_PROXY=.svc\"]\r\n");
    assert_eq!(host.exec("c", "sc.exe start svc").code, 0);
    let environment = &host.scm.get("svc").unwrap().environment;
    assert_eq!(environment.get("HTTPS_PROXY").map(String::as_str), Some("http://own:3128"));
    assert_eq!(environment.get("NO_PROXY").map(String::as_str), Some(".svc"));
    assert_eq!(environment.get("HTTP_PROXY"), None, "a machine variable set after boot does not reach services");
    assert_eq!(environment.get("Path").map(String::as_str), Some(r"C:\Windows\system32"));

    // Removing the own value takes effect at the next start; a reboot hands services the new machine block.
    let output =
        ps(&mut host, &format!("$ErrorActionPreference = 'Stop'\nRemove-ItemProperty -Path {key} -Name Environment"));
    assert_eq!((output.code, output.stderr.as_str()), (0, ""));
    assert!(host.scm.get("svc").unwrap().environment.contains_key("HTTPS_PROXY"), "the running process keeps it");
    let output = ps(&mut host, &format!("Remove-ItemProperty -Path {key} -Name Environment"));
    assert!(output.stderr.contains("Property Environment does not exist at path"), "{}", output.stderr);
    assert_eq!(host.exec("c", "sc.exe config svc start= auto").code, 0);
    host.reboot();
    let environment = &host.scm.get("svc").unwrap().environment;
    assert_eq!(environment.get("HTTP_PROXY").map(String::as_str), Some("http://machine:3128"));
    assert_eq!(environment.get("HTTPS_PROXY"), None);

    // The key and its values go with the service.
    let output = ps(
        &mut host,
        &format!(
            "New-ItemProperty -Path {key} -Name Environment -PropertyType MultiString -Value @('A=1') -Force | Out-Null"
        ),
    );
    assert_eq!(output.code, 0);
    host.stop_service("svc").unwrap();
    assert_eq!(host.exec("c", "sc.exe delete svc").code, 0);
    assert_eq!(host.exec("c", r"sc.exe create svc binPath= C:\k\svc.exe").code, 0);
    let output = ps(&mut host, &format!("(Get-ItemProperty {key}).Environment | ConvertTo-Json -Compress -Depth 2"));
    assert_eq!(output.stdout, "null\r\n", "a service created again starts without the old value");
}

#[test]
fn defender_runs_by_default_and_keeps_process_exclusions() {
    let (_root, mut host) = test_host();
    let read = "$mp = Get-Process -Name MsMpEng -ErrorAction SilentlyContinue\n$mx = $null\n\
                if ($null -ne $mp) { $mx = (Get-MpPreference -ErrorAction SilentlyContinue).ExclusionProcess }\n\
                [ordered]@{ running = $null -ne $mp; exclusions = @($mx) } | ConvertTo-Json -Compress -Depth 3";
    assert_eq!(ps(&mut host, read).stdout, "{\"running\":true,\"exclusions\":[null]}\r\n", "none yet");
    let add = "Add-MpPreference -ExclusionProcess 'C:\\k\\containerd\\containerd.exe'";
    assert_eq!(ps(&mut host, add).code, 0);
    assert_eq!(ps(&mut host, add).code, 0, "adding twice is no error");
    assert_eq!(
        ps(&mut host, read).stdout,
        "{\"running\":true,\"exclusions\":[\"C:\\\\k\\\\containerd\\\\containerd.exe\"]}\r\n"
    );
    let remove = "Remove-MpPreference -ExclusionProcess 'c:\\K\\containerd\\containerd.exe'";
    assert_eq!(ps(&mut host, remove).code, 0);
    assert_eq!(ps(&mut host, remove).code, 0, "removing an absent exclusion is no error");
    assert_eq!(host.defender.as_ref().map(|defender| defender.exclusion_process.len()), Some(0));

    host.defender = Some(crate::host::Defender { running: false, exclusion_process: Vec::new() });
    assert_eq!(ps(&mut host, read).stdout, "{\"running\":false,\"exclusions\":[null]}\r\n");
    let output = ps(&mut host, &format!("$ErrorActionPreference = 'Stop'\n{add}"));
    assert_ne!(output.code, 0);
    assert!(output.stderr.contains("0x800106ba"), "{}", output.stderr);

    host.defender = None;
    let output = ps(&mut host, "Get-MpPreference");
    assert!(output.stderr.contains("The term &apos;Get-MpPreference&apos; is not recognized"), "{}", output.stderr);
    assert!(host.unknown_commands.is_empty(), "a host without Defender is modelled, not unknown");
}

/// `Install-WindowsFeature`'s result as JSON (`RestartNeeded` and `ExitCode` by name, portable to 5.1's enums).
const INSTALL_CONTAINERS: &str = "$ErrorActionPreference = 'Stop'\n\
     $r = Install-WindowsFeature -Name Containers\n\
     [ordered]@{ success = $r.Success; restart = $r.RestartNeeded.ToString(); code = $r.ExitCode.ToString(); yes = $r.RestartNeeded -eq 'Yes' } | ConvertTo-Json -Compress -Depth 2";

/// The Containers feature's state by name, as the product prints it.
const CONTAINERS_STATE: &str = "$c = Get-WindowsOptionalFeature -Online -FeatureName Containers\n\
     @('Enabled', 'EnablePending', 'Disabled', 'DisablePending', 'DisabledWithPayloadRemoved') | Where-Object { $c.State -eq $_ } | Select-Object -First 1";

#[test]
fn install_windows_feature_leaves_containers_pending_until_a_reboot() {
    let (_root, mut host) = test_host();
    host.features.insert("Containers".into(), "Disabled".into());
    assert_eq!(ps(&mut host, CONTAINERS_STATE).stdout, "Disabled\r\n");

    let output = ps(&mut host, INSTALL_CONTAINERS);
    assert_eq!((output.code, output.stderr.as_str()), (0, ""));
    assert_eq!(
        output.stdout,
        "{\"success\":true,\"restart\":\"Yes\",\"code\":\"SuccessRestartRequired\",\"yes\":true}\r\n"
    );
    assert_eq!(ps(&mut host, CONTAINERS_STATE).stdout, "EnablePending\r\n");
    let output = ps(&mut host, "(Get-WindowsOptionalFeature -Online -FeatureName Containers).State.ToString()");
    assert_eq!(output.stdout, "EnablePending\r\n");
    let output = ps(&mut host, "(Install-WindowsFeature -Name Containers).FeatureResult.Count");
    assert_eq!(output.stdout, "0\r\n", "installing again before the reboot changes nothing");
    let output = ps(&mut host, INSTALL_CONTAINERS);
    assert_eq!(
        output.stdout,
        "{\"success\":true,\"restart\":\"Yes\",\"code\":\"SuccessRestartRequired\",\"yes\":true}\r\n"
    );
    assert_eq!(host.features.get("Containers").map(String::as_str), Some("EnablePending"));

    host.reboot();
    assert_eq!(ps(&mut host, CONTAINERS_STATE).stdout, "Enabled\r\n");
    let output = ps(&mut host, INSTALL_CONTAINERS);
    assert_eq!(output.stdout, "{\"success\":true,\"restart\":\"No\",\"code\":\"NoChangeNeeded\",\"yes\":false}\r\n");
    assert_eq!(host.features.get("Containers").map(String::as_str), Some("Enabled"));

    host.features.insert("Containers".into(), "DisabledWithPayloadRemoved".into());
    assert_eq!(ps(&mut host, CONTAINERS_STATE).stdout, "DisabledWithPayloadRemoved\r\n");
    let output = ps(&mut host, "(Install-WindowsFeature -Name Containers).FeatureResult[0].Name");
    assert_eq!(output.stdout, "Containers\r\n");
    assert_eq!(ps(&mut host, CONTAINERS_STATE).stdout, "EnablePending\r\n");
}

#[test]
fn install_windows_feature_of_an_unknown_name_fails_with_a_non_terminating_error() {
    let (_root, mut host) = test_host();
    let output = ps(
        &mut host,
        "$r = Install-WindowsFeature -Name Nope\n\
         [ordered]@{ success = $r.Success; restart = $r.RestartNeeded; code = $r.ExitCode } | ConvertTo-Json -Compress -Depth 2",
    );
    assert_eq!(output.stdout, "{\"success\":false,\"restart\":\"No\",\"code\":\"Failed\"}\r\n");
    assert_eq!(output.code, 0, "a non-terminating error in an earlier statement");
    assert!(
        output.stderr.contains(
            "Install-WindowsFeature : ArgumentNotValid: The role, role service, or feature name is not valid: &apos;Nope&apos;. The name was not found."
        ),
        "{}",
        output.stderr
    );
    assert!(
        output.stderr.contains("NameDoesNotExist,Microsoft.Windows.ServerManager.Commands.AddWindowsFeatureCommand"),
        "{}",
        output.stderr
    );
    let output =
        ps(&mut host, "try { Install-WindowsFeature -Name Nope -ErrorAction Stop; 'not reached' } catch { 'caught' }");
    assert_eq!((output.stdout.as_str(), output.stderr.as_str()), ("caught\r\n", ""));
    assert!(!host.features.contains_key("Nope"));
}

/// The `\/Date(<ms>)\/` milliseconds in `{"boot":"\/Date(<ms>)\/"}`.
fn boot_millis(json: &str) -> i64 {
    let start = json.find("\\/Date(").expect("a 5.1 DateTime") + "\\/Date(".len();
    let end = json[start..].find(")\\/").expect("the closing of a 5.1 DateTime") + start;
    json[start..end].parse().unwrap()
}

#[test]
fn win32_operating_system_reports_the_build_and_a_boot_time_that_moves_at_each_reboot() {
    let (_root, mut host) = test_host();
    let read_boot = "[ordered]@{ boot = (Get-CimInstance Win32_OperatingSystem).LastBootUpTime } | ConvertTo-Json -Compress -Depth 2";
    let output = ps(&mut host, read_boot);
    assert_eq!(output.stderr, "");
    assert!(
        output.stdout.starts_with("{\"boot\":\"\\/Date(") && output.stdout.ends_with(")\\/\"}\r\n"),
        "{}",
        output.stdout
    );
    let first = boot_millis(&output.stdout);
    let created = host.last_boot_up.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    assert_eq!(i128::from(first), i128::try_from(created).unwrap());

    let by_variable = "$os = Get-CimInstance Win32_OperatingSystem\n\
                       [ordered]@{ boot = $os.LastBootUpTime; caption = $os.Caption; build = $os.BuildNumber; version = $os.Version } | ConvertTo-Json -Compress -Depth 2";
    let output = ps(&mut host, by_variable);
    assert_eq!(
        output.stdout,
        format!(
            "{{\"boot\":\"\\/Date({first})\\/\",\"caption\":\"Microsoft Windows Server 2022 Datacenter\",\"build\":\"20348\",\"version\":\"10.0.20348\"}}\r\n"
        )
    );

    host.reboot();
    let second = boot_millis(&ps(&mut host, read_boot).stdout);
    assert!(second > first, "{second} after {first}");
    host.reboot();
    let third = boot_millis(&ps(&mut host, read_boot).stdout);
    assert!(third > second, "two reboots within a millisecond still differ: {third} after {second}");
    let output = ps(
        &mut host,
        "$os = Get-CimInstance Win32_OperatingSystem\n$os.LastBootUpTime -eq $os.LastBootUpTime\n\
         (Get-CimInstance Win32_OperatingSystem | Select-Object -First 1).LastBootUpTime.ToString() -like '*/*/* *:*:* ?M'\n\
         @(Get-CimInstance Win32_OperatingSystem).Count",
    );
    assert_eq!(output.stdout, "True\r\nTrue\r\n1\r\n");

    for (build, caption) in [
        (17763, "Microsoft Windows Server 2019 Datacenter"),
        (26100, "Microsoft Windows Server 2025 Datacenter"),
        (14393, "Microsoft Windows Server"),
    ] {
        host.identity.build = build;
        let output = ps(&mut host, "(Get-CimInstance Win32_OperatingSystem).Caption");
        assert_eq!(output.stdout, format!("{caption}\r\n"));
    }
    let output = ps(&mut host, "Get-CimInstance Win32_OperatingSystem | ConvertTo-Json -Compress -Depth 2");
    assert!(output.stdout.contains("\"Version\":\"10.0.14393\",\"BuildNumber\":\"14393\""), "{}", output.stdout);
    assert!(output.stdout.contains(&format!("\"LastBootUpTime\":\"\\/Date({third})\\/\"")), "{}", output.stdout);
}

#[test]
fn date_times_order_by_time_not_by_text() {
    let (_root, mut host) = test_host();
    let mut session = eval::Session::new(&mut host);
    // 12/31/2024 sorts after 1/5/2025 as text.
    session.set_variable("early", value::Value::DateTime(1_735_603_200_000));
    session.set_variable("late", value::Value::DateTime(1_736_089_445_678));
    let statements = parser::parse("$early -lt $late; $late -gt $early; $early -eq $late; $early.ToString()").unwrap();
    assert_eq!(session.run_script(&statements), 0);
    assert_eq!(session.stdout, "True\r\nTrue\r\nFalse\r\n12/31/2024 12:00:00 AM\r\n");
}

#[test]
fn get_child_item_lists_a_directory_by_filter_and_a_missing_one_is_a_non_terminating_error() {
    let (_root, mut host) = test_host();
    for name in ["ovnkube-client-2026-11-01.pem", "OVNKUBE-CLIENT-current.pem", "kubeconfig", "ovnkube-client.pem.bak"]
    {
        put(&host, &format!(r"C:\k\cni\config\{name}"), b"x");
    }
    let list = |host: &mut Host, directory: &str| {
        ps(
            host,
            &format!(
                "$o = @(Get-ChildItem -LiteralPath '{directory}' -Filter 'ovnkube-client-*.pem' -ErrorAction \
                 SilentlyContinue | Select-Object -ExpandProperty Name)\n[ordered]@{{ names = $o }} | ConvertTo-Json \
                 -Compress -Depth 2\nexit 0"
            ),
        )
    };
    let output = list(&mut host, r"C:\k\cni\config");
    assert_eq!((output.code, output.stderr.as_str()), (0, ""));
    assert_eq!(output.stdout, "{\"names\":[\"OVNKUBE-CLIENT-current.pem\",\"ovnkube-client-2026-11-01.pem\"]}\r\n");
    let output = list(&mut host, r"C:\k\nothing");
    assert_eq!((output.code, output.stdout.as_str()), (0, "{\"names\":[]}\r\n"));
    let output = ps(&mut host, r"Get-ChildItem -LiteralPath 'C:\k\nothing'");
    assert!(output.stderr.contains("PathNotFound,Microsoft.PowerShell.Commands.GetChildItemCommand"), "{output:?}");
    let output = ps(&mut host, r"(Get-ChildItem -LiteralPath 'C:\k\cni' | Select-Object -First 1).PSIsContainer");
    assert_eq!(output.stdout.trim(), "True");
}

/// `Invoke-RestMethod` as the AWS and GCP documentation call the metadata services, on each cloud and off it.
#[test]
fn invoke_rest_method_reaches_the_hosts_metadata_service_only() {
    use crate::metadata::InstanceMetadata;
    let aws_script = "$ErrorActionPreference = 'Stop'\n\
        try {\n\
        $t = Invoke-RestMethod -UseBasicParsing -TimeoutSec 10 -Method PUT -Uri 'http://169.254.169.254/latest/api/token' -Headers @{ 'X-aws-ec2-metadata-token-ttl-seconds' = '60' }\n\
        Invoke-RestMethod -UseBasicParsing -Uri 'http://169.254.169.254/latest/meta-data/local-hostname' -Headers @{ 'X-aws-ec2-metadata-token' = $t }\n\
        } catch { 'failed'; $_.Exception.Message }\n\
        exit 0";
    let gcp_script = "try { Invoke-RestMethod -Headers @{ 'Metadata-Flavor' = 'Google' } -Uri 'http://metadata.google.internal/computeMetadata/v1/instance/hostname' } catch { $_.Exception.Message }";
    let (_root, mut host) = test_host();
    host.instance_metadata =
        InstanceMetadata::Aws { local_hostname: "ip-10-0-1-23.ec2.internal".into(), tokens_required: true };
    let output = ps(&mut host, aws_script);
    assert_eq!((output.stdout.as_str(), output.stderr.as_str(), output.code), ("ip-10-0-1-23.ec2.internal\r\n", "", 0));
    let v1 = ps(&mut host, "Invoke-RestMethod -Uri 'http://169.254.169.254/latest/meta-data/local-hostname'");
    assert!(v1.stderr.contains("The remote server returned an error: (401) Unauthorized."), "{v1:?}");
    assert!(v1.stderr.contains("WebCmdletWebResponseException,Microsoft.PowerShell.Commands.InvokeRestMethodCommand"));
    assert_eq!(v1.code, 1);
    let output = ps(&mut host, gcp_script);
    assert_eq!(output.stdout, "The remote name could not be resolved: 'metadata.google.internal'\r\n");

    host.instance_metadata = InstanceMetadata::Gcp { hostname: "win-1.us-central1-a.c.project-id.internal".into() };
    assert_eq!(ps(&mut host, gcp_script).stdout, "win-1.us-central1-a.c.project-id.internal\r\n");
    host.instance_metadata = InstanceMetadata::None;
    let output = ps(&mut host, aws_script);
    assert_eq!(output.stdout, "failed\r\nUnable to connect to the remote server\r\n");
    let refused = ps(&mut host, "Invoke-RestMethod -Uri 'http://169.254.169.254/' -Body 'x'");
    assert!(refused.stderr.contains("does not model parameter -body"), "{refused:?}");
    assert!(host.unknown_commands.is_empty(), "{:?}", host.unknown_commands);
}
