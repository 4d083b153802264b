//! `wmco-sandbox`: starts a sandbox (`cargo xtask sandbox` builds what it needs and runs this), writes the
//! `windows-instances` ConfigMap for every simulated host, prints a line whenever an instance's phase or its
//! Node's readiness changes, and then either exits once all are Ready (`--exit-when-ready`; non-zero with the
//! reason on timeout) or stays up, printing the kubeconfig path, until Ctrl-C.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::bail;
use clap::Parser;
use winhost_sim::host::Latency;
use wmco_sandbox::{InstanceRow, Sandbox, SandboxOptions};

/// How often the records and Nodes are read.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The wmco sandbox: a local control plane, simulated Windows hosts, the OVN stand-in and the operator.
#[derive(Debug, Parser)]
#[command(name = "wmco-sandbox", version)]
struct Cli {
    /// How many simulated Windows hosts (the last one is named `localhost` in the ConfigMap, the others by IP).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=200))]
    hosts: u8,
    /// Exit 0 once every instance is Ready with a Ready Node (non-zero if that takes longer than --timeout).
    #[arg(long)]
    exit_when_ready: bool,
    /// How long the hosts may take to become Ready, in seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Extra `wmco run` arguments, e.g. `--operator-arg=--max-concurrent-configurations=1` (repeatable).
    #[arg(long = "operator-arg", value_name = "ARG", allow_hyphen_values = true)]
    operator_args: Vec<String>,
    /// Keep the sandbox directory (operator log, hosts' disks) after exit.
    #[arg(long)]
    keep: bool,
    /// The payload directory the operator serves, e.g. the real payload `cargo xtask payload build` prints
    /// (default: the cached small synthetic payload, with which the operator runs with `--allow-synthetic-payload`).
    #[arg(long, value_name = "DIR")]
    payload_dir: Option<PathBuf>,
    /// Run the operator from this image (the `oci-archive` `cargo xtask image` prints) the way a kubelet runs its
    /// pod: the Deployment's args and environment, in-cluster configuration, user 1001, read-only root (needs root
    /// for runc, and skopeo and umoci); the image's own payload is served.
    #[arg(long, value_name = "ARCHIVE", conflicts_with = "payload_dir")]
    image: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let started = Instant::now();
    let options = SandboxOptions {
        hosts: cli.hosts,
        operator_args: cli.operator_args.clone(),
        latency: Latency::realistic(),
        keep_directory: cli.keep,
        payload_dir: cli.payload_dir.clone(),
        operator_image: cli.image.clone(),
        ..SandboxOptions::default()
    };
    let sandbox = Sandbox::start(options).await?;
    print_facts(&sandbox, started.elapsed());
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    println!("{} wrote ConfigMap windows-instances with {} entries", clock(), sandbox.hosts().len());

    let expected = sandbox.hosts().len();
    let deadline = Duration::from_secs(cli.timeout);
    let mut shown: BTreeMap<String, String> = BTreeMap::new();
    let mut announced_ready = false;
    let mut announced_timeout = false;
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    loop {
        sandbox.check_operator()?;
        let rows = match sandbox.instance_rows().await {
            Ok(rows) => rows,
            Err(error) => {
                println!("{} cannot read the instances (retrying): {error}", clock());
                tokio::time::sleep(POLL_INTERVAL).await;
                continue;
            }
        };
        print_changes(&rows, &mut shown);
        let ready = rows.iter().filter(|row| row.phase == "Ready" && row.node_ready == Some(true)).count();
        let waited = started.elapsed();
        if ready == expected && !announced_ready {
            announced_ready = true;
            println!("{} all {expected} instances Ready after {:.1}s", clock(), waited.as_secs_f64());
            if cli.exit_when_ready {
                return Ok(());
            }
            let kubeconfig = sandbox.kubeconfig_path().display();
            println!("kubeconfig: {kubeconfig}");
            println!("  export KUBECONFIG={kubeconfig}; kubectl get windowsinstances,nodes -A");
            println!("Ctrl-C stops the sandbox");
        }
        if ready < expected && waited > deadline && !announced_timeout {
            announced_timeout = true;
            sandbox.keep_directory();
            let reason = format!(
                "{ready} of {expected} instances Ready after {:.0}s; operator log: {}; sandbox directory kept: {}",
                waited.as_secs_f64(),
                sandbox.operator_log_path().display(),
                sandbox.directory().display()
            );
            if cli.exit_when_ready {
                bail!("{reason}\n{}", wmco_sandbox::operator::log_tail(&sandbox.operator_log_path()));
            }
            println!("{} warning: {reason}", clock());
        }
        tokio::select! {
            _ = &mut interrupt => {
                println!("{} Ctrl-C: stopping the operator, the hosts and the control plane", clock());
                return Ok(());
            }
            () = tokio::time::sleep(POLL_INTERVAL) => {}
        }
    }
}

