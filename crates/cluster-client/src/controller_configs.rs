//! ControllerConfigs of OpenShift's machine-config operator, which publish the kubelet client CA
//! (`kubeAPIServerServingCAData`): listed, never written.

use async_trait::async_trait;
use kube::Client;
use kube::api::{Api, ListParams};

use crate::error::{Error, Result, Verb};
use crate::types::ControllerConfig;

/// Lists ControllerConfigs.
#[async_trait]
pub trait ControllerConfigs: Send + Sync {
    /// Every ControllerConfig, sorted by name.
    async fn list(&self) -> Result<Vec<ControllerConfig>>;
}

/// [`ControllerConfigs`] over the API server.
#[derive(Clone)]
pub struct KubeControllerConfigs {
    client: Client,
}

impl KubeControllerConfigs {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

#[async_trait]
impl ControllerConfigs for KubeControllerConfigs {
    async fn list(&self) -> Result<Vec<ControllerConfig>> {
        let mut items = Api::<ControllerConfig>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(|source| Error::api(Verb::List, "ControllerConfig", "(all)", source))?
            .items;
        items.sort_by(|left, right| left.metadata.name.cmp(&right.metadata.name));
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_support::{Exchange, scenario, status_reply};

    const PATH: &str = "/apis/machineconfiguration.openshift.io/v1/controllerconfigs?";

    #[tokio::test]
    async fn controller_configs_are_listed_cluster_wide_and_sorted_by_name() {
        let config = |name: &str| {
            json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "ControllerConfig",
                   "metadata": {"name": name}, "spec": {"kubeAPIServerServingCAData": "Q0E="}})
        };
        let list = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "ControllerConfigList", "metadata": {},
            "items": [config("machine-config-controller"), config("another")]
        });
        let exchanges = vec![
            Exchange::get(PATH).reply(200, list),
            Exchange::get(PATH).reply(403, status_reply(403, "Forbidden", "no")),
        ];
        scenario(exchanges, |client| async move {
            let configs = KubeControllerConfigs::new(client);
            let listed = configs.list().await.unwrap();
            let names: Vec<_> = listed.iter().map(|config| config.metadata.name.as_deref()).collect();
            assert_eq!(names, [Some("another"), Some("machine-config-controller")]);
            let error = configs.list().await.unwrap_err();
            assert_eq!(error.to_string(), "list ControllerConfig (all) failed");
        })
        .await;
    }
}
