//! The lookup indexes of a [`World`](super::World), built once so each decision costs map lookups, not scans.

use std::collections::{HashMap, HashSet};

use jiff::SignedDuration;

use super::{CsrState, CsrSummary, WorldData};
use crate::KubeletSigner;
use crate::names::{NODE_BOOTSTRAPPER_USERNAME, OS_LABEL, OS_WINDOWS};

/// How far back rule A6 counts undecided CSRs.
const PENDING_WINDOW: SignedDuration = SignedDuration::from_mins(60);

/// Positions into the World's vectors, keyed by name.
#[derive(Debug, Clone, Default)]
pub(super) struct WorldIndex {
    pub(super) instances_by_node_name: HashMap<String, Vec<usize>>,
    pub(super) node_by_name: HashMap<String, usize>,
    pub(super) csrs_by_node_name: HashMap<String, Vec<usize>>,
    pub(super) recent_pending_names: HashSet<String>,
    pub(super) windows_node_count: usize,
}

impl WorldIndex {
    pub(super) fn build(data: &WorldData) -> Self {
        let mut index = Self::default();
        for (position, instance) in data.instances.iter().enumerate() {
            if let Some(node_name) = instance.expected_node_name() {
                index.instances_by_node_name.entry(node_name.to_owned()).or_default().push(position);
            }
        }
        for (position, node) in data.nodes.iter().enumerate() {
            index.node_by_name.entry(node.name.clone()).or_insert(position);
            if node.labels.get(OS_LABEL).is_some_and(|os| os == OS_WINDOWS) {
                index.windows_node_count += 1;
            }
        }
        let window_start = data.now.saturating_sub(PENDING_WINDOW).unwrap_or(data.now);
        for (position, csr) in data.csrs.iter().enumerate() {
            for node_name in &csr.node_names {
                let positions = index.csrs_by_node_name.entry(node_name.clone()).or_default();
                if positions.last() != Some(&position) {
                    positions.push(position);
                }
            }
            let kubelet_signer = KubeletSigner::from_name(&csr.signer_name).is_some();
            let recent_pending = csr.state == CsrState::Pending && csr.creation_timestamp >= window_start;
            if kubelet_signer && recent_pending && index.counts_against_the_limit(csr) {
                index.recent_pending_names.insert(csr.name.clone());
            }
        }
        index
    }

    /// Whether rule A6 counts `csr`: it names a managed instance's node, or it was made with the bootstrap
    /// credential (whose node the operator cannot tell from a Linux one). Linux nodes' own requests never stall a
    /// Windows approval.
    fn counts_against_the_limit(&self, csr: &CsrSummary) -> bool {
        csr.username == NODE_BOOTSTRAPPER_USERNAME
            || csr.node_names.iter().any(|node_name| self.instances_by_node_name.contains_key(node_name))
    }
}
