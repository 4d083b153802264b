//! Builds that run beside the test stages: commands run one after another on a thread of their own, each with its
//! output in a log file, so a cold machine compiles Go (the control plane, the payload, the bundle validator) while
//! cargo compiles the workspace, and module downloads overlap compiling. Joining prints each log in one block and
//! gives each command's wall time for the stage table. Each command runs in a process group of its own: a run that
//! fails before joining (dropping [`Background`]) stops the running command and its children, and starts no other.

use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::stages::{StageClock, describe};

/// One command of the chain and the stage it is recorded as.
#[derive(Debug)]
pub struct Step {
    /// The stage's name.
    pub name: String,
    /// What runs.
    pub command: Command,
}

/// How one step ended.
#[derive(Debug)]
struct StepResult {
    name: String,
    described: String,
    elapsed: Duration,
    status: std::io::Result<ExitStatus>,
    log: PathBuf,
}

/// A chain of steps running on its own thread.
#[derive(Debug)]
pub struct Background {
    thread: Option<JoinHandle<Vec<StepResult>>>,
    running: Arc<Running>,
}

/// The running step's process group, and whether the chain was called off.
#[derive(Debug, Default)]
struct Running {
    group: AtomicU32,
    cancelled: AtomicBool,
}

impl Background {
    /// Starts `steps` one after another on a thread, their logs in `logs` (created here). A failed step does not
    /// stop the ones after it: each is reported on its own when joined.
    ///
    /// # Errors
    /// The log directory cannot be created.
    pub fn start(steps: Vec<Step>, logs: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(logs).with_context(|| format!("cannot create {}", logs.display()))?;
        let logs = logs.to_path_buf();
        for step in &steps {
            println!("==> stage {} started beside the others: {}", step.name, describe(&step.command));
        }
        let running = Arc::new(Running::default());
        let shared = Arc::clone(&running);
        let thread = std::thread::spawn(move || {
            steps
                .into_iter()
                .take_while(|_| !shared.cancelled.load(Ordering::SeqCst))
                .map(|step| run_step(step, &logs, &shared))
                .collect()
        });
        Ok(Self { thread: Some(thread), running })
    }

    /// Waits for every step (the wait is the stage `wait for background builds`), prints each log, records each
    /// step's time in `clock`, and fails naming every step that failed.
    ///
    /// # Errors
    /// A step could not be started or failed, or the thread panicked.
    pub fn join(mut self, clock: &mut StageClock) -> anyhow::Result<()> {
        let thread = self.thread.take().context("the background builds were already joined")?;
        let results =
            clock.time("wait for background builds", || thread.join().map_err(|_| anyhow::anyhow!("panicked")))?;
        let mut failed = Vec::new();
        for result in results {
            println!("==> output of {} ({}):", result.name, result.described);
            if let Ok(text) = std::fs::read_to_string(&result.log) {
                print!("{text}");
            }
            clock.record_beside(&result.name, result.elapsed);
            match result.status {
                Ok(status) if status.success() => {}
                Ok(status) => failed.push(format!("{} ({status}; log {})", result.name, result.log.display())),
                Err(error) => failed.push(format!("{} could not start: {error}", result.name)),
            }
        }
        if !failed.is_empty() {
            bail!("background builds failed: {}", failed.join(", "));
        }
        Ok(())
    }
}

impl Drop for Background {
    /// Not joined (the run failed first): no further step starts, and the running one's process group is stopped.
    fn drop(&mut self) {
        if self.thread.is_none() {
            return;
        }
        self.running.cancelled.store(true, Ordering::SeqCst);
        let group = self.running.group.load(Ordering::SeqCst);
        if group != 0 {
            println!("==> stopping the background builds (process group {group})");
            let _ = Command::new("kill").args(["-TERM", "--", &format!("-{group}")]).status();
        }
    }
}

fn run_step(mut step: Step, logs: &Path, running: &Running) -> StepResult {
    let log = logs.join(format!("{}.log", step.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")));
    let described = describe(&step.command);
    let started = Instant::now();
    let status = File::create(&log).and_then(|file| {
        step.command.stdout(file.try_clone()?).stderr(file).process_group(0);
        let mut child = step.command.spawn()?;
        running.group.store(child.id(), Ordering::SeqCst);
        let status = child.wait();
        running.group.store(0, Ordering::SeqCst);
        status
    });
    StepResult { name: step.name, described, elapsed: started.elapsed(), status, log }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, script: &str) -> Step {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        Step { name: name.to_owned(), command }
    }

    #[test]
    fn every_step_runs_and_a_failed_one_is_named() -> anyhow::Result<()> {
        let scratch = tempfile::tempdir()?;
        let marker = scratch.path().join("second-ran");
        let steps = vec![step("first", "echo one; exit 3"), step("second", &format!("touch {}", marker.display()))];
        let mut clock = StageClock::default();
        let error = Background::start(steps, scratch.path())?.join(&mut clock).unwrap_err();
        assert!(marker.exists(), "a failed step stops nothing after it");
        assert!(error.to_string().contains("first (exit status: 3"), "{error}");
        assert_eq!(std::fs::read_to_string(scratch.path().join("first.log"))?, "one\n");
        Ok(())
    }

    #[test]
    fn dropping_the_chain_stops_the_running_step_and_starts_no_other() -> anyhow::Result<()> {
        let scratch = tempfile::tempdir()?;
        let late = scratch.path().join("late");
        let pid_file = scratch.path().join("pid");
        let long = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let steps = vec![step("long", &long), step("after", &format!("touch {}", late.display()))];
        let background = Background::start(steps, scratch.path())?;
        let pid = (0..200)
            .find_map(|_| {
                let written = std::fs::read_to_string(&pid_file).ok().filter(|pid| pid.ends_with('\n'));
                if written.is_none() {
                    std::thread::sleep(Duration::from_millis(50));
                }
                written
            })
            .context("the step never wrote its child's pid")?;
        drop(background);
        std::thread::sleep(Duration::from_millis(500));
        // Gone, or a zombie nobody has reaped yet: either way no longer running.
        let state = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        assert!(state.is_empty() || state.contains(") Z "), "the step's child still runs: {state}");
        assert!(!late.exists(), "no step starts after the drop");
        Ok(())
    }
}
