//! `wmco diagnose INSTANCE`: everything an admin or a support engineer needs about one host, in one report — the
//! `WindowsInstance` record, its Node, the recent Events about both, the kubelet CSRs of that node with the strict
//! approver's verdict and rule, the operator's log lines about the host (from the operator pods through the API,
//! or `--operator-log FILE`), and with `--ssh-key` the state of the host's node services over SSH. `--archive`
//! also writes the report and the raw YAML of every object into a tar.gz.
//!
//! All cluster IO goes through cluster-client; the World the CSRs are judged in is built like the operator's
//! (`wmco_operator::csr`). Nothing secret is ever included: no Secret is read, no kubeconfig or token is copied,
//! and every text taken from the cluster is passed through [`redact`]. Exit 0 when the report was written, 1 when
//! the cluster could not be read, 2 for an unknown record or an unusable flag.

use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use jiff::Timestamp;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Event, Node};
use serde::Serialize;
use wmco_cluster_client::names::MACHINE_API_NAMESPACE;
use wmco_cluster_client::types::{
    DEGRADED_CONDITION, InstanceOrigin, PROGRESSING_CONDITION, READY_CONDITION, WindowsInstance, WindowsInstanceSpec,
    WindowsInstanceStatus,
};
use wmco_cluster_client::{
    Csrs, EventHistory, InstanceRecords, KubeCsrs, KubeEventHistory, KubeInstanceRecords, KubeMachines, KubeNodes,
    KubePodLogs, Machines, Nodes, PodLogs, ResourceExt, WindowsInstanceExt, is_pending, last_seen,
};
use wmco_csr_approver::{CsrFacts, CsrManifest, CsrState, VerdictReport, World, WorldData, decide};
use wmco_operator::csr::{KUBELET_SIGNERS, machine_instance, managed_instance, node_record};
use wmco_ssh_transport::redact::redact;
use wmco_ssh_transport::{HostKeyPolicy, PrivateKey, RemoteCommand, RemoteHost, RetryPolicy, SshHost};
use wmco_windows_services::{
    LEGACY_DAEMON_SERVICE, LogRotation, NodeInputs, ObservedService, Platform, ProbeRequest, ServiceName, Verbosity,
    node_services,
};

use crate::cli_support::{ClusterArgs, Outcome, OutputArgs, OutputFormat, UnusableInput, print_stdout, render};
use crate::cmd::status::{ConditionSummary, EventSummary, InstanceSummary, dash, table};

/// The `kind` of the document `wmco diagnose -o json|yaml` prints.
pub const KIND: &str = "Diagnosis";

/// The label of the operator's pods (the Deployment's selector).
pub const OPERATOR_POD_SELECTOR: &str = "app.kubernetes.io/name=windows-machine-config-operator";
/// How many lines of each operator container's log are read.
const LOG_TAIL_LINES: i64 = 20_000;
/// How many matching log lines the report keeps (the most recent).
const MAX_LOG_LINES: usize = 200;
/// How many Events the report keeps (the most recent).
const MAX_EVENTS: usize = 50;
/// How long connecting to the host and each probe command may take.
const SSH_TIMEOUT: Duration = Duration::from_secs(20);

/// Arguments of `wmco diagnose`.
#[derive(Debug, clap::Args)]
pub struct DiagnoseArgs {
    /// The `WindowsInstance` record of the host (`wmco status` lists them), e.g. `byoh-10-0-0-21`.
    #[arg(value_name = "INSTANCE")]
    pub instance: String,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also write the report (text and JSON) and the raw YAML of the record, its Node, the Events and the CSRs,
    /// with the operator's log lines about the host, into this gzip-compressed tarball (for a support case).
    #[arg(long, value_name = "FILE.tar.gz")]
    pub archive: Option<PathBuf>,
    /// Read the state of the host's node services over SSH with this private key (the operator's key, as in
    /// Secret `cloud-private-key`), checking the host key the record pinned. Without it the host is not contacted.
    #[arg(long, value_name = "FILE")]
    pub ssh_key: Option<PathBuf>,
    /// The host's SSH port (with `--ssh-key`).
    #[arg(long, default_value_t = 22, requires = "ssh_key")]
    pub ssh_port: u16,
    /// Read the operator's log from this file (saved with `kubectl logs`, or written by an operator running outside
    /// the cluster) instead of from the operator pods (label `app.kubernetes.io/name=windows-machine-config-operator`).
    #[arg(long, value_name = "FILE")]
    pub operator_log: Option<PathBuf>,
}

/// The report, as printed with `-o json|yaml`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    /// The operator namespace.
    pub namespace: String,
    /// The host at a glance: phase, Ready/Progressing/Degraded, Node, version, last error, last Event.
    pub summary: InstanceSummary,
    /// The record's spec and status as stored.
    pub record: RecordReport,
    /// The host's Node, when it exists.
    pub node: Option<NodeSummary>,
    /// The most recent Events about the record and the Node, oldest first.
    pub events: Vec<EventSummary>,
    /// The kubelet CSRs naming the node, by name.
    pub csrs: Vec<CsrReport>,
    /// The operator's log lines about the host.
    pub operator_log: LogReport,
    /// The node services on the host (only with `--ssh-key`).
    pub services: Option<ServicesReport>,
    /// What could not be gathered, and why.
    pub notes: Vec<String>,
}

/// The record as stored.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordReport {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.creationTimestamp` (RFC 3339).
    pub created: Option<String>,
    /// `metadata.deletionTimestamp` (RFC 3339), when the host is being removed.
    pub deleting_since: Option<String>,
    /// The spec.
    pub spec: WindowsInstanceSpec,
    /// The status, every condition included.
    pub status: Option<WindowsInstanceStatus>,
}

/// A Node at a glance.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    /// `metadata.name`.
    pub name: String,
    /// Its `Ready` condition.
    pub ready: Option<ConditionSummary>,
    /// Whether it is cordoned.
    pub unschedulable: bool,
    /// The kubelet's version.
    pub kubelet_version: Option<String>,
    /// `TYPE address` of each address.
    pub addresses: Vec<String>,
    /// The operator version it was configured at (annotation `windowsmachineconfig.openshift.io/version`).
    pub configured_version: Option<String>,
}

