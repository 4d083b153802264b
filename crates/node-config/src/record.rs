//! The flow's progress record: a working copy of one `WindowsInstance` status, written through
//! [`InstanceRecords::apply_status`] only when it changed, so a converged host causes no write and a crash
//! resumes from the last saved phase.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use wmco_cluster_client::types::{
    AUTHENTICATION_FAILED_CONDITION, InstancePhase, WindowsInstance, WindowsInstanceStatus,
};
use wmco_cluster_client::{InstanceRecords, WindowsInstanceExt};

use crate::error::{FlowError, FlowStep};

/// A working copy of a record's status and the last saved version of it.
pub(crate) struct Recorder<'a> {
    records: &'a dyn InstanceRecords,
    namespace: String,
    name: String,
    /// `namespace/name` of the record, for logs.
    key: String,
    host: String,
    saved: WindowsInstanceStatus,
    /// The status as the flow wants it.
    pub(crate) status: WindowsInstanceStatus,
}

impl<'a> Recorder<'a> {
    /// A recorder for `instance`, which must have a namespace and a name.
    pub(crate) fn new(
        records: &'a dyn InstanceRecords,
        instance: &WindowsInstance,
        host: &str,
    ) -> Result<Recorder<'a>, FlowError> {
        let name = instance
            .metadata
            .name
            .clone()
            .ok_or_else(|| FlowError::Record { instance: "<unnamed>".to_owned(), what: "metadata.name" })?;
        let namespace = instance
            .metadata
            .namespace
            .clone()
            .ok_or_else(|| FlowError::Record { instance: name.clone(), what: "metadata.namespace" })?;
        let status = instance.status.clone().unwrap_or_default();
        let key = instance.key();
        Ok(Recorder { records, namespace, name, key, host: host.to_owned(), saved: status.clone(), status })
    }

    /// Enters `phase`; entering [`InstancePhase::Configuring`] or [`InstancePhase::Deconfiguring`] from another phase stamps
    /// `configuringSince`.
    pub(crate) fn set_phase(&mut self, phase: InstancePhase) {
        let starting = matches!(phase, InstancePhase::Configuring | InstancePhase::Deconfiguring);
        if starting && self.status.phase != Some(phase) {
            self.status.configuring_since = Some(Time(Timestamp::now()));
        }
        self.status.phase = Some(phase);
    }

    /// Notes that the host refused the key at `now`: adds the [`AUTHENTICATION_FAILED_CONDITION`] starting `now`, or
    /// keeps the start of the refusals already recorded (only the message is updated).
    pub(crate) fn note_authentication_refused(&mut self, message: String, now: Timestamp) {
        let conditions = &mut self.status.conditions;
        match conditions.iter_mut().find(|condition| condition.type_ == AUTHENTICATION_FAILED_CONDITION) {
            Some(condition) if condition.status == "True" => condition.message = message,
            _ => {
                conditions.retain(|condition| condition.type_ != AUTHENTICATION_FAILED_CONDITION);
                conditions.push(Condition {
                    type_: AUTHENTICATION_FAILED_CONDITION.to_owned(),
                    status: "True".to_owned(),
                    reason: "KeyRefused".to_owned(),
                    message,
                    last_transition_time: Time(now),
                    observed_generation: None,
                });
            }
        }
    }

    /// Notes that a login succeeded: removes the [`AUTHENTICATION_FAILED_CONDITION`]. Returns whether it was there.
    pub(crate) fn note_logged_in(&mut self) -> bool {
        let before = self.status.conditions.len();
        self.status.conditions.retain(|condition| condition.type_ != AUTHENTICATION_FAILED_CONDITION);
        self.status.conditions.len() != before
    }

    /// Writes the status if it differs from the last saved one.
    pub(crate) async fn save(&mut self) -> Result<(), FlowError> {
        if self.status == self.saved {
            return Ok(());
        }
        self.records
            .apply_status(&self.namespace, &self.name, &self.status)
            .await
            .map_err(|source| FlowError::Cluster { host: self.host.clone(), step: FlowStep::Record, source })?;
        self.saved = self.status.clone();
        Ok(())
    }

    /// Records `error` as the last error (and phase Failed when it is permanent), best effort: a failure to write
    /// is dropped, since the flow already fails with `error`.
    pub(crate) async fn save_error(&mut self, error: &FlowError) {
        self.status.last_error = Some(error.to_string());
        if !error.is_retryable() {
            self.status.phase = Some(InstancePhase::Failed);
        }
        if let Err(write_error) = self.save().await {
            tracing::warn!(instance = %self.key, error = %write_error, "could not record the flow's error");
        }
    }
}
