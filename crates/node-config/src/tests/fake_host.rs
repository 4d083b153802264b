//! A small model of a Windows host behind the `RemoteHost` trait for the flow tests: files with hashes,
//! directories, services (installed from a catalog of the node's specs when `sc.exe create` names them), firewall
//! rules, HNS networks, and (once [`FakeWindowsHost::set_containers`] is called) the `Containers` feature with the
//! boot time a restart changes. It interprets sc.exe verbs and decodes PowerShell scripts (inline or from uploaded
//! script files), answers the state probe from its model, enforces the Windows behaviours the flow must respect
//! (a running service's binary cannot be replaced, a file needs its directory, `create` of an existing service
//! fails with 1073), logs every operation by kind, and injects faults.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use wmco_ssh_transport::{
    HostKey, Output, RemoteCommand, RemoteHost, TransportError, UploadOutcome, UploadRequest, UploadSource,
};
use wmco_windows_services::{
    CHAIN_MARKER, FailureActionKind, POWERSHELL_PREFIX, ResetPeriod, ServiceSpec, StartType, WinPath,
    decode_encoded_command,
};

/// The key the fake host presents.
pub const HOST_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey";

/// One operation the flow performed, by kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A command: `sc <verb> <service>` or the PowerShell script's kind (`probe`, `identity`, `directories`, ...).
    Run(String),
    /// An upload to this (canonical Windows) path.
    Upload(String),
    /// An SFTP removal of this path.
    Remove(String),
    /// An SFTP directory creation.
    Mkdir(String),
    /// An SFTP size request.
    Stat(String),
    /// A host key request.
    HostKey,
}

/// A fault to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Everything works.
    None,
    /// Every operation fails: the host is unreachable.
    Unreachable,
    /// Every operation fails: the host presents another key.
    HostKeyMismatch,
    /// Every operation fails: the host refuses the operator's key.
    AuthenticationRefused,
    /// The connection breaks after this many more successful operations.
    BreakAfter(usize),
}

#[derive(Default)]
struct Model {
    files: BTreeMap<String, (String, Option<Vec<u8>>)>,
    dirs: BTreeSet<String>,
    services: BTreeMap<String, (ServiceSpec, bool)>,
    firewall: BTreeSet<String>,
    /// Defender's process exclusions (Defender runs on the fake host).
    defender_exclusions: BTreeSet<String>,
    hns_networks: BTreeSet<String>,
    /// The root store's thumbprints (all imported by the flow; the record lists the same).
    roots: BTreeSet<String>,
    /// Directories (lower-cased) that grant only SYSTEM and Administrators, and everything within them; any other
    /// directory inherits `C:\`'s ACL, which lets Users in.
    restricted: BTreeSet<String>,
}

/// The SDDL of a restricted directory.
const RESTRICTED_SDDL: &str = "O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)";
/// The SDDL of a directory inheriting `C:\`'s ACL.
const INHERITED_SDDL: &str = "O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;OICIID;0x1200a9;;;BU)";

impl Model {
    /// The SDDL the probe reads for `path`, `null` when it is missing.
    fn sddl(&self, path: &str) -> Value {
        let path = key(path);
        if !self.dirs.contains(&path) {
            return Value::Null;
        }
        let restricted = self.restricted.iter().any(|root| path == *root || path.starts_with(&format!("{root}\\")));
        json!(if restricted { RESTRICTED_SDDL } else { INHERITED_SDDL })
    }
}

/// The fake host.
pub struct FakeWindowsHost {
    label: String,
    identity_json: Mutex<String>,
    catalog: BTreeMap<String, ServiceSpec>,
    model: Mutex<Model>,
    log: Mutex<Vec<Op>>,
    fault: Mutex<Fault>,
    stop_pending_queries: Mutex<usize>,
    stopping: Mutex<BTreeMap<String, usize>>,
    /// Services whose process exits as soon as `sc.exe start` returns (kube-proxy before its network exists).
    exiting_on_start: Mutex<BTreeSet<String>>,
    /// The `Containers` feature and boot, when modelled.
    boot: Mutex<Option<Boot>>,
}

