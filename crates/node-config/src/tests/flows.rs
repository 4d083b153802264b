//! The scenarios: fresh configure through all stages, converged re-run, changed binary, crash and resume at every
//! operation, unreachable host, host key mismatch, deconfigure order, and force-remove.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use wmco_cluster_client::fake::{FakeConfigMaps, FakeDrainer, FakeInstanceRecords, FakeNodes, objects};
use wmco_cluster_client::names::{
    BYOH_LABEL, FORCE_REMOVE_ANNOTATION, HYBRID_OVERLAY_SUBNET_ANNOTATION, INSTANCE_UID_ANNOTATION,
    PUB_KEY_HASH_ANNOTATION, SSH_HOST_KEY_ANNOTATION, SSH_HOST_KEY_TYPE_ANNOTATION, VERSION_ANNOTATION,
    WORKER_ROLE_LABEL,
};
use wmco_cluster_client::types::{
    DisruptionState, HOSTNAME_CHANGED_CONDITION, InstanceOrigin, InstancePhase, NODE_NAME_CONFLICT_CONDITION,
    PREFLIGHT_FAILED_CONDITION, WindowsInstance,
};
use wmco_cluster_client::{BlockReason, BlockedPod, DrainOptions, InstanceRecords, NodeExt, NodeMetadataPatch, Nodes};
use wmco_payload_manifest::render::RenderedFile;
use wmco_payload_manifest::{HostFile, HostFileContent, HostFileSet};
use wmco_windows_services::{ServiceSpec, ServiceStage, WinPath, node_services};

use super::fake_host::{FakeWindowsHost, Fault, HOST_KEY, Op};
use crate::testing::sample_service_settings;
use crate::{
    ClusterAccess, ConfigureInputs, ConfigureState, DeconfigureInputs, FileStage, FlowError, HYBRID_OVERLAY_NETWORKS,
    HostFilesSource, HostIdentity, HostSession, PreflightCheck, SessionSettings, SourceError, StageFiles,
    WithheldService, configure, deconfigure,
};

const IDENTITY: &str = r#"{"hostname":"WIN-A","fqdn":"win-a.lab.example","ip":"203.0.113.7","build":"20348","ubr":2849,"freeBytes":85899345920,"containers":true}"#;
const NAMESPACE: &str = "wmco";
const NAME: &str = "win-a";
/// The node IP the identity reports (`IDENTITY`).
const NODE_IP: &str = "203.0.113.7";
const VERSION: &str = "10.17.0";
const KEY_HASH: &str = "0f1e2d";
const BOOTSTRAP_KUBECONFIG: &str = r"C:\k\bootstrap-kubeconfig";

fn services(identity: &HostIdentity, phase: ServiceStage) -> Vec<ServiceSpec> {
    node_services(&sample_service_settings().node_inputs(identity))
        .unwrap()
        .into_iter()
        .filter(|service| service.phase <= phase)
        .map(|service| service.spec)
        .collect()
}

fn catalog() -> Vec<ServiceSpec> {
    services(&HostIdentity::parse(IDENTITY).unwrap(), ServiceStage::Node)
}

/// Every binary of the stage's services plus its configuration files; contents `"<path> v1"` unless overridden.
/// The node stage withholds the services in `withheld`.
#[derive(Default)]
struct Files {
    overrides: Mutex<BTreeMap<String, Vec<u8>>>,
    withheld: Mutex<Vec<WithheldService>>,
}

impl Files {
    fn set(&self, path: &str, bytes: &[u8]) {
        self.overrides.lock().unwrap().insert(path.to_owned(), bytes.to_vec());
    }

    fn withhold(&self, withheld: &[WithheldService]) {
        *self.withheld.lock().unwrap() = withheld.to_vec();
    }

    fn file(&self, path: &str) -> HostFile {
        let bytes =
            self.overrides.lock().unwrap().get(path).cloned().unwrap_or_else(|| format!("{path} v1").into_bytes());
        let rendered = RenderedFile::new(WinPath::parse(path).unwrap(), bytes);
        HostFile {
            destination: rendered.destination().clone(),
            sha256: rendered.sha256(),
            size: rendered.bytes().len() as u64,
            content: HostFileContent::Rendered(rendered),
        }
    }
}

impl HostFilesSource for Files {
    fn files(&self, identity: &HostIdentity, stage: FileStage<'_>) -> Result<StageFiles, SourceError> {
        let phase = match stage {
            FileStage::Bootstrap => ServiceStage::Bootstrap,
            FileStage::Node(_) => ServiceStage::Node,
        };
        let mut paths: Vec<String> = services(identity, phase)
            .iter()
            .flat_map(|spec| spec.binaries().map(|binary| binary.as_str().to_owned()).collect::<Vec<_>>())
            .collect();
        paths.extend(
            [r"C:\k\kubelet.conf", BOOTSTRAP_KUBECONFIG, r"C:\k\containerd\containerd_conf.toml"].map(String::from),
        );
        if phase == ServiceStage::Node {
            paths.extend([r"C:\k\cni\config\cni.conf", r"C:\k\kube-proxy.conf", r"C:\k\tls\tls.crt"].map(String::from));
        }
        paths.sort();
        paths.dedup();
        let files = HostFileSet::from_files(paths.iter().map(|path| self.file(path)).collect())?;
        let withheld = if phase == ServiceStage::Node { self.withheld.lock().unwrap().clone() } else { Vec::new() };
        Ok(StageFiles { files, withheld, settings_generation: Some("fixed".into()) })
    }
}

struct World {
    nodes: Arc<FakeNodes>,
    records: Arc<FakeInstanceRecords>,
    drainer: FakeDrainer,
    config_maps: FakeConfigMaps,
    files: Files,
    host: Arc<FakeWindowsHost>,
}

impl World {
    async fn new() -> World {
        let world = World {
            nodes: Arc::default(),
            records: Arc::default(),
            drainer: FakeDrainer::default(),
            config_maps: FakeConfigMaps::default(),
            files: Files::default(),
            host: Arc::new(FakeWindowsHost::new(IDENTITY, catalog())),
        };
        let instance = objects::record(NAME).in_namespace(NAMESPACE).byoh("10.0.0.5").build();
        world.records.apply(&instance).await.unwrap();
        world
    }

    fn session(&self) -> HostSession {
        let settings = SessionSettings { stop_poll_interval: Duration::from_millis(1), ..SessionSettings::default() };
        HostSession::with_settings(self.host.clone(), settings)
    }

    /// A session that probes on every pass (no memory of unchanged passes).
    fn probing_session(&self) -> HostSession {
        let settings = SessionSettings {
            stop_poll_interval: Duration::from_millis(1),
            unchanged_pass_window: Duration::ZERO,
            node_wait_window: Duration::ZERO,
            services_wait_window: Duration::ZERO,
            ..SessionSettings::default()
        };
        HostSession::with_settings(self.host.clone(), settings)
    }

    fn cluster(&self) -> ClusterAccess<'_> {
        ClusterAccess {
            nodes: self.nodes.as_ref(),
            records: self.records.as_ref(),
            drainer: &self.drainer,
            config_maps: &self.config_maps,
        }
    }

    fn record(&self) -> WindowsInstance {
        self.records.record(NAMESPACE, NAME).unwrap()
    }

    async fn configure(&self, session: &HostSession) -> Result<crate::ConfigureOutcome, FlowError> {
        let instance = self.record();
        let settings = sample_service_settings();
        let inputs = ConfigureInputs {
            instance: &instance,
            settings: &settings,
            files: &self.files,
            operator_version: VERSION,
            pub_key_hash: KEY_HASH,
            drain: &wmco_cluster_client::DrainOptions::default(),
        };
        configure(session, self.cluster(), &inputs).await
    }

    /// What the fleet executor does once the budget admits the record's requested disruption: the Node (if the
    /// request names one) marked `upgrading`, the request granted. Returns whether a request was granted.
    async fn grant(&self) -> bool {
        let mut status = self.record().status.unwrap_or_default();
        if !status.grant_disruption(jiff::Timestamp::now()) {
            return false;
        }
        if let Some(node) = status.disruption.as_ref().and_then(|request| request.node.as_deref()) {
            let mark = NodeMetadataPatch::default().set_label(wmco_cluster_client::names::UPGRADING_LABEL, "true");
            self.nodes.patch_metadata(node, &mark).await.unwrap();
        }
        self.records.apply_status(NAMESPACE, NAME, &status).await.unwrap();
        true
    }

    /// Configures the host to Ready, then changes `kubelet.conf`: the next pass asks for a restart.
    async fn ask_for_a_restart(&self, session: &HostSession) {
        self.configure_to_ready(session).await;
        self.files.set(r"C:\k\kubelet.conf", b"{\"kind\":\"KubeletConfiguration\"}");
        assert_eq!(self.configure(session).await.unwrap().state, ConfigureState::WaitingForBudget);
    }

    /// A pass; one that asked for a restart or reboot is granted (its log dropped) and run again.
    async fn configure_granted(&self, session: &HostSession) -> Result<crate::ConfigureOutcome, FlowError> {
        let outcome = self.configure(session).await?;
        if outcome.state != ConfigureState::WaitingForBudget || !self.grant().await {
            return Ok(outcome);
        }
        self.host.take_log();
        self.configure(session).await
    }

    /// The record's disruption as `kind state node: services`, if it has one.
    fn disruption(&self) -> Option<String> {
        let disruption = self.record().status?.disruption?;
        let node = disruption.node.as_deref().unwrap_or("-");
        Some(format!("{:?} {:?} {node}: {}", disruption.kind, disruption.state, disruption.services.join(",")))
    }

    async fn deconfigure(&self, session: &HostSession) -> Result<crate::DeconfigureOutcome, FlowError> {
        let instance = self.record();
        let drain = DrainOptions::default();
        deconfigure(session, self.cluster(), &DeconfigureInputs { instance: &instance, drain: &drain }).await
    }

    /// Registers the host's Node as its kubelet does: labelled `kubernetes.io/os=windows`, the `--node-ip` as its
    /// `InternalIP`, and (once the hybrid overlay gave it one) its subnet.
    fn register_node(&self, with_subnet: bool) {
        let annotations =
            with_subnet.then(|| [(HYBRID_OVERLAY_SUBNET_ANNOTATION.to_owned(), "10.132.0.0/24".to_owned())].into());
        let labels = Some([("kubernetes.io/os".to_owned(), "windows".to_owned())].into());
        self.nodes.insert(Node {
            metadata: ObjectMeta { name: Some(NAME.into()), annotations, labels, ..ObjectMeta::default() },
            status: Some(NodeStatus {
                addresses: Some(vec![NodeAddress { type_: "InternalIP".into(), address: NODE_IP.into() }]),
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..NodeCondition::default()
                }]),
                ..NodeStatus::default()
            }),
            ..Node::default()
        });
    }

    /// Sets the Node's Ready condition.
    fn set_node_ready(&self, ready: bool) {
        let mut node = self.nodes.node(NAME).unwrap();
        node.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status =
            if ready { "True" } else { "False" }.into();
        self.nodes.insert(node);
    }

    /// Configures a fresh host to Ready (node registered with its subnet after the first pass).
    async fn configure_to_ready(&self, session: &HostSession) {
        assert_eq!(self.configure(session).await.unwrap().state, ConfigureState::WaitingForNode);
        assert_eq!(self.record().status.unwrap_or_default().settings_generation, None, "not before Ready");
        self.register_node(true);
        assert_eq!(self.configure(session).await.unwrap().state, ConfigureState::Ready);
        let generation = self.record().status.unwrap_or_default().settings_generation;
        assert_eq!(generation.as_deref(), Some("fixed"), "the generation of the files the host converged to");
    }
}

