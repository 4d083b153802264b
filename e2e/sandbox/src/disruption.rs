//! [`DisruptionWatch`]: one watch on the Windows Nodes recording how many were out of service because of the
//! operator (marked `windowsmachineconfig.openshift.io/upgrading`, or unschedulable) at once, and which ever were.
//! One resource, one watch: every state arrives in etcd's order, so the most seen at once is exact unless the watch
//! had to re-list ([`DisruptionWatch::errors`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::runtime::{WatchStreamExt as _, watcher};
use wmco_cluster_client::names::UPGRADING_LABEL;

/// `(marked upgrading, unschedulable)` of a Node.
///
/// ```
/// let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "win-a", "labels": {"windowsmachineconfig.openshift.io/upgrading": "true"}},
/// }))?;
/// assert_eq!(wmco_sandbox::disruption::disruption_of(&node), (true, false));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn disruption_of(node: &Node) -> (bool, bool) {
    let marked = node
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(UPGRADING_LABEL))
        .is_some_and(|value| value == "true");
    let unschedulable = node.spec.as_ref().and_then(|spec| spec.unschedulable).unwrap_or(false);
    (marked, unschedulable)
}

/// What the Node watch saw.
#[derive(Debug, Default)]
struct Seen {
    /// Per Node: marked upgrading or unschedulable.
    nodes: BTreeMap<String, bool>,
    /// The number of disrupted Nodes after every change that altered it, from the initial listing on.
    history: Vec<usize>,
    /// Every Node seen disrupted after the initial listing.
    disrupted: BTreeSet<String>,
    listed: bool,
    errors: Vec<String>,
}

impl Seen {
    fn record(&mut self) {
        if !self.listed {
            return;
        }
        let disrupted: Vec<&String> =
            self.nodes.iter().filter(|(_, disrupted)| **disrupted).map(|(name, _)| name).collect();
        let count = disrupted.len();
        self.disrupted.extend(disrupted.into_iter().cloned());
        if self.history.last() != Some(&count) {
            self.history.push(count);
        }
    }
}

/// Watches the Windows Nodes until dropped.
///
/// ```no_run
/// # async fn example(sandbox: &wmco_sandbox::Sandbox) {
/// use wmco_sandbox::disruption::DisruptionWatch;
/// let watch = DisruptionWatch::start(sandbox.admin_client());
/// // ... wait until `watch.is_listening()`, change something, wait until it rolled out ...
/// assert!(watch.most_unavailable() <= 1 && watch.errors().is_empty());
/// # }
/// ```
pub struct DisruptionWatch {
    task: tokio::task::JoinHandle<()>,
    state: Arc<Mutex<Seen>>,
}

impl DisruptionWatch {
    /// Starts the watch (labels `kubernetes.io/os=windows`).
    pub fn start(client: kube::Client) -> Self {
        let state = Arc::new(Mutex::new(Seen::default()));
        let nodes: Api<Node> = Api::all(client);
        let config = watcher::Config::default().labels("kubernetes.io/os=windows");
        let recorder = Arc::clone(&state);
        let task = tokio::spawn(async move {
            let mut events = watcher(nodes, config).default_backoff().boxed();
            while let Some(event) = events.next().await {
                let mut state = recorder.lock().unwrap_or_else(PoisonError::into_inner);
                match event {
                    Ok(watcher::Event::Init) => state.nodes.clear(),
                    Ok(watcher::Event::InitApply(node) | watcher::Event::Apply(node)) => {
                        let (marked, unschedulable) = disruption_of(&node);
                        state.nodes.insert(node.metadata.name.clone().unwrap_or_default(), marked || unschedulable);
                        state.record();
                    }
                    Ok(watcher::Event::Delete(node)) => {
                        state.nodes.remove(node.metadata.name.as_deref().unwrap_or_default());
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
        DisruptionWatch { task, state }
    }

    fn lock(&self) -> MutexGuard<'_, Seen> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the initial listing is done (changes from then on are counted).
    pub fn is_listening(&self) -> bool {
        self.lock().listed
    }

    /// The most Nodes seen disrupted at once.
    pub fn most_unavailable(&self) -> usize {
        self.lock().history.iter().copied().max().unwrap_or(0)
    }

    /// The number of disrupted Nodes after each change that altered it.
    pub fn history(&self) -> Vec<usize> {
        self.lock().history.clone()
    }

    /// Every Node seen disrupted.
    pub fn disrupted(&self) -> BTreeSet<String> {
        self.lock().disrupted.clone()
    }

    /// The watch's errors (each one means a re-list, which may have missed states).
    pub fn errors(&self) -> Vec<String> {
        self.lock().errors.clone()
    }
}

impl Drop for DisruptionWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}
