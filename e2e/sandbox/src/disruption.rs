//! [`DisruptionWatch`]: one watch on the Windows Nodes recording how many were out of service because of the
//! operator (marked `windowsmachineconfig.openshift.io/upgrading`, or unschedulable) at once, which ever were, how
//! many times each went out of service, and how long each took from its first disruption until it was settled again (at a target version, if given).
//! One resource, one watch: every state arrives in etcd's order, so the most seen at once is exact unless the watch
//! had to re-list ([`DisruptionWatch::errors`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::runtime::{WatchStreamExt as _, watcher};
use wmco_cluster_client::names::{UPGRADING_LABEL, VERSION_ANNOTATION};

use crate::{Sandbox, SandboxError};

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

/// What the watch reads of one Windows Node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeState {
    /// Marked upgrading or unschedulable.
    pub disrupted: bool,
    /// Annotated with the target version (always `true` without a target).
    pub at_target: bool,
    /// Its `Ready` condition is `True`.
    pub ready: bool,
}

impl NodeState {
    /// The state of `node` against the target version `target`, if any.
    pub fn of(node: &Node, target: Option<&str>) -> NodeState {
        let (marked, unschedulable) = disruption_of(node);
        let version = node.metadata.annotations.as_ref().and_then(|annotations| annotations.get(VERSION_ANNOTATION));
        NodeState {
            disrupted: marked || unschedulable,
            at_target: target.is_none_or(|target| version.is_some_and(|version| version == target)),
            ready: crate::node_is_ready(node),
        }
    }

    /// In service at the target: not disrupted, at the target version, Ready.
    pub fn settled(self) -> bool {
        !self.disrupted && self.at_target && self.ready
    }
}

/// What the Node watch saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// Per Node: disrupted now.
    nodes: BTreeMap<String, bool>,
    /// Per Node: when it was first seen disrupted after the initial listing.
    pub marked_at: BTreeMap<String, Instant>,
    /// Per Node: when it was first seen settled after having been disrupted (see [`NodeState::settled`]).
    pub done_at: BTreeMap<String, Instant>,
    /// Per Node: how many times it went out of service (from not disrupted to disrupted) after the initial listing.
    pub disruptions: BTreeMap<String, usize>,
    /// The number of disrupted Nodes after every change that altered it, from the initial listing on.
    pub history: Vec<usize>,
    /// Whether the initial listing is done.
    pub listed: bool,
    /// The watch's errors (each one means a re-list, which may have missed states).
    pub errors: Vec<String>,
}

impl Seen {
    /// Notes `state` of Node `name` seen at `now`.
    pub fn apply(&mut self, name: String, state: NodeState, now: Instant) {
        if state.disrupted && self.listed {
            self.marked_at.entry(name.clone()).or_insert(now);
            if self.nodes.get(&name) != Some(&true) {
                *self.disruptions.entry(name.clone()).or_insert(0) += 1;
            }
        }
        if state.settled() && self.marked_at.contains_key(&name) {
            self.done_at.entry(name.clone()).or_insert(now);
        }
        self.nodes.insert(name, state.disrupted);
        self.record();
    }

    /// Forgets Node `name`.
    pub fn remove(&mut self, name: &str) {
        self.nodes.remove(name);
        self.record();
    }

    /// Ends the initial listing.
    pub fn listed(&mut self) {
        self.listed = true;
        self.record();
    }

    fn record(&mut self) {
        if !self.listed {
            return;
        }
        let count = self.nodes.values().filter(|disrupted| **disrupted).count();
        if self.history.last() != Some(&count) {
            self.history.push(count);
        }
    }

    /// The most Nodes seen disrupted at once.
    pub fn most_unavailable(&self) -> usize {
        self.history.iter().copied().max().unwrap_or(0)
    }

    /// Per Node that settled again: the time from its first disruption to then.
    pub fn disruption_times(&self) -> Vec<Duration> {
        self.done_at
            .iter()
            .filter_map(|(node, done)| Some(done.saturating_duration_since(*self.marked_at.get(node)?)))
            .collect()
    }
}

/// Watches the Windows Nodes until dropped.
///
/// ```no_run
/// # async fn example(sandbox: &wmco_sandbox::Sandbox) {
/// use wmco_sandbox::disruption::DisruptionWatch;
/// let watch = DisruptionWatch::start(sandbox.admin_client(), None);
/// // ... wait until `watch.is_listening()`, change something, wait until it rolled out ...
/// assert!(watch.most_unavailable() <= 1 && watch.errors().is_empty());
/// # }
/// ```
pub struct DisruptionWatch {
    task: tokio::task::JoinHandle<()>,
    state: Arc<Mutex<Seen>>,
}

