//! Proof that the e2e control plane is a real cluster: kubelet CSRs are filled and signed, the Node authorizer and
//! NodeRestriction confine a node identity, watches deliver events and survive an API-server restart, a
//! PodDisruptionBudget guards evictions, the OpenShift fixture CRDs accept the product's objects, and
//! `kubectl apply -k` works.
//!
//! One control plane serves every scenario of this binary (a custom libtest-mimic harness starts it once); each
//! scenario works in its own namespace or on its own cluster-scoped names. The API-server restart takes an
//! exclusive lock so it never pulls the server from under another scenario.

use std::collections::BTreeSet;
use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail, ensure};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::ByteString;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{
    Api, DeleteParams, DynamicObject, EvictParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind, ObjectMeta};
use kube::runtime::{WatchStreamExt as _, watcher};
use libtest_mimic::{Arguments, Failed, Trial};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PublicKeyData as _};
use serde_json::json;
use tokio::sync::RwLock;
use wmco_e2e_harness::{ClientCertificate, ControlPlane, ControlPlaneOptions, eventually};

/// The kubelet client signer.
const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// The bootstrap identity's namespace and name.
const BOOTSTRAPPER_NAMESPACE: &str = "openshift-machine-config-operator";
const BOOTSTRAPPER_NAME: &str = "node-bootstrapper";
/// How long one scenario may take before it fails.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(180);
/// How long to wait for a controller to react.
const REACTION_TIMEOUT: Duration = Duration::from_secs(60);

/// What every scenario gets: the control plane and the lock that keeps restarts exclusive.
struct Environment {
    control_plane: ControlPlane,
    restart_lock: RwLock<()>,
}

type Scenario = fn(Arc<Environment>) -> std::pin::Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

/// Every scenario: name, whether it needs the control plane to itself, body.
const SCENARIOS: &[(&str, bool, Scenario)] = &[
    ("csr_from_node_bootstrapper_is_filled_by_the_apiserver_and_signed_after_admin_approval", false, |env| {
        Box::pin(csr_is_filled_and_signed(env))
    }),
    ("node_certificate_may_write_its_own_node_and_lease_and_is_refused_another_nodes", false, |env| {
        Box::pin(node_identity_is_confined(env))
    }),
    ("watch_delivers_added_modified_and_deleted_events", false, |env| Box::pin(watch_delivers_events(env))),
    ("eviction_is_refused_while_the_budget_is_exhausted_and_allowed_once_it_is_not", false, |env| {
        Box::pin(disruption_budget_guards_eviction(env))
    }),
    ("api_server_restart_keeps_objects_and_watches_resume", true, |env| Box::pin(api_server_restart(env))),
    ("fixture_crds_accept_the_objects_the_product_creates", false, |env| Box::pin(fixtures_accept_objects(env))),
    ("kubectl_apply_kustomize_creates_the_objects", false, |env| Box::pin(kubectl_apply_kustomize(env))),
];

fn main() -> ExitCode {
    let arguments = Arguments::from_args();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("could not start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    if arguments.list {
        let trials = SCENARIOS.iter().map(|(name, _, _)| Trial::test(*name, || Ok(()))).collect();
        return libtest_mimic::run(&arguments, trials).exit_code();
    }
    let options = ControlPlaneOptions::default().node_monitor_grace_period(Duration::from_secs(10));
    let control_plane = match runtime.block_on(ControlPlane::start(options)) {
        Ok(control_plane) => control_plane,
        Err(error) => {
            eprintln!("the e2e control plane did not start: {error}");
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "control plane {} ready at {} in {:.1}s (logs: {})",
        wmco_e2e_harness::kubernetes_version(),
        control_plane.api_server_url(),
        control_plane.startup_duration().as_secs_f64(),
        control_plane.log_directory().display()
    );
    let environment = Arc::new(Environment { control_plane, restart_lock: RwLock::new(()) });
    let trials = SCENARIOS
        .iter()
        .map(|&(name, exclusive, scenario)| {
            let environment = Arc::clone(&environment);
            let handle = runtime.handle().clone();
            Trial::test(name, move || handle.block_on(run_scenario(environment, exclusive, scenario)))
        })
        .collect();
    let conclusion = libtest_mimic::run(&arguments, trials);
    drop(environment);
    conclusion.exit_code()
}

async fn run_scenario(environment: Arc<Environment>, exclusive: bool, scenario: Scenario) -> Result<(), Failed> {
    let outcome = if exclusive {
        let _exclusive = environment.restart_lock.write().await;
        tokio::time::timeout(SCENARIO_TIMEOUT, scenario(Arc::clone(&environment))).await
    } else {
        let _shared = environment.restart_lock.read().await;
        tokio::time::timeout(SCENARIO_TIMEOUT, scenario(Arc::clone(&environment))).await
    };
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(format!("{error:?}").into()),
        Err(_) => Err(format!("the scenario did not finish within {SCENARIO_TIMEOUT:?}").into()),
    }
}

