//! One simulated Windows host's state: identity, disk, service table, registry, machine environment, firewall
//! rules, HNS networks, optional features (whose pending states settle at a reboot), the last boot time, local
//! user accounts, what an AWS host adds (EC2Launch v2's version, the persistent metadata routes, the URLs it can
//! download), the cloud metadata service it reaches, and the logs tests read (commands, unknown commands). Commands enter through [`Host::exec`] (cmd.exe,
//! as Win32-OpenSSH's default shell runs them).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::disk::{Disk, DiskError, Entry, WinPath};
use crate::process::{self, ProcessEvent};
use crate::scm::{Launch, ServiceManager, State, Timing, Win32Error};

/// What a command printed and its exit code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// Standard output (CRLF line ends).
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The process exit code as sent in `exit-status`.
    pub code: u32,
}

impl Output {
    /// Success with `stdout`.
    pub fn ok(stdout: impl Into<String>) -> Output {
        Output { stdout: stdout.into(), stderr: String::new(), code: 0 }
    }

    /// `stdout`, `stderr` and `code`.
    pub fn new(stdout: impl Into<String>, stderr: impl Into<String>, code: u32) -> Output {
        Output { stdout: stdout.into(), stderr: stderr.into(), code }
    }
}

/// The shell sshd runs exec requests with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecShell {
    /// `cmd.exe /c` (the default).
    Cmd,
    /// `powershell.exe -c`.
    PowerShell,
}

/// Who a host is on the network.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Identity {
    /// DNS host label (`hostname`).
    pub hostname: String,
    /// Fully qualified name.
    pub fqdn: String,
    /// Windows build number (17763 = Server 2019, 20348 = Server 2022).
    pub build: u32,
    /// Monthly patch level (UBR).
    pub ubr: u32,
    /// The default-route interface address (TEST-NET-3).
    pub node_ip: Ipv4Addr,
}

impl Identity {
    /// The NetBIOS name (`$env:COMPUTERNAME`): upper-case, at most 15 characters.
    pub fn netbios_name(&self) -> String {
        self.hostname.to_uppercase().chars().take(15).collect()
    }
}

/// A registry value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum RegValue {
    /// REG_SZ / REG_EXPAND_SZ.
    String(String),
    /// REG_DWORD.
    Dword(u32),
    /// REG_BINARY.
    Binary(Vec<u8>),
    /// REG_MULTI_SZ.
    MultiString(Vec<String>),
}

/// A registry key with its values (names case-insensitive, case-preserving).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RegKey {
    /// The key path as created (`HKLM\SOFTWARE\OpenSSH`).
    pub path: String,
    /// Values by lower-cased name: (name, value).
    pub values: BTreeMap<String, (String, RegValue)>,
}

/// Microsoft Defender Antivirus (windows-commands.md §4.1): its `MsMpEng` process runs while `running`, and its
/// `MpPreference` cmdlets work only then.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Defender {
    /// Whether `MsMpEng` runs.
    pub running: bool,
    /// `ExclusionProcess`, in the order added.
    pub exclusion_process: Vec<String>,
}

impl Default for Defender {
    /// Running with no exclusions, as on a stock Windows Server 2019 or later.
    fn default() -> Self {
        Defender { running: true, exclusion_process: Vec::new() }
    }
}

/// The image path of Defender's `MsMpEng` process.
pub const DEFENDER_IMAGE: &str = r"C:\ProgramData\Microsoft\Windows Defender\Platform\4.18.24090.11-0\MsMpEng.exe";

/// A local user account (`Get-LocalUser`). The password itself is never kept: only whether one was set.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LocalUser {
    /// The account name.
    pub name: String,
    /// Whether the account may log on.
    pub enabled: bool,
    /// Whether a password was set on this host (`Set-LocalUser -Password`).
    pub password_set: bool,
}

