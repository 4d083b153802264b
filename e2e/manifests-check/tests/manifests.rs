//! Proof that `manifests/` installs the operator on the e2e control plane and grants its ServiceAccount least
//! privilege: `kubectl apply -k` accepts both overlays (OpenShift, then plain Kubernetes over it), a second apply of
//! each changes nothing, each carries what its flavour needs (service-ca annotation, cluster-monitoring label,
//! monitoring objects; the cluster-settings ConfigMap and node-bootstrapper binding), the plain-Kubernetes overlay
//! renders the monitoring component once an admin adds it, the Deployment's pod passes the namespace's `restricted`
//! Pod Security level, and the operator's token can
//! do exactly what `docs/install.md` says (SelfSubjectAccessReviews for the whole table, real calls for the
//! sensitive rules: CSR approval per signer, TokenRequest per ServiceAccount, Secrets, the API server CA in
//! `kube-root-ca.crt`, Node patch, eviction, `WindowsInstance` status), the optional `cluster-api` component
//! grants exactly the mirror of `windows-user-data` in `openshift-cluster-api` once applied there, and Azure's
//! cloud-node-manager credential as the operator mints and renders it removes the
//! `node.cloudprovider.kubernetes.io/uninitialized` taint from a Node, which the kubelet's node identity cannot
//! (NodeRestriction).
//!
//! A second test applies the plain-Kubernetes overlay alone to a bare control plane (no OpenShift namespace, no
//! OpenShift or monitoring CRD, as `kubectl apply -k` on kubeadm meets it): it applies, a second apply changes
//! nothing, and nothing it renders needs OpenShift or the Prometheus Operator.
//!
//! One control plane serves each test; without the control-plane binaries `ControlPlane::start` fails with a
//! message saying how to build them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DynamicObject, EvictParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind, ObjectMeta};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use serde_json::{Value, json};
use wmco_e2e_harness::{ControlPlane, ControlPlaneOptions, eventually_some};

/// The operator's namespace and ServiceAccount.
const OPERATOR_NAMESPACE: &str = "openshift-windows-machine-config-operator";
const OPERATOR_NAME: &str = "windows-machine-config-operator";
/// The kubelet bootstrap identity.
const BOOTSTRAPPER_NAMESPACE: &str = "openshift-machine-config-operator";
const BOOTSTRAPPER_NAME: &str = "node-bootstrapper";
/// azure-cloud-node-manager's ServiceAccount (operator namespace) and the taint it removes.
const CLOUD_NODE_MANAGER: &str = "cloud-node-manager";
const UNINITIALIZED_TAINT: &str = "node.cloudprovider.kubernetes.io/uninitialized";
/// The two signers the operator may approve, and one it must not.
const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
const USER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

