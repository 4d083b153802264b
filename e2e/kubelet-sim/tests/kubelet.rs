//! The simulated kubelet against the e2e control plane: a host directory laid out by this test with the files the
//! product renders (payload-manifest) and the command line it installs (windows-services), then bootstrap, CSR
//! approval by the test, a Node that is not Ready until containerd's CNI configuration appears, a serving
//! certificate, a pod that waits for the network then runs and is deleted, a restart that reuses the issued
//! certificate, and the node going `Unknown` after the kubelet stops.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use wmco_e2e_harness::{ControlPlane, ControlPlaneOptions, eventually_some};
use wmco_kubelet_sim::{CLIENT_SIGNER, Drive, Kubelet, KubeletLaunch, KubeletPhase, SERVING_SIGNER};
use wmco_payload_manifest::render::{self, ClusterInputs, LogRotation, SecretToken};
use wmco_windows_services::{NodeInputs, Platform, Verbosity, node_services};

const NODE_NAME: &str = "win-e2e";
const NODE_IP: &str = "203.0.113.10";
const WAIT: Duration = Duration::from_secs(60);

/// Writes the product's rendered kubelet files onto the host's drive, with short heartbeat intervals.
fn lay_out_host(drive: &Drive, control_plane: &ControlPlane, token: &str, rotate: bool) -> anyhow::Result<()> {
    let cluster = ClusterInputs {
        api_server_url: control_plane.api_server_url().to_owned(),
        api_server_ca: control_plane.ca_certificate_pem().parse()?,
        kubelet_client_ca: control_plane.ca_certificate_pem().parse()?,
        bootstrap_token: SecretToken::new(token),
        service_cidr: "172.30.0.0/16".parse()?,
        cluster_dns: "172.30.0.10".parse()?,
        cluster_domain: "cluster.local".into(),
        platform: wmco_payload_manifest::Platform::None,
        proxy: None,
        log_rotation: LogRotation::default(),
        image_mirrors: vec![],
        pull_secret: None,
        registry_cas: vec![],
        cloud_config: None,
    };
    let mut files = render::ca_files(&cluster)?;
    files.push(render::bootstrap_kubeconfig(&cluster)?);
    for file in files {
        write(drive, file.destination().as_str(), file.bytes())?;
    }
    let kubelet_config = render::kubelet_config(&cluster)?;
    let mut document: serde_json::Value = serde_json::from_slice(kubelet_config.bytes())?;
    document["nodeLeaseDurationSeconds"] = 2.into();
    document["nodeStatusUpdateFrequency"] = "1s".into();
    document["rotateCertificates"] = rotate.into();
    write(drive, kubelet_config.destination().as_str(), &serde_json::to_vec_pretty(&document)?)
}

fn write(drive: &Drive, windows_path: &str, contents: &[u8]) -> anyhow::Result<()> {
    let path = drive.resolve(windows_path)?;
    std::fs::create_dir_all(path.parent().context("no parent")?)?;
    std::fs::write(&path, contents).with_context(|| format!("write {windows_path}"))
}

/// The kubelet service's binPath arguments as the product installs them (behind kube-log-runner).
fn kubelet_args(api_server_url: &str) -> anyhow::Result<Vec<String>> {
    let inputs = NodeInputs {
        node_ip: NODE_IP.parse()?,
        node_name: NODE_NAME.into(),
        api_server_url: api_server_url.into(),
        platform: Platform::None,
        verbosity: Verbosity::Normal,
        log_rotation: wmco_windows_services::LogRotation::default(),
        hybrid_overlay_vxlan_port: None,
        cloud_provider: None,
        cloud_config: None,
        proxy: Default::default(),
    };
    let kubelet = node_services(&inputs)?
        .into_iter()
        .find(|service| service.spec.name.as_str() == "kubelet")
        .context("no kubelet service")?;
    assert!(kubelet.spec.command.executable.as_str().ends_with("kube-log-runner.exe"));
    Ok(kubelet.spec.command.arguments)
}

async fn csrs_on(control_plane: &ControlPlane, signer: &str) -> anyhow::Result<Vec<CertificateSigningRequest>> {
    let csrs: Api<CertificateSigningRequest> = Api::all(control_plane.admin_client());
    Ok(csrs.list(&Default::default()).await?.items.into_iter().filter(|csr| csr.spec.signer_name == signer).collect())
}

