//! The operator's memory request and limit, in the kustomize base and in the generated CSV alike, sized from the
//! resident-set figures of `docs/performance.md`: the limit must hold the measured peak (the real payload uploading
//! to 8 hosts at once) plus the worst the health and metrics listeners may hold (both full of slow clients), and the
//! request at least the 50-host soak's steady resident set. No control plane: the files are read as they are.

use anyhow::{Context as _, ensure};
use serde_json::Value;

/// The peak resident set measured (`docs/performance.md`, real payload, 20 hosts, 8 at once): 347.1 MiB.
const MEASURED_PEAK_MIB: u64 = 348;
/// Both listeners full: 2 × 512 connections × (16 KiB of request head + about 34 KiB of TLS and task state).
const LISTENERS_WORST_MIB: u64 = 50;
/// The 50-host soak's steady resident set (`docs/performance.md` § Soak): 137.0 MiB.
const SOAK_STEADY_MIB: u64 = 137;

fn repository() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn yaml(path: &str) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(repository().join(path)).with_context(|| format!("cannot read {path}"))?;
    serde_saphyr::from_str(&text).with_context(|| format!("{path} is not YAML"))
}

/// `value` (`512Mi`, `1Gi`) in MiB.
fn mebibytes(value: &Value) -> anyhow::Result<u64> {
    let text = value.as_str().with_context(|| format!("{value} is not a quantity"))?;
    if let Some(number) = text.strip_suffix("Gi") {
        return Ok(number.parse::<u64>()? * 1024);
    }
    Ok(text.strip_suffix("Mi").with_context(|| format!("{text}: expected Mi or Gi"))?.parse()?)
}

fn check(origin: &str, pod_spec: &Value) -> anyhow::Result<()> {
    let resources = &pod_spec["containers"][0]["resources"];
    let limit = mebibytes(&resources["limits"]["memory"]).with_context(|| format!("{origin}: no memory limit"))?;
    let request =
        mebibytes(&resources["requests"]["memory"]).with_context(|| format!("{origin}: no memory request"))?;
    ensure!(
        limit >= MEASURED_PEAK_MIB + LISTENERS_WORST_MIB,
        "{origin}: memory limit {limit} MiB is below the measured peak plus the listeners' worst case"
    );
    ensure!(request >= SOAK_STEADY_MIB && request <= limit, "{origin}: memory request {request} MiB");
    Ok(())
}

#[test]
fn the_deployment_requests_and_limits_memory_from_the_measured_figures() -> anyhow::Result<()> {
    let deployment = yaml("manifests/base/deployment.yaml")?;
    check("manifests/base/deployment.yaml", &deployment["spec"]["template"]["spec"])?;
    let csv = yaml("bundle/manifests/windows-machine-config-operator.clusterserviceversion.yaml")?;
    check("the CSV", &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"])
}
