//! Pods and their logs, read-only: the operator's own pods found by label, and the log of one container (what
//! `kubectl logs` prints), for `wmco diagnose`.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams, LogParams};

use crate::error::{Error, Result, Verb, object_name};

/// Reads pods and their logs.
#[async_trait]
pub trait PodLogs: Send + Sync {
    /// The pods of `namespace` matching `label_selector` (e.g. `app.kubernetes.io/name=windows-machine-config-operator`),
    /// in name order.
    async fn list_pods(&self, namespace: &str, label_selector: &str) -> Result<Vec<Pod>>;

    /// The log of `container` in pod `namespace/pod`, its current run, only the last `tail_lines` lines when given.
    async fn log(&self, namespace: &str, pod: &str, container: &str, tail_lines: Option<i64>) -> Result<String>;
}

/// [`PodLogs`] over the API server.
#[derive(Clone)]
pub struct KubePodLogs {
    client: Client,
}

impl KubePodLogs {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubePodLogs { client }
    }
}

#[async_trait]
impl PodLogs for KubePodLogs {
    async fn list_pods(&self, namespace: &str, label_selector: &str) -> Result<Vec<Pod>> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let mut pods = api
            .list(&ListParams::default().labels(label_selector))
            .await
            .map_err(|source| Error::api(Verb::List, "Pod", format!("{label_selector} in {namespace}"), source))?
            .items;
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(pods)
    }

    async fn log(&self, namespace: &str, pod: &str, container: &str, tail_lines: Option<i64>) -> Result<String> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = LogParams { container: Some(container.to_owned()), tail_lines, ..LogParams::default() };
        api.logs(pod, &params).await.map_err(|source| {
            Error::api(
                Verb::ReadLog,
                "Pod",
                format!("{} container {container}", object_name(Some(namespace), pod)),
                source,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Exchange, scenario, status_reply};
    use serde_json::json;

    #[tokio::test]
    async fn list_pods_selects_by_label_in_name_order() {
        let list = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [
            {"metadata": {"name": "wmco-b", "namespace": "wmco"}},
            {"metadata": {"name": "wmco-a", "namespace": "wmco"}},
        ]});
        let exchanges = vec![
            Exchange::get("/api/v1/namespaces/wmco/pods?&labelSelector=app.kubernetes.io%2Fname%3Dwmco")
                .reply(200, list),
        ];
        let pods = scenario(exchanges, |client| async move {
            KubePodLogs::new(client).list_pods("wmco", "app.kubernetes.io/name=wmco").await
        })
        .await
        .unwrap();
        let names: Vec<_> = pods.iter().map(|pod| pod.metadata.name.clone().unwrap_or_default()).collect();
        assert_eq!(names, ["wmco-a", "wmco-b"]);
    }

    #[tokio::test]
    async fn log_reads_one_container_s_tail_and_names_the_pod_when_refused() {
        let exchanges = vec![
            Exchange::get("/api/v1/namespaces/wmco/pods/wmco-a/log?&container=wmco&tailLines=100")
                .reply_text(200, "line 1\nline 2\n"),
            Exchange::get("/api/v1/namespaces/wmco/pods/wmco-b/log?&container=wmco")
                .reply(400, status_reply(400, "BadRequest", "container \"wmco\" is waiting to start")),
        ];
        let (log, refused) = scenario(exchanges, |client| async move {
            let logs = KubePodLogs::new(client);
            (logs.log("wmco", "wmco-a", "wmco", Some(100)).await, logs.log("wmco", "wmco-b", "wmco", None).await)
        })
        .await;
        assert_eq!(log.unwrap(), "line 1\nline 2\n");
        assert_eq!(refused.unwrap_err().to_string(), "read the log of Pod wmco/wmco-b container wmco failed");
    }
}
