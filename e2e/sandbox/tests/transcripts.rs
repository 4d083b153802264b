//! Command transcripts (issue 18): `wmco run --record-transcripts DIR` records every operation on a host, one JSON
//! line each, secrets redacted; `winhost-replay` replays such a transcript against a fresh simulated host.
//!
//! Proof: a host joins as a Ready node with the operator recording into the sandbox's transcript directory. Its
//! transcript exists (mode 0600 in a 0700 directory), holds the identity command and a state probe, and its commands,
//! with each upload batch's verify command, are in order exactly what the simulated host ran for the operator (so
//! nothing went unrecorded). The secret scan, which reads the transcript directory too, finds no secret. Replayed
//! on a fresh simulated host, no command is unknown to the simulator and the identity command prints the same.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt as _;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use winhost_sim::fleet::NewHost;
use winhost_sim::replay::{Verdict, replay_file};
use wmco_sandbox::secret_scan::Place;
use wmco_sandbox::{HOST_USER, Sandbox, SandboxOptions};
use wmco_ssh_transport::transcript::{Operation, read_transcript, transcript_file_name};

/// A generous upper bound for a loaded 2-core machine (never a timed assertion).
const READY_TIMEOUT: Duration = Duration::from_secs(600);
const ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 65);
/// The identity command's first statement (every probe reads the host's names too, into other variables).
const IDENTITY_MARKER: &str = "$h = [System.Net.Dns]::GetHostName()";
/// Where the state probe's script is uploaded to and run from.
const PROBE_SCRIPTS: &str = r"C:\k\wmco\scripts\";

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
