//! BYOH e2e scenarios 3–9 of issue #9: hosts leave the cluster, bad and unreachable entries, a changed host key,
//! CSRs the operator must deny or leave alone, a crash in the middle of configuring, and the ConfigMap deleted.
//!
//! The operator runs as its own process with its manifests' ServiceAccount (see `wmco-sandbox`); the test plays
//! OVN (the sandbox) and the scheduler ([`Scheduler`]), and keeps a Deployment with a PodDisruptionBudget on the
//! Windows nodes ([`Workload`]). Two sandboxes, one after the other (each costs a control plane and a fleet):
//! - `hosts_leave_and_bad_entries_are_refused`: three hosts; scenario 3 (one entry removed), 9 (the ConfigMap
//!   deleted), 4 (a new ConfigMap: bad entries beside the good ones, every host configured again);
//! - `failures_are_contained_and_a_crash_converges`: two hosts plus added ones; scenario 5 (an unreachable host),
//!   6 (a host key changed), 7 (CSRs for a Windows and a Linux node), 8 (SIGKILL while configuring), and last the
//!   end of 6: the Failed record stays put (no rewrite, no new attempt while the node's Lease is renewed twice).
//!
//! Every wait is an `eventually` with a generous bound; nothing asserts a duration.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, SanType};
use serde_json::json;
use winhost_sim::fleet::NewHost;
use winhost_sim::scm::State;
use winhost_sim::ssh::{Faults, lock};
use wmco_cluster_client::types::{InstancePhase, WindowsInstance};
use wmco_instance_inventory::instance_name;
use wmco_sandbox::workload::{AvailabilityWatch, Scheduler, Workload, WorkloadSpec, node_of};
use wmco_sandbox::{HOST_USER, INSTANCES_CONFIG_MAP, OPERATOR_NAMESPACE, Sandbox, SandboxOptions, node_is_ready};

/// How long a fleet may take to turn Ready.
const READY_TIMEOUT: Duration = Duration::from_secs(900);
/// How long the operator may take to react to one change (a drain waits for replacement pods).
const REACTION_TIMEOUT: Duration = Duration::from_secs(300);
/// The services the operator installs on a host (no cloud: no cloud-node-manager).
const MANAGED_SERVICES: [&str; 6] =
    ["containerd", "kubelet", "hybrid-overlay-node", "kube-proxy", "csi-proxy", "windows_exporter"];
/// The firewall rules a Ready node has (the Go operator's names), sorted; deconfiguration removes them.
const FIREWALL_RULES: [&str; 2] = ["ContainerLogsPort", "WindowsExporter"];
/// The process exclusion a node gets while Defender runs (it does on every simulated host).
const CONTAINERD_EXCLUSION: &str = r"C:\k\containerd\containerd.exe";
/// Directories deconfiguration removes (a sample: the payload and the kubelet's state).
const REMOVED_DIRECTORIES: [&str; 2] = ["k", "var/lib/kubelet"];
/// The suffix of an upload's staging file (ssh-transport writes `<path>.wmco-upload`, then renames it).
const STAGING_SUFFIX: &str = ".wmco-upload";
/// The kubelet serving signer.
const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// The workload's namespace and shape.
const WORKLOAD_NAMESPACE: &str = "byoh-workload";

/// One sandbox at a time: the machine has two cores.
static ONE_SANDBOX_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn scenario(number: u8, title: &str) {
    eprintln!("\n=== scenario {number}: {title}");
}

fn step(text: &str) {
    eprintln!("--- {text}");
}

// ---- reading the cluster and the hosts -------------------------------------------------------------------------

/// The record of the entry `key`, if it exists.
async fn record(sandbox: &Sandbox, key: &str) -> anyhow::Result<Option<WindowsInstance>> {
    let name = instance_name(key);
    Ok(sandbox.windows_instances().await?.into_iter().find(|record| record.metadata.name.as_deref() == Some(&name)))
}

fn phase_of(record: &WindowsInstance) -> Option<InstancePhase> {
    record.status.as_ref().and_then(|status| status.phase)
}

fn node_name_of(record: &WindowsInstance) -> anyhow::Result<String> {
    record
        .status
        .as_ref()
        .and_then(|status| status.expected_node_name.clone())
        .with_context(|| format!("record {:?} has no expected node name", record.metadata.name))
}

/// The names of the managed services on host `name`, with their states.
async fn managed_services(sandbox: &Sandbox, name: &str) -> anyhow::Result<BTreeMap<String, State>> {
    Ok(sandbox
        .services(name)
        .await?
        .into_iter()
        .filter(|service| MANAGED_SERVICES.contains(&service.name.as_str()))
        .map(|service| (service.name, service.state))
        .collect())
}

