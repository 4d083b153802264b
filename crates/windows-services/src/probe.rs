//! The batched state probe: one PowerShell script (of the §8 subset) that reads everything `plan` diffs —
//! the configuration and state of listed services, SHA-256 of listed files, which listed directories exist and the
//! security descriptors (SDDL) of the private ones, listed machine environment variables, firewall rules, registry values, the trusted root store and, when asked, the host's
//! identity ([`ObservedIdentity`]); always the pending-reboot markers ([`RebootMarker`]) — and prints it as one
//! compact JSON document; plus the parser of that document into an [`ObservedHost`].
//!
//! Service configuration comes from the service's registry key (`HKLM\SYSTEM\CurrentControlSet\Services\<name>`:
//! `ImagePath`, `DisplayName`, `Description`, `Start`, `DelayedAutostart`, `DependOnService`, `FailureActions`,
//! `FailureActionsOnNonCrashFailures`, `DeleteFlag`, `Environment`), the run state from `Win32_Service`. Results are
//! positional (arrays in request order), so the output never echoes names back through the console code page.
//!
//! The parser honours the Windows PowerShell 5.1 `ConvertTo-Json` quirks of windows-commands.md §4: a one-element
//! list may arrive as a bare value (or as `{"value": [...], "Count": n}`), enums arrive as numbers, a byte array
//! arrives as numbers (5.1) or Base64 (PowerShell 7).

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::Value;

use crate::host::{EnvVarName, RegistryData, RegistryKey, RegistryValueName, RotatedFiles, Sha256Hex};
use crate::host_state::HostState;
use crate::path::WinPath;
use crate::powershell::PowerShellScript;
use crate::probe_identity::{self, ObservedIdentity};
use crate::probe_reboot::{self, RebootMarker};
use crate::quote::powershell_literal;
use crate::service::{
    FailureAction, FailureActionKind, FailureActions, Millis, ResetPeriod, ServiceName, ServiceState, StartType,
};
use crate::trust::{ObservedRoots, ROOT_STORE, Thumbprint};

/// The registry key of Win32-OpenSSH's settings, whose `DefaultShell` names the shell of exec requests.
const OPENSSH_KEY: &str = r"HKLM:\SOFTWARE\OpenSSH";

/// The process whose presence means Windows Defender runs (the Go operator's check).
const DEFENDER_PROCESS: &str = "MsMpEng";

/// Registry key under which the SCM keeps each service's configuration.
const SERVICES_KEY: &str = r"HKLM:\SYSTEM\CurrentControlSet\Services";

/// What to read from a host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeRequest {
    /// Services whose configuration and state to read.
    pub services: BTreeSet<ServiceName>,
    /// Files to hash.
    pub files: BTreeSet<WinPath>,
    /// Directories to test.
    pub directories: BTreeSet<WinPath>,
    /// Directories whose security descriptor to read (`(Get-Acl -LiteralPath P).Sddl`), in the same script.
    pub directory_acls: BTreeSet<WinPath>,
    /// Machine environment variables to read.
    pub machine_env: BTreeSet<EnvVarName>,
    /// Firewall rules (by name) to read.
    pub firewall_rules: BTreeSet<String>,
    /// Registry values to read.
    pub registry_values: BTreeSet<(RegistryKey, RegistryValueName)>,
    /// The record file of imported root certificates, when the root store is to be read.
    pub trusted_roots: Option<WinPath>,
    /// Whether to read Windows Defender's state and process exclusions.
    pub defender: bool,
    /// Rotated files to list.
    pub rotated_files: BTreeSet<RotatedFiles>,
    /// Whether to read the host's identity again (host name, DNS name, default-route IPv4 address).
    pub identity: bool,
}

impl ProbeRequest {
    /// Everything `plan` needs to converge `desired`.
    pub fn for_state(desired: &HostState) -> ProbeRequest {
        ProbeRequest {
            services: desired
                .services
                .iter()
                .map(|spec| spec.name.clone())
                .chain(desired.removed_services.iter().cloned())
                .collect(),
            files: desired.files.keys().cloned().collect(),
            directories: desired.directories.union(&desired.private_directories).cloned().collect(),
            directory_acls: private_directories_and_below(desired),
            machine_env: desired.machine_env.keys().cloned().collect(),
            firewall_rules: desired
                .firewall_rules
                .iter()
                .map(|rule| rule.name.clone())
                .chain(desired.removed_firewall_rules.iter().cloned())
                .collect(),
            registry_values: desired
                .registry_values
                .iter()
                .map(|value| (value.key.clone(), value.name.clone()))
                .collect(),
            trusted_roots: desired.trusted_roots.as_ref().map(|roots| roots.record.clone()),
            defender: !desired.defender_exclusions.is_empty() || !desired.removed_defender_exclusions.is_empty(),
            rotated_files: desired.rotated_files.clone(),
            identity: false,
        }
    }

