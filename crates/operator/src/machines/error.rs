//! The Machine controller's errors: each names the Machine or record and what failed.

use crate::runtime::ReconcilerError;

/// Why one Machine reconcile or sweep failed; every one is retryable (cluster calls).
#[derive(Debug, thiserror::Error)]
pub enum MachinesError {
    /// A cluster call about a Machine's record failed.
    #[error("WindowsInstance {record} of Machine {machine}: {action} failed")]
    Record {
        /// `namespace/name` of the record.
        record: String,
        /// The Machine's name.
        machine: String,
        /// What was attempted: `read`, `apply` or `delete`.
        action: &'static str,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Listing the records in the operator namespace failed.
    #[error("listing WindowsInstances in namespace {namespace} failed")]
    ListRecords {
        /// The operator namespace.
        namespace: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// Reading a Machine failed.
    #[error("reading Machine {machine} failed")]
    ReadMachine {
        /// `namespace/name` of the Machine.
        machine: String,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
}

impl ReconcilerError for MachinesError {
    /// A short, stable label for the errors-by-kind metric.
    ///
    /// ```
    /// use wmco_operator::machines::MachinesError;
    /// use wmco_operator::runtime::ReconcilerError;
    /// let error = MachinesError::ListRecords {
    ///     namespace: "wmco".into(),
    ///     source: Box::new(wmco_cluster_client::Error::MissingField {
    ///         verb: wmco_cluster_client::Verb::List, kind: "WindowsInstance", name: "wmco".into(), field: "items",
    ///     }),
    /// };
    /// assert_eq!(error.metric_label(), "machine_list_records");
    /// ```
    fn metric_label(&self) -> &'static str {
        match self {
            Self::Record { .. } => "machine_record",
            Self::ListRecords { .. } => "machine_list_records",
            Self::ReadMachine { .. } => "machine_read",
        }
    }
}
