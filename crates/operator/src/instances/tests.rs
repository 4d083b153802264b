//! Instances controller tests over the cluster-client fakes and a transport that always fails the same way:
//! the inventory diff and its Events, permanent and retryable configure failures, and the deletion path
//! (finalizer kept while the host cannot be cleaned, released after a forced deconfiguration).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use wmco_cluster_client::fake::{FakeCluster, FakeEvents, FakeInstanceRecords, FakeNodes};
use wmco_cluster_client::names::{BYOH_LABEL, FORCE_REMOVE_ANNOTATION, INSTANCE_FINALIZER, VERSION_ANNOTATION};
use wmco_cluster_client::types::{
    InstanceOrigin, InstancePhase, WindowsInstance, WindowsInstanceSpec, WindowsInstanceStatus,
};
use wmco_cluster_client::{ConfigMaps as _, DrainOptions, InstanceRecords, Seams, Severity, WindowsInstanceExt};
use wmco_instance_inventory::{StaticResolver, build_inventory, instance_name};
use wmco_node_config::{
    FileStage, HostFilesSource, HostIdentity, ServiceSettings, SourceError, StageFiles, WithheldService,
};
use wmco_ssh_transport::{HostKey, Output, RemoteCommand, RemoteHost, TransportError, UploadOutcome, UploadRequest};
use wmco_windows_services::{LogRotation, Platform, Verbosity};

use super::*;
use crate::files::ServiceSettingsSource;
use crate::runtime::ReconcilerError;

const NAMESPACE: &str = "openshift-windows-machine-config-operator";
const PINNED: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM08b+WEqAXyfq8hlcYCpadCyeYxiEkixYthAQCJ+Gey";

/// A host whose every call fails with the error `fail` makes.
struct FailingHost {
    fail: fn(&str) -> TransportError,
}

impl FailingHost {
    fn error<T>(&self) -> Result<T, TransportError> {
        Err((self.fail)(self.label()))
    }
}

#[async_trait]
impl RemoteHost for FailingHost {
    fn label(&self) -> &str {
        "administrator@10.0.0.5:22"
    }
    async fn run(&self, _command: &RemoteCommand) -> Result<Output, TransportError> {
        self.error()
    }
    async fn upload(&self, _request: &UploadRequest) -> Result<UploadOutcome, TransportError> {
        self.error()
    }
    async fn download(&self, _remote_path: &str) -> Result<Vec<u8>, TransportError> {
        self.error()
    }
    async fn remove(&self, _remote_path: &str) -> Result<(), TransportError> {
        self.error()
    }
    async fn mkdir_all(&self, _remote_path: &str) -> Result<(), TransportError> {
        self.error()
    }
    async fn file_size(&self, _remote_path: &str) -> Result<Option<u64>, TransportError> {
        self.error()
    }
    async fn host_key(&self) -> Result<HostKey, TransportError> {
        self.error()
    }
}

fn unreachable(host: &str) -> TransportError {
    TransportError::Unreachable { host: host.to_owned(), during: "connecting".into(), reason: "no route".into() }
}

fn key_changed(host: &str) -> TransportError {
    let pinned = HostKey::from_openssh(PINNED).unwrap().fingerprint();
    TransportError::HostKeyMismatch { host: host.to_owned(), pinned, offered: pinned }
}

struct FixedConnector(Arc<dyn RemoteHost>);

impl HostConnector for FixedConnector {
    fn connect(&self, _instance: &WindowsInstance) -> Result<Arc<dyn RemoteHost>, InstancesError> {
        Ok(Arc::clone(&self.0))
    }
}

struct NoFiles;

impl HostFilesSource for NoFiles {
    fn files(&self, _identity: &HostIdentity, _stage: FileStage<'_>) -> Result<StageFiles, SourceError> {
        Err("no files in these tests".into())
    }
}

struct Fixture {
    records: Arc<FakeInstanceRecords>,
    nodes: Arc<FakeNodes>,
    config_maps: Arc<wmco_cluster_client::fake::FakeConfigMaps>,
    events: Arc<FakeEvents>,
    ctx: InstancesContext,
}

