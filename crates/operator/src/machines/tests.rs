//! Machine reconcile and sweep against the cluster-client fakes: exact records, write avoidance, deletion on the
//! way out, platform rules, skips and the Warning Event for a Machine that can never be configured.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use wmco_cluster_client::fake::{FakeCluster, FakeEvents, FakeInstanceRecords, FakeMachines, objects};
use wmco_cluster_client::names::INSTANCE_FINALIZER;
use wmco_cluster_client::types::{InstanceOrigin, Machine, WindowsInstance, WindowsInstanceSpec};
use wmco_cluster_client::{InstanceRecords, Platform, Seams, Severity};
use wmco_machines::SkipReason;

use super::*;

const NAMESPACE: &str = "wmco";

struct World {
    records: Arc<FakeInstanceRecords>,
    machines: Arc<FakeMachines>,
    events: Arc<FakeEvents>,
    context: MachinesContext,
}

fn world(platform: Platform) -> World {
    let records = Arc::new(FakeInstanceRecords::default());
    let machines = Arc::new(FakeMachines::default());
    let events = Arc::new(FakeEvents::default());
    let seams = Seams {
        records: records.clone(),
        machines: machines.clone(),
        events: events.clone(),
        ..FakeCluster::default().seams()
    };
    let context = MachinesContext::new(&seams, MachinesSettings { namespace: NAMESPACE.into(), platform });
    World { records, machines, events, context }
}

fn machine(name: &str, phase: &str, ip: &str, dns: &str) -> Machine {
    objects::machine(name)
        .uid("uid-1")
        .windows()
        .provider_id("aws:///us-east-1a/i-0abc")
        .phase(phase)
        .internal_ip(ip)
        .internal_dns(dns)
        .build()
}

fn record(world: &World, name: &str) -> Option<WindowsInstance> {
    world.records.record(NAMESPACE, name)
}

#[tokio::test]
async fn a_provisioned_machine_gets_one_record_written_only_when_it_changes() {
    let world = world(Platform::Aws);
    let provisioned = machine("win-a", "Provisioned", "10.0.1.5", "ip-10-0-1-5.ec2.internal");
    let outcome = reconcile_machine(&provisioned, &world.context).await.unwrap();
    assert_eq!(outcome, MachineOutcome::Applied { record: "machine-win-a".into() });
    let stored = record(&world, "machine-win-a").unwrap();
    assert_eq!(
        stored.spec,
        WindowsInstanceSpec {
            address: "10.0.1.5".into(),
            username: "Administrator".into(),
            origin: InstanceOrigin::Machine,
            machine_name: Some("win-a".into()),
            expected_node_name: Some("ip-10-0-1-5.ec2.internal".into()),
        }
    );
    assert_eq!(stored.metadata.finalizers, Some(vec![INSTANCE_FINALIZER.to_owned()]));
    assert!(stored.metadata.owner_references.is_none());

    let running = machine("win-a", "Running", "10.0.1.5", "ip-10-0-1-5.ec2.internal");
    let outcome = reconcile_machine(&running, &world.context).await.unwrap();
    assert_eq!(outcome, MachineOutcome::Unchanged { record: "machine-win-a".into() });

    let moved = machine("win-a", "Running", "10.0.1.9", "ip-10-0-1-9.ec2.internal");
    assert_eq!(
        reconcile_machine(&moved, &world.context).await.unwrap(),
        MachineOutcome::Applied { record: "machine-win-a".into() }
    );
    let stored = record(&world, "machine-win-a").unwrap();
    assert_eq!(stored.spec.address, "10.0.1.9");
    assert_eq!(stored.spec.expected_node_name.as_deref(), Some("ip-10-0-1-9.ec2.internal"));
    assert!(world.events.published().is_empty());
}

#[tokio::test]
async fn azure_logs_in_as_capi_and_vsphere_names_the_node_after_the_machine() {
    let azure = world(Platform::Azure);
    reconcile_machine(&machine("winworker-abcde", "Provisioned", "10.1.0.4", "winworker-abcde"), &azure.context)
        .await
        .unwrap();
    let spec = record(&azure, "machine-winworker-abcde").unwrap().spec;
    assert_eq!((spec.username.as_str(), spec.expected_node_name.as_deref()), ("capi", Some("winworker-abcde")));

    let vsphere = world(Platform::VSphere);
    reconcile_machine(&machine("winworker-abcde", "Provisioned", "10.1.0.4", "other.example"), &vsphere.context)
        .await
        .unwrap();
    let spec = record(&vsphere, "machine-winworker-abcde").unwrap().spec;
    assert_eq!(
        (spec.username.as_str(), spec.expected_node_name.as_deref()),
        ("Administrator", Some("winworker-abcde"))
    );
}

