//! The real implementations against the e2e control plane (a real kube-apiserver, etcd and kube-controller-manager):
//! the generated CRD installs and validates objects; `WindowsInstance` status server-side apply with field manager
//! `wmco` is idempotent and a second manager conflicts; cordon, uncordon and Node metadata patches; a drain blocked
//! by a PodDisruptionBudget over Ready pods that finishes once the budget allows it; a CSR approval round trip (with
//! a stale read refused) ending in a signed certificate; a TokenRequest for node-bootstrapper whose token works;
//! cluster facts from the OpenShift fixtures.
//!
//! One control plane serves every scenario (libtest-mimic starts it once); each scenario uses its own namespace and
//! its own cluster-scoped names.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{Value, json};
use wmco_cluster_client::fake::objects;
use wmco_cluster_client::names::{
    KUBELET_CLIENT_SIGNER, NODE_BOOTSTRAPPER_NAMESPACE, NODE_BOOTSTRAPPER_SERVICE_ACCOUNT,
};
use wmco_cluster_client::types::{
    InstanceOrigin, InstancePhase, WindowsInstance, WindowsInstanceSpec, WindowsInstanceStatus,
};
use wmco_cluster_client::{
    BlockReason, BlockedPod, ClusterFactsSource as _, ConfigMapEntry, ConfigMaps as _, CsrDecision, Csrs as _,
    DrainOptions, Drainer as _, Error, InstanceRecords as _, KubeConfigMaps, KubeCsrs, KubeDrainer,
    KubeInstanceRecords, KubeNodes, KubeServiceAccountTokens, NodeMetadataPatch, Nodes as _, OpenShiftFacts, Platform,
    PlatformName, ServiceAccountTokens as _, SkipReason, SkippedPod, TokenRequestSpec,
};
use wmco_e2e_harness::{ControlPlane, ControlPlaneOptions, SERVICE_CIDR, eventually};

/// How long one scenario may take.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(300);
/// How long to wait for a controller of the control plane to react (generous: CI machines can be very busy).
const REACTION_TIMEOUT: Duration = Duration::from_secs(120);
/// The committed CRD, as `kubectl apply` would read it.
const CRD_YAML: &str = include_str!("../../../manifests/base/crds/windowsinstances.yaml");

type Scenario = fn(Arc<ControlPlane>) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

const SCENARIOS: &[(&str, Scenario)] = &[
    ("generated_crd_validates_windows_instances", |cp| Box::pin(crd_validates_objects(cp))),
    ("status_apply_is_idempotent_and_a_second_manager_conflicts", |cp| Box::pin(status_apply_conflicts(cp))),
    ("status_writes_never_drop_the_approved_bootstrap_key", |cp| Box::pin(bootstrap_key_survives_status_writes(cp))),
    ("cordon_uncordon_and_metadata_patches_reach_the_node", |cp| Box::pin(cordon_and_patch(cp))),
    ("config_map_entries_are_set_and_removed_one_at_a_time", |cp| Box::pin(config_map_entries(cp))),
    ("drain_is_blocked_by_the_budget_then_finishes_once_it_allows", |cp| Box::pin(drain_with_budget(cp))),
    ("csr_approval_round_trip_refuses_a_stale_read_and_ends_signed", |cp| Box::pin(csr_round_trip(cp))),
    ("node_bootstrapper_token_is_short_lived_and_works", |cp| Box::pin(bootstrapper_token(cp))),
    ("cluster_facts_come_from_the_openshift_fixtures", |cp| Box::pin(cluster_facts(cp))),
];

