//! What a host brings to its first contact, on `winhost-sim`'s host model: the CNI state of a host moved by hand from
//! another cluster (cleared before the first join, kept on a host already joined), the Go operator's daemon
//! kubeconfig (removed with the daemon), and a build the node's networking does not support (an unpatched Windows
//! Server 2022, Windows Server 2019 on a cluster with a custom VXLAN port), refused by the real identity script.

use std::sync::Arc;
use std::time::Duration;

use winhost_sim::disk::WinPath as SimPath;
use winhost_sim::host::Identity;
use winhost_sim::remote_host::InProcessHost;
use wmco_cluster_client::InstanceRecords;
use wmco_cluster_client::fake::{FakeConfigMaps, FakeDrainer, FakeInstanceRecords, FakeNodes, objects};
use wmco_cluster_client::names::HYBRID_OVERLAY_SUBNET_ANNOTATION;

use super::simulator::SimFiles;
use crate::testing::sample_service_settings;
use crate::{
    ClusterAccess, ConfigureInputs, ConfigureOutcome, ConfigureState, FlowError, HostSession, PreflightCheck,
    ServiceSettings, SessionSettings, configure,
};

/// host-local IPAM's lease of a pod of the cluster the host was in before (`C:\var\lib\cni\networks\<net>\<ip>`).
const OLD_LEASE: &str = r"C:\var\lib\cni\networks\OVNKubernetesHybridOverlayNetwork\10.132.9.17";
/// The Go operator's daemon kubeconfig, with its long-lived ServiceAccount token.
const WICD_KUBECONFIG: &str = r"C:\k\wicd-kubeconfig";
/// The Go operator's daemon service.
const GO_DAEMON: &str = "windows-instance-config-daemon";
const NODE: &str = "winworker-3";

/// One simulated host, its record and the fake cluster.
struct World {
    sim: Arc<InProcessHost>,
    nodes: FakeNodes,
    records: FakeInstanceRecords,
    drainer: FakeDrainer,
    config_maps: FakeConfigMaps,
    session: HostSession,
}

impl World {
    /// A sample host of build `build`.`ubr` with its record.
    async fn new(build: u32, ubr: u32) -> World {
        let identity = Identity {
            hostname: "WinWorker-3".into(),
            fqdn: "winworker-3.lab.example".into(),
            build,
            ubr,
            node_ip: "203.0.113.30".parse().unwrap(),
        };
        let key = winhost_sim::remote_host::SAMPLE_HOST_KEY;
        let sim = Arc::new(InProcessHost::new(identity, "administrator@127.0.0.30:22", "SSH-2.0-wmco", key).unwrap());
        let records = FakeInstanceRecords::default();
        let record = objects::record("win-3").in_namespace("wmco").byoh("127.0.0.30").username("administrator").build();
        records.apply(&record).await.unwrap();
        // Every pass probes: no memory of unchanged passes.
        let settings = SessionSettings {
            unchanged_pass_window: Duration::ZERO,
            node_wait_window: Duration::ZERO,
            services_wait_window: Duration::ZERO,
            ..SessionSettings::default()
        };
        let session = HostSession::with_settings(sim.clone(), settings);
        World {
            sim,
            nodes: FakeNodes::default(),
            records,
            drainer: FakeDrainer::default(),
            config_maps: FakeConfigMaps::default(),
            session,
        }
    }

    async fn configure(&self, settings: &ServiceSettings) -> Result<ConfigureOutcome, FlowError> {
        let cluster = ClusterAccess {
            nodes: &self.nodes,
            records: &self.records,
            drainer: &self.drainer,
            config_maps: &self.config_maps,
        };
        let instance = self.records.record("wmco", "win-3").unwrap();
        let inputs = ConfigureInputs {
            instance: &instance,
            settings,
            files: &SimFiles,
            operator_version: "10.17.0",
            pub_key_hash: "ab",
            drain: &wmco_cluster_client::DrainOptions::default(),
        };
        configure(&self.session, cluster, &inputs).await
    }

    fn write(&self, path: &str, bytes: &[u8]) {
        let host = self.sim.host();
        let path = SimPath::parse(path).unwrap();
        host.disk.create_dir_all(&path.parent().unwrap()).unwrap();
        host.disk.write(&path, bytes).unwrap();
    }

    fn exists(&self, path: &str) -> bool {
        self.sim.host().disk.entry(&SimPath::parse(path).unwrap()).is_some()
    }

    /// The Node registers Ready with its hybrid-overlay subnet.
    fn register_node(&self) {
        // As the kubelet registers it: its `--node-ip` as InternalIP.
        let node_ip = self.sim.host().identity.node_ip.to_string();
        let node = objects::windows_node(NODE).internal_ip(&node_ip);
        let node = node.annotated(HYBRID_OVERLAY_SUBNET_ANNOTATION, "10.132.3.0/24").ready();
        self.nodes.insert(node.build());
    }

