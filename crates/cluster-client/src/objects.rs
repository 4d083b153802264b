//! Secrets and ConfigMaps: read any (the admin's inputs), and create or update the operator's own by server-side
//! apply with field manager `wmco`, or, for a ConfigMap many writers add to (one entry per host), one entry at a time
//! by a merge patch; and whether a Namespace is there to hold them.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};

use crate::error::{Error, Result, Verb, object_name};
use crate::names::FIELD_MANAGER;

/// The namespace and name of an object to apply, or the error saying which is missing.
fn apply_target<'a>(kind: &'static str, metadata: &'a kube::api::ObjectMeta) -> Result<(&'a str, &'a str)> {
    let name = metadata.name.as_deref().ok_or(Error::MissingField {
        verb: Verb::Apply,
        kind,
        name: String::from("(unnamed)"),
        field: "metadata.name",
    })?;
    let namespace = metadata.namespace.as_deref().ok_or_else(|| Error::MissingField {
        verb: Verb::Apply,
        kind,
        name: name.to_owned(),
        field: "metadata.namespace",
    })?;
    Ok((namespace, name))
}

/// Reads Secrets and applies the operator's own.
#[async_trait]
pub trait Secrets: Send + Sync {
    /// The Secret `namespace/name`, or `None` if there is none.
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<Secret>>;

    /// Creates or updates `secret` (namespace and name set) by server-side apply; fields of other managers stay.
    async fn apply(&self, secret: &Secret) -> Result<Secret>;
}

/// Reads ConfigMaps and applies the operator's own.
#[async_trait]
pub trait ConfigMaps: Send + Sync {
    /// The ConfigMap `namespace/name`, or `None` if there is none.
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<ConfigMap>>;

    /// Creates or updates `config_map` (namespace and name set) by server-side apply.
    async fn apply(&self, config_map: &ConfigMap) -> Result<ConfigMap>;

    /// Sets (`Some`) or removes (`None`) the one `data` entry `key` of ConfigMap `namespace/name`, leaving its other
    /// entries as they are (a merge patch, so concurrent writers of other keys never undo each other). Setting an
    /// entry of a missing ConfigMap creates it with `labels`; removing one from a missing ConfigMap does nothing.
    async fn set_entry(&self, entry: &ConfigMapEntry<'_>, value: Option<&str>) -> Result<()>;
}

/// One `data` entry of a ConfigMap, and the labels the ConfigMap is created with when it is missing.
#[derive(Clone, Copy, Debug)]
pub struct ConfigMapEntry<'a> {
    /// The ConfigMap's namespace.
    pub namespace: &'a str,
    /// The ConfigMap's name.
    pub name: &'a str,
    /// The entry's key.
    pub key: &'a str,
    /// The labels of a ConfigMap this creates.
    pub labels: &'a [(&'a str, &'a str)],
}

impl ConfigMapEntry<'_> {
    /// The ConfigMap holding only this entry with `value`, as created when missing.
    pub(crate) fn new_config_map(&self, value: &str) -> ConfigMap {
        let labels = self.labels.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect();
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(self.name.to_owned()),
                namespace: Some(self.namespace.to_owned()),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            data: Some([(self.key.to_owned(), value.to_owned())].into()),
            ..ConfigMap::default()
        }
    }
}

/// Whether a Namespace exists, asked by name (`get` on one Namespace, never a list).
#[async_trait]
pub trait Namespaces: Send + Sync {
    /// Whether Namespace `name` exists and is not being deleted (nothing new can be created in a terminating one).
    async fn active(&self, name: &str) -> Result<bool>;
}

/// [`Secrets`] over the API server.
#[derive(Clone)]
pub struct KubeSecrets {
    client: Client,
}

impl KubeSecrets {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeSecrets { client }
    }
}

#[async_trait]
impl Secrets for KubeSecrets {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<Secret>> {
        Api::<Secret>::namespaced(self.client.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(|source| Error::api(Verb::Get, "Secret", object_name(Some(namespace), name), source))
    }

    async fn apply(&self, secret: &Secret) -> Result<Secret> {
        let (namespace, name) = apply_target("Secret", &secret.metadata)?;
        Api::<Secret>::namespaced(self.client.clone(), namespace)
            .patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(secret))
            .await
            .map_err(|source| Error::api(Verb::Apply, "Secret", object_name(Some(namespace), name), source))
    }
}

/// [`ConfigMaps`] over the API server.
#[derive(Clone)]
pub struct KubeConfigMaps {
    client: Client,
}

impl KubeConfigMaps {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeConfigMaps { client }
    }
}

#[async_trait]
impl ConfigMaps for KubeConfigMaps {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<ConfigMap>> {
        Api::<ConfigMap>::namespaced(self.client.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(|source| Error::api(Verb::Get, "ConfigMap", object_name(Some(namespace), name), source))
    }

    async fn apply(&self, config_map: &ConfigMap) -> Result<ConfigMap> {
        let (namespace, name) = apply_target("ConfigMap", &config_map.metadata)?;
        Api::<ConfigMap>::namespaced(self.client.clone(), namespace)
            .patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(config_map))
            .await
            .map_err(|source| Error::api(Verb::Apply, "ConfigMap", object_name(Some(namespace), name), source))
    }

