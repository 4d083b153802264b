//! High availability in the sandbox: a second operator replica beside the sandbox's own process, the leader-election
//! Lease, and reading the hosts' command logs by sender.
//!
//! [`Replica::start`] runs another `wmco run` against the same control plane, payload and SSH port, with its own
//! `--ssh-identity`, listener, log file (`operator-<identity>.log` in the sandbox directory) and ServiceAccount
//! token (the same ServiceAccount and RBAC as the sandbox's operator). Both take part in leader election on Lease
//! [`LEASE_NAME`] unless told otherwise. [`lease_holder`] reads who leads. Every SSH client version the operator
//! sends is `SSH-2.0-wmco_<version> <identity>`, so [`client_identity`] tells which process sent a logged command
//! and [`sender_turns`] gives the order in which processes took turns on one host.
//! [`Replica::start_via`] points a replica at the API server through another address (a
//! [`crate::tcp_proxy::TcpProxy`] the test can cut).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use winhost_sim::host::CommandRecord;

use crate::operator::{MetricsEndpointArgs, OperatorLaunch, OperatorProcess, locate_operator_binary, wait_ready};
use crate::{OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, Sandbox, SandboxError};

/// The Lease the operator replicas elect their leader with.
pub const LEASE_NAME: &str = "windows-machine-config-operator";
/// The prefix of the operator's SSH client version string; the identity follows after one space.
const CLIENT_VERSION_PREFIX: &str = "SSH-2.0-wmco_";
/// Lifetime of a replica's ServiceAccount token.
const TOKEN_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// How long a replica may take to answer `/readyz`.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// Pause between checks whether a terminated replica exited.
const EXIT_POLL: Duration = Duration::from_millis(100);

/// Another operator process of the sandbox (killed when dropped).
#[derive(Debug)]
pub struct Replica {
    identity: String,
    process: OperatorProcess,
}

impl Replica {
    /// Starts `wmco run` with `--ssh-identity identity` plus `extra_args`, and waits until it answers `/readyz`
    /// (a follower standing by is ready).
    ///
    /// ```no_run
    /// # async fn demo(sandbox: &wmco_sandbox::Sandbox) -> Result<(), wmco_sandbox::SandboxError> {
    /// let replica = wmco_sandbox::replicas::Replica::start(sandbox, "wmco-replica", &[]).await?;
    /// println!("leader: {:?}", wmco_sandbox::replicas::lease_holder(&sandbox.admin_client()).await?);
    /// # drop(replica); Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`SandboxError`] if the token, the kubeconfig or the process cannot be made, or it is not ready in time.
    pub async fn start(sandbox: &Sandbox, identity: &str, extra_args: &[&str]) -> Result<Replica, SandboxError> {
        Replica::launch(sandbox, identity, extra_args, None).await
    }

    /// [`Replica::start`], the replica reaching the API server at `api_server` (a [`crate::tcp_proxy::TcpProxy`]
    /// in front of it) instead of its own address.
    ///
    /// # Errors
    /// As [`Replica::start`].
    pub async fn start_via(
        sandbox: &Sandbox,
        identity: &str,
        extra_args: &[&str],
        api_server: std::net::SocketAddr,
    ) -> Result<Replica, SandboxError> {
        Replica::launch(sandbox, identity, extra_args, Some(api_server)).await
    }