fn main() -> ExitCode {
    let arguments = Arguments::from_args();
    if arguments.list {
        let trials = SCENARIOS.iter().map(|(name, _)| Trial::test(*name, || Ok(()))).collect();
        return libtest_mimic::run(&arguments, trials).exit_code();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("could not start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let started = runtime.block_on(async {
        let control_plane = ControlPlane::start(ControlPlaneOptions::default()).await?;
        install_crd(&control_plane).await?;
        anyhow::Ok(control_plane)
    });
    let control_plane = match started {
        Ok(control_plane) => Arc::new(control_plane),
        Err(error) => {
            eprintln!("the e2e control plane did not start: {error:#}");
            return ExitCode::FAILURE;
        }
    };
    let trials = SCENARIOS
        .iter()
        .map(|&(name, scenario)| {
            let control_plane = Arc::clone(&control_plane);
            let handle = runtime.handle().clone();
            Trial::test(name, move || {
                let outcome = handle
                    .block_on(async move { tokio::time::timeout(SCENARIO_TIMEOUT, scenario(control_plane)).await });
                match outcome {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(error)) => Err(Failed::from(format!("{error:?}"))),
                    Err(_) => Err(Failed::from(format!("did not finish within {SCENARIO_TIMEOUT:?}"))),
                }
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&arguments, trials);
    drop(control_plane);
    conclusion.exit_code()
}

// ---- helpers ----------------------------------------------------------------------------------------------------

/// Applies the committed `WindowsInstance` CRD and waits until it is established.
async fn install_crd(control_plane: &ControlPlane) -> anyhow::Result<()> {
    let crd: CustomResourceDefinition = serde_saphyr::from_str(CRD_YAML).context("parse the committed CRD")?;
    let crds: Api<CustomResourceDefinition> = Api::all(control_plane.admin_client());
    let name = crd.metadata.name.clone().context("CRD without a name")?;
    crds.patch(&name, &PatchParams::apply("wmco-e2e").force(), &Patch::Apply(&crd)).await.context("apply the CRD")?;
    eventually("CRD established", REACTION_TIMEOUT, || async {
        let current = crds.get(&name).await?;
        let established = current.status.and_then(|status| status.conditions).is_some_and(|conditions| {
            conditions.iter().any(|condition| condition.type_ == "Established" && condition.status == "True")
        });
        ensure!(established, "not established yet");
        Ok(())
    })
    .await
}

/// Creates a namespace and waits for its `default` ServiceAccount (pods need it).
async fn namespace(control_plane: &ControlPlane, name: &str) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(control_plane.admin_client());
    let object = Namespace { metadata: named(name), ..Namespace::default() };
    namespaces.create(&PostParams::default(), &object).await.with_context(|| format!("create namespace {name}"))?;
    let service_accounts: Api<ServiceAccount> = Api::namespaced(control_plane.admin_client(), name);
    eventually(&format!("ServiceAccount {name}/default"), REACTION_TIMEOUT, || async {
        service_accounts.get_opt("default").await?.map(|_| ()).ok_or_else(|| anyhow!("not created yet"))
    })
    .await
}

fn named(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() }
}

/// A Windows Node object with one InternalIP, created as admin.
async fn create_node(control_plane: &ControlPlane, name: &str, address: &str) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(control_plane.admin_client());
    let node = objects::windows_node(name).build();
    nodes.create(&PostParams::default(), &node).await.with_context(|| format!("create Node {name}"))?;
    let status = json!({"status": {"addresses": [{"type": "InternalIP", "address": address}]}});
    nodes.patch_status(name, &PatchParams::default(), &Patch::Merge(&status)).await?;
    Ok(())
}

fn instance(name: &str, namespace: &str, address: &str) -> WindowsInstance {
    let mut instance = WindowsInstance::new(
        name,
        WindowsInstanceSpec {
            address: address.to_owned(),
            username: "Administrator".to_owned(),
            origin: InstanceOrigin::Byoh,
            machine_name: None,
            expected_node_name: None,
        },
    );
    instance.metadata.namespace = Some(namespace.to_owned());
    instance
}

fn status_code<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> anyhow::Result<u16> {
    match result {
        Err(kube::Error::Api(status)) => Ok(status.code),
        Err(other) => bail!("expected an API refusal, got {other}"),
        Ok(value) => bail!("expected an API refusal, the call succeeded: {value:?}"),
    }
}

// ---- scenarios --------------------------------------------------------------------------------------------------

