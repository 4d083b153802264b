//! Restarts as requests: a configure pass that would stop a service on a Node in service (a cluster setting that
//! restarts containerd and the kubelet, a changed binary) records a [`DisruptionKind::Restart`] request in the
//! record's `status.disruption` and changes nothing on the host; the fleet executor grants it within
//! `--max-unavailable` (the one budget authority) by marking the Node `upgrading` and writing state `Granted`. The
//! next pass records state `Restarting` and applies the steps, and the pass that finds the host Ready again records
//! the restart `Completed`; the fleet executor unmarks the Node. A restart granted on a Node at another version waits
//! for its upgrade instead (the upgrade gate), which cordons and drains first and completes it.
//!
//! A Node not in service (not Ready, cordoned, not yet configured, already marked) needs no budget: restarting its
//! services takes nothing more away from the cluster. Nor does a restart of windows_exporter alone (a rotated
//! metrics certificate): it serves metrics, not workloads.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use wmco_cluster_client::NodeExt;
use wmco_cluster_client::names::VERSION_ANNOTATION;
use wmco_cluster_client::types::{DisruptionState, WindowsInstanceStatus};
use wmco_vocabulary::{DisruptionKind, InstancePhase};
use wmco_windows_services::{Step, WINDOWS_EXPORTER_SERVICE};

/// Records a request to restart `services` of the host whose Node is `node_name` (unless a disruption is already
/// requested or under way); returns whether the status changed.
pub(crate) fn request_restart(status: &mut WindowsInstanceStatus, node_name: &str, services: Vec<String>) -> bool {
    let reason = format!("the services {} must restart for changed settings or files", services.join(", "));
    let Some(request) = status.request_disruption(DisruptionKind::Restart, &reason, Timestamp::now(), None) else {
        return false;
    };
    request.services = services;
    request.node = Some(node_name.to_owned());
    true
}

/// Whether the status holds a restart the fleet executor granted (under way).
pub(crate) fn restart_granted(status: &WindowsInstanceStatus) -> bool {
    status.disruption.as_ref().is_some_and(|restart| restart.kind == DisruptionKind::Restart && restart.is_under_way())
}

/// Moves a granted restart to `Restarting` before its steps are applied; returns whether the status changed.
pub(crate) fn note_restarting(status: &mut WindowsInstanceStatus) -> bool {
    match status.disruption.as_mut().filter(|restart| restart.kind == DisruptionKind::Restart) {
        Some(restart) if restart.state == DisruptionState::Granted => {
            restart.state = DisruptionState::Restarting;
            restart.restart_sent_at = Some(Time(Timestamp::now()));
            true
        }
        _ => false,
    }
}

/// Completes a restart under way once the host is Ready again, and withdraws a requested one the host no longer
/// needs (its steps were applied without it: the Node left service, or the change was undone).
pub(crate) fn settle_restart(status: &mut WindowsInstanceStatus, ready: bool) {
    let Some(restart) = status.disruption.as_mut().filter(|restart| restart.kind == DisruptionKind::Restart) else {
        return;
    };
    if restart.is_requested() {
        status.disruption = None;
    } else if ready && restart.is_under_way() {
        restart.state = DisruptionState::Completed;
        restart.completed_at = Some(Time(Timestamp::now()));
    }
}

/// The services whose restart takes nothing from the Node's workloads (metrics only), so it needs no budget.
const OUT_OF_BAND_SERVICES: [&str; 1] = [WINDOWS_EXPORTER_SERVICE];

/// Whether a pass needs the budget before applying `steps` to a host whose Node is `node` and whose record is in
/// `phase`: the steps stop a service workloads rely on (any but windows_exporter), and the Node is in service — Ready, schedulable, not marked, configured at
/// `operator_version` (an upgrade's Node is marked, a first configuration's has no version annotation).
pub(crate) fn needs_budget(steps: &[Step], node: &Node, phase: Option<InstancePhase>, operator_version: &str) -> bool {
    stopped_services(steps).iter().any(|service| !OUT_OF_BAND_SERVICES.contains(&service.as_str()))
        && phase != Some(InstancePhase::Upgrading)
        && node.is_ready()
        && !node.is_marked()
        && !node.is_unschedulable()
        && node.annotation(VERSION_ANNOTATION).is_some_and(|configured| same_release(configured, operator_version))
}

/// The services `steps` stop, in order.
pub(crate) fn stopped_services(steps: &[Step]) -> Vec<String> {
    steps
        .iter()
        .filter_map(|step| match step {
            Step::StopService(service) => Some(service.to_string()),
            _ => None,
        })
        .collect()
}

/// Whether two versions are equal without their `+build` suffixes.
pub(crate) fn same_release(left: &str, right: &str) -> bool {
    let release = |version: &str| version.split_once('+').map_or(version, |(release, _)| release).to_owned();
    release(left) == release(right)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wmco_cluster_client::names::UPGRADING_LABEL;
    use wmco_windows_services::ServiceName;

    fn node(ready: bool, labels: serde_json::Value, unschedulable: bool, version: Option<&str>) -> Node {
        let annotations = version.map_or(json!({}), |version| json!({VERSION_ANNOTATION: version}));
        serde_json::from_value(json!({
            "metadata": {"name": "win-1", "labels": labels, "annotations": annotations},
            "spec": {"unschedulable": unschedulable},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        }))
        .unwrap()
    }

    fn restart() -> Vec<Step> {
        let kubelet = ServiceName::new("kubelet").unwrap();
        vec![Step::StopService(kubelet.clone()), Step::StartService(kubelet)]
    }

    #[test]
    fn only_a_stop_on_a_node_in_service_needs_the_budget() {
        let serving = node(true, json!({}), false, Some("1.2.0+abc"));
        assert!(needs_budget(&restart(), &serving, Some(InstancePhase::Ready), "1.2.0"));
        assert!(needs_budget(&restart(), &serving, Some(InstancePhase::Failed), "1.2.0+def"));
        let start_only = vec![Step::StartService(ServiceName::new("kubelet").unwrap())];
        assert!(!needs_budget(&start_only, &serving, Some(InstancePhase::Ready), "1.2.0"));
        let exporter = ServiceName::new(WINDOWS_EXPORTER_SERVICE).unwrap();
        let metrics_only = vec![Step::StopService(exporter.clone()), Step::StartService(exporter)];
        assert!(!needs_budget(&metrics_only, &serving, Some(InstancePhase::Ready), "1.2.0"));
        assert!(!needs_budget(&restart(), &serving, Some(InstancePhase::Upgrading), "1.2.0"));
        assert!(!needs_budget(&restart(), &serving, Some(InstancePhase::Ready), "1.3.0"));
    }

    #[test]
    fn a_node_out_of_service_needs_no_budget() {
        let ready = Some(InstancePhase::Ready);
        let cases = [
            node(false, json!({}), false, Some("1.2.0")),
            node(true, json!({UPGRADING_LABEL: "true"}), false, Some("1.2.0")),
            node(true, json!({}), true, Some("1.2.0")),
            node(true, json!({}), false, None),
        ];
        for node in cases {
            assert!(!needs_budget(&restart(), &node, ready, "1.2.0"), "{node:?}");
        }
    }
}
