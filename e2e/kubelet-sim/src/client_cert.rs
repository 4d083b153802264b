//! The kubelet's client certificate (kubelet-bootstrap.md §1.2, §3.1): the connection of a still-valid
//! `--kubeconfig`, or the TLS bootstrap (kubeconfig written first when rotation is on, then a stored pair or a
//! bootstrap CSR made with the bootstrap credentials), and, with `rotateCertificates`, renewal at 70–90 % of the
//! certificate's lifetime with a new key and a `csr-*` request made as the node, after which every task switches
//! to the new certificate.

use std::sync::Arc;

use tokio::sync::watch;

use crate::certs::{self, SubjectAltNames};
use crate::csr::{self, CLIENT_SIGNER, CLIENT_USAGES};
use crate::kubeconfig::{self, Connection, Credential};
use crate::launch::{Credentials, Prepared};
use crate::rotation;
use crate::state::{Backoff, CERTIFICATE_RETRY_INITIAL, CERTIFICATE_RETRY_MAX, CERTIFICATE_WAIT, Shared};

/// The connection of the kubelet's own kubeconfig: as found, or after the bootstrap.
pub(crate) async fn obtain(prepared: &Prepared, shared: &Shared) -> Connection {
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
        credential: Credential::Certificate { certificate: contents.clone(), key: contents },
        ..bootstrap.clone()
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

/// One bootstrap attempt with the bootstrap credentials: with rotation on, a new key and a `csr-*` request; with
/// rotation off, the persistent key and its deterministic `node-csr-*` request. The issued pair is stored.
async fn bootstrap_certificate(prepared: &Prepared, bootstrap: &Connection, shared: &Shared) -> Result<(), String> {
    let client = bootstrap.client().await?;
    let name = if prepared.config.rotate_certificates {
        request_and_store(prepared, &client, shared).await?
    } else {
        request_with_persistent_key(prepared, &client, shared).await?
    };
    shared.info(format!("client certificate issued for CSR {name}, stored in {}", prepared.cert_dir));
    Ok(())
}

/// How long a rotation-off bootstrap waits for its certificate before the attempt fails (and is retried with the
/// same key and name, as a restarted kubelet does).
const PERSISTENT_KEY_WAIT: std::time::Duration = std::time::Duration::from_secs(3600);

/// The rotation-off bootstrap (kubelet-bootstrap.md §1.3): the key of the current pair if it parses, else
/// `kubelet-client.key.tmp` (generated and written when missing or invalid); a `node-csr-<digest>` request
/// (an existing compatible one is reused); on issuance the pair is stored and the `.tmp` key removed.
async fn request_with_persistent_key(
    prepared: &Prepared,
    client: &kube::Client,
    shared: &Shared,
) -> Result<String, String> {
    let key = persistent_key(prepared)?;
    let generated = certs::request_with_key(&key, &prepared.node_name, &SubjectAltNames::default())?;
    let name = certs::digested_name(&key, &prepared.node_name, &CLIENT_USAGES);
    let (name, certificate) = csr::request_certificate(
        client,
        CLIENT_SIGNER,
        &CLIENT_USAGES,
        &generated.request_pem,
        Some(&name),
        PERSISTENT_KEY_WAIT,
        |name| shared.info(format!("waiting for client certificate signing request {name}")),
    )
    .await
    .map_err(|problem| problem.to_string())?;
    certs::store(&prepared.cert_dir_on_disk, "kubelet-client", &certificate, &generated.key_pem)
        .map_err(|error| format!("store the client certificate in {}: {error}", prepared.cert_dir))?;
    let temporary_key = prepared.cert_dir_on_disk.join(TEMPORARY_KEY);
    if let Err(error) = std::fs::remove_file(&temporary_key) {
        shared.problem(format!("remove {}: {error}", prepared.cert_file(TEMPORARY_KEY)));
    }
    Ok(name)
}

/// The rotation-off bootstrap key file in the cert dir.
const TEMPORARY_KEY: &str = "kubelet-client.key.tmp";

fn persistent_key(prepared: &Prepared) -> Result<rcgen::KeyPair, String> {
    let current = prepared.cert_dir_on_disk.join("kubelet-client-current.pem");
    if let Some(key) = std::fs::read(&current).ok().and_then(|pem| certs::key_from_sec1_pem(&pem)) {
        return Ok(key);
    }
    let temporary = prepared.cert_dir_on_disk.join(TEMPORARY_KEY);
    if let Some(key) = std::fs::read(&temporary).ok().and_then(|pem| certs::key_from_sec1_pem(&pem)) {
        return Ok(key);
    }
    let key = certs::generate_key()?;
    let pem = certs::sec1_pem(&key)?;
    crate::disk::write_private(&temporary, pem.as_bytes())
        .map_err(|error| format!("write {}: {error}", prepared.cert_file(TEMPORARY_KEY)))?;
    Ok(key)
}

/// A new key and client CSR sent with `client`; the issued pair stored in the cert dir. Returns the CSR's name.
async fn request_and_store(prepared: &Prepared, client: &kube::Client, shared: &Shared) -> Result<String, String> {
    let generated = certs::new_request(&prepared.node_name, &SubjectAltNames::default())?;
    let (name, certificate) = csr::request_certificate(
        client,
        CLIENT_SIGNER,
        &CLIENT_USAGES,
        &generated.request_pem,
        None,
        CERTIFICATE_WAIT,
        |name| shared.info(format!("created client certificate signing request {name}")),
    )
    .await
    .map_err(|problem| problem.to_string())?;
    certs::store(&prepared.cert_dir_on_disk, "kubelet-client", &certificate, &generated.key_pem)
        .map_err(|error| format!("store the client certificate in {}: {error}", prepared.cert_dir))?;
    Ok(name)
}

/// A client for `connection`, retried until it can be built.
pub(crate) async fn connect(connection: &Connection, shared: &Shared) -> kube::Client {
    let mut backoff = Backoff::new(CERTIFICATE_RETRY_INITIAL, CERTIFICATE_RETRY_MAX);
    loop {
        match connection.client().await {
            Ok(client) => return client,
            Err(problem) => shared.problem(problem),
        }
        backoff.pause().await;
    }
}

/// Renews the client certificate at 70–90 % of its lifetime, forever; publishes each new client on `clients`.
/// Returns at once for a token credential (nothing to rotate).
pub(crate) async fn rotate(
    prepared: Prepared,
    mut connection: Connection,
    clients: watch::Sender<kube::Client>,
    shared: Arc<Shared>,
) {
    loop {
        let Credential::Certificate { certificate, .. } = &connection.credential else { return };
        let Some(deadline) = rotation::deadline(certificate, rotation::jittered_fraction()) else {
            shared.problem("the client certificate has no usable validity period; it will not be rotated".to_owned());
            return;
        };
        rotation::sleep_until(deadline).await;
        let mut backoff = Backoff::new(CERTIFICATE_RETRY_INITIAL, CERTIFICATE_RETRY_MAX);
        loop {
            match renew(&prepared, &connection, &clients, &shared).await {
                Ok(renewed) => {
                    connection = renewed;
                    break;
                }
                Err(problem) => shared.problem(problem),
            }
            backoff.pause().await;
        }
    }
}

/// One renewal: a CSR made as the node, the new pair stored, a client with it published.
async fn renew(
    prepared: &Prepared,
    connection: &Connection,
    clients: &watch::Sender<kube::Client>,
    shared: &Shared,
) -> Result<Connection, String> {
    let current_client = clients.borrow().clone();
    let name = request_and_store(prepared, &current_client, shared).await?;
    let current_pem = prepared.cert_dir_on_disk.join("kubelet-client-current.pem");
    let contents = std::fs::read(&current_pem).map_err(|error| format!("read {}: {error}", current_pem.display()))?;
    let renewed = Connection {
        credential: Credential::Certificate { certificate: contents.clone(), key: contents },
        ..connection.clone()
    };
    let client = renewed.client().await?;
    shared.set_node_client(client.clone());
    clients.send_replace(client);
    shared.info(format!("client certificate rotated with CSR {name}"));
    Ok(renewed)
}
