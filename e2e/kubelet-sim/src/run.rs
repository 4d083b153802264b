//! The running kubelet, in the order a real one acts (kubelet-bootstrap.md §9 "Simulated kubelet"): obtain a
//! client certificate (bootstrap CSR, or the stored one), register the Node, then heartbeat (status patches and
//! the Lease), request a serving certificate after the first status patch, and run the pods bound to the node.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::watch;

use crate::certs::{self, SubjectAltNames};
use crate::csr::{self, CLIENT_SIGNER, CLIENT_USAGES, SERVING_SIGNER, SERVING_USAGES};
use crate::kubeconfig::{self, Connection};
use crate::launch::{Credentials, Prepared};
use crate::node::{NodeFacts, Readiness};
use crate::{KubeletPhase, KubeletStatus};

/// How long one certificate request waits for its certificate (`certificateWaitTimeout`).
const CERTIFICATE_WAIT: Duration = Duration::from_secs(15 * 60);
/// First pause after a failed certificate request; doubled up to [`CERTIFICATE_RETRY_MAX`].
const CERTIFICATE_RETRY_INITIAL: Duration = Duration::from_secs(2);
/// Longest pause between certificate requests.
const CERTIFICATE_RETRY_MAX: Duration = Duration::from_secs(32);
/// First pause after a failed registration; doubled up to [`REGISTRATION_RETRY_MAX`].
const REGISTRATION_RETRY_INITIAL: Duration = Duration::from_millis(100);
/// Longest pause between registration attempts.
const REGISTRATION_RETRY_MAX: Duration = Duration::from_secs(7);
/// The namespace of node Leases.
const LEASE_NAMESPACE: &str = "kube-node-lease";

/// How many journal lines a kubelet keeps (the oldest are dropped first).
const JOURNAL_LINES: usize = 10_000;

/// Shared between the task and its handle.
pub(crate) struct Shared {
    pub node_name: String,
    pub status: watch::Sender<KubeletStatus>,
    pub node_client: OnceLock<kube::Client>,
    pub journal: Mutex<VecDeque<String>>,
}

impl Shared {
    pub(crate) fn new(node_name: String, status: watch::Sender<KubeletStatus>) -> Self {
        Self { node_name, status, node_client: OnceLock::new(), journal: Mutex::new(VecDeque::new()) }
    }

    fn phase(&self, phase: KubeletPhase) {
        self.status.send_modify(|status| status.phase = phase);
    }

    /// Records a notable event (klog severity `I`).
    pub(crate) fn info(&self, message: String) {
        tracing::info!(node = %self.node_name, "{message}");
        self.record('I', &message);
    }

    /// Records a problem (klog severity `E`) and remembers it as the last one.
    pub(crate) fn problem(&self, problem: String) {
        tracing::warn!(node = %self.node_name, "{problem}");
        self.record('E', &problem);
        self.status.send_modify(|status| status.last_problem = Some(problem));
    }

    fn record(&self, severity: char, message: &str) {
        let line = format!("{severity} {} {message}", jiff::Timestamp::now());
        let mut journal = self.journal.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if journal.len() == JOURNAL_LINES {
            journal.pop_front();
        }
        journal.push_back(line);
    }
}

/// A doubling pause between `initial` and `max`.
struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    fn new(initial: Duration, max: Duration) -> Self {
        Self { next: initial, max }
    }

    async fn pause(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(self.max);
    }
}