    async fn launch(
        sandbox: &Sandbox,
        identity: &str,
        extra_args: &[&str],
        api_server: Option<std::net::SocketAddr>,
    ) -> Result<Replica, SandboxError> {
        let control_plane = sandbox.control_plane();
        let token =
            control_plane.service_account_token(OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, TOKEN_LIFETIME).await?;
        let user = format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_SERVICE_ACCOUNT}");
        let kubeconfig = sandbox.directory().join(format!("operator-{identity}.kubeconfig"));
        let mut contents = control_plane.kubeconfig_for_token(&user, &token);
        if let Some(address) = api_server {
            // The serving certificate names 127.0.0.1, so a loopback proxy on another port still verifies.
            contents = contents.replace(control_plane.api_server_url(), &format!("https://{address}"));
        }
        write_private_file(&kubeconfig, &contents)?;
        let free_port = || {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .map_err(SandboxError::io("find a free port on", "127.0.0.1"))
        };
        let listen = free_port()?;
        let metrics = sandbox.metrics_endpoint_args(free_port()?);
        let launch = OperatorLaunch {
            binary: locate_operator_binary()?,
            base_args: replica_args(sandbox.payload_dir(), listen, &metrics, sandbox.ssh_port(), identity),
            kubeconfig,
            log: sandbox.directory().join(format!("operator-{identity}.log")),
            listen,
            metrics_listen: metrics.listen,
            pod: None,
        };
        let mut process = OperatorProcess::new(launch);
        process.start_with(extra_args.iter().map(OsString::from).collect())?;
        let mut replica = Replica { identity: identity.to_owned(), process };
        wait_ready(listen, READY_TIMEOUT, || replica.process.check_running()).await?;
        Ok(replica)
    }

    /// Its `--ssh-identity` (also its Lease holder name).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Its log file.
    pub fn log_path(&self) -> &Path {
        &self.process.launch().log
    }

    /// Its process ID while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// Kills it with SIGKILL (a crash).
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Fails if it exited, quoting the end of its log.
    ///
    /// # Errors
    /// [`SandboxError::OperatorExited`] or [`SandboxError::OperatorStopped`].
    pub fn check_running(&mut self) -> Result<(), SandboxError> {
        self.process.check_running()
    }

    /// Sends SIGTERM (Kubernetes stopping the pod) and waits up to `timeout` for the process to exit; returns its
    /// exit status as printed (`exit status: 0`).
    ///
    /// # Errors
    /// [`SandboxError::OperatorStopped`] if it was not running; [`SandboxError::Io`] if `kill` cannot be run or it
    /// is still running after `timeout`.
    pub async fn terminate(&mut self, timeout: Duration) -> Result<String, SandboxError> {
        let pid = self.process.pid().ok_or(SandboxError::OperatorStopped)?;
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .map_err(SandboxError::io("run kill -TERM for", self.log_path().to_path_buf()))?;
        if !status.success() {
            return Err(SandboxError::Io {
                action: "send SIGTERM to the replica logging to",
                path: self.log_path().to_path_buf(),
                source: std::io::Error::other(format!("kill exited with {status}")),
            });
        }
        let started = Instant::now();
        loop {
            match self.process.check_running() {
                Ok(()) => {}
                Err(SandboxError::OperatorExited { status, .. }) => return Ok(status),
                Err(other) => return Err(other),
            }
            if started.elapsed() > timeout {
                return Err(SandboxError::Io {
                    action: "wait for the exit after SIGTERM of the replica logging to",
                    path: self.log_path().to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("still running after {timeout:?}"),
                    ),
                });
            }
            tokio::time::sleep(EXIT_POLL).await;
        }
    }
}

/// The arguments of a replica: the sandbox's payload (with `--allow-synthetic-payload` only when it is synthetic)
/// and SSH port, listeners of its own (the metrics endpoint with the sandbox's serving certificate) and `identity`.
fn replica_args(
    payload_dir: &Path,
    listen: std::net::SocketAddr,
    metrics: &MetricsEndpointArgs,
    ssh_port: u16,
    identity: &str,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["run".into()];
    args.extend(crate::operator_payload_args(payload_dir));
    args.extend(metrics.to_args());
    args.extend(
        ["--listen", &listen.to_string(), "--ssh-port", &ssh_port.to_string(), "--ssh-identity", identity]
            .map(OsString::from),
    );
    args
}

fn write_private_file(path: &PathBuf, contents: &str) -> Result<(), SandboxError> {
    std::fs::write(path, contents).map_err(SandboxError::io("write", path))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(SandboxError::io("restrict the permissions of", path))
}

/// The holder of the operator's Lease (`None` when free or absent).
///
/// # Errors
/// [`SandboxError::Kube`] if the Lease cannot be read.
pub async fn lease_holder(client: &kube::Client) -> Result<Option<String>, SandboxError> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let lease = leases.get_opt(LEASE_NAME).await.map_err(|source| SandboxError::Kube {
        action: format!("read Lease {OPERATOR_NAMESPACE}/{LEASE_NAME}"),
        source,
    })?;
    Ok(lease.and_then(|lease| lease.spec).and_then(|spec| spec.holder_identity).filter(|holder| !holder.is_empty()))
}

/// Waits up to `timeout` until the process `identity` holds the operator's Lease.
///
/// # Errors
/// [`SandboxError::Timeout`] (quoting the sandbox operator's log) if it does not in time.
pub async fn wait_for_holder(sandbox: &Sandbox, identity: &str, timeout: Duration) -> Result<(), SandboxError> {
    let admin = sandbox.admin_client();
    sandbox
        .wait_for(&format!("{identity} leading"), timeout, || async {
            let holder = lease_holder(&admin).await?;
            anyhow::ensure!(holder.as_deref() == Some(identity), "holder {holder:?}");
            Ok(())
        })
        .await
}

