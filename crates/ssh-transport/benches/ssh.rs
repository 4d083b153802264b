//! Transport benchmark against a local OpenSSH sshd (run with `cargo xtask bench-ssh`): 256 MiB upload throughput
//! compared with OpenSSH's own `sftp` client on the same loopback in the same run, commands per second on one reused
//! connection versus a new connection per command (the Go operator's pattern), and connect time. Prints figures;
//! asserts nothing about speed.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use wmco_ssh_transport::testing::{FakeHost, KeyFormat, KeyType, Reply, Sshd};
use wmco_ssh_transport::{
    HostConfig, RemoteCommand, RemoteHost, Sha256Digest, SshHost, UploadOutcome, UploadRequest, UploadSource,
    staging_path,
};

const UPLOAD_BYTES: usize = 256 * 1024 * 1024;
const UPLOAD_RUNS: usize = 5;
const REUSED_COMMANDS: usize = 300;
const FRESH_COMMANDS: usize = 60;

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(bench())
}

async fn bench() -> Result<()> {
    let mut sshd = Sshd::start().context("starting sshd")?;
    let key = sshd.generate_client_key(KeyType::Ed25519, KeyFormat::OpenSsh)?;
    sshd.authorize(&key.public_line)?;
    let config = sshd.host_config(key.private_key()?)?;
    let work = tempfile::tempdir()?;
    let source = work.path().join("payload.bin");
    let content = pseudo_random(UPLOAD_BYTES);
    std::fs::write(&source, &content)?;
    let expected = Sha256Digest::of_bytes(&content);
    drop(content);
    let target = work.path().join("uploaded.bin");
    let mib = (UPLOAD_BYTES / (1024 * 1024)) as f64;

    println!("upload of {mib} MiB over loopback, median of {UPLOAD_RUNS} interleaved runs, connection setup included:");
    let mut sftp_runs = Vec::new();
    let mut transfer_runs = Vec::new();
    let mut verified_runs = Vec::new();
    let mut read_back_runs = Vec::new();
    for _ in 0..UPLOAD_RUNS {
        sftp_runs.push(sftp_put(&sshd, &key.private_path, &source, &target)?);
        let timing = upload(&config, &source, &target, expected, Some(sha256sum_verify(&target))).await?;
        transfer_runs.push(timing.connect_and_write);
        verified_runs.push(timing.total);
        read_back_runs.push(upload(&config, &source, &target, expected, None).await?.total);
    }
    let sftp = median(&mut sftp_runs);
    let transfer = median(&mut transfer_runs);
    report("OpenSSH sftp put (no verification)", sftp, mib);
    report("ssh-transport: connect + write temporary file", transfer, mib);
    report("ssh-transport: whole upload, sha256sum on the host", median(&mut verified_runs), mib);
    report("ssh-transport: whole upload, SFTP read-back", median(&mut read_back_runs), mib);
    println!(
        "  throughput ratio ssh-transport / sftp (transfer): {:.2} (target >= 0.9)",
        sftp.as_secs_f64() / transfer.as_secs_f64()
    );

    let echo = RemoteCommand::new("true", Duration::from_secs(30));
    let reused = SshHost::new(config.clone())?;
    reused.connect().await?;
    let started = Instant::now();
    for _ in 0..REUSED_COMMANDS {
        reused.run(&echo).await?;
    }
    let reused_rate = REUSED_COMMANDS as f64 / started.elapsed().as_secs_f64();

    let mut connect_times = Vec::new();
    let started = Instant::now();
    for _ in 0..FRESH_COMMANDS {
        let connect_started = Instant::now();
        let fresh = SshHost::new(config.clone())?;
        fresh.connect().await?;
        connect_times.push(connect_started.elapsed());
        fresh.run(&echo).await?;
    }
    let fresh_rate = FRESH_COMMANDS as f64 / started.elapsed().as_secs_f64();
    println!("commands (`true`):");
    println!("  one reused connection:          {reused_rate:8.1} commands/s ({REUSED_COMMANDS} commands)");
    println!("  new connection per command:     {fresh_rate:8.1} commands/s ({FRESH_COMMANDS} commands)");
    println!("  ratio reused / new:             {:8.1}", reused_rate / fresh_rate);
    let fake = FakeHost::start().await?;
    fake.reply("true", Reply::ok(""));
    let (fake_key, _) = FakeHost::generate_client_key()?;
    let fake_host = SshHost::new(fake.host_config(fake_key))?;
    fake_host.connect().await?;
    let started = Instant::now();
    for _ in 0..REUSED_COMMANDS {
        fake_host.run(&echo).await?;
    }
    let fake_rate = REUSED_COMMANDS as f64 / started.elapsed().as_secs_f64();
    println!("  reused connection to the in-process fake host (no process per command): {fake_rate:.0} commands/s");
    connect_times.sort();
    println!(
        "connect (TCP, handshake, host key check, Ed25519 auth): median {:.1} ms, p90 {:.1} ms",
        millis(connect_times[connect_times.len() / 2]),
        millis(connect_times[connect_times.len() * 9 / 10])
    );
    Ok(())
}

fn report(name: &str, elapsed: Duration, mib: f64) {
    println!("  {name:50} {:6.2} s  {:7.1} MiB/s", elapsed.as_secs_f64(), mib / elapsed.as_secs_f64());
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn sha256sum_verify(target: &Path) -> RemoteCommand {
    let staging = staging_path(&target.to_string_lossy());
    RemoteCommand::new(format!("sha256sum '{staging}' | cut -d' ' -f1"), Duration::from_secs(120))
}

/// The phases of one timed upload.
struct UploadTiming {
    /// New handle, connection, and writing the temporary file: what `sftp put` does.
    connect_and_write: Duration,
    /// Everything, including verification and the rename.
    total: Duration,
}

async fn upload(
    config: &HostConfig,
    source: &Path,
    target: &Path,
    expected: Sha256Digest,
    verify: Option<RemoteCommand>,
) -> Result<UploadTiming> {
    let _ = std::fs::remove_file(target);
    let started = Instant::now();
    let host = SshHost::new(config.clone())?;
    host.connect().await?;
    let connected = started.elapsed();
    let outcome = host
        .upload(&UploadRequest {
            source: UploadSource::File(source.to_path_buf()),
            remote_path: target.to_string_lossy().into_owned(),
            expected_sha256: expected,
            remote_sha256: None,
            verify,
        })
        .await?;
    let UploadOutcome::Uploaded { write_duration, .. } = outcome else { bail!("the upload was skipped") };
    Ok(UploadTiming { connect_and_write: connected + write_duration, total: started.elapsed() })
}

fn sftp_put(sshd: &Sshd, key: &Path, source: &Path, target: &Path) -> Result<Duration> {
    let _ = std::fs::remove_file(target);
    let batch = target.with_extension("batch");
    std::fs::write(&batch, format!("put {} {}\n", source.display(), target.display()))?;
    let started = Instant::now();
    let output = Command::new("sftp")
        .args(["-q", "-b"])
        .arg(&batch)
        .arg("-i")
        .arg(key)
        .args(["-P", &sshd.port().to_string()])
        .args(["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes"])
        .arg(format!("{}@127.0.0.1", Sshd::user()?))
        .output()
        .context("running sftp (Debian package openssh-client)")?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        bail!("sftp failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(elapsed)
}

fn median(runs: &mut [Duration]) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

/// Incompressible bytes (xorshift), so no layer can shortcut the transfer.
fn pseudo_random(length: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut bytes = Vec::with_capacity(length + 8);
    while bytes.len() < length {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(length);
    bytes
}
