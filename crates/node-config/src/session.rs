//! `HostSession`: one host's [`RemoteHost`] kept across reconciles, with what the flow knows is already on the
//! host (content-addressed script files) and the executor of rendered commands and plan steps: running a command
//! (uploading its script file first if needed), the batched probe, uploads of host files verified by one remote
//! hash command per batch, runs of plan steps sent as command chains (one round trip for many sc.exe and PowerShell
//! commands) with sc.exe's tolerated failure codes, and the wait for STOPPED after a stop.
//! Each command and upload records its [`FlowStep`] in the `step` field of the caller's tracing span (the
//! operator opens one per reconcile with the instance and host), so every log line says which step it belongs to.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use wmco_payload_manifest::{HostFile, HostFileContent};
use wmco_ssh_transport::{
    Output, RemoteCommand, RemoteHost, Sha256Digest, TransportError, UploadBatch, UploadOutcome, UploadRequest,
    UploadSource, staging_path,
};
use wmco_windows_services::{
    CommandChain, DefaultShell, FileHashes, ObservedHost, ProbeRequest, RenderedCommand, SCRIPT_DIRECTORY, ScCommand,
    ScErrorCode, ScriptFile, ServiceName, ServiceState, Shell, Step, WinPath, parse_sc_failure, parse_sc_query,
};

use crate::error::{FlowError, FlowStep};
use crate::pass::{PassMemo, SessionSettings};

/// What a session sent to its host so far (for metrics and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionCounters {
    /// Commands run (each one SSH exec round trip).
    pub commands: u64,
    /// Files uploaded (script files and host files; skipped uploads not counted).
    pub uploads: u64,
    /// Bytes uploaded.
    pub bytes_uploaded: u64,
}

/// What a session knows of the content-addressed script files on its host, by SHA-256.
#[derive(Default)]
struct KnownScripts {
    /// On the host, as far as the session knows.
    present: BTreeSet<String>,
    /// A run failed: upload before the next run, whatever the host holds.
    doubted: BTreeSet<String>,
}

/// One host's connection and the flow's memory of it. Keep one per host for the operator's lifetime and pass it
/// to every [`crate::configure`] / [`crate::deconfigure`] call: the connection is reused and script files are
/// uploaded once.
pub struct HostSession {
    host: Arc<dyn RemoteHost>,
    settings: SessionSettings,
    scripts: Mutex<KnownScripts>,
    script_directory_present: AtomicBool,
    commands: AtomicU64,
    uploads: AtomicU64,
    bytes_uploaded: AtomicU64,
    last_pass: Mutex<Option<PassMemo>>,
    /// The shell sshd starts for exec requests, as the last probe read it (cmd.exe until then: the identity
    /// command and the probe run the same under both).
    default_shell: Mutex<DefaultShell>,
}

impl HostSession {
    /// A session over `host` with the default time limits.
    pub fn new(host: Arc<dyn RemoteHost>) -> HostSession {
        HostSession::with_settings(host, SessionSettings::default())
    }

    /// A session over `host` with the given time limits.
    pub fn with_settings(host: Arc<dyn RemoteHost>, settings: SessionSettings) -> HostSession {
        HostSession {
            host,
            settings,
            scripts: Mutex::new(KnownScripts::default()),
            script_directory_present: AtomicBool::new(false),
            commands: AtomicU64::new(0),
            uploads: AtomicU64::new(0),
            bytes_uploaded: AtomicU64::new(0),
            last_pass: Mutex::new(None),
            default_shell: Mutex::new(DefaultShell::Cmd),
        }
    }

    /// The session's time limits and memory windows.
    pub(crate) fn settings(&self) -> &SessionSettings {
        &self.settings
    }

    /// The state of the last pass if it had the inputs of `fingerprint` and ended within its window.
    pub(crate) fn unchanged_pass(&self, fingerprint: u64) -> Option<PassMemo> {
        let memo = self.last_pass.lock().unwrap_or_else(PoisonError::into_inner);
        memo.as_ref().filter(|memo| memo.answers(fingerprint)).cloned()
    }

    /// Remembers the last pass (or forgets it: a failed pass, deconfiguration).
    pub(crate) fn remember_pass(&self, memo: Option<PassMemo>) {
        *self.last_pass.lock().unwrap_or_else(PoisonError::into_inner) = memo;
    }

