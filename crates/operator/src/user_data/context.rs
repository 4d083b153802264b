//! The user-data controller's shared state: the cluster seams, the operator namespace, the platform, the last
//! key problem and the last mirror problem published (so one problem gives one Event, not one per watch event), and
//! the retry pause.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use wmco_cluster_client::{EventPublisher, Namespaces, ResourceExt, Seams, Secrets};
use wmco_vocabulary::Platform;

use super::UserDataError;
use crate::metrics::Metrics;
use crate::runtime::{Controlled, RetryBackoff};

/// The wait before retrying a failed reconcile (one object: a fixed pause is enough).
const RETRY: Duration = Duration::from_secs(5);

/// Settings of the user-data controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserDataSettings {
    /// The operator namespace, where `cloud-private-key` lives.
    pub operator_namespace: String,
    /// The platform deciding the user data's wrapper.
    pub platform: Platform,
}

/// Everything one user-data reconcile needs (`Arc<UserDataContext>` is shared by all reconciles).
pub struct UserDataContext {
    /// Reads `windows-user-data` and applies it (and its mirror).
    pub secrets: Arc<dyn Secrets>,
    /// Whether the mirror's namespace exists.
    pub namespaces: Arc<dyn Namespaces>,
    /// Publishes the Warning Events about a refused key.
    pub events: Arc<dyn EventPublisher>,
    /// Namespace and platform.
    pub settings: UserDataSettings,
    /// Where errors are counted (a private registry unless [`UserDataContext::with_metrics`] is used).
    pub metrics: Arc<Metrics>,
    last_problem: Mutex<Option<String>>,
    last_mirror_problem: Mutex<Option<String>>,
    retries: RetryBackoff,
}

impl UserDataContext {
    /// A context over the given seams and settings.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use wmco_cluster_client::fake::FakeCluster;
    /// use wmco_operator::user_data::{UserDataContext, UserDataSettings};
    /// let settings = UserDataSettings {
    ///     operator_namespace: "openshift-windows-machine-config-operator".into(),
    ///     platform: wmco_user_data::Platform::Aws,
    /// };
    /// let context = UserDataContext::new(&FakeCluster::default().seams(), settings);
    /// assert_eq!(context.settings.platform, wmco_user_data::Platform::Aws);
    /// ```
    pub fn new(seams: &Seams, settings: UserDataSettings) -> Self {
        Self {
            secrets: Arc::clone(&seams.secrets),
            namespaces: Arc::clone(&seams.namespaces),
            events: Arc::clone(&seams.events),
            settings,
            metrics: Arc::new(Metrics::new()),
            last_problem: Mutex::default(),
            last_mirror_problem: Mutex::default(),
            retries: RetryBackoff::new(RETRY, RETRY),
        }
    }

    /// Records errors in `metrics` (the registry `/metrics` serves).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Remembers `problem` as the last key problem published; false when it was already the last one.
    pub(crate) fn note_problem(&self, problem: &str) -> bool {
        note(&self.last_problem, problem)
    }

    /// Forgets the last key problem once the key is usable again.
    pub(crate) fn clear_problem(&self) {
        *self.last_problem.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Remembers `problem` as the last mirror problem published; false when it was already the last one.
    pub(crate) fn note_mirror_problem(&self, problem: &str) -> bool {
        note(&self.last_mirror_problem, problem)
    }

    /// Forgets the last mirror problem once the mirror is written or not wanted.
    pub(crate) fn clear_mirror_problem(&self) {
        *self.last_mirror_problem.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Stores `problem` in `last`; false when it was already there.
fn note(last: &Mutex<Option<String>>, problem: &str) -> bool {
    let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
    if last.as_deref() == Some(problem) {
        return false;
    }
    *last = Some(problem.to_owned());
    true
}

impl Controlled<Secret> for UserDataContext {
    type Error = UserDataError;
    const NAME: &'static str = "user_data";

    fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn retries(&self) -> &RetryBackoff {
        &self.retries
    }

    fn key(key_secret: &Secret) -> String {
        key_secret.name_any()
    }
}
