//! The API server's Kubernetes version as the fleet controller reads it on every reconcile (the kubelet skew rule
//! compares the payload's kubelet with it, so a control-plane upgrade releases waiting work): the reading itself is
//! `wmco_cluster_client::ClusterVersion`; this module keeps the words for its failures.

use wmco_cluster_client::Error;

/// Why the API server's version is unknown (a [`FleetError`](super::FleetError) in a reconcile).
#[derive(Debug, thiserror::Error)]
pub enum ApiServerVersionError {
    /// `/version` could not be read.
    #[error("reading the API server's version failed")]
    Read {
        /// The cluster error.
        #[source]
        source: Box<Error>,
    },
    /// `/version` answered a `gitVersion` that is not semver.
    #[error("the API server's gitVersion {value:?} is not a semantic version (e.g. 1.2.3)")]
    InvalidGitVersion {
        /// The `gitVersion` given.
        value: String,
    },
}

impl From<Error> for ApiServerVersionError {
    /// A `gitVersion` the cluster client could not parse is [`ApiServerVersionError::InvalidGitVersion`]; any other
    /// failure is [`ApiServerVersionError::Read`].
    fn from(error: Error) -> Self {
        match error {
            Error::InvalidField { field: "gitVersion", value, .. } => {
                ApiServerVersionError::InvalidGitVersion { value }
            }
            other => ApiServerVersionError::Read { source: Box::new(other) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unparsable_git_version_is_named_in_the_message() {
        let error = ApiServerVersionError::from(Error::InvalidField {
            kind: "APIServer",
            name: "version".into(),
            field: "gitVersion",
            value: "v1.36".into(),
            expected: "a version such as v1.36.0",
        });
        assert_eq!(error.to_string(), "the API server's gitVersion \"v1.36\" is not a semantic version (e.g. 1.2.3)");
    }

    #[test]
    fn any_other_cluster_error_is_a_failed_read() {
        let error = ApiServerVersionError::from(Error::MissingField {
            verb: wmco_cluster_client::Verb::Discover,
            kind: "APIServer",
            name: "version".into(),
            field: "gitVersion",
        });
        assert_eq!(error.to_string(), "reading the API server's version failed");
    }
}
