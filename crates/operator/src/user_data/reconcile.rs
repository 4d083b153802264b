//! One user-data pass: observe the key Secret (as watched) and the live `windows-user-data`, decide (render with
//! `wmco-user-data`, compare), act (server-side apply only on a difference), record (Warning Event on a refused key);
//! then the same for the mirror in `openshift-cluster-api` while that namespace exists (a Warning Event, not an
//! error, when the operator may not write it).

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
/// Where [`USER_DATA_SECRET`] is mirrored while this namespace exists (OpenShift's Cluster API machines read it
/// there; the Go operator mirrors it the same way).
pub const USER_DATA_MIRROR_NAMESPACE: &str = "openshift-cluster-api";
/// The kustomize component whose Role lets the operator write the mirror.
pub const MIRROR_COMPONENT: &str = "manifests/components/cluster-api";
/// Warning Event reason: the operator may not read or write the mirror.
pub const MIRROR_FORBIDDEN_REASON: &str = "UserDataMirrorForbidden";
/// Warning Event reason for a weak key.
pub const WEAK_KEY_REASON: &str = "WeakPrivateKey";
/// Warning Event reason for a key that cannot be read at all.
pub const KEY_REFUSED_REASON: &str = "PrivateKeyUnusable";
/// The Event action of this controller.
const EVENT_ACTION: &str = "RenderUserData";
/// The Event action of the mirror.
const MIRROR_EVENT_ACTION: &str = "MirrorUserData";

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

/// The `windows-user-data` Secret for `user_data` in `namespace` ([`USER_DATA_NAMESPACE`], or the mirror's
/// [`USER_DATA_MIRROR_NAMESPACE`]), as the operator applies it.
///
/// ```
/// use wmco_operator::user_data::{USER_DATA_NAMESPACE, desired_user_data_secret};
/// let secret = desired_user_data_secret(USER_DATA_NAMESPACE, "exit 0\n");
/// assert_eq!(secret.metadata.namespace.as_deref(), Some("openshift-machine-api"));
/// assert_eq!(secret.data.unwrap()["userData"].0, b"exit 0\n");
/// ```
pub fn desired_user_data_secret(namespace: &str, user_data: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(USER_DATA_SECRET.to_owned()),
            namespace: Some(namespace.to_owned()),
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

/// One pass over `key_secret` (the watched `cloud-private-key`, `None` when absent): `windows-user-data` in
/// [`USER_DATA_NAMESPACE`], then its mirror in [`USER_DATA_MIRROR_NAMESPACE`] when that namespace exists (the
/// outcome is the former's; the mirror's is logged).
///
/// # Errors
/// [`UserDataError`] when the live `windows-user-data` or its mirror cannot be read or applied, or the mirror's
/// namespace cannot be looked up, for another reason than a Forbidden answer about the mirror (retryable).
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
    let outcome = if holds(live.as_ref(), &rendered) {
        UserDataOutcome::Unchanged
    } else {
        ctx.secrets
            .apply(&desired_user_data_secret(USER_DATA_NAMESPACE, &rendered))
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
        UserDataOutcome::Applied { replaced, pub_key_hash }
    };
    mirror_user_data(&rendered, ctx).await?;
    Ok(outcome)
}

/// Whether `secret` holds `rendered` as its user data.
fn holds(secret: Option<&Secret>, rendered: &str) -> bool {
    secret
        .and_then(|secret| secret.data.as_ref()?.get(USER_DATA_KEY))
        .is_some_and(|bytes| bytes.0 == rendered.as_bytes())
}

/// What the operator was refused while mirroring.
#[derive(Debug, Clone, Copy)]
enum MirrorStep {
    /// `get` of the Namespace.
    LookUpNamespace,
    /// `get` of the mirrored Secret.
    Read,
    /// Server-side apply of the mirrored Secret.
    Write,
}

/// Why a pass did not keep the mirror.
enum MirrorFailure {
    /// The API server answered Forbidden at this step.
    Forbidden(MirrorStep),
    /// Any other failure (retryable).
    Failed(UserDataError),
}

impl MirrorFailure {
    /// `error` at `step`: Forbidden, or the failure `wrap` makes of it.
    fn of(
        step: MirrorStep,
        error: wmco_cluster_client::Error,
        wrap: impl FnOnce(Box<wmco_cluster_client::Error>) -> UserDataError,
    ) -> Self {
        if error.status_code() == Some(403) { Self::Forbidden(step) } else { Self::Failed(wrap(Box::new(error))) }
    }
}

