//! The API server's Kubernetes version ([`ClusterVersion`]), read on every call: the budgeted loops compare the
//! payload's kubelet with it (the kubelet skew rule), so a control-plane upgrade releases waiting work.

use async_trait::async_trait;
use kube::Client;
use semver::Version;

use crate::error::Result;
use crate::facts::kubernetes_version;

/// Reads the API server's Kubernetes version.
#[async_trait]
pub trait ClusterVersion: Send + Sync {
    /// The API server's version: `/version`'s `gitVersion` without its `v` (`v1.36.3+k3s1` → 1.36.3+k3s1).
    ///
    /// # Errors
    /// [`Error::Api`](crate::Error::Api) when `/version` cannot be read, [`Error::InvalidField`](crate::Error::InvalidField)
    /// (field `gitVersion`) when it is not a semantic version.
    async fn kubernetes_version(&self) -> Result<Version>;
}

/// [`ClusterVersion`] from the API server's `/version`.
#[derive(Clone)]
pub struct KubeClusterVersion {
    client: Client,
}

impl KubeClusterVersion {
    /// Asks the API server behind `client`.
    pub fn new(client: Client) -> Self {
        KubeClusterVersion { client }
    }
}

#[async_trait]
impl ClusterVersion for KubeClusterVersion {
    async fn kubernetes_version(&self) -> Result<Version> {
        kubernetes_version(&self.client).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Error;
    use crate::test_support::{Exchange, scenario, status_reply};

    fn version(git_version: &str) -> serde_json::Value {
        json!({"major": "1", "minor": "36", "gitVersion": git_version, "gitCommit": "", "gitTreeState": "",
               "buildDate": "", "goVersion": "", "compiler": "", "platform": "linux/amd64"})
    }

    #[tokio::test]
    async fn git_versions_parse_with_or_without_the_v_and_a_bad_one_is_named() {
        let exchanges = vec![
            Exchange::get("/version").reply(200, version("v1.36.3")),
            Exchange::get("/version").reply(200, version("v1.33.2+k3s1")),
            Exchange::get("/version").reply(200, version("1.35.0")),
            Exchange::get("/version").reply(200, version("v1.36")),
            Exchange::get("/version").reply(503, status_reply(503, "ServiceUnavailable", "starting")),
        ];
        scenario(exchanges, |client| async move {
            let cluster = KubeClusterVersion::new(client);
            assert_eq!(cluster.kubernetes_version().await.unwrap(), Version::new(1, 36, 3));
            assert_eq!(cluster.kubernetes_version().await.unwrap().minor, 33);
            assert_eq!(cluster.kubernetes_version().await.unwrap(), Version::new(1, 35, 0));
            let invalid = cluster.kubernetes_version().await.unwrap_err();
            assert!(
                matches!(&invalid, Error::InvalidField { field: "gitVersion", value, .. } if value == "v1.36"),
                "{invalid:?}"
            );
            let unreadable = cluster.kubernetes_version().await.unwrap_err();
            assert_eq!(unreadable.to_string(), "discover APIServer version failed");
        })
        .await;
    }
}