    /// The probe script. Its JSON output is read back with [`ProbeRequest::parse_output`].
    ///
    /// ```
    /// use wmco_windows_services::{ProbeRequest, ServiceName};
    /// let mut request = ProbeRequest::default();
    /// request.services.insert(ServiceName::new("kubelet")?);
    /// let script = request.script();
    /// assert!(script.text().contains("Get-ItemProperty 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\kubelet'"));
    /// let observed = request.parse_output(r#"{"services":{"key":false,"state":null},"files":[],"dirs":[],"env":[],"firewall":[],"registry":[]}"#)?;
    /// assert!(observed.services.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn script(&self) -> PowerShellScript {
        let mut statements = vec!["$cim = @(Get-CimInstance Win32_Service)".to_owned()];
        let mut service_entries = Vec::new();
        for (index, name) in self.services.iter().enumerate() {
            let key = powershell_literal(&format!(r"{SERVICES_KEY}\{}", name.as_str()));
            statements.push(format!("$s{index} = $null"));
            statements.push(format!("if (Test-Path -LiteralPath {key}) {{ $s{index} = Get-ItemProperty {key} }}"));
            statements.push(format!(
                "$c{index} = @($cim | Where-Object {{ $_.Name -eq {} }})",
                powershell_literal(name.as_str())
            ));
            service_entries.push(format!(
                "[ordered]@{{ key = $null -ne $s{index}; state = $c{index}[0].State; pid = $c{index}[0].ProcessId; \
                 image = $s{index}.ImagePath; display = $s{index}.DisplayName; description = $s{index}.Description; \
                 start = $s{index}.Start; delayed = $s{index}.DelayedAutostart; depends = $s{index}.DependOnService; \
                 failure = $s{index}.FailureActions; failureFlag = $s{index}.FailureActionsOnNonCrashFailures; \
                 deleteFlag = $s{index}.DeleteFlag; environment = $s{index}.Environment }}"
            ));
        }
        let mut file_entries = Vec::new();
        for (index, file) in self.files.iter().enumerate() {
            let literal = powershell_literal(file.as_str());
            statements.push(format!("$f{index} = $null"));
            statements.push(format!(
                "if (Test-Path -LiteralPath {literal} -PathType Leaf) {{ $f{index} = Get-FileHash -LiteralPath {literal} \
                 -Algorithm SHA256 | Select-Object -ExpandProperty Hash }}"
            ));
            file_entries.push(format!("$f{index}"));
        }
        let mut directory_entries = Vec::new();
        for (index, directory) in self.directories.iter().enumerate() {
            statements.push(format!(
                "$d{index} = Test-Path -LiteralPath {} -PathType Container",
                powershell_literal(directory.as_str())
            ));
            directory_entries.push(format!("$d{index}"));
        }
        let mut acl_entry = String::new();
        if !self.directory_acls.is_empty() {
            let mut entries = Vec::new();
            for (index, directory) in self.directory_acls.iter().enumerate() {
                let literal = powershell_literal(directory.as_str());
                statements.push(format!("$a{index} = $null"));
                statements.push(format!(
                    "if (Test-Path -LiteralPath {literal} -PathType Container) {{ $a{index} = (Get-Acl -LiteralPath \
                     {literal}).Sddl }}"
                ));
                entries.push(format!("$a{index}"));
            }
            acl_entry = format!("; acls = @({})", entries.join(", "));
        }
        let mut env_entries = Vec::new();
        for (index, name) in self.machine_env.iter().enumerate() {
            statements.push(format!(
                "$e{index} = [Environment]::GetEnvironmentVariable({}, 'Machine')",
                powershell_literal(name.as_str())
            ));
            env_entries.push(format!("$e{index}"));
        }
        let mut firewall_entries = Vec::new();
        for (index, name) in self.firewall_rules.iter().enumerate() {
            statements.push(format!(
                "$w{index} = Get-NetFirewallRule -Name {} -ErrorAction SilentlyContinue",
                powershell_literal(name)
            ));
            firewall_entries.push(format!(
                "[ordered]@{{ exists = $null -ne $w{index}; direction = $w{index}.Direction; \
                 enabled = $w{index}.Enabled; action = $w{index}.Action }}"
            ));
        }
        let mut registry_entries = Vec::new();
        for (index, (key, name)) in self.registry_values.iter().enumerate() {
            let path = powershell_literal(&key.provider_path());
            statements.push(format!("$r{index} = $null"));
            statements.push(format!(
                "if (Test-Path -LiteralPath {path}) {{ $k{index} = Get-ItemProperty {path}; $r{index} = $k{index}.{name} }}"
            ));
            registry_entries.push(format!("$r{index}"));
        }
        let mut trust_entry = String::new();
        if let Some(record) = &self.trusted_roots {
            let record = powershell_literal(record.as_str());
            statements.push(format!(
                "$t = @(Get-ChildItem -Path {} | Select-Object -ExpandProperty Thumbprint)",
                powershell_literal(ROOT_STORE)
            ));
            statements.push("$ti = @()".to_owned());
            statements.push(format!(
                "if (Test-Path -LiteralPath {record} -PathType Leaf) {{ $ti = @(Get-Content -LiteralPath {record}) }}"
            ));
            trust_entry = "; trust = [ordered]@{ store = $t; imported = $ti }".to_owned();
        }
        let mut defender_entry = String::new();
        if self.defender {
            // Defender runs when its MsMpEng process exists (windows-commands.md §4.1); its preferences can only be
            // read then. `@($null)` prints `[null]`, which the parser drops.
            statements.push(format!("$mp = Get-Process -Name {DEFENDER_PROCESS} -ErrorAction SilentlyContinue"));
            statements.push("$mx = $null".to_owned());
            statements.push(
                "if ($null -ne $mp) { $mx = (Get-MpPreference -ErrorAction SilentlyContinue).ExclusionProcess }"
                    .to_owned(),
            );
            defender_entry = "; defender = [ordered]@{ running = $null -ne $mp; exclusions = @($mx) }".to_owned();
        }
        let mut rotated_entry = String::new();
        if !self.rotated_files.is_empty() {
            let mut entries = Vec::new();
            for (index, rotated) in self.rotated_files.iter().enumerate() {
                statements.push(format!(
                    "$o{index} = @(Get-ChildItem -LiteralPath {} -Filter {} -ErrorAction SilentlyContinue | \
                     Select-Object -ExpandProperty Name)",
                    powershell_literal(rotated.directory.as_str()),
                    powershell_literal(&rotated.filter())
                ));
                entries.push(format!("[ordered]@{{ names = $o{index} }}"));
            }
            rotated_entry = format!("; rotated = @({})", entries.join(", "));
        }
        let mut identity_entry = "";
        if self.identity {
            statements.extend(probe_identity::statements().map(str::to_owned));
            identity_entry = probe_identity::ENTRY;
        }
        // What Windows keeps while a restart is pending: every probe reads it, in this same script.
        statements.extend(probe_reboot::statements().map(str::to_owned));
        let reboot_entry = probe_reboot::ENTRY;
        // The shell sshd starts for exec requests (read at each connection): the caller renders later commands for it.
        statements.push(format!(
            "$sh = (Get-ItemProperty {} -ErrorAction SilentlyContinue).DefaultShell",
            powershell_literal(OPENSSH_KEY)
        ));
        statements.push(format!(
            "[ordered]@{{ services = @({}); files = @({}); dirs = @({}){acl_entry}; env = @({}); firewall = @({}); registry = @({}){trust_entry}{defender_entry}{rotated_entry}{identity_entry}{reboot_entry}; shell = $sh }} \
             | ConvertTo-Json -Compress -Depth 8",
            service_entries.join(", "),
            file_entries.join(", "),
            directory_entries.join(", "),
            env_entries.join(", "),
            firewall_entries.join(", "),
            registry_entries.join(", "),
        ));
        PowerShellScript::from_statements(&statements)
    }

    /// Parses the probe's stdout (the last line that starts with `{`).
    ///
    /// # Errors
    /// [`ProbeError`] when the output is not the document the script prints for this request.
    pub fn parse_output(&self, stdout: &str) -> Result<ObservedHost, ProbeError> {
        let json = stdout.lines().rev().map(str::trim).find(|line| line.starts_with('{')).ok_or(ProbeError::NoJson)?;
        let raw: RawProbe = serde_json::from_str(json).map_err(|error| ProbeError::Json(error.to_string()))?;
        let services = positional("services", &self.services, raw.services)?;
        let files = positional("files", &self.files, raw.files)?;
        let directories = positional("dirs", &self.directories, raw.dirs)?;
        let env = positional("env", &self.machine_env, raw.env)?;
        let firewall = positional("firewall", &self.firewall_rules, raw.firewall)?;
        let registry = positional("registry", &self.registry_values, raw.registry)?;
        let mut observed = ObservedHost { default_shell: raw.shell.clone(), ..ObservedHost::default() };
        if self.identity {
            observed.identity = probe_identity::parse(raw.identity.clone());
        }
        observed.pending_reboot = probe_reboot::parse(raw.reboot.clone())
            .ok_or_else(|| bad("reboot", "pending-reboot markers", &raw.reboot.to_string()))?;
        for (name, value) in services {
            if let Some(service) = observed_service(name, value)? {
                observed.services.insert(name.clone(), service);
            }
        }
        for (path, value) in files {
            let digest = match value {
                Value::Null => None,
                Value::String(text) => Some(Sha256Hex::new(&text).map_err(|_| bad("files", path.as_str(), &text))?),
                other => return Err(bad("files", path.as_str(), &other.to_string())),
            };
            observed.files.insert(path.clone(), digest);
        }
        for (path, value) in directories {
            observed.directories.insert(path.clone(), value.as_bool() == Some(true));
        }
        if !self.directory_acls.is_empty() {
            for (path, value) in positional("acls", &self.directory_acls, raw.acls)? {
                let sddl = match value {
                    Value::Null => None,
                    Value::String(text) => Some(text),
                    other => return Err(bad("acls", path.as_str(), &other.to_string())),
                };
                observed.directory_acls.insert(path.clone(), sddl);
            }
        }
        for (name, value) in env {
            observed.machine_env.insert(name.clone(), value.as_str().map(str::to_owned));
        }
        for (name, value) in firewall {
            observed.firewall_rules.insert(name.clone(), observed_firewall_rule(name, value)?);
        }
        for ((key, name), value) in registry {
            let data = match value {
                Value::Null => None,
                Value::String(text) => Some(RegistryData::String(text)),
                Value::Number(number) => {
                    let dword = number.as_u64().and_then(|n| u32::try_from(n).ok());
                    Some(RegistryData::Dword(dword.ok_or_else(|| bad("registry", name.as_str(), &number.to_string()))?))
                }
                other => return Err(bad("registry", name.as_str(), &other.to_string())),
            };
            observed.registry_values.insert((key.clone(), name.clone()), data);
        }
        if self.trusted_roots.is_some() {
            let trust: RawTrust = serde_json::from_value(raw.trust.clone())
                .map_err(|_| bad("trust", "root store", &raw.trust.to_string()))?;
            observed.trusted_roots = Some(ObservedRoots {
                store: thumbprints("store", trust.store)?,
                imported: thumbprints("imported", trust.imported)?,
            });
        }
        if self.defender {
            let defender: RawDefender = serde_json::from_value(raw.defender.clone())
                .map_err(|_| bad("defender", "Defender", &raw.defender.to_string()))?;
            let exclusions = list(defender.exclusions)
                .into_iter()
                .filter(|entry| !entry.is_null())
                .map(|entry| match entry {
                    Value::String(text) => Ok(text),
                    other => Err(bad("defender", "ExclusionProcess", &other.to_string())),
                })
                .collect::<Result<_, _>>()?;
            observed.defender = Some(ObservedDefender { running: defender.running, exclusions });
        }
        if !self.rotated_files.is_empty() {
            for (rotated, value) in positional("rotated", &self.rotated_files, raw.rotated)? {
                let names = match value {
                    Value::Object(mut entry) => list(entry.remove("names").unwrap_or(Value::Null)),
                    other => return Err(bad("rotated", &rotated.filter(), &other.to_string())),
                };
                let names = names
                    .into_iter()
                    .filter(|name| !name.is_null())
                    .map(|name| match name {
                        Value::String(text) => Ok(text),
                        other => Err(bad("rotated", &rotated.filter(), &other.to_string())),
                    })
                    .collect::<Result<_, _>>()?;
                observed.rotated_files.insert(rotated.clone(), names);
            }
        }
        Ok(observed)
    }
}

