//! The test stage's jobs (one per test binary, one for the doc tests) run side by side, at most `workers` at a time.
//!
//! The e2e binaries spend most of their time waiting on simulated hosts, a control plane and the operator, so on two
//! cores several of them fit at once. Each job's stdout and stderr go to its own log file
//! (`<target>/test-output/<job>.log`); the whole log is printed in one block when the job ends, after cargo's
//! `Running …` line, so the output reads (and [`RunParser`] parses it) as a `cargo test` run's. Jobs start longest
//! first, by the durations of the last run kept in `${WMCO_CACHE}/test-durations.tsv`; a job never timed starts
//! before every timed one, the e2e binaries first. At the end a table gives each job's wall time, and a line how
//! busy the machine's cores were and its highest load average.

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{BufRead as _, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::cpu::CpuWatch;
use crate::repeat::{RunOutcome, RunParser};

/// One job of the pool.
#[derive(Debug)]
pub struct Job {
    /// A name that stays the same across builds (`wmco-sandbox tests/byoh.rs`); also the log file's name.
    pub name: String,
    /// The line printed before the job's output (cargo's `Running …`), if the command does not print its own.
    pub header: Option<String>,
    /// Whether an untimed job of this kind starts before other untimed ones (the e2e binaries).
    pub slow_kind: bool,
    /// What runs.
    pub command: Command,
}

/// How one job ended.
#[derive(Debug, Clone)]
pub struct JobResult {
    /// The job's name.
    pub name: String,
    /// Its wall time.
    pub elapsed: Duration,
    /// Its exit status, or `None` if it could not be started.
    pub status: Option<ExitStatus>,
}

/// What the pool did.
#[derive(Debug)]
pub struct PoolOutcome {
    /// Every job, in the order they ended.
    pub results: Vec<JobResult>,
    /// The tests parsed from the printed output.
    pub tests: RunOutcome,
}

impl PoolOutcome {
    /// Whether every job started and exited 0.
    pub fn success(&self) -> bool {
        self.results.iter().all(|result| result.status.is_some_and(|status| status.success()))
    }
}

/// Where the pool keeps its logs and the durations of the last run.
#[derive(Debug, Clone)]
pub struct PoolPaths {
    /// The job logs' directory.
    pub logs: PathBuf,
    /// The durations file (`name<TAB>seconds` per line).
    pub durations: PathBuf,
}

/// Runs `jobs` at most `workers` at a time, printing each finished job's output to `echo`, then the table.
///
/// # Errors
/// The log directory cannot be created. A job that cannot be started or fails is reported in the outcome instead.
pub fn run(
    mut jobs: Vec<Job>,
    workers: usize,
    paths: &PoolPaths,
    echo: &mut (dyn Write + Send),
) -> anyhow::Result<PoolOutcome> {
    std::fs::create_dir_all(&paths.logs).with_context(|| format!("cannot create {}", paths.logs.display()))?;
    let known = read_durations(&paths.durations);
    order_longest_first(&mut jobs, &known);
    let queue = Mutex::new(jobs.into_iter().collect::<VecDeque<_>>());
    let shared = Mutex::new((Vec::new(), RunParser::default(), echo));
    let watch = CpuWatch::start();
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| {
                while let Some(job) = queue.lock().map(|mut queue| queue.pop_front()).ok().flatten() {
                    let (result, log) = run_job(job, &paths.logs);
                    let Ok(mut guard) = shared.lock() else { return };
                    let (results, parser, echo) = &mut *guard;
                    print_block(&result, &log, parser, echo);
                    results.push(result);
                }
            });
        }
    });
    let usage = watch.stop();
    let (results, parser, echo) = shared.into_inner().map_err(|_| anyhow::anyhow!("a test worker panicked"))?;
    print_table(&results, workers, echo);
    let _ = writeln!(echo, "==> test cores: {usage}");
    write_durations(&paths.durations, &known, &results);
    Ok(PoolOutcome { results, tests: parser.finish() })
}

/// Untimed jobs first (slow kinds before the rest, then by name), then timed ones longest first.
fn order_longest_first(jobs: &mut [Job], known: &BTreeMap<String, f64>) {
    jobs.sort_by(|a, b| {
        let key = |job: &Job| (known.get(&job.name).copied(), !job.slow_kind);
        match (key(a), key(b)) {
            ((None, a_fast), (None, b_fast)) => a_fast.cmp(&b_fast).then_with(|| a.name.cmp(&b.name)),
            ((None, _), (Some(_), _)) => std::cmp::Ordering::Less,
            ((Some(_), _), (None, _)) => std::cmp::Ordering::Greater,
            ((Some(a_seconds), _), (Some(b_seconds), _)) => b_seconds.total_cmp(&a_seconds),
        }
    });
}

/// Runs one job with its output in its log file; returns how it ended and the log's path.
fn run_job(mut job: Job, logs: &Path) -> (JobResult, PathBuf) {
    let log = logs.join(format!("{}.log", file_name_of(&job.name)));
    let started = Instant::now();
    let status = File::create(&log).and_then(|file| {
        let mut header = file.try_clone()?;
        if let Some(line) = &job.header {
            writeln!(header, "     {line}")?;
        }
        job.command.stdout(file.try_clone()?).stderr(file);
        job.command.status()
    });
    let status = match status {
        Ok(status) => Some(status),
        Err(error) => {
            let _ = std::fs::write(&log, format!("could not start {:?}: {error}\n", job.command.get_program()));
            None
        }
    };
    (JobResult { name: job.name, elapsed: started.elapsed(), status }, log)
}

