//! Timed stages: run a command as a named stage, print its wall time, and keep a summary for the end of the run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The workspace root (the parent of the `xtask` package directory).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}

/// The `cargo` executable that runs this xtask, so stages use the same toolchain.
pub fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(workspace_root());
    command
}

/// Records the wall time of each stage of a run and prints a summary. Stages run one after another, except those
/// recorded with [`StageClock::record_beside`], which ran beside the others: the total is the run's wall time, not
/// the stages' sum.
#[derive(Debug)]
pub struct StageClock {
    started: Instant,
    finished: Vec<Finished>,
}

#[derive(Debug)]
struct Finished {
    name: String,
    elapsed: Duration,
    beside: bool,
}

impl Default for StageClock {
    fn default() -> Self {
        Self { started: Instant::now(), finished: Vec::new() }
    }
}

impl StageClock {
    /// Runs `command` as the stage `name`, printing its start and wall time; fails if the command fails.
    pub fn run(&mut self, name: &str, mut command: Command) -> anyhow::Result<()> {
        println!("==> stage {name}: {}", describe(&command));
        let started = Instant::now();
        let status =
            command.status().with_context(|| format!("stage {name}: could not start {}", describe(&command)))?;
        let elapsed = started.elapsed();
        println!("==> stage {name} took {:.1}s", elapsed.as_secs_f64());
        self.push(name, elapsed, false);
        if !status.success() {
            bail!("stage {name} failed ({status}); the command was: {}", describe(&command));
        }
        Ok(())
    }

    /// Runs `work` as the stage `name`, printing its wall time; fails if it fails.
    pub fn time<T>(&mut self, name: &str, work: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
        println!("==> stage {name}");
        let started = Instant::now();
        let outcome = work().with_context(|| format!("stage {name} failed"));
        let elapsed = started.elapsed();
        println!("==> stage {name} took {:.1}s", elapsed.as_secs_f64());
        self.push(name, elapsed, false);
        outcome
    }

    /// Records a stage that ran beside the others (in the background) and took `elapsed`.
    pub fn record_beside(&mut self, name: &str, elapsed: Duration) {
        println!("==> stage {name} (beside the others) took {:.1}s", elapsed.as_secs_f64());
        self.push(name, elapsed, true);
    }

    fn push(&mut self, name: &str, elapsed: Duration, beside: bool) {
        self.finished.push(Finished { name: name.to_owned(), elapsed, beside });
    }

    /// Prints every finished stage with its wall time (those that ran beside the others marked), and the run's
    /// wall time as the total.
    pub fn print_summary(&self) {
        println!("==> stage times:");
        for stage in &self.finished {
            let mark = if stage.beside { "  (beside the others)" } else { "" };
            println!("    {:<28} {:>8.1}s{mark}", stage.name, stage.elapsed.as_secs_f64());
        }
        println!("    {:<28} {:>8.1}s", "total (wall time)", self.started.elapsed().as_secs_f64());
    }
}

/// The command line of `command`, for messages.
pub fn describe(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(command.get_args().map(|arg| arg.to_string_lossy().into_owned()));
    words.join(" ")
}