/// The accounts of a fresh host: the built-in `Administrator`, disabled and without a password set (as a generalized
/// image leaves it; an image with a `capi` user is made by adding it to [`Host::local_users`]).
pub fn default_local_users() -> Vec<LocalUser> {
    vec![LocalUser { name: "Administrator".to_owned(), enabled: false, password_set: false }]
}

/// A Windows Defender Firewall rule.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FirewallRule {
    /// Name.
    pub name: String,
    /// DisplayName.
    pub display_name: String,
    /// `Inbound` / `Outbound`.
    pub direction: String,
    /// `TCP` / `UDP` / `Any`.
    pub protocol: String,
    /// LocalPort text.
    pub local_port: String,
    /// `Allow` / `Block`.
    pub action: String,
    /// Enabled.
    pub enabled: bool,
}

/// An HNS network.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HnsNetwork {
    /// Name.
    pub name: String,
    /// Type (`Overlay`, `L2Bridge`, `NAT`).
    pub kind: String,
    /// Id (a GUID).
    pub id: String,
    /// Subnet address prefix (CIDR), if any.
    pub address_prefix: Option<String>,
    /// Gateway address, if any.
    pub gateway: Option<String>,
}

/// One command the host ran, as tests read it.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CommandRecord {
    /// The client's SSH version string (`SSH-2.0-...`), or `control` for the control interface.
    pub client: String,
    /// The exec line as received.
    pub line: String,
    /// Its exit code.
    pub exit_code: u32,
    /// What it printed on standard output.
    pub stdout: String,
    /// What it printed on standard error.
    pub stderr: String,
    /// When it finished (`None` only in records a test builds).
    pub finished_at: Option<SystemTime>,
}

/// A command no shell knew.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UnknownCommand {
    /// `cmd` or `powershell`.
    pub shell: String,
    /// The command name.
    pub command: String,
}

/// One reboot of a host: from the moment its connections dropped until it accepted connections again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RebootWindow {
    /// When the reboot began.
    pub began: SystemTime,
    /// When the host was back.
    pub back: SystemTime,
}

impl RebootWindow {
    /// Whether two reboots were under way at the same instant.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use winhost_sim::host::RebootWindow;
    /// let at = |seconds| SystemTime::UNIX_EPOCH + Duration::from_secs(seconds);
    /// let first = RebootWindow { began: at(10), back: at(20) };
    /// assert!(first.overlaps(&RebootWindow { began: at(15), back: at(30) }));
    /// assert!(!first.overlaps(&RebootWindow { began: at(21), back: at(30) }));
    /// ```
    pub fn overlaps(&self, other: &RebootWindow) -> bool {
        self.began <= other.back && other.began <= self.back
    }
}

/// Service transition delays and per-command latency.
#[derive(Clone, Copy, Debug)]
pub struct Latency {
    /// Added to every exec request.
    pub command: Duration,
    /// START_PENDING → RUNNING and STOP_PENDING → STOPPED.
    pub service_transition: Duration,
}

impl Latency {
    /// Realistic: 5 ms per command, 1 s per service transition.
    pub fn realistic() -> Latency {
        Latency { command: Duration::from_millis(5), service_transition: Duration::from_secs(1) }
    }

    /// No delays (tests).
    pub fn zero() -> Latency {
        Latency { command: Duration::ZERO, service_transition: Duration::ZERO }
    }
}

