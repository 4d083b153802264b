//! The part of the kubelet's `--config` file (`KubeletConfiguration`, `kubelet.config.k8s.io/v1beta1`, JSON or
//! YAML) the simulator acts on, with the kubelet's defaults, and Go duration strings (`10s`, `1m0s`, `500ms`).
//! Unknown fields are accepted, as the kubelet's lenient decoding fallback accepts them.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::taint::{Taint, TaintEffect};

/// The `apiVersion` the kubelet decodes.
const API_VERSION: &str = "kubelet.config.k8s.io/v1beta1";
/// The `kind` the kubelet decodes.
const KIND: &str = "KubeletConfiguration";

/// The settings the simulator acts on, defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeletConfig {
    /// `rotateCertificates` (default false).
    pub rotate_certificates: bool,
    /// `serverTLSBootstrap` and feature gate `RotateKubeletServerCertificate` (default on) both true.
    pub server_tls_bootstrap: bool,
    /// `registerNode` (default true).
    pub register_node: bool,
    /// `registerWithTaints`.
    pub register_with_taints: Vec<Taint>,
    /// `nodeStatusUpdateFrequency` (default 10 s).
    pub node_status_update_frequency: Duration,
    /// `nodeStatusReportFrequency` (default 5 min).
    pub node_status_report_frequency: Duration,
    /// `nodeLeaseDurationSeconds` (default 40).
    pub node_lease_duration_seconds: i32,
    /// `authentication.x509.clientCAFile`, a Windows path.
    pub client_ca_file: Option<String>,
    /// `port` (default 10250).
    pub port: i32,
    /// `maxPods` (default 110).
    pub max_pods: i64,
}

/// Why the configuration file is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigProblem {
    /// The document does not decode.
    #[error("failed to decode: {0}")]
    Decode(String),
    /// `kind` / `apiVersion` are not the kubelet's.
    #[error("no kind {kind:?} is registered for version {api_version:?}")]
    Kind {
        /// The `kind` found.
        kind: String,
        /// The `apiVersion` found.
        api_version: String,
    },
    /// A duration field is not a Go duration.
    #[error("{field}: time: invalid duration {value:?}")]
    Duration {
        /// Which field.
        field: &'static str,
        /// The value found.
        value: String,
    },
    /// A field is out of range.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    api_version: String,
    rotate_certificates: Option<bool>,
    #[serde(rename = "serverTLSBootstrap")]
    server_tls_bootstrap: Option<bool>,
    #[serde(default)]
    feature_gates: BTreeMap<String, bool>,
    register_node: Option<bool>,
    #[serde(default)]
    register_with_taints: Vec<DocumentTaint>,
    node_status_update_frequency: Option<String>,
    node_status_report_frequency: Option<String>,
    node_lease_duration_seconds: Option<i32>,
    authentication: Option<Authentication>,
    port: Option<i32>,
    max_pods: Option<i64>,
}

#[derive(Deserialize)]
struct Authentication {
    x509: Option<X509>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct X509 {
    #[serde(rename = "clientCAFile")]
    client_ca_file: Option<String>,
}

#[derive(Deserialize)]
struct DocumentTaint {
    key: String,
    #[serde(default)]
    value: String,
    effect: String,
}

impl KubeletConfig {
    /// Decodes a configuration file's text (JSON is YAML) and applies the kubelet's defaults.
    ///
    /// ```
    /// let config = wmco_kubelet_sim::KubeletConfig::parse(
    ///     r#"{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","nodeLeaseDurationSeconds":4}"#,
    /// ).unwrap();
    /// assert_eq!(config.node_lease_duration_seconds, 4);
    /// assert_eq!(config.node_status_update_frequency, std::time::Duration::from_secs(10));
    /// ```
    ///
    /// # Errors
    /// [`ConfigProblem`] naming what is wrong.
    pub fn parse(text: &str) -> Result<Self, ConfigProblem> {
        let document: Document =
            serde_saphyr::from_str(text).map_err(|error| ConfigProblem::Decode(error.to_string()))?;
        if document.kind != KIND || document.api_version != API_VERSION {
            return Err(ConfigProblem::Kind { kind: document.kind, api_version: document.api_version });
        }
        let duration = |field: &'static str, value: Option<String>, default: Duration| match value {
            None => Ok(default),
            Some(value) => parse_go_duration(&value).ok_or(ConfigProblem::Duration { field, value }),
        };
        let node_lease_duration_seconds = document.node_lease_duration_seconds.unwrap_or(40);
        if node_lease_duration_seconds <= 0 {
            return Err(ConfigProblem::Invalid(format!(
                "nodeLeaseDurationSeconds ({node_lease_duration_seconds}) must be greater than 0"
            )));
        }
        let register_with_taints = document
            .register_with_taints
            .into_iter()
            .map(|taint| {
                let effect = TaintEffect::parse(&taint.effect).ok_or_else(|| {
                    ConfigProblem::Invalid(format!("registerWithTaints: unknown taint effect {:?}", taint.effect))
                })?;
                Ok(Taint { key: taint.key, value: taint.value, effect })
            })
            .collect::<Result<_, ConfigProblem>>()?;
        let serving_gate = document.feature_gates.get("RotateKubeletServerCertificate").copied().unwrap_or(true);
        Ok(Self {
            rotate_certificates: document.rotate_certificates.unwrap_or(false),
            server_tls_bootstrap: document.server_tls_bootstrap.unwrap_or(false) && serving_gate,
            register_node: document.register_node.unwrap_or(true),
            register_with_taints,
            node_status_update_frequency: duration(
                "nodeStatusUpdateFrequency",
                document.node_status_update_frequency,
                Duration::from_secs(10),
            )?,
            node_status_report_frequency: duration(
                "nodeStatusReportFrequency",
                document.node_status_report_frequency,
                Duration::from_secs(300),
            )?,
            node_lease_duration_seconds,
            client_ca_file: document.authentication.and_then(|a| a.x509).and_then(|x509| x509.client_ca_file),
            port: document.port.unwrap_or(10250),
            max_pods: document.max_pods.unwrap_or(110),
        })
    }

