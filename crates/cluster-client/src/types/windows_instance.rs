//! The product's own record of one Windows host: the namespaced `WindowsInstance` custom resource
//! (`windowsmachineconfig.openshift.io/v1alpha1`), one per BYOH entry or Windows Machine (design §3).

use std::net::Ipv4Addr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wmco_vocabulary::{DisruptionKind, InstanceOrigin, InstancePhase};

/// What the admin asked for: which host, reached how, coming from which input.
#[derive(CustomResource, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "windowsmachineconfig.openshift.io",
    version = "v1alpha1",
    kind = "WindowsInstance",
    plural = "windowsinstances",
    shortname = "wi",
    category = "wmco",
    namespaced,
    status = "WindowsInstanceStatus",
    doc = "A Windows host the operator turns into a node: one per windows-instances entry or Windows Machine.",
    printcolumn = r#"{"name": "Address", "type": "string", "jsonPath": ".spec.address"}"#,
    printcolumn = r#"{"name": "Node", "type": "string", "jsonPath": ".status.expectedNodeName"}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name": "Phase", "type": "string", "priority": 1, "jsonPath": ".status.phase"}"#,
    printcolumn = r#"{"name": "Version", "type": "string", "jsonPath": ".status.configuredVersion"}"#,
    printcolumn = r#"{"name": "Settings", "type": "string", "priority": 1, "jsonPath": ".status.settingsGeneration"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WindowsInstanceSpec {
    /// IPv4 address or DNS name the operator reaches the host's SSH server at.
    pub address: String,
    /// The SSH user name on the host.
    pub username: String,
    /// Which input this instance comes from.
    pub origin: InstanceOrigin,
    /// The Machine this instance was made for, when `origin` is `Machine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_name: Option<String>,
    /// The Node name decided from the admin's input (a Machine's name or InternalDNS address): it overrides the
    /// name derived from the host's hostname. Absent for BYOH hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_node_name: Option<String>,
}

impl WindowsInstanceStatus {
    /// When the host began refusing the operator's key, if it still does (the
    /// [`AUTHENTICATION_FAILED_CONDITION`](super::AUTHENTICATION_FAILED_CONDITION) with status `True`).
    ///
    /// ```
    /// use wmco_cluster_client::types::WindowsInstanceStatus;
    /// let status: WindowsInstanceStatus = serde_json::from_value(serde_json::json!({"conditions": [{
    ///     "type": "AuthenticationFailed", "status": "True", "reason": "KeyRefused", "message": "denied",
    ///     "lastTransitionTime": "2026-11-22T04:00:00Z"}]}))?;
    /// assert_eq!(status.authentication_failing_since(), Some("2026-11-22T04:00:00Z".parse()?));
    /// assert_eq!(WindowsInstanceStatus::default().authentication_failing_since(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn authentication_failing_since(&self) -> Option<jiff::Timestamp> {
        self.condition(super::AUTHENTICATION_FAILED_CONDITION)
            .filter(|condition| condition.status == "True")
            .map(|condition| condition.last_transition_time.0)
    }
}

/// What the operator learned and decided about a host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowsInstanceStatus {
    /// The address the host was last reached at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The IPv4 address `address` resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_ipv4: Option<Ipv4Addr>,
    /// The SSH user the operator logs in as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_user: Option<String>,
    /// The host key pinned on first contact (`<type> <base64>`); a different key is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_host_key: Option<String>,
    /// The host name read from the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The fully qualified domain name read from the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<String>,
    /// The IPv4 address of the host's default-route interface, passed to the kubelet as `--node-ip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ip: Option<Ipv4Addr>,
    /// The Node name the operator decided on, passed to the kubelet as `--hostname-override`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_node_name: Option<String>,
    /// Where the host is in its life cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<InstancePhase>,
    /// When the current configuration attempt started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuring_since: Option<Time>,
    /// SHA-256 (hex) of the public key of the bootstrap CSR the operator approved for this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_bootstrap_key_sha256: Option<String>,
    /// The operator version the host is configured with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_version: Option<String>,
    /// The settings generation the host last converged to: a short digest of the cluster-wide inputs of its files
    /// and services (proxy, mirrors, CAs, …). After a cluster setting changes, hosts still showing the previous
    /// generation have not applied it yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings_generation: Option<String>,
    /// The last error, as a sentence naming the step and what to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Deprecated: the reboot record of operators before `disruption`, kept in the schema for one release so an
    /// upgraded operator still reads (and finishes) a reboot an older one started; the operator moves it into
    /// `disruption` and removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reboot: Option<HostReboot>,
    /// The operator's latest disruption of the host (a restart of its services or a reboot): requested, granted,
    /// restarting, or completed. While it is not completed the host counts against `--max-unavailable`, and a
    /// restarted operator resumes it from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption: Option<HostDisruption>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Standard conditions, one per type, always present once the operator looked at the host (see
    /// [`READY_CONDITION`](super::READY_CONDITION) and its siblings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
}

