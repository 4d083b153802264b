//! The secret scan of the e2e suite: the secrets a sandbox plants or the operator mints — the admin's SSH private key,
//! the node-bootstrapper tokens in the bootstrap kubeconfigs the operator writes onto hosts, the keys of the
//! `windows-machine-config-operator-tls` and `windows-machine-config-operator-metrics-tls` Secrets, the operator's
//! own ServiceAccount token, the bearer token the sandbox scrapes `/metrics` with, and the proxy and registry
//! credentials a test planted (the user info of a Proxy URL, an `auth` of Secret `openshift-config/pull-secret`) —
//! looked for in everything the product writes where an admin or a log collector reads: the operator's log, every
//! host command (its line, the script of an `-EncodedCommand`, its output), the hosts' log files under `C:\var\log`,
//! the command transcripts of `--record-transcripts` when a test records them, every Event in the cluster and the
//! status of every `WindowsInstance` record. Proxy and registry credentials must reach the hosts (the product hands
//! them to containerd and the kubelet), so they are not looked for in host commands and host files.
//!
//! A secret is searched as the values a leak would show ([`Secret::pem`], [`Secret::token`]): a PEM key's body lines
//! and its Base64 form (as a Secret's `data` carries it), a token whole, its JWT signature and its Base64 form.
//! Values shorter than [`MIN_SECRET_LENGTH`] are never searched, so ordinary text cannot match. A [`Hit`] names the
//! secret's kind, where the secret came from and where it was found, never the value.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Event as CoreEvent, Secret as KubeSecret};
use k8s_openapi::api::events::v1::Event as EventsEvent;
use kube::api::{Api, ListParams};
use winhost_sim::control::SharedFleet;
use winhost_sim::disk::{Disk, WinPath};
use winhost_sim::host::CommandRecord;
use winhost_sim::ssh::lock;
use wmco_cluster_client::types::WindowsInstance;
use wmco_payload_manifest::render::destinations::BOOTSTRAP_KUBECONFIG;

use crate::credentials::{AdminKey, METRICS_TLS_SECRET, PRIVATE_KEY_FIELD, PRIVATE_KEY_SECRET, TLS_SECRET};
use crate::{OPERATOR_NAMESPACE, SandboxError};

/// Values shorter than this are never searched: they could occur in any text.
pub const MIN_SECRET_LENGTH: usize = 16;

/// What a secret is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SecretKind {
    /// The admin's SSH private key (Secret `cloud-private-key`), which the operator holds for every host.
    AdminSshKey,
    /// A node-bootstrapper token the operator minted for a host's bootstrap kubeconfig.
    NodeBootstrapperToken,
    /// The private key of Secret `windows-machine-config-operator-tls` or `windows-machine-config-operator-metrics-tls`.
    OperatorTlsKey,
    /// The operator's own ServiceAccount token (its kubeconfig).
    OperatorToken,
    /// The bearer token the sandbox scrapes `/metrics` with (the operator reviews it on every new one).
    ScraperToken,
    /// The user info (`user:password`) of a cluster-wide proxy URL.
    ProxyCredentials,
    /// A registry's `auth` (Base64 of `user:password`) in Secret `openshift-config/pull-secret`.
    RegistryCredentials,
}

impl SecretKind {
    /// Whether the product hands secrets of this kind to the hosts on purpose (proxy URLs become the services'
    /// environment, registry credentials containerd's `hosts.toml`): then host commands and host files are no leak.
    pub fn reaches_hosts(self) -> bool {
        matches!(self, SecretKind::ProxyCredentials | SecretKind::RegistryCredentials)
    }
}

impl fmt::Display for SecretKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            SecretKind::AdminSshKey => "the admin SSH private key",
            SecretKind::NodeBootstrapperToken => "a node-bootstrapper token",
            SecretKind::OperatorTlsKey => "an operator TLS private key",
            SecretKind::OperatorToken => "the operator's ServiceAccount token",
            SecretKind::ScraperToken => "the metrics scraper's bearer token",
            SecretKind::ProxyCredentials => "a proxy's user and password",
            SecretKind::RegistryCredentials => "a registry's user and password",
        })
    }
}

/// One secret and the values searched for it. `Debug` never shows the values.
#[derive(Clone)]
pub struct Secret {
    kind: SecretKind,
    source: String,
    values: Vec<String>,
    too_short: usize,
    format_constants: usize,
}

impl fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Secret")
            .field("kind", &self.kind)
            .field("source", &self.source)
            .field("values", &self.values.len())
            .field("too_short", &self.too_short)
            .field("format_constants", &self.format_constants)
            .finish()
    }
}