/// The full state of one simulated host.
#[derive(Debug)]
pub struct Host {
    /// Identity.
    pub identity: Identity,
    /// The `C:` drive.
    pub disk: Disk,
    /// Service control manager.
    pub scm: ServiceManager,
    /// Registry keys by lower-cased path (`hklm\software\openssh`).
    pub registry: BTreeMap<String, RegKey>,
    /// Firewall rules.
    pub firewall: Vec<FirewallRule>,
    /// HNS networks.
    pub hns_networks: Vec<HnsNetwork>,
    /// Optional features and their state, one of [`FEATURE_STATES`] (`Containers` → `Enabled`).
    pub features: BTreeMap<String, String>,
    /// When the host last booted (`Win32_OperatingSystem.LastBootUpTime`): its creation, then every reboot.
    pub last_boot_up: SystemTime,
    /// Installed capabilities (`OpenSSH.Server~~~~0.0.1.0`).
    pub capabilities: Vec<String>,
    /// Every command run.
    pub command_log: Vec<CommandRecord>,
    /// Unknown commands (e2e tests assert this stays empty).
    pub unknown_commands: Vec<UnknownCommand>,
    /// Service processes started or stopped since the driver last looked.
    pub process_events: Vec<ProcessEvent>,
    /// The host was asked to reboot (`Restart-Computer`); the server applies it after the command.
    pub reboot_requested: bool,
    /// How many reboots began: a connection opened before the latest one is dead.
    pub boots: u64,
    /// How long a reboot keeps the host away (connections refused); `None`: twice the service transition.
    pub reboot_pause: Option<Duration>,
    /// Every reboot served over SSH: when it began (connections dropped) and when the host was back.
    pub reboot_windows: Vec<RebootWindow>,
    /// Latencies.
    pub latency: Latency,
    /// Which kubelet the host runs when its `kubelet` service starts.
    pub kubelet_model: crate::wine_kubelet::KubeletModel,
    /// The machine environment the service control manager read when it started (at boot): services get this
    /// block, not the current machine variables, until the next reboot (windows-commands.md §4.1).
    pub scm_environment: BTreeMap<String, String>,
    /// The system volume `C:` as `Win32_LogicalDisk` reports it.
    pub volume: Volume,
    /// Microsoft Defender Antivirus; `None` when the feature is not installed (its cmdlets do not exist).
    pub defender: Option<Defender>,
    /// `Cert:\LocalMachine\Root`, by thumbprint (40 upper-case hex digits); a fresh host holds
    /// [`BUILTIN_ROOT_THUMBPRINT`].
    pub root_certificates: BTreeMap<String, RootCertificate>,
    /// Local user accounts ([`default_local_users`] on a fresh host).
    pub local_users: Vec<LocalUser>,
    /// The installed EC2Launch v2's version (`EC2Launch.exe version`); `None`: not installed (a fresh host). Set it
    /// with [`Host::install_ec2launch`], which also writes the program file.
    pub ec2launch_version: Option<String>,
    /// Routes made persistent by `EC2Launch.exe run-task add-routes --persistent` (destination prefixes).
    pub persistent_routes: Vec<String>,
    /// What `Invoke-WebRequest` can download, by URL; any other URL is unreachable. A fresh host reaches
    /// [`crate::ec2launch::MSI_URL`] (clear this map for a disconnected host).
    pub downloads: BTreeMap<String, Vec<u8>>,
    /// The cloud the host runs on, as its metadata service answers `Invoke-RestMethod` (none on a fresh host).
    pub instance_metadata: crate::metadata::InstanceMetadata,
}

/// The system volume's space, in bytes (`Win32_LogicalDisk` `FreeSpace` and `Size`). The simulated disk is a
/// directory on the test machine; these figures are what the host reports, set by a test to model a full disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Volume {
    /// `FreeSpace`.
    pub free_bytes: u64,
    /// `Size`.
    pub size_bytes: u64,
}

impl Default for Volume {
    /// A 127 GiB volume (an Azure or AWS default) with 100 GiB free.
    fn default() -> Self {
        Volume { free_bytes: 100 << 30, size_bytes: 127 << 30 }
    }
}

/// A certificate in the machine's root store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RootCertificate {
    /// The subject's distinguished name, as `Cert:\` prints it.
    pub subject: String,
}

/// The thumbprint of the root certificate every simulated host trusts from the start (a stand-in for the roots
/// Windows ships), so tests can show the operator never removes what it did not import.
pub const BUILTIN_ROOT_THUMBPRINT: &str = "CDD4EEAE6000AC7F40C3802C171E30148030C072";

