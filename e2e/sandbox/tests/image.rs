//! The operator image (issue 15), as `cargo xtask image` built it (`WMCO_IMAGE`, set by `cargo xtask test`):
//!
//! 1. skopeo accepts the `oci-archive` and umoci unpacks it (neither built it): the configuration says user 1001,
//!    entrypoint `/usr/bin/wmco`, command `run`, `WMCO_PAYLOAD_DIR=/payload`, and carries the OCI labels; the root
//!    file system holds the binary (0755), the payload (0644), the CA bundle, the user, a 1777 `/tmp`, and nothing
//!    else anyone may write.
//! 2. Run as the pod's user on a read-only root, `wmco version` names this version and the image's revision, and
//!    `wmco payload verify /payload` accepts the real payload.
//! 3. The operator starts from the image the way a kubelet starts the Deployment's pod (in-cluster configuration
//!    from the ServiceAccount files, the Deployment's args and environment, read-only root, user 1001, no
//!    capability) against the e2e control plane, and configures a simulated host until it is a Ready Node. Its
//!    metrics endpoint serves the certificate of the mounted Secret `windows-machine-config-operator-metrics-tls`
//!    (the Deployment's `secret` volume) to the scraper's token.
//!
//! 4. `podman load` and containerd's `ctr image import` take the archive and name the image as it was built.
//!
//! With `WMCO_IMAGE` unset the test fails saying how to build the image: it never skips. Needs skopeo, umoci, runc,
//! podman and containerd (`.ci/install-deps.sh`), root (runc, containerd) and the control-plane binaries.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use serde_json::json;
use wmco_sandbox::pod::{PodRun, image_from_env};
use wmco_sandbox::{Sandbox, SandboxOptions};

/// Generous upper bound for a loaded 2-core machine (never a timed assertion): the real payload goes to the host.
const READY_TIMEOUT: Duration = Duration::from_secs(1200);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_runs_the_operator_the_way_a_kubelet_runs_its_pod_until_a_host_is_ready() -> anyhow::Result<()> {
    let archive = image_from_env()?;
    let sandbox = Sandbox::start(SandboxOptions {
        hosts: 1,
        localhost_host: false,
        operator_image: Some(archive),
        operator_ready_timeout: Duration::from_secs(300),
        ..SandboxOptions::default()
    })
    .await
    .context("the sandbox did not start with the operator image")?;
    let pod = sandbox.operator_pod().context("the operator does not run as a pod")?;

    the_configuration_is_the_one_the_image_promises(&pod)?;
    the_root_file_system_holds_what_it_needs_and_nothing_writable(&pod.image.rootfs())?;
    the_binary_runs_as_the_pod_user_on_a_read_only_root(&sandbox, &pod)?;
    the_operator_process_is_confined_like_the_pod(&pod)?;

    sandbox.write_instances(&sandbox.entries_for_all_hosts()).await?;
    let ready = sandbox.wait_until_ready(1, READY_TIMEOUT).await?;
    ensure!(
        ready[0].node.metadata.name.as_deref() == Some(sandbox.hosts()[0].info.name.as_str()),
        "the Ready Node is {:?}",
        ready[0].node.metadata.name
    );
    let log = std::fs::read_to_string(sandbox.operator_log_path())?;
    ensure!(log.contains("\"payload verified\""), "the operator logged no payload check in JSON:\n{log}");
    ensure!(
        log.contains("/etc/wmco/metrics-tls/tls.crt"),
        "the operator did not serve the mounted metrics certificate:\n{log}"
    );
    let metrics = sandbox.operator_metrics().await.context("reading /metrics over TLS as the scraper")?;
    ensure!(metrics.contains("wmco_leader 1\n"), "the pod does not lead: {metrics}");
    sandbox.assert_no_secret_leaked().await?;
    Ok(())
}

