//! Hostile hosts never hurt others (issue 21): six hosts answer with something no Windows host should send, two
//! hosts are healthy, all eight are in the ConfigMap at once. Four answer every command (so the first, the identity
//! probe, fails), two answer only the state probe (so identity passes and the probe's parser gets the input):
//!
//! - 100 MiB of standard output (the transport stops reading at its 4 MiB cap);
//! - bytes that are neither UTF-8 nor valid UTF-16 (every command, and the state probe);
//! - one line of JSON objects nested 10,000 deep (every command, and the state probe);
//! - a command accepted and never answered (the operator runs with `--ssh-command-timeout-seconds=10`).
//!
//! Proof: both healthy hosts turn Ready while the hostile ones are failing; every hostile host's record carries an
//! error naming the host and says what went wrong, a Warning Event names the step, and the operator retries it
//! (the host's fault rule answered more than once); the operator's peak resident memory (`VmHWM`) stays under
//! [`PEAK_RSS_BOUND`], which a single buffered 100 MiB answer would exceed. Then the hosts stop misbehaving and all
//! six turn Ready: nothing was left half-done. Logs and Events leak no secret.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use winhost_sim::faults::{FaultAction, FaultPoint, FaultRule};
use winhost_sim::ssh::{Faults, lock};
use wmco_cluster_client::types::{InstancePhase, WindowsInstance};
use wmco_instance_inventory::instance_name;
use wmco_sandbox::{OPERATOR_NAMESPACE, Sandbox, SandboxOptions};

/// Generous upper bounds for a loaded 2-core machine (never timed assertions).
const READY_TIMEOUT: Duration = Duration::from_secs(600);
const FAILURE_TIMEOUT: Duration = Duration::from_secs(300);
/// The operator's peak resident set: well above its ordinary peak in a dev build (about 56 MiB with these eight
/// hosts), well below what one buffered 100 MiB answer costs.
const PEAK_RSS_BOUND: u64 = 128 * 1024 * 1024;
/// The hostile answer's size.
const HUGE_OUTPUT: u64 = 100 * 1024 * 1024;
/// The hostile JSON's depth.
const JSON_DEPTH: u32 = 10_000;

/// Where the state probe runs from: a content-addressed script the flow uploads to `C:\k\wmco\scripts` and runs
/// by path (no other command runs from there).
const STATE_PROBE: &str = r"\k\wmco\scripts\";

/// One hostile host: which commands it answers, how, and what its record's error must say.
struct Hostile {
    at: FaultPoint,
    action: FaultAction,
    says: &'static str,
}

fn hostile_hosts() -> Vec<Hostile> {
    let every_command = || FaultPoint::Command(String::new());
    let state_probe = || FaultPoint::Command(STATE_PROBE.to_owned());
    vec![
        Hostile {
            at: every_command(),
            action: FaultAction::HugeOutput { bytes: HUGE_OUTPUT },
            says: "printed more than",
        },
        Hostile {
            at: every_command(),
            action: FaultAction::InvalidText,
            says: "identity probe printed no usable JSON",
        },
        Hostile {
            at: every_command(),
            action: FaultAction::DeepJson { depth: JSON_DEPTH },
            says: "identity probe printed no usable JSON",
        },
        Hostile { at: every_command(), action: FaultAction::Hang, says: "timed out" },
        Hostile { at: state_probe(), action: FaultAction::InvalidText, says: "state probe" },
        Hostile { at: state_probe(), action: FaultAction::DeepJson { depth: JSON_DEPTH }, says: "state probe" },
    ]
}

/// The operator's peak resident set size in bytes, from `/proc/<pid>/status`.
fn peak_rss(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).context("no VmHWM line")?;
    let kib: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse()?;
    Ok(kib * 1024)
}

async fn record_of(sandbox: &Sandbox, key: &str) -> anyhow::Result<WindowsInstance> {
    let name = instance_name(key);
    sandbox
        .windows_instances()
        .await?
        .into_iter()
        .find(|record| record.metadata.name.as_deref() == Some(&name))
        .with_context(|| format!("no WindowsInstance {name} yet"))
}