/// The fake host's `Containers` feature and boot.
struct Boot {
    /// The feature's state (`Enabled`, `Disabled`, `EnablePending`).
    containers: String,
    /// The boot number, printed as the boot time.
    number: u64,
    /// Operations that still fail as unreachable (the host restarts).
    down_for: usize,
    /// How many operations fail after each restart.
    down_after_restart: usize,
    /// A restart leaves a pending feature pending (a broken servicing stack).
    pending_survives_restart: bool,
}

fn key(path: &str) -> String {
    WinPath::parse(path).map(|path| path.as_str().to_lowercase()).unwrap_or_else(|_| path.to_lowercase())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn output(code: u32, stdout: impl Into<String>) -> Output {
    Output { exit_code: code, stdout: stdout.into().into_bytes(), stderr: Vec::new(), duration: Duration::ZERO }
}

fn sc_failure(api: &str, code: u32) -> Output {
    output(code, format!("[SC] {api} FAILED {code}:\r\n\r\nThe operation failed.\r\n\r\n"))
}

fn sc_status(name: &str, state: &str) -> String {
    format!(
        "\r\nSERVICE_NAME: {name}\r\n        TYPE               : 10  WIN32_OWN_PROCESS\r\n        STATE              : {state}\r\n        WIN32_EXIT_CODE    : 0  (0x0)\r\n        SERVICE_EXIT_CODE  : 0  (0x0)\r\n        CHECKPOINT         : 0x0\r\n        WAIT_HINT          : 0x0\r\n"
    )
}

/// The text between the first pair of single quotes after `marker` in `line`.
fn quoted_after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let start = rest.find('\'')? + 1;
    let end = rest[start..].find('\'')? + start;
    Some(&rest[start..end])
}

/// The commands of a command chain (`a && echo ##wmco-done 0 && b && echo ##wmco-done 1`), each with the index its
/// marker prints, or the line itself.
fn chain_segments(line: &str) -> Vec<(&str, Option<&str>)> {
    let mut segments = Vec::new();
    let mut rest = line;
    let echo = format!(" && echo {CHAIN_MARKER} ");
    while let Some(position) = rest.find(&echo) {
        let after = &rest[position + echo.len()..];
        let digits = after.find(|c: char| !c.is_numeric()).unwrap_or(after.len());
        segments.push((&rest[..position], Some(&after[..digits])));
        let tail = &after[digits..];
        rest = tail.strip_prefix(" && ").unwrap_or(tail);
    }
    if !rest.is_empty() {
        segments.push((rest, None));
    }
    segments
}

fn failure_bytes(spec: &ServiceSpec) -> Vec<u8> {
    let reset = match spec.recovery.reset {
        ResetPeriod::Seconds(seconds) => seconds,
        ResetPeriod::Infinite => u32::MAX,
    };
    let count = u32::try_from(spec.recovery.actions.len()).unwrap();
    let mut words = vec![reset, 0, 0, count, 20];
    for action in &spec.recovery.actions {
        let kind = match action.kind {
            FailureActionKind::None => 0,
            FailureActionKind::Restart => 1,
            FailureActionKind::Reboot => 2,
        };
        words.extend([kind, action.delay.0]);
    }
    words.into_iter().flat_map(u32::to_le_bytes).collect()
}

fn start_code(start: StartType) -> (u32, u32) {
    match start {
        StartType::Boot => (0, 0),
        StartType::System => (1, 0),
        StartType::Auto => (2, 0),
        StartType::DelayedAuto => (2, 1),
        StartType::Demand => (3, 0),
        StartType::Disabled => (4, 0),
    }
}