/// The states `Get-WindowsOptionalFeature` reports (windows-commands.md §4) with the numbers `ConvertTo-Json`
/// prints for them. Enabled 2 and Disabled 0 are what hosts show; the other numbers are unconfirmed (§4: read
/// `.State.ToString()` or compare the name with `-eq`).
pub const FEATURE_STATES: [(&str, i64); 5] =
    [("Disabled", 0), ("DisablePending", 1), ("Enabled", 2), ("EnablePending", 3), ("DisabledWithPayloadRemoved", 6)];

/// The canonical spelling and number of the feature state `name` (case-insensitive), if it is one of
/// [`FEATURE_STATES`].
pub fn feature_state(name: &str) -> Option<(&'static str, i64)> {
    FEATURE_STATES.iter().copied().find(|(state, _)| state.eq_ignore_ascii_case(name))
}

/// The registry key under which the service control manager keeps each service's configuration.
pub const SERVICES_KEY: &str = r"HKLM\SYSTEM\CurrentControlSet\Services";
/// The registry key holding machine environment variables.
pub const MACHINE_ENVIRONMENT_KEY: &str = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment";
/// The registry key of the Windows version: `CurrentBuildNumber` (a string) and `UBR` (a DWORD, the update build
/// revision a cumulative update raises).
pub const CURRENT_VERSION_KEY: &str = r"HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion";

/// A current update revision (`UBR`) of `build`: that of the November 2024 cumulative updates (Windows Server 2019
/// 17763.6532, KB5046615; 2022 20348.2849, KB5046616; 2025 26100.2314, KB5046617), 1 for other builds.
///
/// ```
/// assert_eq!(winhost_sim::host::current_ubr(20348), 2849);
/// ```
pub fn current_ubr(build: u32) -> u32 {
    match build {
        17763 => 6532,
        20348 => 2849,
        26100 => 2314,
        _ => 1,
    }
}
/// The file sshd reads administrators' keys from.
pub const ADMIN_AUTHORIZED_KEYS: &str = r"C:\ProgramData\ssh\administrators_authorized_keys";

impl Host {
    /// A freshly installed host: base directories, the version registry keys, the Containers feature enabled.
    ///
    /// # Errors
    /// [`DiskError`] if the root directory cannot be prepared.
    pub fn new(identity: Identity, root: &Path, latency: Latency) -> Result<Host, DiskError> {
        let disk = Disk::new(root)?;
        for directory in [r"C:\Windows\System32", r"C:\Windows\Temp", r"C:\ProgramData\ssh", r"C:\Users\Administrator"]
        {
            disk.create_dir_all(&WinPath::parse(directory)?)?;
        }
        // The sshd installer's directory grants only SYSTEM and Administrators (windows-commands.md §5).
        disk.set_acl(&WinPath::parse(r"C:\ProgramData\ssh")?, crate::acl::AclSettings::system_and_administrators());
        let timing = Timing { start: latency.service_transition, stop: latency.service_transition };
        let mut host = Host {
            disk,
            scm: ServiceManager::new(timing),
            registry: BTreeMap::new(),
            firewall: Vec::new(),
            hns_networks: Vec::new(),
            features: BTreeMap::from([("Containers".to_owned(), "Enabled".to_owned())]),
            last_boot_up: SystemTime::now(),
            capabilities: Vec::new(),
            command_log: Vec::new(),
            unknown_commands: Vec::new(),
            process_events: Vec::new(),
            reboot_requested: false,
            boots: 0,
            reboot_pause: None,
            reboot_windows: Vec::new(),
            latency,
            kubelet_model: crate::wine_kubelet::KubeletModel::Simulated,
            scm_environment: BTreeMap::new(),
            volume: Volume::default(),
            defender: Some(Defender::default()),
            root_certificates: BTreeMap::from([(
                BUILTIN_ROOT_THUMBPRINT.to_owned(),
                RootCertificate { subject: "CN=Microsoft Root Certificate Authority, DC=microsoft, DC=com".to_owned() },
            )]),
            local_users: default_local_users(),
            ec2launch_version: None,
            persistent_routes: Vec::new(),
            downloads: BTreeMap::from([(crate::ec2launch::MSI_URL.to_owned(), crate::ec2launch::MSI_CONTENT.to_vec())]),
            instance_metadata: crate::metadata::InstanceMetadata::None,
            identity,
        };
        let (product, display, release) = if host.identity.build >= 20348 {
            ("Windows Server 2022 Datacenter", "21H2", "2009")
        } else {
            ("Windows Server 2019 Datacenter", "", "1809")
        };
        let build = host.identity.build.to_string();
        host.set_registry_value(CURRENT_VERSION_KEY, "CurrentBuildNumber", RegValue::String(build.clone()));
        host.set_registry_value(CURRENT_VERSION_KEY, "CurrentBuild", RegValue::String(build));
        host.set_registry_value(CURRENT_VERSION_KEY, "UBR", RegValue::Dword(host.identity.ubr));
        host.set_registry_value(CURRENT_VERSION_KEY, "ProductName", RegValue::String(product.to_owned()));
        host.set_registry_value(CURRENT_VERSION_KEY, "ReleaseId", RegValue::String(release.to_owned()));
        if !display.is_empty() {
            host.set_registry_value(CURRENT_VERSION_KEY, "DisplayVersion", RegValue::String(display.to_owned()));
        }
        host.ensure_registry_key(r"HKLM\SOFTWARE\OpenSSH");
        host.create_servicing_keys();
        host.set_registry_value(MACHINE_ENVIRONMENT_KEY, "Path", RegValue::String(r"C:\Windows\system32".into()));
        host.scm_environment = host.machine_environment();
        Ok(host)
    }

