//! Key rotation scenario of issue 10, Machine half, on one sandbox (the operator as its own process, the harness
//! fixtures serving `machine.openshift.io`, platform None, `--max-unavailable` 1). The test plays machine-api and
//! the MachineSet: two Windows Machines, each backed by a simulated host that started unprovisioned and ran the
//! rendered `windows-user-data`, are configured into Ready Nodes. The admin puts a new key into
//! `cloud-private-key`: `windows-user-data` is rendered again with the new key, and the operator replaces the
//! Machines one at a time. Machines carry machine-api's finalizer, so a deleted Machine stays terminating while the
//! test (as the MachineSet) creates a new Machine backed by a NEW simulated host provisioned with the new user
//! data; then the old host is destroyed (as the cloud destroys the instance) and the finalizer removed. One watch
//! on the Windows Machines and Nodes records how many of the two were away (Machine gone or going, or its Node not
//! a configured, Ready, schedulable Node) after every change: never more than one, and one at some moment. At the
//! end both Nodes carry the new key's `pub-key-hash` and each replaced Machine's record got a Normal
//! `MachineDeleted` Event (the Go operator's reason).
//!
//! Then (the operator runs with `--authentication-grace-seconds=10`) a third Machine is backed by a host that never
//! ran the user data, so it refuses the operator's key: its record goes Failed with the `AuthenticationFailed`
//! condition, the Machine is deleted no sooner than the grace period after the first refusal, with a Warning
//! `MachineSetupFailure` on the record and on the Machine, and its replacement (a host that ran the user data)
//! becomes a Ready Node.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use base64::Engine as _;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{Node, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use sha2::{Digest as _, Sha256};
use wmco_cluster_client::names::{PUB_KEY_HASH_ANNOTATION, UPGRADING_LABEL, VERSION_ANNOTATION};
use wmco_cluster_client::types::{InstancePhase, Machine, WindowsInstance};
use wmco_sandbox::machine_api::{
    MACHINE_API_NAMESPACE, OS_ID_LABEL, add_unprovisioned_host, create_provisioned_machine, provision, user_data,
};
use wmco_sandbox::{AdminKey, OPERATOR_NAMESPACE, PRIVATE_KEY_FIELD, PRIVATE_KEY_SECRET, Sandbox, SandboxOptions};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const USER_DATA_TIMEOUT: Duration = Duration::from_secs(120);
const READY_TIMEOUT: Duration = Duration::from_secs(900);
const ROTATION_TIMEOUT: Duration = Duration::from_secs(1800);
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(300);
/// `--authentication-grace-seconds` of the operator under test.
const GRACE: Duration = Duration::from_secs(10);

/// The Windows Machines the MachineSet keeps.
const FLEET: usize = 2;
/// machine-api's finalizer on Machines.
const MACHINE_FINALIZER: &str = "machine.machine.openshift.io";
/// Where the user data writes the operator's public key.
const AUTHORIZED_KEYS: &str = r"C:\ProgramData\ssh\administrators_authorized_keys";

/// Machine number `index`: its name, its host, the host's address and the InternalDNS name (the Node's name,
/// lower-cased, on platform None).
struct MachineSlot {
    machine: String,
    host: String,
    address: Ipv4Addr,
    internal_dns: String,
}

