//! In-memory fakes of every capability trait, for unit tests of the flow and controller layers. Each keeps its
//! objects in a map and records what was done, so tests assert on outcomes rather than on calls. Errors look like
//! the real ones: a missing object answers a 404 [`Error::Api`] ([`Error::is_not_found`] holds). [`objects`] builds
//! the objects tests put in them.

pub mod objects;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, ObjectReference, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::csrs::with_decision;
use crate::error::{Error, Result, Verb, object_name};
use crate::names::{
    INSTANCE_FINALIZER, KUBERNETES_OS_LABEL, MACHINE_API_NAMESPACE, MACHINE_OS_ID_LABEL, OS_ID_WINDOWS,
};
use crate::nodes::reports_address;
use crate::types::{ControllerConfig, Machine, WindowsInstance, WindowsInstanceStatus};
use crate::{
    ClusterFacts, ClusterFactsSource, ClusterVersion, ConfigMapEntry, ConfigMaps, ControllerConfigs, CsrDecision, Csrs,
    DrainOptions, DrainReport, Drainer, EventHistory, EventPublisher, InstanceRecords, Machines, Namespaces, NewEvent,
    NodeMetadataPatch, Nodes, PodLogs, Seams, Secrets, ServiceAccountTokens, ShortLivedToken, TokenRequestSpec,
    WindowsMachines, csrs::is_pending,
};

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The resourceVersion after a write to an object at `current`: the API server changes it on every write.
fn next_resource_version(current: Option<&str>) -> String {
    current.and_then(|version| version.parse::<u64>().ok()).map_or(1, |version| version + 1).to_string()
}

fn not_found(verb: Verb, kind: &'static str, name: String) -> Error {
    let status = kube::core::Status {
        code: 404,
        reason: "NotFound".into(),
        message: format!("{kind} {name} not found"),
        ..kube::core::Status::default()
    };
    Error::api(verb, kind, name, kube::Error::Api(Box::new(status)))
}

/// Nodes in memory.
///
/// ```
/// # tokio_test_block_on(async {
/// use wmco_cluster_client::{Nodes, fake::FakeNodes};
///
/// let nodes = FakeNodes::default();
/// nodes.insert(k8s_openapi::api::core::v1::Node {
///     metadata: kube::api::ObjectMeta { name: Some("win-1".into()), ..Default::default() },
///     ..Default::default()
/// });
/// nodes.cordon("win-1").await.unwrap();
/// assert_eq!(nodes.node("win-1").unwrap().spec.unwrap().unschedulable, Some(true));
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Debug, Default)]
pub struct FakeNodes {
    nodes: Mutex<BTreeMap<String, Node>>,
    /// Nodes whose uncordon the API server refuses (a 500), as a test made them.
    refused_uncordons: Mutex<BTreeSet<String>>,
}

impl FakeNodes {
    /// Adds or replaces a Node.
    pub fn insert(&self, node: Node) {
        let name = node.metadata.name.clone().unwrap_or_default();
        locked(&self.nodes).insert(name, node);
    }

    /// The Node named `name` as it is now.
    pub fn node(&self, name: &str) -> Option<Node> {
        locked(&self.nodes).get(name).cloned()
    }

    /// Makes every uncordon of `name` fail as a refused patch (`refuse: false` lets them through again).
    pub fn refuse_uncordon(&self, name: &str, refuse: bool) {
        let mut refused = locked(&self.refused_uncordons);
        if refuse {
            refused.insert(name.to_owned())
        } else {
            refused.remove(name)
        };
    }

    fn update(&self, verb: Verb, name: &str, change: impl FnOnce(&mut Node)) -> Result<Node> {
        let mut nodes = locked(&self.nodes);
        let node = nodes.get_mut(name).ok_or_else(|| not_found(verb, "Node", name.to_owned()))?;
        change(node);
        Ok(node.clone())
    }
}

#[async_trait]
impl Nodes for FakeNodes {
    async fn get(&self, name: &str) -> Result<Option<Node>> {
        Ok(self.node(name))
    }

    async fn find_by_address(&self, address: &str) -> Result<Option<Node>> {
        Ok(locked(&self.nodes).values().find(|node| reports_address(node, address)).cloned())
    }

    async fn list_windows(&self) -> Result<Vec<Node>> {
        let windows = |node: &&Node| {
            node.metadata.labels.as_ref().and_then(|labels| labels.get(KUBERNETES_OS_LABEL)).map(String::as_str)
                == Some("windows")
        };
        Ok(locked(&self.nodes).values().filter(windows).cloned().collect())
    }

    async fn patch_metadata(&self, name: &str, patch: &NodeMetadataPatch) -> Result<Node> {
        self.update(Verb::Patch, name, |node| patch.apply_to(node))
    }

    async fn cordon(&self, name: &str) -> Result<Node> {
        self.update(Verb::Patch, name, |node| node.spec.get_or_insert_default().unschedulable = Some(true))
    }

    async fn uncordon(&self, name: &str) -> Result<Node> {
        if locked(&self.refused_uncordons).contains(name) {
            let status = kube::core::Status { code: 500, message: "etcd unavailable".into(), ..Default::default() };
            return Err(crate::Error::api(Verb::Patch, "Node", name, kube::Error::Api(Box::new(status))));
        }
        self.update(Verb::Patch, name, |node| node.spec.get_or_insert_default().unschedulable = Some(false))
    }

    async fn delete(&self, name: &str) -> Result<()> {
        locked(&self.nodes).remove(name);
        Ok(())
    }
}