async fn crd_validates_objects(control_plane: Arc<ControlPlane>) -> anyhow::Result<()> {
    namespace(&control_plane, "cc-crd").await?;
    let raw: Api<kube::api::DynamicObject> = Api::namespaced_with(
        control_plane.admin_client(),
        "cc-crd",
        &kube::api::ApiResource::erase::<WindowsInstance>(&()),
    );
    let without_address: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
        "metadata": {"name": "no-address"},
        "spec": {"username": "Administrator", "origin": "Byoh"},
    }))?;
    ensure!(
        status_code(raw.create(&PostParams::default(), &without_address).await)? == 422,
        "missing address accepted"
    );
    let bad_origin: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
        "metadata": {"name": "bad-origin"},
        "spec": {"address": "10.0.0.5", "username": "Administrator", "origin": "Cloud"},
    }))?;
    ensure!(status_code(raw.create(&PostParams::default(), &bad_origin).await)? == 422, "unknown origin accepted");

    let records = KubeInstanceRecords::new(control_plane.admin_client());
    let created = records.apply(&instance("good", "cc-crd", "10.0.0.5")).await?;
    ensure!(
        created.metadata.finalizers == Some(vec!["windowsmachineconfig.openshift.io/deconfigure".to_owned()]),
        "finalizers {:?}",
        created.metadata.finalizers
    );
    let bad_phase = json!({
        "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
        "status": {"phase": "Exploded"},
    });
    let code = status_code(raw.patch_status("good", &PatchParams::apply("wmco-e2e"), &Patch::Apply(&bad_phase)).await)?;
    ensure!(code == 422, "unknown phase answered {code}");
    let condition = |status: &str, reason: &str| {
        json!({
            "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
            "status": {"conditions": [{"type": "Ready", "status": status, "reason": reason, "message": "m",
                "lastTransitionTime": "2026-11-26T10:00:00Z", "observedGeneration": 1}]},
        })
    };
    for (status, reason, expected) in [("Maybe", "Configured", 422), ("True", "not camel case", 422), ("True", "", 422)]
    {
        let patch = condition(status, reason);
        let code = status_code(raw.patch_status("good", &PatchParams::apply("wmco-e2e"), &Patch::Apply(&patch)).await)?;
        ensure!(code == expected, "condition status {status:?} reason {reason:?} answered {code}");
    }
    raw.patch_status("good", &PatchParams::apply("wmco-e2e"), &Patch::Apply(&condition("True", "Configured")))
        .await
        .context("a valid Ready condition")?;

    records.delete("cc-crd", "good").await?;
    let deleting = records.get("cc-crd", "good").await?.context("record gone before its finalizer was released")?;
    ensure!(deleting.metadata.deletion_timestamp.is_some(), "record not marked for deletion");
    records.release_finalizer(&deleting).await?;
    eventually("record gone", REACTION_TIMEOUT, || async {
        match records.get("cc-crd", "good").await? {
            None => Ok(()),
            Some(_) => Err(anyhow!("still there")),
        }
    })
    .await
}

async fn status_apply_conflicts(control_plane: Arc<ControlPlane>) -> anyhow::Result<()> {
    namespace(&control_plane, "cc-ssa").await?;
    let records = KubeInstanceRecords::new(control_plane.admin_client());
    records.apply(&instance("byoh-10-0-0-7", "cc-ssa", "10.0.0.7")).await?;
    let configuring = WindowsInstanceStatus {
        address: Some("10.0.0.7".into()),
        resolved_ipv4: Some("10.0.0.7".parse()?),
        phase: Some(InstancePhase::Configuring),
        ..WindowsInstanceStatus::default()
    };
    records.apply_status("cc-ssa", "byoh-10-0-0-7", &configuring).await.context("first status apply")?;
    let ready = WindowsInstanceStatus {
        phase: Some(InstancePhase::Ready),
        expected_node_name: Some("win-7".into()),
        configured_version: Some("0.1.0".into()),
        ..configuring.clone()
    };
    let stored = records.apply_status("cc-ssa", "byoh-10-0-0-7", &ready).await.context("second status apply")?;
    ensure!(stored.status.as_ref() == Some(&ready), "status after two applies: {:?}", stored.status);

    let raw: Api<WindowsInstance> = Api::namespaced(control_plane.admin_client(), "cc-ssa");
    let intruder = json!({
        "apiVersion": "windowsmachineconfig.openshift.io/v1alpha1", "kind": "WindowsInstance",
        "status": {"phase": "Failed"},
    });
    let code = status_code(
        raw.patch_status("byoh-10-0-0-7", &PatchParams::apply("intruder"), &Patch::Apply(&intruder)).await,
    )?;
    ensure!(code == 409, "a second field manager answered {code}, expected a conflict");
    let after = records.get("cc-ssa", "byoh-10-0-0-7").await?.context("record vanished")?;
    ensure!(
        after.status.and_then(|status| status.phase) == Some(InstancePhase::Ready),
        "the intruder changed the phase"
    );
    Ok(())
}

