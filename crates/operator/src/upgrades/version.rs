//! Versions the executor compares: the operator's own (written to Nodes without build metadata) and the API
//! server's (read on every reconcile, for the kubelet skew rule).

use futures::future::BoxFuture;
use kube::Client;
use semver::{BuildMetadata, Version};

use super::UpgradesError;

/// The operator's version: `override_version` (`--version-override`, for e2e and benchmarks) or the crate version,
/// without build metadata, as it is written to the `windowsmachineconfig.openshift.io/version` Node annotation.
///
/// ```
/// use wmco_operator::upgrades::operator_version;
/// assert_eq!(operator_version(Some("2.0.0+abc1234"))?.to_string(), "2.0.0");
/// assert_eq!(operator_version(None)?.to_string(), env!("CARGO_PKG_VERSION").split('+').next().unwrap());
/// # Ok::<(), wmco_operator::upgrades::UpgradesError>(())
/// ```
///
/// # Errors
/// [`UpgradesError::InvalidVersion`] when the override (or the crate version) is not semver.
pub fn operator_version(override_version: Option<&str>) -> Result<Version, UpgradesError> {
    let (what, text) = match override_version {
        Some(text) => ("--version-override", text),
        None => ("the crate version", env!("CARGO_PKG_VERSION")),
    };
    let mut version =
        Version::parse(text.trim()).map_err(|_| UpgradesError::InvalidVersion { what, value: text.to_owned() })?;
    version.build = BuildMetadata::EMPTY;
    Ok(version)
}

/// Where the executor reads the API server's Kubernetes version from (the skew rule compares the payload's kubelet
/// with it on every reconcile, so a control-plane upgrade releases waiting upgrades).
pub trait ApiServerVersion: Send + Sync {
    /// The API server's version.
    fn kubernetes_version(&self) -> BoxFuture<'_, Result<Version, UpgradesError>>;
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
    fn kubernetes_version(&self) -> BoxFuture<'_, Result<Version, UpgradesError>> {
        Box::pin(async move {
            let info = self.client.apiserver_version().await.map_err(|source| UpgradesError::ApiServerVersion {
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
fn parse_git_version(git_version: &str) -> Result<Version, UpgradesError> {
    Version::parse(git_version.trim_start_matches('v')).map_err(|_| UpgradesError::InvalidVersion {
        what: "the API server's gitVersion",
        value: git_version.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_wins_and_loses_its_build_metadata() {
        assert_eq!(operator_version(Some(" 10.18.0+e2e ")).unwrap(), Version::new(10, 18, 0));
        let error = operator_version(Some("10.18")).unwrap_err();
        assert_eq!(error.to_string(), "--version-override \"10.18\" is not a semantic version (e.g. 1.2.3)");
    }

    #[test]
    fn git_versions_parse_with_or_without_the_v() {
        assert_eq!(parse_git_version("v1.36.3").unwrap(), Version::new(1, 36, 3));
        assert_eq!(parse_git_version("v1.33.2+k3s1").unwrap().minor, 33);
        assert!(parse_git_version("v1.36").is_err());
    }
}