/// The log with content-addressed script names replaced by `script`.
fn summary(log: &[Op]) -> Vec<String> {
    log.iter()
        .map(|op| match op {
            Op::Run(kind) => kind.clone(),
            Op::Upload(path) if path.starts_with(r"C:\k\wmco\scripts\") => "upload script".to_owned(),
            Op::Upload(path) => format!("upload {path}"),
            Op::Remove(path) => format!("remove {path}"),
            Op::Mkdir(path) => format!("mkdir {path}"),
            Op::Stat(path) if path.starts_with(r"C:\k\wmco\scripts\") => "stat script".to_owned(),
            Op::Stat(path) => format!("stat {path}"),
            Op::HostKey => "host key".to_owned(),
        })
        .collect()
}

fn create(name: &str) -> Vec<String> {
    ["create", "description", "failure", "failureflag"].iter().map(|verb| format!("sc {verb} {name}")).collect()
}

fn position(log: &[String], entry: &str) -> usize {
    log.iter().position(|line| line == entry).unwrap_or_else(|| panic!("{entry} not in {log:#?}"))
}

#[tokio::test]
async fn a_host_failing_preflight_gets_nothing_installed_and_a_failed_record_until_it_is_fixed() {
    let world = World::new().await;
    let session = world.session();
    world.host.set_identity_json(
        r#"{"hostname":"WIN-A","fqdn":"win-a","ip":"203.0.113.7","build":"14393","freeBytes":1073741824,"containers":false}"#,
    );

    let error = world.configure(&session).await.unwrap_err();
    let checks: Vec<PreflightCheck> = error.preflight_failures().iter().map(|failure| failure.check).collect();
    // The Containers feature is off too: installable, so not a failure, but nothing is installed while another check
    // fails.
    assert_eq!(checks, [PreflightCheck::WindowsBuild, PreflightCheck::DiskSpace]);
    assert!(error.to_string().contains("Windows build 14393 is not supported"), "{error}");
    assert!(error.is_retryable() && error.fails_the_record());
    assert_eq!(summary(&world.host.take_log()), ["host key", "identity"], "nothing installed");
    let status = world.record().status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::Failed));
    assert_eq!(status.expected_node_name, None, "no identity recorded before the checks pass");
    let condition = status.condition(PREFLIGHT_FAILED_CONDITION).unwrap();
    assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("True", "ChecksFailed"));
    assert!(condition.message.contains("WindowsBuild: Windows build 14393"), "{}", condition.message);
    assert!(condition.message.contains("DiskSpace: C: has 1024.0 MiB free"), "{}", condition.message);
    assert!(status.condition_is_true("Degraded"));

    // The admin reinstalls the host with Windows Server 2022 and enough room: the next attempt goes ahead.
    world.host.set_identity_json(IDENTITY);
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForNode);
    let status = world.record().status.unwrap();
    let condition = status.condition(PREFLIGHT_FAILED_CONDITION).unwrap();
    assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("False", "ChecksPassed"));
    assert_eq!(status.phase, Some(InstancePhase::WaitingForNode));
}

/// Moves the record's bootstrap window `hours` into the past, as that much time passing would (the flow stamps
/// `configuringSince` with the system clock).
async fn let_hours_pass(world: &World, hours: i64) -> jiff::Timestamp {
    let mut status = world.record().status.unwrap();
    let since = status.configuring_since.as_ref().unwrap().0 - jiff::SignedDuration::from_hours(hours);
    status.configuring_since = Some(since.into());
    world.records.apply_status(NAMESPACE, NAME, &status).await.unwrap();
    since
}

fn window_start(world: &World) -> jiff::Timestamp {
    world.record().status.unwrap().configuring_since.unwrap().0
}

#[tokio::test]
async fn a_host_fixed_hours_after_its_preflight_failed_gets_a_bootstrap_window_from_the_pass_that_writes_its_files() {
    let world = World::new().await;
    let session = world.session();
    world.host.set_identity_json(
        r#"{"hostname":"WIN-A","fqdn":"win-a","ip":"203.0.113.7","build":"20348","ubr":2849,"freeBytes":1073741824,"containers":true}"#,
    );
    world.configure(&session).await.unwrap_err();
    assert_eq!(world.record().status.unwrap().phase, Some(InstancePhase::Failed));

    // The admin frees room on C: three hours later: the window the failed attempt opened closed long ago.
    let closed = let_hours_pass(&world, 3).await;
    world.host.set_identity_json(IDENTITY);
    let before = jiff::Timestamp::now();
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForNode);
    let opened = window_start(&world);
    assert!(opened >= before, "the window stayed at {opened}, closed since {closed}: the kubelet is never approved");
    let log = summary(&world.host.take_log());
    assert!(log.contains(&format!("upload {BOOTSTRAP_KUBECONFIG}")), "{log:?}");
    assert_eq!(world.record().status.unwrap().phase, Some(InstancePhase::WaitingForNode));

    // A pass that writes nothing, and a fresh token while the window is young, keep it.
    world.configure(&world.probing_session()).await.unwrap();
    world.files.set(BOOTSTRAP_KUBECONFIG, b"token: fresh");
    world.configure(&world.probing_session()).await.unwrap();
    assert_eq!(window_start(&world), opened);
}

#[tokio::test]
async fn a_host_back_after_hours_away_gets_a_new_bootstrap_window_with_its_fresh_token() {
    let world = World::new().await;
    let session = world.session();
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForNode);
    world.records.apply_bootstrap_key(NAMESPACE, NAME, Some("key-of-the-first-window")).await.unwrap();

    // The host is away for three hours; the operator mints node-bootstrapper tokens meanwhile.
    world.host.set_fault(Fault::Unreachable);
    world.configure(&world.probing_session()).await.unwrap_err();
    let closed = let_hours_pass(&world, 3).await;
    world.host.set_fault(Fault::None);
    world.files.set(BOOTSTRAP_KUBECONFIG, b"token: minted while the host was away");
    let before = jiff::Timestamp::now();
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForNode);

    let status = world.record().status.unwrap();
    let opened = status.configuring_since.unwrap().0;
    assert!(opened >= before, "the window stayed at {opened}, closed since {closed}");
    assert_eq!(status.approved_bootstrap_key_sha256, None, "the first window's key binds no later one");
    assert_eq!(status.phase, Some(InstancePhase::WaitingForNode));
}

/// Configures the record `name` (other than the World's own) whose host is `host`.
async fn configure_other(world: &World, name: &str, host: &Arc<FakeWindowsHost>) -> Result<ConfigureState, FlowError> {
    let instance = world.records.record(NAMESPACE, name).unwrap();
    let settings = sample_service_settings();
    let inputs = ConfigureInputs {
        instance: &instance,
        settings: &settings,
        files: &world.files,
        operator_version: VERSION,
        pub_key_hash: KEY_HASH,
        drain: &DrainOptions::default(),
    };
    let session = HostSession::new(host.clone());
    configure(&session, world.cluster(), &inputs).await.map(|outcome| outcome.state)
}

/// A second host whose identity is `identity`, with its record `name` applied.
async fn other_host(world: &World, name: &str, address: &str, identity: &str) -> Arc<FakeWindowsHost> {
    let record = objects::record(name).in_namespace(NAMESPACE).byoh(address).build();
    world.records.apply(&record).await.unwrap();
    Arc::new(FakeWindowsHost::new(identity, catalog()))
}

#[tokio::test]
async fn a_cloned_host_whose_name_another_hosts_node_holds_is_refused_and_that_node_is_never_touched() {
    let world = World::new().await;
    world.configure_to_ready(&world.session()).await;
    let owner = world.nodes.node(NAME).unwrap();
    // A clone of the same image: the same host name, another address.
    let clone = other_host(&world, "win-a-clone", "10.0.0.6",
        r#"{"hostname":"WIN-A","fqdn":"win-a.lab.example","ip":"203.0.113.8","build":"20348","ubr":2849,"freeBytes":85899345920,"containers":true}"#,
    ).await;

    let error = configure_other(&world, "win-a-clone", &clone).await.unwrap_err();

    assert!(error.is_node_name_conflict(), "{error}");
    assert!(
        error
            .to_string()
            .contains(&format!("Node name {NAME} is taken: it belongs to WindowsInstance {NAMESPACE}/{NAME}")),
        "{error}"
    );
    let status = world.records.record(NAMESPACE, "win-a-clone").unwrap().status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::Failed));
    assert_eq!(status.expected_node_name, None, "the clone's record must not expect the other host's Node");
    let condition = status.condition(NODE_NAME_CONFLICT_CONDITION).unwrap();
    assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("True", "NodeNameTaken"));
    assert!(summary(&clone.take_log()).iter().all(|op| !op.starts_with("upload") && !op.starts_with("sc ")));
    assert_eq!(world.nodes.node(NAME).unwrap(), owner, "the owner's Node was touched");

    // Removing the clone cleans the clone and leaves the owner's Node alone.
    let instance = world.records.record(NAMESPACE, "win-a-clone").unwrap();
    let deconfigured = deconfigure(
        &HostSession::new(clone.clone()),
        world.cluster(),
        &DeconfigureInputs { instance: &instance, drain: &DrainOptions::default() },
    )
    .await
    .unwrap();
    assert_eq!(deconfigured.node_name, None);
    assert_eq!(world.nodes.node(NAME).unwrap(), owner);
    assert!(world.drainer.drained().is_empty());
}