fn fixture(fail: fn(&str) -> TransportError) -> Fixture {
    let records = Arc::new(FakeInstanceRecords::default());
    let nodes = Arc::new(FakeNodes::default());
    let events = Arc::new(FakeEvents::default());
    let config_maps = Arc::new(wmco_cluster_client::fake::FakeConfigMaps::default());
    let settings = InstancesSettings {
        namespace: NAMESPACE.to_owned(),
        services: ServiceSettingsSource::Fixed(ServiceSettings {
            api_server_url: "https://api.example:6443".to_owned(),
            platform: Platform::None,
            verbosity: Verbosity::Normal,
            log_rotation: LogRotation::default(),
            hybrid_overlay_vxlan_port: None,
            cloud_provider: None,
            cloud_config: None,
            proxy: Default::default(),
        }),
        operator_version: "10.17.0".to_owned(),
        pub_key_hash: "ab12".to_owned(),
        drain: DrainOptions::default(),
        command_timeout: std::time::Duration::from_secs(120),
    };
    let seams = Seams {
        records: records.clone(),
        nodes: nodes.clone(),
        events: events.clone(),
        config_maps: config_maps.clone(),
        ..FakeCluster::default().seams()
    };
    let ctx = InstancesContext::new(
        &seams,
        Arc::new(FixedConnector(Arc::new(FailingHost { fail }))),
        Arc::new(NoFiles),
        settings,
    );
    Fixture { records, nodes, config_maps, events, ctx }
}

fn config_map(entries: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("windows-instances".to_owned()),
            namespace: Some(NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(entries.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect()),
        ..ConfigMap::default()
    }
}

fn record(key: &str, origin: InstanceOrigin) -> WindowsInstance {
    WindowsInstance {
        metadata: ObjectMeta {
            name: Some(instance_name(key)),
            namespace: Some(NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        spec: WindowsInstanceSpec {
            address: key.to_owned(),
            username: "Administrator".to_owned(),
            origin,
            machine_name: None,
            expected_node_name: None,
        },
        status: None,
    }
}

async fn desired(entries: &[(&str, &str)]) -> Vec<wmco_instance_inventory::DesiredInstance> {
    let data: BTreeMap<String, String> =
        entries.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect();
    build_inventory(&data, &StaticResolver::default()).await.instances
}

fn names(records: &[WindowsInstance]) -> Vec<String> {
    records.iter().map(|record| record.metadata.name.clone().unwrap()).collect()
}

#[tokio::test]
async fn plan_applies_every_entry_with_the_finalizer_and_no_owner() {
    let wanted = desired(&[("10.0.0.5", "username=Administrator"), ("10.0.0.6", "username=admin")]).await;
    let plan = plan_records(NAMESPACE, &wanted, &[record("10.0.0.5", InstanceOrigin::Byoh)]);
    assert_eq!(names(&plan.apply), vec![instance_name("10.0.0.5"), instance_name("10.0.0.6")]);
    assert!(plan.delete.is_empty());
    let second = &plan.apply[1];
    assert_eq!(second.metadata.finalizers, Some(vec![INSTANCE_FINALIZER.to_owned()]));
    assert_eq!(second.metadata.owner_references, None);
    assert_eq!(second.metadata.namespace.as_deref(), Some(NAMESPACE));
    assert_eq!(second.spec.username, "admin");
    assert_eq!(second.spec.origin, InstanceOrigin::Byoh);
}

#[tokio::test]
async fn plan_deletes_gone_byoh_records_only_once_and_never_machine_ones() {
    let wanted = desired(&[("10.0.0.5", "username=Administrator")]).await;
    let mut deleting = record("10.0.0.8", InstanceOrigin::Byoh);
    deleting.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    let existing = [
        record("10.0.0.5", InstanceOrigin::Byoh),
        record("10.0.0.7", InstanceOrigin::Byoh),
        deleting,
        record("10.0.0.9", InstanceOrigin::Machine),
    ];
    let plan = plan_records(NAMESPACE, &wanted, &existing);
    assert_eq!(plan.delete, vec![instance_name("10.0.0.7")]);
    assert_eq!(names(&plan.apply), vec![instance_name("10.0.0.5")]);
}

#[tokio::test]
async fn a_dns_key_respelt_in_another_case_keeps_its_record_and_is_not_deconfigured() {
    let address = std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 21));
    let resolver = StaticResolver::new([("win-1.corp.example", vec![address])]);
    let data = BTreeMap::from([("WIN-1.Corp.Example".to_owned(), "username=Administrator".to_owned())]);
    let wanted = build_inventory(&data, &resolver).await.instances;
    let existing = [record("win-1.corp.example", InstanceOrigin::Byoh)];

    let plan = plan_records(NAMESPACE, &wanted, &existing);

    assert_eq!(plan.delete, Vec::<String>::new(), "the host would be deconfigured and configured again");
    assert_eq!(names(&plan.apply), vec![instance_name("win-1.corp.example")]);
    assert_eq!(plan.apply[0].spec.address, "WIN-1.Corp.Example", "the record follows the admin's spelling");
}