    /// Runs one exec request line through the default shell, records it, and returns what the client sees.
    pub fn exec(&mut self, client: &str, line: &str) -> Output {
        let shell = self.default_shell();
        self.exec_in(shell, client, line)
    }

    /// The shell sshd starts for exec requests: `HKLM\SOFTWARE\OpenSSH` `DefaultShell` when it names
    /// powershell.exe, cmd.exe otherwise (windows-commands.md §2; sshd reads it for each new connection).
    pub fn default_shell(&self) -> ExecShell {
        let configured = self
            .registry
            .get(&r"HKLM\SOFTWARE\OpenSSH".to_lowercase())
            .and_then(|key| key.values.get("defaultshell"))
            .map(|(_, value)| value);
        match configured {
            Some(RegValue::String(path)) if crate::native::resolve(path) == Some("powershell") => ExecShell::PowerShell,
            _ => ExecShell::Cmd,
        }
    }

    /// Runs one exec request line through `shell` (`powershell.exe -c "<line>"` for PowerShell, where the
    /// CreateProcess limit of 32,767 characters applies instead of cmd's).
    pub fn exec_in(&mut self, shell: ExecShell, client: &str, line: &str) -> Output {
        self.refresh();
        let output = match shell {
            ExecShell::Cmd => crate::cmd::run_line(self, line),
            ExecShell::PowerShell if line.chars().count() > 32_766 => {
                Output::new("", "The filename or extension is too long.\r\n", 206)
            }
            ExecShell::PowerShell => crate::ps::run_script(self, line, crate::ps::ErrorStream::Text),
        };
        self.command_log.push(CommandRecord {
            client: client.to_owned(),
            line: line.to_owned(),
            exit_code: output.code,
            stdout: output.stdout.clone(),
            stderr: output.stderr.clone(),
            finished_at: Some(SystemTime::now()),
        });
        output
    }