fn slot(index: u8) -> MachineSlot {
    MachineSlot {
        machine: format!("sandbox-win-{index}"),
        host: format!("winmachine-{index}"),
        address: Ipv4Addr::new(127, 0, 0, 50u8.saturating_add(index)),
        internal_dns: format!("win-{index}.machines.sim.test"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_replaces_the_machines_one_at_a_time_with_hosts_provisioned_from_the_new_user_data()
-> anyhow::Result<()> {
    let options = SandboxOptions {
        hosts: 0,
        operator_args: vec![format!("--authentication-grace-seconds={}", GRACE.as_secs())],
        ..SandboxOptions::default()
    };
    let sandbox = Sandbox::start(options).await.context("the sandbox did not start")?;
    let admin = sandbox.admin_client();
    let old_blob = key_blob(sandbox.admin_key().public_line())?;
    let old_user_data = rendered_user_data(&sandbox, &admin, &old_blob).await?;

    let mut next_index = 0u8;
    let mut live: BTreeMap<String, MachineSlot> = BTreeMap::new();
    for _ in 0..FLEET {
        let machine = provision_machine(&sandbox, &admin, next_index, &old_user_data).await?;
        live.insert(machine.machine.clone(), machine);
        next_index += 1;
    }
    let ready = sandbox.wait_until_ready(FLEET, READY_TIMEOUT).await?;
    let old_hash = hash_of_line(sandbox.admin_key().public_line());
    for instance in &ready {
        ensure!(node_hash(&instance.node).as_deref() == Some(old_hash.as_str()), "configured with the first key");
    }

    let watch = AwayWatch::start(admin.clone());
    sandbox
        .wait_for("the away watch's initial listing", USER_DATA_TIMEOUT, || async {
            ensure!(watch.is_listening(), "still listing");
            Ok(())
        })
        .await?;

    // The admin rotates the key.
    let new_key = AdminKey::generate()?;
    let new_blob = key_blob(new_key.public_line())?;
    let new_hash = hash_of_line(new_key.public_line());
    let encoded = base64::engine::general_purpose::STANDARD.encode(new_key.private_openssh());
    Api::<Secret>::namespaced(admin.clone(), OPERATOR_NAMESPACE)
        .patch(
            PRIVATE_KEY_SECRET,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {PRIVATE_KEY_FIELD: encoded}})),
        )
        .await
        .context("rotating cloud-private-key")?;
    let new_user_data = rendered_user_data(&sandbox, &admin, &new_blob).await?;
    ensure!(!new_user_data.contains(&old_blob), "the new user data no longer authorizes the old key");

    // Play the MachineSet until both Machines were replaced and their Nodes are Ready on the new key.
    let originals: BTreeSet<String> = live.keys().cloned().collect();
    let machines: Api<Machine> = Api::namespaced(admin.clone(), MACHINE_API_NAMESPACE);
    let started = Instant::now();
    let mut replaced = Vec::new();
    loop {
        ensure!(
            started.elapsed() < ROTATION_TIMEOUT,
            "not converged after {ROTATION_TIMEOUT:?}: {:?}",
            watch.history()
        );
        sandbox.check_operator()?;
        let present: BTreeSet<String> = machines
            .list(&ListParams::default().labels(&format!("{OS_ID_LABEL}=Windows")))
            .await?
            .items
            .into_iter()
            .filter(|machine| machine.metadata.deletion_timestamp.is_none())
            .filter_map(|machine| machine.metadata.name)
            .collect();
        // As machine-api: a deleted Machine stays (terminating, its finalizer) while the MachineSet creates the
        // replacement; then the cloud instance is destroyed and the finalizer removed.
        let terminating: Vec<String> = live.keys().filter(|name| !present.contains(*name)).cloned().collect();
        for name in terminating {
            let old = live.remove(&name).context("a tracked Machine")?;
            let replacement = provision_machine(&sandbox, &admin, next_index, &new_user_data).await?;
            sandbox.fleet().lock().await.remove(&old.host)?;
            set_finalizer(&machines, &name, false).await?;
            println!("Machine {name} deleted after {:?}: replaced by {}", started.elapsed(), replacement.machine);
            next_index += 1;
            replaced.push(name);
            live.insert(replacement.machine.clone(), replacement);
        }
        if live.keys().all(|name| !originals.contains(name)) && rotated(&sandbox, &new_hash).await? {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    println!("both Machines replaced and Ready on the new key after {:?}", started.elapsed());
    println!("Windows Machines away after each change: {:?}", watch.history());

    ensure!(watch.errors().is_empty(), "the watch failed: {:?}", watch.errors());
    assert_eq!(replaced.iter().cloned().collect::<BTreeSet<_>>(), originals);
    assert_eq!(watch.most_away(), 1, "one Machine away at a time, and one at some moment: {:?}", watch.history());
    for slot in live.values() {
        let authorized = sandbox.file_hash(&slot.host, AUTHORIZED_KEYS).await?;
        ensure!(authorized.is_some(), "the new host {} ran the user data", slot.host);
    }
    let replacements = replacement_events(&admin).await?;
    let expected: BTreeSet<String> = originals.iter().map(|name| format!("machine-{name}")).collect();
    assert_eq!(replacements, expected, "one MachineDeleted per replaced Machine's record");
    drop(watch);

    refused_machine_is_replaced(&sandbox, &admin, next_index, &new_user_data).await?;
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// A Machine whose host never ran the user data refuses the operator's key: the record carries
/// `AuthenticationFailed`, the Machine is deleted once the grace period ([`GRACE`]) is over, with a Warning on the
/// record and on the Machine; the replacement on a host that ran the user data becomes a Ready Node.
async fn refused_machine_is_replaced(
    sandbox: &Sandbox,
    admin: &kube::Client,
    index: u8,
    new_user_data: &str,
) -> anyhow::Result<()> {
    let refusing = slot(index);
    let record_name = format!("machine-{}", refusing.machine);
    let host = add_unprovisioned_host(sandbox, &refusing.host, refusing.address).await?;
    create_provisioned_machine(admin, &refusing.machine, &host, &refusing.internal_dns).await?;
    let machines: Api<Machine> = Api::namespaced(admin.clone(), MACHINE_API_NAMESPACE);
    set_finalizer(&machines, &refusing.machine, true).await?;
    let records: Api<WindowsInstance> = Api::namespaced(admin.clone(), OPERATOR_NAMESPACE);
    let since = sandbox
        .wait_for("the refused login recorded", REFUSAL_TIMEOUT, || async {
            let record = records.get_opt(&record_name).await?.context("no record yet")?;
            let status = record.status.context("no status yet")?;
            ensure!(status.phase == Some(InstancePhase::Failed), "phase {:?}", status.phase);
            status.authentication_failing_since().context("no AuthenticationFailed condition yet")
        })
        .await?;
    sandbox
        .wait_for("the refusing Machine deleted", REFUSAL_TIMEOUT, || async {
            let machine = machines.get(&refusing.machine).await?;
            ensure!(machine.metadata.deletion_timestamp.is_some(), "not deleted yet");
            Ok(())
        })
        .await?;
    let deleted_at = jiff::Timestamp::now();
    let waited = deleted_at.duration_since(since);
    println!(
        "the refusing Machine was deleted {:.1} s after the first refusal (grace {GRACE:?})",
        waited.as_secs_f64()
    );
    ensure!(waited >= jiff::SignedDuration::try_from(GRACE)?, "deleted before the grace period ended: {waited:#}");

    // The operator publishes the Warnings right after the deletion it reports: wait for them, not just read once.
    let expected = BTreeSet::from([
        ("WindowsInstance".to_owned(), OPERATOR_NAMESPACE.to_owned(), record_name.clone()),
        ("Machine".to_owned(), MACHINE_API_NAMESPACE.to_owned(), refusing.machine.clone()),
    ]);
    let warnings = sandbox
        .wait_for("the Warnings of the refused Machine's replacement", REFUSAL_TIMEOUT, || async {
            let warnings = refused_replacement_events(admin).await?;
            ensure!(warnings.len() >= expected.len(), "Warnings so far: {warnings:?}");
            Ok(warnings)
        })
        .await?;
    assert_eq!(warnings, expected, "one Warning on the record and one on the Machine");

    let replacement = provision_machine(sandbox, admin, index + 1, new_user_data).await?;
    sandbox.fleet().lock().await.remove(&refusing.host)?;
    set_finalizer(&machines, &refusing.machine, false).await?;
    let ready = sandbox.wait_until_ready(FLEET + 1, READY_TIMEOUT).await?;
    let names: BTreeSet<String> = ready.iter().filter_map(|ready| ready.instance.spec.machine_name.clone()).collect();
    ensure!(names.contains(&replacement.machine), "the replacement {} is Ready: {names:?}", replacement.machine);
    ensure!(!names.contains(&refusing.machine), "the refusing Machine is gone: {names:?}");
    Ok(())
}

/// `windows-user-data` once it authorizes the key whose base64 blob is `blob`.
async fn rendered_user_data(sandbox: &Sandbox, admin: &kube::Client, blob: &str) -> anyhow::Result<String> {
    Ok(sandbox
        .wait_for("windows-user-data with the current key", USER_DATA_TIMEOUT, || async {
            let rendered = user_data(admin).await?.context("not rendered yet")?;
            ensure!(rendered.contains(blob), "still another key");
            Ok(rendered)
        })
        .await?)
}

/// A new unprovisioned host for slot `index`, provisioned with `rendered` (its first boot), and its Machine in
/// phase Provisioned.
async fn provision_machine(
    sandbox: &Sandbox,
    admin: &kube::Client,
    index: u8,
    rendered: &str,
) -> anyhow::Result<MachineSlot> {
    let slot = slot(index);
    let host = add_unprovisioned_host(sandbox, &slot.host, slot.address).await?;
    let first_boot = provision(sandbox, &slot.host, wmco_user_data::script_from_user_data(rendered)).await?;
    ensure!(first_boot.code == 0, "the user data failed on {}: {first_boot:?}", slot.host);
    create_provisioned_machine(admin, &slot.machine, &host, &slot.internal_dns).await?;
    set_finalizer(&Api::namespaced(admin.clone(), MACHINE_API_NAMESPACE), &slot.machine, true).await?;
    Ok(slot)
}

/// Adds or removes machine-api's finalizer on Machine `name` (a deleted Machine stays until the instance is gone).
async fn set_finalizer(machines: &Api<Machine>, name: &str, present: bool) -> anyhow::Result<()> {
    let finalizers = if present { serde_json::json!([MACHINE_FINALIZER]) } else { serde_json::json!(null) };
    machines
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"finalizers": finalizers}})),
        )
        .await
        .with_context(|| format!("setting the finalizers of Machine {name}"))?;
    Ok(())
}

