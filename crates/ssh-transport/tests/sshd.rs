//! The transport against a real OpenSSH sshd on 127.0.0.1 (Debian `openssh-server`; `.ci/install-deps.sh` installs
//! it). Every test starts its own server; the servers and their sessions are killed when the test ends.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use wmco_ssh_transport::testing::{KeyFormat, KeyType, Sshd};
use wmco_ssh_transport::{
    ErrorClass, HostConfig, HostKeyPolicy, RemoteCommand, RemoteHost, RetryPolicy, Sha256Digest, SshHost, TransferStep,
    TransportError, UploadBatch, UploadOutcome, UploadRequest, UploadSource, retry, staging_path,
};

/// A started sshd with one authorized Ed25519 key, and a config for it.
fn server() -> Result<(Sshd, HostConfig)> {
    let mut sshd = Sshd::start().context("starting sshd")?;
    let key = sshd.generate_client_key(KeyType::Ed25519, KeyFormat::OpenSsh)?;
    sshd.authorize(&key.public_line)?;
    let config = sshd.host_config(key.private_key()?)?;
    Ok((sshd, config))
}

fn command(line: &str) -> RemoteCommand {
    RemoteCommand::new(line, Duration::from_secs(30))
}

fn upload_of(source: UploadSource, remote_path: &Path, expected: Sha256Digest) -> UploadRequest {
    UploadRequest {
        source,
        remote_path: remote_path.to_string_lossy().into_owned(),
        expected_sha256: expected,
        remote_sha256: None,
        verify: None,
    }
}

/// A `sha256sum` verify command for an upload's temporary file (the POSIX stand-in for `Get-FileHash`).
fn sha256sum_of_staging(remote_path: &Path) -> RemoteCommand {
    let staging = staging_path(&remote_path.to_string_lossy());
    command(&format!("sha256sum '{staging}' | cut -d' ' -f1"))
}

