//! The rotation's errors: each names the object and the step that failed. A failed step on one host is not an
//! error of the reconcile (it is reported in the outcome and retried); these stop the whole reconcile.

use crate::operator_key::OperatorKeyError;
use crate::runtime::ReconcilerError;
use crate::upgrades::UpgradesError;

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
        source: Box<UpgradesError>,
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
