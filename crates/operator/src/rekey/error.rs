//! The rotation's errors: each names the object and the step that failed. A failed step on one host is not an
//! error of the reconcile (it is reported in the outcome and retried); these stop the whole reconcile.

use crate::fleet::{ApiServerVersionError, ObserveError};
use crate::operator_key::OperatorKeyError;
use crate::runtime::ReconcilerError;

/// Why a rotation reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum RekeyError {
    /// `cloud-private-key` is absent or unusable: nothing can be decided without the current key.
    #[error("the operator key is not usable")]
    Key {
        /// What is wrong with the Secret.
        #[source]
        source: OperatorKeyError,
    },
    /// The API server's version could not be read (the skew rule needs it).
    #[error("reading the API server's version failed")]
    ApiServerVersion {
        /// The error.
        #[source]
        source: Box<ApiServerVersionError>,
    },
    /// Reading the fleet failed.
    #[error("reading {what} failed")]
    Read {
        /// What was read, e.g. `the WindowsInstances in wmco`, `Node win-1`, `the Windows Machines`.
        what: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
}

impl From<ObserveError> for RekeyError {
    /// The rotation's words for a failed fleet read: what could not be read.
    fn from(error: ObserveError) -> Self {
        match error {
            ObserveError::ListRecords { namespace, source } => {
                RekeyError::Read { what: format!("the WindowsInstances in {namespace}"), source }
            }
            ObserveError::ReadNode { node, source, .. } => RekeyError::Read { what: format!("Node {node}"), source },
        }
    }
}

impl ReconcilerError for RekeyError {
    /// A short, stable label for the errors-by-kind metric.
    ///
    /// ```
    /// use wmco_operator::operator_key::OperatorKeyError;
    /// use wmco_operator::rekey::RekeyError;
    /// use wmco_operator::runtime::ReconcilerError;
    /// let error = RekeyError::Key { source: OperatorKeyError::Missing { object: "wmco/cloud-private-key".into() } };
    /// assert_eq!(error.metric_label(), "rekey_key");
    /// ```
    fn metric_label(&self) -> &'static str {
        match self {
            Self::Key { .. } => "rekey_key",
            Self::ApiServerVersion { .. } => "rekey_api_server_version",
            Self::Read { .. } => "rekey_read",
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    use crate::fleet::observe::sample_cluster_error as cluster_error;

    #[test]
    fn fleet_reads_and_api_server_versions_keep_the_rotations_messages_and_labels() {
        let list: RekeyError = ObserveError::ListRecords { namespace: "wmco".into(), source: cluster_error() }.into();
        let node: RekeyError =
            ObserveError::ReadNode { instance: "wmco/a".into(), node: "win-a".into(), source: cluster_error() }.into();
        assert_eq!(
            (list.to_string(), list.metric_label()),
            ("reading the WindowsInstances in wmco failed".into(), "rekey_read")
        );
        assert_eq!((node.to_string(), node.metric_label()), ("reading Node win-a failed".into(), "rekey_read"));

        let version = RekeyError::ApiServerVersion {
            source: Box::new(ApiServerVersionError::InvalidGitVersion { value: "v1.36".into() }),
        };
        assert_eq!(version.to_string(), "reading the API server's version failed");
        assert_eq!(
            version.source().map(ToString::to_string).as_deref(),
            Some("the API server's gitVersion \"v1.36\" is not a semantic version (e.g. 1.2.3)")
        );
        assert_eq!(version.metric_label(), "rekey_api_server_version");
    }
}
