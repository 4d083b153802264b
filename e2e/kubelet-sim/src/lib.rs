//! A simulated kubelet for the e2e suite: it does, against a real kube-apiserver, what a Windows kubelet does
//! (`/work/shared/reference/kubelet-bootstrap.md`, summarised in `docs/testing.md`):
//!
//! 1. start-up checks of its command line and files on the simulated `C:` drive ([`LaunchRefused`] otherwise);
//! 2. TLS bootstrap: if `--kubeconfig` is unusable, a P-256 key and a CSR for `system:node:<name>` on
//!    `kubernetes.io/kube-apiserver-client-kubelet` made with the `--bootstrap-kubeconfig` credentials, a wait for
//!    approval and signing, `kubelet-client-current.pem` and the kubeconfig written;
//! 3. with its own certificate from then on: Node registration (its labels, `--node-labels`, taints, full
//!    status), status heartbeats and the `kube-node-lease` Lease, a serving CSR (`kubernetes.io/kubelet-serving`)
//!    after the first status patch when `serverTLSBootstrap` is on, and the pods bound to the node reported
//!    Running/Ready, pods being deleted finished off with grace 0;
//! 4. with `rotateCertificates`, client certificate renewal at 70–90 % of its lifetime (the serving certificate
//!    too), every task switching to the new certificate.
//!
//! ```no_run
//! # async fn demo() -> Result<(), wmco_kubelet_sim::LaunchRefused> {
//! use wmco_kubelet_sim::{Kubelet, KubeletLaunch};
//! let args = [
//!     r"-log-file=C:\var\log\kubelet\kubelet.log",
//!     r"C:\k\kubelet.exe",
//!     r"--config=C:\k\kubelet.conf",
//!     r"--bootstrap-kubeconfig=C:\k\bootstrap-kubeconfig",
//!     r"--kubeconfig=C:\k\kubeconfig",
//!     r"--cert-dir=C:\var\lib\kubelet\pki",
//!     "--node-ip=203.0.113.10",
//! ];
//! let launch = KubeletLaunch::new(args.map(String::from).to_vec(), "/hosts/win-a/C", "WIN-A");
//! let kubelet = Kubelet::start(launch).await?;
//! assert_eq!(kubelet.node_name(), "win-a");
//! if kubelet.status().phase == wmco_kubelet_sim::KubeletPhase::Running {
//!     let node_client = kubelet.node_client();
//!     # let _ = node_client;
//! }
//! let log = kubelet.journal().join("\r\n"); // what the host writes to C:\var\log\kubelet\kubelet.log
//! # let _ = log;
//! kubelet.stop().await;
//! # Ok(()) }
//! ```

mod certs;
mod client_cert;
mod config;
mod csr;
mod disk;
mod kubeconfig;
mod launch;
mod network;
mod node;
mod pods;
mod rotation;
mod run;
mod serving;
mod state;
mod taint;

use std::sync::Arc;

use tokio::sync::watch;

pub use config::{ConfigProblem, KubeletConfig};
pub use csr::{CLIENT_SIGNER, SERVING_SIGNER};
pub use disk::{Drive, PathProblem};
pub use kubeconfig::{KubeconfigProblem, client_from_kubeconfig};
pub use launch::{DEFAULT_WINDOWS_BUILD, KubeletLaunch, LaunchRefused, random_uuid};
pub use node::DEFAULT_KUBELET_VERSION;
pub use taint::{Taint, TaintEffect};

/// The simulated kubelet's entry point.
#[derive(Debug)]
pub struct Kubelet;

/// Where a running simulated kubelet is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeletPhase {
    /// Obtaining its client certificate (possibly waiting for CSR approval).
    Bootstrapping,
    /// Creating its Node.
    Registering,
    /// Registered (or `registerNode: false`): heartbeats and pods run.
    Running,
}

/// What a running simulated kubelet reports about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletStatus {
    /// Its phase.
    pub phase: KubeletPhase,
    /// Whether a serving certificate was issued.
    pub serving_certificate: bool,
    /// The last problem it logged (a failed request, a denied CSR, ...), if any.
    pub last_problem: Option<String>,
}

/// A running simulated kubelet; dropping it without [`KubeletHandle::stop`] keeps it running in the background
/// until the runtime shuts down.
#[derive(Debug)]
pub struct KubeletHandle {
    node_name: String,
    task: tokio::task::JoinHandle<()>,
    shared: Arc<state::Shared>,
}

impl std::fmt::Debug for state::Shared {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Shared").field("status", &*self.status.borrow()).finish_non_exhaustive()
    }
}

impl Kubelet {
    /// Runs the kubelet's start-up checks on `launch` and, if they pass, starts it in a tokio task.
    ///
    /// # Errors
    /// [`LaunchRefused`] naming the flag or file that a real kubelet would refuse.
    pub async fn start(launch: KubeletLaunch) -> Result<KubeletHandle, LaunchRefused> {
        let prepared = launch::prepare(&launch)?;
        let facts = node::NodeFacts {
            name: prepared.node_name.clone(),
            ips: prepared.node_ips.clone(),
            windows_build: prepared.windows_build.clone(),
            kubelet_version: launch.kubelet_version.clone(),
            boot_id: launch.boot_id.clone(),
            extra_labels: prepared.node_labels.clone(),
            taints: prepared.taints.clone(),
            port: prepared.config.port,
            max_pods: prepared.config.max_pods,
            started: jiff::Timestamp::now(),
        };
        let (status, _) = watch::channel(KubeletStatus {
            phase: KubeletPhase::Bootstrapping,
            serving_certificate: false,
            last_problem: None,
        });
        let node_name = prepared.node_name.clone();
        let shared = Arc::new(state::Shared::new(node_name.clone(), status));
        shared.info(format!("kubelet starting for node {node_name}"));
        let task = tokio::spawn(run::run(prepared, facts, shared.clone()));
        Ok(KubeletHandle { node_name, task, shared })
    }
}

impl KubeletHandle {
    /// The Node name (`--hostname-override` or the host name, lower-cased).
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// Its current status.
    pub fn status(&self) -> KubeletStatus {
        self.shared.status.borrow().clone()
    }

    /// A client authenticated as the node (`system:node:<name>`), once it has its client certificate. Subject to
    /// the Node authorizer and NodeRestriction like the kubelet itself (it may read its own Node, for example the
    /// hybrid-overlay subnet annotation).
    pub fn node_client(&self) -> Option<kube::Client> {
        self.shared.node_client.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// What the kubelet logged so far (the last 10,000 lines): `<I|E> <RFC 3339 time> <message>`, for example
    /// `I 2026-01-01T00:00:00Z created client certificate signing request csr-abcde`. A simulated host can copy
    /// these lines to `C:\var\log\kubelet\kubelet.log`.
    pub fn journal(&self) -> Vec<String> {
        self.shared.journal.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().cloned().collect()
    }

    /// Stops the kubelet: heartbeats, Lease renewals, CSR waits and pod handling end at once, as when the service
    /// process exits. Its Node turns `Unknown` once the node-lifecycle controller's grace period passes.
    pub async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
        self.shared.info(format!("kubelet for node {} stopped", self.node_name));
    }
}
