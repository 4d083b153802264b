//! Fleet metrics read from the `WindowsInstance` records: `wmco_instances{phase}` (how many records are in each
//! phase, every phase exported, zeros included) and `wmco_configure_duration_seconds` (observed once each time a
//! record turns Ready: from the `configuringSince` last seen, since the flow clears it when it writes Ready).
//! [`FleetObserver`] is the pure part; [`run_fleet_metrics`] feeds it from a watch of the records.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client};
use wmco_cluster_client::WindowsInstanceExt;
use wmco_cluster_client::types::{InstancePhase, WindowsInstance};

use crate::metrics::Metrics;

/// Remembers each record's last phase and `configuringSince`, so a configure duration is observed once per
/// transition to Ready.
#[derive(Debug, Default)]
pub struct FleetObserver {
    last_seen: HashMap<String, Seen>,
}

/// What the observer last saw of one record.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Seen {
    phase: Option<InstancePhase>,
    configuring_since: Option<Timestamp>,
}

impl FleetObserver {
    /// Sets the per-phase gauges from `records` and observes the configure duration of each record that turned
    /// Ready since the last call (a record already Ready when first seen, e.g. after a restart, is not observed).
    ///
    /// ```
    /// use wmco_operator::fleet_metrics::FleetObserver;
    /// use wmco_operator::metrics::Metrics;
    ///
    /// let metrics = Metrics::new();
    /// FleetObserver::default().observe(&[], "2026-11-22T04:00:00Z".parse().unwrap(), &metrics);
    /// assert!(metrics.encode()?.contains("wmco_instances{phase=\"Ready\"} 0"));
    /// # Ok::<(), std::fmt::Error>(())
    /// ```
    pub fn observe(&mut self, records: &[WindowsInstance], now: Timestamp, metrics: &Metrics) {
        let mut seen = HashMap::new();
        for record in records {
            let key = record.key();
            let status = record.status.as_ref();
            let previous = self.last_seen.get(&key).copied();
            let current = Seen {
                phase: status.and_then(|status| status.phase),
                configuring_since: status
                    .and_then(|status| status.configuring_since.as_ref())
                    .map(|time| time.0)
                    .or(previous.and_then(|previous| previous.configuring_since)),
            };
            let turned_ready = current.phase == Some(InstancePhase::Ready)
                && previous.is_some_and(|previous| previous.phase != Some(InstancePhase::Ready));
            if turned_ready && let Some(since) = current.configuring_since {
                let took = now.duration_since(since);
                metrics.observe_configure_duration(Duration::try_from(took).unwrap_or(Duration::ZERO));
            }
            let current = if current.phase == Some(InstancePhase::Ready) {
                Seen { configuring_since: None, ..current }
            } else {
                current
            };
            seen.insert(key, current);
        }
        for phase in InstancePhase::ALL {
            let count = seen.values().filter(|seen| seen.phase == Some(phase)).count();
            metrics.set_instances_in_phase(&phase.to_string(), i64::try_from(count).unwrap_or(i64::MAX));
        }
        self.last_seen = seen;
    }
}

/// Watches the `WindowsInstance` records of `namespace` and keeps the fleet metrics current until the watch ends.
pub async fn run_fleet_metrics(client: Client, namespace: String, metrics: Arc<Metrics>) {
    let (store, writer) = reflector::store::<WindowsInstance>();
    let records: Api<WindowsInstance> = Api::namespaced(client, &namespace);
    let mut observer = FleetObserver::default();
    let mut events = watcher(records, watcher::Config::default()).default_backoff().reflect(writer).boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(_) => {
                let snapshot: Vec<WindowsInstance> = store.state().iter().map(|record| (**record).clone()).collect();
                observer.observe(&snapshot, Timestamp::now(), &metrics);
            }
            Err(error) => tracing::warn!(error = %error, "fleet metrics: WindowsInstance watch"),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use wmco_cluster_client::fake::objects;
    use wmco_cluster_client::types::WindowsInstanceStatus;

    use super::*;

    fn record(name: &str, phase: Option<InstancePhase>, since: Option<&str>) -> WindowsInstance {
        let status = WindowsInstanceStatus {
            phase,
            configuring_since: since.map(|since| Time(since.parse().unwrap())),
            ..WindowsInstanceStatus::default()
        };
        objects::record(name).byoh("127.0.0.1").username("administrator").status(status).build()
    }

    fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
        text.lines().find(|line| line.starts_with(prefix)).unwrap_or_default()
    }

    #[test]
    fn gauges_count_every_phase_and_a_duration_is_observed_once_per_turn_to_ready() {
        let metrics = Metrics::new();
        let mut observer = FleetObserver::default();
        let now: Timestamp = "2026-11-22T04:00:00Z".parse().unwrap();
        let since = Some("2026-11-22T03:58:00Z");
        observer.observe(
            &[
                record("a", Some(InstancePhase::WaitingForNode), since),
                record("b", Some(InstancePhase::Ready), since),
                record("c", None, None),
            ],
            now,
            &metrics,
        );
        let text = metrics.encode().unwrap();
        assert_eq!(
            line(&text, "wmco_instances{phase=\"WaitingForNode\"}"),
            "wmco_instances{phase=\"WaitingForNode\"} 1"
        );
        assert_eq!(line(&text, "wmco_instances{phase=\"Ready\"}"), "wmco_instances{phase=\"Ready\"} 1");
        assert_eq!(line(&text, "wmco_instances{phase=\"Failed\"}"), "wmco_instances{phase=\"Failed\"} 0");
        assert_eq!(line(&text, "wmco_configure_duration_seconds_count"), "wmco_configure_duration_seconds_count 0");

        // The flow clears configuringSince when it writes Ready: the one seen before counts.
        let ready = [record("a", Some(InstancePhase::Ready), None), record("b", Some(InstancePhase::Ready), None)];
        observer.observe(&ready, now, &metrics);
        observer.observe(&ready, now, &metrics);
        let text = metrics.encode().unwrap();
        assert_eq!(line(&text, "wmco_instances{phase=\"Ready\"}"), "wmco_instances{phase=\"Ready\"} 2");
        assert_eq!(line(&text, "wmco_configure_duration_seconds_count"), "wmco_configure_duration_seconds_count 1");
        assert_eq!(line(&text, "wmco_configure_duration_seconds_sum"), "wmco_configure_duration_seconds_sum 120.0");
    }
}
