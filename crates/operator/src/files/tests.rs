//! Tests of the files source: material refresh over the cluster-client fakes (token half-life, missing TLS
//! Secret, kubelet CA origin, nothing secret in `Debug` or logs), the file sets of both stages, and one two-phase
//! configure through `wmco-node-config` over `winhost-sim`'s in-process host with a small synthetic payload.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Node, NodeCondition, NodeStatus, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use wmco_cluster_client::fake::{FakeConfigMaps, FakeSecrets, FakeTokens};
use wmco_cluster_client::names::HYBRID_OVERLAY_SUBNET_ANNOTATION;
use wmco_cluster_client::types::{ControllerConfig, ControllerConfigSpec};
use wmco_cluster_client::{
    ClusterFacts, ClusterFactsSource, ConfigMaps, ControllerConfigs, Platform, ProxySettings, Secrets,
};
use wmco_node_config::{FileStage, HostFilesSource, HostIdentity, WithheldService};
use wmco_payload_manifest::{HostFileContent, HostFileSet, Manifest, Payload, SyntheticScale, write_synthetic_payload};

use super::*;
use crate::csr::Clock;
use crate::test_logs::{CapturedLogs, LogFormat};
use wmco_windows_services::{NodeProxy, Verbosity};

const NAMESPACE: &str = "wmco";
const API_CA: &str = "-----BEGIN CERTIFICATE-----\nQVBJLUNB\n-----END CERTIFICATE-----\n";
const KUBELET_CA: &str = "-----BEGIN CERTIFICATE-----\nS1VCRUxFVC1DQQ==\n-----END CERTIFICATE-----\n";
const TLS_CERT: &str = "-----BEGIN CERTIFICATE-----\nVExTLUNFUlQ=\n-----END CERTIFICATE-----\n";
const TLS_KEY: &str = "-----BEGIN PRIVATE KEY-----\nVExTLUtFWS1TRUNSRVQ=\n-----END PRIVATE KEY-----\n";
const SUBNET: &str = "10.132.4.0/24";

fn t0() -> Timestamp {
    "2026-11-22T03:00:00Z".parse().unwrap()
}

struct FakeControllerConfigs(Vec<ControllerConfig>);

#[async_trait]
impl ControllerConfigs for FakeControllerConfigs {
    async fn list(&self) -> wmco_cluster_client::Result<Vec<ControllerConfig>> {
        Ok(self.0.clone())
    }
}

fn controller_config(name: &str, ca: Option<&str>) -> ControllerConfig {
    let mut config = ControllerConfig::new(
        name,
        ControllerConfigSpec {
            kube_api_server_serving_ca_data: ca.map(|ca| base64::engine::general_purpose::STANDARD.encode(ca)),
            ..ControllerConfigSpec::default()
        },
    );
    config.metadata.name = Some(name.to_owned());
    config
}

/// The cluster seams, a settable clock and the refresher's snapshot.
struct World {
    config_maps: Arc<FakeConfigMaps>,
    secrets: Arc<FakeSecrets>,
    tokens: Arc<FakeTokens>,
    now: Arc<Mutex<Timestamp>>,
    refresher: MaterialRefresher,
    snapshot: MaterialSnapshot,
    facts: Arc<FakeFacts>,
}

/// Cluster facts the test sets: `Err` is a read failure.
struct FakeFacts(Mutex<Result<ClusterFacts, String>>);

#[async_trait]
impl ClusterFactsSource for FakeFacts {
    async fn gather(&self) -> wmco_cluster_client::Result<ClusterFacts> {
        self.0.lock().unwrap().clone().map_err(|value| wmco_cluster_client::Error::InvalidField {
            kind: "Network",
            name: "cluster".into(),
            field: "status.serviceNetwork",
            value,
            expected: "a CIDR",
        })
    }
}

impl World {
    async fn new(kubelet_ca: Option<KubeletCaSource>) -> World {
        let config_maps = Arc::new(FakeConfigMaps::default());
        let secrets = Arc::new(FakeSecrets::default());
        let tokens = Arc::new(FakeTokens::new(t0()));
        let now = Arc::new(Mutex::new(t0()));
        let facts_source = Arc::new(FakeFacts(Mutex::new(Ok(facts()))));
        let kubelet_ca = kubelet_ca.unwrap_or_else(|| {
            KubeletCaSource::ControllerConfigs(Arc::new(FakeControllerConfigs(vec![
                controller_config("a-empty", None),
                controller_config("machine-config-controller", Some(KUBELET_CA)),
            ])))
        });
        let sources = MaterialSources {
            config_maps: config_maps.clone(),
            secrets: secrets.clone(),
            tokens: tokens.clone(),
            kubelet_ca,
            facts: Some(facts_source.clone()),
            read_pull_secret: true,
        };
        let clock_now = Arc::clone(&now);
        let clock: Clock = Arc::new(move || *clock_now.lock().unwrap());
        let cluster = ClusterSettings::from_facts(&facts()).unwrap();
        let (refresher, snapshot) = MaterialRefresher::new(sources, RefreshSettings::new(NAMESPACE), cluster, clock);
        let world = World { config_maps, secrets, tokens, now, refresher, snapshot, facts: facts_source };
        world.put_root_ca().await;
        world
    }

    async fn put_root_ca(&self) {
        let config_map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(ROOT_CA_CONFIG_MAP.into()),
                namespace: Some(NAMESPACE.into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(ROOT_CA_KEY.to_owned(), API_CA.to_owned())])),
            ..ConfigMap::default()
        };
        self.config_maps.apply(&config_map).await.unwrap();
    }

    async fn put_tls_secret(&self) {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(EXPORTER_TLS_SECRET.into()),
                namespace: Some(NAMESPACE.into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([
                ("tls.crt".to_owned(), ByteString(TLS_CERT.as_bytes().to_vec())),
                ("tls.key".to_owned(), ByteString(TLS_KEY.as_bytes().to_vec())),
            ])),
            ..Secret::default()
        };
        self.secrets.apply(&secret).await.unwrap();
    }

    fn advance(&self, by: SignedDuration) {
        let mut now = self.now.lock().unwrap();
        *now = now.checked_add(by).unwrap();
    }

    fn token(&self) -> String {
        self.snapshot.current().bootstrap_token.as_ref().unwrap().token.expose().to_owned()
    }
}

