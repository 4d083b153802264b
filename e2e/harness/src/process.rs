//! Child processes of the control plane: started with their output in a log file, stopped by PID (kill and
//! reap) when stopped explicitly or dropped, and a watchdog that cleans up if the harness process itself dies
//! without running its destructors (SIGKILL, abort, Ctrl-C of a test run).

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::Error;

/// How much of a log file's end an error message shows.
const LOG_TAIL_BYTES: u64 = 4000;

/// Reserves a free TCP port on 127.0.0.1 by binding port 0 and releasing it.
pub(crate) fn free_port() -> Result<u16, Error> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(Error::NoFreePort)?;
    let port = listener.local_addr().map_err(Error::NoFreePort)?.port();
    Ok(port)
}

/// One control-plane process: how to start it, and the running child if any.
#[derive(Debug)]
pub(crate) struct ManagedProcess {
    role: &'static str,
    program: PathBuf,
    args: Vec<OsString>,
    log: PathBuf,
    pid_file: PathBuf,
    child: Option<Child>,
}

impl ManagedProcess {
    /// Describes a process without starting it: `program` with `args`, output appended to
    /// `<log_dir>/<role>.log`, PID and program recorded in `<pid_dir>/<role>` for the watchdog while it runs.
    pub(crate) fn new(role: &'static str, program: &Path, args: Vec<OsString>, log_dir: &Path, pid_dir: &Path) -> Self {
        Self {
            role,
            program: program.to_path_buf(),
            args,
            log: log_dir.join(format!("{role}.log")),
            pid_file: pid_dir.join(role),
            child: None,
        }
    }

    /// Starts the process, stopping it first if it runs (a restart with the same arguments).
    pub(crate) fn start(&mut self) -> Result<(), Error> {
        self.stop();
        self.spawn()
    }

    fn spawn(&mut self) -> Result<(), Error> {
        let log = OpenOptions::new().create(true).append(true).open(&self.log).map_err(Error::io("open", &self.log))?;
        let log_for_stderr = log.try_clone().map_err(Error::io("open", &self.log))?;
        let child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_for_stderr)
            .spawn()
            .map_err(|source| Error::Spawn { process: self.role, program: self.program.clone(), source })?;
        // The watchdog compares this with /proc/<pid>/exe, which is always the resolved path.
        let resolved_program = std::fs::canonicalize(&self.program).unwrap_or_else(|_| self.program.clone());
        let record = format!("{} {}\n", child.id(), resolved_program.display());
        self.child = Some(child);
        std::fs::write(&self.pid_file, record).map_err(Error::io("write", &self.pid_file))
    }

    /// Kills the process by PID and reaps it. Does nothing if it is not running.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Killing fails only if the child already exited; reaping it is then all that is left to do.
            let _already_exited = child.kill();
            let _status = child.wait();
            let _missing = std::fs::remove_file(&self.pid_file);
        }
    }

    /// Fails with the exit status and the end of the log if the process was started and has exited since.
    pub(crate) fn check_running(&mut self) -> Result<(), Error> {
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        match child.try_wait() {
            Ok(Some(status)) => Err(Error::ProcessExited {
                process: self.role,
                status,
                log: self.log.clone(),
                log_tail: log_tail(&self.log),
            }),
            Ok(None) => Ok(()),
            Err(source) => Err(Error::Io { step: "check process", path: self.program.clone(), source }),
        }
    }
}