// ---- helpers ----------------------------------------------------------------------------------------------------

/// Creates a namespace for one scenario and waits for its `default` ServiceAccount (pods need it).
async fn scenario_namespace(control_plane: &ControlPlane, name: &str) -> anyhow::Result<String> {
    let namespaces: Api<Namespace> = Api::all(control_plane.admin_client());
    let namespace = Namespace {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        ..Namespace::default()
    };
    namespaces.create(&PostParams::default(), &namespace).await.with_context(|| format!("create namespace {name}"))?;
    let service_accounts: Api<ServiceAccount> = Api::namespaced(control_plane.admin_client(), name);
    eventually(&format!("ServiceAccount {name}/default"), REACTION_TIMEOUT, || async {
        service_accounts.get_opt("default").await?.map(|_| ()).ok_or_else(|| anyhow!("not created yet"))
    })
    .await?;
    Ok(name.to_owned())
}

/// The HTTP status of a failed API call, or a description of a call that did not fail as an API error.
fn api_status<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> anyhow::Result<(u16, String)> {
    match result {
        Err(kube::Error::Api(status)) => Ok((status.code, status.message.clone())),
        Err(other) => bail!("expected an API refusal, got {other}"),
        Ok(value) => bail!("expected an API refusal, the call succeeded: {value:?}"),
    }
}

/// A kubelet-shaped client CSR: fresh P-256 key, `CN=system:node:<node>`, `O=system:nodes`, no SANs.
fn kubelet_client_csr(node_name: &str) -> anyhow::Result<(KeyPair, String)> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, format!("system:node:{node_name}"));
    subject.push(DnType::OrganizationName, "system:nodes");
    params.distinguished_name = subject;
    let request_pem = params.serialize_request(&key)?.pem()?;
    Ok((key, request_pem))
}

fn csr_object(request_pem: &str) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta { generate_name: Some("csr-".to_owned()), ..ObjectMeta::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request_pem.as_bytes().to_vec()),
            signer_name: KUBELET_CLIENT_SIGNER.to_owned(),
            usages: Some(vec!["digital signature".to_owned(), "client auth".to_owned()]),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    }
}

async fn approve_as_admin(control_plane: &ControlPlane, csr_name: &str) -> anyhow::Result<()> {
    let csrs: Api<CertificateSigningRequest> = Api::all(control_plane.admin_client());
    let approval = json!({"status": {"conditions": [{
        "type": "Approved", "status": "True", "reason": "E2EApproved", "message": "approved by the e2e test",
    }]}});
    csrs.patch_approval(csr_name, &PatchParams::default(), &Patch::Merge(&approval))
        .await
        .with_context(|| format!("approve CSR {csr_name}"))?;
    Ok(())
}

async fn wait_for_certificate(control_plane: &ControlPlane, csr_name: &str) -> anyhow::Result<String> {
    let csrs: Api<CertificateSigningRequest> = Api::all(control_plane.admin_client());
    let issued = kube::runtime::wait::await_condition(csrs, csr_name, |csr: Option<&CertificateSigningRequest>| {
        csr.and_then(|csr| csr.status.as_ref()).and_then(|status| status.certificate.as_ref()).is_some()
    });
    let csr = tokio::time::timeout(REACTION_TIMEOUT, issued)
        .await
        .with_context(|| format!("CSR {csr_name} got no certificate within {REACTION_TIMEOUT:?}"))??
        .with_context(|| format!("CSR {csr_name} was deleted"))?;
    let certificate = csr.status.and_then(|status| status.certificate).context("no certificate")?;
    Ok(String::from_utf8(certificate.0)?)
}

