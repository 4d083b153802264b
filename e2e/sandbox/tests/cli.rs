//! `wmco status` and `wmco diagnose` (issue 19) against the e2e control plane: a sandbox with two simulated hosts,
//! one refusing connections. `wmco status` names the failing host's phase, its Degraded condition and last error;
//! `wmco diagnose` of the failing host names the failure and carries its record, Events and operator log lines;
//! of the Ready host it carries the Node, the node's CSRs with their decisions, and (with `--ssh-key`) the node
//! services running. `-o json` and `-o yaml` parse back with `apiVersion`, `kind` and only camelCase keys; the
//! archive holds the report and the raw objects; neither the reports nor the archive hold a line of the admin's
//! private key, and the sandbox's secret scan passes.
//!
//! Needs the control-plane binaries and the `wmco` binary (`WMCO_BIN`, set by `cargo xtask test`).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use serde_json::Value;
use winhost_sim::ssh::{Faults, lock};
use wmco_instance_inventory::instance_name;
use wmco_sandbox::operator::locate_operator_binary;
use wmco_sandbox::{OPERATOR_NAMESPACE, Sandbox, SandboxOptions};

const READY_TIMEOUT: Duration = Duration::from_secs(900);
const REACTION_TIMEOUT: Duration = Duration::from_secs(300);
const API_VERSION: &str = "cli.wmco-rs.io/v1alpha1";
/// Keys whose object holds data (label and annotation names), not field names.
const DATA_MAPS: [&str; 4] = ["labels", "annotations", "matchLabels", "nodeSelector"];

/// `wmco ARGS --kubeconfig … -n …`: exit code, stdout, stderr.
fn wmco(sandbox: &Sandbox, args: &[&str]) -> anyhow::Result<(Option<i32>, String, String)> {
    let binary = locate_operator_binary()?;
    let output = Command::new(&binary)
        .args(args)
        .arg("--kubeconfig")
        .arg(sandbox.kubeconfig_path())
        .args(["-n", OPERATOR_NAMESPACE])
        .env("RUST_LOG", "error")
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    let (stdout, stderr) =
        (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned());
    eprintln!("$ wmco {}\n{stdout}{stderr}", args.join(" "));
    Ok((output.status.code(), stdout, stderr))
}

/// The document `wmco ARGS -o json` prints, after checking that it and `-o yaml` exit 0 and carry `kind`,
/// `apiVersion` and only camelCase keys (the two runs read a live cluster, so their contents may differ).
fn document(sandbox: &Sandbox, args: &[&str], kind: &str) -> anyhow::Result<(Value, String)> {
    let mut json = None;
    for format in ["json", "yaml"] {
        let full: Vec<&str> = args.iter().copied().chain(["-o", format]).collect();
        let (code, stdout, stderr) = wmco(sandbox, &full)?;
        ensure!(code == Some(0), "wmco {full:?} exited {code:?}: {stderr}");
        let value: Value = match format {
            "json" => serde_json::from_str(&stdout).with_context(|| format!("wmco {full:?}: not JSON"))?,
            _ => serde_saphyr::from_str(&stdout).with_context(|| format!("wmco {full:?}: not YAML"))?,
        };
        ensure!(value["apiVersion"] == API_VERSION && value["kind"] == kind, "wmco {full:?}: {stdout}");
        let mut bad = Vec::new();
        non_camel_case_keys(&value, "", &mut bad);
        ensure!(bad.is_empty(), "wmco {full:?}: keys not in camelCase: {bad:?}");
        if format == "json" {
            json = Some((value, stdout));
        }
    }
    json.context("no JSON document")
}

fn non_camel_case_keys(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let child_path = format!("{path}.{key}");
                let mut characters = key.chars();
                let camel = characters.next().is_some_and(|first| first.is_ascii_lowercase())
                    && characters.all(|character| character.is_ascii_alphanumeric());
                if !camel {
                    found.push(child_path.clone());
                }
                if !DATA_MAPS.contains(&key.as_str()) {
                    non_camel_case_keys(child, &child_path, found);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                non_camel_case_keys(item, &format!("{path}[{index}]"), found);
            }
        }
        _ => {}
    }
}

/// The body lines of the admin's private key (the BEGIN and END lines are no secret).
fn private_key_lines(sandbox: &Sandbox) -> Vec<String> {
    sandbox
        .admin_key()
        .private_openssh()
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("-----"))
        .map(str::to_owned)
        .collect()
}

fn assert_no_key_line(sandbox: &Sandbox, what: &str, text: &str) -> anyhow::Result<()> {
    let lines = private_key_lines(sandbox);
    ensure!(!lines.is_empty(), "the admin key has no body lines to look for");
    for line in &lines {
        ensure!(!text.contains(line.as_str()), "{what} holds a line of the admin's private key");
    }
    Ok(())
}