#[test]
fn podman_and_containerd_load_the_archive_under_the_name_it_was_built_with() -> anyhow::Result<()> {
    let archive = image_from_env()?;
    let name = archive_name(&archive)?;
    let scratch = tempfile::tempdir()?;

    let storage = scratch.path().join("podman");
    let podman = |args: &[&str]| {
        std::process::Command::new("podman")
            .arg("--root")
            .arg(storage.join("root"))
            .arg("--runroot")
            .arg(storage.join("run"))
            .args(["--storage-driver", "vfs"])
            .args(args)
            .output()
    };
    let loaded = podman(&["load", "--input", &archive.display().to_string()]).context("cannot run podman")?;
    let printed = String::from_utf8_lossy(&loaded.stdout);
    ensure!(loaded.status.success(), "podman load: {printed}{}", String::from_utf8_lossy(&loaded.stderr));
    ensure!(printed.contains(&format!("Loaded image: {name}")), "podman load: {printed}");

    let state = scratch.path().join("containerd");
    std::fs::create_dir_all(&state)?;
    let socket = state.join("containerd.sock");
    let config = state.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "version = 2\nroot = \"{0}/root\"\nstate = \"{0}/state\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
             [grpc]\n  address = \"{1}\"\n",
            state.display(),
            socket.display()
        ),
    )?;
    let log = std::fs::File::create(state.join("containerd.log"))?;
    let mut daemon = std::process::Command::new("containerd")
        .arg("--config")
        .arg(&config)
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("cannot start containerd")?;
    let imported = (|| -> anyhow::Result<String> {
        for _ in 0..100 {
            if socket.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let ctr = |args: &[&str]| {
            std::process::Command::new("ctr")
                .arg("--address")
                .arg(&socket)
                .args(["--namespace", "wmco"])
                .args(args)
                .output()
        };
        let imported = ctr(&["image", "import", "--no-unpack", &archive.display().to_string()])?;
        ensure!(imported.status.success(), "ctr image import: {}", String::from_utf8_lossy(&imported.stderr));
        let listed = ctr(&["image", "list", "--quiet"])?;
        Ok(String::from_utf8_lossy(&listed.stdout).into_owned())
    })();
    let _ = daemon.kill();
    let _ = daemon.wait();
    let listed = imported?;
    ensure!(listed.lines().any(|line| line.trim() == name), "ctr image list: {listed}");
    Ok(())
}

/// The image's name in the archive's index (`org.opencontainers.image.ref.name`).
fn archive_name(archive: &Path) -> anyhow::Result<String> {
    let mut tar = std::process::Command::new("tar").arg("-xOf").arg(archive).arg("index.json").output()?;
    ensure!(tar.status.success(), "tar: {}", String::from_utf8_lossy(&tar.stderr));
    let index: serde_json::Value = serde_json::from_slice(&std::mem::take(&mut tar.stdout))?;
    index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
        .as_str()
        .map(str::to_owned)
        .context("the archive's index names no image")
}

