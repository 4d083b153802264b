//! `WindowsInstance` records: read, list, apply the spec (with the finalizer), apply the status by server-side
//! apply with field manager `wmco`, release the finalizer, delete.

use async_trait::async_trait;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::{Client, Resource};
use serde_json::json;

use crate::error::{Error, Result, Verb, object_name};
use crate::names::{BOOTSTRAP_KEY_FIELD_MANAGER, FIELD_MANAGER, INSTANCE_FINALIZER};
use crate::types::{WindowsInstance, WindowsInstanceStatus};

const KIND: &str = "WindowsInstance";

/// What the instances controller does to `WindowsInstance` records.
#[async_trait]
pub trait InstanceRecords: Send + Sync {
    /// The record `namespace/name`, or `None`.
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<WindowsInstance>>;

    /// Every record in `namespace`, in name order.
    async fn list(&self, namespace: &str) -> Result<Vec<WindowsInstance>>;

    /// Creates or updates the record's labels and spec by server-side apply, adding the
    /// [`INSTANCE_FINALIZER`]. Not for records being deleted.
    async fn apply(&self, instance: &WindowsInstance) -> Result<WindowsInstance>;

    /// Sets the status of `namespace/name` by server-side apply of the `status` subresource, every field but
    /// `approvedBootstrapKeySha256`: that one is written only by [`InstanceRecords::apply_bootstrap_key`] and kept
    /// as it is here, whatever `status` holds.
    async fn apply_status(
        &self,
        namespace: &str,
        name: &str,
        status: &WindowsInstanceStatus,
    ) -> Result<WindowsInstance>;

    /// Sets (`Some`) or clears (`None`) `status.approvedBootstrapKeySha256` of `namespace/name`, the public key of
    /// the one bootstrap CSR approved in the current configuration attempt, by server-side apply under its own field
    /// manager ([`BOOTSTRAP_KEY_FIELD_MANAGER`]), so no other status write drops it.
    async fn apply_bootstrap_key(
        &self,
        namespace: &str,
        name: &str,
        public_key_sha256: Option<&str>,
    ) -> Result<WindowsInstance>;

    /// Sets `status.approvedBootstrapKeySha256` as [`InstanceRecords::apply_bootstrap_key`] does, on condition that
    /// the record is still as `read` (its resourceVersion is sent with the apply): a record changed since, by
    /// another writer or a replica that led before, fails with a conflict ([`crate::Error::is_conflict`]) instead of
    /// being overwritten.
    async fn apply_bootstrap_key_if_unchanged(
        &self,
        read: &WindowsInstance,
        public_key_sha256: &str,
    ) -> Result<WindowsInstance>;

    /// Removes the [`INSTANCE_FINALIZER`] from `instance` as read (the patch carries the resourceVersion read, so a
    /// concurrent change fails with a conflict instead of dropping another finalizer). Does nothing when it is
    /// absent.
    async fn release_finalizer(&self, instance: &WindowsInstance) -> Result<()>;

    /// Deletes the record; a record already gone is not an error.
    async fn delete(&self, namespace: &str, name: &str) -> Result<()>;
}

/// [`InstanceRecords`] over the API server.
#[derive(Clone)]
pub struct KubeInstanceRecords {
    client: Client,
}

impl KubeInstanceRecords {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeInstanceRecords { client }
    }

    fn api(&self, namespace: &str) -> Api<WindowsInstance> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

/// The identity of a record, or the error naming the missing field.
fn identity(verb: Verb, instance: &WindowsInstance) -> Result<(String, String)> {
    let name = instance.metadata.name.clone().ok_or(Error::MissingField {
        verb,
        kind: KIND,
        name: String::from("(unnamed)"),
        field: "metadata.name",
    })?;
    let namespace = instance.metadata.namespace.clone().ok_or_else(|| Error::MissingField {
        verb,
        kind: KIND,
        name: name.clone(),
        field: "metadata.namespace",
    })?;
    Ok((namespace, name))
}

/// The apply body for a record's labels, finalizer and spec.
pub(crate) fn spec_apply_body(namespace: &str, name: &str, instance: &WindowsInstance) -> serde_json::Value {
    let mut metadata = json!({ "name": name, "namespace": namespace, "finalizers": [INSTANCE_FINALIZER] });
    if let Some(labels) = &instance.metadata.labels {
        metadata["labels"] = json!(labels);
    }
    json!({
        "apiVersion": WindowsInstance::api_version(&()),
        "kind": WindowsInstance::kind(&()),
        "metadata": metadata,
        "spec": instance.spec,
    })
}

