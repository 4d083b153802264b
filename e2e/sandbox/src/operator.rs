//! The operator as its own process — the `wmco` binary running `wmco run` with a kubeconfig holding its
//! ServiceAccount's token, or its image run as a pod ([`crate::pod`]) — stdout and stderr appended to one log
//! file, its HTTP listener (`/readyz`, `/metrics`) on a free loopback port. [`OperatorProcess::kill`] sends SIGKILL
//! (a crash, as far as the cluster and the hosts can tell); dropping the handle does the same. A small `sh`
//! watchdog kills the operator (or removes its container) if the process owning the handle dies without running
//! destructors.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::SandboxError;
use crate::pod::PodRun;

/// The environment variable naming the `wmco` binary.
pub const WMCO_BIN_ENV: &str = "WMCO_BIN";
/// How many log lines errors quote.
const TAIL_LINES: usize = 40;
/// Pause between `/readyz` probes.
const READY_PROBE_INTERVAL: Duration = Duration::from_millis(200);

/// Finds the `wmco` binary: `$WMCO_BIN`, else `wmco` next to the running executable or one directory up (a test
/// binary runs from `target/<profile>/deps/`, xtask from `target/<profile>/`).
///
/// # Errors
/// [`SandboxError::OperatorBinaryMissing`] naming every path looked at.
pub fn locate_operator_binary() -> Result<PathBuf, SandboxError> {
    if let Some(path) = std::env::var_os(WMCO_BIN_ENV).filter(|value| !value.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() { Ok(path) } else { Err(SandboxError::OperatorBinaryMissing { tried: vec![path] }) };
    }
    let mut tried = Vec::new();
    if let Ok(executable) = std::env::current_exe() {
        for directory in executable.ancestors().skip(1).take(2) {
            let candidate = directory.join("wmco");
            if candidate.is_file() {
                return Ok(candidate);
            }
            tried.push(candidate);
        }
    }
    Err(SandboxError::OperatorBinaryMissing { tried })
}

/// How to run the operator.
#[derive(Debug, Clone)]
pub struct OperatorLaunch {
    /// The `wmco` binary.
    pub binary: PathBuf,
    /// The arguments after `wmco` (`run --payload-dir ...`), without the extra arguments.
    pub base_args: Vec<OsString>,
    /// The kubeconfig file the operator uses (`KUBECONFIG`); a pod does not use it (it has in-cluster
    /// configuration) but the secret scan reads the token from it.
    pub kubeconfig: PathBuf,
    /// The log file (appended to; every start writes a separator line).
    pub log: PathBuf,
    /// The address of its HTTP listener (in `base_args` as `--listen`, or in a pod's environment).
    pub listen: SocketAddr,
    /// Run the operator from its image as a pod would run (`base_args` are then the Deployment's), with this
    /// environment after the Deployment's; `None` runs `binary` as a process.
    pub pod: Option<(PodRun, Vec<(String, String)>)>,
}

/// The operator process (or its absence after [`OperatorProcess::kill`]).
#[derive(Debug)]
pub struct OperatorProcess {
    launch: OperatorLaunch,
    extra_args: Vec<OsString>,
    child: Option<Child>,
    watchdog: Option<Child>,
    starts: u32,
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

impl OperatorProcess {
    /// A handle that has not started the process yet.
    pub fn new(launch: OperatorLaunch) -> OperatorProcess {
        OperatorProcess { launch, extra_args: Vec::new(), child: None, watchdog: None, starts: 0 }
    }

    /// How it is launched.
    pub fn launch(&self) -> &OperatorLaunch {
        &self.launch
    }

    /// The extra arguments of the current (or next) start.
    pub fn extra_args(&self) -> &[OsString] {
        &self.extra_args
    }

    /// How many times the process was started.
    pub fn starts(&self) -> u32 {
        self.starts
    }