/// One access question and the expected answer: verb, API group, resource (with `/subresource`), namespace and
/// name (empty = none), allowed.
type AccessCase = (&'static str, &'static str, &'static str, &'static str, &'static str, bool);

/// Every rule of the operator's RBAC, each with its nearest forbidden neighbour.
const ACCESS_TABLE: &[AccessCase] = &[
    // CSR approval: only the two kubelet signers.
    ("approve", "certificates.k8s.io", "signers", "", KUBELET_CLIENT_SIGNER, true),
    ("approve", "certificates.k8s.io", "signers", "", KUBELET_SERVING_SIGNER, true),
    ("approve", "certificates.k8s.io", "signers", "", USER_CLIENT_SIGNER, false),
    ("approve", "certificates.k8s.io", "signers", "", "kubernetes.io/legacy-unknown", false),
    ("approve", "certificates.k8s.io", "signers", "", "example.com/any", false),
    ("update", "certificates.k8s.io", "certificatesigningrequests/approval", "", "", true),
    ("patch", "certificates.k8s.io", "certificatesigningrequests/approval", "", "", true),
    ("watch", "certificates.k8s.io", "certificatesigningrequests", "", "", true),
    ("create", "certificates.k8s.io", "certificatesigningrequests", "", "", false),
    ("delete", "certificates.k8s.io", "certificatesigningrequests", "", "", false),
    ("update", "certificates.k8s.io", "certificatesigningrequests/status", "", "", false),
    // Tokens: node-bootstrapper and cloud-node-manager only.
    ("create", "", "serviceaccounts/token", BOOTSTRAPPER_NAMESPACE, BOOTSTRAPPER_NAME, true),
    ("create", "", "serviceaccounts/token", OPERATOR_NAMESPACE, CLOUD_NODE_MANAGER, true),
    ("create", "", "serviceaccounts/token", OPERATOR_NAMESPACE, "default", false),
    ("create", "", "serviceaccounts/token", BOOTSTRAPPER_NAMESPACE, "default", false),
    ("create", "", "serviceaccounts/token", OPERATOR_NAMESPACE, OPERATOR_NAME, false),
    ("create", "", "serviceaccounts/token", "kube-system", "default", false),
    ("create", "", "serviceaccounts", BOOTSTRAPPER_NAMESPACE, "", false),
    // Nodes and drain.
    ("patch", "", "nodes", "", "", true),
    ("delete", "", "nodes", "", "", true),
    ("watch", "", "nodes", "", "", true),
    ("create", "", "nodes", "", "", false),
    ("update", "", "nodes/status", "", "", false),
    ("list", "", "pods", "", "", true),
    ("create", "", "pods/eviction", "default", "", true),
    ("delete", "", "pods", "default", "", false),
    ("create", "", "pods", OPERATOR_NAMESPACE, "", false),
    ("create", "", "pods/exec", "default", "", false),
    ("get", "policy", "poddisruptionbudgets", "default", "", true),
    ("update", "policy", "poddisruptionbudgets", "default", "", false),
    // Secrets: its own namespace (read) and windows-user-data; nothing else.
    ("get", "", "secrets", OPERATOR_NAMESPACE, "cloud-private-key", true),
    ("get", "", "secrets", OPERATOR_NAMESPACE, "windows-machine-config-operator-tls", true),
    ("watch", "", "secrets", OPERATOR_NAMESPACE, "", true),
    ("update", "", "secrets", OPERATOR_NAMESPACE, "cloud-private-key", false),
    ("get", "", "secrets", "default", "", false),
    ("list", "", "secrets", "default", "", false),
    ("list", "", "secrets", "", "", false),
    ("get", "", "secrets", "kube-system", "", false),
    ("get", "", "secrets", BOOTSTRAPPER_NAMESPACE, "node-bootstrapper-token", false),
    ("get", "", "secrets", "openshift-config", "pull-secret", true),
    ("watch", "", "secrets", "openshift-config", "pull-secret", true),
    ("get", "", "secrets", "openshift-config", "etcd-client", false),
    ("list", "", "secrets", "openshift-config", "", false),
    ("create", "", "secrets", "openshift-machine-api", "", true),
    ("update", "", "secrets", "openshift-machine-api", "windows-user-data", true),
    ("get", "", "secrets", "openshift-machine-api", "windows-user-data", true),
    ("get", "", "secrets", "openshift-machine-api", "some-other-secret", false),
    ("list", "", "secrets", "openshift-machine-api", "", false),
    // The mirror of windows-user-data: whether openshift-cluster-api exists (that namespace only, by name); its
    // Secret only with the cluster-api component (CLUSTER_API_TABLE).
    ("get", "", "namespaces", "", CLUSTER_API_NAMESPACE, true),
    ("get", "", "namespaces", "", "default", false),
    ("list", "", "namespaces", "", "", false),
    ("update", "", "namespaces", "", CLUSTER_API_NAMESPACE, false),
    ("get", "", "secrets", CLUSTER_API_NAMESPACE, "windows-user-data", false),
    ("create", "", "secrets", CLUSTER_API_NAMESPACE, "", false),
    // The workers' rendered MachineConfigs: read only.
    ("list", "machineconfiguration.openshift.io", "machineconfigs", "", "", true),
    ("get", "machineconfiguration.openshift.io", "machineconfigs", "", "rendered-worker-abc", true),
    ("update", "machineconfiguration.openshift.io", "machineconfigs", "", "rendered-worker-abc", false),
    // ConfigMaps: its own namespace, read only but for keeping trusted-ca.
    ("watch", "", "configmaps", OPERATOR_NAMESPACE, "", true),
    ("create", "", "configmaps", OPERATOR_NAMESPACE, "", true),
    ("patch", "", "configmaps", OPERATOR_NAMESPACE, "trusted-ca", true),
    ("patch", "", "configmaps", OPERATOR_NAMESPACE, "windows-instances", false),
    ("delete", "", "configmaps", OPERATOR_NAMESPACE, "trusted-ca", false),
    ("create", "", "configmaps", "default", "", false),
    ("get", "", "configmaps", OPERATOR_NAMESPACE, "kube-root-ca.crt", true),
    ("get", "", "configmaps", "default", "kube-root-ca.crt", false),
    ("update", "", "configmaps", OPERATOR_NAMESPACE, "windows-instances", false),
    ("get", "", "configmaps", "kube-system", "", false),
    // Its records.
    ("create", "windowsmachineconfig.openshift.io", "windowsinstances", OPERATOR_NAMESPACE, "", true),
    ("update", "windowsmachineconfig.openshift.io", "windowsinstances/status", OPERATOR_NAMESPACE, "", true),
    ("update", "windowsmachineconfig.openshift.io", "windowsinstances/finalizers", OPERATOR_NAMESPACE, "", true),
    ("update", "windowsmachineconfig.openshift.io", "windowsinstances/status", "default", "", false),
    // Machines.
    ("watch", "machine.openshift.io", "machines", "openshift-machine-api", "", true),
    ("get", "machine.openshift.io", "machines", "openshift-machine-api", "win-a", true),
    ("watch", "machine.openshift.io", "machines", "default", "", false),
    ("delete", "machine.openshift.io", "machines", "openshift-machine-api", "", true),
    ("create", "machine.openshift.io", "machines", "openshift-machine-api", "", false),
    ("list", "machine.openshift.io", "machinesets", "openshift-machine-api", "", true),
    ("update", "machine.openshift.io", "machinesets", "openshift-machine-api", "", false),
    // Events.
    ("create", "", "events", OPERATOR_NAMESPACE, "", true),
    ("create", "events.k8s.io", "events", "default", "", true),
    ("create", "events.k8s.io", "events", "openshift-machine-api", "", true),
    ("delete", "", "events", "openshift-machine-api", "", false),
    ("create", "", "events", "kube-system", "", false),
    // The metrics endpoint's reviews of bearer tokens.
    ("create", "authentication.k8s.io", "tokenreviews", "", "", true),
    ("create", "authorization.k8s.io", "subjectaccessreviews", "", "", true),
    ("create", "authorization.k8s.io", "localsubjectaccessreviews", "kube-system", "", false),
    // Leader election.
    ("create", "coordination.k8s.io", "leases", OPERATOR_NAMESPACE, "", true),
    ("update", "coordination.k8s.io", "leases", OPERATOR_NAMESPACE, OPERATOR_NAME, true),
    ("update", "coordination.k8s.io", "leases", OPERATOR_NAMESPACE, "another-lease", false),
    ("update", "coordination.k8s.io", "leases", "kube-node-lease", "", false),
    // OpenShift cluster facts: read only.
    ("get", "config.openshift.io", "infrastructures", "", "cluster", true),
    ("watch", "config.openshift.io", "imagedigestmirrorsets", "", "", true),
    ("update", "config.openshift.io", "networks", "", "cluster", false),
    ("get", "operator.openshift.io", "networks", "", "cluster", true),
    ("get", "machineconfiguration.openshift.io", "controllerconfigs", "", "machine-config-controller", true),
    ("list", "machineconfiguration.openshift.io", "controllerconfigs", "", "", true),
    ("update", "machineconfiguration.openshift.io", "controllerconfigs", "", "machine-config-controller", false),
    ("delete", "machineconfiguration.openshift.io", "machineconfigs", "", "rendered-worker-abc", false),
    // No way to grow its own rights.
    ("create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", false),
    ("escalate", "rbac.authorization.k8s.io", "roles", OPERATOR_NAMESPACE, "", false),
    ("bind", "rbac.authorization.k8s.io", "clusterroles", "", "", false),
    ("impersonate", "", "users", "", "", false),
    ("*", "*", "*", "", "", false),
];

/// Where the operator mirrors `windows-user-data` (with the cluster-api component).
const CLUSTER_API_NAMESPACE: &str = "openshift-cluster-api";

/// What the cluster-api component adds, each with its nearest forbidden neighbour.
const CLUSTER_API_TABLE: &[AccessCase] = &[
    ("create", "", "secrets", CLUSTER_API_NAMESPACE, "", true),
    ("get", "", "secrets", CLUSTER_API_NAMESPACE, "windows-user-data", true),
    ("patch", "", "secrets", CLUSTER_API_NAMESPACE, "windows-user-data", true),
    ("update", "", "secrets", CLUSTER_API_NAMESPACE, "windows-user-data", true),
    ("get", "", "secrets", CLUSTER_API_NAMESPACE, "some-other-secret", false),
    ("list", "", "secrets", CLUSTER_API_NAMESPACE, "", false),
    ("watch", "", "secrets", CLUSTER_API_NAMESPACE, "windows-user-data", false),
    ("delete", "", "secrets", CLUSTER_API_NAMESPACE, "windows-user-data", false),
    ("create", "", "configmaps", CLUSTER_API_NAMESPACE, "", false),
];

#[tokio::test]
async fn manifests_install_the_operator_with_least_privilege() -> anyhow::Result<()> {
    let control_plane =
        ControlPlane::start(ControlPlaneOptions::default()).await.context("the e2e control plane did not start")?;

    openshift_overlay_applies_and_is_idempotent(&control_plane).await?;
    operator_pod_passes_restricted_pod_security(&control_plane).await?;
    kubernetes_overlay_applies_and_is_idempotent(&control_plane).await?;
    kubernetes_overlay_renders_with_the_monitoring_component(&control_plane).await?;
    operator_pod_passes_restricted_pod_security(&control_plane).await?;

    let operator = control_plane
        .client_for_service_account(OPERATOR_NAMESPACE, OPERATOR_NAME)
        .await
        .context("a client with the operator ServiceAccount's token")?;
    access_matches_the_table(&operator, ACCESS_TABLE).await?;
    approves_only_kubelet_signers(&control_plane, &operator).await?;
    mints_tokens_only_for_node_bootstrapper(&operator).await?;
    cannot_read_secrets_elsewhere(&operator).await?;
    reads_the_api_server_ca(&operator).await?;
    patches_nodes_and_evicts_pods(&control_plane, &operator).await?;
    updates_windows_instance_status(&control_plane, &operator).await?;
    cluster_api_component_grants_the_mirror(&control_plane, &operator).await?;
    cloud_node_manager_removes_the_uninitialized_taint_the_kubelet_cannot(&control_plane, &operator).await?;
    Ok(())
}

#[tokio::test]
async fn kubernetes_overlay_installs_on_a_bare_control_plane() -> anyhow::Result<()> {
    let control_plane = ControlPlane::start(ControlPlaneOptions::default().without_fixtures())
        .await
        .context("the bare e2e control plane did not start")?;
    let kubernetes = overlay("kubernetes");
    let first = kubectl_apply(&control_plane, &kubernetes).await?;
    ensure!(
        first.iter().all(|line| line.ends_with(" created")) && first.contains(&format!("{PLAIN_NEW} created")),
        "first apply of overlays/kubernetes on a bare control plane said {first:#?}"
    );
    let second = kubectl_apply(&control_plane, &kubernetes).await?;
    ensure!(
        second.len() == first.len() && second.iter().all(|line| line.ends_with(" unchanged")),
        "second apply of overlays/kubernetes on a bare control plane was not a no-op: {second:#?}"
    );
    // Nothing that needs OpenShift or the Prometheus Operator, even where kubectl would take it (a Role names a
    // namespace that happens to exist).
    let foreign: Vec<String> = kubectl_kustomize(&control_plane, &kubernetes)
        .await?
        .iter()
        .filter(|object| {
            let api_version = object["apiVersion"].as_str().unwrap_or_default();
            api_version.contains(".openshift.io/")
                || api_version.starts_with("monitoring.coreos.com/")
                || object["metadata"]["namespace"] == "openshift-machine-api"
        })
        .map(|object| format!("{} {}/{}", object["apiVersion"], object["kind"], object["metadata"]["name"]))
        .collect();
    ensure!(foreign.is_empty(), "overlays/kubernetes renders objects of OpenShift or monitoring: {foreign:?}");
    operator_pod_passes_restricted_pod_security(&control_plane).await?;
    Ok(())
}

fn manifests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests")
}

