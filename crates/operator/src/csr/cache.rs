//! What the CSR controller reads without an API call: the kubelet CSRs and the `WindowsInstance` records as their
//! watches last delivered them ([`CsrCache`]; [`WatchedCache`] over kube-runtime stores), and the summaries of those
//! CSRs, each parsed once per resourceVersion ([`CsrSummaries`]).
//!
//! Ignores are decided from these alone. Approvals and denials are confirmed on fresh reads first (see
//! [`reconcile_csr`](super::reconcile_csr)): a watch may lag.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use wmco_cluster_client::is_pending;
use wmco_cluster_client::types::WindowsInstance;
use wmco_csr_approver::CsrSummary;

use super::reconcile::facts_of;

/// The watch-fed state a reconcile reads.
#[async_trait]
pub trait CsrCache: Send + Sync {
    /// Every CSR of the two kubelet signers, in any state.
    async fn kubelet_csrs(&self) -> Vec<Arc<CertificateSigningRequest>>;

    /// Every `WindowsInstance` record of the operator namespace.
    async fn records(&self) -> Vec<Arc<WindowsInstance>>;
}

/// [`CsrCache`] over the stores of the CSR controller's watches (one per kubelet signer, each with a
/// `spec.signerName` field selector) and of a `WindowsInstance` watch; [`controller`](super::controller) attaches
/// them before the first reconcile. Reads wait until every store holds its first complete list.
#[derive(Default)]
pub struct WatchedCache {
    csrs: OnceLock<Vec<Store<CertificateSigningRequest>>>,
    records: OnceLock<Store<WindowsInstance>>,
}

impl WatchedCache {
    /// Reads the kubelet CSRs from `stores` from now on (the first call wins).
    pub fn attach_csrs(&self, stores: Vec<Store<CertificateSigningRequest>>) {
        if self.csrs.set(stores).is_err() {
            tracing::warn!("the CSR stores were attached twice; keeping the first");
        }
    }

    /// Reads the records from `store` from now on (the first call wins).
    pub fn attach_records(&self, store: Store<WindowsInstance>) {
        if self.records.set(store).is_err() {
            tracing::warn!("the WindowsInstance store was attached twice; keeping the first");
        }
    }
}

#[async_trait]
impl CsrCache for WatchedCache {
    async fn kubelet_csrs(&self) -> Vec<Arc<CertificateSigningRequest>> {
        let Some(stores) = self.csrs.get() else {
            tracing::error!("no CSR store is attached; deciding without other CSRs");
            return Vec::new();
        };
        let mut csrs = Vec::new();
        for store in stores {
            if store.wait_until_ready().await.is_ok() {
                csrs.extend(store.state());
            }
        }
        csrs
    }

    async fn records(&self) -> Vec<Arc<WindowsInstance>> {
        let Some(store) = self.records.get() else {
            tracing::error!("no WindowsInstance store is attached; every CSR is out of scope");
            return Vec::new();
        };
        match store.wait_until_ready().await {
            Ok(()) => store.state(),
            Err(_) => Vec::new(),
        }
    }
}

/// The summaries of kubelet CSRs by name, with the resourceVersion each was parsed at (`None` for a CSR that cannot
/// be read as one): a CSR is parsed again only once it changed.
#[derive(Default)]
pub struct CsrSummaries {
    by_name: Mutex<HashMap<String, ParsedAt>>,
}

/// A CSR's summary (`None`: unreadable) and the resourceVersion it was parsed at.
type ParsedAt = (Option<String>, Option<CsrSummary>);

impl CsrSummaries {
    /// The summaries of `csrs` (ones that cannot be read are left out), parsing only those not seen at their
    /// current resourceVersion.
    pub fn of<'a>(&self, csrs: impl IntoIterator<Item = &'a CertificateSigningRequest>) -> Vec<CsrSummary> {
        let mut by_name = self.by_name.lock().unwrap_or_else(PoisonError::into_inner);
        let mut summaries = Vec::new();
        for csr in csrs {
            let name = csr.name_any();
            let version = csr.metadata.resource_version.clone();
            let cached = by_name.get(&name).filter(|(seen_at, _)| *seen_at == version && version.is_some());
            let summary = match cached {
                Some((_, summary)) => summary.clone(),
                None => {
                    let summary = facts_of(csr, &name).ok().map(|facts| facts.summary());
                    by_name.insert(name, (version, summary.clone()));
                    summary
                }
            };
            summaries.extend(summary);
        }
        summaries
    }

    /// Forgets the CSRs that are not in `csrs` (deleted since), so the map never outgrows the store.
    pub fn retain(&self, csrs: &[Arc<CertificateSigningRequest>]) {
        let names: std::collections::HashSet<String> = csrs.iter().map(|csr| csr.name_any()).collect();
        self.by_name.lock().unwrap_or_else(PoisonError::into_inner).retain(|name, _| names.contains(name));
    }

    /// The pending CSRs of `csrs` whose summary names `node_name` (a record expecting that node changed: they may
    /// be decidable now).
    pub fn pending_naming(
        &self,
        csrs: &[Arc<CertificateSigningRequest>],
        node_name: &str,
    ) -> Vec<ObjectRef<CertificateSigningRequest>> {
        let pending: Vec<&CertificateSigningRequest> =
            csrs.iter().map(AsRef::as_ref).filter(|csr| is_pending(csr)).collect();
        let naming: std::collections::HashSet<String> = self
            .of(pending.iter().copied())
            .into_iter()
            .filter(|summary| summary.names_node(node_name))
            .map(|summary| summary.name)
            .collect();
        pending.into_iter().filter(|csr| naming.contains(&csr.name_any())).map(ObjectRef::from_obj).collect()
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
    use wmco_cluster_client::fake::objects;

    use super::*;

    fn csr(name: &str, node: &str, version: &str) -> Arc<CertificateSigningRequest> {
        let mut params = CertificateParams::default();
        let mut subject = DistinguishedName::new();
        subject.push(DnType::CommonName, format!("system:node:{node}"));
        params.distinguished_name = subject;
        let pem = params.serialize_request(&KeyPair::generate().unwrap()).unwrap().pem().unwrap();
        let created = "2026-11-22T12:00:00Z".parse().unwrap();
        let csr = objects::csr(name, "kubernetes.io/kubelet-serving", &pem)
            .resource_version(version)
            .created_at(created)
            .build();
        Arc::new(csr)
    }

    #[test]
    fn a_csr_is_parsed_again_only_once_it_changed_and_forgotten_once_gone() {
        let summaries = CsrSummaries::default();
        let linux = csr("csr-linux", "linux-1", "1");
        let windows = csr("csr-win", "win-1", "1");
        let all = [Arc::clone(&linux), Arc::clone(&windows)];
        assert_eq!(summaries.of(all.iter().map(AsRef::as_ref)).len(), 2);
        let seen = |name: &str| summaries.by_name.lock().unwrap().get(name).map(|(version, _)| version.clone());
        assert_eq!(seen("csr-win"), Some(Some("1".into())));

        let changed = csr("csr-win", "win-2", "2");
        let named = summaries.of([changed.as_ref()]);
        assert_eq!(named[0].node_names, ["win-2"]);
        assert_eq!(summaries.pending_naming(&[Arc::clone(&linux), Arc::clone(&changed)], "win-2").len(), 1);
        assert_eq!(summaries.pending_naming(&[linux.clone(), changed], "win-1"), vec![]);

        summaries.retain(&[linux]);
        assert_eq!(seen("csr-win"), None);
        assert_eq!(seen("csr-linux"), Some(Some("1".into())));
    }
}
