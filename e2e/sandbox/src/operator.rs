//! The operator as its own process — the `wmco` binary running `wmco run` with a kubeconfig holding its
//! ServiceAccount's token, or its image run as a pod ([`crate::pod`]) — stdout and stderr appended to one log
//! file, its HTTP listener (`/readyz`) and its HTTPS metrics endpoint (`/metrics`, bearer token, [`metrics`]) on
//! free loopback ports. [`OperatorProcess::kill`] sends SIGKILL
//! (a crash, as far as the cluster and the hosts can tell); dropping the handle does the same. A small `sh`
//! watchdog kills the operator (or removes its container) if the process owning the handle dies without running
//! destructors.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

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
    /// The address of its HTTPS metrics endpoint (in `base_args` as `--metrics-listen`, or in a pod's
    /// environment).
    pub metrics_listen: SocketAddr,
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
                    .env("NO_COLOR", "1")
                    // As the Deployment sets it (manifests/base/deployment.yaml), so fleet figures are the same.
                    .env("MALLOC_ARENA_MAX", "2");
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

/// Where the operator serves `/metrics` and with which certificate: the `wmco run` flags of the metrics endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsEndpointArgs {
    /// `--metrics-listen`.
    pub listen: SocketAddr,
    /// `--metrics-tls-cert`.
    pub certificate: PathBuf,
    /// `--metrics-tls-key`.
    pub key: PathBuf,
}

impl MetricsEndpointArgs {
    /// The flags.
    ///
    /// ```
    /// let args = wmco_sandbox::operator::MetricsEndpointArgs {
    ///     listen: "127.0.0.1:8443".parse().unwrap(),
    ///     certificate: "/tls/tls.crt".into(),
    ///     key: "/tls/tls.key".into(),
    /// };
    /// let flags: Vec<String> = args.to_args().iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
    /// assert_eq!(flags, ["--metrics-listen", "127.0.0.1:8443", "--metrics-tls-cert", "/tls/tls.crt",
    ///     "--metrics-tls-key", "/tls/tls.key"]);
    /// ```
    pub fn to_args(&self) -> Vec<OsString> {
        vec![
            "--metrics-listen".into(),
            self.listen.to_string().into(),
            "--metrics-tls-cert".into(),
            self.certificate.clone().into_os_string(),
            "--metrics-tls-key".into(),
            self.key.clone().into_os_string(),
        ]
    }
}

/// How to read the operator's `/metrics`: its HTTPS address, the CA that issued its serving certificate, and a
/// bearer token allowed `get` on `/metrics` (what Prometheus holds). `Debug` never shows the token.
#[derive(Clone)]
pub struct MetricsAccess {
    /// The metrics endpoint (`--metrics-listen`).
    pub address: SocketAddr,
    /// The CA (PEM) the client trusts.
    pub ca_pem: String,
    /// The bearer token.
    pub token: String,
}