fn facts() -> ClusterFacts {
    ClusterFacts {
        service_cidr: "172.30.0.0/16".parse().unwrap(),
        api_server_internal_url: "https://api-int.example:6443".into(),
        platform: Platform::None.into(),
        proxy: ProxySettings::default(),
        kubernetes_version: semver::Version::new(1, 36, 3),
        mirror_sets: vec![],
        pod_networking: None,
        kubelet_cloud: Default::default(),
    }
}

fn identity() -> HostIdentity {
    HostIdentity {
        hostname: "WinWorker-5".into(),
        fqdn: "winworker-5.lab.example".into(),
        node_ip: "203.0.113.50".parse().unwrap(),
        expected_node_name: "winworker-5".into(),
    }
}

fn node_with_subnet(subnet: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some("winworker-5".into()),
            annotations: Some([(HYBRID_OVERLAY_SUBNET_ANNOTATION.to_owned(), subnet.to_owned())].into()),
            ..ObjectMeta::default()
        },
        status: Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..NodeCondition::default()
            }]),
            ..NodeStatus::default()
        }),
        ..Node::default()
    }
}

/// A small synthetic payload in a temporary directory.
fn payload() -> (tempfile::TempDir, Manifest, Payload) {
    let manifest = Manifest::product().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let product = concat!(env!("CARGO_MANIFEST_DIR"), "/../../payload");
    write_synthetic_payload(&manifest, product.as_ref(), dir.path(), SyntheticScale::Small).unwrap();
    let payload = Payload::load(dir.path(), &manifest).unwrap();
    (dir, manifest, payload)
}

fn node_files(world: &World) -> (tempfile::TempDir, NodeFiles) {
    let (dir, manifest, payload) = payload();
    (dir, NodeFiles::new(manifest, payload, world.snapshot.clone()))
}

/// Destination → rendered text of every rendered file in `set`.
fn rendered(set: &HostFileSet) -> BTreeMap<String, String> {
    set.files()
        .iter()
        .filter_map(|file| match &file.content {
            HostFileContent::Rendered(rendered) => {
                Some((file.destination.as_str().to_owned(), String::from_utf8(rendered.bytes().to_vec()).unwrap()))
            }
            HostFileContent::Payload { .. } => None,
        })
        .collect()
}

#[tokio::test]
async fn a_refresh_reads_every_piece_and_the_kubelet_ca_comes_from_the_first_controller_config_with_data() {
    let world = World::new(None).await;
    world.put_tls_secret().await;
    assert_eq!(
        world.snapshot.current().api_server_ca.as_ref().unwrap_err(),
        &MaterialError::NotReadYet { what: "the API server CA" }
    );
    let wait = world.refresher.refresh().await;
    assert_eq!(wait, Duration::from_secs(60));
    let material = world.snapshot.current();
    assert!(material.is_complete());
    assert_eq!(material.api_server_ca.as_ref().unwrap().as_str(), API_CA);
    assert_eq!(material.kubelet_client_ca.as_ref().unwrap().as_str(), KUBELET_CA);
    let token = material.bootstrap_token.as_ref().unwrap();
    assert_eq!(
        (token.token.expose(), token.expires_at),
        ("fake-token-1", t0().checked_add(SignedDuration::from_hours(1)).unwrap())
    );
    let issued = world.tokens.issued();
    assert_eq!(issued.len(), 1);
    assert_eq!(issued[0].0, "openshift-machine-config-operator/node-bootstrapper");
    assert_eq!(issued[0].1.lifetime, Duration::from_secs(3600));
    assert!(issued[0].1.audiences.is_empty());
}

#[tokio::test]
async fn the_token_is_minted_again_at_half_its_lifetime_and_not_before() {
    let world = World::new(None).await;
    world.put_tls_secret().await;
    world.refresher.refresh().await;
    world.advance(SignedDuration::from_mins(29));
    assert_eq!(world.refresher.refresh().await, Duration::from_secs(60));
    assert_eq!((world.tokens.issued().len(), world.token()), (1, "fake-token-1".to_owned()));
    world.advance(SignedDuration::from_secs(30));
    assert_eq!(world.refresher.refresh().await, Duration::from_secs(30), "the wait stops at the half-life");
    world.advance(SignedDuration::from_secs(30));
    world.refresher.refresh().await;
    assert_eq!((world.tokens.issued().len(), world.token()), (2, "fake-token-2".to_owned()));
}

#[tokio::test]
async fn plain_kubernetes_uses_the_api_server_ca_for_the_kubelet_and_a_missing_controller_config_ca_is_named() {
    let world = World::new(Some(KubeletCaSource::ApiServerCa)).await;
    world.refresher.refresh().await;
    assert_eq!(world.snapshot.current().kubelet_client_ca.as_ref().unwrap().as_str(), API_CA);

    let empty = KubeletCaSource::ControllerConfigs(Arc::new(FakeControllerConfigs(vec![controller_config("x", None)])));
    let world = World::new(Some(empty)).await;
    world.refresher.refresh().await;
    let (_dir, files) = node_files(&world);
    let error = files.file_set(&identity(), FileStage::Bootstrap).unwrap_err();
    assert_eq!(
        error.to_string(),
        "bootstrap files: no ControllerConfig carries spec.kubeAPIServerServingCAData (the machine-config operator \
         publishes it)"
    );
}