/// Merges an annotation into a record, so the controller reconciles it now rather than after its backoff.
async fn touch_record(sandbox: &Sandbox, key: &str) -> anyhow::Result<()> {
    let records: Api<WindowsInstance> = Api::namespaced(sandbox.admin_client(), OPERATOR_NAMESPACE);
    let patch = json!({"metadata": {"annotations": {"e2e.wmco.test/touched": "faults-cleared"}}});
    records.patch(&instance_name(key), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_hosts_fail_alone_with_bounded_memory() -> anyhow::Result<()> {
    let hostile = hostile_hosts();
    let healthy = 2;
    let sandbox = Sandbox::start(SandboxOptions {
        hosts: u8::try_from(hostile.len() + healthy)?,
        localhost_host: false,
        operator_args: vec!["--ssh-command-timeout-seconds=10".to_owned()],
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    let hosts = sandbox.hosts().to_vec();
    let (hostile_hosts, healthy_hosts) = hosts.split_at(hostile.len());
    for (host, fault) in hostile_hosts.iter().zip(&hostile) {
        let rule = FaultRule::always(fault.at.clone(), fault.action.clone());
        *lock(&sandbox.server(&host.info.name).await?.faults) = Faults { rules: vec![rule], ..Faults::default() };
    }
    let started = Instant::now();
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;

    for host in healthy_hosts {
        let key = host.key.clone();
        sandbox
            .wait_for(&format!("healthy host {key} Ready"), READY_TIMEOUT, || async {
                let record = record_of(&sandbox, &key).await?;
                let phase = record.status.and_then(|status| status.phase);
                ensure!(phase == Some(InstancePhase::Ready), "phase {phase:?}");
                Ok(())
            })
            .await?;
        eprintln!("healthy host {key} Ready after {:.1} s", started.elapsed().as_secs_f64());
    }

    for (host, fault) in hostile_hosts.iter().zip(&hostile) {
        let key = host.key.clone();
        let error = sandbox
            .wait_for(&format!("an error on hostile host {key}'s record"), FAILURE_TIMEOUT, || async {
                let record = record_of(&sandbox, &key).await?;
                let status = record.status.unwrap_or_default();
                ensure!(status.phase != Some(InstancePhase::Ready), "a hostile host turned Ready");
                let error = status.last_error.context("no error recorded yet")?;
                ensure!(error.contains(&key), "the error does not name the host: {error}");
                ensure!(error.contains(fault.says), "the error does not say {:?}: {error}", fault.says);
                Ok(error)
            })
            .await?;
        eprintln!("hostile host {key} ({:?} at {:?}): {error}", fault.action, fault.at);
        let record = record_of(&sandbox, &key).await?;
        let events = sandbox.events_about("WindowsInstance", &record.metadata.name.clone().unwrap_or_default()).await?;
        ensure!(
            events.iter().any(|(kind, reason, _)| kind.as_str() == "Warning" && reason == "InstanceSetupFailure"),
            "no InstanceSetupFailure Warning for {key}: {events:?}"
        );
        let server = sandbox.server(&host.info.name).await?;
        sandbox
            .wait_for(&format!("a retry on {key}"), FAILURE_TIMEOUT, || async {
                let attempts = lock(&server.faults).rule_hits;
                ensure!(attempts >= 2, "{attempts} hostile answer(s) so far");
                Ok(())
            })
            .await?;
    }

    let pid = sandbox.operator_pid().context("the operator is not running")?;
    let peak = peak_rss(pid)?;
    eprintln!("operator peak RSS with hostile hosts: {:.1} MiB", peak as f64 / 1048576.0);
    ensure!(peak < PEAK_RSS_BOUND, "operator peak RSS {peak} bytes ≥ {PEAK_RSS_BOUND}");

    for host in hostile_hosts {
        *lock(&sandbox.server(&host.info.name).await?.faults) = Faults::default();
        touch_record(&sandbox, &host.key).await?;
    }
    sandbox.wait_until_ready(hosts.len(), READY_TIMEOUT).await?;
    eprintln!("all {} hosts Ready after the faults were cleared", hosts.len());
    sandbox.check_operator()?;
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}
