//! The operator's SSH key: Secret `cloud-private-key` (`private-key.pem`) in the operator namespace, turned into
//! the transport's [`PrivateKey`] and the `pub-key-hash` Node annotation value (hex SHA-256 of the
//! authorized-key line, as the Go operator computes it). [`KeyWatcher`] is the one reader of the Secret: it
//! publishes the key (or the problem with it, with one Warning Event on the Secret per distinct problem) to every
//! [`KeyReceiver`]; the host controllers wait on it for a first key and rebuild themselves when the admin replaced
//! it, and the key rotation is triggered by it. Key material never reaches logs, errors or `Debug`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use tokio::sync::watch;
use wmco_cluster_client::{EventPublisher, NewEvent, Secrets, Severity};
use wmco_ssh_transport::PrivateKey;
use wmco_user_data::PublicKey;

/// The Secret the admin creates with the operator's private key.
pub const PRIVATE_KEY_SECRET: &str = "cloud-private-key";
/// The data key of [`PRIVATE_KEY_SECRET`] holding the PEM private key.
pub const PRIVATE_KEY_DATA_KEY: &str = "private-key.pem";

/// The operator's private key and the hash of its public half.
#[derive(Clone)]
pub struct OperatorKey {
    /// The key the SSH transport logs in with.
    pub private_key: PrivateKey,
    /// Lower-case hex SHA-256 of the public key's authorized-key line (Node annotation `pub-key-hash`).
    pub pub_key_hash: String,
    /// The public key's authorized-key line (`<type> <base64>`), the line an admin adds to a host's
    /// `administrators_authorized_keys`; public, fine to show.
    pub authorized_key: String,
}

impl fmt::Debug for OperatorKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OperatorKey")
            .field("private_key", &self.private_key)
            .field("pub_key_hash", &self.pub_key_hash)
            .field("authorized_key", &self.authorized_key)
            .finish()
    }
}

/// Why the operator key cannot be used. The messages name the Secret and say what to do; none holds key material.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OperatorKeyError {
    /// The Secret could not be read.
    #[error("cannot read Secret {object}: {reason}")]
    Read {
        /// `namespace/name`.
        object: String,
        /// The API error.
        reason: String,
    },
    /// The Secret does not exist.
    #[error(
        "Secret {object} does not exist: create it with the operator's private key under data key {PRIVATE_KEY_DATA_KEY:?}"
    )]
    Missing {
        /// `namespace/name`.
        object: String,
    },
    /// The Secret lacks the key.
    #[error("Secret {object} has no data key {PRIVATE_KEY_DATA_KEY:?}")]
    MissingDataKey {
        /// `namespace/name`.
        object: String,
    },
    /// The key is not a usable private key.
    #[error("Secret {object}: {PRIVATE_KEY_DATA_KEY:?} is not a usable private key: {reason}")]
    Unusable {
        /// `namespace/name`.
        object: String,
        /// Why (no key material).
        reason: String,
    },
}

/// Reads and parses the operator key once.
///
/// # Errors
/// [`OperatorKeyError`] naming the Secret and the problem.
pub async fn load_operator_key(secrets: &dyn Secrets, namespace: &str) -> Result<OperatorKey, OperatorKeyError> {
    let object = format!("{namespace}/{PRIVATE_KEY_SECRET}");
    let secret = secrets
        .get(namespace, PRIVATE_KEY_SECRET)
        .await
        .map_err(|error| OperatorKeyError::Read { object: object.clone(), reason: error.to_string() })?
        .ok_or_else(|| OperatorKeyError::Missing { object: object.clone() })?;
    let bytes = secret
        .data
        .as_ref()
        .and_then(|data| data.get(PRIVATE_KEY_DATA_KEY))
        .ok_or_else(|| OperatorKeyError::MissingDataKey { object: object.clone() })?;
    let unusable = |reason: String| OperatorKeyError::Unusable { object: object.clone(), reason };
    let pem = std::str::from_utf8(&bytes.0).map_err(|_| unusable("the data is not UTF-8 PEM text".to_owned()))?;
    let public_key = PublicKey::from_private_key_pem(pem).map_err(|error| unusable(error.to_string()))?;
    let private_key = PrivateKey::from_pem(pem).map_err(|error| unusable(error.to_string()))?;
    Ok(OperatorKey {
        private_key,
        pub_key_hash: public_key.pub_key_hash(),
        authorized_key: public_key.authorized_key_line(),
    })
}