fn overlay(name: &str) -> PathBuf {
    manifests_dir().join("overlays").join(name)
}

/// Runs `kubectl apply -k DIR` as admin; returns stdout's lines as a set.
async fn kubectl_apply(control_plane: &ControlPlane, kustomization: &Path) -> anyhow::Result<BTreeSet<String>> {
    let output = control_plane.kubectl().arg("apply").arg("-k").arg(kustomization).output().await?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    ensure!(
        output.status.success(),
        "kubectl apply -k {} failed: {stdout}{}",
        kustomization.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(stdout.lines().map(str::to_owned).collect())
}

/// `kubectl kustomize DIR`: the rendered objects as JSON values.
async fn kubectl_kustomize(control_plane: &ControlPlane, kustomization: &Path) -> anyhow::Result<Vec<Value>> {
    let output = control_plane.kubectl().arg("kustomize").arg(kustomization).output().await?;
    ensure!(
        output.status.success(),
        "kubectl kustomize {} failed: {}",
        kustomization.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout)?;
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text)?;
    Ok(documents.into_iter().filter(|document| !document.is_null()).collect())
}

/// `kind/name` of each rendered object.
fn kinds_and_names(objects: &[Value]) -> BTreeSet<String> {
    objects
        .iter()
        .map(|object| {
            format!("{}/{}", object["kind"].as_str().unwrap_or("?"), object["metadata"]["name"].as_str().unwrap_or("?"))
        })
        .collect()
}