/// Deterministic pseudo-random bytes (xorshift), so that a corrupted or truncated copy cannot hash the same.
fn pseudo_random(length: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
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

#[tokio::test]
async fn every_key_type_and_encoding_authenticates() -> Result<()> {
    let mut sshd = Sshd::start()?;
    let cases = [
        (KeyType::Rsa, KeyFormat::OpenSsh),
        (KeyType::Rsa, KeyFormat::Pkcs8),
        (KeyType::Rsa, KeyFormat::Pem),
        (KeyType::Ecdsa, KeyFormat::OpenSsh),
        (KeyType::Ecdsa, KeyFormat::Pkcs8),
        (KeyType::Ecdsa, KeyFormat::Pem),
        (KeyType::Ed25519, KeyFormat::OpenSsh),
        (KeyType::Ed25519, KeyFormat::Pkcs8),
    ];
    let mut keys = Vec::new();
    for (key_type, format) in cases {
        let key = sshd.generate_client_key(key_type, format)?;
        sshd.authorize(&key.public_line)?;
        keys.push((key_type, format, key));
    }
    let mut failures = Vec::new();
    for (key_type, format, key) in keys {
        let host = SshHost::new(sshd.host_config(key.private_key()?)?)?;
        match host.run(&command("echo authenticated")).await {
            Ok(output) if output.stdout == b"authenticated\n" => {}
            other => failures.push(format!("{key_type:?}/{format:?}: {other:?}")),
        }
    }
    assert!(failures.is_empty(), "keys that did not work: {failures:#?}");
    Ok(())
}

#[tokio::test]
async fn unknown_key_is_an_authentication_error() -> Result<()> {
    let mut sshd = Sshd::start()?;
    let authorized = sshd.generate_client_key(KeyType::Ed25519, KeyFormat::OpenSsh)?;
    sshd.authorize(&authorized.public_line)?;
    let stranger = sshd.generate_client_key(KeyType::Ed25519, KeyFormat::OpenSsh)?;
    let host = SshHost::new(sshd.host_config(stranger.private_key()?)?)?;
    let error = host.run(&command("true")).await.expect_err("an unauthorized key must be refused");
    assert_eq!(error.class(), ErrorClass::Authentication, "{error}");
    assert!(!error.is_retryable());
    let message = error.to_string();
    assert!(!message.contains(stranger.private_pem.lines().nth(1).unwrap_or("-")), "key material in {message}");
    Ok(())
}

#[tokio::test]
async fn replaced_host_key_is_a_mismatch_under_both_policies() -> Result<()> {
    let (mut sshd, pinned_config) = server()?;
    let mut tofu_config = pinned_config.clone();
    tofu_config.host_key_policy = HostKeyPolicy::TrustOnFirstUse;
    let original_key = sshd.host_key()?;

    let tofu = SshHost::new(tofu_config)?;
    assert_eq!(tofu.host_key().await?, original_key, "trust on first use returns the key to record");

    sshd.replace_host_key()?;
    let new_key = sshd.host_key()?;

    let pinned = SshHost::new(pinned_config)?;
    let error = pinned.run(&command("true")).await.expect_err("a replaced key must be refused");
    match &error {
        TransportError::HostKeyMismatch { pinned, offered, .. } => {
            assert_eq!(*pinned, original_key.fingerprint());
            assert_eq!(*offered, new_key.fingerprint());
        }
        other => panic!("expected a host key mismatch, got {other}"),
    }
    assert!(!error.is_retryable());

    tofu.disconnect().await?;
    let error = tofu.run(&command("true")).await.expect_err("the first key seen stays pinned");
    assert_eq!(error.class(), ErrorClass::HostKeyMismatch, "{error}");
    Ok(())
}

#[tokio::test]
async fn exit_codes_stdout_and_stderr_come_back() -> Result<()> {
    let (_sshd, config) = server()?;
    let host = SshHost::new(config)?;
    let output = host.run(&command("echo out; echo err >&2; exit 3")).await?;
    assert_eq!(
        (output.exit_code, output.stdout.as_slice(), output.stderr.as_slice()),
        (3, &b"out\n"[..], &b"err\n"[..])
    );
    assert_eq!(host.run(&command("exit 255")).await?.exit_code, 255);
    assert_eq!(host.run(&command("true")).await?.exit_code, 0);
    let error = host.run_checked(&command("echo broken >&2; exit 7")).await.expect_err("non-zero is an error");
    match error {
        TransportError::CommandFailed { exit_code, stderr, .. } => {
            assert_eq!((exit_code, stderr.as_str()), (7, "broken"))
        }
        other => panic!("expected CommandFailed, got {other}"),
    }
    // stdin is at EOF right after exec: `cat` returns at once instead of waiting.
    let output = host.run(&RemoteCommand::new("cat; echo done", Duration::from_secs(5))).await?;
    assert_eq!(output.stdout, b"done\n");
    Ok(())
}

#[tokio::test]
async fn ten_mebibytes_of_stdout_with_stderr_do_not_deadlock() -> Result<()> {
    let (_sshd, mut config) = server()?;
    config.max_output_bytes = 16 * 1024 * 1024;
    let host = SshHost::new(config)?;
    let line = "head -c 10485760 /dev/zero | tr '\\0' a; head -c 3145728 /dev/zero | tr '\\0' b >&2; \
                head -c 1048576 /dev/zero | tr '\\0' c";
    let output = host.run(&RemoteCommand::new(line, Duration::from_secs(60))).await?;
    assert_eq!(output.exit_code, 0);
    assert_eq!(output.stdout.len(), 11 * 1024 * 1024);
    assert!(output.stdout[..10 * 1024 * 1024].iter().all(|byte| *byte == b'a'));
    assert!(output.stdout[10 * 1024 * 1024..].iter().all(|byte| *byte == b'c'));
    assert_eq!(output.stderr.len(), 3 * 1024 * 1024);
    assert!(output.stderr.iter().all(|byte| *byte == b'b'));
    Ok(())
}

#[tokio::test]
async fn a_command_printing_without_end_is_cut_at_the_cap_and_the_host_stays_usable() -> Result<()> {
    let (_sshd, mut config) = server()?;
    config.max_output_bytes = 1024 * 1024;
    let host = SshHost::new(config)?;
    let error = host
        .run(&RemoteCommand::new("yes 0123456789abcdef", Duration::from_secs(60)))
        .await
        .expect_err("an endless output cannot fit 1 MiB");
    match &error {
        TransportError::OutputTooLarge { command, limit, .. } => {
            assert_eq!((command.as_str(), *limit), ("yes 0123456789abcdef", 1024 * 1024));
        }
        other => panic!("expected the output cap, got {other}"),
    }
    assert_eq!(error.class(), ErrorClass::OutputTooLarge);
    assert!(error.is_retryable());
    let fits = host.run(&command("head -c 1048576 /dev/zero")).await?;
    assert_eq!(fits.stdout.len(), 1024 * 1024, "exactly the cap fits");
    let over = host.run(&command("head -c 1048577 /dev/zero")).await.expect_err("one byte over the cap");
    assert_eq!(over.class(), ErrorClass::OutputTooLarge);
    assert_eq!(host.run(&command("echo again")).await?.stdout, b"again\n");
    Ok(())
}

#[tokio::test]
async fn a_command_past_its_timeout_fails_and_the_host_stays_usable() -> Result<()> {
    let (_sshd, config) = server()?;
    let host = SshHost::new(config)?;
    let error = host
        .run(&RemoteCommand::new("sleep 30", Duration::from_millis(500)))
        .await
        .expect_err("sleep 30 cannot finish in 0.5 s");
    match &error {
        TransportError::TimedOut { after, during, .. } => {
            assert_eq!(*after, Duration::from_millis(500));
            assert_eq!(during, "running `sleep 30`");
        }
        other => panic!("expected a timeout, got {other}"),
    }
    assert!(error.is_retryable());
    assert_eq!(host.run(&command("echo again")).await?.stdout, b"again\n");
    Ok(())
}

#[tokio::test]
async fn two_hundred_fifty_six_mebibytes_upload_intact() -> Result<()> {
    let (sshd, config) = server()?;
    let host = SshHost::new(config)?;
    let local = tempfile::tempdir()?;
    let remote = tempfile::tempdir()?;
    let source = local.path().join("payload.bin");
    let content = pseudo_random(256 * 1024 * 1024, 7);
    std::fs::write(&source, &content)?;
    let expected = Sha256Digest::of_bytes(&content);
    drop(content);
    let target = remote.path().join("k").join("payload.bin");
    host.mkdir_all(&target.parent().context("parent")?.to_string_lossy()).await?;
    std::fs::write(&target, b"old version")?;

    let mut request = upload_of(UploadSource::File(source.clone()), &target, expected);
    request.verify = Some(sha256sum_of_staging(&target));
    let outcome = host.upload(&request).await?;
    assert_eq!(
        match outcome {
            UploadOutcome::Uploaded { bytes, .. } => bytes,
            UploadOutcome::Skipped => 0,
        },
        256 * 1024 * 1024
    );
    assert_eq!(Sha256Digest::of_bytes(&std::fs::read(&target)?), expected);
    assert!(!Path::new(&staging_path(&target.to_string_lossy())).exists(), "the temporary file was renamed");
    drop(sshd);
    Ok(())
}

#[tokio::test]
async fn read_back_verification_download_size_remove_and_skip() -> Result<()> {
    let (_sshd, config) = server()?;
    let host = SshHost::new(config)?;
    let remote = tempfile::tempdir()?;
    let target = remote.path().join("a").join("b").join("kubelet.conf");
    let content: Arc<[u8]> = pseudo_random(3 * 1024 * 1024 + 17, 11).into();
    let expected = Sha256Digest::of_bytes(&content);
    host.mkdir_all(&target.parent().context("parent")?.to_string_lossy()).await?;
    host.mkdir_all(&target.parent().context("parent")?.to_string_lossy()).await?;

    let request = upload_of(UploadSource::Bytes(content.clone()), &target, expected);
    assert!(
        matches!(host.upload(&request).await?, UploadOutcome::Uploaded { bytes, .. } if bytes == content.len() as u64)
    );
    assert_eq!(host.download(&target.to_string_lossy()).await?, content.to_vec());

    // The caller saw the matching hash on the host: nothing is sent, even though the source now differs.
    std::fs::write(&target, b"changed behind our back")?;
    let skipped = UploadRequest { remote_sha256: Some(expected), ..request.clone() };
    assert_eq!(host.upload(&skipped).await?, UploadOutcome::Skipped);
    assert_eq!(std::fs::read(&target)?, b"changed behind our back");

    // A source that does not match its expected hash never reaches the target.
    let wrong = UploadRequest { expected_sha256: Sha256Digest::of_bytes(b"something else"), ..request.clone() };
    match host.upload(&wrong).await.expect_err("hash mismatch") {
        TransportError::Transfer { step, .. } => assert_eq!(step, TransferStep::SourceHash),
        other => panic!("expected a transfer error, got {other}"),
    }
    assert_eq!(std::fs::read(&target)?, b"changed behind our back");

    // A verify command that disagrees stops the upload before the target is touched.
    let mut refused = request.clone();
    refused.verify = Some(command("echo 0000000000000000000000000000000000000000000000000000000000000000"));
    match host.upload(&refused).await.expect_err("verify mismatch") {
        TransportError::Transfer { step, .. } => assert_eq!(step, TransferStep::Verify),
        other => panic!("expected a transfer error, got {other}"),
    }
    assert_eq!(std::fs::read(&target)?, b"changed behind our back");
    assert!(!Path::new(&staging_path(&target.to_string_lossy())).exists(), "a refused temporary file is removed");

    // The size of a file over SFTP; none for a directory or nothing.
    assert_eq!(host.file_size(&target.to_string_lossy()).await?, Some(23));
    assert_eq!(host.file_size(&remote.path().join("a").to_string_lossy()).await?, None);

    host.remove(&target.to_string_lossy()).await?;
    assert!(!target.exists());
    assert_eq!(host.file_size(&target.to_string_lossy()).await?, None);
    host.remove(&target.to_string_lossy()).await?;
    Ok(())
}

/// A local file is hashed once, however many hosts it goes to; a new version of it is hashed again, and a file
/// changed behind the caller's back still never reaches a target.
#[tokio::test]
async fn a_local_file_is_hashed_once_per_version() -> Result<()> {
    let (_sshd, config) = server()?;
    let host = SshHost::new(config)?;
    let local = tempfile::tempdir()?;
    let remote = tempfile::tempdir()?;
    let source = local.path().join("kubelet.exe");
    let content = pseudo_random(2 * 1024 * 1024 + 5, 3);
    std::fs::write(&source, &content)?;
    let expected = Sha256Digest::of_bytes(&content);
    for index in 0..3 {
        let target = remote.path().join(format!("host-{index}.exe"));
        host.upload(&upload_of(UploadSource::File(source.clone()), &target, expected)).await?;
        assert_eq!(std::fs::read(&target)?, content, "copy {index}");
    }
    assert_eq!(wmco_ssh_transport::source_hashes(&source), 1, "three uploads, one hash");

    let newer = pseudo_random(1024 * 1024, 4);
    std::fs::write(&source, &newer)?;
    let target = remote.path().join("host-0.exe");
    let stale = host.upload(&upload_of(UploadSource::File(source.clone()), &target, expected)).await;
    assert!(matches!(stale, Err(TransportError::Transfer { step: TransferStep::SourceHash, .. })), "{stale:?}");
    assert_eq!(std::fs::read(&target)?, content, "the changed source never reached the target");
    host.upload(&upload_of(UploadSource::File(source.clone()), &target, Sha256Digest::of_bytes(&newer))).await?;
    assert_eq!(wmco_ssh_transport::source_hashes(&source), 2, "the new version was hashed once more");
    Ok(())
}

/// A batch: every temporary file is written, one command verifies them all, then each is renamed into place; a
/// file the command disagrees on leaves every target of the batch untouched and no temporary file behind.
#[tokio::test]
async fn a_batch_is_verified_by_one_command_and_a_refused_file_leaves_every_target_untouched() -> Result<()> {
    let (_sshd, config) = server()?;
    let host = SshHost::new(config)?;
    let remote = tempfile::tempdir()?;
    let targets: Vec<std::path::PathBuf> = ["a.conf", "b.conf", "c.conf"].map(|name| remote.path().join(name)).into();
    for target in &targets {
        std::fs::write(target, b"old")?;
    }
    let contents: Vec<Arc<[u8]>> =
        (0..3).map(|index| pseudo_random(200_000 + index, index as u64 + 5).into()).collect();
    let mut requests: Vec<UploadRequest> = targets
        .iter()
        .zip(&contents)
        .map(|(target, content)| {
            upload_of(UploadSource::Bytes(content.clone()), target, Sha256Digest::of_bytes(content))
        })
        .collect();
    // The caller saw b's content in place already: it is skipped and left out of the verify command.
    requests[1].remote_sha256 = Some(requests[1].expected_sha256);
    let staged: Vec<String> = requests
        .iter()
        .filter(|request| request.needs_sending())
        .map(|request| format!("'{}'", staging_path(&request.remote_path)))
        .collect();
    let no_staging_left = || targets.iter().all(|target| !Path::new(&staging_path(&target.to_string_lossy())).exists());

    let zeros = "0".repeat(64);
    let refused = UploadBatch {
        requests: requests.clone(),
        verify: command(&format!("sha256sum {} | cut -d' ' -f1; echo {zeros}", staged[0])),
    };
    match host.upload_batch(&refused).await.expect_err("c is refused") {
        TransportError::Transfer { step, path, .. } => {
            assert_eq!((step, path), (TransferStep::Verify, targets[2].to_string_lossy().into_owned()));
        }
        other => panic!("expected a transfer error, got {other}"),
    }
    for target in &targets {
        assert_eq!(std::fs::read(target)?, b"old", "{target:?} was touched");
    }
    assert!(no_staging_left(), "refused temporary files are removed");

    let batch = UploadBatch { requests, verify: command(&format!("sha256sum {} | cut -d' ' -f1", staged.join(" "))) };
    let outcome = host.upload_batch(&batch).await?;
    assert_eq!(outcome.verify_commands, 1);
    let sent: Vec<bool> =
        outcome.outcomes.iter().map(|outcome| matches!(outcome, UploadOutcome::Uploaded { .. })).collect();
    assert_eq!(sent, [true, false, true]);
    assert_eq!(std::fs::read(&targets[0])?, contents[0].to_vec());
    assert_eq!(std::fs::read(&targets[1])?, b"old", "skipped");
    assert_eq!(std::fs::read(&targets[2])?, contents[2].to_vec());
    assert!(no_staging_left());
    Ok(())
}

#[tokio::test]
async fn sshd_killed_mid_upload_leaves_old_file_and_retry_succeeds() -> Result<()> {
    let (mut sshd, mut config) = server()?;
    config.io_timeout = Duration::from_secs(10);
    let host = Arc::new(SshHost::new(config)?);
    let local = tempfile::tempdir()?;
    let remote = tempfile::tempdir()?;
    let source = local.path().join("big.bin");
    let content = pseudo_random(256 * 1024 * 1024, 3);
    std::fs::write(&source, &content)?;
    let expected = Sha256Digest::of_bytes(&content);
    drop(content);
    let target = remote.path().join("big.bin");
    std::fs::write(&target, b"old version")?;
    let staging = staging_path(&target.to_string_lossy());

    let request = upload_of(UploadSource::File(source), &target, expected);
    let upload = tokio::spawn({
        let host = Arc::clone(&host);
        let request = request.clone();
        async move { host.upload(&request).await }
    });
    // Kill the server once part of the file has arrived.
    let mut waited = 0;
    while std::fs::metadata(&staging).map(|meta| meta.len()).unwrap_or(0) < 8 * 1024 * 1024 {
        tokio::time::sleep(Duration::from_millis(5)).await;
        waited += 1;
        assert!(waited < 6000, "the upload never started");
    }
    sshd.kill();
    let error = upload.await?.expect_err("the upload cannot finish without a server");
    assert!(error.is_retryable(), "a cut connection is retryable: {error}");
    assert_eq!(std::fs::read(&target)?, b"old version", "the target still holds the old file");

    sshd.restart()?;
    let policy = RetryPolicy {
        initial_delay: Duration::from_millis(100),
        max_delay: Duration::from_secs(1),
        deadline: Duration::from_secs(30),
    };
    let outcome = retry(&policy, || host.upload(&request)).await?;
    assert!(matches!(outcome, UploadOutcome::Uploaded { .. }));
    assert_eq!(Sha256Digest::of_bytes(&std::fs::read(&target)?), expected);
    Ok(())
}

#[tokio::test]
async fn unreachable_host_is_retryable_and_retry_waits_for_it() -> Result<()> {
    let (mut sshd, config) = server()?;
    sshd.kill();
    let host = Arc::new(SshHost::new(config)?);
    let error = host.run(&command("true")).await.expect_err("nothing listens");
    assert_eq!(error.class(), ErrorClass::Unreachable, "{error}");
    assert!(error.is_retryable());

    let restarter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        sshd.restart().map(|()| sshd)
    });
    let policy = RetryPolicy {
        initial_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(400),
        deadline: Duration::from_secs(20),
    };
    let echo = command("echo back");
    let output = retry(&policy, || host.run(&echo)).await?;
    assert_eq!(output.stdout, b"back\n");
    let _sshd = restarter.join().map_err(|_| anyhow::anyhow!("restarter panicked"))??;
    Ok(())
}