/// The Go operator's daemon identity in memory: the objects a test inserts exist; [`GoDaemonObjects::delete`]
/// removes one and logs it, or fails for an object the test made refuse.
#[derive(Debug, Default)]
pub struct FakeGoDaemonObjects {
    present: Mutex<BTreeSet<crate::GoDaemonObject>>,
    refused: Mutex<BTreeSet<crate::GoDaemonObject>>,
    deleted: Mutex<Vec<crate::GoDaemonObject>>,
}

impl FakeGoDaemonObjects {
    /// Makes `objects` exist.
    pub fn insert(&self, objects: impl IntoIterator<Item = crate::GoDaemonObject>) {
        locked(&self.present).extend(objects);
    }

    /// Makes deleting `object` fail (as an API server answering 500).
    pub fn refuse(&self, object: crate::GoDaemonObject) {
        locked(&self.refused).insert(object);
    }

    /// The objects that exist, in order.
    pub fn present(&self) -> Vec<crate::GoDaemonObject> {
        locked(&self.present).iter().cloned().collect()
    }

    /// Every object deleted so far, in order.
    pub fn deleted(&self) -> Vec<crate::GoDaemonObject> {
        locked(&self.deleted).clone()
    }
}

#[async_trait]
impl crate::GoDaemonObjects for FakeGoDaemonObjects {
    async fn delete(&self, object: &crate::GoDaemonObject) -> Result<bool> {
        if locked(&self.refused).contains(object) {
            let status = kube::core::Status { code: 500, message: "etcd unavailable".into(), ..Default::default() };
            let source = kube::Error::Api(Box::new(status));
            return Err(Error::api(Verb::Delete, object.kind.as_str(), object.to_string(), source));
        }
        let existed = locked(&self.present).remove(object);
        if existed {
            locked(&self.deleted).push(object.clone());
        }
        Ok(existed)
    }
}

/// A drainer that answers with a scripted outcome per node and records every drain.
#[derive(Debug, Default)]
pub struct FakeDrainer {
    blocked: Mutex<BTreeMap<String, Vec<crate::BlockedPod>>>,
    drained: Mutex<Vec<String>>,
}

impl FakeDrainer {
    /// Makes drains of `node` time out, blocked by `pods`.
    pub fn block(&self, node: &str, pods: Vec<crate::BlockedPod>) {
        locked(&self.blocked).insert(node.to_owned(), pods);
    }

    /// Lets drains of `node` succeed again.
    pub fn unblock(&self, node: &str) {
        locked(&self.blocked).remove(node);
    }

    /// Nodes drained successfully, in order.
    pub fn drained(&self) -> Vec<String> {
        locked(&self.drained).clone()
    }
}

#[async_trait]
impl Drainer for FakeDrainer {
    async fn drain(&self, node: &str, options: &DrainOptions) -> Result<DrainReport> {
        if let Some(blocked) = locked(&self.blocked).get(node) {
            return Err(Error::DrainTimedOut {
                node: node.to_owned(),
                timeout: options.timeout,
                blocked: blocked.clone(),
            });
        }
        locked(&self.drained).push(node.to_owned());
        Ok(DrainReport::default())
    }
}

/// CertificateSigningRequests in memory; decisions append the condition, stamped with the time, as the API server
/// does.
#[derive(Debug, Default)]
pub struct FakeCsrs {
    csrs: Mutex<BTreeMap<String, CertificateSigningRequest>>,
}

impl FakeCsrs {
    /// Adds or replaces a request.
    pub fn insert(&self, csr: CertificateSigningRequest) {
        let name = csr.metadata.name.clone().unwrap_or_default();
        locked(&self.csrs).insert(name, csr);
    }

    /// The request named `name` as it is now.
    pub fn csr(&self, name: &str) -> Option<CertificateSigningRequest> {
        locked(&self.csrs).get(name).cloned()
    }
}

#[async_trait]
impl Csrs for FakeCsrs {
    async fn list_pending(&self, signers: &[&str]) -> Result<Vec<CertificateSigningRequest>> {
        Ok(locked(&self.csrs)
            .values()
            .filter(|csr| signers.contains(&csr.spec.signer_name.as_str()) && is_pending(csr))
            .cloned()
            .collect())
    }

    async fn list(&self, signers: &[&str]) -> Result<Vec<CertificateSigningRequest>> {
        Ok(locked(&self.csrs)
            .values()
            .filter(|csr| signers.contains(&csr.spec.signer_name.as_str()))
            .cloned()
            .collect())
    }

    async fn decide(
        &self,
        csr: &CertificateSigningRequest,
        decision: &CsrDecision,
    ) -> Result<CertificateSigningRequest> {
        let name = csr.metadata.name.clone().unwrap_or_default();
        let verb = if decision.approve { Verb::Approve } else { Verb::Deny };
        let mut csrs = locked(&self.csrs);
        let stored = csrs.get_mut(&name).ok_or_else(|| not_found(verb, "CertificateSigningRequest", name.clone()))?;
        if stored.metadata.resource_version != csr.metadata.resource_version {
            let status = kube::core::Status { code: 409, reason: "Conflict".into(), ..kube::core::Status::default() };
            return Err(Error::api(verb, "CertificateSigningRequest", name, kube::Error::Api(Box::new(status))));
        }
        *stored = with_decision(stored, decision);
        stamp_condition_times(stored, Timestamp::now());
        stored.metadata.resource_version = Some(next_resource_version(stored.metadata.resource_version.as_deref()));
        Ok(stored.clone())
    }
}

/// Sets the `lastUpdateTime` and `lastTransitionTime` of every condition that has none to `now`, as the API server
/// does on an `/approval` write (kubernetes `pkg/registry/certificates/certificates/strategy.go`,
/// `populateConditionTimestamps`; the conditions written before keep theirs).
fn stamp_condition_times(csr: &mut CertificateSigningRequest, now: Timestamp) {
    let conditions = csr.status.iter_mut().flat_map(|status| status.conditions.iter_mut().flatten());
    for condition in conditions {
        condition.last_update_time.get_or_insert(Time(now));
        condition.last_transition_time.get_or_insert(Time(now));
    }
}