    /// The process ID, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Starts the process with the base arguments plus `extra_args` (killing a running one first).
    ///
    /// # Errors
    /// [`SandboxError::OperatorSpawn`] or [`SandboxError::Io`] for the log file.
    pub fn start_with(&mut self, extra_args: Vec<OsString>) -> Result<(), SandboxError> {
        self.kill();
        self.extra_args = extra_args;
        let log_path = &self.launch.log;
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(SandboxError::io("open the operator log", log_path))?;
        let args: Vec<OsString> = self.launch.base_args.iter().chain(&self.extra_args).cloned().collect();
        self.starts += 1;
        use std::io::Write as _;
        writeln!(
            log,
            "=== wmco-sandbox: start #{} of {} {}",
            self.starts,
            self.launch.binary.display(),
            args.iter().map(|arg| arg.to_string_lossy()).collect::<Vec<_>>().join(" ")
        )
        .map_err(SandboxError::io("write the operator log", log_path))?;
        let stderr = log.try_clone().map_err(SandboxError::io("open the operator log", log_path))?;
        let spawn_error = |source| SandboxError::OperatorSpawn { binary: self.launch.binary.clone(), source };
        let mut command = match &self.launch.pod {
            Some((pod, env)) => pod.run_command(&args, env)?,
            None => {
                let mut command = Command::new(&self.launch.binary);
                command
                    .args(&args)
                    .env("KUBECONFIG", &self.launch.kubeconfig)
                    // Plain text in the log file: no terminal escape codes.
                    .env("NO_COLOR", "1");
                command
            }
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            // Its own process group: a Ctrl-C in the terminal reaches the sandbox, which then stops it.
            .process_group(0)
            .spawn()
            .map_err(spawn_error)?;
        self.watchdog = match &self.launch.pod {
            Some((pod, _)) => spawn_pod_watchdog(pod).ok(),
            None => spawn_watchdog(child.id(), &self.launch.binary).ok(),
        };
        self.child = Some(child);
        Ok(())
    }

    /// Starts the process again with the extra arguments of the last start.
    ///
    /// # Errors
    /// As [`OperatorProcess::start_with`].
    pub fn start(&mut self) -> Result<(), SandboxError> {
        let extra_args = self.extra_args.clone();
        self.start_with(extra_args)
    }

    /// Kills the process with SIGKILL (a pod's container with it) and reaps it (nothing happens if it is not
    /// running).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Some((pod, _)) = &self.launch.pod {
                pod.remove();
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
    }

    /// Fails if the process is not running, with the end of its log if it exited.
    ///
    /// # Errors
    /// [`SandboxError::OperatorStopped`] or [`SandboxError::OperatorExited`].
    pub fn check_running(&mut self) -> Result<(), SandboxError> {
        let Some(child) = self.child.as_mut() else { return Err(SandboxError::OperatorStopped) };
        match child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                self.child = None;
                Err(SandboxError::OperatorExited {
                    status: status.to_string(),
                    log: self.launch.log.clone(),
                    tail: log_tail(&self.launch.log),
                })
            }
            Err(error) => Err(SandboxError::OperatorExited {
                status: format!("unknown: {error}"),
                log: self.launch.log.clone(),
                tail: log_tail(&self.launch.log),
            }),
        }
    }
}

/// Waits until the operator at `listen` answers `/readyz` with 200, checking with `check_running` that it still
/// runs between probes.
///
/// # Errors
/// What `check_running` returns, or [`SandboxError::OperatorHttp`] after `timeout`.
pub async fn wait_ready(
    listen: SocketAddr,
    timeout: Duration,
    mut check_running: impl FnMut() -> Result<(), SandboxError>,
) -> Result<(), SandboxError> {
    let started = Instant::now();
    loop {
        check_running()?;
        let last_problem = match http_get(listen, "/readyz").await {
            Ok((200, _)) => return Ok(()),
            Ok((status, body)) => format!("status {status}: {body}"),
            Err(error) => error.to_string(),
        };
        if started.elapsed() > timeout {
            return Err(SandboxError::OperatorHttp {
                address: listen,
                path: "/readyz",
                detail: format!("not ready after {timeout:?}: {last_problem}"),
            });
        }
        tokio::time::sleep(READY_PROBE_INTERVAL).await;
    }
}

