//! The recording rules and alerts of PrometheusRule `windows-prometheus-k8s-rules` evaluated by Prometheus' own rule
//! engine: `promtool check rules` on the rule groups of the manifest, then `promtool test rules` with
//! `tests/promtool/windows-rules.test.yaml`, whose input series are shaped like windows_exporter's output and the
//! operator's `/metrics` as Prometheus scrapes them through the ServiceMonitors (names, labels and target labels:
//! the test file's header says where each comes from). A rule that reads a metric or label windows_exporter does not
//! emit, or one the ServiceMonitor does not set, records nothing and fails here. A second test proves the unit tests
//! would notice: each deliberately wrong label makes them fail, naming the record it broke.
//!
//! promtool is built from the Go module pinned in `e2e/promtool/go.mod` by `e2e/promtool/build.sh` (`cargo xtask
//! test` runs it beside its other stages) into `${WMCO_CACHE:-~/.cache/wmco-rs}/tools/promtool/<version>/`; without
//! it both tests fail with a message saying how to build it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, ensure};
use serde_json::Value;

/// The PrometheusRule of the monitoring component.
const RULES: &str = "manifests/components/monitoring/windows-prometheus-k8s-rules.yaml";
/// The unit tests, and the rule file name they load (next to them).
const UNIT_TESTS: &str = "tests/promtool/windows-rules.test.yaml";
const RULE_FILE: &str = "rules.yaml";

/// Wrong labels and job names, each with the record whose unit test must then fail: (right text, wrong text, record).
const WRONG_LABELS: [(&str, &str, &str); 5] = [
    // A job name the ServiceMonitor does not set (it relabels `job` to windows-exporter).
    (r#"job="windows-exporter""#, r#"job="windows_exporter""#, "node_memory_MemAvailable_bytes"),
    // Labels windows_exporter does not emit: logical disks carry `volume`, NICs `nic`, CPU time `core` and `mode`.
    (r#""volume", "(.+)""#, r#""drive", "(.+)""#, "node_filesystem_size_bytes"),
    (r#""nic", "(.+)""#, r#""interface", "(.+)""#, "node_network_receive_bytes_total"),
    (r#"mode="idle""#, r#"state="idle""#, "instance:node_cpu_utilisation:rate1m"),
    // Containers join kube-state-metrics on `container_id`, which both emit as `containerd://<id>`.
    ("on (container_id)", "on (id)", "container_memory_working_set_bytes"),
];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The rule groups (`spec`) of the PrometheusRule `text`, as a rule file promtool reads (JSON is YAML).
fn rule_file(text: &str) -> anyhow::Result<String> {
    let rule: Value = serde_saphyr::from_str(text).context("the PrometheusRule is not YAML")?;
    ensure!(rule["kind"] == "PrometheusRule", "{RULES} holds a {}", rule["kind"]);
    Ok(serde_json::to_string_pretty(&rule["spec"])?)
}

/// How one promtool run ended: success and everything it printed.
struct Outcome {
    success: bool,
    output: String,
}

/// Writes the rule groups of `rules_text` and the unit tests into a fresh directory and runs `promtool check rules`
/// and `promtool test rules` there.
fn run_promtool(rules_text: &str) -> anyhow::Result<Outcome> {
    let promtool = wmco_e2e_harness::promtool()?;
    let scratch = tempfile::tempdir()?;
    std::fs::write(scratch.path().join(RULE_FILE), rule_file(rules_text)?)?;
    let tests = scratch.path().join("windows-rules.test.yaml");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(UNIT_TESTS), &tests)?;
    let mut output = String::new();
    let mut success = true;
    for args in [["check", "rules", RULE_FILE], ["test", "rules", "windows-rules.test.yaml"]] {
        let run = Command::new(&promtool)
            .args(args)
            .current_dir(scratch.path())
            .output()
            .with_context(|| format!("cannot run {}", promtool.display()))?;
        output.push_str(&String::from_utf8_lossy(&run.stdout));
        output.push_str(&String::from_utf8_lossy(&run.stderr));
        success &= run.status.success();
    }
    Ok(Outcome { success, output })
}

fn manifest_rules() -> anyhow::Result<String> {
    std::fs::read_to_string(repository().join(RULES)).with_context(|| format!("cannot read {RULES}"))
}

#[test]
fn the_rules_record_and_alert_what_the_unit_tests_expect() -> anyhow::Result<()> {
    let outcome = run_promtool(&manifest_rules()?)?;
    ensure!(outcome.success, "promtool refused {RULES}:\n{}", outcome.output);
    ensure!(outcome.output.contains("SUCCESS"), "promtool said:\n{}", outcome.output);
    Ok(())
}

#[test]
fn a_wrong_label_in_a_rule_fails_the_unit_tests() -> anyhow::Result<()> {
    let rules = manifest_rules()?;
    for (right, wrong, record) in WRONG_LABELS {
        ensure!(rules.contains(right), "{RULES} no longer contains {right}");
        let outcome = run_promtool(&rules.replace(right, wrong))?;
        ensure!(!outcome.success, "the unit tests passed with {wrong} instead of {right}:\n{}", outcome.output);
        ensure!(
            outcome.output.split_once("FAILED:").is_some_and(|(_, failures)| failures.contains(record)),
            "with {wrong} instead of {right} the unit tests did not fail on {record}:\n{}",
            outcome.output
        );
    }
    Ok(())
}
