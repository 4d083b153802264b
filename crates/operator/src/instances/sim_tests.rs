//! The happy path of [`reconcile_instance`] against `winhost-sim`'s in-process host model: a fresh host gets its
//! bootstrap pass (identity recorded, containerd and kubelet running), and the next reconcile reuses the cached
//! session and costs one probe round trip.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tracing::Instrument;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use winhost_sim::host::Identity;
use winhost_sim::remote_host::InProcessHost;
use wmco_cluster_client::fake::{FakeCluster, FakeInstanceRecords};
use wmco_cluster_client::types::{InstanceOrigin, InstancePhase, WindowsInstance, WindowsInstanceSpec};
use wmco_cluster_client::{DrainOptions, InstanceRecords, Seams};
use wmco_node_config::{ConfigureState, FileStage, HostFilesSource, HostIdentity, ServiceSettings, SourceError};
use wmco_payload_manifest::render::{RenderedFile, containerd_config};
use wmco_payload_manifest::{HostFile, HostFileContent, HostFileSet};
use wmco_ssh_transport::RemoteHost;
use wmco_windows_services::{LogRotation, Platform, ServiceStage, Verbosity, WinPath, node_services};

use super::*;

const CLIENT: &str = "SSH-2.0-wmco-operator-test";
const HOST_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey";
const NAMESPACE: &str = "wmco";

/// A fresh in-process simulated host (`winhost-sim`'s model behind the `RemoteHost` trait).
fn sim_host() -> InProcessHost {
    let identity = Identity {
        hostname: "WinWorker-4".into(),
        fqdn: "winworker-4.lab.example".into(),
        build: 20348,
        ubr: 1,
        node_ip: "203.0.113.40".parse().unwrap(),
    };
    InProcessHost::new(identity, "administrator@127.0.0.40:22", CLIENT, HOST_KEY).unwrap()
}

fn services() -> ServiceSettings {
    ServiceSettings {
        api_server_url: "https://api-int.example.com:6443".into(),
        platform: Platform::None,
        verbosity: Verbosity::Normal,
        log_rotation: LogRotation::default(),
        hybrid_overlay_vxlan_port: None,
        cloud_provider: None,
        cloud_config: None,
    }
}

/// The bootstrap files: phase-1 binaries (placeholder bytes), a containerd configuration that parses, kubelet.conf
/// and the bootstrap kubeconfig.
struct BootstrapFiles;

impl HostFilesSource for BootstrapFiles {
    fn files(&self, identity: &HostIdentity, _stage: FileStage<'_>) -> Result<HostFileSet, SourceError> {
        let mut rendered = vec![containerd_config()?];
        for service in node_services(&services().node_inputs(identity))? {
            if service.phase == ServiceStage::Bootstrap {
                for binary in service.spec.binaries() {
                    rendered.push(RenderedFile::new(binary.clone(), format!("{binary}").into_bytes()));
                }
            }
        }
        for (path, text) in [(r"C:\k\kubelet.conf", "{}\n"), (r"C:\k\bootstrap-kubeconfig", "apiVersion: v1\n")] {
            rendered.push(RenderedFile::new(WinPath::parse(path)?, text.as_bytes().to_vec()));
        }
        rendered.sort_by(|a, b| a.destination().cmp(b.destination()));
        rendered.dedup_by(|a, b| a.destination() == b.destination());
        let files = rendered
            .into_iter()
            .map(|file| HostFile {
                destination: file.destination().clone(),
                sha256: file.sha256(),
                size: file.bytes().len() as u64,
                content: HostFileContent::Rendered(file),
            })
            .collect();
        Ok(HostFileSet::from_files(files)?)
    }
}

struct SimConnector {
    host: Arc<InProcessHost>,
    connects: Mutex<u32>,
}

impl HostConnector for SimConnector {
    fn connect(&self, _instance: &WindowsInstance) -> Result<Arc<dyn RemoteHost>, InstancesError> {
        *self.connects.lock().unwrap() += 1;
        Ok(self.host.clone())
    }
}

#[tokio::test]
async fn a_fresh_host_is_bootstrapped_and_a_second_reconcile_costs_one_probe_on_the_cached_session() {
    let records = Arc::new(FakeInstanceRecords::default());
    let connector = Arc::new(SimConnector { host: Arc::new(sim_host()), connects: Mutex::new(0) });
    let settings = InstancesSettings {
        namespace: NAMESPACE.to_owned(),
        services: services(),
        operator_version: "10.17.0".to_owned(),
        pub_key_hash: "ab".to_owned(),
        drain: DrainOptions::default(),
    };
    let seams = Seams { records: records.clone(), ..FakeCluster::default().seams() };
    let ctx = InstancesContext::new(&seams, connector.clone(), Arc::new(BootstrapFiles), settings);
    let instance = WindowsInstance {
        metadata: ObjectMeta {
            name: Some("byoh-127-0-0-40".into()),
            namespace: Some(NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        spec: WindowsInstanceSpec {
            address: "127.0.0.40".into(),
            username: "administrator".into(),
            origin: InstanceOrigin::Byoh,
            machine_name: None,
            expected_node_name: None,
        },
        status: None,
    };
    records.apply(&instance).await.unwrap();

    let stored = records.record(NAMESPACE, "byoh-127-0-0-40").unwrap();
    let (first, logged) = {
        let logs = crate::test_logs::CapturedLogs::start(crate::test_logs::LogFormat::Json, tracing::Level::INFO);
        let first =
            reconcile_instance(&stored, &ctx).instrument(super::controller::reconcile_span(&stored)).await.unwrap();
        (first, logs.contents())
    };
    let InstanceOutcome::Configured(first) = first else { panic!("expected a configure pass") };
    let lines: Vec<serde_json::Value> = logged.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert!(!lines.is_empty());
    for line in &lines {
        let span = &line["span"];
        assert_eq!(
            (&span["instance"], &span["host"]),
            (&json!("wmco/byoh-127-0-0-40"), &json!("127.0.0.40")),
            "{line}"
        );
    }
    let steps: Vec<&serde_json::Value> = lines.iter().map(|line| &line["span"]["step"]).collect();
    assert_eq!(steps.first(), Some(&&json!("probe")), "{logged}");
    assert_eq!((first.state, first.node_name.as_str()), (ConfigureState::WaitingForNode, "winworker-4"));
    let status = records.record(NAMESPACE, "byoh-127-0-0-40").unwrap().status.unwrap();
    assert_eq!(status.pinned_host_key.as_deref(), Some(HOST_KEY));
    assert_eq!(status.node_ip, Some("203.0.113.40".parse().unwrap()));
    assert_eq!(status.expected_node_name.as_deref(), Some("winworker-4"));
    assert_eq!(status.phase, Some(InstancePhase::WaitingForNode));

    let stored = records.record(NAMESPACE, "byoh-127-0-0-40").unwrap();
    let InstanceOutcome::Configured(second) = reconcile_instance(&stored, &ctx).await.unwrap() else {
        panic!("expected a configure pass")
    };
    assert_eq!((second.state, second.commands, second.uploads), (ConfigureState::WaitingForNode, 1, 0));
    let metrics = ctx.metrics.encode().unwrap();
    let round_trips = format!("wmco_ssh_round_trips_total {}\n", first.commands + second.commands);
    let bytes = format!("wmco_ssh_bytes_sent_total {}\n", first.bytes_uploaded);
    assert!(metrics.contains(&round_trips) && metrics.contains(&bytes), "{metrics}");
    assert_eq!(*connector.connects.lock().unwrap(), 1);
}