#[tokio::test]
async fn inventory_applies_good_entries_warns_on_bad_ones_and_deletes_removed_ones() {
    let fx = fixture(unreachable);
    fx.records.apply(&record("10.0.0.7", InstanceOrigin::Byoh)).await.unwrap();
    let cm = config_map(&[("10.0.0.5", "username=Administrator"), ("10.0.0.6", "user=admin")]);

    let outcome = reconcile_inventory(Some(&cm), &fx.ctx, &StaticResolver::default()).await.unwrap();

    assert_eq!(outcome.applied, vec![instance_name("10.0.0.5")]);
    assert_eq!(outcome.deleted, vec![instance_name("10.0.0.7")]);
    assert_eq!(outcome.warnings, 1);
    let stored = fx.records.record(NAMESPACE, &instance_name("10.0.0.5")).unwrap();
    assert_eq!(stored.metadata.finalizers, Some(vec![INSTANCE_FINALIZER.to_owned()]));
    assert!(fx.records.record(NAMESPACE, &instance_name("10.0.0.7")).is_none());
    let published = fx.events.published();
    assert_eq!(published.len(), 1);
    let (regarding, event) = &published[0];
    assert_eq!(regarding.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(regarding.name.as_deref(), Some("windows-instances"));
    assert_eq!(event.severity, Severity::Warning);
    assert_eq!(event.reason, "InvalidInstanceEntry");
    assert!(event.note.as_deref().unwrap().starts_with("entry \"10.0.0.6\": "), "{event:?}");
}

#[tokio::test]
async fn a_deleted_config_map_requests_deletion_of_every_byoh_record() {
    let fx = fixture(unreachable);
    fx.records.apply(&record("10.0.0.5", InstanceOrigin::Byoh)).await.unwrap();
    fx.records.apply(&record("10.0.0.9", InstanceOrigin::Machine)).await.unwrap();

    let outcome = reconcile_inventory(None, &fx.ctx, &StaticResolver::default()).await.unwrap();

    assert_eq!(outcome, InventoryOutcome { applied: vec![], deleted: vec![instance_name("10.0.0.5")], warnings: 0 });
    assert_eq!(names(&fx.records.list(NAMESPACE).await.unwrap()), vec![instance_name("10.0.0.9")]);
    assert!(fx.events.published().is_empty());
}

/// The record of `10.0.0.5` as stored, with a pinned key and the node name `win-5`.
async fn stored_record(fx: &Fixture) -> WindowsInstance {
    let mut instance = fx.records.apply(&record("10.0.0.5", InstanceOrigin::Byoh)).await.unwrap();
    let status = WindowsInstanceStatus {
        pinned_host_key: Some(PINNED.to_owned()),
        expected_node_name: Some("win-5".to_owned()),
        node_ip: Some(HOST_NODE_IP.parse().unwrap()),
        phase: Some(InstancePhase::Ready),
        ..WindowsInstanceStatus::default()
    };
    fx.records.apply_status(NAMESPACE, &instance_name("10.0.0.5"), &status).await.unwrap();
    instance.status = Some(status);
    instance
}

/// The node IP of [`stored_record`]'s host.
const HOST_NODE_IP: &str = "10.0.0.5";

/// The Node `name` as the kubelet of [`stored_record`]'s host registers it.
fn node(name: &str) -> Node {
    wmco_cluster_client::fake::objects::windows_node(name).internal_ip(HOST_NODE_IP).build()
}

#[tokio::test]
async fn a_changed_host_key_fails_the_record_with_a_warning_event() {
    let fx = fixture(key_changed);
    let instance = stored_record(&fx).await;

    let error = reconcile_instance(&instance, &fx.ctx).await.unwrap_err();

    assert!(!error.is_retryable());
    let stored = fx.records.record(NAMESPACE, &instance_name("10.0.0.5")).unwrap();
    assert_eq!(stored.status.unwrap().phase, Some(InstancePhase::Failed));
    let published = fx.events.published();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].0.kind.as_deref(), Some("WindowsInstance"));
    assert_eq!(published[0].1.reason, "HostKeyMismatch");
    assert_eq!(published[0].1.severity, Severity::Warning);
}

