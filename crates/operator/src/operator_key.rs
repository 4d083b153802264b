//! The operator's SSH key: Secret `cloud-private-key` (`private-key.pem`) in the operator namespace, turned into
//! the transport's [`PrivateKey`] and the `pub-key-hash` Node annotation value (hex SHA-256 of the
//! authorized-key line, as the Go operator computes it). [`wait_for_operator_key`] retries until the Secret is
//! usable, logging an error and publishing one Warning Event on the Secret per distinct problem;
//! [`wait_for_key_change`] returns the new key once the admin replaced it. Key material never reaches logs, errors
//! or `Debug`.

use std::fmt;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
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

/// Loads the operator key, retrying every `retry` until it is usable. Each distinct problem is logged as an
/// error and published once as a Warning Event `PrivateKeyUnusable` on the Secret.
pub async fn wait_for_operator_key(
    secrets: &dyn Secrets,
    events: &dyn EventPublisher,
    namespace: &str,
    retry: Duration,
) -> OperatorKey {
    let mut last_problem: Option<OperatorKeyError> = None;
    loop {
        match load_operator_key(secrets, namespace).await {
            Ok(key) => {
                tracing::info!(pub_key_hash = %key.pub_key_hash, "operator SSH key loaded");
                return key;
            }
            Err(problem) => {
                if last_problem.as_ref() != Some(&problem) {
                    tracing::error!(error = %problem, retry = ?retry, "the operator SSH key is unusable; hosts wait");
                    publish_warning(events, namespace, &problem).await;
                    last_problem = Some(problem);
                }
                tokio::time::sleep(retry).await;
            }
        }
    }
}

/// Re-reads the key every `interval` and returns it once it is usable and its hash differs from `current_hash`. An
/// absent or unusable Secret is not a change: the key in use stays in use (and [`wait_for_operator_key`]'s
/// warnings are not repeated here).
pub async fn wait_for_key_change(
    secrets: &dyn Secrets,
    namespace: &str,
    current_hash: &str,
    interval: Duration,
) -> OperatorKey {
    loop {
        tokio::time::sleep(interval).await;
        match load_operator_key(secrets, namespace).await {
            Ok(key) if key.pub_key_hash != current_hash => {
                tracing::info!(pub_key_hash = %key.pub_key_hash, "the operator SSH key changed");
                return key;
            }
            Ok(_) => {}
            Err(problem) => {
                tracing::debug!(error = %problem, "the new operator SSH key is not usable; keeping the current one")
            }
        }
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

    #[tokio::test(start_paused = true)]
    async fn a_replaced_key_is_returned_and_a_missing_or_unchanged_one_is_not_a_change() {
        let secrets = std::sync::Arc::new(FakeSecrets::default());
        secrets.apply(&secret(Some(KEY.as_bytes()))).await.unwrap();
        let current = load_operator_key(secrets.as_ref(), "wmco").await.unwrap().pub_key_hash;
        let watcher = {
            let (secrets, current) = (secrets.clone(), current.clone());
            tokio::spawn(async move {
                wait_for_key_change(secrets.as_ref(), "wmco", &current, Duration::from_secs(10)).await
            })
        };
        tokio::time::sleep(Duration::from_secs(25)).await;
        secrets.apply(&secret(None)).await.unwrap();
        tokio::time::sleep(Duration::from_secs(25)).await;
        assert!(!watcher.is_finished(), "an unchanged or unusable key is no change");
        secrets.apply(&secret(Some(OTHER_KEY.as_bytes()))).await.unwrap();
        let new_key = watcher.await.unwrap();
        assert_eq!(new_key.pub_key_hash, PublicKey::from_private_key_pem(OTHER_KEY).unwrap().pub_key_hash());
        assert_ne!(new_key.pub_key_hash, current);
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_publishes_one_warning_per_problem_and_returns_once_the_key_is_usable() {
        let secrets = std::sync::Arc::new(FakeSecrets::default());
        let events = std::sync::Arc::new(FakeEvents::default());
        let waiter = {
            let (secrets, events) = (secrets.clone(), events.clone());
            tokio::spawn(async move {
                wait_for_operator_key(secrets.as_ref(), events.as_ref(), "wmco", Duration::from_secs(5)).await
            })
        };
        tokio::time::sleep(Duration::from_secs(12)).await;
        secrets.apply(&secret(Some(KEY.as_bytes()))).await.unwrap();
        let key = waiter.await.unwrap();
        assert_eq!(key.pub_key_hash.len(), 64);
        let published = events.published();
        assert_eq!(published.len(), 1, "three failed attempts, one problem, one Event");
        let (regarding, event) = &published[0];
        assert_eq!(
            (regarding.kind.as_deref(), regarding.name.as_deref(), event.reason.as_str(), event.severity),
            (Some("Secret"), Some(PRIVATE_KEY_SECRET), "PrivateKeyUnusable", Severity::Warning)
        );
    }
}
