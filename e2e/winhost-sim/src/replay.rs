//! Replaying a command transcript (`wmco run --record-transcripts`, see `wmco_ssh_transport::transcript`) against a
//! fresh simulated host (feature `replay`; the `winhost-replay` binary prints what [`replay_file`] returns).
//!
//! The host: its identity comes from the transcript's first command whose standard output ends in a JSON object
//! with a `hostname` and an IPv4 `ip` (the operator's identity command): hostname, `fqdn`, `ip`, `build`, and the
//! facts the same output reports are set before the first command — `boot` (the last boot time), `freeBytes` (free
//! space on `C:`), `containers` (the `Containers` feature's state), `defender` (`false`: Defender not running) and
//! `shell` (OpenSSH's default shell). `docker` and `containerd` services are not recreated. Without such a command
//! the host is [`DEFAULT_HOSTNAME`] at [`DEFAULT_NODE_IP`], build 20348.
//!
//! The operations, in order: each `run` runs its recorded (redacted) command line through the host's default shell,
//! a reboot the command asked for (`Restart-Computer`) is done at once; `mkdir_all` and `remove` are done on the
//! simulated disk. Uploads (with their verify commands), downloads, file sizes and host keys are skipped: a transcript
//! has no file contents, so a later command that reads an uploaded file differs, which is why differences are
//! reported rather than fatal.
//!
//! Each command is [`Verdict::Same`] when its exit code is the recorded one and its standard output (redacted and
//! cut like the recording) matches: compared as parsed JSON when the recorded output parses as JSON, else as text
//! with surrounding whitespace trimmed and CRLF read as LF; a difference names the first differing JSON value (by
//! its path) or line. A command during which the simulator met a command it does not know is [`Verdict::Unknown`],
//! whatever its output.
//!
//! ```
//! use winhost_sim::replay::{Verdict, replay};
//! use wmco_ssh_transport::transcript::TranscriptEntry;
//! let line = r#"{"time":"2026-05-04T10:00:00Z","host":"a@b:22","operation":"run","command":"hostname","exitCode":0,"stdout":"WIN-1\r\n","stderr":"","durationMs":3}"#;
//! let entry: TranscriptEntry = serde_json::from_str(line)?;
//! let report = replay(&[entry])?;
//! assert_eq!(report.identity.source, None); // no identity command: the default host
//! assert_eq!(report.steps[0].verdict, Verdict::Differs); // the default host is not called WIN-1
//! assert_eq!(report.unknown(), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use wmco_ssh_transport::redact::redact;
use wmco_ssh_transport::transcript::{MAX_RECORDED_TEXT, Operation, TranscriptEntry, TranscriptError, read_transcript};

use crate::disk::{DiskError, WinPath};
use crate::host::{Defender, Host, Identity, Latency, Output, RegValue, UnknownCommand, feature_state};

/// The SSH client version the replayed commands are logged with.
pub const REPLAY_CLIENT: &str = "SSH-2.0-winhost-replay";
/// The host name of a host whose transcript has no identity command.
pub const DEFAULT_HOSTNAME: &str = "replay-host";
/// The node IP of a host whose transcript has no identity command.
pub const DEFAULT_NODE_IP: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 10);

/// A transcript cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The transcript cannot be read or has a line that is no entry.
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    /// The simulated host's drive cannot be prepared.
    #[error("cannot prepare the simulated host's drive: {0}")]
    Host(#[from] DiskError),
}

/// Who the replaying host is, and where that came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayIdentity {
    /// Its host name.
    pub hostname: String,
    /// Its DNS name.
    pub fqdn: String,
    /// Its node IP.
    pub node_ip: Ipv4Addr,
    /// Its Windows build.
    pub build: u32,
    /// The entry (from 1) whose output it was read from; `None`: the defaults.
    pub source: Option<usize>,
}

/// What replaying one operation showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// The command's exit code and standard output are the recorded ones.
    Same,
    /// They differ (see the step's differences).
    Differs,
    /// The simulator met a command it does not know.
    Unknown,
    /// The command ran, but the transcript has no result to compare with (it failed in transport).
    NotRecorded,
    /// A directory creation or file removal, done on the simulated disk.
    Applied,
    /// An upload, download, file size or host key: not replayed.
    Skipped,
}

