//! Command transcripts (issue 18): `wmco run --record-transcripts DIR` records every operation on a host, one JSON
//! line each, secrets redacted; `winhost-replay` replays such a transcript against a fresh simulated host.
//!
//! Proof: a host joins as a Ready node with the operator recording into the sandbox's transcript directory. Its
//! transcript exists (mode 0600 in a 0700 directory), holds the identity command and a state probe, and its commands,
//! with each upload batch's verify command, are in order exactly what the simulated host ran for the operator (so
//! nothing went unrecorded). The secret scan, which reads the transcript directory too, finds no secret. Replayed
//! on a fresh simulated host, no command is unknown to the simulator and the identity command prints the same.
//!
//! With a credentialed proxy and a registry credential (issue 36): a host joins with the proxy in its services'
//! environment and the credential in containerd's `hosts.toml`; its transcript shows the proxy URL with the user
//! info replaced (`http://[REDACTED]@…`), and the secret scan finds neither the proxy's user and password nor the
//! registry's in the transcript, the operator log, any Event or record status. `wmco diagnose --archive` of the host
//! writes a tarball of mode 0600 holding neither.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt as _;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use base64::Engine as _;
use kube::Api;
use kube::api::PostParams;
use winhost_sim::fleet::NewHost;
use winhost_sim::replay::{Verdict, replay_file};
use wmco_cluster_client::types::ImageDigestMirrorSet;
use wmco_instance_inventory::instance_name;
use wmco_sandbox::operator::locate_operator_binary;
use wmco_sandbox::secret_scan::{Place, SecretKind};
use wmco_sandbox::{HOST_USER, OPERATOR_NAMESPACE, Sandbox, SandboxOptions};
use wmco_ssh_transport::transcript::{Operation, read_transcript, transcript_file_name};

