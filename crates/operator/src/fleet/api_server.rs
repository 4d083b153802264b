//! The API server's Kubernetes version, read on every reconcile of a budgeted loop (the kubelet skew rule compares
//! the payload's kubelet with it, so a control-plane upgrade releases waiting work).

use futures::future::BoxFuture;
use kube::Client;
use semver::Version;

/// Why the API server's version is unknown. Each loop maps it to its own error (same messages, same labels).
#[derive(Debug, thiserror::Error)]
pub enum ApiServerVersionError {
    /// `/version` could not be read.
    #[error("reading the API server's version failed")]
    Read {
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// `/version` answered a `gitVersion` that is not semver.
    #[error("the API server's gitVersion {value:?} is not a semantic version (e.g. 1.2.3)")]
    InvalidGitVersion {
        /// The `gitVersion` given.
        value: String,
    },
}

/// Where a loop reads the API server's Kubernetes version from.
pub trait ApiServerVersion: Send + Sync {
    /// The API server's version.
    fn kubernetes_version(&self) -> BoxFuture<'_, Result<Version, ApiServerVersionError>>;
}

/// [`ApiServerVersion`] from the API server's `/version` (`gitVersion`, e.g. `v1.36.3`).
#[derive(Clone)]
pub struct KubeApiServerVersion {
    client: Client,
}

impl KubeApiServerVersion {
    /// Asks the API server behind `client`.
    pub fn new(client: Client) -> Self {
        KubeApiServerVersion { client }
    }
}

impl ApiServerVersion for KubeApiServerVersion {
    fn kubernetes_version(&self) -> BoxFuture<'_, Result<Version, ApiServerVersionError>> {
        Box::pin(async move {
            let info = self.client.apiserver_version().await.map_err(|source| ApiServerVersionError::Read {
                source: Box::new(wmco_cluster_client::Error::api(
                    wmco_cluster_client::Verb::Discover,
                    "APIServer",
                    "version",
                    source,
                )),
            })?;
            parse_git_version(&info.git_version)
        })
    }
}

/// `v1.36.3+k3s1` → 1.36.3 (build metadata kept; the skew rule reads major.minor only).
fn parse_git_version(git_version: &str) -> Result<Version, ApiServerVersionError> {
    Version::parse(git_version.trim_start_matches('v'))
        .map_err(|_| ApiServerVersionError::InvalidGitVersion { value: git_version.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_versions_parse_with_or_without_the_v() {
        assert_eq!(parse_git_version("v1.36.3").unwrap(), Version::new(1, 36, 3));
        assert_eq!(parse_git_version("v1.33.2+k3s1").unwrap().minor, 33);
        assert!(parse_git_version("v1.36").is_err());
    }

    #[test]
    fn an_unparsable_git_version_is_named_in_the_message() {
        let error = parse_git_version("v1.36").unwrap_err();
        assert_eq!(error.to_string(), "the API server's gitVersion \"v1.36\" is not a semantic version (e.g. 1.2.3)");
    }
}
