//! The upgrade runs of `wmco-bench-fleet`, on the Ready fleet of the first configure run: the operator restarted
//! with `--version-override` one minor higher and each `--max-unavailable` budget in turn (same payload: only the
//! version changes, so no file should move), then once more one minor higher with the last budget and a payload in
//! which one file's bytes differ (so exactly that file should move to every host). Each run is timed from the
//! restart until every record is Ready at the new version and every Windows Node carries it, schedulable and
//! unmarked; one Node watch gives each host's upgrade time (first marked or cordoned → unmarked, schedulable and
//! Ready at the new version) and the most Nodes unschedulable or marked at once, which must stay within the budget
//! (more is a product bug: the run fails loudly). SSH cost per host comes from the restarted operator's `/metrics`
//! (its counters start at zero) and the hosts' command logs.
//!
//! The changed-payload run needs `--payload-dir` pointing elsewhere, which the sandbox's own operator launch fixes,
//! so that run kills the sandbox's operator and starts the same `wmco run` (same identity, so it takes the Lease at
//! once) with a kubeconfig of its own for the operator's ServiceAccount.

use std::ffi::OsString;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use sha2::{Digest as _, Sha256};
use wmco_cluster_client::types::InstancePhase;
use wmco_e2e_harness::eventually_true;
use wmco_sandbox::disruption::{DisruptionWatch, NodeState};
use wmco_sandbox::operator::{
    MetricsAccess, OperatorLaunch, OperatorProcess, locate_operator_binary, metric_value as metric,
};
use wmco_sandbox::{OPERATOR_IDENTITY, OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, Sandbox, operator_payload_args};

use crate::{POLL_INTERVAL, percentile};

/// The payload file the changed-payload run alters (a service binary: its service is stopped before the file is
/// replaced).
const CHANGED_FILE: &str = "windows-exporter/windows_exporter.exe";
/// The payload's checksum list.
const CHECKSUM_FILE: &str = "sha256sum";
/// How long the operator may take to answer `/readyz` after a start.
const OPERATOR_READY_TIMEOUT: Duration = Duration::from_secs(180);
/// How long the Node watch may take to list, and to catch up with the API reads at the end of a run.
const WATCH_TIMEOUT: Duration = Duration::from_secs(60);
/// The lifetime of the token in the changed-payload operator's kubeconfig.
const TOKEN_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// One upgrade run's figures.
#[derive(Debug)]
pub struct UpgradeFigures {
    /// The version upgraded to.
    pub target: String,
    /// The operator's `--max-unavailable`.
    pub max_unavailable: u32,
    /// The changed payload file and its size, for the changed-payload run.
    pub changed_file: Option<(String, u64)>,
    /// How many hosts.
    pub hosts: usize,
    /// From the operator's restart until every node is upgraded.
    pub total: Duration,
    /// Per host: first marked or cordoned → unmarked, schedulable and Ready at the new version.
    pub per_host: Vec<Duration>,
    /// The most Windows Nodes unschedulable or marked at once.
    pub most_disrupted: usize,
    /// Exec round trips per host in the hosts' command logs during the run: mean, min, max.
    pub commands: (f64, usize, usize),
    /// `wmco_ssh_round_trips_total` of the restarted operator / hosts.
    pub metric_round_trips: Option<f64>,
    /// `wmco_ssh_sent_bytes_total` of the restarted operator / hosts.
    pub metric_bytes: Option<f64>,
}