fn the_configuration_is_the_one_the_image_promises(pod: &PodRun) -> anyhow::Result<()> {
    let config = &pod.image.config["config"];
    assert_eq!(config["User"], "1001");
    assert_eq!(pod.image.entrypoint(), ["/usr/bin/wmco"]);
    assert_eq!(config["Cmd"], json!(["run"]));
    let env = pod.image.env();
    ensure!(env.iter().any(|variable| variable == "WMCO_PAYLOAD_DIR=/payload"), "{env:?}");
    let labels = &config["Labels"];
    assert_eq!(labels["org.opencontainers.image.title"], "wmco");
    assert_eq!(labels["org.opencontainers.image.version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    let revision = labels["org.opencontainers.image.revision"].as_str().unwrap_or_default();
    ensure!(revision.len() == 40 && revision.bytes().all(|byte| byte.is_ascii_hexdigit()), "revision {revision:?}");
    let created = labels["org.opencontainers.image.created"].as_str().unwrap_or_default();
    ensure!(created.parse::<jiff::Timestamp>().is_ok(), "created {created:?} is not RFC 3339");
    assert_eq!(pod.image.config["created"], created);
    Ok(())
}

fn the_root_file_system_holds_what_it_needs_and_nothing_writable(rootfs: &Path) -> anyhow::Result<()> {
    let mode = |path: &str| -> anyhow::Result<(u32, u32)> {
        let metadata = std::fs::symlink_metadata(rootfs.join(path)).with_context(|| format!("/{path} in the image"))?;
        Ok((metadata.permissions().mode() & 0o7777, metadata.uid()))
    };
    assert_eq!(mode("usr/bin/wmco")?, (0o755, 0));
    assert_eq!(mode("tmp")?, (0o1777, 0));
    assert_eq!(mode("payload/sha256sum")?, (0o644, 0));
    assert_eq!(mode("etc/ssl/certs/ca-certificates.crt")?, (0o644, 0));
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd"))?;
    ensure!(passwd.lines().any(|line| line.starts_with("wmco:x:1001:0:")), "{passwd}");
    let libraries = std::fs::read_to_string(rootfs.join("usr/share/doc/wmco/runtime-libraries.txt"))?;
    ensure!(libraries.contains("libssl.so.3"), "{libraries}");

    let mut writable = Vec::new();
    let mut pending = vec![rootfs.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory)? {
            let entry = entry?;
            let metadata = entry.metadata()?;
            let path = entry.path();
            if metadata.permissions().mode() & 0o002 != 0 && path != rootfs.join("tmp") {
                writable.push(path.display().to_string());
            }
            if metadata.is_dir() {
                pending.push(path);
            }
        }
    }
    ensure!(writable.is_empty(), "world-writable in the image: {writable:?}");
    Ok(())
}

fn the_binary_runs_as_the_pod_user_on_a_read_only_root(sandbox: &Sandbox, pod: &PodRun) -> anyhow::Result<()> {
    let one_shot = |id: &str| PodRun { id: id.to_owned(), dir: sandbox.directory().join(id), ..pod.clone() };
    let version = one_shot("wmco-version").run_to_end(&["version"])?;
    let printed = String::from_utf8_lossy(&version.stdout);
    ensure!(version.status.success(), "wmco version failed: {printed}{}", String::from_utf8_lossy(&version.stderr));
    let revision =
        pod.image.config["config"]["Labels"]["org.opencontainers.image.revision"].as_str().unwrap_or_default();
    ensure!(printed.contains(env!("CARGO_PKG_VERSION")) && printed.contains(&revision[..12]), "{printed}");
    let verify = one_shot("wmco-payload-verify").run_to_end(&["payload", "verify", "/payload"])?;
    ensure!(
        verify.status.success(),
        "wmco payload verify /payload failed: {}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    Ok(())
}

/// The running operator's container process: user 1001, no capability, a read-only root, no kubeconfig, the
/// in-cluster variables.
fn the_operator_process_is_confined_like_the_pod(pod: &PodRun) -> anyhow::Result<()> {
    let state =
        std::process::Command::new("runc").arg("--root").arg(pod.runc_root()).arg("state").arg(&pod.id).output()?;
    ensure!(state.status.success(), "runc state: {}", String::from_utf8_lossy(&state.stderr));
    let state: serde_json::Value = serde_json::from_slice(&state.stdout)?;
    let pid = state["pid"].as_u64().context("runc state has no pid")?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field =
        |name: &str| status.lines().find_map(|line| line.strip_prefix(name)).unwrap_or_default().trim().to_owned();
    ensure!(field("Uid:").split_whitespace().all(|uid| uid == "1001"), "Uid: {}", field("Uid:"));
    ensure!(field("CapEff:") == "0000000000000000", "CapEff: {}", field("CapEff:"));
    ensure!(field("NoNewPrivs:") == "1", "NoNewPrivs: {}", field("NoNewPrivs:"));
    let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo"))?;
    let root = mounts.lines().find(|line| line.split_whitespace().nth(4) == Some("/")).context("no root mount")?;
    ensure!(
        root.split_whitespace().nth(5).is_some_and(|options| options.split(',').any(|option| option == "ro")),
        "{root}"
    );
    let environ = std::fs::read(format!("/proc/{pid}/environ"))?;
    let environ: Vec<String> =
        environ.split(|byte| *byte == 0).map(|variable| String::from_utf8_lossy(variable).into_owned()).collect();
    ensure!(!environ.iter().any(|variable| variable.starts_with("KUBECONFIG=")), "{environ:?}");
    ensure!(environ.iter().any(|variable| variable.starts_with("KUBERNETES_SERVICE_HOST=")), "{environ:?}");
    ensure!(
        environ.iter().any(|variable| variable == "POD_NAMESPACE=openshift-windows-machine-config-operator"),
        "{environ:?}"
    );
    Ok(())
}
