//! The fleet controller's errors: each names the object and the step that failed. A failed step on one host is
//! not an error of the reconcile (it is reported in the outcome and retried); these stop the whole reconcile.

use super::ApiServerVersionError;
use crate::operator_key::OperatorKeyError;
use crate::runtime::ReconcilerError;

/// Why a fleet reconcile (or one of its steps) failed.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A version given to the operator is not semver.
    #[error("{what} {value:?} is not a semantic version (e.g. 1.2.3)")]
    InvalidVersion {
        /// Which version, e.g. `--version-override`.
        what: &'static str,
        /// The text given.
        value: String,
    },
    /// `cloud-private-key` is absent or unusable: nothing can be decided without the current key.
    #[error("the operator key is not usable")]
    Key {
        /// What is wrong with the Secret.
        #[source]
        source: OperatorKeyError,
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
    #[error("listing the Windows Machines in openshift-machine-api failed")]
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
    /// Listing the Windows Nodes, or deleting an object of the Go operator's daemon identity, failed.
    #[error("removing the Go operator's daemon identity: {step} failed")]
    GoDaemonCleanup {
        /// What was attempted, e.g. `delete ServiceAccount ns/windows-instance-config-daemon`.
        step: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
}

impl From<ApiServerVersionError> for FleetError {
    /// The controller's words for an unknown API server version (a `gitVersion` that is not semver is an
    /// [`FleetError::InvalidVersion`]).
    fn from(error: ApiServerVersionError) -> Self {
        match error {
            ApiServerVersionError::Read { source } => FleetError::ApiServerVersion { source },
            ApiServerVersionError::InvalidGitVersion { value } => {
                FleetError::InvalidVersion { what: "the API server's gitVersion", value }
            }
        }
    }
}

impl ReconcilerError for FleetError {
    /// A short, stable label for the errors-by-kind metric.
    ///
    /// ```
    /// use wmco_operator::runtime::ReconcilerError;
    /// use wmco_operator::fleet::FleetError;
    /// let error = FleetError::InvalidVersion { what: "--version-override", value: "x".into() };
    /// assert_eq!(error.metric_label(), "upgrade_version");
    /// ```
    fn metric_label(&self) -> &'static str {
        match self {
            Self::InvalidVersion { .. } | Self::NoKubeletVersion => "upgrade_version",
            Self::ApiServerVersion { .. } => "upgrade_api_server_version",
            Self::ListRecords { .. } | Self::ListMachines { .. } => "upgrade_list",
            Self::Step { .. } => "upgrade_step",
            Self::GoDaemonCleanup { .. } => "go_daemon_cleanup",
            Self::Key { .. } => "rekey_key",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::fleet::observe::sample_cluster_error as cluster_error;

    #[test]
    fn fleet_reads_api_server_versions_and_the_key_keep_their_messages_and_labels() {
        let errors: [FleetError; 5] = [
            FleetError::ListRecords { namespace: "wmco".into(), source: cluster_error() },
            FleetError::Step { instance: "wmco/a".into(), step: "read Node win-a".into(), source: cluster_error() },
            ApiServerVersionError::Read { source: cluster_error() }.into(),
            ApiServerVersionError::InvalidGitVersion { value: "v1.36".into() }.into(),
            FleetError::Key { source: OperatorKeyError::Missing { object: "wmco/cloud-private-key".into() } },
        ];
        let seen: Vec<_> = errors.iter().map(|error| (error.to_string(), error.metric_label())).collect();
        assert_eq!(
            seen,
            [
                ("listing WindowsInstances in namespace wmco failed".to_owned(), "upgrade_list"),
                ("WindowsInstance wmco/a: read Node win-a failed".to_owned(), "upgrade_step"),
                ("reading the API server's version failed".to_owned(), "upgrade_api_server_version"),
                (
                    "the API server's gitVersion \"v1.36\" is not a semantic version (e.g. 1.2.3)".to_owned(),
                    "upgrade_version"
                ),
                ("the operator key is not usable".to_owned(), "rekey_key"),
            ]
        );
    }
}
