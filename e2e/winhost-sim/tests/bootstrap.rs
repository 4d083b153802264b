//! A simulated Windows host joins the e2e control plane, driven only through its SSH interface as a test script
//! would drive a real host (the operator is not involved): SFTP uploads of the binaries and the product's rendered
//! files, `sc.exe create` lines rendered by `wmco-windows-services`, `sc.exe start`; then, as the cluster admin,
//! client CSR approval, a registered Node with the host's IP that turns Ready once a CNI configuration is uploaded,
//! serving CSR approval, a pod bound to the node that runs, and the Node going `Unknown` after `sc.exe stop kubelet`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use winhost_sim::fleet::{Fleet, HostInfo, NewHost};
use winhost_sim::host::Latency;
use wmco_e2e_harness::{ControlPlane, ControlPlaneOptions, eventually_some};
use wmco_payload_manifest::render::{self, ClusterInputs, LogRotation, RenderedFile, SecretToken};
use wmco_windows_services::{NodeInputs, Platform, ScCommand, ServiceName, Verbosity, node_services};

const WAIT: Duration = Duration::from_secs(90);
const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
const NAMESPACE: &str = "winhost-e2e";

/// How the test script reaches the host: its SSH address and the Administrator's private key.
#[derive(Clone)]
struct Remote {
    address: SocketAddr,
    private_key_pem: Arc<String>,
}

/// What one command printed and returned.
#[derive(Debug, PartialEq)]
struct Output {
    stdout: String,
    stderr: String,
    code: i32,
}

impl Remote {
    fn connect(&self) -> anyhow::Result<ssh2::Session> {
        let mut session = ssh2::Session::new()?;
        session.set_tcp_stream(std::net::TcpStream::connect(self.address)?);
        session.set_timeout(30_000);
        session.handshake()?;
        session.userauth_pubkey_memory("Administrator", None, &self.private_key_pem, None)?;
        Ok(session)
    }

    /// Runs one command line through the host's exec channel (cmd.exe).
    async fn run(&self, line: &str) -> anyhow::Result<Output> {
        let remote = self.clone();
        let line = line.to_owned();
        tokio::task::spawn_blocking(move || {
            use std::io::Read as _;
            let session = remote.connect()?;
            let mut channel = session.channel_session()?;
            channel.exec(&line)?;
            channel.send_eof()?;
            let mut stdout = String::new();
            channel.read_to_string(&mut stdout)?;
            let mut stderr = String::new();
            channel.stderr().read_to_string(&mut stderr)?;
            channel.wait_close()?;
            Ok(Output { stdout, stderr, code: channel.exit_status()? })
        })
        .await?
    }

    /// Runs `line` and requires exit code 0.
    async fn run_ok(&self, line: &str) -> anyhow::Result<Output> {
        let output = self.run(line).await?;
        if output.code != 0 {
            bail!("`{line}` exited {}: {output:?}", output.code);
        }
        Ok(output)
    }

    /// Uploads files over SFTP, creating missing parent directories.
    async fn upload(&self, files: Vec<(String, Vec<u8>)>) -> anyhow::Result<()> {
        let remote = self.clone();
        tokio::task::spawn_blocking(move || {
            let session = remote.connect()?;
            let sftp = session.sftp()?;
            for (windows_path, contents) in files {
                let path = sftp_path(&windows_path);
                let mut missing: Vec<&Path> =
                    path.ancestors().skip(1).take_while(|directory| sftp.stat(directory).is_err()).collect();
                missing.reverse();
                for directory in missing {
                    sftp.mkdir(directory, 0o755).with_context(|| format!("mkdir {}", directory.display()))?;
                }
                let mut file = sftp.create(&path).with_context(|| format!("create {windows_path}"))?;
                std::io::Write::write_all(&mut file, &contents)?;
            }
            Ok(())
        })
        .await?
    }
}

/// `C:\k\kubelet.exe` → `/C:/k/kubelet.exe` (the Win32-OpenSSH SFTP spelling).
fn sftp_path(windows_path: &str) -> PathBuf {
    PathBuf::from(format!("/{}", windows_path.replace('\\', "/")))
}

