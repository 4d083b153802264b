//! The CSV's feature annotations (`features.operators.openshift.io/*`) say what the product does, in the hand-written
//! `manifests/olm/csv-base.yaml` and in the generated bundle alike. Each value is pinned next to the evidence in the
//! repository that makes it true, so changing the product without the annotation (or the reverse) fails here.
//! `docs/install.md` § "Route 2: OLM" gives the reasons. No control plane: the files are read as they are.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, ensure};
use serde_json::Value;

/// Every feature annotation and its value.
const FEATURES: [(&str, &str); 10] = [
    ("cnf", "false"),
    // The nodes' CNI (hybrid-overlay, the CNI plugins and their configuration) is configured by the operator.
    ("cni", "true"),
    ("csi", "false"),
    // The payload is in the operator image, the CSV names that image in relatedImages, and the hosts follow the
    // cluster's image mirror sets.
    ("disconnected", "true"),
    ("fips-compliant", "false"),
    // Proxy `cluster` reaches every host's containerd and kubelet.
    ("proxy-aware", "true"),
    // The operator's metrics endpoint follows the cluster TLS profile; windows_exporter and the kubelet on the
    // hosts do not.
    ("tls-profiles", "false"),
    ("token-auth-aws", "false"),
    ("token-auth-azure", "false"),
    ("token-auth-gcp", "false"),
];

const PREFIX: &str = "features.operators.openshift.io/";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(repository().join(path)).with_context(|| format!("cannot read {path}"))
}

fn yaml(path: &str) -> anyhow::Result<Value> {
    serde_saphyr::from_str(&read(path)?).with_context(|| format!("{path} is not YAML"))
}

/// The `features.operators.openshift.io/*` annotations of a CSV, without the prefix.
fn features(csv: &Value) -> BTreeMap<String, String> {
    csv["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| Some((key.strip_prefix(PREFIX)?.to_owned(), value.as_str()?.to_owned())))
        .collect()
}

#[test]
fn the_csv_and_the_bundle_carry_the_pinned_feature_annotations() -> anyhow::Result<()> {
    let expected: BTreeMap<String, String> =
        FEATURES.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect();
    for path in
        ["manifests/olm/csv-base.yaml", "bundle/manifests/windows-machine-config-operator.clusterserviceversion.yaml"]
    {
        let found = features(&yaml(path)?);
        ensure!(found == expected, "{path}: feature annotations {found:#?}, expected {expected:#?}");
    }
    Ok(())
}

#[test]
fn disconnected_the_csv_names_the_image_it_deploys_for_mirroring() -> anyhow::Result<()> {
    let csv = yaml("bundle/manifests/windows-machine-config-operator.clusterserviceversion.yaml")?;
    let related: Vec<&str> = csv["spec"]["relatedImages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|image| image["image"].as_str())
        .collect();
    let deployments = csv["spec"]["install"]["spec"]["deployments"].as_array().context("no deployments")?;
    for deployment in deployments {
        for container in deployment["spec"]["template"]["spec"]["containers"].as_array().into_iter().flatten() {
            let image = container["image"].as_str().unwrap_or_default();
            ensure!(related.contains(&image), "image {image} is not in relatedImages {related:?}");
        }
    }
    let payload = read("payload/manifest.yaml")?;
    ensure!(payload.contains("windows-exporter/windows_exporter.exe"), "the payload no longer ships the binaries");
    Ok(())
}

#[test]
fn proxy_aware_and_tls_profiles_match_what_the_operator_reads_and_what_the_hosts_serve() -> anyhow::Result<()> {
    let cluster_role = read("manifests/base/rbac/cluster.yaml")?;
    ensure!(
        cluster_role.contains("proxies") && cluster_role.contains("apiservers"),
        "the operator may no longer read Proxy and APIServer `cluster`"
    );
    // windows_exporter's web configuration sets no TLS version or cipher: exporter-toolkit's defaults, whatever the
    // cluster's profile says. When it follows the profile, `tls-profiles` may become true.
    let web_config = read("payload/windows-exporter/windows-exporter-webconfig.yaml")?;
    ensure!(
        !web_config.contains("min_version") && !web_config.contains("cipher_suites"),
        "windows_exporter now sets its TLS versions or ciphers: revisit `tls-profiles`"
    );
    Ok(())
}