/// The whole kubelet bootstrap as far as the API sees it: CSR with the bootstrap token, admin approval, the
/// signed certificate; returns a client certificate for `system:node:<node_name>`.
async fn bootstrap_node_certificate(
    control_plane: &ControlPlane,
    node_name: &str,
) -> anyhow::Result<ClientCertificate> {
    let token = control_plane.node_bootstrapper_token().await?;
    let bootstrapper = control_plane.client_for_token(BOOTSTRAPPER_NAME, &token).await?;
    let (key, request_pem) = kubelet_client_csr(node_name)?;
    let csrs: Api<CertificateSigningRequest> = Api::all(bootstrapper);
    let created = csrs.create(&PostParams::default(), &csr_object(&request_pem)).await.context("create CSR")?;
    let csr_name = created.metadata.name.context("created CSR has no name")?;
    approve_as_admin(control_plane, &csr_name).await?;
    let certificate_pem = wait_for_certificate(control_plane, &csr_name).await?;
    Ok(ClientCertificate { certificate_pem, key_pem: key.serialize_pem() })
}

async fn subject_may(
    control_plane: &ControlPlane,
    user: &str,
    groups: &[&str],
    verb: &str,
    resource: &str,
    subresource: Option<&str>,
) -> anyhow::Result<bool> {
    let reviews: Api<SubjectAccessReview> = Api::all(control_plane.admin_client());
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_owned()),
            groups: Some(groups.iter().map(|group| (*group).to_owned()).collect()),
            resource_attributes: Some(ResourceAttributes {
                group: Some("certificates.k8s.io".to_owned()),
                resource: Some(resource.to_owned()),
                subresource: subresource.map(str::to_owned),
                verb: Some(verb.to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer = reviews.create(&PostParams::default(), &review).await.context("SubjectAccessReview")?;
    Ok(answer.status.is_some_and(|status| status.allowed))
}

fn node_object(name: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some([("kubernetes.io/os".to_owned(), "windows".to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..Node::default()
    }
}

fn lease_object(node_name: &str) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(node_name.to_owned()),
            namespace: Some("kube-node-lease".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(node_name.to_owned()),
            lease_duration_seconds: Some(40),
            renew_time: Some(MicroTime(jiff_now())),
            ..LeaseSpec::default()
        }),
    }
}

fn jiff_now() -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::now()
}

// ---- scenarios --------------------------------------------------------------------------------------------------