/// Records every published event.
#[derive(Debug, Default)]
pub struct FakeEvents {
    published: Mutex<Vec<(ObjectReference, NewEvent)>>,
}

impl FakeEvents {
    /// Every event published so far, with the object it regards.
    pub fn published(&self) -> Vec<(ObjectReference, NewEvent)> {
        locked(&self.published).clone()
    }
}

#[async_trait]
impl EventPublisher for FakeEvents {
    async fn publish(&self, regarding: &ObjectReference, event: &NewEvent) -> Result<()> {
        locked(&self.published).push((regarding.clone(), event.clone()));
        Ok(())
    }
}

/// The published Events read back as core/v1 Events, in publish order (named `event-000000`, `event-000001`, …;
/// no times), in the namespace of the object they regard (`default` for cluster-scoped objects, as the API server
/// keeps them).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use k8s_openapi::api::core::v1::ObjectReference;
/// use wmco_cluster_client::{EventHistory, EventPublisher, NewEvent, Severity, fake::FakeEvents};
///
/// let events = FakeEvents::default();
/// let node = ObjectReference { kind: Some("Node".into()), name: Some("win-1".into()), ..Default::default() };
/// let setup = NewEvent { severity: Severity::Normal, reason: "InstanceSetup".into(), action: "Configure".into(), note: None };
/// events.publish(&node, &setup).await.unwrap();
/// let read = events.list_about(None, "Node", Some("win-1")).await.unwrap();
/// assert_eq!(read[0].reason.as_deref(), Some("InstanceSetup"));
/// assert!(events.list_about(Some("wmco"), "Node", None).await.unwrap().is_empty());
/// # });
/// ```
#[async_trait]
impl EventHistory for FakeEvents {
    async fn list_about(&self, namespace: Option<&str>, kind: &str, name: Option<&str>) -> Result<Vec<Event>> {
        let published = locked(&self.published);
        Ok(published
            .iter()
            .enumerate()
            .map(|(index, (regarding, event))| Event {
                metadata: kube::api::ObjectMeta {
                    name: Some(format!("event-{index:06}")),
                    namespace: Some(regarding.namespace.clone().unwrap_or_else(|| "default".to_owned())),
                    ..kube::api::ObjectMeta::default()
                },
                involved_object: regarding.clone(),
                reason: Some(event.reason.clone()),
                action: Some(event.action.clone()),
                message: event.note.clone(),
                type_: Some(
                    match event.severity {
                        crate::Severity::Normal => "Normal",
                        crate::Severity::Warning => "Warning",
                    }
                    .to_owned(),
                ),
                ..Event::default()
            })
            .filter(|event| namespace.is_none() || event.metadata.namespace.as_deref() == namespace)
            .filter(|event| event.involved_object.kind.as_deref() == Some(kind))
            .filter(|event| name.is_none() || event.involved_object.name.as_deref() == name)
            .collect())
    }
}

/// Pods and container logs in memory.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use wmco_cluster_client::{PodLogs, fake::FakePodLogs};
///
/// let pods = FakePodLogs::default();
/// let pod = k8s_openapi::api::core::v1::Pod {
///     metadata: kube::api::ObjectMeta {
///         name: Some("wmco-1".into()),
///         namespace: Some("wmco".into()),
///         labels: Some([("app".to_owned(), "wmco".to_owned())].into()),
///         ..Default::default()
///     },
///     ..Default::default()
/// };
/// pods.insert(pod, "wmco", "one\ntwo\nthree\n");
/// assert_eq!(pods.list_pods("wmco", "app=wmco").await.unwrap().len(), 1);
/// assert_eq!(pods.log("wmco", "wmco-1", "wmco", Some(2)).await.unwrap(), "two\nthree\n");
/// assert!(pods.log("wmco", "wmco-1", "other", None).await.unwrap_err().is_not_found());
/// # });
/// ```
#[derive(Debug, Default)]
pub struct FakePodLogs {
    pods: Mutex<BTreeMap<Key, Pod>>,
    logs: Mutex<BTreeMap<(String, String, String), String>>,
}

impl FakePodLogs {
    /// Adds `pod` whose container `container` has logged `log`.
    pub fn insert(&self, pod: Pod, container: &str, log: &str) {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        locked(&self.logs).insert((namespace.clone(), name.clone(), container.to_owned()), log.to_owned());
        locked(&self.pods).insert((namespace, name), pod);
    }
}

/// Whether `labels` satisfy `selector`, a comma-separated list of `key=value` (the only form the fake knows).
fn matches_labels(labels: Option<&BTreeMap<String, String>>, selector: &str) -> bool {
    selector.split(',').filter(|term| !term.is_empty()).all(|term| match term.split_once('=') {
        Some((key, value)) => labels.and_then(|labels| labels.get(key)).map(String::as_str) == Some(value),
        None => false,
    })
}

#[async_trait]
impl PodLogs for FakePodLogs {
    async fn list_pods(&self, namespace: &str, label_selector: &str) -> Result<Vec<Pod>> {
        Ok(locked(&self.pods)
            .iter()
            .filter(|((pod_namespace, _), pod)| {
                pod_namespace == namespace && matches_labels(pod.metadata.labels.as_ref(), label_selector)
            })
            .map(|(_, pod)| pod.clone())
            .collect())
    }