/// A kubelet CSR naming the node.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CsrReport {
    /// `metadata.name`.
    pub name: String,
    /// `spec.signerName`.
    pub signer_name: String,
    /// `spec.username`: who asked.
    pub requestor: String,
    /// `metadata.creationTimestamp` (RFC 3339).
    pub created: Option<String>,
    /// `Pending`, `Approved`, `Denied` or `Failed`.
    pub state: String,
    /// The decision recorded on it (`Approved: AllRulesPassed: …`; the operator's denials name the rule).
    pub decision: Option<String>,
    /// For a pending CSR: the strict approver's verdict now, with the deciding rule and its reason.
    pub approver_verdict: Option<VerdictReport>,
}

/// The operator's log lines about the host.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogReport {
    /// Where the lines were read (pods and containers, or a file).
    pub sources: Vec<String>,
    /// How many lines were about the host.
    pub matched: usize,
    /// The most recent of them (credential-looking values redacted).
    pub lines: Vec<String>,
}

/// The node services as the host reports them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicesReport {
    /// `user@address:port`.
    pub host: String,
    /// One entry per node service, present or not.
    pub services: Vec<ServiceReport>,
    /// Why the host could not be probed, if it could not.
    pub error: Option<String>,
}

/// One service on the host.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceReport {
    /// The service name.
    pub name: String,
    /// Whether the service exists.
    pub installed: bool,
    /// `running`, `stopped`, … when installed.
    pub state: Option<String>,
    /// `auto`, `demand`, … when installed.
    pub start_type: Option<String>,
    /// The process ID while it runs.
    pub process_id: Option<u32>,
}

/// The cluster capabilities `wmco diagnose` reads through.
pub struct Sources<'a> {
    /// The records.
    pub records: &'a dyn InstanceRecords,
    /// Nodes.
    pub nodes: &'a dyn Nodes,
    /// CSRs.
    pub csrs: &'a dyn Csrs,
    /// Machines, for Machine-backed records (`None` where the machine API is not served).
    pub machines: Option<&'a dyn Machines>,
    /// Events.
    pub events: &'a dyn EventHistory,
    /// The operator's pods and logs.
    pub pods: &'a dyn PodLogs,
}

/// Where the operator's log comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogSource {
    /// The operator pods in the namespace, through the API.
    Pods,
    /// A file's text.
    Text {
        /// The file, as named in the report.
        name: String,
        /// Its text.
        text: String,
    },
}

/// The report and the objects behind it (for the archive).
#[derive(Debug)]
pub struct Gathered {
    /// The report.
    pub diagnosis: Diagnosis,
    /// The record as read.
    pub record: WindowsInstance,
    /// The Node as read.
    pub node: Option<Node>,
    /// Every Event about the record and the Node.
    pub events: Vec<Event>,
    /// The CSRs naming the node.
    pub csrs: Vec<CertificateSigningRequest>,
}

/// Reads everything about record `namespace/name` (unusable input when there is no such record) and builds the
/// report; `now` is the time the CSR verdicts are decided at.
pub async fn gather(
    sources: &Sources<'_>,
    namespace: &str,
    name: &str,
    log_source: &LogSource,
    now: Timestamp,
) -> anyhow::Result<Gathered> {
    let record = sources.records.get(namespace, name).await?.ok_or_else(|| {
        UnusableInput(format!(
            "no WindowsInstance {name} in namespace {namespace}; `wmco status -n {namespace}` lists the records"
        ))
    })?;
    let mut notes = Vec::new();
    let node_name = record.expected_node_name().or(record.spec.expected_node_name.as_deref()).map(str::to_owned);
    let node = match &node_name {
        Some(node_name) => sources.nodes.get(node_name).await?,
        None => None,
    };
    match (&node_name, &node) {
        (None, _) => notes.push("no Node name decided yet: the operator has not read the host's identity".to_owned()),
        (Some(node_name), None) => notes.push(format!("Node {node_name} does not exist (yet)")),
        _ => {}
    }

    let mut events = sources.events.list_about(Some(namespace), "WindowsInstance", Some(name)).await?;
    if let Some(node_name) = &node_name {
        events.extend(sources.events.list_about(None, "Node", Some(node_name)).await?);
    }
    events.sort_by(|a, b| (last_seen(a), &a.metadata.name).cmp(&(last_seen(b), &b.metadata.name)));
    let record_events: Vec<Event> = events
        .iter()
        .filter(|event| event.involved_object.kind.as_deref() == Some("WindowsInstance"))
        .cloned()
        .collect();

    let (csrs, csr_reports) = match &node_name {
        Some(node_name) => node_csrs(sources, namespace, &record, node.as_ref(), node_name, now, &mut notes).await?,
        None => (Vec::new(), Vec::new()),
    };
    let operator_log = operator_log(sources.pods, namespace, &record.key(), log_source, &mut notes).await;

    let diagnosis = Diagnosis {
        namespace: namespace.to_owned(),
        summary: InstanceSummary::of(&record, &record_events),
        record: RecordReport {
            name: record.name_any(),
            created: record.metadata.creation_timestamp.as_ref().map(|time| time.0.to_string()),
            deleting_since: record.metadata.deletion_timestamp.as_ref().map(|time| time.0.to_string()),
            spec: record.spec.clone(),
            status: record.status.clone().map(redact_status),
        },
        node: node.as_ref().map(node_summary),
        events: events.iter().rev().take(MAX_EVENTS).rev().map(EventSummary::of).collect(),
        csrs: csr_reports,
        operator_log,
        services: None,
        notes,
    };
    Ok(Gathered { diagnosis, record, node, events, csrs })
}

/// The status with its free text (last error, condition messages) redacted.
fn redact_status(mut status: WindowsInstanceStatus) -> WindowsInstanceStatus {
    status.last_error = status.last_error.as_deref().map(redact);
    for condition in &mut status.conditions {
        condition.message = redact(&condition.message);
    }
    status
}

