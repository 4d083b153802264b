//! What the CSR controller reads without an API call: the kubelet CSRs and the `WindowsInstance` records as their
//! watches last delivered them ([`CsrCache`]; [`WatchedCache`] over kube-runtime stores), and the summaries of those
//! CSRs, each parsed once per resourceVersion ([`CsrSummaries`]).
//!
//! Ignores are decided from these alone. Approvals and denials are confirmed on fresh reads first (see
//! [`reconcile_csr`](super::reconcile_csr)): a watch may lag.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;
use futures::{Stream, StreamExt as _};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use tokio::sync::watch;
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

/// A reflector's store and the flag its reflector sets once the store holds its first complete list
/// ([`signal_ready`]).
///
/// The flag, not the store's own `wait_until_ready`, says when to read: kube-runtime 5 keeps one waker for that
/// future, so of several tasks waiting on one store (the controllers' runners and concurrent reconciles) only the
/// last to poll is woken, and the others wait for good.
pub struct ReadyStore<K: kube::Resource + 'static>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    store: Store<K>,
    ready: watch::Receiver<bool>,
}

impl<K: kube::Resource + Clone + 'static> ReadyStore<K>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    /// `store`, read once `ready` holds `true`.
    pub fn new(store: Store<K>, ready: watch::Receiver<bool>) -> Self {
        ReadyStore { store, ready }
    }

    /// The store's objects once its first list is complete; none if its reflector ended before that.
    async fn state_when_ready(&self) -> Vec<Arc<K>> {
        let mut ready = self.ready.clone();
        match ready.wait_for(|ready| *ready).await {
            Ok(_) => self.store.state(),
            Err(_) => Vec::new(),
        }
    }
}

/// Passes a reflector's `events` on, setting `ready` at each end of a complete list (`InitDone`).
pub fn signal_ready<K, S>(events: S, ready: watch::Sender<bool>) -> impl Stream<Item = S::Item>
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
{
    events.inspect(move |event| {
        if matches!(event, Ok(watcher::Event::InitDone)) {
            ready.send_replace(true);
        }
    })
}

/// [`CsrCache`] over the stores of the CSR controller's reflectors (one per kubelet signer, each with a
/// `spec.signerName` field selector) and of a `WindowsInstance` reflector; [`controller`](super::controller)
/// attaches them before the first reconcile. Reads wait until every store holds its first complete list.
#[derive(Default)]
pub struct WatchedCache {
    csrs: OnceLock<Vec<ReadyStore<CertificateSigningRequest>>>,
    records: OnceLock<ReadyStore<WindowsInstance>>,
}

impl WatchedCache {
    /// Reads the kubelet CSRs from `stores` from now on (the first call wins).
    pub fn attach_csrs(&self, stores: Vec<ReadyStore<CertificateSigningRequest>>) {
        if self.csrs.set(stores).is_err() {
            tracing::warn!("the CSR stores were attached twice; keeping the first");
        }
    }

    /// Reads the records from `store` from now on (the first call wins).
    pub fn attach_records(&self, store: ReadyStore<WindowsInstance>) {
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
            csrs.extend(store.state_when_ready().await);
        }
        csrs
    }

    async fn records(&self) -> Vec<Arc<WindowsInstance>> {
        let Some(store) = self.records.get() else {
            tracing::error!("no WindowsInstance store is attached; every CSR is out of scope");
            return Vec::new();
        };
        store.state_when_ready().await
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
    use kube::runtime::{WatchStreamExt as _, reflector};
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

    /// Reconciles that read the cache before its first list are all woken once the list is complete (kube-runtime's
    /// own `wait_until_ready` woke only the last of them: a CSR pending when the operator took over stayed pending).
    #[tokio::test]
    async fn every_reader_waiting_for_the_first_list_is_woken() {
        let (store, writer) = reflector::store::<WindowsInstance>();
        let (ready_sender, ready) = watch::channel(false);
        let cache = Arc::new(WatchedCache::default());
        cache.attach_records(ReadyStore::new(store, ready));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let cache = Arc::clone(&cache);
                tokio::spawn(async move { cache.records().await.len() })
            })
            .collect();
        tokio::task::yield_now().await;

        let events = [
            watcher::Event::Init,
            watcher::Event::InitApply(objects::record("win-1").build()),
            watcher::Event::InitDone,
        ];
        let reflected = futures::stream::iter(events.into_iter().map(Ok)).reflect(writer);
        let relayed: Vec<_> = signal_ready(reflected, ready_sender).collect().await;
        assert_eq!(relayed.len(), 3);
        let read = tokio::time::timeout(std::time::Duration::from_secs(5), futures::future::join_all(readers))
            .await
            .expect("every reader is woken");
        assert_eq!(read.into_iter().map(Result::unwrap).collect::<Vec<_>>(), [1, 1, 1]);
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
