//! The operator's Prometheus metrics: one registry holding every family the operator exports, and a small typed
//! API the controllers record through. [`Metrics::encode`] renders the OpenMetrics text served at `/metrics`
//! (over HTTPS, to authorized clients: see [`crate::metrics_server`]).
//!
//! Families (names as exported; units are suffixes, counters end in `_total`):
//! - `wmco_instances{phase}`: gauge, how many `WindowsInstance` records are in each phase;
//! - `wmco_disruption_requests{kind,state}`: gauge, how many restarts and reboots are `Requested` (waiting for the
//!   budget) and `Granted` (holding it, restart under way), set by every fleet reconcile;
//! - `wmco_configure_duration_seconds`: histogram, how long configuring one host took;
//! - `wmco_ssh_round_trips_total` and `wmco_ssh_sent_bytes_total`: counters of SSH traffic;
//! - `wmco_csr_verdicts_total{verdict,rule}`: counter of CSR decisions by rule (`all` for an approval);
//! - `wmco_reconcile_total{controller,result}`: counter of reconciles by controller and result (`success` or
//!   `error`), for the kube-runtime controllers and the hand-rolled loops alike;
//! - `wmco_reconcile_errors_total{controller,kind}`: counter of reconcile errors by controller and kind (an
//!   error's `metric_label()`);
//! - `wmco_reconcile_duration_seconds{controller}`: histogram, how long one reconcile took;
//! - `wmco_leader`: gauge, 1 while this process holds the leader Lease (or runs without leader election);
//! - `wmco_build_info{version,revision}`: gauge, always 1;
//! - `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
//!   `process_open_fds`, `process_max_fds`, `process_start_time_seconds`: the process, read from `/proc` on each
//!   scrape ([`crate::process_metrics`]).

use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// Upper bounds (seconds) of the configure-duration buckets: 30 s to about 64 minutes, doubling.
const CONFIGURE_DURATION_BUCKETS: [f64; 8] = [30.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 3840.0];
/// Upper bounds (seconds) of the reconcile-duration buckets: from a CSR decision (milliseconds) to a host's
/// configure pass (minutes).
const RECONCILE_DURATION_BUCKETS: [f64; 8] = [0.01, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0];

/// How one reconcile ended, the `result` label of `wmco_reconcile_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReconcileResult {
    /// The reconcile returned `Ok`.
    Success,
    /// The reconcile returned an error (counted by controller and kind in `wmco_reconcile_errors_total` too).
    Error,
}

impl ReconcileResult {
    /// `Success` for `Ok`, `Error` for `Err`.
    pub fn of<T, E>(result: &Result<T, E>) -> Self {
        if result.is_ok() { Self::Success } else { Self::Error }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
        }
    }
}