/// Every managed service installed exactly once and running.
async fn assert_all_services_running(sandbox: &Sandbox, name: &str) -> anyhow::Result<()> {
    let services = sandbox.services(name).await?;
    let names: Vec<&str> = services.iter().map(|service| service.name.as_str()).collect();
    let distinct: BTreeSet<&str> = names.iter().copied().collect();
    ensure!(names.len() == distinct.len(), "host {name}: duplicate services in {names:?}");
    let managed = managed_services(sandbox, name).await?;
    let expected: BTreeMap<String, State> =
        MANAGED_SERVICES.iter().map(|service| ((*service).to_owned(), State::Running)).collect();
    ensure!(managed == expected, "host {name}: managed services {managed:?}");
    Ok(())
}

/// The directory backing host `name`'s `C:` drive.
async fn c_drive(sandbox: &Sandbox, name: &str) -> anyhow::Result<PathBuf> {
    Ok(sandbox.fleet().lock().await.info(name)?.c_drive)
}

/// Every file under `root` whose name ends with `suffix`.
fn files_ending_with(root: &Path, suffix: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).with_context(|| format!("read {}", directory.display()))? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().ends_with(suffix) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `client: line` of every command host `name` ran.
async fn command_lines(sandbox: &Sandbox, name: &str) -> anyhow::Result<Vec<String>> {
    let commands = sandbox.command_log(name).await?;
    Ok(commands.into_iter().map(|command| format!("{}: {}", command.client, command.line)).collect())
}

/// The lines of the commands the operator sent to host `name`.
async fn operator_lines(sandbox: &Sandbox, name: &str) -> anyhow::Result<Vec<String>> {
    Ok(sandbox.operator_commands(name).await?.into_iter().map(|command| command.line).collect())
}

