//! The CSR controller's errors: each names the CSR, Node or `WindowsInstance` and the step that failed.

use wmco_csr_approver::ManifestError;

use crate::runtime::ReconcilerError;

/// Why one CSR reconcile failed. Every variant except the manifest ones is retryable (the controller requeues).
#[derive(Debug, thiserror::Error)]
pub enum CsrControllerError {
    /// The CSR could not be converted to the approver's manifest form.
    #[error("CSR {csr}: cannot read it as a certificates.k8s.io/v1 CertificateSigningRequest")]
    Manifest {
        /// The CSR's name.
        csr: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The manifest named another API version or kind.
    #[error("CSR {csr}: not a certificates.k8s.io/v1 CertificateSigningRequest")]
    ManifestKind {
        /// The CSR's name.
        csr: String,
        /// What the approver refused.
        #[source]
        source: ManifestError,
    },
    /// Listing the `WindowsInstance` records failed.
    #[error("CSR {csr}: listing WindowsInstances in namespace {namespace} failed")]
    ListInstances {
        /// The CSR being decided.
        csr: String,
        /// The operator namespace.
        namespace: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Listing the kubelet CSRs failed.
    #[error("CSR {csr}: listing the kubelet CSRs failed")]
    ListCsrs {
        /// The CSR being decided.
        csr: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Reading the Node the CSR names failed.
    #[error("CSR {csr}: reading Node {node} failed")]
    GetNode {
        /// The CSR being decided.
        csr: String,
        /// The Node's name.
        node: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Reading the Machine of a record that expects the CSR's node name failed.
    #[error("CSR {csr}: reading Machine {machine} failed")]
    GetMachine {
        /// The CSR's name.
        csr: String,
        /// `namespace/name` of the Machine.
        machine: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// The CSR changed since it was read (409 on `/approval`); the decision is re-run from scratch.
    #[error("CSR {csr}: changed since it was read; deciding again")]
    Conflict {
        /// The CSR's name.
        csr: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Approving or denying through `/approval` failed for another reason.
    #[error("CSR {csr}: {verdict} through /approval failed")]
    Decide {
        /// The CSR's name.
        csr: String,
        /// `approve` or `deny`.
        verdict: &'static str,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Recording the bootstrap key on the `WindowsInstance` status failed, so the CSR was not approved.
    #[error("CSR {csr}: recording its bootstrap key on WindowsInstance {instance} failed; not approved")]
    RecordApproval {
        /// The CSR that passed every rule.
        csr: String,
        /// The `WindowsInstance`'s name.
        instance: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// The `WindowsInstance` holds another bootstrap key than when the decision was made; nothing was written.
    #[error("CSR {csr}: WindowsInstance {instance} changed its bootstrap key since it was read; deciding again")]
    BootstrapKeyChanged {
        /// The CSR that passed every rule.
        csr: String,
        /// The `WindowsInstance`'s name.
        instance: String,
    },
    /// A bootstrap CSR passed every rule, but no single `WindowsInstance` expects its node, so its key cannot be
    /// recorded before the approval; it is not approved.
    #[error("CSR {csr}: no single WindowsInstance expects node {node} to record its bootstrap key on; not approved")]
    NoRecordForKey {
        /// The CSR that passed every rule.
        csr: String,
        /// The node name the CSR asks for.
        node: String,
    },
}

impl ReconcilerError for CsrControllerError {
    /// A short, stable label for the errors-by-kind metric.
    ///
    /// ```
    /// use wmco_operator::csr::CsrControllerError;
    /// use wmco_operator::runtime::ReconcilerError;
    /// let error = CsrControllerError::Manifest {
    ///     csr: "csr-1".into(),
    ///     source: serde_json::from_str::<u8>("x").unwrap_err(),
    /// };
    /// assert_eq!(error.metric_label(), "csr_manifest");
    /// ```
    fn metric_label(&self) -> &'static str {
        match self {
            Self::Manifest { .. } | Self::ManifestKind { .. } => "csr_manifest",
            Self::ListInstances { .. } => "csr_list_instances",
            Self::ListCsrs { .. } => "csr_list_csrs",
            Self::GetNode { .. } => "csr_get_node",
            Self::GetMachine { .. } => "csr_get_machine",
            Self::Conflict { .. } => "csr_conflict",
            Self::Decide { .. } => "csr_decide",
            Self::RecordApproval { .. } => "csr_record_approval",
            Self::BootstrapKeyChanged { .. } => "csr_bootstrap_key_changed",
            Self::NoRecordForKey { .. } => "csr_no_record_for_key",
        }
    }

    /// Whether trying again can succeed (everything except an unreadable manifest).
    fn is_retryable(&self) -> bool {
        !matches!(self, Self::Manifest { .. } | Self::ManifestKind { .. })
    }
}