/// The operator's `/metrics` text (OpenMetrics).
///
/// # Errors
/// [`SandboxError::OperatorHttp`] if it does not answer 200.
pub async fn metrics(listen: SocketAddr) -> Result<String, SandboxError> {
    match http_get(listen, "/metrics").await {
        Ok((200, body)) => Ok(body),
        Ok((status, body)) => Err(SandboxError::OperatorHttp {
            address: listen,
            path: "/metrics",
            detail: format!("status {status}: {body}"),
        }),
        Err(error) => Err(SandboxError::OperatorHttp { address: listen, path: "/metrics", detail: error.to_string() }),
    }
}

/// The value of an unlabelled sample `name` (for example `wmco_ssh_bytes_sent_total`) in metrics text.
///
/// ```
/// let text = "# TYPE wmco_ssh_round_trips counter\nwmco_ssh_round_trips_total 42\n";
/// assert_eq!(wmco_sandbox::operator::metric_value(text, "wmco_ssh_round_trips_total"), Some(42.0));
/// assert_eq!(wmco_sandbox::operator::metric_value(text, "wmco_ssh_round_trips"), None);
/// ```
pub fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// One HTTP/1.0 GET (the server closes the connection after the answer): status code and body.
async fn http_get(address: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes()).await?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no complete answer within 10 s"))??;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not HTTP: {head:?}")))?;
    Ok((status, body.to_owned()))
}

/// The last lines of a log file (or why it cannot be read).
pub fn log_tail(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(TAIL_LINES);
            lines[start..].iter().map(|line| format!("    {line}")).collect::<Vec<_>>().join("\n")
        }
        Err(error) => format!("    (cannot read {}: {error})", path.display()),
    }
}

/// A `sh` loop (own process group) that SIGKILLs `child` once this process is gone, if `child` still runs
/// `binary` (a reused PID is never hit).
fn spawn_watchdog(child: u32, binary: &Path) -> std::io::Result<Child> {
    let binary = std::fs::canonicalize(binary)?;
    let script = r#"while kill -0 "$1" 2>/dev/null; do sleep 1; done
case "$(readlink "/proc/$2/exe" 2>/dev/null)" in "$3"*) kill -9 "$2" ;; esac"#;
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("wmco-sandbox-watchdog")
        .arg(std::process::id().to_string())
        .arg(child.to_string())
        .arg(binary)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}

/// A `sh` loop (own process group) that kills and removes `pod`'s container once this process is gone.
fn spawn_pod_watchdog(pod: &PodRun) -> std::io::Result<Child> {
    let script = r#"while kill -0 "$1" 2>/dev/null; do sleep 1; done
runc --root "$2" delete --force "$3" >/dev/null 2>&1"#;
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("wmco-sandbox-pod-watchdog")
        .arg(std::process::id().to_string())
        .arg(pod.runc_root())
        .arg(&pod.id)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines_indented() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("operator.log");
        let text: String = (1..=50).map(|line| format!("line {line}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let tail = log_tail(&path);
        let lines: Vec<&str> = tail.lines().collect();
        assert_eq!(lines.len(), TAIL_LINES);
        assert_eq!((lines[0], lines[TAIL_LINES - 1]), ("    line 11", "    line 50"));
    }

    #[test]
    fn a_missing_binary_error_says_how_to_get_one_and_where_it_looked() {
        let error = SandboxError::OperatorBinaryMissing {
            tried: vec![PathBuf::from("/t/debug/deps/wmco"), PathBuf::from("/t/debug/wmco")],
        };
        assert_eq!(
            error.to_string(),
            "the wmco binary was not found: set WMCO_BIN to its path, or build it with `cargo build -p wmco` \
             (looked for /t/debug/deps/wmco, /t/debug/wmco)"
        );
    }

    #[tokio::test]
    async fn http_get_reads_status_and_body_of_a_close_delimited_answer() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 256];
            let read = socket.read(&mut request).await.unwrap();
            assert!(String::from_utf8_lossy(&request[..read]).starts_with("GET /metrics HTTP/1.0\r\n"));
            socket.write_all(b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nwmco_up 1\n").await.unwrap();
        });
        assert_eq!(metrics(address).await.unwrap(), "wmco_up 1\n");
        server.await.unwrap();
    }
}
