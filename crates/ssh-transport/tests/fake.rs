//! The in-process fake host (russh) driven through the real ssh2 client: scripted replies, exit codes above 255,
//! fault injection, Windows-style SFTP rename, and the connection pool.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use wmco_ssh_transport::testing::{FakeHost, Fault, Reply};
use wmco_ssh_transport::{
    ErrorClass, HostKeyPolicy, HostPool, RemoteCommand, RemoteHost, Sha256Digest, SshHost, TransportError,
    UploadOutcome, UploadRequest, UploadSource, staging_path,
};

fn command(line: &str) -> RemoteCommand {
    RemoteCommand::new(line, Duration::from_secs(10))
}

async fn fake_and_host() -> Result<(FakeHost, SshHost)> {
    let fake = FakeHost::start().await?;
    let (key, _) = FakeHost::generate_client_key()?;
    let host = SshHost::new(fake.host_config(key))?;
    Ok((fake, host))
}

#[tokio::test]
async fn scripted_replies_and_recorded_commands() -> Result<()> {
    let (fake, host) = fake_and_host().await?;
    fake.reply("hostname", Reply::ok("WIN-1\r\n"));
    fake.reply_to_prefix("sc.exe query ", Reply::fail(1060, "The specified service does not exist\r\n"));
    assert_eq!(host.run(&command("hostname")).await?.stdout, b"WIN-1\r\n");
    let missing = host.run(&command("sc.exe query kubelet")).await?;
    assert_eq!((missing.exit_code, missing.stderr_text().trim()), (1060, "The specified service does not exist"));
    let unscripted = host.run(&command("whoami")).await?;
    assert_eq!(unscripted.exit_code, 127);
    assert_eq!(fake.commands(), ["hostname", "sc.exe query kubelet", "whoami"]);
    Ok(())
}

#[tokio::test]
async fn exit_codes_above_255_keep_all_32_bits() -> Result<()> {
    // POSIX shells cannot exit above 255, so only the fake host can prove this; Windows processes do (0xC0000005).
    let (fake, host) = fake_and_host().await?;
    for code in [256u32, 1060, 0xC000_0005, u32::MAX] {
        fake.reply("crash", Reply::fail(code, "boom"));
        let output = host.run(&command("crash")).await?;
        assert_eq!(output.exit_code, code);
        match host.run_checked(&command("crash")).await {
            Err(TransportError::CommandFailed { exit_code, stderr, .. }) => {
                assert_eq!((exit_code, stderr.as_str()), (code, "boom"))
            }
            other => panic!("expected CommandFailed, got {other:?}"),
        }
    }
    Ok(())
}

#[tokio::test]
async fn dropped_connection_is_retryable_and_the_next_call_reconnects() -> Result<()> {
    let (fake, host) = fake_and_host().await?;
    fake.reply("echo hi", Reply::ok("hi\n"));
    assert_eq!(host.run(&command("echo hi")).await?.stdout, b"hi\n");
    fake.set_fault(Some(Fault::DropConnection));
    let error = host.run(&command("echo hi")).await.expect_err("the connection is dropped");
    assert!(error.is_retryable(), "{error}");
    fake.set_fault(None);
    assert_eq!(host.run(&command("echo hi")).await?.stdout, b"hi\n");
    Ok(())
}

#[tokio::test]
async fn hanging_command_times_out() -> Result<()> {
    let (fake, host) = fake_and_host().await?;
    fake.reply("echo hi", Reply::ok("hi\n"));
    fake.set_fault(Some(Fault::Hang));
    let error = host
        .run(&RemoteCommand::new("echo hi", Duration::from_millis(300)))
        .await
        .expect_err("a hanging command cannot finish");
    assert_eq!(error.class(), ErrorClass::TimedOut, "{error}");
    fake.set_fault(None);
    assert_eq!(host.run(&command("echo hi")).await?.stdout, b"hi\n");
    Ok(())
}