#[tokio::test]
async fn a_windows_host_named_like_a_linux_node_never_touches_that_node_and_its_removal_keeps_it() {
    let world = World::new().await;
    let control_plane =
        objects::node("master-0").labelled("kubernetes.io/os", "linux").internal_ip("10.0.0.100").ready().build();
    world.nodes.insert(control_plane.clone());
    world.host.set_identity_json(
        r#"{"hostname":"MASTER-0","fqdn":"master-0.lab.example","ip":"203.0.113.7","build":"20348","ubr":2849,"freeBytes":85899345920,"containers":true}"#,
    );

    let error = world.configure(&world.session()).await.unwrap_err();

    assert!(
        error.to_string().contains("Node name master-0 is taken: it is not a Windows Node (kubernetes.io/os=linux)"),
        "{error}"
    );
    assert_eq!(world.record().status.unwrap().expected_node_name, None);
    world.deconfigure(&world.session()).await.unwrap();
    assert_eq!(world.nodes.node("master-0").unwrap(), control_plane, "the control-plane Node was touched");
    assert!(world.drainer.drained().is_empty(), "{:?}", world.drainer.drained());
}

#[tokio::test]
async fn a_second_record_expecting_a_name_before_any_node_registers_waits_for_the_first() {
    let world = World::new().await;
    assert_eq!(world.configure(&world.session()).await.unwrap().state, ConfigureState::WaitingForNode);
    let clone = other_host(&world, "win-a-clone", "10.0.0.6",
        r#"{"hostname":"win-a","fqdn":"win-a","ip":"203.0.113.8","build":"20348","ubr":2849,"freeBytes":85899345920,"containers":true}"#,
    ).await;

    let error = configure_other(&world, "win-a-clone", &clone).await.unwrap_err();

    assert!(error.to_string().contains(&format!("WindowsInstance {NAMESPACE}/{NAME} already expects it")), "{error}");
    assert!(summary(&clone.take_log()).iter().all(|op| !op.starts_with("upload")), "the clone's kubelet would compete");
}

#[tokio::test]
async fn a_node_left_unowned_by_an_earlier_version_is_claimed_on_the_first_pass_and_one_whose_owner_is_gone_too() {
    let world = World::new().await;
    world.configure_to_ready(&world.session()).await;
    let uid = world.record().metadata.uid.unwrap();
    assert_eq!(world.nodes.node(NAME).unwrap().annotation(INSTANCE_UID_ANNOTATION), Some(uid.as_str()));

    // The record is recreated (a new UID) while the Node stays: the Node's owner is gone, the Node is the host's.
    let mut node = world.nodes.node(NAME).unwrap();
    node.metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(INSTANCE_UID_ANNOTATION.into(), "uid-of-a-deleted-record".into());
    world.nodes.insert(node);
    assert_eq!(world.configure(&world.probing_session()).await.unwrap().state, ConfigureState::Ready);
    assert_eq!(world.nodes.node(NAME).unwrap().annotation(INSTANCE_UID_ANNOTATION), Some(uid.as_str()));
}

#[tokio::test]
async fn fresh_host_is_configured_in_two_phases_in_order() {
    let world = World::new().await;
    let session = world.session();

    let outcome = world.configure(&session).await.unwrap();
    assert_eq!(outcome.state, ConfigureState::WaitingForNode);
    assert_eq!(outcome.node_name, "win-a");
    let identity = HostIdentity::parse(IDENTITY).unwrap();
    let bootstrap_files = world.files.files(&identity, FileStage::Bootstrap).unwrap().files;
    let mut expected: Vec<String> =
        ["host key", "identity", "stat script", r"mkdir C:\k\wmco\scripts", "upload script", "probe"]
            .map(String::from)
            .to_vec();
    let log = summary(&world.host.take_log());
    let directories = log.iter().skip(expected.len()).take_while(|line| line.starts_with("mkdir ")).count();
    assert!(directories > 5, "{log:#?}");
    expected.extend(log[expected.len()..expected.len() + directories].iter().cloned());
    // The private directories (C:\k, C:\var\lib\kubelet, the logs) for SYSTEM and Administrators before any upload.
    expected.push("restrict-directories".to_owned());
    let mut uploads: Vec<&WinPath> = bootstrap_files.files().iter().map(|file| &file.destination).collect();
    uploads.sort();
    expected.extend(uploads.iter().map(|path| format!("upload {path}")));
    expected.push("firewall + defender-exclusion".to_owned());
    expected.extend(create("containerd"));
    expected.extend(create("kubelet"));
    expected.extend(["sc start containerd", "sc start kubelet"].map(String::from));
    assert_eq!(log, expected);
    assert_eq!(outcome.uploads, 1 + bootstrap_files.files().len() as u64);
    // The identity, the probe, the restriction of the new private directories, one hash check per verified host
    // file (this host places files one at a time), and one chain: the firewall rule, containerd's Defender exclusion
    // and the services' ten sc.exe calls.
    assert_eq!(outcome.commands, 3 + bootstrap_files.files().len() as u64 + 1);
    assert_eq!(world.host.defender_exclusions(), [r"C:\k\containerd\containerd.exe".to_owned()].into());

    let status = world.record().status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::WaitingForNode));
    assert_eq!(status.expected_node_name.as_deref(), Some("win-a"));
    assert_eq!(status.node_ip, Some("203.0.113.7".parse().unwrap()));
    assert_eq!(status.fqdn.as_deref(), Some("win-a.lab.example"));
    assert_eq!(status.pinned_host_key.as_deref(), Some(HOST_KEY));
    assert!(status.configuring_since.is_some());

    // The Node registers without its subnet: the bootstrap kubeconfig goes, phase 2 waits.
    world.register_node(false);
    let outcome = world.configure(&session).await.unwrap();
    assert_eq!(outcome.state, ConfigureState::WaitingForSubnet);
    assert_eq!(summary(&world.host.take_log()), ["probe", r"remove C:\k\bootstrap-kubeconfig"].map(String::from));
    assert_eq!(world.host.file_hash(BOOTSTRAP_KUBECONFIG), None);

    // The subnet arrives: phase 2 services, labels, Ready.
    world.register_node(true);
    let outcome = world.configure(&session).await.unwrap();
    assert_eq!(outcome.state, ConfigureState::Ready);
    let log = summary(&world.host.take_log());
    assert_eq!(&log[..3], ["stat script", "upload script", "probe"]);
    let firewall = position(&log, "firewall");
    assert!(log[3..firewall].iter().all(|line| line.starts_with("upload C:\\k\\")), "{log:#?}");
    assert_eq!(log[firewall + 1], "sc create csi-proxy");
    assert!(log[3..firewall].contains(&r"upload C:\k\kube-proxy.conf".to_owned()));
    assert!(!log.iter().any(|line| line.contains("bootstrap-kubeconfig")), "{log:#?}");
    let sc: Vec<&str> = log
        .iter()
        .filter(|line| line.starts_with("sc create") || line.starts_with("sc start"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        sc,
        [
            "sc create csi-proxy",
            "sc create hybrid-overlay-node",
            "sc create kube-proxy",
            "sc create windows_exporter",
            "sc start csi-proxy",
            "sc start hybrid-overlay-node",
            "sc start kube-proxy",
            "sc start windows_exporter",
        ]
    );
    assert_eq!(log.last().map(String::as_str), Some("probe"));
    assert!(world.host.services().values().all(|running| *running));
    assert_eq!(world.host.services().len(), 6);

    let node = world.nodes.node(NAME).unwrap();
    let labels = node.metadata.labels.unwrap();
    assert_eq!(labels.get(BYOH_LABEL).map(String::as_str), Some("true"));
    assert_eq!(labels.get(WORKER_ROLE_LABEL).map(String::as_str), Some(""));
    let annotations = node.metadata.annotations.unwrap();
    assert_eq!(annotations.get(PUB_KEY_HASH_ANNOTATION).map(String::as_str), Some(KEY_HASH));
    assert_eq!(annotations.get(VERSION_ANNOTATION).map(String::as_str), Some(VERSION));
    let status = world.record().status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::Ready));
    assert_eq!(status.configured_version.as_deref(), Some(VERSION));
    assert_eq!(status.configuring_since, None);
}

/// `(Ready, Progressing, Degraded)` of the record, each as `status/reason`.
fn summary_conditions(world: &World) -> [String; 3] {
    let status = world.record().status.unwrap();
    ["Ready", "Progressing", "Degraded"].map(|type_| {
        let condition = status.condition(type_).unwrap_or_else(|| panic!("no {type_} condition: {status:?}"));
        format!("{}/{}", condition.status, condition.reason)
    })
}