/// Merges an annotation into a record, so the controller reconciles it.
async fn touch_record(sandbox: &Sandbox, key: &str, value: &str) -> anyhow::Result<()> {
    let records: Api<WindowsInstance> = Api::namespaced(sandbox.admin_client(), OPERATOR_NAMESPACE);
    let patch = json!({"metadata": {"annotations": {"e2e.wmco.test/touched": value}}});
    records.patch(&instance_name(key), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

/// Adds a simulated host on `address` authorizing the sandbox's key; returns its name.
async fn add_host(sandbox: &Sandbox, address: Ipv4Addr) -> anyhow::Result<String> {
    let request = NewHost {
        authorized_key: Some(sandbox.admin_key().public_line().to_owned()),
        address: Some(address),
        ..NewHost::default()
    };
    Ok(sandbox.fleet().lock().await.add(request).await?.name)
}

async fn set_faults(sandbox: &Sandbox, name: &str, faults: Faults) -> anyhow::Result<()> {
    *lock(&sandbox.server(name).await?.faults) = faults;
    Ok(())
}

fn entry_value() -> String {
    format!("username={HOST_USER}")
}

/// Waits until the workload has `replicas` available pods; returns them by node.
async fn wait_available(
    sandbox: &Sandbox,
    workload: &Workload,
    replicas: usize,
) -> anyhow::Result<BTreeMap<String, usize>> {
    Ok(sandbox
        .wait_for(&format!("{replicas} available workload pods"), REACTION_TIMEOUT, || async {
            let by_node = workload.available_by_node().await?;
            ensure!(by_node.values().sum::<usize>() == replicas, "available by node: {by_node:?}");
            Ok(by_node)
        })
        .await?)
}

async fn wait_listening(sandbox: &Sandbox, availability: &AvailabilityWatch, replicas: usize) -> anyhow::Result<()> {
    Ok(sandbox
        .wait_for("the availability watch to list the pods", REACTION_TIMEOUT, || async {
            ensure!(availability.current() == Some(replicas), "current {:?}", availability.current());
            Ok(())
        })
        .await?)
}

// ---- sandbox 1: scenarios 3, 9, 4 -------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_leave_and_bad_entries_are_refused() -> anyhow::Result<()> {
    let _one_at_a_time = ONE_SANDBOX_AT_A_TIME.lock().await;
    let sandbox = Sandbox::start(SandboxOptions { hosts: 3, ..SandboxOptions::default() }).await?;
    let scheduler = Scheduler::start(sandbox.admin_client());
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let ready = sandbox.wait_until_ready(3, READY_TIMEOUT).await?;
    let node_names: Vec<String> = ready.iter().map(|ready| node_name_of(&ready.instance)).collect::<Result<_, _>>()?;
    step(&format!("three hosts Ready as nodes {node_names:?}; deploying 6 replicas, minAvailable 5"));
    let spec = WorkloadSpec { namespace: WORKLOAD_NAMESPACE.into(), name: "web".into(), replicas: 6, min_available: 5 };
    let workload = Workload::deploy(sandbox.admin_client(), spec).await?;
    let placed = wait_available(&sandbox, &workload, 6).await?;
    let expected: BTreeMap<String, usize> = node_names.iter().map(|name| (name.clone(), 2)).collect();
    assert_eq!(placed, expected, "round-robin over three Ready nodes");

    let removed = sandbox.hosts()[1].clone();
    let kept = [sandbox.hosts()[0].clone(), sandbox.hosts()[2].clone()];
    one_entry_removed(&sandbox, &workload, &removed, &kept).await?;
    config_map_deleted(&sandbox, &workload).await?;
    bad_entries_beside_good_ones(&sandbox, &workload).await?;
    assert_eq!(scheduler.problems(), Vec::<String>::new());
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// Scenario 3: one entry removed → that host drained within the budget, deconfigured, its Node gone; the others
/// untouched.
async fn one_entry_removed(
    sandbox: &Sandbox,
    workload: &Workload,
    removed: &wmco_sandbox::SandboxHost,
    kept: &[wmco_sandbox::SandboxHost],
) -> anyhow::Result<()> {
    scenario(3, &format!("entry {} removed: drained within the budget, deconfigured, Node gone", removed.key));
    let removed_record = record(sandbox, &removed.key).await?.context("no record for the removed host")?;
    let removed_node = node_name_of(&removed_record)?;
    let pods_on_removed: Vec<String> = workload
        .pods()
        .await?
        .iter()
        .filter(|pod| node_of(pod) == Some(removed_node.as_str()))
        .filter_map(|pod| pod.metadata.name.clone())
        .collect();
    assert_eq!(pods_on_removed.len(), 2, "pods on {removed_node}: {pods_on_removed:?}");
    assert_eq!(managed_services(sandbox, &removed.info.name).await?.len(), MANAGED_SERVICES.len());
    let mut rules = sandbox.firewall_rules(&removed.info.name).await?;
    rules.sort();
    assert_eq!(rules, FIREWALL_RULES, "the node's firewall rules before removal");
    assert_eq!(
        sandbox.defender_exclusions(&removed.info.name).await?,
        [CONTAINERD_EXCLUSION],
        "containerd's Defender exclusion before removal"
    );
    let drive = c_drive(sandbox, &removed.info.name).await?;
    for directory in REMOVED_DIRECTORIES {
        assert!(drive.join(directory).is_dir(), "{directory} missing before removal");
    }

    // What the kept hosts look like before: their last command is the converged host's state probe.
    let mut kept_before = Vec::new();
    for host in kept {
        let lines = operator_lines(sandbox, &host.info.name).await?;
        let probe = lines.last().cloned().context("no operator command on a Ready host")?;
        kept_before.push((host.clone(), lines.len(), probe, managed_services(sandbox, &host.info.name).await?));
    }
    let availability = workload.watch_availability();
    wait_listening(sandbox, &availability, 6).await?;

    sandbox.remove_instance_entry(&removed.key).await?;
    sandbox
        .wait_for("the removed host's record and Node gone", REACTION_TIMEOUT, || async {
            let record = record(sandbox, &removed.key).await?;
            let nodes: Vec<String> =
                sandbox.windows_nodes().await?.into_iter().filter_map(|node| node.metadata.name).collect();
            ensure!(record.is_none(), "record still there: phase {:?}", record.as_ref().and_then(phase_of));
            ensure!(!nodes.contains(&removed_node), "Node {removed_node} still there: {nodes:?}");
            Ok(())
        })
        .await?;
    let by_node = wait_available(sandbox, workload, 6).await?;
    assert!(!by_node.contains_key(&removed_node), "pods still on {removed_node}: {by_node:?}");
    let remaining: Vec<String> = workload.pods().await?.iter().filter_map(|pod| pod.metadata.name.clone()).collect();
    for evicted in &pods_on_removed {
        assert!(!remaining.contains(evicted), "pod {evicted} was not evicted: {remaining:?}");
    }
    step(&format!("availability during the drain: {:?}", availability.history()));
    assert_eq!(availability.errors(), Vec::<String>::new());
    assert_eq!(availability.lowest(), Some(5), "minAvailable 5 never broken");
    assert_eq!(availability.history(), [6, 5, 6, 5, 6], "one eviction at a time, each replaced first");

    // The host is clean: services stopped and deleted, firewall rules and directories removed.
    assert_eq!(managed_services(sandbox, &removed.info.name).await?, BTreeMap::new());
    assert_eq!(sandbox.firewall_rules(&removed.info.name).await?, Vec::<String>::new());
    assert_eq!(sandbox.defender_exclusions(&removed.info.name).await?, Vec::<String>::new());
    for directory in REMOVED_DIRECTORIES {
        assert!(!drive.join(directory).exists(), "{directory} still on the removed host");
    }

    // The others: still Ready, same services, and nothing sent to them but the state probe.
    for (host, count_before, probe, services_before) in kept_before {
        let record = record(sandbox, &host.key).await?.context("a kept record disappeared")?;
        assert_eq!(phase_of(&record), Some(InstancePhase::Ready), "{}", host.key);
        assert_eq!(managed_services(sandbox, &host.info.name).await?, services_before, "{}", host.key);
        let lines = operator_lines(sandbox, &host.info.name).await?;
        let since: Vec<&String> = lines[count_before..].iter().filter(|line| **line != probe).collect();
        assert_eq!(since, Vec::<&String>::new(), "host {}: commands other than the state probe", host.key);
    }
    Ok(())
}

/// Scenario 4: a new ConfigMap with bad entries beside the good ones → the good hosts (all deconfigured before)
/// configured again, no record for a bad entry, and one Warning Event per bad key on the ConfigMap naming it.
async fn bad_entries_beside_good_ones(sandbox: &Sandbox, workload: &Workload) -> anyhow::Result<()> {
    scenario(4, "bad entries beside good ones: the good ones configured; a Warning Event naming each bad one");
    let bad: BTreeMap<&str, &str> = BTreeMap::from([
        ("10.1.2", "username=Administrator"),
        ("127.0.0.60", "username="),
        ("127.0.0.61", "username=Administrator,password=secret"),
        ("127.0.0.62", "username=a/b"),
    ]);
    let mut entries = sandbox.entries_for_all_hosts();
    entries.extend(bad.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())));
    sandbox.write_instances(&entries).await?;

    let ready = sandbox.wait_until_ready(3, READY_TIMEOUT).await?;
    let addresses: BTreeSet<String> = ready.iter().map(|ready| ready.instance.spec.address.clone()).collect();
    let expected: BTreeSet<String> = sandbox.hosts().iter().map(|host| host.key.clone()).collect();
    assert_eq!(addresses, expected);
    let records: Vec<String> =
        sandbox.windows_instances().await?.into_iter().filter_map(|record| record.metadata.name).collect();
    assert_eq!(records.len(), 3, "no record for a bad entry: {records:?}");
    for host in sandbox.hosts() {
        assert_all_services_running(sandbox, &host.info.name).await?;
    }
    wait_available(sandbox, workload, 6).await?;

    let warnings = sandbox
        .wait_for("an InvalidInstanceEntry Warning naming each bad key", REACTION_TIMEOUT, || async {
            let events = sandbox.events_about("ConfigMap", INSTANCES_CONFIG_MAP).await?;
            let mut by_key: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            // The ConfigMap also carries the Go operator's InstanceSetup and InstanceTeardown, one per host.
            let lifecycle = ["InstanceSetup", "InstanceTeardown"];
            for (kind, reason, note) in events.iter().filter(|(_, reason, _)| !lifecycle.contains(&reason.as_str())) {
                ensure!(kind == "Warning" && reason == "InvalidInstanceEntry", "unexpected Event {reason}: {note}");
                let key = bad.keys().find(|key| note.starts_with(&format!("entry {key:?}: ")));
                let key = key.with_context(|| format!("an Event names no bad key: {note}"))?;
                by_key.entry(*key).or_default().push(note.clone());
            }
            ensure!(by_key.len() == bad.len(), "Events so far: {events:?}");
            Ok(by_key)
        })
        .await?;
    for (key, notes) in &warnings {
        step(&format!("{key}: {notes:?}"));
        assert_eq!(notes.len(), 1, "one Event per bad key (repeats are a series of the same Event)");
        assert!(!notes[0].contains("secret"), "a value other than the user name was echoed: {}", notes[0]);
    }
    Ok(())
}

