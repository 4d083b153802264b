//! The product's own record of one Windows host: the namespaced `WindowsInstance` custom resource
//! (`windowsmachineconfig.openshift.io/v1alpha1`), one per BYOH entry or Windows Machine (design §3).

use std::net::Ipv4Addr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wmco_vocabulary::{InstanceOrigin, InstancePhase};

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
    /// The operator's latest reboot of the host: requested (its unavailability budget claimed), restarting, or
    /// completed. While it is not completed the host counts against `--max-unavailable`, and a restarted operator
    /// resumes it from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reboot: Option<HostReboot>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Standard conditions, one per type, always present once the operator looked at the host (see
    /// [`READY_CONDITION`](super::READY_CONDITION) and its siblings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// A reboot of the host by the operator (the Windows feature `Containers` installed, or another change that takes
/// effect at boot), from the claim of its unavailability budget until the host is back.
///
/// ```
/// use wmco_cluster_client::types::{HostReboot, RebootState};
/// let reboot: HostReboot = serde_json::from_value(serde_json::json!({
///     "reason": "the Windows feature Containers was installed", "state": "Restarting",
///     "bootBefore": "/Date(1795000000000)/", "requestedAt": "2026-11-27T20:00:00Z"}))?;
/// assert_eq!(reboot.state, RebootState::Restarting);
/// assert!(reboot.in_progress());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostReboot {
    /// Why the host is rebooted.
    pub reason: String,
    /// How far the reboot got.
    pub state: RebootState,
    /// The host's `LastBootUpTime` before the reboot, as the host printed it: a different value after it proves the
    /// host restarted.
    pub boot_before: String,
    /// When the budget was claimed for the reboot.
    pub requested_at: Time,
    /// When `Restart-Computer` was last sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_sent_at: Option<Time>,
    /// The host's Node when the reboot was requested (cordoned, drained and unmarked around it); absent for a host
    /// without a Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The Node was schedulable and the operator cordoned it for the reboot (it uncordons it afterwards).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cordoned: bool,
    /// When the host was seen back with a new boot time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
}

impl HostReboot {
    /// Whether the reboot is under way (requested or restarting): the host is unavailable because of the operator.
    pub fn in_progress(&self) -> bool {
        self.state != RebootState::Completed
    }
}

/// How far a [`HostReboot`] got.
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
