//! Machine API scenarios 1 and 6 of issue 10, on one sandbox (the operator as its own process with its manifests'
//! ServiceAccount; the harness fixtures serve `machine.openshift.io`, platform None). The test plays machine-api.
//!
//! 1. The operator renders `openshift-machine-api/windows-user-data` from `cloud-private-key`. A simulated host that
//!    starts unprovisioned (no authorized key) runs that user data as its first boot; a Windows Machine in phase
//!    Provisioned with the host's address as InternalIP, an InternalDNS name and a providerID is then configured
//!    into a Ready Node named after the InternalDNS address (the platform-None rule), with a `WindowsInstance` of
//!    origin Machine.
//! 6. A hand edit of `windows-user-data` is reverted.
//!
//! Then the mirror for Cluster API Machines (issue 18): once namespace `openshift-cluster-api` exists, a pass without
//! the operator's Role there gives one Warning Event `UserDataMirrorForbidden` on `cloud-private-key` naming the
//! kustomize component, and with the component applied the same user data appears there.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use wmco_cluster_client::names::{KUBERNETES_OS_LABEL, VERSION_ANNOTATION};
use wmco_cluster_client::types::{InstanceOrigin, InstancePhase};
use wmco_sandbox::machine_api::{
    add_unprovisioned_host, apply_cluster_api_component, create_cluster_api_namespace, create_provisioned_machine,
    edit_user_data, mirrored_user_data, provision, user_data,
};
use wmco_sandbox::{Sandbox, SandboxOptions, node_is_ready};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const USER_DATA_TIMEOUT: Duration = Duration::from_secs(120);
const READY_TIMEOUT: Duration = Duration::from_secs(900);
const REVERT_TIMEOUT: Duration = Duration::from_secs(120);
const VERSION_TIMEOUT: Duration = Duration::from_secs(120);
const MIRROR_TIMEOUT: Duration = Duration::from_secs(120);

/// The simulated host behind the Machine, and where it listens.
const HOST_NAME: &str = "winmachine-0";
const HOST_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 40);
/// The Machine, and the InternalDNS name machine-api reports for it (upper case, as some clouds print it).
const MACHINE_NAME: &str = "sandbox-win-a";
const INTERNAL_DNS: &str = "Win-A.Machines.Sim.Test";
/// On platform None the Node is named after the InternalDNS address, lower-cased.
const EXPECTED_NODE: &str = "win-a.machines.sim.test";
/// Where the user data writes the operator's public key.
const AUTHORIZED_KEYS: &str = r"C:\ProgramData\ssh\administrators_authorized_keys";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_provisioned_with_the_rendered_user_data_becomes_a_ready_node_and_hand_edits_are_reverted()
-> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 0, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let admin = sandbox.admin_client();

    let rendered = sandbox
        .wait_for("Secret openshift-machine-api/windows-user-data", USER_DATA_TIMEOUT, || async {
            user_data(&admin).await?.context("not rendered yet")
        })
        .await?;
    let key_blob = sandbox.admin_key().public_line().split_whitespace().nth(1).context("a public key line")?;
    ensure!(rendered.starts_with("<powershell>"), "platform None user data is wrapped in <powershell>: {rendered}");
    ensure!(rendered.contains(key_blob), "the user data authorizes the key of cloud-private-key");

    let host = add_unprovisioned_host(&sandbox, HOST_NAME, HOST_ADDRESS).await?;
    ensure!(
        sandbox.file_hash(HOST_NAME, AUTHORIZED_KEYS).await?.is_none(),
        "the host starts without an authorized key"
    );
    let first_boot = provision(&sandbox, HOST_NAME, wmco_user_data::script_from_user_data(&rendered)).await?;
    ensure!(first_boot.code == 0, "the user data failed on the host: {first_boot:?}");
    ensure!(sandbox.file_hash(HOST_NAME, AUTHORIZED_KEYS).await?.is_some(), "the user data authorized the key");

    create_provisioned_machine(&admin, MACHINE_NAME, &host, INTERNAL_DNS).await?;
    let ready = sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    let [ready] = ready.as_slice() else { anyhow::bail!("one Ready instance expected, got {}", ready.len()) };
    assert_eq!(ready.instance.metadata.name.as_deref(), Some(format!("machine-{MACHINE_NAME}").as_str()));
    assert_eq!(ready.instance.spec.origin, InstanceOrigin::Machine);
    assert_eq!(ready.instance.spec.machine_name.as_deref(), Some(MACHINE_NAME));
    assert_eq!(ready.instance.spec.address, HOST_ADDRESS.to_string());
    assert_eq!(ready.instance.spec.username, "Administrator");
    assert_eq!(ready.instance.spec.expected_node_name.as_deref(), Some(EXPECTED_NODE));
    let status = ready.instance.status.as_ref().context("the record has a status")?;
    assert_eq!(status.phase, Some(InstancePhase::Ready));
    assert_eq!(ready.node.metadata.name.as_deref(), Some(EXPECTED_NODE));
    assert!(node_is_ready(&ready.node));
    let labels = ready.node.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get(KUBERNETES_OS_LABEL).map(String::as_str), Some("windows"));
    // The Node list behind `wait_until_ready` is read before the records, so read the Node again.
    let nodes: Api<Node> = Api::all(admin.clone());
    sandbox
        .wait_for("the Node annotated with the operator version", VERSION_TIMEOUT, || async {
            let node = nodes.get(EXPECTED_NODE).await?;
            let annotations = node.metadata.annotations.unwrap_or_default();
            ensure!(annotations.contains_key(VERSION_ANNOTATION), "annotations: {annotations:?}");
            Ok(())
        })
        .await?;
    let unknown = sandbox.unknown_commands(HOST_NAME).await?;
    ensure!(unknown.is_empty(), "host {HOST_NAME} saw unknown commands: {unknown:?}");

    edit_user_data(&admin, "<powershell>\nexit 0\n</powershell>\n").await?;
    sandbox
        .wait_for("the hand edit of windows-user-data reverted", REVERT_TIMEOUT, || async {
            let current = user_data(&admin).await?.context("the Secret is gone")?;
            ensure!(current == rendered, "still edited: {current:?}");
            Ok(())
        })
        .await?;

    // The mirror. Each hand edit below starts a user-data pass at once (the operator also passes every 5 minutes).
    create_cluster_api_namespace(&admin).await?;
    edit_user_data(&admin, "<powershell>\nexit 1\n</powershell>\n").await?;
    sandbox
        .wait_for("a Warning Event naming the cluster-api component", MIRROR_TIMEOUT, || async {
            let events = sandbox.events_about("Secret", "cloud-private-key").await?;
            let warned = events.iter().any(|(kind, reason, note)| {
                kind == "Warning"
                    && reason == "UserDataMirrorForbidden"
                    && note.contains("manifests/components/cluster-api")
            });
            ensure!(warned, "events about cloud-private-key: {events:?}");
            Ok(())
        })
        .await?;
    apply_cluster_api_component(&sandbox).await?;
    edit_user_data(&admin, "<powershell>\nexit 2\n</powershell>\n").await?;
    sandbox
        .wait_for("windows-user-data mirrored into openshift-cluster-api", MIRROR_TIMEOUT, || async {
            let mirrored = mirrored_user_data(&admin).await?.context("not mirrored yet")?;
            ensure!(mirrored == rendered, "the mirror differs: {mirrored:?}");
            Ok(())
        })
        .await?;
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}
