//! `wmco-bench-fleet`: fleet figures for `cargo xtask bench-fleet`. For each fleet size of `--hosts` (a list,
//! e.g. `1,20,100`) and each `--concurrency` value (default 8, then 1 — the Go operator's one-at-a-time behaviour)
//! it starts a sandbox with that many hosts and the operator at that `--max-concurrent-configurations`, writes the
//! ConfigMap for every host, and prints: the time until all are Ready, per-host time to Ready (p50, p95), SSH round
//! trips (hosts' command logs and the operator's `/metrics`), PowerShell starts and bytes sent per host for the
//! first configure and for a no-op reconcile (the operator restarted, so every record is reconciled once more), the
//! operator's peak RSS (`VmHWM` in `/proc/<pid>/status`) and CPU time (user and system, `/proc/<pid>/stat`) at the
//! end of each pass, its CPU share while the Ready fleet is idle, and which payload it served (`--payload-dir`: the
//! real one of `cargo xtask payload build`, or by default the cached small synthetic one) with its size. The
//! summary compares each fleet's time to all Ready with the smallest fleet's at the same concurrency, and prints
//! the operator's resident memory per additional host.
//! After the first fleet's first concurrency's run, on the same Ready fleet, the upgrade runs of [`upgrade`] (one
//! per `--max-unavailable` budget, default 1 then 4, then one with a changed payload file; `--no-upgrade` skips
//! them).
//! Figures, not assertions: it fails only if the fleet never becomes Ready or is never upgraded, or if an upgrade
//! exceeds its unavailability budget (a product bug).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use upgrade::{UpgradeFigures, print_upgrade, run_upgrades};
use wmco_payload_manifest::{Manifest, Platform};
use wmco_sandbox::operator::metric_value as metric;
use wmco_sandbox::{Sandbox, SandboxOptions, is_synthetic_payload};

mod upgrade;

/// How often the records are read while waiting for Ready.
const POLL_INTERVAL: Duration = Duration::from_millis(250);
/// How long the hosts' command logs must stay unchanged before a reconcile counts as finished.
const QUIET_PERIOD: Duration = Duration::from_secs(8);
/// How long the operator's CPU time is sampled while the Ready fleet is idle (after the no-op reconcile).
const IDLE_WINDOW: Duration = Duration::from_secs(30);
/// The platform of the sandbox's Infrastructure (the harness fixtures say `None`): which payload files go to a host.
const SANDBOX_PLATFORM: Platform = Platform::None;
/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, 100 on every Linux architecture that matters
/// here; `getconf CLK_TCK` prints it).
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;
const MIB: f64 = 1024.0 * 1024.0;

/// Fleet benchmark of the wmco operator on simulated hosts.
#[derive(Debug, Parser)]
#[command(name = "wmco-bench-fleet", version)]
struct Cli {
    /// How many simulated hosts: one fleet size, or a comma-separated list run in turn (e.g. `1,20,100`).
    #[arg(long, value_delimiter = ',', default_value = "20", value_parser = clap::value_parser!(u8).range(1..=200))]
    hosts: Vec<u8>,
    /// The operator's `--max-concurrent-configurations` for each run (repeatable; default 8 then 1).
    #[arg(long = "concurrency", value_name = "N")]
    concurrency: Vec<u16>,
    /// The operator's `--max-unavailable` for each upgrade run, made after the first concurrency's run on its Ready
    /// fleet with the same payload (repeatable; default 1 then 4); a last run with one payload file changed uses the
    /// last budget.
    #[arg(long = "max-unavailable", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_unavailable: Vec<u32>,
    /// Skip the upgrade runs.
    #[arg(long)]
    no_upgrade: bool,
    /// How long one run may take to reach all Ready (or all upgraded), in seconds.
    #[arg(long, default_value_t = 3600)]
    timeout: u64,
    /// Keep each sandbox directory (operator logs, hosts' files) instead of removing it at the end.
    #[arg(long)]
    keep_directory: bool,
    /// The payload directory the operator serves, e.g. the real payload `cargo xtask payload build` prints (default:
    /// the cached small synthetic payload, served with `--allow-synthetic-payload`).
    #[arg(long, value_name = "DIR")]
    payload_dir: Option<PathBuf>,
}