impl Secret {
    /// A PEM private key (`source` says where it came from): each line of its Base64 body, and the Base64 of the
    /// whole PEM (a Secret's `data` as the API returns it).
    ///
    /// ```
    /// use wmco_sandbox::secret_scan::{Secret, SecretKind};
    /// let pem = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\nshort\n-----END PRIVATE KEY-----\n";
    /// let secret = Secret::pem(SecretKind::OperatorTlsKey, "tls.key", pem);
    /// assert_eq!((secret.searched(), secret.too_short()), (2, 1));
    /// ```
    pub fn pem(kind: SecretKind, source: impl Into<String>, pem: &str) -> Secret {
        let body = pem
            .lines()
            .map(str::trim)
            .skip_while(|line| !line.starts_with("-----BEGIN"))
            .skip(1)
            .take_while(|line| !line.starts_with("-----END"))
            .filter(|line| !line.is_empty() && !line.contains(':'))
            .map(str::to_owned);
        let mut values: Vec<String> = body.collect();
        values.push(STANDARD.encode(pem));
        Secret::with_values(kind, source.into(), values)
    }

    /// A bearer token: the token, its signature when it is a JWT (`header.claims.signature`; the header and claims
    /// are not secret), and its Base64 form.
    ///
    /// ```
    /// use wmco_sandbox::secret_scan::{Secret, SecretKind};
    /// let secret = Secret::token(SecretKind::OperatorToken, "kubeconfig", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg");
    /// assert_eq!(secret.searched(), 3);
    /// let short = Secret::token(SecretKind::OperatorToken, "kubeconfig", "abc");
    /// assert_eq!((short.searched(), short.too_short()), (0, 2));
    /// ```
    pub fn token(kind: SecretKind, source: impl Into<String>, token: &str) -> Secret {
        let token = token.trim();
        let mut values = vec![token.to_owned()];
        let parts: Vec<&str> = token.split('.').collect();
        if let [_, _, signature] = parts.as_slice() {
            values.push((*signature).to_owned());
        }
        values.push(STANDARD.encode(token));
        Secret::with_values(kind, source.into(), values)
    }

    /// A `user:password` pair: the pair, the password alone and the pair's Base64 form (as a pull secret's `auth` and
    /// an HTTP `Basic` header carry it).
    ///
    /// ```
    /// use wmco_sandbox::secret_scan::{Secret, SecretKind};
    /// let secret = Secret::credentials(SecretKind::ProxyCredentials, "Proxy cluster", "wmco:pr0xy-s3cret-e2e-only");
    /// assert_eq!(secret.searched(), 3);
    /// let short = Secret::credentials(SecretKind::ProxyCredentials, "Proxy cluster", "wmco:pr0xy-s3cret");
    /// assert_eq!((short.searched(), short.too_short()), (2, 1));
    /// ```
    pub fn credentials(kind: SecretKind, source: impl Into<String>, user_password: &str) -> Secret {
        let mut values = vec![user_password.to_owned()];
        if let Some((_, password)) = user_password.split_once(':') {
            values.push(password.to_owned());
        }
        values.push(STANDARD.encode(user_password));
        Secret::with_values(kind, source.into(), values)
    }

    fn with_values(kind: SecretKind, source: String, values: Vec<String>) -> Secret {
        let mut unique: Vec<String> = Vec::new();
        let mut too_short = 0;
        for value in values {
            if value.chars().count() < MIN_SECRET_LENGTH {
                too_short += 1;
            } else if !unique.contains(&value) {
                unique.push(value);
            }
        }
        Secret { kind, source, values: unique, too_short, format_constants: 0 }
    }

    /// Drops the values this key shares with `unrelated_pem`, a fresh key of the same format: lines every such key
    /// has (the first body line of an OpenSSH Ed25519 key is only its header and key type) are no secret and would
    /// match any other key of the format.
    ///
    /// ```
    /// use wmco_sandbox::{AdminKey, secret_scan::{Secret, SecretKind}};
    /// let (key, other) = (AdminKey::generate()?, AdminKey::generate()?);
    /// let secret = Secret::pem(SecretKind::AdminSshKey, "key", key.private_openssh());
    /// let lines = secret.searched();
    /// let secret = secret.without_format_constants(other.private_openssh());
    /// assert_eq!((secret.searched(), secret.format_constants()), (lines - 1, 1));
    /// # Ok::<(), wmco_sandbox::SandboxError>(())
    /// ```
    pub fn without_format_constants(mut self, unrelated_pem: &str) -> Secret {
        let reference = Secret::pem(self.kind, String::new(), unrelated_pem);
        let before = self.values.len();
        self.values.retain(|value| !reference.values.contains(value));
        self.format_constants += before - self.values.len();
        self
    }

    /// What the secret is.
    pub fn kind(&self) -> SecretKind {
        self.kind
    }

    /// How many of its values are searched.
    pub fn searched(&self) -> usize {
        self.values.len()
    }

    /// How many of its values were too short to search.
    pub fn too_short(&self) -> usize {
        self.too_short
    }

    /// How many of its values every key of its format has (see [`Secret::without_format_constants`]).
    pub fn format_constants(&self) -> usize {
        self.format_constants
    }
}

/// Which text of a host command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CommandPart {
    /// The exec line as received.
    Line,
    /// The script of its `-EncodedCommand`, decoded.
    EncodedScript,
    /// Its standard output.
    Stdout,
    /// Its standard error.
    Stderr,
}

