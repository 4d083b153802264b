//! The instances controller's errors: each names the ConfigMap or `WindowsInstance` and what failed.

use wmco_node_config::FlowError;

use crate::runtime::ReconcilerError;

/// Why one inventory or instance reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum InstancesError {
    /// A record could not be turned into a host connection.
    #[error("WindowsInstance {instance}: cannot connect: {reason}")]
    Connector {
        /// `namespace/name` of the record.
        instance: String,
        /// Why.
        reason: String,
    },
    /// The configure or deconfigure flow failed.
    #[error("WindowsInstance {instance}: {source}")]
    Flow {
        /// `namespace/name` of the record.
        instance: String,
        /// The flow's error (host, step, file).
        #[source]
        source: Box<FlowError>,
    },
    /// A cluster call about a record failed.
    #[error("WindowsInstance {instance}: {action} failed")]
    Record {
        /// `namespace/name` of the record.
        instance: String,
        /// What was attempted, e.g. `apply`, `delete`, `release finalizer`.
        action: &'static str,
        /// The cluster error.
        #[source]
        source: Box<wmco_cluster_client::Error>,
    },
    /// The cluster does not let Windows nodes join (wrong pod network, no hybrid overlay, version skew); nothing
    /// was done on the host. Retried, since an admin fixes the cluster, and every host is reconciled again when its
    /// settings change.
    #[error("WindowsInstance {instance}: not configured: {reason}")]
    ClusterUnsupported {
        /// `namespace/name` of the record.
        instance: String,
        /// Why the cluster is not supported.
        reason: String,
    },
    /// The host key the Go operator stored for the record's host could not be taken over; nothing was sent to the
    /// host. Retried, since an admin fixes the stored key, which no watch announces.
    #[error("WindowsInstance {instance}: {source}")]
    HostKeyImport {
        /// `namespace/name` of the record.
        instance: String,
        /// Why.
        #[source]
        source: super::HostKeyImportError,
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
}

impl ReconcilerError for InstancesError {
    /// A short, stable label for the errors-by-kind metric (the flow's own label for flow errors).
    ///
    /// ```
    /// use wmco_operator::instances::InstancesError;
    /// use wmco_operator::runtime::ReconcilerError;
    /// let error = InstancesError::Connector { instance: "ns/win-1".into(), reason: "bad key".into() };
    /// assert_eq!(error.metric_label(), "instance_connector");
    /// ```
    fn metric_label(&self) -> &'static str {
        match self {
            Self::Connector { .. } => "instance_connector",
            Self::Flow { source, .. } => source.metric_label(),
            Self::Record { .. } => "instance_record",
            Self::ClusterUnsupported { .. } => "cluster_unsupported",
            Self::HostKeyImport { .. } => "host_key_import",
            Self::ListRecords { .. } => "instance_list",
        }
    }

    /// Whether trying again can succeed: permanent flow errors (host key mismatch, authentication, unusable
    /// identity) and unusable connection settings wait for an admin.
    fn is_retryable(&self) -> bool {
        match self {
            Self::Connector { .. } => false,
            Self::Flow { source, .. } => source.is_retryable(),
            Self::Record { .. }
            | Self::ListRecords { .. }
            | Self::ClusterUnsupported { .. }
            | Self::HostKeyImport { .. } => true,
        }
    }
}

impl InstancesError {
    /// Whether the host refused the operator's key. The record stays Failed, but the controller still tries again
    /// with backoff: an admin authorizes a key on the host, not on the cluster, so no watch would announce the fix
    /// (and a Machine's refusals must keep being observed for its replacement grace period).
    pub fn is_authentication_failure(&self) -> bool {
        matches!(self, Self::Flow { source, .. } if source.is_authentication_failure())
    }
}