impl WindowsInstanceStatus {
    /// The disruption this status records: `disruption`, or else a legacy `reboot` (written by an operator before
    /// `disruption` existed) read as a [`DisruptionKind::Reboot`] in the same state.
    ///
    /// ```
    /// use wmco_cluster_client::types::{DisruptionState, WindowsInstanceStatus};
    /// use wmco_vocabulary::DisruptionKind;
    /// let status: WindowsInstanceStatus = serde_json::from_value(serde_json::json!({"reboot": {
    ///     "reason": "the Windows feature Containers was installed", "state": "Restarting",
    ///     "bootBefore": "/Date(1795000000000)/", "requestedAt": "2026-11-27T20:00:00Z"}}))?;
    /// let disruption = status.disruption_in_effect().unwrap();
    /// assert_eq!((disruption.kind, disruption.state), (DisruptionKind::Reboot, DisruptionState::Restarting));
    /// assert!(disruption.is_under_way());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn disruption_in_effect(&self) -> Option<HostDisruption> {
        self.disruption.clone().or_else(|| self.reboot.clone().map(HostDisruption::from))
    }

    /// Records a new request of a `kind` disruption for `reason` at `now` (answering `admin_token` if an admin asked)
    /// and returns it, unless a disruption is already requested or under way (`None`). A new request keeps the admin
    /// token the last completed disruption answered, so the same token never asks twice.
    ///
    /// ```
    /// use wmco_cluster_client::types::WindowsInstanceStatus;
    /// use wmco_vocabulary::DisruptionKind;
    /// let mut status = WindowsInstanceStatus::default();
    /// let now = jiff::Timestamp::UNIX_EPOCH;
    /// assert!(status.request_disruption(DisruptionKind::Restart, "settings", now, None).is_some());
    /// assert!(status.request_disruption(DisruptionKind::Reboot, "patches", now, None).is_none());
    /// ```
    pub fn request_disruption(
        &mut self,
        kind: DisruptionKind,
        reason: &str,
        now: jiff::Timestamp,
        admin_token: Option<&str>,
    ) -> Option<&mut HostDisruption> {
        let previous = self.disruption_in_effect();
        if previous.as_ref().is_some_and(|previous| previous.is_requested() || previous.is_under_way()) {
            return None;
        }
        let answered = previous.as_ref().and_then(HostDisruption::completed_admin_token);
        self.reboot = None;
        self.disruption = Some(HostDisruption::request(kind, reason, now, admin_token.or(answered)));
        self.disruption.as_mut()
    }

    /// Grants the requested disruption at `now` (the fleet executor's part, once the budget admits it): state
    /// `Granted`. The phase is left alone: `Upgrading` stays the upgrade executor's permission to reconfigure a Node
    /// at another version. Returns whether a request was granted.
    ///
    /// ```
    /// use wmco_cluster_client::types::{DisruptionState, WindowsInstanceStatus};
    /// use wmco_vocabulary::DisruptionKind;
    /// let mut status = WindowsInstanceStatus::default();
    /// let now = jiff::Timestamp::UNIX_EPOCH;
    /// status.request_disruption(DisruptionKind::Restart, "settings", now, None);
    /// assert!(status.grant_disruption(now) && !status.grant_disruption(now));
    /// assert_eq!(status.disruption.map(|restart| restart.state), Some(DisruptionState::Granted));
    /// ```
    pub fn grant_disruption(&mut self, now: jiff::Timestamp) -> bool {
        let Some(request) = self.disruption.as_mut().filter(|request| request.is_requested()) else {
            return false;
        };
        request.state = DisruptionState::Granted;
        request.granted_at = Some(Time(now));
        true
    }

    /// Moves a legacy `reboot` into `disruption` (unless a disruption is recorded already) and removes it, so the
    /// next write of this status carries only `disruption`.
    pub fn migrate_legacy_reboot(&mut self) {
        self.disruption = self.disruption_in_effect();
        self.reboot = None;
    }
}