/// A place searched.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// The operator's log file.
    OperatorLog(PathBuf),
    /// One command a host ran (its index in the host's command log).
    HostCommand {
        /// The host's name.
        host: String,
        /// The index in its command log.
        index: usize,
        /// The SSH client that sent it.
        client: String,
        /// Which text.
        part: CommandPart,
    },
    /// A file under a host's `C:\var\log`.
    HostLogFile {
        /// The host's name.
        host: String,
        /// Its Windows path.
        path: String,
    },
    /// A command transcript file (`wmco run --record-transcripts`).
    Transcript(PathBuf),
    /// The status of a `WindowsInstance` record (`namespace/name`), as JSON.
    RecordStatus(String),
    /// A field of an Event.
    Event {
        /// `v1` or `events.k8s.io/v1`.
        api: &'static str,
        /// `namespace/name`.
        name: String,
        /// `reason`, `message` or `note`.
        field: &'static str,
    },
}

impl fmt::Display for Place {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::OperatorLog(path) => write!(formatter, "the operator log {}", path.display()),
            Place::HostCommand { host, index, client, part } => {
                let part = match part {
                    CommandPart::Line => "line",
                    CommandPart::EncodedScript => "decoded -EncodedCommand script",
                    CommandPart::Stdout => "stdout",
                    CommandPart::Stderr => "stderr",
                };
                write!(formatter, "host {host} command #{index} from {client} ({part})")
            }
            Place::HostLogFile { host, path } => write!(formatter, "host {host} file {path}"),
            Place::Transcript(path) => write!(formatter, "the command transcript {}", path.display()),
            Place::RecordStatus(name) => write!(formatter, "the status of record {name}"),
            Place::Event { api, name, field } => write!(formatter, "{api} Event {name} ({field})"),
        }
    }
}

/// A secret found somewhere: what it is, where it came from, where it was found (never the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The secret's kind.
    pub kind: SecretKind,
    /// Where the secret came from (`Secret …/cloud-private-key`, a host's bootstrap kubeconfig, …).
    pub source: String,
    /// Where it was found.
    pub place: Place,
    /// The line of that place's text (from 1).
    pub line: usize,
}

impl fmt::Display for Hit {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} (from {}) in {}, line {}", self.kind, self.source, self.place, self.line)
    }
}

/// One secret as the scan reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedSecret {
    /// Its kind.
    pub kind: SecretKind,
    /// Where it came from.
    pub source: String,
    /// How many values were searched.
    pub searched: usize,
    /// How many values were too short to search.
    pub too_short: usize,
    /// How many values were not searched because every key of the format has them.
    pub format_constants: usize,
}

/// What a scan searched, where, and what it found.
#[derive(Debug, Clone, Default)]
pub struct SecretScan {
    /// Every secret looked for (duplicates, such as one token written onto several hosts, once).
    pub secrets: Vec<ScannedSecret>,
    /// Every place searched.
    pub places: Vec<Place>,
    /// Every secret found, in the order of the places.
    pub hits: Vec<Hit>,
}

impl SecretScan {
    /// How many secrets of `kind` were searched with at least one value.
    pub fn secrets_of(&self, kind: SecretKind) -> usize {
        self.secrets.iter().filter(|secret| secret.kind == kind && secret.searched > 0).count()
    }

    /// The secrets found but not searched: none of their values is [`MIN_SECRET_LENGTH`] long (a token or key read
    /// wrongly).
    pub fn unsearched(&self) -> Vec<&ScannedSecret> {
        self.secrets.iter().filter(|secret| secret.searched == 0).collect()
    }
}

impl fmt::Display for SecretScan {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kinds: BTreeMap<SecretKind, (usize, usize)> = BTreeMap::new();
        for secret in &self.secrets {
            let entry = kinds.entry(secret.kind).or_default();
            entry.0 += 1;
            entry.1 += secret.searched;
        }
        let kinds: Vec<String> =
            kinds.iter().map(|(kind, (secrets, values))| format!("{kind} ×{secrets} ({values} values)")).collect();
        let mut places: BTreeMap<&str, usize> = BTreeMap::new();
        for place in &self.places {
            let category = match place {
                Place::OperatorLog(_) => "operator log",
                Place::HostCommand { .. } => "host command texts",
                Place::HostLogFile { .. } => "host log files",
                Place::Transcript(_) => "command transcripts",
                Place::RecordStatus(_) => "record statuses",
                Place::Event { .. } => "Event fields",
            };
            *places.entry(category).or_default() += 1;
        }
        let places: Vec<String> = places.iter().map(|(category, count)| format!("{count} {category}")).collect();
        write!(formatter, "searched {} in {}: ", kinds.join(", "), places.join(", "))?;
        if self.hits.is_empty() {
            return formatter.write_str("no secret found");
        }
        write!(formatter, "{} found:", self.hits.len())?;
        for hit in &self.hits {
            write!(formatter, "\n  {hit}")?;
        }
        Ok(())
    }
}

/// Searches places for a set of secrets.
#[derive(Debug)]
pub struct Scanner {
    secrets: Vec<Secret>,
    scan: SecretScan,
}

