//! Leader election on a Lease, the way client-go's `tools/leaderelection` does it, with the fence the operator needs:
//! a leader that could not renew for [`ElectionTimings::renew_deadline`] stops leading, and another replica takes
//! the Lease only after it saw no change to it for [`ElectionTimings::lease_duration`].
//!
//! Every decision is made on this process's own monotonic clock, never on the timestamps in the Lease (they come
//! from another node's clock): a follower counts the lease duration from the moment it *observed* the Lease change,
//! and the leader counts its renew deadline from the moment it *sent* its last successful renewal, which is before
//! any other replica can observe that renewal. With `renew_deadline < lease_duration`, the leader gives up before any
//! follower may take over, whatever the latency of the API server; the margin between the two is the time the
//! leader has to stop its controllers. Every write carries the resourceVersion read (an update, not a patch), so two
//! candidates never both win one term.

use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use rand::RngExt as _;
use tokio::time::Instant;

use crate::process::config::CONTROLLER_NAME;

/// How long a Lease lasts and how its leader keeps it (client-go's `LeaseDuration`, `RenewDeadline`,
/// `RetryPeriod`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElectionTimings {
    /// How long a follower waits without seeing the Lease change before it takes it over.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading; shorter than the lease duration.
    pub renew_deadline: Duration,
    /// The pause between two renewals (leader) or two attempts to acquire (follower).
    pub retry_period: Duration,
}

impl Default for ElectionTimings {
    /// 30 s, 20 s, 4 s: the lease duration the operator always used, and client-go's ratios (15 s, 10 s, 2 s).
    fn default() -> Self {
        ElectionTimings {
            lease_duration: Duration::from_secs(30),
            renew_deadline: Duration::from_secs(20),
            retry_period: Duration::from_secs(4),
        }
    }
}

impl ElectionTimings {
    /// Whether the timings fence a partitioned leader: `lease_duration > renew_deadline > 1.2 × retry_period`
    /// (client-go's own check), and whole seconds of lease duration (the Lease holds seconds).
    pub fn is_valid(&self) -> bool {
        self.lease_duration > self.renew_deadline
            && self.renew_deadline > self.retry_period.mul_f64(1.2)
            && self.lease_duration.as_secs() > 0
            && self.lease_duration.subsec_nanos() == 0
    }
}

/// Why a Lease read or write failed.
#[derive(Debug, thiserror::Error)]
pub enum LeaseStoreError {
    /// The Lease changed since it was read (or was created by another replica meanwhile).
    #[error("the Lease changed since it was read")]
    Conflict,
    /// The API server could not be reached or refused the request.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// The one Lease the replicas elect their leader with.
#[async_trait]
pub(crate) trait LeaseStore: Send + Sync {
    /// The Lease, or `None` when it does not exist.
    async fn get(&self) -> Result<Option<Lease>, LeaseStoreError>;
    /// Creates the Lease ([`LeaseStoreError::Conflict`] when it exists).
    async fn create(&self, lease: &Lease) -> Result<Lease, LeaseStoreError>;
    /// Replaces the Lease, on condition that it is still at `lease.metadata.resourceVersion`
    /// ([`LeaseStoreError::Conflict`] otherwise).
    async fn replace(&self, lease: &Lease) -> Result<Lease, LeaseStoreError>;
}

/// [`LeaseStore`] over the API server: Lease `name` in one namespace.
pub(crate) struct KubeLeaseStore {
    api: Api<Lease>,
    name: String,
}

impl KubeLeaseStore {
    pub(crate) fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        KubeLeaseStore { api: Api::namespaced(client, namespace), name: name.to_owned() }
    }
}

fn store_error(error: kube::Error) -> LeaseStoreError {
    match &error {
        kube::Error::Api(status) if status.code == 409 => LeaseStoreError::Conflict,
        _ => LeaseStoreError::Api(error),
    }
}

#[async_trait]
impl LeaseStore for KubeLeaseStore {
    async fn get(&self) -> Result<Option<Lease>, LeaseStoreError> {
        self.api.get_opt(&self.name).await.map_err(store_error)
    }

    async fn create(&self, lease: &Lease) -> Result<Lease, LeaseStoreError> {
        let lease =
            Lease { metadata: ObjectMeta { name: Some(self.name.clone()), ..lease.metadata.clone() }, ..lease.clone() };
        self.api.create(&post_params(), &lease).await.map_err(store_error)
    }

    async fn replace(&self, lease: &Lease) -> Result<Lease, LeaseStoreError> {
        self.api.replace(&self.name, &post_params(), lease).await.map_err(store_error)
    }
}