/// One run's figures.
#[derive(Debug)]
struct RunFigures {
    concurrency: u16,
    hosts: usize,
    all_ready: Duration,
    per_host_ready: Vec<Duration>,
    first: CostPerHost,
    no_op: CostPerHost,
    peak_rss_kib: Option<u64>,
    /// The operator's CPU time at the end of the first configure (its first process, from its start).
    first_cpu: Option<CpuTime>,
    /// The restarted operator's CPU time at the end of the no-op reconcile (from its start).
    no_op_cpu: Option<CpuTime>,
    /// The restarted operator's CPU time during [`IDLE_WINDOW`] after the no-op reconcile.
    idle_cpu: Option<CpuTime>,
    /// The restarted operator's resident set at the end of the idle window, in KiB (`VmRSS`).
    idle_rss_kib: Option<u64>,
    /// This process's CPU time from the sandbox's start to the end of the first configure: the simulated hosts
    /// (SSH, SFTP, file hashes), the OVN stand-in and the polling, for comparison with the operator's.
    bench_cpu: Option<CpuTime>,
    payload: PayloadFacts,
}

/// The payload a run served.
#[derive(Debug, Clone)]
struct PayloadFacts {
    /// `real` or `synthetic` (the `SYNTHETIC` marker).
    kind: &'static str,
    dir: PathBuf,
    /// Files the manifest installs on the sandbox's platform, and their total size in this payload.
    files: usize,
    bytes: u64,
}

/// CPU time a process used, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CpuTime {
    user: Duration,
    system: Duration,
}

impl CpuTime {
    /// The CPU time used since `earlier` (of the same process).
    fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime { user: self.user.saturating_sub(earlier.user), system: self.system.saturating_sub(earlier.system) }
    }
}

/// SSH cost of one pass over the fleet, per host.
#[derive(Debug, Default)]
struct CostPerHost {
    /// Exec round trips in the hosts' command logs: mean, min, max.
    commands: (f64, usize, usize),
    /// `powershell` processes those commands started, per host (a command line may start several).
    powershell_starts: f64,
    /// `wmco_ssh_round_trips_total` / hosts (exec and SFTP, as the operator counts them).
    metric_round_trips: Option<f64>,
    /// `wmco_ssh_sent_bytes_total` / hosts.
    metric_bytes: Option<f64>,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let concurrencies = if cli.concurrency.is_empty() { vec![8, 1] } else { cli.concurrency.clone() };
        let budgets = if cli.max_unavailable.is_empty() { vec![1, 4] } else { cli.max_unavailable.clone() };
        let mut all = Vec::new();
        let mut upgrades = Vec::new();
        for (fleet_index, &hosts) in cli.hosts.iter().enumerate() {
            for (index, &concurrency) in concurrencies.iter().enumerate() {
                println!("== run: {hosts} hosts, --max-concurrent-configurations={concurrency}");
                let first = fleet_index == 0 && index == 0;
                let upgrade_budgets = (first && !cli.no_upgrade).then_some(budgets.as_slice());
                let (figures, upgraded) = run_once(&cli, hosts, concurrency, upgrade_budgets).await?;
                print_figures(&figures);
                all.push(figures);
                upgrades.extend(upgraded);
            }
        }
        println!("== summary");
        for figures in &all {
            print_figures(figures);
        }
        for line in scaling(&all) {
            println!("{line}");
        }
        for figures in &upgrades {
            print_upgrade(figures);
        }
        anyhow::Ok(())
    })
}