impl Scanner {
    /// A scanner for `secrets`; a secret whose every value an earlier one already holds (the same token on two
    /// hosts) is dropped, one with no value long enough to search is kept (and reported with none searched).
    pub fn new(secrets: Vec<Secret>) -> Scanner {
        let mut kept: Vec<Secret> = Vec::new();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for mut secret in secrets {
            let searchable = !secret.values.is_empty();
            secret.values.retain(|value| !seen.contains(value));
            if searchable && secret.values.is_empty() {
                continue;
            }
            seen.extend(secret.values.iter().cloned());
            kept.push(secret);
        }
        let scanned = kept
            .iter()
            .map(|secret| ScannedSecret {
                kind: secret.kind,
                source: secret.source.clone(),
                searched: secret.values.len(),
                too_short: secret.too_short,
                format_constants: secret.format_constants,
            })
            .collect();
        Scanner { secrets: kept, scan: SecretScan { secrets: scanned, ..SecretScan::default() } }
    }

    /// Searches `text` as `place` (a host's command or file only for secrets that must not reach hosts, see
    /// [`SecretKind::reaches_hosts`]).
    pub fn search(&mut self, place: Place, text: &str) {
        let on_a_host = matches!(place, Place::HostCommand { .. } | Place::HostLogFile { .. });
        for secret in self.secrets.iter().filter(|secret| !(on_a_host && secret.kind.reaches_hosts())) {
            let first = secret.values.iter().filter_map(|value| text.find(value.as_str())).min();
            if let Some(offset) = first {
                let line = text[..offset].matches('\n').count() + 1;
                self.scan.hits.push(Hit {
                    kind: secret.kind,
                    source: secret.source.clone(),
                    place: place.clone(),
                    line,
                });
            }
        }
        self.scan.places.push(place);
    }

    /// Searches every command of `host`'s log: line, decoded `-EncodedCommand` script, stdout and stderr.
    pub fn search_commands(&mut self, host: &str, log: &[CommandRecord]) {
        for (index, record) in log.iter().enumerate() {
            let place = |part| Place::HostCommand { host: host.to_owned(), index, client: record.client.clone(), part };
            self.search(place(CommandPart::Line), &record.line);
            if let Some(script) = encoded_script(&record.line) {
                self.search(place(CommandPart::EncodedScript), &script);
            }
            self.search(place(CommandPart::Stdout), &record.stdout);
            self.search(place(CommandPart::Stderr), &record.stderr);
        }
    }

    /// Searches a file (read as UTF-8, invalid bytes replaced).
    ///
    /// # Errors
    /// [`SandboxError::Io`] if it cannot be read.
    pub fn search_file(&mut self, place: Place, path: &Path) -> Result<(), SandboxError> {
        let bytes = std::fs::read(path).map_err(SandboxError::io("read", path))?;
        self.search(place, &String::from_utf8_lossy(&bytes));
        Ok(())
    }

    /// Searches every file below `c_drive/var/log` of host `host` (symbolic links are not followed).
    ///
    /// # Errors
    /// [`SandboxError::Io`] if a directory or file cannot be read.
    pub fn search_host_logs(&mut self, host: &str, c_drive: &Path) -> Result<(), SandboxError> {
        let mut pending = vec![c_drive.join("var").join("log")];
        let mut files = Vec::new();
        while let Some(directory) = pending.pop() {
            let entries = match std::fs::read_dir(&directory) {
                Ok(entries) => entries,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(SandboxError::io("list", &directory)(error)),
            };
            for entry in entries {
                let entry = entry.map_err(SandboxError::io("list", &directory))?;
                let kind = entry.file_type().map_err(SandboxError::io("inspect", entry.path()))?;
                if kind.is_dir() {
                    pending.push(entry.path());
                } else if kind.is_file() {
                    files.push(entry.path());
                }
            }
        }
        files.sort();
        for file in files {
            let relative = file.strip_prefix(c_drive).unwrap_or(&file);
            let windows = relative.iter().map(|part| part.to_string_lossy()).collect::<Vec<_>>().join("\\");
            self.search_file(Place::HostLogFile { host: host.to_owned(), path: format!("C:\\{windows}") }, &file)?;
        }
        Ok(())
    }

    /// Searches the reason and message of core Events and the reason and note of `events.k8s.io` Events.
    pub fn search_events(&mut self, core: &[CoreEvent], events: &[EventsEvent]) {
        for event in core {
            let name = object_name(event.metadata.namespace.as_deref(), event.metadata.name.as_deref());
            for (field, text) in [("reason", &event.reason), ("message", &event.message)] {
                let place = Place::Event { api: "v1", name: name.clone(), field };
                self.search(place, text.as_deref().unwrap_or_default());
            }
        }
        for event in events {
            let name = object_name(event.metadata.namespace.as_deref(), event.metadata.name.as_deref());
            for (field, text) in [("reason", &event.reason), ("note", &event.note)] {
                let place = Place::Event { api: "events.k8s.io/v1", name: name.clone(), field };
                self.search(place, text.as_deref().unwrap_or_default());
            }
        }
    }

    /// The scan's result.
    pub fn finish(self) -> SecretScan {
        self.scan
    }
}