fn node_summary(node: &Node) -> NodeSummary {
    let status = node.status.as_ref();
    let ready = status
        .and_then(|status| status.conditions.as_ref())
        .and_then(|conditions| conditions.iter().find(|condition| condition.type_ == "Ready"))
        .map(|condition| ConditionSummary {
            type_: condition.type_.clone(),
            status: condition.status.clone(),
            reason: condition.reason.clone().unwrap_or_default(),
            message: redact(condition.message.as_deref().unwrap_or_default()),
            last_transition_time: condition
                .last_transition_time
                .as_ref()
                .map(|time| time.0.to_string())
                .unwrap_or_default(),
        });
    NodeSummary {
        name: node.name_any(),
        ready,
        unschedulable: node.spec.as_ref().and_then(|spec| spec.unschedulable).unwrap_or(false),
        kubelet_version: status.and_then(|status| status.node_info.as_ref()).map(|info| info.kubelet_version.clone()),
        addresses: status
            .and_then(|status| status.addresses.as_ref())
            .into_iter()
            .flatten()
            .map(|address| format!("{} {}", address.type_, address.address))
            .collect(),
        configured_version: node.annotations().get(wmco_cluster_client::names::VERSION_ANNOTATION).cloned(),
    }
}

/// The approver's facts of a CSR (through its JSON form, as the operator converts it).
fn facts_of(csr: &CertificateSigningRequest) -> Option<CsrFacts> {
    let manifest: CsrManifest = serde_json::to_value(csr).and_then(serde_json::from_value).ok()?;
    CsrFacts::from_manifest(&manifest).ok()
}

/// The kubelet CSRs naming `node_name` (`system:node:<name>`) and their reports; a pending one is decided now in a
/// World built like the operator's: the namespace's records, the Machine of a Machine-backed record, the Node, the
/// other kubelet CSRs.
async fn node_csrs(
    sources: &Sources<'_>,
    namespace: &str,
    record: &WindowsInstance,
    node: Option<&Node>,
    node_name: &str,
    now: Timestamp,
    notes: &mut Vec<String>,
) -> anyhow::Result<(Vec<CertificateSigningRequest>, Vec<CsrReport>)> {
    let listed = sources.csrs.list(&KUBELET_SIGNERS).await?;
    let facts: Vec<(&CertificateSigningRequest, Option<CsrFacts>)> =
        listed.iter().map(|csr| (csr, facts_of(csr))).collect();
    let of_node: Vec<(&CertificateSigningRequest, Option<&CsrFacts>)> = facts
        .iter()
        .map(|(csr, facts)| (*csr, facts.as_ref()))
        .filter(|(_, facts)| facts.is_some_and(|facts| facts.summary().names_node(node_name)))
        .collect();
    if of_node.is_empty() {
        notes.push(format!("no kubelet CSR names system:node:{node_name}"));
        return Ok((Vec::new(), Vec::new()));
    }
    let world: Option<WorldData> = if of_node.iter().any(|(csr, _)| is_pending(csr)) {
        let records = sources.records.list(namespace).await?;
        let mut instances: Vec<_> = records.iter().filter_map(managed_instance).collect();
        if record.spec.origin == InstanceOrigin::Machine {
            match (sources.machines, record.spec.machine_name.as_deref()) {
                (Some(machines), Some(machine_name)) => match machines.get(MACHINE_API_NAMESPACE, machine_name).await {
                    Ok(Some(machine)) => instances.extend(machine_instance(record, &machine)),
                    Ok(None) => notes.push(format!("Machine {machine_name} does not exist")),
                    Err(error) => notes.push(format!("cannot read Machine {machine_name}: {}", with_causes(error))),
                },
                _ => notes.push("the Machine of this record cannot be read: pending CSRs are judged without it".into()),
            }
        }
        let csrs = facts
            .iter()
            .filter_map(|(_, facts)| facts.as_ref().map(CsrFacts::summary))
            .filter(|summary| {
                summary.state == CsrState::Pending
                    || (summary.signer_name == wmco_cluster_client::names::KUBELET_CLIENT_SIGNER
                        && summary.names_node(node_name))
            })
            .collect();
        notes.push(
            "pending CSRs are judged without the service and cluster networks (rule D4 cannot see them from here)"
                .to_owned(),
        );
        Some(WorldData {
            now,
            service_network: Vec::new(),
            cluster_network: Vec::new(),
            instances,
            nodes: node.iter().map(|node| node_record(node)).collect(),
            csrs,
        })
    } else {
        None
    };
    let reports = of_node
        .iter()
        .map(|(csr, facts)| {
            let state = facts.map_or(CsrState::Pending, CsrFacts::state);
            let approver_verdict = match (&world, facts) {
                (Some(world), Some(facts)) if state == CsrState::Pending => {
                    // As the operator decides: the World holds the other CSRs, not the one being decided.
                    let others = world.csrs.iter().filter(|summary| summary.name != facts.name).cloned().collect();
                    Some(decide(facts, &World::new(WorldData { csrs: others, ..world.clone() })).report())
                }
                _ => None,
            };
            CsrReport {
                name: csr.name_any(),
                signer_name: csr.spec.signer_name.clone(),
                requestor: csr.spec.username.clone().unwrap_or_default(),
                created: csr.metadata.creation_timestamp.as_ref().map(|time| time.0.to_string()),
                state: format!("{state:?}"),
                decision: decision_of(csr),
                approver_verdict,
            }
        })
        .collect();
    Ok((of_node.iter().map(|(csr, _)| (*csr).clone()).collect(), reports))
}

/// `Approved: REASON: MESSAGE` of the first decisive condition.
fn decision_of(csr: &CertificateSigningRequest) -> Option<String> {
    let conditions = csr.status.as_ref()?.conditions.as_ref()?;
    let condition =
        conditions.iter().find(|condition| matches!(condition.type_.as_str(), "Approved" | "Denied" | "Failed"))?;
    let mut text = condition.type_.clone();
    for part in [&condition.reason, &condition.message].into_iter().flatten() {
        text.push_str(": ");
        text.push_str(&redact(part));
    }
    Some(text)
}

