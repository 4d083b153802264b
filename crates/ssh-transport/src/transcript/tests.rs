//! The recorder against the fake host (feature `testing`) over the real ssh2 client: what each operation records,
//! that no secret reaches a transcript, and that a transcript never fails an operation.

use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest as _, Sha256};

use super::*;
use crate::testing::{FakeHost, Fault, Reply};
use crate::{
    RemoteCommand, RemoteHost, Sha256Digest, SshHost, UploadBatch, UploadOutcome, UploadRequest, UploadSource,
    staging_path,
};

const JWT: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLWJ5dGVzLW9mLXRoZS1qd3Q";
const BOOTSTRAP_TOKEN: &str = "abcdef.0123456789abcdef";
const PEM_BODY: &str = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ";
const KUBECONFIG: &str =
    "apiVersion: v1\nkind: Config\nusers:\n- name: kubelet\n  user:\n    token: abcdef.0123456789abcdef\n";

fn command(line: &str) -> RemoteCommand {
    RemoteCommand::new(line, Duration::from_secs(10))
}

fn encode_script(script: &str) -> String {
    STANDARD.encode(script.encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>())
}

/// A fake host, an ssh2 client to it wrapped by a recorder writing into `directory`, and the transcript's path.
async fn recorded_fake(directory: &Path) -> (FakeHost, Arc<dyn RemoteHost>, std::path::PathBuf) {
    let fake = FakeHost::start().await.unwrap();
    let (key, _) = FakeHost::generate_client_key().unwrap();
    let recorder = TranscriptRecorder::new(directory);
    let host = recorder.wrap(Arc::new(SshHost::new(fake.host_config(key)).unwrap()));
    let path = directory.join(transcript_file_name(host.label()));
    (fake, host, path)
}