    /// Advances service states to `now`; the registry key of a service that is gone goes with it.
    pub fn refresh(&mut self) {
        let now = Instant::now();
        for name in self.scm.advance(now) {
            self.process_events.push(ProcessEvent::Stopped { service: name });
        }
        for name in self.scm.due_restarts(now) {
            let _ = self.start_service(&name);
        }
        let prefix = format!("{}\\", SERVICES_KEY.to_lowercase());
        let scm = &self.scm;
        self.registry.retain(|key, _| {
            key.strip_prefix(&prefix)
                .and_then(|rest| rest.split('\\').next())
                .is_none_or(|service| scm.get(service).is_some())
        });
    }

    /// The machine environment variables as the registry holds them now.
    pub fn machine_environment(&self) -> BTreeMap<String, String> {
        let Some(key) = self.registry.get(&MACHINE_ENVIRONMENT_KEY.to_lowercase()) else { return BTreeMap::new() };
        key.values
            .values()
            .filter_map(|(name, value)| match value {
                RegValue::String(text) => Some((name.clone(), text.clone())),
                _ => None,
            })
            .collect()
    }

    /// The environment a process of service `name` starts with: the service control manager's boot-time block,
    /// then each `NAME=value` entry of the service's own `Environment` value (windows-commands.md §4.1).
    pub fn service_start_environment(&self, name: &str) -> BTreeMap<String, String> {
        let mut environment = self.scm_environment.clone();
        let key = format!("{SERVICES_KEY}\\{name}").to_lowercase();
        let own = self.registry.get(&key).and_then(|key| key.values.get("environment")).map(|(_, value)| value);
        if let Some(RegValue::MultiString(entries)) = own {
            for entry in entries {
                if let Some((variable, value)) = entry.split_once('=') {
                    environment.retain(|existing, _| !existing.eq_ignore_ascii_case(variable));
                    environment.insert(variable.to_owned(), value.to_owned());
                }
            }
        }
        environment
    }

    /// Records a command no shell knew.
    pub fn record_unknown(&mut self, shell: &str, command: &str) {
        self.unknown_commands.push(UnknownCommand { shell: shell.to_owned(), command: command.to_owned() });
    }

    /// Creates a registry key (and returns it).
    pub fn ensure_registry_key(&mut self, path: &str) -> &mut RegKey {
        let path = normalize_key(path);
        self.registry.entry(path.to_lowercase()).or_insert_with(|| RegKey { path, values: BTreeMap::new() })
    }

    /// Writes a registry value, creating its key.
    pub fn set_registry_value(&mut self, key: &str, name: &str, value: RegValue) {
        self.ensure_registry_key(key).values.insert(name.to_lowercase(), (name.to_owned(), value));
    }

    /// A machine environment variable.
    pub fn machine_env(&self, name: &str) -> Option<String> {
        let key = self.registry.get(&MACHINE_ENVIRONMENT_KEY.to_lowercase())?;
        match &key.values.get(&name.to_lowercase())?.1 {
            RegValue::String(text) => Some(text.clone()),
            _ => None,
        }
    }

    /// Sets (`Some`) or deletes (`None`) a machine environment variable.
    pub fn set_machine_env(&mut self, name: &str, value: Option<&str>) {
        match value.filter(|text| !text.is_empty()) {
            Some(text) => self.set_registry_value(MACHINE_ENVIRONMENT_KEY, name, RegValue::String(text.to_owned())),
            None => {
                self.ensure_registry_key(MACHINE_ENVIRONMENT_KEY).values.remove(&name.to_lowercase());
            }
        }
    }

    /// The process environment of a new session (machine variables plus the session's own).
    pub fn session_env(&self, name: &str) -> Option<String> {
        match name.to_ascii_uppercase().as_str() {
            "COMPUTERNAME" => Some(self.identity.netbios_name()),
            "USERPROFILE" => Some(r"C:\Users\Administrator".to_owned()),
            "USERNAME" => Some("Administrator".to_owned()),
            "SYSTEMROOT" | "WINDIR" => Some(r"C:\Windows".to_owned()),
            "PROGRAMDATA" => Some(r"C:\ProgramData".to_owned()),
            "PROGRAMFILES" => Some(r"C:\Program Files".to_owned()),
            "SYSTEMDRIVE" => Some("C:".to_owned()),
            _ => self.machine_env(name),
        }
    }

