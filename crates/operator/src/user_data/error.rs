//! The user-data controller's errors: each names the Secret and the step that failed.

use crate::runtime::ReconcilerError;

/// Why one user-data reconcile failed. Every variant is retryable (the controller requeues with backoff).
#[derive(Debug, thiserror::Error)]
pub enum UserDataError {
    /// Reading the live `windows-user-data` failed.
    #[error("reading Secret {object} failed")]
    Read {
        /// `namespace/name`.
        object: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Applying `windows-user-data` failed.
    #[error("applying Secret {object} failed")]
    Apply {
        /// `namespace/name`.
        object: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Asking whether the mirror's namespace exists failed.
    #[error("looking up Namespace {namespace} failed")]
    Namespace {
        /// The namespace.
        namespace: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
}

impl ReconcilerError for UserDataError {
    /// A short, stable label for the errors-by-kind metric.
    ///
    /// ```
    /// use wmco_operator::user_data::UserDataError;
    /// use wmco_operator::runtime::ReconcilerError;
    /// let source = wmco_cluster_client::Error::MissingField {
    ///     verb: wmco_cluster_client::Verb::Apply,
    ///     kind: "Secret",
    ///     name: "windows-user-data".into(),
    ///     field: "metadata.namespace",
    /// };
    /// let error = UserDataError::Apply { object: "openshift-machine-api/windows-user-data".into(), source: Box::new(source) };
    /// assert_eq!(error.metric_label(), "user_data_apply");
    /// ```
    fn metric_label(&self) -> &'static str {
        match self {
            Self::Read { .. } => "user_data_read",
            Self::Apply { .. } => "user_data_apply",
            Self::Namespace { .. } => "user_data_namespace",
        }
    }
}
