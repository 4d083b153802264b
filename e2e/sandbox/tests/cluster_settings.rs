//! Cluster-wide settings reach every host and follow every change, without an operator restart (issue 17), on one
//! sandbox with two hosts (the operator as its own process, the e2e control plane, the `small` synthetic payload).
//!
//! Every record shows the settings generation its host converged to: one for the fleet before the proxy, another
//! once the proxy reached every host.
//!
//! Proxy: once Proxy `cluster`'s status names a proxy, every host's machine environment carries `HTTP_PROXY`,
//! `HTTPS_PROXY` and `NO_PROXY`, and containerd and the kubelet run again with them in their own environment
//! (their `Environment` registry value: the simulator hands services the machine environment of the last boot only,
//! as Windows does), while the other services do not get them; the Nodes stay Ready. Each restart takes its Node out
//! of service, so it claims the `--max-unavailable` budget (1 here): a watch on the Nodes sees each marked
//! `upgrading` in turn, never two at once, and each record gets a `Reconfigured` Event. A host removed meanwhile
//! keeps none of the variables, and gets them again when added back. Clearing the proxy removes the variables from
//! both. The operator records command transcripts throughout; the proxy URL's password and the registry credentials
//! (below) reach no transcript, operator log line, Event or record status (the secret scan at the end).
//!
//! Mirrors: an ImageDigestMirrorSet rule and a credential for its mirror in Secret `openshift-config/pull-secret`
//! reach every host's containerd `hosts.toml` (the mirror, then its `Authorization` header), and a changed
//! credential replaces the old one; deleting the rule removes the registry's `hosts.toml` from every host; a registry
//! CA added to the ControllerConfig reaches every host's `C:\k\ca-bundle.crt`; all without an operator restart.
//!
//! Trust: the operator creates ConfigMap `trusted-ca` with the injection label; with a proxy set, each certificate
//! of its bundle reaches every host's `Cert:\LocalMachine\Root` (beside the host's own roots, never touched), a
//! certificate that leaves the bundle leaves the stores, a removed host keeps none, and clearing the proxy removes
//! them all; a registry CA is imported too. A kubelet client CA rotated in the ControllerConfig reaches every
//! host's `kubelet-ca.crt`. A rendered worker MachineConfig whose kubelet has `--cloud-provider=external` and a
//! `--cloud-config` file gives every Windows kubelet the same flags and `C:\k\cloud.conf`; deleting it drops them.
//!
//! Refusal: on a cluster whose OVN-Kubernetes has no hybrid overlay no host is touched (not one command), each
//! record gets a Warning `ClusterUnsupported` Event naming the reason and `/readyz` answers 503 with it; once hybrid
//! overlay is configured the host joins and `/readyz` answers 200, without an operator restart. That operator runs
//! with log rotation on: the kubelet and kube-proxy run under kube-log-runner with the rotation flags.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use base64::Engine as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use winhost_sim::host::BUILTIN_ROOT_THUMBPRINT;
use winhost_sim::scm::State;
use wmco_cluster_client::types::{ControllerConfig, ImageDigestMirrorSet, MachineConfig, OperatorNetwork};
use wmco_sandbox::disruption::{DisruptionWatch, disruption_of};
use wmco_sandbox::operator::http_get;
use wmco_sandbox::secret_scan::{Place, SecretKind};
use wmco_sandbox::{Sandbox, SandboxOptions, node_is_ready};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const READY_TIMEOUT: Duration = Duration::from_secs(900);
const SETTINGS_TIMEOUT: Duration = Duration::from_secs(240);

/// The proxy variables and the services that get them in their own environment (windows-services `node.rs`).
const PROXY_VARIABLES: [&str; 3] = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"];
const PROXY_SERVICES: [&str; 2] = ["containerd", "kubelet"];

/// The operator's namespace, and the label that has the network operator inject the trusted bundle.
const OPERATOR_NAMESPACE: &str = "openshift-windows-machine-config-operator";
const INJECT_LABEL: &str = "config.openshift.io/inject-trusted-cabundle";

