//! The disruption gate: a configure pass that would stop a service on a Node in service (a cluster setting that
//! restarts containerd and the kubelet, a changed binary) first asks the [`DisruptionGate`] for one unit of the
//! fleet's unavailability budget (`--max-unavailable`, shared with upgrades and Machine replacements). Granted, the
//! gate has marked the Node `upgrading` and the pass records phase `Upgrading` before the gate's claim is dropped,
//! so every budget holder counts the host until it is Ready again; denied, the pass changes nothing and says
//! [`ConfigureState::WaitingForBudget`](crate::ConfigureState::WaitingForBudget).
//!
//! A Node not in service (not Ready, cordoned, not yet configured, already marked) needs no budget: restarting its
//! services takes nothing more away from the cluster. Nor does a restart of windows_exporter alone (a rotated
//! metrics certificate): it serves metrics, not workloads.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use wmco_cluster_client::names::VERSION_ANNOTATION;
use wmco_cluster_client::types::WindowsInstance;
use wmco_cluster_client::{NodeExt, Result};
use wmco_vocabulary::InstancePhase;
use wmco_windows_services::{Step, WINDOWS_EXPORTER_SERVICE};

use crate::error::{FlowError, FlowStep};

/// What a pass asks the gate for.
#[derive(Clone, Copy, Debug)]
pub struct DisruptionRequest<'a> {
    /// The host's record.
    pub instance: &'a WindowsInstance,
    /// Its Node, as just read (Ready, unmarked, schedulable); `None` for a reboot of a host without a Node, which
    /// counts against the budget all the same.
    pub node_name: Option<&'a str>,
    /// The services the pass would stop, for logs and Events (empty for a reboot).
    pub services: &'a [String],
}

/// The gate's answer.
pub enum Admission {
    /// The Node is marked `upgrading`; the budget stays claimed while this value lives (the pass records phase
    /// `Upgrading` before dropping it, so nobody hands the same unit out again).
    Granted(Box<dyn Send>),
    /// No budget left: `unavailable` hosts are already away of `max_unavailable`.
    Denied {
        /// Hosts unavailable because of the operator, and Machines away from the fleet.
        unavailable: u32,
        /// The budget.
        max_unavailable: u32,
    },
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Admission::Granted(_) => f.write_str("Granted"),
            Admission::Denied { unavailable, max_unavailable } => {
                write!(f, "Denied {{ unavailable: {unavailable}, max_unavailable: {max_unavailable} }}")
            }
        }
    }
}

/// Hands out the fleet's unavailability budget to configure passes that would disrupt a Node in service, and to
/// reboots.
///
/// ```
/// use async_trait::async_trait;
/// use wmco_node_config::{Admission, DisruptionGate, DisruptionRequest};
///
/// /// A gate for one host alone (a single-host tool): every disruption is admitted, nothing is marked.
/// struct Alone;
///
/// #[async_trait]
/// impl DisruptionGate for Alone {
///     async fn admit(&self, _request: &DisruptionRequest<'_>) -> wmco_cluster_client::Result<Admission> {
///         Ok(Admission::Granted(Box::new(())))
///     }
/// }
/// ```
#[async_trait]
pub trait DisruptionGate: Send + Sync {
    /// Claims one unit of budget for `request` and marks its Node `upgrading` (when it has one), or says why not.
    ///
    /// # Errors
    /// The cluster error when the fleet cannot be read or the Node cannot be marked (the pass is retried).
    async fn admit(&self, request: &DisruptionRequest<'_>) -> Result<Admission>;
}

/// Asks `gate` for `request` on behalf of `host` (as errors name it); a cluster failure is the flow's `ClaimBudget`
/// error.
pub(crate) async fn admit(
    host: &str,
    gate: &dyn DisruptionGate,
    request: &DisruptionRequest<'_>,
) -> Result<Admission, FlowError> {
    gate.admit(request).await.map_err(|source| FlowError::Cluster {
        host: host.to_owned(),
        step: FlowStep::ClaimBudget,
        source,
    })
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

    #[test]
    fn stopped_services_are_named_in_order() {
        let steps = [
            Step::StopService(ServiceName::new("kube-proxy").unwrap()),
            Step::StopService(ServiceName::new("kubelet").unwrap()),
            Step::StartService(ServiceName::new("kubelet").unwrap()),
        ];
        assert_eq!(stopped_services(&steps), ["kube-proxy", "kubelet"]);
    }
}