#[tokio::test]
async fn the_summary_conditions_follow_the_host_from_bootstrap_to_ready_and_removal() {
    let world = World::new().await;
    let session = world.session();
    world.configure(&session).await.unwrap();
    assert_eq!(summary_conditions(&world), ["False/WaitingForNode", "True/WaitingForNode", "False/AsExpected"]);
    world.register_node(true);
    world.configure(&session).await.unwrap();
    assert_eq!(summary_conditions(&world), ["True/Configured", "False/Configured", "False/AsExpected"]);
    let ready = world.record().status.unwrap();
    assert!(ready.condition("Ready").unwrap().message.contains("10.17.0"), "{ready:?}");

    let writes = world.records.status_writes();
    world.configure(&session).await.unwrap();
    assert_eq!(world.records.status_writes(), writes, "a converged host writes no condition");

    world.host.set_fault(Fault::Unreachable);
    world.configure(&world.session()).await.unwrap_err();
    assert_eq!(summary_conditions(&world), ["True/Configured", "False/Configured", "True/RetryingAfterError"]);
    world.host.set_fault(Fault::None);
    world.deconfigure(&session).await.unwrap();
    assert_eq!(summary_conditions(&world), ["False/Deconfiguring", "True/Deconfiguring", "False/AsExpected"]);
}

#[tokio::test]
async fn a_withheld_service_waits_while_networking_and_the_rest_reach_ready_and_starts_once_released() {
    let world = World::new().await;
    let session = world.session();
    let missing =
        WithheldService::new("windows_exporter", "Secret wmco/windows-machine-config-operator-tls does not exist");
    world.files.withhold(std::slice::from_ref(&missing));
    assert_eq!(world.configure(&session).await.unwrap().withheld, [], "the bootstrap stage withholds nothing");
    world.register_node(true);
    let outcome = world.configure(&session).await.unwrap();
    assert_eq!((outcome.state, outcome.withheld), (ConfigureState::Ready, vec![missing]));
    let log = summary(&world.host.take_log());
    // Its binary is part of the payload and uploaded; the service is neither created nor started.
    assert!(!log.iter().any(|line| line.starts_with("sc ") && line.ends_with(" windows_exporter")), "{log:#?}");
    for started in ["sc start hybrid-overlay-node", "sc start kube-proxy", "sc start csi-proxy"] {
        position(&log, started);
    }
    assert_eq!(world.record().status.unwrap().phase, Some(InstancePhase::Ready));

    world.files.withhold(&[]);
    let outcome = world.configure(&session).await.unwrap();
    assert_eq!((outcome.state, outcome.withheld), (ConfigureState::Ready, vec![]));
    let log = summary(&world.host.take_log());
    assert!(position(&log, "sc create windows_exporter") < position(&log, "sc start windows_exporter"), "{log:#?}");
    assert!(!log.iter().any(|line| line.starts_with("sc stop")), "nothing else restarts: {log:#?}");
}

#[tokio::test]
async fn withholding_a_service_withholds_what_depends_on_it() {
    let world = World::new().await;
    let session = world.session();
    let missing = WithheldService::new("hybrid-overlay-node", "an input is missing");
    world.files.withhold(std::slice::from_ref(&missing));
    world.configure(&session).await.unwrap();
    world.register_node(true);
    let outcome = world.configure(&session).await.unwrap();
    assert_eq!(
        outcome.withheld,
        [missing, WithheldService::new("kube-proxy", "depends on hybrid-overlay-node, withheld: an input is missing")]
    );
    let log = summary(&world.host.take_log());
    let touched = |line: &String| {
        line.starts_with("sc ") && (line.ends_with(" kube-proxy") || line.ends_with(" hybrid-overlay-node"))
    };
    assert!(!log.iter().any(touched), "{log:#?}");
    position(&log, "sc start windows_exporter");
}

#[tokio::test]
async fn converged_host_costs_one_probe_and_no_upload() {
    let world = World::new().await;
    let session = world.probing_session();
    world.configure_to_ready(&session).await;
    world.host.take_log();

    let outcome = world.configure(&session).await.unwrap();
    assert_eq!(outcome.state, ConfigureState::Ready);
    assert_eq!((outcome.steps_applied, outcome.commands, outcome.uploads), (0, 1, 0));
    assert_eq!(summary(&world.host.take_log()), ["probe"]);
}

#[tokio::test]
async fn a_pass_with_nothing_changed_since_the_last_one_touches_no_host_until_an_input_changes() {
    let world = World::new().await;
    let session = world.session();
    world.configure(&session).await.unwrap();
    world.host.take_log();
    // The pass's own status write and a Node-less heartbeat trigger passes: nothing changed, nothing is sent.
    let waiting = world.configure(&session).await.unwrap();
    assert_eq!((waiting.state, waiting.commands), (ConfigureState::WaitingForNode, 0));
    assert!(world.host.take_log().is_empty());

    world.configure_to_ready(&session).await;
    world.host.take_log();
    let ready = world.configure(&session).await.unwrap();
    assert_eq!((ready.state, ready.commands, ready.uploads), (ConfigureState::Ready, 0, 0));
    assert!(world.host.take_log().is_empty(), "the pass's own label and annotation patch changed nothing");

    // Someone labels the Node: the next pass probes, and remembers again.
    let patch = NodeMetadataPatch::default().set_label("example.com/team", "a");
    world.nodes.patch_metadata(NAME, &patch).await.unwrap();
    let probed = world.configure(&session).await.unwrap();
    assert_eq!((probed.state, probed.commands), (ConfigureState::Ready, 1));
    assert_eq!(world.configure(&session).await.unwrap().commands, 0);

    // An admin labels the record to have it looked at again: the next pass probes.
    let mut touched = world.record();
    touched.metadata.labels.get_or_insert_default().insert("example.com/touched".to_owned(), "1".to_owned());
    world.records.apply(&touched).await.unwrap();
    assert_eq!(world.configure(&session).await.unwrap().commands, 1);

    // A failed pass is forgotten: the next one probes.
    world.host.set_fault(Fault::Unreachable);
    world.nodes.patch_metadata(NAME, &NodeMetadataPatch::default().set_label("example.com/team", "b")).await.unwrap();
    world.configure(&session).await.unwrap_err();
    world.host.set_fault(Fault::None);
    assert_eq!(world.configure(&session).await.unwrap().commands, 1);
}

#[tokio::test]
async fn a_restarted_operator_finds_the_probe_script_on_the_host_and_uploads_nothing() {
    let world = World::new().await;
    world.configure_to_ready(&world.session()).await;
    world.host.take_log();

    let restarted = world.session();
    let outcome = world.configure(&restarted).await.unwrap();
    assert_eq!((outcome.state, outcome.commands, outcome.uploads), (ConfigureState::Ready, 1, 0));
    assert_eq!(summary(&world.host.take_log()), ["stat script", "probe"], "one SFTP request, one command");
}

#[tokio::test]
async fn a_node_not_ready_gets_no_version_annotation() {
    let world = World::new().await;
    let session = world.session();
    world.configure(&session).await.unwrap();
    world.register_node(true);
    let mut node = world.nodes.node(NAME).unwrap();
    node.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    world.nodes.insert(node);

    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForReady);
    let annotations = world.nodes.node(NAME).unwrap().metadata.annotations.unwrap();
    assert_eq!(annotations.get(VERSION_ANNOTATION), None);
    assert_eq!(annotations.get(PUB_KEY_HASH_ANNOTATION).map(String::as_str), Some(KEY_HASH));
    assert_eq!(world.record().status.unwrap().phase, Some(InstancePhase::WaitingForNode));
}

#[tokio::test]
async fn a_node_stage_started_while_the_node_is_not_ready_waits_for_it_without_probing_until_it_turns_ready() {
    let world = World::new().await;
    let session = world.session();
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForNode);
    world.register_node(true);
    world.set_node_ready(false);
    world.host.take_log();

    let started = world.configure(&session).await.unwrap();
    assert_eq!(started.state, ConfigureState::WaitingForReady);
    let log = summary(&world.host.take_log());
    assert_eq!(log.iter().filter(|line| *line == "probe").count(), 1, "no probe after the chain: {log:#?}");
    assert!(log.contains(&"sc start kube-proxy".to_owned()), "{log:#?}");
    assert_eq!(world.record().status.unwrap().phase, Some(InstancePhase::WaitingForNode));

    // Its own status write, a heartbeat, a recheck: nothing changed, nothing sent.
    let unchanged = world.configure(&session).await.unwrap();
    assert_eq!((unchanged.state, unchanged.commands), (ConfigureState::WaitingForReady, 0));

    // kube-proxy exited meanwhile; the Node turns Ready: a probe finds it, a chain starts it, a probe sees all run.
    world.host.exit_service("kube-proxy");
    world.set_node_ready(true);
    let ready = world.configure(&session).await.unwrap();
    assert_eq!((ready.state, ready.commands), (ConfigureState::Ready, 3));
    assert_eq!(summary(&world.host.take_log()), ["probe", "sc start kube-proxy", "probe"]);
}

#[tokio::test]
async fn a_service_that_exits_after_its_start_is_answered_from_memory_for_a_moment_then_probed_again() {
    let world = World::new().await;
    world.configure_to_ready(&world.session()).await;
    world.host.set_exits_on_start("kube-proxy", true);
    world.host.exit_service("kube-proxy");
    world.host.take_log();

    // A new session (the drift check of a restarted operator): the Ready pass is not remembered.
    let moment = Duration::from_millis(50);
    let session = HostSession::with_settings(
        world.host.clone(),
        SessionSettings { services_wait_window: moment, ..SessionSettings::default() },
    );
    let started = world.configure(&session).await.unwrap();
    assert_eq!((started.state, started.commands), (ConfigureState::WaitingForServices, 3));
    assert_eq!(summary(&world.host.take_log()), ["stat script", "probe", "sc start kube-proxy", "probe"]);
    // The watch events of the pass's own writes, at once: nothing sent.
    let echo = world.configure(&session).await.unwrap();
    assert_eq!((echo.state, echo.commands), (ConfigureState::WaitingForServices, 0));
    // The recheck after the moment probes, finds kube-proxy stopped again and starts it.
    tokio::time::sleep(moment * 2).await;
    let recheck = world.configure(&session).await.unwrap();
    assert_eq!((recheck.state, recheck.commands), (ConfigureState::WaitingForServices, 3));
    assert_eq!(summary(&world.host.take_log()), ["probe", "sc start kube-proxy", "probe"]);

    world.host.set_exits_on_start("kube-proxy", false);
    tokio::time::sleep(moment * 2).await;
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Ready);
}