/// A disruption of the host by the operator, from its request for a unit of the unavailability budget until the
/// host is back: a restart of its node services (changed cluster settings or files) or a reboot (the Windows
/// feature `Containers` installed, an admin's request, or another change that takes effect at boot).
///
/// ```
/// use wmco_cluster_client::types::{DisruptionState, HostDisruption};
/// use wmco_vocabulary::DisruptionKind;
/// let disruption: HostDisruption = serde_json::from_value(serde_json::json!({
///     "kind": "Reboot", "reason": "the Windows feature Containers was installed", "state": "Granted",
///     "bootBefore": "/Date(1795000000000)/", "requestedAt": "2026-11-27T20:00:00Z"}))?;
/// assert_eq!((disruption.kind, disruption.state), (DisruptionKind::Reboot, DisruptionState::Granted));
/// assert!(disruption.is_under_way());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostDisruption {
    /// What the disruption does to the host.
    pub kind: DisruptionKind,
    /// Why the host is disrupted.
    pub reason: String,
    /// How far the disruption got.
    pub state: DisruptionState,
    /// When the disruption was requested.
    pub requested_at: Time,
    /// When a unit of the unavailability budget was granted for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_at: Option<Time>,
    /// For a restart: the services stopped and started again (empty for a reboot).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<String>,
    /// For a reboot: the host's `LastBootUpTime` before it, as the host printed it; a different value after it
    /// proves the host restarted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_before: Option<String>,
    /// When the restart (`Restart-Computer` for a reboot) was last sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_sent_at: Option<Time>,
    /// The host's Node when the disruption was requested (cordoned, drained and unmarked around a reboot); absent
    /// for a host without a Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The Node was schedulable and the operator cordoned it for the disruption (it uncordons it afterwards).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cordoned: bool,
    /// When the host was seen back (for a reboot: with a new boot time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
    /// The admin's reboot-requested token this disruption answers, if an admin asked for it; a completed one tells
    /// the reboot policy that the request was met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_token: Option<String>,
}

impl HostDisruption {
    /// A new request of a `kind` disruption for `reason` at `now`, answering `admin_token` if an admin asked for it.
    ///
    /// ```
    /// use wmco_cluster_client::types::{DisruptionState, HostDisruption};
    /// use wmco_vocabulary::DisruptionKind;
    /// let request = HostDisruption::request(DisruptionKind::Reboot, "patches", jiff::Timestamp::UNIX_EPOCH, None);
    /// assert!(request.is_requested() && !request.is_under_way());
    /// ```
    pub fn request(
        kind: DisruptionKind,
        reason: &str,
        now: jiff::Timestamp,
        admin_token: Option<&str>,
    ) -> HostDisruption {
        HostDisruption {
            kind,
            reason: reason.to_owned(),
            state: DisruptionState::Requested,
            requested_at: Time(now),
            granted_at: None,
            services: Vec::new(),
            boot_before: None,
            restart_sent_at: None,
            node: None,
            cordoned: false,
            completed_at: None,
            admin_token: admin_token.map(str::to_owned),
        }
    }

    /// Whether the disruption waits for a unit of the unavailability budget (requested, not granted yet).
    pub fn is_requested(&self) -> bool {
        self.state == DisruptionState::Requested
    }