#[tokio::test]
async fn replaced_host_key_is_refused() -> Result<()> {
    let (fake, pinned) = fake_and_host().await?;
    let (key, _) = FakeHost::generate_client_key()?;
    let mut tofu_config = fake.host_config(key);
    tofu_config.host_key_policy = HostKeyPolicy::TrustOnFirstUse;
    let tofu = SshHost::new(tofu_config)?;
    let first = tofu.host_key().await?;
    assert_eq!(first, fake.host_key());
    assert_eq!(tofu.seen_host_key(), Some(first.clone()));

    let replaced = fake.replace_host_key()?;
    match pinned.host_key().await {
        Err(TransportError::HostKeyMismatch { pinned, offered, .. }) => {
            assert_eq!((pinned, offered), (first.fingerprint(), replaced.fingerprint()));
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
    tofu.disconnect().await?;
    let error = tofu.host_key().await.expect_err("the first key stays pinned");
    assert_eq!(error.class(), ErrorClass::HostKeyMismatch);
    Ok(())
}

#[tokio::test]
async fn only_the_authorized_key_gets_in() -> Result<()> {
    let fake = FakeHost::start().await?;
    let (allowed, allowed_line) = FakeHost::generate_client_key()?;
    let (other, _) = FakeHost::generate_client_key()?;
    fake.authorize_only(&allowed_line);
    fake.reply("true", Reply::ok(""));
    let error = SshHost::new(fake.host_config(other))?.run(&command("true")).await.expect_err("wrong key");
    assert_eq!(error.class(), ErrorClass::Authentication, "{error}");
    assert_eq!(SshHost::new(fake.host_config(allowed))?.run(&command("true")).await?.exit_code, 0);
    Ok(())
}

#[tokio::test]
async fn client_version_suffix_reaches_the_host() -> Result<()> {
    let fake = FakeHost::start().await?;
    let (key, _) = FakeHost::generate_client_key()?;
    let mut config = fake.host_config(key);
    config.client_version_suffix = Some("wmco-7d9f8".into());
    fake.reply("true", Reply::ok(""));
    SshHost::new(config)?.run(&command("true")).await?;
    assert_eq!(fake.client_ids(), [format!("SSH-2.0-wmco_{} wmco-7d9f8", env!("CARGO_PKG_VERSION"))]);
    Ok(())
}

#[tokio::test]
async fn upload_replaces_a_file_that_windows_rename_would_not_overwrite() -> Result<()> {
    let (fake, host) = fake_and_host().await?;
    fake.respond_with(Arc::new(|line, files| {
        let path = line.strip_prefix("hash ")?;
        Some(match files.get(path) {
            Some(content) => Reply::ok(format!("{}\r\n", Sha256Digest::of_bytes(content).to_string().to_uppercase())),
            None => Reply::fail(1, "no such file"),
        })
    }));
    fake.put_file("C:/k/kubelet.exe", b"old".to_vec());
    let content: Arc<[u8]> = Arc::from(&b"new kubelet"[..]);
    let request = UploadRequest {
        source: UploadSource::Bytes(content.clone()),
        remote_path: "C:/k/kubelet.exe".into(),
        expected_sha256: Sha256Digest::of_bytes(&content),
        remote_sha256: Some(Sha256Digest::of_bytes(b"old")),
        verify: Some(command(&format!("hash {}", staging_path("C:/k/kubelet.exe")))),
    };
    assert!(matches!(host.upload(&request).await?, UploadOutcome::Uploaded { bytes: 11, .. }));
    assert_eq!(fake.file("C:/k/kubelet.exe"), Some(b"new kubelet".to_vec()));
    assert_eq!(fake.file_paths(), ["C:/k/kubelet.exe"]);
    assert_eq!(fake.commands(), ["hash C:/k/kubelet.exe.wmco-upload"]);

    host.mkdir_all("C:/k/cni/config").await?;
    assert!(fake.has_directory("C:/k/cni") && fake.has_directory("C:/k/cni/config"));
    assert_eq!(host.download("C:/k/kubelet.exe").await?, b"new kubelet");
    host.remove("C:/k/kubelet.exe").await?;
    assert_eq!(fake.file("C:/k/kubelet.exe"), None);
    Ok(())
}

#[tokio::test]
async fn pool_caps_open_connections_and_closes_idle_ones() -> Result<()> {
    let pool = HostPool::new(2, Duration::from_millis(300));
    let mut fakes = Vec::new();
    for _ in 0..5 {
        let fake = FakeHost::start().await?;
        fake.reply("echo hi", Reply::ok("hi\n"));
        fakes.push(fake);
    }
    let (key, _) = FakeHost::generate_client_key()?;
    for fake in &fakes {
        let host = pool.host(fake.host_config(key.clone()))?;
        assert_eq!(host.run(&command("echo hi")).await?.stdout, b"hi\n");
        assert!(pool.open_connections() <= 2, "{} open", pool.open_connections());
    }
    let again = pool.host(fakes[0].host_config(key.clone()))?;
    assert!(Arc::ptr_eq(&again, &pool.host(fakes[0].host_config(key.clone()))?));
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(pool.open_connections(), 0);

    let tasks: Vec<_> = fakes
        .iter()
        .map(|fake| {
            let host = pool.host(fake.host_config(key.clone()));
            tokio::spawn(async move { host?.run(&command("echo hi")).await })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await??.stdout, b"hi\n");
    }
    Ok(())
}