impl FakeWindowsHost {
    /// Runs one command line (sc.exe or PowerShell) and logs it by kind.
    fn run_one(&self, line: &str) -> Output {
        let (kind, result) = if line.starts_with("sc.exe ") {
            self.run_sc(line)
        } else if line.starts_with(POWERSHELL_PREFIX) {
            match self.script_text(line) {
                Some(text) => return self.run_scripts(&text),
                None => ("missing-script".to_owned(), output(4_294_770_688, "")),
            }
        } else {
            panic!("unexpected command line {line}");
        };
        lock(&self.log).push(Op::Run(kind));
        result
    }

    /// Runs a PowerShell script: the scripts of a chain that share one process (separated by the chain's
    /// `Write-Output` markers) run one by one, each marker printed after its part succeeded, and the process is
    /// logged as one operation naming its parts (`firewall + defender-exclusion`).
    fn run_scripts(&self, text: &str) -> Output {
        let marker = format!("Write-Output '{CHAIN_MARKER} ");
        let mut combined = output(0, "");
        let mut kinds = Vec::new();
        let mut parts = vec![String::new()];
        let mut markers = Vec::new();
        for line in text.lines() {
            match line.strip_prefix(&marker) {
                Some(index) => {
                    markers.push(index.trim_end_matches('\'').to_owned());
                    parts.push(String::new());
                }
                None => {
                    let part = parts.last_mut().expect("parts start with one");
                    part.push_str(line);
                    part.push('\n');
                }
            }
        }
        for (position, part) in parts.iter().enumerate() {
            let (kind, result) = self.run_powershell(part);
            kinds.push(kind);
            combined.stdout.extend_from_slice(&result.stdout);
            combined.exit_code = result.exit_code;
            if result.exit_code != 0 {
                break;
            }
            if let Some(index) = markers.get(position) {
                combined.stdout.extend_from_slice(format!("{CHAIN_MARKER} {index}\r\n").as_bytes());
            }
        }
        lock(&self.log).push(Op::Run(kinds.join(" + ")));
        combined
    }

    /// A fresh host with this identity answer and the node's service specs as the catalog `sc.exe create` uses.
    pub fn new(identity_json: &str, catalog: Vec<ServiceSpec>) -> FakeWindowsHost {
        FakeWindowsHost {
            label: "admin@10.0.0.5:22".to_owned(),
            identity_json: Mutex::new(identity_json.to_owned()),
            catalog: catalog.into_iter().map(|spec| (spec.name.to_string(), spec)).collect(),
            model: Mutex::new(Model::default()),
            log: Mutex::new(Vec::new()),
            fault: Mutex::new(Fault::None),
            stop_pending_queries: Mutex::new(0),
            stopping: Mutex::new(BTreeMap::new()),
            exiting_on_start: Mutex::new(BTreeSet::new()),
            boot: Mutex::new(None),
        }
    }

    /// Models the `Containers` feature in `state` and a boot time (the identity command then prints both); a restart
    /// makes the host unreachable for `down_for` operations, then it is back with a new boot time and a pending
    /// feature enabled (unless `pending_survives_restart`).
    pub fn set_containers(&self, state: &str, down_for: usize, pending_survives_restart: bool) {
        *lock(&self.boot) = Some(Boot {
            containers: state.to_owned(),
            number: 1,
            down_for: 0,
            down_after_restart: down_for,
            pending_survives_restart,
        });
    }

    /// The `Containers` feature's state and the boot number, when modelled.
    pub fn containers(&self) -> Option<(String, u64)> {
        lock(&self.boot).as_ref().map(|boot| (boot.containers.clone(), boot.number))
    }

    /// Replaces what the identity command prints from now on.
    pub fn set_identity_json(&self, identity_json: &str) {
        *lock(&self.identity_json) = identity_json.to_owned();
    }

    /// Injects a fault.
    pub fn set_fault(&self, fault: Fault) {
        *lock(&self.fault) = fault;
    }

    /// Makes every stop report STOP_PENDING, and the next `queries` `sc.exe query` calls of that service too.
    pub fn set_stop_pending_queries(&self, queries: usize) {
        *lock(&self.stop_pending_queries) = queries;
    }

