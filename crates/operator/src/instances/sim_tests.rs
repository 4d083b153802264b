//! The happy path of [`reconcile_instance`] against `winhost-sim`'s in-process host model: a fresh host gets its
//! bootstrap pass (identity recorded, containerd and kubelet running), and the next reconcile reuses the cached
//! session and costs one probe round trip.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tracing::Instrument;

use winhost_sim::remote_host::{InProcessHost, SAMPLE_HOST_KEY};
use wmco_cluster_client::fake::{FakeCluster, FakeInstanceRecords, objects};
use wmco_cluster_client::types::{InstancePhase, WindowsInstance};
use wmco_cluster_client::{DrainOptions, InstanceRecords, Seams};
use wmco_node_config::ConfigureState;
use wmco_node_config::testing::{BootstrapFiles, sample_service_settings};
use wmco_ssh_transport::RemoteHost;

use super::*;

const NAMESPACE: &str = "wmco";

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

/// The instances settings of these tests: the sample service settings, version 10.17.0.
fn settings() -> InstancesSettings {
    InstancesSettings {
        namespace: NAMESPACE.to_owned(),
        services: crate::files::ServiceSettingsSource::Fixed(sample_service_settings()),
        operator_version: "10.17.0".to_owned(),
        pub_key_hash: "ab".to_owned(),
        drain: DrainOptions::default(),
        command_timeout: std::time::Duration::from_secs(120),
    }
}

#[tokio::test]
async fn a_fresh_host_is_bootstrapped_and_an_unchanged_second_reconcile_costs_nothing_on_the_cached_session() {
    let records = Arc::new(FakeInstanceRecords::default());
    let connector =
        Arc::new(SimConnector { host: Arc::new(InProcessHost::sample(4).unwrap()), connects: Mutex::new(0) });
    let settings = settings();
    let seams = Seams { records: records.clone(), ..FakeCluster::default().seams() };
    let ctx = InstancesContext::new(&seams, connector.clone(), Arc::new(BootstrapFiles::default()), settings);
    let instance =
        objects::record("byoh-127-0-0-40").in_namespace(NAMESPACE).byoh("127.0.0.40").username("administrator").build();
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
    assert_eq!(status.pinned_host_key.as_deref(), Some(SAMPLE_HOST_KEY));
    assert_eq!(status.node_ip, Some("203.0.113.40".parse().unwrap()));
    assert_eq!(status.expected_node_name.as_deref(), Some("winworker-4"));
    assert_eq!(status.phase, Some(InstancePhase::WaitingForNode));

    let stored = records.record(NAMESPACE, "byoh-127-0-0-40").unwrap();
    let InstanceOutcome::Configured(second) = reconcile_instance(&stored, &ctx).await.unwrap() else {
        panic!("expected a configure pass")
    };
    // Nothing the pass reads changed since the first one (its own status write included): no command at all.
    assert_eq!((second.state, second.commands, second.uploads), (ConfigureState::WaitingForNode, 0, 0));
    let metrics = ctx.metrics.encode().unwrap();
    let round_trips = format!("wmco_ssh_round_trips_total {}\n", first.commands + second.commands);
    let bytes = format!("wmco_ssh_sent_bytes_total {}\n", first.bytes_uploaded);
    assert!(metrics.contains(&round_trips) && metrics.contains(&bytes), "{metrics}");
    assert_eq!(*connector.connects.lock().unwrap(), 1);
}

#[tokio::test]
async fn a_host_whose_containers_feature_is_being_removed_fails_preflight_with_one_warning_event_naming_the_check() {
    let host = Arc::new(InProcessHost::sample(5).unwrap());
    host.host().features.insert("Containers".into(), "DisablePending".into());
    let connector = Arc::new(SimConnector { host: host.clone(), connects: Mutex::new(0) });
    let settings = settings();
    let cluster = FakeCluster::default();
    let ctx = InstancesContext::new(&cluster.seams(), connector, Arc::new(BootstrapFiles::default()), settings);
    let instance =
        objects::record("byoh-127-0-0-50").in_namespace(NAMESPACE).byoh("127.0.0.50").username("administrator").build();
    cluster.records.apply(&instance).await.unwrap();
    let stored = cluster.records.record(NAMESPACE, "byoh-127-0-0-50").unwrap();

    let error = reconcile_instance(&stored, &ctx).await.unwrap_err();

    assert!(crate::runtime::ReconcilerError::is_retryable(&error), "the admin fixes the host, not the record: {error}");
    let published = cluster.events.published();
    let warnings: Vec<(&str, &str)> =
        published.iter().map(|(_, event)| (event.reason.as_str(), event.note.as_deref().unwrap_or_default())).collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert_eq!(warnings[0].0, "PreflightCheckFailed");
    assert!(
        warnings[0].1.starts_with("ContainersFeature: the Windows feature Containers is being removed"),
        "{warnings:#?}"
    );
    let status = cluster.records.record(NAMESPACE, "byoh-127-0-0-50").unwrap().status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::Failed));
    assert!(status.condition_is_true("PreflightFailed"));
    assert_eq!(host.host().scm.services().count(), 0, "nothing installed");
}
