//! The workload the BYOH e2e keeps on the Windows nodes, and the scheduler stand-in it needs.
//!
//! The e2e control plane runs no kube-scheduler, so [`Scheduler`] binds pending pods (no `spec.nodeName`) to
//! Ready, schedulable Windows Nodes whose `nodeSelector` they match and whose `NoSchedule`/`NoExecute` taints they
//! tolerate, round-robin, through the `pods/binding` subresource. [`Workload`] is a Deployment whose pods tolerate
//! the Windows taint and select `kubernetes.io/os: windows`, guarded by a PodDisruptionBudget (`minAvailable`), so
//! a drain through the eviction API is budgeted; [`AvailabilityWatch`] records, from one watch, the lowest number of
//! available pods the workload ever had, which a test compares with the budget.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), wmco_sandbox::workload::WorkloadError> {
//! use wmco_sandbox::workload::{Scheduler, Workload, WorkloadSpec};
//! let scheduler = Scheduler::start(client.clone());
//! let spec = WorkloadSpec { namespace: "e2e-workload".into(), name: "web".into(), replicas: 6, min_available: 5 };
//! let workload = Workload::deploy(client, spec).await?;
//! let availability = workload.watch_availability();
//! // ... drain a node ...
//! assert!(availability.lowest().is_some_and(|lowest| lowest >= 5));
//! # drop(scheduler);
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Binding, Namespace, Node, ObjectReference, Pod, Taint, Toleration};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::core::ObjectMeta;
use kube::runtime::reflector::{self, Store, reflector};
use kube::runtime::{WatchStreamExt as _, watcher};
use serde_json::json;

/// The taint the Windows kubelet registers its Node with (`os=Windows:NoSchedule`): key.
pub const WINDOWS_TAINT_KEY: &str = "os";
/// The Windows taint's value.
pub const WINDOWS_TAINT_VALUE: &str = "Windows";
/// The node label the workload selects (`kubernetes.io/os: windows`).
pub const OS_LABEL: &str = "kubernetes.io/os";
/// The workload's container image (never pulled: the simulated kubelet only reports it running).
pub const PAUSE_IMAGE: &str = "mcr.microsoft.com/oss/kubernetes/pause:3.9";
/// How often the scheduler looks again at pending pods even when no watch event arrived (a failed bind, a Node
/// that turned Ready between two events).
pub const SCHEDULER_RESYNC: Duration = Duration::from_secs(1);
/// How many problems the scheduler keeps (the newest).
const PROBLEMS_KEPT: usize = 100;