/// Scenario 9: the ConfigMap deleted → every host drained and deconfigured, every record released, Nodes deleted.
async fn config_map_deleted(sandbox: &Sandbox, workload: &Workload) -> anyhow::Result<()> {
    scenario(9, "ConfigMap deleted: every host drained and deconfigured, records released, Nodes deleted");
    // With every Windows node going, no replacement pod can ever become available: drop the budget first.
    workload.remove_budget().await?;
    sandbox.delete_instances().await?;
    sandbox
        .wait_for("every record and Windows Node gone", REACTION_TIMEOUT, || async {
            let records: Vec<String> =
                sandbox.windows_instances().await?.into_iter().filter_map(|record| record.metadata.name).collect();
            let nodes: Vec<String> =
                sandbox.windows_nodes().await?.into_iter().filter_map(|node| node.metadata.name).collect();
            ensure!(records.is_empty() && nodes.is_empty(), "records {records:?}, nodes {nodes:?}");
            Ok(())
        })
        .await?;
    sandbox
        .wait_for("six unbound workload pods waiting for a node", REACTION_TIMEOUT, || async {
            let pods = workload.pods().await?;
            let bound: Vec<String> = pods
                .iter()
                .filter_map(|pod| node_of(pod).map(|node| format!("{:?} on {node}", pod.metadata.name)))
                .collect();
            ensure!(bound.is_empty() && pods.len() == 6, "{} pods, bound: {bound:?}", pods.len());
            Ok(())
        })
        .await?;
    for host in sandbox.hosts() {
        assert_eq!(managed_services(sandbox, &host.info.name).await?, BTreeMap::new(), "{}", host.key);
        let drive = c_drive(sandbox, &host.info.name).await?;
        for directory in REMOVED_DIRECTORIES {
            assert!(!drive.join(directory).exists(), "{directory} still on {}", host.key);
        }
    }
    Ok(())
}