    /// The one failed preflight check of a pass that must fail only the `WindowsBuild` check: its message.
    async fn refused_build(&self, settings: &ServiceSettings) -> String {
        let error = self.configure(settings).await.unwrap_err();
        let failures = error.preflight_failures();
        assert_eq!(failures.len(), 1, "{failures:#?}");
        assert_eq!(failures[0].check, PreflightCheck::WindowsBuild);
        failures[0].message.clone()
    }
}

#[tokio::test]
async fn a_host_moved_from_another_cluster_loses_its_cni_state_before_its_first_join_and_keeps_it_once_joined() {
    let world = World::new(20348, 2849).await;
    world.write(OLD_LEASE, b"a7f3c2d1e0b9\r\neth0");
    let settings = sample_service_settings();

    assert_eq!(world.configure(&settings).await.unwrap().state, ConfigureState::WaitingForNode);
    assert!(!world.exists(r"C:\var\lib\cni"), "the other cluster's IPAM state is still on the host");
    assert!(world.sim.host().unknown_commands.is_empty(), "{:?}", world.sim.host().unknown_commands);

    // Joined: pods of this cluster hold leases; no later pass touches them.
    world.register_node();
    world.write(OLD_LEASE, b"this cluster's pod");
    assert_ne!(world.configure(&settings).await.unwrap().state, ConfigureState::WaitingForNode);
    assert!(world.exists(OLD_LEASE), "a joined host's CNI state was removed");
    // A crash before the identity was recorded re-runs the first contact, which sees the Node and keeps the state.
    let mut status = world.records.record("wmco", "win-3").unwrap().status.unwrap();
    status.expected_node_name = None;
    status.node_ip = None;
    status.hostname = None;
    status.fqdn = None;
    world.records.apply_status("wmco", "win-3", &status).await.unwrap();
    world.configure(&settings).await.unwrap();
    assert!(world.exists(OLD_LEASE), "the CNI state of a host whose Node exists was removed");
}

#[tokio::test]
async fn the_go_operators_daemon_kubeconfig_goes_with_its_daemon() {
    let world = World::new(20348, 2849).await;
    let create = format!(r#"sc.exe create {GO_DAEMON} binPath= "C:\k\{GO_DAEMON}.exe controller" start= auto"#);
    assert_eq!(world.sim.host().exec("SSH-2.0-go-operator", &create).code, 0);
    world.write(WICD_KUBECONFIG, b"apiVersion: v1\nusers:\n- name: wicd\n  user:\n    token: long-lived\n");
    let settings = sample_service_settings();

    let first = world.configure(&settings).await.unwrap();
    assert_eq!(first.state, ConfigureState::WaitingForNode);
    assert!(!world.sim.host().scm.services().any(|service| service.name == GO_DAEMON && !service.marked_for_deletion));
    assert!(!world.exists(WICD_KUBECONFIG), "the Go daemon's long-lived credential is still on the host");
    assert!(world.sim.host().unknown_commands.is_empty(), "{:?}", world.sim.host().unknown_commands);
    let again = world.configure(&settings).await.unwrap();
    assert_eq!((again.commands, again.uploads), (1, 0), "a host without it pays nothing more");
}

#[tokio::test]
async fn a_server_2022_host_without_kb5012637_is_refused_naming_the_update_and_a_patched_one_passes() {
    let settings = sample_service_settings();
    let world = World::new(20348, 587).await;
    let message = world.refused_build(&settings).await;
    assert!(message.contains("20348.587"), "{message}");
    assert!(message.contains("install KB5012637 or a later cumulative update"), "{message}");
    assert_eq!(world.sim.host().command_log.len(), 1, "the identity command only, reading the build and its UBR");

    let patched = World::new(20348, 681).await;
    assert_eq!(patched.configure(&settings).await.unwrap().state, ConfigureState::WaitingForNode);
}

#[tokio::test]
async fn a_server_2019_host_is_refused_on_a_cluster_with_a_custom_vxlan_port_naming_both_fixes() {
    let custom = ServiceSettings { hybrid_overlay_vxlan_port: Some(9898), ..sample_service_settings() };
    let world = World::new(17763, 6532).await;
    let message = world.refused_build(&custom).await;
    assert!(message.contains("custom VXLAN port 9898"), "{message}");
    assert!(message.contains("use Windows Server 2022 or remove the custom VXLAN port"), "{message}");

    let default_port = World::new(17763, 6532).await;
    let explicit_default = ServiceSettings { hybrid_overlay_vxlan_port: Some(4789), ..sample_service_settings() };
    assert_eq!(default_port.configure(&explicit_default).await.unwrap().state, ConfigureState::WaitingForNode);
    let server_2022 = World::new(20348, 2849).await;
    assert_eq!(server_2022.configure(&custom).await.unwrap().state, ConfigureState::WaitingForNode);
}