#[tokio::test]
async fn an_unreachable_host_is_retried_with_a_warning_naming_the_step() {
    let fx = fixture(unreachable);
    let instance = stored_record(&fx).await;

    let error = reconcile_instance(&instance, &fx.ctx).await.unwrap_err();

    assert!(error.is_retryable());
    assert_eq!(error.metric_label(), "unreachable");
    let metrics = fx.ctx.metrics.encode().unwrap();
    assert!(
        metrics.contains("wmco_reconcile_errors_total{controller=\"instances\",kind=\"unreachable\"} 1\n"),
        "{metrics}"
    );
    let status = fx.records.record(NAMESPACE, &instance_name("10.0.0.5")).unwrap().status.unwrap();
    assert!(status.last_error.unwrap().contains("unreachable"));
    assert_ne!(status.phase, Some(InstancePhase::Failed));
    let published = fx.events.published();
    assert!(!published.is_empty(), "a Warning on the record and on the ConfigMap");
    for (_, event) in &published {
        assert_eq!((event.severity, event.reason.as_str()), (Severity::Warning, "InstanceSetupFailure"));
        let note = event.note.as_deref().unwrap_or_default();
        assert!(note.contains("unreachable") && note.ends_with("the operator retries with backoff"), "{note}");
    }
}

/// A cluster whose OVN-Kubernetes has no hybrid overlay.
fn cluster_without_hybrid_overlay() -> ServiceSettingsSource {
    let facts = wmco_cluster_client::ClusterFacts {
        service_cidr: "172.30.0.0/16".parse().unwrap(),
        api_server_internal_url: "https://api-int.example:6443".into(),
        platform: Platform::None.into(),
        proxy: Default::default(),
        kubernetes_version: semver::Version::new(1, 36, 3),
        mirror_sets: vec![],
        pod_networking: Some(wmco_cluster_client::PodNetworking {
            network_type: Some("OVNKubernetes".into()),
            hybrid_overlay: false,
            hybrid_overlay_vxlan_port: None,
        }),
        kubelet_cloud: Default::default(),
    };
    let settings = crate::files::ClusterSettings::from_facts(&facts).unwrap();
    let material = crate::files::ClusterMaterial::not_read_yet(Arc::new(settings));
    ServiceSettingsSource::Cluster {
        snapshot: crate::files::MaterialSnapshot::fixed(material),
        verbosity: Verbosity::Normal,
        payload_kubelet_version: semver::Version::new(1, 36, 1),
    }
}

#[tokio::test]
async fn an_unsupported_cluster_configures_no_host_and_warns_on_the_record_until_it_is_fixed() {
    let mut fx = fixture(unreachable);
    fx.ctx.settings.services = cluster_without_hybrid_overlay();
    let instance = stored_record(&fx).await;

    let error = reconcile_instance(&instance, &fx.ctx).await.unwrap_err();

    assert!(error.is_retryable(), "an admin fixes the cluster");
    assert_eq!(error.metric_label(), "cluster_unsupported");
    assert!(error.to_string().contains("no hybrid overlay"), "{error}");
    let published = fx.events.published();
    assert_eq!(published.len(), 1, "on the record only: {published:?}");
    assert_eq!(published[0].0.kind.as_deref(), Some("WindowsInstance"));
    assert_eq!((published[0].1.severity, published[0].1.reason.as_str()), (Severity::Warning, "ClusterUnsupported"));
    let status = fx.records.record(NAMESPACE, &instance_name("10.0.0.5")).unwrap().status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::Ready), "the record is left as it was");

    // Deleting the record still deconfigures: the refusal only stops configuring.
    let mut deleting = instance.clone();
    deleting.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    deleting.metadata.finalizers = Some(vec![INSTANCE_FINALIZER.to_owned()]);
    let error = reconcile_instance(&deleting, &fx.ctx).await.unwrap_err();
    assert_eq!(error.metric_label(), "unreachable", "the deconfigure went to the host: {error}");
}