/// Every file under `root`, with its text.
fn files_under(root: &Path) -> anyhow::Result<Vec<(PathBuf, String)>> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).with_context(|| format!("read {}", directory.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let text = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
                found.push((path, text));
            }
        }
    }
    found.sort();
    Ok(found)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_diagnose_name_a_failing_host() -> anyhow::Result<()> {
    let sandbox = Sandbox::start(SandboxOptions { hosts: 2, localhost_host: false, ..SandboxOptions::default() })
        .await
        .context("the sandbox did not start")?;
    let (good, failing) = (sandbox.hosts()[0].clone(), sandbox.hosts()[1].clone());
    *lock(&sandbox.server(&failing.info.name).await?.faults) = Faults { refuse_connections: true, ..Faults::default() };
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    let (good_record, failing_record) = (instance_name(&good.key), instance_name(&failing.key));
    let last_error = sandbox
        .wait_for("the unreachable host's record to carry its error", REACTION_TIMEOUT, || async {
            let records = sandbox.windows_instances().await?;
            let record = records
                .iter()
                .find(|record| record.metadata.name.as_deref() == Some(failing_record.as_str()))
                .context("no record yet")?;
            let status = record.status.clone().unwrap_or_default();
            ensure!(status.condition_is_true("Degraded"), "not Degraded yet");
            status.last_error.context("no lastError yet")
        })
        .await?;

    // wmco status: the table and the failing host's paragraph.
    let (code, human, stderr) = wmco(&sandbox, &["status"])?;
    ensure!(code == Some(0), "wmco status exited {code:?}: {stderr}");
    ensure!(human.starts_with("NAME "), "{human}");
    ensure!(human.lines().any(|line| line.starts_with(&good_record) && line.contains("Ready")), "{human}");
    ensure!(human.contains(&format!("{failing_record}: Degraded (RetryingAfterError): ")), "{human}");
    ensure!(human.contains(&format!("  last error: {last_error}")), "{human}");
    ensure!(human.contains(&format!("wmco diagnose {failing_record} -n {OPERATOR_NAMESPACE}")), "{human}");
    let (fleet, fleet_json) = document(&sandbox, &["status"], "FleetStatus")?;
    let instances = fleet["instances"].as_array().context("instances")?;
    let failing_entry =
        instances.iter().find(|entry| entry["name"] == failing_record.as_str()).context("failing host listed")?;
    ensure!(failing_entry["lastError"] == last_error.as_str(), "{failing_entry}");
    ensure!(failing_entry["phase"] == "Configuring", "{failing_entry}");
    let degraded = failing_entry["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|condition| condition["type"] == "Degraded"))
        .context("Degraded condition")?;
    ensure!(degraded["status"] == "True" && degraded["reason"] == "RetryingAfterError", "{degraded}");
    let good_entry =
        instances.iter().find(|entry| entry["name"] == good_record.as_str()).context("good host listed")?;
    ensure!(good_entry["lastEvent"]["reason"] == "InstanceSetup", "{good_entry}");
    assert_no_key_line(&sandbox, "wmco status -o json", &fleet_json)?;

    // wmco diagnose of the failing host: the record, Events, log lines; no Node, not contacted.
    let scratch = tempfile::tempdir()?;
    let key_file = scratch.path().join("admin_key");
    std::fs::write(&key_file, sandbox.admin_key().private_openssh())?;
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600))?;
    let operator_log = sandbox.operator_log_path();
    let port = sandbox.ssh_port().to_string();
    let key_arg = key_file.to_str().context("UTF-8 path")?;
    let log_arg = operator_log.to_str().context("UTF-8 path")?;
    let archive = scratch.path().join("failing.tar.gz");
    let archive_arg = archive.to_str().context("UTF-8 path")?;
    let failing_args =
        ["diagnose", failing_record.as_str(), "--operator-log", log_arg, "--ssh-key", key_arg, "--ssh-port", &port];
    let (code, human, stderr) = wmco(&sandbox, &[&failing_args[..], &["--archive", archive_arg]].concat())?;
    ensure!(code == Some(0), "wmco diagnose exited {code:?}: {stderr}");
    ensure!(human.contains(&format!("  last error: {last_error}")), "{human}");
    ensure!(human.contains("Degraded") && human.contains("RetryingAfterError"), "{human}");
    let (diagnosis, diagnosis_json) = document(&sandbox, &failing_args, "Diagnosis")?;
    ensure!(diagnosis["record"]["spec"]["address"] == failing.key.as_str(), "{diagnosis}");
    ensure!(diagnosis["record"]["status"]["lastError"] == last_error.as_str(), "{diagnosis}");
    ensure!(diagnosis["summary"]["lastError"] == last_error.as_str(), "{diagnosis}");
    ensure!(diagnosis["node"].is_null(), "the unreachable host has no Node: {}", diagnosis["node"]);
    // A retried error publishes no Event (only failures that need an admin do); the list is there, maybe empty.
    ensure!(diagnosis["events"].is_array(), "{diagnosis}");
    let log_lines = diagnosis["operatorLog"]["lines"].as_array().context("operatorLog.lines")?;
    ensure!(!log_lines.is_empty(), "no operator log line about {failing_record}");
    let key = format!("{OPERATOR_NAMESPACE}/{failing_record}");
    ensure!(log_lines.iter().all(|line| line.as_str().is_some_and(|line| line.contains(&key))), "{log_lines:?}");
    ensure!(diagnosis["services"]["error"].as_str().is_some_and(|error| error.contains("no pinned host key")));
    assert_no_key_line(&sandbox, "wmco diagnose -o json", &diagnosis_json)?;
    assert_no_key_line(&sandbox, "wmco diagnose", &human)?;

    let extracted = scratch.path().join("extracted");
    std::fs::create_dir_all(&extracted)?;
    let status = Command::new("tar").arg("-xzf").arg(&archive).arg("-C").arg(&extracted).status()?;
    ensure!(status.success(), "tar -xzf {} failed", archive.display());
    let files = files_under(&extracted)?;
    let names: Vec<String> = files
        .iter()
        .filter_map(|(path, _)| path.strip_prefix(&extracted).ok().map(|path| path.display().to_string()))
        .collect();
    for expected in
        ["report.txt", "report.json", "windowsinstance.yaml", "events.yaml", "csrs.yaml", "operator-log.txt"]
    {
        ensure!(
            names.contains(&format!("{failing_record}/{expected}")),
            "{expected} missing from the archive: {names:?}"
        );
    }
    for (path, text) in &files {
        assert_no_key_line(&sandbox, &format!("the archive's {}", path.display()), text)?;
    }

    // wmco diagnose of the Ready host: its Node, the node's CSRs and their decisions, its services over SSH.
    let good_args = ["diagnose", good_record.as_str(), "--ssh-key", key_arg, "--ssh-port", &port];
    let (diagnosis, diagnosis_json) = document(&sandbox, &good_args, "Diagnosis")?;
    let node_name = diagnosis["summary"]["node"].as_str().context("the Ready host has a node")?.to_owned();
    ensure!(diagnosis["node"]["name"] == node_name.as_str(), "{}", diagnosis["node"]);
    ensure!(diagnosis["node"]["ready"]["status"] == "True", "{}", diagnosis["node"]);
    let events = diagnosis["events"].as_array().context("events")?;
    ensure!(
        events.iter().any(|event| event["reason"] == "InstanceSetup"
            && event["regarding"] == format!("WindowsInstance {good_record}")),
        "no InstanceSetup Event: {events:?}"
    );
    let csrs = diagnosis["csrs"].as_array().context("csrs")?;
    ensure!(csrs.len() >= 2, "the node's client and serving CSRs: {csrs:?}");
    for csr in csrs {
        ensure!(csr["state"] == "Approved", "{csr}");
        ensure!(csr["decision"].as_str().is_some_and(|decision| decision.starts_with("Approved: ")), "{csr}");
    }
    let services = diagnosis["services"]["services"].as_array().context("services probed")?;
    let kubelet = services.iter().find(|service| service["name"] == "kubelet").context("kubelet probed")?;
    ensure!(kubelet["installed"] == true && kubelet["state"] == "running", "{kubelet}");
    // Without --operator-log the logs are read through the API from the Deployment's pods (the sandbox's operator
    // itself runs outside them, so they say nothing about the host).
    let sources = diagnosis["operatorLog"]["sources"].as_array().context("operatorLog.sources")?;
    ensure!(
        !sources.is_empty()
            && sources.iter().all(|source| {
                source.as_str().is_some_and(|source| source.starts_with("pod windows-machine-config-operator-"))
            }),
        "{sources:?} / notes {}",
        diagnosis["notes"]
    );
    assert_no_key_line(&sandbox, "wmco diagnose -o json of the Ready host", &diagnosis_json)?;

    let (code, _, stderr) = wmco(&sandbox, &["diagnose", "byoh-no-such-host"])?;
    ensure!(code == Some(2) && stderr.contains("no WindowsInstance byoh-no-such-host"), "{code:?}: {stderr}");

    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}