/// A generous upper bound for a loaded 2-core machine (never a timed assertion).
const READY_TIMEOUT: Duration = Duration::from_secs(600);
const ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 65);
/// The identity command's first statement (every probe reads the host's names too, into other variables).
const IDENTITY_MARKER: &str = "$h = [System.Net.Dns]::GetHostName()";
/// Where the state probe's script is uploaded to and run from.
const PROBE_SCRIPTS: &str = r"C:\k\wmco\scripts\";
/// A proxy URL with a user and password long enough for the secret scan (16 characters and more).
const PROXY_USER_INFO: &str = "wmco-e2e:pr0xy-pa55word-e2e";
const PROXY_HOST: &str = "proxy.example:3129";
/// A registry's credential in the pull secret, and the mirror it is for.
const REGISTRY_USER_PASSWORD: &str = "mirror-e2e:registry-pa55word-e2e";
const MIRROR: &str = "mirror.example:5000";
const QUAY_HOSTS_TOML: &str = r"C:\k\containerd\registries\quay.io\hosts.toml";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_run_is_complete_redacted_and_replays_on_the_simulator() -> anyhow::Result<()> {
    let started = Instant::now();
    let sandbox = Sandbox::start(SandboxOptions { hosts: 0, localhost_host: false, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let directory = sandbox.transcripts_dir();
    sandbox.restart_operator_with(&[format!("--record-transcripts={}", directory.display())]).await?;
    ensure!(directory.is_dir(), "wmco run did not create {}", directory.display());
    let mode = std::fs::metadata(&directory)?.permissions().mode() & 0o777;
    ensure!(mode == 0o700, "the transcript directory has mode {mode:o}");

    let request = NewHost {
        name: Some("winhost-transcript".to_owned()),
        authorized_key: Some(sandbox.admin_key().public_line().to_owned()),
        address: Some(ADDRESS),
        ..NewHost::default()
    };
    let host = sandbox.fleet().lock().await.add(request).await?;
    sandbox.write_instances(&[(ADDRESS.to_string(), format!("username={HOST_USER}"))].into()).await?;
    let ready = sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    ensure!(ready.len() == 1, "{ready:?}");

    let path = directory.join(transcript_file_name(&format!("{HOST_USER}@{ADDRESS}:{}", sandbox.ssh_port())));
    ensure!(path.is_file(), "no transcript at {}", path.display());
    let mode = std::fs::metadata(&path)?.permissions().mode() & 0o777;
    ensure!(mode == 0o600, "the transcript has mode {mode:o}");
    let entries = read_transcript(&path)?;
    let host_log = sandbox.operator_commands(&host.name).await?;
    let mut executed = Vec::new();
    for entry in &entries {
        match &entry.operation {
            Operation::Run { command, .. } => executed.push(command.clone()),
            Operation::UploadBatch { verify, verify_commands: Some(count), .. } => {
                executed.extend(std::iter::repeat_n(verify.clone(), usize::try_from(*count)?));
            }
            Operation::Upload { verify: Some(verify), file } if file.outcome.is_some() => executed.push(verify.clone()),
            _ => {}
        }
    }
    // The transcript is written after each command returns: it is a prefix of what the host ran so far.
    let ran: Vec<&str> = host_log.iter().map(|command| command.line.as_str()).collect();
    ensure!(executed.len() <= ran.len(), "{} commands recorded, {} ran", executed.len(), ran.len());
    for (index, (recorded, ran)) in executed.iter().zip(&ran).enumerate() {
        ensure!(recorded == ran, "command #{index} recorded as\n{recorded}\nbut the host ran\n{ran}");
    }
    let script = |entry: &wmco_ssh_transport::transcript::TranscriptEntry| match &entry.operation {
        Operation::Run { script, .. } => script.clone().unwrap_or_default(),
        _ => String::new(),
    };
    let identity = entries.iter().position(|entry| script(entry).contains(IDENTITY_MARKER));
    let identity = identity.context("the transcript has no identity command")?;
    let probe = entries.iter().any(|entry| {
        matches!(&entry.operation, Operation::Run { command, .. } if command.contains(" -File ") && command.contains(PROBE_SCRIPTS))
    });
    ensure!(probe, "the transcript has no state probe");
    let uploads: usize = entries
        .iter()
        .map(|entry| match &entry.operation {
            Operation::UploadBatch { files, .. } => files.len(),
            Operation::Upload { .. } => 1,
            _ => 0,
        })
        .sum();
    ensure!(uploads >= 10, "only {uploads} uploads recorded");
    let scan = sandbox.assert_no_secret_leaked().await?;
    ensure!(scan.places.contains(&Place::Transcript(path.clone())), "the secret scan did not read the transcript");

    let replay = tokio::task::spawn_blocking(move || replay_file(&path)).await??;
    println!("replay: {}", replay.summary());
    for step in replay.steps.iter().filter(|step| !step.differences.is_empty()) {
        println!(
            "  {} {} {}: {}: {}",
            step.entry,
            step.operation,
            step.verdict,
            step.subject,
            step.differences.join("; ")
        );
    }
    ensure!(replay.unknown() == 0, "commands unknown to the simulator: {}", replay.summary());
    ensure!(replay.identity.source == Some(identity + 1), "the replay's host identity: {:?}", replay.identity);
    ensure!(
        replay.identity.node_ip == host.node_ip && replay.identity.hostname == host.hostname,
        "{:?}",
        replay.identity
    );
    let identity_step = &replay.steps[identity];
    ensure!(identity_step.verdict == Verdict::Same, "the identity command replayed differently: {identity_step:?}");
    println!("transcripts e2e: {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_and_registry_credentials_reach_the_host_but_no_transcript_log_event_record_or_archive()
-> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions {
        hosts: 1,
        localhost_host: false,
        record_transcripts: true,
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    let https_proxy = format!("http://{PROXY_USER_INFO}@{PROXY_HOST}");
    sandbox.set_proxy_status("", &https_proxy, ".svc").await?;
    let rule: ImageDigestMirrorSet = serde_json::from_value(serde_json::json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", "metadata": {"name": "release"},
        "spec": {"imageDigestMirrors": [{"source": "quay.io/openshift-release-dev",
                                         "mirrors": [format!("{MIRROR}/openshift-release-dev")]}]}}))?;
    Api::<ImageDigestMirrorSet>::all(sandbox.admin_client()).create(&PostParams::default(), &rule).await?;
    sandbox.set_registry_credentials(MIRROR, REGISTRY_USER_PASSWORD).await?;
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    sandbox.wait_until_ready(1, READY_TIMEOUT).await?;

    // The credentials reached the host, as they must.
    let host = sandbox.hosts()[0].clone();
    let auth = base64::engine::general_purpose::STANDARD.encode(REGISTRY_USER_PASSWORD);
    let found = sandbox.machine_env(&host.info.name, "HTTPS_PROXY").await?;
    ensure!(found.as_deref() == Some(https_proxy.as_str()), "HTTPS_PROXY on the host is {found:?}");
    let hosts_toml = String::from_utf8(sandbox.read_file(&host.info.name, QUAY_HOSTS_TOML).await?.unwrap_or_default())?;
    ensure!(hosts_toml.contains(&format!("Basic {auth}")), "{QUAY_HOSTS_TOML}: {hosts_toml:?}");

    // The transcript shows where the proxy went, without its user info.
    let transcripts = std::fs::read_dir(sandbox.transcripts_dir())?.collect::<Result<Vec<_>, _>>()?;
    ensure!(transcripts.len() == 1, "{} transcripts", transcripts.len());
    let transcript = std::fs::read_to_string(transcripts[0].path())?;
    ensure!(transcript.contains(&format!("http://[REDACTED]@{PROXY_HOST}")), "the transcript never shows the proxy");
    let scan = sandbox.assert_no_secret_leaked().await?;
    for kind in [SecretKind::ProxyCredentials, SecretKind::RegistryCredentials] {
        ensure!(scan.secrets_of(kind) == 1, "{kind} not searched: {scan}");
    }
    ensure!(scan.places.iter().any(|place| matches!(place, Place::RecordStatus(_))), "no record scanned: {scan}");

    // wmco diagnose --archive: owner-only, and neither credential inside.
    let scratch = tempfile::tempdir()?;
    let archive = scratch.path().join("diagnosis.tar.gz");
    let binary = locate_operator_binary()?;
    let output = std::process::Command::new(&binary)
        .args(["diagnose", &instance_name(&host.key), "--operator-log"])
        .arg(sandbox.operator_log_path())
        .arg("--archive")
        .arg(&archive)
        .arg("--kubeconfig")
        .arg(sandbox.kubeconfig_path())
        .args(["-n", OPERATOR_NAMESPACE])
        .output()?;
    ensure!(output.status.success(), "wmco diagnose: {}", String::from_utf8_lossy(&output.stderr));
    let mode = std::fs::metadata(&archive)?.permissions().mode() & 0o777;
    ensure!(mode == 0o600, "the archive has mode {mode:o}");
    let extracted = scratch.path().join("extracted");
    std::fs::create_dir_all(&extracted)?;
    let status = std::process::Command::new("tar").arg("-xzf").arg(&archive).arg("-C").arg(&extracted).status()?;
    ensure!(status.success(), "tar -xzf {} failed", archive.display());
    let password = |user_password: &'static str| user_password.split_once(':').map_or("", |(_, password)| password);
    let secrets =
        [PROXY_USER_INFO, password(PROXY_USER_INFO), REGISTRY_USER_PASSWORD, password(REGISTRY_USER_PASSWORD), &auth];
    let mut pending = vec![extracted];
    let mut entries = 0;
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            pending.extend(
                std::fs::read_dir(&path)?
                    .map(|entry| entry.map(|entry| entry.path()))
                    .collect::<Result<Vec<_>, _>>()?,
            );
            continue;
        }
        let contents = std::fs::read_to_string(&path)?;
        ensure!(!secrets.iter().any(|secret| contents.contains(secret)), "a credential in {}", path.display());
        entries += 1;
    }
    ensure!(entries >= 5, "only {entries} files in the archive");
    Ok(())
}