#[tokio::test]
async fn deletion_keeps_the_finalizer_and_the_node_while_the_host_cannot_be_cleaned() {
    let fx = fixture(unreachable);
    fx.nodes.insert(node("win-5"));
    let mut instance = stored_record(&fx).await;
    instance.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));

    let error = reconcile_instance(&instance, &fx.ctx).await.unwrap_err();

    assert!(error.is_retryable());
    let stored = fx.records.record(NAMESPACE, &instance_name("10.0.0.5")).unwrap();
    assert_eq!(stored.metadata.finalizers, Some(vec![INSTANCE_FINALIZER.to_owned()]));
    assert!(fx.nodes.node("win-5").is_some());
}

#[tokio::test]
async fn force_remove_deconfigures_past_an_unreachable_host_then_releases_the_finalizer() {
    let fx = fixture(unreachable);
    fx.nodes.insert(node("win-5"));
    let mut instance = stored_record(&fx).await;
    instance.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    instance.metadata.annotations = Some(BTreeMap::from([(FORCE_REMOVE_ANNOTATION.to_owned(), "true".to_owned())]));
    wmco_cluster_client::keep_host_key(fx.config_maps.as_ref(), &instance, PINNED).await.unwrap();
    let go_keys = ConfigMap {
        metadata: ObjectMeta {
            name: Some(GO_HOST_KEYS_CONFIG_MAP.to_owned()),
            namespace: Some(NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([
            ("10.0.0.5".to_owned(), "AAAA".to_owned()),
            ("10.0.0.9".to_owned(), "AAAA".to_owned()),
        ])),
        ..ConfigMap::default()
    };
    fx.config_maps.replace(go_keys).unwrap();

    let outcome = reconcile_instance(&instance, &fx.ctx).await.unwrap();

    let InstanceOutcome::Released(deconfigured) = outcome else { panic!("expected Released, got {outcome:?}") };
    assert_eq!(deconfigured.node_name.as_deref(), Some("win-5"));
    assert!(!deconfigured.host_cleaned);
    assert_eq!(deconfigured.forced_past.len(), 1);
    assert!(fx.nodes.node("win-5").is_none());
    let stored = fx.records.record(NAMESPACE, &instance_name("10.0.0.5")).unwrap();
    assert_eq!(stored.metadata.finalizers, Some(vec![]));
    let kept = wmco_cluster_client::kept_host_key(fx.config_maps.as_ref(), &instance).await.unwrap();
    assert_eq!(kept, None, "a new host at this address is met as new");
    let go_entries = fx.config_maps.get(NAMESPACE, GO_HOST_KEYS_CONFIG_MAP).await.unwrap().unwrap().data.unwrap();
    assert!(!go_entries.contains_key("10.0.0.5"), "the Go operator's entry for the address goes too");
    assert!(go_entries.contains_key("10.0.0.9"), "other hosts' entries stay");
    let rerun = tokio::time::timeout(std::time::Duration::from_millis(100), fx.ctx.released.notified()).await;
    assert!(rerun.is_ok(), "the inventory is told to run again (an entry may have come back meanwhile)");
}

#[tokio::test]
async fn a_deleted_record_without_the_finalizer_needs_nothing() {
    let fx = fixture(unreachable);
    let mut instance = record("10.0.0.5", InstanceOrigin::Byoh);
    instance.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));

    assert_eq!(reconcile_instance(&instance, &fx.ctx).await.unwrap(), InstanceOutcome::Gone);
}