/// The desired state's private directories and every desired directory within one: those whose ACL the probe
/// reads.
fn private_directories_and_below(desired: &HostState) -> BTreeSet<WinPath> {
    let private = &desired.private_directories;
    desired
        .directories
        .iter()
        .filter(|directory| private.iter().any(|root| directory.is_within(root)))
        .chain(private)
        .cloned()
        .collect()
}

/// Why the probe output could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// No line of the output starts with `{`.
    #[error("the state probe printed no JSON document")]
    NoJson,
    /// The document is not valid JSON of the expected shape.
    #[error("the state probe printed malformed JSON: {0}")]
    Json(String),
    /// A section has a different number of entries than requested.
    #[error("the state probe returned {found} {section} entries for {expected} requested")]
    Count {
        /// The section (`services`, `files`, ...).
        section: &'static str,
        /// How many were requested.
        expected: usize,
        /// How many came back.
        found: usize,
    },
    /// An entry holds a value of the wrong form.
    #[error("the state probe returned {value} for {item} in {section}, which is not a valid value")]
    BadValue {
        /// The section.
        section: &'static str,
        /// The item (service, file, ...).
        item: String,
        /// The value as received.
        value: String,
    },
}

/// A service as the probe found it (present services only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedService {
    /// Run state (`None` when WMI did not list it, e.g. just deleted).
    pub state: Option<ServiceState>,
    /// Process id (0 when stopped).
    pub process_id: Option<u32>,
    /// The stored command line.
    pub image_path: Option<String>,
    /// The display name.
    pub display_name: Option<String>,
    /// The description.
    pub description: Option<String>,
    /// The start type.
    pub start: Option<StartType>,
    /// Dependencies (names that are not valid service names are dropped).
    pub dependencies: Vec<ServiceName>,
    /// Recovery settings (`None` when unset or not representable).
    pub recovery: Option<FailureActions>,
    /// Whether failure actions also fire on a stop with an error code.
    pub failure_flag: bool,
    /// Whether the service is marked for deletion (it disappears once stopped and all handles are closed).
    pub marked_for_deletion: bool,
    /// The entries of the service's own `Environment` value (`NAME=value`), empty when it has none.
    pub environment: Vec<String>,
}