fn print_facts(sandbox: &Sandbox, startup: Duration) {
    println!("{} sandbox up in {:.1}s: {}", clock(), startup.as_secs_f64(), sandbox.directory().display());
    println!("  API server:        {}", sandbox.control_plane().api_server_url());
    println!("  admin kubeconfig:  {}", sandbox.kubeconfig_path().display());
    println!("  operator log:      {}", sandbox.operator_log_path().display());
    if let Some(pod) = sandbox.operator_pod() {
        println!("  operator pod:      {} (runc --root {})", pod.id, pod.runc_root().display());
    }
    let kind = if wmco_sandbox::is_synthetic_payload(sandbox.payload_dir()) { "synthetic" } else { "real" };
    println!("  payload:           {} ({kind})", sandbox.payload_dir().display());
    println!("  winhost-sim control: http://{}", sandbox.control_address());
    for host in sandbox.hosts() {
        println!(
            "  host {:<12} ConfigMap key {:<12} ssh {}  node IP {}",
            host.info.name, host.key, host.info.ssh_address, host.info.node_ip
        );
    }
}

/// Prints one line per instance whose printed state (phase, node, readiness, error) changed since last shown.
fn print_changes(rows: &[InstanceRow], shown: &mut BTreeMap<String, String>) {
    for row in rows {
        let state = change_line("", row);
        if shown.get(&row.instance) == Some(&state) {
            continue;
        }
        println!("{}{state}", clock());
        shown.insert(row.instance.clone(), state);
    }
    let gone: Vec<String> =
        shown.keys().filter(|name| !rows.iter().any(|row| &row.instance == *name)).cloned().collect();
    for name in gone {
        println!("{} instance {name} deleted", clock());
        shown.remove(&name);
    }
}

/// `<time> instance <name> <phase> node <name> Ready=<bool>[ error: <text>]`.
fn change_line(time: &str, row: &InstanceRow) -> String {
    let error = row.last_error.as_deref().map(|error| format!(" error: {error}")).unwrap_or_default();
    format!(
        "{time} instance {} {} node {} Ready={}{error}",
        row.instance,
        row.phase,
        row.node.as_deref().unwrap_or("-"),
        row.node_ready.unwrap_or(false)
    )
}

/// The UTC time of day, `HH:MM:SS`.
fn clock() -> String {
    let seconds = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs()) % 86_400;
    format!("{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_line_names_instance_phase_node_and_readiness() {
        let row = InstanceRow {
            instance: "byoh-127-0-0-10".into(),
            address: "127.0.0.10".into(),
            phase: "WaitingForNode".into(),
            node: Some("winhost-0".into()),
            node_ready: None,
            last_error: None,
        };
        assert_eq!(
            change_line("03:04:05", &row),
            "03:04:05 instance byoh-127-0-0-10 WaitingForNode node winhost-0 Ready=false"
        );
        let failed = InstanceRow { phase: "Failed".into(), node: None, last_error: Some("refused".into()), ..row };
        assert_eq!(
            change_line("03:04:06", &failed),
            "03:04:06 instance byoh-127-0-0-10 Failed node - Ready=false error: refused"
        );
    }

    #[test]
    fn the_clock_is_hours_minutes_seconds() {
        let text = clock();
        assert_eq!(text.len(), 8);
        assert_eq!((&text[2..3], &text[5..6]), (":", ":"));
    }
}
