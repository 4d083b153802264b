//! `winhost-sim`: starts N simulated Windows hosts reachable with `ssh`, prints how to reach them and the control
//! interface's URL, and runs until interrupted.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use winhost_sim::fleet::{Fleet, NewHost};
use winhost_sim::host::Latency;

/// Simulated Windows Server hosts (SSH, SFTP, cmd.exe, sc.exe, a PowerShell subset) for e2e tests.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// How many hosts to start (127.0.0.10, .11, ...).
    #[arg(long, default_value_t = 1)]
    hosts: u8,
    /// The SSH port every host listens on.
    #[arg(long, default_value_t = 22)]
    port: u16,
    /// The control interface's port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    control_port: u16,
    /// Directory holding the hosts' C: drives and the generated admin key (default: a new directory under /tmp).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// An OpenSSH public key file to authorize on every host (default: a generated key pair in the state dir).
    #[arg(long)]
    admin_key: Option<PathBuf>,
    /// Start hosts without an authorized key (they wait for provisioning through the control interface).
    #[arg(long)]
    unprovisioned: bool,
    /// No command latency and instant service transitions (default: a few ms per command, 1 s per transition).
    #[arg(long)]
    zero_latency: bool,
}

/// Writes a new Ed25519 key pair (`admin_ed25519`, `admin_ed25519.pub`) and returns the public line and the
/// private key's path.
fn generate_admin_key(directory: &Path) -> anyhow::Result<(String, PathBuf)> {
    let key = winhost_sim::ssh::generate_key()?;
    let private_path = directory.join("admin_ed25519");
    let private = key.to_openssh(russh::keys::ssh_key::LineEnding::LF).context("encoding the admin key")?;
    let mut file =
        std::fs::File::create(&private_path).with_context(|| format!("creating {}", private_path.display()))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(private.as_bytes())?;
    let public = key.public_key().to_openssh().context("encoding the admin public key")?;
    std::fs::write(directory.join("admin_ed25519.pub"), format!("{public} winhost-sim-admin\n"))?;
    Ok((public, private_path))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_writer(std::io::stderr).init();
    let cli = Cli::parse();
    let state_dir = match cli.state_dir {
        Some(directory) => directory,
        None => std::env::temp_dir().join(format!("winhost-sim-{}", std::process::id())),
    };
    std::fs::create_dir_all(&state_dir).with_context(|| format!("creating {}", state_dir.display()))?;
    let (public_key, key_path) = match &cli.admin_key {
        Some(path) => {
            let line = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            (line.trim().to_owned(), path.clone())
        }
        None => generate_admin_key(&state_dir)?,
    };
    let latency = if cli.zero_latency { Latency::zero() } else { Latency::realistic() };
    let fleet = Arc::new(tokio::sync::Mutex::new(Fleet::new(state_dir.join("hosts"), cli.port, latency)));
    let control = winhost_sim::control::start(cli.control_port, Arc::clone(&fleet)).await?;
    println!("control: http://{control}");
    println!("admin key: {}", key_path.display());
    for _ in 0..cli.hosts {
        let authorized_key = (!cli.unprovisioned).then(|| public_key.clone());
        let info = fleet.lock().await.add(NewHost { authorized_key, ..NewHost::default() }).await?;
        println!(
            "host {}: ssh -i {} -p {} Administrator@{}  (node IP {}, C: at {})",
            info.name,
            key_path.display(),
            info.ssh_address.port(),
            info.ssh_address.ip(),
            info.node_ip,
            info.c_drive.display()
        );
    }
    tokio::signal::ctrl_c().await?;
    Ok(())
}