impl ObservedService {
    /// Whether the service is running (or starting, pausing, paused): a stop request applies.
    pub fn is_stoppable(&self) -> bool {
        self.state.is_some_and(ServiceState::is_stoppable)
    }
}

/// A firewall rule as the probe found it. Protocol and port live in a separate port filter the §8 subset cannot
/// read, so they are not observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObservedFirewallRule {
    /// `Direction` (1 inbound, 2 outbound).
    pub direction: Option<u32>,
    /// `Enabled` (1 true, 2 false).
    pub enabled: Option<u32>,
    /// `Action` (2 allow, 4 block).
    pub action: Option<u32>,
}

/// Everything the probe read from a host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedHost {
    /// Present services (absent ones are missing from the map).
    pub services: BTreeMap<ServiceName, ObservedService>,
    /// File hashes (`None`: no such file).
    pub files: BTreeMap<WinPath, Option<Sha256Hex>>,
    /// Whether each directory exists.
    pub directories: BTreeMap<WinPath, bool>,
    /// The security descriptor (SDDL) of each requested directory (`None`: no such directory).
    pub directory_acls: BTreeMap<WinPath, Option<String>>,
    /// Machine environment variables (`None`: unset).
    pub machine_env: BTreeMap<EnvVarName, Option<String>>,
    /// Firewall rules (`None`: no such rule).
    pub firewall_rules: BTreeMap<String, Option<ObservedFirewallRule>>,
    /// Registry values (`None`: no such value or key).
    pub registry_values: BTreeMap<(RegistryKey, RegistryValueName), Option<RegistryData>>,
    /// The root store and the record of imported certificates, when requested.
    pub trusted_roots: Option<ObservedRoots>,
    /// Windows Defender's state, when requested.
    pub defender: Option<ObservedDefender>,
    /// The names of each requested set of rotated files present.
    pub rotated_files: BTreeMap<RotatedFiles, Vec<String>>,
    /// Win32-OpenSSH's `DefaultShell` value (`None`: unset, so cmd.exe).
    pub default_shell: Option<String>,
    /// The host's identity, when requested and readable.
    pub identity: Option<ObservedIdentity>,
    /// The pending-reboot markers present, in [`RebootMarker::ALL`] order (empty: none, or a document from before
    /// they were read).
    pub pending_reboot: Vec<RebootMarker>,
}

/// Windows Defender as the probe found it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedDefender {
    /// Whether its `MsMpEng` process runs (only then can exclusions be read or changed).
    pub running: bool,
    /// Its process exclusions (`ExclusionProcess`), as Defender keeps them.
    pub exclusions: Vec<String>,
}

impl ObservedDefender {
    /// Whether `program` is excluded from scanning (paths compare case-insensitively, as on Windows).
    ///
    /// ```
    /// use wmco_windows_services::{ObservedDefender, WinPath};
    /// let defender = ObservedDefender { running: true, exclusions: vec![r"c:\k\containerd\containerd.exe".into()] };
    /// assert!(defender.excludes(&WinPath::parse(r"C:\k\containerd\containerd.exe")?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn excludes(&self, program: &WinPath) -> bool {
        self.exclusions.iter().any(|exclusion| exclusion.eq_ignore_ascii_case(program.as_str()))
    }
}

/// The document as printed; each section may suffer the 5.1 array quirks, so they are read as raw values.
#[derive(Deserialize)]
struct RawProbe {
    #[serde(default)]
    services: Value,
    #[serde(default)]
    files: Value,
    #[serde(default)]
    dirs: Value,
    #[serde(default)]
    acls: Value,
    #[serde(default)]
    env: Value,
    #[serde(default)]
    firewall: Value,
    #[serde(default)]
    registry: Value,
    #[serde(default)]
    trust: Value,
    #[serde(default)]
    defender: Value,
    #[serde(default)]
    rotated: Value,
    #[serde(default)]
    identity: Value,
    #[serde(default)]
    reboot: Value,
    #[serde(default)]
    shell: Option<String>,
}

/// The Defender section.
#[derive(Deserialize)]
struct RawDefender {
    running: bool,
    #[serde(default)]
    exclusions: Value,
}

/// The root store section: thumbprint lists, each with the 5.1 array quirks.
#[derive(Deserialize)]
struct RawTrust {
    #[serde(default)]
    store: Value,
    #[serde(default)]
    imported: Value,
}