    /// Makes `service`'s process exit right after each start (`true`) or run again (`false`).
    pub fn set_exits_on_start(&self, service: &str, exits: bool) {
        let mut exiting = lock(&self.exiting_on_start);
        if exits {
            exiting.insert(service.to_owned());
        } else {
            exiting.remove(service);
        }
    }

    /// The process of the running `service` exits: the service is STOPPED.
    pub fn exit_service(&self, service: &str) {
        if let Some((_, running)) = lock(&self.model).services.get_mut(service) {
            *running = false;
        }
    }

    /// Takes the operations logged so far.
    pub fn take_log(&self) -> Vec<Op> {
        std::mem::take(&mut *lock(&self.log))
    }

    /// Installed services and whether each runs.
    pub fn services(&self) -> BTreeMap<String, bool> {
        lock(&self.model).services.iter().map(|(name, (_, running))| (name.clone(), *running)).collect()
    }

    /// The SHA-256 of a file, if present.
    pub fn file_hash(&self, path: &str) -> Option<String> {
        lock(&self.model).files.get(&key(path)).map(|(hash, _)| hash.clone())
    }

    /// Every file path (lower-cased canonical).
    pub fn file_paths(&self) -> Vec<String> {
        lock(&self.model).files.keys().cloned().collect()
    }

    /// Existing directories (lower-cased canonical).
    pub fn directories(&self) -> BTreeSet<String> {
        lock(&self.model).dirs.clone()
    }

    /// Firewall rules present, by name.
    pub fn firewall_rules(&self) -> BTreeSet<String> {
        lock(&self.model).firewall.clone()
    }

    /// Defender's process exclusions.
    pub fn defender_exclusions(&self) -> BTreeSet<String> {
        lock(&self.model).defender_exclusions.clone()
    }

    /// HNS networks present.
    pub fn hns_networks(&self) -> BTreeSet<String> {
        lock(&self.model).hns_networks.clone()
    }

    /// Writes a file as a program on the host would (hybrid-overlay rotating its client certificate); its hash is
    /// a stand-in, since no desired file is written this way.
    pub fn put_file(&self, path: &str, bytes: &[u8]) {
        let hash = format!("{:064x}", bytes.len());
        lock(&self.model).files.insert(key(path), (hash, Some(bytes.to_vec())));
    }

    /// Adds an HNS network (as hybrid-overlay-node would).
    pub fn add_hns_network(&self, name: &str) {
        lock(&self.model).hns_networks.insert(name.to_owned());
    }

    /// Checks the fault, then logs `op`.
    fn enter(&self, op: Op) -> Result<(), TransportError> {
        self.check()?;
        lock(&self.log).push(op);
        Ok(())
    }

    /// The error the injected fault (or a restart under way) causes now, if any.
    fn check(&self) -> Result<(), TransportError> {
        if let Some(boot) = lock(&self.boot).as_mut()
            && boot.down_for > 0
        {
            boot.down_for -= 1;
            return Err(TransportError::Unreachable {
                host: self.label.clone(),
                during: "connecting".into(),
                reason: "connection refused (restarting)".into(),
            });
        }
        let mut fault = lock(&self.fault);
        match *fault {
            Fault::None => {}
            Fault::Unreachable => {
                return Err(TransportError::Unreachable {
                    host: self.label.clone(),
                    during: "connecting".into(),
                    reason: "connection refused".into(),
                });
            }
            Fault::HostKeyMismatch => {
                let key = HostKey::from_openssh(HOST_KEY).unwrap();
                return Err(TransportError::HostKeyMismatch {
                    host: self.label.clone(),
                    pinned: key.fingerprint(),
                    offered: key.fingerprint(),
                });
            }
            Fault::AuthenticationRefused => {
                return Err(TransportError::Authentication {
                    host: self.label.clone(),
                    user: "admin".into(),
                    reason: "publickey denied".into(),
                });
            }
            Fault::BreakAfter(0) => {
                return Err(TransportError::Unreachable {
                    host: self.label.clone(),
                    during: "reading command output".into(),
                    reason: "connection reset".into(),
                });
            }
            Fault::BreakAfter(remaining) => *fault = Fault::BreakAfter(remaining - 1),
        }
        Ok(())
    }