/// Whether exactly [`FLEET`] Windows Nodes exist, each Ready, configured and annotated with `new_hash`.
async fn rotated(sandbox: &Sandbox, new_hash: &str) -> anyhow::Result<bool> {
    let nodes = sandbox.windows_nodes().await?;
    Ok(nodes.len() == FLEET
        && nodes.iter().all(|node| node_is_available(node) && node_hash(node).as_deref() == Some(new_hash)))
}

/// The objects (kind, namespace, name) that got the key rotation's Warning `MachineSetupFailure` for a Machine
/// whose host refused the key past the grace period (the instances controller's own `MachineSetupFailure` for a
/// refused login, which every host on the old key gets for a while, says nothing of a grace period).
async fn refused_replacement_events(client: &kube::Client) -> anyhow::Result<BTreeSet<(String, String, String)>> {
    let events = Api::<Event>::all(client.clone()).list(&ListParams::default()).await?;
    Ok(events
        .items
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("MachineSetupFailure"))
        .filter(|event| event.note.as_deref().is_some_and(|note| note.contains("grace period")))
        .filter(|event| event.type_.as_deref() == Some("Warning"))
        .filter_map(|event| {
            let regarding = event.regarding?;
            Some((regarding.kind?, regarding.namespace?, regarding.name?))
        })
        .collect())
}