async fn approve(control_plane: &ControlPlane, name: &str) -> anyhow::Result<()> {
    let csrs: Api<CertificateSigningRequest> = Api::all(control_plane.admin_client());
    let approval = serde_json::json!({ "status": { "conditions": [{
        "type": "Approved", "status": "True", "reason": "E2ETest", "message": "approved by the kubelet-sim e2e test",
    }]}});
    csrs.patch_approval(name, &PatchParams::default(), &Patch::Merge(approval)).await?;
    Ok(())
}

/// The one pending CSR on `signer` (waits for it).
async fn pending_csr(control_plane: &ControlPlane, signer: &str) -> anyhow::Result<CertificateSigningRequest> {
    eventually_some(&format!("a CSR on {signer}"), WAIT, || async {
        let mut found = csrs_on(control_plane, signer).await?;
        Ok(if found.len() == 1 { found.pop() } else { None })
    })
    .await
}

fn ready_status(node: &Node) -> Option<String> {
    node.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "Ready").map(|c| c.status.clone())
}

fn csr_sans(csr: &CertificateSigningRequest) -> anyhow::Result<(String, Vec<String>)> {
    use x509_parser::prelude::FromDer as _;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&csr.spec.request.0)?;
    let (_, request) = x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)?;
    let subject = request.certification_request_info.subject.to_string();
    let mut sans = Vec::new();
    for extension in request.requested_extensions().into_iter().flatten() {
        if let x509_parser::extensions::ParsedExtension::SubjectAlternativeName(names) = extension {
            for name in &names.general_names {
                sans.push(match name {
                    x509_parser::extensions::GeneralName::IPAddress(bytes) => {
                        let octets: [u8; 4] = (*bytes).try_into()?;
                        std::net::Ipv4Addr::from(octets).to_string()
                    }
                    other => other.to_string(),
                });
            }
        }
    }
    Ok((subject, sans))
}