// ---- sandbox 2: scenarios 5, 6, 7, 8 ----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_contained_and_a_crash_converges() -> anyhow::Result<()> {
    let _one_at_a_time = ONE_SANDBOX_AT_A_TIME.lock().await;
    let sandbox =
        Sandbox::start(SandboxOptions { hosts: 2, localhost_host: false, ..SandboxOptions::default() }).await?;
    let _scheduler = Scheduler::start(sandbox.admin_client());
    let good: Vec<String> = sandbox.hosts().iter().map(|host| host.key.clone()).collect();

    unreachable_host(&sandbox, &good).await?;
    host_key_changed(&sandbox, &good[0]).await?;
    csrs_out_of_bounds(&sandbox, &good[1]).await?;
    killed_while_configuring(&sandbox).await?;
    failed_record_stays_put(&sandbox, &good[0]).await?;
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// Scenario 5: one host unreachable → its record carries the reason; the others Ready. Once the host answers, it
/// converges too.
async fn unreachable_host(sandbox: &Sandbox, good: &[String]) -> anyhow::Result<()> {
    scenario(5, "one host unreachable: its record says why, the others turn Ready");
    let address = Ipv4Addr::new(127, 0, 0, 12);
    let name = add_host(sandbox, address).await?;
    set_faults(sandbox, &name, Faults { refuse_connections: true, ..Faults::default() }).await?;
    let mut entries = sandbox.entries_for_all_hosts();
    let unreachable_key = address.to_string();
    entries.insert(unreachable_key.clone(), entry_value());
    sandbox.write_instances(&entries).await?;

    let ready = sandbox.wait_until_ready(good.len(), READY_TIMEOUT).await?;
    let ready_addresses: Vec<String> = ready.iter().map(|ready| ready.instance.spec.address.clone()).collect();
    assert_eq!(ready_addresses, good);
    let failing = sandbox
        .wait_for("the unreachable host's record to carry the reason", REACTION_TIMEOUT, || async {
            let record = record(sandbox, &unreachable_key).await?.context("no record yet")?;
            let status = record.status.clone().unwrap_or_default();
            let error = status.last_error.clone().context("no lastError yet")?;
            Ok((status.phase, error))
        })
        .await?;
    step(&format!("unreachable host: phase {:?}, lastError {}", failing.0, failing.1));
    // Retryable: the record stays in Configuring (backing off) with the reason.
    assert_eq!(failing.0, Some(InstancePhase::Configuring));
    let prefix = format!("host {HOST_USER}@{unreachable_key}:{}: pin_host_key failed: ", sandbox.ssh_port());
    assert!(failing.1.starts_with(&prefix), "lastError does not name the host and step: {}", failing.1);
    assert!(failing.1.contains("unreachable while the SSH handshake"), "lastError: {}", failing.1);
    assert_eq!(sandbox.operator_commands(&name).await?.len(), 0, "nothing ran on the unreachable host");
    assert!(sandbox.windows_nodes().await?.len() == good.len(), "no Node for the unreachable host");

    step("the host answers again: it converges");
    set_faults(sandbox, &name, Faults::default()).await?;
    sandbox.wait_until_ready(good.len() + 1, READY_TIMEOUT).await?;
    assert_all_services_running(sandbox, &name).await?;
    Ok(())
}

