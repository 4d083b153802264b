//! `wmco status [-n NS]`: the fleet as the cluster records it — for each `WindowsInstance`: address, phase, the
//! Ready, Progressing and Degraded conditions with their reasons, the Node, the configured version, the restart or
//! reboot requested or under way, the last error and the last Event about it. One LIST of the records and one of their Events, read through cluster-client. Exit
//! 0 when the fleet was read (whatever state the hosts are in: `kubectl wait --for=condition=Ready` is the check),
//! 1 when the cluster could not be read, 2 for an unusable kubeconfig.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::Serialize;
use wmco_cluster_client::types::{
    DEGRADED_CONDITION, PROGRESSING_CONDITION, READY_CONDITION, WindowsInstance, WindowsInstanceStatus,
};
use wmco_cluster_client::{
    EventHistory, InstanceRecords, KubeEventHistory, KubeInstanceRecords, ResourceExt, last_seen,
};
use wmco_ssh_transport::redact::redact;

use crate::cli_support::{ClusterArgs, Outcome, OutputArgs, print_stdout, render};

/// The `kind` of the document `wmco status -o json|yaml` prints.
pub const KIND: &str = "FleetStatus";

/// The kind of the records' involved objects in Events.
const RECORD_KIND: &str = "WindowsInstance";

/// Arguments of `wmco status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The fleet, as printed with `-o json|yaml`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetStatus {
    /// The namespace of the records.
    pub namespace: String,
    /// One entry per record, in name order.
    pub instances: Vec<InstanceSummary>,
}

/// One record: what an admin asks first.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceSummary {
    /// The record's name.
    pub name: String,
    /// The address the operator reaches the host at.
    pub address: String,
    /// `Byoh` or `Machine`, as the record's `spec.origin`.
    pub origin: String,
    /// The phase, when the operator recorded one.
    pub phase: Option<String>,
    /// Ready, Progressing and Degraded, in that order (those present).
    pub conditions: Vec<ConditionSummary>,
    /// The Node the host is (or becomes).
    pub node: Option<String>,
    /// The operator version the host is configured with.
    pub configured_version: Option<String>,
    /// The restart or reboot requested or under way (none once completed).
    pub disruption: Option<DisruptionSummary>,
    /// The last error, as the operator recorded it.
    pub last_error: Option<String>,
    /// The most recent Event about the record.
    pub last_event: Option<EventSummary>,
}

/// A restart or reboot of the host: what, how far, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisruptionSummary {
    /// `Restart` or `Reboot`.
    pub kind: String,
    /// `Requested` (waiting for the budget), `Granted` or `Restarting`.
    pub state: String,
    /// Why, as the record says.
    pub reason: String,
}

impl DisruptionSummary {
    /// The disruption `status` records, while it is requested or under way.
    fn of(status: &WindowsInstanceStatus) -> Option<Self> {
        let disruption = status.disruption_in_effect().filter(|d| d.is_requested() || d.is_under_way())?;
        let state = serde_json::to_value(disruption.state).ok()?.as_str()?.to_owned();
        Some(DisruptionSummary { kind: disruption.kind.to_string(), state, reason: redact(&disruption.reason) })
    }
}

/// A condition: type, status and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionSummary {
    /// The condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// CamelCase reason.
    pub reason: String,
    /// What it means and what to do.
    pub message: String,
    /// When the status last changed (RFC 3339).
    pub last_transition_time: String,
}

impl ConditionSummary {
    /// The summary of `condition`.
    pub fn of(condition: &Condition) -> Self {
        ConditionSummary {
            type_: condition.type_.clone(),
            status: condition.status.clone(),
            reason: condition.reason.clone(),
            message: redact(&condition.message),
            last_transition_time: condition.last_transition_time.0.to_string(),
        }
    }
}