#[tokio::test]
async fn a_changed_binary_is_replaced_after_its_service_and_dependents_stop() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    world.host.take_log();

    world.files.set(r"C:\k\kubelet.exe", b"kubelet v2");
    let outcome = world.configure_granted(&session).await.unwrap();
    assert_eq!(outcome.state, ConfigureState::Ready);
    assert_eq!(
        summary(&world.host.take_log()),
        [
            "probe",
            "sc stop kube-proxy",
            "sc stop hybrid-overlay-node",
            "sc stop kubelet",
            r"upload C:\k\kubelet.exe",
            "sc start kubelet",
            "sc start hybrid-overlay-node",
            "sc start kube-proxy",
            "probe"
        ]
    );
    let expected = world.files.file(r"C:\k\kubelet.exe").sha256.to_string();
    assert_eq!(world.host.file_hash(r"C:\k\kubelet.exe"), Some(expected));
}

/// Breaks the connection after every possible number of operations of a full configure, then lets a fresh
/// session (a restarted operator) finish: the host always converges to the same state, without duplicate
/// services (a duplicate `sc create` fails with 1073 on the fake) or missing files.
#[tokio::test]
async fn a_crash_at_any_operation_resumes_to_the_same_host() {
    let reference = World::new().await;
    reference.configure_to_ready(&reference.session()).await;
    let total_ops = reference.host.take_log().len();
    assert!(total_ops > 50, "{total_ops}");
    for break_after in 0..=total_ops {
        let world = World::new().await;
        world.host.set_fault(Fault::BreakAfter(break_after));
        let crashing = world.session();
        let first = world.configure(&crashing).await;
        let crashed_in_first_pass = first.is_err();
        if let Err(error) = &first {
            assert!(error.is_retryable(), "{error}");
            let status = world.record().status.unwrap();
            assert_ne!(status.phase, Some(InstancePhase::Failed));
            assert_eq!(status.last_error, Some(error.to_string()));
        } else {
            world.register_node(true);
            let second = world.configure(&crashing).await;
            assert_eq!(second.is_ok(), break_after == total_ops, "break after {break_after}");
            if second.is_ok() {
                continue;
            }
        }
        world.host.set_fault(Fault::None);
        let restarted = world.session();
        if crashed_in_first_pass {
            world.configure(&restarted).await.unwrap();
            world.register_node(true);
        }
        let outcome = world.configure(&restarted).await.unwrap();
        assert_eq!(outcome.state, ConfigureState::Ready, "break after {break_after}");
        assert_eq!(world.host.services(), reference.host.services(), "break after {break_after}");
        assert_eq!(world.host.file_paths(), reference.host.file_paths(), "break after {break_after}");
        for path in reference.host.file_paths() {
            assert_eq!(world.host.file_hash(&path), reference.host.file_hash(&path), "{path}");
        }
        assert_eq!(world.record().status.unwrap().last_error, None);
    }
}

#[tokio::test]
async fn an_unreachable_host_is_a_retryable_error_recorded_on_the_instance() {
    let world = World::new().await;
    world.host.set_fault(Fault::Unreachable);
    let error = world.configure(&world.session()).await.unwrap_err();
    assert!(error.is_retryable());
    assert_eq!(error.metric_label(), "unreachable");
    assert_eq!(error.step(), Some(crate::FlowStep::PinHostKey));
    let status = world.record().status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::Configuring));
    assert_eq!(status.last_error, Some(error.to_string()));
    assert!(world.host.take_log().is_empty());
}

#[tokio::test]
async fn a_host_key_mismatch_fails_permanently_and_sends_nothing() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    world.host.take_log();

    world.host.set_fault(Fault::HostKeyMismatch);
    let error = world.configure(&world.session()).await.unwrap_err();
    assert!(!error.is_retryable());
    assert!(error.is_host_key_mismatch());
    assert_eq!(error.metric_label(), "host_key_mismatch");
    assert!(world.host.take_log().is_empty());
    let status = world.record().status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::Failed));
    assert!(status.last_error.as_deref().unwrap().contains("host key changed"));
    let mismatch = status.condition("HostKeyMismatch").unwrap();
    assert_eq!((mismatch.status.as_str(), mismatch.reason.as_str()), ("True", "HostKeyChanged"));
    assert!(!status.condition_is_true("Ready") && status.condition_is_true("Degraded"));

    // Another attempt writes nothing: a status write per attempt would retrigger the controller forever.
    let writes = world.records.status_writes();
    let first = world.record().status.unwrap();
    let again = world.configure(&world.session()).await.unwrap_err();
    assert!(again.is_host_key_mismatch());
    assert_eq!(world.record().status.unwrap(), first);
    assert_eq!(world.records.status_writes(), writes);
    assert_eq!(world.record().status.unwrap().phase, Some(InstancePhase::Failed));
}

#[tokio::test]
async fn a_refused_login_records_when_the_refusals_began_until_a_login_succeeds() {
    let world = World::new().await;
    let failing_since = |world: &World| world.record().status.unwrap().authentication_failing_since();
    world.host.set_fault(Fault::AuthenticationRefused);
    let before = jiff::Timestamp::now();
    let error = world.configure(&world.session()).await.unwrap_err();
    assert!(error.is_authentication_failure());
    let status = world.record().status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::Failed));
    let condition = status.condition("AuthenticationFailed").unwrap();
    assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("True", "KeyRefused"));
    assert_eq!(condition.message, error.to_string());
    let degraded = status.condition("Degraded").unwrap();
    assert_eq!((degraded.status.as_str(), degraded.reason.as_str()), ("True", "AuthenticationFailed"));
    let began = failing_since(&world).unwrap();
    assert!(began >= before && began <= jiff::Timestamp::now());

    world.configure(&world.session()).await.unwrap_err();
    assert_eq!(failing_since(&world), Some(began), "a refusal that goes on keeps its start");
    world.host.set_fault(Fault::Unreachable);
    world.configure(&world.session()).await.unwrap_err();
    assert_eq!(failing_since(&world), Some(began), "an unreachable host says nothing about the key");

    world.host.set_fault(Fault::None);
    world.configure(&world.session()).await.unwrap();
    let status = world.record().status.unwrap();
    assert_eq!(status.authentication_failing_since(), None);
    let condition = status.condition("AuthenticationFailed").unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "KeyAccepted"),
        "set False, not removed"
    );
    assert!(condition.last_transition_time.0 > began);
}

#[tokio::test]
async fn deconfigure_drains_then_removes_services_dependents_first_then_files_networks_and_node() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    for network in HYBRID_OVERLAY_NETWORKS {
        world.host.add_hns_network(network);
    }
    world.host.take_log();

    let outcome = world.deconfigure(&session).await.unwrap();
    assert_eq!(outcome.node_name.as_deref(), Some(NAME));
    assert!(outcome.host_cleaned);
    assert!(outcome.forced_past.is_empty());
    assert_eq!(world.drainer.drained(), [NAME]);
    assert!(world.nodes.node(NAME).is_none());

    let log = summary(&world.host.take_log());
    assert_eq!(&log[..3], ["stat script", "upload script", "probe"]);
    assert_eq!(&log[log.len() - 2..], ["remove-directories", "remove-hns"]);
    let stops: Vec<&String> = log.iter().filter(|line| line.starts_with("sc stop")).collect();
    let deletes: Vec<&String> = log.iter().filter(|line| line.starts_with("sc delete")).collect();
    assert_eq!(stops.len(), 6);
    assert_eq!(deletes.len(), 6);
    assert!(
        log.contains(&"remove-firewall + remove-firewall + remove-defender-exclusion".to_owned()),
        "one PowerShell process removes both rules and the exclusion: {log:#?}"
    );
    assert_eq!(log.len(), 3 + 6 + 6 + 1 + 2, "{log:#?}");
    assert!(world.host.firewall_rules().is_empty(), "{:?}", world.host.firewall_rules());
    assert!(world.host.defender_exclusions().is_empty(), "{:?}", world.host.defender_exclusions());
    for (dependent, dependency) in [("kube-proxy", "hybrid-overlay-node"), ("kubelet", "containerd")] {
        for verb in ["stop", "delete"] {
            assert!(
                position(&log, &format!("sc {verb} {dependent}")) < position(&log, &format!("sc {verb} {dependency}")),
                "{verb} {dependent} before {dependency}: {log:#?}"
            );
        }
    }
    assert!(position(&log, "sc delete kube-proxy") > position(&log, "sc stop containerd"), "stops before deletes");
    assert!(world.host.services().is_empty());
    assert!(world.host.file_paths().is_empty(), "{:?}", world.host.file_paths());
    assert!(!world.host.directories().contains(r"c:\k"));
    assert!(world.host.hns_networks().is_empty());
    assert_eq!(world.record().status.unwrap().phase, Some(InstancePhase::Deconfiguring));

    // A second run finds nothing to do on the host and no Node.
    let again = world.deconfigure(&session).await.unwrap();
    assert_eq!(again.node_name, None);
    assert_eq!(
        summary(&world.host.take_log()),
        ["stat script", r"mkdir C:\k\wmco\scripts", "upload script", "probe", "remove-directories", "remove-hns"]
    );
}

#[tokio::test]
async fn deconfigure_of_an_unreachable_host_keeps_the_node_unless_force_remove_is_set() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    world.host.set_fault(Fault::Unreachable);

    let error = world.deconfigure(&session).await.unwrap_err();
    assert!(error.is_retryable(), "{error}");
    assert_eq!(error.step(), Some(crate::FlowStep::Probe));
    let node = world.nodes.node(NAME).expect("the Node stays");
    assert_eq!(node.spec.unwrap().unschedulable, Some(true));

    let mut instance = world.record();
    instance.metadata.annotations = Some([(FORCE_REMOVE_ANNOTATION.to_owned(), "true".to_owned())].into());
    let drain = DrainOptions::default();
    let outcome = deconfigure(&session, world.cluster(), &DeconfigureInputs { instance: &instance, drain: &drain })
        .await
        .unwrap();
    assert!(!outcome.host_cleaned);
    assert_eq!(outcome.forced_past.len(), 1);
    assert!(outcome.forced_past[0].contains("unreachable"), "{:?}", outcome.forced_past);
    assert!(world.nodes.node(NAME).is_none());
}