const HTTP_PROXY: &str = "http://proxy.example:3128";
const HTTPS_PROXY: &str = "http://wmco:pr0xy-s3cret@proxy.example:3129";
const NO_PROXY: &str = ".cluster.local,.svc,172.30.0.0/16,10.128.0.0/14";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_proxy_reaches_every_host_and_leaves_when_cleared_without_an_operator_restart() -> anyhow::Result<()>
{
    let sandbox = Sandbox::start(SandboxOptions { hosts: 2, record_transcripts: true, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    sandbox.wait_until_ready(2, READY_TIMEOUT).await?;
    let operator_pid = sandbox.operator_pid();
    for host in sandbox.hosts() {
        proxy_is(&sandbox, &host.info.name, None).await?;
    }
    let before = one_settings_generation(&sandbox, None).await?;

    let disruption = DisruptionWatch::listening(&sandbox, None, SETTINGS_TIMEOUT).await?;
    let set = Instant::now();
    sandbox.set_proxy_status(HTTP_PROXY, HTTPS_PROXY, NO_PROXY).await?;
    let wanted = [HTTP_PROXY, HTTPS_PROXY, NO_PROXY];
    sandbox
        .wait_for("the proxy on every host, every Node unmarked", SETTINGS_TIMEOUT, || async {
            for host in sandbox.hosts() {
                proxy_is(&sandbox, &host.info.name, Some(wanted)).await?;
            }
            restarts_finished(&sandbox).await
        })
        .await?;
    println!("proxy set: on every host after {:.1} s", set.elapsed().as_secs_f64());
    nodes_ready(&sandbox).await?;
    // Restarting containerd and the kubelet takes a Node out of service: one at a time (`--max-unavailable=1`),
    // each marked for its restart and unmarked with a `Reconfigured` Event.
    ensure!(disruption.errors().is_empty(), "the Node watch re-listed: {:?}", disruption.errors());
    println!("Windows Nodes marked or unschedulable, after each change: {:?}", disruption.history());
    ensure!(disruption.most_unavailable() == 1, "at most one Node at once: {:?}", disruption.history());
    let nodes: BTreeSet<String> =
        sandbox.windows_nodes().await?.into_iter().filter_map(|node| node.metadata.name).collect();
    ensure!(disruption.disrupted() == nodes, "marked {:?} of {nodes:?}", disruption.disrupted());
    for instance in sandbox.windows_instances().await? {
        let name = instance.metadata.name.unwrap_or_default();
        let events = sandbox.events_about("WindowsInstance", &name).await?;
        ensure!(
            events.iter().any(|(_, reason, _)| reason == "Reconfigured"),
            "{name} has no Reconfigured Event: {events:?}"
        );
    }
    drop(disruption);
    let proxied = one_settings_generation(&sandbox, Some(&before)).await?;
    println!("settings generation: {before} before the proxy, {proxied} on every record after");

    // The operator keeps trusted-ca labelled for injection; the bundle put there (as the network operator would)
    // reaches every host's root store, beside the roots the host trusted before.
    let config_maps = Api::<ConfigMap>::namespaced(sandbox.admin_client(), OPERATOR_NAMESPACE);
    let trusted_ca = config_maps.get("trusted-ca").await.context("the operator did not create trusted-ca")?;
    let label = trusted_ca.metadata.labels.unwrap_or_default().get(INJECT_LABEL).cloned();
    ensure!(label.as_deref() == Some("true"), "trusted-ca is labelled {label:?}");
    let (proxy_ca, proxy_ca_thumbprint) = certificate_authority("proxy-ca")?;
    let (other_ca, other_ca_thumbprint) = certificate_authority("inspection-ca")?;
    set_trusted_ca(&sandbox, &format!("{proxy_ca}{other_ca}")).await?;
    let trusted = Instant::now();
    roots_everywhere(&sandbox, &[&proxy_ca_thumbprint, &other_ca_thumbprint], &[]).await?;
    println!("trusted CA: both certificates in every host's root store after {:.1} s", trusted.elapsed().as_secs_f64());

    // A host removed while the proxy is set keeps none of its variables; added back, it gets them again.
    let leaving = &sandbox.hosts()[1];
    sandbox.remove_instance_entry(&leaving.key).await?;
    sandbox
        .wait_for("the removed host without the proxy", SETTINGS_TIMEOUT, || async {
            ensure!(sandbox.windows_instances().await?.len() == 1, "the record is still there");
            for variable in PROXY_VARIABLES {
                let found = sandbox.machine_env(&leaving.info.name, variable).await?;
                ensure!(found.is_none(), "host {}: {variable} is still {found:?}", leaving.info.name);
            }
            ensure!(sandbox.services(&leaving.info.name).await?.is_empty(), "services left");
            let roots = sandbox.root_certificates(&leaving.info.name).await?;
            ensure!(roots == [BUILTIN_ROOT_THUMBPRINT], "host {}: root store {roots:?}", leaving.info.name);
            Ok(())
        })
        .await?;
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    sandbox.wait_until_ready(2, READY_TIMEOUT).await?;
    sandbox
        .wait_for("the proxy on the host added back", SETTINGS_TIMEOUT, || async {
            proxy_is(&sandbox, &leaving.info.name, Some(wanted)).await
        })
        .await?;
    roots_everywhere(&sandbox, &[&proxy_ca_thumbprint, &other_ca_thumbprint], &[]).await?;

    // A certificate that leaves the bundle leaves every root store.
    set_trusted_ca(&sandbox, &proxy_ca).await?;
    let removed = Instant::now();
    roots_everywhere(&sandbox, &[&proxy_ca_thumbprint], &[&other_ca_thumbprint]).await?;
    println!("trusted CA: removed certificate gone from every host after {:.1} s", removed.elapsed().as_secs_f64());

    let cleared = Instant::now();
    sandbox.set_proxy_status("", "", "").await?;
    sandbox
        .wait_for("no proxy on any host", SETTINGS_TIMEOUT, || async {
            for host in sandbox.hosts() {
                proxy_is(&sandbox, &host.info.name, None).await?;
            }
            Ok(())
        })
        .await?;
    println!("proxy cleared: gone from every host after {:.1} s", cleared.elapsed().as_secs_f64());
    nodes_ready(&sandbox).await?;
    // Without a proxy the trusted-ca bundle does not count (as in the Go operator).
    roots_everywhere(&sandbox, &[], &[&proxy_ca_thumbprint]).await?;

    mirrors_and_their_credentials_reach_every_host(&sandbox).await?;
    registry_cas_reach_every_host(&sandbox).await?;
    a_rotated_kubelet_ca_reaches_every_host(&sandbox).await?;
    the_workers_cloud_settings_reach_every_kubelet(&sandbox).await?;

    ensure!(sandbox.operator_pid() == operator_pid, "the operator restarted");
    let log = std::fs::read_to_string(sandbox.operator_log_path()).context("reading the operator log")?;
    ensure!(log.contains("cluster settings changed"), "the operator did not log the settings change");
    for secret in ["pr0xy-s3cret", "first-s3cret", "second-s3cret"] {
        ensure!(!log.contains(secret), "{secret} reached the operator log");
    }
    for host in sandbox.hosts() {
        let unknown = sandbox.unknown_commands(&host.info.name).await?;
        ensure!(unknown.is_empty(), "host {} saw unknown commands: {unknown:?}", host.info.name);
    }
    // The proxy's password and both registry credentials, in the transcripts, the log, Events and records.
    let scan = sandbox.assert_no_secret_leaked().await?;
    ensure!(scan.secrets_of(SecretKind::ProxyCredentials) == 1, "{scan}");
    ensure!(scan.secrets_of(SecretKind::RegistryCredentials) == 2, "{scan}");
    ensure!(scan.places.iter().any(|place| matches!(place, Place::Transcript(_))), "no transcript scanned: {scan}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_without_hybrid_overlay_gets_no_host_touched_and_says_why_until_it_is_fixed() -> anyhow::Result<()> {
    let log_rotation =
        ["--services-log-file-size=10Mi", "--services-log-file-age=24h", "--services-log-flush-interval=5s"];
    let sandbox = Sandbox::start(SandboxOptions {
        hosts: 1,
        operator_args: log_rotation.iter().map(|arg| (*arg).to_owned()).collect(),
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    let networks = Api::<OperatorNetwork>::all(sandbox.admin_client());
    let without =
        serde_json::json!({"spec": {"defaultNetwork": {"ovnKubernetesConfig": {"hybridOverlayConfig": null}}}});
    networks.patch("cluster", &PatchParams::default(), &Patch::Merge(&without)).await?;
    let probe = sandbox.operator_probe_address();
    let (status, body) = sandbox
        .wait_for("/readyz to say why", SETTINGS_TIMEOUT, || async {
            let (status, body) = http_get(probe, "/readyz").await?;
            ensure!(status == 503 && body.contains("no hybrid overlay"), "/readyz: {status} {body}");
            Ok((status, body))
        })
        .await?;
    println!("/readyz: {status} {}", body.trim());

    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let host = &sandbox.hosts()[0];
    let record = wmco_instance_inventory::instance_name(&host.key);
    sandbox
        .wait_for("a ClusterUnsupported Warning on the record", SETTINGS_TIMEOUT, || async {
            let events = sandbox.events_about("WindowsInstance", &record).await?;
            ensure!(
                events.iter().any(|(kind, reason, note)| kind == "Warning"
                    && reason == "ClusterUnsupported"
                    && note.contains("hybridClusterNetwork is empty")),
                "events of {record}: {events:?}"
            );
            Ok(())
        })
        .await?;
    let commands = sandbox.operator_commands(&host.info.name).await?;
    ensure!(commands.is_empty(), "the operator ran {} command(s) on the host", commands.len());

    let with = serde_json::json!({"spec": {"defaultNetwork": {"ovnKubernetesConfig": {"hybridOverlayConfig": {
        "hybridClusterNetwork": [{"cidr": "10.132.0.0/14", "hostPrefix": 23}]}}}}});
    networks.patch("cluster", &PatchParams::default(), &Patch::Merge(&with)).await?;
    sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    let (status, body) = http_get(probe, "/readyz").await?;
    ensure!(status == 200, "/readyz after the fix: {status} {body}");

    // Log rotation turned on for the operator: the kubelet and kube-proxy run under kube-log-runner with its flags.
    for service in sandbox.services(&host.info.name).await? {
        let rotated = service.image_path.contains("kube-log-runner.exe")
            && service.image_path.contains("-log-file-size=10485760")
            && service.image_path.contains("-log-file-age=86400s")
            && service.image_path.contains("-flush-interval=5s");
        let wanted = ["kubelet", "kube-proxy"].contains(&service.name.as_str());
        ensure!(rotated == wanted, "service {} runs {}", service.name, service.image_path);
    }
    Ok(())
}

/// A registry CA added to the ControllerConfig reaches every host's trusted bundle.
async fn registry_cas_reach_every_host(sandbox: &Sandbox) -> anyhow::Result<()> {
    let (registry_ca, registry_ca_thumbprint) = certificate_authority("registry-ca")?;
    let configs = Api::<ControllerConfig>::all(sandbox.admin_client());
    let bundle = base64::engine::general_purpose::STANDARD.encode(&registry_ca);
    let patch = serde_json::json!({"spec": {"imageRegistryBundleUserData": [
        {"file": "registry.example..5000", "data": bundle}]}});
    configs.patch("machine-config-controller", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let started = Instant::now();
    let wanted = format!("# registry.example:5000\n{registry_ca}");
    sandbox
        .wait_for("the registry CA on every host", SETTINGS_TIMEOUT, || async {
            for host in sandbox.hosts() {
                let contents = sandbox.read_file(&host.info.name, r"C:\k\ca-bundle.crt").await?.unwrap_or_default();
                let text = String::from_utf8(contents)?;
                ensure!(text.contains(&wanted), "host {}: ca-bundle.crt is {text:?}", host.info.name);
            }
            Ok(())
        })
        .await?;
    println!("registry CA: in every host's ca-bundle.crt after {:.1} s", started.elapsed().as_secs_f64());
    roots_everywhere(sandbox, &[&registry_ca_thumbprint], &[]).await?;
    Ok(())
}

/// A kubelet client CA rotated in the ControllerConfig (the new CA appended, as a rotation does) reaches every
/// host's `kubelet-ca.crt` (the refresher reads the ControllerConfig again on its watch event).
async fn a_rotated_kubelet_ca_reaches_every_host(sandbox: &Sandbox) -> anyhow::Result<()> {
    let configs = Api::<ControllerConfig>::all(sandbox.admin_client());
    let current = configs.get("machine-config-controller").await?;
    let engine = base64::engine::general_purpose::STANDARD;
    let old =
        String::from_utf8(engine.decode(current.spec.kube_api_server_serving_ca_data.as_deref().unwrap_or_default())?)?;
    let (next, _) = certificate_authority("kubelet-ca-next")?;
    let rotated = format!("{}\n{next}", old.trim_end());
    let patch = serde_json::json!({"spec": {"kubeAPIServerServingCAData": engine.encode(&rotated)}});
    configs.patch("machine-config-controller", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let started = Instant::now();
    sandbox
        .wait_for("the rotated kubelet CA on every host", SETTINGS_TIMEOUT, || async {
            for host in sandbox.hosts() {
                let contents = sandbox.read_file(&host.info.name, r"C:\k\kubelet-ca.crt").await?.unwrap_or_default();
                let text = String::from_utf8(contents)?;
                ensure!(text.contains(&next), "host {}: kubelet-ca.crt lacks the new CA", host.info.name);
            }
            Ok(())
        })
        .await?;
    println!("kubelet CA rotated: in every host's kubelet-ca.crt after {:.1} s", started.elapsed().as_secs_f64());
    nodes_ready(sandbox).await
}

/// A rendered worker config whose kubelet runs with `--cloud-provider=external --cloud-config=…` gives every Windows
/// kubelet the same flags, with the file copied to `C:\k\cloud.conf`; once it is gone, the flags go.
async fn the_workers_cloud_settings_reach_every_kubelet(sandbox: &Sandbox) -> anyhow::Result<()> {
    const CLOUD_CONF: &str = "[Global]\nsecret-name = vsphere-creds\n";
    let unit = "[Service]\nExecStart=/usr/bin/kubelet \\\n  --config=/etc/kubernetes/kubelet.conf \\\n  \
                --cloud-provider=external \\\n  --cloud-config=/etc/kubernetes/cloud.conf \\\n  --v=2\n";
    let rendered: MachineConfig = serde_json::from_value(serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": "rendered-worker-0123456789abcdef"},
        "spec": {"config": {"ignition": {"version": "3.5.0"},
            "systemd": {"units": [{"name": "kubelet.service", "enabled": true, "contents": unit}]},
            "storage": {"files": [{"path": "/etc/kubernetes/cloud.conf", "mode": 420,
                "contents": {"source": "data:,%5BGlobal%5D%0Asecret-name%20%3D%20vsphere-creds%0A"}}]}}}}))?;
    let configs = Api::<MachineConfig>::all(sandbox.admin_client());
    configs.create(&PostParams::default(), &rendered).await?;
    let started = Instant::now();
    let flags = r"--cloud-provider=external --cloud-config=C:\k\cloud.conf";
    kubelets_everywhere(sandbox, Some(flags)).await?;
    for host in sandbox.hosts() {
        let contents = sandbox.read_file(&host.info.name, r"C:\k\cloud.conf").await?.unwrap_or_default();
        ensure!(contents == CLOUD_CONF.as_bytes(), "host {}: cloud.conf is {contents:?}", host.info.name);
    }
    println!("cloud settings: on every kubelet after {:.1} s", started.elapsed().as_secs_f64());
    nodes_ready(sandbox).await?;

    configs.delete("rendered-worker-0123456789abcdef", &DeleteParams::default()).await?;
    kubelets_everywhere(sandbox, None).await?;
    nodes_ready(sandbox).await
}

/// Waits until every host's kubelet runs, with `flags` on its command line (`None`: no `--cloud-` flag at all).
async fn kubelets_everywhere(sandbox: &Sandbox, flags: Option<&str>) -> anyhow::Result<()> {
    sandbox
        .wait_for("the kubelet's cloud flags on every host", SETTINGS_TIMEOUT, || async {
            for host in sandbox.hosts() {
                let services = sandbox.services(&host.info.name).await?;
                let kubelet = services.iter().find(|service| service.name == "kubelet").context("no kubelet")?;
                let command = &kubelet.image_path;
                let wanted = match flags {
                    Some(flags) => command.contains(flags),
                    None => !command.contains("--cloud-"),
                };
                ensure!(
                    wanted && kubelet.state == State::Running,
                    "host {}: kubelet {:?} runs {command}",
                    host.info.name,
                    kubelet.state
                );
            }
            Ok(())
        })
        .await?;
    Ok(())
}

/// A self-signed CA certificate (PEM) named `name`, and its thumbprint as Windows prints it.
fn certificate_authority(name: &str) -> anyhow::Result<(String, String)> {
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let certificate = params.self_signed(&key)?;
    let thumbprint = hex::encode_upper(<sha1::Sha1 as sha1::Digest>::digest(certificate.der()));
    Ok((certificate.pem(), thumbprint))
}

/// Waits until every record shows one settings generation other than `other_than`, and returns it.
async fn one_settings_generation(sandbox: &Sandbox, other_than: Option<&str>) -> anyhow::Result<String> {
    sandbox
        .wait_for("one settings generation on every record", SETTINGS_TIMEOUT, || async {
            let records = sandbox.windows_instances().await?;
            let generations: std::collections::BTreeSet<Option<String>> = records
                .iter()
                .map(|record| record.status.as_ref().and_then(|status| status.settings_generation.clone()))
                .collect();
            let [Some(generation)] = generations.iter().collect::<Vec<_>>()[..] else {
                anyhow::bail!("records show the generations {generations:?}");
            };
            ensure!(Some(generation.as_str()) != other_than, "still generation {generation}");
            Ok(generation.clone())
        })
        .await
        .map_err(Into::into)
}

/// Writes `bundle` into trusted-ca's `ca-bundle.crt`, as the network operator's injection would.
async fn set_trusted_ca(sandbox: &Sandbox, bundle: &str) -> anyhow::Result<()> {
    let config_maps = Api::<ConfigMap>::namespaced(sandbox.admin_client(), OPERATOR_NAMESPACE);
    let patch = serde_json::json!({"data": {"ca-bundle.crt": bundle}});
    config_maps.patch("trusted-ca", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

/// Waits until every host's root store holds each of `present`, none of `absent`, and still the built-in root.
async fn roots_everywhere(sandbox: &Sandbox, present: &[&str], absent: &[&str]) -> anyhow::Result<()> {
    sandbox
        .wait_for("the trusted roots on every host", SETTINGS_TIMEOUT, || async {
            for host in sandbox.hosts() {
                let roots = sandbox.root_certificates(&host.info.name).await?;
                let holds = |thumbprint: &&str| roots.iter().any(|root| root == thumbprint);
                ensure!(
                    present.iter().all(holds) && !absent.iter().any(holds) && holds(&BUILTIN_ROOT_THUMBPRINT),
                    "host {}: root store {roots:?}",
                    host.info.name
                );
            }
            Ok(())
        })
        .await?;
    Ok(())
}

/// The hosts.toml containerd reads for `quay.io`.
const QUAY_HOSTS_TOML: &str = r"C:\k\containerd\registries\quay.io\hosts.toml";

async fn mirrors_and_their_credentials_reach_every_host(sandbox: &Sandbox) -> anyhow::Result<()> {
    let rule: ImageDigestMirrorSet = serde_json::from_value(serde_json::json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", "metadata": {"name": "release"},
        "spec": {"imageDigestMirrors": [{"source": "quay.io/openshift-release-dev",
                                         "mirrors": ["mirror.example:5000/openshift-release-dev"]}]}}))?;
    Api::<ImageDigestMirrorSet>::all(sandbox.admin_client()).create(&PostParams::default(), &rule).await?;
    let started = Instant::now();
    hosts_toml_everywhere(sandbox, &["https://mirror.example:5000"], &["Authorization"]).await?;
    println!("mirror rule: in every host's hosts.toml after {:.1} s", started.elapsed().as_secs_f64());

    sandbox.set_registry_credentials("mirror.example:5000", "mirror:first-s3cret").await?;
    let first = base64::engine::general_purpose::STANDARD.encode("mirror:first-s3cret");
    let started = Instant::now();
    hosts_toml_everywhere(sandbox, &[&format!("Basic {first}")], &[]).await?;
    println!("pull secret: credential in every host's hosts.toml after {:.1} s", started.elapsed().as_secs_f64());
    sandbox.set_registry_credentials("mirror.example:5000", "mirror:second-s3cret").await?;
    let second = base64::engine::general_purpose::STANDARD.encode("mirror:second-s3cret");
    hosts_toml_everywhere(sandbox, &[&format!("Basic {second}")], &[&first]).await?;

    Api::<ImageDigestMirrorSet>::all(sandbox.admin_client()).delete("release", &DeleteParams::default()).await?;
    let started = Instant::now();
    sandbox
        .wait_for("no quay.io hosts.toml on any host", SETTINGS_TIMEOUT, || async {
            for host in sandbox.hosts() {
                let contents = sandbox.read_file(&host.info.name, QUAY_HOSTS_TOML).await?;
                ensure!(contents.is_none(), "host {}: {QUAY_HOSTS_TOML} is still there", host.info.name);
            }
            Ok(())
        })
        .await?;
    println!("mirror rule deleted: hosts.toml gone from every host after {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Waits until every host's `quay.io` hosts.toml holds each of `present` and none of `absent`.
async fn hosts_toml_everywhere(sandbox: &Sandbox, present: &[&str], absent: &[&str]) -> anyhow::Result<()> {
    sandbox
        .wait_for("the mirror configuration on every host", SETTINGS_TIMEOUT, || async {
            for host in sandbox.hosts() {
                let contents = sandbox.read_file(&host.info.name, QUAY_HOSTS_TOML).await?;
                let text = String::from_utf8(contents.unwrap_or_default())?;
                ensure!(
                    present.iter().all(|wanted| text.contains(wanted))
                        && absent.iter().all(|unwanted| !text.contains(unwanted)),
                    "host {}: {QUAY_HOSTS_TOML} is {text:?}",
                    host.info.name
                );
            }
            Ok(())
        })
        .await?;
    Ok(())
}

/// Host `name` has exactly the proxy `wanted` (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`; `None`: no proxy) as
/// machine variables and in the running processes of containerd and the kubelet, and no other service process
/// has a proxy variable.
async fn proxy_is(sandbox: &Sandbox, name: &str, wanted: Option<[&str; 3]>) -> anyhow::Result<()> {
    for (index, variable) in PROXY_VARIABLES.iter().enumerate() {
        let expected = wanted.map(|values| values[index].to_owned());
        let found = sandbox.machine_env(name, variable).await?;
        ensure!(found == expected, "host {name}: machine variable {variable} is {found:?}, expected {expected:?}");
    }
    for service in sandbox.services(name).await? {
        ensure!(service.state == State::Running, "host {name}: service {} is {:?}", service.name, service.state);
        let outward = PROXY_SERVICES.contains(&service.name.as_str());
        for (index, variable) in PROXY_VARIABLES.iter().enumerate() {
            let expected = wanted.filter(|_| outward).map(|values| values[index]);
            let found = service.environment.get(*variable).map(String::as_str);
            ensure!(
                found == expected,
                "host {name}: service {} runs with {variable}={found:?}, expected {expected:?}",
                service.name
            );
        }
    }
    Ok(())
}

/// No Windows Node is marked upgrading or unschedulable (the restarts for a setting are over).
async fn restarts_finished(sandbox: &Sandbox) -> anyhow::Result<()> {
    for node in sandbox.windows_nodes().await? {
        let (marked, unschedulable) = disruption_of(&node);
        ensure!(!marked && !unschedulable, "Node {:?} is still marked or unschedulable", node.metadata.name);
    }
    Ok(())
}

async fn nodes_ready(sandbox: &Sandbox) -> anyhow::Result<()> {
    let nodes = sandbox.windows_nodes().await?;
    ensure!(nodes.len() == 2, "{} Windows Nodes", nodes.len());
    for node in &nodes {
        ensure!(node_is_ready(node), "Node {:?} is not Ready", node.metadata.name);
    }
    Ok(())
}