    async fn log(&self, namespace: &str, pod: &str, container: &str, tail_lines: Option<i64>) -> Result<String> {
        let key = (namespace.to_owned(), pod.to_owned(), container.to_owned());
        let log = locked(&self.logs).get(&key).cloned().ok_or_else(|| {
            not_found(Verb::ReadLog, "Pod", format!("{} container {container}", object_name(Some(namespace), pod)))
        })?;
        let Some(tail) = tail_lines.and_then(|tail| usize::try_from(tail).ok()) else { return Ok(log) };
        let lines: Vec<&str> = log.lines().collect();
        let kept = &lines[lines.len().saturating_sub(tail)..];
        Ok(kept.iter().map(|line| format!("{line}\n")).collect())
    }
}

type Key = (String, String);

fn key_of(kind: &'static str, metadata: &kube::api::ObjectMeta) -> Result<Key> {
    match (&metadata.namespace, &metadata.name) {
        (Some(namespace), Some(name)) => Ok((namespace.clone(), name.clone())),
        (_, name) => Err(Error::MissingField {
            verb: Verb::Apply,
            kind,
            name: name.clone().unwrap_or_else(|| "(unnamed)".into()),
            field: "metadata.namespace",
        }),
    }
}

/// Secrets in memory; apply replaces the stored object.
#[derive(Debug, Default)]
pub struct FakeSecrets {
    secrets: Mutex<BTreeMap<Key, Secret>>,
}

#[async_trait]
impl Secrets for FakeSecrets {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<Secret>> {
        Ok(locked(&self.secrets).get(&(namespace.to_owned(), name.to_owned())).cloned())
    }

    async fn apply(&self, secret: &Secret) -> Result<Secret> {
        let key = key_of("Secret", &secret.metadata)?;
        locked(&self.secrets).insert(key, secret.clone());
        Ok(secret.clone())
    }
}

/// Namespaces in memory, by name: those [`FakeNamespaces::insert`] added (a fresh fake has none).
///
/// ```
/// # tokio_test_block_on(async {
/// use wmco_cluster_client::{Namespaces, fake::FakeNamespaces};
///
/// let namespaces = FakeNamespaces::default();
/// assert!(!namespaces.active("openshift-cluster-api").await.unwrap());
/// namespaces.insert("openshift-cluster-api");
/// assert!(namespaces.active("openshift-cluster-api").await.unwrap());
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Debug, Default)]
pub struct FakeNamespaces {
    names: Mutex<BTreeSet<String>>,
}

impl FakeNamespaces {
    /// Creates Namespace `name` (active).
    pub fn insert(&self, name: &str) {
        locked(&self.names).insert(name.to_owned());
    }

    /// Deletes Namespace `name`.
    pub fn remove(&self, name: &str) {
        locked(&self.names).remove(name);
    }
}

#[async_trait]
impl Namespaces for FakeNamespaces {
    async fn active(&self, name: &str) -> Result<bool> {
        Ok(locked(&self.names).contains(name))
    }
}

/// ConfigMaps in memory; apply merges as a server-side apply does, [`FakeConfigMaps::replace`] stands for another
/// client's update.
#[derive(Debug, Default)]
pub struct FakeConfigMaps {
    config_maps: Mutex<BTreeMap<Key, ConfigMap>>,
}

impl FakeConfigMaps {
    /// Stores `config_map` as it is, as another client's full update would (labels it lacks are gone).
    ///
    /// # Errors
    /// [`Error::MissingField`] when the name or namespace is missing.
    pub fn replace(&self, config_map: ConfigMap) -> Result<()> {
        let key = key_of("ConfigMap", &config_map.metadata)?;
        locked(&self.config_maps).insert(key, config_map);
        Ok(())
    }
}

#[async_trait]
impl ConfigMaps for FakeConfigMaps {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<ConfigMap>> {
        Ok(locked(&self.config_maps).get(&(namespace.to_owned(), name.to_owned())).cloned())
    }

    /// Like a server-side apply by one field manager: what the applied object sets replaces (labels and
    /// annotations key by key, `data` and `binaryData` as a whole); what it leaves out keeps its value.
    async fn apply(&self, config_map: &ConfigMap) -> Result<ConfigMap> {
        let key = key_of("ConfigMap", &config_map.metadata)?;
        let mut stored = locked(&self.config_maps);
        let merged = match stored.get(&key) {
            None => config_map.clone(),
            Some(existing) => {
                let mut merged = existing.clone();
                for (target, applied) in [
                    (&mut merged.metadata.labels, &config_map.metadata.labels),
                    (&mut merged.metadata.annotations, &config_map.metadata.annotations),
                ] {
                    if let Some(applied) = applied {
                        target.get_or_insert_default().extend(applied.clone());
                    }
                }
                if config_map.data.is_some() {
                    merged.data = config_map.data.clone();
                }
                if config_map.binary_data.is_some() {
                    merged.binary_data = config_map.binary_data.clone();
                }
                merged
            }
        };
        stored.insert(key, merged.clone());
        Ok(merged)
    }

    async fn set_entry(&self, entry: &ConfigMapEntry<'_>, value: Option<&str>) -> Result<()> {
        let mut stored = locked(&self.config_maps);
        let key = (entry.namespace.to_owned(), entry.name.to_owned());
        match (stored.get_mut(&key), value) {
            (Some(config_map), Some(value)) => {
                config_map.data.get_or_insert_default().insert(entry.key.to_owned(), value.to_owned());
            }
            (Some(config_map), None) => {
                config_map.data.get_or_insert_default().remove(entry.key);
            }
            (None, Some(value)) => {
                stored.insert(key, entry.new_config_map(value));
            }
            (None, None) => {}
        }
        Ok(())
    }
}

/// Mints tokens `fake-token-<n>` that expire `lifetime` after `now`, and records each request.
#[derive(Debug)]
pub struct FakeTokens {
    now: Timestamp,
    issued: Mutex<Vec<(String, TokenRequestSpec)>>,
}