fn runs(entries: &[TranscriptEntry]) -> Vec<(&str, Option<&str>, Option<u32>, &str)> {
    entries
        .iter()
        .map(|entry| match &entry.operation {
            Operation::Run { command, script, exit_code, stdout, .. } => {
                (command.as_str(), script.as_deref(), *exit_code, stdout.as_str())
            }
            other => panic!("expected a run, got {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn commands_and_their_output_are_recorded_with_every_secret_redacted() {
    let directory = tempfile::tempdir().unwrap();
    let (fake, host, path) = recorded_fake(directory.path()).await;
    let bearer = "curl -H \"Authorization: Bearer S3cr3tBearerValue42\" https://api.example:6443/healthz";
    let kubeconfig = r"type C:\k\bootstrap-kubeconfig";
    let pem = format!("echo -----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n-----END OPENSSH PRIVATE KEY----- > key");
    let script = "$t = 'token: Zm9vYmFyYmF6cXV4MTIzNDU2'\nWrite-Output $t\nexit 0";
    let encoded = format!("powershell.exe -NoLogo -NonInteractive -EncodedCommand {}", encode_script(script));
    let blob = format!(
        "powershell.exe -Command \"[IO.File]::WriteAllText('C:/k/bootstrap-kubeconfig', '{}')\"",
        STANDARD.encode(KUBECONFIG)
    );
    fake.reply(bearer, Reply::ok(format!("{{\"token\":\"{JWT}\"}}\n")));
    fake.reply(kubeconfig, Reply::ok(KUBECONFIG));
    fake.reply(&pem, Reply::ok(""));
    fake.reply(&encoded, Reply::ok("token: Zm9vYmFyYmF6cXV4MTIzNDU2\r\n"));
    fake.reply(&blob, Reply::fail(5, format!("Access denied writing {}\r\n", STANDARD.encode(KUBECONFIG))));
    for line in [bearer, kubeconfig, &pem, &encoded, &blob] {
        host.run(&command(line)).await.unwrap();
    }
    assert_eq!(fake.commands(), [bearer, kubeconfig, &pem, &encoded, &blob], "forwarded unchanged");

    let entries = read_transcript(&path).unwrap();
    let recorded = runs(&entries);
    assert_eq!(
        recorded[0],
        (
            "curl -H \"Authorization: [REDACTED] [REDACTED]\" https://api.example:6443/healthz",
            None,
            Some(0),
            "{\"token\":\"[REDACTED]\"}\n"
        )
    );
    assert_eq!(
        recorded[1].3,
        "apiVersion: v1\nkind: Config\nusers:\n- name: kubelet\n  user:\n    token: [REDACTED]\n"
    );
    assert_eq!(
        recorded[2].0,
        "echo -----BEGIN OPENSSH PRIVATE KEY----- [REDACTED] -----END OPENSSH PRIVATE KEY----- > key"
    );
    let redacted_script = "$t = 'token: [REDACTED]\nWrite-Output $t\nexit 0";
    assert_eq!(
        recorded[3],
        (
            format!("powershell.exe -NoLogo -NonInteractive -EncodedCommand {}", encode_script(redacted_script))
                .as_str(),
            Some(redacted_script),
            Some(0),
            "token: [REDACTED]\r\n"
        )
    );
    assert_eq!(
        recorded[4].0,
        "powershell.exe -Command \"[IO.File]::WriteAllText('C:/k/bootstrap-kubeconfig', '[REDACTED]')\""
    );
    let Operation::Run { exit_code, stderr, .. } = &entries[4].operation else { panic!("a run") };
    assert_eq!((*exit_code, stderr.as_str()), (Some(5), "Access denied writing [REDACTED]\r\n"));

    let raw = std::fs::read_to_string(&path).unwrap();
    for secret in [
        "S3cr3tBearerValue42",
        JWT,
        "c2lnbmF0dXJlLWJ5dGVzLW9mLXRoZS1qd3Q",
        BOOTSTRAP_TOKEN,
        PEM_BODY,
        "Zm9vYmFyYmF6cXV4MTIzNDU2",
        &encode_script(script),
        &STANDARD.encode(KUBECONFIG),
    ] {
        assert!(!raw.contains(secret), "{secret} leaked into the transcript:\n{raw}");
    }
    assert_eq!(raw.lines().count(), 5);
    for entry in &entries {
        assert_eq!(entry.host, host.label());
        assert!(entry.time.parse::<jiff::Timestamp>().is_ok(), "{}", entry.time);
        assert_eq!(entry.error, None);
    }
}

#[tokio::test]
async fn file_operations_record_paths_sizes_and_hashes_never_contents() {
    let directory = tempfile::tempdir().unwrap();
    let (fake, host, path) = recorded_fake(directory.path()).await;
    fake.respond_with(Arc::new(|line, files| {
        let staged = line.strip_prefix("hash-each ")?;
        let digests: Vec<String> = staged
            .split(' ')
            .map(|path| hex::encode(Sha256::digest(files.get(path).cloned().unwrap_or_default())))
            .collect();
        Some(Reply::ok(digests.join("\r\n")))
    }));
    let request = |path: &str, bytes: &[u8]| UploadRequest {
        source: UploadSource::Bytes(bytes.into()),
        remote_path: path.to_owned(),
        expected_sha256: Sha256Digest::of_bytes(bytes),
        remote_sha256: None,
        verify: None,
    };
    let key = host.host_key().await.unwrap();
    host.mkdir_all("C:/k").await.unwrap();
    let single = request("C:/k/bootstrap-kubeconfig", KUBECONFIG.as_bytes());
    assert!(matches!(host.upload(&single).await.unwrap(), UploadOutcome::Uploaded { .. }));
    let local = directory.path().join("kubelet.exe");
    std::fs::File::create(&local).unwrap().write_all(&[7u8; 300]).unwrap();
    let from_file = UploadRequest {
        source: UploadSource::File(local),
        expected_sha256: Sha256Digest::of_bytes(&[7u8; 300]),
        ..request("C:/k/kubelet.exe", b"")
    };
    let already_there =
        UploadRequest { remote_sha256: Some(Sha256Digest::of_bytes(b"same")), ..request("C:/k/same.conf", b"same") };
    let verify = command(&format!("hash-each {}", staging_path("C:/k/kubelet.exe")));
    let batch = UploadBatch { requests: vec![from_file, already_there], verify };
    host.upload_batch(&batch).await.unwrap();
    assert_eq!(host.file_size("C:/k/kubelet.exe").await.unwrap(), Some(300));
    assert_eq!(host.file_size("C:/k/absent").await.unwrap(), None);
    assert_eq!(host.download("C:/k/bootstrap-kubeconfig").await.unwrap(), KUBECONFIG.as_bytes());
    host.remove("C:/k/bootstrap-kubeconfig").await.unwrap();

    let entries = read_transcript(&path).unwrap();
    let names: Vec<&str> = entries.iter().map(|entry| entry.operation.name()).collect();
    assert_eq!(
        names,
        ["host_key", "mkdir_all", "upload", "upload_batch", "file_size", "file_size", "download", "remove"]
    );
    let kubeconfig_digest = Sha256Digest::of_bytes(KUBECONFIG.as_bytes());
    let expected_file = RecordedFile {
        path: "C:/k/bootstrap-kubeconfig".into(),
        size: Some(KUBECONFIG.len() as u64),
        sha256: kubeconfig_digest,
        outcome: Some(RecordedUpload::Uploaded),
    };
    assert_eq!(entries[0].operation, Operation::HostKey { key: Some(key.to_string()) });
    assert_eq!(entries[1].operation, Operation::MkdirAll { path: "C:/k".into() });
    assert_eq!(entries[2].operation, Operation::Upload { file: expected_file, verify: None });
    let Operation::UploadBatch { files, verify, verify_commands } = &entries[3].operation else { panic!("a batch") };
    assert_eq!(verify, "hash-each C:/k/kubelet.exe.wmco-upload");
    assert_eq!(*verify_commands, Some(1));
    let summary: Vec<(&str, Option<u64>, Option<RecordedUpload>)> =
        files.iter().map(|file| (file.path.as_str(), file.size, file.outcome)).collect();
    assert_eq!(
        summary,
        [
            ("C:/k/kubelet.exe", Some(300), Some(RecordedUpload::Uploaded)),
            ("C:/k/same.conf", Some(4), Some(RecordedUpload::Skipped))
        ]
    );
    assert_eq!(entries[4].operation, Operation::FileSize { path: "C:/k/kubelet.exe".into(), size: Some(300) });
    assert_eq!(entries[5].operation, Operation::FileSize { path: "C:/k/absent".into(), size: None });
    let expected_download = Operation::Download {
        path: "C:/k/bootstrap-kubeconfig".into(),
        size: Some(KUBECONFIG.len() as u64),
        sha256: Some(kubeconfig_digest),
    };
    assert_eq!(entries[6].operation, expected_download);
    assert_eq!(entries[7].operation, Operation::Remove { path: "C:/k/bootstrap-kubeconfig".into() });

    let raw = std::fs::read_to_string(&path).unwrap();
    for content in [BOOTSTRAP_TOKEN, "apiVersion", &STANDARD.encode(KUBECONFIG)] {
        assert!(!raw.contains(content), "upload contents in the transcript:\n{raw}");
    }
}

#[tokio::test]
async fn a_failed_operation_is_recorded_with_its_error_and_returned_unchanged() {
    let directory = tempfile::tempdir().unwrap();
    let (fake, host, path) = recorded_fake(directory.path()).await;
    fake.set_fault(Some(Fault::DropConnection));
    let error = host.run(&command("hostname")).await.expect_err("the connection drops");
    let entries = read_transcript(&path).unwrap();
    assert_eq!(entries.len(), 1);
    let Operation::Run { command, exit_code, stdout, .. } = &entries[0].operation else { panic!("a run") };
    assert_eq!((command.as_str(), *exit_code, stdout.as_str()), ("hostname", None, ""));
    assert_eq!(entries[0].error.as_deref(), Some(error.to_string().as_str()));
}

#[tokio::test]
async fn long_output_is_cut_and_marked() {
    let directory = tempfile::tempdir().unwrap();
    let (fake, host, path) = recorded_fake(directory.path()).await;
    fake.reply("dir /s", Reply { exit_code: 0, stdout: vec![b'x'; MAX_RECORDED_TEXT + 10], stderr: b"err".to_vec() });
    assert_eq!(host.run(&command("dir /s")).await.unwrap().stdout.len(), MAX_RECORDED_TEXT + 10);
    let entries = read_transcript(&path).unwrap();
    let Operation::Run { stdout, stdout_truncated, stderr, stderr_truncated, .. } = &entries[0].operation else {
        panic!("a run")
    };
    assert_eq!(
        (stdout.len(), *stdout_truncated, stderr.as_str(), *stderr_truncated),
        (MAX_RECORDED_TEXT, true, "err", false)
    );
}

/// Log lines written while a test's subscriber is the default.
#[derive(Clone, Default)]
struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn an_unwritable_transcript_never_fails_an_operation_and_is_logged_once() {
    let log = CapturedLog::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let directory = tempfile::tempdir().unwrap();
    let not_a_directory = directory.path().join("file");
    std::fs::write(&not_a_directory, b"").unwrap();
    let (fake, host, path) = recorded_fake(&not_a_directory).await;
    fake.reply("hostname", Reply::ok("WIN-1\r\n"));
    for _ in 0..3 {
        assert_eq!(host.run(&command("hostname")).await.unwrap().stdout, b"WIN-1\r\n");
    }
    assert!(!path.exists());
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert_eq!(text.matches("cannot write the command transcript").count(), 1, "{text}");
    assert!(text.contains(&not_a_directory.display().to_string()), "{text}");
}

#[tokio::test]
async fn hosts_wrapped_again_share_their_file_and_other_hosts_get_their_own() {
    let directory = tempfile::tempdir().unwrap();
    let recorder = TranscriptRecorder::new(directory.path());
    let (first, second) = (FakeHost::start().await.unwrap(), FakeHost::start().await.unwrap());
    let (key, _) = FakeHost::generate_client_key().unwrap();
    for fake in [&first, &second] {
        fake.reply("hostname", Reply::ok("WIN\r\n"));
    }
    let one = Arc::new(SshHost::new(first.host_config(key.clone())).unwrap());
    recorder.wrap(one.clone()).run(&command("hostname")).await.unwrap();
    recorder.wrap(one.clone()).run(&command("hostname")).await.unwrap();
    let other = recorder.wrap(Arc::new(SshHost::new(second.host_config(key)).unwrap()));
    other.run(&command("hostname")).await.unwrap();
    let file_of = |label: &str| directory.path().join(transcript_file_name(label));
    assert_eq!(read_transcript(&file_of(one.label())).unwrap().len(), 2);
    assert_eq!(read_transcript(&file_of(other.label())).unwrap().len(), 1);
    assert_eq!(recorder.directory(), directory.path());
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(file_of(one.label())).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn a_transcript_directory_that_is_a_file_is_refused() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let error = prepare_directory(&file).expect_err("a file");
    assert!(error.to_string().starts_with(&format!("transcript directory {}", file.display())), "{error}");
    prepare_directory(directory.path()).unwrap();
}