    fn run_sc(&self, line: &str) -> (String, Output) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (verb, name) = (words[1], words[2]);
        let kind = format!("sc {verb} {name}");
        let mut model = lock(&self.model);
        let exists = model.services.contains_key(name);
        let result = match verb {
            "create" if exists => sc_failure("CreateService", 1073),
            "create" => {
                let spec = self.catalog.get(name).unwrap_or_else(|| panic!("no catalog entry for {name}")).clone();
                model.services.insert(name.to_owned(), (spec, false));
                output(0, "[SC] CreateService SUCCESS\r\n")
            }
            _ if !exists => sc_failure("OpenService", 1060),
            "description" | "failure" | "failureflag" => output(0, format!("[SC] Change{verb} SUCCESS\r\n")),
            "config" => {
                let spec = self.catalog[name].clone();
                model.services.get_mut(name).unwrap().0 = spec;
                output(0, "[SC] ChangeServiceConfig SUCCESS\r\n")
            }
            "start" if model.services[name].1 => sc_failure("StartService", 1056),
            "start" => {
                model.services.get_mut(name).unwrap().1 = !lock(&self.exiting_on_start).contains(name);
                output(0, sc_status(name, "2  START_PENDING"))
            }
            "stop" if !model.services[name].1 => sc_failure("ControlService", 1062),
            "stop" => {
                model.services.get_mut(name).unwrap().1 = false;
                let pending = *lock(&self.stop_pending_queries);
                if pending > 0 {
                    lock(&self.stopping).insert(name.to_owned(), pending);
                    output(0, sc_status(name, "3  STOP_PENDING"))
                } else {
                    output(0, sc_status(name, "1  STOPPED"))
                }
            }
            "query" => {
                let mut stopping = lock(&self.stopping);
                let state = match stopping.get_mut(name) {
                    Some(remaining) if *remaining > 0 => {
                        *remaining -= 1;
                        "3  STOP_PENDING"
                    }
                    _ if model.services[name].1 => "4  RUNNING",
                    _ => "1  STOPPED",
                };
                output(0, sc_status(name, state))
            }
            "delete" => {
                model.services.remove(name);
                output(0, "[SC] DeleteService SUCCESS\r\n")
            }
            other => panic!("unexpected sc.exe verb {other}"),
        };
        (kind, result)
    }

    fn script_text(&self, line: &str) -> Option<String> {
        if let Some(encoded) = line.split(" -EncodedCommand ").nth(1) {
            return decode_encoded_command(encoded.trim());
        }
        let path = line.split(" -File ").nth(1)?;
        let model = lock(&self.model);
        let bytes = model.files.get(&key(path.trim()))?.1.clone()?;
        let text = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(&bytes).to_vec();
        String::from_utf8(text).ok()
    }

    fn run_powershell(&self, text: &str) -> (String, Output) {
        let mut model = lock(&self.model);
        // The identity command (the probe reads the names too, with its own variables).
        if text.contains("$h = [System.Net.Dns]::GetHostName()") {
            let mut identity = lock(&self.identity_json).clone();
            if let Some(boot) = lock(&self.boot).as_ref() {
                let mut json: Value = serde_json::from_str(&identity).expect("the identity answer is JSON");
                json["containers"] = json!(boot.containers);
                json["boot"] = json!(format!("/Date({})/", boot.number));
                identity = json.to_string();
            }
            return ("identity".into(), output(0, identity));
        }
        if text.contains("Install-WindowsFeature -Name Containers") {
            if let Some(boot) = lock(&self.boot).as_mut()
                && boot.containers == "Disabled"
            {
                boot.containers = "EnablePending".to_owned();
            }
            return ("install-feature".into(), output(0, ""));
        }
        if text.contains("Restart-Computer -Force") {
            if let Some(boot) = lock(&self.boot).as_mut() {
                boot.number += 1;
                boot.down_for = boot.down_after_restart;
                if boot.containers == "EnablePending" && !boot.pending_survives_restart {
                    boot.containers = "Enabled".to_owned();
                }
            }
            return ("restart".into(), output(0, ""));
        }
        if text.contains("Get-CimInstance Win32_Service") {
            return ("probe".into(), output(0, self.probe(&model, text)));
        }
        if text.contains("Import-Certificate") || text.contains(r"Cert:\LocalMachine\Root\") {
            for file in text.lines().filter_map(|line| quoted_after(line, "Import-Certificate -FilePath ")) {
                let name = file.rsplit('\\').next().unwrap_or(file);
                model.roots.insert(name.trim_end_matches(".crt").to_owned());
            }
            for item in text.lines().filter_map(|line| quoted_after(line, "Remove-Item -LiteralPath ")) {
                model.roots.remove(item.rsplit('\\').next().unwrap_or(item));
            }
            return ("trust-roots".into(), output(0, ""));
        }
        if text.contains("icacls.exe $p /inheritance:r") {
            let protected = text.lines().find(|line| line.contains("/inheritance:r")).unwrap_or_default();
            let list = protected.split("@(").nth(1).and_then(|rest| rest.split("))").next()).unwrap_or_default();
            model.restricted.extend(list.split(", ").map(|literal| key(literal.trim_matches('\''))));
            return ("restrict-directories".into(), output(0, ""));
        }
        if text.contains("New-Item -ItemType Directory") {
            for line in text.lines().filter_map(|line| quoted_after(line, "-Path ")) {
                add_directory(&mut model, line);
            }
            return ("directories".into(), output(0, ""));
        }
        if text.contains("New-NetFirewallRule") {
            for name in text.lines().filter_map(|line| quoted_after(line, "New-NetFirewallRule -Name ")) {
                model.firewall.insert(name.to_owned());
            }
            return ("firewall".into(), output(0, ""));
        }
        if let Some(program) = text.lines().find_map(|line| quoted_after(line, "Add-MpPreference -ExclusionProcess ")) {
            model.defender_exclusions.insert(program.to_owned());
            return ("defender-exclusion".into(), output(0, ""));
        }
        if let Some(program) =
            text.lines().find_map(|line| quoted_after(line, "Remove-MpPreference -ExclusionProcess "))
        {
            model.defender_exclusions.remove(program);
            return ("remove-defender-exclusion".into(), output(0, ""));
        }
        if text.contains("Remove-NetFirewallRule") {
            for name in text.lines().filter_map(|line| quoted_after(line, "Remove-NetFirewallRule -Name ")) {
                model.firewall.remove(name);
            }
            return ("remove-firewall".into(), output(0, ""));
        }
        if text.contains("Remove-Item -LiteralPath") && !text.contains("-Recurse") {
            for file in text.lines().filter_map(|line| quoted_after(line, "Remove-Item -LiteralPath ")) {
                model.files.remove(&key(file));
            }
            return ("prune-files".into(), output(0, ""));
        }
        if text.contains("Remove-Item -LiteralPath") {
            for directory in text.lines().filter_map(|line| quoted_after(line, "Remove-Item -LiteralPath ")) {
                let prefix = key(directory);
                let inside = |path: &String| *path == prefix || path.starts_with(&format!("{prefix}\\"));
                model.files.retain(|path, _| !inside(path));
                model.dirs.retain(|path| !inside(path));
                model.restricted.retain(|path| !inside(path));
            }
            return ("remove-directories".into(), output(0, ""));
        }
        if text.contains("Remove-HnsNetwork") {
            for name in text.lines().filter_map(|line| quoted_after(line, "$_.Name -eq ")) {
                model.hns_networks.remove(name);
            }
            return ("remove-hns".into(), output(0, ""));
        }
        panic!("unexpected script:\n{text}");
    }

    /// Answers the probe from the model, in the order the script asks.
    fn probe(&self, model: &Model, text: &str) -> String {
        let (mut services, mut files, mut dirs, mut env, mut firewall) = (vec![], vec![], vec![], vec![], vec![]);
        let mut acls = Vec::new();
        for line in text.lines() {
            if let Some(start) = line.find(r"Services\").filter(|_| line.starts_with("if (Test-Path")) {
                let name = &line[start + r"Services\".len()..];
                let name = &name[..name.find('\'').unwrap()];
                services.push(match model.services.get(name) {
                    None => json!({"key": false, "state": null}),
                    Some((spec, running)) => {
                        let (start, delayed) = start_code(spec.start);
                        json!({
                            "key": true,
                            "state": if *running { "Running" } else { "Stopped" },
                            "pid": if *running { 4242 } else { 0 },
                            "image": spec.command.image_path(),
                            "display": spec.display_name,
                            "description": spec.description,
                            "start": start,
                            "delayed": delayed,
                            "depends": spec.dependencies.iter().map(ToString::to_string).collect::<Vec<_>>(),
                            "failure": failure_bytes(spec),
                            "failureFlag": u32::from(spec.failure_flag),
                            "deleteFlag": 0,
                        })
                    }
                });
            } else if line.contains("(Get-Acl -LiteralPath ") {
                acls.push(model.sddl(quoted_after(line, "-LiteralPath ").unwrap()));
            } else if line.starts_with("if (Test-Path -LiteralPath") && line.contains("$ti = ") {
                // The root store record: answered with the trust section below.
            } else if line.starts_with("if (Test-Path -LiteralPath") && line.contains("-PathType Leaf") {
                let path = quoted_after(line, "-LiteralPath ").unwrap();
                files.push(model.files.get(&key(path)).map_or(Value::Null, |(hash, _)| json!(hash.to_uppercase())));
            } else if line.starts_with("$d") && line.contains("-PathType Container") {
                let path = quoted_after(line, "-LiteralPath ").unwrap();
                dirs.push(json!(model.dirs.contains(&key(path))));
            } else if line.contains("[Environment]::GetEnvironmentVariable(") {
                // The fake host has no machine variables.
                env.push(Value::Null);
            } else if let Some(name) = quoted_after(line, "Get-NetFirewallRule -Name ") {
                firewall.push(if model.firewall.contains(name) {
                    json!({"exists": true, "direction": 1, "enabled": 1, "action": 2})
                } else {
                    json!({"exists": false})
                });
            }
        }
        let roots: Vec<&String> = model.roots.iter().collect();
        let trust = text.contains("trust = ").then(|| json!({"store": roots, "imported": roots}));
        let defender = text
            .contains("defender = ")
            .then(|| json!({"running": true, "exclusions": model.defender_exclusions.iter().collect::<Vec<_>>()}));
        let rotated: Vec<Value> = text
            .lines()
            .filter_map(|line| {
                Some((quoted_after(line, "Get-ChildItem -LiteralPath ")?, quoted_after(line, "-Filter ")?))
            })
            .map(|(directory, filter)| {
                let (prefix, suffix) = filter.split_once('*').unwrap_or((filter, ""));
                let inside = format!("{}\\", key(directory));
                let names: Vec<&str> = model
                    .files
                    .keys()
                    .filter_map(|path| path.strip_prefix(&inside))
                    .filter(|name| !name.contains('\\') && name.starts_with(prefix) && name.ends_with(suffix))
                    .collect();
                json!({"names": names})
            })
            .collect();
        let rotated = (!rotated.is_empty()).then_some(rotated);
        // The host's identity, when asked: the same names and address the identity command prints.
        let identity = text.contains("identity = [ordered]").then(|| {
            let document: Value = serde_json::from_str(&lock(&self.identity_json)).unwrap_or(Value::Null);
            json!({"hostname": document["hostname"], "fqdn": document["fqdn"], "ip": document["ip"]})
        });
        json!({"services": services, "files": files, "dirs": dirs, "acls": acls, "env": env, "firewall": firewall, "registry": [],
               "trust": trust, "defender": defender, "rotated": rotated, "identity": identity})
        .to_string()
    }
}

fn add_directory(model: &mut Model, path: &str) {
    let mut current = WinPath::parse(path).ok();
    while let Some(directory) = current {
        model.dirs.insert(directory.as_str().to_lowercase());
        current = directory.parent();
    }
}

#[async_trait]
impl RemoteHost for FakeWindowsHost {
    fn label(&self) -> &str {
        &self.label
    }

    async fn run(&self, command: &RemoteCommand) -> Result<Output, TransportError> {
        self.check()?;
        let mut chained = output(0, "");
        for (index, (line, marker)) in chain_segments(&command.line).into_iter().enumerate() {
            if index > 0 {
                // The connection may break between two commands of a chain: the first ones ran.
                self.check()?;
            }
            let result = self.run_one(line);
            chained.stdout.extend_from_slice(&result.stdout);
            chained.stderr.extend_from_slice(&result.stderr);
            chained.exit_code = result.exit_code;
            if result.exit_code != 0 {
                break;
            }
            if let Some(marker) = marker {
                chained.stdout.extend_from_slice(format!("{CHAIN_MARKER} {marker} \r\n").as_bytes());
            }
        }
        Ok(chained)
    }

    async fn upload(&self, request: &UploadRequest) -> Result<UploadOutcome, TransportError> {
        let path = WinPath::parse(&request.remote_path).unwrap();
        self.enter(Op::Upload(path.as_str().to_owned()))?;
        let expected = request.expected_sha256.to_string();
        let mut model = lock(&self.model);
        let parent = path.parent().unwrap().as_str().to_lowercase();
        let fail = |reason: &str| TransportError::Transfer {
            host: self.label.clone(),
            path: request.remote_path.clone(),
            step: wmco_ssh_transport::TransferStep::OpenStaging,
            reason: reason.to_owned(),
            connection_lost: false,
        };
        if !model.dirs.contains(&parent) {
            return Err(fail("no such directory"));
        }
        let locked_by = model
            .services
            .values()
            .filter(|(_, running)| *running)
            .find(|(spec, _)| spec.binaries().any(|binary| binary.same_location(&path)));
        if let Some((spec, _)) = locked_by {
            return Err(fail(&format!("file in use by running service {}", spec.name)));
        }
        let bytes = match &request.source {
            UploadSource::Bytes(bytes) => Some(bytes.to_vec()),
            UploadSource::File(_) => None,
        };
        let size = bytes.as_ref().map_or(0, |bytes| bytes.len() as u64);
        model.files.insert(key(path.as_str()), (expected, bytes));
        Ok(UploadOutcome::Uploaded { bytes: size, write_duration: Duration::ZERO, duration: Duration::ZERO })
    }

    async fn download(&self, remote_path: &str) -> Result<Vec<u8>, TransportError> {
        panic!("the flow never downloads ({remote_path})");
    }

    async fn remove(&self, remote_path: &str) -> Result<(), TransportError> {
        let path = WinPath::parse(remote_path).unwrap();
        self.enter(Op::Remove(path.as_str().to_owned()))?;
        lock(&self.model).files.remove(&key(remote_path));
        Ok(())
    }

    async fn file_size(&self, remote_path: &str) -> Result<Option<u64>, TransportError> {
        let path = WinPath::parse(remote_path).unwrap();
        self.enter(Op::Stat(path.as_str().to_owned()))?;
        let model = lock(&self.model);
        Ok(model.files.get(&key(remote_path)).map(|(_, bytes)| bytes.as_ref().map_or(0, |bytes| bytes.len() as u64)))
    }

    async fn mkdir_all(&self, remote_path: &str) -> Result<(), TransportError> {
        let path = WinPath::parse(remote_path).unwrap();
        self.enter(Op::Mkdir(path.as_str().to_owned()))?;
        add_directory(&mut lock(&self.model), remote_path);
        Ok(())
    }

    async fn host_key(&self) -> Result<HostKey, TransportError> {
        self.enter(Op::HostKey)?;
        Ok(HostKey::from_openssh(HOST_KEY).unwrap())
    }
}