impl DisruptionWatch {
    /// Starts the watch (labels `kubernetes.io/os=windows`); a Node is done once it is settled at `target` (any
    /// version without one) after having been disrupted.
    pub fn start(client: kube::Client, target: Option<&str>) -> Self {
        let state = Arc::new(Mutex::new(Seen::default()));
        let nodes: Api<Node> = Api::all(client);
        let config = watcher::Config::default().labels("kubernetes.io/os=windows");
        let recorder = Arc::clone(&state);
        let target = target.map(str::to_owned);
        let task = tokio::spawn(async move {
            let mut events = watcher(nodes, config).default_backoff().boxed();
            while let Some(event) = events.next().await {
                let mut seen = recorder.lock().unwrap_or_else(PoisonError::into_inner);
                match event {
                    Ok(watcher::Event::Init) => seen.nodes.clear(),
                    Ok(watcher::Event::InitApply(node) | watcher::Event::Apply(node)) => {
                        let state = NodeState::of(&node, target.as_deref());
                        seen.apply(node.metadata.name.unwrap_or_default(), state, Instant::now());
                    }
                    Ok(watcher::Event::Delete(node)) => seen.remove(node.metadata.name.as_deref().unwrap_or_default()),
                    Ok(watcher::Event::InitDone) => seen.listed(),
                    Err(error) => seen.errors.push(error.to_string()),
                }
            }
        });
        DisruptionWatch { task, state }
    }

    /// Starts the watch on `sandbox`'s cluster (as [`DisruptionWatch::start`]) and waits until its initial listing is
    /// done, so that every later change is counted.
    ///
    /// # Errors
    /// As [`Sandbox::wait_for`].
    pub async fn listening(sandbox: &Sandbox, target: Option<&str>, timeout: Duration) -> Result<Self, SandboxError> {
        let watch = DisruptionWatch::start(sandbox.admin_client(), target);
        sandbox
            .wait_for("the Node watch listing", timeout, || async {
                anyhow::ensure!(watch.is_listening(), "still listing");
                Ok(())
            })
            .await?;
        Ok(watch)
    }

    /// What the watch saw so far.
    pub fn lock(&self) -> MutexGuard<'_, Seen> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the initial listing is done (changes from then on are counted).
    pub fn is_listening(&self) -> bool {
        self.lock().listed
    }

    /// The most Nodes seen disrupted at once.
    pub fn most_unavailable(&self) -> usize {
        self.lock().most_unavailable()
    }

    /// The number of disrupted Nodes after each change that altered it.
    pub fn history(&self) -> Vec<usize> {
        self.lock().history.clone()
    }

    /// Every Node seen disrupted.
    pub fn disrupted(&self) -> BTreeSet<String> {
        self.lock().marked_at.keys().cloned().collect()
    }

    /// Per Node seen disrupted: how many times it went out of service.
    pub fn disruptions(&self) -> BTreeMap<String, usize> {
        self.lock().disruptions.clone()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_times_each_node_from_its_mark_to_its_upgrade_and_counts_disruption_at_once() {
        let start = Instant::now();
        let at = |seconds| start + Duration::from_secs(seconds);
        let steady = NodeState { disrupted: false, at_target: false, ready: true };
        let marked = NodeState { disrupted: true, ..steady };
        let upgraded = NodeState { disrupted: false, at_target: true, ready: true };
        let mut seen = Seen::default();
        seen.apply("a".into(), steady, at(0));
        seen.apply("b".into(), steady, at(0));
        seen.listed();
        seen.apply("a".into(), marked, at(1));
        seen.apply("b".into(), marked, at(2));
        seen.apply("a".into(), NodeState { at_target: true, ..marked }, at(3));
        seen.apply("a".into(), upgraded, at(4));
        seen.apply("b".into(), upgraded, at(7));

        assert_eq!(seen.history, [0, 1, 2, 1, 0]);
        assert_eq!(seen.most_unavailable(), 2);
        assert_eq!(seen.disruptions, BTreeMap::from([("a".to_owned(), 1), ("b".to_owned(), 1)]));
        seen.apply("a".into(), marked, at(8));
        seen.apply("a".into(), marked, at(9));
        assert_eq!(seen.disruptions["a"], 2, "out of service again, counted once");
        assert_eq!(seen.disruption_times(), [Duration::from_secs(3), Duration::from_secs(5)]);
    }

    #[test]
    fn a_node_settled_from_the_start_is_not_done() {
        let mut seen = Seen::default();
        let steady = NodeState { disrupted: false, at_target: true, ready: true };
        seen.apply("a".into(), steady, Instant::now());
        seen.listed();
        seen.apply("a".into(), steady, Instant::now());
        assert!(seen.done_at.is_empty() && seen.marked_at.is_empty());
        assert_eq!(seen.history, [0]);
    }
}
