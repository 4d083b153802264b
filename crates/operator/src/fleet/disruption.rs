//! [`BudgetedDisruptions`]: the instances controller's [`DisruptionGate`]. A configure pass that would restart
//! services on a Node in service (a changed cluster setting, a changed file a service reads at start) gets one unit
//! of the same `--max-unavailable` budget upgrades and Machine replacements use, under the same lock, counted the
//! same way (the planner's [`Instance::is_unavailable_by_operator`](wmco_upgrade_planner::Instance) plus the
//! Windows Machines away from the fleet). Granted, the Node is marked `upgrading`; the pass records phase
//! `Upgrading` before the lock is released, and the fleet controller unmarks the Node once the host is Ready again.

use std::sync::Arc;

use async_trait::async_trait;
use wmco_cluster_client::names::UPGRADING_LABEL;
use wmco_cluster_client::{InstanceRecords, NodeMetadataPatch, Nodes};
use wmco_node_config::{Admission, DisruptionGate, DisruptionRequest};

use super::{ObserveError, SharedBudget, machines_away, observe_instances, planner_instance};

/// Hands out the fleet's unavailability budget to configure passes, under the [`SharedBudget`]'s lock.
///
/// ```
/// use std::sync::Arc;
/// use wmco_cluster_client::NoWindowsMachines;
/// use wmco_cluster_client::fake::FakeCluster;
/// use wmco_operator::fleet::{BudgetedDisruptions, SharedBudget};
///
/// let seams = FakeCluster::default().seams();
/// let budget = SharedBudget::new(Arc::new(NoWindowsMachines));
/// let gate = BudgetedDisruptions::new(&seams, budget, "openshift-windows-machine-config-operator", 1);
/// assert_eq!(gate.max_unavailable(), 1);
/// ```
pub struct BudgetedDisruptions {
    budget: SharedBudget,
    records: Arc<dyn InstanceRecords>,
    nodes: Arc<dyn Nodes>,
    namespace: String,
    max_unavailable: u32,
}

impl BudgetedDisruptions {
    /// A gate over the records and Nodes of `seams` in `namespace`, handing out `budget` up to `max_unavailable`.
    pub fn new(
        seams: &wmco_cluster_client::Seams,
        budget: SharedBudget,
        namespace: impl Into<String>,
        max_unavailable: u32,
    ) -> Self {
        BudgetedDisruptions {
            budget,
            records: Arc::clone(&seams.records),
            nodes: Arc::clone(&seams.nodes),
            namespace: namespace.into(),
            max_unavailable,
        }
    }

    /// The budget (`--max-unavailable`).
    pub fn max_unavailable(&self) -> u32 {
        self.max_unavailable
    }
}

