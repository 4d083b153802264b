//! The simulated Windows hosts of a sandbox: a `winhost-sim` [`Fleet`] in this process, every host authorizing the
//! admin key and listening on one shared SSH port (the operator's `--ssh-port`) on its own loopback address —
//! `127.0.0.(10+i)`, or `127.0.0.1` for the host the ConfigMap names `localhost` — plus winhost-sim's HTTP control
//! interface on 127.0.0.1 for people poking at a running sandbox. Every host keeps the earlier versions of its
//! bootstrap kubeconfig for the secret scan.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use winhost_sim::control::SharedFleet;
use winhost_sim::fleet::{Fleet, HostInfo, NewHost};
use winhost_sim::host::Latency;
use winhost_sim::metadata::InstanceMetadata;
use winhost_sim::wine_kubelet::KubeletModel;
use wmco_cluster_client::Platform;

use crate::SandboxError;

/// How many ports are tried before giving up on a port free on every host address.
const PORT_ATTEMPTS: u32 = 50;

/// One simulated host and how the `windows-instances` ConfigMap names it.
#[derive(Debug, Clone)]
pub struct SandboxHost {
    /// The ConfigMap key: the host's IPv4 address, or `localhost`.
    pub key: String,
    /// The simulator's facts (name, SSH address, node IP, host key, `C:` directory).
    pub info: HostInfo,
}

/// What [`start_fleet`] asks for.
#[derive(Debug, Clone)]
pub struct FleetPlan {
    /// Where the hosts' `C:` drives live.
    pub base: PathBuf,
    /// How many hosts.
    pub count: u8,
    /// Whether the last host listens on 127.0.0.1 and is named `localhost` in the ConfigMap.
    pub localhost_host: bool,
    /// Command and service-transition delays.
    pub latency: Latency,
    /// The `authorized_keys` line every host accepts.
    pub authorized_key: String,
    /// Which kubelet every host runs (simulated, or the uploaded `kubelet.exe` under Wine).
    pub kubelet: KubeletModel,
    /// The host (by index) that reports a lower-case host name, as one an admin renamed so; the others report
    /// theirs in upper case, as stock Windows images do.
    pub lower_case_host: Option<u8>,
    /// The cluster's platform: on AWS and GCP every host runs on that cloud ([`instance_metadata`]).
    pub platform: Platform,
}

/// The metadata service host `index` reaches on `platform`: on AWS an EC2 instance in us-east-1 that requires IMDSv2
/// (`ip-10-0-1-<10+index>.ec2.internal`), on GCP a VM named after the host (`winhost-<index>.us-central1-a.c.
/// wmco-e2e.internal`, zonal DNS), elsewhere none.
pub fn instance_metadata(platform: Platform, index: u8) -> InstanceMetadata {
    match platform {
        Platform::Aws => InstanceMetadata::Aws {
            local_hostname: format!("ip-10-0-1-{}.ec2.internal", 10u8.saturating_add(index)),
            tokens_required: true,
        },
        Platform::Gcp => {
            InstanceMetadata::Gcp { hostname: format!("winhost-{index}.us-central1-a.c.wmco-e2e.internal") }
        }
        Platform::Azure | Platform::VSphere | Platform::Nutanix | Platform::None => InstanceMetadata::None,
    }
}

/// A started fleet.
#[derive(Debug)]
pub struct StartedFleet {
    /// The fleet, shared with the control interface.
    pub fleet: SharedFleet,
    /// The hosts in creation order.
    pub hosts: Vec<SandboxHost>,
    /// The SSH port every host listens on.
    pub ssh_port: u16,
    /// The control interface's address.
    pub control_address: SocketAddr,
    /// The control interface's task.
    pub control_task: tokio::task::JoinHandle<()>,
}

/// The listening address of host `index` under `plan`.
pub fn host_address(plan: &FleetPlan, index: u8) -> Ipv4Addr {
    if plan.localhost_host && index + 1 == plan.count {
        Ipv4Addr::LOCALHOST
    } else {
        Ipv4Addr::new(127, 0, 0, 10u8.saturating_add(index))
    }
}