/// The records that got a `MachineDeleted` Event.
async fn replacement_events(client: &kube::Client) -> anyhow::Result<BTreeSet<String>> {
    let events = Api::<Event>::namespaced(client.clone(), OPERATOR_NAMESPACE).list(&ListParams::default()).await?;
    Ok(events
        .items
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("MachineDeleted"))
        .filter_map(|event| event.regarding?.name)
        .collect())
}

/// The base64 blob of a public key line.
fn key_blob(public_line: &str) -> anyhow::Result<String> {
    public_line.split_whitespace().nth(1).map(str::to_owned).context("a public key line")
}

/// The `pub-key-hash` of a public key line, computed independently: hex SHA-256 of `<type> <base64>`.
fn hash_of_line(public_line: &str) -> String {
    let line = public_line.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    hex::encode(Sha256::digest(line.as_bytes()))
}

fn node_hash(node: &Node) -> Option<String> {
    node.metadata.annotations.as_ref()?.get(PUB_KEY_HASH_ANNOTATION).cloned()
}

/// A configured (version annotation), Ready, schedulable Node not marked upgrading.
fn node_is_available(node: &Node) -> bool {
    let configured = node.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(VERSION_ANNOTATION));
    let marked = node.metadata.labels.as_ref().is_some_and(|labels| labels.contains_key(UPGRADING_LABEL));
    let unschedulable = node.spec.as_ref().and_then(|spec| spec.unschedulable).unwrap_or(false);
    configured && !marked && !unschedulable && wmco_sandbox::node_is_ready(node)
}

/// The Node name of a Machine on platform None: its InternalDNS address, lower-cased.
fn node_name_of(machine: &Machine) -> Option<String> {
    let dns = machine.status.as_ref()?.addresses.iter().find(|address| address.type_ == "InternalDNS")?;
    Some(dns.address.to_lowercase())
}

/// What the watch saw.
#[derive(Debug, Default)]
struct Away {
    /// Live Windows Machines (not being deleted) and the Node name each is served by.
    machines: BTreeMap<String, Option<String>>,
    /// Windows Nodes and whether each is available.
    nodes: BTreeMap<String, bool>,
    machines_listed: bool,
    nodes_listed: bool,
    /// Machines away after every change that altered the count, from both initial listings on.
    history: Vec<usize>,
    errors: Vec<String>,
}