/// The flow's status writes carry no bootstrap key; the CSR controller's key, applied under its own field manager,
/// survives them, and only its own empty apply clears it. A key written on condition of the record as read is
/// refused once the record changed.
async fn bootstrap_key_survives_status_writes(control_plane: Arc<ControlPlane>) -> anyhow::Result<()> {
    namespace(&control_plane, "cc-key").await?;
    let records = KubeInstanceRecords::new(control_plane.admin_client());
    records.apply(&instance("byoh-10-0-0-8", "cc-key", "10.0.0.8")).await?;
    let waiting = WindowsInstanceStatus {
        address: Some("10.0.0.8".into()),
        phase: Some(InstancePhase::WaitingForNode),
        ..WindowsInstanceStatus::default()
    };
    records.apply_status("cc-key", "byoh-10-0-0-8", &waiting).await.context("flow status")?;
    records.apply_bootstrap_key("cc-key", "byoh-10-0-0-8", Some("ab12")).await.context("record the key")?;
    // The flow's working copy was read before the key was recorded: its next writes hold no key.
    let ready = WindowsInstanceStatus { phase: Some(InstancePhase::Ready), ..waiting.clone() };
    let stored = records.apply_status("cc-key", "byoh-10-0-0-8", &ready).await.context("flow status again")?;
    let status = stored.status.context("no status")?;
    ensure!(status.approved_bootstrap_key_sha256.as_deref() == Some("ab12"), "key dropped: {status:?}");
    ensure!(status.phase == Some(InstancePhase::Ready), "phase not written: {status:?}");
    let stale = WindowsInstanceStatus { approved_bootstrap_key_sha256: Some("stale".into()), ..ready };
    let stored = records.apply_status("cc-key", "byoh-10-0-0-8", &stale).await.context("status with a stale key")?;
    let key = stored.status.and_then(|status| status.approved_bootstrap_key_sha256);
    ensure!(key.as_deref() == Some("ab12"), "a status write changed the key: {key:?}");
    let cleared = records.apply_bootstrap_key("cc-key", "byoh-10-0-0-8", None).await.context("clear the key")?;
    let status = cleared.status.context("no status")?;
    ensure!(status.approved_bootstrap_key_sha256.is_none(), "key not cleared: {status:?}");
    ensure!(status.phase == Some(InstancePhase::Ready), "clearing the key touched the phase: {status:?}");
    let read = records.get("cc-key", "byoh-10-0-0-8").await?.context("record vanished")?;
    let configuring = WindowsInstanceStatus { phase: Some(InstancePhase::Configuring), ..waiting };
    records.apply_status("cc-key", "byoh-10-0-0-8", &configuring).await.context("a write after the read")?;
    let refused = records.apply_bootstrap_key_if_unchanged(&read, "cd34").await;
    ensure!(
        refused.as_ref().is_err_and(wmco_cluster_client::Error::is_conflict),
        "a key written over a record changed since it was read: {refused:?}"
    );
    let fresh = records.get("cc-key", "byoh-10-0-0-8").await?.context("record vanished")?;
    let written = records.apply_bootstrap_key_if_unchanged(&fresh, "cd34").await.context("key over the newest")?;
    let key = written.status.and_then(|status| status.approved_bootstrap_key_sha256);
    ensure!(key.as_deref() == Some("cd34"), "the conditional write did not set the key: {key:?}");
    Ok(())
}