/// The merge patch that drops [`INSTANCE_FINALIZER`] from the finalizers as read, carrying the resourceVersion read so
/// a concurrent change fails with a conflict; `None` when the finalizer is absent.
pub(crate) fn finalizer_release_patch(instance: &WindowsInstance) -> Option<serde_json::Value> {
    let finalizers = instance.metadata.finalizers.as_deref().unwrap_or_default();
    if !finalizers.iter().any(|finalizer| finalizer == INSTANCE_FINALIZER) {
        return None;
    }
    let remaining: Vec<&String> = finalizers.iter().filter(|finalizer| *finalizer != INSTANCE_FINALIZER).collect();
    Some(json!({ "metadata": { "resourceVersion": instance.metadata.resource_version, "finalizers": remaining } }))
}

/// The apply body for a record's status, its `lastError` and condition messages redacted
/// ([`wmco_redact::redact`]): an error quoting a proxy URL or a host's output never puts a credential in a record.
pub(crate) fn status_apply_body(name: &str, status: &WindowsInstanceStatus) -> serde_json::Value {
    let mut status = WindowsInstanceStatus { approved_bootstrap_key_sha256: None, ..status.clone() };
    status.last_error = status.last_error.as_deref().map(wmco_redact::redact);
    for condition in &mut status.conditions {
        condition.message = wmco_redact::redact(&condition.message);
    }
    json!({
        "apiVersion": WindowsInstance::api_version(&()),
        "kind": WindowsInstance::kind(&()),
        "metadata": { "name": name },
        "status": status,
    })
}

/// The server-side apply body of the bootstrap key alone: the key, or an empty status that releases it.
pub(crate) fn bootstrap_key_apply_body(name: &str, public_key_sha256: Option<&str>) -> serde_json::Value {
    let status = match public_key_sha256 {
        Some(key) => json!({ "approvedBootstrapKeySha256": key }),
        None => json!({}),
    };
    json!({
        "apiVersion": WindowsInstance::api_version(&()),
        "kind": WindowsInstance::kind(&()),
        "metadata": { "name": name },
        "status": status,
    })
}

#[async_trait]
impl InstanceRecords for KubeInstanceRecords {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<WindowsInstance>> {
        self.api(namespace)
            .get_opt(name)
            .await
            .map_err(|source| Error::api(Verb::Get, KIND, object_name(Some(namespace), name), source))
    }

    async fn list(&self, namespace: &str) -> Result<Vec<WindowsInstance>> {
        let mut items = self
            .api(namespace)
            .list(&ListParams::default())
            .await
            .map_err(|source| Error::api(Verb::List, KIND, format!("in {namespace}"), source))?
            .items;
        items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(items)
    }