#[test]
fn a_withheld_service_is_reported_once_per_reason_and_again_after_it_was_released() {
    let fixture = fixture(unreachable);
    let instance = record("10.0.0.5", InstanceOrigin::Byoh);
    let missing =
        WithheldService::new("windows_exporter", "Secret wmco/windows-machine-config-operator-tls does not exist");
    let renamed =
        WithheldService::new("windows_exporter", "Secret wmco/windows-machine-config-operator-tls has no tls.key");
    let ctx = &fixture.ctx;
    let reported = ctx.newly_withheld(&instance, std::slice::from_ref(&missing));
    assert_eq!(reported, std::slice::from_ref(&missing));
    assert_eq!(ctx.newly_withheld(&instance, std::slice::from_ref(&missing)), []);
    let reported = ctx.newly_withheld(&instance, std::slice::from_ref(&renamed));
    assert_eq!(reported, std::slice::from_ref(&renamed));
    assert_eq!(ctx.newly_withheld(&instance, &[]), []);
    assert_eq!(ctx.newly_withheld(&instance, std::slice::from_ref(&renamed)), [renamed]);
    let other = record("10.0.0.6", InstanceOrigin::Byoh);
    assert_eq!(ctx.newly_withheld(&other, std::slice::from_ref(&missing)), [missing]);
}

#[test]
fn the_withheld_event_is_a_warning_naming_the_service_and_what_is_missing() {
    let event =
        super::reconcile::withheld_event(&WithheldService::new("windows_exporter", "Secret ns/tls does not exist"));
    assert_eq!(
        (event.severity, event.reason.as_str(), event.action.as_str()),
        (Severity::Warning, "ServiceWithheld", "Configure")
    );
    assert_eq!(
        event.note.as_deref(),
        Some(
            "windows_exporter is not installed until its input exists: Secret ns/tls does not exist; the other services go ahead"
        )
    );
}

#[test]
fn a_changed_identity_is_told_with_what_changed() {
    let before = wmco_node_config::HostIdentity {
        hostname: "WIN-A".into(),
        fqdn: "WIN-A.corp.example".into(),
        node_ip: "10.0.0.7".parse().unwrap(),
        expected_node_name: "win-a".into(),
    };
    let after = wmco_node_config::HostIdentity { node_ip: "10.0.0.42".parse().unwrap(), ..before.clone() };
    let event = super::reconcile::identity_event(&wmco_node_config::IdentityChange { before, after });
    assert_eq!((event.severity, event.reason.as_str()), (Severity::Normal, "HostIdentityChanged"));
    assert_eq!(
        event.note.as_deref(),
        Some(
            "the host's node IP 10.0.0.7 -> 10.0.0.42 (Node win-a): recorded, and the kubelet is reconfigured with it \
             within --max-unavailable"
        )
    );
}