/// What the CSR controller did with a kubelet CSR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EncodeLabelValue)]
pub enum CsrVerdictLabel {
    /// Approved through `/approval`.
    Approved,
    /// Denied through `/approval`.
    Denied,
    /// Left pending (not ours, or not decidable yet).
    Ignored,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PhaseLabels {
    phase: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DisruptionLabels {
    kind: String,
    state: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CsrVerdictLabels {
    verdict: CsrVerdictLabel,
    rule: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ErrorLabels {
    controller: String,
    kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    revision: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReconcileLabels {
    controller: String,
    result: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

/// Every metric the operator exports, registered in one registry. Share it as `Arc<Metrics>`; recording takes
/// `&self`.
///
/// ```
/// use std::time::Duration;
/// use wmco_operator::metrics::{CsrVerdictLabel, Metrics};
/// let metrics = Metrics::new();
/// metrics.set_instances_in_phase("Configured", 3);
/// metrics.observe_configure_duration(Duration::from_secs(95));
/// metrics.record_csr_verdict(CsrVerdictLabel::Approved, "A1");
/// metrics.set_build_info("0.1.0", "0123456789ab");
/// let text = metrics.encode()?;
/// assert!(text.contains("wmco_instances{phase=\"Configured\"} 3"));
/// assert!(text.contains("wmco_build_info{version=\"0.1.0\",revision=\"0123456789ab\"} 1"));
/// # Ok::<(), std::fmt::Error>(())
/// ```
pub struct Metrics {
    registry: Registry,
    instances_by_phase: Family<PhaseLabels, Gauge>,
    disruption_requests: Family<DisruptionLabels, Gauge>,
    configure_duration: Histogram,
    ssh_round_trips: Counter,
    ssh_bytes_sent: Counter,
    csr_verdicts: Family<CsrVerdictLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    reconciles: Family<ReconcileLabels, Counter>,
    reconcile_duration: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    leader: Gauge,
    build_info: Family<BuildLabels, Gauge>,
}

impl Metrics {
    /// A registry with every family registered and nothing recorded.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let instances_by_phase = Family::<PhaseLabels, Gauge>::default();
        registry.register("wmco_instances", "WindowsInstance records by phase", instances_by_phase.clone());
        let disruption_requests = Family::<DisruptionLabels, Gauge>::default();
        registry.register(
            "wmco_disruption_requests",
            "Restarts and reboots of hosts by kind and state: Requested (waiting for the budget) or Granted",
            disruption_requests.clone(),
        );
        let configure_duration = Histogram::new(CONFIGURE_DURATION_BUCKETS);
        registry.register(
            "wmco_configure_duration_seconds",
            "Time taken to configure one Windows host",
            configure_duration.clone(),
        );
        let ssh_round_trips = Counter::default();
        registry.register("wmco_ssh_round_trips", "SSH command round trips to Windows hosts", ssh_round_trips.clone());
        let ssh_bytes_sent = Counter::default();
        registry.register_with_unit(
            "wmco_ssh_sent",
            "Bytes uploaded to Windows hosts over SSH",
            Unit::Bytes,
            ssh_bytes_sent.clone(),
        );
        let csr_verdicts = Family::<CsrVerdictLabels, Counter>::default();
        registry.register("wmco_csr_verdicts", "Kubelet CSR decisions by verdict and rule", csr_verdicts.clone());
        let errors = Family::<ErrorLabels, Counter>::default();
        registry.register("wmco_reconcile_errors", "Reconcile errors by controller and kind", errors.clone());
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        registry.register("wmco_reconcile", "Reconciles by controller and result", reconciles.clone());
        let reconcile_duration: Family<ControllerLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(|| Histogram::new(RECONCILE_DURATION_BUCKETS));
        registry.register(
            "wmco_reconcile_duration_seconds",
            "Time taken by one reconcile, by controller",
            reconcile_duration.clone(),
        );
        let leader = Gauge::default();
        registry.register("wmco_leader", "1 while this process leads (runs the controllers), else 0", leader.clone());
        let build_info = Family::<BuildLabels, Gauge>::default();
        registry.register(
            "wmco_build_info",
            "The version and git revision of the running operator",
            build_info.clone(),
        );
        registry.register_collector(Box::new(crate::process_metrics::ProcessCollector));
        Self {
            registry,
            instances_by_phase,
            disruption_requests,
            configure_duration,
            ssh_round_trips,
            ssh_bytes_sent,
            csr_verdicts,
            errors,
            reconciles,
            reconcile_duration,
            leader,
            build_info,
        }
    }

    /// Sets whether this process leads.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// Records the running operator's version and git revision (`wmco_build_info`, value 1).
    pub fn set_build_info(&self, version: &str, revision: &str) {
        self.build_info
            .get_or_create(&BuildLabels { version: version.to_owned(), revision: revision.to_owned() })
            .set(1);
    }

    /// Sets how many `WindowsInstance` records are in `phase` now.
    pub fn set_instances_in_phase(&self, phase: &str, count: i64) {
        self.instances_by_phase.get_or_create(&PhaseLabels { phase: phase.to_owned() }).set(count);
    }

    /// Sets how many `kind` disruptions (`Restart`, `Reboot`) are in `state` (`Requested`, `Granted`) now.
    pub fn set_disruption_requests(&self, kind: &str, state: &str, count: i64) {
        let labels = DisruptionLabels { kind: kind.to_owned(), state: state.to_owned() };
        self.disruption_requests.get_or_create(&labels).set(count);
    }

    /// Records how long configuring one host took.
    pub fn observe_configure_duration(&self, duration: Duration) {
        self.configure_duration.observe(duration.as_secs_f64());
    }

    /// Counts SSH command round trips.
    pub fn add_ssh_round_trips(&self, round_trips: u64) {
        self.ssh_round_trips.inc_by(round_trips);
    }

    /// Counts bytes uploaded over SSH.
    pub fn add_ssh_bytes_sent(&self, bytes: u64) {
        self.ssh_bytes_sent.inc_by(bytes);
    }

    /// Counts one CSR decision made by `rule` (a rule ID such as `A1`).
    pub fn record_csr_verdict(&self, verdict: CsrVerdictLabel, rule: &str) {
        self.csr_verdicts.get_or_create(&CsrVerdictLabels { verdict, rule: rule.to_owned() }).inc();
    }

    /// Counts one reconcile error of `controller` of `kind` (an error's `metric_label()`).
    pub fn record_error(&self, controller: &str, kind: &str) {
        self.errors.get_or_create(&ErrorLabels { controller: controller.to_owned(), kind: kind.to_owned() }).inc();
    }

    /// Counts one reconcile of `controller` that ended with `result` and took `duration`.
    pub fn record_reconcile(&self, controller: &str, result: ReconcileResult, duration: Duration) {
        let labels = ReconcileLabels { controller: controller.to_owned(), result: result.label().to_owned() };
        self.reconciles.get_or_create(&labels).inc();
        let labels = ControllerLabels { controller: controller.to_owned() };
        self.reconcile_duration.get_or_create(&labels).observe(duration.as_secs_f64());
    }

    /// The OpenMetrics text exposition of every family.
    ///
    /// # Errors
    ///
    /// Only if writing to the string fails, which `String` never does; kept as the encoder's own error.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_starting_with<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
        text.lines().filter(|line| line.starts_with(prefix)).collect()
    }

    #[test]
    fn empty_registry_declares_only_unlabelled_families() {
        let text = Metrics::new().encode().expect("encoded");
        let wmco: Vec<&str> =
            lines_starting_with(&text, "# TYPE").into_iter().filter(|line| line.contains(" wmco_")).collect();
        assert_eq!(
            wmco,
            vec![
                "# TYPE wmco_configure_duration_seconds histogram",
                "# TYPE wmco_ssh_round_trips counter",
                "# TYPE wmco_ssh_sent_bytes counter",
                "# TYPE wmco_leader gauge",
            ]
        );
        assert!(text.contains("# UNIT wmco_ssh_sent_bytes bytes\n"), "{text}");
        assert!(text.contains("wmco_leader 0\n"), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn recorded_values_appear_with_their_labels() {
        let metrics = Metrics::new();
        metrics.set_instances_in_phase("Configuring", 2);
        metrics.set_instances_in_phase("Configuring", 1);
        metrics.set_instances_in_phase("Configured", 4);
        metrics.add_ssh_round_trips(7);
        metrics.add_ssh_bytes_sent(1024);
        metrics.record_csr_verdict(CsrVerdictLabel::Approved, "A1");
        metrics.record_csr_verdict(CsrVerdictLabel::Approved, "A1");
        metrics.record_csr_verdict(CsrVerdictLabel::Denied, "D3");
        metrics.record_csr_verdict(CsrVerdictLabel::Ignored, "F2");
        metrics.record_error("instances", "kube_api");
        metrics.set_leader(true);
        let text = metrics.encode().expect("encoded");

        let wmco: Vec<&str> =
            lines_starting_with(&text, "# TYPE").into_iter().filter(|line| line.contains(" wmco_")).collect();
        assert_eq!(
            wmco,
            vec![
                "# TYPE wmco_instances gauge",
                "# TYPE wmco_configure_duration_seconds histogram",
                "# TYPE wmco_ssh_round_trips counter",
                "# TYPE wmco_ssh_sent_bytes counter",
                "# TYPE wmco_csr_verdicts counter",
                "# TYPE wmco_reconcile_errors counter",
                "# TYPE wmco_leader gauge",
            ]
        );
        assert!(text.contains("wmco_leader 1\n"), "{text}");
        let mut instances = lines_starting_with(&text, "wmco_instances{");
        instances.sort_unstable();
        assert_eq!(
            instances,
            vec!["wmco_instances{phase=\"Configured\"} 4", "wmco_instances{phase=\"Configuring\"} 1"]
        );
        assert_eq!(lines_starting_with(&text, "wmco_ssh_round_trips_total"), vec!["wmco_ssh_round_trips_total 7"]);
        assert_eq!(lines_starting_with(&text, "wmco_ssh_sent_bytes_total"), vec!["wmco_ssh_sent_bytes_total 1024"]);
        let mut verdicts = lines_starting_with(&text, "wmco_csr_verdicts_total{");
        verdicts.sort_unstable();
        assert_eq!(
            verdicts,
            vec![
                "wmco_csr_verdicts_total{verdict=\"Approved\",rule=\"A1\"} 2",
                "wmco_csr_verdicts_total{verdict=\"Denied\",rule=\"D3\"} 1",
                "wmco_csr_verdicts_total{verdict=\"Ignored\",rule=\"F2\"} 1",
            ]
        );
        assert_eq!(
            lines_starting_with(&text, "wmco_reconcile_errors_total{"),
            vec!["wmco_reconcile_errors_total{controller=\"instances\",kind=\"kube_api\"} 1"]
        );
    }

    #[test]
    fn configure_durations_fall_into_doubling_buckets() {
        let metrics = Metrics::new();
        metrics.observe_configure_duration(Duration::from_secs(45));
        metrics.observe_configure_duration(Duration::from_secs(500));
        let text = metrics.encode().expect("encoded");
        assert_eq!(
            lines_starting_with(&text, "wmco_configure_duration_seconds_"),
            vec![
                "wmco_configure_duration_seconds_sum 545.0",
                "wmco_configure_duration_seconds_count 2",
                "wmco_configure_duration_seconds_bucket{le=\"30.0\"} 0",
                "wmco_configure_duration_seconds_bucket{le=\"60.0\"} 1",
                "wmco_configure_duration_seconds_bucket{le=\"120.0\"} 1",
                "wmco_configure_duration_seconds_bucket{le=\"240.0\"} 1",
                "wmco_configure_duration_seconds_bucket{le=\"480.0\"} 1",
                "wmco_configure_duration_seconds_bucket{le=\"960.0\"} 2",
                "wmco_configure_duration_seconds_bucket{le=\"1920.0\"} 2",
                "wmco_configure_duration_seconds_bucket{le=\"3840.0\"} 2",
                "wmco_configure_duration_seconds_bucket{le=\"+Inf\"} 2",
            ]
        );
    }

    #[test]
    fn reconciles_are_counted_by_controller_and_result_and_timed_by_controller() {
        let metrics = Metrics::new();
        metrics.record_reconcile("csr", ReconcileResult::Success, Duration::from_millis(5));
        metrics.record_reconcile("csr", ReconcileResult::Success, Duration::from_millis(300));
        metrics.record_reconcile("csr", ReconcileResult::Error, Duration::from_secs(2));
        metrics.record_reconcile("rekey", ReconcileResult::of(&Ok::<(), ()>(())), Duration::from_secs(45));
        let text = metrics.encode().expect("encoded");

        let types = lines_starting_with(&text, "# TYPE wmco_reconcile");
        assert_eq!(types, vec!["# TYPE wmco_reconcile counter", "# TYPE wmco_reconcile_duration_seconds histogram"]);
        let mut reconciles = lines_starting_with(&text, "wmco_reconcile_total{");
        reconciles.sort_unstable();
        assert_eq!(
            reconciles,
            vec![
                "wmco_reconcile_total{controller=\"csr\",result=\"error\"} 1",
                "wmco_reconcile_total{controller=\"csr\",result=\"success\"} 2",
                "wmco_reconcile_total{controller=\"rekey\",result=\"success\"} 1",
            ]
        );
        let csr: Vec<_> = lines_starting_with(&text, "wmco_reconcile_duration_seconds_")
            .into_iter()
            .filter(|line| line.contains("controller=\"csr\""))
            .collect();
        assert_eq!(
            csr,
            vec![
                "wmco_reconcile_duration_seconds_sum{controller=\"csr\"} 2.305",
                "wmco_reconcile_duration_seconds_count{controller=\"csr\"} 3",
                "wmco_reconcile_duration_seconds_bucket{le=\"0.01\",controller=\"csr\"} 1",
                "wmco_reconcile_duration_seconds_bucket{le=\"0.1\",controller=\"csr\"} 1",
                "wmco_reconcile_duration_seconds_bucket{le=\"0.5\",controller=\"csr\"} 2",
                "wmco_reconcile_duration_seconds_bucket{le=\"1.0\",controller=\"csr\"} 2",
                "wmco_reconcile_duration_seconds_bucket{le=\"5.0\",controller=\"csr\"} 3",
                "wmco_reconcile_duration_seconds_bucket{le=\"30.0\",controller=\"csr\"} 3",
                "wmco_reconcile_duration_seconds_bucket{le=\"120.0\",controller=\"csr\"} 3",
                "wmco_reconcile_duration_seconds_bucket{le=\"600.0\",controller=\"csr\"} 3",
                "wmco_reconcile_duration_seconds_bucket{le=\"+Inf\",controller=\"csr\"} 3",
            ]
        );
        assert!(text.contains("wmco_reconcile_duration_seconds_count{controller=\"rekey\"} 1\n"), "{text}");
    }
}