async fn csr_is_filled_and_signed(environment: Arc<Environment>) -> anyhow::Result<()> {
    let control_plane = &environment.control_plane;
    let node_name = "win-csr";
    let token = control_plane.node_bootstrapper_token().await?;
    let bootstrapper = control_plane.client_for_token(BOOTSTRAPPER_NAME, &token).await?;
    let service_accounts: Api<ServiceAccount> = Api::namespaced(control_plane.admin_client(), BOOTSTRAPPER_NAMESPACE);
    let bootstrapper_uid = service_accounts.get(BOOTSTRAPPER_NAME).await?.metadata.uid.context("SA has no uid")?;

    let (key, request_pem) = kubelet_client_csr(node_name)?;
    let csrs: Api<CertificateSigningRequest> = Api::all(bootstrapper);
    let mut forged = csr_object(&request_pem);
    forged.spec.username = Some("system:admin".to_owned());
    forged.spec.groups = Some(vec!["system:masters".to_owned()]);
    let created = csrs.create(&PostParams::default(), &forged).await.context("create CSR as node-bootstrapper")?;
    let csr_name = created.metadata.name.clone().context("no name")?;
    ensure!(csr_name.starts_with("csr-"), "generateName not honoured: {csr_name}");
    ensure!(
        created.spec.username.as_deref()
            == Some("system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"),
        "username not filled from the token: {:?}",
        created.spec.username
    );
    let groups: BTreeSet<String> = created.spec.groups.clone().unwrap_or_default().into_iter().collect();
    let expected_groups: BTreeSet<String> =
        ["system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator", "system:authenticated"]
            .map(str::to_owned)
            .into();
    ensure!(groups == expected_groups, "groups {groups:?}, expected {expected_groups:?}");
    ensure!(created.spec.uid.as_deref() == Some(bootstrapper_uid.as_str()), "uid {:?}", created.spec.uid);

    // Nothing may approve it but us: no binding grants the nodeclient / selfnodeclient subresources, and
    // csrapproving does not run.
    let bootstrapper_user = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper";
    let bootstrapper_groups = ["system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator"];
    ensure!(
        subject_may(
            control_plane,
            bootstrapper_user,
            &bootstrapper_groups,
            "create",
            "certificatesigningrequests",
            None
        )
        .await?,
        "node-bootstrapper must be allowed to create CSRs"
    );
    ensure!(
        !subject_may(
            control_plane,
            bootstrapper_user,
            &bootstrapper_groups,
            "create",
            "certificatesigningrequests",
            Some("nodeclient")
        )
        .await?,
        "node-bootstrapper must not hold certificatesigningrequests/nodeclient"
    );
    ensure!(
        !subject_may(
            control_plane,
            "system:node:win-csr",
            &["system:nodes"],
            "create",
            "certificatesigningrequests",
            Some("selfnodeclient")
        )
        .await?,
        "nodes must not hold certificatesigningrequests/selfnodeclient"
    );
    let admin_csrs: Api<CertificateSigningRequest> = Api::all(control_plane.admin_client());
    let pending = admin_csrs.get(&csr_name).await?;
    ensure!(pending.status.as_ref().and_then(|status| status.conditions.as_ref()).is_none(), "{pending:?}");

    // A bootstrap token minted with TokenRequest (what the product puts in bootstrap kubeconfigs) is the same
    // identity.
    let minted = control_plane.client_for_service_account(BOOTSTRAPPER_NAMESPACE, BOOTSTRAPPER_NAME).await?;
    let (_, second_request) = kubelet_client_csr(node_name)?;
    let second = Api::<CertificateSigningRequest>::all(minted)
        .create(&PostParams::default(), &csr_object(&second_request))
        .await
        .context("create CSR with a TokenRequest token")?;
    ensure!(second.spec.username == created.spec.username, "TokenRequest identity {:?}", second.spec.username);
    ensure!(second.spec.uid == created.spec.uid, "TokenRequest uid {:?}", second.spec.uid);

    approve_as_admin(control_plane, &csr_name).await?;
    let certificate_pem = wait_for_certificate(control_plane, &csr_name).await?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(certificate_pem.as_bytes())?;
    let certificate = pem.parse_x509()?;
    let common_names: Vec<&str> =
        certificate.subject().iter_common_name().map(|name| name.as_str()).collect::<Result<_, _>>()?;
    ensure!(common_names == ["system:node:win-csr"], "subject CN {common_names:?}");
    let organizations: Vec<&str> =
        certificate.subject().iter_organization().map(|name| name.as_str()).collect::<Result<_, _>>()?;
    ensure!(organizations == ["system:nodes"], "subject O {organizations:?}");
    let issuers: Vec<&str> =
        certificate.issuer().iter_common_name().map(|name| name.as_str()).collect::<Result<_, _>>()?;
    ensure!(issuers == ["wmco-e2e-ca"], "issuer {issuers:?}");
    ensure!(
        certificate.public_key().raw == key.subject_public_key_info().as_slice(),
        "the certificate does not carry the CSR's public key"
    );
    Ok(())
}