impl FakeTokens {
    /// Tokens minted as if the time were `now`.
    pub fn new(now: Timestamp) -> Self {
        FakeTokens { now, issued: Mutex::new(Vec::new()) }
    }

    /// `namespace/service-account` and spec of every token minted, in order.
    pub fn issued(&self) -> Vec<(String, TokenRequestSpec)> {
        locked(&self.issued).clone()
    }
}

#[async_trait]
impl ServiceAccountTokens for FakeTokens {
    async fn request(
        &self,
        namespace: &str,
        service_account: &str,
        spec: &TokenRequestSpec,
    ) -> Result<ShortLivedToken> {
        let mut issued = locked(&self.issued);
        issued.push((object_name(Some(namespace), service_account), spec.clone()));
        let lifetime = jiff::SignedDuration::try_from(spec.lifetime).unwrap_or(jiff::SignedDuration::MAX);
        let expires_at = self.now.checked_add(lifetime).unwrap_or(Timestamp::MAX);
        Ok(ShortLivedToken::new(format!("fake-token-{}", issued.len()), expires_at))
    }
}

/// `WindowsInstance` records in memory, with the finalizer and status semantics of the real API.
#[derive(Debug, Default)]
pub struct FakeInstanceRecords {
    records: Mutex<BTreeMap<Key, WindowsInstance>>,
    status_writes: Mutex<u64>,
    /// Records created so far: numbers their UIDs, so no two records ever share one.
    created: Mutex<u64>,
}

impl FakeInstanceRecords {
    /// The record `namespace/name` as it is now.
    pub fn record(&self, namespace: &str, name: &str) -> Option<WindowsInstance> {
        locked(&self.records).get(&(namespace.to_owned(), name.to_owned())).cloned()
    }

    /// Sets the annotation `key: value` on `namespace/name`, as an admin's `kubectl annotate` does (the operator's
    /// applies never own annotations); a 404 when the record does not exist.
    pub fn annotate(&self, namespace: &str, name: &str, key: &str, value: &str) -> Result<()> {
        let mut records = locked(&self.records);
        let record = records
            .get_mut(&(namespace.to_owned(), name.to_owned()))
            .ok_or_else(|| not_found(Verb::Patch, "WindowsInstance", object_name(Some(namespace), name)))?;
        record.metadata.annotations.get_or_insert_default().insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    /// How many status writes were made so far (each one would trigger a watch event on a real API server).
    pub fn status_writes(&self) -> u64 {
        *locked(&self.status_writes)
    }

    /// One status write to `namespace/name` (a 404 when it does not exist): `change` edits the status in place.
    fn write_status(
        &self,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut WindowsInstanceStatus),
    ) -> Result<WindowsInstance> {
        let mut records = locked(&self.records);
        let record = records
            .get_mut(&(namespace.to_owned(), name.to_owned()))
            .ok_or_else(|| not_found(Verb::Apply, "WindowsInstance", object_name(Some(namespace), name)))?;
        change(record.status.get_or_insert_with(WindowsInstanceStatus::default));
        *locked(&self.status_writes) += 1;
        Ok(record.clone())
    }
}

#[async_trait]
impl InstanceRecords for FakeInstanceRecords {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<WindowsInstance>> {
        Ok(self.record(namespace, name))
    }

    async fn list(&self, namespace: &str) -> Result<Vec<WindowsInstance>> {
        Ok(locked(&self.records)
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|(_, record)| record.clone())
            .collect())
    }

    async fn apply(&self, instance: &WindowsInstance) -> Result<WindowsInstance> {
        let key = key_of("WindowsInstance", &instance.metadata)?;
        let mut records = locked(&self.records);
        let record = records.entry(key).or_insert_with(|| {
            // Like the API server: a created object gets a UID (a UUID; here numbered by creation).
            let mut created = locked(&self.created);
            *created += 1;
            let mut metadata = instance.metadata.clone();
            metadata.uid.get_or_insert_with(|| format!("00000000-0000-4000-8000-{:012x}", *created));
            WindowsInstance { metadata, spec: instance.spec.clone(), status: None }
        });
        record.spec = instance.spec.clone();
        record.metadata.labels = instance.metadata.labels.clone();
        let finalizers = record.metadata.finalizers.get_or_insert_default();
        if !finalizers.iter().any(|finalizer| finalizer == INSTANCE_FINALIZER) {
            finalizers.push(INSTANCE_FINALIZER.to_owned());
        }
        Ok(record.clone())
    }

    async fn apply_status(
        &self,
        namespace: &str,
        name: &str,
        status: &WindowsInstanceStatus,
    ) -> Result<WindowsInstance> {
        self.write_status(namespace, name, |current| {
            // Like the API server: this write's field manager does not own the bootstrap key, so it stays as it is.
            let kept_key = current.approved_bootstrap_key_sha256.take();
            *current = WindowsInstanceStatus { approved_bootstrap_key_sha256: kept_key, ..status.clone() };
        })
    }

    async fn apply_bootstrap_key(
        &self,
        namespace: &str,
        name: &str,
        public_key_sha256: Option<&str>,
    ) -> Result<WindowsInstance> {
        self.write_status(namespace, name, |current| {
            current.approved_bootstrap_key_sha256 = public_key_sha256.map(str::to_owned);
        })
    }

    /// The fake keeps no resourceVersions (its records carry none), so the condition always holds here; the API
    /// server's check is tested against the e2e control plane.
    async fn apply_bootstrap_key_if_unchanged(
        &self,
        read: &WindowsInstance,
        public_key_sha256: &str,
    ) -> Result<WindowsInstance> {
        let (namespace, name) = key_of("WindowsInstance", &read.metadata)?;
        self.apply_bootstrap_key(&namespace, &name, Some(public_key_sha256)).await
    }

    async fn release_finalizer(&self, instance: &WindowsInstance) -> Result<()> {
        let key = key_of("WindowsInstance", &instance.metadata)?;
        if let Some(finalizers) =
            locked(&self.records).get_mut(&key).and_then(|record| record.metadata.finalizers.as_mut())
        {
            finalizers.retain(|finalizer| finalizer != INSTANCE_FINALIZER);
        }
        Ok(())
    }

    async fn delete(&self, namespace: &str, name: &str) -> Result<()> {
        locked(&self.records).remove(&(namespace.to_owned(), name.to_owned()));
        Ok(())
    }
}