/// Why a workload operation failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// An API call failed.
    #[error("{verb} {object}: {source}")]
    Api {
        /// What was attempted (`create`, `list`, `delete`, ...).
        verb: &'static str,
        /// The object, `kind namespace/name`.
        object: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A manifest built here does not deserialize (a bug in this module).
    #[error("manifest of {object}: {source}")]
    Manifest {
        /// The object, `kind namespace/name`.
        object: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
}

fn api_error(verb: &'static str, object: impl Into<String>) -> impl FnOnce(kube::Error) -> WorkloadError {
    let object = object.into();
    move |source| WorkloadError::Api { verb, object, source }
}

// ---- scheduling decisions (pure) --------------------------------------------------------------------------------

/// Whether `toleration` tolerates `taint` (the scheduler's matching: an empty effect matches every effect; operator
/// `Exists` with an empty key matches every taint; `Equal`, the default, needs key and value equal).
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect_matches = toleration.effect.as_deref().is_none_or(|effect| effect.is_empty() || effect == taint.effect);
    if !effect_matches {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    match toleration.operator.as_deref() {
        Some("Exists") => key.is_empty() || key == taint.key,
        None | Some("" | "Equal") => {
            key == taint.key
                && toleration.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
        }
        Some(_) => false,
    }
}

/// Whether `pod` waits for the scheduler: no `nodeName`, not being deleted, not finished, and meant for the default
/// scheduler.
pub fn is_pending(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref();
    let unbound = spec.and_then(|spec| spec.node_name.as_deref()).is_none_or(str::is_empty);
    let default_scheduler =
        spec.and_then(|spec| spec.scheduler_name.as_deref()).is_none_or(|name| name == "default-scheduler");
    let finished = pod
        .status
        .as_ref()
        .and_then(|status| status.phase.as_deref())
        .is_some_and(|phase| phase == "Succeeded" || phase == "Failed");
    unbound && default_scheduler && !finished && pod.metadata.deletion_timestamp.is_none()
}

/// Whether `node` is a Windows Node that may take new pods: label `kubernetes.io/os=windows`, not being deleted,
/// not cordoned, condition Ready `True`.
pub fn is_schedulable_windows_node(node: &Node) -> bool {
    let windows =
        node.metadata.labels.as_ref().and_then(|labels| labels.get(OS_LABEL)).is_some_and(|os| os == "windows");
    let cordoned = node.spec.as_ref().and_then(|spec| spec.unschedulable) == Some(true);
    let ready = node
        .status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    windows && !cordoned && ready && node.metadata.deletion_timestamp.is_none()
}

/// Whether `pod` fits `node`: every `nodeSelector` entry is a label of the node, and every `NoSchedule` or
/// `NoExecute` taint of the node is tolerated.
pub fn fits(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = pod.spec.as_ref() else { return false };
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let selected =
        spec.node_selector.iter().flatten().all(|(key, value)| labels.get(key).is_some_and(|label| label == value));
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    let tolerated = node
        .spec
        .as_ref()
        .and_then(|node_spec| node_spec.taints.as_ref())
        .into_iter()
        .flatten()
        .filter(|taint| taint.effect == "NoSchedule" || taint.effect == "NoExecute")
        .all(|taint| tolerations.iter().any(|toleration| tolerates(toleration, taint)));
    selected && tolerated
}

/// Round-robin placement over the eligible Nodes.
#[derive(Debug, Default)]
pub struct RoundRobin {
    turn: usize,
}

impl RoundRobin {
    /// The Node whose turn it is for `pod` among `nodes` (the schedulable Windows Nodes it fits, in name order),
    /// or `None` if none fits. The turn moves on only with [`RoundRobin::advance`], after a successful bind.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::{Node, Pod};
    /// use wmco_sandbox::workload::RoundRobin;
    /// let node = |name: &str| -> Node {
    ///     serde_json::from_value(serde_json::json!({
    ///         "metadata": {"name": name, "labels": {"kubernetes.io/os": "windows"}},
    ///         "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    ///     }))
    ///     .unwrap()
    /// };
    /// let pod: Pod = serde_json::from_value(serde_json::json!({"spec": {"containers": []}})).unwrap();
    /// let nodes = [node("b"), node("a")];
    /// let mut placement = RoundRobin::default();
    /// assert_eq!(placement.choose(&pod, &nodes).as_deref(), Some("a"));
    /// assert_eq!(placement.choose(&pod, &nodes).as_deref(), Some("a"));
    /// placement.advance();
    /// assert_eq!(placement.choose(&pod, &nodes).as_deref(), Some("b"));
    /// ```
    pub fn choose(&self, pod: &Pod, nodes: &[Node]) -> Option<String> {
        let mut eligible: Vec<&str> = nodes
            .iter()
            .filter(|node| is_schedulable_windows_node(node) && fits(pod, node))
            .filter_map(|node| node.metadata.name.as_deref())
            .collect();
        eligible.sort_unstable();
        eligible.get(self.turn % eligible.len().max(1)).map(|chosen| (*chosen).to_owned())
    }

    /// Moves the turn to the next Node.
    pub fn advance(&mut self) {
        self.turn = self.turn.wrapping_add(1);
    }
}

// ---- scheduler stand-in -----------------------------------------------------------------------------------------

/// One binding the scheduler made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodBinding {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The Node it was bound to.
    pub node: String,
}

#[derive(Debug, Default)]
struct SchedulerLog {
    bindings: Vec<PodBinding>,
    problems: Vec<String>,
}

/// The scheduler stand-in: a task that binds pending pods to Windows Nodes (see the module documentation). It
/// stops when dropped.
#[derive(Debug)]
pub struct Scheduler {
    task: tokio::task::JoinHandle<()>,
    log: Arc<Mutex<SchedulerLog>>,
}

impl Scheduler {
    /// Starts the scheduler with `client` (which needs to list and watch Pods and Nodes and create
    /// `pods/binding`, as cluster admin can).
    pub fn start(client: kube::Client) -> Self {
        let log = Arc::new(Mutex::new(SchedulerLog::default()));
        let task = tokio::spawn(run_scheduler(client, Arc::clone(&log)));
        Scheduler { task, log }
    }

    /// Every binding made so far, oldest first.
    pub fn bindings(&self) -> Vec<PodBinding> {
        lock(&self.log).bindings.clone()
    }

