//! Draining a Node: evict every evictable pod through the eviction API so PodDisruptionBudgets are honoured,
//! retrying while a budget answers 429, skipping DaemonSet and mirror pods, refusing pods with emptyDir data unless
//! allowed, and giving up after a timeout with the list of what blocked it. Cordoning is the caller's step.

use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use tokio::time::Instant;

use crate::error::{BlockReason, BlockedPod, Error, Result, Verb, object_name};
use crate::names::MIRROR_POD_ANNOTATION;

/// How a drain behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainOptions {
    /// Whether pods with emptyDir volumes may be evicted (their data is lost).
    pub delete_emptydir_data: bool,
    /// How long the whole drain may take.
    pub timeout: Duration,
    /// How long to wait between attempts while a budget blocks or pods are terminating.
    pub retry_interval: Duration,
}

/// The operator's drain: emptyDir data may go (as in the Go operator's drain), 10 minutes at most, a retry every
/// 5 seconds.
impl Default for DrainOptions {
    fn default() -> Self {
        DrainOptions {
            delete_emptydir_data: true,
            timeout: Duration::from_secs(600),
            retry_interval: Duration::from_secs(5),
        }
    }
}

/// Why a pod was left on the node on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Managed by a DaemonSet, which would recreate it on the node anyway.
    DaemonSet,
    /// A mirror pod of a static pod; the kubelet owns it.
    Mirror,
}

/// A pod left on the node on purpose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedPod {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Why it was left.
    pub reason: SkipReason,
}

/// What a finished drain did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DrainReport {
    /// `namespace/name` of every pod evicted (and gone), in eviction order.
    pub evicted: Vec<String>,
    /// Pods left on the node on purpose.
    pub skipped: Vec<SkippedPod>,
}

/// What the drain does with one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Disposition {
    /// Leave it.
    Skip(SkipReason),
    /// It may not be removed at all.
    Refuse(BlockReason),
    /// Evict it.
    Evict,
}

/// Decides what a drain does with `pod`.
pub(crate) fn disposition(pod: &Pod, options: &DrainOptions) -> Disposition {
    let is_mirror =
        pod.metadata.annotations.as_ref().is_some_and(|annotations| annotations.contains_key(MIRROR_POD_ANNOTATION));
    if is_mirror {
        return Disposition::Skip(SkipReason::Mirror);
    }
    let daemon_set_owned =
        pod.metadata.owner_references.as_ref().is_some_and(|owners| {
            owners.iter().any(|owner| owner.kind == "DaemonSet" && owner.controller == Some(true))
        });
    if daemon_set_owned {
        return Disposition::Skip(SkipReason::DaemonSet);
    }
    let uses_empty_dir = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.volumes.as_ref())
        .is_some_and(|volumes| volumes.iter().any(|volume| volume.empty_dir.is_some()));
    if uses_empty_dir && !options.delete_emptydir_data {
        return Disposition::Refuse(BlockReason::EmptyDirData);
    }
    Disposition::Evict
}

/// Drains Nodes.
#[async_trait]
pub trait Drainer: Send + Sync {
    /// Evicts every evictable pod from `node` and waits until they are gone, within `options.timeout` (plus at most
    /// one round of calls).
    ///
    /// Fails with [`Error::DrainRefused`] before evicting anything when a pod may not be removed, and with
    /// [`Error::DrainTimedOut`] naming the pods still there when the time is up.
    async fn drain(&self, node: &str, options: &DrainOptions) -> Result<DrainReport>;
}

/// [`Drainer`] over the eviction API.
///
/// A PodDisruptionBudget refuses an eviction with 429, and kube's default client retries 429 itself for minutes,
/// which would hide the refusal. Build the drainer with [`KubeDrainer::from_config`] (a client of its own that does
/// not retry), or hand [`KubeDrainer::new`] a client built with `default_retry: false`. Either way each eviction call
/// is cut off after `retry_interval`, so the drain keeps its time bound.
#[derive(Clone)]
pub struct KubeDrainer {
    client: Client,
}

impl KubeDrainer {
    /// Talks to the API server through `client`, which should not retry 429 answers itself.
    pub fn new(client: Client) -> Self {
        KubeDrainer { client }
    }

    /// Talks to the API server described by `config` through a client of its own that leaves 429 answers to the
    /// drain's retry loop.
    pub fn from_config(mut config: kube::Config) -> Result<Self> {
        config.default_retry = false;
        let client = Client::try_from(config).map_err(Error::DrainClient)?;
        Ok(KubeDrainer { client })
    }
}

/// A pod being removed from the node.
struct Removal {
    namespace: String,
    name: String,
    uid: Option<String>,
    evicted: bool,
    blocked_by: Option<BlockReason>,
}

