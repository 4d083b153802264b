//! The flow against `winhost-sim`'s host model, which parses and evaluates cmd.exe, sc.exe and the PowerShell
//! subset generically (without SSH): a cross-check that every command the flow and the builders send is understood
//! and that the probe reads back exactly what the flow configured.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use winhost_sim::disk::WinPath as SimPath;
use winhost_sim::host::HnsNetwork;
use winhost_sim::remote_host::InProcessHost;
use wmco_cluster_client::fake::{FakeConfigMaps, FakeDrainer, FakeInstanceRecords, FakeNodes, objects};
use wmco_cluster_client::names::HYBRID_OVERLAY_SUBNET_ANNOTATION;
use wmco_cluster_client::types::InstancePhase;
use wmco_cluster_client::{DrainOptions, InstanceRecords};
use wmco_payload_manifest::render::{HostInputs, OverlayNetwork, RenderedFile, containerd_config, kube_proxy_config};
use wmco_windows_services::{ServiceStage, WinPath};

use crate::testing::{file_set, sample_service_settings, service_binaries};
use crate::{
    ClusterAccess, ConfigureInputs, ConfigureState, DeconfigureInputs, FileStage, HYBRID_OVERLAY_NETWORKS,
    HostFilesSource, HostIdentity, HostSession, SessionSettings, SourceError, StageFiles, configure, deconfigure,
};

const SUBNET: &str = "10.132.3.0/24";

/// The bootstrap files, and in the node stage also the phase-2 binaries, a kube-proxy configuration for the
/// overlay network and windows_exporter's TLS web configuration.
pub(super) struct SimFiles;

impl HostFilesSource for SimFiles {
    fn files(&self, identity: &HostIdentity, stage: FileStage<'_>) -> Result<StageFiles, SourceError> {
        let phase = match stage {
            FileStage::Bootstrap => ServiceStage::Bootstrap,
            FileStage::Node(_) => ServiceStage::Node,
        };
        let mut rendered = vec![containerd_config()?];
        if phase == ServiceStage::Node {
            let overlay = OverlayNetwork {
                node_subnet: SUBNET.parse()?,
                management_ip: "10.132.3.2".parse()?,
                source_vip: "10.132.3.3".parse()?,
            };
            let host = HostInputs {
                node_name: identity.expected_node_name.clone(),
                node_ip: identity.node_ip,
                overlay: Some(overlay.clone()),
            };
            rendered.push(kube_proxy_config(&host, &overlay)?);
            let web_config = "tls_server_config:\n  cert_file: C:\\k\\tls\\tls.crt\n  key_file: C:\\k\\tls\\tls.key\n";
            for (path, text) in [
                (r"C:\k\tls\windows-exporter-webconfig.yaml", web_config),
                (r"C:\k\tls\tls.crt", "certificate"),
                (r"C:\k\tls\tls.key", "key"),
            ] {
                rendered.push(RenderedFile::new(WinPath::parse(path)?, text.as_bytes().to_vec()));
            }
        }
        rendered.extend(service_binaries(&sample_service_settings(), identity, phase)?);
        Ok(file_set(rendered)?.into())
    }
}

fn report(pass: &str, outcome: &crate::ConfigureOutcome) {
    println!(
        "figures: {pass}: {} round trips, {} uploads, {} bytes, {} plan steps",
        outcome.commands, outcome.uploads, outcome.bytes_uploaded, outcome.steps_applied
    );
}

#[tokio::test]
async fn the_simulator_understands_every_command_of_both_phases_and_deconfiguration() {
    whole_lifecycle(None).await;
}