#[test]
fn setup_teardown_and_failure_events_carry_the_go_operator_s_reasons_by_origin() {
    use wmco_node_config::{ConfigureOutcome, ConfigureState, DeconfigureOutcome};
    let byoh = record("10.0.0.5", InstanceOrigin::Byoh);
    let mut machine = record("10.0.0.6", InstanceOrigin::Machine);
    machine.spec.machine_name = Some("win-abc".to_owned());
    let outcome = ConfigureOutcome {
        state: ConfigureState::Ready,
        node_name: "win-a".to_owned(),
        steps_applied: 0,
        commands: 1,
        uploads: 0,
        bytes_uploaded: 0,
        withheld: Vec::new(),
        reboot: None,
        identity_change: None,
        host_key_first_use: None,
    };
    let started = wmco_node_config::RebootStep::Started("the Windows feature Containers was installed".to_owned());
    let rebooting = super::reconcile::reboot_event(&byoh, &started);
    assert_eq!((rebooting.severity, rebooting.reason.as_str()), (Severity::Normal, "HostRebooting"));
    assert_eq!(
        rebooting.note.as_deref(),
        Some(
            "host 10.0.0.5 restarts because the Windows feature Containers was installed; it counts against \
             --max-unavailable until it is back"
        )
    );
    let completed = wmco_node_config::RebootStep::Completed("x".to_owned());
    assert_eq!(super::reconcile::reboot_event(&byoh, &completed).reason, "HostRebooted");
    let setup = super::reconcile::setup_event(&byoh, &outcome, "0.1.0");
    assert_eq!((setup.severity, setup.reason.as_str()), (Severity::Normal, "InstanceSetup"));
    assert_eq!(setup.note.as_deref(), Some("host 10.0.0.5 is Node win-a at version 0.1.0"));
    assert_eq!(super::reconcile::setup_event(&machine, &outcome, "0.1.0").reason, "MachineSetup");

    let released = DeconfigureOutcome { node_name: Some("win-a".to_owned()), host_cleaned: true, forced_past: vec![] };
    let teardown = super::reconcile::teardown_event(&byoh, &released);
    assert_eq!((teardown.severity, teardown.reason.as_str()), (Severity::Normal, "InstanceTeardown"));

    let error = InstancesError::Connector { instance: "wmco/x".to_owned(), reason: "bad".to_owned() };
    assert_eq!(super::reconcile::failure_event(&byoh, &error).reason, "InstanceSetupFailure");
    assert_eq!(super::reconcile::failure_event(&machine, &error).reason, "MachineSetupFailure");

    let hostile = InstancesError::Flow {
        instance: "wmco/byoh-10-0-0-5".to_owned(),
        source: Box::new(wmco_node_config::FlowError::Transport {
            host: "admin@10.0.0.5:22".to_owned(),
            step: wmco_node_config::FlowStep::Probe,
            source: Box::new(wmco_ssh_transport::TransportError::OutputTooLarge {
                host: "admin@10.0.0.5:22".to_owned(),
                command: "powershell.exe".to_owned(),
                limit: 4096,
            }),
        }),
    };
    let retried = super::reconcile::failure_event(&byoh, &hostile);
    assert_eq!(
        (retried.severity, retried.reason.as_str(), retried.action.as_str()),
        (Severity::Warning, "InstanceSetupFailure", "Configure")
    );
    let note = retried.note.unwrap_or_default();
    assert!(note.contains("probe failed") && note.ends_with("; the operator retries with backoff"), "{note}");

    let config_map = super::reconcile::go_reported_object(&byoh, NAMESPACE).unwrap();
    assert_eq!(
        (config_map.kind.as_deref(), config_map.name.as_deref(), config_map.namespace.as_deref()),
        (Some("ConfigMap"), Some("windows-instances"), Some(NAMESPACE))
    );
    let machine_object = super::reconcile::go_reported_object(&machine, NAMESPACE).unwrap();
    assert_eq!(
        (machine_object.kind.as_deref(), machine_object.name.as_deref(), machine_object.namespace.as_deref()),
        (Some("Machine"), Some("win-abc"), Some("openshift-machine-api"))
    );
}

/// Remembers the host key each connection was asked to pin, then hands out the fixed host.
struct PinRecordingConnector {
    host: Arc<dyn RemoteHost>,
    pins: std::sync::Mutex<Vec<Option<String>>>,
}

impl HostConnector for PinRecordingConnector {
    fn connect(&self, instance: &WindowsInstance) -> Result<Arc<dyn RemoteHost>, InstancesError> {
        self.pins.lock().unwrap().push(instance.pinned_host_key().map(str::to_owned));
        Ok(Arc::clone(&self.host))
    }
}

/// A fixture whose connector records the pins it is asked for, with the Windows Node `win-5` of `10.0.0.5`
/// carrying `annotations` (the Go operator's), and the record of `10.0.0.5` without a pinned key.
async fn go_configured(annotations: &[(&str, &str)]) -> (Fixture, Arc<PinRecordingConnector>, WindowsInstance) {
    let mut fx = fixture(unreachable);
    let connector = Arc::new(PinRecordingConnector {
        host: Arc::new(FailingHost { fail: unreachable }),
        pins: std::sync::Mutex::default(),
    });
    fx.ctx.connector = connector.clone();
    // The Go operator's marks: its version annotation and, on a BYOH host's Node, the BYOH label.
    let node = wmco_cluster_client::fake::objects::windows_node("win-5")
        .internal_ip("10.0.0.5")
        .annotated(VERSION_ANNOTATION, "10.19.0")
        .labelled(BYOH_LABEL, "true");
    fx.nodes.insert(annotations.iter().fold(node, |node, (key, value)| node.annotated(key, value)).build());
    let instance = fx.records.apply(&record("10.0.0.5", InstanceOrigin::Byoh)).await.unwrap();
    (fx, connector, instance)
}