#[tokio::test]
async fn a_missing_tls_secret_withholds_windows_exporter_only_and_names_the_secret() {
    let world = World::new(None).await;
    let wait = world.refresher.refresh().await;
    assert_eq!(wait, Duration::from_secs(5), "an unusable piece is read again soon");
    let (_dir, files) = node_files(&world);
    assert!(files.file_set(&identity(), FileStage::Bootstrap).unwrap().withheld.is_empty());
    let node = node_with_subnet(SUBNET);
    let waiting = files.files(&identity(), FileStage::Node(&node)).unwrap();
    assert_eq!(
        waiting.withheld,
        [WithheldService::new(
            "windows_exporter",
            "Secret wmco/windows-machine-config-operator-tls does not exist: OpenShift's service CA fills it for the \
             windows-exporter Service; elsewhere create it with tls.crt and tls.key"
        )]
    );
    let names: Vec<String> = rendered(&waiting.files).into_keys().collect();
    assert!(names.contains(&r"C:\k\cni\config\cni.conf".to_owned()), "networking goes ahead: {names:?}");
    assert!(!names.iter().any(|name| name.starts_with(r"C:\k\tls\certs")), "no TLS file without the Secret: {names:?}");

    world.put_tls_secret().await;
    world.refresher.refresh().await;
    let complete = files.file_set(&identity(), FileStage::Node(&node)).unwrap();
    assert!(complete.withheld.is_empty());
    assert!(rendered(&complete.files).contains_key(r"C:\k\tls\certs\tls.crt"));
}

#[tokio::test]
async fn the_bootstrap_set_carries_the_token_and_no_phase_two_file() {
    let world = World::new(None).await;
    world.refresher.refresh().await;
    let (_dir, files) = node_files(&world);
    let set = files.file_set(&identity(), FileStage::Bootstrap).unwrap().files;
    let rendered = rendered(&set);
    let names: Vec<&str> = rendered.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            r"C:\k\bootstrap-ca.crt",
            r"C:\k\bootstrap-kubeconfig",
            r"C:\k\ca-bundle.crt",
            r"C:\k\certs\wmco-certs.txt",
            r"C:\k\containerd\containerd_conf.toml",
            r"C:\k\containerd\registries\wmco-registries.txt",
            r"C:\k\kubelet-ca.crt",
            r"C:\k\kubelet.conf",
        ]
    );
    assert!(rendered[r"C:\k\bootstrap-kubeconfig"].contains("token: fake-token-1\n"));
    assert!(rendered[r"C:\k\bootstrap-kubeconfig"].contains("server: https://api-int.example:6443\n"));
    assert_eq!(rendered[r"C:\k\bootstrap-ca.crt"], API_CA);
    assert_eq!(rendered[r"C:\k\kubelet-ca.crt"], KUBELET_CA);
    assert!(rendered[r"C:\k\kubelet.conf"].contains("\"172.30.0.10\""));
    let payload_files = set.files().iter().filter(|file| matches!(file.content, HostFileContent::Payload { .. }));
    assert_eq!(payload_files.count(), 12, "every payload file of platform None (no AWS or Azure component)");
}

#[tokio::test]
async fn the_node_set_carries_cni_kube_proxy_and_tls_files_and_never_the_bootstrap_kubeconfig() {
    let world = World::new(None).await;
    world.put_tls_secret().await;
    world.refresher.refresh().await;
    let (_dir, files) = node_files(&world);
    let node = node_with_subnet(SUBNET);
    let set = files.file_set(&identity(), FileStage::Node(&node)).unwrap().files;
    let rendered = rendered(&set);
    let names: Vec<&str> = rendered.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            r"C:\k\bootstrap-ca.crt",
            r"C:\k\ca-bundle.crt",
            r"C:\k\certs\wmco-certs.txt",
            r"C:\k\cni\config\cni.conf",
            r"C:\k\containerd\containerd_conf.toml",
            r"C:\k\containerd\registries\wmco-registries.txt",
            r"C:\k\kube-proxy.conf",
            r"C:\k\kubelet-ca.crt",
            r"C:\k\kubelet.conf",
            r"C:\k\tls\certs\tls.crt",
            r"C:\k\tls\certs\tls.key",
        ]
    );
    let kube_proxy: serde_json::Value = serde_json::from_str(&rendered[r"C:\k\kube-proxy.conf"]).unwrap();
    assert_eq!(kube_proxy["winkernel"]["sourceVip"], "10.132.4.2");
    assert_eq!(kube_proxy["clusterCIDR"], SUBNET);
    assert_eq!(kube_proxy["hostnameOverride"], "winworker-5");
    let cni: serde_json::Value = serde_json::from_str(&rendered[r"C:\k\cni\config\cni.conf"]).unwrap();
    assert_eq!(cni["ipam"]["rangeStart"], "10.132.4.3");
    assert_eq!(cni["policies"][2]["value"]["settings"]["providerAddress"], "203.0.113.50");
    assert_eq!(
        (rendered[r"C:\k\tls\certs\tls.crt"].as_str(), rendered[r"C:\k\tls\certs\tls.key"].as_str()),
        (TLS_CERT, TLS_KEY)
    );

    for (subnet, reason) in [("", "unusable"), ("10.132.4.0/30", "too small")] {
        let error = files.file_set(&identity(), FileStage::Node(&node_with_subnet(subnet))).unwrap_err().to_string();
        assert!(error.starts_with("Node winworker-5: "), "{error}");
        assert!(error.contains(reason), "{error}");
    }
}

#[tokio::test]
async fn neither_the_token_nor_the_tls_key_reaches_debug_output_errors_or_logs() {
    let logs = CapturedLogs::start(LogFormat::Text, tracing::Level::TRACE);

    let world = World::new(None).await;
    world.refresher.refresh().await;
    world.put_tls_secret().await;
    world.refresher.refresh().await;
    world.advance(SignedDuration::from_mins(31));
    world.refresher.refresh().await;
    let (_dir, files) = node_files(&world);
    let bootstrap = files.file_set(&identity(), FileStage::Bootstrap).unwrap().files;
    let material = world.snapshot.current();
    let debug = format!("{material:?} {bootstrap:?}");
    let logged = logs.contents();
    assert!(logged.contains("minted a node-bootstrapper token"), "{logged}");
    assert!(logged.contains("windows-machine-config-operator-tls does not exist"), "{logged}");
    for secret in ["fake-token-1", "fake-token-2", "VExTLUtFWS1TRUNSRVQ"] {
        assert!(!debug.contains(secret), "{secret} in {debug}");
        assert!(!logged.contains(secret), "{secret} in {logged}");
    }
}