/// Scenario 6: the host key of a configured host changed → refused, Warning Event `HostKeyMismatch`, phase
/// Failed, nothing sent.
async fn host_key_changed(sandbox: &Sandbox, key: &str) -> anyhow::Result<()> {
    scenario(6, &format!("host key of {key} changed: refused, Warning Event, nothing sent"));
    let name = host_name_of_key(sandbox, key).await?;
    let record_name = instance_name(key);
    let server = sandbox.server(&name).await?;
    // A reinstalled host: the operator's open connection breaks (the next request on it is dropped unrun) and
    // every new connection meets the new key.
    set_faults(sandbox, &name, Faults { drop_connections: true, ..Faults::default() }).await?;
    let new_key = server.change_host_key()?;
    // Let a command already running when the fault was set finish before taking the log.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log_before = command_lines(sandbox, &name).await?;
    touch_record(sandbox, key, "host-key-changed").await?;

    let note = sandbox
        .wait_for("a HostKeyMismatch Warning on the record", REACTION_TIMEOUT, || async {
            let events = sandbox.events_about("WindowsInstance", &record_name).await?;
            events
                .into_iter()
                .find(|(kind, reason, _)| kind == "Warning" && reason == "HostKeyMismatch")
                .map(|(_, _, note)| note)
                .with_context(|| format!("no HostKeyMismatch Event on {record_name} yet"))
        })
        .await?;
    step(&format!("Event: {note}"));
    let status = sandbox
        .wait_for("the record in phase Failed", REACTION_TIMEOUT, || async {
            let record = record(sandbox, key).await?.context("the record disappeared")?;
            let status = record.status.clone().unwrap_or_default();
            ensure!(status.phase == Some(InstancePhase::Failed), "phase {:?}", status.phase);
            Ok(status)
        })
        .await?;
    let pinned = status.pinned_host_key.clone().context("no pinned host key")?;
    assert_ne!(pinned.split_whitespace().nth(1), new_key.split_whitespace().nth(1), "the new key was pinned");
    let last_error = status.last_error.unwrap_or_default();
    assert!(last_error.contains("host key changed (pinned SHA256:"), "lastError: {last_error}");
    assert!(last_error.ends_with("refusing to connect"), "lastError: {last_error}");
    assert_eq!(note, format!("WindowsInstance {OPERATOR_NAMESPACE}/{record_name}: {last_error}"));
    assert_eq!(command_lines(sandbox, &name).await?, log_before, "a command reached the host with the changed key");
    set_faults(sandbox, &name, Faults::default()).await?;
    Ok(())
}

async fn host_name_of_key(sandbox: &Sandbox, key: &str) -> anyhow::Result<String> {
    sandbox
        .hosts()
        .iter()
        .find(|host| host.key == key)
        .map(|host| host.info.name.clone())
        .with_context(|| format!("no sandbox host keyed {key}"))
}

/// Scenario 6, last check: a permanent failure stops work on the host. While its kubelet renews its Lease twice
/// (time passes on the node), the `Failed` record is not written again and no new attempt is logged.
async fn failed_record_stays_put(sandbox: &Sandbox, key: &str) -> anyhow::Result<()> {
    step(&format!("scenario 6, continued: the Failed record of {key} stays put"));
    let record_name = instance_name(key);
    let before = record(sandbox, key).await?.context("the record disappeared")?;
    assert_eq!(phase_of(&before), Some(InstancePhase::Failed));
    let node = node_name_of(&before)?;
    let attempts = || -> anyhow::Result<usize> {
        let log = std::fs::read_to_string(sandbox.operator_log_path())?;
        Ok(log.lines().filter(|line| line.contains("host key changed") && line.contains(&record_name)).count())
    };
    let attempts_before = attempts()?;
    let leases: Api<Lease> = Api::namespaced(sandbox.admin_client(), "kube-node-lease");
    let renewed_at = || async {
        let lease = leases.get(&node).await?;
        lease.spec.and_then(|spec| spec.renew_time).map(|time| time.0).context("Lease without renewTime")
    };
    let first = renewed_at().await?;
    let renewals = std::sync::Mutex::new(BTreeSet::from([first]));
    sandbox
        .wait_for(&format!("two Lease renewals of node {node}"), REACTION_TIMEOUT, || async {
            let renewed = renewed_at().await?;
            let seen = {
                let mut renewals = lock(&renewals);
                renewals.insert(renewed);
                renewals.len()
            };
            ensure!(seen >= 3, "{seen} renewal times seen");
            Ok(())
        })
        .await?;
    let after = record(sandbox, key).await?.context("the record disappeared")?;
    let attempts_after = attempts()?;
    step(&format!(
        "record resourceVersion {:?} -> {:?}, phase {:?}; operator log lines about the changed key {attempts_before} -> {attempts_after}",
        before.metadata.resource_version,
        after.metadata.resource_version,
        phase_of(&after)
    ));
    assert_eq!(phase_of(&after), Some(InstancePhase::Failed));
    assert_eq!(
        after.metadata.resource_version, before.metadata.resource_version,
        "the Failed record kept being rewritten: the operator retries a permanent failure"
    );
    assert_eq!(attempts_after, attempts_before, "the operator kept connecting to the host with the changed key");
    Ok(())
}