/// An Event, as an admin reads it (credential-looking values redacted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSummary {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The CamelCase reason (docs/events.md lists them).
    pub reason: String,
    /// What happened.
    pub message: String,
    /// The object it is about, `Kind name`.
    pub regarding: String,
    /// When it was last seen (RFC 3339), when known.
    pub last_seen: Option<String>,
    /// How often it happened, when counted.
    pub count: Option<i32>,
}

impl EventSummary {
    /// The summary of `event`.
    pub fn of(event: &Event) -> Self {
        let involved = &event.involved_object;
        EventSummary {
            type_: event.type_.clone().unwrap_or_default(),
            reason: event.reason.clone().unwrap_or_default(),
            message: redact(event.message.as_deref().unwrap_or_default()),
            regarding: format!(
                "{} {}",
                involved.kind.as_deref().unwrap_or_default(),
                involved.name.as_deref().unwrap_or_default()
            ),
            last_seen: last_seen(event).map(|time| time.to_string()),
            count: event.count.or_else(|| event.series.as_ref().and_then(|series| series.count)),
        }
    }

    /// `Warning InstanceSetupFailure: message`.
    pub fn text(&self) -> String {
        format!("{} {}: {}", self.type_, self.reason, self.message)
    }

    /// [`EventSummary::text`], then when it was last seen: `Warning InstanceSetupFailure: message (at …)`.
    pub fn line(&self) -> String {
        let when = self.last_seen.as_deref().map(|time| format!(" (at {time})")).unwrap_or_default();
        format!("{}{when}", self.text())
    }
}

impl InstanceSummary {
    /// The summary of `record`, with the last of `events` (oldest first) as its last Event.
    pub fn of(record: &WindowsInstance, events: &[Event]) -> Self {
        let status = record.status.clone().unwrap_or_default();
        InstanceSummary {
            name: record.name_any(),
            address: record.spec.address.clone(),
            origin: serde_json::to_value(record.spec.origin)
                .ok()
                .and_then(|value| value.as_str().map(str::to_owned))
                .unwrap_or_default(),
            phase: status.phase.map(|phase| phase.to_string()),
            conditions: summary_conditions(&status),
            node: status.expected_node_name.clone().or_else(|| record.spec.expected_node_name.clone()),
            configured_version: status.configured_version.clone(),
            disruption: DisruptionSummary::of(&status),
            last_error: status.last_error.as_deref().map(redact),
            last_event: events.last().map(EventSummary::of),
        }
    }

    /// The condition of `type_`, if present.
    pub fn condition(&self, type_: &str) -> Option<&ConditionSummary> {
        self.conditions.iter().find(|condition| condition.type_ == type_)
    }

    /// Whether something about the host needs attention: Degraded, or phase Failed.
    pub fn needs_attention(&self) -> bool {
        self.condition(DEGRADED_CONDITION).is_some_and(|condition| condition.status == "True")
            || self.phase.as_deref() == Some("Failed")
    }
}

/// Ready, Progressing and Degraded of `status`, those present, in that order.
fn summary_conditions(status: &WindowsInstanceStatus) -> Vec<ConditionSummary> {
    [READY_CONDITION, PROGRESSING_CONDITION, DEGRADED_CONDITION]
        .into_iter()
        .filter_map(|type_| status.condition(type_).map(ConditionSummary::of))
        .collect()
}

/// Reads every record of `namespace` and the Events about them, and summarizes each record.
pub async fn fleet_status(
    records: &dyn InstanceRecords,
    events: &dyn EventHistory,
    namespace: &str,
) -> anyhow::Result<FleetStatus> {
    let listed = records.list(namespace).await?;
    let mut by_record: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    for event in events.list_about(Some(namespace), RECORD_KIND, None).await? {
        let name = event.involved_object.name.clone().unwrap_or_default();
        by_record.entry(name).or_default().push(event);
    }
    let instances = listed
        .iter()
        .map(|record| {
            InstanceSummary::of(record, by_record.get(&record.name_any()).map(Vec::as_slice).unwrap_or_default())
        })
        .collect();
    Ok(FleetStatus { namespace: namespace.to_owned(), instances })
}