/// Keeps `windows-user-data` in [`USER_DATA_MIRROR_NAMESPACE`] equal to `rendered` while that namespace exists,
/// asking again on every pass: a missing namespace is skipped quietly, a Forbidden answer is a warning (logged and
/// published once per problem), not an error; only a difference is written, so a hand edit there is put back on the
/// next pass.
async fn mirror_user_data(rendered: &str, ctx: &UserDataContext) -> Result<(), UserDataError> {
    match keep_mirror(rendered, ctx).await {
        Ok(()) => Ok(()),
        Err(MirrorFailure::Forbidden(step)) => {
            mirror_forbidden(ctx, step).await;
            Ok(())
        }
        Err(MirrorFailure::Failed(error)) => Err(error),
    }
}

async fn keep_mirror(rendered: &str, ctx: &UserDataContext) -> Result<(), MirrorFailure> {
    let namespace = USER_DATA_MIRROR_NAMESPACE;
    let exists = ctx.namespaces.active(namespace).await.map_err(|error| {
        MirrorFailure::of(MirrorStep::LookUpNamespace, error, |source| UserDataError::Namespace {
            namespace: namespace.to_owned(),
            source,
        })
    })?;
    if !exists {
        ctx.clear_mirror_problem();
        tracing::debug!(namespace, "namespace absent; windows-user-data is not mirrored");
        return Ok(());
    }
    let object = format!("{namespace}/{USER_DATA_SECRET}");
    let live = ctx.secrets.get(namespace, USER_DATA_SECRET).await.map_err(|error| {
        MirrorFailure::of(MirrorStep::Read, error, |source| UserDataError::Read { object: object.clone(), source })
    })?;
    if !holds(live.as_ref(), rendered) {
        ctx.secrets.apply(&desired_user_data_secret(namespace, rendered)).await.map_err(|error| {
            MirrorFailure::of(MirrorStep::Write, error, |source| UserDataError::Apply { object, source })
        })?;
        tracing::info!(secret = USER_DATA_SECRET, namespace, replaced = live.is_some(), "windows-user-data mirrored");
    }
    ctx.clear_mirror_problem();
    Ok(())
}

/// Logs the refusal and publishes it once as a Warning Event on the key Secret, saying what grants the access.
async fn mirror_forbidden(ctx: &UserDataContext, step: MirrorStep) {
    let namespace = USER_DATA_MIRROR_NAMESPACE;
    let note = match step {
        MirrorStep::LookUpNamespace => format!(
            "the operator may not get Namespace {namespace}, so {USER_DATA_SECRET} is not mirrored there: give its \
             ClusterRole windows-machine-config-operator `get` on namespaces named {namespace} (as \
             manifests/base/rbac/cluster.yaml does)"
        ),
        MirrorStep::Read | MirrorStep::Write => format!(
            "the operator may not {} Secret {namespace}/{USER_DATA_SECRET}, so Cluster API Machines would boot \
             without the current user data: include the kustomize component {MIRROR_COMPONENT} in the overlay you \
             installed (a Role with get, create, update and patch on Secrets in {namespace}); the operator tries \
             again on every user-data pass",
            if matches!(step, MirrorStep::Read) { "read" } else { "write" }
        ),
    };
    if !ctx.note_mirror_problem(&note) {
        tracing::debug!(problem = %note, "windows-user-data still not mirrored");
        return;
    }
    tracing::warn!(reason = MIRROR_FORBIDDEN_REASON, problem = %note, "windows-user-data not mirrored");
    let event = NewEvent {
        severity: Severity::Warning,
        reason: MIRROR_FORBIDDEN_REASON.to_owned(),
        action: MIRROR_EVENT_ACTION.to_owned(),
        note: Some(note),
    };
    if let Err(error) = ctx.events.publish(&key_secret_reference(ctx), &event).await {
        tracing::warn!(error = %error, "could not publish the mirror's Warning Event");
    }
}

/// The operator's key Secret, which this controller's Events are about.
fn key_secret_reference(ctx: &UserDataContext) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Secret".to_owned()),
        namespace: Some(ctx.settings.operator_namespace.clone()),
        name: Some(PRIVATE_KEY_SECRET.to_owned()),
        ..ObjectReference::default()
    }
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
        let regarding = key_secret_reference(ctx);
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