/// The thumbprints of a list; blank lines (an empty record file) are skipped.
fn thumbprints(item: &'static str, value: Value) -> Result<BTreeSet<Thumbprint>, ProbeError> {
    list(value)
        .into_iter()
        .filter(|entry| entry.as_str().is_none_or(|text| !text.trim().is_empty()))
        .map(|entry| match entry.as_str() {
            Some(text) => Thumbprint::new(text.trim()).map_err(|_| bad("trust", item, text)),
            None => Err(bad("trust", item, &entry.to_string())),
        })
        .collect()
}

/// One service entry.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawService {
    key: bool,
    state: Option<String>,
    pid: Option<u32>,
    image: Option<String>,
    display: Option<String>,
    description: Option<String>,
    start: Option<u32>,
    delayed: Option<u32>,
    #[serde(default)]
    depends: Value,
    #[serde(default)]
    failure: Value,
    failure_flag: Option<u32>,
    delete_flag: Option<u32>,
    #[serde(default)]
    environment: Value,
}

/// Reads a JSON list the way 5.1 may print it: `null` is empty, a bare value is a one-element list, and an object
/// `{"value": [...], "Count": n}` is its `value`.
fn list(value: Value) -> Vec<Value> {
    match value {
        Value::Null => Vec::new(),
        Value::Array(items) => items,
        Value::Object(mut object) if object.contains_key("value") && object.contains_key("Count") => {
            list(object.remove("value").unwrap_or(Value::Null))
        }
        other => vec![other],
    }
}

/// Pairs requested items with returned entries, which must be as many. A bare `null` stands for one `null` entry
/// when one item was requested (a one-element list printed unwrapped).
fn positional<'a, T>(
    section: &'static str,
    requested: &'a BTreeSet<T>,
    section_value: Value,
) -> Result<Vec<(&'a T, Value)>, ProbeError> {
    let entries = if section_value.is_null() && requested.len() == 1 { vec![Value::Null] } else { list(section_value) };
    if entries.len() != requested.len() {
        return Err(ProbeError::Count { section, expected: requested.len(), found: entries.len() });
    }
    Ok(requested.iter().zip(entries).collect())
}

fn bad(section: &'static str, item: &str, value: &str) -> ProbeError {
    ProbeError::BadValue { section, item: item.to_owned(), value: value.to_owned() }
}

/// Converts one service entry; `None` if the service's registry key does not exist.
fn observed_service(name: &ServiceName, value: Value) -> Result<Option<ObservedService>, ProbeError> {
    let text = value.to_string();
    let raw: RawService = serde_json::from_value(value).map_err(|_| bad("services", name.as_str(), &text))?;
    if !raw.key {
        return Ok(None);
    }
    let dependencies = list(raw.depends)
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|dependency| ServiceName::new(dependency).ok())
        .collect();
    Ok(Some(ObservedService {
        state: raw.state.as_deref().and_then(ServiceState::from_cim),
        process_id: raw.pid,
        image_path: raw.image,
        display_name: raw.display,
        description: raw.description,
        start: raw.start.and_then(|code| StartType::from_code(code, raw.delayed == Some(1))),
        dependencies,
        recovery: failure_bytes(raw.failure).as_deref().and_then(decode_failure_actions),
        failure_flag: raw.failure_flag == Some(1),
        marked_for_deletion: raw.delete_flag == Some(1),
        environment: list(raw.environment).iter().filter_map(Value::as_str).map(str::to_owned).collect(),
    }))
}

/// The bytes of a REG_BINARY value: an array of numbers (5.1) or a Base64 string (PowerShell 7).
fn failure_bytes(value: Value) -> Option<Vec<u8>> {
    match value {
        Value::String(text) => STANDARD.decode(text).ok(),
        Value::Null => None,
        other => list(other).iter().map(|byte| byte.as_u64().and_then(|n| u8::try_from(n).ok())).collect(),
    }
}