impl fmt::Display for Verdict {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Verdict::Same => "same",
            Verdict::Differs => "differs",
            Verdict::Unknown => "unknown to the simulator",
            Verdict::NotRecorded => "no recorded result",
            Verdict::Applied => "applied",
            Verdict::Skipped => "skipped",
        })
    }
}

/// One operation of the transcript and what replaying it showed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Its entry in the transcript (from 1).
    pub entry: usize,
    /// The operation (`run`, `upload`, …).
    pub operation: &'static str,
    /// What it was about: the command (its script's first statement for `-EncodedCommand` lines), or a path.
    pub subject: String,
    /// The verdict.
    pub verdict: Verdict,
    /// What differed, one sentence each; for [`Verdict::Unknown`] the commands the simulator did not know.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
}

/// A whole replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replay {
    /// The replaying host.
    pub identity: ReplayIdentity,
    /// Every operation, in order.
    pub steps: Vec<Step>,
}

impl Replay {
    /// How many steps have `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.steps.iter().filter(|step| step.verdict == verdict).count()
    }

    /// How many commands met something unknown to the simulator (the binary exits 1 when any did).
    pub fn unknown(&self) -> usize {
        self.count(Verdict::Unknown)
    }

    /// One line: how many commands were the same, differed, were unknown, and how many operations were skipped.
    pub fn summary(&self) -> String {
        let commands = self.steps.iter().filter(|step| step.operation == "run").count();
        format!(
            "{commands} commands: {} same, {} differ, {} unknown to the simulator, {} without a recorded result; {} \
             operations applied to the disk, {} skipped (uploads, downloads, file sizes, host keys)",
            self.count(Verdict::Same),
            self.count(Verdict::Differs),
            self.unknown(),
            self.count(Verdict::NotRecorded),
            self.count(Verdict::Applied),
            self.count(Verdict::Skipped),
        )
    }
}

/// Replays the transcript at `path` on a fresh simulated host (see the module documentation).
///
/// # Errors
/// [`ReplayError`]: the transcript cannot be read, or the host's drive cannot be prepared.
pub fn replay_file(path: &Path) -> Result<Replay, ReplayError> {
    replay(&read_transcript(path)?)
}

/// Replays `entries` on a fresh simulated host, on a temporary drive removed afterwards.
///
/// # Errors
/// [`ReplayError::Host`] when the host's drive cannot be prepared.
pub fn replay(entries: &[TranscriptEntry]) -> Result<Replay, ReplayError> {
    let root = tempfile::tempdir().map_err(|source| DiskError::Io { path: "temporary root".into(), source })?;
    let seed = entries.iter().enumerate().find_map(|(index, entry)| Seed::read(index + 1, entry));
    let mut host = Host::new(identity_of(seed.as_ref()), root.path(), Latency::zero())?;
    if let Some(seed) = &seed {
        seed.apply(&mut host);
    }
    let identity = ReplayIdentity {
        hostname: host.identity.hostname.clone(),
        fqdn: host.identity.fqdn.clone(),
        node_ip: host.identity.node_ip,
        build: host.identity.build,
        source: seed.as_ref().map(|seed| seed.entry),
    };
    let steps = entries.iter().enumerate().map(|(index, entry)| replay_entry(&mut host, index + 1, entry)).collect();
    Ok(Replay { identity, steps })
}