    /// How often the Lease is renewed: a quarter of its duration, as the kubelet does.
    pub fn lease_renew_interval(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.node_lease_duration_seconds).unwrap_or(40) * 250)
    }
}

/// Parses a Go `time.Duration` string: a sequence of decimal numbers with units `ns`, `us`, `µs`, `ms`, `s`, `m`,
/// `h` (`1m30s`, `1.5s`, `0`). Negative durations are refused.
pub(crate) fn parse_go_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_length = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number: f64 = rest[..number_length].parse().ok()?;
        rest = &rest[number_length..];
        let unit_length = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_length] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_length..];
        total += number * seconds_per_unit;
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_go_duration("10s"), Some(Duration::from_secs(10)));
        assert_eq!(parse_go_duration("1m0s"), Some(Duration::from_secs(60)));
        assert_eq!(parse_go_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("10"), None);
        assert_eq!(parse_go_duration("-1s"), None);
        assert_eq!(parse_go_duration(""), None);
        assert_eq!(parse_go_duration("5d"), None);
    }

    #[test]
    fn defaults_apply_to_an_empty_configuration() {
        let config =
            KubeletConfig::parse("kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n").unwrap();
        assert_eq!(
            config,
            KubeletConfig {
                rotate_certificates: false,
                server_tls_bootstrap: false,
                register_node: true,
                register_with_taints: Vec::new(),
                node_status_update_frequency: Duration::from_secs(10),
                node_status_report_frequency: Duration::from_secs(300),
                node_lease_duration_seconds: 40,
                client_ca_file: None,
                port: 10250,
                max_pods: 110,
            }
        );
        assert_eq!(config.lease_renew_interval(), Duration::from_secs(10));
    }

    #[test]
    fn the_serving_feature_gate_can_switch_server_tls_bootstrap_off() {
        let text = r#"{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1",
            "serverTLSBootstrap":true,"featureGates":{"RotateKubeletServerCertificate":false}}"#;
        assert!(!KubeletConfig::parse(text).unwrap().server_tls_bootstrap);
    }

    #[test]
    fn wrong_kinds_bad_durations_and_effects_are_refused() {
        assert_eq!(
            KubeletConfig::parse(r#"{"kind":"Config","apiVersion":"v1"}"#).unwrap_err(),
            ConfigProblem::Kind { kind: "Config".into(), api_version: "v1".into() }
        );
        let bad_duration = r#"{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1",
            "nodeStatusUpdateFrequency":"soon"}"#;
        assert_eq!(
            KubeletConfig::parse(bad_duration).unwrap_err(),
            ConfigProblem::Duration { field: "nodeStatusUpdateFrequency", value: "soon".into() }
        );
        let bad_effect = r#"{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1",
            "registerWithTaints":[{"key":"os","value":"Windows","effect":"Sometimes"}]}"#;
        assert!(matches!(KubeletConfig::parse(bad_effect).unwrap_err(), ConfigProblem::Invalid(_)));
        assert!(matches!(KubeletConfig::parse("{not yaml").unwrap_err(), ConfigProblem::Decode(_)));
    }
}