/// What the operator knows about its key, as [`KeyWatcher`] publishes it.
#[derive(Clone, Debug)]
pub enum KeyState {
    /// The Secret has not been read yet.
    Unread,
    /// The Secret holds a usable key.
    Usable(OperatorKey),
    /// The Secret is missing or its key unusable: hosts wait for a first key, and a key already in use stays in
    /// use.
    Unusable(OperatorKeyError),
}

/// The one reader of Secret `cloud-private-key`: it re-reads the Secret when told to (a watch event) and at least
/// every resync period, and publishes the [`KeyState`] to every [`KeyReceiver`] when it changes (a new key hash or
/// a new problem). Each distinct problem is logged as an error and published once as a Warning Event
/// `PrivateKeyUnusable` on the Secret.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use wmco_cluster_client::fake::{FakeEvents, FakeSecrets};
/// use wmco_operator::operator_key::{KeyState, KeyWatcher};
///
/// let (mut watcher, receiver) =
///     KeyWatcher::new(Arc::new(FakeSecrets::default()), Arc::new(FakeEvents::default()), "wmco");
/// watcher.refresh().await;
/// assert!(matches!(receiver.current(), KeyState::Unusable(_)), "no Secret yet");
/// # });
/// ```
pub struct KeyWatcher {
    secrets: Arc<dyn Secrets>,
    events: Arc<dyn EventPublisher>,
    namespace: String,
    sender: watch::Sender<KeyState>,
}

impl KeyWatcher {
    /// A watcher of the Secret in `namespace` (nothing read yet) and a receiver of what it publishes.
    pub fn new(
        secrets: Arc<dyn Secrets>,
        events: Arc<dyn EventPublisher>,
        namespace: impl Into<String>,
    ) -> (Self, KeyReceiver) {
        let (sender, receiver) = watch::channel(KeyState::Unread);
        (KeyWatcher { secrets, events, namespace: namespace.into(), sender }, KeyReceiver(receiver))
    }

    /// Reads the Secret once and publishes the state if it changed.
    pub async fn refresh(&mut self) {
        let read = load_operator_key(self.secrets.as_ref(), &self.namespace).await;
        let published = self.sender.borrow().clone();
        match (read, published) {
            (Ok(key), KeyState::Usable(current)) if key.pub_key_hash == current.pub_key_hash => {}
            (Ok(key), _) => {
                tracing::info!(pub_key_hash = %key.pub_key_hash, "operator SSH key loaded");
                self.sender.send_replace(KeyState::Usable(key));
            }
            (Err(problem), KeyState::Unusable(current)) if problem == current => {}
            (Err(problem), published) => {
                let in_use = matches!(published, KeyState::Usable(_));
                tracing::error!(error = %problem, key_in_use = in_use, "the operator SSH key is unusable");
                publish_warning(self.events.as_ref(), &self.namespace, &problem).await;
                self.sender.send_replace(KeyState::Unusable(problem));
            }
        }
    }

    /// Reads the Secret now, then on every item of `triggers` and at least every `resync`, until `triggers` ends.
    pub async fn run(mut self, triggers: impl Stream<Item = ()>, resync: Duration) {
        self.refresh().await;
        let mut triggers = std::pin::pin!(triggers);
        loop {
            tokio::select! {
                trigger = triggers.next() => {
                    if trigger.is_none() {
                        return;
                    }
                }
                () = tokio::time::sleep(resync) => {}
            }
            self.refresh().await;
        }
    }
}

/// What a controller holds to learn the operator key from the one [`KeyWatcher`].
#[derive(Clone, Debug)]
pub struct KeyReceiver(watch::Receiver<KeyState>);

impl KeyReceiver {
    /// The state last published.
    pub fn current(&self) -> KeyState {
        self.0.borrow().clone()
    }