/// One simulated host (`winhost-sim`'s in-process host) with its BYOH record, configured through `wmco-node-config`
/// over the cluster-client fakes.
struct SimulatedHost {
    sim: Arc<winhost_sim::remote_host::InProcessHost>,
    nodes: wmco_cluster_client::fake::FakeNodes,
    records: wmco_cluster_client::fake::FakeInstanceRecords,
    drainer: wmco_cluster_client::fake::FakeDrainer,
    config_maps: wmco_cluster_client::fake::FakeConfigMaps,
    session: wmco_node_config::HostSession,
}

impl SimulatedHost {
    const RECORD: &str = "byoh-127-0-0-50";

    async fn new() -> SimulatedHost {
        use wmco_cluster_client::InstanceRecords as _;
        let sim = Arc::new(winhost_sim::remote_host::InProcessHost::sample(5).unwrap());
        let records = wmco_cluster_client::fake::FakeInstanceRecords::default();
        let instance = wmco_cluster_client::fake::objects::record(Self::RECORD)
            .in_namespace(NAMESPACE)
            .byoh("127.0.0.50")
            .username("administrator")
            .build();
        records.apply(&instance).await.unwrap();
        let session = wmco_node_config::HostSession::new(sim.clone());
        SimulatedHost {
            sim,
            nodes: Default::default(),
            records,
            drainer: Default::default(),
            config_maps: Default::default(),
            session,
        }
    }

    fn access(&self) -> wmco_node_config::ClusterAccess<'_> {
        wmco_node_config::ClusterAccess {
            nodes: &self.nodes,
            records: &self.records,
            drainer: &self.drainer,
            config_maps: &self.config_maps,
        }
    }

    /// One configure pass with the files of `files` and the service settings of `world`'s current cluster.
    async fn configure(&self, world: &World, files: &NodeFiles) -> wmco_node_config::ConfigureOutcome {
        let settings = world.snapshot.current().settings.service_settings(Verbosity::Normal);
        let instance = self.records.record(NAMESPACE, Self::RECORD).unwrap();
        let inputs = wmco_node_config::ConfigureInputs {
            instance: &instance,
            settings: &settings,
            files,
            operator_version: "10.17.0",
            pub_key_hash: "ab",
            drain: &wmco_cluster_client::DrainOptions::default(),
        };
        wmco_node_config::configure(&self.session, self.access(), &inputs).await.unwrap()
    }

    /// What the kubelet and OVN-Kubernetes would do once the first pass started the kubelet: the kubelet's
    /// kubeconfig, the hybrid-overlay networks, and the Node `node_name` with its subnet, registered as the kubelet
    /// registers it (a Windows Node whose InternalIP is the `--node-ip` the record holds).
    fn register(&self, node_name: &str) {
        let node_ip = self.records.record(NAMESPACE, Self::RECORD).unwrap().status.unwrap().node_ip.unwrap();
        let mut node = node_with_subnet(SUBNET);
        node.metadata.name = Some(node_name.to_owned());
        node.metadata.labels.get_or_insert_default().insert("kubernetes.io/os".into(), "windows".into());
        let address =
            k8s_openapi::api::core::v1::NodeAddress { type_: "InternalIP".into(), address: node_ip.to_string() };
        node.status.get_or_insert_default().addresses = Some(vec![address]);
        let mut host = self.sim.host();
        host.disk.write(&winhost_sim::disk::WinPath::parse(r"C:\k\kubeconfig").unwrap(), b"apiVersion: v1\n").unwrap();
        host.hns_networks.extend(wmco_node_config::HYBRID_OVERLAY_NETWORKS.map(|name| winhost_sim::host::HnsNetwork {
            name: name.to_owned(),
            kind: "Overlay".into(),
            id: format!("{name}-id"),
            address_prefix: Some(SUBNET.into()),
            gateway: None,
        }));
        drop(host);
        self.nodes.insert(node);
    }

    fn read(&self, path: &str) -> Option<String> {
        let host = self.sim.host();
        host.disk
            .read(&winhost_sim::disk::WinPath::parse(path).unwrap())
            .ok()
            .map(|bytes| String::from_utf8(bytes).unwrap())
    }

    /// The running services by name, with their process IDs.
    fn running(&self) -> BTreeMap<String, u32> {
        let mut host = self.sim.host();
        host.refresh();
        assert!(host.unknown_commands.is_empty(), "{:?}", host.unknown_commands);
        let running = host.scm.services().filter(|service| service.state == winhost_sim::scm::State::Running);
        running.map(|service| (service.name.clone(), service.pid)).collect()
    }
}

#[tokio::test]
async fn node_config_configures_a_simulated_host_in_both_phases_from_the_payload_backed_files() {
    use wmco_cluster_client::types::InstancePhase;
    use wmco_node_config::ConfigureState;

    let world = World::new(None).await;
    world.put_tls_secret().await;
    world.refresher.refresh().await;
    let (_dir, files) = node_files(&world);
    let host = SimulatedHost::new().await;

    let bootstrap = host.configure(&world, &files).await;
    assert_eq!(bootstrap.state, ConfigureState::WaitingForNode);
    let kubeconfig = host.read(r"C:\k\bootstrap-kubeconfig").unwrap();
    assert!(kubeconfig.contains("token: fake-token-1\n"), "{kubeconfig}");
    assert_eq!(host.read(r"C:\k\bootstrap-ca.crt").as_deref(), Some(API_CA));
    assert_eq!(host.read(r"C:\k\kubelet-ca.crt").as_deref(), Some(KUBELET_CA));
    assert_eq!(host.read(r"C:\k\tls\certs\tls.crt"), None);
    assert_eq!(host.read(r"C:\k\cni\config\cni.conf"), None);

    host.register(&bootstrap.node_name);
    let ready = host.configure(&world, &files).await;
    assert_eq!(ready.state, ConfigureState::Ready);
    let record = host.records.record(NAMESPACE, SimulatedHost::RECORD).unwrap();
    assert_eq!(record.status.unwrap().phase, Some(InstancePhase::Ready));
    assert_eq!(host.read(r"C:\k\bootstrap-kubeconfig"), None);
    assert_eq!(host.read(r"C:\k\tls\certs\tls.key").as_deref(), Some(TLS_KEY));
    assert!(host.read(r"C:\k\cni\config\cni.conf").unwrap().contains("\"rangeStart\": \"10.132.4.3\""));
    assert!(host.read(r"C:\k\kube-proxy.conf").unwrap().contains("\"sourceVip\": \"10.132.4.2\""));
    assert_eq!(host.running().len(), 6);

    // A new token changes nothing on a registered host: the node stage's files are the same, so the pass is
    // answered from the session's memory of the last one, without a command or an upload.
    world.advance(SignedDuration::from_mins(31));
    world.refresher.refresh().await;
    assert_eq!(world.token(), "fake-token-2");
    let converged = host.configure(&world, &files).await;
    assert_eq!((converged.state, converged.commands, converged.uploads), (ConfigureState::Ready, 0, 0));
}