/// Decodes the `FailureActions` registry value: a 20-byte SERVICE_FAILURE_ACTIONS header (reset period in seconds,
/// two unused string offsets, action count, action offset) followed by `count` pairs of (SC_ACTION_TYPE, delay
/// in ms), all little-endian u32. `None` if the layout does not match or an action kind is not modelled.
pub fn decode_failure_actions(bytes: &[u8]) -> Option<FailureActions> {
    let word = |index: usize| -> Option<u32> {
        let chunk = bytes.get(index * 4..index * 4 + 4)?;
        Some(u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
    };
    let count = usize::try_from(word(3)?).ok()?;
    if bytes.len() != 20 + count.checked_mul(8)? {
        return None;
    }
    let actions = (0..count)
        .map(|action| {
            let kind = FailureActionKind::from_code(word(5 + action * 2)?)?;
            Some(FailureAction { kind, delay: Millis(word(6 + action * 2)?) })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(FailureActions { reset: ResetPeriod::from_stored(word(0)?), actions })
}

/// Converts one firewall entry; `None` if the rule does not exist.
fn observed_firewall_rule(name: &str, value: Value) -> Result<Option<ObservedFirewallRule>, ProbeError> {
    let object = value.as_object().ok_or_else(|| bad("firewall", name, &value.to_string()))?;
    if object.get("exists").and_then(Value::as_bool) != Some(true) {
        return Ok(None);
    }
    let number = |field: &str| object.get(field).and_then(enum_number);
    Ok(Some(ObservedFirewallRule {
        direction: number("direction"),
        enabled: number("enabled"),
        action: number("action"),
    }))
}

/// An enum value as 5.1 prints it (a number) or as its name (PowerShell 7 with `-EnumsAsStrings`).
fn enum_number(value: &Value) -> Option<u32> {
    if let Some(number) = value.as_u64() {
        return u32::try_from(number).ok();
    }
    match value.as_str()? {
        "Inbound" | "True" => Some(1),
        "Outbound" | "False" | "Allow" => Some(2),
        "Block" => Some(4),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ProbeRequest {
        let mut request = ProbeRequest::default();
        request.services.insert(ServiceName::new("containerd").unwrap());
        request.services.insert(ServiceName::new("kubelet").unwrap());
        request.files.insert(WinPath::parse(r"C:\k\kubelet.exe").unwrap());
        request.directories.insert(WinPath::parse(r"C:\k").unwrap());
        request.machine_env.insert(EnvVarName::new("HTTP_PROXY").unwrap());
        request.firewall_rules.insert("ContainerLogsPort".to_owned());
        request.registry_values.insert((
            RegistryKey::new(r"HKLM\SOFTWARE\OpenSSH").unwrap(),
            RegistryValueName::new("DefaultShell").unwrap(),
        ));
        request
    }

    #[test]
    fn script_reads_every_requested_item_positionally() {
        let script = request().script();
        let expected = [
            "$ProgressPreference = 'SilentlyContinue'",
            "$ErrorActionPreference = 'Stop'",
            "$cim = @(Get-CimInstance Win32_Service)",
            "$s0 = $null",
            r"if (Test-Path -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Services\containerd') { $s0 = Get-ItemProperty 'HKLM:\SYSTEM\CurrentControlSet\Services\containerd' }",
            "$c0 = @($cim | Where-Object { $_.Name -eq 'containerd' })",
            "$s1 = $null",
            r"if (Test-Path -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Services\kubelet') { $s1 = Get-ItemProperty 'HKLM:\SYSTEM\CurrentControlSet\Services\kubelet' }",
            "$c1 = @($cim | Where-Object { $_.Name -eq 'kubelet' })",
            "$f0 = $null",
            r"if (Test-Path -LiteralPath 'C:\k\kubelet.exe' -PathType Leaf) { $f0 = Get-FileHash -LiteralPath 'C:\k\kubelet.exe' -Algorithm SHA256 | Select-Object -ExpandProperty Hash }",
            r"$d0 = Test-Path -LiteralPath 'C:\k' -PathType Container",
            "$e0 = [Environment]::GetEnvironmentVariable('HTTP_PROXY', 'Machine')",
            "$w0 = Get-NetFirewallRule -Name 'ContainerLogsPort' -ErrorAction SilentlyContinue",
            "$r0 = $null",
            r"if (Test-Path -LiteralPath 'HKLM:\SOFTWARE\OpenSSH') { $k0 = Get-ItemProperty 'HKLM:\SOFTWARE\OpenSSH'; $r0 = $k0.DefaultShell }",
            r"$rbu = Test-Path -LiteralPath 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired'",
            r"$rbc = Test-Path -LiteralPath 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending'",
            r"$rbf = $null -ne ((Get-ItemProperty 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager' -ErrorAction SilentlyContinue).PendingFileRenameOperations | Where-Object { $_ } | Select-Object -First 1)",
            r"$sh = (Get-ItemProperty 'HKLM:\SOFTWARE\OpenSSH' -ErrorAction SilentlyContinue).DefaultShell",
        ];
        let lines: Vec<&str> = script.text().lines().collect();
        assert_eq!(&lines[..expected.len()], &expected);
        let output = lines[expected.len()];
        assert!(output.starts_with("[ordered]@{ services = @([ordered]@{ key = $null -ne $s0; state = $c0[0].State;"));
        assert!(
            output.contains(
                "files = @($f0); dirs = @($d0); env = @($e0); firewall = @([ordered]@{ exists = $null -ne $w0;"
            )
        );
        assert!(
            output.ends_with(
                "registry = @($r0); reboot = [ordered]@{ windowsUpdate = $rbu; cbs = $rbc; fileRenames = $rbf }; \
                 shell = $sh } | ConvertTo-Json -Compress -Depth 8"
            ),
            "{output}"
        );
        assert_eq!(lines[expected.len() + 1], "exit 0");
        assert_eq!(lines.len(), expected.len() + 2);
    }

    /// A FailureActions value: reset 300 s, restart after 10 s then 30 s.
    fn failure_blob() -> Vec<u8> {
        let words: [u32; 9] = [300, 0, 0, 2, 0x14, 1, 10_000, 1, 30_000];
        words.iter().flat_map(|word| word.to_le_bytes()).collect()
    }

    #[test]
    fn failure_actions_decode_from_the_registry_layout() {
        assert_eq!(
            decode_failure_actions(&failure_blob()),
            Some(FailureActions::restart_after(300, &[Millis(10_000), Millis(30_000)]))
        );
        assert_eq!(decode_failure_actions(&failure_blob()[..27]), None);
        let mut run_command = failure_blob();
        run_command[20] = 3;
        assert_eq!(decode_failure_actions(&run_command), None);
        let infinite: Vec<u8> = [u32::MAX, 0, 0, 0, 0].iter().flat_map(|word| word.to_le_bytes()).collect();
        assert_eq!(
            decode_failure_actions(&infinite),
            Some(FailureActions { reset: ResetPeriod::Infinite, actions: vec![] })
        );
    }

    #[test]
    fn output_of_windows_powershell_5_1_is_parsed() {
        let blob: Vec<String> = failure_blob().iter().map(u8::to_string).collect();
        let stdout = format!(
            "\r\n{{\"services\":[{{\"key\":false,\"state\":null,\"pid\":null,\"image\":null,\"display\":null,\
             \"description\":null,\"start\":null,\"delayed\":null,\"depends\":null,\"failure\":null,\
             \"failureFlag\":null,\"deleteFlag\":null}},{{\"key\":true,\"state\":\"Running\",\"pid\":4242,\
             \"image\":\"C:\\\\k\\\\kubelet.exe --v=2\",\"display\":\"kubelet\",\"description\":\"OpenShift managed kubelet\",\
             \"start\":2,\"delayed\":1,\"depends\":{{\"value\":[\"containerd\"],\"Count\":1}},\"failure\":[{}],\
             \"failureFlag\":1,\"deleteFlag\":null}}],\"files\":\"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855\",\
             \"dirs\":true,\"env\":null,\"firewall\":{{\"exists\":true,\"direction\":1,\"enabled\":1,\"action\":2}},\
             \"registry\":\"C:\\\\Windows\\\\System32\\\\cmd.exe\"}}\r\n",
            blob.join(",")
        );
        let request = request();
        let observed = request.parse_output(&stdout).unwrap();
        let kubelet = ServiceName::new("kubelet").unwrap();
        assert_eq!(observed.services.len(), 1);
        assert_eq!(
            observed.services[&kubelet],
            ObservedService {
                state: Some(ServiceState::Running),
                process_id: Some(4242),
                image_path: Some(r"C:\k\kubelet.exe --v=2".into()),
                display_name: Some("kubelet".into()),
                description: Some("OpenShift managed kubelet".into()),
                start: Some(StartType::DelayedAuto),
                dependencies: vec![ServiceName::new("containerd").unwrap()],
                recovery: Some(FailureActions::restart_after(300, &[Millis(10_000), Millis(30_000)])),
                failure_flag: true,
                marked_for_deletion: false,
                environment: Vec::new(),
            }
        );
        assert_eq!(
            observed.files[&WinPath::parse(r"C:\k\kubelet.exe").unwrap()],
            Some(Sha256Hex::new("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855").unwrap())
        );
        assert!(observed.directories[&WinPath::parse(r"C:\k").unwrap()]);
        assert_eq!(observed.machine_env[&EnvVarName::new("HTTP_PROXY").unwrap()], None);
        assert_eq!(
            observed.firewall_rules["ContainerLogsPort"],
            Some(ObservedFirewallRule { direction: Some(1), enabled: Some(1), action: Some(2) })
        );
        assert_eq!(
            observed.registry_values.values().next().unwrap(),
            &Some(RegistryData::String(r"C:\Windows\System32\cmd.exe".into()))
        );
    }

    #[test]
    fn the_default_shell_is_read_by_every_probe() {
        let request = ProbeRequest::default();
        let empty = r#"{"services":[],"files":[],"dirs":[],"env":[],"firewall":[],"registry":[]"#;
        assert_eq!(request.parse_output(&format!("{empty},\"shell\":null}}")).unwrap().default_shell, None);
        let observed = request.parse_output(&format!("{empty},\"shell\":\"C:\\\\pwsh.exe\"}}")).unwrap();
        assert_eq!(observed.default_shell.as_deref(), Some(r"C:\pwsh.exe"));
    }

    #[test]
    fn defender_is_read_only_when_asked_and_nulls_mean_no_exclusion() {
        assert!(!ProbeRequest::default().script().text().contains("MsMpEng"));
        let request = ProbeRequest { defender: true, ..ProbeRequest::default() };
        assert!(request.script().text().contains("$mp = Get-Process -Name MsMpEng -ErrorAction SilentlyContinue"));
        let section = |defender: &str| {
            format!(
                r#"{{"services":[],"files":[],"dirs":[],"env":[],"firewall":[],"registry":[],"defender":{defender}}}"#
            )
        };
        let observed = request.parse_output(&section(r#"{"running":true,"exclusions":[null]}"#)).unwrap();
        assert_eq!(observed.defender, Some(ObservedDefender { running: true, exclusions: Vec::new() }));
        let observed = request.parse_output(&section(r#"{"running":true,"exclusions":"C:\\k\\a.exe"}"#)).unwrap();
        assert_eq!(observed.defender.unwrap().exclusions, [r"C:\k\a.exe"], "a bare value is one exclusion");
        let observed = request.parse_output(&section(r#"{"running":false,"exclusions":[]}"#)).unwrap();
        assert_eq!(observed.defender, Some(ObservedDefender { running: false, exclusions: Vec::new() }));
        assert!(matches!(
            request.parse_output(&section(r#"{"running":true,"exclusions":[7]}"#)),
            Err(ProbeError::BadValue { section: "defender", .. })
        ));
        assert!(matches!(
            request.parse_output(&section("null")),
            Err(ProbeError::BadValue { section: "defender", .. })
        ));
    }

    #[test]
    fn rotated_files_are_listed_by_name_and_read_with_the_array_quirks() {
        let certificates = crate::hybrid_overlay_client_certificates().unwrap();
        assert!(!ProbeRequest::default().script().text().contains("Get-ChildItem -LiteralPath"));
        let request = ProbeRequest { rotated_files: [certificates.clone()].into(), ..ProbeRequest::default() };
        assert!(request.script().text().contains(
            "$o0 = @(Get-ChildItem -LiteralPath 'C:\\k\\cni\\config' -Filter 'ovnkube-client-*.pem' -ErrorAction \
             SilentlyContinue | Select-Object -ExpandProperty Name)"
        ));
        let section = |rotated: &str| {
            format!(
                r#"{{"services":[],"files":[],"dirs":[],"env":[],"firewall":[],"registry":[],"rotated":{rotated}}}"#
            )
        };
        let names = |output: &str| request.parse_output(&section(output)).unwrap().rotated_files[&certificates].clone();
        assert_eq!(names(r#"[{"names":["a.pem","b.pem"]}]"#), ["a.pem", "b.pem"]);
        assert_eq!(names(r#"{"names":"a.pem"}"#), ["a.pem"], "one entry and one name, both unwrapped");
        assert!(names(r#"{"names":[]}"#).is_empty());
        assert!(names(r#"{"names":null}"#).is_empty());
        assert!(matches!(
            request.parse_output(&section(r#"{"names":[3]}"#)),
            Err(ProbeError::BadValue { section: "rotated", .. })
        ));
        assert!(matches!(request.parse_output(&section("[]")), Err(ProbeError::Count { section: "rotated", .. })));
    }

    #[test]
    fn powershell_7_forms_are_accepted_too() {
        let blob = STANDARD.encode(failure_blob());
        let mut request = ProbeRequest::default();
        request.services.insert(ServiceName::new("kubelet").unwrap());
        request.firewall_rules.insert("WindowsExporter".to_owned());
        request
            .registry_values
            .insert((RegistryKey::new(r"HKLM\SOFTWARE\x").unwrap(), RegistryValueName::new("N").unwrap()));
        let stdout = format!(
            "{{\"services\":[{{\"key\":true,\"state\":\"Stop Pending\",\"depends\":[\"containerd\",\"hns\"],\"failure\":\"{blob}\",\"deleteFlag\":1}}],\
             \"files\":[],\"dirs\":[],\"env\":[],\"firewall\":[{{\"exists\":true,\"direction\":\"Outbound\",\"enabled\":\"False\",\"action\":\"Block\"}}],\"registry\":[7]}}"
        );
        let observed = request.parse_output(&stdout).unwrap();
        let kubelet = &observed.services[&ServiceName::new("kubelet").unwrap()];
        assert_eq!(kubelet.state, Some(ServiceState::StopPending));
        assert!(!kubelet.is_stoppable());
        assert!(kubelet.marked_for_deletion);
        assert_eq!(kubelet.dependencies.len(), 2);
        assert_eq!(kubelet.recovery, Some(FailureActions::restart_after(300, &[Millis(10_000), Millis(30_000)])));
        assert_eq!(
            observed.firewall_rules["WindowsExporter"],
            Some(ObservedFirewallRule { direction: Some(2), enabled: Some(2), action: Some(4) })
        );
        assert_eq!(observed.registry_values.values().next().unwrap(), &Some(RegistryData::Dword(7)));
    }

    #[test]
    fn malformed_output_is_reported() {
        let request = request();
        assert_eq!(request.parse_output("Get-CimInstance : Access denied\r\n"), Err(ProbeError::NoJson));
        assert!(matches!(request.parse_output("{not json"), Err(ProbeError::Json(_))));
        assert_eq!(
            request.parse_output(r#"{"services":[],"files":[],"dirs":[],"env":[],"firewall":[],"registry":[]}"#),
            Err(ProbeError::Count { section: "services", expected: 2, found: 0 })
        );
        let bad_hash = r#"{"services":[{"key":false},{"key":false}],"files":["xyz"],"dirs":[true],"env":[null],"firewall":[{"exists":false}],"registry":[null]}"#;
        assert_eq!(
            request.parse_output(bad_hash),
            Err(ProbeError::BadValue { section: "files", item: r"C:\k\kubelet.exe".into(), value: "xyz".into() })
        );
    }

    #[test]
    fn request_for_state_lists_desired_and_removed_services() {
        let mut desired = HostState::default();
        desired.removed_services.insert(ServiceName::new("windows-instance-config-daemon").unwrap());
        desired.directories.insert(WinPath::parse(r"C:\var\log").unwrap());
        let request = ProbeRequest::for_state(&desired);
        assert_eq!(
            request.services.iter().map(ServiceName::as_str).collect::<Vec<_>>(),
            ["windows-instance-config-daemon"]
        );
        assert_eq!(request.directories.len(), 1);
    }

    #[test]
    fn private_directories_and_those_within_them_are_read_as_sddl_in_the_same_script() {
        let path = |text: &str| WinPath::parse(text).unwrap();
        let desired = HostState {
            directories: [path(r"C:\Temp"), path(r"C:\k"), path(r"C:\k\cni")].into(),
            private_directories: [path(r"C:\k"), path(r"C:\var\lib\kubelet")].into(),
            ..HostState::default()
        };
        let request = ProbeRequest::for_state(&desired);
        assert_eq!(request.directories.len(), 4, "the private ones exist too");
        assert_eq!(request.directory_acls, [path(r"C:\k"), path(r"C:\k\cni"), path(r"C:\var\lib\kubelet")].into());
        let script = request.script();
        assert!(script.text().contains(
            "\n$a1 = $null\nif (Test-Path -LiteralPath 'C:\\k\\cni' -PathType Container) { $a1 = (Get-Acl -LiteralPath \
             'C:\\k\\cni').Sddl }\n"
        ));
        assert!(script.text().contains("dirs = @($d0, $d1, $d2, $d3); acls = @($a0, $a1, $a2); env = @()"));
        let output = |acls: &str| {
            format!(
                r#"{{"services":[],"files":[],"dirs":[true,true,true,false],"acls":{acls},"env":[],"firewall":[],"registry":[]}}"#
            )
        };
        let private = "O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)";
        let observed = request.parse_output(&output(&format!(r#"["{private}","O:BAG:SYD:AI",null]"#))).unwrap();
        assert_eq!(observed.directory_acls[&path(r"C:\k")].as_deref(), Some(private));
        assert_eq!(observed.directory_acls[&path(r"C:\var\lib\kubelet")], None, "missing");
        assert_eq!(
            request.parse_output(&output(r#"["a","b"]"#)),
            Err(ProbeError::Count { section: "acls", expected: 3, found: 2 })
        );
        assert!(matches!(
            request.parse_output(&output("[1,null,null]")),
            Err(ProbeError::BadValue { section: "acls", .. })
        ));
        assert!(!ProbeRequest::default().script().text().contains("Get-Acl"), "nothing private, nothing read");
    }

    #[test]
    fn the_root_store_and_record_are_read_with_the_5_1_quirks() {
        let record = WinPath::parse(r"C:\k\wmco\imported-root-certificates.txt").unwrap();
        let request = ProbeRequest { trusted_roots: Some(record), ..ProbeRequest::default() };
        let script = request.script();
        assert!(script.text().contains(
            "$t = @(Get-ChildItem -Path 'Cert:\\LocalMachine\\Root' | Select-Object -ExpandProperty Thumbprint)"
        ));
        assert!(script.text().contains("trust = [ordered]@{ store = $t; imported = $ti }"));
        let a = "a".repeat(40);
        let b = "B".repeat(40);
        // One thumbprint arrives bare; the record has a blank last line.
        let output = format!(
            r#"{{"services":[],"files":[],"dirs":[],"env":[],"firewall":[],"registry":[],"trust":{{"store":"{b}","imported":["{a}",""]}}}}"#
        );
        let observed = request.parse_output(&output).unwrap().trusted_roots.unwrap();
        assert_eq!(observed.store, [Thumbprint::new(&b).unwrap()].into());
        assert_eq!(observed.imported, [Thumbprint::new(&a).unwrap()].into());
        let bad =
            r#"{"services":[],"files":[],"dirs":[],"env":[],"firewall":[],"registry":[],"trust":{"store":["xyz"]}}"#;
        assert!(matches!(request.parse_output(bad), Err(ProbeError::BadValue { section: "trust", .. })));
        // Not requested: not read.
        let plain = ProbeRequest::default().parse_output(r#"{"services":[]}"#).unwrap();
        assert_eq!(plain.trusted_roots, None);
    }
}