fn rendered(file: &RenderedFile) -> (String, Vec<u8>) {
    (file.destination().as_str().to_owned(), file.bytes().to_vec())
}

/// The product's rendered files for this host: CA bundles, bootstrap kubeconfig, containerd config, and the
/// kubelet config with short heartbeat intervals (so the Node goes `Unknown` quickly after the kubelet stops).
fn host_files(control_plane: &ControlPlane, token: &str) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
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
    let mut files: Vec<(String, Vec<u8>)> = render::ca_files(&cluster)?.iter().map(rendered).collect();
    files.push(rendered(&render::bootstrap_kubeconfig(&cluster)?));
    files.push(rendered(&render::containerd_config()?));
    let kubelet_config = render::kubelet_config(&cluster)?;
    let mut document: serde_json::Value = serde_json::from_slice(kubelet_config.bytes())?;
    document["nodeLeaseDurationSeconds"] = 2.into();
    document["nodeStatusUpdateFrequency"] = "1s".into();
    files.push((kubelet_config.destination().as_str().to_owned(), serde_json::to_vec_pretty(&document)?));
    Ok(files)
}

/// The containerd and kubelet services as the product defines them for this host.
fn services(info: &HostInfo, api_server_url: &str) -> anyhow::Result<Vec<wmco_windows_services::ServiceSpec>> {
    let inputs = NodeInputs {
        node_ip: info.node_ip,
        node_name: info.name.clone(),
        api_server_url: api_server_url.into(),
        platform: Platform::None,
        verbosity: Verbosity::Normal,
        log_rotation: wmco_windows_services::LogRotation::default(),
        hybrid_overlay_vxlan_port: None,
        cloud_provider: None,
        cloud_config: None,
        proxy: Default::default(),
    };
    let wanted = ["containerd", "kubelet"];
    let specs: Vec<_> = node_services(&inputs)?
        .into_iter()
        .map(|service| service.spec)
        .filter(|spec| wanted.contains(&spec.name.as_str()))
        .collect();
    assert_eq!(specs.len(), wanted.len(), "node_services defines containerd and kubelet");
    Ok(specs)
}

async fn csrs_on(admin: &kube::Client, signer: &str) -> anyhow::Result<Vec<CertificateSigningRequest>> {
    let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    Ok(csrs.list(&Default::default()).await?.items.into_iter().filter(|csr| csr.spec.signer_name == signer).collect())
}

/// The one CSR on `signer` (waits for it).
async fn only_csr(admin: &kube::Client, signer: &str) -> anyhow::Result<CertificateSigningRequest> {
    eventually_some(&format!("a CSR on {signer}"), WAIT, || async {
        let mut found = csrs_on(admin, signer).await?;
        Ok(if found.len() == 1 { found.pop() } else { None })
    })
    .await
}

async fn approve(admin: &kube::Client, csr: &CertificateSigningRequest) -> anyhow::Result<()> {
    let name = csr.metadata.name.as_deref().context("unnamed CSR")?;
    let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    let approval = serde_json::json!({ "status": { "conditions": [{
        "type": "Approved", "status": "True", "reason": "E2ETest", "message": "approved by the winhost-sim e2e test",
    }]}});
    csrs.patch_approval(name, &PatchParams::default(), &Patch::Merge(approval)).await?;
    Ok(())
}

fn issued(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|status| status.certificate.as_ref())
        .is_some_and(|certificate| !certificate.0.is_empty())
}

fn ready_status(node: &Node) -> Option<String> {
    node.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "Ready").map(|c| c.status.clone())
}