#[tokio::test]
async fn a_record_without_a_key_takes_over_the_go_operators_pin_before_it_connects() {
    use wmco_cluster_client::names::{SSH_HOST_KEY_ANNOTATION, SSH_HOST_KEY_TYPE_ANNOTATION};
    let blob = PINNED.split(' ').nth(1).unwrap();
    let (fx, connector, instance) =
        go_configured(&[(SSH_HOST_KEY_ANNOTATION, blob), (SSH_HOST_KEY_TYPE_ANNOTATION, "ssh-ed25519")]).await;

    let error = reconcile_instance(&instance, &fx.ctx).await.unwrap_err();

    assert!(error.is_retryable(), "{error}");
    assert_eq!(*connector.pins.lock().unwrap(), [Some(PINNED.to_owned())], "pinned before the first connection");
    let status = fx.records.record(NAMESPACE, &instance_name("10.0.0.5")).unwrap().status.unwrap();
    assert_eq!(status.pinned_host_key.as_deref(), Some(PINNED), "recorded, so later passes need no lookup");
    let imported: Vec<_> =
        fx.events.published().into_iter().filter(|(_, event)| event.reason == "HostKeyImported").collect();
    assert_eq!(imported.len(), 1);
    let note = imported[0].1.note.clone().unwrap();
    assert!(note.contains("the annotations of Node win-5") && note.contains("SHA256:"), "{note}");
}

#[tokio::test]
async fn an_unreadable_go_operator_key_stops_the_record_before_any_connection() {
    use wmco_cluster_client::names::SSH_HOST_KEY_ANNOTATION;
    let (fx, connector, instance) = go_configured(&[(SSH_HOST_KEY_ANNOTATION, "AAAA")]).await;

    let error = reconcile_instance(&instance, &fx.ctx).await.unwrap_err();

    assert!(error.is_retryable());
    assert_eq!(error.metric_label(), "host_key_import");
    assert!(connector.pins.lock().unwrap().is_empty(), "nothing was sent to the host");
    let published = fx.events.published();
    assert!(published.iter().any(|(_, event)| event.reason == "HostKeyImportFailed"
        && event.note.as_deref().is_some_and(|note| note.contains("the annotations of Node win-5"))));
}

#[tokio::test]
async fn a_recreated_record_pins_the_key_the_operator_kept_instead_of_trusting_the_host_again() {
    let (fx, connector, instance) = go_configured(&[]).await;
    // The lost record's first pass kept the key; the inventory recreated the record under the same name.
    wmco_cluster_client::keep_host_key(fx.config_maps.as_ref(), &instance, PINNED).await.unwrap();

    reconcile_instance(&instance, &fx.ctx).await.unwrap_err();

    assert_eq!(*connector.pins.lock().unwrap(), [Some(PINNED.to_owned())], "pinned, not trusted on first use");
    let imported: Vec<_> =
        fx.events.published().into_iter().filter(|(_, event)| event.reason == "HostKeyImported").collect();
    let note = imported[0].1.note.clone().unwrap();
    assert!(
        note.contains(&format!("ConfigMap windows-instance-host-keys entry {}", instance_name("10.0.0.5"))),
        "{note}"
    );
}

#[tokio::test]
async fn a_key_taken_from_a_go_node_is_kept_in_the_operator_s_config_map() {
    use wmco_cluster_client::names::{SSH_HOST_KEY_ANNOTATION, SSH_HOST_KEY_TYPE_ANNOTATION};
    let blob = PINNED.split(' ').nth(1).unwrap();
    let (fx, _, instance) =
        go_configured(&[(SSH_HOST_KEY_ANNOTATION, blob), (SSH_HOST_KEY_TYPE_ANNOTATION, "ssh-ed25519")]).await;

    reconcile_instance(&instance, &fx.ctx).await.unwrap_err();

    let kept = wmco_cluster_client::kept_host_key(fx.config_maps.as_ref(), &instance).await.unwrap();
    assert_eq!(kept.as_deref(), Some(PINNED), "the Node's annotation is written by its kubelet too: a copy is kept");
}
