//! The serving certificate (`serverTLSBootstrap`, kubelet-bootstrap.md §2): after the first status patch, a CSR
//! on `kubernetes.io/kubelet-serving` for the addresses the API server returned, made as the node; requested again
//! when those addresses change (a pending wait for outdated addresses is abandoned) and at 70–90 % of the issued
//! certificate's lifetime.

use std::sync::Arc;

use tokio::sync::watch;

use crate::certs::{self, SubjectAltNames};
use crate::csr::{self, SERVING_SIGNER, SERVING_USAGES};
use crate::launch::Prepared;
use crate::rotation;
use crate::state::{Backoff, CERTIFICATE_RETRY_INITIAL, CERTIFICATE_RETRY_MAX, CERTIFICATE_WAIT, Shared};

/// Runs until aborted (or until the address publisher is gone).
pub(crate) async fn run(
    prepared: Prepared,
    clients: watch::Receiver<kube::Client>,
    mut addresses: watch::Receiver<Option<SubjectAltNames>>,
    shared: Arc<Shared>,
) {
    let node_name = prepared.node_name.clone();
    loop {
        let Ok(observed) = addresses.wait_for(Option::is_some).await.map(|names| names.clone()) else { return };
        let Some(names) = observed else { return };
        addresses.mark_unchanged();
        if names.ips.is_empty() {
            shared.problem(format!("no serving certificate requested for {node_name}: the Node has no IP address"));
            if addresses.changed().await.is_err() {
                return;
            }
            continue;
        }
        let issued = tokio::select! {
            certificate = request_until_issued(&prepared, &clients, &names, &shared) => certificate,
            changed = addresses.changed() => {
                if changed.is_err() {
                    return;
                }
                continue;
            }
        };
        let deadline = rotation::deadline(issued.as_bytes(), rotation::jittered_fraction());
        tokio::select! {
            changed = addresses.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = sleep_until(deadline) => {}
        }
    }
}

async fn sleep_until(deadline: Option<jiff::Timestamp>) {
    match deadline {
        Some(deadline) => rotation::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Requests a serving certificate for `names` until one is issued; returns it (PEM).
async fn request_until_issued(
    prepared: &Prepared,
    clients: &watch::Receiver<kube::Client>,
    names: &SubjectAltNames,
    shared: &Shared,
) -> String {
    let mut backoff = Backoff::new(CERTIFICATE_RETRY_INITIAL, CERTIFICATE_RETRY_MAX);
    loop {
        match request(prepared, clients, names, shared).await {
            Ok(certificate) => {
                shared.status.send_modify(|status| status.serving_certificate = true);
                return certificate;
            }
            Err(problem) => shared.problem(problem),
        }
        backoff.pause().await;
    }
}

async fn request(
    prepared: &Prepared,
    clients: &watch::Receiver<kube::Client>,
    names: &SubjectAltNames,
    shared: &Shared,
) -> Result<String, String> {
    let generated = certs::new_request(&prepared.node_name, names)?;
    let client = clients.borrow().clone();
    let (name, certificate) = csr::request_certificate(
        &client,
        SERVING_SIGNER,
        &SERVING_USAGES,
        &generated.request_pem,
        None,
        CERTIFICATE_WAIT,
        |name| shared.info(format!("created serving certificate signing request {name}")),
    )
    .await
    .map_err(|problem| problem.to_string())?;
    certs::store(&prepared.cert_dir_on_disk, "kubelet-server", &certificate, &generated.key_pem)
        .map_err(|error| format!("store the serving certificate in {}: {error}", prepared.cert_dir))?;
    shared.info(format!("serving certificate issued for CSR {name}, stored in {}", prepared.cert_dir));
    Ok(certificate)
}