/// The operator's log lines about record `key` (`namespace/name`), from the pods or a file. Problems reading a pod
/// become notes: a report without log lines is still a report.
async fn operator_log(
    pods: &dyn PodLogs,
    namespace: &str,
    key: &str,
    source: &LogSource,
    notes: &mut Vec<String>,
) -> LogReport {
    let mut report = LogReport::default();
    let mut matched = Vec::new();
    match source {
        LogSource::Text { name, text } => {
            report.sources.push(name.clone());
            matched.extend(text.lines().filter(|line| is_about(line, key)).map(str::to_owned));
        }
        LogSource::Pods => match pods.list_pods(namespace, OPERATOR_POD_SELECTOR).await {
            Ok(listed) if listed.is_empty() => notes.push(format!(
                "no operator pods ({OPERATOR_POD_SELECTOR}) in {namespace}: pass --operator-log FILE to read a saved log"
            )),
            Ok(listed) => {
                for pod in &listed {
                    let pod_name = pod.name_any();
                    let containers = pod.spec.iter().flat_map(|spec| spec.containers.iter());
                    for container in containers {
                        match pods.log(namespace, &pod_name, &container.name, Some(LOG_TAIL_LINES)).await {
                            Ok(text) => {
                                report.sources.push(format!("pod {pod_name} container {}", container.name));
                                matched.extend(text.lines().filter(|line| is_about(line, key)).map(str::to_owned));
                            }
                            Err(error) => notes.push(format!("operator log: {}", with_causes(error))),
                        }
                    }
                }
            }
            Err(error) => notes.push(format!("operator pods: {}", with_causes(error))),
        },
    }
    report.matched = matched.len();
    let keep_from = matched.len().saturating_sub(MAX_LOG_LINES);
    report.lines = matched[keep_from..].iter().map(|line| redact(line)).collect();
    report
}

/// `error` and its causes, `: `-separated.
fn with_causes(error: wmco_cluster_client::Error) -> String {
    format!("{:#}", anyhow::Error::new(error))
}

/// Whether a log line is about record `key`: a JSON line whose `span.instance`, any `spans[].instance`, or
/// `instance` or `object` field (the controllers' failure lines name the record as `object`) is `key`, or a text
/// line carrying `instance=key` or `object=key`.
pub fn is_about(line: &str, key: &str) -> bool {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(line) {
        let is_key = |value: &serde_json::Value| value.as_str() == Some(key);
        return is_key(&value["span"]["instance"])
            || is_key(&value["instance"])
            || is_key(&value["object"])
            || value["spans"].as_array().is_some_and(|spans| spans.iter().any(|span| is_key(&span["instance"])));
    }
    ["instance", "object"].into_iter().any(|field| {
        let needle = format!("{field}={key}");
        line.match_indices(&needle).any(|(index, _)| {
            let before = line[..index].chars().next_back();
            let after = line[index + needle.len()..].chars().next();
            before.is_none_or(|character| !(character.is_ascii_alphanumeric() || character == '_'))
                && after.is_none_or(|character| !(character.is_ascii_alphanumeric() || "-._/".contains(character)))
        })
    })
}

/// The node services on the record's host, read over SSH with `key` (the record's pinned host key is required to
/// match): one state probe per service (a small inline PowerShell script each; nothing is uploaded).
pub async fn probe_services(record: &WindowsInstance, key: &PrivateKey, port: u16) -> ServicesReport {
    let settings = wmco_operator::ssh::SshSettings {
        port,
        client_version_suffix: Some("wmco-diagnose".to_owned()),
        ..wmco_operator::ssh::SshSettings::default()
    };
    let mut report = ServicesReport {
        host: format!("{}@{}:{port}", record.spec.username, record.spec.address),
        services: Vec::new(),
        error: None,
    };
    let mut config = match wmco_operator::ssh::host_config(record, key, &settings) {
        Ok(config) => config,
        Err(error) => {
            report.error = Some(error.to_string());
            return report;
        }
    };
    if !matches!(config.host_key_policy, HostKeyPolicy::Pinned(_)) {
        report.error = Some("the record has no pinned host key yet: the host is not contacted".to_owned());
        return report;
    }
    config.connect_timeout = SSH_TIMEOUT;
    config.io_timeout = SSH_TIMEOUT;
    config.connect_retry = RetryPolicy::never();
    let host = match SshHost::new(config) {
        Ok(host) => host,
        Err(error) => {
            report.error = Some(error.to_string());
            return report;
        }
    };
    for name in node_service_names() {
        let request = ProbeRequest { services: [name.clone()].into(), ..ProbeRequest::default() };
        match probe_one(&host, &request, &name).await {
            Ok(observed) => report.services.push(service_report(&name, observed.as_ref())),
            Err(error) => {
                report.error = Some(error);
                break;
            }
        }
    }
    report
}

/// Runs `request` (one service) on `host` and returns what it found of `name`.
async fn probe_one(
    host: &SshHost,
    request: &ProbeRequest,
    name: &ServiceName,
) -> Result<Option<ObservedService>, String> {
    let rendered = request.script().render().map_err(|error| format!("probe of {name}: {error}"))?;
    if rendered.script_file.is_some() {
        return Err(format!("the probe of {name} does not fit on one command line; not uploading a script"));
    }
    let output = host
        .run_checked(&RemoteCommand::new(rendered.line, SSH_TIMEOUT))
        .await
        .map_err(|error| format!("probe of {name}: {error}"))?;
    let mut observed =
        request.parse_output(&output.stdout_text()).map_err(|error| format!("probe of {name}: {error}"))?;
    Ok(observed.services.remove(name))
}