/// Object names as `kubectl apply` prints them: the base.
const BASE_OBJECTS: &[&str] = &[
    "customresourcedefinition.apiextensions.k8s.io/windowsinstances.windowsmachineconfig.openshift.io",
    "serviceaccount/windows-machine-config-operator",
    "serviceaccount/cloud-node-manager",
    "role.rbac.authorization.k8s.io/windows-machine-config-operator",
    "role.rbac.authorization.k8s.io/windows-machine-config-operator-bootstrap-token",
    "role.rbac.authorization.k8s.io/windows-machine-config-operator-cloud-node-manager-token",
    "role.rbac.authorization.k8s.io/windows-machine-config-operator-events",
    "clusterrole.rbac.authorization.k8s.io/windows-machine-config-operator",
    "clusterrole.rbac.authorization.k8s.io/windows-machine-config-operator-metrics-reader",
    "clusterrole.rbac.authorization.k8s.io/windows-machine-config-operator-cloud-node-manager",
    "rolebinding.rbac.authorization.k8s.io/windows-machine-config-operator",
    "rolebinding.rbac.authorization.k8s.io/windows-machine-config-operator-bootstrap-token",
    "rolebinding.rbac.authorization.k8s.io/windows-machine-config-operator-cloud-node-manager-token",
    "rolebinding.rbac.authorization.k8s.io/windows-machine-config-operator-events",
    "clusterrolebinding.rbac.authorization.k8s.io/windows-machine-config-operator",
    "clusterrolebinding.rbac.authorization.k8s.io/windows-machine-config-operator-cloud-node-manager",
    "service/windows-machine-config-operator-metrics",
    "service/windows-exporter",
    "deployment.apps/windows-machine-config-operator",
];
/// The monitoring component.
const MONITORING_OBJECTS: &[&str] = &[
    "servicemonitor.monitoring.coreos.com/windows-machine-config-operator",
    "servicemonitor.monitoring.coreos.com/windows-exporter",
    "prometheusrule.monitoring.coreos.com/windows-prometheus-k8s-rules",
    "clusterrolebinding.rbac.authorization.k8s.io/windows-machine-config-operator-metrics-reader",
];
/// What only the OpenShift overlay adds.
const OPENSHIFT_OBJECTS: &[&str] = &[
    "role.rbac.authorization.k8s.io/windows-machine-config-operator-machine-api",
    "rolebinding.rbac.authorization.k8s.io/windows-machine-config-operator-machine-api",
    "role.rbac.authorization.k8s.io/prometheus-k8s",
    "rolebinding.rbac.authorization.k8s.io/prometheus-k8s",
    "role.rbac.authorization.k8s.io/windows-machine-config-operator-pull-secret",
    "rolebinding.rbac.authorization.k8s.io/windows-machine-config-operator-pull-secret",
];
/// The operator namespace already exists: the harness installs OpenShift's namespaces as fixtures.
const OPERATOR_NAMESPACE_OBJECT: &str = "namespace/openshift-windows-machine-config-operator";
/// What only the plain-Kubernetes overlay adds; the node-bootstrapper namespace and ServiceAccount already exist as
/// harness fixtures (OpenShift has them).
const PLAIN_NEW: &str =
    "clusterrolebinding.rbac.authorization.k8s.io/windows-machine-config-operator-node-bootstrapper";
const SERVICE_CA_ANNOTATION: &str = "service.beta.openshift.io/serving-cert-secret-name";
const EXPORTER_TLS_SECRET: &str = "windows-machine-config-operator-tls";

fn with_verb(objects: &[&str], verb: &str) -> Vec<String> {
    objects.iter().map(|object| format!("{object} {verb}")).collect()
}

/// The OpenShift overlay: the first apply creates the base, the monitoring objects and Prometheus' Role (the
/// namespace exists and is configured), a second apply changes nothing; then what OpenShift needs is there.
async fn openshift_overlay_applies_and_is_idempotent(control_plane: &ControlPlane) -> anyhow::Result<()> {
    let openshift = overlay("openshift");
    let created: Vec<&str> = [BASE_OBJECTS, MONITORING_OBJECTS, OPENSHIFT_OBJECTS].concat();
    let mut expected: BTreeSet<String> = with_verb(&created, "created").into_iter().collect();
    expected.insert(format!("{OPERATOR_NAMESPACE_OBJECT} configured"));
    let first = kubectl_apply(control_plane, &openshift).await?;
    ensure!(first == expected, "first apply of overlays/openshift said {first:#?}, expected {expected:#?}");
    let mut unchanged: BTreeSet<String> = with_verb(&created, "unchanged").into_iter().collect();
    unchanged.insert(format!("{OPERATOR_NAMESPACE_OBJECT} unchanged"));
    let second = kubectl_apply(control_plane, &openshift).await?;
    ensure!(second == unchanged, "second apply of overlays/openshift was not a no-op: {second:#?}");

    let client = control_plane.admin_client();
    let namespace = Api::<Namespace>::all(client.clone()).get(OPERATOR_NAMESPACE).await?;
    let labels = namespace.metadata.labels.unwrap_or_default();
    ensure!(labels.get("openshift.io/cluster-monitoring").map(String::as_str) == Some("true"), "{labels:?}");
    let exporter = Api::<Service>::namespaced(client.clone(), OPERATOR_NAMESPACE).get("windows-exporter").await?;
    let annotations = exporter.metadata.annotations.unwrap_or_default();
    ensure!(
        annotations.get(SERVICE_CA_ANNOTATION).map(String::as_str) == Some(EXPORTER_TLS_SECRET),
        "the windows-exporter Service asks service-ca for no certificate: {annotations:?}"
    );
    let ports = exporter.spec.and_then(|spec| spec.ports).unwrap_or_default();
    ensure!(ports.iter().map(|port| port.port).collect::<Vec<_>>() == [9182], "{ports:?}");
    let monitor = service_monitor(control_plane, "windows-exporter").await?;
    let tls = &monitor["spec"]["endpoints"][0]["tlsConfig"];
    ensure!(tls["caFile"] == "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt", "{tls}");
    ensure!(tls["serverName"] == "windows-exporter.openshift-windows-machine-config-operator.svc", "{tls}");
    ensure!(tls.get("ca").is_none(), "the service CA replaces the Secret's ca.crt: {tls}");
    let metrics_service = Api::<Service>::namespaced(client.clone(), OPERATOR_NAMESPACE)
        .get("windows-machine-config-operator-metrics")
        .await?;
    let annotations = metrics_service.metadata.annotations.unwrap_or_default();
    ensure!(
        annotations.get(SERVICE_CA_ANNOTATION).map(String::as_str)
            == Some("windows-machine-config-operator-metrics-tls"),
        "the metrics Service asks service-ca for no certificate: {annotations:?}"
    );
    let monitor = service_monitor(control_plane, OPERATOR_NAME).await?;
    let endpoint = &monitor["spec"]["endpoints"][0];
    ensure!(endpoint["scheme"] == "https" && endpoint["port"] == "https", "{endpoint}");
    ensure!(
        endpoint["tlsConfig"]["caFile"] == "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt",
        "{endpoint}"
    );
    ensure!(
        endpoint["tlsConfig"].get("insecureSkipVerify").is_none(),
        "OpenShift verifies the certificate: {endpoint}"
    );
    let reader =
        Api::<ClusterRoleBinding>::all(client.clone()).get("windows-machine-config-operator-metrics-reader").await?;
    let subjects = reader.subjects.unwrap_or_default();
    ensure!(
        subjects.iter().map(|subject| (subject.name.as_str(), subject.namespace.as_deref())).collect::<Vec<_>>()
            == [("prometheus-k8s", Some("openshift-monitoring"))],
        "the platform Prometheus may not read /metrics: {subjects:?}"
    );
    let deployment = Api::<Deployment>::namespaced(client, OPERATOR_NAMESPACE).get(OPERATOR_NAME).await?;
    let pod = deployment.spec.context("the Deployment has no spec")?.template.spec.context("no pod spec")?;
    ensure!(pod.priority_class_name.as_deref() == Some("system-cluster-critical"), "{:?}", pod.priority_class_name);
    ensure!(pod.containers[0].image.as_deref() == Some("quay.io/wmco-rs/wmco:v0.1.0"), "{:?}", pod.containers[0].image);
    Ok(())
}

