//! `winhost-replay` as an admin runs it (feature `replay`): the report's lines and summary, `-o json`, and the exit
//! codes — 0 when no command is unknown to the simulator (even if some differ), 1 when one is, 2 for an unreadable
//! transcript.

use std::path::Path;
use std::process::{Command, Output};

const BINARY: &str = env!("CARGO_BIN_EXE_winhost-replay");

fn run_line(command: &str, exit_code: u32, stdout: &str) -> String {
    serde_json::json!({
        "time": "2026-05-04T10:00:00Z", "host": "Administrator@127.0.0.10:22", "operation": "run",
        "command": command, "exitCode": exit_code, "stdout": stdout, "stderr": "", "durationMs": 4
    })
    .to_string()
}

fn write_transcript(directory: &Path, lines: &[String]) -> std::path::PathBuf {
    let path = directory.join("Administrator_127.0.0.10_22.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("the transcript is written");
    path
}

fn replay(arguments: &[&str]) -> (Output, String) {
    let output = Command::new(BINARY).args(arguments).output().expect("winhost-replay runs");
    let stdout = String::from_utf8(output.stdout.clone()).expect("the report is UTF-8");
    (output, stdout)
}

#[test]
fn differences_are_reported_and_exit_0() {
    let directory = tempfile::tempdir().unwrap();
    let identity = r#"{"hostname":"WIN-A","fqdn":"win-a.lab.example","ip":"203.0.113.7","build":"20348"}"#;
    let upload = serde_json::json!({
        "time": "2026-05-04T10:00:01Z", "host": "Administrator@127.0.0.10:22", "operation": "upload",
        "file": {"path": "C:/k/kubelet.exe", "size": 3, "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "outcome": "uploaded"},
        "durationMs": 9
    });
    let path = write_transcript(
        directory.path(),
        &[run_line(&format!("echo {identity}"), 0, identity), upload.to_string(), run_line("hostname", 0, "WIN-B\r\n")],
    );
    let (output, stdout) = replay(&[path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].contains("simulated host WIN-A (win-a.lab.example, node IP 203.0.113.7, build 20348; from entry 1)")
    );
    assert!(lines[1].contains("run") && lines[1].contains("same"), "{stdout}");
    assert!(lines[2].contains("upload") && lines[2].contains("skipped") && lines[2].ends_with("C:/k/kubelet.exe"));
    assert!(lines[3].contains("differs") && lines[3].ends_with("hostname"), "{stdout}");
    assert!(lines[4].trim() == r#"stdout line 1: recorded "WIN-B", replayed "WIN-A""#, "{stdout}");
    assert!(lines[5].starts_with("summary: 2 commands: 1 same, 1 differ, 0 unknown"), "{stdout}");

    let (output, stdout) = replay(&[path.to_str().unwrap(), "--differences-only"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout.lines().count(), 4, "{stdout}");

    let (output, stdout) = replay(&["-o", "json", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    let document: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(document["apiVersion"], "cli.wmco-rs.io/v1alpha1");
    assert_eq!(document["kind"], "TranscriptReplay");
    assert_eq!(document["identity"]["nodeIp"], "203.0.113.7");
    assert_eq!(document["steps"][2]["verdict"], "differs");
    assert_eq!(document["steps"][1]["verdict"], "skipped");
}

#[test]
fn a_command_unknown_to_the_simulator_exits_1_and_an_unreadable_transcript_2() {
    let directory = tempfile::tempdir().unwrap();
    let path = write_transcript(directory.path(), &[run_line("frobnicate.exe --now", 0, "")]);
    let (output, stdout) = replay(&[path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("unknown to the simulator"), "{stdout}");
    assert!(stdout.contains("cmd does not know `frobnicate.exe`"), "{stdout}");

    let (output, _) = replay(&[directory.path().join("absent.jsonl").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    std::fs::write(&path, "not a transcript\n").unwrap();
    let (output, _) = replay(&[path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("line 1: not a transcript entry"), "{stderr}");
    let (output, _) = replay(&[]);
    assert_eq!(output.status.code(), Some(2));
}