    /// The usable key, waiting for one; `None` once the watcher is gone.
    pub async fn usable(&mut self) -> Option<OperatorKey> {
        self.usable_where(|_| true).await
    }

    /// The next usable key whose hash differs from `current_hash`; `None` once the watcher is gone. An absent or
    /// unusable Secret is not a change: the key in use stays in use.
    pub async fn changed_from(&mut self, current_hash: &str) -> Option<OperatorKey> {
        self.usable_where(|key| key.pub_key_hash != current_hash).await
    }

    async fn usable_where(&mut self, wanted: impl Fn(&OperatorKey) -> bool) -> Option<OperatorKey> {
        let state = self.0.wait_for(|state| matches!(state, KeyState::Usable(key) if wanted(key))).await.ok()?;
        match &*state {
            KeyState::Usable(key) => Some(key.clone()),
            KeyState::Unread | KeyState::Unusable(_) => None,
        }
    }

    /// One item per published change, as loop triggers; ends once the watcher is gone.
    pub fn changes(self) -> impl Stream<Item = ()> + Send + 'static {
        futures::stream::unfold(self.0, |mut receiver| async move {
            receiver.changed().await.ok()?;
            Some(((), receiver))
        })
    }
}

async fn publish_warning(events: &dyn EventPublisher, namespace: &str, problem: &OperatorKeyError) {
    let regarding = ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Secret".to_owned()),
        namespace: Some(namespace.to_owned()),
        name: Some(PRIVATE_KEY_SECRET.to_owned()),
        ..ObjectReference::default()
    };
    let event = NewEvent {
        severity: Severity::Warning,
        reason: "PrivateKeyUnusable".to_owned(),
        action: "LoadKey".to_owned(),
        note: Some(problem.to_string()),
    };
    if let Err(error) = events.publish(&regarding, &event).await {
        tracing::warn!(error = %error, "could not publish the private key Warning Event");
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use wmco_cluster_client::fake::{FakeEvents, FakeSecrets};

    use super::*;

    /// An Ed25519 PKCS#8 key (RFC 8410 test vector) and its OpenSSH public key line.
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n";

    fn secret(data: Option<&[u8]>) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(PRIVATE_KEY_SECRET.into()),
                namespace: Some("wmco".into()),
                ..ObjectMeta::default()
            },
            data: data.map(|bytes| BTreeMap::from([(PRIVATE_KEY_DATA_KEY.to_owned(), ByteString(bytes.to_vec()))])),
            ..Secret::default()
        }
    }

    #[tokio::test]
    async fn the_key_and_its_hash_come_from_the_secret() {
        let secrets = FakeSecrets::default();
        secrets.apply(&secret(Some(KEY.as_bytes()))).await.unwrap();
        let key = load_operator_key(&secrets, "wmco").await.unwrap();
        let public = PublicKey::from_private_key_pem(KEY).unwrap();
        assert_eq!(key.pub_key_hash, public.pub_key_hash());
        assert_eq!(key.pub_key_hash.len(), 64);
        assert!(!format!("{key:?}").contains("MC4CAQAw"));
    }

    #[tokio::test]
    async fn each_problem_names_the_secret_and_never_the_key() {
        let secrets = FakeSecrets::default();
        assert_eq!(
            load_operator_key(&secrets, "wmco").await.unwrap_err().to_string(),
            "Secret wmco/cloud-private-key does not exist: create it with the operator's private key under data key \
             \"private-key.pem\""
        );
        secrets.apply(&secret(None)).await.unwrap();
        assert_eq!(
            load_operator_key(&secrets, "wmco").await.unwrap_err(),
            OperatorKeyError::MissingDataKey { object: "wmco/cloud-private-key".into() }
        );
        let damaged = KEY.replace("MC4CAQAw", "MC4CAQAx");
        secrets.apply(&secret(Some(damaged.as_bytes()))).await.unwrap();
        let error = load_operator_key(&secrets, "wmco").await.unwrap_err().to_string();
        assert!(error.starts_with("Secret wmco/cloud-private-key: \"private-key.pem\" is not a usable private key: "));
        assert!(!error.contains("MC4CAQA"), "{error}");
    }

    /// An Ed25519 PKCS#8 key other than [`KEY`] (RFC 8032 test 2 seed).
    const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIEzNCD0Fy8MWzxGJ+lPmtsqbtZi9Oy6lrTPVnNNMOjy+\n-----END PRIVATE KEY-----\n";

    /// A watcher re-reading the Secret every 10 s, running in the background, and its receiver.
    fn watching(secrets: &Arc<FakeSecrets>, events: &Arc<FakeEvents>) -> KeyReceiver {
        let (watcher, receiver) = KeyWatcher::new(secrets.clone(), events.clone(), "wmco");
        tokio::spawn(watcher.run(futures::stream::pending(), Duration::from_secs(10)));
        receiver
    }

    #[tokio::test(start_paused = true)]
    async fn a_replaced_key_is_returned_and_a_missing_or_unchanged_one_is_not_a_change() {
        let secrets = Arc::new(FakeSecrets::default());
        secrets.apply(&secret(Some(KEY.as_bytes()))).await.unwrap();
        let mut receiver = watching(&secrets, &Arc::new(FakeEvents::default()));
        let current = receiver.usable().await.unwrap().pub_key_hash;
        let change = {
            let (mut receiver, current) = (receiver.clone(), current.clone());
            tokio::spawn(async move { receiver.changed_from(&current).await })
        };
        tokio::time::sleep(Duration::from_secs(25)).await;
        secrets.apply(&secret(None)).await.unwrap();
        tokio::time::sleep(Duration::from_secs(25)).await;
        assert!(!change.is_finished(), "an unchanged or unusable key is no change");
        assert!(matches!(receiver.current(), KeyState::Unusable(OperatorKeyError::MissingDataKey { .. })));
        secrets.apply(&secret(Some(OTHER_KEY.as_bytes()))).await.unwrap();
        let new_key = change.await.unwrap().unwrap();
        assert_eq!(new_key.pub_key_hash, PublicKey::from_private_key_pem(OTHER_KEY).unwrap().pub_key_hash());
        assert_ne!(new_key.pub_key_hash, current);
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_publishes_one_warning_per_problem_and_returns_once_the_key_is_usable() {
        let secrets = Arc::new(FakeSecrets::default());
        let events = Arc::new(FakeEvents::default());
        let mut receiver = watching(&secrets, &events);
        let waiter = tokio::spawn(async move { receiver.usable().await });
        tokio::time::sleep(Duration::from_secs(25)).await;
        secrets.apply(&secret(Some(KEY.as_bytes()))).await.unwrap();
        let key = waiter.await.unwrap().unwrap();
        assert_eq!(key.pub_key_hash.len(), 64);
        let published = events.published();
        assert_eq!(published.len(), 1, "three failed reads, one problem, one Event");
        let (regarding, event) = &published[0];
        assert_eq!(
            (regarding.kind.as_deref(), regarding.name.as_deref(), event.reason.as_str(), event.severity),
            (Some("Secret"), Some(PRIVATE_KEY_SECRET), "PrivateKeyUnusable", Severity::Warning)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_trigger_rereads_at_once_and_each_change_is_announced() {
        let secrets = Arc::new(FakeSecrets::default());
        let (watcher, receiver) = KeyWatcher::new(secrets.clone(), Arc::new(FakeEvents::default()), "wmco");
        let (trigger, triggers) = futures::channel::mpsc::unbounded::<()>();
        let mut changes = Box::pin(receiver.clone().changes());
        tokio::spawn(watcher.run(triggers, Duration::from_secs(3600)));
        changes.next().await.expect("the first read: no Secret");
        secrets.apply(&secret(Some(KEY.as_bytes()))).await.unwrap();
        trigger.unbounded_send(()).unwrap();
        changes.next().await.expect("the key, read on the trigger, long before the resync");
        assert!(matches!(receiver.current(), KeyState::Usable(_)));
        trigger.unbounded_send(()).unwrap();
        drop(trigger);
        assert!(changes.next().await.is_none(), "an unchanged key is not announced; the stream ends with the watcher");
    }
}