/// Starts the hosts and the control interface.
///
/// # Errors
/// [`SandboxError::NoSharedPort`], [`SandboxError::Fleet`], [`SandboxError::Io`] or [`SandboxError::SecretScan`].
pub async fn start_fleet(plan: &FleetPlan) -> Result<StartedFleet, SandboxError> {
    let addresses: Vec<Ipv4Addr> = (0..plan.count).map(|index| host_address(plan, index)).collect();
    let ssh_port = shared_free_port(&addresses)?;
    let mut fleet = Fleet::new(plan.base.clone(), ssh_port, plan.latency);
    // The operator deletes the bootstrap kubeconfig once the Node exists; the secret scan reads every token it held.
    fleet.keep_versions_on_every_host(&crate::secret_scan::bootstrap_kubeconfig_path()?);
    let fleet: SharedFleet = Arc::new(tokio::sync::Mutex::new(fleet));
    let mut hosts = Vec::with_capacity(addresses.len());
    for (index, address) in (0u8..).zip(addresses) {
        // Named explicitly only when its reported name must equal its fleet name.
        let lower_case = (plan.lower_case_host == Some(index)).then(|| format!("winhost-{index}"));
        let request = NewHost {
            name: lower_case.clone(),
            hostname: lower_case,
            authorized_key: Some(plan.authorized_key.clone()),
            address: Some(address),
            kubelet: plan.kubelet,
            instance_metadata: instance_metadata(plan.platform, index),
            ..NewHost::default()
        };
        let info = fleet.lock().await.add(request).await?;
        let key = if address == Ipv4Addr::LOCALHOST { "localhost".to_owned() } else { address.to_string() };
        hosts.push(SandboxHost { key, info });
    }
    let control_listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(SandboxError::io("bind the winhost-sim control interface on", "127.0.0.1:0"))?;
    let control_address = control_listener
        .local_addr()
        .map_err(SandboxError::io("read the address of", "the winhost-sim control interface"))?;
    let control_task = tokio::spawn(winhost_sim::control::serve(control_listener, Arc::clone(&fleet)));
    Ok(StartedFleet { fleet, hosts, ssh_port, control_address, control_task })
}

/// A TCP port that is free on every address (the hosts share one port, as the operator's `--ssh-port` applies to
/// every host).
fn shared_free_port(addresses: &[Ipv4Addr]) -> Result<u16, SandboxError> {
    for _ in 0..PORT_ATTEMPTS {
        let probe = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(SandboxError::io("bind a probe socket on", "127.0.0.1:0"))?;
        let port = probe.local_addr().map_err(SandboxError::io("read the address of", "a probe socket"))?.port();
        let held: Result<Vec<TcpListener>, _> = addresses
            .iter()
            .filter(|address| **address != Ipv4Addr::LOCALHOST)
            .map(|address| TcpListener::bind((*address, port)))
            .collect();
        if held.is_ok() {
            return Ok(port);
        }
    }
    Err(SandboxError::NoSharedPort {
        addresses: addresses.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        attempts: PORT_ATTEMPTS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(count: u8, localhost_host: bool) -> FleetPlan {
        FleetPlan {
            base: PathBuf::from("/unused"),
            count,
            localhost_host,
            latency: Latency::zero(),
            authorized_key: String::new(),
            kubelet: KubeletModel::Simulated,
            lower_case_host: None,
            platform: Platform::None,
        }
    }

    #[test]
    fn the_last_host_is_on_127_0_0_1_only_when_asked() {
        let with = plan(3, true);
        let addresses: Vec<Ipv4Addr> = (0..3).map(|index| host_address(&with, index)).collect();
        assert_eq!(addresses, [Ipv4Addr::new(127, 0, 0, 10), Ipv4Addr::new(127, 0, 0, 11), Ipv4Addr::LOCALHOST]);
        let without = plan(2, false);
        assert_eq!(host_address(&without, 1), Ipv4Addr::new(127, 0, 0, 11));
    }

    #[tokio::test]
    async fn hosts_share_one_port_and_the_localhost_host_is_keyed_localhost() {
        let base = tempfile::tempdir().unwrap();
        let key = crate::AdminKey::generate().unwrap();
        let plan = FleetPlan {
            base: base.path().to_path_buf(),
            authorized_key: key.public_line().to_owned(),
            lower_case_host: Some(1),
            ..plan(2, true)
        };
        let started = start_fleet(&plan).await.unwrap();
        let keys: Vec<&str> = started.hosts.iter().map(|host| host.key.as_str()).collect();
        assert_eq!(keys, ["127.0.0.10", "localhost"]);
        for host in &started.hosts {
            assert_eq!(host.info.ssh_address.port(), started.ssh_port);
        }
        assert_eq!(started.hosts[1].info.ssh_address.ip(), std::net::IpAddr::from(Ipv4Addr::LOCALHOST));
        let names: Vec<(&str, &str, &str)> = started
            .hosts
            .iter()
            .map(|host| (host.info.name.as_str(), host.info.hostname.as_str(), host.info.fqdn.as_str()))
            .collect();
        assert_eq!(
            names,
            [("winhost-0", "WINHOST-0", "WINHOST-0.sim.test"), ("winhost-1", "winhost-1", "winhost-1.sim.test")]
        );
        let listed = started.fleet.lock().await.list();
        assert_eq!(listed.len(), 2);
        started.control_task.abort();
    }
}
