//! The real kubelet model: instead of the simulated kubelet, a host whose [`KubeletModel`] is `Wine` runs the
//! `kubelet.exe` the operator uploaded, under Debian's Wine 8.0, with the arguments of the service's binPath.
//!
//! The host gets its own Wine prefix beside its `C:` drive (`<host dir>/wine/`, prepared by `wmco-wine` with the
//! `bcryptprimitives.dll` stub Go binaries need), whose `C:\k` and `C:\var` are symbolic links to the simulated
//! host's `C:\k` and `C:\var`: the real kubelet reads the bootstrap kubeconfig, kubelet configuration and CA the
//! operator wrote over SSH, and writes its certificates and log where the operator and the tests look. Three
//! things differ from a real host, all because nothing but Wine stands behind the process:
//! - `--windows-service` is dropped: no service control manager started it, so the service dispatcher would fail;
//! - a `kube-log-runner.exe` wrapper is replaced by writing the kubelet's output to the `-log-file` it names
//!   (default `C:\var\log\kubelet\kubelet.log`);
//! - the simulated containerd serves no CRI, so `--container-runtime-endpoint` points at a loopback TCP endpoint
//!   that accepts connections and never answers ([`StalledRuntime`]). With certificate rotation on (the operator's
//!   kubelet configuration), the kubelet bootstraps its client certificate in the background and then validates
//!   the runtime; against a missing named pipe it would exit at once, before its CSR is issued, while against the
//!   stalled endpoint it waits (up to its runtime request timeout) and the bootstrap completes.
//!
//! Stopping the service stops the process, the stalled endpoint and the prefix's wineserver.
//!
//! Under Wine 8.0 the kubelet gets as far as its client certificate: it creates its CSR, and after approval logs
//! `Certificate signing request is issued`; writing the certificate then fails, because Wine does not create the
//! symbolic link the kubelet's certificate store uses (`kubelet-client-current.pem`). The e2e scenario ends at
//! issuance.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde::Deserialize;
use wmco_wine::WinePrefix;

use crate::argv::split_image_path;
use crate::process::{flag, program, stem};

/// Which kubelet a host runs when the operator starts its `kubelet` service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KubeletModel {
    /// The simulated kubelet (`wmco-kubelet-sim`): bootstrap, registration, heartbeats, pods.
    #[default]
    Simulated,
    /// The uploaded `kubelet.exe` itself, under Wine (bootstrap only; see the module documentation).
    Wine,
}

/// What the real kubelet is started with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WineLaunch {
    /// The Windows path of `kubelet.exe`.
    pub executable: String,
    /// Its arguments, without `--windows-service`.
    pub arguments: Vec<String>,
    /// Where its output goes (a Windows path).
    pub log_file: String,
}

impl WineLaunch {
    /// The launch for a kubelet service's binPath (`C:\k\kubelet.exe ...` or `C:\k\kube-log-runner.exe
    /// -log-file=F ... C:\k\kubelet.exe ...`).
    pub fn from_image_path(image_path: &str) -> WineLaunch {
        let (runner, runner_arguments) = split_image_path(image_path);
        let log_file = if stem(&runner) == "kube-log-runner" { flag(&runner_arguments, "log-file") } else { None };
        let (executable, arguments) = program(image_path);
        WineLaunch {
            executable,
            arguments: arguments
                .into_iter()
                .filter(|argument| argument.trim_start_matches('-') != "windows-service")
                .collect(),
            log_file: log_file.unwrap_or_else(|| r"C:\var\log\kubelet\kubelet.log".to_owned()),
        }
    }
}

/// A real kubelet running under Wine for one host.
#[derive(Debug)]
pub struct WineKubelet {
    child: tokio::process::Child,
    prefix: WinePrefix,
    runtime: StalledRuntime,
}

/// A container runtime endpoint that accepts connections on a loopback port and never answers, so a kubelet
/// validating its runtime waits instead of failing at once.
#[derive(Debug)]
pub struct StalledRuntime {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl StalledRuntime {
    /// Listens on `127.0.0.1:<free port>`, holding every accepted connection open without a byte.
    ///
    /// # Errors
    /// The bind error.
    pub async fn start() -> std::io::Result<StalledRuntime> {
        let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let port = listener.local_addr()?.port();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        Ok(StalledRuntime { port, task })
    }