/// The kubelet's whole life; runs until aborted.
pub(crate) async fn run(prepared: Prepared, facts: NodeFacts, shared: Arc<Shared>) {
    let connection = client_connection(&prepared, &shared).await;
    let client = connect(&connection, &shared).await;
    let _ = shared.node_client.set(client.clone());
    let mut tasks = tokio::task::JoinSet::new();
    let (network_sender, network) =
        watch::channel(Readiness { network_ready: prepared.network.ready(), since: jiff::Timestamp::now() });
    tasks.spawn(network_monitor(prepared.network.clone(), network_sender, shared.clone()));
    if prepared.config.register_node {
        shared.phase(KubeletPhase::Registering);
        let readiness = *network.borrow();
        let node = register(&client, &facts, readiness, &shared).await;
        let (addresses_sender, addresses) = watch::channel(None);
        let heartbeat_task = heartbeat(
            client.clone(),
            facts.clone(),
            prepared.config.clone(),
            network.clone(),
            addresses_sender,
            shared.clone(),
        );
        tasks.spawn(heartbeat_task);
        tasks.spawn(lease(client.clone(), node, prepared.config.node_lease_duration_seconds, shared.clone()));
        if prepared.config.server_tls_bootstrap {
            tasks.spawn(serving_certificate(client.clone(), prepared, facts.name.clone(), addresses, shared.clone()));
        }
    }
    shared.phase(KubeletPhase::Running);
    tasks.spawn(crate::pods::run(client, facts.name.clone(), facts.ips.clone(), network, shared));
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

/// The connection of the kubelet's own kubeconfig: as found, or after the bootstrap of §1.2.
async fn client_connection(prepared: &Prepared, shared: &Shared) -> Connection {
    let bootstrap = match &prepared.credentials {
        Credentials::Kubeconfig(connection) => return connection.clone(),
        Credentials::Bootstrap(bootstrap) => bootstrap,
    };
    let current_pem = prepared.cert_file("kubelet-client-current.pem");
    if prepared.config.rotate_certificates {
        write_kubeconfig(prepared, bootstrap, &current_pem, shared).await;
    }
    let mut backoff = Backoff::new(CERTIFICATE_RETRY_INITIAL, CERTIFICATE_RETRY_MAX);
    loop {
        if let Some(connection) = stored_pair_connection(prepared, bootstrap, &current_pem) {
            if !prepared.config.rotate_certificates {
                write_kubeconfig(prepared, bootstrap, &current_pem, shared).await;
            }
            return connection;
        }
        match bootstrap_certificate(prepared, bootstrap, shared).await {
            Ok(()) => continue,
            Err(problem) => shared.problem(problem),
        }
        backoff.pause().await;
    }
}

/// The connection of `--kubeconfig` pointing at the stored client pair, if that pair exists and is valid.
fn stored_pair_connection(prepared: &Prepared, bootstrap: &Connection, current_pem: &str) -> Option<Connection> {
    let file = prepared.drive.resolve(current_pem).ok()?;
    let contents = std::fs::read(file).ok()?;
    certs::check_pair(&contents, &contents).ok()?;
    Some(Connection {
        server: bootstrap.server.clone(),
        certificate_authority: bootstrap.certificate_authority.clone(),
        certificate_authority_path: bootstrap.certificate_authority_path.clone(),
        credential: kubeconfig::Credential::Certificate { certificate: contents.clone(), key: contents },
    })
}

async fn write_kubeconfig(prepared: &Prepared, bootstrap: &Connection, current_pem: &str, shared: &Shared) {
    let mut backoff = Backoff::new(CERTIFICATE_RETRY_INITIAL, CERTIFICATE_RETRY_MAX);
    loop {
        let written = kubeconfig::render_node_kubeconfig(bootstrap, current_pem).and_then(|text| {
            let file = prepared.drive.resolve(&prepared.kubeconfig_path).map_err(|problem| problem.to_string())?;
            crate::disk::write_private(&file, text.as_bytes())
                .map_err(|error| format!("write {}: {error}", prepared.kubeconfig_path))
        });
        match written {
            Ok(()) => return,
            Err(problem) => shared.problem(problem),
        }
        backoff.pause().await;
    }
}

/// One bootstrap attempt: a new key, a client CSR with the bootstrap credentials, the stored result.
async fn bootstrap_certificate(prepared: &Prepared, bootstrap: &Connection, shared: &Shared) -> Result<(), String> {
    let generated = certs::new_request(&prepared.node_name, &SubjectAltNames::default())?;
    let client = bootstrap.client().await?;
    let (name, certificate) = csr::request_certificate(
        &client,
        CLIENT_SIGNER,
        &CLIENT_USAGES,
        &generated.request_pem,
        CERTIFICATE_WAIT,
        |name| shared.info(format!("created client certificate signing request {name}")),
    )
    .await
    .map_err(|problem| problem.to_string())?;
    certs::store(&prepared.cert_dir_on_disk, "kubelet-client", &certificate, &generated.key_pem)
        .map_err(|error| format!("store the client certificate in {}: {error}", prepared.cert_dir))?;
    shared.info(format!("client certificate issued for CSR {name}, stored in {}", prepared.cert_dir));
    Ok(())
}

async fn connect(connection: &Connection, shared: &Shared) -> kube::Client {
    let mut backoff = Backoff::new(CERTIFICATE_RETRY_INITIAL, CERTIFICATE_RETRY_MAX);
    loop {
        match connection.client().await {
            Ok(client) => return client,
            Err(problem) => shared.problem(problem),
        }
        backoff.pause().await;
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
    client: kube::Client,
    facts: NodeFacts,
    config: crate::config::KubeletConfig,
    network: watch::Receiver<Readiness>,
    addresses: watch::Sender<Option<SubjectAltNames>>,
    shared: Arc<Shared>,
) {
    let nodes: Api<Node> = Api::all(client);
    let mut last_patch: Option<(Instant, Readiness)> = None;
    loop {
        let readiness = *network.borrow();
        let due = last_patch
            .is_none_or(|(at, reported)| reported != readiness || at.elapsed() >= config.node_status_report_frequency);
        if due {
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
async fn lease(client: kube::Client, node: Node, duration_seconds: i32, shared: Arc<Shared>) {
    let leases: Api<Lease> = Api::namespaced(client, LEASE_NAMESPACE);
    let name = node.metadata.name.clone().unwrap_or_default();
    let owner = OwnerReference {
        api_version: "v1".to_owned(),
        kind: "Node".to_owned(),
        name: name.clone(),
        uid: node.metadata.uid.clone().unwrap_or_default(),
        ..OwnerReference::default()
    };
    let interval = Duration::from_millis(u64::try_from(duration_seconds).unwrap_or(40) * 250);
    loop {
        if let Err(error) = renew(&leases, &name, &owner, duration_seconds).await {
            shared.problem(format!("failed to update lease {LEASE_NAMESPACE}/{name}: {error}"));
        }
        tokio::time::sleep(interval).await;
    }
}

async fn renew(
    leases: &Api<Lease>,
    name: &str,
    owner: &OwnerReference,
    duration_seconds: i32,
) -> Result<(), kube::Error> {
    let spec = LeaseSpec {
        holder_identity: Some(name.to_owned()),
        lease_duration_seconds: Some(duration_seconds),
        renew_time: Some(MicroTime(jiff::Timestamp::now())),
        ..LeaseSpec::default()
    };
    match leases.get_opt(name).await? {
        Some(mut existing) => {
            existing.spec = Some(spec);
            existing.metadata.owner_references = Some(vec![owner.clone()]);
            leases.replace(name, &PostParams::default(), &existing).await?;
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
            leases.create(&PostParams::default(), &lease).await?;
        }
    }
    Ok(())
}

/// After the first status patch: requests a serving certificate for the observed addresses until one is issued,
/// and again whenever the addresses change.
async fn serving_certificate(
    client: kube::Client,
    prepared: Prepared,
    node_name: String,
    mut addresses: watch::Receiver<Option<SubjectAltNames>>,
    shared: Arc<Shared>,
) {
    loop {
        let Ok(observed) = addresses.wait_for(Option::is_some).await.map(|names| names.clone()) else { return };
        let Some(names) = observed else { return };
        addresses.mark_unchanged();
        if names.ips.is_empty() {
            shared.problem(format!("no serving certificate requested for {node_name}: the Node has no IP address"));
        } else {
            request_serving(&client, &prepared, &node_name, &names, &shared).await;
        }
        if addresses.changed().await.is_err() {
            return;
        }
    }
}

async fn request_serving(
    client: &kube::Client,
    prepared: &Prepared,
    node_name: &str,
    names: &SubjectAltNames,
    shared: &Shared,
) {
    let mut backoff = Backoff::new(CERTIFICATE_RETRY_INITIAL, CERTIFICATE_RETRY_MAX);
    loop {
        let attempt = async {
            let generated = certs::new_request(node_name, names)?;
            let (name, certificate) = csr::request_certificate(
                client,
                SERVING_SIGNER,
                &SERVING_USAGES,
                &generated.request_pem,
                CERTIFICATE_WAIT,
                |name| shared.info(format!("created serving certificate signing request {name}")),
            )
            .await
            .map_err(|problem| problem.to_string())?;
            certs::store(&prepared.cert_dir_on_disk, "kubelet-server", &certificate, &generated.key_pem)
                .map_err(|error| format!("store the serving certificate in {}: {error}", prepared.cert_dir))?;
            shared.info(format!("serving certificate issued for CSR {name}, stored in {}", prepared.cert_dir));
            Ok::<(), String>(())
        };
        match attempt.await {
            Ok(()) => {
                shared.status.send_modify(|status| status.serving_certificate = true);
                return;
            }
            Err(problem) => shared.problem(problem),
        }
        backoff.pause().await;
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