/// Under a PowerShell default shell every command after the first probe reaches cmd.exe through PowerShell's
/// stop-parsing token, and the host goes through the same lifecycle with the same result.
#[tokio::test]
async fn a_host_whose_default_shell_is_powershell_goes_through_the_same_lifecycle() {
    let sim = whole_lifecycle(Some(POWERSHELL)).await;
    let host = sim.host();
    let lines: Vec<&str> = host.command_log.iter().map(|command| command.line.as_str()).collect();
    let first_probe = lines.iter().position(|line| line.contains(r"C:\k\wmco\scripts\")).unwrap();
    assert!(lines.len() > first_probe + 10, "{lines:#?}");
    for line in &lines[first_probe + 1..] {
        assert!(line.starts_with("cmd.exe /c --% ") && line.ends_with("\nexit $LASTEXITCODE"), "{line}");
    }
}

/// Windows PowerShell, as an admin sets it as OpenSSH's default shell (windows-commands.md §2).
const POWERSHELL: &str = r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe";

/// A fresh simulated host with OpenSSH's `DefaultShell` set to `shell`, if given.
fn sim_host(shell: Option<&str>) -> InProcessHost {
    let sim = InProcessHost::sample(3).unwrap();
    if let Some(shell) = shell {
        let value = winhost_sim::host::RegValue::String(shell.to_owned());
        sim.host().set_registry_value(r"HKLM\SOFTWARE\OpenSSH", "DefaultShell", value);
    }
    sim
}

/// A session whose every pass probes: no memory of unchanged passes, so that each pass shows its commands.
fn probing_session(sim: &Arc<InProcessHost>) -> HostSession {
    HostSession::with_settings(
        sim.clone(),
        SessionSettings {
            unchanged_pass_window: std::time::Duration::ZERO,
            node_wait_window: std::time::Duration::ZERO,
            services_wait_window: std::time::Duration::ZERO,
            ..SessionSettings::default()
        },
    )
}

/// One configure pass of record `wmco/win-3` as `records` holds it now.
async fn configure_record(
    session: &HostSession,
    cluster: ClusterAccess<'_>,
    records: &FakeInstanceRecords,
    settings: &crate::ServiceSettings,
) -> Result<crate::ConfigureOutcome, crate::FlowError> {
    let instance = records.record("wmco", "win-3").unwrap();
    let inputs = ConfigureInputs {
        instance: &instance,
        settings,
        files: &SimFiles,
        operator_version: "10.17.0",
        pub_key_hash: "ab",
        drain: &wmco_cluster_client::DrainOptions::default(),
    };
    configure(session, cluster, &inputs).await
}

/// The cluster of a simulated host's flows, all fakes, holding the record `wmco/<name>` of a BYOH host at `address`.
#[derive(Default)]
struct ClusterFakes {
    nodes: FakeNodes,
    records: FakeInstanceRecords,
    drainer: FakeDrainer,
    config_maps: FakeConfigMaps,
}

impl ClusterFakes {
    async fn with_record(name: &str, address: &str) -> ClusterFakes {
        let fakes = ClusterFakes::default();
        let instance = objects::record(name).in_namespace("wmco").byoh(address).username("administrator").build();
        fakes.records.apply(&instance).await.unwrap();
        fakes
    }

    fn access(&self) -> ClusterAccess<'_> {
        ClusterAccess {
            nodes: &self.nodes,
            records: &self.records,
            drainer: &self.drainer,
            config_maps: &self.config_maps,
        }
    }
}

/// A fresh simulated host with the record `wmco/win-3`, configured pass by pass by a session that probes at each.
struct ProbedHost {
    sim: Arc<InProcessHost>,
    fakes: ClusterFakes,
    settings: crate::ServiceSettings,
    session: HostSession,
}

impl ProbedHost {
    async fn fresh() -> ProbedHost {
        let sim = Arc::new(sim_host(None));
        let session = probing_session(&sim);
        let fakes = ClusterFakes::with_record("win-3", "127.0.0.30").await;
        ProbedHost { sim, fakes, settings: sample_service_settings(), session }
    }

    /// One configure pass, which must succeed.
    async fn pass(&self) -> crate::ConfigureOutcome {
        configure_record(&self.session, self.fakes.access(), &self.fakes.records, &self.settings).await.unwrap()
    }
}

/// Configures a fresh host through both stages, checks a converged pass, heals a removed probe script,
/// deconfigures it and compares it with a fresh host; returns the host.
async fn whole_lifecycle(shell: Option<&str>) -> Arc<InProcessHost> {
    let sim = Arc::new(sim_host(shell));
    let fakes = ClusterFakes::with_record("win-3", "127.0.0.30").await;
    let (nodes, records, cluster) = (&fakes.nodes, &fakes.records, fakes.access());
    let settings = sample_service_settings();
    let session = probing_session(&sim);
    let configure_attempt = || configure_record(&session, cluster, records, &settings);
    let configure_once = || async { configure_attempt().await.unwrap() };

    let first = configure_once().await;
    report("bootstrap pass (fresh host)", &first);
    assert_eq!(first.state, ConfigureState::WaitingForNode);
    assert_eq!(first.node_name, "winworker-3");
    let status = records.record("wmco", "win-3").unwrap().status.unwrap();
    assert_eq!(status.node_ip, Some("203.0.113.30".parse().unwrap()));
    assert_eq!(status.fqdn.as_deref(), Some("winworker-3.lab.example"));
    {
        let mut host = sim.host();
        host.refresh();
        assert!(host.unknown_commands.is_empty(), "{:?}", host.unknown_commands);
        let running: Vec<String> = host
            .scm
            .services()
            .filter(|service| service.state == winhost_sim::scm::State::Running)
            .map(|service| service.name.clone())
            .collect();
        assert_eq!(running, ["containerd", "kubelet"]);
    }

    let second = configure_once().await;
    report("bootstrap pass again (nothing changed)", &second);
    assert_eq!(
        (second.state, second.steps_applied, second.commands, second.uploads),
        (ConfigureState::WaitingForNode, 0, 1, 0)
    );

    // The kubelet registers (its kubeconfig appears), hybrid-overlay's network exists, the Node gets its subnet.
    {
        let mut host = sim.host();
        host.disk.write(&SimPath::parse(r"C:\k\kubeconfig").unwrap(), b"apiVersion: v1\n").unwrap();
        host.hns_networks.extend(HYBRID_OVERLAY_NETWORKS.map(|name| HnsNetwork {
            name: name.to_owned(),
            kind: "Overlay".into(),
            id: format!("{name}-id"),
            address_prefix: Some(SUBNET.into()),
            gateway: None,
        }));
    }
    // As the kubelet registers it: a Windows Node whose InternalIP is the `--node-ip` the record holds.
    let node_ip = records.record("wmco", "win-3").unwrap().status.unwrap().node_ip.unwrap();
    nodes.insert(Node {
        metadata: ObjectMeta {
            name: Some("winworker-3".into()),
            labels: Some([("kubernetes.io/os".to_owned(), "windows".to_owned())].into()),
            annotations: Some([(HYBRID_OVERLAY_SUBNET_ANNOTATION.to_owned(), SUBNET.to_owned())].into()),
            ..ObjectMeta::default()
        },
        status: Some(NodeStatus {
            addresses: Some(vec![NodeAddress { type_: "InternalIP".into(), address: node_ip.to_string() }]),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..NodeCondition::default()
            }]),
            ..NodeStatus::default()
        }),
        ..Node::default()
    });
    let ready = configure_once().await;
    report("node pass (Node with subnet)", &ready);
    assert_eq!(ready.state, ConfigureState::Ready);
    {
        let mut host = sim.host();
        host.refresh();
        assert!(host.unknown_commands.is_empty(), "{:?}", host.unknown_commands);
        let stopped: Vec<(String, u32)> = host
            .scm
            .services()
            .filter(|service| service.state != winhost_sim::scm::State::Running)
            .map(|service| (service.name.clone(), service.exit_code))
            .collect();
        assert_eq!(stopped, []);
        assert_eq!(host.scm.services().count(), 6);
        assert!(host.disk.entry(&SimPath::parse(r"C:\k\bootstrap-kubeconfig").unwrap()).is_none());
        assert_eq!(host.firewall.len(), 2);
        let exclusions = host.defender.as_ref().map(|defender| defender.exclusion_process.clone());
        assert_eq!(exclusions, Some(vec![r"C:\k\containerd\containerd.exe".to_owned()]), "Defender runs by default");
    }
    let converged = configure_once().await;
    report("converged pass", &converged);
    assert_eq!((converged.state, converged.commands, converged.uploads), (ConfigureState::Ready, 1, 0));
    assert_eq!(records.record("wmco", "win-3").unwrap().status.unwrap().phase, Some(InstancePhase::Ready));

    // The probe's script and its directory leave the host behind the session's back: one attempt fails
    // (retryable, naming the probe), the next puts the script back.
    sim.host().disk.remove(&SimPath::parse(r"C:\k\wmco").unwrap()).unwrap();
    let error = configure_attempt().await.unwrap_err();
    assert!(error.is_retryable() && error.to_string().contains("state probe"), "{error}");
    let healed = configure_once().await;
    report("pass after the probe script was removed", &healed);
    assert_eq!((healed.state, healed.uploads), (ConfigureState::Ready, 1), "the script was uploaded again");

    // The DHCP server hands the host another address: the next probe reads it, the record follows and the
    // kubelet runs with it as --node-ip (the probe answers from the simulator's Get-NetIPAddress).
    let moved = std::net::Ipv4Addr::new(203, 0, 113, 99);
    sim.host().identity.node_ip = moved;
    let followed = configure_once().await;
    report("pass after a DHCP address change", &followed);
    assert_eq!(followed.state, ConfigureState::WaitingForBudget, "the kubelet's restart is asked for");
    assert_eq!(followed.identity_change.map(|change| change.after.node_ip), Some(moved));
    assert_eq!(records.record("wmco", "win-3").unwrap().status.unwrap().node_ip, Some(moved));
    grant(records).await;
    let restarted = configure_once().await;
    report("pass after the restart was granted", &restarted);
    let kubelet = kubelet_command_line(&sim);
    assert!(kubelet.as_deref().is_some_and(|line| line.contains("--node-ip=203.0.113.99")), "{kubelet:?}");

    let before = session.counters();
    let instance = records.record("wmco", "win-3").unwrap();
    let drain = DrainOptions::default();
    let outcome =
        deconfigure(&session, cluster, &DeconfigureInputs { instance: &instance, drain: &drain }).await.unwrap();
    assert!(outcome.host_cleaned);
    let after = session.counters();
    println!(
        "figures: deconfigure: {} round trips, {} uploads, {} bytes",
        after.commands - before.commands,
        after.uploads - before.uploads,
        after.bytes_uploaded - before.bytes_uploaded
    );
    assert_eq!(outcome.node_name.as_deref(), Some("winworker-3"));
    assert!(nodes.node("winworker-3").is_none());
    let host = sim.host();
    assert!(host.unknown_commands.is_empty(), "{:?}", host.unknown_commands);
    assert_eq!(host.scm.services().filter(|service| !service.marked_for_deletion).count(), 0);
    assert!(host.disk.entry(&SimPath::parse(r"C:\k").unwrap()).is_none());
    assert!(host.hns_networks.is_empty());
    assert!(host.firewall.is_empty());
    assert_eq!(host.defender.as_ref().map(|defender| defender.exclusion_process.len()), Some(0));
    let fresh = sim_host(shell);
    let left: Vec<String> =
        footprint(&host).into_iter().filter(|line| !footprint(&fresh.host()).contains(line)).collect();
    assert_eq!(left, LEFT_BEHIND, "what deconfiguration leaves that a fresh host lacks");
    let gone: Vec<String> =
        footprint(&fresh.host()).into_iter().filter(|line| !footprint(&host).contains(line)).collect();
    assert_eq!(gone, Vec::<String>::new(), "what deconfiguration took that a fresh host has");
    drop(host);
    sim
}

