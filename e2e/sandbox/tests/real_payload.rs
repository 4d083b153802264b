//! The real payload end to end (issue 14), on one sandbox with one simulated host and the payload
//! `cargo xtask payload build` cross-compiled (`WMCO_REAL_PAYLOAD`, set by `cargo xtask test`): the operator runs
//! WITHOUT `--allow-synthetic-payload`, the host becomes a Ready Node, and every manifest file installed on the
//! cluster's platform (the fixtures' Infrastructure says `None`) is at its destination with the SHA-256 the
//! payload's `sha256sum` lists, while the files of other platforms' components (AWS, Azure) are not uploaded. The
//! simulator does not run the Windows binaries (its kubelet model starts in their place); what is proven is that
//! ~330 MiB of real binaries travel to the host intact and the product accepts a real payload as one.
//!
//! With `WMCO_REAL_PAYLOAD` unset the test fails saying how to build the payload: it never skips.
//!
//! Needs the control-plane binaries (`cargo xtask controlplane build`) and the `wmco` binary (`WMCO_BIN`, set by
//! `cargo xtask test`, or `target/<profile>/wmco`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use wmco_payload_manifest::{CHECKSUM_FILE_NAME, ChecksumList, Manifest, Platform, Source};
use wmco_sandbox::operator::metric_value;
use wmco_sandbox::{
    ALLOW_SYNTHETIC_PAYLOAD_FLAG, Sandbox, SandboxOptions, is_synthetic_payload, operator_payload_args,
    real_payload_from_env,
};

/// Generous upper bound for a loaded 2-core machine (never a timed assertion): ~330 MiB go to the host.
const READY_TIMEOUT: Duration = Duration::from_secs(1200);
/// The platform of the harness fixtures' Infrastructure `cluster` (`status.platform: None`).
const SANDBOX_PLATFORM: Platform = Platform::None;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_configured_from_the_real_payload_holds_every_file_of_its_platform_with_the_listed_hash()
-> anyhow::Result<()> {
    let payload_dir = real_payload_from_env()?;
    let checksums = read_checksums(&payload_dir)?;
    real_payload_runs_without_the_synthetic_flag(&payload_dir)?;

    let sandbox = Sandbox::start(SandboxOptions {
        hosts: 1,
        localhost_host: false,
        payload_dir: Some(payload_dir.clone()),
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    assert_eq!(sandbox.payload_dir(), payload_dir);
    operator_command_line_has_no_synthetic_flag(&sandbox)?;

    let started = Instant::now();
    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let ready = sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    let to_ready = started.elapsed();
    let host = &sandbox.hosts()[0];
    ensure!(
        ready[0].node.metadata.name.as_deref() == Some(host.info.name.as_str()),
        "the Ready Node is {:?}, expected {}",
        ready[0].node.metadata.name,
        host.info.name
    );

    let manifest = Manifest::product()?;
    let mut checked = 0;
    let mut checked_bytes = 0;
    for entry in manifest.files_for(SANDBOX_PLATFORM) {
        let path = &entry.file.path;
        let listed =
            checksums.digests.get(path).with_context(|| format!("{path} is not in the payload's sha256sum"))?;
        let destination = entry.file.destination.to_string();
        let on_host = sandbox.file_hash(&host.info.name, &destination).await?;
        assert_eq!(
            on_host.as_deref(),
            Some(listed.to_string().as_str()),
            "{destination} (payload file {path}) on host {}",
            host.info.name
        );
        checked += 1;
        checked_bytes += std::fs::metadata(path.under(&payload_dir))?.len();
    }
    let built =
        manifest.files_for(SANDBOX_PLATFORM).filter(|entry| matches!(entry.component.source, Source::Go(_))).count();
    ensure!(built > 0 && checked > built, "only {checked} payload files checked ({built} built from Go)");
    for entry in manifest.files().filter(|entry| !entry.component.applies_to(SANDBOX_PLATFORM)) {
        let destination = entry.file.destination.to_string();
        let on_host = sandbox.file_hash(&host.info.name, &destination).await?;
        ensure!(
            on_host.is_none(),
            "{destination} of component {} (platforms {:?}) was installed on a {SANDBOX_PLATFORM} host",
            entry.component.name,
            entry.component.platforms
        );
    }
    let unknown = sandbox.unknown_commands(&host.info.name).await?;
    ensure!(unknown.is_empty(), "host {} saw unknown commands: {unknown:?}", host.info.name);

    let metrics = sandbox.operator_metrics().await?;
    let sent = metric_value(&metrics, "wmco_ssh_sent_bytes_total");
    if let Some(sent) = sent {
        ensure!(
            sent >= checked_bytes as f64,
            "the operator counts {sent} bytes sent, the payload files alone are {checked_bytes}"
        );
    }
    println!(
        "real payload {}: {checked} files ({:.1} MiB) verified on {} after {:.1} s to Ready; operator sent {} to the host",
        payload_dir.display(),
        checked_bytes as f64 / MIB,
        host.info.name,
        to_ready.as_secs_f64(),
        sent.map_or_else(|| "an unknown number of bytes".to_owned(), |bytes| format!("{:.1} MiB", bytes / MIB)),
    );
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

const MIB: f64 = 1024.0 * 1024.0;

/// The payload's `sha256sum`, every line usable.
fn read_checksums(payload_dir: &Path) -> anyhow::Result<ChecksumList> {
    let path = payload_dir.join(CHECKSUM_FILE_NAME);
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let checksums = ChecksumList::parse(&text);
    ensure!(checksums.bad_lines.is_empty(), "{} has bad lines: {:?}", path.display(), checksums.bad_lines);
    Ok(checksums)
}

/// The payload carries no `SYNTHETIC` marker, so the sandbox's `wmco run` arguments are only `--payload-dir DIR`.
fn real_payload_runs_without_the_synthetic_flag(payload_dir: &Path) -> anyhow::Result<()> {
    ensure!(!is_synthetic_payload(payload_dir), "{} is marked SYNTHETIC", payload_dir.display());
    let args = operator_payload_args(payload_dir);
    ensure!(args.len() == 2 && args[0] == "--payload-dir", "payload arguments for a real payload: {args:?}");
    Ok(())
}

/// The running operator's command line (`/proc/<pid>/cmdline`) names the payload and not
/// `--allow-synthetic-payload`: it verified the real payload and started.
fn operator_command_line_has_no_synthetic_flag(sandbox: &Sandbox) -> anyhow::Result<()> {
    let pid = sandbox.operator_pid().context("the operator is not running")?;
    let raw =
        std::fs::read(format!("/proc/{pid}/cmdline")).with_context(|| format!("reading the command line of {pid}"))?;
    let args: Vec<String> = raw
        .split(|byte| *byte == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    ensure!(!args.iter().any(|arg| arg == ALLOW_SYNTHETIC_PAYLOAD_FLAG), "the operator runs with {args:?}");
    let payload = sandbox.payload_dir().display().to_string();
    ensure!(
        args.windows(2).any(|pair| pair[0] == "--payload-dir" && pair[1] == payload),
        "the operator runs with {args:?}, not --payload-dir {payload}"
    );
    Ok(())
}
