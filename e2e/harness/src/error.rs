//! The harness's error type: every variant names the process, file or object and the step that failed.

use std::path::PathBuf;
use std::time::Duration;

/// Why the control plane could not be started, used or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A control-plane binary is missing from the cache.
    #[error(
        "control-plane binary {path} is missing; run `cargo xtask controlplane build` (builds Kubernetes {version} \
         from Go modules into the cache once)"
    )]
    BinaryMissing {
        /// Where the binary was expected.
        path: PathBuf,
        /// The Kubernetes version the harness was built for.
        version: String,
    },
    /// promtool is missing from the cache.
    #[error(
        "promtool {path} is missing; run `bash e2e/promtool/build.sh` (builds Prometheus {version}'s promtool from \
         Go modules into the cache once; `cargo xtask test` runs it beside its other stages)"
    )]
    PromtoolMissing {
        /// Where the binary was expected.
        path: PathBuf,
        /// The Prometheus module version the harness was built for.
        version: String,
    },
    /// Neither `WMCO_CACHE` nor `HOME` is set, so the cache directory is unknown.
    #[error("cannot locate the control-plane cache: set WMCO_CACHE or HOME")]
    NoCacheDirectory,
    /// A file or directory of the control plane could not be written or read.
    #[error("{step} {path}")]
    Io {
        /// What was being done.
        step: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// No free loopback port could be reserved.
    #[error("could not reserve a free port on 127.0.0.1")]
    NoFreePort(#[source] std::io::Error),
    /// A certificate or key could not be generated.
    #[error("could not generate {what}")]
    Certificate {
        /// Which certificate or key.
        what: String,
        /// The underlying error.
        #[source]
        source: rcgen::Error,
    },
    /// A child process could not be started.
    #[error("could not start {process} ({program})")]
    Spawn {
        /// The process's role (etcd, kube-apiserver, …).
        process: &'static str,
        /// The executable.
        program: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A child process exited while the harness still needed it.
    #[error("{process} exited ({status}); last lines of {log}:\n{log_tail}")]
    ProcessExited {
        /// The process's role.
        process: &'static str,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// Its log file.
        log: PathBuf,
        /// The end of its log.
        log_tail: String,
    },
    /// Something did not become ready in time.
    #[error("{what} was not ready after {waited:?}: {last_problem}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long the harness waited.
        waited: Duration,
        /// The last error or state seen.
        last_problem: String,
    },
    /// An object the harness reads lacks the part it needs.
    #[error("{object} has no {missing}")]
    Incomplete {
        /// The object (kind and name).
        object: String,
        /// What is missing, and why it might be.
        missing: &'static str,
    },
    /// A kubeconfig could not be turned into a client.
    #[error("could not build a client for {identity}")]
    Client {
        /// The identity the client authenticates as.
        identity: String,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An API request failed.
    #[error("{step}")]
    Api {
        /// What was being done.
        step: String,
        /// The underlying error.
        #[source]
        source: kube::Error,
    },
    /// A fixture file is not valid.
    #[error("fixture {file}: {problem}")]
    Fixture {
        /// The fixture file name.
        file: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

impl Error {
    /// Wraps an API error with the step that failed.
    pub(crate) fn api(step: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let step = step.into();
        move |source| Self::Api { step, source }
    }

    /// Wraps an IO error with the step and path.
    pub(crate) fn io(step: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { step, path, source }
    }
}