#[tokio::test]
async fn a_deleting_machine_takes_its_record_with_it() {
    let world = world(Platform::Aws);
    reconcile_machine(&machine("win-a", "Running", "10.0.1.5", "a.internal"), &world.context).await.unwrap();
    let deleting = machine("win-a", "Deleting", "10.0.1.5", "a.internal");
    assert_eq!(
        reconcile_machine(&deleting, &world.context).await.unwrap(),
        MachineOutcome::DeletionRequested { record: "machine-win-a".into() }
    );
    assert!(record(&world, "machine-win-a").is_none());
    assert_eq!(reconcile_machine(&deleting, &world.context).await.unwrap(), MachineOutcome::NothingToDo);
}

#[tokio::test]
async fn a_record_being_deleted_is_neither_reapplied_nor_deleted_again() {
    let world = world(Platform::Aws);
    let running = machine("win-a", "Running", "10.0.1.5", "a.internal");
    let wmco_machines::MachineDecision::Configure(instance) = wmco_machines::desired_instance(&running, &Platform::Aws)
    else {
        panic!("expected Configure");
    };
    let mut deleting = machine_record(NAMESPACE, &instance);
    deleting.metadata.deletion_timestamp = Some(Time("2026-11-22T03:00:00Z".parse().unwrap()));
    world.records.apply(&deleting).await.unwrap();
    let expected = MachineOutcome::RecordDeleting { record: "machine-win-a".into() };
    assert_eq!(reconcile_machine(&running, &world.context).await.unwrap(), expected);
    let gone = machine("win-a", "Deleting", "10.0.1.5", "a.internal");
    assert_eq!(reconcile_machine(&gone, &world.context).await.unwrap(), expected);
    assert!(record(&world, "machine-win-a").unwrap().metadata.deletion_timestamp.is_some());
}

#[tokio::test]
async fn skipped_machines_leave_their_record_alone() {
    let world = world(Platform::Aws);
    reconcile_machine(&machine("win-a", "Running", "10.0.1.5", "a.internal"), &world.context).await.unwrap();
    let mut ignored = machine("win-a", "Running", "10.0.1.9", "b.internal");
    ignored.metadata.annotations = Some([("windowsmachineconfig.openshift.io/ignore".into(), "true".into())].into());
    assert_eq!(
        reconcile_machine(&ignored, &world.context).await.unwrap(),
        MachineOutcome::Skipped(SkipReason::Ignored)
    );
    let failed = machine("win-a", "Failed", "10.0.1.9", "b.internal");
    assert_eq!(
        reconcile_machine(&failed, &world.context).await.unwrap(),
        MachineOutcome::Skipped(SkipReason::Phase { phase: Some("Failed".into()) })
    );
    assert_eq!(record(&world, "machine-win-a").unwrap().spec.address, "10.0.1.5");
    assert!(world.events.published().is_empty());
}

#[tokio::test]
async fn a_machine_whose_node_name_is_unusable_gets_one_warning_event() {
    let world = world(Platform::Aws);
    let bad = machine("win-a", "Provisioned", "10.0.1.5", "under_score.internal");
    assert_eq!(
        reconcile_machine(&bad, &world.context).await.unwrap(),
        MachineOutcome::Skipped(SkipReason::UnusableNodeName { node_name: "under_score.internal".into() })
    );
    let published = world.events.published();
    assert_eq!(published.len(), 1);
    let (regarding, event) = &published[0];
    assert_eq!(regarding.kind.as_deref(), Some("Machine"));
    assert_eq!(regarding.name.as_deref(), Some("win-a"));
    assert_eq!(event.severity, Severity::Warning);
    assert_eq!(event.reason, "MachineNotConfigurable");
    assert_eq!(
        event.note.as_deref(),
        Some(
            "the operator cannot configure this Windows Machine: node name \"under_score.internal\" is not an RFC 1123 subdomain"
        )
    );
    assert!(record(&world, "machine-win-a").is_none());
}

#[tokio::test]
async fn the_sweep_deletes_records_of_vanished_machines_and_keeps_the_rest() {
    let world = world(Platform::Aws);
    for name in ["win-a", "win-b"] {
        reconcile_machine(&machine(name, "Running", "10.0.1.5", "a.internal"), &world.context).await.unwrap();
    }
    let byoh =
        objects::record("byoh-10-0-0-7").in_namespace(NAMESPACE).byoh("10.0.0.7").username("Administrator").build();
    world.records.apply(&byoh).await.unwrap();
    world.machines.insert(machine("win-a", "Running", "10.0.1.5", "a.internal"));

    let outcomes = sweep_records(&world.context).await.unwrap();
    assert_eq!(
        outcomes,
        [
            MachineOutcome::Unchanged { record: "machine-win-a".into() },
            MachineOutcome::DeletionRequested { record: "machine-win-b".into() },
        ]
    );
    assert!(record(&world, "machine-win-a").is_some());
    assert!(record(&world, "machine-win-b").is_none());
    assert!(record(&world, "byoh-10-0-0-7").is_some());
}
