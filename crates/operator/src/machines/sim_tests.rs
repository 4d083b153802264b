//! A Windows Machine end to end through the operator's own pieces: the Machine controller's record, then the
//! instances controller's configure pass against `winhost-sim`'s in-process host model. The Node name the Machine
//! decides (vSphere: the Machine's name) wins over the host's hostname, in the record and on the kubelet's command
//! line.

use std::sync::Arc;

use winhost_sim::host::Identity;
use winhost_sim::remote_host::{InProcessHost, SAMPLE_HOST_KEY};
use wmco_cluster_client::fake::{FakeCluster, FakeInstanceRecords, objects};
use wmco_cluster_client::types::WindowsInstance;
use wmco_cluster_client::{DrainOptions, Platform, Seams};
use wmco_node_config::testing::{BootstrapFiles, sample_service_settings};
use wmco_node_config::{ConfigureState, ServiceSettings};
use wmco_ssh_transport::RemoteHost;

use super::*;
use crate::files::ServiceSettingsSource;
use crate::instances::{
    HostConnector, InstanceOutcome, InstancesContext, InstancesError, InstancesSettings, reconcile_instance,
};

const NAMESPACE: &str = "wmco";

/// The sample service settings on vSphere.
fn services() -> ServiceSettings {
    ServiceSettings { platform: wmco_windows_services::Platform::VSphere, ..sample_service_settings() }
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
        ubr: 2849,
        node_ip: "203.0.113.41".parse().unwrap(),
    };
    let host = Arc::new(
        InProcessHost::new(identity, "administrator@127.0.0.41:22", "SSH-2.0-wmco-operator-test", SAMPLE_HOST_KEY)
            .unwrap(),
    );
    let records = Arc::new(FakeInstanceRecords::default());
    let seams = Seams { records: records.clone(), ..FakeCluster::default().seams() };
    let machines =
        MachinesContext::new(&seams, MachinesSettings { namespace: NAMESPACE.into(), platform: Platform::VSphere });
    let machine = objects::machine("winworker-7xk2p")
        .windows()
        .provider_id("vsphere://4211-aa")
        .phase("Provisioned")
        .internal_ip("127.0.0.41")
        .build();
    reconcile_machine(&machine, &machines).await.unwrap();

    let instances = InstancesContext::new(
        &seams,
        Arc::new(SimConnector(host.clone())),
        Arc::new(BootstrapFiles::new(services())),
        InstancesSettings {
            namespace: NAMESPACE.to_owned(),
            services: ServiceSettingsSource::Fixed(services()),
            operator_version: "10.17.0".to_owned(),
            pub_key_hash: "ab".to_owned(),
            drain: DrainOptions::default(),
            command_timeout: std::time::Duration::from_secs(120),
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