async fn config_map_entries(control_plane: Arc<ControlPlane>) -> anyhow::Result<()> {
    namespace(&control_plane, "cc-entries").await?;
    let config_maps = KubeConfigMaps::new(control_plane.admin_client());
    let labels = [("app.kubernetes.io/managed-by", "windows-machine-config-operator")];
    let entry = |key| ConfigMapEntry { namespace: "cc-entries", name: "host-keys", key, labels: &labels };
    config_maps.set_entry(&entry("gone"), None).await.context("removing from a missing ConfigMap")?;
    ensure!(config_maps.get("cc-entries", "host-keys").await?.is_none(), "a removal created the ConfigMap");
    // Two writers at once: the first creates, the other's create conflicts and its patch applies.
    let (a, b) = (entry("a"), entry("b"));
    let (first, second) = tokio::join!(config_maps.set_entry(&a, Some("1")), config_maps.set_entry(&b, Some("2")));
    first.context("first entry")?;
    second.context("second entry")?;
    config_maps.set_entry(&entry("a"), None).await.context("remove a")?;
    let stored = config_maps.get("cc-entries", "host-keys").await?.context("no ConfigMap")?;
    let data = stored.data.unwrap_or_default();
    ensure!(data.len() == 1 && data.get("b").map(String::as_str) == Some("2"), "entries: {data:?}");
    let managed = stored.metadata.labels.unwrap_or_default();
    ensure!(managed.contains_key("app.kubernetes.io/managed-by"), "created without its labels");
    Ok(())
}

async fn cordon_and_patch(control_plane: Arc<ControlPlane>) -> anyhow::Result<()> {
    create_node(&control_plane, "cc-cordon", "192.0.2.41").await?;
    let nodes = KubeNodes::new(control_plane.admin_client());
    let cordoned = nodes.cordon("cc-cordon").await?;
    ensure!(cordoned.spec.and_then(|spec| spec.unschedulable) == Some(true), "cordon did not stick");
    let uncordoned = nodes.uncordon("cc-cordon").await?;
    ensure!(uncordoned.spec.and_then(|spec| spec.unschedulable) != Some(true), "uncordon did not stick");

    let found = nodes.find_by_address("192.0.2.41").await?.context("node not found by its address")?;
    ensure!(found.metadata.name.as_deref() == Some("cc-cordon"), "found {:?}", found.metadata.name);
    ensure!(nodes.find_by_address("192.0.2.4").await?.is_none(), "a prefix of the address matched");

    let set = NodeMetadataPatch::default()
        .set_label("windowsmachineconfig.openshift.io/upgrading", "true")
        .set_annotation("windowsmachineconfig.openshift.io/version", "0.1.0");
    nodes.patch_metadata("cc-cordon", &set).await?;
    let cleared = nodes
        .patch_metadata(
            "cc-cordon",
            &NodeMetadataPatch::default().remove_label("windowsmachineconfig.openshift.io/upgrading"),
        )
        .await?;
    let labels = cleared.metadata.labels.unwrap_or_default();
    ensure!(!labels.contains_key("windowsmachineconfig.openshift.io/upgrading"), "label not removed");
    ensure!(labels.get("kubernetes.io/os").map(String::as_str) == Some("windows"), "other labels lost");
    let annotations = cleared.metadata.annotations.unwrap_or_default();
    ensure!(annotations.get("windowsmachineconfig.openshift.io/version").map(String::as_str) == Some("0.1.0"));

    nodes.delete("cc-cordon").await?;
    nodes.delete("cc-cordon").await.context("deleting a deleted node")?;
    ensure!(nodes.get("cc-cordon").await?.is_none(), "node still there");
    Ok(())
}

/// A pod on `node` with label `app=web`.
fn web_pod(name: &str, node: &str) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": node, "automountServiceAccountToken": false,
                 "containers": [{"name": "web", "image": "registry.invalid/web:1"}]},
    }))?)
}

