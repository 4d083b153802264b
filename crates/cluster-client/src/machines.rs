//! Machines of the OpenShift machine API: read one (is it still there, is it being deleted), delete one so its
//! MachineSet replaces it (a Windows Machine whose host cannot be configured with the current key), and list the
//! Windows Machines ([`WindowsMachines`]; none on plain Kubernetes, [`NoWindowsMachines`]).

use async_trait::async_trait;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams};

use crate::error::{Error, Result, Verb, object_name};
use crate::names::{MACHINE_API_NAMESPACE, MACHINE_OS_ID_LABEL, OS_ID_WINDOWS};
use crate::types::Machine;

/// The kind named in errors.
const KIND: &str = "Machine";

/// Reads and deletes Machines.
#[async_trait]
pub trait Machines: Send + Sync {
    /// The Machine `namespace/name`, or `None` if there is none.
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<Machine>>;

    /// Deletes the Machine `namespace/name` (its MachineSet creates a new one); already gone is fine.
    async fn delete(&self, namespace: &str, name: &str) -> Result<()>;
}

/// Lists the Windows Machines of the machine API.
#[async_trait]
pub trait WindowsMachines: Send + Sync {
    /// Every Machine labelled `machine.openshift.io/os-id: Windows` in `openshift-machine-api`, being deleted or not.
    async fn list(&self) -> Result<Vec<Machine>>;
}

/// [`WindowsMachines`] where the cluster does not serve the machine API (plain Kubernetes): there are none.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use wmco_cluster_client::{NoWindowsMachines, WindowsMachines};
/// assert!(NoWindowsMachines.list().await.unwrap().is_empty());
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWindowsMachines;

#[async_trait]
impl WindowsMachines for NoWindowsMachines {
    async fn list(&self) -> Result<Vec<Machine>> {
        Ok(Vec::new())
    }
}

/// Whether the API server serves the machine API (`machine.openshift.io`), i.e. whether a Machine controller can
/// run at all (plain Kubernetes has no Machines).
pub async fn serves_machine_api(client: &Client) -> Result<bool> {
    let groups = client
        .list_api_groups()
        .await
        .map_err(|source| Error::api(Verb::Discover, "APIGroup", "machine.openshift.io", source))?;
    Ok(groups.groups.iter().any(|group| group.name == "machine.openshift.io"))
}

/// [`Machines`] and [`WindowsMachines`] over the API server.
#[derive(Clone)]
pub struct KubeMachines {
    client: Client,
}

impl KubeMachines {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeMachines { client }
    }
}

#[async_trait]
impl Machines for KubeMachines {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<Machine>> {
        Api::<Machine>::namespaced(self.client.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(|source| Error::api(Verb::Get, KIND, object_name(Some(namespace), name), source))
    }

    async fn delete(&self, namespace: &str, name: &str) -> Result<()> {
        match Api::<Machine>::namespaced(self.client.clone(), namespace).delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(Error::api(Verb::Delete, KIND, object_name(Some(namespace), name), source)),
        }
    }
}

#[async_trait]
impl WindowsMachines for KubeMachines {
    async fn list(&self) -> Result<Vec<Machine>> {
        let selector = format!("{MACHINE_OS_ID_LABEL}={OS_ID_WINDOWS}");
        Api::<Machine>::namespaced(self.client.clone(), MACHINE_API_NAMESPACE)
            .list(&ListParams::default().labels(&selector))
            .await
            .map(|list| list.items)
            .map_err(|source| {
                Error::api(Verb::List, KIND, format!("in {MACHINE_API_NAMESPACE} with {selector}"), source)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Exchange, scenario, status_reply};
    use serde_json::json;

    const PATH: &str = "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machines";

    #[tokio::test]
    async fn the_machine_api_is_served_only_when_discovery_lists_its_group() {
        let groups = |names: &[&str]| {
            let groups: Vec<serde_json::Value> = names
                .iter()
                .map(|name| json!({"name": name, "versions": [{"groupVersion": format!("{name}/v1beta1"), "version": "v1beta1"}]}))
                .collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        };
        let exchanges = vec![
            Exchange::get("/apis").reply(200, groups(&["apps", "machine.openshift.io"])),
            Exchange::get("/apis").reply(200, groups(&["apps", "config.openshift.io"])),
        ];
        scenario(exchanges, |client| async move {
            assert!(serves_machine_api(&client).await.unwrap());
            assert!(!serves_machine_api(&client).await.unwrap());
        })
        .await;
    }

    #[tokio::test]
    async fn get_and_delete_use_the_machine_api_paths_and_tolerate_absence() {
        let machine = json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": "win-a", "namespace": "openshift-machine-api"},
            "spec": {}, "status": {"phase": "Running"}
        });
        let exchanges = vec![
            Exchange::get(&format!("{PATH}/win-a")).reply(200, machine.clone()),
            Exchange::get(&format!("{PATH}/gone")).reply(404, status_reply(404, "NotFound", "not found")),
            Exchange::delete(&format!("{PATH}/win-a?")).reply(200, machine),
            Exchange::delete(&format!("{PATH}/gone?")).reply(404, status_reply(404, "NotFound", "not found")),
            Exchange::delete(&format!("{PATH}/locked?")).reply(403, status_reply(403, "Forbidden", "no")),
        ];
        scenario(exchanges, |client| async move {
            let machines = KubeMachines::new(client);
            let found = machines.get("openshift-machine-api", "win-a").await.unwrap().unwrap();
            assert_eq!(found.status.unwrap().phase.as_deref(), Some("Running"));
            assert!(machines.get("openshift-machine-api", "gone").await.unwrap().is_none());
            machines.delete("openshift-machine-api", "win-a").await.unwrap();
            machines.delete("openshift-machine-api", "gone").await.unwrap();
            let error = machines.delete("openshift-machine-api", "locked").await.unwrap_err();
            assert!(error.to_string().contains("openshift-machine-api/locked"), "{error}");
        })
        .await;
    }

    #[tokio::test]
    async fn windows_machines_are_listed_by_their_os_label_in_the_machine_api_namespace() {
        let list = json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineList", "metadata": {},
            "items": [{
                "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
                "metadata": {"name": "win-a", "namespace": "openshift-machine-api",
                             "labels": {"machine.openshift.io/os-id": "Windows"}},
                "spec": {}
            }]
        });
        let selected = format!("{PATH}?&labelSelector=machine.openshift.io%2Fos-id%3DWindows");
        let exchanges = vec![
            Exchange::get(&selected).reply(200, list),
            Exchange::get(&selected).reply(403, status_reply(403, "Forbidden", "no")),
        ];
        scenario(exchanges, |client| async move {
            let machines = KubeMachines::new(client);
            let listed = WindowsMachines::list(&machines).await.unwrap();
            let names: Vec<_> = listed.iter().map(|machine| machine.metadata.name.as_deref()).collect();
            assert_eq!(names, [Some("win-a")]);
            let error = WindowsMachines::list(&machines).await.unwrap_err();
            assert!(
                error.to_string().contains("in openshift-machine-api with machine.openshift.io/os-id=Windows"),
                "{error}"
            );
        })
        .await;
    }

    #[tokio::test]
    async fn without_the_machine_api_there_are_no_windows_machines() {
        assert!(NoWindowsMachines.list().await.unwrap().is_empty());
    }
}