    /// The most recent problems (failed binds, watch errors), oldest first.
    pub fn problems(&self) -> Vec<String> {
        lock(&self.log).problems.clone()
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn note_problem(log: &Mutex<SchedulerLog>, problem: String) {
    let mut log = lock(log);
    if log.problems.len() >= PROBLEMS_KEPT {
        log.problems.remove(0);
    }
    log.problems.push(problem);
}

async fn run_scheduler(client: kube::Client, log: Arc<Mutex<SchedulerLog>>) {
    let (pending, pending_writer) = reflector::store::<Pod>();
    let (nodes, nodes_writer) = reflector::store::<Node>();
    let pending_config = watcher::Config::default().fields("spec.nodeName=");
    let pod_changes = reflector(pending_writer, watcher(Api::<Pod>::all(client.clone()), pending_config))
        .default_backoff()
        .map(|event| event.map(|_| ()))
        .boxed();
    let node_changes = reflector(nodes_writer, watcher(Api::<Node>::all(client.clone()), watcher::Config::default()))
        .default_backoff()
        .map(|event| event.map(|_| ()))
        .boxed();
    let mut changes = futures::stream::select(pod_changes, node_changes);
    let mut resync = tokio::time::interval(SCHEDULER_RESYNC);
    let mut placement = RoundRobin::default();
    let mut bound = BTreeSet::new();
    loop {
        tokio::select! {
            change = changes.next() => match change {
                Some(Ok(())) => {}
                Some(Err(error)) => note_problem(&log, format!("watch failed: {error}")),
                None => return,
            },
            _ = resync.tick() => {}
        }
        schedule_pending(&client, &pending, &nodes, &mut placement, &mut bound, &log).await;
    }
}

/// One pass over the pending pods. `bound` holds the UIDs of pods bound earlier that the pending store may still
/// list (its watch lags behind the binds); it is pruned to the store's pods on each pass.
async fn schedule_pending(
    client: &kube::Client,
    pending: &Store<Pod>,
    nodes: &Store<Node>,
    placement: &mut RoundRobin,
    bound: &mut BTreeSet<String>,
    log: &Mutex<SchedulerLog>,
) {
    let nodes: Vec<Node> = nodes.state().iter().map(|node| (**node).clone()).collect();
    let listed = pending.state();
    bound.retain(|uid| listed.iter().any(|pod| pod.metadata.uid.as_deref() == Some(uid.as_str())));
    let mut pods: Vec<Arc<Pod>> = listed
        .into_iter()
        .filter(|pod| is_pending(pod) && pod.metadata.uid.as_ref().is_none_or(|uid| !bound.contains(uid)))
        .collect();
    pods.sort_by(|a, b| (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name)));
    for pod in pods {
        let (Some(namespace), Some(name)) = (pod.metadata.namespace.clone(), pod.metadata.name.clone()) else {
            continue;
        };
        let Some(node) = placement.choose(&pod, &nodes) else { continue };
        match bind(client, &namespace, &name, &node).await {
            Ok(()) => {
                placement.advance();
                bound.extend(pod.metadata.uid.clone());
                lock(log).bindings.push(PodBinding { namespace, pod: name, node });
            }
            // Already bound or already gone (the store lags behind the API): nothing to do.
            Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {}
            Err(error) => note_problem(log, format!("bind pod {namespace}/{name} to node {node}: {error}")),
        }
    }
}

async fn bind(client: &kube::Client, namespace: &str, pod: &str, node: &str) -> Result<(), kube::Error> {
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(pod.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Node".to_owned()),
            name: Some(node.to_owned()),
            ..ObjectReference::default()
        },
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let _status: serde_json::Value = pods.create_subresource("binding", pod, &PostParams::default(), &binding).await?;
    Ok(())
}

// ---- the workload ------------------------------------------------------------------------------------------------

/// What to deploy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadSpec {
    /// The namespace (created if absent).
    pub namespace: String,
    /// The Deployment's and the budget's name, also the pods' `app` label.
    pub name: String,
    /// Replicas.
    pub replicas: i32,
    /// The PodDisruptionBudget's `minAvailable`.
    pub min_available: i32,
}

impl WorkloadSpec {
    /// The pods' label selector, `app=<name>`.
    pub fn selector(&self) -> String {
        format!("app={}", self.name)
    }

    fn object(&self, kind: &str) -> String {
        format!("{kind} {}/{}", self.namespace, self.name)
    }