#[tokio::test]
async fn deconfigure_of_an_unreachable_machine_host_skips_the_host_and_deletes_the_node() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    world.host.set_fault(Fault::Unreachable);

    let mut instance = world.record();
    instance.spec.origin = InstanceOrigin::Machine;
    let drain = DrainOptions::default();
    let outcome = deconfigure(&session, world.cluster(), &DeconfigureInputs { instance: &instance, drain: &drain })
        .await
        .unwrap();
    assert!(!outcome.host_cleaned);
    assert_eq!(outcome.node_name.as_deref(), Some(NAME));
    assert_eq!(outcome.forced_past.len(), 1);
    assert!(outcome.forced_past[0].contains("unreachable"), "{:?}", outcome.forced_past);
    assert!(world.nodes.node(NAME).is_none());
}

#[tokio::test]
async fn a_blocked_drain_stops_deconfiguration_before_the_host_is_touched() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    world.host.take_log();
    world.drainer.block(
        NAME,
        vec![BlockedPod {
            pod: "apps/web-0".into(),
            reason: BlockReason::DisruptionBudget("budget web allows 0".into()),
        }],
    );

    let error = world.deconfigure(&session).await.unwrap_err();
    assert_eq!(error.step(), Some(crate::FlowStep::Drain));
    assert!(error.is_retryable());
    assert!(world.host.take_log().is_empty());
    assert!(world.nodes.node(NAME).is_some());
    assert_eq!(world.host.services().len(), 6);
}

#[tokio::test]
async fn a_stop_pending_service_is_polled_until_stopped_before_its_binary_is_replaced() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    world.host.take_log();
    world.host.set_stop_pending_queries(2);

    world.files.set(r"C:\k\containerd\containerd.exe", b"containerd v2");
    assert_eq!(world.configure_granted(&session).await.unwrap().state, ConfigureState::Ready);
    let log = summary(&world.host.take_log());
    let stop = position(&log, "sc stop containerd");
    assert_eq!(
        &log[stop..stop + 5],
        [
            "sc stop containerd",
            "sc query containerd",
            "sc query containerd",
            "sc query containerd",
            r"upload C:\k\containerd\containerd.exe"
        ]
    );
}

#[tokio::test]
async fn a_service_that_never_stops_is_a_retryable_timeout() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    world.host.set_stop_pending_queries(usize::MAX);
    world.files.set(r"C:\k\kubelet.exe", b"kubelet v2");

    let short = HostSession::with_settings(
        world.host.clone(),
        SessionSettings {
            stop_timeout: Duration::from_millis(3),
            stop_poll_interval: Duration::from_millis(1),
            ..SessionSettings::default()
        },
    );
    let error = world.configure_granted(&short).await.unwrap_err();
    assert!(matches!(&error, FlowError::StopTimedOut { service, .. } if service == "kube-proxy"), "{error}");
    assert!(error.is_retryable());
    let old_binary = Files::default().file(r"C:\k\kubelet.exe").sha256.to_string();
    assert_eq!(world.host.file_hash(r"C:\k\kubelet.exe"), Some(old_binary), "the old binary stays");
}

#[tokio::test]
async fn a_changed_configuration_file_restarts_the_service_that_reads_it() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    world.host.take_log();

    world.files.set(r"C:\k\kubelet.conf", b"{\"kind\":\"KubeletConfiguration\"}");
    world.configure_granted(&session).await.unwrap();
    assert_eq!(
        summary(&world.host.take_log()),
        [
            "probe",
            "sc stop kube-proxy",
            "sc stop hybrid-overlay-node",
            "sc stop kubelet",
            r"upload C:\k\kubelet.conf",
            "sc start kubelet",
            "sc start hybrid-overlay-node",
            "sc start kube-proxy",
            "probe"
        ]
    );
}

#[tokio::test]
async fn a_fresh_bootstrap_token_is_uploaded_without_restarting_the_kubelet() {
    let world = World::new().await;
    let session = world.session();
    world.configure(&session).await.unwrap();
    world.host.take_log();

    world.files.set(BOOTSTRAP_KUBECONFIG, b"token: fresh");
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForNode);
    assert_eq!(summary(&world.host.take_log()), ["probe", r"upload C:\k\bootstrap-kubeconfig"]);
}

/// Puts the version annotation `version` on the Node, as an older operator left it.
fn configured_at(world: &World, version: &str) {
    let patch = wmco_cluster_client::NodeMetadataPatch::default().set_annotation(VERSION_ANNOTATION, version);
    let mut node = world.nodes.node(NAME).unwrap();
    patch.apply_to(&mut node);
    world.nodes.insert(node);
}

/// Writes `phase` to the record, as the upgrade executor does once the Node is marked, cordoned and drained.
async fn enter_phase(world: &World, phase: InstancePhase) {
    let mut status = world.record().status.unwrap();
    status.phase = Some(phase);
    world.records.apply_status(NAMESPACE, NAME, &status).await.unwrap();
}

#[tokio::test]
async fn a_node_at_another_version_waits_for_the_upgrade_executor_without_any_ssh_or_write() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    configured_at(&world, "10.16.0");
    world.host.take_log();
    let (status_before, node_before) = (world.record().status, world.nodes.node(NAME).unwrap());

    let outcome = world.configure(&session).await.unwrap();
    assert_eq!(
        (outcome.state, outcome.node_name.as_str(), outcome.steps_applied, outcome.commands, outcome.uploads),
        (ConfigureState::WaitingForUpgrade, NAME, 0, 0, 0)
    );
    assert!(world.host.take_log().is_empty());
    assert_eq!(world.record().status, status_before);
    assert_eq!(world.nodes.node(NAME).unwrap(), node_before);
}

#[tokio::test]
async fn a_gated_host_is_reconfigured_once_its_record_is_upgrading_and_ends_ready_at_the_new_version() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    configured_at(&world, "10.16.0");
    world.files.set(r"C:\k\kubelet.exe", b"kubelet v2");
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForUpgrade);
    world.host.take_log();

    enter_phase(&world, InstancePhase::Upgrading).await;
    let outcome = world.configure(&session).await.unwrap();
    assert_eq!((outcome.state, outcome.uploads), (ConfigureState::Ready, 1));
    let log = summary(&world.host.take_log());
    assert!(position(&log, "sc stop kubelet") < position(&log, r"upload C:\k\kubelet.exe"), "{log:#?}");
    let annotations = world.nodes.node(NAME).unwrap().metadata.annotations.unwrap();
    assert_eq!(annotations.get(VERSION_ANNOTATION).map(String::as_str), Some(VERSION));
    let status = world.record().status.unwrap();
    assert_eq!((status.phase, status.configured_version.as_deref()), (Some(InstancePhase::Ready), Some(VERSION)));
}

#[tokio::test]
async fn an_upgrade_keeps_phase_upgrading_until_the_node_is_ready() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    configured_at(&world, "10.16.0");
    let mut node = world.nodes.node(NAME).unwrap();
    node.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    world.nodes.insert(node);
    enter_phase(&world, InstancePhase::Upgrading).await;

    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForReady);
    assert_eq!(world.record().status.unwrap().phase, Some(InstancePhase::Upgrading));
    let annotations = world.nodes.node(NAME).unwrap().metadata.annotations.unwrap();
    assert_eq!(annotations.get(VERSION_ANNOTATION).map(String::as_str), Some("10.16.0"));
}

#[tokio::test]
async fn build_metadata_alone_is_no_upgrade() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    configured_at(&world, &format!("{VERSION}+abc1234"));
    world.host.take_log();

    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Ready);
    assert_eq!(summary(&world.host.take_log()), ["probe"]);
}

/// The restart request a changed `kubelet.conf` makes, dependents first.
const KUBELET_RESTART: &str = "Restart Requested win-a: kube-proxy,hybrid-overlay-node,kubelet";

#[tokio::test]
async fn a_restart_on_a_node_in_service_is_requested_changes_nothing_and_is_carried_out_once_granted() {
    let world = World::new().await;
    let session = world.session();
    world.configure_to_ready(&session).await;
    assert_eq!(world.disruption(), None, "a first configuration asks for no budget");
    world.host.take_log();

    world.files.set(r"C:\k\kubelet.conf", b"{\"kind\":\"KubeletConfiguration\"}");
    let outcome = world.configure(&session).await.unwrap();
    assert_eq!((outcome.state, outcome.steps_applied, outcome.uploads), (ConfigureState::WaitingForBudget, 0, 0));
    assert_eq!(summary(&world.host.take_log()), ["probe"]);
    assert_eq!(world.disruption().as_deref(), Some(KUBELET_RESTART));
    let requested = world.record().status;
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForBudget);
    assert_eq!(world.record().status, requested, "asked once: a waiting pass writes nothing");

    assert!(world.grant().await);
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Ready);
    let log = summary(&world.host.take_log());
    assert!(position(&log, "sc stop kubelet") < position(&log, r"upload C:\k\kubelet.conf"), "{log:#?}");
    let status = world.record().status.unwrap();
    let restart = status.disruption.unwrap();
    assert_eq!((restart.state, status.phase), (DisruptionState::Completed, Some(InstancePhase::Ready)));
    assert!(restart.granted_at.is_some() && restart.restart_sent_at.is_some() && restart.completed_at.is_some());
}

#[tokio::test]
async fn a_restart_granted_on_a_node_at_another_version_waits_for_its_upgrade() {
    let world = World::new().await;
    let session = world.session();
    world.ask_for_a_restart(&session).await;
    assert!(world.grant().await);
    world.host.take_log();

    // The operator is upgraded before the pass carries the restart out: the Node is at the old version now.
    configured_at(&world, "10.16.0");
    let outcome = world.configure(&session).await.unwrap();
    assert_eq!((outcome.state, outcome.steps_applied), (ConfigureState::WaitingForUpgrade, 0));
    assert!(world.host.take_log().is_empty(), "nothing replaced on a Node still in service");
}