/// Runs the upgrades on a Ready fleet whose operator runs with `--max-concurrent-configurations={concurrency}`:
/// one per budget with the same payload, then the changed-payload run with the last budget.
pub async fn run_upgrades(
    sandbox: &Sandbox,
    concurrency: u16,
    budgets: &[u32],
    timeout: Duration,
) -> anyhow::Result<Vec<UpgradeFigures>> {
    let mut version = installed_version(sandbox).await?;
    let mut figures = Vec::new();
    let mut operator = SandboxOperator(sandbox);
    for &budget in budgets {
        version = higher_version(&version)?;
        println!("== upgrade to {version}: --max-unavailable={budget}, same payload");
        let run =
            upgrade(sandbox, &mut operator, &UpgradePlan { target: &version, budget, concurrency }, timeout).await?;
        print_upgrade(&run);
        figures.push(run);
    }
    let Some(&budget) = budgets.last() else { return Ok(figures) };
    version = higher_version(&version)?;
    let changed = write_changed_payload(sandbox.payload_dir(), &sandbox.directory().join("payload-changed"))?;
    println!(
        "== upgrade to {version}: --max-unavailable={budget}, payload with {} changed ({} bytes)",
        changed.file, changed.bytes
    );
    sandbox.kill_operator();
    let mut operator = OwnOperator::new(sandbox, &changed.dir).await?;
    let mut run =
        upgrade(sandbox, &mut operator, &UpgradePlan { target: &version, budget, concurrency }, timeout).await?;
    run.changed_file = Some((changed.file.to_owned(), changed.bytes));
    print_upgrade(&run);
    figures.push(run);
    Ok(figures)
}

/// What one upgrade run restarts the operator with.
struct UpgradePlan<'a> {
    target: &'a str,
    budget: u32,
    concurrency: u16,
}

/// An operator the bench can restart with new arguments and read.
trait BenchOperator {
    /// (Re)starts it with these arguments after its base ones and waits for `/readyz`.
    async fn restart(&mut self, extra_args: &[String]) -> anyhow::Result<()>;
    /// Fails if it exited on its own.
    fn check(&mut self) -> anyhow::Result<()>;
    /// Its `/metrics` text.
    async fn metrics(&self) -> anyhow::Result<String>;
}

/// The sandbox's own operator process.
struct SandboxOperator<'a>(&'a Sandbox);

impl BenchOperator for SandboxOperator<'_> {
    async fn restart(&mut self, extra_args: &[String]) -> anyhow::Result<()> {
        Ok(self.0.restart_operator_with(extra_args).await?)
    }

    fn check(&mut self) -> anyhow::Result<()> {
        Ok(self.0.check_operator()?)
    }

    async fn metrics(&self) -> anyhow::Result<String> {
        Ok(self.0.operator_metrics().await?)
    }
}

/// `wmco run` started by the bench with another `--payload-dir` (killed when dropped).
struct OwnOperator {
    process: OperatorProcess,
    listen: SocketAddr,
    metrics: MetricsAccess,
}

impl OwnOperator {
    /// Prepares (does not start) an operator with the sandbox's settings and `payload_dir`.
    async fn new(sandbox: &Sandbox, payload_dir: &Path) -> anyhow::Result<OwnOperator> {
        let control_plane = sandbox.control_plane();
        let token = control_plane
            .service_account_token(OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, TOKEN_LIFETIME)
            .await
            .context("a token for the operator's ServiceAccount")?;
        let user = format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_SERVICE_ACCOUNT}");
        let kubeconfig = sandbox.directory().join("operator-payload-changed.kubeconfig");
        write_private_file(&kubeconfig, &control_plane.kubeconfig_for_token(&user, &token))?;
        let free_port = || {
            std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|listener| listener.local_addr())
                .context("a free port for the operator's listeners")
        };
        let listen = free_port()?;
        let metrics_endpoint = sandbox.metrics_endpoint_args(free_port()?);
        // `--allow-synthetic-payload` only when the changed copy is synthetic (it keeps the sandbox payload's marker).
        let mut base_args = vec![OsString::from("run")];
        base_args.extend(operator_payload_args(payload_dir));
        base_args.extend(metrics_endpoint.to_args());
        base_args.extend(
            [
                "--listen",
                &listen.to_string(),
                "--ssh-port",
                &sandbox.ssh_port().to_string(),
                "--ssh-identity",
                OPERATOR_IDENTITY,
            ]
            .map(OsString::from),
        );
        let launch = OperatorLaunch {
            binary: locate_operator_binary()?,
            base_args,
            kubeconfig,
            log: sandbox.directory().join("operator-payload-changed.log"),
            listen,
            metrics_listen: metrics_endpoint.listen,
            pod: None,
        };
        let metrics = MetricsAccess { address: metrics_endpoint.listen, ..sandbox.metrics_access() };
        Ok(OwnOperator { process: OperatorProcess::new(launch), listen, metrics })
    }
}

