//! `wmco-e2e-controlplane`: starts the e2e control plane, prints where its admin kubeconfig is and how long startup
//! took, and keeps it running until Ctrl-C (or SIGTERM). Run through `cargo xtask controlplane up`.

use std::time::Duration;

use anyhow::Context as _;
use wmco_e2e_harness::{ControlPlane, ControlPlaneOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut options = ControlPlaneOptions::default();
    if let Some(seconds) = std::env::var("WMCO_E2E_NODE_MONITOR_GRACE_SECONDS").ok().filter(|value| !value.is_empty()) {
        let seconds: u64 = seconds
            .parse()
            .with_context(|| format!("WMCO_E2E_NODE_MONITOR_GRACE_SECONDS={seconds:?} is not a number of seconds"))?;
        options = options.node_monitor_grace_period(Duration::from_secs(seconds));
    }
    let control_plane = ControlPlane::start(options).await.context("starting the e2e control plane")?;
    println!("control plane {} ready at {}", wmco_e2e_harness::kubernetes_version(), control_plane.api_server_url());
    println!("started in {:.1}s", control_plane.startup_duration().as_secs_f64());
    println!("kubeconfig: {}", control_plane.kubeconfig_path().display());
    println!("logs: {}", control_plane.log_directory().display());
    println!("export KUBECONFIG={}", control_plane.kubeconfig_path().display());
    println!("Ctrl-C stops it and removes its state.");

    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let mut health_check = tokio::time::interval(Duration::from_secs(2));
    loop {
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => {
                interrupted.context("waiting for Ctrl-C")?;
                break;
            }
            _ = terminate.recv() => break,
            _ = health_check.tick() => control_plane.check_processes().context("the control plane stopped")?,
        }
    }
    println!("stopping the control plane");
    drop(control_plane);
    Ok(())
}