    /// The kubelet argument naming this endpoint.
    pub fn endpoint_argument(&self) -> String {
        format!("--container-runtime-endpoint=tcp://127.0.0.1:{}", self.port)
    }
}

impl Drop for StalledRuntime {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The real kubelet could not start.
#[derive(Debug, thiserror::Error)]
pub enum WineKubeletError {
    /// The prefix could not be prepared.
    #[error("the Wine prefix: {0}")]
    Prefix(#[from] wmco_wine::WineError),
    /// A file-system step or the process start failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
}

impl WineKubelet {
    /// Prepares the host's prefix under `host_dir/wine` (once), maps its `C:\k` and `C:\var` onto `drive_root`,
    /// and starts `launch` with its output appended to the log file on the host's disk.
    ///
    /// # Errors
    /// [`WineKubeletError`] naming the step that failed.
    pub async fn start(
        host_dir: &Path,
        drive_root: &Path,
        launch: WineLaunch,
    ) -> Result<WineKubelet, WineKubeletError> {
        let wine_dir = host_dir.join("wine");
        let prefix =
            tokio::task::spawn_blocking(move || WinePrefix::prepare_in(&wine_dir)).await.map_err(|error| {
                WineKubeletError::Io {
                    action: "prepare the Wine prefix in",
                    path: host_dir.join("wine"),
                    source: std::io::Error::other(error.to_string()),
                }
            })??;
        for top in ["k", "var"] {
            map_directory(&prefix.drive_c().join(top), &drive_root.join(top))?;
        }
        let log_path = windows_to_host(drive_root, &launch.log_file);
        if let Some(parent) = log_path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| WineKubeletError::Io {
                action: "create",
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|source| WineKubeletError::Io { action: "open", path: log_path.clone(), source })?;
        let log_copy = log.try_clone().map_err(|source| WineKubeletError::Io {
            action: "open",
            path: log_path.clone(),
            source,
        })?;
        let runtime = StalledRuntime::start().await.map_err(|source| WineKubeletError::Io {
            action: "listen for the stalled runtime on",
            path: "127.0.0.1".into(),
            source,
        })?;
        let mut command = prefix.command(&launch.executable);
        command
            .args(&launch.arguments)
            .arg(runtime.endpoint_argument())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_copy));
        let child = tokio::process::Command::from(command)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| WineKubeletError::Io { action: "start wine64 for", path: log_path, source })?;
        Ok(WineKubelet { child, prefix, runtime })
    }

    /// Stops the kubelet and every Wine process of the prefix.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
        drop(self.runtime);
        let prefix = self.prefix.clone();
        let _ = tokio::task::spawn_blocking(move || prefix.shut_down()).await;
    }
}

/// Makes `link` (inside the prefix's drive) a symbolic link to `target` (on the host's drive), creating `target`.
fn map_directory(link: &Path, target: &Path) -> Result<(), WineKubeletError> {
    std::fs::create_dir_all(target).map_err(|source| WineKubeletError::Io {
        action: "create",
        path: target.to_path_buf(),
        source,
    })?;
    if std::fs::read_link(link).is_ok_and(|existing| existing == target) {
        return Ok(());
    }
    if link.is_dir() && std::fs::symlink_metadata(link).is_ok_and(|metadata| !metadata.file_type().is_symlink()) {
        std::fs::remove_dir_all(link).map_err(|source| WineKubeletError::Io {
            action: "remove",
            path: link.to_path_buf(),
            source,
        })?;
    } else if std::fs::symlink_metadata(link).is_ok() {
        std::fs::remove_file(link).map_err(|source| WineKubeletError::Io {
            action: "remove",
            path: link.to_path_buf(),
            source,
        })?;
    }
    std::os::unix::fs::symlink(target, link).map_err(|source| WineKubeletError::Io {
        action: "link",
        path: link.to_path_buf(),
        source,
    })
}

/// The backing path of a `C:\...` Windows path under `drive_root` (case kept; the kubelet's own paths are new).
fn windows_to_host(drive_root: &Path, windows_path: &str) -> PathBuf {
    let relative = windows_path.trim_start_matches(['C', 'c']).trim_start_matches(':').trim_start_matches('\\');
    relative.split('\\').filter(|part| !part.is_empty()).fold(drive_root.to_path_buf(), |path, part| path.join(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runner_wrapped_kubelet_runs_directly_logging_to_the_runners_file_without_the_service_flag() {
        let launch = WineLaunch::from_image_path(
            r"C:\k\kube-log-runner.exe -log-file=C:\var\log\kubelet\kubelet.log C:\k\kubelet.exe --config=C:\k\kubelet.conf --windows-service --v=2 --hostname-override=winworker-1",
        );
        assert_eq!(
            launch,
            WineLaunch {
                executable: r"C:\k\kubelet.exe".to_owned(),
                arguments: vec![
                    r"--config=C:\k\kubelet.conf".into(),
                    "--v=2".into(),
                    "--hostname-override=winworker-1".into()
                ],
                log_file: r"C:\var\log\kubelet\kubelet.log".to_owned(),
            }
        );
    }

    #[test]
    fn a_bare_kubelet_logs_to_the_default_file() {
        let launch = WineLaunch::from_image_path(r"C:\k\kubelet.exe --windows-service --v=4");
        assert_eq!(launch.executable, r"C:\k\kubelet.exe");
        assert_eq!(launch.arguments, ["--v=4"]);
        assert_eq!(launch.log_file, r"C:\var\log\kubelet\kubelet.log");
    }

    #[test]
    fn windows_paths_land_under_the_drive_root() {
        assert_eq!(
            windows_to_host(Path::new("/sim/h/C"), r"C:\var\log\kubelet\kubelet.log"),
            Path::new("/sim/h/C/var/log/kubelet/kubelet.log")
        );
    }

    #[test]
    fn mapping_replaces_a_directory_with_a_link_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("prefix/drive_c/k");
        std::fs::create_dir_all(&link).unwrap();
        let target = dir.path().join("host/C/k");
        map_directory(&link, &target).unwrap();
        map_directory(&link, &target).unwrap();
        assert_eq!(std::fs::read_link(&link).unwrap(), target);
        std::fs::write(target.join("kubeconfig"), "x").unwrap();
        assert_eq!(std::fs::read_to_string(link.join("kubeconfig")).unwrap(), "x");
    }
}