impl BenchOperator for OwnOperator {
    async fn restart(&mut self, extra_args: &[String]) -> anyhow::Result<()> {
        self.process.start_with(extra_args.iter().map(OsString::from).collect())?;
        let process = &mut self.process;
        wmco_sandbox::operator::wait_ready(self.listen, OPERATOR_READY_TIMEOUT, || process.check_running()).await?;
        Ok(())
    }

    fn check(&mut self) -> anyhow::Result<()> {
        Ok(self.process.check_running()?)
    }

    async fn metrics(&self) -> anyhow::Result<String> {
        Ok(wmco_sandbox::operator::metrics(&self.metrics).await?)
    }
}

/// Restarts `operator` at the plan's version and budget and measures until every node is upgraded.
async fn upgrade(
    sandbox: &Sandbox,
    operator: &mut impl BenchOperator,
    plan: &UpgradePlan<'_>,
    timeout: Duration,
) -> anyhow::Result<UpgradeFigures> {
    let watch = DisruptionWatch::start(sandbox.admin_client(), Some(plan.target));
    eventually_true("the Node watch to list", WATCH_TIMEOUT, || watch.lock().listed).await?;
    let baseline = sandbox.operator_command_counts().await?;
    let started = Instant::now();
    operator
        .restart(&[
            format!("--max-concurrent-configurations={}", plan.concurrency),
            format!("--version-override={}", plan.target),
            format!("--max-unavailable={}", plan.budget),
        ])
        .await?;
    loop {
        operator.check()?;
        check_budget(&watch, plan.budget)?;
        let waiting = not_upgraded(sandbox, plan.target).await?;
        if waiting.is_empty() {
            break;
        }
        if started.elapsed() > timeout {
            sandbox.keep_directory();
            bail!("not upgraded to {} after {timeout:?}: {}", plan.target, waiting.join("; "));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    let total = started.elapsed();
    let hosts = sandbox.hosts().len();
    eventually_true("the Node watch to see every node upgraded", WATCH_TIMEOUT, || watch.lock().done_at.len() >= hosts)
        .await?;
    check_budget(&watch, plan.budget)?;
    let (per_host, most_disrupted) = {
        let seen = watch.lock();
        ensure!(seen.errors.is_empty(), "the Node watch re-listed, so it may have missed states: {:?}", seen.errors);
        (seen.disruption_times(), seen.most_unavailable())
    };

    let counts = sandbox.operator_command_counts().await?;
    let new: Vec<usize> =
        counts.iter().map(|(host, count)| count.saturating_sub(baseline.get(host).copied().unwrap_or(0))).collect();
    let metrics = operator.metrics().await?;
    let per_host_value = |value: f64| value / hosts.max(1) as f64;
    Ok(UpgradeFigures {
        target: plan.target.to_owned(),
        max_unavailable: plan.budget,
        changed_file: None,
        hosts,
        total,
        per_host,
        most_disrupted,
        commands: (
            per_host_value(new.iter().sum::<usize>() as f64),
            new.iter().copied().min().unwrap_or(0),
            new.iter().copied().max().unwrap_or(0),
        ),
        metric_round_trips: metric(&metrics, "wmco_ssh_round_trips_total").map(per_host_value),
        metric_bytes: metric(&metrics, "wmco_ssh_sent_bytes_total").map(per_host_value),
    })
}

/// Fails loudly if more Windows Nodes than the budget were unschedulable or marked at once: a product bug.
fn check_budget(watch: &DisruptionWatch, budget: u32) -> anyhow::Result<()> {
    let seen = watch.lock();
    let most = seen.most_unavailable();
    if most > budget as usize {
        bail!(
            "PRODUCT BUG: {most} Windows nodes were unschedulable or upgrading at once with --max-unavailable={budget} \
             (after each change: {:?})",
            seen.history
        );
    }
    Ok(())
}

/// The version every record was configured at.
async fn installed_version(sandbox: &Sandbox) -> anyhow::Result<String> {
    let mut versions: Vec<String> = sandbox
        .windows_instances()
        .await?
        .into_iter()
        .filter_map(|instance| instance.status?.configured_version)
        .collect();
    versions.sort();
    versions.dedup();
    match versions.as_slice() {
        [version] => Ok(version.clone()),
        _ => bail!("the fleet is not at one configured version: {versions:?}"),
    }
}

/// The version with the minor incremented (`1.2.3` → `1.3.0`; pre-release and build metadata dropped).
fn higher_version(installed: &str) -> anyhow::Result<String> {
    let release = installed.split(['-', '+']).next().unwrap_or(installed);
    let parts: Vec<u64> =
        release.split('.').map(str::parse).collect::<Result<_, _>>().with_context(|| format!("version {installed}"))?;
    let [major, minor, _patch] = parts.as_slice() else { bail!("version {installed} is not major.minor.patch") };
    Ok(format!("{major}.{}.0", minor + 1))
}

/// What still keeps the fleet from being upgraded to `target` (empty when it is).
async fn not_upgraded(sandbox: &Sandbox, target: &str) -> anyhow::Result<Vec<String>> {
    let mut waiting = Vec::new();
    for node in sandbox.windows_nodes().await? {
        let state = NodeState::of(&node, Some(target));
        if !state.settled() {
            waiting.push(format!("node {}: {state:?}", node.metadata.name.unwrap_or_default()));
        }
    }
    for instance in sandbox.windows_instances().await? {
        let status = instance.status.unwrap_or_default();
        if status.phase != Some(InstancePhase::Ready) || status.configured_version.as_deref() != Some(target) {
            let name = instance.metadata.name.unwrap_or_default();
            waiting.push(format!("record {name}: phase {:?}, version {:?}", status.phase, status.configured_version));
        }
    }
    Ok(waiting)
}

/// A copy of a payload with one file's bytes changed.
#[derive(Debug)]
struct ChangedPayload {
    dir: PathBuf,
    file: &'static str,
    bytes: u64,
}

/// Copies the payload at `source` to `into` (which must not exist), inverts every byte of [`CHANGED_FILE`] and
/// puts its new SHA-256 in the checksum list, so the copy verifies and differs from `source` in that file only.
fn write_changed_payload(source: &Path, into: &Path) -> anyhow::Result<ChangedPayload> {
    copy_tree(source, into)?;
    let changed = into.join(CHANGED_FILE);
    let bytes: Vec<u8> = std::fs::read(&changed)
        .with_context(|| format!("read {}", changed.display()))?
        .iter()
        .map(|byte| !byte)
        .collect();
    std::fs::write(&changed, &bytes).with_context(|| format!("write {}", changed.display()))?;
    let checksums_path = into.join(CHECKSUM_FILE);
    let checksums =
        std::fs::read_to_string(&checksums_path).with_context(|| format!("read {}", checksums_path.display()))?;
    let digest = hex::encode(Sha256::digest(&bytes));
    let mut replaced = 0;
    let mut rewritten = String::new();
    for line in checksums.lines() {
        if line.split_whitespace().nth(1) == Some(CHANGED_FILE) {
            rewritten.push_str(&format!("{digest}  {CHANGED_FILE}\n"));
            replaced += 1;
        } else {
            rewritten.push_str(line);
            rewritten.push('\n');
        }
    }
    ensure!(replaced == 1, "{} lists {CHANGED_FILE} {replaced} times", checksums_path.display());
    std::fs::write(&checksums_path, rewritten).with_context(|| format!("write {}", checksums_path.display()))?;
    Ok(ChangedPayload { dir: into.to_path_buf(), file: CHANGED_FILE, bytes: bytes.len() as u64 })
}

/// Copies the directory tree `source` to `into`.
fn copy_tree(source: &Path, into: &Path) -> anyhow::Result<()> {
    std::fs::create_dir(into).with_context(|| format!("create {}", into.display()))?;
    for entry in std::fs::read_dir(source).with_context(|| format!("read directory {}", source.display()))? {
        let entry = entry.with_context(|| format!("read directory {}", source.display()))?;
        let target = into.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copy {} to {}", entry.path().display(), target.display()))?;
        }
    }
    Ok(())
}

/// Writes a file only its owner can read (it holds a token).
fn write_private_file(path: &Path, contents: &str) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("create {}", path.display()))?;
    file.write_all(contents.as_bytes()).with_context(|| format!("write {}", path.display()))
}