/// The services of a Windows node (their names do not depend on the node's inputs) and the Go operator's daemon.
fn node_service_names() -> Vec<ServiceName> {
    // Only the names are read; the other inputs shape command lines this probe never uses.
    let inputs = NodeInputs {
        node_ip: std::net::Ipv4Addr::UNSPECIFIED,
        node_name: "node".to_owned(),
        api_server_url: "https://api-int.invalid:6443".to_owned(),
        platform: Platform::None,
        verbosity: Verbosity::Normal,
        log_rotation: LogRotation::default(),
        hybrid_overlay_vxlan_port: None,
        cloud_provider: None,
        cloud_config: None,
        proxy: Default::default(),
    };
    let mut names: Vec<ServiceName> =
        node_services(&inputs).into_iter().flatten().map(|service| service.spec.name).collect();
    names.extend(ServiceName::new(LEGACY_DAEMON_SERVICE).ok());
    names
}

fn service_report(name: &ServiceName, observed: Option<&ObservedService>) -> ServiceReport {
    let text =
        |value: serde_json::Result<serde_json::Value>| value.ok().and_then(|value| value.as_str().map(str::to_owned));
    ServiceReport {
        name: name.as_str().to_owned(),
        installed: observed.is_some(),
        state: observed.and_then(|service| service.state).and_then(|state| text(serde_json::to_value(state))),
        start_type: observed.and_then(|service| service.start).and_then(|start| text(serde_json::to_value(start))),
        process_id: observed.and_then(|service| service.process_id).filter(|pid| *pid != 0),
    }
}

/// The report for people.
pub fn render_human(diagnosis: &Diagnosis) -> String {
    let summary = &diagnosis.summary;
    let record = &diagnosis.record;
    let mut text = format!(
        "WindowsInstance {}/{} ({}, address {}, user {})\n",
        diagnosis.namespace, summary.name, summary.origin, summary.address, record.spec.username
    );
    text.push_str(&format!(
        "  phase {}, node {}, version {}{}\n",
        dash(summary.phase.as_deref()),
        dash(summary.node.as_deref()),
        dash(summary.configured_version.as_deref()),
        record.deleting_since.as_deref().map(|since| format!(", being removed since {since}")).unwrap_or_default()
    ));
    // Ready, Progressing and Degraded first, then the specific conditions.
    let mut conditions: Vec<ConditionSummary> =
        record.status.iter().flat_map(|status| status.conditions.iter()).map(ConditionSummary::of).collect();
    let summary_rank = |type_: &str| {
        [READY_CONDITION, PROGRESSING_CONDITION, DEGRADED_CONDITION].iter().position(|summary| *summary == type_)
    };
    conditions.sort_by_key(|condition| summary_rank(&condition.type_).unwrap_or(usize::MAX));
    let rows: Vec<[String; 4]> = conditions
        .into_iter()
        .map(|condition| [format!("  {}", condition.type_), condition.status, condition.reason, condition.message])
        .collect();
    text.push_str(&table(&rows));
    if let Some(error) = &summary.last_error {
        text.push_str(&format!("  last error: {error}\n"));
    }

    text.push('\n');
    match &diagnosis.node {
        Some(node) => {
            let ready = node.ready.as_ref().map_or_else(
                || "Ready unknown".to_owned(),
                |ready| format!("Ready {} ({})", ready.status, dash(Some(&ready.reason))),
            );
            text.push_str(&format!(
                "Node {}: {ready}{}, kubelet {}, version {}, {}\n",
                node.name,
                if node.unschedulable { ", cordoned" } else { "" },
                dash(node.kubelet_version.as_deref()),
                dash(node.configured_version.as_deref()),
                if node.addresses.is_empty() { "no addresses".to_owned() } else { node.addresses.join(", ") }
            ));
        }
        None => text.push_str(&format!("Node: none ({})\n", dash(summary.node.as_deref()))),
    }

    text.push_str("\nEvents (oldest first):\n");
    if diagnosis.events.is_empty() {
        text.push_str("  none\n");
    }
    for event in &diagnosis.events {
        text.push_str(&format!("  {} {}: {}\n", dash(event.last_seen.as_deref()), event.regarding, event.text()));
    }

    text.push_str(&format!("\nCSRs naming system:node:{}:\n", dash(summary.node.as_deref())));
    if diagnosis.csrs.is_empty() {
        text.push_str("  none\n");
    }
    for csr in &diagnosis.csrs {
        let outcome = match (&csr.decision, &csr.approver_verdict) {
            (Some(decision), _) => decision.clone(),
            (None, Some(verdict)) => match verdict.rule {
                Some(rule) => format!("Pending; approver: {} {rule}: {}", verdict.verdict, verdict.reason),
                None => format!("Pending; approver: {}: {}", verdict.verdict, verdict.reason),
            },
            (None, None) => csr.state.clone(),
        };
        text.push_str(&format!("  {} {} (by {}): {outcome}\n", csr.name, csr.signer_name, csr.requestor));
    }

    let log = &diagnosis.operator_log;
    text.push_str(&format!(
        "\nOperator log ({} of {} lines about {}/{}; from {}):\n",
        log.lines.len(),
        log.matched,
        diagnosis.namespace,
        summary.name,
        if log.sources.is_empty() { "nowhere".to_owned() } else { log.sources.join(", ") }
    ));
    for line in &log.lines {
        text.push_str(&format!("  {line}\n"));
    }

    if let Some(services) = &diagnosis.services {
        text.push_str(&format!("\nServices on {}:\n", services.host));
        let rows: Vec<[String; 4]> = services
            .services
            .iter()
            .map(|service| {
                [
                    format!("  {}", service.name),
                    if service.installed { dash(service.state.as_deref()) } else { "not installed".to_owned() },
                    dash(service.start_type.as_deref()),
                    service.process_id.map(|pid| format!("pid {pid}")).unwrap_or_default(),
                ]
            })
            .collect();
        text.push_str(&table(&rows));
        if let Some(error) = &services.error {
            text.push_str(&format!("  could not probe: {error}\n"));
        }
    }

    if !diagnosis.notes.is_empty() {
        text.push_str("\nNotes:\n");
        for note in &diagnosis.notes {
            text.push_str(&format!("  - {note}\n"));
        }
    }
    text
}

