//! The running kubelet, in the order a real one acts (kubelet-bootstrap.md §9 "Simulated kubelet"): obtain a
//! client certificate ([`crate::client_cert`]), register the Node, then heartbeat (status patches and the
//! Lease), request a serving certificate after the first status patch ([`crate::serving`]), rotate the client
//! certificate, and run the pods bound to the node ([`crate::pods`]). Every task reads the current node client
//! from one watch channel, so a rotated certificate is used from the next request on.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::watch;

use crate::KubeletPhase;
use crate::certs::SubjectAltNames;
use crate::client_cert;
use crate::launch::Prepared;
use crate::node::{NodeFacts, Readiness};
use crate::state::{Backoff, Shared};

/// First pause after a failed registration; doubled up to [`REGISTRATION_RETRY_MAX`].
const REGISTRATION_RETRY_INITIAL: Duration = Duration::from_millis(100);
/// Longest pause between registration attempts.
const REGISTRATION_RETRY_MAX: Duration = Duration::from_secs(7);
/// The namespace of node Leases.
const LEASE_NAMESPACE: &str = "kube-node-lease";

/// The kubelet's whole life; runs until aborted.
pub(crate) async fn run(prepared: Prepared, facts: NodeFacts, shared: Arc<Shared>) {
    let connection = client_cert::obtain(&prepared, &shared).await;
    let client = client_cert::connect(&connection, &shared).await;
    shared.set_node_client(client.clone());
    let (client_sender, clients) = watch::channel(client.clone());
    let mut tasks = tokio::task::JoinSet::new();
    if prepared.config.rotate_certificates {
        tasks.spawn(client_cert::rotate(prepared.clone(), connection, client_sender, shared.clone()));
    }
    let (network_sender, network) =
        watch::channel(Readiness { network_ready: prepared.network.ready(), since: jiff::Timestamp::now() });
    tasks.spawn(network_monitor(prepared.network.clone(), network_sender, shared.clone()));
    if prepared.config.register_node {
        shared.phase(KubeletPhase::Registering);
        let readiness = *network.borrow();
        let node = register(&client, &facts, readiness, &shared).await;
        let (addresses_sender, addresses) = watch::channel(None);
        let heartbeat_task = heartbeat(
            clients.clone(),
            facts.clone(),
            prepared.config.clone(),
            network.clone(),
            addresses_sender,
            shared.clone(),
        );
        tasks.spawn(heartbeat_task);
        tasks.spawn(lease(clients.clone(), node, prepared.config.clone(), shared.clone()));
        if prepared.config.server_tls_bootstrap {
            tasks.spawn(crate::serving::run(prepared.clone(), clients.clone(), addresses, shared.clone()));
        }
    }
    shared.phase(KubeletPhase::Running);
    tasks.spawn(crate::pods::run(clients, facts.name.clone(), facts.ips.clone(), network, shared));
    while tasks.join_next().await.is_some() {}
}

/// How often the runtime's network readiness is re-read.
const NETWORK_POLL: Duration = Duration::from_secs(1);

/// Publishes the runtime network's readiness whenever it changes, logging the change.
async fn network_monitor(
    probe: crate::network::NetworkProbe,
    readiness: watch::Sender<Readiness>,
    shared: Arc<Shared>,
) {
    loop {
        let ready = probe.ready();
        if ready != readiness.borrow().network_ready {
            readiness.send_replace(Readiness { network_ready: ready, since: jiff::Timestamp::now() });
            if ready {
                shared.info("container runtime network is ready".to_owned());
            } else {
                shared.problem(crate::node::NETWORK_NOT_READY.to_owned());
            }
        }
        tokio::time::sleep(NETWORK_POLL).await;
    }
}

/// Creates the Node, or reconciles the kubelet's labels on an existing one; returns the stored Node.
async fn register(client: &kube::Client, facts: &NodeFacts, readiness: Readiness, shared: &Shared) -> Node {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut backoff = Backoff::new(REGISTRATION_RETRY_INITIAL, REGISTRATION_RETRY_MAX);
    loop {
        let attempt =
            match nodes.create(&PostParams::default(), &facts.initial_node(jiff::Timestamp::now(), readiness)).await {
                Ok(node) => Ok(node),
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    let labels = serde_json::json!({ "metadata": { "labels": facts.labels() } });
                    nodes.patch(&facts.name, &PatchParams::default(), &Patch::Merge(labels)).await
                }
                Err(error) => Err(error),
            };
        match attempt {
            Ok(node) => {
                shared.info(format!("successfully registered node {}", facts.name));
                return node;
            }
            Err(error) => shared.problem(format!("unable to register node {} with API server: {error}", facts.name)),
        }
        backoff.pause().await;
    }
}