    async fn set_entry(&self, entry: &ConfigMapEntry<'_>, value: Option<&str>) -> Result<()> {
        let api = Api::<ConfigMap>::namespaced(self.client.clone(), entry.namespace);
        let described = || object_name(Some(entry.namespace), entry.name);
        let body = serde_json::json!({ "data": { entry.key: value } });
        let patch = || async {
            api.patch(entry.name, &PatchParams::default(), &Patch::Merge(&body))
                .await
                .map(drop)
                .map_err(|source| Error::api(Verb::Patch, "ConfigMap", described(), source))
        };
        match (patch().await, value) {
            (Err(error), Some(value)) if error.is_not_found() => {
                match api.create(&PostParams::default(), &entry.new_config_map(value)).await {
                    Ok(_) => Ok(()),
                    // Another writer created it first: the patch now applies.
                    Err(source) => match Error::api(Verb::Create, "ConfigMap", described(), source) {
                        error if error.is_conflict() => patch().await,
                        error => Err(error),
                    },
                }
            }
            (Err(error), None) if error.is_not_found() => Ok(()),
            (result, _) => result,
        }
    }
}

/// [`Namespaces`] over the API server.
#[derive(Clone)]
pub struct KubeNamespaces {
    client: Client,
}

impl KubeNamespaces {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeNamespaces { client }
    }
}

#[async_trait]
impl Namespaces for KubeNamespaces {
    async fn active(&self, name: &str) -> Result<bool> {
        let namespace = Api::<Namespace>::all(self.client.clone())
            .get_opt(name)
            .await
            .map_err(|source| Error::api(Verb::Get, "Namespace", name, source))?;
        Ok(namespace.is_some_and(|namespace| {
            namespace.status.and_then(|status| status.phase).as_deref() != Some("Terminating")
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{APPLY_PATCH, Exchange, scenario, status_reply};
    use serde_json::json;

    #[tokio::test]
    async fn secret_get_and_apply_use_the_namespaced_paths_and_field_manager() {
        let secret_json = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "windows-user-data", "namespace": "openshift-machine-api"},
            "data": {"userData": "PHBvd2Vyc2hlbGw+"}
        });
        let exchanges = vec![
            Exchange::get("/api/v1/namespaces/wmco/secrets/cloud-private-key")
                .reply(404, status_reply(404, "NotFound", "not found")),
            Exchange::patch(
                "/api/v1/namespaces/openshift-machine-api/secrets/windows-user-data?&force=true&fieldManager=wmco",
                APPLY_PATCH,
                secret_json.clone(),
            )
            .reply(200, secret_json.clone()),
        ];
        let secret: Secret = serde_json::from_value(secret_json).unwrap();
        scenario(exchanges, |client| async move {
            let secrets = KubeSecrets::new(client);
            assert!(secrets.get("wmco", "cloud-private-key").await.unwrap().is_none());
            secrets.apply(&secret).await.unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn config_map_get_and_apply() {
        let config_map_json = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "trusted-ca", "namespace": "wmco",
                         "labels": {"config.openshift.io/inject-trusted-cabundle": "true"}}
        });
        let exchanges = vec![
            Exchange::get("/api/v1/namespaces/wmco/configmaps/windows-instances").reply(
                200,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "windows-instances"},
                       "data": {"10.0.0.5": "username=Administrator"}}),
            ),
            Exchange::patch(
                "/api/v1/namespaces/wmco/configmaps/trusted-ca?&force=true&fieldManager=wmco",
                APPLY_PATCH,
                config_map_json.clone(),
            )
            .reply(200, config_map_json.clone()),
        ];
        let config_map: ConfigMap = serde_json::from_value(config_map_json).unwrap();
        scenario(exchanges, |client| async move {
            let config_maps = KubeConfigMaps::new(client);
            let instances = config_maps.get("wmco", "windows-instances").await.unwrap().unwrap();
            assert_eq!(instances.data.unwrap()["10.0.0.5"], "username=Administrator");
            config_maps.apply(&config_map).await.unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn a_namespace_is_active_when_it_exists_and_is_not_terminating() {
        const PATH: &str = "/api/v1/namespaces/openshift-cluster-api";
        let namespace = |phase: &str| {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "openshift-cluster-api"},
                   "status": {"phase": phase}})
        };
        let exchanges = vec![
            Exchange::get(PATH)
                .reply(404, status_reply(404, "NotFound", "namespaces \"openshift-cluster-api\" not found")),
            Exchange::get(PATH).reply(200, namespace("Active")),
            Exchange::get(PATH).reply(200, namespace("Terminating")),
            Exchange::get(PATH).reply(403, status_reply(403, "Forbidden", "no")),
        ];
        scenario(exchanges, |client| async move {
            let namespaces = KubeNamespaces::new(client);
            assert!(!namespaces.active("openshift-cluster-api").await.unwrap(), "missing");
            assert!(namespaces.active("openshift-cluster-api").await.unwrap(), "active");
            assert!(!namespaces.active("openshift-cluster-api").await.unwrap(), "terminating");
            let error = namespaces.active("openshift-cluster-api").await.unwrap_err();
            assert_eq!(error.status_code(), Some(403));
            assert_eq!(error.to_string(), "get Namespace openshift-cluster-api failed");
        })
        .await;
    }

    #[tokio::test]
    async fn apply_refuses_an_object_without_namespace() {
        let secret = Secret {
            metadata: kube::api::ObjectMeta { name: Some("x".into()), ..Default::default() },
            ..Secret::default()
        };
        let error =
            scenario(vec![], |client| async move { KubeSecrets::new(client).apply(&secret).await.unwrap_err() }).await;
        assert_eq!(error.to_string(), "apply Secret x: metadata.namespace is missing");
    }
}