/// `object` as YAML without `metadata.managedFields`, redacted.
fn object_yaml<T: Serialize>(object: &T) -> anyhow::Result<String> {
    let mut value = serde_json::to_value(object)?;
    if let Some(metadata) = value.get_mut("metadata").and_then(serde_json::Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    Ok(redact(&serde_saphyr::to_string(&value).context("cannot write an object as YAML")?))
}

/// A YAML `List` of `objects`.
fn list_yaml<T: Serialize>(objects: &[T]) -> anyhow::Result<String> {
    let mut items = Vec::new();
    for object in objects {
        let mut value = serde_json::to_value(object)?;
        if let Some(metadata) = value.get_mut("metadata").and_then(serde_json::Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        items.push(value);
    }
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    Ok(redact(&serde_saphyr::to_string(&list).context("cannot write a list as YAML")?))
}

/// The archive's files: path inside the tarball and contents.
pub fn archive_files(gathered: &Gathered) -> anyhow::Result<Vec<(String, String)>> {
    let name = &gathered.diagnosis.summary.name;
    let mut files = vec![
        (format!("{name}/report.txt"), render_human(&gathered.diagnosis)),
        (format!("{name}/report.json"), render(OutputFormat::Json, KIND, &gathered.diagnosis, String::new)?),
        (format!("{name}/windowsinstance.yaml"), object_yaml(&gathered.record)?),
        (format!("{name}/events.yaml"), list_yaml(&gathered.events)?),
        (format!("{name}/csrs.yaml"), list_yaml(&gathered.csrs)?),
        (
            format!("{name}/operator-log.txt"),
            gathered.diagnosis.operator_log.lines.iter().map(|line| format!("{line}\n")).collect(),
        ),
    ];
    if let Some(node) = &gathered.node {
        files.push((format!("{name}/node.yaml"), object_yaml(node)?));
    }
    Ok(files)
}

/// Writes `files` into a gzip-compressed tarball at `path`, readable by its owner only (mode 0600): the tarball goes
/// into a new file created with that mode beside `path` and is renamed over it, so `path` never holds a partial
/// archive, nor one others could read (an existing file keeps its mode when truncated, a renamed one does not).
pub fn write_archive(path: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    let mut staging_name = path.file_name().unwrap_or_default().to_os_string();
    staging_name.push(format!(".{}.partial", std::process::id()));
    let staging = path.with_file_name(staging_name);
    let written = write_tarball(&staging, files)
        .and_then(|()| std::fs::rename(&staging, path).with_context(|| format!("cannot write {}", path.display())));
    if written.is_err() {
        // Best effort: the error that matters is the one returned.
        let _ = std::fs::remove_file(&staging);
    }
    written
}

/// Writes `files` into a gzip-compressed tarball at `path`, a new file created with mode 0600.
fn write_tarball(path: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create --archive {}", path.display()))?;
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(file, flate2::Compression::default()));
    let mtime = u64::try_from(Timestamp::now().as_second()).unwrap_or_default();
    for (name, contents) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(contents.len() as u64);
        header.set_mode(0o600);
        header.set_mtime(mtime);
        header.set_cksum();
        builder
            .append_data(&mut header, name, contents.as_bytes())
            .with_context(|| format!("cannot write {name} into {}", path.display()))?;
    }
    builder
        .into_inner()
        .and_then(|encoder| encoder.finish())
        .and_then(|file| file.sync_all())
        .with_context(|| format!("cannot finish {}", path.display()))?;
    Ok(())
}

