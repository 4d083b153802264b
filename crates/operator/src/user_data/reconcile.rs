//! One user-data pass: observe the key Secret (as watched) and the live `windows-user-data`, decide (render with
//! `wmco-user-data`, compare), act (server-side apply only on a difference), record (Warning Event on a refused key).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::api::ObjectMeta;
use wmco_cluster_client::{NewEvent, Severity};
use wmco_user_data::{KeyError, PublicKey, render_user_data};

use super::{UserDataContext, UserDataError};
use crate::operator_key::{PRIVATE_KEY_DATA_KEY, PRIVATE_KEY_SECRET};

/// The Secret machine-api hands to new Machines.
pub const USER_DATA_SECRET: &str = "windows-user-data";
/// Where [`USER_DATA_SECRET`] lives.
pub const USER_DATA_NAMESPACE: &str = "openshift-machine-api";
/// The data key holding the script.
pub const USER_DATA_KEY: &str = "userData";
/// Warning Event reason for a weak key.
pub const WEAK_KEY_REASON: &str = "WeakPrivateKey";
/// Warning Event reason for a key that cannot be read at all.
pub const KEY_REFUSED_REASON: &str = "PrivateKeyUnusable";
/// The Event action of this controller.
const EVENT_ACTION: &str = "RenderUserData";

/// What one pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserDataOutcome {
    /// `windows-user-data` already held the rendered script; nothing was written.
    Unchanged,
    /// `windows-user-data` was applied: created, or replaced because it differed (a new key or a hand edit).
    Applied {
        /// True when a Secret with other content existed.
        replaced: bool,
        /// The hash of the key now in the user data (`pub-key-hash`).
        pub_key_hash: String,
    },
    /// The key was refused (weak or unusable); `windows-user-data` was left as it is.
    KeyRefused {
        /// Why, without key material.
        reason: String,
    },
    /// There is no `cloud-private-key` Secret; nothing to render.
    NoKey,
}

/// The `windows-user-data` Secret for `user_data`, as the operator applies it.
///
/// ```
/// let secret = wmco_operator::user_data::desired_user_data_secret("exit 0\n");
/// assert_eq!(secret.metadata.namespace.as_deref(), Some("openshift-machine-api"));
/// assert_eq!(secret.data.unwrap()["userData"].0, b"exit 0\n");
/// ```
pub fn desired_user_data_secret(user_data: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(USER_DATA_SECRET.to_owned()),
            namespace: Some(USER_DATA_NAMESPACE.to_owned()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_owned(),
                "windows-machine-config-operator".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(USER_DATA_KEY.to_owned(), ByteString(user_data.as_bytes().to_vec()))])),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    }
}

/// One pass over `key_secret` (the watched `cloud-private-key`, `None` when absent).
///
/// # Errors
/// [`UserDataError`] when the live `windows-user-data` cannot be read or applied (retryable).
pub async fn reconcile_user_data(
    key_secret: Option<&Secret>,
    ctx: &UserDataContext,
) -> Result<UserDataOutcome, UserDataError> {
    let Some(key_secret) = key_secret else {
        tracing::info!(secret = PRIVATE_KEY_SECRET, "no operator key Secret; windows-user-data left as it is");
        return Ok(UserDataOutcome::NoKey);
    };
    let key = match public_key_of(key_secret) {
        Ok(key) => key,
        Err(refusal) => return Ok(refuse(ctx, refusal).await),
    };
    ctx.clear_problem();
    let rendered = render_user_data(&key, ctx.settings.platform);
    let object = format!("{USER_DATA_NAMESPACE}/{USER_DATA_SECRET}");
    let live = ctx
        .secrets
        .get(USER_DATA_NAMESPACE, USER_DATA_SECRET)
        .await
        .map_err(|source| UserDataError::Read { object: object.clone(), source: Box::new(source) })?;
    let live_user_data = live.as_ref().and_then(|secret| secret.data.as_ref()?.get(USER_DATA_KEY));
    if live_user_data.is_some_and(|bytes| bytes.0 == rendered.as_bytes()) {
        return Ok(UserDataOutcome::Unchanged);
    }
    ctx.secrets
        .apply(&desired_user_data_secret(&rendered))
        .await
        .map_err(|source| UserDataError::Apply { object, source: Box::new(source) })?;
    let pub_key_hash = key.pub_key_hash();
    let replaced = live.is_some();
    tracing::info!(
        secret = USER_DATA_SECRET,
        namespace = USER_DATA_NAMESPACE,
        platform = ctx.settings.platform.cli_name(),
        pub_key_hash = %pub_key_hash,
        replaced,
        "windows-user-data applied"
    );
    Ok(UserDataOutcome::Applied { replaced, pub_key_hash })
}

/// Why a key Secret yields no public key: the Event reason and a sentence without key material.
struct Refusal {
    reason: &'static str,
    note: String,
}

fn public_key_of(key_secret: &Secret) -> Result<PublicKey, Refusal> {
    let unusable = |note: String| Refusal { reason: KEY_REFUSED_REASON, note };
    let bytes = key_secret
        .data
        .as_ref()
        .and_then(|data| data.get(PRIVATE_KEY_DATA_KEY))
        .ok_or_else(|| unusable(format!("Secret {PRIVATE_KEY_SECRET} has no data key {PRIVATE_KEY_DATA_KEY:?}")))?;
    let pem = std::str::from_utf8(&bytes.0)
        .map_err(|_| unusable(format!("{PRIVATE_KEY_DATA_KEY:?} of Secret {PRIVATE_KEY_SECRET} is not PEM text")))?;
    PublicKey::from_private_key_pem(pem).map_err(|error| match error {
        KeyError::Weak(weakness) => Refusal {
            reason: WEAK_KEY_REASON,
            note: format!(
                "Secret {PRIVATE_KEY_SECRET}: {weakness}; {USER_DATA_NAMESPACE}/{USER_DATA_SECRET} was not rendered \
                 from it. Replace the key (for example `ssh-keygen -t ed25519`)"
            ),
        },
        other => unusable(format!("Secret {PRIVATE_KEY_SECRET}: {PRIVATE_KEY_DATA_KEY:?} is not usable: {other}")),
    })
}

/// Logs the refusal and publishes it once as a Warning Event on the key Secret.
async fn refuse(ctx: &UserDataContext, refusal: Refusal) -> UserDataOutcome {
    if ctx.note_problem(&refusal.note) {
        tracing::warn!(reason = refusal.reason, problem = %refusal.note, "operator key refused; windows-user-data left as it is");
        let regarding = ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Secret".to_owned()),
            namespace: Some(ctx.settings.operator_namespace.clone()),
            name: Some(PRIVATE_KEY_SECRET.to_owned()),
            ..ObjectReference::default()
        };
        let event = NewEvent {
            severity: Severity::Warning,
            reason: refusal.reason.to_owned(),
            action: EVENT_ACTION.to_owned(),
            note: Some(refusal.note.clone()),
        };
        if let Err(error) = ctx.events.publish(&regarding, &event).await {
            tracing::warn!(error = %error, "could not publish the refused-key Warning Event");
        }
    }
    UserDataOutcome::KeyRefused { reason: refusal.note }
}