async fn node_identity_is_confined(environment: Arc<Environment>) -> anyhow::Result<()> {
    let control_plane = &environment.control_plane;
    let own = "win-own";
    let other = "win-other";
    let certificate = bootstrap_node_certificate(control_plane, own).await?;
    let node_client = control_plane.client_for_certificate(&format!("system:node:{own}"), &certificate).await?;
    let nodes: Api<Node> = Api::all(node_client.clone());
    let leases: Api<Lease> = Api::namespaced(node_client, "kube-node-lease");

    nodes.create(&PostParams::default(), &node_object(own)).await.context("create own Node")?;
    let ready = json!({"status": {"conditions": [{
        "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
    }]}});
    nodes
        .patch_status(own, &PatchParams::default(), &Patch::Strategic(&ready))
        .await
        .context("patch own Node status")?;
    nodes
        .patch(
            own,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"annotations": {"e2e/touched": "yes"}}})),
        )
        .await
        .context("update own Node")?;
    let lease = leases.create(&PostParams::default(), &lease_object(own)).await.context("create own Lease")?;
    let mut renewed = lease.clone();
    if let Some(spec) = renewed.spec.as_mut() {
        spec.renew_time = Some(MicroTime(jiff_now()));
    }
    leases.replace(own, &PostParams::default(), &renewed).await.context("renew own Lease")?;

    let admin_nodes: Api<Node> = Api::all(control_plane.admin_client());
    admin_nodes.create(&PostParams::default(), &node_object(other)).await.context("admin creates another Node")?;
    let stored = admin_nodes.get(own).await?;
    let ready_status = stored
        .status
        .and_then(|status| status.conditions)
        .and_then(|conditions| conditions.into_iter().find(|condition| condition.type_ == "Ready"))
        .map(|condition| condition.status);
    ensure!(ready_status.as_deref() == Some("True"), "own Node Ready is {ready_status:?}");

    let (code, message) = api_status(nodes.create(&PostParams::default(), &node_object("win-intruder")).await)?;
    ensure!(code == 403, "creating another Node: {code} {message}");
    let (code, message) = api_status(
        nodes
            .patch(other, &PatchParams::default(), &Patch::Merge(&json!({"metadata": {"labels": {"e2e": "x"}}})))
            .await,
    )?;
    ensure!(code == 403, "updating another Node: {code} {message}");
    let (code, message) =
        api_status(nodes.patch_status(other, &PatchParams::default(), &Patch::Strategic(&ready)).await)?;
    ensure!(code == 403, "updating another Node's status: {code} {message}");
    let (code, message) = api_status(nodes.get(other).await)?;
    ensure!(code == 403, "reading another Node: {code} {message}");
    let (code, message) = api_status(leases.create(&PostParams::default(), &lease_object(other)).await)?;
    ensure!(code == 403, "creating another node's Lease: {code} {message}");
    Ok(())
}

async fn watch_delivers_events(environment: Arc<Environment>) -> anyhow::Result<()> {
    let control_plane = &environment.control_plane;
    let namespace = scenario_namespace(control_plane, "e2e-watch").await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(control_plane.admin_client(), &namespace);
    let resource_version =
        config_maps.list(&ListParams::default()).await?.metadata.resource_version.context("list has no version")?;
    // Only the test's object: kube-controller-manager publishes `kube-root-ca.crt` into every new namespace at a
    // moment of its own, which an unfiltered watch would see too.
    let params = WatchParams::default().fields("metadata.name=watched").timeout(120);
    let mut events = config_maps.watch(&params, &resource_version).await?.boxed();

    let config_map = ConfigMap {
        metadata: ObjectMeta { name: Some("watched".to_owned()), ..ObjectMeta::default() },
        data: Some([("step".to_owned(), "created".to_owned())].into()),
        ..ConfigMap::default()
    };
    config_maps.create(&PostParams::default(), &config_map).await?;
    config_maps
        .patch("watched", &PatchParams::default(), &Patch::Merge(&json!({"data": {"step": "modified"}})))
        .await?;
    config_maps.delete("watched", &DeleteParams::default()).await?;

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(REACTION_TIMEOUT, events.try_next())
            .await
            .with_context(|| format!("watch went quiet after {seen:?}"))??
            .with_context(|| format!("watch ended after {seen:?}"))?;
        let step =
            |object: &ConfigMap| object.data.as_ref().and_then(|data| data.get("step").cloned()).unwrap_or_default();
        match event {
            WatchEvent::Added(object) => seen.push(("ADDED".to_owned(), step(&object))),
            WatchEvent::Modified(object) => seen.push(("MODIFIED".to_owned(), step(&object))),
            WatchEvent::Deleted(object) => seen.push(("DELETED".to_owned(), step(&object))),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(error) => bail!("watch error: {error:?}"),
        }
    }
    let expected = [("ADDED", "created"), ("MODIFIED", "modified"), ("DELETED", "modified")]
        .map(|(kind, step)| (kind.to_owned(), step.to_owned()));
    ensure!(seen == expected, "events {seen:?}");
    Ok(())
}

/// A pod left unscheduled on purpose: node-lifecycle-controller marks pods on a silent Node not Ready after the
/// node startup grace period, which would race the budget checks; the disruption controller counts Ready pods
/// wherever they are.
fn web_pod(name: &str) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "automountServiceAccountToken": false,
            "containers": [{"name": "web", "image": "registry.invalid/web:1"}],
        },
    }))?)
}