fn replay_entry(host: &mut Host, entry_number: usize, entry: &TranscriptEntry) -> Step {
    let step = |subject: String, verdict: Verdict| Step {
        entry: entry_number,
        operation: entry.operation.name(),
        subject,
        verdict,
        differences: Vec::new(),
    };
    match &entry.operation {
        Operation::Run { command, script, exit_code, stdout, stdout_truncated, .. } => {
            let subject = subject_of(command, script.as_deref());
            let known = host.unknown_commands.len();
            let output = host.exec(REPLAY_CLIENT, command);
            if host.reboot_requested {
                host.reboot();
            }
            let unknown: Vec<&UnknownCommand> = host.unknown_commands[known..].iter().collect();
            if !unknown.is_empty() {
                let differences =
                    unknown.iter().map(|command| format!("{} does not know `{}`", command.shell, command.command));
                return Step { differences: differences.collect(), ..step(subject, Verdict::Unknown) };
            }
            let Some(exit_code) = exit_code else { return step(subject, Verdict::NotRecorded) };
            let differences = differences(*exit_code, stdout, *stdout_truncated, &output);
            let verdict = if differences.is_empty() { Verdict::Same } else { Verdict::Differs };
            Step { differences, ..step(subject, verdict) }
        }
        Operation::MkdirAll { path } => {
            let applied = WinPath::parse(path)
                .map_err(|error| error.to_string())
                .and_then(|parsed| host.disk.create_dir_all(&parsed).map_err(|error| error.to_string()));
            applied_step(step(path.clone(), Verdict::Applied), applied)
        }
        Operation::Remove { path } => {
            let applied = WinPath::parse(path).map_err(|error| error.to_string()).and_then(|parsed| {
                if host.disk.entry(&parsed).is_some() {
                    host.disk.remove(&parsed).map_err(|error| error.to_string())
                } else {
                    Ok(())
                }
            });
            applied_step(step(path.clone(), Verdict::Applied), applied)
        }
        Operation::Upload { file, .. } => step(file.path.clone(), Verdict::Skipped),
        Operation::UploadBatch { files, .. } => {
            let paths: Vec<&str> = files.iter().map(|file| file.path.as_str()).collect();
            step(format!("{} files: {}", files.len(), paths.join(", ")), Verdict::Skipped)
        }
        Operation::Download { path, .. } | Operation::FileSize { path, .. } => step(path.clone(), Verdict::Skipped),
        Operation::HostKey { key } => step(key.clone().unwrap_or_default(), Verdict::Skipped),
    }
}

/// A disk operation's step; one the simulated disk refused differs.
fn applied_step(step: Step, applied: Result<(), String>) -> Step {
    match applied {
        Ok(()) => step,
        Err(reason) => {
            Step { verdict: Verdict::Differs, differences: vec![format!("the disk refused: {reason}")], ..step }
        }
    }
}

/// How a replayed command's result differs from the recorded one (nothing: the same).
fn differences(exit_code: u32, recorded: &str, truncated: bool, replayed: &Output) -> Vec<String> {
    let mut differences = Vec::new();
    if exit_code != replayed.code {
        differences.push(format!("exit code: recorded {exit_code}, replayed {}", replayed.code));
    }
    let mut replayed_stdout = redact(&replayed.stdout);
    if truncated {
        cut(&mut replayed_stdout, MAX_RECORDED_TEXT);
    }
    if let Some(difference) = output_difference(recorded, &replayed_stdout) {
        differences.push(format!("stdout {difference}"));
    }
    differences
}

/// Where `replayed` first differs from `recorded`, or `None` when they are the same: as parsed JSON when `recorded`
/// is JSON (the first differing value, by its path), else as text with surrounding whitespace trimmed and CRLF read
/// as LF (the first differing line).
fn output_difference(recorded: &str, replayed: &str) -> Option<String> {
    if let Ok(expected) = serde_json::from_str::<serde_json::Value>(recorded.trim()) {
        return match serde_json::from_str::<serde_json::Value>(replayed.trim()) {
            Ok(found) => json_difference("", &expected, &found).map(|(path, recorded, replayed)| {
                format!("{path}: recorded {}, replayed {}", excerpt(&recorded), excerpt(&replayed))
            }),
            Err(_) => Some(format!("recorded JSON, replayed {:?}", excerpt(replayed))),
        };
    }
    let (recorded, replayed) = (recorded.trim().replace("\r\n", "\n"), replayed.trim().replace("\r\n", "\n"));
    let (mut recorded_lines, mut replayed_lines) = (recorded.lines(), replayed.lines());
    let show = |line: Option<&str>| line.map_or_else(|| "nothing".to_owned(), |line| format!("{:?}", excerpt(line)));
    let mut number = 0;
    loop {
        number += 1;
        match (recorded_lines.next(), replayed_lines.next()) {
            (None, None) => return None,
            (Some(left), Some(right)) if left == right => {}
            (left, right) => return Some(format!("line {number}: recorded {}, replayed {}", show(left), show(right))),
        }
    }
}