/// Plays the kubelet: the pod runs and is Ready.
async fn mark_ready(pods: &Api<Pod>, name: &str) -> anyhow::Result<()> {
    let now = jiff::Timestamp::now().to_string();
    let conditions: Vec<Value> = ["PodScheduled", "Initialized", "ContainersReady", "Ready"]
        .iter()
        .map(|kind| json!({"type": kind, "status": "True", "lastTransitionTime": now}))
        .collect();
    let status = json!({"status": {"phase": "Running", "conditions": conditions}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .with_context(|| format!("mark {name} Ready"))?;
    Ok(())
}

/// Plays the kubelets of `nodes`: their Leases are renewed (so the node lifecycle controller never marks their pods
/// NotReady, however slow the machine) and pods marked for deletion are removed for good.
async fn play_kubelets(client: kube::Client, namespace: &str, nodes: &[&str]) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let leases: Api<Lease> = Api::namespaced(client, "kube-node-lease");
    loop {
        for node in nodes {
            let lease = Lease {
                metadata: named(node),
                spec: Some(LeaseSpec {
                    holder_identity: Some((*node).to_owned()),
                    lease_duration_seconds: Some(40),
                    renew_time: Some(MicroTime(jiff::Timestamp::now())),
                    ..LeaseSpec::default()
                }),
            };
            let _ = leases.patch(node, &PatchParams::apply("cc-e2e-kubelet").force(), &Patch::Apply(&lease)).await;
        }
        if let Ok(list) = pods.list(&ListParams::default()).await {
            for pod in list.items.iter().filter(|pod| pod.metadata.deletion_timestamp.is_some()) {
                let name = pod.metadata.name.clone().unwrap_or_default();
                let now = DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::default() };
                let _ = pods.delete(&name, &now).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn budget_allows(budgets: &Api<PodDisruptionBudget>, allowed: i32) -> anyhow::Result<()> {
    eventually(&format!("budget allowing {allowed} disruptions"), REACTION_TIMEOUT, || async {
        let budget = budgets.get("web").await?;
        let status = budget.status.context("no status yet")?;
        ensure!(status.observed_generation == budget.metadata.generation, "not observed yet");
        ensure!(status.disruptions_allowed == allowed, "allows {}", status.disruptions_allowed);
        Ok(())
    })
    .await
}

async fn drain_with_budget(control_plane: Arc<ControlPlane>) -> anyhow::Result<()> {
    namespace(&control_plane, "cc-drain").await?;
    create_node(&control_plane, "cc-drain-node", "192.0.2.51").await?;
    create_node(&control_plane, "cc-other-node", "192.0.2.52").await?;
    let client = control_plane.admin_client();
    let kubelets = tokio::spawn(play_kubelets(client.clone(), "cc-drain", &["cc-drain-node", "cc-other-node"]));
    let outcome = drain_scenario_body(&control_plane, &client).await;
    kubelets.abort();
    outcome
}

async fn drain_scenario_body(control_plane: &ControlPlane, client: &kube::Client) -> anyhow::Result<()> {
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "cc-drain");
    let budget: PodDisruptionBudget = serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
    }))?;
    budgets.create(&PostParams::default(), &budget).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "cc-drain");
    for name in ["web-0", "web-1"] {
        pods.create(&PostParams::default(), &web_pod(name, "cc-drain-node")?).await?;
        mark_ready(&pods, name).await?;
    }
    // A DaemonSet pod (no DaemonSet controller runs, so the DaemonSet stays as created).
    let daemon_sets: Api<DaemonSet> = Api::namespaced(client.clone(), "cc-drain");
    let daemon_set: DaemonSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "agent", "image": "registry.invalid/agent:1"}]}}},
    }))?;
    let daemon_set = daemon_sets.create(&PostParams::default(), &daemon_set).await?;
    let agent: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "agent-x", "labels": {"app": "agent"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                          "uid": daemon_set.metadata.uid, "controller": true}]},
        "spec": {"nodeName": "cc-drain-node", "automountServiceAccountToken": false,
                 "containers": [{"name": "agent", "image": "registry.invalid/agent:1"}]},
    }))?;
    pods.create(&PostParams::default(), &agent).await?;
    budget_allows(&budgets, 0).await?;

    // The production path: a drainer with its own client built from a kubeconfig (kube's default client
    // would retry the budget's 429 answers itself).
    let kubeconfig = kube::config::Kubeconfig::read_from(control_plane.kubeconfig_path())?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    let drainer = KubeDrainer::from_config(config)?;
    let short = DrainOptions {
        delete_emptydir_data: false,
        timeout: Duration::from_secs(6),
        // Long enough for a 429 to come back from a busy API server before the call is cut off.
        retry_interval: Duration::from_secs(2),
    };
    match drainer.drain("cc-drain-node", &short).await {
        Err(Error::DrainTimedOut { node, blocked, .. }) => {
            ensure!(node == "cc-drain-node", "timed out on {node}");
            let pods: Vec<&str> = blocked.iter().map(|blocked| blocked.pod.as_str()).collect();
            ensure!(pods == ["cc-drain/web-0", "cc-drain/web-1"], "blocked by {pods:?}");
            ensure!(
                blocked.iter().all(|BlockedPod { reason, .. }| matches!(reason, BlockReason::DisruptionBudget(_))),
                "blocked for other reasons: {blocked:?}"
            );
        }
        other => bail!("the budget did not block the drain: {other:?}"),
    }
    ensure!(pods.get("web-0").await?.metadata.deletion_timestamp.is_none(), "web-0 was evicted anyway");

    for name in ["web-2", "web-3"] {
        pods.create(&PostParams::default(), &web_pod(name, "cc-other-node")?).await?;
        mark_ready(&pods, name).await?;
    }
    budget_allows(&budgets, 2).await?;
    let patient = DrainOptions { timeout: Duration::from_secs(120), ..short };
    let report = drainer.drain("cc-drain-node", &patient).await.context("drain once the budget allows it")?;
    ensure!(report.evicted == ["cc-drain/web-0", "cc-drain/web-1"], "evicted {:?}", report.evicted);
    ensure!(
        report.skipped == [SkippedPod { pod: "cc-drain/agent-x".into(), reason: SkipReason::DaemonSet }],
        "skipped {:?}",
        report.skipped
    );
    ensure!(pods.get_opt("web-0").await?.is_none() && pods.get_opt("web-1").await?.is_none(), "pods left");
    ensure!(pods.get_opt("agent-x").await?.is_some(), "the DaemonSet pod was removed");
    Ok(())
}