/// Plays the kubelet: the pod runs and is Ready.
async fn mark_pod_ready(pods: &Api<Pod>, name: &str) -> anyhow::Result<()> {
    let now = jiff_now().to_string();
    let status = json!({"status": {
        "phase": "Running",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
            {"type": "Ready", "status": "True", "lastTransitionTime": now},
        ],
    }});
    pods.patch_status(name, &PatchParams::default(), &Patch::Strategic(&status))
        .await
        .with_context(|| format!("mark pod {name} Ready"))?;
    Ok(())
}

async fn budget_status(budgets: &Api<PodDisruptionBudget>, healthy: i32, allowed: i32) -> anyhow::Result<()> {
    eventually(
        &format!("PDB with {healthy} healthy pods and {allowed} allowed disruptions"),
        REACTION_TIMEOUT,
        || async {
            let budget = budgets.get("web").await?;
            let generation = budget.metadata.generation;
            let status = budget.status.context("no status yet")?;
            ensure!(status.observed_generation == generation, "status not observed yet");
            ensure!(
                status.current_healthy == healthy && status.disruptions_allowed == allowed,
                "healthy {} allowed {}",
                status.current_healthy,
                status.disruptions_allowed
            );
            Ok(())
        },
    )
    .await
}

async fn disruption_budget_guards_eviction(environment: Arc<Environment>) -> anyhow::Result<()> {
    let control_plane = &environment.control_plane;
    let namespace = scenario_namespace(control_plane, "e2e-disruption").await?;
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(control_plane.admin_client(), &namespace);
    let budget: PodDisruptionBudget = serde_json::from_value(json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
    }))?;
    budgets.create(&PostParams::default(), &budget).await?;
    let pods: Api<Pod> = Api::namespaced(control_plane.admin_client(), &namespace);
    for name in ["web-0", "web-1"] {
        pods.create(&PostParams::default(), &web_pod(name)?).await?;
        mark_pod_ready(&pods, name).await?;
    }
    budget_status(&budgets, 2, 0).await?;

    let (code, message) = api_status(pods.evict("web-0", &EvictParams::default()).await)?;
    ensure!(code == 429, "eviction with an exhausted budget: {code} {message}");
    ensure!(message.contains("disruption budget"), "refusal message: {message}");
    ensure!(pods.get("web-0").await?.metadata.deletion_timestamp.is_none(), "web-0 was deleted anyway");

    pods.create(&PostParams::default(), &web_pod("web-2")?).await?;
    mark_pod_ready(&pods, "web-2").await?;
    budget_status(&budgets, 3, 1).await?;
    pods.evict("web-0", &EvictParams::default()).await.context("eviction once the budget allows it")?;
    // An unscheduled pod has no kubelet to wait for: the eviction deletes it at once.
    ensure!(pods.get_opt("web-0").await?.is_none(), "web-0 still exists after its eviction");
    budget_status(&budgets, 2, 0).await
}

async fn api_server_restart(environment: Arc<Environment>) -> anyhow::Result<()> {
    let control_plane = &environment.control_plane;
    let namespace = scenario_namespace(control_plane, "e2e-restart").await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(control_plane.admin_client(), &namespace);
    let named = |name: &str| ConfigMap {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        ..ConfigMap::default()
    };
    let before = config_maps.create(&PostParams::default(), &named("before-restart")).await?;

    let (seen_sender, mut seen) = tokio::sync::mpsc::unbounded_channel::<String>();
    let watched = watcher(config_maps.clone(), watcher::Config::default()).default_backoff().applied_objects();
    let watch_task = tokio::spawn(async move {
        let mut watched = watched.boxed();
        while let Some(item) = watched.next().await {
            if let Ok(config_map) = item
                && seen_sender.send(config_map.metadata.name.unwrap_or_default()).is_err()
            {
                break;
            }
        }
    });
    let outcome = async {
        let first = tokio::time::timeout(REACTION_TIMEOUT, seen.recv()).await?.context("watcher stopped")?;
        ensure!(first == "before-restart", "first watched object {first}");

        control_plane.restart_api_server().await.context("restart kube-apiserver")?;

        let kept = config_maps.get("before-restart").await.context("read after restart")?;
        ensure!(
            kept.metadata.uid == before.metadata.uid,
            "object replaced: {:?} vs {:?}",
            kept.metadata.uid,
            before.metadata.uid
        );
        config_maps.create(&PostParams::default(), &named("after-restart")).await.context("create after restart")?;
        loop {
            let name = tokio::time::timeout(REACTION_TIMEOUT, seen.recv())
                .await
                .context("the watch did not resume after the restart")?
                .context("watcher stopped")?;
            if name == "after-restart" {
                return Ok(());
            }
        }
    }
    .await;
    watch_task.abort();
    outcome
}

