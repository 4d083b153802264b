//! A Windows Machine end to end through the operator's own pieces: the Machine controller's record, then the
//! instances controller's configure pass against `winhost-sim`'s in-process host model. The Node name the Machine
//! decides (vSphere: the Machine's name) wins over the host's hostname, in the record and on the kubelet's command
//! line.

use std::sync::Arc;

use winhost_sim::host::Identity;
use winhost_sim::remote_host::InProcessHost;
use wmco_cluster_client::fake::{FakeCluster, FakeInstanceRecords};
use wmco_cluster_client::types::{Machine, WindowsInstance};
use wmco_cluster_client::{DrainOptions, Platform, Seams};
use wmco_node_config::{ConfigureState, FileStage, HostFilesSource, HostIdentity, ServiceSettings, SourceError};
use wmco_payload_manifest::render::{RenderedFile, containerd_config};
use wmco_payload_manifest::{HostFile, HostFileContent, HostFileSet};
use wmco_ssh_transport::RemoteHost;
use wmco_windows_services::{LogRotation, ServiceStage, Verbosity, WinPath, node_services};

use super::*;
use crate::instances::{
    HostConnector, InstanceOutcome, InstancesContext, InstancesError, InstancesSettings, reconcile_instance,
};

const NAMESPACE: &str = "wmco";
const HOST_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey";

fn services() -> ServiceSettings {
    ServiceSettings {
        api_server_url: "https://api-int.example.com:6443".into(),
        platform: wmco_windows_services::Platform::VSphere,
        verbosity: Verbosity::Normal,
        log_rotation: LogRotation::default(),
        hybrid_overlay_vxlan_port: None,
        cloud_provider: None,
        cloud_config: None,
    }
}

/// ServiceStage-1 binaries (placeholder bytes), a containerd configuration that parses, kubelet.conf and the bootstrap
/// kubeconfig.
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

struct SimConnector(Arc<InProcessHost>);

impl HostConnector for SimConnector {
    fn connect(&self, _instance: &WindowsInstance) -> Result<Arc<dyn RemoteHost>, InstancesError> {
        Ok(self.0.clone())
    }
}

#[tokio::test]
async fn a_vsphere_machine_becomes_a_kubelet_named_after_the_machine() {
    let identity = Identity {
        hostname: "WIN-TEMPLATE01".into(),
        fqdn: "win-template01.lab.example".into(),
        build: 20348,
        ubr: 1,
        node_ip: "203.0.113.41".parse().unwrap(),
    };
    let host = Arc::new(
        InProcessHost::new(identity, "administrator@127.0.0.41:22", "SSH-2.0-wmco-operator-test", HOST_KEY).unwrap(),
    );
    let records = Arc::new(FakeInstanceRecords::default());
    let seams = Seams { records: records.clone(), ..FakeCluster::default().seams() };
    let machines =
        MachinesContext::new(&seams, MachinesSettings { namespace: NAMESPACE.into(), platform: Platform::VSphere });
    let machine: Machine = serde_json::from_value(serde_json::json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": {"name": "winworker-7xk2p", "namespace": "openshift-machine-api",
                     "labels": {"machine.openshift.io/os-id": "Windows"}},
        "spec": {"providerID": "vsphere://4211-aa"},
        "status": {"phase": "Provisioned", "addresses": [{"type": "InternalIP", "address": "127.0.0.41"}]}
    }))
    .unwrap();
    reconcile_machine(&machine, &machines).await.unwrap();

    let instances = InstancesContext::new(
        &seams,
        Arc::new(SimConnector(host.clone())),
        Arc::new(BootstrapFiles),
        InstancesSettings {
            namespace: NAMESPACE.to_owned(),
            services: services(),
            operator_version: "10.17.0".to_owned(),
            pub_key_hash: "ab".to_owned(),
            drain: DrainOptions::default(),
        },
    );
    let stored = records.record(NAMESPACE, "machine-winworker-7xk2p").unwrap();
    let InstanceOutcome::Configured(pass) = reconcile_instance(&stored, &instances).await.unwrap() else {
        panic!("expected a configure pass")
    };
    assert_eq!((pass.state, pass.node_name.as_str()), (ConfigureState::WaitingForNode, "winworker-7xk2p"));
    let status = records.record(NAMESPACE, "machine-winworker-7xk2p").unwrap().status.unwrap();
    assert_eq!(status.hostname.as_deref(), Some("WIN-TEMPLATE01"));
    assert_eq!(status.expected_node_name.as_deref(), Some("winworker-7xk2p"));
    let kubelet = host.host().scm.get("kubelet").map(|service| service.image_path.clone()).unwrap();
    assert!(kubelet.contains(" --hostname-override=winworker-7xk2p "), "{kubelet}");
}
