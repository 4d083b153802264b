//! Taking over hosts the Go operator configured (issue 18), against the real operator over real SSH: the Go
//! operator pinned each host's key in ConfigMap `windows-ssh-host-keys` (keyed by address, base64 of the key's wire
//! format) and installed its `windows-instance-config-daemon` service.
//!
//! Proof: a host whose stored key is its own is configured to Ready with that key pinned on its record, a Normal
//! Event `HostKeyImported` naming the ConfigMap entry, and the Go operator's daemon service removed. A host whose
//! stored key is another host's is refused before any command runs on it: its record is `Failed` with a
//! `HostKeyMismatch` Warning, and the simulator logged no command from the operator. Were the stored keys not taken
//! over, both hosts would be trusted on first use and both would turn Ready.
//!
//! Then a host whose Node the Go operator left at its own version (10.16.1): the test configures it, kills the
//! operator, removes its record and puts back what the Go operator leaves (the version annotation, the stored host
//! key, the daemon service and its kubeconfig `C:\k\wicd-kubeconfig`, and in the cluster the daemon's
//! ServiceAccount, token Secret and RBAC). The restarted operator imports the key, leaves the Node to the upgrade executor (marked,
//! cordoned, drained within the budget, never reconfigured in place) and ends with the Node Ready, schedulable and
//! unmarked at its own version, an `Upgraded` Event, the daemon and its kubeconfig gone, and then, no Node running
//! the daemon any more, its identity deleted with a `GoDaemonIdentityRemoved` Event.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::StreamExt as _;
use kube::runtime::{WatchStreamExt as _, watcher};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use winhost_sim::fleet::{HostInfo, NewHost};
use wmco_cluster_client::NodeExt;
use wmco_cluster_client::names::VERSION_ANNOTATION;
use wmco_cluster_client::types::{InstancePhase, WindowsInstance};
use wmco_instance_inventory::instance_name;
use wmco_operator::instances::GO_HOST_KEYS_CONFIG_MAP;
use wmco_sandbox::{HOST_USER, OPERATOR_NAMESPACE, Sandbox, SandboxOptions};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const READY_TIMEOUT: Duration = Duration::from_secs(600);
const FAILURE_TIMEOUT: Duration = Duration::from_secs(300);
const ADOPTED_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 61);
const STALE_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 62);
const UPGRADED_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 64);
/// The version the Go operator wrote on its Nodes.
const GO_VERSION: &str = "10.16.1";
/// The Go operator's on-host daemon, which this operator removes, and the name of its identity in the cluster.
const GO_DAEMON: &str = "windows-instance-config-daemon";
/// The Go daemon's kubeconfig on the host, with a ServiceAccount token that never expires.
const GO_DAEMON_KUBECONFIG: &str = r"C:\k\wicd-kubeconfig";
/// The ClusterRole and ClusterRoleBinding of the Go daemon's certificate identity (group `system:wicd-nodes`).
const GO_DAEMON_CERTIFICATE_GROUP_RBAC: &str = "system-wicd-nodes";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_keep_the_host_keys_the_go_operator_pinned() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 0, localhost_host: false, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let adopted = go_configured_host(&sandbox, "winhost-go", ADOPTED_ADDRESS).await?;
    let stale = go_configured_host(&sandbox, "winhost-stale", STALE_ADDRESS).await?;
    // The Go operator's store: the adopted host's own key, and for the other address a key another host presents
    // (an address reused by a new machine, or a key that changed).
    let stored = BTreeMap::from([
        (ADOPTED_ADDRESS.to_string(), wire_blob(&adopted.host_key)?),
        (STALE_ADDRESS.to_string(), wire_blob(&adopted.host_key)?),
    ]);
    let config_map = ConfigMap {
        metadata: ObjectMeta { name: Some(GO_HOST_KEYS_CONFIG_MAP.to_owned()), ..ObjectMeta::default() },
        data: Some(stored),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(sandbox.admin_client(), OPERATOR_NAMESPACE)
        .create(&PostParams::default(), &config_map)
        .await?;
    let entries = [ADOPTED_ADDRESS, STALE_ADDRESS]
        .map(|address| (address.to_string(), format!("username={HOST_USER}")))
        .into_iter()
        .collect();
    sandbox.write_instances(&entries).await?;

    sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    let adopted_record = instance_name(&ADOPTED_ADDRESS.to_string());
    let status = record_named(&sandbox, &adopted_record).await?.status.context("no status")?;
    ensure!(status.phase == Some(InstancePhase::Ready), "the adopted host is not Ready: {:?}", status.phase);
    ensure!(
        status.pinned_host_key.as_deref() == Some(adopted.host_key.as_str()),
        "the pinned key is not the one the Go operator stored: {:?}",
        status.pinned_host_key
    );
    let events = sandbox.events_about("WindowsInstance", &adopted_record).await?;
    ensure!(
        events.iter().any(|(kind, reason, note)| kind == "Normal"
            && reason == "HostKeyImported"
            && note.contains(&format!("ConfigMap {GO_HOST_KEYS_CONFIG_MAP} entry {ADOPTED_ADDRESS}"))),
        "no HostKeyImported Event names the ConfigMap entry: {events:#?}"
    );
    let services = sandbox.services(&adopted.name).await?;
    ensure!(
        !services.iter().any(|service| service.name == GO_DAEMON),
        "the Go operator's daemon service is still installed"
    );

    let stale_record = instance_name(&STALE_ADDRESS.to_string());
    sandbox
        .wait_for("the host presenting another key to be refused", FAILURE_TIMEOUT, || async {
            let events = sandbox.events_about("WindowsInstance", &stale_record).await?;
            events
                .into_iter()
                .find(|(kind, reason, _)| kind == "Warning" && reason == "HostKeyMismatch")
                .context("no HostKeyMismatch Warning yet")
        })
        .await?;
    let phase = record_named(&sandbox, &stale_record).await?.status.and_then(|status| status.phase);
    ensure!(phase == Some(InstancePhase::Failed), "the refused host's record is {phase:?}");
    let commands = sandbox.operator_commands(&stale.name).await?;
    ensure!(commands.is_empty(), "commands reached the host presenting another key: {commands:#?}");
    ensure!(
        sandbox.services(&stale.name).await?.iter().any(|service| service.name == GO_DAEMON),
        "the refused host was changed"
    );
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_the_go_operator_left_at_its_version_is_upgraded_within_the_budget() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 0, localhost_host: false, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let host = go_configured_host(&sandbox, "winhost-go-node", UPGRADED_ADDRESS).await?;
    let address = UPGRADED_ADDRESS.to_string();
    sandbox.write_instances(&[(address.clone(), format!("username={HOST_USER}"))].into()).await?;
    let ready = sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    let node_name = ready[0].node.metadata.name.clone().context("a Node without a name")?;
    let ours = ready[0].instance.status.as_ref().and_then(|status| status.configured_version.clone());
    let ours = ours.context("no configured version")?;

    // The operator is gone and so is its record; the host and its Node stay, with the Go operator's marks.
    sandbox.kill_operator();
    let record = instance_name(&address);
    let records: Api<WindowsInstance> = Api::namespaced(sandbox.admin_client(), OPERATOR_NAMESPACE);
    let unfinalized = serde_json::json!({"metadata": {"finalizers": null}});
    records.patch(&record, &PatchParams::default(), &Patch::Merge(&unfinalized)).await?;
    records.delete(&record, &DeleteParams::default()).await?;
    sandbox
        .wait_for("the record to go", FAILURE_TIMEOUT, || async {
            ensure!(records.get_opt(&record).await?.is_none(), "the record is still there");
            Ok(())
        })
        .await?;
    let nodes: Api<Node> = Api::all(sandbox.admin_client());
    let go_version = serde_json::json!({"metadata": {"annotations": {VERSION_ANNOTATION: GO_VERSION}}});
    nodes.patch(&node_name, &PatchParams::default(), &Patch::Merge(&go_version)).await?;
    let config_map = ConfigMap {
        metadata: ObjectMeta { name: Some(GO_HOST_KEYS_CONFIG_MAP.to_owned()), ..ObjectMeta::default() },
        data: Some(BTreeMap::from([(address.clone(), wire_blob(&host.host_key)?)])),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(sandbox.admin_client(), OPERATOR_NAMESPACE)
        .create(&PostParams::default(), &config_map)
        .await?;
    install_go_daemon(&sandbox, &host.name).await?;
    create_go_daemon_identity(&sandbox).await?;

    // When the Node is first cordoned, as a watch sees it, and which host commands come after the restart.
    let cordoned_at = first_cordon(nodes.clone(), node_name.clone());
    let commands_before = sandbox.operator_commands(&host.name).await?.len();
    sandbox.start_operator().await?;
    sandbox
        .wait_for("the Node back at the operator's version, Ready, schedulable and unmarked", READY_TIMEOUT, || async {
            let node = nodes.get(&node_name).await?;
            let version = node.annotation(VERSION_ANNOTATION).map(str::to_owned);
            ensure!(version.as_deref() == Some(ours.as_str()), "the Node is at {version:?}");
            ensure!(
                node.is_ready() && !node.is_unschedulable() && !node.is_marked(),
                "the Node is not back in service"
            );
            let status = record_named(&sandbox, &record).await?.status.context("no status")?;
            ensure!(status.phase == Some(InstancePhase::Ready), "the record is {:?}", status.phase);
            Ok(())
        })
        .await?;
    let status = record_named(&sandbox, &record).await?.status.context("no status")?;
    ensure!(status.pinned_host_key.as_deref() == Some(host.host_key.as_str()), "another key pinned");
    let events = sandbox.events_about("WindowsInstance", &record).await?;
    for reason in ["HostKeyImported", "Upgraded"] {
        ensure!(events.iter().any(|(_, found, _)| found == reason), "no {reason} Event: {events:#?}");
    }
    let services = sandbox.services(&host.name).await?;
    ensure!(!services.iter().any(|service| service.name == GO_DAEMON), "the Go operator's daemon is still installed");
    ensure!(!has_go_daemon_kubeconfig(&sandbox, &host.name).await?, "the Go daemon's kubeconfig is still on the host");
    // No host runs the Go daemon any more: its identity goes, by exact name, with one Event listing it.
    sandbox
        .wait_for("the Go daemon's identity to be deleted", FAILURE_TIMEOUT, || async {
            let left = go_daemon_identity_left(&sandbox).await?;
            ensure!(left.is_empty(), "still there: {left:?}");
            Ok(())
        })
        .await?;
    let events = sandbox.events_about("ServiceAccount", GO_DAEMON).await?;
    ensure!(
        events.iter().any(|(kind, reason, note)| kind == "Normal"
            && reason == "GoDaemonIdentityRemoved"
            && note.contains(&format!("ClusterRoleBinding {GO_DAEMON_CERTIFICATE_GROUP_RBAC}"))),
        "no GoDaemonIdentityRemoved Event lists what went: {events:#?}"
    );
    // Nothing changed on the host before the Node was out of service: the daemon's deletion (the first change the
    // new record's configuration makes) finished after the cordon.
    let cordoned_at =
        cordoned_at.lock().map_err(|_| anyhow::anyhow!("the watch panicked"))?.context("never cordoned")?;
    let commands = sandbox.operator_commands(&host.name).await?;
    let deletion = commands[commands_before..]
        .iter()
        .find(|command| command.line.contains(&format!("sc.exe delete {GO_DAEMON}")))
        .context("the daemon was never deleted")?;
    let deleted_at = deletion.finished_at.context("a command without its time")?;
    ensure!(cordoned_at < deleted_at, "the host was reconfigured before its Node was cordoned");
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

/// Watches the Node `name` and keeps the time a watch event first showed it unschedulable.
fn first_cordon(nodes: Api<Node>, name: String) -> Arc<Mutex<Option<SystemTime>>> {
    let seen = Arc::new(Mutex::new(None));
    let keep = Arc::clone(&seen);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    tokio::spawn(async move {
        let mut events = std::pin::pin!(watcher(nodes, config).applied_objects());
        while let Some(Ok(node)) = events.next().await {
            if node.is_unschedulable()
                && let Ok(mut first) = keep.lock()
            {
                first.get_or_insert_with(SystemTime::now);
            }
        }
    });
    seen
}

/// Installs the Go operator's daemon service (stopped) on the host `name`, with its kubeconfig.
async fn install_go_daemon(sandbox: &Sandbox, name: &str) -> anyhow::Result<()> {
    let server = sandbox.server(name).await?;
    let create = format!(r#"sc.exe create {GO_DAEMON} binPath= "C:\k\{GO_DAEMON}.exe controller" start= auto"#);
    let mut host = winhost_sim::ssh::lock(&server.host);
    let output = host.exec("SSH-2.0-go-operator", &create);
    ensure!(output.code == 0, "sc.exe create failed: {output:?}");
    let kubeconfig = winhost_sim::disk::WinPath::parse(GO_DAEMON_KUBECONFIG)?;
    host.disk.create_dir_all(&kubeconfig.parent().context("a path without a parent")?)?;
    host.disk
        .write(&kubeconfig, b"apiVersion: v1\nkind: Config\nusers:\n- name: wicd\n  user:\n    token: go-daemon\n")?;
    Ok(())
}

/// Whether the host `name` still holds the Go daemon's kubeconfig.
async fn has_go_daemon_kubeconfig(sandbox: &Sandbox, name: &str) -> anyhow::Result<bool> {
    let server = sandbox.server(name).await?;
    let path = winhost_sim::disk::WinPath::parse(GO_DAEMON_KUBECONFIG)?;
    Ok(winhost_sim::ssh::lock(&server.host).disk.entry(&path).is_some())
}

/// Creates what the Go operator leaves in the cluster for its daemon (upstream config/wicd/, config/rbac/wicd-*,
/// `EnsureWICDRBAC`, the token Secret), each with its upstream name and content.
async fn create_go_daemon_identity(sandbox: &Sandbox) -> anyhow::Result<()> {
    let client = sandbox.admin_client();
    let post = PostParams::default();
    let named = |name: &str| ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() };
    let account = Subject {
        kind: "ServiceAccount".into(),
        name: GO_DAEMON.into(),
        namespace: Some(OPERATOR_NAMESPACE.into()),
        ..Subject::default()
    };
    let rule = |group: &str, resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(resources.iter().map(|text| (*text).to_owned()).collect()),
        verbs: verbs.iter().map(|text| (*text).to_owned()).collect(),
        ..PolicyRule::default()
    };
    let role_ref = |kind: &str, name: &str| RoleRef {
        api_group: "rbac.authorization.k8s.io".into(),
        kind: kind.into(),
        name: name.into(),
    };
    Api::<ServiceAccount>::namespaced(client.clone(), OPERATOR_NAMESPACE)
        .create(&post, &ServiceAccount { metadata: named(GO_DAEMON), ..ServiceAccount::default() })
        .await?;
    let mut token = named(GO_DAEMON);
    token.annotations = Some(BTreeMap::from([("kubernetes.io/service-account.name".to_owned(), GO_DAEMON.to_owned())]));
    Api::<Secret>::namespaced(client.clone(), OPERATOR_NAMESPACE)
        .create(
            &post,
            &Secret { metadata: token, type_: Some("kubernetes.io/service-account-token".into()), ..Secret::default() },
        )
        .await?;
    let configmaps = rule("", &["configmaps"], &["get", "list", "watch"]);
    Api::<Role>::namespaced(client.clone(), OPERATOR_NAMESPACE)
        .create(&post, &Role { metadata: named(GO_DAEMON), rules: Some(vec![configmaps.clone()]) })
        .await?;
    Api::<RoleBinding>::namespaced(client.clone(), OPERATOR_NAMESPACE)
        .create(
            &post,
            &RoleBinding {
                metadata: named(GO_DAEMON),
                role_ref: role_ref("Role", GO_DAEMON),
                subjects: Some(vec![account.clone()]),
            },
        )
        .await?;
    let nodes = rule("", &["nodes"], &["get", "list", "patch", "update"]);
    for name in [GO_DAEMON, GO_DAEMON_CERTIFICATE_GROUP_RBAC] {
        Api::<ClusterRole>::all(client.clone())
            .create(
                &post,
                &ClusterRole { metadata: named(name), rules: Some(vec![nodes.clone()]), ..ClusterRole::default() },
            )
            .await?;
    }
    let group = Subject {
        kind: "Group".into(),
        name: "system:wicd-nodes".into(),
        api_group: Some("rbac.authorization.k8s.io".into()),
        ..Subject::default()
    };
    for (name, subject) in [(GO_DAEMON, account), (GO_DAEMON_CERTIFICATE_GROUP_RBAC, group)] {
        Api::<ClusterRoleBinding>::all(client.clone())
            .create(
                &post,
                &ClusterRoleBinding {
                    metadata: named(name),
                    role_ref: role_ref("ClusterRole", name),
                    subjects: Some(vec![subject]),
                },
            )
            .await?;
    }
    Ok(())
}

/// The Go daemon's objects that still exist, as `Kind name`.
async fn go_daemon_identity_left(sandbox: &Sandbox) -> anyhow::Result<Vec<String>> {
    let client = sandbox.admin_client();
    let namespace = OPERATOR_NAMESPACE;
    let mut found = vec![
        (
            "ServiceAccount",
            GO_DAEMON,
            Api::<ServiceAccount>::namespaced(client.clone(), namespace).get_opt(GO_DAEMON).await?.is_some(),
        ),
        ("Secret", GO_DAEMON, Api::<Secret>::namespaced(client.clone(), namespace).get_opt(GO_DAEMON).await?.is_some()),
        ("Role", GO_DAEMON, Api::<Role>::namespaced(client.clone(), namespace).get_opt(GO_DAEMON).await?.is_some()),
        (
            "RoleBinding",
            GO_DAEMON,
            Api::<RoleBinding>::namespaced(client.clone(), namespace).get_opt(GO_DAEMON).await?.is_some(),
        ),
    ];
    for name in [GO_DAEMON, GO_DAEMON_CERTIFICATE_GROUP_RBAC] {
        found.push(("ClusterRole", name, Api::<ClusterRole>::all(client.clone()).get_opt(name).await?.is_some()));
        found.push((
            "ClusterRoleBinding",
            name,
            Api::<ClusterRoleBinding>::all(client.clone()).get_opt(name).await?.is_some(),
        ));
    }
    Ok(found.into_iter().filter(|(_, _, exists)| *exists).map(|(kind, name, _)| format!("{kind} {name}")).collect())
}

/// Adds a host at `address` holding what the Go operator leaves: its daemon service (stopped).
async fn go_configured_host(sandbox: &Sandbox, name: &str, address: Ipv4Addr) -> anyhow::Result<HostInfo> {
    let request = NewHost {
        name: Some(name.to_owned()),
        authorized_key: Some(sandbox.admin_key().public_line().to_owned()),
        address: Some(address),
        ..NewHost::default()
    };
    let info = sandbox.fleet().lock().await.add(request).await?;
    install_go_daemon(sandbox, &info.name).await?;
    Ok(info)
}

/// The record called `name`.
async fn record_named(sandbox: &Sandbox, name: &str) -> anyhow::Result<WindowsInstance> {
    let records = sandbox.windows_instances().await?;
    records.into_iter().find(|record| record.metadata.name.as_deref() == Some(name)).context("no such record")
}

/// The base64 of a key's wire format (the Go operator's stored form) from its OpenSSH line.
fn wire_blob(openssh: &str) -> anyhow::Result<String> {
    openssh.split_whitespace().nth(1).map(str::to_owned).context("not an OpenSSH key line")
}