/// Gathers the report, probes the host with `--ssh-key`, prints the report and writes the archive.
pub fn run(args: &DiagnoseArgs) -> anyhow::Result<Outcome> {
    let key = match &args.ssh_key {
        Some(path) => Some(
            PrivateKey::from_file(path)
                .map_err(|error| UnusableInput(format!("--ssh-key {}: {error}", path.display())))?,
        ),
        None => None,
    };
    let log_source = match &args.operator_log {
        Some(path) => LogSource::Text {
            name: path.display().to_string(),
            text: std::fs::read_to_string(path)
                .map_err(|error| UnusableInput(format!("cannot read --operator-log {}: {error}", path.display())))?,
        },
        None => LogSource::Pods,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let gathered = runtime.block_on(async {
        let client = args.cluster.client().await?;
        let (records, nodes, csrs) =
            (KubeInstanceRecords::new(client.clone()), KubeNodes::new(client.clone()), KubeCsrs::new(client.clone()));
        let (machines, events, pods) = (
            KubeMachines::new(client.clone()),
            KubeEventHistory::new(client.clone()),
            KubePodLogs::new(client.clone()),
        );
        let serves_machine_api = wmco_cluster_client::serves_machine_api(&client).await.unwrap_or(false);
        let sources = Sources {
            records: &records,
            nodes: &nodes,
            csrs: &csrs,
            machines: serves_machine_api.then_some(&machines as &dyn Machines),
            events: &events,
            pods: &pods,
        };
        let mut gathered =
            gather(&sources, &args.cluster.namespace, &args.instance, &log_source, Timestamp::now()).await?;
        if let Some(key) = &key {
            gathered.diagnosis.services = Some(probe_services(&gathered.record, key, args.ssh_port).await);
        }
        anyhow::Ok(gathered)
    })?;
    print_stdout(&render(args.output.format, KIND, &gathered.diagnosis, || render_human(&gathered.diagnosis))?)?;
    if let Some(path) = &args.archive {
        write_archive(path, &archive_files(&gathered)?)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(Outcome::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::status::tests::failing_fleet;
    use k8s_openapi::api::core::v1::{Container, ObjectReference, Pod, PodSpec};
    use wmco_cluster_client::fake::{FakeCsrs, FakeEvents, FakeInstanceRecords, FakeNodes, FakePodLogs, objects};
    use wmco_cluster_client::types::InstancePhase;
    use wmco_cluster_client::{EventPublisher, NewEvent, Severity};

    const NAMESPACE: &str = "wmco";
    const NOW: &str = "2026-11-22T12:00:00Z";

    struct Fakes {
        records: FakeInstanceRecords,
        events: FakeEvents,
        nodes: FakeNodes,
        csrs: FakeCsrs,
        pods: FakePodLogs,
    }

    impl Fakes {
        fn sources(&self) -> Sources<'_> {
            Sources {
                records: &self.records,
                nodes: &self.nodes,
                csrs: &self.csrs,
                machines: None,
                events: &self.events,
                pods: &self.pods,
            }
        }
    }

    async fn failing() -> Fakes {
        let (records, events) = failing_fleet().await;
        Fakes { records, events, nodes: FakeNodes::default(), csrs: FakeCsrs::default(), pods: FakePodLogs::default() }
    }

    #[test]
    fn log_lines_are_matched_by_the_record_s_key_only() {
        let key = "wmco/byoh-10-0-0-6";
        assert!(is_about(r#"{"message":"m","span":{"instance":"wmco/byoh-10-0-0-6","step":"probe"}}"#, key));
        assert!(is_about(r#"{"message":"m","spans":[{"name":"reconcile","instance":"wmco/byoh-10-0-0-6"}]}"#, key));
        assert!(is_about(r#"{"message":"m","instance":"wmco/byoh-10-0-0-6"}"#, key));
        assert!(is_about(r#"{"message":"reconcile failed","object":"wmco/byoh-10-0-0-6"}"#, key));
        assert!(is_about(r#"WARN reconcile failed controller="instances" object=wmco/byoh-10-0-0-6 kind=flow"#, key));
        assert!(!is_about(r#"WARN reconcile failed other_object=wmco/byoh-10-0-0-6"#, key));
        assert!(!is_about(r#"{"message":"wmco/byoh-10-0-0-6","span":{"instance":"wmco/byoh-10-0-0-60"}}"#, key));
        assert!(is_about("INFO reconcile{instance=wmco/byoh-10-0-0-6 host=10.0.0.6}: probing", key));
        assert!(is_about("INFO reconcile{instance=wmco/byoh-10-0-0-6}: probing", key));
        assert!(!is_about("INFO reconcile{instance=wmco/byoh-10-0-0-60 host=10.0.0.60}: probing", key));
        assert!(!is_about("INFO unrelated line", key));
    }

    #[test]
    fn the_archive_is_readable_by_its_owner_only_even_over_an_existing_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let files = [("win/report.txt".to_owned(), "report\n".to_owned())];
        let fresh = dir.path().join("fresh.tar.gz");
        let existing = dir.path().join("existing.tar.gz");
        std::fs::write(&existing, "an older archive").unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o644)).unwrap();
        for path in [&fresh, &existing] {
            write_archive(path, &files).unwrap();
            let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{} has mode {mode:o}", path.display());
        }
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["existing.tar.gz", "fresh.tar.gz"], "no staging file is left");
        let unwritable = dir.path().join("missing-directory").join("a.tar.gz");
        let error = write_archive(&unwritable, &files).unwrap_err();
        assert!(format!("{error:#}").contains("cannot create --archive"), "{error:#}");
    }

    #[tokio::test]
    async fn a_failing_host_without_a_node_is_explained_by_its_record_events_and_log_lines() {
        let fakes = failing().await;
        let log = [
            r#"{"level":"WARN","message":"configure failed: Authorization: Bearer abc.def","span":{"instance":"wmco/byoh-10-0-0-6"}}"#,
            "WARN reconcile{instance=wmco/byoh-10-0-0-6 host=10.0.0.6 step=pin_host_key}: unreachable",
            "INFO reconcile{instance=wmco/byoh-10-0-0-5 host=10.0.0.5}: ready",
        ]
        .join("\n");
        let source = LogSource::Text { name: "operator.log".into(), text: log };
        let gathered =
            gather(&fakes.sources(), NAMESPACE, "byoh-10-0-0-6", &source, NOW.parse().unwrap()).await.unwrap();
        let diagnosis = &gathered.diagnosis;
        assert!(diagnosis.summary.needs_attention());
        assert_eq!(diagnosis.events.len(), 2);
        assert_eq!(diagnosis.operator_log.matched, 2);
        assert_eq!(diagnosis.operator_log.sources, ["operator.log"]);
        assert!(diagnosis.operator_log.lines[0].contains("Authorization: [REDACTED] [REDACTED]"), "{diagnosis:?}");
        assert!(diagnosis.node.is_none() && diagnosis.csrs.is_empty());
        assert_eq!(diagnosis.notes, ["no Node name decided yet: the operator has not read the host's identity"]);

        let text = render_human(diagnosis);
        assert!(
            text.starts_with("WindowsInstance wmco/byoh-10-0-0-6 (Byoh, address 10.0.0.6, user admin)\n"),
            "{text}"
        );
        let conditions: Vec<&str> = text.lines().skip(2).take(3).collect();
        assert_eq!(
            conditions,
            [
                "  Ready                  False   Configuring          Installing the payload, configuration and services on the host.",
                "  Progressing            True    Configuring          Installing the payload, configuration and services on the host.",
                "  Degraded               True    RetryingAfterError   host Administrator@10.0.0.6:22: pin_host_key failed: unreachable The operator retries with backoff.",
            ]
        );
        assert!(text.contains("  last error: host Administrator@10.0.0.6:22: pin_host_key failed: unreachable\n"));
        assert!(text.contains("\nNode: none (-)\n"), "{text}");
        assert!(text.contains("WindowsInstance byoh-10-0-0-6: Warning InstanceSetupFailure: first try failed\n"));
        assert!(text.contains("\nOperator log (2 of 2 lines about wmco/byoh-10-0-0-6; from operator.log):\n"));

        let json: serde_json::Value =
            serde_json::from_str(&render(OutputFormat::Json, KIND, diagnosis, String::new).unwrap()).unwrap();
        assert_eq!(json["kind"], "Diagnosis");
        assert_eq!(json["record"]["spec"]["address"], "10.0.0.6");
        assert_eq!(json["summary"]["conditions"][2]["reason"], "RetryingAfterError");
        assert_eq!(json["operatorLog"]["matched"], 2);

        let error = gather(&fakes.sources(), NAMESPACE, "byoh-nope", &source, NOW.parse().unwrap()).await.unwrap_err();
        assert!(error.is::<UnusableInput>(), "{error:#}");
        assert_eq!(
            error.to_string(),
            "no WindowsInstance byoh-nope in namespace wmco; `wmco status -n wmco` lists the records"
        );
    }

    fn example_csr() -> CertificateSigningRequest {
        let text = include_str!("../../../../crates/csr-approver/tests/fixtures/csr-example.yaml");
        serde_saphyr::from_str(text).unwrap()
    }

    fn operator_pod(name: &str) -> Pod {
        Pod {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                namespace: Some(NAMESPACE.into()),
                labels: Some(
                    [("app.kubernetes.io/name".to_owned(), "windows-machine-config-operator".to_owned())].into(),
                ),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container { name: "wmco".into(), ..Default::default() }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn the_node_s_csrs_carry_their_decision_or_the_approver_s_verdict_and_the_archive_holds_every_object() {
        let fakes = Fakes {
            records: FakeInstanceRecords::default(),
            events: FakeEvents::default(),
            nodes: FakeNodes::default(),
            csrs: FakeCsrs::default(),
            pods: FakePodLogs::default(),
        };
        let record = objects::record("byoh-10-0-0-5").in_namespace(NAMESPACE).byoh("10.0.0.5").build();
        fakes.records.apply(&record).await.unwrap();
        let mut status = objects::status().phase(InstancePhase::WaitingForNode).expected_node_name("win-1").build();
        status.summarize(Some(1), NOW.parse().unwrap());
        fakes.records.apply_status(NAMESPACE, "byoh-10-0-0-5", &status).await.unwrap();
        fakes.nodes.insert(objects::windows_node("win-1").ready().build());
        let pending = example_csr();
        let mut approved = objects::CsrBuilder::from(example_csr()).approved_and_issued("cert").build();
        approved.metadata.name = Some("csr-approved".into());
        fakes.csrs.insert(pending);
        fakes.csrs.insert(approved);
        let node = ObjectReference { kind: Some("Node".into()), name: Some("win-1".into()), ..Default::default() };
        let event =
            NewEvent { severity: Severity::Normal, reason: "NodeReady".into(), action: "Watch".into(), note: None };
        fakes.events.publish(&node, &event).await.unwrap();
        fakes.pods.insert(operator_pod("wmco-a"), "wmco", "INFO reconcile{instance=wmco/byoh-10-0-0-5}: waiting\n");
        let mut no_log = operator_pod("wmco-b");
        no_log.spec = Some(PodSpec {
            containers: vec![Container { name: "other".into(), ..Default::default() }],
            ..Default::default()
        });
        fakes.pods.insert(no_log, "wmco", "");

        let gathered =
            gather(&fakes.sources(), NAMESPACE, "byoh-10-0-0-5", &LogSource::Pods, NOW.parse().unwrap()).await.unwrap();
        let diagnosis = &gathered.diagnosis;
        assert_eq!(diagnosis.node.as_ref().map(|node| node.name.as_str()), Some("win-1"));
        assert_eq!(diagnosis.events.iter().map(|event| event.regarding.as_str()).collect::<Vec<_>>(), ["Node win-1"]);
        let names: Vec<&str> = diagnosis.csrs.iter().map(|csr| csr.name.as_str()).collect();
        assert_eq!(names, ["csr-7xk2q", "csr-approved"]);
        let (pending, approved) = (&diagnosis.csrs[0], &diagnosis.csrs[1]);
        assert_eq!(pending.state, "Pending");
        let verdict = pending.approver_verdict.as_ref().expect("a pending CSR gets the approver's verdict");
        assert!(["approve", "deny", "ignore"].contains(&verdict.verdict), "{verdict:?}");
        assert_eq!(approved.state, "Approved");
        assert_eq!(
            approved.decision.as_deref(),
            Some("Approved: KubectlApprove: This CSR was approved by kubectl certificate approve.")
        );
        assert!(approved.approver_verdict.is_none());
        assert_eq!(diagnosis.operator_log.sources, ["pod wmco-a container wmco"]);
        assert_eq!(diagnosis.operator_log.lines, ["INFO reconcile{instance=wmco/byoh-10-0-0-5}: waiting"]);
        assert!(
            diagnosis
                .notes
                .iter()
                .any(|note| note.starts_with("operator log: read the log of Pod wmco/wmco-b container other failed: ")),
            "{:?}",
            diagnosis.notes
        );
        let text = render_human(diagnosis);
        assert!(text.contains("\nNode win-1: Ready True"), "{text}");
        assert!(
            text.contains(&format!(
                "  csr-7xk2q kubernetes.io/kube-apiserver-client-kubelet (by {}): Pending; approver: {}",
                pending.requestor, verdict.verdict
            )),
            "{text}"
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("diagnosis.tar.gz");
        write_archive(&path, &archive_files(&gathered).unwrap()).unwrap();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()));
        let mut entries = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let mut contents = String::new();
            std::io::Read::read_to_string(&mut entry, &mut contents).unwrap();
            entries.push((entry.path().unwrap().display().to_string(), contents));
        }
        let names: Vec<&str> = entries.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "byoh-10-0-0-5/report.txt",
                "byoh-10-0-0-5/report.json",
                "byoh-10-0-0-5/windowsinstance.yaml",
                "byoh-10-0-0-5/events.yaml",
                "byoh-10-0-0-5/csrs.yaml",
                "byoh-10-0-0-5/operator-log.txt",
                "byoh-10-0-0-5/node.yaml",
            ]
        );
        let csrs: serde_json::Value = serde_saphyr::from_str(&entries[4].1).unwrap();
        assert_eq!(csrs["items"].as_array().map(Vec::len), Some(2));
        assert!(entries[2].1.contains("name: byoh-10-0-0-5"), "{}", entries[2].1);
    }
}