fn post_params() -> PostParams {
    PostParams { field_manager: Some(CONTROLLER_NAME.to_owned()), ..PostParams::default() }
}

/// How a leadership term ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TermEnd {
    /// No renewal succeeded for the renew deadline (the API server is unreachable or refuses the renewals): another
    /// replica may take the Lease once its lease duration passed.
    RenewDeadlinePassed,
    /// The Lease is held by another replica.
    TakenOver {
        /// The new holder.
        holder: String,
    },
}

/// One candidate's view of the Lease: what it last observed, when (on its own clock), and when it last renewed.
pub(crate) struct Elector<S> {
    store: S,
    identity: String,
    timings: ElectionTimings,
    /// The newest Lease read or written.
    observed: Option<Lease>,
    /// When `observed` was seen to change.
    observed_at: Instant,
    /// When the last successful renewal (or acquisition) was sent.
    renewed_at: Option<Instant>,
}

impl<S: LeaseStore> Elector<S> {
    pub(crate) fn new(store: S, identity: &str, timings: ElectionTimings) -> Self {
        Elector {
            store,
            identity: identity.to_owned(),
            timings,
            observed: None,
            observed_at: Instant::now(),
            renewed_at: None,
        }
    }

    /// Tries to acquire the Lease every retry period (with up to 20 % jitter, as client-go) until it holds it.
    pub(crate) async fn acquire(&mut self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => return,
                Ok(false) => {}
                Err(error) => tracing::warn!(error = %error, "could not read or take the Lease"),
            }
            tokio::time::sleep(jittered(self.timings.retry_period)).await;
        }
    }

    /// Renews the Lease every retry period while it is held; returns when a renewal finds another holder, or when
    /// no renewal succeeded for the renew deadline (a renewal still in flight then is abandoned).
    pub(crate) async fn keep_renewing(&mut self) -> TermEnd {
        loop {
            tokio::time::sleep(self.timings.retry_period).await;
            let deadline = self.renewed_at.unwrap_or_else(Instant::now) + self.timings.renew_deadline;
            match tokio::time::timeout_at(deadline, self.renew_before_deadline()).await {
                Ok(Some(end)) => return end,
                Ok(None) => {}
                Err(_) => return TermEnd::RenewDeadlinePassed,
            }
        }
    }

    /// One renewal, retried every retry period while it fails: `None` once renewed, or how the term ended.
    async fn renew_before_deadline(&mut self) -> Option<TermEnd> {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => return None,
                Ok(false) => return Some(TermEnd::TakenOver { holder: self.holder().unwrap_or_default() }),
                Err(error) => tracing::warn!(error = %error, "could not renew the Lease"),
            }
            tokio::time::sleep(self.timings.retry_period).await;
        }
    }

    /// Gives the Lease up if this process still holds it, so the next leader need not wait for it to expire: a
    /// conditional write over the version last observed, or, when that changed (a renewal cancelled in flight may
    /// have been written), over the newest version if it is still held by this process. A Lease another replica
    /// holds is left alone (`Ok(false)`).
    pub(crate) async fn release(&mut self) -> Result<bool, LeaseStoreError> {
        let Some(observed) = self.observed.clone().filter(|_| self.holder().as_deref() == Some(&self.identity)) else {
            return Ok(false);
        };
        let written = match self.store.replace(&released(&observed)).await {
            Err(LeaseStoreError::Conflict) => {
                let Some(current) = self.store.get().await? else { return Ok(false) };
                if holder_of(&current).as_deref() != Some(&self.identity) {
                    self.observe(current);
                    return Ok(false);
                }
                self.store.replace(&released(&current)).await?
            }
            other => other?,
        };
        self.observed = Some(written);
        Ok(true)
    }

    /// The holder of the Lease as last observed (`None` when free).
    pub(crate) fn holder(&self) -> Option<String> {
        holder_of(self.observed.as_ref()?)
    }

    /// client-go's `tryAcquireOrRenew`: `Ok(true)` when this process holds the Lease after the call, `Ok(false)`
    /// when another holder's Lease has not expired on this process's clock.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, LeaseStoreError> {
        let sent = Instant::now();
        if let Some(observed) = self.observed.clone().filter(|_| self.holder().as_deref() == Some(&self.identity)) {
            // Fast path: the leader writes over the version it wrote last.
            match self.store.replace(&self.next_lease(&observed, true)).await {
                Ok(written) => return Ok(self.written(written, sent)),
                Err(error) => tracing::debug!(error = %error, "renewal over the last written Lease failed: reading it"),
            }
        }
        let Some(current) = self.store.get().await? else {
            let created = self.store.create(&self.next_lease(&Lease::default(), false)).await?;
            return Ok(self.written(created, sent));
        };
        self.observe(current.clone());
        let holder = holder_of(&current);
        let held_by_us = holder.as_deref() == Some(&self.identity);
        if holder.is_some() && !held_by_us && !self.observed_lease_expired(&current) {
            return Ok(false);
        }
        let written = self.store.replace(&self.next_lease(&current, held_by_us)).await?;
        Ok(self.written(written, sent))
    }

    /// Records a Lease read: when its resourceVersion differs from the last one observed, it changed now.
    fn observe(&mut self, lease: Lease) {
        let version = |lease: &Lease| lease.metadata.resource_version.clone();
        if self.observed.as_ref().map(version) != Some(version(&lease)) {
            self.observed_at = Instant::now();
        }
        self.observed = Some(lease);
    }

    /// Records this process's successful write, sent at `sent`.
    fn written(&mut self, lease: Lease, sent: Instant) -> bool {
        self.observed = Some(lease);
        self.observed_at = sent;
        self.renewed_at = Some(sent);
        true
    }

    /// Whether the lease duration the holder wrote has passed since the Lease was last seen to change.
    fn observed_lease_expired(&self, lease: &Lease) -> bool {
        let seconds = lease.spec.as_ref().and_then(|spec| spec.lease_duration_seconds);
        let duration = seconds
            .and_then(|seconds| u64::try_from(seconds).ok())
            .map_or(self.timings.lease_duration, Duration::from_secs);
        self.observed_at + duration <= Instant::now()
    }

    /// The Lease this process writes over `previous`: held by it, renewed now; the acquire time and transition
    /// count kept on a renewal, new on a takeover.
    fn next_lease(&self, previous: &Lease, renewal: bool) -> Lease {
        let now = MicroTime(jiff::Timestamp::now());
        let before = previous.spec.clone().unwrap_or_default();
        let transitions = before.lease_transitions.unwrap_or(0);
        let spec = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(i32::try_from(self.timings.lease_duration.as_secs()).unwrap_or(i32::MAX)),
            acquire_time: if renewal { before.acquire_time.clone() } else { Some(now.clone()) },
            renew_time: Some(now),
            lease_transitions: Some(if renewal || previous.spec.is_none() { transitions } else { transitions + 1 }),
            ..before
        };
        Lease { metadata: previous.metadata.clone(), spec: Some(spec) }
    }
}