/// A table, then one paragraph per host that needs attention (its Degraded message, last error and last Event).
pub fn render_human(fleet: &FleetStatus) -> String {
    if fleet.instances.is_empty() {
        return format!(
            "no WindowsInstance records in namespace {}: list hosts in ConfigMap windows-instances (docs/user-guide.md) \
             or create Windows Machines\n",
            fleet.namespace
        );
    }
    let mut rows =
        vec![["NAME", "ADDRESS", "PHASE", "READY", "REASON", "NODE", "VERSION", "DISRUPTION"].map(str::to_owned)];
    for instance in &fleet.instances {
        let ready = instance.condition(READY_CONDITION);
        rows.push([
            instance.name.clone(),
            instance.address.clone(),
            dash(instance.phase.as_deref()),
            dash(ready.map(|ready| ready.status.as_str())),
            dash(ready.map(|ready| ready.reason.as_str())),
            dash(instance.node.as_deref()),
            dash(instance.configured_version.as_deref()),
            dash(
                instance
                    .disruption
                    .as_ref()
                    .map(|disruption| format!("{} {}", disruption.kind, disruption.state))
                    .as_deref(),
            ),
        ]);
    }
    let mut text = table(&rows);
    for instance in fleet.instances.iter().filter(|instance| instance.needs_attention()) {
        text.push('\n');
        match instance.condition(DEGRADED_CONDITION) {
            Some(degraded) => {
                text.push_str(&format!("{}: Degraded ({}): {}\n", instance.name, degraded.reason, degraded.message))
            }
            None => text.push_str(&format!("{}: phase {}\n", instance.name, dash(instance.phase.as_deref()))),
        }
        if let Some(error) = &instance.last_error {
            text.push_str(&format!("  last error: {error}\n"));
        }
        if let Some(event) = &instance.last_event {
            text.push_str(&format!("  last event: {}\n", event.line()));
        }
        text.push_str(&format!("  more: wmco diagnose {} -n {}\n", instance.name, fleet.namespace));
    }
    text
}

/// `value`, or `-` when absent.
pub fn dash(value: Option<&str>) -> String {
    value.filter(|value| !value.is_empty()).unwrap_or("-").to_owned()
}

/// Rows as left-aligned columns separated by three spaces (the last column unpadded).
pub fn table<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(index, (cell, width))| if index + 1 == N { cell.clone() } else { format!("{cell:width$}") })
            .collect();
        text.push_str(cells.join("   ").trim_end());
        text.push('\n');
    }
    text
}