#[tokio::test]
async fn an_azure_host_gets_cloud_node_manager_s_credential_renewed_without_a_restart_and_loses_it_on_removal() {
    use wmco_node_config::{ConfigureState, DeconfigureInputs, deconfigure};

    let world = azure_world().await;
    world.refresher.refresh().await;
    let (_dir, files) = node_files(&world);
    let host = SimulatedHost::new().await;
    let bootstrap = host.configure(&world, &files).await;
    assert_eq!(host.read(r"C:\k\cloud-node-manager-kubeconfig"), None, "node stage only");
    host.register(&bootstrap.node_name);
    assert_eq!(host.configure(&world, &files).await.state, ConfigureState::Ready);
    let token = |world: &World| {
        world.snapshot.current().cloud_node_manager_token.clone().unwrap().unwrap().token.expose().to_owned()
    };
    let first = token(&world);
    assert_eq!(host.read(r"C:\k\cloud-node-manager-token"), Some(first.clone()));
    let kubeconfig = host.read(r"C:\k\cloud-node-manager-kubeconfig").unwrap();
    assert!(kubeconfig.contains(r"tokenFile: C:\k\cloud-node-manager-token"), "{kubeconfig}");
    let before = host.running();
    assert_eq!(before.len(), 7, "cloud-node-manager runs: {before:?}");

    world.advance(SignedDuration::from_hours(12));
    world.refresher.refresh().await;
    let second = token(&world);
    assert_ne!(first, second);
    let renewed = host.configure(&world, &files).await;
    assert_eq!((renewed.state, renewed.uploads), (ConfigureState::Ready, 1), "the token file alone");
    assert_eq!(host.read(r"C:\k\cloud-node-manager-token"), Some(second));
    assert_eq!(host.running(), before, "no service restarted: client-go reads the token file again");

    let instance = host.records.record(NAMESPACE, SimulatedHost::RECORD).unwrap();
    let drain = wmco_cluster_client::DrainOptions::default();
    deconfigure(&host.session, host.access(), &DeconfigureInputs { instance: &instance, drain: &drain }).await.unwrap();
    for path in [r"C:\k\cloud-node-manager-kubeconfig", r"C:\k\cloud-node-manager-token"] {
        assert_eq!(host.read(path), None, "{path} is removed with the host's configuration");
    }
}

#[tokio::test]
async fn node_file_changes_fire_for_the_tls_secret_and_the_cas_but_not_for_a_new_bootstrap_token() {
    use futures::{FutureExt as _, StreamExt as _};
    let world = World::new(None).await;
    let mut changes = Box::pin(world.snapshot.node_file_changes());
    let mut fired = || changes.next().now_or_never().is_some();
    world.refresher.refresh().await;
    assert!(fired(), "the first read publishes the CAs");
    world.refresher.refresh().await;
    assert!(!fired(), "nothing changed");
    world.advance(SignedDuration::from_mins(31));
    world.refresher.refresh().await;
    assert_eq!(world.tokens.issued().len(), 2, "the token was minted again");
    assert!(!fired(), "a new bootstrap token changes no registered host's files");
    world.put_tls_secret().await;
    world.refresher.refresh().await;
    assert!(fired(), "windows_exporter's TLS Secret appeared");
}

#[tokio::test]
async fn a_proxy_change_is_read_again_reaches_the_service_settings_and_fires_without_logging_the_url() {
    use futures::{FutureExt as _, StreamExt as _};
    let logs = CapturedLogs::start(LogFormat::Text, tracing::Level::TRACE);
    let world = World::new(None).await;
    let services = ServiceSettingsSource::Cluster {
        snapshot: world.snapshot.clone(),
        verbosity: Verbosity::Normal,
        payload_kubelet_version: semver::Version::new(1, 36, 1),
    };
    let mut changes = Box::pin(world.snapshot.node_file_changes());
    let mut fired = || changes.next().now_or_never().is_some();
    world.refresher.refresh().await;
    assert!(fired(), "the first read publishes the CAs");
    assert_eq!(services.current().proxy, NodeProxy::default());
    let unproxied = world.snapshot.current().settings_generation();
    world.refresher.refresh().await;
    assert_eq!(world.snapshot.current().settings_generation(), unproxied, "nothing changed, same generation");

    let secret_url = "http://user:s3cret@proxy.example:3128";
    let proxied = ProxySettings {
        http_proxy: Some(secret_url.into()),
        https_proxy: Some(secret_url.into()),
        no_proxy: Some(".cluster.local,172.30.0.0/16".into()),
    };
    *world.facts.0.lock().unwrap() = Ok(ClusterFacts { proxy: proxied, ..facts() });
    world.refresher.refresh().await;
    assert!(fired(), "a proxy change reaches every registered host");
    let proxied = world.snapshot.current().settings_generation();
    assert_ne!(proxied, unproxied, "a proxy change is a new settings generation");
    let proxy = services.current().proxy;
    assert_eq!(proxy.http_proxy.as_deref(), Some(secret_url));
    assert_eq!(proxy.no_proxy.as_deref(), Some(".cluster.local,172.30.0.0/16"));

    *world.facts.0.lock().unwrap() = Err("fd00::/112".into());
    world.refresher.refresh().await;
    assert!(!fired(), "unreadable facts keep the previous settings");
    assert_eq!(services.current().proxy.http_proxy.as_deref(), Some(secret_url));

    *world.facts.0.lock().unwrap() = Ok(facts());
    world.refresher.refresh().await;
    assert!(fired(), "clearing the proxy reaches every host too");
    assert_eq!(services.current().proxy, NodeProxy::default());
    assert_eq!(world.snapshot.current().settings_generation(), unproxied, "back to the first generation");

    let logged = logs.contents();
    assert!(logged.contains("cluster settings changed"), "{logged}");
    assert!(logged.contains("proxy"), "{logged}");
    assert!(logged.contains("keeping the previous cluster settings"), "{logged}");
    assert!(!logged.contains("s3cret"), "{logged}");
}