/// The files directly in `directory`, sorted; none when it does not exist.
fn transcript_files(directory: &Path) -> Result<Vec<PathBuf>, SandboxError> {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(SandboxError::io("list", directory)(error)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(SandboxError::io("list", directory))?;
        if entry.file_type().map_err(SandboxError::io("inspect", entry.path()))?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

fn object_name(namespace: Option<&str>, name: Option<&str>) -> String {
    format!("{}/{}", namespace.unwrap_or_default(), name.unwrap_or_default())
}

/// The script of a `powershell.exe … -EncodedCommand <Base64>` line (also `-enc`, `-ec`, `-e`), decoded.
fn encoded_script(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    while let Some(word) = words.next() {
        let flag = word.trim_start_matches(['-', '/']).to_ascii_lowercase();
        if word.starts_with(['-', '/']) && matches!(flag.as_str(), "encodedcommand" | "enc" | "ec" | "e") {
            return words.next().and_then(|encoded| winhost_sim::ps::decode(encoded.trim_matches('"')));
        }
    }
    None
}

/// The bearer tokens of a kubeconfig (`users[].user.token`), JSON or YAML (plain, quoted or folded scalars);
/// nothing if it does not parse.
///
/// ```
/// use wmco_sandbox::secret_scan::kubeconfig_tokens;
/// assert_eq!(kubeconfig_tokens("users:\n- name: a\n  user:\n    token: abc.def\n"), ["abc.def"]);
/// assert_eq!(kubeconfig_tokens("users:\n- name: a\n  user:\n    token: >-\n      abc.def\n"), ["abc.def"]);
/// assert_eq!(kubeconfig_tokens(r#"{"users":[{"name":"a","user":{"token":"xyz"}}]}"#), ["xyz"]);
/// ```
pub fn kubeconfig_tokens(text: &str) -> Vec<String> {
    let Ok(document) = serde_saphyr::from_str::<serde_json::Value>(text) else { return Vec::new() };
    let users = document.get("users").and_then(serde_json::Value::as_array).cloned().unwrap_or_default();
    users
        .iter()
        .filter_map(|user| user.pointer("/user/token").and_then(serde_json::Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// What [`scan`] reads.
pub struct ScanInputs<'a> {
    /// A cluster-admin client (Secrets and Events).
    pub admin: kube::Client,
    /// The sandbox's admin key.
    pub admin_key: &'a AdminKey,
    /// The operator's log file.
    pub operator_log: PathBuf,
    /// The operator's kubeconfig.
    pub operator_kubeconfig: PathBuf,
    /// The bearer token the sandbox scrapes `/metrics` with.
    pub scraper_token: &'a str,
    /// The fleet (command logs, kept versions of the bootstrap kubeconfigs).
    pub fleet: &'a SharedFleet,
    /// The directory holding every host's disk (`<name>/C`), including hosts removed from the fleet.
    pub hosts_dir: PathBuf,
    /// The directory of command transcripts (every file in it is searched; a missing directory is no error).
    pub transcripts_dir: PathBuf,
    /// The proxy and registry credentials the test planted ([`Secret::credentials`]).
    pub planted: Vec<Secret>,
}

/// Collects the planted secrets and searches every place; see the module documentation.
///
/// # Errors
/// [`SandboxError::Kube`] if Secrets or Events cannot be read, [`SandboxError::Io`] if a file cannot be read.
pub async fn scan(inputs: &ScanInputs<'_>) -> Result<SecretScan, SandboxError> {
    let fleet_hosts: Vec<(String, std::sync::Arc<winhost_sim::ssh::SshServer>)> = {
        let fleet = inputs.fleet.lock().await;
        fleet.list().into_iter().filter_map(|info| Some((info.name.clone(), fleet.server(&info.name).ok()?))).collect()
    };
    let mut secrets = cluster_secrets(inputs).await?;
    secrets.extend(bootstrap_tokens(&fleet_hosts, &inputs.hosts_dir)?);
    secrets.extend(inputs.planted.iter().cloned());
    let mut scanner = Scanner::new(secrets);

    scanner.search_file(Place::OperatorLog(inputs.operator_log.clone()), &inputs.operator_log)?;
    for (name, server) in &fleet_hosts {
        let log = lock(&server.host).command_log.clone();
        scanner.search_commands(name, &log);
    }
    for (name, c_drive) in host_disks(&inputs.hosts_dir)? {
        scanner.search_host_logs(&name, &c_drive)?;
    }
    for transcript in transcript_files(&inputs.transcripts_dir)? {
        scanner.search_file(Place::Transcript(transcript.clone()), &transcript)?;
    }
    let core: Api<CoreEvent> = Api::all(inputs.admin.clone());
    let core = core.list(&ListParams::default()).await.map_err(SandboxError::kube("list v1 Events"))?.items;
    let events: Api<EventsEvent> = Api::all(inputs.admin.clone());
    let events =
        events.list(&ListParams::default()).await.map_err(SandboxError::kube("list events.k8s.io/v1 Events"))?.items;
    scanner.search_events(&core, &events);
    let records: Api<WindowsInstance> = Api::all(inputs.admin.clone());
    let records = records.list(&ListParams::default()).await.map_err(SandboxError::kube("list WindowsInstances"))?;
    for record in records.items {
        let name = object_name(record.metadata.namespace.as_deref(), record.metadata.name.as_deref());
        let status = serde_json::to_string_pretty(&record.status).unwrap_or_default();
        scanner.search(Place::RecordStatus(name), &status);
    }
    Ok(scanner.finish())
}

/// The admin key (the sandbox's and the one Secret `cloud-private-key` holds now), the TLS keys, the operator's
/// token and the metrics scraper's token.
async fn cluster_secrets(inputs: &ScanInputs<'_>) -> Result<Vec<Secret>, SandboxError> {
    // Fresh keys of the same formats, to drop the body lines every such key has.
    let unrelated_admin_key = AdminKey::generate()?;
    let unrelated_tls_key = rcgen::KeyPair::generate()?.serialize_pem();
    let admin_pem = |source: String, pem: &str| {
        Secret::pem(SecretKind::AdminSshKey, source, pem)
            .without_format_constants(unrelated_admin_key.private_openssh())
    };
    let mut secrets = vec![admin_pem("the sandbox's admin key".to_owned(), inputs.admin_key.private_openssh())];
    let api: Api<KubeSecret> = Api::namespaced(inputs.admin.clone(), OPERATOR_NAMESPACE);
    for (name, field) in
        [(PRIVATE_KEY_SECRET, PRIVATE_KEY_FIELD), (TLS_SECRET, "tls.key"), (METRICS_TLS_SECRET, "tls.key")]
    {
        let action = format!("read Secret {OPERATOR_NAMESPACE}/{name}");
        let Some(secret) = api.get_opt(name).await.map_err(SandboxError::kube(action))? else { continue };
        if let Some(ByteString(bytes)) = secret.data.as_ref().and_then(|data| data.get(field)) {
            let source = format!("Secret {OPERATOR_NAMESPACE}/{name} ({field})");
            let pem = String::from_utf8_lossy(bytes);
            secrets.push(if name != PRIVATE_KEY_SECRET {
                Secret::pem(SecretKind::OperatorTlsKey, source, &pem).without_format_constants(&unrelated_tls_key)
            } else {
                admin_pem(source, &pem)
            });
        }
    }
    let kubeconfig = std::fs::read_to_string(&inputs.operator_kubeconfig)
        .map_err(SandboxError::io("read", &inputs.operator_kubeconfig))?;
    let source = format!("the operator kubeconfig {}", inputs.operator_kubeconfig.display());
    for token in kubeconfig_tokens(&kubeconfig) {
        secrets.push(Secret::token(SecretKind::OperatorToken, source.clone(), &token));
    }
    secrets.push(Secret::token(SecretKind::ScraperToken, "the metrics scraper's token", inputs.scraper_token));
    Ok(secrets)
}

/// Every node-bootstrapper token in a bootstrap kubeconfig: the versions the fleet's hosts kept (the operator
/// deletes the file once the Node exists) and the files on every host's disk now.
fn bootstrap_tokens(
    fleet_hosts: &[(String, std::sync::Arc<winhost_sim::ssh::SshServer>)],
    hosts_dir: &Path,
) -> Result<Vec<Secret>, SandboxError> {
    let path = bootstrap_kubeconfig_path()?;
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, server) in fleet_hosts {
        let versions = lock(&server.host).disk.earlier_versions(&path);
        for (number, contents) in versions.into_iter().enumerate() {
            files.push((format!("{BOOTSTRAP_KUBECONFIG} of {name} (replaced version {})", number + 1), contents));
        }
    }
    for (name, c_drive) in host_disks(hosts_dir)? {
        let Some(root) = c_drive.parent() else { continue };
        let disk = Disk::new(root).map_err(|error| SandboxError::SecretScan(format!("host {name}'s disk: {error}")))?;
        if let Ok(contents) = disk.read(&path) {
            files.push((format!("{BOOTSTRAP_KUBECONFIG} of {name}"), contents));
        }
    }
    Ok(files
        .iter()
        .flat_map(|(source, contents)| {
            kubeconfig_tokens(&String::from_utf8_lossy(contents))
                .into_iter()
                .map(|token| Secret::token(SecretKind::NodeBootstrapperToken, source.clone(), &token))
        })
        .collect())
}

/// The bootstrap kubeconfig's path on the simulated disks.
///
/// # Errors
/// [`SandboxError::SecretScan`] if the product's path does not parse (a bug).
pub fn bootstrap_kubeconfig_path() -> Result<WinPath, SandboxError> {
    WinPath::parse(BOOTSTRAP_KUBECONFIG).map_err(|error| SandboxError::SecretScan(error.to_string()))
}

/// Every host directory's name and `C` drive under `hosts_dir`, sorted.
fn host_disks(hosts_dir: &Path) -> Result<Vec<(String, PathBuf)>, SandboxError> {
    let entries = match std::fs::read_dir(hosts_dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(SandboxError::io("list", hosts_dir)(error)),
    };
    let mut disks = Vec::new();
    for entry in entries {
        let entry = entry.map_err(SandboxError::io("list", hosts_dir))?;
        let c_drive = entry.path().join("C");
        if c_drive.is_dir() {
            disks.push((entry.file_name().to_string_lossy().into_owned(), c_drive));
        }
    }
    disks.sort();
    Ok(disks)
}

#[cfg(test)]
mod tests {
    use super::*;

    use winhost_sim::host::{Host, Identity, Latency};

    const TOKEN: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.\
                         c2lnbmF0dXJlLW9mLWEtbm9kZS1ib290c3RyYXBwZXItdG9rZW4";

    fn host(root: &Path) -> Host {
        let identity = Identity {
            hostname: "winhost-0".into(),
            fqdn: "winhost-0.sim.test".into(),
            build: 20348,
            ubr: 2340,
            node_ip: std::net::Ipv4Addr::new(203, 0, 113, 10),
        };
        Host::new(identity, root, Latency::zero()).unwrap()
    }

    fn secrets(key: &AdminKey) -> Vec<Secret> {
        let unrelated = AdminKey::generate().unwrap();
        vec![
            Secret::pem(SecretKind::AdminSshKey, "the sandbox's admin key", key.private_openssh())
                .without_format_constants(unrelated.private_openssh()),
            Secret::token(SecretKind::NodeBootstrapperToken, "a bootstrap kubeconfig", TOKEN),
        ]
    }

    #[test]
    fn a_planted_key_line_in_the_operator_log_and_a_token_in_a_command_are_found() {
        let key = AdminKey::generate().unwrap();
        let key_line = key.private_openssh().lines().nth(2).unwrap().to_owned();
        assert!(key_line.len() >= MIN_SECRET_LENGTH, "{key_line}");
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("operator.log");
        std::fs::write(&log, format!("=== start\n{{\"level\":\"INFO\",\"fields\":{{\"key\":\"{key_line}\"}}}}\n"))
            .unwrap();
        let mut host = host(directory.path());
        host.exec("SSH-2.0-wmco_0.1.0 wmco-sandbox", "hostname");
        host.exec("SSH-2.0-wmco_0.1.0 wmco-sandbox", &format!("echo {TOKEN}"));
        let script = format!("Write-Output '{}'", TOKEN.rsplit('.').next().unwrap());
        host.exec(
            "SSH-2.0-wmco_0.1.0 wmco-sandbox",
            &format!("powershell.exe -NoProfile -EncodedCommand {}", winhost_sim::ps::encode(&script)),
        );

        let mut scanner = Scanner::new(secrets(&key));
        scanner.search_file(Place::OperatorLog(log.clone()), &log).unwrap();
        scanner.search_commands("winhost-0", &host.command_log);
        let scan = scanner.finish();

        let found: Vec<String> = scan.hits.iter().map(ToString::to_string).collect();
        let client = "SSH-2.0-wmco_0.1.0 wmco-sandbox";
        assert_eq!(
            found,
            [
                format!(
                    "the admin SSH private key (from the sandbox's admin key) in the operator log {}, line 2",
                    log.display()
                ),
                format!(
                    "a node-bootstrapper token (from a bootstrap kubeconfig) in host winhost-0 command #1 from {client} (line), line 1"
                ),
                format!(
                    "a node-bootstrapper token (from a bootstrap kubeconfig) in host winhost-0 command #1 from {client} (stdout), line 1"
                ),
                format!(
                    "a node-bootstrapper token (from a bootstrap kubeconfig) in host winhost-0 command #2 from {client} (decoded -EncodedCommand script), line 1"
                ),
                format!(
                    "a node-bootstrapper token (from a bootstrap kubeconfig) in host winhost-0 command #2 from {client} (stdout), line 1"
                ),
            ]
        );
        let report = scan.to_string();
        assert!(report.contains("5 found:"), "{report}");
        assert!(!report.contains(&key_line) && !report.contains(TOKEN.rsplit('.').next().unwrap()), "{report}");
        assert_eq!(scan.places.len(), 1 + 3 * 3 + 1);
    }

    #[test]
    fn clean_text_and_short_values_give_no_hit() {
        let key = AdminKey::generate().unwrap();
        let mut secrets = secrets(&key);
        secrets.push(Secret::token(SecretKind::OperatorToken, "short", "hostname"));
        let mut scanner = Scanner::new(secrets);
        // Another key's first body line is the header every OpenSSH Ed25519 key has: no secret.
        let header = AdminKey::generate().unwrap().private_openssh().lines().nth(1).unwrap().to_owned();
        scanner.search(Place::OperatorLog(PathBuf::from("other.log")), &header);
        scanner.search(
            Place::OperatorLog(PathBuf::from("operator.log")),
            "=== start\nhostname\n-----BEGIN OPENSSH PRIVATE KEY-----\n",
        );
        let scan = scanner.finish();
        assert!(scan.hits.is_empty(), "{scan}");
        assert_eq!(scan.secrets.last().map(|secret| (secret.searched, secret.too_short)), Some((0, 2)));
        assert_eq!(scan.unsearched().len(), 1);
        assert_eq!(scan.secrets_of(SecretKind::AdminSshKey), 1);
        assert!(scan.to_string().ends_with("no secret found"), "{scan}");
    }

    #[test]
    fn proxy_and_registry_credentials_are_looked_for_everywhere_but_on_the_hosts_they_are_given_to() {
        let planted = vec![
            Secret::credentials(SecretKind::ProxyCredentials, "Proxy cluster", "wmco:pr0xy-s3cret-e2e-only"),
            Secret::credentials(SecretKind::RegistryCredentials, "pull-secret", "mirror:registry-s3cret-e2e"),
        ];
        let auth = STANDARD.encode("mirror:registry-s3cret-e2e");
        let mut scanner = Scanner::new(planted);
        let directory = tempfile::tempdir().unwrap();
        let mut host = host(directory.path());
        host.exec("SSH-2.0-wmco_0.1.0 wmco-sandbox", "echo HTTPS_PROXY=http://wmco:pr0xy-s3cret-e2e-only@proxy");
        scanner.search_commands("winhost-0", &host.command_log);
        scanner.search(
            Place::Transcript(PathBuf::from("t.jsonl")),
            "setx HTTPS_PROXY http://wmco:pr0xy-s3cret-e2e-only@p",
        );
        scanner.search(Place::RecordStatus("wmco/byoh-a".into()), &format!("{{\"lastError\":\"auth {auth}\"}}"));
        scanner.search(Place::OperatorLog(PathBuf::from("operator.log")), "proxy http://[REDACTED]@proxy");
        let scan = scanner.finish();
        assert_eq!(
            scan.hits.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "a proxy's user and password (from Proxy cluster) in the command transcript t.jsonl, line 1",
                "a registry's user and password (from pull-secret) in the status of record wmco/byoh-a, line 1",
            ]
        );
    }

    #[test]
    fn host_log_files_are_searched_below_var_log_with_their_windows_path() {
        let directory = tempfile::tempdir().unwrap();
        let c_drive = directory.path().join("C");
        std::fs::create_dir_all(c_drive.join("var/log/kubelet")).unwrap();
        std::fs::write(c_drive.join("var/log/kubelet/kubelet.log"), format!("I0101 start\nbearer {TOKEN}\n")).unwrap();
        std::fs::write(c_drive.join("var/log/kubelet/kubelet.refused.log"), "refused\n").unwrap();
        let key = AdminKey::generate().unwrap();
        let mut scanner = Scanner::new(secrets(&key));
        scanner.search_host_logs("winhost-0", &c_drive).unwrap();
        let scan = scanner.finish();
        assert_eq!(scan.places.len(), 2);
        assert_eq!(
            scan.hits.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                r"a node-bootstrapper token (from a bootstrap kubeconfig) in host winhost-0 file C:\var\log\kubelet\kubelet.log, line 2"
            ]
        );
    }

    #[tokio::test]
    async fn tokens_are_read_from_bootstrap_kubeconfigs_the_operator_replaced_or_deleted() {
        let base = tempfile::tempdir().unwrap();
        let mut fleet = winhost_sim::fleet::Fleet::new(base.path().to_path_buf(), 0, Latency::zero());
        let path = bootstrap_kubeconfig_path().unwrap();
        fleet.keep_versions_on_every_host(&path);
        let info = fleet.add(winhost_sim::fleet::NewHost::default()).await.unwrap();
        let server = fleet.server(&info.name).unwrap();
        let kubeconfig = |token: &str| format!("users:\n- name: default-auth\n  user:\n    token: {token}\n");
        let second = TOKEN.replace("c2ln", "b3Ro");
        let third = TOKEN.replace("c2ln", "dGhp");
        {
            let host = lock(&server.host);
            host.disk.create_dir_all(&path.parent().unwrap()).unwrap();
            host.disk.write(&path, kubeconfig(TOKEN).as_bytes()).unwrap();
            host.disk.write(&path, kubeconfig(&second).as_bytes()).unwrap();
            host.disk.remove(&path).unwrap();
            host.disk.write(&path, kubeconfig(&third).as_bytes()).unwrap();
        }
        let secrets = bootstrap_tokens(&[(info.name.clone(), server)], base.path()).unwrap();
        let sources: Vec<(SecretKind, &str, usize)> =
            secrets.iter().map(|secret| (secret.kind, secret.source.as_str(), secret.searched())).collect();
        assert_eq!(
            sources,
            [
                (SecretKind::NodeBootstrapperToken, r"C:\k\bootstrap-kubeconfig of winhost-0 (replaced version 1)", 3),
                (SecretKind::NodeBootstrapperToken, r"C:\k\bootstrap-kubeconfig of winhost-0 (replaced version 2)", 3),
                (SecretKind::NodeBootstrapperToken, r"C:\k\bootstrap-kubeconfig of winhost-0", 3),
            ]
        );
        let mut scanner = Scanner::new(secrets);
        scanner.search(Place::OperatorLog(PathBuf::from("operator.log")), &format!("minted {second}"));
        let scan = scanner.finish();
        assert_eq!(scan.hits.len(), 1, "{scan}");
        assert_eq!(scan.hits[0].source, r"C:\k\bootstrap-kubeconfig of winhost-0 (replaced version 2)");
    }
}