impl Removal {
    fn full_name(&self) -> String {
        object_name(Some(&self.namespace), &self.name)
    }
}

enum EvictionOutcome {
    Accepted,
    Gone,
    Blocked(String),
}

impl KubeDrainer {
    async fn pods_on(&self, node: &str) -> Result<Vec<Pod>> {
        let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
        let pods = Api::<Pod>::all(self.client.clone())
            .list(&params)
            .await
            .map_err(|source| Error::api(Verb::List, "Pod", format!("on Node {node}"), source))?;
        Ok(pods.items)
    }

    async fn evict(&self, removal: &Removal) -> Result<EvictionOutcome> {
        let eviction = json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": { "name": removal.name, "namespace": removal.namespace },
        });
        let api = Api::<Pod>::namespaced(self.client.clone(), &removal.namespace);
        let answer: kube::Result<kube::core::Status> =
            api.create_subresource("eviction", &removal.name, &PostParams::default(), &eviction).await;
        match answer {
            Ok(_) => Ok(EvictionOutcome::Accepted),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(EvictionOutcome::Gone),
            Err(kube::Error::Api(status)) if status.code == 429 => Ok(EvictionOutcome::Blocked(status.message)),
            Err(source) => Err(Error::api(Verb::Evict, "Pod", removal.full_name(), source)),
        }
    }

    /// Whether the pod is gone (deleted, or replaced by a new pod with the same name).
    async fn is_gone(&self, removal: &Removal) -> Result<bool> {
        let api = Api::<Pod>::namespaced(self.client.clone(), &removal.namespace);
        let current = api
            .get_opt(&removal.name)
            .await
            .map_err(|source| Error::api(Verb::Get, "Pod", removal.full_name(), source))?;
        Ok(current.is_none_or(|pod| pod.metadata.uid != removal.uid))
    }
}

#[async_trait]
impl Drainer for KubeDrainer {
    async fn drain(&self, node: &str, options: &DrainOptions) -> Result<DrainReport> {
        let deadline = Instant::now() + options.timeout;
        let mut report = DrainReport::default();
        let mut refused = Vec::new();
        let mut pending = Vec::new();
        for pod in self.pods_on(node).await? {
            let namespace = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            match disposition(&pod, options) {
                Disposition::Skip(reason) => {
                    report.skipped.push(SkippedPod { pod: object_name(Some(&namespace), &name), reason });
                }
                Disposition::Refuse(reason) => {
                    refused.push(BlockedPod { pod: object_name(Some(&namespace), &name), reason });
                }
                Disposition::Evict => pending.push(Removal {
                    namespace,
                    name,
                    uid: pod.metadata.uid.clone(),
                    evicted: false,
                    blocked_by: None,
                }),
            }
        }
        if !refused.is_empty() {
            return Err(Error::DrainRefused { node: node.to_owned(), blocked: refused });
        }
        loop {
            let mut still_there = Vec::new();
            for mut removal in pending {
                if !removal.evicted {
                    let answer = tokio::time::timeout(options.retry_interval, self.evict(&removal)).await;
                    let Ok(outcome) = answer else {
                        removal.blocked_by = Some(BlockReason::EvictionUnanswered);
                        still_there.push(removal);
                        continue;
                    };
                    match outcome? {
                        EvictionOutcome::Accepted => {
                            removal.evicted = true;
                            removal.blocked_by = Some(BlockReason::StillTerminating);
                        }
                        EvictionOutcome::Gone => {
                            report.evicted.push(removal.full_name());
                            continue;
                        }
                        EvictionOutcome::Blocked(message) => {
                            removal.blocked_by = Some(BlockReason::DisruptionBudget(message));
                        }
                    }
                }
                if removal.evicted && self.is_gone(&removal).await? {
                    report.evicted.push(removal.full_name());
                } else {
                    still_there.push(removal);
                }
            }
            if still_there.is_empty() {
                return Ok(report);
            }
            let now = Instant::now();
            if now >= deadline {
                let blocked = still_there
                    .into_iter()
                    .map(|removal| BlockedPod {
                        pod: removal.full_name(),
                        reason: removal.blocked_by.unwrap_or(BlockReason::StillTerminating),
                    })
                    .collect();
                return Err(Error::DrainTimedOut { node: node.to_owned(), timeout: options.timeout, blocked });
            }
            tokio::time::sleep(options.retry_interval.min(deadline - now)).await;
            pending = still_there;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Exchange, scenario, status_reply};
    use serde_json::Value;

    fn pod(namespace: &str, name: &str, uid: &str, extra_metadata: Value, spec: Value) -> Value {
        let mut metadata = json!({"name": name, "namespace": namespace, "uid": uid});
        if let (Some(target), Value::Object(extra)) = (metadata.as_object_mut(), extra_metadata) {
            target.extend(extra);
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    }

    fn plain_spec() -> Value {
        json!({"nodeName": "win-1", "containers": [{"name": "c", "image": "i"}]})
    }

    fn emptydir_spec() -> Value {
        json!({"nodeName": "win-1", "containers": [{"name": "c", "image": "i"}],
               "volumes": [{"name": "scratch", "emptyDir": {}}]})
    }

    fn pod_list(items: Vec<Value>) -> Value {
        json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items})
    }