    /// The Deployment: `replicas` pause pods labelled `app=<name>`, tolerating `os=Windows:NoSchedule`, selecting
    /// `kubernetes.io/os: windows`.
    ///
    /// # Errors
    /// [`WorkloadError::Manifest`] (never in practice: the manifest is fixed).
    pub fn deployment(&self) -> Result<Deployment, WorkloadError> {
        let WorkloadSpec { namespace, name, replicas, .. } = self;
        serde_json::from_value(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "nodeSelector": {OS_LABEL: "windows"},
                        "tolerations": [{
                            "key": WINDOWS_TAINT_KEY, "operator": "Equal", "value": WINDOWS_TAINT_VALUE,
                            "effect": "NoSchedule",
                        }],
                        "terminationGracePeriodSeconds": 0,
                        "containers": [{"name": "pause", "image": PAUSE_IMAGE}],
                    },
                },
            },
        }))
        .map_err(|source| WorkloadError::Manifest { object: self.object("Deployment"), source })
    }

    /// The PodDisruptionBudget: `minAvailable` of the pods labelled `app=<name>`.
    ///
    /// # Errors
    /// [`WorkloadError::Manifest`] (never in practice: the manifest is fixed).
    pub fn budget(&self) -> Result<PodDisruptionBudget, WorkloadError> {
        let WorkloadSpec { namespace, name, min_available, .. } = self;
        serde_json::from_value(json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": name}}},
        }))
        .map_err(|source| WorkloadError::Manifest { object: self.object("PodDisruptionBudget"), source })
    }
}

/// A deployed workload: Deployment plus PodDisruptionBudget.
#[derive(Clone)]
pub struct Workload {
    client: kube::Client,
    spec: WorkloadSpec,
}

impl std::fmt::Debug for Workload {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Workload").field("spec", &self.spec).finish_non_exhaustive()
    }
}

/// Whether `pod` counts as available: Running, condition Ready `True`, not being deleted (as the disruption
/// controller counts healthy pods).
pub fn is_available(pod: &Pod) -> bool {
    let running_and_ready = pod.status.as_ref().is_some_and(|status| {
        status.phase.as_deref() == Some("Running")
            && status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True")
    });
    running_and_ready && pod.metadata.deletion_timestamp.is_none()
}

/// The Node a pod is bound to, if any.
pub fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref()).filter(|name| !name.is_empty())
}

impl Workload {
    /// Creates the namespace (if absent), the PodDisruptionBudget and the Deployment.
    ///
    /// # Errors
    /// [`WorkloadError::Api`] naming the object that could not be created.
    pub async fn deploy(client: kube::Client, spec: WorkloadSpec) -> Result<Self, WorkloadError> {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let namespace = Namespace {
            metadata: ObjectMeta { name: Some(spec.namespace.clone()), ..ObjectMeta::default() },
            ..Namespace::default()
        };
        match namespaces.create(&PostParams::default(), &namespace).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(api_error("create", format!("Namespace {}", spec.namespace))(error)),
        }
        let workload = Workload { client, spec };
        let budgets: Api<PodDisruptionBudget> = Api::namespaced(workload.client.clone(), &workload.spec.namespace);
        budgets
            .create(&PostParams::default(), &workload.spec.budget()?)
            .await
            .map_err(api_error("create", workload.object("PodDisruptionBudget")))?;
        let deployments: Api<Deployment> = Api::namespaced(workload.client.clone(), &workload.spec.namespace);
        deployments
            .create(&PostParams::default(), &workload.spec.deployment()?)
            .await
            .map_err(api_error("create", workload.object("Deployment")))?;
        Ok(workload)
    }

    /// What was deployed.
    pub fn spec(&self) -> &WorkloadSpec {
        &self.spec
    }

    /// The pods' label selector, `app=<name>`.
    pub fn selector(&self) -> String {
        self.spec.selector()
    }

    fn object(&self, kind: &str) -> String {
        self.spec.object(kind)
    }

    /// The workload's pods now, by name.
    ///
    /// # Errors
    /// [`WorkloadError::Api`] if the list fails.
    pub async fn pods(&self) -> Result<Vec<Pod>, WorkloadError> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.spec.namespace);
        let mut list = pods
            .list(&ListParams::default().labels(&self.selector()))
            .await
            .map_err(api_error("list", format!("Pods {}/{}", self.spec.namespace, self.selector())))?
            .items;
        list.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(list)
    }

    /// How many of the workload's pods are available on each Node now.
    ///
    /// # Errors
    /// [`WorkloadError::Api`] if the list fails.
    pub async fn available_by_node(&self) -> Result<BTreeMap<String, usize>, WorkloadError> {
        let mut by_node = BTreeMap::new();
        for pod in self.pods().await?.iter().filter(|pod| is_available(pod)) {
            if let Some(node) = node_of(pod) {
                *by_node.entry(node.to_owned()).or_insert(0) += 1;
            }
        }
        Ok(by_node)
    }

    /// The budget's `status.disruptionsAllowed` as the disruption controller last wrote it (`None` before its
    /// first status).
    ///
    /// # Errors
    /// [`WorkloadError::Api`] if the read fails.
    pub async fn disruptions_allowed(&self) -> Result<Option<i32>, WorkloadError> {
        let budgets: Api<PodDisruptionBudget> = Api::namespaced(self.client.clone(), &self.spec.namespace);
        let budget =
            budgets.get(&self.spec.name).await.map_err(api_error("get", self.object("PodDisruptionBudget")))?;
        Ok(budget.status.map(|status| status.disruptions_allowed))
    }

    /// Deletes the PodDisruptionBudget (for example before every Windows node is drained, when no replacement pod
    /// could ever become available).
    ///
    /// # Errors
    /// [`WorkloadError::Api`] if the delete fails (already gone is fine).
    pub async fn remove_budget(&self) -> Result<(), WorkloadError> {
        let budgets: Api<PodDisruptionBudget> = Api::namespaced(self.client.clone(), &self.spec.namespace);
        match budgets.delete(&self.spec.name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(api_error("delete", self.object("PodDisruptionBudget"))(error)),
        }
    }

    /// Starts recording how many pods are available, from one watch (see [`AvailabilityWatch`]).
    pub fn watch_availability(&self) -> AvailabilityWatch {
        AvailabilityWatch::start(self.client.clone(), &self.spec.namespace, &self.selector())
    }
}