/// A kubelet-shaped serving CSR for `node`: P-256, `CN=system:node:<node>`, `O=system:nodes`, the given SANs.
fn serving_request(node: &str, dns: &str, ip: Ipv4Addr) -> anyhow::Result<CertificateSigningRequest> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, format!("system:node:{node}"));
    subject.push(DnType::OrganizationName, "system:nodes");
    params.distinguished_name = subject;
    params.subject_alt_names = vec![SanType::DnsName(dns.try_into()?), SanType::IpAddress(ip.into())];
    let pem = params.serialize_request(&key)?.pem()?;
    Ok(CertificateSigningRequest {
        metadata: ObjectMeta { generate_name: Some("e2e-serving-".to_owned()), ..ObjectMeta::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.into_bytes()),
            signer_name: SERVING_SIGNER.to_owned(),
            usages: Some(vec!["digital signature".to_owned(), "server auth".to_owned()]),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    })
}

/// A ServiceAccount `e2e-csr/csr-requester` allowed to create and read CSRs; returns its client.
async fn csr_requester(sandbox: &Sandbox) -> anyhow::Result<kube::Client> {
    let admin = sandbox.admin_client();
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": "e2e-csr"}}))?;
    Api::<Namespace>::all(admin.clone()).create(&PostParams::default(), &namespace).await?;
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "csr-requester"}}))?;
    Api::<ServiceAccount>::namespaced(admin.clone(), "e2e-csr").create(&PostParams::default(), &account).await?;
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "e2e-csr-requester"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
                   "verbs": ["create", "get", "list", "watch"]}],
    }))?;
    Api::<ClusterRole>::all(admin.clone()).create(&PostParams::default(), &role).await?;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "e2e-csr-requester"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "e2e-csr-requester"},
        "subjects": [{"kind": "ServiceAccount", "name": "csr-requester", "namespace": "e2e-csr"}],
    }))?;
    Api::<ClusterRoleBinding>::all(admin).create(&PostParams::default(), &binding).await?;
    Ok(sandbox.control_plane().client_for_service_account("e2e-csr", "csr-requester").await?)
}

/// Whether an operator log line (text `csr=NAME` or JSON `"csr":"NAME"`) is about CSR `name`.
fn names_csr(line: &str, name: &str) -> bool {
    line.contains(&format!("csr={name} ")) || line.contains(&format!("\"csr\":\"{name}\""))
}

fn conditions_of(csr: &CertificateSigningRequest) -> Vec<(String, Option<String>)> {
    csr.status
        .iter()
        .flat_map(|status| status.conditions.iter().flatten())
        .map(|condition| (condition.type_.clone(), condition.reason.clone()))
        .collect()
}

/// Scenario 7: a ServiceAccount's serving CSR for a Windows node → Denied by E3; a Linux node's own serving CSR
/// → left pending.
async fn csrs_out_of_bounds(sandbox: &Sandbox, windows_key: &str) -> anyhow::Result<()> {
    scenario(7, "a ServiceAccount's serving CSR for a Windows node is denied (E3); a Linux node's is left pending");
    let admin_csrs: Api<CertificateSigningRequest> = Api::all(sandbox.admin_client());
    let record = record(sandbox, windows_key).await?.context("no record for the Windows host")?;
    let status = record.status.clone().unwrap_or_default();
    let node = status.expected_node_name.clone().context("no expected node name")?;
    // As a kubelet names itself: the recorded host name lower-cased (Windows reports it in upper case).
    let hostname = status.hostname.clone().context("no recorded hostname")?.to_ascii_lowercase();
    let node_ip = status.node_ip.context("no recorded node IP")?;

    // The Linux node's request first: by the time the later one is decided, the operator has seen it too.
    let linux_identity =
        sandbox.control_plane().issue_client_certificate("system:node:linux-e2e", &["system:nodes"])?;
    let linux = sandbox.control_plane().client_for_certificate("system:node:linux-e2e", &linux_identity).await?;
    let linux_csr = Api::<CertificateSigningRequest>::all(linux)
        .create(&PostParams::default(), &serving_request("linux-e2e", "linux-e2e", Ipv4Addr::new(192, 0, 2, 10))?)
        .await?;
    let linux_name = linux_csr.metadata.name.clone().context("unnamed CSR")?;
    assert_eq!(linux_csr.spec.username.as_deref(), Some("system:node:linux-e2e"));

    let requester = csr_requester(sandbox).await?;
    let forged = Api::<CertificateSigningRequest>::all(requester)
        .create(&PostParams::default(), &serving_request(&node, &hostname, node_ip)?)
        .await?;
    let forged_name = forged.metadata.name.clone().context("unnamed CSR")?;
    assert_eq!(forged.spec.username.as_deref(), Some("system:serviceaccount:e2e-csr:csr-requester"));
    let denied = sandbox
        .wait_for("the ServiceAccount's CSR decided", REACTION_TIMEOUT, || async {
            let csr = admin_csrs.get(&forged_name).await?;
            let conditions = conditions_of(&csr);
            ensure!(!conditions.is_empty(), "still pending");
            Ok(conditions)
        })
        .await?;
    assert_eq!(denied, [("Denied".to_owned(), Some("E3".to_owned()))]);
    let record_name = instance_name(windows_key);
    let expected_note = format!("CSR {forged_name}: deny by rule E3: ");
    let events = sandbox.events_about("WindowsInstance", &record_name).await?;
    let denials: Vec<&(String, String, String)> =
        events.iter().filter(|(_, reason, note)| reason == "CsrDenied" && note.starts_with(&expected_note)).collect();
    assert_eq!(denials.len(), 1, "Events on {record_name}: {events:?}");
    assert_eq!(denials[0].0, "Warning");
    step(&format!("Event: {}", denials[0].2));

    // The Linux CSR: the operator decided to ignore it (its log says so) and wrote nothing.
    let log_path = sandbox.operator_log_path();
    let decided = sandbox
        .wait_for("the operator's decision on the Linux CSR in its log", REACTION_TIMEOUT, || async {
            let log = std::fs::read_to_string(&log_path)?;
            log.lines()
                .find(|line| line.contains("CSR decided") && names_csr(line, &linux_name))
                .map(str::to_owned)
                .context("not logged yet")
        })
        .await?;
    step(&format!("operator: {decided}"));
    assert!(decided.contains("\"ignore\""), "{decided}");
    assert!(decided.contains("A5"), "{decided}");
    let linux_now = admin_csrs.get(&linux_name).await?;
    assert_eq!(conditions_of(&linux_now), Vec::new(), "the Linux node's CSR must stay pending");
    assert!(linux_now.status.and_then(|status| status.certificate).is_none());
    Ok(())
}

