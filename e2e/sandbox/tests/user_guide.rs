//! `docs/user-guide.md`, run: every `sh` block of the guide, in order, as `bash -euo pipefail`, against a sandbox
//! (the e2e control plane with the OpenShift overlay applied, two simulated hosts, the operator running without
//! Secret `cloud-private-key`, which the guide creates). The guide cannot drift from what works: a command that
//! fails, a flag that does not exist, an example that does not validate, fails this test.
//!
//! The guide's examples stand for the sandbox's:
//! - `10.0.0.21` (and `10-0-0-21` in record names) is the first host's address, `win-build-02.corp.example.com`
//!   the second host, reached as `localhost`;
//! - `wmco ssh check` and `wmco preflight` also get `--port`, the SSH port all simulated hosts share (an admin's
//!   hosts listen on 22);
//! - `$HOME/.ssh/windows_ed25519` holds the sandbox's admin key; `kubectl` and `wmco` are on `PATH`, and
//!   `KUBECONFIG` is the admin's; commands run in a directory holding the `yaml` block as `windows-instances.yaml`
//!   and `manifests/` (the repository's).
//!
//! One block is run by CI instead ([`RUN_BY_CI`]): it builds the release binary, which the `image` stage of
//! `cargo xtask test` does with the same command. A block neither run here nor listed there fails the test.
//!
//! Needs the control-plane binaries and the `wmco` binary (`WMCO_BIN`, set by `cargo xtask test`).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use wmco_sandbox::operator::locate_operator_binary;
use wmco_sandbox::{Sandbox, SandboxOptions};

/// Blocks CI runs elsewhere: a line of the block, and where it runs.
const RUN_BY_CI: &[(&str, &str)] =
    &[("cargo build --release --locked -p wmco", "the image stage of cargo xtask test (cargo xtask image)")];
/// How long one block may run (the guide's own `kubectl wait` timeouts are shorter than the hosts need here).
const BLOCK_TIMEOUT: Duration = Duration::from_secs(1500);

/// A fenced block of the guide: its language and text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    language: String,
    text: String,
    line: usize,
}

fn blocks(markdown: &str) -> anyhow::Result<Vec<Block>> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (index, line) in markdown.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(language)) => {
                open = Some(Block { language: language.trim().to_owned(), text: String::new(), line: index + 1 })
            }
            (Some(_), Some("")) => blocks.extend(open.take()),
            (Some(block), _) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    ensure!(open.is_none(), "a code block of the guide is not closed");
    Ok(blocks)
}

#[test]
fn the_guide_s_blocks_are_found_with_their_languages_and_lines() {
    let markdown = "# t\n```sh\nkubectl get nodes\n```\ntext\n```yaml\na: 1\n```\n";
    let found = blocks(markdown).unwrap();
    assert_eq!(
        found,
        [
            Block { language: "sh".into(), text: "kubectl get nodes\n".into(), line: 2 },
            Block { language: "yaml".into(), text: "a: 1\n".into(), line: 6 },
        ]
    );
    assert!(blocks("```sh\nnever closed\n").is_err());
}

/// The guide's example values replaced by the sandbox's.
struct Examples {
    first_host: String,
    second_host: String,
    ssh_port: u16,
}

impl Examples {
    fn apply(&self, text: &str) -> String {
        let text = text
            .replace("10.0.0.21", &self.first_host)
            .replace("10-0-0-21", &self.first_host.replace('.', "-"))
            .replace("win-build-02.corp.example.com", &self.second_host);
        text.lines()
            .map(|line| {
                if line.trim_start().starts_with("wmco ssh check ") || line.trim_start().starts_with("wmco preflight ")
                {
                    format!("{line} --port {}", self.ssh_port)
                } else {
                    line.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_of_the_user_guide_works_in_order() -> anyhow::Result<()> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize()?;
    let guide = std::fs::read_to_string(workspace.join("docs/user-guide.md"))?;
    let blocks = blocks(&guide)?;
    let wmco = locate_operator_binary()?;

    let sandbox = Sandbox::start(SandboxOptions {
        hosts: 2,
        localhost_host: true,
        private_key_secret: false,
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start")?;
    let examples = Examples {
        first_host: sandbox.hosts()[0].key.clone(),
        second_host: sandbox.hosts()[1].key.clone(),
        ssh_port: sandbox.ssh_port(),
    };
    ensure!(examples.second_host == "localhost", "the second host is {}", examples.second_host);

    let scratch = tempfile::tempdir()?;
    let home = scratch.path().join("home");
    let work = scratch.path().join("work");
    std::fs::create_dir_all(home.join(".ssh"))?;
    std::fs::create_dir_all(&work)?;
    let key = home.join(".ssh/windows_ed25519");
    std::fs::write(&key, sandbox.admin_key().private_openssh())?;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))?;
    std::os::unix::fs::symlink(workspace.join("manifests"), work.join("manifests"))?;
    let kubectl = PathBuf::from(sandbox.control_plane().kubectl().as_std().get_program());
    let path = std::env::join_paths(
        [wmco.parent(), kubectl.parent()]
            .into_iter()
            .flatten()
            .map(Path::to_path_buf)
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )?;

    let mut ran = 0;
    let mut by_ci = 0;
    for block in &blocks {
        match block.language.as_str() {
            "yaml" if block.text.contains("name: windows-instances") => {
                std::fs::write(work.join("windows-instances.yaml"), examples.apply(&block.text))?;
                continue;
            }
            "sh" => {}
            _ => continue,
        }
        if let Some((_, where_)) = RUN_BY_CI.iter().find(|(line, _)| block.text.contains(line)) {
            eprintln!("user guide line {}: run by {where_}", block.line);
            by_ci += 1;
            continue;
        }
        if block.text.contains("delete -k") {
            // The uninstall deletes the namespace: scan for leaked secrets while everything is still there.
            sandbox.assert_no_secret_leaked().await?;
        }
        let script = examples.apply(&block.text);
        eprintln!("user guide line {}:\n{script}", block.line);
        let mut command = tokio::process::Command::new("bash");
        command
            .args(["-euo", "pipefail", "-c", &script])
            .current_dir(&work)
            .env("HOME", &home)
            .env("PATH", &path)
            .env("KUBECONFIG", sandbox.kubeconfig_path())
            .kill_on_drop(true);
        let output = tokio::time::timeout(BLOCK_TIMEOUT, command.output())
            .await
            .with_context(|| format!("user guide line {}: still running after {BLOCK_TIMEOUT:?}", block.line))??;
        let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        eprintln!("{printed}");
        if !output.status.success() {
            sandbox.keep_directory();
            bail!("user guide line {} failed ({}):\n{script}\n{printed}", block.line, output.status);
        }
        sandbox.check_operator()?;
        ran += 1;
    }
    ensure!(by_ci == RUN_BY_CI.len(), "a RUN_BY_CI entry matches no block of the guide");
    ensure!(ran >= 10, "only {ran} blocks of the guide ran");
    Ok(())
}