/// A kubelet-shaped client CSR for `node`.
fn kubelet_csr(node: &str) -> anyhow::Result<CertificateSigningRequest> {
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    let mut subject = rcgen::DistinguishedName::new();
    subject.push(rcgen::DnType::CommonName, format!("system:node:{node}"));
    subject.push(rcgen::DnType::OrganizationName, "system:nodes");
    params.distinguished_name = subject;
    let pem = params.serialize_request(&key)?.pem()?;
    Ok(CertificateSigningRequest {
        metadata: ObjectMeta { generate_name: Some("cc-csr-".to_owned()), ..ObjectMeta::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pem.into_bytes()),
            signer_name: KUBELET_CLIENT_SIGNER.to_owned(),
            usages: Some(vec!["digital signature".to_owned(), "client auth".to_owned()]),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    })
}

async fn csr_round_trip(control_plane: Arc<ControlPlane>) -> anyhow::Result<()> {
    let raw: Api<CertificateSigningRequest> = Api::all(control_plane.admin_client());
    let created = raw.create(&PostParams::default(), &kubelet_csr("cc-win-1")?).await?;
    let name = created.metadata.name.clone().context("CSR without a name")?;
    let csrs = KubeCsrs::new(control_plane.admin_client());
    let pending = csrs.list_pending(&[KUBELET_CLIENT_SIGNER]).await?;
    let read = pending
        .into_iter()
        .find(|csr| csr.metadata.name.as_deref() == Some(name.as_str()))
        .context("the new CSR is not listed as pending")?;

    raw.patch(&name, &PatchParams::default(), &Patch::Merge(&json!({"metadata": {"labels": {"touched": "yes"}}})))
        .await?;
    let stale = csrs.decide(&read, &CsrDecision::approve("WMCOApprove", "e2e")).await;
    ensure!(stale.as_ref().is_err_and(Error::is_conflict), "a decision on a stale read was not refused: {stale:?}");

    let fresh = raw.get(&name).await?;
    let decided = csrs.decide(&fresh, &CsrDecision::approve("WMCOApprove", "node cc-win-1 bootstrap")).await?;
    let condition = decided
        .status
        .and_then(|status| status.conditions)
        .and_then(|conditions| conditions.into_iter().find(|condition| condition.type_ == "Approved"))
        .context("no Approved condition")?;
    ensure!(condition.reason.as_deref() == Some("WMCOApprove"), "reason {:?}", condition.reason);
    ensure!(condition.message.as_deref() == Some("node cc-win-1 bootstrap"), "message {:?}", condition.message);
    ensure!(
        !csrs
            .list_pending(&[KUBELET_CLIENT_SIGNER])
            .await?
            .iter()
            .any(|csr| csr.metadata.name.as_deref() == Some(&name)),
        "the approved CSR is still pending"
    );
    eventually("certificate issued", REACTION_TIMEOUT, || async {
        let certificate = raw.get(&name).await?.status.and_then(|status| status.certificate);
        ensure!(certificate.is_some_and(|bytes| !bytes.0.is_empty()), "not signed yet");
        Ok(())
    })
    .await
}