/// Prints one upgrade run's figures on two lines.
pub fn print_upgrade(figures: &UpgradeFigures) {
    let mut per_host = figures.per_host.clone();
    per_host.sort();
    let payload = match &figures.changed_file {
        Some((file, bytes)) => format!("payload with {file} changed ({bytes} bytes)"),
        None => "same payload".to_owned(),
    };
    println!(
        "upgrade to {} (max-unavailable {}, {payload}): all {} upgraded in {:.1} s; per host (marked -> Ready at \
         the new version, {} hosts seen) p50 {:.1} s, p95 {:.1} s; most nodes unschedulable or marked at once: {} \
         (budget {})",
        figures.target,
        figures.max_unavailable,
        figures.hosts,
        figures.total.as_secs_f64(),
        per_host.len(),
        percentile(&per_host, 50).as_secs_f64(),
        percentile(&per_host, 95).as_secs_f64(),
        figures.most_disrupted,
        figures.max_unavailable,
    );
    let (mean, min, max) = figures.commands;
    println!(
        "    upgrade          per host: {mean:.1} exec round trips (min {min}, max {max}); operator metrics: {} round \
         trips, {} bytes sent{}",
        figures.metric_round_trips.map_or_else(|| "n/a".to_owned(), |value| format!("{value:.1}")),
        figures.metric_bytes.map_or_else(|| "n/a".to_owned(), |value| format!("{value:.0}")),
        figures.changed_file.as_ref().map_or_else(String::new, |(_, bytes)| format!(" (the changed file: {bytes})")),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_version_is_one_minor_higher() {
        assert_eq!(higher_version("10.17.3").unwrap(), "10.18.0");
        assert_eq!(higher_version("0.1.0+abc").unwrap(), "0.2.0");
        assert_eq!(higher_version("0.2.0-rc.1").unwrap(), "0.3.0");
        assert!(higher_version("1.2").is_err());
    }

    #[test]
    fn the_changed_payload_differs_in_one_file_and_lists_its_new_hash() {
        let source = tempfile::tempdir().unwrap();
        std::fs::create_dir(source.path().join("windows-exporter")).unwrap();
        std::fs::write(source.path().join(CHANGED_FILE), [0x00, 0x0f, 0xff]).unwrap();
        std::fs::write(source.path().join("SYNTHETIC"), "marker").unwrap();
        let listed = format!(
            "{}  SYNTHETIC\n{}  {CHANGED_FILE}\n",
            hex::encode(Sha256::digest(b"marker")),
            hex::encode(Sha256::digest([0x00, 0x0f, 0xff]))
        );
        std::fs::write(source.path().join(CHECKSUM_FILE), &listed).unwrap();
        let out = tempfile::tempdir().unwrap();
        let into = out.path().join("changed");

        let changed = write_changed_payload(source.path(), &into).unwrap();

        assert_eq!((changed.dir.as_path(), changed.file, changed.bytes), (into.as_path(), CHANGED_FILE, 3));
        assert_eq!(std::fs::read(into.join(CHANGED_FILE)).unwrap(), [0xff, 0xf0, 0x00]);
        assert_eq!(std::fs::read_to_string(into.join("SYNTHETIC")).unwrap(), "marker");
        assert_eq!(
            std::fs::read_to_string(into.join(CHECKSUM_FILE)).unwrap(),
            format!(
                "{}  SYNTHETIC\n{}  {CHANGED_FILE}\n",
                hex::encode(Sha256::digest(b"marker")),
                hex::encode(Sha256::digest([0xff, 0xf0, 0x00]))
            )
        );
        assert_eq!(std::fs::read(source.path().join(CHANGED_FILE)).unwrap(), [0x00, 0x0f, 0xff]);
    }
}
