//! What the operator process was doing when a wait gave up: whether it still answers `/healthz` (a stalled async
//! runtime answers nothing), the state and kernel wait channel of each of its threads (`/proc`), and, when `gdb` is
//! installed, every thread's stack, written to `operator-threads.txt` in the kept sandbox directory. A hung
//! reconcile and a stalled process look alike in the log (silence); this tells them apart.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// How long `gdb` may take to attach and print the stacks.
const GDB_TIMEOUT: Duration = Duration::from_secs(60);

/// A short report on process `pid` (listening for probes on `probe`), and the stacks written under `directory`.
pub async fn stall_report(pid: Option<u32>, probe: SocketAddr, directory: &Path) -> String {
    let mut report = String::new();
    let stalled = "no answer within 10 s (the process's async runtime may be stalled)".to_owned();
    let health = tokio::time::timeout(Duration::from_secs(15), crate::operator::http_get(probe, "/healthz")).await;
    let health = match health {
        Ok(Ok((status, _))) => format!("answered {status}"),
        Ok(Err(error)) if error.kind() == std::io::ErrorKind::TimedOut => stalled,
        Ok(Err(error)) => format!("failed: {error}"),
        Err(_) => stalled,
    };
    let _ = writeln!(report, "  operator /healthz: {health}");
    let Some(pid) = pid else {
        report.push_str("  operator process: not running\n");
        return report;
    };
    let _ = writeln!(report, "  operator threads (state, wait channel): {}", thread_states(pid));
    let stacks = directory.join("operator-threads.txt");
    match thread_stacks(pid).await {
        Some(text) if std::fs::write(&stacks, &text).is_ok() => {
            let _ = writeln!(report, "  operator thread stacks: {}", stacks.display());
        }
        _ => report.push_str("  operator thread stacks: not taken (no gdb, or it failed)\n"),
    }
    report
}

/// `name:state:wchan` of every thread of `pid`, from `/proc/<pid>/task`.
fn thread_states(pid: u32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return "unreadable".to_owned() };
    let mut states: Vec<String> = tasks
        .flatten()
        .map(|task| {
            let read = |file: &str| std::fs::read_to_string(task.path().join(file)).unwrap_or_default();
            let stat = read("stat");
            let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.split_whitespace().next()).unwrap_or("?");
            format!("{}:{state}:{}", read("comm").trim(), read("wchan").trim())
        })
        .collect();
    states.sort();
    states.join(", ")
}

/// Every thread's stack of `pid` as `gdb` prints it, if `gdb` is installed and finishes in time.
async fn thread_stacks(pid: u32) -> Option<String> {
    let mut gdb = tokio::process::Command::new("gdb");
    gdb.args(["-p", &pid.to_string(), "-batch", "-ex", "thread apply all bt 40"])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(GDB_TIMEOUT, gdb.output()).await.ok()?.ok()?;
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_silent_listener_is_reported_as_a_stalled_runtime_and_the_process_threads_are_listed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let probe = listener.local_addr().unwrap();
        let directory = tempfile::tempdir().unwrap();
        let held = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(socket);
        });
        let mut sleeper = std::process::Command::new("sleep").arg("60").spawn().unwrap();
        let report = stall_report(Some(sleeper.id()), probe, directory.path()).await;
        held.abort();
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        assert!(report.contains("no answer within 10 s"), "{report}");
        assert!(report.contains("operator threads (state, wait channel): "), "{report}");
        assert!(report.contains("sleep:S:"), "{report}");
    }
}