    /// Whether the disruption holds a unit of the budget (granted or restarting): the host is unavailable because
    /// of the operator.
    pub fn is_under_way(&self) -> bool {
        matches!(self.state, DisruptionState::Granted | DisruptionState::Restarting)
    }

    /// The admin token a completed disruption answered: what the reboot policy reads as the last completed token.
    pub fn completed_admin_token(&self) -> Option<&str> {
        self.admin_token.as_deref().filter(|_| self.state == DisruptionState::Completed)
    }
}

impl From<HostReboot> for HostDisruption {
    /// A legacy reboot record as the [`DisruptionKind::Reboot`] disruption it is, in the same state — a legacy
    /// `Requested` had its budget claimed already, so it reads as [`DisruptionState::Granted`].
    fn from(reboot: HostReboot) -> HostDisruption {
        let state = match reboot.state {
            RebootState::Requested => DisruptionState::Granted,
            RebootState::Restarting => DisruptionState::Restarting,
            RebootState::Completed => DisruptionState::Completed,
        };
        HostDisruption {
            kind: DisruptionKind::Reboot,
            reason: reboot.reason,
            state,
            requested_at: reboot.requested_at,
            granted_at: None,
            services: Vec::new(),
            boot_before: Some(reboot.boot_before),
            restart_sent_at: reboot.restart_sent_at,
            node: reboot.node,
            cordoned: reboot.cordoned,
            completed_at: reboot.completed_at,
            admin_token: None,
        }
    }
}

/// How far a [`HostDisruption`] got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DisruptionState {
    /// Asked for; no unavailability budget granted yet.
    Requested,
    /// A unit of the budget is granted; the Node (if any) is being cordoned and drained; the restart not sent yet.
    Granted,
    /// The restart was sent; the host has not been seen back (for a reboot: with a new boot time).
    Restarting,
    /// The host came back.
    Completed,
}

/// Deprecated (read only, for one release): a reboot of the host as operators before [`HostDisruption`] recorded
/// it; [`WindowsInstanceStatus::disruption_in_effect`] reads it as a [`DisruptionKind::Reboot`] disruption.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostReboot {
    /// Read as `disruption.reason`.
    pub reason: String,
    /// Read as `disruption.state` (`Requested`: the budget was claimed, read as `Granted`).
    pub state: RebootState,
    /// Read as `disruption.bootBefore`.
    pub boot_before: String,
    /// Read as `disruption.requestedAt`.
    pub requested_at: Time,
    /// Read as `disruption.restartSentAt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_sent_at: Option<Time>,
    /// Read as `disruption.node`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Read as `disruption.cordoned`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cordoned: bool,
    /// Read as `disruption.completedAt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
}

/// How far a legacy [`HostReboot`] got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RebootState {
    /// The budget is claimed; the Node (if any) is being cordoned and drained; `Restart-Computer` not sent yet.
    Requested,
    /// `Restart-Computer` was sent; the host has not been seen back with a new boot time.
    Restarting,
    /// The host came back with a new boot time.
    Completed,
}