/// The plain-Kubernetes overlay over the OpenShift one (as an admin switching flavours would): it applies, a second
/// apply changes nothing, the Deployment reads `wmco run`'s two cluster facts from the generated ConfigMap, the
/// node-bootstrapper binding exists and the service-ca annotation is gone.
async fn kubernetes_overlay_applies_and_is_idempotent(control_plane: &ControlPlane) -> anyhow::Result<()> {
    let kubernetes = overlay("kubernetes");
    let first = kubectl_apply(control_plane, &kubernetes).await?;
    ensure!(first.contains(&format!("{PLAIN_NEW} created")), "first apply of overlays/kubernetes said {first:#?}");
    let second = kubectl_apply(control_plane, &kubernetes).await?;
    ensure!(
        !second.is_empty() && second.iter().all(|line| line.ends_with(" unchanged")),
        "second apply of overlays/kubernetes was not a no-op: {second:#?}"
    );
    let client = control_plane.admin_client();
    let deployment = Api::<Deployment>::namespaced(client.clone(), OPERATOR_NAMESPACE).get(OPERATOR_NAME).await?;
    let pod = deployment.spec.context("the Deployment has no spec")?.template.spec.context("no pod spec")?;
    ensure!(pod.priority_class_name.is_none(), "{:?}", pod.priority_class_name);
    let env_from = pod.containers[0].env_from.clone().unwrap_or_default();
    let settings = env_from
        .iter()
        .find_map(|source| source.config_map_ref.as_ref())
        .context("the Deployment takes no environment from a ConfigMap")?;
    ensure!(settings.name.starts_with("wmco-cluster-settings-"), "{settings:?}");
    let config_map = Api::<ConfigMap>::namespaced(client.clone(), OPERATOR_NAMESPACE).get(&settings.name).await?;
    let data = config_map.data.unwrap_or_default();
    let keys: Vec<&str> = data.keys().map(String::as_str).collect();
    ensure!(keys == ["WMCO_API_SERVER_URL", "WMCO_SERVICE_CIDR"], "{data:?}");
    let exporter = Api::<Service>::namespaced(client, OPERATOR_NAMESPACE).get("windows-exporter").await?;
    let annotations = exporter.metadata.annotations.unwrap_or_default();
    ensure!(!annotations.contains_key(SERVICE_CA_ANNOTATION), "{annotations:?}");
    Ok(())
}

/// An admin on a cluster with the Prometheus Operator adds the monitoring component to the plain-Kubernetes overlay
/// (as its kustomization says): the same objects render, plus the monitoring ones, and windows_exporter's
/// certificate is checked against the Secret's `ca.crt` (cert-manager), not OpenShift's service CA.
async fn kubernetes_overlay_renders_with_the_monitoring_component(control_plane: &ControlPlane) -> anyhow::Result<()> {
    let copy = tempfile::tempdir()?;
    copy_tree(&manifests_dir(), &copy.path().join("manifests"))?;
    let kustomization = copy.path().join("manifests/overlays/kubernetes/kustomization.yaml");
    let text = std::fs::read_to_string(&kustomization)?;
    ensure!(!text.contains("\ncomponents:"), "overlays/kubernetes already has components: {text}");
    std::fs::write(&kustomization, format!("{text}components:\n  - ../../components/monitoring\n"))?;
    let plain = kinds_and_names(&kubectl_kustomize(control_plane, &overlay("kubernetes")).await?);
    let objects = kubectl_kustomize(control_plane, &copy.path().join("manifests/overlays/kubernetes")).await?;
    let monitoring: BTreeSet<String> = [
        "ServiceMonitor/windows-machine-config-operator",
        "ServiceMonitor/windows-exporter",
        "PrometheusRule/windows-prometheus-k8s-rules",
        "ClusterRoleBinding/windows-machine-config-operator-metrics-reader",
    ]
    .map(String::from)
    .into();
    let expected: BTreeSet<String> = plain.union(&monitoring).cloned().collect();
    ensure!(kinds_and_names(&objects) == expected, "with the component: {:#?}", kinds_and_names(&objects));
    let exporter_monitor = objects
        .iter()
        .find(|object| object["kind"] == "ServiceMonitor" && object["metadata"]["name"] == "windows-exporter")
        .context("no windows-exporter ServiceMonitor")?;
    let ca = &exporter_monitor["spec"]["endpoints"][0]["tlsConfig"]["ca"]["secret"];
    ensure!(ca["name"] == EXPORTER_TLS_SECRET && ca["key"] == "ca.crt", "{exporter_monitor}");
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A ServiceMonitor in the operator namespace, as JSON.
async fn service_monitor(control_plane: &ControlPlane, name: &str) -> anyhow::Result<Value> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("monitoring.coreos.com", "v1", "ServiceMonitor"),
        "servicemonitors",
    );
    let monitors: Api<DynamicObject> =
        Api::namespaced_with(control_plane.admin_client(), OPERATOR_NAMESPACE, &resource);
    Ok(serde_json::to_value(monitors.get(name).await?)?)
}