/// One sandbox: the first configure and the no-op reconcile at `concurrency`, then, with `upgrade_budgets`, the
/// upgrade runs.
async fn run_once(
    cli: &Cli,
    hosts: u8,
    concurrency: u16,
    upgrade_budgets: Option<&[u32]>,
) -> anyhow::Result<(RunFigures, Vec<UpgradeFigures>)> {
    let timeout = Duration::from_secs(cli.timeout);
    let bench_cpu_at_start = cpu_time(std::process::id());
    let options = SandboxOptions {
        hosts,
        keep_directory: cli.keep_directory,
        localhost_host: false,
        operator_args: vec![format!("--max-concurrent-configurations={concurrency}")],
        payload_dir: cli.payload_dir.clone(),
        ..SandboxOptions::default()
    };
    let sandbox = Sandbox::start(options).await.context("the sandbox did not start")?;
    let payload = payload_facts(sandbox.payload_dir())?;
    println!(
        "payload: {} ({}), {} files, {:.1} MiB per host",
        payload.kind,
        payload.dir.display(),
        payload.files,
        payload.bytes as f64 / MIB
    );
    let expected = sandbox.hosts().len();
    let started = Instant::now();
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let mut ready_at: BTreeMap<String, Duration> = BTreeMap::new();
    while ready_at.len() < expected {
        sandbox.check_operator()?;
        if started.elapsed() > timeout {
            sandbox.keep_directory();
            bail!(
                "{} of {expected} Ready after {timeout:?}; operator log {}",
                ready_at.len(),
                sandbox.operator_log_path().display()
            );
        }
        if let Ok(rows) = sandbox.instance_rows().await {
            for row in rows.iter().filter(|row| row.phase == "Ready" && row.node_ready == Some(true)) {
                ready_at.entry(row.instance.clone()).or_insert_with(|| started.elapsed());
            }
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    let all_ready = started.elapsed();
    let zero = BTreeMap::new();
    let first_commands = sandbox.wait_until_quiet(&zero, QUIET_PERIOD, timeout).await?;
    let first_metrics = sandbox.operator_metrics().await?;
    let peak_rss_kib = sandbox.operator_pid().and_then(peak_rss_kib);
    let first_cpu = sandbox.operator_pid().and_then(cpu_time);
    let bench_cpu = cpu_time(std::process::id()).zip(bench_cpu_at_start).map(|(now, start)| now.since(start));

    let first_powershell = powershell_starts(&sandbox, &zero).await?;
    sandbox.kill_operator();
    let baseline = sandbox.operator_command_counts().await?;
    sandbox.start_operator().await?;
    let no_op_commands = sandbox.wait_until_quiet(&baseline, QUIET_PERIOD, timeout).await?;
    let no_op_metrics = sandbox.operator_metrics().await?;
    let no_op_cpu = sandbox.operator_pid().and_then(cpu_time);
    tokio::time::sleep(IDLE_WINDOW).await;
    let idle_cpu = sandbox.operator_pid().and_then(cpu_time).zip(no_op_cpu).map(|(now, start)| now.since(start));
    let idle_rss_kib = sandbox.operator_pid().and_then(rss_kib);
    let no_op_powershell = powershell_starts(&sandbox, &baseline).await?;
    let upgrades = match upgrade_budgets {
        Some(budgets) => run_upgrades(&sandbox, concurrency, budgets, timeout).await?,
        None => Vec::new(),
    };

    let figures = RunFigures {
        concurrency,
        hosts: expected,
        all_ready,
        per_host_ready: ready_at.into_values().collect(),
        first: cost(&first_commands, &first_metrics, first_powershell, expected),
        no_op: cost(&no_op_commands, &no_op_metrics, no_op_powershell, expected),
        peak_rss_kib,
        first_cpu,
        no_op_cpu,
        idle_cpu,
        idle_rss_kib,
        bench_cpu,
        payload,
    };
    Ok((figures, upgrades))
}

/// `powershell` processes started by the operator's commands on all hosts after each host's first `skip`
/// commands (a host missing from `skip` from its first command).
async fn powershell_starts(sandbox: &Sandbox, skip: &BTreeMap<String, usize>) -> anyhow::Result<usize> {
    let mut starts = 0;
    for host in sandbox.hosts() {
        let commands = sandbox.operator_commands(&host.info.name).await?;
        let from = skip.get(&host.info.name).copied().unwrap_or(0);
        starts += commands.iter().skip(from).map(|command| powershell_in(&command.line)).sum::<usize>();
    }
    Ok(starts)
}

/// How many `powershell` processes one exec line starts: each `powershell` or `powershell.exe` word, wherever it
/// stands in a `&&` chain (case-insensitive, as Windows resolves program names).
fn powershell_in(line: &str) -> usize {
    line.split(|character: char| character.is_whitespace() || character == '&' || character == '"')
        .filter(|word| {
            let word = word.to_ascii_lowercase();
            word == "powershell" || word == "powershell.exe"
        })
        .count()
}

fn cost(commands: &BTreeMap<String, usize>, metrics: &str, powershell: usize, hosts: usize) -> CostPerHost {
    let counts: Vec<usize> = commands.values().copied().collect();
    let total: usize = counts.iter().sum();
    let per_host = |value: f64| value / hosts.max(1) as f64;
    CostPerHost {
        commands: (
            per_host(total as f64),
            counts.iter().copied().min().unwrap_or(0),
            counts.iter().copied().max().unwrap_or(0),
        ),
        powershell_starts: per_host(powershell as f64),
        metric_round_trips: metric(metrics, "wmco_ssh_round_trips_total").map(per_host),
        metric_bytes: metric(metrics, "wmco_ssh_sent_bytes_total").map(per_host),
    }
}

/// `VmHWM` (peak resident set) of a process, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

/// `VmRSS` (current resident set) of a process, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

/// A `kB` field of `/proc/<pid>/status`.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| line.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok())
}

/// Each larger fleet against the smallest at the same concurrency: its time to all Ready as a multiple of the
/// smallest fleet's, and the operator's idle resident memory per additional host.
fn scaling(all: &[RunFigures]) -> Vec<String> {
    let mut lines = Vec::new();
    for figures in all {
        let Some(smallest) = all
            .iter()
            .filter(|other| other.concurrency == figures.concurrency && other.hosts < figures.hosts)
            .min_by_key(|other| other.hosts)
        else {
            continue;
        };
        let ratio = figures.all_ready.as_secs_f64() / smallest.all_ready.as_secs_f64().max(f64::EPSILON);
        let memory = match (figures.idle_rss_kib, smallest.idle_rss_kib) {
            (Some(large), Some(small)) => {
                format!("{:.2} MiB", (large as f64 - small as f64) / 1024.0 / (figures.hosts - smallest.hosts) as f64)
            }
            _ => "unknown".to_owned(),
        };
        lines.push(format!(
            "scaling, concurrency {}: {} hosts Ready in {ratio:.2}x the time of {} (idle operator memory per \
             additional host {memory})",
            figures.concurrency, figures.hosts, smallest.hosts
        ));
    }
    lines
}

/// The payload's kind and the files (count, total bytes) the manifest installs on [`SANDBOX_PLATFORM`].
fn payload_facts(dir: &Path) -> anyhow::Result<PayloadFacts> {
    let manifest = Manifest::product()?;
    let mut files = 0;
    let mut bytes = 0;
    for entry in manifest.files_for(SANDBOX_PLATFORM) {
        let path = entry.file.path.under(dir);
        bytes += std::fs::metadata(&path).with_context(|| format!("payload file {}", path.display()))?.len();
        files += 1;
    }
    let kind = if is_synthetic_payload(dir) { "synthetic" } else { "real" };
    Ok(PayloadFacts { kind, dir: dir.to_path_buf(), files, bytes })
}

/// User and system CPU time of a process (all its threads), from `/proc/<pid>/stat`.
fn cpu_time(pid: u32) -> Option<CpuTime> {
    parse_cpu_time(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `utime` and `stime` (fields 14 and 15) of a `/proc/<pid>/stat` line; the command name (field 2) is in
/// parentheses and may hold spaces, so fields are counted after its closing parenthesis.
fn parse_cpu_time(stat: &str) -> Option<CpuTime> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |index: usize| -> Option<Duration> {
        let ticks: u64 = fields.get(index)?.parse().ok()?;
        Some(Duration::from_secs_f64(ticks as f64 / CLOCK_TICKS_PER_SECOND))
    };
    // After the name: field 3 (state) is index 0, so utime (14) is index 11 and stime (15) index 12.
    Some(CpuTime { user: ticks(11)?, system: ticks(12)? })
}

fn describe_cpu(cpu: Option<CpuTime>) -> String {
    cpu.map_or_else(
        || "unknown".to_owned(),
        |cpu| {
            format!(
                "{:.1} s (user {:.1} s, sys {:.1} s)",
                (cpu.user + cpu.system).as_secs_f64(),
                cpu.user.as_secs_f64(),
                cpu.system.as_secs_f64()
            )
        },
    )
}

/// Nearest-rank percentile of sorted durations.
fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (percent * sorted.len()).div_ceil(100).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn print_figures(figures: &RunFigures) {
    let mut per_host = figures.per_host_ready.clone();
    per_host.sort();
    println!(
        "concurrency {:>2}: all {} Ready in {:.1} s; per host (ConfigMap written -> Ready) p50 {:.1} s, p95 {:.1} s; \
         operator peak RSS {}; idle: RSS {}, CPU {} of a core",
        figures.concurrency,
        figures.hosts,
        figures.all_ready.as_secs_f64(),
        percentile(&per_host, 50).as_secs_f64(),
        percentile(&per_host, 95).as_secs_f64(),
        describe_kib(figures.peak_rss_kib),
        describe_kib(figures.idle_rss_kib),
        figures.idle_cpu.map_or_else(
            || "unknown".to_owned(),
            |cpu| format!("{:.2}%", (cpu.user + cpu.system).as_secs_f64() / IDLE_WINDOW.as_secs_f64() * 100.0)
        ),
    );
    println!(
        "    payload {} ({} files, {:.1} MiB per host); bench process (simulated hosts) CPU to the end of the first \
         configure {}",
        figures.payload.kind,
        figures.payload.files,
        figures.payload.bytes as f64 / MIB,
        describe_cpu(figures.bench_cpu),
    );
    for (pass, cost, cpu) in
        [("first configure", &figures.first, figures.first_cpu), ("no-op reconcile", &figures.no_op, figures.no_op_cpu)]
    {
        let (mean, min, max) = cost.commands;
        println!(
            "    {pass:<16} per host: {mean:.1} exec round trips (min {min}, max {max}), {:.1} PowerShell starts; \
             operator metrics: {} round trips, {} bytes sent; operator CPU {}",
            cost.powershell_starts,
            cost.metric_round_trips.map_or_else(|| "n/a".to_owned(), |value| format!("{value:.1}")),
            cost.metric_bytes.map_or_else(|| "n/a".to_owned(), describe_bytes),
            describe_cpu(cpu),
        );
    }
}

/// KiB in MiB, or `unknown`.
fn describe_kib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "unknown".to_owned(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0))
}