// ---- availability record -----------------------------------------------------------------------------------------

/// What the availability watch saw.
#[derive(Debug, Default)]
struct Availability {
    /// Availability of each pod the watch knows, by name.
    pods: BTreeMap<String, bool>,
    /// The count after every change that altered it, starting with the initial listing.
    history: Vec<usize>,
    /// Whether the initial listing is complete.
    listed: bool,
    /// Watch errors (the watcher re-lists after one, so changes in between may be coalesced).
    errors: Vec<String>,
}

impl Availability {
    fn record(&mut self) {
        if !self.listed {
            return;
        }
        let count = self.pods.values().filter(|available| **available).count();
        if self.history.last() != Some(&count) {
            self.history.push(count);
        }
    }
}

/// A watch on the workload's pods recording the number of available pods ([`is_available`]) after every change:
/// one watch on one resource sees every state in the order etcd committed it, so [`AvailabilityWatch::lowest`] is
/// the exact minimum (unless [`AvailabilityWatch::errors`] shows a re-list). Stops when dropped.
#[derive(Debug)]
pub struct AvailabilityWatch {
    task: tokio::task::JoinHandle<()>,
    state: Arc<Mutex<Availability>>,
}

impl AvailabilityWatch {
    /// Watches the pods of `namespace` matching `selector`.
    pub fn start(client: kube::Client, namespace: &str, selector: &str) -> Self {
        let state = Arc::new(Mutex::new(Availability::default()));
        let pods: Api<Pod> = Api::namespaced(client, namespace);
        let config = watcher::Config::default().labels(selector);
        let recorder = Arc::clone(&state);
        let task = tokio::spawn(async move {
            let mut events = watcher(pods, config).default_backoff().boxed();
            while let Some(event) = events.next().await {
                let mut state = lock(&recorder);
                match event {
                    Ok(watcher::Event::Init) => state.pods.clear(),
                    Ok(watcher::Event::InitApply(pod) | watcher::Event::Apply(pod)) => {
                        state.pods.insert(pod.metadata.name.clone().unwrap_or_default(), is_available(&pod));
                        state.record();
                    }
                    Ok(watcher::Event::Delete(pod)) => {
                        state.pods.remove(pod.metadata.name.as_deref().unwrap_or_default());
                        state.record();
                    }
                    Ok(watcher::Event::InitDone) => {
                        state.listed = true;
                        state.record();
                    }
                    Err(error) => state.errors.push(error.to_string()),
                }
            }
        });
        AvailabilityWatch { task, state }
    }

    /// Whether the initial listing is complete (counts are recorded from then on).
    pub fn is_listening(&self) -> bool {
        lock(&self.state).listed
    }

    /// The available count now, as the watch sees it.
    pub fn current(&self) -> Option<usize> {
        lock(&self.state).history.last().copied()
    }

    /// The lowest available count seen since the initial listing.
    pub fn lowest(&self) -> Option<usize> {
        lock(&self.state).history.iter().min().copied()
    }

    /// Every available count in order (consecutive repeats collapsed), starting with the initial listing.
    pub fn history(&self) -> Vec<usize> {
        lock(&self.state).history.clone()
    }

    /// Watch errors seen (after one, the watcher re-lists, so changes in between may be coalesced).
    pub fn errors(&self) -> Vec<String> {
        lock(&self.state).errors.clone()
    }
}