/// The control plane runs no Deployment controller, so the pod is built from the Deployment's template and created
/// with a server-side dry run: Pod Security admission still judges it. A privileged twin proves the namespace
/// really enforces `restricted`.
async fn operator_pod_passes_restricted_pod_security(control_plane: &ControlPlane) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(control_plane.admin_client(), OPERATOR_NAMESPACE);
    let deployment = deployments.get(OPERATOR_NAME).await?;
    let spec = deployment.spec.context("the Deployment has no spec")?;
    ensure!(spec.replicas == Some(2), "replicas: {:?}", spec.replicas);
    let template = spec.template;
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("operator-dry-run".to_owned()),
            labels: template.metadata.and_then(|metadata| metadata.labels),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    };
    let pods: Api<Pod> = Api::namespaced(control_plane.admin_client(), OPERATOR_NAMESPACE);
    let dry_run = PostParams { dry_run: true, ..PostParams::default() };
    pods.create(&dry_run, &pod)
        .await
        .context("the operator pod was refused in its namespace (Pod Security `restricted`?)")?;

    let mut privileged = pod.clone();
    let container = privileged
        .spec
        .as_mut()
        .and_then(|spec| spec.containers.first_mut())
        .context("the pod template has no container")?;
    if let Some(security_context) = container.security_context.as_mut() {
        security_context.allow_privilege_escalation = Some(true);
    }
    match pods.create(&dry_run, &privileged).await {
        Err(kube::Error::Api(status)) if status.code == 403 && status.message.contains("restricted") => Ok(()),
        other => bail!("a pod allowing privilege escalation should be refused by Pod Security, got {other:?}"),
    }
}

async fn access_matches_the_table(operator: &kube::Client, table: &[AccessCase]) -> anyhow::Result<()> {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(operator.clone());
    let mut mismatches = Vec::new();
    for &(verb, group, resource, namespace, name, expected) in table {
        let (resource_name, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.to_owned()),
                    group: Some(group.to_owned()),
                    resource: Some(resource_name.to_owned()),
                    subresource: non_empty(subresource),
                    namespace: non_empty(namespace),
                    name: non_empty(name),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let answer = reviews.create(&PostParams::default(), &review).await?;
        let allowed = answer.status.is_some_and(|status| status.allowed);
        if allowed != expected {
            let scope = if namespace.is_empty() { "cluster".to_owned() } else { format!("namespace {namespace}") };
            mismatches.push(format!(
                "{verb} {group}/{resource} name {name:?} in {scope}: allowed={allowed}, expected {expected}"
            ));
        }
    }
    ensure!(mismatches.is_empty(), "the operator's access differs from docs/install.md:\n{}", mismatches.join("\n"));
    Ok(())
}

fn non_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_owned())
}

/// A kubelet-shaped CSR (fresh P-256 key, `CN=system:node:<node>`, `O=system:nodes`) for `signer`.
fn kubelet_csr(node_name: &str, signer: &str, usages: &[&str]) -> anyhow::Result<CertificateSigningRequest> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, format!("system:node:{node_name}"));
    subject.push(DnType::OrganizationName, "system:nodes");
    params.distinguished_name = subject;
    let request_pem = params.serialize_request(&key)?.pem()?;
    Ok(CertificateSigningRequest {
        metadata: ObjectMeta { generate_name: Some("manifests-check-".to_owned()), ..ObjectMeta::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request_pem.into_bytes()),
            signer_name: signer.to_owned(),
            usages: Some(usages.iter().map(|usage| (*usage).to_owned()).collect()),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    })
}

fn approval() -> serde_json::Value {
    json!({"status": {"conditions": [{
        "type": "Approved",
        "status": "True",
        "reason": "ManifestsCheck",
        "message": "approved by the manifests least-privilege test",
    }]}})
}

async fn approves_only_kubelet_signers(control_plane: &ControlPlane, operator: &kube::Client) -> anyhow::Result<()> {
    let as_admin: Api<CertificateSigningRequest> = Api::all(control_plane.admin_client());
    let as_operator: Api<CertificateSigningRequest> = Api::all(operator.clone());
    let cases = [
        (KUBELET_CLIENT_SIGNER, &["digital signature", "client auth"][..], true),
        (KUBELET_SERVING_SIGNER, &["digital signature", "server auth"][..], true),
        (USER_CLIENT_SIGNER, &["digital signature", "client auth"][..], false),
    ];
    for (signer, usages, may_approve) in cases {
        let created = as_admin.create(&PostParams::default(), &kubelet_csr("win-check", signer, usages)?).await?;
        let name = created.metadata.name.context("the created CSR has no name")?;
        let outcome = as_operator.patch_approval(&name, &PatchParams::default(), &Patch::Merge(approval())).await;
        match (may_approve, outcome) {
            (true, Ok(approved)) => {
                let conditions = approved.status.and_then(|status| status.conditions).unwrap_or_default();
                ensure!(
                    conditions.iter().any(|condition| condition.type_ == "Approved" && condition.status == "True"),
                    "CSR {name} for {signer}: approval returned without an Approved condition: {conditions:?}"
                );
            }
            (false, Err(kube::Error::Api(status))) if status.code == 403 => {}
            (true, Err(error)) => bail!("the operator could not approve CSR {name} for {signer}: {error}"),
            (false, other) => bail!("approving CSR {name} for {signer} should be forbidden, got {other:?}"),
        }
    }
    Ok(())
}

fn token_request() -> TokenRequest {
    TokenRequest {
        spec: TokenRequestSpec { expiration_seconds: Some(600), ..TokenRequestSpec::default() },
        ..TokenRequest::default()
    }
}

async fn mints_tokens_only_for_node_bootstrapper(operator: &kube::Client) -> anyhow::Result<()> {
    let service_accounts: Api<ServiceAccount> = Api::namespaced(operator.clone(), BOOTSTRAPPER_NAMESPACE);
    let issued = service_accounts
        .create_token_request(BOOTSTRAPPER_NAME, &PostParams::default(), &token_request())
        .await
        .context("the operator could not mint a node-bootstrapper token")?;
    ensure!(
        issued.status.is_some_and(|status| !status.token.is_empty()),
        "the node-bootstrapper TokenRequest returned no token"
    );
    match service_accounts.create_token_request("default", &PostParams::default(), &token_request()).await {
        Err(kube::Error::Api(status)) if status.code == 403 => Ok(()),
        other => bail!(
            "minting a token for {BOOTSTRAPPER_NAMESPACE}/default should be forbidden, got {}",
            other.map(|_| "a token".to_owned()).unwrap_or_else(|error| error.to_string())
        ),
    }
}

async fn cannot_read_secrets_elsewhere(operator: &kube::Client) -> anyhow::Result<()> {
    let secrets: Api<Secret> = Api::namespaced(operator.clone(), "default");
    match secrets.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) if status.code == 403 => {}
        other => bail!("listing Secrets in default should be forbidden, got {}", describe(other)),
    }
    let own: Api<Secret> = Api::namespaced(operator.clone(), OPERATOR_NAMESPACE);
    own.list(&ListParams::default()).await.context("the operator could not list Secrets in its namespace")?;
    Ok(())
}