    /// Whether `path` is the executable of a service that is not stopped (Windows locks it against overwrite,
    /// delete and rename).
    pub fn is_locked(&self, path: &WinPath) -> bool {
        self.scm.services().filter(|service| service.state != State::Stopped).any(|service| {
            process::executables(&service.image_path)
                .iter()
                .filter_map(|exe| WinPath::parse(exe).ok())
                .any(|exe| exe.starts_with(path))
        })
    }

    /// Starts a service (and its dependencies), running each process model; records process events.
    ///
    /// # Errors
    /// The SCM's [`Win32Error`].
    pub fn start_service(&mut self, name: &str) -> Result<(), Win32Error> {
        self.refresh();
        let view = process::HostView::capture(self);
        let mut refusals = Vec::new();
        let started = self.scm.start(name, Instant::now(), &mut |service| {
            let launch = view.launch(&service.image_path);
            if let Launch::Exits(reason) = &launch {
                refusals.push((service.name.clone(), service.image_path.clone(), reason.clone()));
            }
            launch
        })?;
        self.after_start(started, refusals);
        Ok(())
    }

    fn after_start(&mut self, started: Vec<crate::scm::Started>, refusals: Vec<(String, String, String)>) {
        for (service, image_path, reason) in refusals {
            process::write_refusal_log(&self.disk, &service, &image_path, &reason);
        }
        for entry in started {
            let environment = self.service_start_environment(&entry.name);
            self.scm.set_process_environment(&entry.name, environment);
            self.process_events.push(ProcessEvent::Started { service: entry.name, image_path: entry.image_path });
        }
    }

    /// Stops a service.
    ///
    /// # Errors
    /// The SCM's [`Win32Error`].
    pub fn stop_service(&mut self, name: &str) -> Result<(), Win32Error> {
        self.refresh();
        self.scm.stop(name, Instant::now())?;
        self.refresh();
        Ok(())
    }

    /// Reboots: processes end, marked services vanish, pending feature changes complete (`EnablePending` →
    /// `Enabled`, `DisablePending` → `Disabled`), so do pending file operations and servicing, which clears the
    /// pending-reboot markers ([`crate::pending_reboot`]), the boot time moves to now (always later than the previous one, so
    /// two boots never report the same `LastBootUpTime`), and automatic services start again.
    pub fn reboot(&mut self) {
        for state in self.features.values_mut() {
            let settled = match state.as_str() {
                "EnablePending" => "Enabled",
                "DisablePending" => "Disabled",
                _ => continue,
            };
            settled.clone_into(state);
        }
        self.complete_pending_operations();
        let just_after_previous = self.last_boot_up.checked_add(Duration::from_millis(1)).unwrap_or(self.last_boot_up);
        self.last_boot_up = SystemTime::now().max(just_after_previous);
        for service in self.scm.services().filter(|service| service.state != State::Stopped) {
            self.process_events.push(ProcessEvent::Stopped { service: service.name.clone() });
        }
        self.scm_environment = self.machine_environment();
        let view = process::HostView::capture(self);
        let mut refusals = Vec::new();
        let started = self.scm.reboot(Instant::now(), &mut |service| {
            let launch = view.launch(&service.image_path);
            if let Launch::Exits(reason) = &launch {
                refusals.push((service.name.clone(), service.image_path.clone(), reason.clone()));
            }
            launch
        });
        self.after_start(started, refusals);
        self.reboot_requested = false;
    }

    /// Installs EC2Launch v2 at `version`, as an AMI ships it or its installer leaves it: the program file
    /// ([`crate::ec2launch::EXE`]) and its version.
    ///
    /// # Errors
    /// [`DiskError`] if the program directory cannot be made.
    pub fn install_ec2launch(&mut self, version: &str) -> Result<(), DiskError> {
        let executable = WinPath::parse(crate::ec2launch::EXE)?;
        if let Some(directory) = executable.parent() {
            self.disk.create_dir_all(&directory)?;
        }
        self.disk.write(&executable, b"MZ")?;
        self.ec2launch_version = Some(version.to_owned());
        Ok(())
    }