#[tokio::test]
async fn a_requested_restart_the_host_no_longer_needs_is_withdrawn() {
    let world = World::new().await;
    let session = world.probing_session();
    world.ask_for_a_restart(&session).await;

    world.files.overrides.lock().unwrap().remove(r"C:\k\kubelet.conf");
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Ready);
    assert_eq!(world.disruption(), None);
}

#[tokio::test]
async fn a_host_whose_dhcp_address_changed_gets_its_kubelet_reconfigured_within_the_budget_and_the_record_follows() {
    let world = World::new().await;
    world.configure_to_ready(&world.session()).await;
    world.host.take_log();

    // The DHCP server hands the host another address.
    world.host.set_identity_json(&IDENTITY.replace(NODE_IP, "203.0.113.77"));
    let outcome = world.configure(&world.probing_session()).await.unwrap();
    assert_eq!(outcome.state, ConfigureState::WaitingForBudget);

    let status = world.record().status.unwrap();
    assert_eq!(
        status.node_ip.map(|ip| ip.to_string()).as_deref(),
        Some("203.0.113.77"),
        "the record kept the old address"
    );
    assert_eq!(status.expected_node_name.as_deref(), Some(NAME));
    assert_eq!(world.disruption().as_deref(), Some(KUBELET_RESTART), "the restart asks for a unit of the budget");
    let change = outcome.identity_change.expect("an identity change to report");
    assert_eq!(
        (change.before.node_ip.to_string(), change.after.node_ip.to_string()),
        (NODE_IP.into(), "203.0.113.77".into())
    );
    assert!(change.note().contains("node IP 203.0.113.7 -> 203.0.113.77"), "{}", change.note());

    assert!(world.grant().await);
    world.configure(&world.probing_session()).await.unwrap();
    let log = summary(&world.host.take_log());
    assert!(log.contains(&"sc config kubelet".to_owned()) && log.contains(&"sc start kubelet".to_owned()), "{log:?}");
}

#[tokio::test]
async fn a_host_renamed_since_it_was_recorded_is_refused_naming_both_names_and_its_node_stays() {
    let world = World::new().await;
    world.configure_to_ready(&world.session()).await;
    world.host.take_log();
    let node = world.nodes.node(NAME).unwrap();

    world.host.set_identity_json(&IDENTITY.replace("WIN-A", "WIN-B").replace("win-a.lab", "win-b.lab"));
    let error = world.configure(&world.probing_session()).await.unwrap_err();

    assert!(
        error.to_string().contains(
            "its host name changed from WIN-A to WIN-B, which would make it Node win-b beside its Node win-a"
        ),
        "{error}"
    );
    let status = world.record().status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::Failed));
    assert!(status.condition_is_true(HOSTNAME_CHANGED_CONDITION));
    let log = summary(&world.host.take_log());
    assert!(log.iter().all(|op| op == "probe" || op == "stat script"), "something was done to the host: {log:?}");
    assert_eq!(world.nodes.node(NAME).unwrap(), node);

    // Renamed back: configured as before, the condition clears.
    world.host.set_identity_json(IDENTITY);
    world.configure(&world.probing_session()).await.unwrap();
    assert!(!world.record().status.unwrap().condition_is_true(HOSTNAME_CHANGED_CONDITION));
}

#[tokio::test]
async fn a_restart_of_a_host_upgrading_or_of_a_cordoned_node_asks_for_no_budget() {
    for cordoned in [false, true] {
        let world = World::new().await;
        let session = world.session();
        world.configure_to_ready(&session).await;
        if cordoned {
            let mut node = world.nodes.node(NAME).unwrap();
            node.spec.get_or_insert_default().unschedulable = Some(true);
            world.nodes.insert(node);
        } else {
            enter_phase(&world, InstancePhase::Upgrading).await;
        }
        world.files.set(r"C:\k\kubelet.conf", b"{\"kind\":\"KubeletConfiguration\"}");
        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Ready);
        assert_eq!(world.disruption(), None);
    }
}

#[tokio::test]
async fn a_host_met_for_the_first_time_with_a_node_at_another_version_waits_for_the_upgrade_executor() {
    let world = World::new().await;
    let session = world.session();
    world.register_node(true);
    let mut node = world.nodes.node(NAME).unwrap();
    node.metadata.annotations.get_or_insert_default().insert(VERSION_ANNOTATION.to_owned(), "10.16.1".to_owned());
    world.nodes.insert(node);

    let outcome = world.configure(&session).await.unwrap();
    assert_eq!((outcome.state, outcome.steps_applied), (ConfigureState::WaitingForUpgrade, 0));
    assert_eq!(summary(&world.host.take_log()), ["host key", "identity"], "nothing changed on the host");
    let status = world.record().status.unwrap();
    assert_eq!(status.expected_node_name.as_deref(), Some(NAME), "the identity is recorded for the executor");
    assert_eq!(
        wmco_cluster_client::NodeExt::annotation(&world.nodes.node(NAME).unwrap(), VERSION_ANNOTATION),
        Some("10.16.1")
    );
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForUpgrade);
    assert!(world.host.take_log().is_empty(), "the recorded identity's gate costs no command");
}

#[tokio::test]
async fn hybrid_overlays_rotated_client_certificates_are_pruned_to_the_newest_two_by_the_probing_pass() {
    let world = World::new().await;
    let session = world.probing_session();
    world.configure_to_ready(&session).await;
    world.host.take_log();
    let certificate = |day: u8| format!(r"C:\k\cni\config\ovnkube-client-2026-11-{day:02}-00-00-00.pem");
    for day in 1..=4 {
        world.host.put_file(&certificate(day), format!("certificate {day}").as_bytes());
    }
    world.host.put_file(r"C:\k\cni\config\ovnkube-client-current.pem", b"certificate 4");

    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Ready);
    assert_eq!(summary(&world.host.take_log()), ["probe", "prune-files"]);
    let left: Vec<String> =
        world.host.file_paths().into_iter().filter(|path| path.contains("ovnkube-client-")).collect();
    assert_eq!(
        left,
        [certificate(3), certificate(4), r"C:\k\cni\config\ovnkube-client-current.pem".to_owned()]
            .map(|path| path.to_lowercase())
    );
    assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Ready);
    assert_eq!(summary(&world.host.take_log()), ["probe"], "nothing more to prune");
}

/// Reboots (the one a host without the `Containers` feature gets, and those the fleet executor grants): the record
/// after each pass, the host's log.
mod containers_reboot {
    use wmco_cluster_client::NodeExt;
    use wmco_cluster_client::names::REBOOT_REQUIRED_ANNOTATION;
    use wmco_cluster_client::types::{ConditionState, REBOOT_REQUIRED_CONDITION, RebootState};
    use wmco_vocabulary::DisruptionKind;

    use super::*;

    fn reboot_state(world: &World) -> Option<DisruptionState> {
        world.record().status?.disruption.map(|reboot| reboot.state)
    }