    fn eviction(namespace: &str, name: &str) -> Value {
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}})
    }

    fn accepted() -> Value {
        json!({"apiVersion": "v1", "kind": "Status", "status": "Success", "code": 201})
    }

    fn options(delete_emptydir_data: bool) -> DrainOptions {
        DrainOptions { delete_emptydir_data, timeout: Duration::from_secs(30), retry_interval: Duration::from_secs(5) }
    }

    const LIST: &str = "/api/v1/pods?&fieldSelector=spec.nodeName%3Dwin-1";

    #[test]
    fn disposition_skips_daemonset_and_mirror_pods_and_guards_emptydir_data() {
        let daemon: Pod = serde_json::from_value(pod(
            "kube-system",
            "ds",
            "u1",
            json!({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "x", "controller": true}]}),
            plain_spec(),
        ))
        .unwrap();
        let mirror: Pod = serde_json::from_value(pod(
            "kube-system",
            "static",
            "u2",
            json!({"annotations": {"kubernetes.io/config.mirror": "abc"}}),
            plain_spec(),
        ))
        .unwrap();
        let scratch: Pod = serde_json::from_value(pod("web", "s", "u3", json!({}), emptydir_spec())).unwrap();
        let plain: Pod = serde_json::from_value(pod("web", "p", "u4", json!({}), plain_spec())).unwrap();
        assert_eq!(disposition(&daemon, &options(false)), Disposition::Skip(SkipReason::DaemonSet));
        assert_eq!(disposition(&mirror, &options(false)), Disposition::Skip(SkipReason::Mirror));
        assert_eq!(disposition(&scratch, &options(false)), Disposition::Refuse(BlockReason::EmptyDirData));
        assert_eq!(disposition(&scratch, &options(true)), Disposition::Evict);
        assert_eq!(disposition(&plain, &options(false)), Disposition::Evict);
    }

    #[tokio::test(start_paused = true)]
    async fn drain_retries_a_budget_429_then_waits_for_the_pod_to_go() {
        let web = pod("web", "a", "uid-a", json!({}), plain_spec());
        let mirror = pod(
            "kube-system",
            "m",
            "uid-m",
            json!({"annotations": {"kubernetes.io/config.mirror": "x"}}),
            plain_spec(),
        );
        let exchanges = vec![
            Exchange::get(LIST).reply(200, pod_list(vec![web.clone(), mirror])),
            Exchange::post("/api/v1/namespaces/web/pods/a/eviction?", eviction("web", "a")).reply(
                429,
                status_reply(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                ),
            ),
            Exchange::post("/api/v1/namespaces/web/pods/a/eviction?", eviction("web", "a")).reply(201, accepted()),
            Exchange::get("/api/v1/namespaces/web/pods/a").reply(200, web),
            Exchange::get("/api/v1/namespaces/web/pods/a").reply(404, status_reply(404, "NotFound", "gone")),
        ];
        let report = scenario(exchanges, |client| async move {
            KubeDrainer::new(client).drain("win-1", &options(false)).await.unwrap()
        })
        .await;
        assert_eq!(
            report,
            DrainReport {
                evicted: vec!["web/a".into()],
                skipped: vec![SkippedPod { pod: "kube-system/m".into(), reason: SkipReason::Mirror }],
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn drain_counts_a_replacement_pod_with_a_new_uid_as_gone() {
        let old = pod("web", "a", "uid-old", json!({}), plain_spec());
        let new = pod("web", "a", "uid-new", json!({}), plain_spec());
        let exchanges = vec![
            Exchange::get(LIST).reply(200, pod_list(vec![old])),
            Exchange::post("/api/v1/namespaces/web/pods/a/eviction?", eviction("web", "a")).reply(201, accepted()),
            Exchange::get("/api/v1/namespaces/web/pods/a").reply(200, new),
        ];
        let report = scenario(exchanges, |client| async move {
            KubeDrainer::new(client).drain("win-1", &options(false)).await.unwrap()
        })
        .await;
        assert_eq!(report.evicted, vec!["web/a".to_owned()]);
    }

    #[tokio::test(start_paused = true)]
    async fn drain_times_out_naming_the_budget_that_blocked_it() {
        let web = pod("web", "a", "uid-a", json!({}), plain_spec());
        let blocked = || {
            Exchange::post("/api/v1/namespaces/web/pods/a/eviction?", eviction("web", "a"))
                .reply(429, status_reply(429, "TooManyRequests", "budget web-pdb allows 0"))
        };
        let mut exchanges = vec![Exchange::get(LIST).reply(200, pod_list(vec![web]))];
        // 30 s timeout, 5 s interval: attempts at 0, 5, 10, 15, 20, 25 and 30 s.
        exchanges.extend((0..7).map(|_| blocked()));
        let error = scenario(exchanges, |client| async move {
            KubeDrainer::new(client).drain("win-1", &options(false)).await.unwrap_err()
        })
        .await;
        match error {
            Error::DrainTimedOut { node, timeout, blocked } => {
                assert_eq!(node, "win-1");
                assert_eq!(timeout, Duration::from_secs(30));
                assert_eq!(
                    blocked,
                    vec![BlockedPod {
                        pod: "web/a".into(),
                        reason: BlockReason::DisruptionBudget("budget web-pdb allows 0".into())
                    }]
                );
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn drain_cuts_an_unanswered_eviction_at_the_retry_interval_and_tries_again() {
        let web = pod("web", "a", "uid-a", json!({}), plain_spec());
        let exchanges = vec![
            Exchange::get(LIST).reply(200, pod_list(vec![web])),
            Exchange::post("/api/v1/namespaces/web/pods/a/eviction?", eviction("web", "a")).unanswered(),
            Exchange::post("/api/v1/namespaces/web/pods/a/eviction?", eviction("web", "a")).reply(201, accepted()),
            Exchange::get("/api/v1/namespaces/web/pods/a").reply(404, status_reply(404, "NotFound", "gone")),
        ];
        let report = scenario(exchanges, |client| async move {
            KubeDrainer::new(client).drain("win-1", &options(false)).await.unwrap()
        })
        .await;
        assert_eq!(report.evicted, vec!["web/a".to_owned()]);
    }

    #[tokio::test(start_paused = true)]
    async fn drain_times_out_naming_an_eviction_that_never_got_an_answer() {
        let web = pod("web", "a", "uid-a", json!({}), plain_spec());
        let mut exchanges = vec![Exchange::get(LIST).reply(200, pod_list(vec![web]))];
        // Each unanswered call is cut after 5 s and the next round follows 5 s later: calls at 0, 10, 20 and 30 s.
        exchanges.extend(
            (0..4)
                .map(|_| Exchange::post("/api/v1/namespaces/web/pods/a/eviction?", eviction("web", "a")).unanswered()),
        );
        let error = scenario(exchanges, |client| async move {
            KubeDrainer::new(client).drain("win-1", &options(false)).await.unwrap_err()
        })
        .await;
        match error {
            Error::DrainTimedOut { blocked, .. } => {
                assert_eq!(blocked, vec![BlockedPod { pod: "web/a".into(), reason: BlockReason::EvictionUnanswered }])
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn drain_refuses_emptydir_pods_before_evicting_anything() {
        let scratch = pod("web", "s", "uid-s", json!({}), emptydir_spec());
        let plain = pod("web", "p", "uid-p", json!({}), plain_spec());
        let exchanges = vec![Exchange::get(LIST).reply(200, pod_list(vec![plain, scratch]))];
        let error = scenario(exchanges, |client| async move {
            KubeDrainer::new(client).drain("win-1", &options(false)).await.unwrap_err()
        })
        .await;
        match error {
            Error::DrainRefused { node, blocked } => {
                assert_eq!(node, "win-1");
                assert_eq!(blocked, vec![BlockedPod { pod: "web/s".into(), reason: BlockReason::EmptyDirData }]);
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn drain_treats_a_pod_gone_before_eviction_as_removed() {
        let web = pod("web", "a", "uid-a", json!({}), plain_spec());
        let exchanges = vec![
            Exchange::get(LIST).reply(200, pod_list(vec![web])),
            Exchange::post("/api/v1/namespaces/web/pods/a/eviction?", eviction("web", "a"))
                .reply(404, status_reply(404, "NotFound", "gone")),
        ];
        let report = scenario(exchanges, |client| async move {
            KubeDrainer::new(client).drain("win-1", &options(false)).await.unwrap()
        })
        .await;
        assert_eq!(report.evicted, vec!["web/a".to_owned()]);
    }
}