impl std::fmt::Debug for MetricsAccess {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("MetricsAccess")
            .field("address", &self.address)
            .field("ca_pem", &self.ca_pem)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// The operator's `/metrics` text (OpenMetrics), over TLS with the bearer token of `access`.
///
/// # Errors
/// [`SandboxError::OperatorHttp`] if the handshake fails or the answer is not 200.
pub async fn metrics(access: &MetricsAccess) -> Result<String, SandboxError> {
    match https_get(access.address, &access.ca_pem, Some(&access.token), "/metrics").await {
        Ok((200, body)) => Ok(body),
        Ok((status, body)) => Err(SandboxError::OperatorHttp {
            address: access.address,
            path: "/metrics",
            detail: format!("status {status}: {body}"),
        }),
        Err(error) => {
            Err(SandboxError::OperatorHttp { address: access.address, path: "/metrics", detail: error.to_string() })
        }
    }
}

/// One HTTPS GET of `path` (HTTP/1.0: the server closes the connection after the answer), the server's certificate checked against `ca_pem` for
/// the name `localhost`, with `Authorization: Bearer <token>` when a token is given: status code and body.
///
/// # Errors
/// An I/O error for a refused connection, a failed handshake (an untrusted certificate) or an answer that is not
/// HTTP.
pub async fn https_get(
    address: SocketAddr,
    ca_pem: &str,
    token: Option<&str>,
    path: &str,
) -> std::io::Result<(u16, String)> {
    let invalid = |detail: String| std::io::Error::new(std::io::ErrorKind::InvalidData, detail);
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        let certificate = certificate.map_err(|error| invalid(format!("the CA bundle: {error}")))?;
        roots.add(certificate).map_err(|error| invalid(format!("the CA bundle: {error}")))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| invalid(error.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(address).await?;
    let server_name = ServerName::try_from("localhost").map_err(|error| invalid(error.to_string()))?;
    let tls = connector.connect(server_name, tcp).await?;
    let authorization = token.map(|token| format!("Authorization: Bearer {token}\r\n")).unwrap_or_default();
    let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n{authorization}\r\n");
    exchange(tls, &request).await
}

/// The value of an unlabelled sample `name` (for example `wmco_ssh_sent_bytes_total`) in metrics text.
///
/// ```
/// let text = "# TYPE wmco_ssh_round_trips counter\nwmco_ssh_round_trips_total 42\n";
/// assert_eq!(wmco_sandbox::operator::metric_value(text, "wmco_ssh_round_trips_total"), Some(42.0));
/// assert_eq!(wmco_sandbox::operator::metric_value(text, "wmco_ssh_round_trips"), None);
/// ```
pub fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// One plain HTTP/1.0 GET (the server closes the connection after the answer): status code and body.
///
/// # Errors
/// An I/O error for a refused connection or an answer that is not HTTP.
pub async fn http_get(address: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let stream = tokio::net::TcpStream::connect(address).await?;
    exchange(stream, &format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n")).await
}

/// Sends `request` and reads the answer to the end of the connection: status code and body.
async fn exchange(mut stream: impl AsyncRead + AsyncWrite + Unpin, request: &str) -> std::io::Result<(u16, String)> {
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), read_to_close(&mut stream, &mut response))
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

/// Reads until the peer closes; a TLS peer closing without `close_notify` after sending its answer counts as the
/// end too (the answer is complete: HTTP/1.0 delimits it by the close).
async fn read_to_close(stream: &mut (impl AsyncRead + Unpin), buffer: &mut Vec<u8>) -> std::io::Result<()> {
    match stream.read_to_end(buffer).await {
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof && !buffer.is_empty() => Ok(()),
        other => other.map(drop),
    }
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
    use crate::credentials::MetricsServingCertificate;

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
            assert!(String::from_utf8_lossy(&request[..read]).starts_with("GET /readyz HTTP/1.0\r\n"));
            socket.write_all(b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nready\n").await.unwrap();
        });
        assert_eq!(http_get(address, "/readyz").await.unwrap(), (200, "ready\n".to_owned()));
        server.await.unwrap();
    }

    /// A TLS server on loopback with `serving`'s certificate that answers one request with the request's head.
    async fn echoing_tls_server(serving: &MetricsServingCertificate) -> (SocketAddr, tokio::task::JoinHandle<()>) {
        use rustls::pki_types::PrivateKeyDer;
        let data = serving.secret_data();
        let chain = CertificateDer::pem_slice_iter(&data["tls.crt"].0).collect::<Result<Vec<_>, _>>().unwrap();
        let key = PrivateKeyDer::from_pem_slice(&data["tls.key"].0).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            let Ok(mut tls) = acceptor.accept(socket).await else { return };
            let mut request = [0u8; 1024];
            let read = tls.read(&mut request).await.unwrap();
            let head = String::from_utf8_lossy(&request[..read]).into_owned();
            tls.write_all(format!("HTTP/1.0 200 OK\r\n\r\n{head}").as_bytes()).await.unwrap();
            tls.shutdown().await.unwrap();
        });
        (address, server)
    }

    #[tokio::test]
    async fn https_get_trusts_only_the_given_ca_and_sends_the_bearer_token() {
        let serving = MetricsServingCertificate::issue().unwrap();
        let (address, server) = echoing_tls_server(&serving).await;
        let (status, echoed) = https_get(address, serving.ca_pem(), Some("t0ken"), "/metrics").await.unwrap();
        assert_eq!(status, 200);
        assert!(echoed.starts_with("GET /metrics HTTP/1.0\r\n"), "{echoed}");
        assert!(echoed.contains("\r\nAuthorization: Bearer t0ken\r\n"), "{echoed}");
        server.await.unwrap();

        let (address, server) = echoing_tls_server(&serving).await;
        let stranger = MetricsServingCertificate::issue().unwrap();
        let error = https_get(address, stranger.ca_pem(), None, "/metrics").await.unwrap_err();
        assert!(error.to_string().contains("invalid peer certificate"), "{error}");
        server.await.unwrap();
    }
}