#[test]
fn the_hybrid_overlay_vxlan_port_and_the_log_rotation_reach_the_service_settings() {
    let networking = wmco_cluster_client::PodNetworking {
        network_type: Some("OVNKubernetes".into()),
        hybrid_overlay: true,
        hybrid_overlay_vxlan_port: Some(9898),
    };
    let rotation = wmco_windows_services::LogRotation {
        max_size_bytes: Some(100 << 20),
        max_age: Some(Duration::from_secs(168 * 3600)),
        flush_interval: Some(Duration::from_secs(5)),
    };
    let settings = ClusterSettings::from_facts(&ClusterFacts { pod_networking: Some(networking), ..facts() })
        .unwrap()
        .with_log_rotation(rotation);
    let services = settings.service_settings(Verbosity::Normal);
    assert_eq!(services.hybrid_overlay_vxlan_port, Some(9898));
    assert_eq!(services.log_rotation, rotation);
    let inputs = settings.cluster_inputs(RenderMaterial {
        api_server_ca: API_CA.parse().unwrap(),
        kubelet_client_ca: KUBELET_CA.parse().unwrap(),
        bootstrap_token: wmco_payload_manifest::render::SecretToken::new("t"),
        pull_secret: None,
        registry_cas: Vec::new(),
        trusted_ca: None,
    });
    assert_eq!(inputs.log_rotation.file_size.as_deref(), Some("104857600"));
    assert_eq!(inputs.log_rotation.file_age.as_deref(), Some("604800s"));
    assert_eq!(inputs.log_rotation.flush_interval.as_deref(), Some("5s"));
    let default = ClusterSettings::from_facts(&facts()).unwrap();
    assert_eq!(default.service_settings(Verbosity::Normal).hybrid_overlay_vxlan_port, None);
    assert_eq!(default.changed_fields(&settings), ["hybrid_overlay_vxlan_port", "pod_networking", "log_rotation"]);
}

#[test]
fn windows_nodes_join_only_ovn_kubernetes_with_hybrid_overlay_within_the_version_skew() {
    let kubelet = semver::Version::new(1, 36, 1);
    let networking = |network_type: Option<&str>, hybrid_overlay: bool| {
        Some(wmco_cluster_client::PodNetworking {
            network_type: network_type.map(str::to_owned),
            hybrid_overlay,
            hybrid_overlay_vxlan_port: None,
        })
    };
    let refusal = |pod_networking, version: semver::Version| {
        let facts = ClusterFacts { pod_networking, kubernetes_version: version, ..facts() };
        ClusterSettings::from_facts(&facts).unwrap().refusal(&kubelet)
    };
    let v1_36 = semver::Version::new(1, 36, 3);
    assert_eq!(refusal(networking(Some("OVNKubernetes"), true), v1_36.clone()), None);
    assert_eq!(refusal(None, v1_36.clone()), None, "plain Kubernetes: the operator cannot tell");
    let sdn = refusal(networking(Some("OpenShiftSDN"), false), v1_36.clone()).unwrap();
    assert!(sdn.contains("spec.networkType) is OpenShiftSDN"), "{sdn}");
    let unset = refusal(networking(None, false), v1_36.clone()).unwrap();
    assert!(unset.contains("is unset"), "{unset}");
    let no_hybrid = refusal(networking(Some("OVNKubernetes"), false), v1_36.clone()).unwrap();
    assert!(no_hybrid.contains("hybridClusterNetwork is empty"), "{no_hybrid}");
    let ovn = networking(Some("OVNKubernetes"), true);
    assert_eq!(refusal(ovn.clone(), semver::Version::new(1, 39, 0)), None, "three minors older is allowed");
    let too_old = refusal(ovn.clone(), semver::Version::new(1, 40, 0)).unwrap();
    assert!(too_old.contains("kubelet 1.36.1 is outside the supported skew of the API server 1.40.0"), "{too_old}");
    assert!(refusal(ovn, semver::Version::new(1, 35, 9)).is_some(), "a kubelet newer than the API server");
}