impl Away {
    fn apply_machine(&mut self, event: watcher::Event<Machine>) {
        match event {
            watcher::Event::Init => self.machines.clear(),
            watcher::Event::InitApply(machine) | watcher::Event::Apply(machine) => {
                let name = machine.metadata.name.clone().unwrap_or_default();
                if machine.metadata.deletion_timestamp.is_some() {
                    self.machines.remove(&name);
                } else {
                    self.machines.insert(name, node_name_of(&machine));
                }
            }
            watcher::Event::Delete(machine) => {
                self.machines.remove(machine.metadata.name.as_deref().unwrap_or_default());
            }
            watcher::Event::InitDone => self.machines_listed = true,
        }
    }

    fn apply_node(&mut self, event: watcher::Event<Node>) {
        match event {
            watcher::Event::Init => self.nodes.clear(),
            watcher::Event::InitApply(node) | watcher::Event::Apply(node) => {
                let available = node_is_available(&node);
                self.nodes.insert(node.metadata.name.clone().unwrap_or_default(), available);
            }
            watcher::Event::Delete(node) => {
                self.nodes.remove(node.metadata.name.as_deref().unwrap_or_default());
            }
            watcher::Event::InitDone => self.nodes_listed = true,
        }
    }

    fn record(&mut self) {
        if !(self.machines_listed && self.nodes_listed) {
            return;
        }
        let serving = self
            .machines
            .values()
            .filter(|node| node.as_ref().is_some_and(|node| self.nodes.get(node).copied().unwrap_or(false)))
            .count();
        let away = FLEET.saturating_sub(serving);
        if self.history.last() != Some(&away) {
            self.history.push(away);
        }
    }
}

/// One task watching the Windows Machines and Nodes, recording how many of the [`FLEET`] Machines were away after
/// every change. Stops when dropped.
struct AwayWatch {
    task: tokio::task::JoinHandle<()>,
    state: Arc<Mutex<Away>>,
}

enum Change {
    Machine(Box<watcher::Event<Machine>>),
    Node(Box<watcher::Event<Node>>),
    Failed(String),
}

impl AwayWatch {
    fn start(client: kube::Client) -> Self {
        let state = Arc::new(Mutex::new(Away::default()));
        let machines: Api<Machine> = Api::namespaced(client.clone(), MACHINE_API_NAMESPACE);
        let machine_events = watcher(machines, watcher::Config::default().labels(&format!("{OS_ID_LABEL}=Windows")))
            .default_backoff()
            .map(|event| {
                event.map_or_else(|error| Change::Failed(error.to_string()), |event| Change::Machine(Box::new(event)))
            })
            .boxed();
        let nodes: Api<Node> = Api::all(client);
        let node_events = watcher(nodes, watcher::Config::default().labels("kubernetes.io/os=windows"))
            .default_backoff()
            .map(|event| {
                event.map_or_else(|error| Change::Failed(error.to_string()), |event| Change::Node(Box::new(event)))
            })
            .boxed();
        let recorder = Arc::clone(&state);
        let task = tokio::spawn(async move {
            let mut changes = futures::stream::select(machine_events, node_events);
            while let Some(change) = changes.next().await {
                let mut state = recorder.lock().unwrap_or_else(PoisonError::into_inner);
                match change {
                    Change::Machine(event) => state.apply_machine(*event),
                    Change::Node(event) => state.apply_node(*event),
                    Change::Failed(error) => state.errors.push(error),
                }
                state.record();
            }
        });
        AwayWatch { task, state }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Away> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_listening(&self) -> bool {
        let state = self.lock();
        state.machines_listed && state.nodes_listed
    }

    fn most_away(&self) -> usize {
        self.lock().history.iter().copied().max().unwrap_or(0)
    }

    fn history(&self) -> Vec<usize> {
        self.lock().history.clone()
    }

    fn errors(&self) -> Vec<String> {
        self.lock().errors.clone()
    }
}

impl Drop for AwayWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[test]
fn slots_name_the_machine_its_host_address_and_node() {
    let slot = slot(3);
    assert_eq!(
        (slot.machine.as_str(), slot.host.as_str(), slot.address, slot.internal_dns.as_str()),
        ("sandbox-win-3", "winmachine-3", Ipv4Addr::new(127, 0, 0, 53), "win-3.machines.sim.test")
    );
}