fn dynamic_api(
    control_plane: &ControlPlane,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    match namespace {
        Some(namespace) => Api::namespaced_with(control_plane.admin_client(), namespace, &resource),
        None => Api::all_with(control_plane.admin_client(), &resource),
    }
}

async fn apply(api: &Api<DynamicObject>, object: serde_json::Value) -> anyhow::Result<DynamicObject> {
    let name = object["metadata"]["name"].as_str().context("object without a name")?.to_owned();
    api.patch(&name, &PatchParams::apply("wmco-e2e-test").force(), &Patch::Apply(&object))
        .await
        .with_context(|| format!("apply {name}"))
}

async fn fixtures_accept_objects(environment: Arc<Environment>) -> anyhow::Result<()> {
    let control_plane = &environment.control_plane;

    let infrastructures =
        dynamic_api(control_plane, "config.openshift.io", "v1", "Infrastructure", "infrastructures", None);
    let infrastructure = infrastructures.get("cluster").await?;
    ensure!(
        infrastructure.data["status"]["apiServerInternalURI"] == control_plane.api_server_url(),
        "{infrastructure:?}"
    );
    ensure!(infrastructure.data["status"]["platformStatus"]["type"] == "None", "{infrastructure:?}");
    let networks = dynamic_api(control_plane, "config.openshift.io", "v1", "Network", "networks", None);
    let network = networks.get("cluster").await?;
    ensure!(network.data["spec"]["networkType"] == "OVNKubernetes", "{network:?}");
    ensure!(network.data["spec"]["serviceNetwork"][0] == "172.30.0.0/16", "{network:?}");
    let operator_networks = dynamic_api(control_plane, "operator.openshift.io", "v1", "Network", "networks", None);
    let operator_network = operator_networks.get("cluster").await?;
    let hybrid = &operator_network.data["spec"]["defaultNetwork"]["ovnKubernetesConfig"]["hybridOverlayConfig"];
    ensure!(hybrid["hybridClusterNetwork"][0]["cidr"] == "10.132.0.0/14", "{operator_network:?}");
    let controller_configs = dynamic_api(
        control_plane,
        "machineconfiguration.openshift.io",
        "v1",
        "ControllerConfig",
        "controllerconfigs",
        None,
    );
    let controller_config = controller_configs.get("machine-config-controller").await?;
    ensure!(
        controller_config.data["spec"]["kubeAPIServerServingCAData"].as_str().is_some_and(|ca| !ca.is_empty()),
        "{controller_config:?}"
    );

    let machines = dynamic_api(
        control_plane,
        "machine.openshift.io",
        "v1beta1",
        "Machine",
        "machines",
        Some("openshift-machine-api"),
    );
    apply(
        &machines,
        json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": "e2e-windows-a", "labels": {"machine.openshift.io/os-id": "Windows"}},
            "spec": {"providerSpec": {"value": {"kind": "NonePlatformSpec", "anything": ["kept"]}}},
        }),
    )
    .await?;
    machines
        .patch_status("e2e-windows-a", &PatchParams::apply("wmco-e2e-test").force(), &Patch::Apply(&json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine", "metadata": {"name": "e2e-windows-a"},
            "status": {"phase": "Provisioned", "addresses": [{"type": "InternalIP", "address": "203.0.113.10"}, {"type": "InternalDNS", "address": "e2e-windows-a"}]},
        })))
        .await
        .context("Machine status")?;
    let machine = machines.get("e2e-windows-a").await?;
    ensure!(machine.data["status"]["addresses"][0]["address"] == "203.0.113.10", "{machine:?}");
    ensure!(machine.data["spec"]["providerSpec"]["value"]["anything"][0] == "kept", "{machine:?}");

    let machine_sets = dynamic_api(
        control_plane,
        "machine.openshift.io",
        "v1beta1",
        "MachineSet",
        "machinesets",
        Some("openshift-machine-api"),
    );
    apply(&machine_sets, json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
        "metadata": {"name": "e2e-windows", "labels": {"machine.openshift.io/os-id": "Windows"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"set": "e2e-windows"}},
                 "template": {"metadata": {"labels": {"set": "e2e-windows", "machine.openshift.io/os-id": "Windows"}}, "spec": {"providerSpec": {}}}},
    }))
    .await?;
    let refused = machine_sets
        .patch("e2e-windows", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": "three"}})))
        .await;
    let (code, message) = api_status(refused)?;
    ensure!(code == 422, "a string replica count was not refused by the schema: {code} {message}");

    let digest_mirrors =
        dynamic_api(control_plane, "config.openshift.io", "v1", "ImageDigestMirrorSet", "imagedigestmirrorsets", None);
    apply(&digest_mirrors, json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", "metadata": {"name": "e2e-digest"},
        "spec": {"imageDigestMirrors": [{"source": "registry.example/team", "mirrors": ["mirror.example/team"], "mirrorSourcePolicy": "NeverContactSource"}]},
    }))
    .await?;
    let bad_policy = json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", "metadata": {"name": "e2e-digest-bad"},
        "spec": {"imageDigestMirrors": [{"source": "registry.example/team", "mirrorSourcePolicy": "Sometimes"}]},
    });
    let refused =
        digest_mirrors.patch("e2e-digest-bad", &PatchParams::apply("wmco-e2e-test"), &Patch::Apply(&bad_policy)).await;
    let (code, message) = api_status(refused)?;
    ensure!(code == 422, "an unknown mirrorSourcePolicy was not refused by the schema: {code} {message}");
    let tag_mirrors =
        dynamic_api(control_plane, "config.openshift.io", "v1", "ImageTagMirrorSet", "imagetagmirrorsets", None);
    apply(
        &tag_mirrors,
        json!({
            "apiVersion": "config.openshift.io/v1", "kind": "ImageTagMirrorSet", "metadata": {"name": "e2e-tag"},
            "spec": {"imageTagMirrors": [{"source": "registry.example/tools", "mirrors": ["mirror.example/tools"]}]},
        }),
    )
    .await?;
    let machine_configs =
        dynamic_api(control_plane, "machineconfiguration.openshift.io", "v1", "MachineConfig", "machineconfigs", None);
    let rendered = apply(&machine_configs, json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "metadata": {"name": "rendered-worker-e2e"},
        "spec": {"config": {"ignition": {"version": "3.5.0"}, "systemd": {"units": [{"name": "kubelet.service", "contents": "ExecStart=/usr/bin/kubelet --cloud-provider=external"}]}}},
    }))
    .await?;
    ensure!(rendered.data["spec"]["config"]["systemd"]["units"][0]["name"] == "kubelet.service", "{rendered:?}");
    Ok(())
}

