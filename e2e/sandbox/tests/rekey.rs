//! Key rotation scenario of issue 10, BYOH half, on one sandbox: two hosts configured into Ready Nodes by the
//! operator process; the operator is stopped (so the rotation under test is the only actor: the operator's own
//! instances controller, rebuilt with a new key, would also annotate a Node its configure pass reaches); the admin
//! authorizes a new key on the first host only and puts it into `cloud-private-key`; the rotation
//! (`wmco_operator::fleet`, run in the test process as admin with the real SSH checker and API server) re-keys the
//! first host (its Node gets the new `pub-key-hash`, a `Rekeyed` Event) and publishes on the second host's record
//! one Warning Event `NewKeyNotAuthorized` naming the line, the file, the user and the host; a second pass changes
//! nothing and repeats no Warning; once the admin adds the line to the second host, it is re-keyed too.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams};
use semver::Version;
use sha2::{Digest as _, Sha256};
use winhost_sim::disk::WinPath;
use winhost_sim::ssh::lock;
use wmco_cluster_client::Seams;
use wmco_cluster_client::names::PUB_KEY_HASH_ANNOTATION;
use wmco_operator::fleet::{
    ADMINISTRATORS_AUTHORIZED_KEYS, FleetContext, FleetOutcome, FleetSettings, SshKeyChecker, not_authorized_note,
    payload_kubelet_version, reconcile_fleet,
};
use wmco_operator::ssh::SshSettings;
use wmco_payload_manifest::Manifest;
use wmco_sandbox::{
    AdminKey, HOST_USER, OPERATOR_NAMESPACE, PRIVATE_KEY_FIELD, PRIVATE_KEY_SECRET, Sandbox, SandboxOptions,
};

/// Generous upper bound for a loaded 2-core machine (never a timed assertion).
const READY_TIMEOUT: Duration = Duration::from_secs(900);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_rekeys_the_host_that_authorized_it_and_tells_the_admin_what_to_add_on_the_other()
-> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 2, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let ready = sandbox.wait_until_ready(2, READY_TIMEOUT).await?;
    let old_hash = hash_of_line(sandbox.admin_key().public_line());
    for instance in &ready {
        ensure!(node_hash(&instance.node).as_deref() == Some(old_hash.as_str()), "configured with the first key");
    }
    let configured = ready[0].instance.status.as_ref().and_then(|status| status.configured_version.clone());
    let operator_version = Version::parse(&configured.context("no configured version")?)?;
    sandbox.kill_operator();

    // The admin authorizes a new key on the first host only, then rotates the Secret.
    let new_key = AdminKey::generate()?;
    let new_hash = hash_of_line(new_key.public_line());
    let [authorizing, refusing] = [&sandbox.hosts()[0], &sandbox.hosts()[1]];
    authorize(&sandbox, &authorizing.info.name, new_key.public_line()).await?;
    let client = sandbox.admin_client();
    let encoded = base64::engine::general_purpose::STANDARD.encode(new_key.private_openssh());
    Api::<Secret>::namespaced(client.clone(), OPERATOR_NAMESPACE)
        .patch(
            PRIVATE_KEY_SECRET,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {PRIVATE_KEY_FIELD: encoded}})),
        )
        .await
        .context("rotating cloud-private-key")?;

    let settings =
        FleetSettings::new(OPERATOR_NAMESPACE, operator_version, payload_kubelet_version(&Manifest::product()?)?, 1);
    let kubeconfig = kube::config::Kubeconfig::read_from(sandbox.kubeconfig_path())?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    let seams = Seams::for_client(&client, config, "e2e-rekey", true)?;
    let ssh = SshSettings {
        port: sandbox.ssh_port(),
        client_version_suffix: Some("e2e-rekey".into()),
        ..SshSettings::default()
    };
    let checker = Arc::new(SshKeyChecker::new(ssh));
    let context = Arc::new(FleetContext::new(&seams, checker, settings));
    let records: BTreeMap<String, String> = sandbox
        .windows_instances()
        .await?
        .into_iter()
        .map(|record| (record.spec.address.clone(), record.metadata.name.clone().unwrap_or_default()))
        .collect();
    let authorizing_record = records.get(&authorizing.key).context("record of the first host")?.clone();
    let refusing_record = records.get(&refusing.key).context("record of the second host")?.clone();

    let first = reconcile_fleet(&context, jiff::Timestamp::now()).await?;
    ensure!(first.key_hash == new_hash, "the rotation works with the new key: {first:?}");
    ensure_outcome(&first, std::slice::from_ref(&authorizing_record), std::slice::from_ref(&refusing_record))?;
    let nodes = node_hashes(&sandbox).await?;
    ensure!(nodes.get(&authorizing.key) == Some(&Some(new_hash.clone())), "first Node re-keyed: {nodes:?}");
    ensure!(nodes.get(&refusing.key) == Some(&Some(old_hash.clone())), "second Node untouched: {nodes:?}");

    let expected_note =
        not_authorized_note(HOST_USER, &refusing.key, &line_of(new_key.public_line()), Duration::from_secs(30));
    ensure!(expected_note.contains(ADMINISTRATORS_AUTHORIZED_KEYS) && expected_note.contains(&refusing.key));
    let warnings = events(&client, "NewKeyNotAuthorized").await?;
    ensure!(
        warnings == vec![(refusing_record.clone(), "Warning".to_owned(), expected_note.clone())],
        "one Warning on the second host's record saying what to add where: {warnings:?}"
    );
    let rekeyed = events(&client, "Rekeyed").await?;
    ensure!(rekeyed.len() == 1 && rekeyed[0].0 == authorizing_record, "one Rekeyed Event: {rekeyed:?}");

    // A second pass: the first host is not checked again, the second is, and no Warning is repeated.
    let second = reconcile_fleet(&context, jiff::Timestamp::now()).await?;
    ensure_outcome(&second, &[], std::slice::from_ref(&refusing_record))?;
    ensure!(events(&client, "NewKeyNotAuthorized").await?.len() == 1, "the Warning was not repeated");

    // The admin adds the line on the second host: the next pass re-keys it and the fleet is converged.
    authorize(&sandbox, &refusing.info.name, new_key.public_line()).await?;
    let third = reconcile_fleet(&context, jiff::Timestamp::now()).await?;
    ensure_outcome(&third, std::slice::from_ref(&refusing_record), &[])?;
    let nodes = node_hashes(&sandbox).await?;
    ensure!(nodes.values().all(|hash| hash.as_deref() == Some(new_hash.as_str())), "all re-keyed: {nodes:?}");
    let converged = reconcile_fleet(&context, jiff::Timestamp::now()).await?;
    ensure!(converged.work.key_converged() && !converged.needs_retry(), "converged: {converged:?}");
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