fn running_and_ready(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|status| {
        status.phase.as_deref() == Some("Running")
            && status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

fn test_pod() -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": "pause", "namespace": "kubelet-e2e" },
        "spec": {
            "nodeName": NODE_NAME,
            "tolerations": [{ "key": "os", "operator": "Equal", "value": "Windows", "effect": "NoSchedule" }],
            "containers": [{ "name": "pause", "image": "mcr.microsoft.com/oss/kubernetes/pause:3.9" }],
        },
    }))?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubelet_bootstraps_registers_runs_a_pod_and_goes_unknown_when_stopped() -> anyhow::Result<()> {
    let options = ControlPlaneOptions::default().node_monitor_grace_period(Duration::from_secs(5));
    let control_plane = ControlPlane::start(options).await?;
    let token = control_plane
        .service_account_token("openshift-machine-config-operator", "node-bootstrapper", Duration::from_secs(3600))
        .await?;
    let host = tempfile::tempdir()?;
    let c_drive = host.path().join("C");
    let drive = Drive::new(&c_drive);
    lay_out_host(&drive, &control_plane, &token, true)?;
    let args = kubelet_args(control_plane.api_server_url())?;
    let mut launch = KubeletLaunch::new(args.clone(), &c_drive, "WIN-E2E-HOST");
    launch.cni_config_dir = Some(r"C:\k\cni\config".to_owned());
    assert_eq!(launch.log_file(), Some(r"C:\var\log\kubelet\kubelet.log"));
    let started = std::time::Instant::now();

    // Bootstrap: the kubeconfig is written at once (rotation on), then a client CSR made as the node-bootstrapper.
    let kubelet = Kubelet::start(launch.clone()).await?;
    assert_eq!(kubelet.node_name(), NODE_NAME);
    let client_csr = pending_csr(&control_plane, CLIENT_SIGNER).await?;
    eprintln!("figure: start to client CSR listed: {:?}", started.elapsed());
    let kubeconfig = std::fs::read_to_string(drive.resolve(r"C:\k\kubeconfig")?)?;
    assert!(kubeconfig.contains(r"C:\var\lib\kubelet\pki\kubelet-client-current.pem"), "{kubeconfig}");
    assert!(kubeconfig.contains(r"C:\k\bootstrap-ca.crt"), "{kubeconfig}");
    assert!(client_csr.metadata.name.as_deref().is_some_and(|name| name.starts_with("csr-")));
    assert_eq!(
        client_csr.spec.username.as_deref(),
        Some("system:serviceaccount:openshift-machine-config-operator:node-bootstrapper")
    );
    assert_eq!(
        client_csr.spec.usages.as_deref(),
        Some(&["digital signature".to_owned(), "client auth".to_owned()][..])
    );
    assert_eq!(csr_sans(&client_csr)?, ("O=system:nodes, CN=system:node:win-e2e".to_owned(), vec![]));
    assert_eq!(kubelet.status().phase, KubeletPhase::Bootstrapping);
    approve(&control_plane, client_csr.metadata.name.as_deref().context("unnamed CSR")?).await?;
    let approved = std::time::Instant::now();

    // Registration with the node's own certificate: a Node with the node IP, its labels and taint, not Ready
    // while containerd has no CNI configuration.
    let nodes: Api<Node> = Api::all(control_plane.admin_client());
    let node = eventually_some("a registered Node", WAIT, || async { Ok(nodes.get_opt(NODE_NAME).await?) }).await?;
    eprintln!("figure: client CSR approval to Node registered: {:?}", approved.elapsed());
    let ready = node.status.iter().flat_map(|s| s.conditions.iter().flatten()).find(|c| c.type_ == "Ready");
    assert_eq!(ready.map(|c| (c.status.as_str(), c.reason.as_deref())), Some(("False", Some("KubeletNotReady"))));
    let addresses: Vec<(String, String)> = node
        .status
        .iter()
        .flat_map(|status| status.addresses.iter().flatten())
        .map(|address| (address.type_.clone(), address.address.clone()))
        .collect();
    assert_eq!(addresses, [("InternalIP".into(), NODE_IP.into()), ("Hostname".into(), NODE_NAME.into())]);
    let node_info = node.status.as_ref().and_then(|status| status.node_info.clone()).context("no nodeInfo")?;
    assert_eq!(node_info.boot_id, launch.boot_id);
    assert_eq!(node_info.operating_system, "windows");
    let labels = node.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("node.openshift.io/os_id").map(String::as_str), Some("Windows"));
    assert_eq!(labels.get("kubernetes.io/os").map(String::as_str), Some("windows"));
    assert_eq!(labels.get("kubernetes.io/hostname").map(String::as_str), Some(NODE_NAME));
    let taints = node.spec.as_ref().and_then(|spec| spec.taints.clone()).unwrap_or_default();
    assert!(taints.iter().any(|t| t.key == "os" && t.value.as_deref() == Some("Windows") && t.effect == "NoSchedule"));
    assert!(
        std::fs::symlink_metadata(drive.resolve(r"C:\var\lib\kubelet\pki\kubelet-client-current.pem")?)?
            .file_type()
            .is_symlink()
    );
    // The kubeconfig the kubelet wrote works for other node services, as the node identity.
    let node_client = wmco_kubelet_sim::client_from_kubeconfig(&drive, r"C:\k\kubeconfig").await?;
    let as_node: Api<Node> = Api::all(node_client);
    assert_eq!(as_node.get(NODE_NAME).await?.metadata.uid, node.metadata.uid);
    match as_node.list(&Default::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403),
        other => bail!("a node listing all Nodes should be forbidden, got {other:?}"),
    }
    let leases: Api<Lease> = Api::namespaced(control_plane.admin_client(), "kube-node-lease");
    let lease = eventually_some("the node Lease", WAIT, || async { Ok(leases.get_opt(NODE_NAME).await?) }).await?;
    let lease_spec = lease.spec.context("lease without spec")?;
    assert_eq!(lease_spec.holder_identity.as_deref(), Some(NODE_NAME));
    assert_eq!(lease_spec.lease_duration_seconds, Some(2));
    assert_eq!(lease.metadata.owner_references.unwrap_or_default()[0].uid, node.metadata.uid.unwrap_or_default());

    // Serving certificate: requested as the node, SANs = its addresses.
    let serving_csr = pending_csr(&control_plane, SERVING_SIGNER).await?;
    assert_eq!(serving_csr.spec.username.as_deref(), Some("system:node:win-e2e"));
    assert_eq!(
        serving_csr.spec.usages.as_deref(),
        Some(&["digital signature".to_owned(), "server auth".to_owned()][..])
    );
    assert_eq!(
        csr_sans(&serving_csr)?,
        ("O=system:nodes, CN=system:node:win-e2e".to_owned(), vec!["DNSName(win-e2e)".to_owned(), NODE_IP.to_owned()])
    );
    approve(&control_plane, serving_csr.metadata.name.as_deref().context("unnamed CSR")?).await?;
    eventually_some("the serving certificate", WAIT, || async {
        Ok(kubelet.status().serving_certificate.then_some(()))
    })
    .await?;
    assert!(drive.resolve(r"C:\var\lib\kubelet\pki\kubelet-server-current.pem")?.exists());

    // A pod bound to the node waits for the runtime network, then runs; deleting it completes.
    let namespaces: Api<Namespace> = Api::all(control_plane.admin_client());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({ "metadata": { "name": "kubelet-e2e" } }))?,
        )
        .await?;
    let pods: Api<Pod> = Api::namespaced(control_plane.admin_client(), "kubelet-e2e");
    let pod = test_pod()?;
    eventually_some("the pod to be created (default ServiceAccount)", WAIT, || async {
        Ok(pods.create(&PostParams::default(), &pod).await.ok())
    })
    .await?;
    let pending = eventually_some("the pod Pending in ContainerCreating", WAIT, || async {
        Ok(pods
            .get_opt("pause")
            .await?
            .filter(|pod| pod.status.as_ref().is_some_and(|s| s.container_statuses.is_some())))
    })
    .await?;
    let status = pending.status.context("no pod status")?;
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    let waiting = status.container_statuses.unwrap_or_default()[0].state.clone().and_then(|state| state.waiting);
    assert_eq!(waiting.and_then(|w| w.reason).as_deref(), Some("ContainerCreating"));

    // The CNI configuration appears: the Node turns Ready and the pod runs.
    write(
        &drive,
        r"C:\k\cni\config\cni.conf",
        br#"{"cniVersion":"0.2.0","name":"OVNKubernetesHybridOverlayNetwork","type":"win-overlay"}"#,
    )?;
    let network_written = std::time::Instant::now();
    eventually_some("the Node Ready", WAIT, || async {
        Ok(nodes.get_opt(NODE_NAME).await?.filter(|node| ready_status(node).as_deref() == Some("True")))
    })
    .await?;
    eprintln!("figure: CNI configuration written to Node Ready: {:?}", network_written.elapsed());
    let running = eventually_some("the pod Running and Ready", WAIT, || async {
        Ok(pods.get_opt("pause").await?.filter(running_and_ready))
    })
    .await?;
    assert_eq!(running.status.and_then(|status| status.host_ip).as_deref(), Some(NODE_IP));
    pods.delete("pause", &DeleteParams::default()).await?;
    eventually_some("the pod to be gone", WAIT, || async { Ok(pods.get_opt("pause").await?.is_none().then_some(())) })
        .await?;

    // The journal (the lines a host copies to kubelet.log); the deletion line may trail the pod's disappearance.
    let client_csr_name = client_csr.metadata.name.unwrap_or_default();
    let expected = [
        format!("created client certificate signing request {client_csr_name}"),
        format!("client certificate issued for CSR {client_csr_name}, stored in C:\\var\\lib\\kubelet\\pki"),
        "successfully registered node win-e2e".to_owned(),
        "pod kubelet-e2e/pause waits for the container runtime network".to_owned(),
        "container runtime network is ready".to_owned(),
        "pod kubelet-e2e/pause running".to_owned(),
        "pod kubelet-e2e/pause terminated and deleted".to_owned(),
    ];
    let journal_has = |line: &str| kubelet.journal().iter().any(|entry| entry.ends_with(line));
    eventually_some("the journal lines", WAIT, || async {
        Ok(expected.iter().all(|line| journal_has(line)).then_some(()))
    })
    .await
    .with_context(|| format!("journal: {:#?}", kubelet.journal()))?;

    // Heartbeats: the Lease's renewTime keeps advancing (renewed every 0.5 s with nodeLeaseDurationSeconds 2).
    let renewed_at = || async {
        let lease = leases.get(NODE_NAME).await?;
        lease.spec.and_then(|spec| spec.renew_time).map(|time| time.0).context("lease without renewTime")
    };
    let first_renewal = renewed_at().await?;
    eventually_some("a later Lease renewal", WAIT, || async {
        Ok((renewed_at().await? > first_renewal).then_some(()))
    })
    .await?;

    // A restart reuses the issued certificate: no new client CSR.
    kubelet.stop().await;
    let restarted = Kubelet::start(launch).await?;
    eventually_some("the restarted kubelet to run", WAIT, || async {
        Ok((restarted.status().phase == KubeletPhase::Running).then_some(()))
    })
    .await?;
    assert_eq!(csrs_on(&control_plane, CLIENT_SIGNER).await?.len(), 1);

    rotation_off_bootstrap(&control_plane, &token).await?;

    // Stopping ends the heartbeats: the node-lifecycle controller marks the Node Unknown.
    restarted.stop().await;
    let stopped = std::time::Instant::now();
    eventually_some("the Node to turn Unknown", WAIT, || async {
        Ok(nodes.get_opt(NODE_NAME).await?.filter(|node| ready_status(node).as_deref() == Some("Unknown")))
    })
    .await?;
    eprintln!("figure: stop to Node Unknown (grace period 5 s): {:?}", stopped.elapsed());
    // The node-lifecycle controller writes the Ready condition and the unreachable taint in separate updates.
    let has_unreachable_taint = |node: &Node| {
        node.spec
            .as_ref()
            .and_then(|spec| spec.taints.as_ref())
            .is_some_and(|taints| taints.iter().any(|taint| taint.key == "node.kubernetes.io/unreachable"))
    };
    eventually_some("the Node's unreachable taint", WAIT, || async {
        Ok(nodes.get_opt(NODE_NAME).await?.filter(|node| has_unreachable_taint(node)))
    })
    .await?;
    assert_path_absent(&drive.resolve(r"C:\var\lib\kubelet\pki\kubelet-client-updated.pem")?);
    Ok(())
}