/// The process identity in an operator's SSH client version string (`SSH-2.0-wmco_<version> <identity>`); `None`
/// for other clients.
///
/// ```
/// use wmco_sandbox::replicas::client_identity;
/// assert_eq!(client_identity("SSH-2.0-wmco_0.1.0 wmco-replica"), Some("wmco-replica"));
/// assert_eq!(client_identity("SSH-2.0-OpenSSH_9.6"), None);
/// assert_eq!(client_identity("control:user-data"), None);
/// ```
pub fn client_identity(client: &str) -> Option<&str> {
    let (_, identity) = client.strip_prefix(CLIENT_VERSION_PREFIX)?.split_once(' ')?;
    Some(identity.trim()).filter(|identity| !identity.is_empty())
}

/// The operator processes that sent commands to one host, in the order of their turns (consecutive commands of one
/// process form one turn). A process appearing twice means two processes' commands interleaved on the host.
///
/// ```
/// use winhost_sim::host::CommandRecord;
/// use wmco_sandbox::replicas::sender_turns;
/// let record = |client: &str| CommandRecord { client: client.into(), line: "hostname".into(), ..Default::default() };
/// let log = [record("SSH-2.0-wmco_0.1.0 a"), record("control:user-data"), record("SSH-2.0-wmco_0.1.0 a"),
///            record("SSH-2.0-wmco_0.1.0 b")];
/// assert_eq!(sender_turns(&log), ["a", "b"]);
/// ```
pub fn sender_turns(log: &[CommandRecord]) -> Vec<String> {
    let mut turns: Vec<String> = Vec::new();
    for identity in log.iter().filter_map(|record| client_identity(&record.client)) {
        if turns.last().map(String::as_str) != Some(identity) {
            turns.push(identity.to_owned());
        }
    }
    turns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(client: &str) -> CommandRecord {
        CommandRecord { client: client.to_owned(), line: "sc.exe query kubelet".to_owned(), ..CommandRecord::default() }
    }

    #[test]
    fn interleaved_senders_show_up_as_a_repeated_turn() {
        let log = [
            record("SSH-2.0-wmco_0.1.0 wmco-sandbox"),
            record("SSH-2.0-wmco_0.1.0 wmco-replica"),
            record("SSH-2.0-wmco_0.1.0 wmco-sandbox"),
        ];
        assert_eq!(sender_turns(&log), ["wmco-sandbox", "wmco-replica", "wmco-sandbox"]);
        assert_eq!(sender_turns(&[]), Vec::<String>::new());
    }

    #[test]
    fn a_version_without_identity_names_no_sender() {
        assert_eq!(client_identity("SSH-2.0-wmco_0.1.0"), None);
        assert_eq!(client_identity("SSH-2.0-wmco_0.1.0 "), None);
        assert_eq!(client_identity("SSH-2.0-wmco_0.1.0 wmco-sandbox"), Some("wmco-sandbox"));
    }

    #[test]
    fn a_replica_of_a_synthetic_payload_allows_it() {
        let payload = tempfile::tempdir().unwrap();
        std::fs::write(payload.path().join("SYNTHETIC"), "synthetic").unwrap();
        let args = replica_args(payload.path(), "127.0.0.1:4243".parse().unwrap(), &metrics_args(), 2222, "wmco-b");
        let args: Vec<String> = args.iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
        assert_eq!(
            args[..4],
            ["run", "--payload-dir", &payload.path().display().to_string(), "--allow-synthetic-payload"]
        );
    }

    #[test]
    fn a_replica_gets_its_own_listeners_and_identity() {
        let args = replica_args(
            Path::new("/cache/payload"),
            "127.0.0.1:4243".parse().unwrap(),
            &metrics_args(),
            2222,
            "wmco-b",
        );
        let args: Vec<String> = args.iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
        assert_eq!(
            args,
            [
                "run",
                "--payload-dir",
                "/cache/payload",
                "--metrics-listen",
                "127.0.0.1:4244",
                "--metrics-tls-cert",
                "/s/tls.crt",
                "--metrics-tls-key",
                "/s/tls.key",
                "--listen",
                "127.0.0.1:4243",
                "--ssh-port",
                "2222",
                "--ssh-identity",
                "wmco-b"
            ]
        );
    }

    fn metrics_args() -> MetricsEndpointArgs {
        MetricsEndpointArgs {
            listen: "127.0.0.1:4244".parse().unwrap(),
            certificate: PathBuf::from("/s/tls.crt"),
            key: PathBuf::from("/s/tls.key"),
        }
    }
}