#[tokio::test]
async fn the_pull_secret_gives_mirrors_their_credentials_and_a_change_reaches_every_host() {
    use futures::{FutureExt as _, StreamExt as _};
    let world = World::new(None).await;
    let mirrored = ClusterFacts {
        mirror_sets: vec![wmco_cluster_client::MirrorSet {
            source: "quay.io/openshift-release-dev".into(),
            mirrors: vec!["mirror.example:5000/openshift-release-dev".into()],
            kind: wmco_vocabulary::MirrorKind::Digest,
            never_contact_source: false,
        }],
        ..facts()
    };
    *world.facts.0.lock().unwrap() = Ok(mirrored);
    let mut changes = Box::pin(world.snapshot.node_file_changes());
    let mut fired = || changes.next().now_or_never().is_some();
    world.refresher.refresh().await;
    assert!(fired());
    assert_eq!(world.snapshot.current().pull_secret, Ok(None), "no Secret: mirrors without credentials");
    let hosts_toml = r"C:\k\containerd\registries\quay.io\hosts.toml";
    let (_dir, files) = node_files(&world);
    let text = rendered(&files.file_set(&identity(), FileStage::Bootstrap).unwrap().files)[hosts_toml].clone();
    assert!(text.contains("mirror.example:5000") && !text.contains("Authorization"), "{text}");

    let put = |json: &str| Secret {
        metadata: ObjectMeta {
            name: Some("pull-secret".into()),
            namespace: Some("openshift-config".into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(PULL_SECRET_KEY.to_owned(), ByteString(json.as_bytes().to_vec()))])),
        ..Secret::default()
    };
    world.secrets.apply(&put(r#"{"auths":{"mirror.example:5000":{"auth":"bWlycm9yOnMzY3JldA=="}}}"#)).await.unwrap();
    world.refresher.refresh().await;
    assert!(fired(), "a new credential reaches every registered host");
    let text = rendered(&files.file_set(&identity(), FileStage::Bootstrap).unwrap().files)[hosts_toml].clone();
    assert!(text.contains("Basic bWlycm9yOnMzY3JldA=="), "{text}");
    assert!(!format!("{:?}", world.snapshot.current()).contains("bWlycm9yOnMzY3JldA"), "Debug hides the credential");

    world.secrets.apply(&put("not json")).await.unwrap();
    world.refresher.refresh().await;
    let error = world.snapshot.current().pull_secret.clone().unwrap_err();
    assert!(error.to_string().contains("openshift-config/pull-secret"), "{error}");
    let text = rendered(&files.file_set(&identity(), FileStage::Bootstrap).unwrap().files)[hosts_toml].clone();
    assert!(!text.contains("Authorization"), "an unusable pull secret gives no credentials: {text}");
}

#[tokio::test]
async fn registry_cas_of_the_controller_config_reach_the_trusted_bundle() {
    const REGISTRY_CA: &str = "-----BEGIN CERTIFICATE-----\nUkVHSVNUUlk=\n-----END CERTIFICATE-----\n";
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let mut config = controller_config("machine-config-controller", Some(KUBELET_CA));
    config.spec.image_registry_bundle_user_data = vec![wmco_cluster_client::types::ImageRegistryBundle {
        file: "registry.example..5000".into(),
        data: encode(REGISTRY_CA),
    }];
    config.spec.image_registry_bundle_data = vec![wmco_cluster_client::types::ImageRegistryBundle {
        file: "image-registry.openshift-image-registry.svc..5000".into(),
        data: "not base64!".into(),
    }];
    let world =
        World::new(Some(KubeletCaSource::ControllerConfigs(Arc::new(FakeControllerConfigs(vec![config]))))).await;
    world.refresher.refresh().await;
    let error = world.snapshot.current().registry_cas.clone().unwrap_err();
    assert!(error.to_string().contains("spec.imageRegistryBundleData"), "{error}");
    assert!(world.snapshot.current().kubelet_client_ca.is_ok(), "a bad registry CA never blocks the kubelet CA");

    let mut fixed = controller_config("machine-config-controller", Some(KUBELET_CA));
    fixed.spec.image_registry_bundle_user_data = vec![wmco_cluster_client::types::ImageRegistryBundle {
        file: "registry.example..5000".into(),
        data: encode(REGISTRY_CA),
    }];
    let world =
        World::new(Some(KubeletCaSource::ControllerConfigs(Arc::new(FakeControllerConfigs(vec![fixed]))))).await;
    world.refresher.refresh().await;
    let (_dir, files) = node_files(&world);
    let bundle =
        rendered(&files.file_set(&identity(), FileStage::Bootstrap).unwrap().files)[r"C:\k\ca-bundle.crt"].clone();
    assert_eq!(bundle, format!("# registry.example:5000\n{REGISTRY_CA}"));
}

#[tokio::test]
async fn the_trusted_ca_config_map_is_kept_labelled_and_its_bundle_reaches_hosts_only_with_a_proxy() {
    use wmco_cluster_client::names::{INJECT_TRUSTED_CA_BUNDLE_LABEL, TRUSTED_CA_CONFIG_MAP, TRUSTED_CA_KEY};
    const PROXY_CA: &str = "-----BEGIN CERTIFICATE-----\nUFJPWFktQ0E=\n-----END CERTIFICATE-----\n";
    const OTHER_CA: &str = "-----BEGIN CERTIFICATE-----\nT1RIRVItQ0E=\n-----END CERTIFICATE-----\n";
    let world = World::new(None).await;
    let stored = || async { world.config_maps.get(NAMESPACE, TRUSTED_CA_CONFIG_MAP).await.unwrap() };
    let label = |map: &ConfigMap| {
        map.metadata.labels.as_ref().and_then(|labels| labels.get(INJECT_TRUSTED_CA_BUNDLE_LABEL)).cloned()
    };

    // Missing: created with the injection label and no data; nothing trusted yet.
    world.refresher.refresh().await;
    let created = stored().await.expect("the operator creates trusted-ca");
    assert_eq!(label(&created).as_deref(), Some("true"));
    assert_eq!(world.snapshot.current().trusted_ca, Ok(None));

    // Filled (as the network operator does) and stripped of its label by someone: the label comes back, the data
    // stays, and the bundle is read.
    let filled = ConfigMap {
        metadata: ObjectMeta {
            name: Some(TRUSTED_CA_CONFIG_MAP.into()),
            namespace: Some(NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(TRUSTED_CA_KEY.to_owned(), format!("{PROXY_CA}{OTHER_CA}"))])),
        ..ConfigMap::default()
    };
    world.config_maps.replace(filled.clone()).unwrap();
    world.refresher.refresh().await;
    let kept = stored().await.unwrap();
    assert_eq!(label(&kept).as_deref(), Some("true"));
    assert!(kept.data.unwrap()[TRUSTED_CA_KEY].contains("UFJPWFktQ0E="));
    assert_eq!(world.snapshot.current().trusted_ca.clone().unwrap().unwrap().certificate_count(), 2);

    // Without a proxy the bundle stays off the hosts (as in the Go operator).
    let (_dir, files) = node_files(&world);
    let set = rendered(&files.file_set(&identity(), FileStage::Bootstrap).unwrap().files);
    assert_eq!(set[r"C:\k\ca-bundle.crt"], "");
    assert_eq!(set[r"C:\k\certs\wmco-certs.txt"], "");

    // With a proxy: in the bundle, and each certificate alone in C:\k\certs under its thumbprint.
    let proxied = ProxySettings { http_proxy: Some("http://proxy.example:3128".into()), ..ProxySettings::default() };
    *world.facts.0.lock().unwrap() = Ok(ClusterFacts { proxy: proxied, ..facts() });
    world.refresher.refresh().await;
    let set = rendered(&files.file_set(&identity(), FileStage::Bootstrap).unwrap().files);
    assert_eq!(set[r"C:\k\ca-bundle.crt"], format!("# proxy trusted CA\n{PROXY_CA}{OTHER_CA}"));
    let index: Vec<&str> = set[r"C:\k\certs\wmco-certs.txt"].lines().collect();
    assert_eq!(index.len(), 2);
    for thumbprint in index {
        assert_eq!(thumbprint.len(), 40);
        let certificate = &set[&format!(r"C:\k\certs\{thumbprint}.crt")];
        assert!(certificate == PROXY_CA || certificate == OTHER_CA, "{certificate}");
    }

    // A damaged bundle is named, and the hosts go without it.
    let damaged = ConfigMap {
        data: Some(BTreeMap::from([(TRUSTED_CA_KEY.to_owned(), "-----BEGIN CERTIFICATE-----\n".to_owned())])),
        ..filled
    };
    world.config_maps.apply(&damaged).await.unwrap();
    world.refresher.refresh().await;
    let error = world.snapshot.current().trusted_ca.clone().unwrap_err();
    assert!(error.to_string().contains("wmco/trusted-ca"), "{error}");
    let set = rendered(&files.file_set(&identity(), FileStage::Bootstrap).unwrap().files);
    assert_eq!(set[r"C:\k\certs\wmco-certs.txt"], "");
}

