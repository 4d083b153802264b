//! [`SandboxError`]: why the sandbox could not start or a wait failed, naming the object, the step and, for the
//! operator, where its log is.

use std::path::PathBuf;

/// Why a sandbox operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The e2e control plane did not start (or its binaries are missing: run `cargo xtask controlplane build`).
    #[error("the e2e control plane: {0}")]
    ControlPlane(#[from] wmco_e2e_harness::Error),
    /// The real payload a test or the sandbox asked for is not there.
    #[error("the real payload: {0}")]
    RealPayload(String),
    /// The operator image is missing, or its configuration or the pod's refuses a run.
    #[error("the operator image: {0}")]
    Image(String),
    /// A tool the image runs need (skopeo, umoci, runc) failed or is missing.
    #[error("{0}")]
    Tool(String),
    /// A file or directory operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`write`, `create directory`, ...).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// `kubectl apply -k` refused a kustomization.
    #[error("kubectl apply -k {} failed: {output}", dir.display())]
    Manifests {
        /// The kustomization directory.
        dir: PathBuf,
        /// What kubectl printed.
        output: String,
    },
    /// The synthetic payload could not be written.
    #[error("cannot write the synthetic payload into {}: {source}", dir.display())]
    Payload {
        /// The payload directory.
        dir: PathBuf,
        /// The generator's error.
        #[source]
        source: wmco_payload_manifest::SyntheticError,
    },
    /// The product's payload manifest does not load.
    #[error("the product payload manifest: {0}")]
    Manifest(#[from] wmco_payload_manifest::ManifestError),
    /// Generating the admin SSH key failed.
    #[error("cannot generate the admin SSH key: {0}")]
    AdminKey(String),
    /// Generating the operator's TLS certificate failed.
    #[error("cannot generate the windows-machine-config-operator-tls certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// A Kubernetes API call failed.
    #[error("cannot {action}: {source}")]
    Kube {
        /// The call (`create Secret openshift-windows-machine-config-operator/cloud-private-key`, ...).
        action: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// A simulated host could not be started or is unknown.
    #[error("simulated hosts: {0}")]
    Fleet(#[from] winhost_sim::fleet::FleetError),
    /// No port was free on every loopback address the hosts listen on.
    #[error("no TCP port is free on every host address ({addresses}) after {attempts} attempts")]
    NoSharedPort {
        /// The addresses tried.
        addresses: String,
        /// How many ports were tried.
        attempts: u32,
    },
    /// The `wmco` binary was not found.
    #[error(
        "the wmco binary was not found: set WMCO_BIN to its path, or build it with `cargo build -p wmco` \
         (looked for {})",
        tried.iter().map(|path| path.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    OperatorBinaryMissing {
        /// The paths looked at.
        tried: Vec<PathBuf>,
    },
    /// The operator process could not be started.
    #[error("cannot start the operator {}: {source}", binary.display())]
    OperatorSpawn {
        /// The binary.
        binary: PathBuf,
        /// The spawn error.
        #[source]
        source: std::io::Error,
    },
    /// The operator process exited on its own.
    #[error("the operator exited ({status}); log {}:\n{tail}", log.display())]
    OperatorExited {
        /// Its exit status.
        status: String,
        /// Its log file.
        log: PathBuf,
        /// The end of its log.
        tail: String,
    },
    /// The operator is not running (it was killed and not started again).
    #[error("the operator is not running (start it with Sandbox::start_operator)")]
    OperatorStopped,
    /// The operator's HTTP listener did not answer as expected.
    #[error("GET http://{address}{path}: {detail}")]
    OperatorHttp {
        /// The listener address.
        address: std::net::SocketAddr,
        /// The path requested.
        path: &'static str,
        /// What went wrong.
        detail: String,
    },
    /// The secret scan could not run, or had nothing to look for.
    #[error("secret scan: {0}")]
    SecretScan(String),
    /// The secret scan found a secret where an admin or a log collector reads. The sandbox directory is kept.
    #[error("a secret leaked: {report}\n  sandbox directory (kept): {}", sandbox_dir.display())]
    SecretLeaked {
        /// What was searched and every hit (kinds and places, never the values).
        report: String,
        /// The sandbox directory.
        sandbox_dir: PathBuf,
    },
    /// A wait gave up. The sandbox directory is kept for inspection.
    #[error("{detail}\n  operator log: {}\n  sandbox directory (kept): {}\n  last operator log lines:\n{tail}",
            operator_log.display(), sandbox_dir.display())]
    Timeout {
        /// What was awaited and the last problem seen.
        detail: String,
        /// The operator's log file.
        operator_log: PathBuf,
        /// The sandbox directory.
        sandbox_dir: PathBuf,
        /// The end of the operator's log.
        tail: String,
    },
}

impl SandboxError {
    /// An IO error mapper for `map_err`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> SandboxError {
        let path = path.into();
        move |source| SandboxError::Io { action, path, source }
    }

    /// A Kubernetes error mapper for `map_err`.
    pub(crate) fn kube(action: impl Into<String>) -> impl FnOnce(kube::Error) -> SandboxError {
        let action = action.into();
        move |source| SandboxError::Kube { action, source }
    }
}