/// Scenario 8: SIGKILL while a new host is being configured (uploads under way) → restarted, it converges: Ready,
/// no duplicate services, no staging file left.
async fn killed_while_configuring(sandbox: &Sandbox) -> anyhow::Result<()> {
    scenario(8, "operator killed (SIGKILL) while configuring a new host; restarted, it converges");
    let address = Ipv4Addr::new(127, 0, 0, 13);
    let name = add_host(sandbox, address).await?;
    let server = sandbox.server(&name).await?;
    // Slow uploads down so the kill lands in the middle of them.
    *lock(&server.throttle) = 4096;
    let key = address.to_string();
    sandbox.set_instance_entry(&key, &entry_value()).await?;
    let seen = sandbox
        .wait_for("the new host Configuring with uploads under way", REACTION_TIMEOUT, || async {
            let record = record(sandbox, &key).await?.context("no record yet")?;
            let verified = operator_lines(sandbox, &name).await?.len();
            let drive = c_drive(sandbox, &name).await?;
            let staging = files_ending_with(&drive, STAGING_SUFFIX)?;
            let phase = phase_of(&record);
            ensure!(!staging.is_empty(), "phase {phase:?}, {verified} commands, no staging file yet");
            Ok((phase, verified, staging))
        })
        .await?;
    let pid = sandbox.operator_pid();
    sandbox.kill_operator();
    step(&format!(
        "killed operator pid {pid:?} in phase {:?} after {} commands; staging files: {:?}",
        seen.0, seen.1, seen.2
    ));
    *lock(&server.throttle) = 0;
    sandbox.start_operator().await?;

    let all = sandbox.hosts().len() + 2;
    // Every host but the one with the changed key (scenario 6, Failed until an admin acts).
    sandbox.wait_until_ready(all - 1, READY_TIMEOUT).await?;
    let record = record(sandbox, &key).await?.context("the new host's record disappeared")?;
    assert_eq!(phase_of(&record), Some(InstancePhase::Ready));
    assert_all_services_running(sandbox, &name).await?;
    let drive = c_drive(sandbox, &name).await?;
    assert_eq!(files_ending_with(&drive, STAGING_SUFFIX)?, Vec::<PathBuf>::new(), "staging files left");
    let unknown = sandbox.unknown_commands(&name).await?;
    assert!(unknown.is_empty(), "unknown commands: {unknown:?}");
    let node = node_name_of(&record)?;
    let nodes = sandbox.windows_nodes().await?;
    let node_object = nodes.iter().find(|candidate| candidate.metadata.name.as_deref() == Some(node.as_str()));
    match node_object {
        Some(node_object) => assert!(node_is_ready(node_object)),
        None => bail!("no Node {node} for the crashed-over host"),
    }
    Ok(())
}