#[tokio::test]
async fn the_workers_cloud_provider_and_cloud_config_reach_the_kubelet_and_c_k_cloud_conf() {
    let world = World::new(None).await;
    let (_dir, files) = node_files(&world);
    world.refresher.refresh().await;
    let plain = rendered(&files.file_set(&identity(), FileStage::Bootstrap).unwrap().files);
    assert!(!plain.contains_key(r"C:\k\cloud.conf"), "no cloud config without one on the workers");

    let cloud = wmco_cluster_client::KubeletCloud {
        provider: Some("external".into()),
        cloud_config: Some("[Global]\nsecret-name = vsphere-creds\n".into()),
    };
    *world.facts.0.lock().unwrap() = Ok(ClusterFacts { kubelet_cloud: cloud, ..facts() });
    world.refresher.refresh().await;
    let set = rendered(&files.file_set(&identity(), FileStage::Bootstrap).unwrap().files);
    assert_eq!(set[r"C:\k\cloud.conf"], "[Global]\nsecret-name = vsphere-creds\n");
    let services = world.snapshot.current().settings.service_settings(Verbosity::Normal);
    assert_eq!(services.cloud_provider.as_deref(), Some("external"));
    assert_eq!(services.cloud_config.map(|path| path.to_string()).as_deref(), Some(r"C:\k\cloud.conf"));
}

/// The world on Azure: the facts say platform Azure from the first refresh on.
async fn azure_world() -> World {
    let world = World::new(None).await;
    *world.facts.0.lock().unwrap() = Ok(ClusterFacts { platform: Platform::Azure.into(), ..facts() });
    world.put_tls_secret().await;
    world
}

/// The cloud-node-manager tokens minted so far, as `(namespace/name, lifetime)`.
fn cloud_node_manager_tokens(world: &World) -> Vec<(String, Duration)> {
    let issued = world.tokens.issued().into_iter();
    issued.filter(|(account, _)| account == "wmco/cloud-node-manager").map(|(a, spec)| (a, spec.lifetime)).collect()
}

#[tokio::test]
async fn on_azure_the_node_set_carries_cloud_node_manager_s_own_kubeconfig_and_a_token_of_its_service_account() {
    let world = azure_world().await;
    world.refresher.refresh().await;
    assert_eq!(
        cloud_node_manager_tokens(&world),
        [("wmco/cloud-node-manager".to_owned(), Duration::from_secs(24 * 3600))]
    );
    let (_dir, files) = node_files(&world);
    let bootstrap = rendered(&files.file_set(&identity(), FileStage::Bootstrap).unwrap().files);
    assert!(!bootstrap.keys().any(|name| name.contains("cloud-node-manager-")), "node stage only: {bootstrap:?}");
    let node = node_with_subnet(SUBNET);
    let stage = files.file_set(&identity(), FileStage::Node(&node)).unwrap();
    assert!(stage.withheld.is_empty(), "{:?}", stage.withheld);
    let set = rendered(&stage.files);
    let kubeconfig = &set[r"C:\k\cloud-node-manager-kubeconfig"];
    assert!(kubeconfig.contains(r"tokenFile: C:\k\cloud-node-manager-token"), "{kubeconfig}");
    assert!(kubeconfig.contains("server: https://api-int.example:6443\n"), "{kubeconfig}");
    let token = world.snapshot.current().cloud_node_manager_token.clone().unwrap().unwrap();
    assert_eq!(set[r"C:\k\cloud-node-manager-token"], token.token.expose());
    assert_ne!(token.token.expose(), world.token(), "not the node-bootstrapper's token");
}

#[tokio::test]
async fn the_cloud_node_manager_token_is_minted_again_at_half_its_day_and_reaches_every_registered_host() {
    use futures::{FutureExt as _, StreamExt as _};
    let world = azure_world().await;
    let mut changes = Box::pin(world.snapshot.node_file_changes());
    world.refresher.refresh().await;
    assert!(changes.next().now_or_never().is_some());
    let first = world.snapshot.current().cloud_node_manager_token.clone().unwrap().unwrap();
    for _ in 0..23 {
        world.advance(SignedDuration::from_mins(30));
        world.refresher.refresh().await;
    }
    assert_eq!(cloud_node_manager_tokens(&world).len(), 1, "11.5 hours: not due yet");
    assert!(changes.next().now_or_never().is_none(), "a new bootstrap token changes no registered host");
    world.advance(SignedDuration::from_mins(30));
    world.refresher.refresh().await;
    assert_eq!(cloud_node_manager_tokens(&world).len(), 2, "minted again at 12 hours");
    let second = world.snapshot.current().cloud_node_manager_token.clone().unwrap().unwrap();
    assert_ne!(first.token, second.token);
    assert!(changes.next().now_or_never().is_some(), "every host is reconciled with the new token");
}