/// The path (`/services/0/state`) of the first value that differs between `recorded` and `replayed`, with both
/// values as JSON text (`absent` for a missing one).
fn json_difference(
    path: &str,
    recorded: &serde_json::Value,
    replayed: &serde_json::Value,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    let show = |value: Option<&Value>| value.map_or_else(|| "absent".to_owned(), Value::to_string);
    let child = |key: &str, left: Option<&Value>, right: Option<&Value>| match (left, right) {
        (Some(left), Some(right)) => json_difference(&format!("{path}/{key}"), left, right),
        (left, right) => Some((format!("{path}/{key}"), show(left), show(right))),
    };
    match (recorded, replayed) {
        (Value::Object(left), Value::Object(right)) => {
            let mut keys = left.keys().chain(right.keys().filter(|key| !left.contains_key(*key)));
            keys.find_map(|key| child(key, left.get(key), right.get(key)))
        }
        (Value::Array(left), Value::Array(right)) => (0..left.len().max(right.len()))
            .find_map(|index| child(&index.to_string(), left.get(index), right.get(index))),
        (left, right) if left == right => None,
        (left, right) => {
            let path = if path.is_empty() { "/" } else { path };
            Some((path.to_owned(), left.to_string(), right.to_string()))
        }
    }
}

/// `text` cut to at most `limit` bytes on a character boundary.
fn cut(text: &mut String, limit: usize) {
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

/// The start of `text`, short enough for a line of the report.
fn excerpt(text: &str) -> String {
    const LIMIT: usize = 160;
    let text = text.trim();
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The command as a report line names it: for an `-EncodedCommand` line, `powershell: ` and the script's first
/// statement other than a preference setting; else the line's start.
fn subject_of(command: &str, script: Option<&str>) -> String {
    let statement = script.and_then(|script| {
        script.lines().map(str::trim).filter(|line| !line.is_empty()).find(|line| {
            let assigned = line.split('=').next().unwrap_or_default().trim();
            let sets_a_preference = assigned.starts_with('$') && assigned.ends_with("Preference");
            !sets_a_preference
        })
    });
    match statement {
        Some(statement) => format!("powershell: {}", excerpt(statement)),
        None => excerpt(command.lines().next().unwrap_or_default()),
    }
}

/// The facts an identity command reported, to set up the replaying host with.
struct Seed {
    entry: usize,
    hostname: String,
    fqdn: Option<String>,
    node_ip: Ipv4Addr,
    build: Option<u32>,
    ubr: Option<u32>,
    boot: Option<SystemTime>,
    free_bytes: Option<u64>,
    containers: Option<String>,
    defender: Option<bool>,
    shell: Option<String>,
}

impl Seed {
    /// The facts of `entry` (number `number`) if it is a command whose output's last line starting with `{` is a
    /// JSON object with a `hostname` and an IPv4 `ip`.
    fn read(number: usize, entry: &TranscriptEntry) -> Option<Seed> {
        let Operation::Run { stdout, exit_code: Some(0), .. } = &entry.operation else { return None };
        let line = stdout.lines().rev().map(str::trim).find(|line| line.starts_with('{'))?;
        let object: serde_json::Value = serde_json::from_str(line).ok()?;
        let text = |key: &str| object.get(key).and_then(serde_json::Value::as_str).map(str::to_owned);
        Some(Seed {
            entry: number,
            hostname: text("hostname").filter(|name| !name.is_empty())?,
            fqdn: text("fqdn"),
            node_ip: text("ip")?.parse().ok()?,
            build: text("build").and_then(|build| build.parse().ok()),
            ubr: object.get("ubr").and_then(serde_json::Value::as_u64).and_then(|ubr| u32::try_from(ubr).ok()),
            boot: text("boot").as_deref().and_then(dotnet_date),
            free_bytes: object.get("freeBytes").and_then(serde_json::Value::as_u64),
            containers: text("containers"),
            defender: object.get("defender").and_then(serde_json::Value::as_bool),
            shell: text("shell").filter(|shell| !shell.is_empty()),
        })
    }

    /// Sets the host's state to what the identity command saw.
    fn apply(&self, host: &mut Host) {
        if let Some(boot) = self.boot {
            host.last_boot_up = boot;
        }
        if let Some(free) = self.free_bytes {
            host.volume.free_bytes = free;
            host.volume.size_bytes = host.volume.size_bytes.max(free);
        }
        if let Some((state, _)) = self.containers.as_deref().and_then(feature_state) {
            host.features.insert("Containers".to_owned(), state.to_owned());
        }
        if self.defender == Some(false) {
            host.defender = Some(Defender { running: false, ..Defender::default() });
        }
        if let Some(shell) = &self.shell {
            host.set_registry_value(r"HKLM\SOFTWARE\OpenSSH", "DefaultShell", RegValue::String(shell.clone()));
        }
    }
}

/// The identity of the replaying host: the seed's, or the defaults.
fn identity_of(seed: Option<&Seed>) -> Identity {
    match seed {
        Some(seed) => Identity {
            hostname: seed.hostname.clone(),
            fqdn: seed.fqdn.clone().unwrap_or_else(|| seed.hostname.to_lowercase()),
            build: seed.build.unwrap_or(20348),
            ubr: seed.ubr.unwrap_or_else(|| crate::host::current_ubr(seed.build.unwrap_or(20348))),
            node_ip: seed.node_ip,
        },
        None => Identity {
            hostname: DEFAULT_HOSTNAME.to_owned(),
            fqdn: format!("{DEFAULT_HOSTNAME}.sim.test"),
            build: 20348,
            ubr: crate::host::current_ubr(20348),
            node_ip: DEFAULT_NODE_IP,
        },
    }
}

/// A Windows PowerShell 5.1 `DateTime` as `ConvertTo-Json` prints it (`/Date(<milliseconds>)/`).
fn dotnet_date(text: &str) -> Option<SystemTime> {
    let milliseconds: u64 = text.strip_prefix("/Date(")?.strip_suffix(")/")?.parse().ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_millis(milliseconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(operation: Operation) -> TranscriptEntry {
        TranscriptEntry {
            time: "2026-05-04T10:00:00Z".into(),
            host: "Administrator@127.0.0.10:22".into(),
            operation,
            duration_ms: 1,
            error: None,
        }
    }

    fn run(command: &str, exit_code: Option<u32>, stdout: &str) -> TranscriptEntry {
        entry(Operation::Run {
            command: command.into(),
            script: None,
            exit_code,
            stdout: stdout.into(),
            stdout_truncated: false,
            stderr: String::new(),
            stderr_truncated: false,
        })
    }

    #[test]
    fn the_identity_seeds_the_host_and_commands_are_compared() {
        let identity = r#"{"hostname":"WIN-A","fqdn":"win-a.lab.example","ip":"203.0.113.7","build":"17763","freeBytes":5000,"containers":"EnablePending","defender":false,"shell":null,"boot":"/Date(1736089445678)/"}"#;
        let entries = [
            entry(Operation::HostKey { key: Some("ssh-ed25519 SHA256:x".into()) }),
            run(&format!("echo {identity}"), Some(0), &format!("{identity}\r\n")),
            run("hostname", Some(0), "WIN-A\r\n"),
            run("hostname", Some(0), "WIN-B\r\n"),
            run("sc.exe query nosuch", Some(1060), ""),
            run("frobnicate.exe --now", Some(0), ""),
            run("hostname", None, ""),
            entry(Operation::MkdirAll { path: "C:/k/wmco".into() }),
            run("if exist C:\\k\\wmco echo yes", Some(0), "yes"),
            entry(Operation::Remove { path: "C:/k/absent".into() }),
        ];
        let report = replay(&entries).unwrap();
        assert_eq!(
            report.identity,
            ReplayIdentity {
                hostname: "WIN-A".into(),
                fqdn: "win-a.lab.example".into(),
                node_ip: Ipv4Addr::new(203, 0, 113, 7),
                build: 17763,
                source: Some(2),
            }
        );
        let verdicts: Vec<Verdict> = report.steps.iter().map(|step| step.verdict).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Skipped,
                Verdict::Same,
                Verdict::Same,
                Verdict::Differs,
                Verdict::Differs, // sc.exe prints its error on stdout
                Verdict::Unknown,
                Verdict::NotRecorded,
                Verdict::Applied,
                Verdict::Same,
                Verdict::Applied,
            ]
        );
        assert_eq!(report.steps[3].differences, [r#"stdout line 1: recorded "WIN-B", replayed "WIN-A""#]);
        assert_eq!(report.steps[5].differences, ["cmd does not know `frobnicate.exe`"]);
        assert_eq!(report.unknown(), 1);
        assert!(report.summary().starts_with("7 commands: 3 same, 2 differ, 1 unknown"), "{}", report.summary());
    }

    #[test]
    fn json_output_is_compared_parsed_and_text_by_line() {
        assert_eq!(output_difference("{\"a\": 1, \"b\": [2]}\r\n", "{\"b\":[2],\"a\":1}"), None);
        let running = r#"{"services":[{"name":"kubelet","state":"Running"}],"n":1}"#;
        let stopped = r#"{"services":[{"name":"kubelet","state":"Stopped"}],"n":1}"#;
        assert_eq!(
            output_difference(running, stopped).as_deref(),
            Some(r#"/services/0/state: recorded "Running", replayed "Stopped""#)
        );
        assert_eq!(output_difference("{\"a\": 1}", "{}").as_deref(), Some("/a: recorded 1, replayed absent"));
        assert_eq!(output_difference("[1]", "[1, 2]").as_deref(), Some("/1: recorded absent, replayed 2"));
        assert_eq!(output_difference("1", "2").as_deref(), Some("/: recorded 1, replayed 2"));
        assert_eq!(output_difference("{\"a\": 1}", "oops").as_deref(), Some("recorded JSON, replayed \"oops\""));
        assert_eq!(output_difference("line 1\r\nline 2\r\n", "line 1\nline 2"), None);
        assert_eq!(
            output_difference("line 1\r\nline 2\r\n", "line 1\nline 3").as_deref(),
            Some(r#"line 2: recorded "line 2", replayed "line 3""#)
        );
        assert_eq!(output_difference("a\nb", "a").as_deref(), Some(r#"line 2: recorded "b", replayed nothing"#));
    }

    #[test]
    fn the_identity_facts_set_the_host_state() {
        let stdout = r#"{"hostname":"WIN-A","ip":"203.0.113.7","boot":"/Date(1736089445678)/","freeBytes":1,"containers":"Disabled","defender":false,"shell":"C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe"}"#;
        let seed = Seed::read(1, &run("x", Some(0), stdout)).unwrap();
        let root = tempfile::tempdir().unwrap();
        let mut host = Host::new(identity_of(Some(&seed)), root.path(), Latency::zero()).unwrap();
        seed.apply(&mut host);
        assert_eq!(host.identity.fqdn, "win-a");
        assert_eq!(host.last_boot_up, SystemTime::UNIX_EPOCH + Duration::from_millis(1736089445678));
        assert_eq!(host.volume.free_bytes, 1);
        assert_eq!(host.features["Containers"], "Disabled");
        assert_eq!(host.defender.as_ref().map(|defender| defender.running), Some(false));
        assert_eq!(host.default_shell(), crate::host::ExecShell::PowerShell);
        assert!(Seed::read(1, &run("x", Some(0), r#"{"hostname":"WIN-A","ip":"not an address"}"#)).is_none());
        assert!(Seed::read(1, &run("x", Some(1), stdout)).is_none());
    }

    #[test]
    fn subjects_name_the_script_statement_or_the_line() {
        let script = "$ProgressPreference = 'SilentlyContinue'\n$ErrorActionPreference = 'Stop'\n$h = hostname\nexit 0";
        assert_eq!(subject_of("powershell.exe -EncodedCommand x", Some(script)), "powershell: $h = hostname");
        assert_eq!(subject_of("sc.exe query kubelet\nexit", None), "sc.exe query kubelet");
    }
}
