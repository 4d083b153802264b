//! The upgrade executor's errors: each names the object and the step that failed.

use crate::runtime::ReconcilerError;

/// Why a fleet reconcile (or one of its steps) failed.
#[derive(Debug, thiserror::Error)]
pub enum UpgradesError {
    /// A version given to the operator is not semver.
    #[error("{what} {value:?} is not a semantic version (e.g. 1.2.3)")]
    InvalidVersion {
        /// Which version, e.g. `--version-override`.
        what: &'static str,
        /// The text given.
        value: String,
    },
    /// The payload manifest names no kubelet version (component `kubelet` with `version`).
    #[error("the payload manifest has no kubelet component with a version; the skew rule needs it")]
    NoKubeletVersion,
    /// The API server's version could not be read.
    #[error("reading the API server's version failed")]
    ApiServerVersion {
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Listing the Windows Machines failed.
    #[error("listing the Windows Machines failed")]
    ListMachines {
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Listing the records in the operator namespace failed.
    #[error("listing WindowsInstances in namespace {namespace} failed")]
    ListRecords {
        /// The operator namespace.
        namespace: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// A step on one instance's Node or record failed.
    #[error("WindowsInstance {instance}: {step} failed")]
    Step {
        /// `namespace/name` of the record.
        instance: String,
        /// What was attempted, e.g. `read Node win-1`, `mark Node win-1 upgrading`, `drain Node win-1`.
        step: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
}

impl ReconcilerError for UpgradesError {
    /// A short, stable label for the errors-by-kind metric.
    ///
    /// ```
    /// use wmco_operator::runtime::ReconcilerError;
    /// use wmco_operator::upgrades::UpgradesError;
    /// let error = UpgradesError::InvalidVersion { what: "--version-override", value: "x".into() };
    /// assert_eq!(error.metric_label(), "upgrade_version");
    /// ```
    fn metric_label(&self) -> &'static str {
        match self {
            Self::InvalidVersion { .. } | Self::NoKubeletVersion => "upgrade_version",
            Self::ApiServerVersion { .. } => "upgrade_api_server_version",
            Self::ListRecords { .. } | Self::ListMachines { .. } => "upgrade_list",
            Self::Step { .. } => "upgrade_step",
        }
    }
}