fn running_and_ready(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|status| {
        status.phase.as_deref() == Some("Running")
            && status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// The `STATE` line's words of `sc.exe query` output (`4  RUNNING`).
fn sc_state(stdout: &str) -> Option<String> {
    let line = stdout.lines().find(|line| line.trim_start().starts_with("STATE"))?;
    Some(line.split_once(':')?.1.split_whitespace().take(2).collect::<Vec<_>>().join("  "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_set_up_over_ssh_bootstraps_runs_a_pod_and_goes_unknown_when_its_kubelet_stops() -> anyhow::Result<()> {
    let options = ControlPlaneOptions::default().node_monitor_grace_period(Duration::from_secs(5));
    let control_plane = ControlPlane::start(options).await?;
    let admin = control_plane.admin_client();
    let token = control_plane
        .service_account_token("openshift-machine-config-operator", "node-bootstrapper", Duration::from_secs(3600))
        .await?;

    let state = tempfile::tempdir()?;
    let key = winhost_sim::ssh::generate_key()?;
    let public_key = key.public_key().to_openssh()?;
    let private_key_pem = key.to_openssh(russh::keys::ssh_key::LineEnding::LF)?.to_string();
    let mut fleet = Fleet::new(state.path().to_path_buf(), 0, Latency::zero());
    let info = fleet.add(NewHost { authorized_key: Some(public_key), ..Default::default() }).await?;
    let server = fleet.server(&info.name)?;
    assert_eq!((info.name.as_str(), info.node_ip.to_string().as_str()), ("winhost-0", "203.0.113.10"));
    let remote = Remote { address: info.ssh_address, private_key_pem: Arc::new(private_key_pem) };

    // The test script: binaries (any bytes: the simulator knows programs by executable name), rendered files,
    // services created with the product's sc.exe lines, then started.
    let specs = services(&info, control_plane.api_server_url())?;
    let mut uploads = host_files(&control_plane, &token)?;
    for spec in &specs {
        uploads.extend(spec.binaries().map(|binary| (binary.as_str().to_owned(), b"MZ".to_vec())));
    }
    remote.upload(uploads).await?;
    for spec in &specs {
        let create = ScCommand::Create(Box::new(spec.clone())).render()?;
        let output = remote.run_ok(&create.line).await?;
        assert_eq!(output.stdout, "[SC] CreateService SUCCESS\r\n");
    }
    for service in ["containerd", "kubelet"] {
        let start = ScCommand::Start(ServiceName::new(service)?).render()?;
        remote.run_ok(&start.line).await?;
    }
    for service in ["containerd", "kubelet"] {
        let query = ScCommand::Query(ServiceName::new(service)?).render()?;
        let state = eventually_some(&format!("{service} RUNNING"), WAIT, || async {
            let output = remote.run_ok(&query.line).await?;
            Ok(sc_state(&output.stdout).filter(|state| state == "4  RUNNING"))
        })
        .await?;
        assert_eq!(state, "4  RUNNING");
    }

    // The client CSR, made with the bootstrap token as the node-bootstrapper ServiceAccount.
    let client_csr = only_csr(&admin, CLIENT_SIGNER).await?;
    assert_eq!(
        client_csr.spec.username.as_deref(),
        Some("system:serviceaccount:openshift-machine-config-operator:node-bootstrapper")
    );
    assert_eq!(
        client_csr.spec.usages.as_deref(),
        Some(&["digital signature".to_owned(), "client auth".to_owned()][..])
    );
    approve(&admin, &client_csr).await?;

    // Registration: the Node carries the host's IP and is not Ready while containerd has no CNI configuration.
    let nodes: Api<Node> = Api::all(admin.clone());
    let node = eventually_some("a registered Node", WAIT, || async { Ok(nodes.get_opt("winhost-0").await?) }).await?;
    let addresses: Vec<(String, String)> = node
        .status
        .iter()
        .flat_map(|status| status.addresses.iter().flatten())
        .map(|address| (address.type_.clone(), address.address.clone()))
        .collect();
    assert_eq!(
        addresses,
        [("InternalIP".to_owned(), "203.0.113.10".to_owned()), ("Hostname".to_owned(), "winhost-0".to_owned())]
    );
    assert_eq!(ready_status(&node).as_deref(), Some("False"));
    let node_info = node.status.as_ref().and_then(|status| status.node_info.clone()).context("no nodeInfo")?;
    assert_eq!(node_info.operating_system, "windows");
    let taints = node.spec.as_ref().and_then(|spec| spec.taints.clone()).unwrap_or_default();
    assert!(taints.iter().any(|t| t.key == "os" && t.value.as_deref() == Some("Windows") && t.effect == "NoSchedule"));

    // The test script uploads a CNI configuration into containerd's conf_dir: the Node turns Ready.
    let cni_config = format!(r"{}\cni.conf", render::destinations::CNI_CONFIG_DIR);
    let cni_bytes = br#"{"cniVersion":"0.2.0","name":"OVNKubernetesHybridOverlayNetwork","type":"win-overlay"}"#;
    remote.upload(vec![(cni_config, cni_bytes.to_vec())]).await?;
    eventually_some("the Node Ready", WAIT, || async {
        Ok(nodes.get_opt("winhost-0").await?.filter(|node| ready_status(node).as_deref() == Some("True")))
    })
    .await?;

    // The serving CSR, made as the node.
    let serving_csr = only_csr(&admin, SERVING_SIGNER).await?;
    assert_eq!(serving_csr.spec.username.as_deref(), Some("system:node:winhost-0"));
    approve(&admin, &serving_csr).await?;
    let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    let serving_name = serving_csr.metadata.name.clone().context("unnamed CSR")?;
    eventually_some("the serving certificate issued", WAIT, || async {
        Ok(csrs.get(&serving_name).await.map(|csr| issued(&csr).then_some(()))?)
    })
    .await?;

    // A pod bound to the node runs there.
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({ "metadata": { "name": NAMESPACE } }))?,
        )
        .await?;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), NAMESPACE);
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "pause", "namespace": NAMESPACE },
        "spec": {
            "nodeName": "winhost-0",
            "tolerations": [{ "key": "os", "operator": "Equal", "value": "Windows", "effect": "NoSchedule" }],
            "containers": [{ "name": "pause", "image": "mcr.microsoft.com/oss/kubernetes/pause:3.9" }],
        },
    }))?;
    eventually_some("the pod to be created (default ServiceAccount)", WAIT, || async {
        Ok(pods.create(&PostParams::default(), &pod).await.ok())
    })
    .await?;
    let running = eventually_some("the pod Running and Ready", WAIT, || async {
        Ok(pods.get_opt("pause").await?.filter(running_and_ready))
    })
    .await?;
    let status = running.status.context("no pod status")?;
    assert_eq!(status.host_ip.as_deref(), Some("203.0.113.10"));

    // The test script stops the kubelet: heartbeats end and the node-lifecycle controller marks the Node Unknown.
    let stop = ScCommand::Stop(ServiceName::new("kubelet")?).render()?;
    remote.run_ok(&stop.line).await?;
    let query = ScCommand::Query(ServiceName::new("kubelet")?).render()?;
    let stopped = eventually_some("kubelet STOPPED", WAIT, || async {
        let output = remote.run_ok(&query.line).await?;
        Ok(sc_state(&output.stdout).filter(|state| state == "1  STOPPED"))
    })
    .await?;
    assert_eq!(stopped, "1  STOPPED");
    // The controller sets the Ready condition Unknown and adds the `unreachable` taint in separate updates.
    let unreachable = |node: &Node| {
        node.spec
            .as_ref()
            .and_then(|spec| spec.taints.as_ref())
            .is_some_and(|taints| taints.iter().any(|taint| taint.key == "node.kubernetes.io/unreachable"))
    };
    let node = eventually_some("the Node Unknown with the unreachable taint", WAIT, || async {
        Ok(nodes
            .get_opt("winhost-0")
            .await?
            .filter(|node| ready_status(node).as_deref() == Some("Unknown") && unreachable(node)))
    })
    .await?;
    assert_eq!(ready_status(&node).as_deref(), Some("Unknown"));

    // Every command the script sent was one the simulator knows.
    let unknown = winhost_sim::ssh::lock(&server.host).unknown_commands.clone();
    assert!(unknown.is_empty(), "{unknown:?}");
    assert_eq!(csrs_on(&admin, CLIENT_SIGNER).await?.len(), 1, "one client CSR for one bootstrap");
    Ok(())
}