async fn bootstrapper_token(control_plane: Arc<ControlPlane>) -> anyhow::Result<()> {
    let tokens = KubeServiceAccountTokens::new(control_plane.admin_client());
    let before = jiff::Timestamp::now();
    let token = tokens
        .request(
            NODE_BOOTSTRAPPER_NAMESPACE,
            NODE_BOOTSTRAPPER_SERVICE_ACCOUNT,
            &TokenRequestSpec { audiences: vec![], lifetime: Duration::from_secs(600) },
        )
        .await?;
    let lifetime = token.expires_at().duration_since(before);
    ensure!(
        lifetime >= jiff::SignedDuration::from_secs(590) && lifetime <= jiff::SignedDuration::from_secs(660),
        "token lives {lifetime:?}"
    );
    ensure!(!format!("{token:?}").contains(token.secret()), "Debug shows the token");

    let bootstrapper = control_plane
        .client_for_token("system:serviceaccount:openshift-machine-config-operator:node-bootstrapper", token.secret())
        .await?;
    let created = Api::<CertificateSigningRequest>::all(bootstrapper)
        .create(&PostParams::default(), &kubelet_csr("cc-win-2")?)
        .await
        .context("create a CSR with the minted token")?;
    ensure!(
        created.spec.username.as_deref()
            == Some("system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"),
        "CSR requested by {:?}",
        created.spec.username
    );
    Ok(())
}

async fn cluster_facts(control_plane: Arc<ControlPlane>) -> anyhow::Result<()> {
    // Fill the Infrastructure status field as OpenShift names it in JSON (`apiServerInternalURI`).
    let infrastructures: Api<wmco_cluster_client::types::Infrastructure> = Api::all(control_plane.admin_client());
    let status = json!({"status": {"apiServerInternalURI": control_plane.api_server_url()}});
    infrastructures.patch_status("cluster", &PatchParams::default(), &Patch::Merge(&status)).await?;
    ensure!(
        wmco_cluster_client::serves_openshift_config(&control_plane.admin_client()).await?,
        "the fixture CRDs do not make the cluster look like OpenShift"
    );
    let facts = OpenShiftFacts::new(control_plane.admin_client()).gather().await?;
    ensure!(facts.service_cidr.to_string() == SERVICE_CIDR, "service CIDR {}", facts.service_cidr);
    ensure!(
        facts.api_server_internal_url == control_plane.api_server_url(),
        "API URL {}",
        facts.api_server_internal_url
    );
    ensure!(facts.platform == PlatformName::Known(Platform::None), "platform {}", facts.platform);
    ensure!(facts.proxy == Default::default(), "proxy {:?}", facts.proxy);
    ensure!(facts.mirror_sets.is_empty(), "mirrors {:?}", facts.mirror_sets);
    let expected = wmco_e2e_harness::kubernetes_version().trim_start_matches('v');
    ensure!(facts.kubernetes_version.to_string().starts_with(expected), "version {}", facts.kubernetes_version);
    Ok(())
}