/// Prints a finished job's log as one block, feeding every line to the parser.
fn print_block(result: &JobResult, log: &Path, parser: &mut RunParser, echo: &mut (dyn Write + Send)) {
    if let Ok(file) = File::open(log) {
        for line in BufReader::new(file).split(b'\n').map_while(Result::ok) {
            let text = String::from_utf8_lossy(&line);
            let _ = writeln!(echo, "{text}");
            parser.feed(&text);
        }
    }
    let ended = match result.status {
        Some(status) if status.success() => "passed".to_owned(),
        Some(status) => format!("FAILED ({status})"),
        None => "could not be started".to_owned(),
    };
    let _ = writeln!(echo, "==> test job {} {ended} in {:.1}s", result.name, result.elapsed.as_secs_f64());
    parser.end_of_binary();
}

fn print_table(results: &[JobResult], workers: usize, echo: &mut (dyn Write + Send)) {
    let _ = writeln!(echo, "==> test jobs ({} jobs, {workers} at a time), longest first:", results.len());
    let mut sorted: Vec<&JobResult> = results.iter().collect();
    sorted.sort_by_key(|result| std::cmp::Reverse(result.elapsed));
    for result in sorted {
        let mark = if result.status.is_some_and(|status| status.success()) { "" } else { "  FAILED" };
        let _ = writeln!(echo, "    {:<56} {:>8.1}s{mark}", result.name, result.elapsed.as_secs_f64());
    }
}

/// A job name as a file name: every character but letters, digits, `-` and `_` becomes `_`.
fn file_name_of(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

fn read_durations(path: &Path) -> BTreeMap<String, f64> {
    let Ok(text) = std::fs::read_to_string(path) else { return BTreeMap::new() };
    text.lines()
        .filter_map(|line| line.rsplit_once('\t'))
        .filter_map(|(name, seconds)| Some((name.to_owned(), seconds.parse().ok()?)))
        .collect()
}

/// Keeps the durations of this run (and of jobs it did not run), written to a temporary file and renamed.
fn write_durations(path: &Path, known: &BTreeMap<String, f64>, results: &[JobResult]) {
    let mut all = known.clone();
    for result in results {
        all.insert(result.name.clone(), result.elapsed.as_secs_f64());
    }
    let text: String = all.iter().map(|(name, seconds)| format!("{name}\t{seconds:.1}\n")).collect();
    let partial = path.with_extension("tsv.partial");
    if std::fs::write(&partial, text).is_ok() {
        let _ = std::fs::rename(&partial, path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, slow_kind: bool, script: &str) -> Job {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        Job { name: name.to_owned(), header: Some(format!("Running {name} (/t/{name}-00ff)")), slow_kind, command }
    }

    #[test]
    fn untimed_slow_jobs_start_first_then_the_longest_timed_ones() {
        let mut jobs = vec![job("unit-a", false, ""), job("timed-short", false, ""), job("e2e-b", true, "")];
        jobs.push(job("timed-long", true, ""));
        let known = BTreeMap::from([("timed-short".to_owned(), 3.0), ("timed-long".to_owned(), 90.0)]);
        order_longest_first(&mut jobs, &known);
        let names: Vec<&str> = jobs.iter().map(|job| job.name.as_str()).collect();
        assert_eq!(names, ["e2e-b", "unit-a", "timed-long", "timed-short"]);
    }

    #[test]
    fn every_job_runs_its_output_is_printed_in_one_block_and_a_failure_is_reported() -> anyhow::Result<()> {
        let scratch = tempfile::tempdir()?;
        let paths = PoolPaths { logs: scratch.path().join("logs"), durations: scratch.path().join("d.tsv") };
        let passing = "echo 'test a ... ok'; sleep 0.2; echo 'test result: ok. 1 passed; 0 failed'";
        let failing = "echo 'test b ... FAILED' >&2; echo 'test result: FAILED. 0 passed; 1 failed'; exit 101";
        let crashing = "echo 'test c ... ok'; kill -9 $$";
        let jobs = vec![job("one", true, passing), job("two", false, failing), job("three", false, crashing)];
        let mut printed = Vec::new();
        let outcome = run(jobs, 2, &paths, &mut printed)?;
        let printed = String::from_utf8(printed)?;
        assert!(!outcome.success());
        assert_eq!(outcome.results.len(), 3);
        let block = printed.find("Running one (/t/one-00ff)").context("one's header")?;
        assert!(printed[block..].starts_with("Running one (/t/one-00ff)\ntest a ... ok\n"), "{printed}");
        assert_eq!(outcome.tests.crashed, ["three (three)"]);
        assert_eq!(outcome.tests.tests.len(), 4, "{:?}", outcome.tests.tests);
        let durations = std::fs::read_to_string(&paths.durations)?;
        assert_eq!(durations.lines().count(), 3, "{durations}");
        Ok(())
    }
}