    /// The host as errors name it.
    pub fn label(&self) -> &str {
        self.host.label()
    }

    /// The transport.
    pub fn host(&self) -> &dyn RemoteHost {
        self.host.as_ref()
    }

    /// What was sent so far.
    pub fn counters(&self) -> SessionCounters {
        SessionCounters {
            commands: self.commands.load(Ordering::Relaxed),
            uploads: self.uploads.load(Ordering::Relaxed),
            bytes_uploaded: self.bytes_uploaded.load(Ordering::Relaxed),
        }
    }

    /// Forgets which script files are on the host (after deconfiguration removed them).
    pub(crate) fn forget_scripts(&self) {
        *self.scripts.lock().unwrap_or_else(PoisonError::into_inner) = KnownScripts::default();
        self.script_directory_present.store(false, Ordering::Relaxed);
    }

    pub(crate) fn transport_error(&self, step: FlowStep, source: TransportError) -> FlowError {
        FlowError::Transport { host: self.label().to_owned(), step, source: Box::new(source) }
    }

    fn render_error(&self, step: FlowStep, source: wmco_windows_services::CommandError) -> FlowError {
        FlowError::Render { host: self.label().to_owned(), step, source }
    }

    /// Counts a finished upload (its verification is counted by the caller: a batch verifies many files with one
    /// command).
    fn count_upload(&self, outcome: UploadOutcome) {
        if let UploadOutcome::Uploaded { bytes, .. } = outcome {
            self.uploads.fetch_add(1, Ordering::Relaxed);
            self.bytes_uploaded.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Runs a rendered command and returns its output, whatever its exit code. A command with a script file the
    /// session has not seen yet first asks the host for the file's size over SFTP (no command: the
    /// content-addressed file may be there from an earlier operator process) and uploads it only when it is missing
    /// or of another size. Once known, a script is not checked again by this session until a run of it fails: then
    /// the session forgets it and doubts the copy on the host, so the next run uploads it again whatever its size
    /// (the file may have left the host or been damaged: a directory removed by hand, a restored image, a disk
    /// error).
    pub(crate) async fn run(&self, step: FlowStep, command: &RenderedCommand) -> Result<Output, FlowError> {
        let Some(script_file) = &command.script_file else {
            return self.exec(step, command).await;
        };
        let (known, doubted) = {
            let scripts = self.scripts.lock().unwrap_or_else(PoisonError::into_inner);
            (scripts.present.contains(&script_file.sha256), scripts.doubted.contains(&script_file.sha256))
        };
        if !known {
            let present = !doubted
                && self
                    .host
                    .file_size(&script_file.path.to_sftp())
                    .await
                    .map_err(|source| self.transport_error(step, source))?
                    == Some(script_file.contents.len() as u64);
            if !present {
                self.upload_script(step, script_file).await?;
            }
            self.remember_script(script_file);
        }
        let output = self.exec(step, command).await?;
        if !output.success() {
            self.doubt_script(script_file);
        }
        Ok(output)
    }

    fn remember_script(&self, script_file: &ScriptFile) {
        let mut scripts = self.scripts.lock().unwrap_or_else(PoisonError::into_inner);
        scripts.doubted.remove(&script_file.sha256);
        scripts.present.insert(script_file.sha256.clone());
    }

    /// Forgets one script file and whether the script directory exists (it may have gone with the file); the next
    /// run uploads it.
    fn doubt_script(&self, script_file: &ScriptFile) {
        let mut scripts = self.scripts.lock().unwrap_or_else(PoisonError::into_inner);
        scripts.present.remove(&script_file.sha256);
        scripts.doubted.insert(script_file.sha256.clone());
        self.script_directory_present.store(false, Ordering::Relaxed);
    }

    /// Uploads a content-addressed script file (creating the script directory once per session).
    async fn upload_script(&self, step: FlowStep, script_file: &ScriptFile) -> Result<(), FlowError> {
        if !self.script_directory_present.load(Ordering::Relaxed) {
            let directory = WinPath::parse(SCRIPT_DIRECTORY).map_err(|source| {
                self.render_error(step, wmco_windows_services::CommandError::ScriptPath { source })
            })?;
            self.host
                .mkdir_all(&directory.to_sftp())
                .await
                .map_err(|source| self.transport_error(FlowStep::UploadScript, source))?;
            self.script_directory_present.store(true, Ordering::Relaxed);
        }
        let request = UploadRequest {
            source: UploadSource::Bytes(script_file.contents.as_slice().into()),
            remote_path: script_file.path.to_sftp(),
            expected_sha256: Sha256Digest::of_bytes(&script_file.contents),
            remote_sha256: None,
            verify: None,
        };
        let outcome = self.host.upload(&request).await.map_err(|source| FlowError::Upload {
            host: self.label().to_owned(),
            step: FlowStep::UploadScript,
            path: script_file.path.clone(),
            source: Box::new(source),
        })?;
        self.count_upload(outcome);
        self.remember_script(script_file);
        Ok(())
    }

    /// One exec round trip.
    async fn exec(&self, step: FlowStep, command: &RenderedCommand) -> Result<Output, FlowError> {
        tracing::Span::current().record("step", tracing::field::display(step));
        let remote = self.remote(step, &command.line)?;
        self.commands.fetch_add(1, Ordering::Relaxed);
        self.host.run(&remote).await.map_err(|source| self.transport_error(step, source))
    }

    /// The exec request for `line` (rendered for cmd.exe) under the host's default shell.
    fn remote(&self, step: FlowStep, line: &str) -> Result<RemoteCommand, FlowError> {
        let shell = *self.default_shell.lock().unwrap_or_else(PoisonError::into_inner);
        let line = shell.exec_line(line).map_err(|source| self.render_error(step, source))?;
        Ok(RemoteCommand::new(line, self.settings.command_timeout))
    }

    /// Runs a PowerShell command and fails on a non-zero exit code.
    pub(crate) async fn run_powershell(
        &self,
        step: FlowStep,
        what: &str,
        command: &RenderedCommand,
    ) -> Result<Output, FlowError> {
        let output = self.run(step, command).await?;
        if output.success() {
            return Ok(output);
        }
        Err(FlowError::Command {
            host: self.label().to_owned(),
            step,
            command: what.to_owned(),
            code: output.exit_code,
            message: first_line(&output),
        })
    }

    /// The batched state probe: one round trip.
    pub(crate) async fn probe(&self, request: &ProbeRequest) -> Result<ObservedHost, FlowError> {
        let command = request.script().render().map_err(|source| self.render_error(FlowStep::Probe, source))?;
        let output = self.run_powershell(FlowStep::Probe, "state probe", &command).await?;
        let observed = request
            .parse_output(&output.stdout_text())
            .map_err(|source| FlowError::Probe { host: self.label().to_owned(), source })?;
        let shell =
            DefaultShell::from_registry(observed.default_shell.as_deref()).ok_or_else(|| FlowError::Preflight {
                host: self.label().to_owned(),
                failures: vec![crate::facts::unsupported_shell(observed.default_shell.as_deref().unwrap_or(""))],
            })?;
        *self.default_shell.lock().unwrap_or_else(PoisonError::into_inner) = shell;
        Ok(observed)
    }

    /// Runs plan steps in order. Missing directories are created over SFTP (no command), [`Step::ReplaceFiles`]
    /// uploads its files verified a batch at a time, a stop is followed by the wait for STOPPED, and every other
    /// run of steps is sent as few [`CommandChain`]s as fit in a command line: a first configuration's services,
    /// firewall rules and settings cost one round trip.
    pub(crate) async fn apply(
        &self,
        steps: &[Step],
        files: &BTreeMap<WinPath, &HostFile>,
        observed: &ObservedHost,
    ) -> Result<(), FlowError> {
        let mut index = 0;
        while index < steps.len() {
            let step = &steps[index];
            match step {
                Step::EnsureDirectories(directories) => {
                    tracing::Span::current().record("step", tracing::field::display(FlowStep::Prerequisites));
                    for directory in directories {
                        self.host
                            .mkdir_all(&directory.to_sftp())
                            .await
                            .map_err(|source| self.transport_error(FlowStep::Prerequisites, source))?;
                    }
                }
                Step::ReplaceFiles(paths) => {
                    let placing: Vec<(&HostFile, Option<Sha256Digest>)> = paths
                        .iter()
                        .filter_map(|path| {
                            let remote = observed.files.get(path).cloned().flatten();
                            Some((*files.get(path)?, remote.and_then(|digest| digest.as_str().parse().ok())))
                        })
                        .collect();
                    self.upload_files(&placing).await?;
                }
                Step::StopService(name) => {
                    let output = self.run_alone(step, &self.render(step)?.remove(0)).await?;
                    self.wait_stopped(name, &output).await?;
                }
                _ => {
                    let end = steps[index..]
                        .iter()
                        .position(|step| !chains(step))
                        .map_or(steps.len(), |offset| index + offset);
                    self.apply_chained(&steps[index..end]).await?;
                    index = end;
                    continue;
                }
            }
            index += 1;
        }
        Ok(())
    }

    /// The command lines of `step` (a step that renders none is an error: it would be skipped silently).
    fn render(&self, step: &Step) -> Result<Vec<RenderedCommand>, FlowError> {
        let commands = step.commands().map_err(|source| self.render_error(flow_step(step), source))?;
        if commands.is_empty() {
            return Err(self.step_failed(step, 0, "the step rendered no command".to_owned()));
        }
        Ok(commands)
    }

    /// Runs the commands of `steps` in order, as many per round trip as a [`CommandChain`] holds. A command that
    /// cannot be chained (its script file may need uploading) runs alone. A failure the step tolerates (start of a
    /// running service, stop of a stopped one, delete of a missing one) counts as done and the rest follows in the
    /// next chain; any other failure ends the pass naming its step.
    async fn apply_chained(&self, steps: &[Step]) -> Result<(), FlowError> {
        let mut commands: Vec<(&Step, RenderedCommand)> = Vec::new();
        for step in steps {
            commands.extend(self.render(step)?.into_iter().map(|command| (step, command)));
        }
        let mut next = 0;
        while next < commands.len() {
            let (step, first) = &commands[next];
            if !CommandChain::accepts(first) {
                self.run_alone(step, first).await?;
                next += 1;
                continue;
            }
            let chain = self.longest_chain(&commands[next..])?;
            tracing::Span::current().record("step", tracing::field::display(flow_step(step)));
            let output = self.exec(flow_step(step), chain.command()).await?;
            let report =
                chain.read(&output.stdout_text(), output.exit_code).map_err(|source| FlowError::ChainOutput {
                    host: self.label().to_owned(),
                    step: flow_step(step),
                    command: step.to_string(),
                    source,
                })?;
            let Some(failure) = report.failure else {
                next += chain.len();
                continue;
            };
            let (failed_step, failed_command) = &commands[next + failure.index];
            let failed = Output { exit_code: failure.exit_code, stdout: failure.stdout.into_bytes(), ..output };
            self.check(failed_step, failed_command, &failed)?;
            next += failure.index + 1;
        }
        Ok(())
    }

    /// The longest chain of the commands at the start of `commands` that fits in a command line (at least one).
    fn longest_chain(&self, commands: &[(&Step, RenderedCommand)]) -> Result<CommandChain, FlowError> {
        let mut chain: Option<CommandChain> = None;
        for length in 1..=commands.len() {
            let (step, command) = &commands[length - 1];
            if !CommandChain::accepts(command) {
                break;
            }
            match CommandChain::new(commands[..length].iter().map(|(_, command)| command.clone()).collect()) {
                Ok(longer) => chain = Some(longer),
                Err(wmco_windows_services::CommandError::TooLong { .. }) if chain.is_some() => break,
                Err(source) => return Err(self.render_error(flow_step(step), source)),
            }
        }
        chain.ok_or_else(|| self.step_failed(commands[0].0, 0, "no command to run".to_owned()))
    }

    /// Runs one command of `step` on its own and checks its result. Returns its output.
    async fn run_alone(&self, step: &Step, command: &RenderedCommand) -> Result<Output, FlowError> {
        let output = self.run(flow_step(step), command).await?;
        self.check(step, command, &output)?;
        Ok(output)
    }

    /// Fails unless `output` of `command` means `step` holds: success, or an sc.exe failure the step tolerates.
    fn check(&self, step: &Step, command: &RenderedCommand, output: &Output) -> Result<(), FlowError> {
        let failure = if command.shell == Shell::Cmd {
            parse_sc_failure(&output.stdout_text(), output.exit_code)
        } else if output.success() {
            None
        } else {
            return Err(self.step_failed(step, output.exit_code, first_line(output)));
        };
        match failure {
            Some(failure) if !tolerated(step, failure.code) => {
                Err(self.step_failed(step, failure.code.code(), failure.message))
            }
            _ => Ok(()),
        }
    }

    fn step_failed(&self, step: &Step, code: u32, message: String) -> FlowError {
        FlowError::Command {
            host: self.label().to_owned(),
            step: flow_step(step),
            command: step.to_string(),
            code,
            message,
        }
    }

    /// Waits until `name` reports STOPPED: the stop's own output first, then `sc.exe query` every poll interval.
    async fn wait_stopped(&self, name: &ServiceName, stop_output: &Output) -> Result<(), FlowError> {
        if is_stopped(&stop_output.stdout_text()) {
            return Ok(());
        }
        let query =
            ScCommand::Query(name.clone()).render().map_err(|source| self.render_error(FlowStep::Services, source))?;
        let mut waited = Duration::ZERO;
        while waited < self.settings.stop_timeout {
            tokio::time::sleep(self.settings.stop_poll_interval).await;
            waited += self.settings.stop_poll_interval;
            let output = self.run(FlowStep::Services, &query).await?;
            let missing = parse_sc_failure(&output.stdout_text(), output.exit_code)
                .is_some_and(|failure| failure.code == ScErrorCode::ServiceDoesNotExist);
            if missing || is_stopped(&output.stdout_text()) {
                return Ok(());
            }
        }
        Err(FlowError::StopTimedOut { host: self.label().to_owned(), service: name.to_string(), after: waited })
    }

    /// Uploads the host files whose probed hash (`remote_sha256`) differs from the desired one. Their temporary
    /// files are verified with `certutil -hashfile` on the host (a native program: no PowerShell start), as few
    /// command lines as fit (one for a stage's files in practice), before they replace the targets.
    pub(crate) async fn upload_files(&self, files: &[(&HostFile, Option<Sha256Digest>)]) -> Result<(), FlowError> {
        tracing::Span::current().record("step", tracing::field::display(FlowStep::UploadFiles));
        let mut requests = Vec::new();
        for (file, remote_sha256) in files {
            let request = self.upload_request(file, *remote_sha256)?;
            if request.needs_sending() {
                requests.push(request);
            }
        }
        for batch in self.verify_batches(requests)? {
            let outcome = self.host.upload_batch(&batch).await.map_err(|source| self.batch_error(&batch, source))?;
            self.commands.fetch_add(outcome.verify_commands, Ordering::Relaxed);
            for placed in outcome.outcomes {
                self.count_upload(placed);
            }
        }
        Ok(())
    }

    /// The error of a failed batch, naming the file the transport names (else the batch's first).
    fn batch_error(&self, batch: &UploadBatch, source: TransportError) -> FlowError {
        let named = match &source {
            TransportError::Transfer { path, .. } => batch.requests.iter().find(|request| &request.remote_path == path),
            _ => None,
        };
        let path = named.or(batch.requests.first()).and_then(|request| WinPath::parse(&request.remote_path).ok());
        match path {
            Some(path) => FlowError::Upload {
                host: self.label().to_owned(),
                step: FlowStep::UploadFiles,
                path,
                source: Box::new(source),
            },
            None => self.transport_error(FlowStep::UploadFiles, source),
        }
    }

    /// The transfer of one host file, verified alone by `certutil -hashfile` of its temporary file (the one-at-a-time
    /// form a batch falls back to on hosts that place files one by one).
    fn upload_request(&self, file: &HostFile, remote_sha256: Option<Sha256Digest>) -> Result<UploadRequest, FlowError> {
        let source = match &file.content {
            HostFileContent::Payload { local_path, .. } => UploadSource::File(local_path.clone()),
            HostFileContent::Rendered(rendered) => UploadSource::Bytes(rendered.bytes().into()),
        };
        let staging = self.staging_of(&file.destination.to_sftp())?;
        let verify = FileHashes::new(&[staging])
            .map(|hashes| hashes.command().clone())
            .map_err(|source| self.render_error(FlowStep::UploadFiles, source))?;
        Ok(UploadRequest {
            source,
            remote_path: file.destination.to_sftp(),
            expected_sha256: file.sha256,
            remote_sha256,
            verify: Some(self.remote(FlowStep::UploadFiles, &verify.line)?),
        })
    }

    /// The temporary file an upload to `remote_path` (SFTP form) writes first.
    fn staging_of(&self, remote_path: &str) -> Result<WinPath, FlowError> {
        WinPath::parse(&staging_path(remote_path)).map_err(|source| {
            self.render_error(FlowStep::UploadFiles, wmco_windows_services::CommandError::ScriptPath { source })
        })
    }

    /// Splits `requests` into batches, in order, each verified by one command that fits in a command line.
    fn verify_batches(&self, requests: Vec<UploadRequest>) -> Result<Vec<UploadBatch>, FlowError> {
        let mut batches = Vec::new();
        let mut current: Vec<UploadRequest> = Vec::new();
        let mut stagings: Vec<WinPath> = Vec::new();
        let mut verify: Option<RenderedCommand> = None;
        for request in requests {
            let staging = self.staging_of(&request.remote_path)?;
            stagings.push(staging.clone());
            match FileHashes::new(&stagings) {
                Ok(hashes) => verify = Some(hashes.command().clone()),
                Err(wmco_windows_services::CommandError::TooLong { .. }) if !current.is_empty() => {
                    if let Some(full) = verify.take() {
                        batches.push(self.batch(std::mem::take(&mut current), full)?);
                    }
                    stagings = vec![staging];
                    let hashes = FileHashes::new(&stagings)
                        .map_err(|source| self.render_error(FlowStep::UploadFiles, source))?;
                    verify = Some(hashes.command().clone());
                }
                Err(source) => return Err(self.render_error(FlowStep::UploadFiles, source)),
            }
            current.push(request);
        }
        if let Some(last) = verify {
            batches.push(self.batch(current, last)?);
        }
        Ok(batches)
    }

    /// One batch of `requests` verified by `verify`.
    fn batch(&self, requests: Vec<UploadRequest>, verify: RenderedCommand) -> Result<UploadBatch, FlowError> {
        Ok(UploadBatch { requests, verify: self.remote(FlowStep::UploadFiles, &verify.line)? })
    }
}

/// Whether `step` can join a [`CommandChain`] with its neighbours: everything but the creation of directories (over
/// SFTP), the file replacement (uploads) and stops (each followed by the wait for STOPPED).
fn chains(step: &Step) -> bool {
    !matches!(step, Step::EnsureDirectories(_) | Step::ReplaceFiles(_) | Step::StopService(_))
}

/// The flow step a plan step belongs to.
fn flow_step(step: &Step) -> FlowStep {
    match step {
        Step::EnsureDirectories(_)
        | Step::RestrictDirectories { .. }
        | Step::SetMachineEnv(_)
        | Step::SetRegistryValue(_)
        | Step::RemoveFirewallRule(_)
        | Step::CreateFirewallRule(_)
        | Step::AddDefenderExclusion(_)
        | Step::RemoveDefenderExclusion(_)
        | Step::PruneFiles(_)
        | Step::ResetDirectory { .. } => FlowStep::Prerequisites,
        Step::ReplaceFiles(_) => FlowStep::UploadFiles,
        Step::SyncRootCertificates(_) => FlowStep::TrustCertificates,
        Step::StopService(_)
        | Step::DeleteService(_)
        | Step::CreateService(_)
        | Step::ReconfigureService(_)
        | Step::StartService(_) => FlowStep::Services,
    }
}

/// Whether an sc.exe failure code means the step's goal already holds.
fn tolerated(step: &Step, code: ScErrorCode) -> bool {
    match step {
        Step::StopService(_) => matches!(code, ScErrorCode::NotActive | ScErrorCode::ServiceDoesNotExist),
        Step::StartService(_) => code == ScErrorCode::AlreadyRunning,
        Step::DeleteService(_) => matches!(code, ScErrorCode::ServiceDoesNotExist | ScErrorCode::MarkedForDeletion),
        _ => false,
    }
}

fn is_stopped(stdout: &str) -> bool {
    parse_sc_query(stdout).is_ok_and(|status| status.state == ServiceState::Stopped)
}

fn first_line(output: &Output) -> String {
    let stderr = output.stderr_text();
    let stdout = output.stdout_text();
    let text = if stderr.trim().is_empty() { stdout } else { stderr };
    text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerated_codes_are_per_step() {
        let name = ServiceName::new("kubelet").unwrap();
        assert!(tolerated(&Step::StopService(name.clone()), ScErrorCode::NotActive));
        assert!(!tolerated(&Step::StopService(name.clone()), ScErrorCode::AccessDenied));
        assert!(tolerated(&Step::StartService(name.clone()), ScErrorCode::AlreadyRunning));
        assert!(!tolerated(&Step::StartService(name.clone()), ScErrorCode::ServiceDoesNotExist));
        assert!(tolerated(&Step::DeleteService(name), ScErrorCode::MarkedForDeletion));
    }

    fn service(name: &str) -> wmco_windows_services::ServiceSpec {
        wmco_windows_services::ServiceSpec {
            name: ServiceName::new(name).unwrap(),
            display_name: name.to_owned(),
            description: format!("OpenShift managed {name}"),
            command: wmco_windows_services::ServiceCommand::new(
                WinPath::parse(&format!(r"C:\k\{name}.exe")).unwrap(),
                ["--run-service"],
            ),
            start: wmco_windows_services::StartType::Auto,
            dependencies: vec![],
            recovery: wmco_windows_services::FailureActions::restart_after(300, &[]),
            failure_flag: true,
            extra_binaries: vec![],
            environment: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_run_of_steps_is_one_chain_that_goes_on_after_tolerated_failures_and_names_the_first_other_one() {
        let host = Arc::new(crate::tests::fake_host::FakeWindowsHost::new(
            r#"{"hostname":"WIN-A","fqdn":"win-a","ip":"203.0.113.7"}"#,
            vec![service("a")],
        ));
        let session = HostSession::new(host.clone());
        let a = ServiceName::new("a").unwrap();
        let created = [Step::CreateService(Box::new(service("a"))), Step::StartService(a.clone())];
        session.apply(&created, &BTreeMap::new(), &ObservedHost::default()).await.unwrap();
        assert_eq!(session.counters().commands, 1, "create, description, failure, failureflag and start in one line");
        assert_eq!(host.services(), [("a".to_owned(), true)].into());
        host.take_log();

        // Starting a running service fails with 1056, which the step tolerates: the rest follows in a second chain,
        // and the first failure that is not tolerated ends the run, naming its step.
        let missing = ServiceName::new("b").unwrap();
        let steps = [Step::StartService(a.clone()), Step::StartService(missing), Step::StartService(a)];
        let error = session.apply(&steps, &BTreeMap::new(), &ObservedHost::default()).await.unwrap_err();
        match &error {
            FlowError::Command { step, command, code, .. } => {
                assert_eq!((*step, command.as_str(), *code), (FlowStep::Services, "start service b", 1060));
            }
            other => panic!("expected a command error, got {other}"),
        }
        assert_eq!(session.counters().commands, 3);
        let runs = host.take_log();
        assert_eq!(runs.len(), 2, "the third step never ran: {runs:?}");
    }

    #[test]
    fn files_are_verified_in_as_few_commands_as_fit_in_a_line_in_order() {
        let host = crate::tests::fake_host::FakeWindowsHost::new(
            r#"{"hostname":"WIN-A","fqdn":"win-a","ip":"203.0.113.7"}"#,
            Vec::new(),
        );
        let session = HostSession::new(Arc::new(host));
        let request = |index: usize| UploadRequest {
            source: UploadSource::Bytes(vec![1].into()),
            remote_path: format!("C:/k/a-rather-long-directory-name/file-number-{index}.conf"),
            expected_sha256: Sha256Digest::of_bytes(&[1]),
            remote_sha256: None,
            verify: None,
        };
        let requests: Vec<UploadRequest> = (0..150).map(request).collect();
        let batches = session.verify_batches(requests.clone()).unwrap();
        assert!(batches.len() > 1 && batches.len() < 10, "{} batches", batches.len());
        let placed: Vec<UploadRequest> = batches.iter().flat_map(|batch| batch.requests.clone()).collect();
        assert_eq!(placed, requests, "every file once, in order");
        for batch in &batches {
            assert!(batch.verify.line.len() <= wmco_windows_services::MAX_COMMAND_LINE_CHARS);
        }
        assert_eq!(session.verify_batches(requests[..3].to_vec()).unwrap().len(), 1);
        assert!(session.verify_batches(Vec::new()).unwrap().is_empty());
    }
}
