//! The Machine controller against the e2e control plane (real kube-apiserver, the machine API CRDs from the
//! fixtures, the committed `WindowsInstance` CRD): a Windows Machine that turns Provisioned gets its record, a Linux
//! Machine none; a record whose Machine never existed is deleted by the first sweep; a deleted Machine takes its
//! record with it (the record then waits on its finalizer for the instances controller, which does not run here).

use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use wmco_cluster_client::crd::windows_instance_crd;
use wmco_cluster_client::fake::{FakeCluster, objects};
use wmco_cluster_client::types::{InstanceOrigin, Machine, WindowsInstance, WindowsInstanceSpec};
use wmco_cluster_client::{KubeEvents, KubeInstanceRecords, KubeMachines, Platform, Seams, serves_machine_api};
use wmco_e2e_harness::{ControlPlane, ControlPlaneOptions, eventually};
use wmco_operator::machines::{MachinesContext, MachinesSettings, controller};

const NAMESPACE: &str = "default";
const MACHINES: &str = "openshift-machine-api";
const WAIT: Duration = Duration::from_secs(30);

async fn install_crd(client: &kube::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = windows_instance_crd();
    let name = crd.metadata.name.clone().context("CRD without a name")?;
    crds.patch(&name, &PatchParams::apply("wmco-e2e").force(), &Patch::Apply(&crd)).await.context("apply the CRD")?;
    eventually("CRD established", WAIT, || async {
        let current = crds.get(&name).await?;
        let established = current.status.and_then(|status| status.conditions).is_some_and(|conditions| {
            conditions.iter().any(|condition| condition.type_ == "Established" && condition.status == "True")
        });
        ensure!(established, "not established yet");
        Ok(())
    })
    .await
}

/// Creates Machine `name` (labelled Windows or not) and sets its status through the status subresource, as the
/// machine API would.
async fn create_machine(
    machines: &Api<Machine>,
    name: &str,
    windows: bool,
    status: serde_json::Value,
) -> anyhow::Result<()> {
    let machine = objects::machine(name).in_namespace(MACHINES).provider_id(&format!("aws:///us-east-1a/i-{name}"));
    let machine = if windows { machine.windows() } else { machine }.build();
    machines.create(&PostParams::default(), &machine).await.with_context(|| format!("create Machine {name}"))?;
    machines
        .patch_status(name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
        .await
        .with_context(|| format!("set the status of Machine {name}"))?;
    Ok(())
}

fn provisioned(ip: &str, dns: &str) -> serde_json::Value {
    json!({"phase": "Provisioned", "addresses": [
        {"type": "InternalIP", "address": ip}, {"type": "InternalDNS", "address": dns}]})
}

#[tokio::test]
async fn windows_machines_get_records_and_take_them_with_them() -> anyhow::Result<()> {
    let control_plane = ControlPlane::start(ControlPlaneOptions::default()).await?;
    let client = control_plane.admin_client();
    ensure!(serves_machine_api(&client).await?, "the fixtures serve machine.openshift.io");
    install_crd(&client).await?;
    let records: Api<WindowsInstance> = Api::namespaced(client.clone(), NAMESPACE);
    let machines: Api<Machine> = Api::namespaced(client.clone(), MACHINES);

    let mut ghost = WindowsInstance::new(
        "machine-ghost",
        WindowsInstanceSpec {
            address: "10.0.9.9".into(),
            username: "Administrator".into(),
            origin: InstanceOrigin::Machine,
            machine_name: Some("ghost".into()),
            expected_node_name: Some("ghost.ec2.internal".into()),
        },
    );
    ghost.metadata.namespace = Some(NAMESPACE.into());
    records.create(&PostParams::default(), &ghost).await.context("create the ghost record")?;

    let seams = Seams {
        records: std::sync::Arc::new(KubeInstanceRecords::new(client.clone())),
        machines: std::sync::Arc::new(KubeMachines::new(client.clone())),
        events: std::sync::Arc::new(KubeEvents::new(client.clone(), "wmco-e2e", None)),
        ..FakeCluster::default().seams()
    };
    let context =
        MachinesContext::new(&seams, MachinesSettings { namespace: NAMESPACE.into(), platform: Platform::Aws });
    let running = tokio::spawn(controller(client.clone(), std::sync::Arc::new(context)));

    eventually("the ghost record deleted by the first sweep", WAIT, || async {
        match records.get_opt("machine-ghost").await? {
            None => Ok(()),
            Some(_) => bail!("still there"),
        }
    })
    .await?;

    create_machine(&machines, "win-a", true, json!({"phase": "Provisioning"})).await?;
    create_machine(&machines, "linux-a", false, provisioned("10.0.1.6", "ip-10-0-1-6.ec2.internal")).await?;
    machines
        .patch_status(
            "win-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": provisioned("10.0.1.5", "IP-10-0-1-5.ec2.internal")})),
        )
        .await?;
    let record = eventually("the record of Machine win-a", WAIT, || async {
        records.get_opt("machine-win-a").await?.context("not created yet")
    })
    .await?;
    assert_eq!(
        record.spec,
        WindowsInstanceSpec {
            address: "10.0.1.5".into(),
            username: "Administrator".into(),
            origin: InstanceOrigin::Machine,
            machine_name: Some("win-a".into()),
            expected_node_name: Some("ip-10-0-1-5.ec2.internal".into()),
        }
    );
    assert_eq!(record.metadata.finalizers, Some(vec!["windowsmachineconfig.openshift.io/deconfigure".to_owned()]));
    assert!(records.get_opt("machine-linux-a").await?.is_none());

    machines.delete("win-a", &DeleteParams::default()).await.context("delete Machine win-a")?;
    eventually("the record of Machine win-a being deleted", WAIT, || async {
        let record = records.get_opt("machine-win-a").await?.context("gone without its finalizer released")?;
        ensure!(record.metadata.deletion_timestamp.is_some(), "not being deleted yet");
        Ok(())
    })
    .await?;

    running.abort();
    Ok(())
}