impl Drop for AvailabilityWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wmco_e2e_harness::eventually;

    /// How long the control-plane tests wait for the scheduler, the simulated kubelets and the budget to react.
    const REACTION_TIMEOUT: Duration = Duration::from_secs(90);

    fn toleration(value: serde_json::Value) -> Toleration {
        serde_json::from_value(value).unwrap()
    }

    fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
        Taint { key: key.into(), value: value.map(str::to_owned), effect: effect.into(), time_added: None }
    }

    fn node(name: &str, ready: &str, unschedulable: bool, taints: serde_json::Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/os": "windows"}},
            "spec": {"unschedulable": unschedulable, "taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        }))
        .unwrap()
    }

    fn web(replicas: i32, min_available: i32) -> WorkloadSpec {
        WorkloadSpec { namespace: "ns".into(), name: "web".into(), replicas, min_available }
    }

    fn windows_pod() -> Pod {
        let template = web(1, 1).deployment().unwrap().spec.unwrap().template;
        Pod { metadata: template.metadata.unwrap_or_default(), spec: template.spec, status: None }
    }

    #[test]
    fn tolerations_match_like_the_scheduler() {
        let windows = taint("os", Some("Windows"), "NoSchedule");
        assert!(tolerates(
            &toleration(json!({"key": "os", "operator": "Equal", "value": "Windows", "effect": "NoSchedule"})),
            &windows
        ));
        assert!(tolerates(&toleration(json!({"key": "os", "value": "Windows"})), &windows));
        assert!(tolerates(&toleration(json!({"key": "os", "operator": "Exists"})), &windows));
        assert!(tolerates(&toleration(json!({"operator": "Exists"})), &windows));
        assert!(!tolerates(&toleration(json!({"key": "os", "value": "windows"})), &windows));
        assert!(!tolerates(&toleration(json!({"key": "os", "value": "Windows", "effect": "NoExecute"})), &windows));
        assert!(!tolerates(&toleration(json!({"key": "other", "operator": "Exists"})), &windows));
        assert!(!tolerates(&toleration(json!({"key": "os", "operator": "Lt", "value": "Windows"})), &windows));
    }

    #[test]
    fn the_workload_fits_ready_uncordoned_windows_nodes_with_only_the_windows_taint() {
        let pod = windows_pod();
        let windows_taint = json!([{"key": "os", "value": "Windows", "effect": "NoSchedule"}]);
        assert!(fits(&pod, &node("a", "True", false, windows_taint.clone())));
        assert!(fits(&pod, &node("a", "True", false, json!([{"key": "x", "effect": "PreferNoSchedule"}]))));
        let cordoned_taint = json!([
            {"key": "os", "value": "Windows", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        ]);
        assert!(!fits(&pod, &node("a", "True", false, cordoned_taint)));
        let mut linux = node("l", "True", false, json!([]));
        linux.metadata.labels = Some([(OS_LABEL.to_owned(), "linux".to_owned())].into());
        assert!(!fits(&pod, &linux));
        assert!(!is_schedulable_windows_node(&linux));
        assert!(!is_schedulable_windows_node(&node("a", "False", false, windows_taint.clone())));
        assert!(!is_schedulable_windows_node(&node("a", "Unknown", false, windows_taint.clone())));
        assert!(!is_schedulable_windows_node(&node("a", "True", true, windows_taint.clone())));
        assert!(is_schedulable_windows_node(&node("a", "True", false, windows_taint)));
    }

    #[test]
    fn round_robin_takes_eligible_nodes_in_name_order() {
        let pod = windows_pod();
        let taints = json!([{"key": "os", "value": "Windows", "effect": "NoSchedule"}]);
        let nodes = [
            node("c", "True", false, taints.clone()),
            node("a", "True", false, taints.clone()),
            node("b", "True", true, taints.clone()),
            node("d", "False", false, taints.clone()),
            node("e", "True", false, taints),
        ];
        let mut placement = RoundRobin::default();
        let mut picks = Vec::new();
        for _ in 0..5 {
            picks.extend(placement.choose(&pod, &nodes));
            placement.advance();
        }
        assert_eq!(picks, ["a", "c", "e", "a", "c"]);
        assert_eq!(RoundRobin::default().choose(&pod, &nodes[2..4]), None);
    }

    #[test]
    fn pending_means_unbound_undeleted_unfinished_and_for_the_default_scheduler() {
        let mut pod = windows_pod();
        assert!(is_pending(&pod));
        pod.spec.as_mut().unwrap().node_name = Some("a".into());
        assert!(!is_pending(&pod));
        let mut other = windows_pod();
        other.spec.as_mut().unwrap().scheduler_name = Some("custom".into());
        assert!(!is_pending(&other));
        let mut deleting = windows_pod();
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        assert!(!is_pending(&deleting));
        let mut finished = windows_pod();
        finished.status = Some(serde_json::from_value(json!({"phase": "Succeeded"})).unwrap());
        assert!(!is_pending(&finished));
    }

    #[test]
    fn the_manifests_name_the_budget_and_the_windows_placement() {
        let spec = web(6, 5);
        let deployment = serde_json::to_value(spec.deployment().unwrap()).unwrap();
        assert_eq!(deployment["spec"]["replicas"], 6);
        assert_eq!(deployment["spec"]["template"]["spec"]["nodeSelector"], json!({"kubernetes.io/os": "windows"}));
        assert_eq!(
            deployment["spec"]["template"]["spec"]["tolerations"],
            json!([{"key": "os", "operator": "Equal", "value": "Windows", "effect": "NoSchedule"}])
        );
        let budget = serde_json::to_value(spec.budget().unwrap()).unwrap();
        assert_eq!(budget["spec"], json!({"minAvailable": 5, "selector": {"matchLabels": {"app": "web"}}}));
        assert_eq!(spec.selector(), "app=web");
    }

    #[test]
    fn availability_counts_changes_only_after_the_listing() {
        let mut availability = Availability::default();
        availability.pods.insert("a".into(), true);
        availability.record();
        assert!(availability.history.is_empty());
        availability.listed = true;
        availability.record();
        availability.pods.insert("b".into(), true);
        availability.record();
        availability.record();
        availability.pods.insert("a".into(), false);
        availability.record();
        assert_eq!(availability.history, [1, 2, 1]);
    }

    /// A simulated Windows kubelet that already holds its client certificate (no bootstrap), registering with the
    /// Windows taint.
    async fn windows_kubelet(
        control_plane: &wmco_e2e_harness::ControlPlane,
        root: &std::path::Path,
        name: &str,
        node_ip: &str,
    ) -> anyhow::Result<wmco_kubelet_sim::KubeletHandle> {
        let certificate = control_plane.issue_client_certificate(&format!("system:node:{name}"), &["system:nodes"])?;
        let c_drive = root.join(name).join("C");
        std::fs::create_dir_all(c_drive.join("k"))?;
        std::fs::write(
            c_drive.join("k/kubeconfig"),
            control_plane.kubeconfig_for_certificate(&format!("system:node:{name}"), &certificate),
        )?;
        let config = json!({
            "kind": "KubeletConfiguration",
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "registerWithTaints": [{"key": WINDOWS_TAINT_KEY, "value": WINDOWS_TAINT_VALUE, "effect": "NoSchedule"}],
            "nodeStatusUpdateFrequency": "1s",
            "nodeLeaseDurationSeconds": 10,
        });
        std::fs::write(c_drive.join("k/kubelet.conf"), config.to_string())?;
        let args = vec![
            r"--config=C:\k\kubelet.conf".to_owned(),
            r"--kubeconfig=C:\k\kubeconfig".to_owned(),
            format!("--node-ip={node_ip}"),
        ];
        let launch = wmco_kubelet_sim::KubeletLaunch::new(args, &c_drive, name);
        Ok(wmco_kubelet_sim::Kubelet::start(launch).await?)
    }

    async fn set_cordoned(client: &kube::Client, node: &str, cordoned: bool) -> anyhow::Result<()> {
        let nodes: Api<Node> = Api::all(client.clone());
        let patch = kube::api::Patch::Merge(json!({"spec": {"unschedulable": cordoned}}));
        nodes.patch(node, &kube::api::PatchParams::default(), &patch).await?;
        Ok(())
    }

    async fn evict(client: &kube::Client, namespace: &str, pod: &str) -> Result<(), kube::Error> {
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        pods.evict(pod, &kube::api::EvictParams::default()).await.map(|_| ())
    }

    /// Two simulated Windows kubelets, no operator: the Deployment's pods are bound round-robin and run; with both
    /// nodes cordoned one eviction passes, the next is refused by the budget (429) and the evicted pod's
    /// replacement stays pending; uncordoning one node lets the replacement run there and the refused eviction
    /// pass; the watch never saw fewer available pods than `minAvailable`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pods_are_bound_round_robin_run_and_evictions_respect_the_budget() -> anyhow::Result<()> {
        let control_plane = wmco_e2e_harness::ControlPlane::start(Default::default()).await?;
        let admin = control_plane.admin_client();
        let hosts = tempfile::tempdir()?;
        let scheduler = Scheduler::start(admin.clone());
        let kubelet_a = windows_kubelet(&control_plane, hosts.path(), "win-wa", "203.0.113.61").await?;
        let kubelet_b = windows_kubelet(&control_plane, hosts.path(), "win-wb", "203.0.113.62").await?;
        let nodes: Api<Node> = Api::all(admin.clone());
        eventually("both Nodes Ready", REACTION_TIMEOUT, || async {
            let ready = nodes
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|n| is_schedulable_windows_node(n))
                .count();
            anyhow::ensure!(ready == 2, "{ready} Ready Nodes");
            Ok(())
        })
        .await?;

        let spec = WorkloadSpec { namespace: "workload-e2e".into(), name: "web".into(), replicas: 4, min_available: 3 };
        let workload = Workload::deploy(admin.clone(), spec).await?;
        let placed = eventually("4 available pods", REACTION_TIMEOUT, || async {
            let by_node = workload.available_by_node().await?;
            anyhow::ensure!(by_node.values().sum::<usize>() == 4, "available by node: {by_node:?}");
            Ok(by_node)
        })
        .await?;
        assert_eq!(placed, BTreeMap::from([("win-wa".to_owned(), 2), ("win-wb".to_owned(), 2)]));
        let bindings = scheduler.bindings();
        assert_eq!(bindings.len(), 4, "{bindings:?}");
        assert!(bindings.iter().all(|binding| binding.namespace == "workload-e2e"), "{bindings:?}");
        let availability = workload.watch_availability();
        eventually("the availability watch listing", REACTION_TIMEOUT, || async {
            anyhow::ensure!(availability.current() == Some(4), "current {:?}", availability.current());
            Ok(())
        })
        .await?;

        set_cordoned(&admin, "win-wa", true).await?;
        set_cordoned(&admin, "win-wb", true).await?;
        eventually("one disruption allowed", REACTION_TIMEOUT, || async {
            let allowed = workload.disruptions_allowed().await?;
            anyhow::ensure!(allowed == Some(1), "disruptionsAllowed {allowed:?}");
            Ok(())
        })
        .await?;
        let on_a: Vec<String> = workload
            .pods()
            .await?
            .iter()
            .filter(|pod| node_of(pod) == Some("win-wa"))
            .filter_map(|pod| pod.metadata.name.clone())
            .collect();
        assert_eq!(on_a.len(), 2, "{on_a:?}");
        evict(&admin, "workload-e2e", &on_a[0]).await?;
        match evict(&admin, "workload-e2e", &on_a[1]).await {
            Err(kube::Error::Api(status)) => assert_eq!(status.code, 429, "{status:?}"),
            other => anyhow::bail!("the second eviction should be refused by the budget, got {other:?}"),
        }
        let pending = eventually("the replacement pod pending, the evicted one gone", REACTION_TIMEOUT, || async {
            let pods = workload.pods().await?;
            let names: Vec<&str> = pods.iter().filter_map(|pod| pod.metadata.name.as_deref()).collect();
            anyhow::ensure!(!names.contains(&on_a[0].as_str()), "{names:?}");
            let pending: Vec<String> =
                pods.iter().filter(|pod| is_pending(pod)).filter_map(|pod| pod.metadata.name.clone()).collect();
            anyhow::ensure!(pods.len() == 4 && pending.len() == 1, "pods {names:?}, pending {pending:?}");
            Ok(pending)
        })
        .await?;
        assert_eq!(scheduler.bindings().len(), 4, "nothing may be bound while both nodes are cordoned");
        assert_eq!(workload.disruptions_allowed().await?, Some(0));

        set_cordoned(&admin, "win-wb", false).await?;
        eventually("the replacement running on win-wb", REACTION_TIMEOUT, || async {
            let by_node = workload.available_by_node().await?;
            anyhow::ensure!(
                by_node == BTreeMap::from([("win-wa".to_owned(), 1), ("win-wb".to_owned(), 3)]),
                "{by_node:?}"
            );
            Ok(())
        })
        .await?;
        let last = scheduler.bindings().last().cloned();
        assert_eq!(
            last,
            Some(PodBinding { namespace: "workload-e2e".into(), pod: pending[0].clone(), node: "win-wb".into() })
        );
        eventually("the second eviction allowed", REACTION_TIMEOUT, || async {
            Ok(evict(&admin, "workload-e2e", &on_a[1]).await?)
        })
        .await?;
        eventually("4 available pods on win-wb", REACTION_TIMEOUT, || async {
            let by_node = workload.available_by_node().await?;
            anyhow::ensure!(by_node == BTreeMap::from([("win-wb".to_owned(), 4)]), "{by_node:?}");
            Ok(())
        })
        .await?;
        assert_eq!(availability.errors(), Vec::<String>::new());
        assert_eq!(availability.lowest(), Some(3), "history {:?}", availability.history());
        assert_eq!(availability.history(), [4, 3, 4, 3, 4]);
        assert_eq!(scheduler.problems(), Vec::<String>::new());
        kubelet_a.stop().await;
        kubelet_b.stop().await;
        Ok(())
    }
}