/// What a deconfigured host keeps that a fresh one lacks: four empty directories that may well have existed before
/// the operator came (`C:\Temp` is a common scratch directory, `C:\var\log` other software's logs, `C:\var\lib`
/// other software's state, the parent of the kubelet's `C:\var\lib\kubelet`), so they stay: no file, service,
/// registry value, firewall rule, Defender exclusion, certificate, network or ACL setting does.
const LEFT_BEHIND: [&str; 4] = [r"path c:\temp", r"path c:\var", r"path c:\var\lib", r"path c:\var\log"];

/// Everything of a simulated host that configuration touches, one line per item, to compare two hosts: every path
/// on `C:`, services, firewall rules, Defender exclusions, root certificates, machine variables, HNS networks,
/// registry keys with their value names, optional features and ACLs.
fn footprint(host: &winhost_sim::host::Host) -> Vec<String> {
    let mut lines = Vec::new();
    let mut pending = vec![SimPath::parse(r"C:\").unwrap()];
    while let Some(directory) = pending.pop() {
        for (name, entry, _) in host.disk.list(&directory).unwrap() {
            let path = directory.join(&name);
            lines.push(format!("path {}", path.key()));
            if entry == winhost_sim::disk::Entry::Directory {
                pending.push(path);
            }
        }
    }
    lines.extend(host.scm.services().map(|service| format!("service {}", service.name)));
    lines.extend(host.firewall.iter().map(|rule| format!("firewall {}", rule.name)));
    lines.extend(
        host.defender.iter().flat_map(|defender| &defender.exclusion_process).map(|p| format!("exclusion {p}")),
    );
    lines.extend(host.root_certificates.keys().map(|thumbprint| format!("root {thumbprint}")));
    lines.extend(host.machine_environment().iter().map(|(name, value)| format!("env {name}={value}")));
    lines.extend(host.hns_networks.iter().map(|network| format!("hns {}", network.name)));
    for (key, values) in &host.registry {
        lines.push(format!("key {key}"));
        lines.extend(values.values.keys().map(|name| format!("value {key} {name}")));
    }
    lines.extend(host.features.iter().map(|(name, state)| format!("feature {name} {state}")));
    lines.extend(host.disk.acl_overrides().iter().map(|(path, settings)| format!("acl {path} {settings:?}")));
    lines.sort();
    lines
}

#[tokio::test]
async fn a_server_2016_host_losing_containers_without_room_is_refused_by_the_real_identity_script_with_nothing_installed()
 {
    let identity = winhost_sim::host::Identity {
        hostname: "OLD-2016".into(),
        fqdn: "old-2016.lab.example".into(),
        build: 14393,
        ubr: 1,
        node_ip: "203.0.113.90".parse().unwrap(),
    };
    let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey sim";
    let sim = Arc::new(InProcessHost::new(identity, "Administrator@203.0.113.90:22", "SSH-2.0-wmco", key).unwrap());
    {
        let mut host = sim.host();
        host.features.insert("Containers".into(), "DisablePending".into());
        host.volume.free_bytes = 512 << 20;
    }
    let before = tree(sim.root());
    let fakes = ClusterFakes::with_record("old", "203.0.113.90").await;
    let (records, cluster) = (&fakes.records, fakes.access());
    let instance = records.record("wmco", "old").unwrap();
    let settings = sample_service_settings();
    let session = HostSession::new(sim.clone());
    let inputs = ConfigureInputs {
        instance: &instance,
        settings: &settings,
        files: &SimFiles,
        operator_version: "10.17.0",
        pub_key_hash: "ab12",
        drain: &wmco_cluster_client::DrainOptions::default(),
    };

    let error = configure(&session, cluster, &inputs).await.unwrap_err();
    let found: Vec<String> = error.preflight_failures().iter().map(ToString::to_string).collect();
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].starts_with("WindowsBuild: Windows build 14393 is not supported"), "{found:#?}");
    assert!(found[1].starts_with("ContainersFeature: the Windows feature Containers is being removed"), "{found:#?}");
    assert!(found[2].starts_with("DiskSpace: C: has 512.0 MiB free"), "{found:#?}");
    let host = sim.host();
    assert_eq!(host.command_log.len(), 1, "the identity command only: {:#?}", host.command_log);
    assert!(host.unknown_commands.is_empty(), "{:#?}", host.unknown_commands);
    assert_eq!(host.scm.services().count(), 0);
    assert_eq!(tree(sim.root()), before, "no file or directory written");
    assert_eq!(records.record("wmco", "old").unwrap().status.unwrap().phase, Some(InstancePhase::Failed));
}