/// The schema of `status.conditions`: `metav1.Condition` with the validations Kubernetes' own types carry (a type
/// and reason pattern, lengths, the three statuses), as a map list keyed by `type`.
fn conditions_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "Standard conditions, one per type (a map list, so server-side apply merges them by type): \
            Ready, Progressing, Degraded, AuthenticationFailed, HostKeyMismatch, Upgrading.",
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "type": {
                    "description": "The condition type, in CamelCase.",
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                },
                "status": {
                    "description": "True, False or Unknown.",
                    "type": "string",
                    "enum": ["True", "False", "Unknown"]
                },
                "reason": {
                    "description": "Why the condition is as it is, in CamelCase.",
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1024,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
                },
                "message": {
                    "description": "What it means and what to do.",
                    "type": "string",
                    "maxLength": 32768
                },
                "lastTransitionTime": {
                    "description": "When the status last changed.",
                    "type": "string",
                    "format": "date-time"
                },
                "observedGeneration": {
                    "description": "The metadata.generation the condition was computed for.",
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Time {
        Time(text.parse().unwrap())
    }

    #[test]
    fn a_host_disruption_round_trips_through_json() {
        let disruption = HostDisruption {
            kind: DisruptionKind::Restart,
            reason: "the proxy changed".to_owned(),
            state: DisruptionState::Restarting,
            requested_at: at("2026-11-29T10:00:00Z"),
            granted_at: Some(at("2026-11-29T10:01:00Z")),
            services: vec!["kubelet".to_owned(), "kube-proxy".to_owned()],
            boot_before: None,
            restart_sent_at: Some(at("2026-11-29T10:02:00Z")),
            node: Some("winhost-1".to_owned()),
            cordoned: true,
            completed_at: None,
            admin_token: Some("2026-11-29T09:59:00Z".to_owned()),
        };
        let json = serde_json::to_value(&disruption).unwrap();
        assert_eq!(json["kind"], "Restart");
        assert_eq!(json["grantedAt"], "2026-11-29T10:01:00Z");
        assert_eq!(json["adminToken"], "2026-11-29T09:59:00Z");
        assert_eq!(serde_json::from_value::<HostDisruption>(json).unwrap(), disruption);
        let completed = HostDisruption { state: DisruptionState::Completed, ..disruption };
        assert!(!completed.is_under_way() && !completed.is_requested());
        assert_eq!(completed.completed_admin_token(), Some("2026-11-29T09:59:00Z"));
    }

    #[test]
    fn a_legacy_reboot_is_read_and_migrated_as_a_reboot_disruption_in_the_same_state() {
        let mut status: WindowsInstanceStatus = serde_json::from_value(serde_json::json!({"reboot": {
            "reason": "the Windows feature Containers was installed", "state": "Restarting",
            "bootBefore": "/Date(1)/", "requestedAt": "2026-11-27T20:00:00Z",
            "restartSentAt": "2026-11-27T20:01:00Z", "node": "winhost-1", "cordoned": true}}))
        .unwrap();
        let disruption = status.disruption_in_effect().unwrap();
        assert_eq!((disruption.kind, disruption.state), (DisruptionKind::Reboot, DisruptionState::Restarting));
        assert_eq!(disruption.boot_before.as_deref(), Some("/Date(1)/"));
        assert_eq!((disruption.node.as_deref(), disruption.cordoned), (Some("winhost-1"), true));
        assert_eq!(disruption.restart_sent_at, Some(at("2026-11-27T20:01:00Z")));
        status.migrate_legacy_reboot();
        let written = serde_json::to_value(&status).unwrap();
        assert!(written.get("reboot").is_none(), "{written}");
        assert_eq!(written["disruption"]["state"], "Restarting");
        assert_eq!(status.disruption_in_effect(), Some(disruption));
    }

    #[test]
    fn a_legacy_requested_reboot_held_the_budget_already_and_reads_as_granted() {
        let status: WindowsInstanceStatus = serde_json::from_value(serde_json::json!({"reboot": {
            "reason": "r", "state": "Requested", "bootBefore": "/Date(1)/", "requestedAt": "2026-11-27T20:00:00Z"}}))
        .unwrap();
        assert_eq!(status.disruption_in_effect().map(|disruption| disruption.state), Some(DisruptionState::Granted));
    }

    #[test]
    fn a_recorded_disruption_wins_over_a_leftover_legacy_reboot() {
        let mut status: WindowsInstanceStatus = serde_json::from_value(serde_json::json!({
            "reboot": {"reason": "old", "state": "Restarting", "bootBefore": "/Date(1)/",
                "requestedAt": "2026-11-27T20:00:00Z"},
            "disruption": {"kind": "Reboot", "reason": "new", "state": "Completed",
                "requestedAt": "2026-11-28T20:00:00Z"}}))
        .unwrap();
        status.migrate_legacy_reboot();
        assert_eq!(status.reboot, None);
        assert_eq!(status.disruption.map(|disruption| disruption.reason), Some("new".to_owned()));
    }
}
