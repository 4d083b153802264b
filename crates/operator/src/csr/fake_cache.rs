//! A [`CsrCache`] over the cluster-client fakes for the reconcile scenarios: what the fakes hold now, except the
//! CSRs a test marks as lagging (their watch events have not arrived yet).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use wmco_cluster_client::fake::{FakeCsrs, FakeInstanceRecords};
use wmco_cluster_client::types::WindowsInstance;
use wmco_cluster_client::{Csrs, InstanceRecords};

use super::{CsrCache, KUBELET_SIGNERS};

/// The watch cache over `csrs` and the records of `namespace` in `records`.
pub(super) struct FakeCache {
    pub(super) csrs: Arc<FakeCsrs>,
    pub(super) records: Arc<FakeInstanceRecords>,
    pub(super) namespace: String,
    /// Names of CSRs the cache does not show yet.
    pub(super) lagging: Mutex<Vec<String>>,
}

impl FakeCache {
    pub(super) fn new(csrs: Arc<FakeCsrs>, records: Arc<FakeInstanceRecords>, namespace: &str) -> Self {
        FakeCache { csrs, records, namespace: namespace.to_owned(), lagging: Mutex::default() }
    }
}

#[async_trait]
impl CsrCache for FakeCache {
    async fn kubelet_csrs(&self) -> Vec<Arc<CertificateSigningRequest>> {
        let lagging = self.lagging.lock().unwrap().clone();
        let csrs = self.csrs.list(&KUBELET_SIGNERS).await.unwrap();
        csrs.into_iter()
            .filter(|csr| !lagging.iter().any(|name| csr.metadata.name.as_ref() == Some(name)))
            .map(Arc::new)
            .collect()
    }

    async fn records(&self) -> Vec<Arc<WindowsInstance>> {
        self.records.list(&self.namespace).await.unwrap().into_iter().map(Arc::new).collect()
    }
}