/// `rotateCertificates: false`: a persistent `.tmp` key and a deterministic `node-csr-*` name that a restarted
/// kubelet reuses; after approval the key file is gone and the kubeconfig points at the issued pair.
async fn rotation_off_bootstrap(control_plane: &ControlPlane, token: &str) -> anyhow::Result<()> {
    let host = tempfile::tempdir()?;
    let c_drive = host.path().join("C");
    let drive = Drive::new(&c_drive);
    lay_out_host(&drive, control_plane, token, false)?;
    let mut args = kubelet_args(control_plane.api_server_url())?;
    for arg in &mut args {
        if arg.starts_with("--hostname-override=") {
            *arg = "--hostname-override=win-b".to_owned();
        }
    }
    let launch = KubeletLaunch::new(args, &c_drive, "WIN-B-HOST");
    let node_csrs = || async {
        let all = csrs_on(control_plane, CLIENT_SIGNER).await?;
        Ok::<_, anyhow::Error>(
            all.into_iter()
                .filter(|csr| csr.metadata.name.as_deref().is_some_and(|name| name.starts_with("node-csr-")))
                .collect::<Vec<_>>(),
        )
    };
    let first = Kubelet::start(launch.clone()).await?;
    let pending = eventually_some("a node-csr-* request", WAIT, || async {
        let mut found = node_csrs().await?;
        Ok(if found.len() == 1 { found.pop() } else { None })
    })
    .await?;
    let name = pending.metadata.name.clone().context("unnamed CSR")?;
    let temporary_key = drive.resolve(r"C:\var\lib\kubelet\pki\kubelet-client.key.tmp")?;
    assert!(temporary_key.exists());
    assert!(!drive.resolve(r"C:\k\kubeconfig")?.exists(), "rotation off writes the kubeconfig after issuance");
    first.stop().await;

    let second = Kubelet::start(launch).await?;
    let expected = format!("waiting for client certificate signing request {name}");
    eventually_some("the restarted kubelet to wait on the same request", WAIT, || async {
        Ok(second.journal().iter().any(|line| line.ends_with(&expected)).then_some(()))
    })
    .await?;
    assert_eq!(node_csrs().await?.len(), 1);
    approve(control_plane, &name).await?;
    let nodes: Api<Node> = Api::all(control_plane.admin_client());
    eventually_some("Node win-b", WAIT, || async { Ok(nodes.get_opt("win-b").await?) }).await?;
    assert!(!temporary_key.exists());
    let kubeconfig = std::fs::read_to_string(drive.resolve(r"C:\k\kubeconfig")?)?;
    assert!(kubeconfig.contains(r"C:\var\lib\kubelet\pki\kubelet-client-current.pem"), "{kubeconfig}");
    second.stop().await;
    Ok(())
}

fn assert_path_absent(path: &Path) {
    assert!(std::fs::symlink_metadata(path).is_err(), "{} should not exist", path.display());
}