/// Bytes, with MiB beside them once there are many.
fn describe_bytes(bytes: f64) -> String {
    if bytes >= MIB { format!("{bytes:.0} ({:.1} MiB)", bytes / MIB) } else { format!("{bytes:.0}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let sorted: Vec<Duration> = (1..=20).map(Duration::from_secs).collect();
        assert_eq!(percentile(&sorted, 50), Duration::from_secs(10));
        assert_eq!(percentile(&sorted, 95), Duration::from_secs(19));
        assert_eq!(percentile(&sorted[..1], 95), Duration::from_secs(1));
        assert_eq!(percentile(&[], 50), Duration::ZERO);
    }

    #[test]
    fn metrics_are_read_by_exact_name() {
        let text = "# TYPE wmco_ssh_round_trips counter\nwmco_ssh_round_trips_total 42\n\
                    wmco_ssh_sent_bytes_total 1024\nwmco_ssh_sent_bytes_total_other 9\n";
        assert_eq!(metric(text, "wmco_ssh_round_trips_total"), Some(42.0));
        assert_eq!(metric(text, "wmco_ssh_sent_bytes_total"), Some(1024.0));
        assert_eq!(metric(text, "wmco_reconcile_errors_total"), None);
    }

    #[test]
    fn this_process_has_a_peak_rss() {
        assert!(peak_rss_kib(std::process::id()).is_some_and(|kib| kib > 0));
        assert!(rss_kib(std::process::id()).is_some_and(|kib| kib > 0));
        assert_eq!(status_kib(std::process::id(), "NoSuchField:"), None);
    }

    #[test]
    fn powershell_starts_are_counted_per_program_word() {
        assert_eq!(powershell_in("powershell -NoProfile -File C:\\k\\probe.ps1"), 1);
        assert_eq!(powershell_in("sc.exe stop a && echo ##wmco-done 0 && PowerShell.exe -Command \"x\""), 1);
        assert_eq!(powershell_in("powershell -c a&&powershell -c b"), 2);
        assert_eq!(powershell_in("sc.exe query kubelet && echo powershellish"), 0);
        assert_eq!(powershell_in("cmd /c \"powershell -c x\""), 1);
    }

    #[test]
    fn larger_fleets_are_compared_with_the_smallest_at_the_same_concurrency() {
        let run = |hosts: usize, concurrency: u16, ready_secs: u64, idle_mib: u64| RunFigures {
            concurrency,
            hosts,
            all_ready: Duration::from_secs(ready_secs),
            per_host_ready: Vec::new(),
            first: CostPerHost::default(),
            no_op: CostPerHost::default(),
            peak_rss_kib: None,
            first_cpu: None,
            no_op_cpu: None,
            idle_cpu: None,
            idle_rss_kib: Some(idle_mib * 1024),
            bench_cpu: None,
            payload: PayloadFacts { kind: "synthetic", dir: PathBuf::new(), files: 0, bytes: 0 },
        };
        let lines = scaling(&[run(1, 8, 10, 40), run(20, 8, 25, 59), run(100, 8, 60, 139), run(20, 1, 99, 50)]);
        assert_eq!(
            lines,
            [
                "scaling, concurrency 8: 20 hosts Ready in 2.50x the time of 1 (idle operator memory per additional \
                 host 1.00 MiB)",
                "scaling, concurrency 8: 100 hosts Ready in 6.00x the time of 1 (idle operator memory per additional \
                 host 1.00 MiB)",
            ]
        );
    }

    #[test]
    fn cpu_times_are_read_after_the_command_name() {
        let stat = "4242 (wmco run) S 1 4242 1 0 -1 4194560 900 0 0 0 1234 56 0 0 20 0 9 0 100 0 0";
        let cpu = parse_cpu_time(stat).unwrap();
        assert_eq!(cpu, CpuTime { user: Duration::from_millis(12_340), system: Duration::from_millis(560) });
        assert_eq!(parse_cpu_time("4242 (short"), None);
        assert!(cpu_time(std::process::id()).is_some());
        assert_eq!(describe_cpu(Some(cpu)), "12.9 s (user 12.3 s, sys 0.6 s)");
        let earlier = CpuTime { user: Duration::from_secs(2), system: Duration::from_secs(1) };
        assert_eq!(cpu.since(earlier), CpuTime { user: Duration::from_millis(10_340), system: Duration::ZERO });
    }

    #[test]
    fn many_bytes_are_also_shown_in_mib() {
        assert_eq!(describe_bytes(1024.0), "1024");
        assert_eq!(describe_bytes(3.0 * MIB), "3145728 (3.0 MiB)");
    }
}
