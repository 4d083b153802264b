//! Watch events as loop triggers: [`fleet_node_changes`] for the Windows Nodes (only changes the planner reads
//! trigger), [`watch_triggers`] for any other watched kind (every change triggers). Watch errors are logged with
//! the loop's name and dropped (the watcher's own backoff retries).

use std::collections::HashMap;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::runtime::watcher;
use wmco_cluster_client::names::{PUB_KEY_HASH_ANNOTATION, REBOOT_REQUIRED_ANNOTATION, VERSION_ANNOTATION};
use wmco_cluster_client::{NodeExt, ResourceExt};

/// One item per Node event that changes what the planner reads (Ready, unschedulable, the `upgrading` mark, the
/// version and `pub-key-hash` annotations) or asks for a reboot (the `reboot-required` annotation); heartbeats that change nothing it reads are dropped. `watching` names
/// the loop in the log line of a watch error.
pub fn fleet_node_changes(
    events: impl Stream<Item = Result<watcher::Event<Node>, watcher::Error>> + Send + 'static,
    watching: &'static str,
) -> impl Stream<Item = ()> + Send + 'static {
    let mut seen: HashMap<String, NodeFacts> = HashMap::new();
    events.filter_map(move |event| {
        let changed = match event {
            Ok(watcher::Event::Apply(node) | watcher::Event::InitApply(node)) => {
                let name = node.name_any();
                let facts = NodeFacts::of(&node);
                seen.insert(name, facts.clone()).is_none_or(|previous| previous != facts)
            }
            Ok(watcher::Event::Delete(node)) => {
                seen.remove(&node.name_any());
                true
            }
            Ok(watcher::Event::Init) => false,
            Ok(watcher::Event::InitDone) => true,
            Err(error) => {
                tracing::warn!(error = %error, "{watching}: watching Windows Nodes");
                false
            }
        };
        futures::future::ready(changed.then_some(()))
    })
}

/// One item per watch event except the start of a relist (`Init`); errors are logged as `{watching}: watching
/// {what}` and dropped.
pub fn watch_triggers<K: Send + 'static>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    watching: &'static str,
    what: &'static str,
) -> impl Stream<Item = ()> + Send + 'static {
    events.filter_map(move |event| {
        let trigger = match event {
            Ok(watcher::Event::Init) => None,
            Ok(_) => Some(()),
            Err(error) => {
                tracing::warn!(error = %error, "{watching}: watching {what}");
                None
            }
        };
        futures::future::ready(trigger)
    })
}

/// What the planner, the key rotation and the reboot requests read from a Node.
#[derive(Clone, Debug, PartialEq, Eq)]
struct NodeFacts {
    ready: bool,
    unschedulable: bool,
    marked: bool,
    version: Option<String>,
    pub_key_hash: Option<String>,
    reboot_required: bool,
}

impl NodeFacts {
    fn of(node: &Node) -> Self {
        NodeFacts {
            ready: node.is_ready(),
            unschedulable: node.is_unschedulable(),
            marked: node.is_marked(),
            version: node.annotation(VERSION_ANNOTATION).map(str::to_owned),
            pub_key_hash: node.annotation(PUB_KEY_HASH_ANNOTATION).map(str::to_owned),
            reboot_required: node.annotation(REBOOT_REQUIRED_ANNOTATION).is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wmco_cluster_client::fake::objects;
    use wmco_cluster_client::names::UPGRADING_LABEL;

    #[test]
    fn only_changes_the_planner_reads_trigger_a_reconcile() {
        let node = |ready: bool, unschedulable: bool| -> Node {
            let node = objects::node("win-1").labelled(UPGRADING_LABEL, "true");
            node.unschedulable(unschedulable).ready_if(ready).build()
        };
        let events = futures::stream::iter([
            Ok(watcher::Event::InitApply(node(true, false))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(node(true, false))),
            Ok(watcher::Event::Apply(node(true, true))),
            Ok(watcher::Event::Apply(node(false, true))),
        ]);
        let triggers: Vec<()> = futures::executor::block_on(fleet_node_changes(events, "upgrade executor").collect());
        assert_eq!(triggers.len(), 4);
    }

    #[test]
    fn only_changes_the_rotation_reads_trigger_a_reconcile() {
        let node = |hash: &str, heartbeat: &str| -> Node {
            let node = objects::node("win-1").annotated(PUB_KEY_HASH_ANNOTATION, hash).ready();
            node.heartbeat(heartbeat.parse().unwrap()).build()
        };
        let events = futures::stream::iter([
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(node("old", "2026-11-22T04:00:00Z"))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(node("old", "2026-11-22T04:00:10Z"))),
            Ok(watcher::Event::Apply(node("new", "2026-11-22T04:00:20Z"))),
            Ok(watcher::Event::Delete(node("new", "2026-11-22T04:00:20Z"))),
        ]);
        let triggers: Vec<()> = futures::executor::block_on(fleet_node_changes(events, "key rotation").collect());
        assert_eq!(triggers.len(), 4, "first sight, InitDone, the new hash and the deletion; not the heartbeat");
    }

    #[test]
    fn the_go_operators_reboot_required_annotation_triggers_a_reconcile() {
        let node = |required: bool| -> Node {
            let node = objects::node("win-1").ready();
            if required { node.annotated(REBOOT_REQUIRED_ANNOTATION, "true") } else { node }.build()
        };
        let events = futures::stream::iter([
            Ok(watcher::Event::InitApply(node(false))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(node(true))),
        ]);
        let triggers: Vec<()> = futures::executor::block_on(fleet_node_changes(events, "fleet").collect());
        assert_eq!(triggers.len(), 3);
    }

    #[test]
    fn every_watch_event_but_the_start_of_a_relist_triggers() {
        let events = futures::stream::iter([
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(Node::default())),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(Node::default())),
            Ok(watcher::Event::Delete(Node::default())),
        ]);
        let triggers: Vec<()> =
            futures::executor::block_on(watch_triggers(events, "key rotation", "Windows Nodes").collect());
        assert_eq!(triggers.len(), 4);
    }
}