    #[tokio::test]
    async fn a_host_without_containers_gets_it_installed_reboots_once_and_is_configured() {
        let world = World::new().await;
        let session = world.session();
        world.host.set_containers("Disabled", 2, false);

        let asked = world.configure(&session).await.unwrap();
        assert_eq!((asked.state, asked.reboot), (ConfigureState::WaitingForBudget, None));
        assert_eq!(summary(&world.host.take_log()), ["host key", "identity", "install-feature"]);
        assert_eq!(world.disruption().as_deref(), Some("Reboot Requested -: "), "asked for without a Node");
        assert!(world.grant().await);

        let first = world.configure(&session).await.unwrap();
        assert_eq!(first.state, ConfigureState::Rebooting);
        let reason = crate::CONTAINERS_REBOOT_REASON.to_owned();
        assert_eq!(first.reboot, Some(crate::RebootStep::Started(reason.clone())));
        assert_eq!(summary(&world.host.take_log()), ["restart"]);
        let status = world.record().status.unwrap();
        let reboot = status.disruption.clone().unwrap();
        assert_eq!((reboot.kind, reboot.state), (DisruptionKind::Reboot, DisruptionState::Restarting));
        assert_eq!(reboot.boot_before.as_deref(), Some("/Date(1)/"));
        assert!(reboot.granted_at.is_some() && reboot.services.is_empty() && reboot.admin_token.is_none());
        assert_eq!(reboot.reason, crate::CONTAINERS_REBOOT_REASON);
        assert!(reboot.restart_sent_at.is_some() && reboot.node.is_none() && !reboot.cordoned);
        assert_eq!(status.expected_node_name, None, "no identity recorded before the host is back");
        let progressing = status.condition("Progressing").unwrap();
        assert_eq!(progressing.reason, "Rebooting");

        // The host is down for two operations: each pass says it is rebooting, without an error.
        for _ in 0..2 {
            let waiting = world.configure(&session).await.unwrap();
            assert_eq!((waiting.state, waiting.reboot), (ConfigureState::Rebooting, None));
        }
        assert_eq!(world.record().status.unwrap().last_error, None);
        assert!(world.host.take_log().is_empty(), "nothing reached the host");

        // Back with a new boot time and the feature enabled: the same pass goes on configuring.
        let back = world.configure(&session).await.unwrap();
        assert_eq!(
            (back.state, back.reboot),
            (ConfigureState::WaitingForNode, Some(crate::RebootStep::Completed(reason)))
        );
        let log = summary(&world.host.take_log());
        assert_eq!(log.iter().filter(|op| *op == "identity").count(), 1, "the wait's identity serves the preflight");
        assert!(!log.iter().any(|op| op == "restart" || op == "install-feature"), "{log:#?}");
        assert_eq!(world.host.containers(), Some(("Enabled".to_owned(), 2)));
        let status = world.record().status.unwrap();
        assert_eq!(status.disruption.as_ref().map(|reboot| reboot.state), Some(DisruptionState::Completed));
        assert!(status.disruption.as_ref().unwrap().completed_at.is_some());
        assert_eq!(status.expected_node_name.as_deref(), Some("win-a"));
        assert_eq!(status.condition("PreflightFailed").unwrap().reason, "ChecksPassed");

        world.register_node(true);
        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Ready);
        assert!(!world.grant().await, "one reboot in all");
    }

    #[tokio::test]
    async fn a_reboot_waits_for_its_grant_and_an_installed_feature_is_not_installed_again() {
        let world = World::new().await;
        let session = world.session();
        world.host.set_containers("Disabled", 0, false);

        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForBudget);
        assert_eq!(summary(&world.host.take_log()), ["host key", "identity", "install-feature"]);
        assert_eq!(reboot_state(&world), Some(DisruptionState::Requested));
        assert_eq!(world.host.containers(), Some(("EnablePending".to_owned(), 1)));
        let requested = world.record().status;

        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForBudget);
        assert_eq!(summary(&world.host.take_log()), ["identity"], "pending: no second install");
        assert_eq!(world.record().status, requested, "asked once");

        assert!(world.grant().await);
        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Rebooting);
        assert_eq!(summary(&world.host.take_log()), ["restart"]);
        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForNode);
    }

    #[tokio::test]
    async fn an_operator_restarted_after_the_grant_restarts_the_host_without_asking_again() {
        // The grant was recorded (by the fleet executor, or as a claim by an older operator in the deprecated
        // `status.reboot`), then the operator died before Restart-Computer.
        let granted = objects::status().reboot(DisruptionState::Granted).build();
        let legacy = objects::status().legacy_reboot(RebootState::Requested).build();
        for recorded in [granted, legacy] {
            let world = World::new().await;
            world.host.set_containers("Disabled", 1, false);
            assert_eq!(world.configure(&world.session()).await.unwrap().state, ConfigureState::WaitingForBudget);
            let mut status = world.record().status.unwrap();
            (status.disruption, status.reboot) = (recorded.disruption, recorded.reboot);
            world.records.apply_status(NAMESPACE, NAME, &status).await.unwrap();
            world.host.take_log();

            let session = world.session();
            assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Rebooting);
            assert_eq!(summary(&world.host.take_log()), ["restart"], "resumed at the restart, no identity");
            let status = world.record().status.unwrap();
            assert_eq!((status.reboot, reboot_state(&world)), (None, Some(DisruptionState::Restarting)));
            assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Rebooting);
            assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForNode);
            assert_eq!(world.host.containers(), Some(("Enabled".to_owned(), 2)));
        }
    }

    #[tokio::test]
    async fn a_feature_still_pending_after_the_reboot_fails_the_preflight_instead_of_rebooting_again() {
        let world = World::new().await;
        let session = world.session();
        world.host.set_containers("Disabled", 0, true);
        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForBudget);
        assert!(world.grant().await);
        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Rebooting);
        let error = world.configure(&session).await.unwrap_err();
        assert_eq!(error.preflight_failures()[0].check, PreflightCheck::ContainersFeature);
        assert!(error.to_string().contains("still EnablePending after the operator restarted the host"), "{error}");
        let again = world.configure(&session).await.unwrap_err();
        assert_eq!(again.preflight_failures().len(), 1);
        let log = summary(&world.host.take_log());
        assert_eq!(log.iter().filter(|op| *op == "restart").count(), 1, "{log:#?}");
        assert_eq!(world.record().status.unwrap().phase, Some(InstancePhase::Failed));
    }

    #[tokio::test]
    async fn a_host_with_a_node_is_cordoned_drained_rebooted_and_uncordoned() {
        let world = World::new().await;
        let session = world.session();
        world.register_node(true);
        world.host.set_containers("EnablePending", 1, false);

        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForBudget);
        assert_eq!(world.disruption().as_deref(), Some("Reboot Requested win-a: "));
        assert!(!world.nodes.node(NAME).unwrap().is_unschedulable(), "nothing happens before the grant");
        assert!(world.grant().await);
        let required = NodeMetadataPatch::default().set_annotation(REBOOT_REQUIRED_ANNOTATION, "true");
        world.nodes.patch_metadata(NAME, &required).await.unwrap();
        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Rebooting);
        assert_eq!(summary(&world.host.take_log()), ["host key", "identity", "restart"], "installed already");
        assert!(world.nodes.node(NAME).unwrap().is_unschedulable());
        assert_eq!(world.drainer.drained(), [NAME.to_owned()]);
        let reboot = world.record().status.unwrap().disruption.unwrap();
        assert_eq!((reboot.node.as_deref(), reboot.cordoned), (Some(NAME), true));

        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Rebooting);
        // A probe had found Windows' markers; back, the connection breaks right after the identity command that
        // shows the new boot time, so the record is as the reboot's completion left it.
        let mut status = world.record().status.unwrap();
        status.set_condition(ConditionState::reboot_required(&["WindowsUpdate"]), None, jiff::Timestamp::now());
        world.records.apply_status(NAMESPACE, NAME, &status).await.unwrap();
        world.host.set_fault(Fault::BreakAfter(1));
        world.configure(&session).await.unwrap_err();
        let node = world.nodes.node(NAME).unwrap();
        assert!(!node.is_unschedulable() && !node.is_marked(), "uncordoned and unmarked");
        assert_eq!(node.annotation(REBOOT_REQUIRED_ANNOTATION), None, "the reboot answered the Node's annotation");
        assert_eq!(reboot_state(&world), Some(DisruptionState::Completed));
        let markers_left = world.record().status.unwrap().condition_is_true(REBOOT_REQUIRED_CONDITION);
        assert!(!markers_left, "the markers this reboot answered must not ask for another one before the next probe");
    }

    #[tokio::test]
    async fn a_host_that_stays_up_is_restarted_again_and_one_that_stays_away_is_reported() {
        let world = World::new().await;
        let session = world.session();
        world.host.set_containers("EnablePending", 0, false);
        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::WaitingForBudget);
        assert!(world.grant().await);
        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Rebooting);
        world.host.take_log();
        // Pretend the restart was sent long ago and the host never went down (the boot time is the old one).
        let mut status = world.record().status.unwrap();
        let reboot = status.disruption.as_mut().unwrap();
        reboot.boot_before = Some("/Date(2)/".to_owned());
        let long_ago = jiff::Timestamp::now() - crate::RESEND_AFTER;
        reboot.restart_sent_at = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(long_ago));
        world.records.apply_status(NAMESPACE, NAME, &status).await.unwrap();
        assert_eq!(world.configure(&session).await.unwrap().state, ConfigureState::Rebooting);
        assert_eq!(summary(&world.host.take_log()), ["identity", "restart"]);

        // Unreachable for longer than the timeout: an error naming the reboot, and the wait goes on.
        world.host.set_fault(Fault::Unreachable);
        let mut status = world.record().status.unwrap();
        let never = jiff::Timestamp::now() - crate::REBOOT_TIMEOUT;
        status.disruption.as_mut().unwrap().restart_sent_at =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(never));
        world.records.apply_status(NAMESPACE, NAME, &status).await.unwrap();
        let error = world.configure(&session).await.unwrap_err();
        assert!(matches!(error, FlowError::Reboot { .. }) && error.is_retryable(), "{error}");
        assert!(error.to_string().contains("did not come back"), "{error}");
        assert_eq!(reboot_state(&world), Some(DisruptionState::Restarting));
    }

    #[tokio::test]
    async fn a_legacy_restarting_reboot_of_an_older_operator_is_completed_as_a_disruption() {
        let world = World::new().await;
        world.host.set_containers("Enabled", 0, false);
        assert_eq!(world.configure(&world.session()).await.unwrap().state, ConfigureState::WaitingForNode);
        // An operator before `status.disruption` sent Restart-Computer, recorded it in `status.reboot` and was
        // upgraded; the host is back with a new boot time (`/Date(1)/`, not the recorded one).
        let mut status = world.record().status.unwrap();
        status.reboot = objects::status().legacy_reboot(RebootState::Restarting).build().reboot;
        status.reboot.as_mut().unwrap().boot_before = "/Date(0)/".to_owned();
        world.records.apply_status(NAMESPACE, NAME, &status).await.unwrap();
        world.host.take_log();

        let session = world.session();
        let back = world.configure(&session).await.unwrap();
        let reason = crate::CONTAINERS_REBOOT_REASON.to_owned();
        assert_eq!(
            (back.state, back.reboot),
            (ConfigureState::WaitingForNode, Some(crate::RebootStep::Completed(reason)))
        );
        let log = summary(&world.host.take_log());
        assert!(!log.iter().any(|op| op == "restart"), "no second restart: {log:#?}");
        let status = world.record().status.unwrap();
        assert_eq!(status.reboot, None, "the deprecated field is dropped");
        let disruption = status.disruption.unwrap();
        assert_eq!((disruption.kind, disruption.state), (DisruptionKind::Reboot, DisruptionState::Completed));
        assert!(disruption.completed_at.is_some());
    }
}

#[tokio::test]
async fn a_key_trusted_on_first_use_is_kept_in_the_host_keys_config_map_and_on_the_node() {
    let world = World::new().await;
    let outcome = world.configure(&world.session()).await.unwrap();
    assert_eq!(outcome.host_key_first_use.as_deref(), Some(HOST_KEY), "the operator says where the pin came from");
    let kept = wmco_cluster_client::kept_host_key(&world.config_maps, &world.record()).await.unwrap();
    assert_eq!(kept.as_deref(), Some(HOST_KEY), "a recreated record finds the pin there");

    world.register_node(true);
    let outcome = world.configure(&world.session()).await.unwrap();
    assert_eq!(outcome.state, ConfigureState::Ready);
    assert_eq!(outcome.host_key_first_use, None, "pinned already");
    let node = world.nodes.node(NAME).unwrap();
    let (algorithm, blob) = HOST_KEY.split_once(' ').unwrap();
    assert_eq!(node.annotation(SSH_HOST_KEY_TYPE_ANNOTATION), Some(algorithm));
    assert_eq!(node.annotation(SSH_HOST_KEY_ANNOTATION), Some(blob), "the Go operator's annotations");
}