    /// SHA-256 of a file (lower-case hex), if it exists.
    pub fn file_hash(&self, path: &WinPath) -> Option<String> {
        use sha2::Digest;
        if self.disk.entry(path) != Some(Entry::File) {
            return None;
        }
        self.disk.read(path).ok().map(|bytes| hex::encode(sha2::Sha256::digest(bytes)))
    }
}

/// `HKLM:\X`, `HKEY_LOCAL_MACHINE\X` and `Registry::HKLM\X` all become `HKLM\X` (no trailing separator).
pub fn normalize_key(path: &str) -> String {
    let path = path.strip_prefix("Registry::").unwrap_or(path);
    let path = path.replace('/', "\\");
    let (hive, rest) = path.split_once('\\').unwrap_or((&path, ""));
    let hive = match hive.trim_end_matches(':').to_ascii_uppercase().as_str() {
        "HKEY_LOCAL_MACHINE" | "HKLM" => "HKLM".to_owned(),
        "HKEY_CURRENT_USER" | "HKCU" => "HKCU".to_owned(),
        other => other.to_owned(),
    };
    let rest = rest.trim_matches('\\');
    if rest.is_empty() { hive } else { format!("{hive}\\{rest}") }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A host with zero latencies in a temporary directory.
    pub(crate) fn test_host() -> (tempfile::TempDir, Host) {
        let root = tempfile::tempdir().unwrap();
        let identity = Identity {
            hostname: "winworker-1".into(),
            fqdn: "winworker-1.example.test".into(),
            build: 20348,
            ubr: 2340,
            node_ip: Ipv4Addr::new(203, 0, 113, 10),
        };
        let host = Host::new(identity, root.path(), Latency::zero()).unwrap();
        (root, host)
    }

    #[test]
    fn registry_paths_normalise_and_env_lives_in_the_registry() {
        assert_eq!(normalize_key(r"HKLM:\SOFTWARE\OpenSSH\"), r"HKLM\SOFTWARE\OpenSSH");
        assert_eq!(normalize_key(r"Registry::HKEY_LOCAL_MACHINE\SOFTWARE"), r"HKLM\SOFTWARE");
        let (_root, mut host) = test_host();
        host.set_machine_env("HTTP_PROXY", Some("http://proxy:3128"));
        assert_eq!(host.machine_env("http_proxy").as_deref(), Some("http://proxy:3128"));
        host.set_machine_env("HTTP_PROXY", None);
        assert_eq!(host.machine_env("HTTP_PROXY"), None);
        assert_eq!(host.session_env("computername").as_deref(), Some("WINWORKER-1"));
    }

    #[test]
    fn reboot_settles_pending_features_and_moves_the_boot_time_forward() {
        let (_root, mut host) = test_host();
        for (feature, state) in
            [("A", "EnablePending"), ("B", "DisablePending"), ("C", "DisabledWithPayloadRemoved"), ("D", "Disabled")]
        {
            host.features.insert(feature.to_owned(), state.to_owned());
        }
        let before = host.last_boot_up;
        host.reboot();
        let states: Vec<&str> = host.features.values().map(String::as_str).collect();
        assert_eq!(
            states,
            ["Enabled", "Disabled", "DisabledWithPayloadRemoved", "Enabled", "Disabled"],
            "A, B, C, Containers, D"
        );
        let after = host.last_boot_up;
        assert!(after.duration_since(before).unwrap() >= Duration::from_millis(1));
        host.reboot();
        assert!(host.last_boot_up.duration_since(after).unwrap() >= Duration::from_millis(1));
        assert_eq!(feature_state("enablepending"), Some(("EnablePending", 3)));
        assert_eq!(feature_state("Installed"), None);
    }
}