    async fn apply(&self, instance: &WindowsInstance) -> Result<WindowsInstance> {
        let (namespace, name) = identity(Verb::Apply, instance)?;
        let body = spec_apply_body(&namespace, &name, instance);
        self.api(&namespace)
            .patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body))
            .await
            .map_err(|source| Error::api(Verb::Apply, KIND, object_name(Some(&namespace), &name), source))
    }

    async fn apply_status(
        &self,
        namespace: &str,
        name: &str,
        status: &WindowsInstanceStatus,
    ) -> Result<WindowsInstance> {
        let body = status_apply_body(name, status);
        self.api(namespace)
            .patch_status(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body))
            .await
            .map_err(|source| Error::api(Verb::Apply, KIND, object_name(Some(namespace), name), source))
    }

    async fn apply_bootstrap_key(
        &self,
        namespace: &str,
        name: &str,
        public_key_sha256: Option<&str>,
    ) -> Result<WindowsInstance> {
        let body = bootstrap_key_apply_body(name, public_key_sha256);
        self.api(namespace)
            .patch_status(name, &PatchParams::apply(BOOTSTRAP_KEY_FIELD_MANAGER).force(), &Patch::Apply(&body))
            .await
            .map_err(|source| Error::api(Verb::Apply, KIND, object_name(Some(namespace), name), source))
    }

    async fn apply_bootstrap_key_if_unchanged(
        &self,
        read: &WindowsInstance,
        public_key_sha256: &str,
    ) -> Result<WindowsInstance> {
        let (namespace, name) = identity(Verb::Apply, read)?;
        let mut body = bootstrap_key_apply_body(&name, Some(public_key_sha256));
        body["metadata"]["resourceVersion"] = json!(read.metadata.resource_version);
        self.api(&namespace)
            .patch_status(&name, &PatchParams::apply(BOOTSTRAP_KEY_FIELD_MANAGER).force(), &Patch::Apply(&body))
            .await
            .map_err(|source| Error::api(Verb::Apply, KIND, object_name(Some(&namespace), &name), source))
    }

    async fn release_finalizer(&self, instance: &WindowsInstance) -> Result<()> {
        let (namespace, name) = identity(Verb::Patch, instance)?;
        let Some(patch) = finalizer_release_patch(instance) else {
            return Ok(());
        };
        self.api(&namespace)
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
            .map_err(|source| Error::api(Verb::Patch, KIND, object_name(Some(&namespace), &name), source))
    }

    async fn delete(&self, namespace: &str, name: &str) -> Result<()> {
        match self.api(namespace).delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(Error::api(Verb::Delete, KIND, object_name(Some(namespace), name), source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{APPLY_PATCH, Exchange, MERGE_PATCH, scenario, status_reply};
    use crate::types::{InstanceOrigin, InstancePhase, WindowsInstanceSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use serde_json::Value;

    const BASE: &str = "/apis/windowsmachineconfig.openshift.io/v1alpha1/namespaces/wmco/windowsinstances";

    fn spec() -> WindowsInstanceSpec {
        WindowsInstanceSpec {
            address: "10.0.0.5".into(),
            username: "Administrator".into(),
            origin: InstanceOrigin::Byoh,
            machine_name: None,
            expected_node_name: None,
        }
    }

    fn stored(finalizers: Value) -> Value {
        json!({
            "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
            "metadata": {"name": "byoh-10-0-0-5", "namespace": "wmco", "resourceVersion": "7", "finalizers": finalizers},
            "spec": {"address": "10.0.0.5", "username": "Administrator", "origin": "Byoh"}
        })
    }

    #[tokio::test]
    async fn apply_sends_labels_finalizer_and_spec_with_field_manager_wmco() {
        let mut instance = WindowsInstance::new("byoh-10-0-0-5", spec());
        instance.metadata.namespace = Some("wmco".into());
        instance.metadata.labels = Some([("app".to_owned(), "wmco".to_owned())].into());
        let expected = json!({
            "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
            "metadata": {"name": "byoh-10-0-0-5", "namespace": "wmco", "labels": {"app": "wmco"},
                         "finalizers": ["windowsmachineconfig.openshift.io/deconfigure"]},
            "spec": {"address": "10.0.0.5", "username": "Administrator", "origin": "Byoh"}
        });
        let exchanges = vec![
            Exchange::patch(&format!("{BASE}/byoh-10-0-0-5?&force=true&fieldManager=wmco"), APPLY_PATCH, expected)
                .reply(200, stored(json!(["windowsmachineconfig.openshift.io/deconfigure"]))),
        ];
        scenario(exchanges, |client| async move { KubeInstanceRecords::new(client).apply(&instance).await.unwrap() })
            .await;
    }

    #[tokio::test]
    async fn apply_status_patches_the_status_subresource() {
        let status = WindowsInstanceStatus {
            address: Some("10.0.0.5".into()),
            resolved_ipv4: Some("10.0.0.5".parse().unwrap()),
            expected_node_name: Some("win-a".into()),
            phase: Some(InstancePhase::Configuring),
            ..WindowsInstanceStatus::default()
        };
        let expected = json!({
            "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
            "metadata": {"name": "byoh-10-0-0-5"},
            "status": {"address": "10.0.0.5", "resolvedIpv4": "10.0.0.5", "expectedNodeName": "win-a",
                       "phase": "Configuring"}
        });
        let exchanges = vec![
            Exchange::patch(
                &format!("{BASE}/byoh-10-0-0-5/status?&force=true&fieldManager=wmco"),
                APPLY_PATCH,
                expected,
            )
            .reply(200, stored(json!([]))),
        ];
        scenario(exchanges, |client| async move {
            KubeInstanceRecords::new(client).apply_status("wmco", "byoh-10-0-0-5", &status).await.unwrap()
        })
        .await;
    }

    #[test]
    fn a_status_is_written_without_the_credentials_its_messages_quote() {
        let url = "http://wmco:pr0xy-s3cret@proxy.example:3129";
        let status = WindowsInstanceStatus {
            last_error: Some(format!("step EnvironmentVariables: HTTPS_PROXY {url} refused")),
            conditions: vec![Condition {
                type_: "Degraded".into(),
                status: "True".into(),
                reason: "StepFailed".into(),
                message: format!("cannot set {url}"),
                last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
                observed_generation: None,
            }],
            ..WindowsInstanceStatus::default()
        };
        let body = status_apply_body("byoh-10-0-0-5", &status);
        assert_eq!(
            body["status"]["lastError"],
            "step EnvironmentVariables: HTTPS_PROXY http://[REDACTED]@proxy.example:3129 refused"
        );
        assert_eq!(body["status"]["conditions"][0]["message"], "cannot set http://[REDACTED]@proxy.example:3129");
    }

    #[tokio::test]
    async fn release_finalizer_keeps_other_finalizers_and_guards_with_the_resource_version() {
        let instance: WindowsInstance = serde_json::from_value(stored(json!([
            "example.com/other",
            "windowsmachineconfig.openshift.io/deconfigure"
        ])))
        .unwrap();
        let expected = json!({"metadata": {"resourceVersion": "7", "finalizers": ["example.com/other"]}});
        let exchanges = vec![
            Exchange::patch(&format!("{BASE}/byoh-10-0-0-5?"), MERGE_PATCH, expected)
                .reply(409, status_reply(409, "Conflict", "the object has been modified")),
        ];
        let error = scenario(exchanges, |client| async move {
            KubeInstanceRecords::new(client).release_finalizer(&instance).await.unwrap_err()
        })
        .await;
        assert!(error.is_conflict());
        assert_eq!(error.to_string(), "patch WindowsInstance wmco/byoh-10-0-0-5 failed");
    }

    #[tokio::test]
    async fn a_conditional_bootstrap_key_write_carries_the_resource_version_read_and_a_change_is_a_conflict() {
        let read: WindowsInstance = serde_json::from_value(stored(json!([]))).unwrap();
        let expected = json!({
            "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
            "metadata": {"name": "byoh-10-0-0-5", "resourceVersion": "7"},
            "status": {"approvedBootstrapKeySha256": "ab12"}
        });
        let url = format!("{BASE}/byoh-10-0-0-5/status?&force=true&fieldManager={BOOTSTRAP_KEY_FIELD_MANAGER}");
        let exchanges = vec![
            Exchange::patch(&url, APPLY_PATCH, expected)
                .reply(409, status_reply(409, "Conflict", "the object has been modified")),
        ];
        let error = scenario(exchanges, |client| async move {
            KubeInstanceRecords::new(client).apply_bootstrap_key_if_unchanged(&read, "ab12").await.unwrap_err()
        })
        .await;
        assert!(error.is_conflict());
    }

    #[tokio::test]
    async fn release_finalizer_sends_nothing_when_the_finalizer_is_absent() {
        let instance: WindowsInstance = serde_json::from_value(stored(json!(["example.com/other"]))).unwrap();
        scenario(vec![], |client| async move {
            KubeInstanceRecords::new(client).release_finalizer(&instance).await.unwrap()
        })
        .await;
    }

    #[tokio::test]
    async fn get_list_and_delete() {
        let list = json!({"apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstanceList",
                          "metadata": {}, "items": [stored(json!([]))]});
        let exchanges = vec![
            Exchange::get(&format!("{BASE}/byoh-10-0-0-5")).reply(200, stored(json!([]))),
            Exchange::get(&format!("{BASE}?")).reply(200, list),
            Exchange::delete(&format!("{BASE}/byoh-10-0-0-5?")).reply(404, status_reply(404, "NotFound", "gone")),
        ];
        scenario(exchanges, |client| async move {
            let records = KubeInstanceRecords::new(client);
            let found = records.get("wmco", "byoh-10-0-0-5").await.unwrap().unwrap();
            assert_eq!(found.spec, spec());
            assert_eq!(records.list("wmco").await.unwrap().len(), 1);
            records.delete("wmco", "byoh-10-0-0-5").await.unwrap();
        })
        .await;
    }
}