async fn kubectl_apply_kustomize(environment: Arc<Environment>) -> anyhow::Result<()> {
    let control_plane = &environment.control_plane;
    let kustomization = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kustomize");
    let apply = || async {
        let output = control_plane.kubectl().arg("apply").arg("-k").arg(&kustomization).output().await?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        ensure!(
            output.status.success(),
            "kubectl apply -k failed: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(stdout)
    };
    let first = apply().await?;
    ensure!(
        first.lines().collect::<Vec<_>>() == ["namespace/e2e-kustomize created", "configmap/e2e-settings created"],
        "first apply said: {first}"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(control_plane.admin_client(), "e2e-kustomize");
    let settings = config_maps.get("e2e-settings").await?;
    let data = settings.data.unwrap_or_default();
    ensure!(data.get("mode").map(String::as_str) == Some("e2e"), "{data:?}");
    let labels = settings.metadata.labels.unwrap_or_default();
    ensure!(labels.get("app.kubernetes.io/part-of").map(String::as_str) == Some("wmco-e2e"), "{labels:?}");
    let second = apply().await?;
    ensure!(
        second.lines().collect::<Vec<_>>() == ["namespace/e2e-kustomize unchanged", "configmap/e2e-settings unchanged"],
        "second apply said: {second}"
    );
    Ok(())
}