/// The operator reads the API server CA from `kube-root-ca.crt`, which kube-controller-manager publishes in its
/// namespace (the apply created the namespace, so the ConfigMap may take a moment to appear).
async fn reads_the_api_server_ca(operator: &kube::Client) -> anyhow::Result<()> {
    let config_maps: Api<ConfigMap> = Api::namespaced(operator.clone(), OPERATOR_NAMESPACE);
    let appeared = format!("ConfigMap {OPERATOR_NAMESPACE}/kube-root-ca.crt");
    let config_map = eventually_some(&appeared, std::time::Duration::from_secs(10), || async {
        config_maps.get_opt("kube-root-ca.crt").await.context("the operator could not read kube-root-ca.crt")
    })
    .await?;
    let ca = config_map.data.unwrap_or_default().remove("ca.crt").unwrap_or_default();
    ensure!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "kube-root-ca.crt holds no certificate: {ca:?}");
    Ok(())
}

fn describe<T>(outcome: Result<T, kube::Error>) -> String {
    match outcome {
        Ok(_) => "success".to_owned(),
        Err(error) => error.to_string(),
    }
}

async fn patches_nodes_and_evicts_pods(control_plane: &ControlPlane, operator: &kube::Client) -> anyhow::Result<()> {
    let admin_nodes: Api<Node> = Api::all(control_plane.admin_client());
    let node = Node {
        metadata: ObjectMeta { name: Some("manifests-check-node".to_owned()), ..ObjectMeta::default() },
        ..Node::default()
    };
    admin_nodes.create(&PostParams::default(), &node).await?;
    let operator_nodes: Api<Node> = Api::all(operator.clone());
    let patched = operator_nodes
        .patch(
            "manifests-check-node",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"windowsmachineconfig.openshift.io/byoh": "true"}}})),
        )
        .await
        .context("the operator could not patch a Node")?;
    let labels = patched.metadata.labels.unwrap_or_default();
    ensure!(
        labels.get("windowsmachineconfig.openshift.io/byoh").map(String::as_str) == Some("true"),
        "the Node label did not stick: {labels:?}"
    );

    let admin_pods: Api<Pod> = Api::namespaced(control_plane.admin_client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "manifests-check-victim"},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
    }))?;
    admin_pods.create(&PostParams::default(), &pod).await?;
    let operator_pods: Api<Pod> = Api::namespaced(operator.clone(), "default");
    operator_pods
        .evict("manifests-check-victim", &EvictParams::default())
        .await
        .context("the operator could not evict a pod")?;
    match operator_pods.delete("manifests-check-victim", &Default::default()).await {
        Err(kube::Error::Api(status)) if status.code == 403 => Ok(()),
        other => bail!("deleting a pod directly should be forbidden, got {}", describe(other)),
    }
}

async fn updates_windows_instance_status(control_plane: &ControlPlane, operator: &kube::Client) -> anyhow::Result<()> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("windowsmachineconfig.openshift.io", "v1alpha1", "WindowsInstance"),
        "windowsinstances",
    );
    let instance: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1",
        "kind": "WindowsInstance",
        "metadata": {"name": "manifests-check", "namespace": OPERATOR_NAMESPACE},
        "spec": {"address": "192.0.2.10", "origin": "Byoh", "username": "Administrator"},
    }))?;
    let as_admin: Api<DynamicObject> =
        Api::namespaced_with(control_plane.admin_client(), OPERATOR_NAMESPACE, &resource);
    as_admin.create(&PostParams::default(), &instance).await.context("create a WindowsInstance as admin")?;

    let as_operator: Api<DynamicObject> = Api::namespaced_with(operator.clone(), OPERATOR_NAMESPACE, &resource);
    let updated = as_operator
        .patch_status(
            "manifests-check",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Pending"}})),
        )
        .await
        .context("the operator could not update WindowsInstance status")?;
    let phase = updated.data.pointer("/status/phase").and_then(serde_json::Value::as_str);
    ensure!(phase == Some("Pending"), "status.phase after the operator's update: {phase:?}");
    Ok(())
}

/// An admin on a cluster with namespace `openshift-cluster-api` includes the cluster-api component: applied alone
/// (a kustomization naming only the component), it creates the Role and RoleBinding there, applies again unchanged,
/// and lets the operator keep exactly Secret `windows-user-data` there (a real server-side apply and read, as the
/// operator does them, and the access table).
async fn cluster_api_component_grants_the_mirror(
    control_plane: &ControlPlane,
    operator: &kube::Client,
) -> anyhow::Result<()> {
    let namespace = Namespace {
        metadata: ObjectMeta { name: Some(CLUSTER_API_NAMESPACE.to_owned()), ..ObjectMeta::default() },
        ..Namespace::default()
    };
    Api::<Namespace>::all(control_plane.admin_client()).create(&PostParams::default(), &namespace).await?;
    let copy = tempfile::tempdir()?;
    copy_tree(&manifests_dir(), &copy.path().join("manifests"))?;
    let kustomization = copy.path().join("cluster-api-only");
    std::fs::create_dir_all(&kustomization)?;
    std::fs::write(
        kustomization.join("kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\ncomponents:\n  - ../manifests/components/cluster-api\n",
    )?;
    let objects = [
        "role.rbac.authorization.k8s.io/windows-machine-config-operator-cluster-api",
        "rolebinding.rbac.authorization.k8s.io/windows-machine-config-operator-cluster-api",
    ];
    let first = kubectl_apply(control_plane, &kustomization).await?;
    let expected: BTreeSet<String> = with_verb(&objects, "created").into_iter().collect();
    ensure!(first == expected, "the cluster-api component applied {first:#?}");
    let second = kubectl_apply(control_plane, &kustomization).await?;
    let unchanged: BTreeSet<String> = with_verb(&objects, "unchanged").into_iter().collect();
    ensure!(second == unchanged, "a second apply of the cluster-api component was not a no-op: {second:#?}");
    access_matches_the_table(operator, CLUSTER_API_TABLE).await?;

    let secrets: Api<Secret> = Api::namespaced(operator.clone(), CLUSTER_API_NAMESPACE);
    let mirror: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "windows-user-data", "namespace": CLUSTER_API_NAMESPACE},
        "data": {"userData": "PHBvd2Vyc2hlbGw+"},
    }))?;
    secrets
        .patch("windows-user-data", &PatchParams::apply("wmco").force(), &Patch::Apply(&mirror))
        .await
        .context("the operator could not apply the mirrored windows-user-data")?;
    secrets.get("windows-user-data").await.context("the operator could not read the mirrored windows-user-data")?;
    Ok(())
}