/// Answers with fixed facts.
#[derive(Debug, Clone)]
pub struct FakeClusterFacts(pub ClusterFacts);

#[async_trait]
impl ClusterFactsSource for FakeClusterFacts {
    async fn gather(&self) -> Result<ClusterFacts> {
        Ok(self.0.clone())
    }
}

/// The API server's version, settable mid-test (a control-plane upgrade).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use semver::Version;
/// use wmco_cluster_client::{ClusterVersion, fake::FakeClusterVersion};
/// let cluster = FakeClusterVersion::new(Version::new(1, 35, 4));
/// cluster.set(Version::new(1, 36, 0));
/// assert_eq!(cluster.kubernetes_version().await.unwrap(), Version::new(1, 36, 0));
/// # });
/// ```
#[derive(Debug)]
pub struct FakeClusterVersion(Mutex<semver::Version>);

impl FakeClusterVersion {
    /// An API server at `version`.
    pub fn new(version: semver::Version) -> Self {
        FakeClusterVersion(Mutex::new(version))
    }

    /// Upgrades (or downgrades) the API server to `version`.
    pub fn set(&self, version: semver::Version) {
        *locked(&self.0) = version;
    }
}

#[async_trait]
impl ClusterVersion for FakeClusterVersion {
    async fn kubernetes_version(&self) -> Result<semver::Version> {
        Ok(locked(&self.0).clone())
    }
}

/// Fixed ControllerConfigs, answered sorted by name like the API server.
#[derive(Debug, Default, Clone)]
pub struct FakeControllerConfigs(pub Vec<ControllerConfig>);

#[async_trait]
impl ControllerConfigs for FakeControllerConfigs {
    async fn list(&self) -> Result<Vec<ControllerConfig>> {
        let mut items = self.0.clone();
        items.sort_by(|left, right| left.metadata.name.cmp(&right.metadata.name));
        Ok(items)
    }
}

/// Machines in memory; [`Machines::delete`] removes the Machine and remembers its name; [`WindowsMachines::list`]
/// answers those of `openshift-machine-api` labelled as Windows Machines, like the API server.
#[derive(Debug, Default)]
pub struct FakeMachines {
    machines: Mutex<BTreeMap<Key, Machine>>,
    deleted: Mutex<Vec<String>>,
}

impl FakeMachines {
    /// Adds or replaces `machine` (namespace and name set).
    pub fn insert(&self, machine: Machine) {
        let key =
            (machine.metadata.namespace.clone().unwrap_or_default(), machine.metadata.name.clone().unwrap_or_default());
        locked(&self.machines).insert(key, machine);
    }

    /// `namespace/name` of every Machine deleted so far, in order.
    pub fn deleted(&self) -> Vec<String> {
        locked(&self.deleted).clone()
    }
}

#[async_trait]
impl Machines for FakeMachines {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<Machine>> {
        Ok(locked(&self.machines).get(&(namespace.to_owned(), name.to_owned())).cloned())
    }

    async fn delete(&self, namespace: &str, name: &str) -> Result<()> {
        if locked(&self.machines).remove(&(namespace.to_owned(), name.to_owned())).is_some() {
            locked(&self.deleted).push(object_name(Some(namespace), name));
        }
        Ok(())
    }
}