/// `lease` released: no holder, a lease duration of one second (client-go's release), the transitions kept.
fn released(lease: &Lease) -> Lease {
    let spec = LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: None,
        renew_time: Some(MicroTime(jiff::Timestamp::now())),
        ..lease.spec.clone().unwrap_or_default()
    };
    Lease { spec: Some(spec), ..lease.clone() }
}

/// The holder named in `lease`; an empty name is no holder (a released Lease).
fn holder_of(lease: &Lease) -> Option<String> {
    lease.spec.as_ref()?.holder_identity.clone().filter(|holder| !holder.is_empty())
}

/// `period` plus up to 20 % (client-go's `JitterFactor` over its `wait.JitterUntil`), so candidates that started
/// together do not keep colliding.
fn jittered(period: Duration) -> Duration {
    period + period.mul_f64(rand::rng().random_range(0.0..0.2))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use super::*;

    const TIMINGS: ElectionTimings = ElectionTimings {
        lease_duration: Duration::from_secs(30),
        renew_deadline: Duration::from_secs(20),
        retry_period: Duration::from_secs(4),
    };

    /// The API server's copy of the Lease: every write gets a new resourceVersion; a replace over another version
    /// conflicts.
    #[derive(Clone, Default)]
    struct ApiServer {
        lease: Arc<Mutex<Option<Lease>>>,
        versions: Arc<AtomicUsize>,
    }

    impl ApiServer {
        fn store(&self, mut lease: Lease) -> Lease {
            let version = self.versions.fetch_add(1, Ordering::SeqCst) + 1;
            lease.metadata.resource_version = Some(version.to_string());
            *self.lease.lock().unwrap() = Some(lease.clone());
            lease
        }

        fn holder(&self) -> Option<String> {
            holder_of(self.lease.lock().unwrap().as_ref()?)
        }

        fn transitions(&self) -> Option<i32> {
            self.lease.lock().unwrap().as_ref()?.spec.as_ref()?.lease_transitions
        }
    }

    /// How a cut-off candidate's requests fail.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Cut {
        /// Every request fails at once (connection refused).
        Refused,
        /// Every request waits forever (packets dropped).
        Hangs,
    }

    /// One candidate's path to the [`ApiServer`], which the test can cut.
    #[derive(Clone)]
    struct Link {
        server: ApiServer,
        cut: Arc<Mutex<Option<Cut>>>,
        writes: Arc<AtomicUsize>,
    }

    impl Link {
        fn to(server: &ApiServer) -> Self {
            Link { server: server.clone(), cut: Arc::default(), writes: Arc::default() }
        }

        fn set_cut(&self, cut: Option<Cut>) {
            *self.cut.lock().unwrap() = cut;
        }

        async fn pass(&self) -> Result<(), LeaseStoreError> {
            let cut = *self.cut.lock().unwrap();
            match cut {
                None => Ok(()),
                Some(Cut::Refused) => Err(LeaseStoreError::Api(kube::Error::Api(
                    kube::core::Status::failure("connection refused", "ServiceUnavailable").with_code(503).boxed(),
                ))),
                Some(Cut::Hangs) => std::future::pending().await,
            }
        }
    }

    #[async_trait]
    impl LeaseStore for Link {
        async fn get(&self) -> Result<Option<Lease>, LeaseStoreError> {
            self.pass().await?;
            Ok(self.server.lease.lock().unwrap().clone())
        }

        async fn create(&self, lease: &Lease) -> Result<Lease, LeaseStoreError> {
            self.pass().await?;
            if self.server.lease.lock().unwrap().is_some() {
                return Err(LeaseStoreError::Conflict);
            }
            self.writes.fetch_add(1, Ordering::SeqCst);
            Ok(self.server.store(lease.clone()))
        }

        async fn replace(&self, lease: &Lease) -> Result<Lease, LeaseStoreError> {
            self.pass().await?;
            let current =
                self.server.lease.lock().unwrap().as_ref().map(|lease| lease.metadata.resource_version.clone());
            if current != Some(lease.metadata.resource_version.clone()) {
                return Err(LeaseStoreError::Conflict);
            }
            self.writes.fetch_add(1, Ordering::SeqCst);
            Ok(self.server.store(lease.clone()))
        }
    }

    fn candidate(server: &ApiServer, identity: &str) -> (Elector<Link>, Link) {
        let link = Link::to(server);
        (Elector::new(link.clone(), identity, TIMINGS), link)
    }

    #[test]
    fn the_timings_fence_only_with_a_renew_deadline_between_the_retry_period_and_the_lease_duration() {
        assert!(ElectionTimings::default().is_valid());
        let deadline_too_long = ElectionTimings { renew_deadline: Duration::from_secs(30), ..TIMINGS };
        let retry_too_long = ElectionTimings { retry_period: Duration::from_secs(17), ..TIMINGS };
        let fractional_lease = ElectionTimings { lease_duration: Duration::from_millis(30_500), ..TIMINGS };
        assert!(!deadline_too_long.is_valid());
        assert!(!retry_too_long.is_valid());
        assert!(!fractional_lease.is_valid());
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_whose_renewals_are_refused_stops_at_the_renew_deadline_before_the_lease_expires() {
        let server = ApiServer::default();
        let (mut leader, link) = candidate(&server, "wmco-a");
        leader.acquire().await;
        let acquired = Instant::now();
        link.set_cut(Some(Cut::Refused));
        assert_eq!(leader.keep_renewing().await, TermEnd::RenewDeadlinePassed);
        assert_eq!(acquired.elapsed(), TIMINGS.renew_deadline);
        assert_eq!(link.writes.load(Ordering::SeqCst), 1, "only the acquisition was written");
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_whose_renewals_hang_stops_at_the_renew_deadline_too() {
        let server = ApiServer::default();
        let (mut leader, link) = candidate(&server, "wmco-a");
        leader.acquire().await;
        leader.keep_renewing_for(Duration::from_secs(9)).await;
        let last_renewal_sent = Instant::now() - Duration::from_secs(1);
        link.set_cut(Some(Cut::Hangs));
        assert_eq!(leader.keep_renewing().await, TermEnd::RenewDeadlinePassed);
        assert_eq!(last_renewal_sent.elapsed(), TIMINGS.renew_deadline);
        assert_eq!(link.writes.load(Ordering::SeqCst), 3, "the acquisition and the renewals at 4 s and 8 s");
    }

    #[tokio::test(start_paused = true)]
    async fn an_outage_shorter_than_the_renew_deadline_keeps_the_term() {
        let server = ApiServer::default();
        let (mut leader, link) = candidate(&server, "wmco-a");
        leader.acquire().await;
        link.set_cut(Some(Cut::Refused));
        let restore = {
            let link = link.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(15)).await;
                link.set_cut(None);
            })
        };
        assert!(tokio::time::timeout(Duration::from_secs(120), leader.keep_renewing()).await.is_err(), "still leading");
        restore.await.unwrap();
        assert_eq!(server.holder().as_deref(), Some("wmco-a"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_follower_takes_over_a_cut_off_leader_only_after_the_leader_stopped() {
        let server = ApiServer::default();
        let (mut leader, leader_link) = candidate(&server, "wmco-a");
        let (mut follower, follower_link) = candidate(&server, "wmco-b");
        leader.acquire().await;
        let following = tokio::spawn(async move {
            follower.acquire().await;
            Instant::now()
        });
        let cut_at = Instant::now() + Duration::from_secs(10);
        let cutting = tokio::spawn(async move {
            tokio::time::sleep_until(cut_at).await;
            leader_link.set_cut(Some(Cut::Refused));
        });
        assert_eq!(leader.keep_renewing().await, TermEnd::RenewDeadlinePassed);
        let leader_stopped = Instant::now();
        let follower_acquired = following.await.unwrap();
        cutting.await.unwrap();
        assert!(leader_stopped < follower_acquired, "the leader stops before the follower takes over");
        let last_renewal_sent = cut_at - Duration::from_secs(2);
        assert_eq!(leader_stopped - last_renewal_sent, TIMINGS.renew_deadline);
        assert!(follower_acquired - last_renewal_sent >= TIMINGS.lease_duration);
        assert_eq!((server.holder().as_deref(), server.transitions()), (Some("wmco-b"), Some(1)));
        assert_eq!(follower_link.writes.load(Ordering::SeqCst), 1, "one takeover, never a write over a held Lease");
    }

    #[tokio::test(start_paused = true)]
    async fn a_renewal_that_finds_another_holder_ends_the_term_at_once() {
        let server = ApiServer::default();
        let (mut leader, _link) = candidate(&server, "wmco-a");
        leader.acquire().await;
        let mut taken = server.lease.lock().unwrap().clone().unwrap();
        taken.spec.as_mut().unwrap().holder_identity = Some("wmco-b".into());
        server.store(taken);
        let started = Instant::now();
        assert_eq!(leader.keep_renewing().await, TermEnd::TakenOver { holder: "wmco-b".into() });
        assert_eq!(started.elapsed(), TIMINGS.retry_period);
        assert_eq!(server.holder().as_deref(), Some("wmco-b"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_released_lease_is_taken_at_once_and_a_lost_one_is_never_released() {
        let server = ApiServer::default();
        let (mut first, _) = candidate(&server, "wmco-a");
        let (mut second, _) = candidate(&server, "wmco-b");
        first.acquire().await;
        assert!(first.release().await.unwrap());
        assert_eq!(server.holder(), None);
        let started = Instant::now();
        second.acquire().await;
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert_eq!(server.transitions(), Some(1));

        let mut stale = first;
        stale.observed.as_mut().unwrap().spec.as_mut().unwrap().holder_identity = Some("wmco-a".into());
        assert!(!stale.release().await.unwrap());
        assert_eq!(server.holder().as_deref(), Some("wmco-b"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_release_after_a_renewal_written_but_never_answered_releases_the_newest_version() {
        let server = ApiServer::default();
        let (mut leader, _) = candidate(&server, "wmco-a");
        leader.acquire().await;
        let mut renewed = server.lease.lock().unwrap().clone().unwrap();
        renewed.spec.as_mut().unwrap().renew_time = Some(MicroTime(jiff::Timestamp::now()));
        server.store(renewed);
        assert!(leader.release().await.unwrap());
        assert_eq!(server.holder(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_missing_lease_is_created_held_and_a_broken_link_only_delays_the_acquisition() {
        let server = ApiServer::default();
        let (mut candidate, link) = candidate(&server, "wmco-a");
        link.set_cut(Some(Cut::Refused));
        let acquiring = tokio::spawn(async move {
            candidate.acquire().await;
            candidate
        });
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(server.holder(), None);
        link.set_cut(None);
        let candidate = acquiring.await.unwrap();
        assert_eq!(candidate.holder().as_deref(), Some("wmco-a"));
        assert_eq!((server.holder().as_deref(), server.transitions()), (Some("wmco-a"), Some(0)));
    }

    impl<S: LeaseStore> Elector<S> {
        /// Renews for `period`, then stops without ending the term.
        async fn keep_renewing_for(&mut self, period: Duration) {
            assert!(tokio::time::timeout(period, self.keep_renewing()).await.is_err(), "the term ended early");
        }
    }
}