/// Azure's cloud-node-manager credential: a Node registered by its kubelet (`system:node:<name>`) with the
/// uninitialized taint, as a kubelet with `--cloud-provider=external` registers it. The kubelet may not remove the
/// taint (NodeRestriction); the operator mints a token of ServiceAccount `cloud-node-manager` through the product's
/// TokenRequest client, renders the host's kubeconfig and token file with the product's renderer, and a client
/// built from exactly those files (moved off `C:\k`) initializes the Node as upstream cloud-node-manager does:
/// provider ID, zone label, addresses, the taint removed, an Event. It may not delete the Node or read Secrets.
async fn cloud_node_manager_removes_the_uninitialized_taint_the_kubelet_cannot(
    control_plane: &ControlPlane,
    operator: &kube::Client,
) -> anyhow::Result<()> {
    use wmco_cluster_client::ServiceAccountTokens as _;
    const NODE: &str = "azure-win-1";
    let kubelet_certificate =
        control_plane.issue_client_certificate(&format!("system:node:{NODE}"), &["system:nodes"])?;
    let kubelet = control_plane.client_for_certificate("kubelet", &kubelet_certificate).await?;
    let taint = json!({"key": UNINITIALIZED_TAINT, "value": "true", "effect": "NoSchedule"});
    let node: Node = serde_json::from_value(json!({"metadata": {"name": NODE}, "spec": {"taints": [taint]}}))?;
    Api::<Node>::all(kubelet.clone()).create(&PostParams::default(), &node).await.context("the kubelet registers")?;
    let untaint = Patch::Merge(json!({"spec": {"taints": []}}));
    match Api::<Node>::all(kubelet).patch(NODE, &PatchParams::default(), &untaint).await {
        Err(kube::Error::Api(status)) if status.code == 403 && status.message.contains("taints") => {}
        other => {
            bail!("the kubelet removing its own taint should be refused by NodeRestriction, got {}", describe(other))
        }
    }

    let spec = wmco_cluster_client::TokenRequestSpec {
        audiences: Vec::new(),
        lifetime: std::time::Duration::from_secs(24 * 3600),
    };
    let minted = wmco_cluster_client::KubeServiceAccountTokens::new(operator.clone())
        .request(OPERATOR_NAMESPACE, CLOUD_NODE_MANAGER, &spec)
        .await
        .context("the operator could not mint a cloud-node-manager token")?;
    let token = wmco_payload_manifest::render::SecretToken::new(minted.secret());
    let files = wmco_payload_manifest::render::cloud_node_manager_files(control_plane.api_server_url(), &token)?;
    let (manager, _host_files) = client_from_host_files(control_plane, &files).await?;

    let nodes: Api<Node> = Api::all(manager.clone());
    let initialize = Patch::Merge(json!({
        "metadata": {"labels": {"topology.kubernetes.io/zone": "eastus-1"}},
        "spec": {"providerID": format!("azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/{NODE}"), "taints": []},
    }));
    nodes.patch(NODE, &PatchParams::default(), &initialize).await.context("cloud-node-manager initializes its Node")?;
    let addresses = Patch::Merge(json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.7"}]}}));
    nodes.patch_status(NODE, &PatchParams::default(), &addresses).await.context("cloud-node-manager sets addresses")?;
    let event: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"generateName": "azure-win-1."},
        "involvedObject": {"kind": "Node", "name": NODE},
        "reason": "Synced", "message": "Node synced successfully", "type": "Normal",
    }))?;
    Api::namespaced(manager.clone(), "default").create(&PostParams::default(), &event).await.context("an Event")?;

    let initialized = Api::<Node>::all(control_plane.admin_client()).get(NODE).await?;
    let spec = initialized.spec.unwrap_or_default();
    ensure!(spec.taints.unwrap_or_default().is_empty(), "the uninitialized taint is still there");
    ensure!(spec.provider_id.is_some_and(|id| id.starts_with("azure:///")), "no provider ID");
    match nodes.delete(NODE, &Default::default()).await {
        Err(kube::Error::Api(status)) if status.code == 403 => {}
        other => bail!("cloud-node-manager deleting a Node should be forbidden, got {}", describe(other)),
    }
    match Api::<Secret>::namespaced(manager, OPERATOR_NAMESPACE).list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) if status.code == 403 => Ok(()),
        other => bail!("cloud-node-manager listing Secrets should be forbidden, got {}", describe(other)),
    }
}

/// A client from cloud-node-manager's kubeconfig and token file as rendered for a host, with the host's paths
/// (`C:\k\bootstrap-ca.crt`, `C:\k\cloud-node-manager-token`) moved into a temporary directory holding the cluster
/// CA and the token file's bytes (kept while the returned directory lives), so the client reads its token from the
/// file as azure-cloud-node-manager does.
async fn client_from_host_files(
    control_plane: &ControlPlane,
    files: &[wmco_payload_manifest::render::RenderedFile],
) -> anyhow::Result<(kube::Client, tempfile::TempDir)> {
    use wmco_payload_manifest::render::destinations::{
        BOOTSTRAP_CA, CLOUD_NODE_MANAGER_KUBECONFIG, CLOUD_NODE_MANAGER_TOKEN,
    };
    let directory = tempfile::tempdir()?;
    let file = |path: &str| files.iter().find(|file| file.destination().as_str() == path).context(path.to_owned());
    let ca = directory.path().join("bootstrap-ca.crt");
    std::fs::write(&ca, control_plane.ca_certificate_pem())?;
    let token = directory.path().join("cloud-node-manager-token");
    std::fs::write(&token, file(CLOUD_NODE_MANAGER_TOKEN)?.bytes())?;
    let text = std::str::from_utf8(file(CLOUD_NODE_MANAGER_KUBECONFIG)?.bytes())?
        .replace(BOOTSTRAP_CA, &ca.display().to_string())
        .replace(CLOUD_NODE_MANAGER_TOKEN, &token.display().to_string());
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default()).await?;
    Ok((kube::Client::try_from(config)?, directory))
}