/// Patches the Node's status when its readiness changed or every `nodeStatusReportFrequency` (checking every
/// `nodeStatusUpdateFrequency`), the first time at once; publishes the addresses the API server returned after
/// each successful patch.
async fn heartbeat(
    clients: watch::Receiver<kube::Client>,
    facts: NodeFacts,
    config: crate::config::KubeletConfig,
    network: watch::Receiver<Readiness>,
    addresses: watch::Sender<Option<SubjectAltNames>>,
    shared: Arc<Shared>,
) {
    let mut last_patch: Option<(Instant, Readiness)> = None;
    loop {
        let readiness = *network.borrow();
        let due = last_patch
            .is_none_or(|(at, reported)| reported != readiness || at.elapsed() >= config.node_status_report_frequency);
        if due {
            let nodes: Api<Node> = Api::all(clients.borrow().clone());
            let status = serde_json::json!({ "status": facts.status(jiff::Timestamp::now(), readiness) });
            match nodes.patch_status(&facts.name, &PatchParams::default(), &Patch::Strategic(status)).await {
                Ok(node) => {
                    last_patch = Some((Instant::now(), readiness));
                    let observed = serving_names(&node);
                    addresses.send_if_modified(|current| {
                        let changed = current.as_ref() != Some(&observed);
                        *current = Some(observed);
                        changed
                    });
                }
                Err(error) => shared.problem(format!("error updating node status for {}: {error}", facts.name)),
            }
        }
        tokio::time::sleep(config.node_status_update_frequency).await;
    }
}

/// The SANs of a serving request from the Node's addresses (`addressesToHostnamesAndIPs`).
fn serving_names(node: &Node) -> SubjectAltNames {
    let mut names = SubjectAltNames::default();
    for address in node.status.iter().flat_map(|status| status.addresses.iter().flatten()) {
        if address.address.is_empty() {
            continue;
        }
        match address.type_.as_str() {
            "Hostname" => match address.address.parse::<IpAddr>() {
                Ok(ip) => names.ips.push(ip),
                Err(_) => names.dns.push(address.address.clone()),
            },
            "InternalDNS" | "ExternalDNS" => names.dns.push(address.address.clone()),
            "InternalIP" | "ExternalIP" => names.ips.extend(address.address.parse::<IpAddr>().ok()),
            _ => {}
        }
    }
    names.dns.sort();
    names.dns.dedup();
    names.ips.sort_by_key(ToString::to_string);
    names.ips.dedup();
    names
}

/// Renews `kube-node-lease/<node>` every quarter of its duration, creating it when missing.
async fn lease(
    clients: watch::Receiver<kube::Client>,
    node: Node,
    config: crate::config::KubeletConfig,
    shared: Arc<Shared>,
) {
    let duration_seconds = config.node_lease_duration_seconds;
    let interval = config.lease_renew_interval();
    let name = node.metadata.name.clone().unwrap_or_default();
    let owner = OwnerReference {
        api_version: "v1".to_owned(),
        kind: "Node".to_owned(),
        name: name.clone(),
        uid: node.metadata.uid.clone().unwrap_or_default(),
        ..OwnerReference::default()
    };
    let mut latest: Option<Lease> = None;
    loop {
        let leases: Api<Lease> = Api::namespaced(clients.borrow().clone(), LEASE_NAMESPACE);
        match renew(&leases, latest.take(), &name, &owner, duration_seconds).await {
            Ok(renewed) => latest = Some(renewed),
            Err(error) => shared.problem(format!("failed to update lease {LEASE_NAMESPACE}/{name}: {error}")),
        }
        tokio::time::sleep(interval).await;
    }
}

/// Renews the Lease with one `PUT` of the last version written (`latest`); reads it first (creating it when
/// missing) when there is none, as after a conflict.
async fn renew(
    leases: &Api<Lease>,
    latest: Option<Lease>,
    name: &str,
    owner: &OwnerReference,
    duration_seconds: i32,
) -> Result<Lease, kube::Error> {
    let spec = LeaseSpec {
        holder_identity: Some(name.to_owned()),
        lease_duration_seconds: Some(duration_seconds),
        renew_time: Some(MicroTime(jiff::Timestamp::now())),
        ..LeaseSpec::default()
    };
    let current = match latest {
        Some(lease) => Some(lease),
        None => leases.get_opt(name).await?,
    };
    match current {
        Some(mut existing) => {
            existing.spec = Some(spec);
            existing.metadata.owner_references = Some(vec![owner.clone()]);
            leases.replace(name, &PostParams::default(), &existing).await
        }
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    namespace: Some(LEASE_NAMESPACE.to_owned()),
                    owner_references: Some(vec![owner.clone()]),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
            };
            leases.create(&PostParams::default(), &lease).await
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{NodeAddress, NodeStatus};

    use super::*;

    #[test]
    fn serving_names_follow_the_addresses_sorted_and_deduplicated() {
        let address = |type_: &str, address: &str| NodeAddress { type_: type_.into(), address: address.into() };
        let node = Node {
            status: Some(NodeStatus {
                addresses: Some(vec![
                    address("InternalIP", "203.0.113.10"),
                    address("InternalIP", "10.0.0.9"),
                    address("Hostname", "win-b"),
                    address("InternalDNS", "win-a.example"),
                    address("ExternalIP", "not-an-ip"),
                    address("Hostname", "win-b"),
                    address("InternalIP", ""),
                ]),
                ..NodeStatus::default()
            }),
            ..Node::default()
        };
        let names = serving_names(&node);
        assert_eq!(names.dns, ["win-a.example", "win-b"]);
        let ips: Vec<String> = names.ips.iter().map(ToString::to_string).collect();
        assert_eq!(ips, ["10.0.0.9", "203.0.113.10"]);
    }
}