#[async_trait]
impl WindowsMachines for FakeMachines {
    async fn list(&self) -> Result<Vec<Machine>> {
        let windows = |machine: &&Machine| {
            machine.metadata.namespace.as_deref() == Some(MACHINE_API_NAMESPACE)
                && machine
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|labels| labels.get(MACHINE_OS_ID_LABEL))
                    .map(String::as_str)
                    == Some(OS_ID_WINDOWS)
        };
        Ok(locked(&self.machines).values().filter(windows).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{InstanceOrigin, InstancePhase, WindowsInstanceSpec};
    use crate::{BlockReason, BlockedPod};
    use serde_json::json;
    use std::time::Duration;

    fn node(name: &str, address: &str) -> Node {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "status": {"addresses": [{"type": "InternalIP", "address": address}]}}),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn fake_nodes_patch_find_cordon_and_delete() {
        let nodes = FakeNodes::default();
        nodes.insert(node("win-1", "10.0.0.5"));
        nodes.insert(node("win-2", "10.0.0.50"));
        assert_eq!(nodes.find_by_address("10.0.0.5").await.unwrap().unwrap().metadata.name.as_deref(), Some("win-1"));
        assert!(nodes.find_by_address("10.0.0").await.unwrap().is_none());
        let patched = nodes
            .patch_metadata("win-1", &NodeMetadataPatch::default().set_label("a", "1").set_annotation("b", "2"))
            .await
            .unwrap();
        assert_eq!(patched.metadata.labels.unwrap()["a"], "1");
        let cleared = nodes.patch_metadata("win-1", &NodeMetadataPatch::default().remove_label("a")).await.unwrap();
        assert!(cleared.metadata.labels.unwrap().is_empty());
        assert_eq!(nodes.uncordon("win-1").await.unwrap().spec.unwrap().unschedulable, Some(false));
        assert!(nodes.cordon("win-9").await.unwrap_err().is_not_found());
        nodes.delete("win-1").await.unwrap();
        assert!(nodes.get("win-1").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn fake_drainer_reports_scripted_blocks() {
        let drainer = FakeDrainer::default();
        let blocked = vec![BlockedPod { pod: "web/a".into(), reason: BlockReason::StillTerminating }];
        drainer.block("win-1", blocked.clone());
        let options = DrainOptions::default();
        match drainer.drain("win-1", &options).await.unwrap_err() {
            Error::DrainTimedOut { blocked: reported, .. } => assert_eq!(reported, blocked),
            other => panic!("unexpected {other:?}"),
        }
        drainer.unblock("win-1");
        drainer.drain("win-1", &options).await.unwrap();
        assert_eq!(drainer.drained(), vec!["win-1".to_owned()]);
    }

    #[tokio::test]
    async fn fake_csrs_decide_once_and_refuse_stale_reads() {
        let csrs = FakeCsrs::default();
        let csr = objects::csr("csr-1", crate::names::KUBELET_CLIENT_SIGNER, "").resource_version("1").build();
        csrs.insert(csr.clone());
        let pending = csrs.list_pending(&[crate::names::KUBELET_CLIENT_SIGNER]).await.unwrap();
        assert_eq!(pending.len(), 1);
        let mut stale = csr.clone();
        stale.metadata.resource_version = Some("0".into());
        assert!(csrs.decide(&stale, &CsrDecision::approve("R", "m")).await.unwrap_err().is_conflict());
        csrs.decide(&csr, &CsrDecision::approve("WMCOApprove", "ok")).await.unwrap();
        assert!(csrs.list_pending(&[crate::names::KUBELET_CLIENT_SIGNER]).await.unwrap().is_empty());
        assert_eq!(csrs.list(&[crate::names::KUBELET_CLIENT_SIGNER]).await.unwrap().len(), 1);
        assert!(csrs.list(&[crate::names::KUBELET_SERVING_SIGNER]).await.unwrap().is_empty());
        let decided = csrs.csr("csr-1").unwrap();
        assert_eq!(decided.metadata.resource_version.as_deref(), Some("2"));
        let condition = &decided.status.unwrap().conditions.unwrap()[0];
        assert_eq!((condition.type_.as_str(), condition.reason.as_deref()), ("Approved", Some("WMCOApprove")));
    }

    #[tokio::test]
    async fn fake_events_record_what_was_published() {
        let events = FakeEvents::default();
        let regarding = ObjectReference { kind: Some("Node".into()), name: Some("win-1".into()), ..Default::default() };
        let event = NewEvent {
            severity: crate::Severity::Normal,
            reason: "InstanceSetup".into(),
            action: "Configure".into(),
            note: None,
        };
        events.publish(&regarding, &event).await.unwrap();
        assert_eq!(events.published(), vec![(regarding, event)]);
    }

    #[tokio::test]
    async fn fake_tokens_expire_after_their_lifetime() {
        let now: Timestamp = "2026-11-22T00:00:00Z".parse().unwrap();
        let tokens = FakeTokens::new(now);
        let spec = TokenRequestSpec { audiences: vec![], lifetime: Duration::from_secs(600) };
        let token = tokens.request("ns", "sa", &spec).await.unwrap();
        assert_eq!(token.secret(), "fake-token-1");
        assert_eq!(token.expires_at(), "2026-11-22T00:10:00Z".parse::<Timestamp>().unwrap());
        assert_eq!(tokens.issued(), vec![("ns/sa".to_owned(), spec)]);
    }

    #[tokio::test]
    async fn fake_records_keep_finalizer_and_status() {
        let records = FakeInstanceRecords::default();
        let mut instance = WindowsInstance::new(
            "a",
            WindowsInstanceSpec {
                address: "10.0.0.5".into(),
                username: "u".into(),
                origin: InstanceOrigin::Byoh,
                machine_name: None,
                expected_node_name: None,
            },
        );
        instance.metadata.namespace = Some("wmco".into());
        let stored = records.apply(&instance).await.unwrap();
        assert_eq!(stored.metadata.finalizers, Some(vec![INSTANCE_FINALIZER.to_owned()]));
        let status = WindowsInstanceStatus { phase: Some(InstancePhase::Ready), ..WindowsInstanceStatus::default() };
        records.apply_status("wmco", "a", &status).await.unwrap();
        assert_eq!(records.record("wmco", "a").unwrap().status, Some(status));
        records.release_finalizer(&stored).await.unwrap();
        assert_eq!(records.record("wmco", "a").unwrap().metadata.finalizers, Some(vec![]));
        assert!(records.apply_status("wmco", "b", &WindowsInstanceStatus::default()).await.unwrap_err().is_not_found());
        assert_eq!(records.list("wmco").await.unwrap().len(), 1);
        records.delete("wmco", "a").await.unwrap();
        assert!(records.list("wmco").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn fake_machines_answer_and_remember_deletions() {
        let machines = FakeMachines::default();
        machines.insert(objects::machine("win-a").build());
        let found = machines.get("openshift-machine-api", "win-a").await.unwrap().unwrap();
        assert_eq!(found.metadata.name.as_deref(), Some("win-a"));
        assert!(machines.get("other", "win-a").await.unwrap().is_none());
        machines.delete("openshift-machine-api", "win-a").await.unwrap();
        machines.delete("openshift-machine-api", "win-a").await.unwrap();
        assert_eq!(machines.deleted(), ["openshift-machine-api/win-a"]);
        assert!(machines.get("openshift-machine-api", "win-a").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn fake_machines_list_only_the_windows_machines_of_the_machine_api_namespace() {
        let machines = FakeMachines::default();
        for (name, namespace, os_id) in [
            ("win-b", MACHINE_API_NAMESPACE, "Windows"),
            ("linux", MACHINE_API_NAMESPACE, "Linux"),
            ("win-x", "other", "Windows"),
            ("win-a", MACHINE_API_NAMESPACE, "Windows"),
        ] {
            machines
                .insert(objects::machine(name).in_namespace(namespace).labelled(MACHINE_OS_ID_LABEL, os_id).build());
        }
        let listed = WindowsMachines::list(&machines).await.unwrap();
        let names: Vec<_> = listed.iter().map(|machine| machine.metadata.name.as_deref().unwrap()).collect();
        assert_eq!(names, ["win-a", "win-b"]);
    }

    #[tokio::test]
    async fn fake_controller_configs_answer_sorted_by_name_and_the_fake_version_can_change() {
        let config =
            |name: &str| crate::types::ControllerConfig::new(name, crate::types::ControllerConfigSpec::default());
        let configs = FakeControllerConfigs(vec![config("b"), config("a")]);
        let names: Vec<_> = configs.list().await.unwrap().into_iter().map(|config| config.metadata.name).collect();
        assert_eq!(names, [Some("a".to_owned()), Some("b".to_owned())]);
        let version = FakeClusterVersion::new(semver::Version::new(1, 35, 4));
        version.set(semver::Version::new(1, 36, 0));
        assert_eq!(version.kubernetes_version().await.unwrap(), semver::Version::new(1, 36, 0));
    }

    #[tokio::test]
    async fn fake_secrets_and_config_maps_store_what_is_applied() {
        let secrets = FakeSecrets::default();
        let secret = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some("s".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Secret::default()
        };
        secrets.apply(&secret).await.unwrap();
        assert_eq!(secrets.get("ns", "s").await.unwrap(), Some(secret));
        let config_maps = FakeConfigMaps::default();
        let unnamed_namespace = ConfigMap::default();
        assert!(config_maps.apply(&unnamed_namespace).await.is_err());
        assert!(config_maps.get("ns", "c").await.unwrap().is_none());
    }
}

/// Every fake of this module, shared: one in-memory cluster whose [`FakeCluster::seams`] a controller context
/// takes, while the test seeds and inspects the same objects through the typed fields.
///
/// ```
/// use std::sync::Arc;
/// use wmco_cluster_client::fake::{FakeCluster, FakeNodes};
/// use wmco_cluster_client::Seams;
///
/// let cluster = FakeCluster::default();
/// let nodes = Arc::new(FakeNodes::default());
/// // A test may swap one seam for its own fake and keep the others.
/// let seams = Seams { nodes: nodes.clone(), ..cluster.seams() };
/// assert!(Arc::ptr_eq(&seams.records, &cluster.seams().records));
/// ```
#[derive(Debug)]
pub struct FakeCluster {
    /// The `WindowsInstance` records.
    pub records: Arc<FakeInstanceRecords>,
    /// Nodes.
    pub nodes: Arc<FakeNodes>,
    /// Machines (also the Windows Machines list).
    pub machines: Arc<FakeMachines>,
    /// Secrets.
    pub secrets: Arc<FakeSecrets>,
    /// ConfigMaps.
    pub config_maps: Arc<FakeConfigMaps>,
    /// Namespaces (only those a test inserts).
    pub namespaces: Arc<FakeNamespaces>,
    /// ServiceAccount tokens.
    pub tokens: Arc<FakeTokens>,
    /// CSRs.
    pub csrs: Arc<FakeCsrs>,
    /// Published Events.
    pub events: Arc<FakeEvents>,
    /// Drains.
    pub drainer: Arc<FakeDrainer>,
    /// The API server's version.
    pub cluster_version: Arc<FakeClusterVersion>,
    /// ControllerConfigs.
    pub controller_configs: Arc<FakeControllerConfigs>,
    /// Pods and their logs.
    pub pod_logs: Arc<FakePodLogs>,
    /// The Go operator's daemon identity (none until a test inserts it).
    pub go_daemon: Arc<FakeGoDaemonObjects>,
}

impl FakeCluster {
    /// An empty cluster at Kubernetes `version` whose tokens are minted as if the time were `now`.
    pub fn new(now: Timestamp, version: semver::Version) -> Self {
        FakeCluster {
            records: Arc::default(),
            nodes: Arc::default(),
            machines: Arc::default(),
            secrets: Arc::default(),
            config_maps: Arc::default(),
            namespaces: Arc::default(),
            tokens: Arc::new(FakeTokens::new(now)),
            csrs: Arc::default(),
            events: Arc::default(),
            drainer: Arc::default(),
            cluster_version: Arc::new(FakeClusterVersion::new(version)),
            controller_configs: Arc::default(),
            pod_logs: Arc::default(),
            go_daemon: Arc::default(),
        }
    }

    /// The seams over these fakes (the same objects the fields hold).
    pub fn seams(&self) -> Seams {
        Seams {
            records: self.records.clone(),
            nodes: self.nodes.clone(),
            machines: self.machines.clone(),
            windows_machines: self.machines.clone(),
            secrets: self.secrets.clone(),
            config_maps: self.config_maps.clone(),
            namespaces: self.namespaces.clone(),
            tokens: self.tokens.clone(),
            csrs: self.csrs.clone(),
            events: self.events.clone(),
            drainer: self.drainer.clone(),
            cluster_version: self.cluster_version.clone(),
            controller_configs: self.controller_configs.clone(),
            go_daemon: self.go_daemon.clone(),
        }
    }
}

impl Default for FakeCluster {
    /// An empty cluster at Kubernetes 1.36.0, minting tokens at the Unix epoch.
    fn default() -> Self {
        FakeCluster::new(Timestamp::UNIX_EPOCH, semver::Version::new(1, 36, 0))
    }
}