fn ensure_outcome(outcome: &FleetOutcome, rekeyed: &[String], not_authorized: &[String]) -> anyhow::Result<()> {
    let rotation = &outcome.rotation;
    ensure!(rotation.rekeyed == rekeyed, "re-keyed {:?}, expected {rekeyed:?}", rotation.rekeyed);
    ensure!(
        rotation.not_authorized == not_authorized,
        "not authorized {:?}, expected {not_authorized:?}",
        rotation.not_authorized
    );
    ensure!(rotation.failed.is_empty() && rotation.replaced.is_empty(), "{outcome:?}");
    ensure!(outcome.started.is_empty() && outcome.failed.is_empty(), "no upgrade: {outcome:?}");
    Ok(())
}

/// Appends `line` to the host's `administrators_authorized_keys` (the old key stays authorized).
async fn authorize(sandbox: &Sandbox, host: &str, line: &str) -> anyhow::Result<()> {
    let server = sandbox.server(host).await?;
    let path = WinPath::parse(ADMINISTRATORS_AUTHORIZED_KEYS)?;
    let host = lock(&server.host);
    let mut contents = host.disk.read(&path)?;
    contents.extend_from_slice(format!("\r\n{line}\r\n").as_bytes());
    host.disk.write(&path, &contents)?;
    Ok(())
}

/// `<type> <base64>` of an `authorized_keys` line (any comment dropped).
fn line_of(public_line: &str) -> String {
    public_line.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

/// The `pub-key-hash` of a public key line, computed independently: hex SHA-256 of `<type> <base64>`.
fn hash_of_line(public_line: &str) -> String {
    hex::encode(Sha256::digest(line_of(public_line).as_bytes()))
}

fn node_hash(node: &k8s_openapi::api::core::v1::Node) -> Option<String> {
    node.metadata.annotations.as_ref()?.get(PUB_KEY_HASH_ANNOTATION).cloned()
}

/// Each host's Node `pub-key-hash`, by the host's ConfigMap key (its record's address).
async fn node_hashes(sandbox: &Sandbox) -> anyhow::Result<BTreeMap<String, Option<String>>> {
    let mut hashes = BTreeMap::new();
    let nodes = sandbox.windows_nodes().await?;
    for record in sandbox.windows_instances().await? {
        let node_name = record.status.as_ref().and_then(|status| status.expected_node_name.clone());
        let node = nodes.iter().find(|node| node.metadata.name == node_name).context("a record without its Node")?;
        hashes.insert(record.spec.address.clone(), node_hash(node));
    }
    Ok(hashes)
}

/// Events with `reason` in the operator namespace: (regarding name, type, note).
async fn events(client: &kube::Client, reason: &str) -> anyhow::Result<Vec<(String, String, String)>> {
    let events = Api::<Event>::namespaced(client.clone(), OPERATOR_NAMESPACE).list(&ListParams::default()).await?;
    Ok(events
        .items
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some(reason))
        .map(|event| {
            (
                event.regarding.and_then(|regarding| regarding.name).unwrap_or_default(),
                event.type_.unwrap_or_default(),
                event.note.unwrap_or_default(),
            )
        })
        .collect())
}