impl Drop for ManagedProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last few kilobytes of a log file, or a note saying it could not be read.
pub(crate) fn log_tail(path: &Path) -> String {
    let read = || -> std::io::Result<String> {
        let mut file = std::fs::File::open(path)?;
        let length = file.metadata()?.len();
        file.seek(SeekFrom::Start(length.saturating_sub(LOG_TAIL_BYTES)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    read().unwrap_or_else(|error| format!("(log unreadable: {error})"))
}

/// The watchdog's script (`$1` = the harness PID, `$2` = the state directory): wait until the harness process is
/// gone or a zombie, then kill every recorded process whose executable still matches its record (so a reused PID
/// is never hit) and remove the state directory.
const WATCHDOG_SCRIPT: &str = r#"
parent=$1
state=$2
alive() {
    [ -r "/proc/$parent/stat" ] || return 1
    status=$(sed 's/.*) //' "/proc/$parent/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$status" ] && [ "$status" != Z ] && [ "$status" != X ]
}
while alive; do sleep 1; done
for record in "$state"/pids/*; do
    [ -f "$record" ] || continue
    read -r pid program < "$record"
    if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$program" ]; then kill -9 "$pid" 2>/dev/null; fi
done
rm -rf "$state"
"#;

/// A `sh` process, in its own process group, that cleans up after the harness if the harness dies abruptly.
#[derive(Debug)]
pub(crate) struct Watchdog {
    child: Child,
}

impl Watchdog {
    /// Starts the watchdog of this process for the state directory `state_dir` (which holds `pids/`).
    pub(crate) fn start(state_dir: &Path) -> Result<Self, Error> {
        Self::start_for(std::process::id(), state_dir)
    }

    fn start_for(parent: u32, state_dir: &Path) -> Result<Self, Error> {
        let child = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG_SCRIPT)
            .arg("wmco-e2e-watchdog")
            .arg(parent.to_string())
            .arg(state_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|source| Error::Spawn { process: "watchdog", program: PathBuf::from("sh"), source })?;
        Ok(Self { child })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let _already_exited = self.child.kill();
        let _status = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls for up to 5 s until the process has exited, and returns the report.
    fn wait_for_exit(process: &mut ManagedProcess) -> Error {
        for _ in 0..250 {
            if let Err(error) = process.check_running() {
                return error;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("{} still runs after 5 s", process.role);
    }

    #[test]
    fn a_stopped_process_is_reaped_and_its_record_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut process =
            ManagedProcess::new("sleeper", Path::new("/bin/sleep"), vec!["30".into()], dir.path(), dir.path());
        process.check_running().unwrap();
        process.start().unwrap();
        let record = std::fs::read_to_string(dir.path().join("sleeper")).unwrap();
        let resolved = std::fs::canonicalize("/bin/sleep").unwrap();
        assert!(record.ends_with(&format!(" {}\n", resolved.display())), "{record}");
        process.check_running().unwrap();
        process.stop();
        assert!(!dir.path().join("sleeper").exists());
    }

    #[test]
    fn an_exited_process_reports_its_log_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut process = ManagedProcess::new(
            "talker",
            Path::new("/bin/sh"),
            vec!["-c".into(), "echo listening failed; exit 3".into()],
            dir.path(),
            dir.path(),
        );
        process.start().unwrap();
        let error = wait_for_exit(&mut process);
        let message = error.to_string();
        assert!(message.starts_with("talker exited (exit status: 3)"), "{message}");
        assert!(message.ends_with("listening failed\n"), "{message}");
    }

    #[test]
    fn the_watchdog_kills_recorded_processes_and_removes_the_state_once_the_parent_dies() {
        let state = tempfile::tempdir().unwrap().keep();
        std::fs::create_dir_all(state.join("pids")).unwrap();
        let mut managed =
            ManagedProcess::new("sleeper", Path::new("/bin/sleep"), vec!["60".into()], &state, &state.join("pids"));
        managed.start().unwrap();
        let mut parent = Command::new("/bin/sleep").arg("60").spawn().unwrap();
        let mut watchdog = Watchdog::start_for(parent.id(), &state).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(state.exists(), "the watchdog acted while the parent was alive");
        managed.check_running().unwrap();

        parent.kill().unwrap();
        let watchdog_status = watchdog.child.wait().unwrap();
        assert!(watchdog_status.success(), "{watchdog_status}");
        assert!(!state.exists(), "state directory left behind");
        let error = wait_for_exit(&mut managed).to_string();
        assert!(error.starts_with("sleeper exited (signal: 9 (SIGKILL))"), "{error}");
        let _ = parent.wait();
    }

    #[test]
    fn free_ports_are_nonzero() {
        assert_ne!(free_port().unwrap(), 0);
    }
}
