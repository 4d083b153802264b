//! The flow's progress record: a working copy of one `WindowsInstance` status, its conditions derived from it
//! ([`WindowsInstanceStatus::summarize`]) before every write, written through [`InstanceRecords::apply_status`]
//! only when it changed, so a converged host causes no write and a crash resumes from the last saved phase. The approved bootstrap key is the CSR controller's; the flow only clears it,
//! through [`InstanceRecords::apply_bootstrap_key`], when a new configuration attempt starts (the key of the
//! previous attempt must not bind the new one).

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use wmco_cluster_client::types::{
    AUTHENTICATION_FAILED_CONDITION, ConditionState, HOST_KEY_MISMATCH_CONDITION, HOSTNAME_CHANGED_CONDITION,
    InstancePhase, NODE_NAME_CONFLICT_CONDITION, PREFLIGHT_FAILED_CONDITION, WindowsInstance, WindowsInstanceStatus,
};
use wmco_cluster_client::{InstanceRecords, WindowsInstanceExt};
use wmco_vocabulary::BOOTSTRAP_WINDOW_REOPEN_AFTER;
use wmco_windows_services::RebootMarker;

use crate::error::{FlowError, FlowStep};

/// A working copy of a record's status and the last saved version of it.
pub(crate) struct Recorder<'a> {
    records: &'a dyn InstanceRecords,
    namespace: String,
    name: String,
    /// `namespace/name` of the record, for logs.
    key: String,
    host: String,
    /// The record's `metadata.generation`, written as the conditions' and the status's `observedGeneration`.
    generation: Option<i64>,
    saved: WindowsInstanceStatus,
    /// A new attempt started: the previous attempt's bootstrap key is cleared before the next status write.
    clear_bootstrap_key: bool,
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
        let saved = instance.status.clone().unwrap_or_default();
        let mut status = saved.clone();
        // A reboot an operator before `status.disruption` recorded goes on as a disruption; the next write drops
        // the deprecated `status.reboot`.
        status.migrate_legacy_reboot();
        let key = instance.key();
        Ok(Recorder {
            records,
            namespace,
            name,
            key,
            host: host.to_owned(),
            generation: instance.metadata.generation,
            saved,
            clear_bootstrap_key: false,
            status,
        })
    }

    /// Enters `phase`; entering [`InstancePhase::Configuring`] or [`InstancePhase::Deconfiguring`] from another phase
    /// stamps `configuringSince`. Coming from a phase after a configuration (Ready, Upgrading, Failed) starts a new
    /// attempt, which also clears the previous attempt's approved bootstrap key. Resuming one (from Configuring or
    /// WaitingForNode, after a crash or a retry) keeps the key the attempt is bound to, and so does a record's first
    /// pass (no phase yet, or Pending): a Machine's kubelet may bootstrap from the Machine's creation on (rule F1),
    /// and a key recorded then belongs to the Machine's one attempt.
    pub(crate) fn set_phase(&mut self, phase: InstancePhase) {
        let starting = matches!(phase, InstancePhase::Configuring | InstancePhase::Deconfiguring);
        if starting && self.status.phase != Some(phase) {
            self.status.configuring_since = Some(Time(Timestamp::now()));
            let keeps_the_key = matches!(
                self.status.phase,
                None | Some(InstancePhase::Pending | InstancePhase::Configuring | InstancePhase::WaitingForNode)
            );
            if !keeps_the_key && self.status.approved_bootstrap_key_sha256.take().is_some() {
                self.clear_bootstrap_key = true;
            }
        }
        self.status.phase = Some(phase);
    }

    /// Opens the bootstrap window at `now` for a pass that writes a fresh bootstrap kubeconfig or starts the
    /// kubelet of a host without a Node, unless a window opened less than [`BOOTSTRAP_WINDOW_REOPEN_AFTER`] ago is
    /// open (phase `Configuring` or `WaitingForNode`). Returns whether it opened one.
    ///
    /// A record that failed (a preflight check fixed later), waited long (for the reboot budget) or whose host was
    /// away for a while would otherwise keep the window of its first pass, which closed: the CSR approver would
    /// ignore its kubelet's requests for ever. A window opened again is a new attempt: the key approved in the
    /// previous one no longer binds it (rule F2 counts approvals since the window opened).
    pub(crate) fn open_bootstrap_window(&mut self, now: Timestamp) -> bool {
        let waiting = matches!(self.status.phase, Some(InstancePhase::Configuring | InstancePhase::WaitingForNode));
        let reopen_after = SignedDuration::try_from(BOOTSTRAP_WINDOW_REOPEN_AFTER).unwrap_or(SignedDuration::ZERO);
        let open =
            self.status.configuring_since.as_ref().is_some_and(|since| now.duration_since(since.0) < reopen_after);
        if waiting && open {
            return false;
        }
        self.status.configuring_since = Some(Time(now));
        if self.status.approved_bootstrap_key_sha256.take().is_some() {
            self.clear_bootstrap_key = true;
        }
        if !waiting {
            self.status.phase = Some(InstancePhase::Configuring);
        }
        true
    }

    /// Notes that the host refused the key at `now`: [`AUTHENTICATION_FAILED_CONDITION`] `True` from `now`, or kept
    /// from the start of the refusals already recorded (only the message is updated).
    pub(crate) fn note_authentication_refused(&mut self, message: String, now: Timestamp) {
        let state = ConditionState::new(AUTHENTICATION_FAILED_CONDITION, true, "KeyRefused", message);
        self.status.set_condition(state, self.generation, now);
    }

    /// Notes that the host presented another host key than the pinned one: [`HOST_KEY_MISMATCH_CONDITION`] `True`.
    pub(crate) fn note_host_key_mismatch(&mut self, message: String, now: Timestamp) {
        let state = ConditionState::new(HOST_KEY_MISMATCH_CONDITION, true, "HostKeyChanged", message);
        self.status.set_condition(state, self.generation, now);
    }

    /// Notes that the host passed its preflight checks: [`PREFLIGHT_FAILED_CONDITION`] `False`.
    pub(crate) fn note_preflight_passed(&mut self) {
        let state = ConditionState::new(
            PREFLIGHT_FAILED_CONDITION,
            false,
            "ChecksPassed",
            "The host passed the preflight checks (Windows build, Containers feature, free space on C:, no Docker).",
        );
        self.status.set_condition(state, self.generation, Timestamp::now());
    }

    /// Notes that the host's Node name is its own (its Node is the record's, or no Node and no other record holds
    /// the name): a `True` [`NODE_NAME_CONFLICT_CONDITION`] becomes `False`. Returns whether it changed.
    pub(crate) fn note_node_name_free(&mut self) -> bool {
        let conflicted = self.status.condition_is_true(NODE_NAME_CONFLICT_CONDITION);
        if conflicted {
            self.status.set_condition(ConditionState::node_name_free(), self.generation, Timestamp::now());
        }
        conflicted
    }

    /// Notes that the host reports its recorded host name: a `True` [`HOSTNAME_CHANGED_CONDITION`] becomes `False`.
    /// Returns whether it changed.
    pub(crate) fn note_hostname_as_recorded(&mut self) -> bool {
        let changed = self.status.condition_is_true(HOSTNAME_CHANGED_CONDITION);
        if changed {
            self.status.set_condition(ConditionState::hostname_as_recorded(), self.generation, Timestamp::now());
        }
        changed
    }

    /// Notes the pending-reboot markers a probe found:
    /// [`REBOOT_REQUIRED_CONDITION`](wmco_cluster_client::types::REBOOT_REQUIRED_CONDITION) `True` naming them,
    /// `False` when there are none; written with the pass's next save.
    pub(crate) fn note_pending_reboot(&mut self, markers: &[RebootMarker]) {
        let names: Vec<&str> = markers.iter().map(|marker| marker.name()).collect();
        self.status.set_condition(ConditionState::reboot_required(&names), self.generation, Timestamp::now());
    }

    /// Notes that a login succeeded (with the pinned host key, since the transport checks it): a `True`
    /// [`AUTHENTICATION_FAILED_CONDITION`] or [`HOST_KEY_MISMATCH_CONDITION`] becomes `False`. Returns whether one
    /// changed.
    pub(crate) fn note_logged_in(&mut self) -> bool {
        let now = Timestamp::now();
        let mut changed = false;
        for state in [ConditionState::key_accepted(), ConditionState::host_key_as_pinned()] {
            if self.status.condition_is_true(state.type_) {
                self.status.set_condition(state, self.generation, now);
                changed = true;
            }
        }
        changed
    }

    /// Writes the status if it differs from the last saved one; first clears the bootstrap key of the previous
    /// attempt when a new one started (so a crash between the two never leaves that key bound to the new attempt).
    pub(crate) async fn save(&mut self) -> Result<(), FlowError> {
        self.status.summarize(self.generation, Timestamp::now());
        if self.clear_bootstrap_key {
            self.records
                .apply_bootstrap_key(&self.namespace, &self.name, None)
                .await
                .map_err(|source| FlowError::Cluster { host: self.host.clone(), step: FlowStep::Record, source })?;
            self.clear_bootstrap_key = false;
        }
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
        if error.is_host_key_mismatch() {
            self.note_host_key_mismatch(error.to_string(), Timestamp::now());
        }
        if error.fails_the_record() {
            self.status.phase = Some(InstancePhase::Failed);
        }
        if let FlowError::HostnameChanged { .. } = error {
            let state = ConditionState::new(HOSTNAME_CHANGED_CONDITION, true, "HostnameChanged", error.to_string());
            self.status.set_condition(state, self.generation, Timestamp::now());
        }
        if error.is_node_name_conflict() {
            // A record that expects no Node name is out of the CSR approver's scope: the requests of the Node
            // that holds the name are never decided against this host's record.
            self.status.expected_node_name = None;
            let state = ConditionState::new(NODE_NAME_CONFLICT_CONDITION, true, "NodeNameTaken", error.to_string());
            self.status.set_condition(state, self.generation, Timestamp::now());
        }
        let failures = error.preflight_failures();
        if !failures.is_empty() {
            let found: Vec<String> = failures.iter().map(ToString::to_string).collect();
            let message =
                format!("{}. Nothing was installed; the operator checks again with backoff.", found.join("; "));
            let state = ConditionState::new(PREFLIGHT_FAILED_CONDITION, true, "ChecksFailed", message);
            self.status.set_condition(state, self.generation, Timestamp::now());
        }
        if let Err(write_error) = self.save().await {
            tracing::warn!(instance = %self.key, error = %write_error, "could not record the flow's error");
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use wmco_cluster_client::fake::FakeInstanceRecords;
    use wmco_cluster_client::types::{InstanceOrigin, WindowsInstanceSpec};

    use super::*;

    /// Seeds a record in `phase` (none: a record no pass has written yet) whose status holds an approved bootstrap
    /// key, and returns it as read.
    async fn record_with_key(records: &FakeInstanceRecords, phase: Option<InstancePhase>) -> WindowsInstance {
        let record = WindowsInstance {
            metadata: ObjectMeta {
                name: Some("byoh-a".into()),
                namespace: Some("wmco".into()),
                ..ObjectMeta::default()
            },
            spec: WindowsInstanceSpec {
                address: "10.0.0.5".into(),
                username: "Administrator".into(),
                origin: InstanceOrigin::Byoh,
                machine_name: None,
                expected_node_name: None,
            },
            status: None,
        };
        records.apply(&record).await.unwrap();
        let status = WindowsInstanceStatus { phase, ..WindowsInstanceStatus::default() };
        records.apply_status("wmco", "byoh-a", &status).await.unwrap();
        records.apply_bootstrap_key("wmco", "byoh-a", Some("old-key")).await.unwrap();
        records.record("wmco", "byoh-a").unwrap()
    }

    fn key_of(records: &FakeInstanceRecords) -> Option<String> {
        records.record("wmco", "byoh-a").unwrap().status.unwrap().approved_bootstrap_key_sha256
    }

    #[tokio::test]
    async fn a_new_attempt_clears_the_previous_attempts_bootstrap_key() {
        for before in [InstancePhase::Ready, InstancePhase::Failed, InstancePhase::Upgrading] {
            let records = FakeInstanceRecords::default();
            let record = record_with_key(&records, Some(before)).await;
            let mut recorder = Recorder::new(&records, &record, "10.0.0.5").unwrap();
            recorder.set_phase(InstancePhase::Configuring);
            recorder.save().await.unwrap();
            let status = records.record("wmco", "byoh-a").unwrap().status.unwrap();
            assert_eq!(status.approved_bootstrap_key_sha256, None, "after {before:?}");
            assert_eq!(status.phase, Some(InstancePhase::Configuring));
            assert!(status.configuring_since.is_some());
        }
    }

    #[tokio::test]
    async fn the_first_pass_keeps_a_key_recorded_before_it() {
        // A Machine's kubelet may bootstrap from the Machine's creation on (rule F1), before the flow's first pass:
        // that key belongs to the Machine's one attempt.
        for before in [None, Some(InstancePhase::Pending)] {
            let records = FakeInstanceRecords::default();
            let record = record_with_key(&records, before).await;
            let mut recorder = Recorder::new(&records, &record, "10.0.0.5").unwrap();
            recorder.set_phase(InstancePhase::Configuring);
            recorder.save().await.unwrap();
            let status = records.record("wmco", "byoh-a").unwrap().status.unwrap();
            assert_eq!(status.approved_bootstrap_key_sha256.as_deref(), Some("old-key"), "after {before:?}");
            assert_eq!(status.phase, Some(InstancePhase::Configuring));
            assert!(status.configuring_since.is_some());
        }
    }

    #[tokio::test]
    async fn status_writes_within_an_attempt_keep_the_key_the_csr_controller_recorded() {
        let records = FakeInstanceRecords::default();
        let record = record_with_key(&records, Some(InstancePhase::Ready)).await;
        let mut recorder = Recorder::new(&records, &record, "10.0.0.5").unwrap();
        recorder.set_phase(InstancePhase::Configuring);
        recorder.save().await.unwrap();
        // The kubelet bootstraps; the CSR controller records the attempt's key after the flow read the record.
        records.apply_bootstrap_key("wmco", "byoh-a", Some("new-key")).await.unwrap();
        recorder.set_phase(InstancePhase::WaitingForNode);
        recorder.save().await.unwrap();
        assert_eq!(key_of(&records).as_deref(), Some("new-key"), "a status write kept the key");
        // A crash: the next pass reads the record and resumes the attempt.
        let record = records.record("wmco", "byoh-a").unwrap();
        let mut resumed = Recorder::new(&records, &record, "10.0.0.5").unwrap();
        resumed.set_phase(InstancePhase::Configuring);
        resumed.save().await.unwrap();
        assert_eq!(key_of(&records).as_deref(), Some("new-key"), "the same attempt resumed: the key stays");
    }
}