/// Reads the fleet and prints it.
pub fn run(args: &StatusArgs) -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let fleet = runtime.block_on(async {
        let client = args.cluster.client().await?;
        let records = KubeInstanceRecords::new(client.clone());
        let events = KubeEventHistory::new(client);
        fleet_status(&records, &events, &args.cluster.namespace).await
    })?;
    print_stdout(&render(args.output.format, KIND, &fleet, || render_human(&fleet))?)?;
    Ok(Outcome::Clean)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;
    use wmco_cluster_client::fake::{FakeEvents, FakeInstanceRecords, objects};
    use wmco_cluster_client::types::{DisruptionState, InstancePhase};
    use wmco_cluster_client::{EventPublisher, NewEvent, Severity};

    const NAMESPACE: &str = "wmco";

    /// Two records: `byoh-10-0-0-5` Ready on Node win-1, `byoh-10-0-0-6` retrying an unreachable host, with two
    /// Warning Events.
    pub(crate) async fn failing_fleet() -> (FakeInstanceRecords, FakeEvents) {
        let records = FakeInstanceRecords::default();
        let mut ready = objects::status().phase(InstancePhase::Ready).expected_node_name("win-1").build();
        ready.configured_version = Some("0.1.0".into());
        ready.summarize(Some(1), "2026-11-26T10:00:00Z".parse().unwrap());
        let mut failing =
            objects::status().phase(InstancePhase::Configuring).reboot(DisruptionState::Requested).build();
        failing.last_error = Some("host Administrator@10.0.0.6:22: pin_host_key failed: unreachable".into());
        failing.summarize(Some(1), "2026-11-26T10:00:00Z".parse().unwrap());
        for (name, address, status) in [("byoh-10-0-0-5", "10.0.0.5", ready), ("byoh-10-0-0-6", "10.0.0.6", failing)] {
            let record = objects::record(name).in_namespace(NAMESPACE).byoh(address).build();
            records.apply(&record).await.unwrap();
            records.apply_status(NAMESPACE, name, &status).await.unwrap();
        }
        let events = FakeEvents::default();
        let regarding = ObjectReference {
            kind: Some(RECORD_KIND.into()),
            name: Some("byoh-10-0-0-6".into()),
            namespace: Some(NAMESPACE.into()),
            ..ObjectReference::default()
        };
        for note in ["first try failed", "pin_host_key failed: unreachable; token=abc123"] {
            let event = NewEvent {
                severity: Severity::Warning,
                reason: "InstanceSetupFailure".into(),
                action: "Configure".into(),
                note: Some(note.into()),
            };
            events.publish(&regarding, &event).await.unwrap();
        }
        (records, events)
    }

    #[tokio::test]
    async fn the_fleet_names_the_failing_host_its_condition_error_and_last_event() {
        let (records, events) = failing_fleet().await;
        let fleet = fleet_status(&records, &events, NAMESPACE).await.unwrap();
        let names: Vec<&str> = fleet.instances.iter().map(|instance| instance.name.as_str()).collect();
        assert_eq!(names, ["byoh-10-0-0-5", "byoh-10-0-0-6"]);
        let (ready, failing) = (&fleet.instances[0], &fleet.instances[1]);
        assert!(!ready.needs_attention() && ready.last_event.is_none());
        assert!(failing.needs_attention());
        assert_eq!(failing.condition(DEGRADED_CONDITION).map(|c| c.reason.as_str()), Some("RetryingAfterError"));
        let last = failing.last_event.as_ref().unwrap();
        assert_eq!(last.message, "pin_host_key failed: unreachable; token=[REDACTED]");

        let text = render_human(&fleet);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "NAME            ADDRESS    PHASE         READY   REASON        NODE    VERSION   DISRUPTION"
        );
        assert_eq!(lines[1], "byoh-10-0-0-5   10.0.0.5   Ready         True    Configured    win-1   0.1.0     -");
        assert_eq!(
            lines[2],
            "byoh-10-0-0-6   10.0.0.6   Configuring   False   Configuring   -       -         Reboot Requested"
        );
        assert!(lines[4].starts_with("byoh-10-0-0-6: Degraded (RetryingAfterError): host Administrator@10.0.0.6:22"));
        assert_eq!(lines[5], "  last error: host Administrator@10.0.0.6:22: pin_host_key failed: unreachable");
        assert_eq!(
            lines[6],
            "  last event: Warning InstanceSetupFailure: pin_host_key failed: unreachable; token=[REDACTED]"
        );
        assert_eq!(lines[7], "  more: wmco diagnose byoh-10-0-0-6 -n wmco");

        let json: serde_json::Value =
            serde_json::from_str(&render(crate::cli_support::OutputFormat::Json, KIND, &fleet, String::new).unwrap())
                .unwrap();
        assert_eq!(json["kind"], "FleetStatus");
        assert_eq!(json["instances"][1]["conditions"][2]["type"], "Degraded");
        assert_eq!(json["instances"][1]["lastError"], failing.last_error.clone().unwrap());
        assert_eq!(json["instances"][1]["disruption"]["state"], "Requested");
        assert!(json["instances"][0]["disruption"].is_null());
    }

    #[tokio::test]
    async fn an_empty_namespace_says_how_to_add_hosts() {
        let fleet = fleet_status(&FakeInstanceRecords::default(), &FakeEvents::default(), NAMESPACE).await.unwrap();
        assert!(render_human(&fleet).starts_with("no WindowsInstance records in namespace wmco: "));
    }
}