#[tokio::test]
async fn twenty_hosts_run_concurrently() -> Result<()> {
    let (_sshd, config) = server()?;
    let hosts: Vec<Arc<SshHost>> =
        (0..20).map(|_| SshHost::new(config.clone()).map(Arc::new)).collect::<Result<_, _>>()?;
    let mut tasks = Vec::new();
    for (index, host) in hosts.iter().enumerate() {
        let host = Arc::clone(host);
        tasks.push(tokio::spawn(async move {
            let mut outputs = Vec::new();
            for round in 0..3 {
                outputs.push(host.run(&command(&format!("echo {index}-{round}"))).await?.stdout);
            }
            Ok::<_, TransportError>(outputs)
        }));
    }
    for (index, task) in tasks.into_iter().enumerate() {
        let outputs = task.await??;
        let expected: Vec<Vec<u8>> = (0..3).map(|round| format!("{index}-{round}\n").into_bytes()).collect();
        assert_eq!(outputs, expected);
    }
    Ok(())
}

#[tokio::test]
async fn client_identifies_itself_with_the_configured_suffix() -> Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let reader = std::thread::spawn(move || -> std::io::Result<String> {
        let (mut stream, _) = listener.accept()?;
        stream.write_all(b"SSH-2.0-test\r\n")?;
        let mut received = Vec::new();
        let mut byte = [0u8; 1];
        while stream.read(&mut byte)? == 1 && byte[0] != b'\n' {
            received.push(byte[0]);
        }
        Ok(String::from_utf8_lossy(&received).trim_end().to_owned())
    });
    let (_sshd, mut config) = server()?;
    config.port = port;
    config.client_version_suffix = Some("operator-7f9c".into());
    config.connect_timeout = Duration::from_secs(2);
    let host = SshHost::new(config)?;
    let _ = host.run(&command("true")).await.expect_err("the listener is not an SSH server");
    let banner = reader.join().map_err(|_| anyhow::anyhow!("reader panicked"))??;
    assert_eq!(banner, format!("SSH-2.0-wmco_{} operator-7f9c", env!("CARGO_PKG_VERSION")));
    Ok(())
}