#[async_trait]
impl DisruptionGate for BudgetedDisruptions {
    async fn admit(&self, request: &DisruptionRequest<'_>) -> wmco_cluster_client::Result<Admission> {
        let held = Arc::clone(&self.budget.lock).lock_owned().await;
        let observed =
            observe_instances(self.records.as_ref(), self.nodes.as_ref(), &self.namespace).await.map_err(|error| {
                match error {
                    ObserveError::ListRecords { source, .. } | ObserveError::ReadNode { source, .. } => *source,
                }
            })?;
        let machines = self.budget.windows_machines.list().await?;
        let away = machines_away(&machines, &observed);
        let by_operator = observed
            .iter()
            .filter(|instance| {
                planner_instance(&instance.record, instance.node.as_ref(), None).is_unavailable_by_operator()
            })
            .count();
        let unavailable = u32::try_from(by_operator + away.len()).unwrap_or(u32::MAX);
        if unavailable >= self.max_unavailable {
            return Ok(Admission::Denied { unavailable, max_unavailable: self.max_unavailable });
        }
        if let Some(node_name) = request.node_name {
            let mark = NodeMetadataPatch::default().set_label(UPGRADING_LABEL, "true");
            self.nodes.patch_metadata(node_name, &mark).await?;
        }
        Ok(Admission::Granted(Box::new(held)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wmco_cluster_client::NodeExt;
    use wmco_cluster_client::fake::{FakeCluster, objects};
    use wmco_cluster_client::names::VERSION_ANNOTATION;
    use wmco_cluster_client::types::InstancePhase;

    const NAMESPACE: &str = "wmco";

    /// Two Ready hosts, `win-a` and `win-b`, with their Ready Nodes at version 1.0.0.
    async fn fleet() -> FakeCluster {
        let cluster = FakeCluster::default();
        for name in ["win-a", "win-b"] {
            let status = objects::status().phase(InstancePhase::Ready).expected_node_name(name).build();
            let record = objects::record(name).in_namespace(NAMESPACE).byoh(name).build();
            let record = cluster.records.apply(&record).await.unwrap();
            cluster.records.apply_status(NAMESPACE, name, &status).await.unwrap();
            let node = objects::windows_node(name).owned_by(&record).ready().annotated(VERSION_ANNOTATION, "1.0.0");
            cluster.nodes.insert(node.build());
        }
        cluster
    }

    fn gate(cluster: &FakeCluster, max_unavailable: u32) -> BudgetedDisruptions {
        let seams = cluster.seams();
        let budget = SharedBudget::new(Arc::clone(&seams.windows_machines));
        BudgetedDisruptions::new(&seams, budget, NAMESPACE, max_unavailable)
    }

    async fn ask(gate: &BudgetedDisruptions, cluster: &FakeCluster, node: &str) -> Admission {
        let record = cluster.records.record(NAMESPACE, node).unwrap();
        let services = ["kubelet".to_owned()];
        gate.admit(&DisruptionRequest { instance: &record, node_name: Some(node), services: &services }).await.unwrap()
    }

    async fn unmark(cluster: &FakeCluster, node: &str) {
        let unmark = NodeMetadataPatch::default().remove_label(UPGRADING_LABEL);
        cluster.nodes.patch_metadata(node, &unmark).await.unwrap();
    }

    #[tokio::test]
    async fn a_grant_marks_the_node_holds_the_lock_and_counts_the_node_until_it_is_unmarked() {
        let cluster = fleet().await;
        let gate = gate(&cluster, 1);
        let claim = ask(&gate, &cluster, "win-a").await;
        assert!(matches!(claim, Admission::Granted(_)));
        assert!(cluster.nodes.node("win-a").unwrap().is_marked());
        assert!(gate.budget.lock.try_lock().is_err(), "the lock is held until the claim is dropped");
        drop(claim);

        let denied = ask(&gate, &cluster, "win-b").await;
        assert!(matches!(denied, Admission::Denied { unavailable: 1, max_unavailable: 1 }), "{denied:?}");
        assert!(!cluster.nodes.node("win-b").unwrap().is_marked());

        unmark(&cluster, "win-a").await;
        assert!(matches!(ask(&gate, &cluster, "win-b").await, Admission::Granted(_)));
    }

    #[tokio::test]
    async fn an_upgrading_record_and_a_machine_away_take_the_budget_too() {
        let cluster = fleet().await;
        let status = objects::status().phase(InstancePhase::Upgrading).expected_node_name("win-a").build();
        cluster.records.apply_status(NAMESPACE, "win-a", &status).await.unwrap();
        let denied = ask(&gate(&cluster, 1), &cluster, "win-b").await;
        assert!(matches!(denied, Admission::Denied { unavailable: 1, .. }), "{denied:?}");

        cluster.machines.insert(objects::machine("win-new").windows().phase("Provisioning").build());
        let denied = ask(&gate(&cluster, 2), &cluster, "win-b").await;
        assert!(matches!(denied, Admission::Denied { unavailable: 2, .. }), "{denied:?}");
        assert!(matches!(ask(&gate(&cluster, 3), &cluster, "win-b").await, Admission::Granted(_)));
    }

    #[tokio::test]
    async fn a_reboot_without_a_node_takes_a_unit_while_its_record_says_it_is_under_way() {
        let cluster = fleet().await;
        let gate = gate(&cluster, 1);
        let fresh = objects::record("fresh").in_namespace(NAMESPACE).byoh("10.0.0.9").build();
        cluster.records.apply(&fresh).await.unwrap();
        let record = cluster.records.record(NAMESPACE, "fresh").unwrap();
        let request = DisruptionRequest { instance: &record, node_name: None, services: &[] };
        let claim = gate.admit(&request).await.unwrap();
        assert!(matches!(claim, Admission::Granted(_)), "{claim:?}");
        drop(claim);

        let rebooting = |state| objects::status().phase(InstancePhase::Configuring).reboot(state).build();
        let status = rebooting(wmco_cluster_client::types::DisruptionState::Restarting);
        cluster.records.apply_status(NAMESPACE, "fresh", &status).await.unwrap();
        let denied = gate.admit(&request).await.unwrap();
        assert!(matches!(denied, Admission::Denied { unavailable: 1, max_unavailable: 1 }), "{denied:?}");
        assert!(matches!(ask(&gate, &cluster, "win-a").await, Admission::Denied { .. }));

        let status = rebooting(wmco_cluster_client::types::DisruptionState::Completed);
        cluster.records.apply_status(NAMESPACE, "fresh", &status).await.unwrap();
        assert!(matches!(ask(&gate, &cluster, "win-a").await, Admission::Granted(_)));
    }

    #[tokio::test]
    async fn no_budget_at_all_admits_nothing() {
        let cluster = fleet().await;
        assert!(matches!(ask(&gate(&cluster, 0), &cluster, "win-a").await, Admission::Denied { unavailable: 0, .. }));
    }
}