/// Grants the record's requested disruption, as the fleet executor does once the budget admits it.
async fn grant(records: &FakeInstanceRecords) {
    let mut status = records.record("wmco", "win-3").unwrap().status.unwrap();
    assert!(status.grant_disruption(jiff::Timestamp::now()), "a request to grant: {:?}", status.disruption);
    records.apply_status("wmco", "win-3", &status).await.unwrap();
}

/// Every path under `root` with its size, sorted.
fn tree(root: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let entry = entry.unwrap();
            let metadata = entry.metadata().unwrap();
            if metadata.is_dir() {
                pending.push(entry.path());
            }
            found.push((entry.path(), if metadata.is_dir() { 0 } else { metadata.len() }));
        }
    }
    found.sort();
    found
}

#[tokio::test]
async fn check_host_reads_identity_and_facts_in_one_command_and_changes_nothing() {
    let sim = Arc::new(InProcessHost::sample(6).unwrap());
    let before = tree(sim.root());
    let session = HostSession::new(sim.clone());

    let check = crate::check_host(&session, wmco_vocabulary::Platform::None, 430 << 20, None).await.unwrap();

    assert_eq!(check.failures, Vec::new());
    assert_eq!(check.identity.map(|identity| identity.expected_node_name).as_deref(), Some("winworker-6"));
    assert_eq!((check.facts.build, check.facts.ubr), (Some(20348), Some(2849)));
    assert_eq!(check.facts.containers, Some(crate::FeatureState::Enabled));
    assert_eq!(check.facts.free_bytes, Some(sim.host().volume.free_bytes));
    assert_eq!(session.counters().commands, 1);
    assert_eq!(tree(sim.root()), before);

    sim.host().volume.free_bytes = 1 << 30;
    let created = sim
        .host()
        .exec("admin", r#"sc.exe create docker binPath= "C:\Program Files\docker\dockerd.exe --run-service""#);
    assert_eq!(created.code, 0, "{created:?}");
    let check = crate::check_host(&session, wmco_vocabulary::Platform::None, 430 << 20, None).await.unwrap();
    let checks: Vec<crate::PreflightCheck> = check.failures.iter().map(|failure| failure.check).collect();
    assert_eq!(checks, [crate::PreflightCheck::DiskSpace, crate::PreflightCheck::ContainerRuntime]);
    assert_eq!(check.facts.docker_service.as_deref(), Some(r"C:\Program Files\docker\dockerd.exe --run-service"));
    assert_eq!(check.facts.containerd_service, None);
}

/// The first pass of a fresh host on the record `name` under `settings`: the outcome (or the error) and the record.
async fn first_pass(
    sim: Arc<InProcessHost>,
    settings: &crate::ServiceSettings,
) -> (Result<crate::ConfigureOutcome, crate::FlowError>, wmco_cluster_client::types::WindowsInstance) {
    let fakes = ClusterFakes::with_record("win-3", "127.0.0.30").await;
    let (records, cluster) = (&fakes.records, fakes.access());
    let outcome = configure_record(&HostSession::new(sim), cluster, records, settings).await;
    (outcome, records.record("wmco", "win-3").unwrap())
}

/// The kubelet service's command line on `sim`, if the service exists.
fn kubelet_command_line(sim: &InProcessHost) -> Option<String> {
    let host = sim.host();
    host.scm.services().find(|service| service.name == "kubelet").map(|service| service.image_path.clone())
}

/// On AWS the cloud controller knows the instance by its private DNS name: the Node is named after the instance
/// metadata's `local-hostname` (read with an IMDSv2 token by the identity command, in the same round trip), not after
/// the Windows host name. Before issue 35 the Node was `winworker-3`, a name the AWS cloud controller cannot find.
#[tokio::test]
async fn an_aws_host_takes_its_node_name_from_the_instance_metadata_in_the_same_round_trips() {
    use winhost_sim::metadata::InstanceMetadata;
    let aws = crate::ServiceSettings { platform: wmco_windows_services::Platform::Aws, ..sample_service_settings() };
    let on_ec2 = Arc::new(InProcessHost::sample(3).unwrap());
    on_ec2.host().instance_metadata =
        InstanceMetadata::Aws { local_hostname: "ip-10-0-3-30.ec2.internal".into(), tokens_required: true };
    let (outcome, record) = first_pass(on_ec2.clone(), &aws).await;
    let outcome = outcome.unwrap();
    assert_eq!(
        (outcome.state, outcome.node_name.as_str()),
        (ConfigureState::WaitingForNode, "ip-10-0-3-30.ec2.internal")
    );
    let status = record.status.unwrap();
    assert_eq!(status.expected_node_name.as_deref(), Some("ip-10-0-3-30.ec2.internal"));
    assert_eq!(status.hostname.as_deref(), Some("WinWorker-3"));
    let kubelet = kubelet_command_line(&on_ec2).unwrap();
    assert!(kubelet.contains("--hostname-override=ip-10-0-3-30.ec2.internal "), "{kubelet}");
    assert!(on_ec2.host().unknown_commands.is_empty());

    // The same host on platform None: the short host name, and as many round trips.
    let on_premises = Arc::new(InProcessHost::sample(3).unwrap());
    let (plain, _) = first_pass(on_premises, &sample_service_settings()).await;
    let plain = plain.unwrap();
    assert_eq!(plain.node_name, "winworker-3");
    assert_eq!(outcome.commands, plain.commands, "reading the metadata adds no round trip");
}

/// A host outside GCP joined to a GCP cluster: the metadata server's name does not resolve, so the host is refused
/// (retryably) with the reason, before anything is installed.
#[tokio::test]
async fn a_host_off_the_clusters_cloud_is_refused_naming_the_metadata_service_with_nothing_installed() {
    let gcp = crate::ServiceSettings { platform: wmco_windows_services::Platform::Gcp, ..sample_service_settings() };
    let sim = Arc::new(InProcessHost::sample(3).unwrap());
    let before = tree(sim.root());
    let (outcome, _) = first_pass(sim.clone(), &gcp).await;
    let error = outcome.unwrap_err();
    assert!(error.is_retryable());
    let text = error.to_string();
    assert!(
        text.contains("metadata.google.internal")
            && text.contains("The remote name could not be resolved: 'metadata.google.internal'"),
        "{text}"
    );
    assert_eq!(tree(sim.root()), before);
    assert_eq!(kubelet_command_line(&sim), None);
}

/// The directories the operator keeps for itself on a host (issue 36, point 7): the payload and configuration in
/// `C:\k`, the kubelet's keys in `C:\var\lib\kubelet`, and the services' logs.
fn private_directories() -> Vec<SimPath> {
    [r"C:\k", r"C:\var\lib\kubelet"]
        .into_iter()
        .chain(wmco_windows_services::SERVICE_LOG_DIRECTORIES)
        .map(|path| SimPath::parse(path).unwrap())
        .collect()
}

/// Every path at or below [`private_directories`] that grants anyone but SYSTEM and Administrators (with its SDDL),
/// and every one of those directories that is missing.
fn loose_paths(sim: &InProcessHost) -> Vec<String> {
    let host = sim.host();
    let mut loose = Vec::new();
    let mut pending = private_directories();
    while let Some(path) = pending.pop() {
        match host.disk.dacl(&path) {
            None => loose.push(format!("{path} is missing")),
            Some(dacl) if !dacl.only_system_and_administrators() => {
                loose.push(format!("{path}: {}", dacl.sddl(host.disk.owner(&path))));
            }
            Some(_) => {}
        }
        pending.extend(host.disk.list(&path).unwrap_or_default().into_iter().map(|(name, _, _)| path.join(&name)));
    }
    loose.sort();
    loose
}

/// `C:\` lets Users read everything below it and create files and folders in it (docs/testing.md § "Simulated
/// Windows hosts"), so the bootstrap token, the kubelet's keys and the services' binaries need directories of their
/// own: after a configure pass every directory the operator keeps, and everything in it, grants only SYSTEM and
/// Administrators. An admin who loosens them sees them repaired by the next pass — one round trip after the probe —
/// and reading the ACLs costs a converged pass no round trip beyond the probe.
#[tokio::test]
async fn host_directories_grant_only_system_and_administrators_and_loosened_ones_are_repaired() {
    let host = ProbedHost::fresh().await;
    let (sim, pass) = (&host.sim, || host.pass());

    let first = pass().await;
    assert_eq!(first.state, ConfigureState::WaitingForNode);
    assert_eq!(loose_paths(sim), Vec::<String>::new());

    for line in [
        r"icacls C:\k\cni /grant Users:(OI)(CI)RX",
        r"icacls C:\var\log\kubelet /reset",
        r"icacls C:\var\lib\kubelet /inheritance:e",
    ] {
        let output = sim.host().exec("admin", line);
        assert_eq!(output.code, 0, "{line}: {output:?}");
    }
    let loosened = loose_paths(sim);
    for path in [r"C:\k\cni:", r"C:\var\log\kubelet:", r"C:\var\lib\kubelet:"] {
        assert!(loosened.iter().any(|line| line.starts_with(path)), "{path} in {loosened:#?}");
    }
    let repaired = pass().await;
    report("pass after an admin loosened the ACLs", &repaired);
    assert_eq!(loose_paths(sim), Vec::<String>::new());
    assert_eq!(repaired.commands, 2, "the probe, then one command restores the ACLs");
    let converged = pass().await;
    assert_eq!((converged.commands, converged.steps_applied), (1, 0), "the probe alone");
    assert!(sim.host().unknown_commands.is_empty(), "{:?}", sim.host().unknown_commands);
}

/// The pass's one probe reads the pending-reboot markers the host keeps (issue 37) and the record shows them as the
/// `RebootRequired` condition naming them: `False` on a freshly patched host, `True` once Windows Update and an
/// installer leave their markers (no command more than the probe), `False` again after the host restarted.
#[tokio::test]
async fn pending_reboot_markers_are_shown_as_the_reboot_required_condition() {
    use winhost_sim::pending_reboot::PendingRebootMarker;
    use wmco_cluster_client::types::REBOOT_REQUIRED_CONDITION;
    let host = ProbedHost::fresh().await;
    let (sim, pass) = (&host.sim, || host.pass());
    let condition = || {
        let status = host.fakes.records.record("wmco", "win-3").unwrap().status.unwrap();
        let condition = status.condition(REBOOT_REQUIRED_CONDITION).unwrap().clone();
        (condition.status, condition.reason, condition.message)
    };

    assert_eq!(pass().await.state, ConfigureState::WaitingForNode);
    let (status, reason, _) = condition();
    assert_eq!((status.as_str(), reason.as_str()), ("False", "NoPendingReboot"));

    sim.host().mark_pending_reboot(PendingRebootMarker::WindowsUpdate).unwrap();
    sim.host().mark_pending_reboot(PendingRebootMarker::PendingFileRenameOperations).unwrap();
    let marked = pass().await;
    assert_eq!((marked.commands, marked.steps_applied), (1, 0), "read in the probe's round trip");
    let (status, reason, message) = condition();
    assert_eq!((status.as_str(), reason.as_str()), ("True", "RebootPending"));
    assert!(message.contains("WindowsUpdate, PendingFileRenameOperations"), "{message}");

    sim.host().reboot();
    pass().await;
    let (status, reason, _) = condition();
    assert_eq!((status.as_str(), reason.as_str()), ("False", "NoPendingReboot"), "a restart completed them");
    assert!(sim.host().unknown_commands.is_empty(), "{:?}", sim.host().unknown_commands);
}
