//! The kube-runtime wiring of the user-data controller: a `Controller` over Secret `cloud-private-key` in the
//! operator namespace that also watches Secret `windows-user-data` in `openshift-machine-api` (both selected by
//! name, so the operator's Roles can be limited to those names), calling [`reconcile_user_data`], with the
//! runtime's error policy (a fixed 5 s pause: one object). A successful pass comes back after [`MIRROR_RECHECK`]:
//! the mirror in `openshift-cluster-api` is not watched (its namespace may appear at any time, and the operator may
//! not list or watch there), so its creation and hand edits there are noticed by these passes. Exercised against a
//! real API server by the e2e suite.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use kube::{Api, Client};

use super::{USER_DATA_NAMESPACE, USER_DATA_SECRET, UserDataContext, UserDataError, reconcile_user_data};
use crate::operator_key::PRIVATE_KEY_SECRET;
use crate::runtime::{Controlled, error_policy, report, tracked};

/// How often a converged user data is checked again, for its mirror (three GETs).
const MIRROR_RECHECK: Duration = Duration::from_secs(300);

/// Runs the user-data controller until the watches end (the process shuts down).
///
/// ```no_run
/// # async fn run(client: kube::Client, context: std::sync::Arc<wmco_operator::user_data::UserDataContext>) {
/// wmco_operator::user_data::controller(client, context).await;
/// # }
/// ```
pub async fn controller(client: Client, ctx: Arc<UserDataContext>) {
    let namespace = ctx.settings.operator_namespace.clone();
    let keys: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let user_data: Api<Secret> = Api::namespaced(client, USER_DATA_NAMESPACE);
    let key_ref = ObjectRef::<Secret>::new(PRIVATE_KEY_SECRET).within(&namespace);
    Controller::new(keys, watcher::Config::default().fields(&format!("metadata.name={PRIVATE_KEY_SECRET}")))
        .watches(
            user_data,
            watcher::Config::default().fields(&format!("metadata.name={USER_DATA_SECRET}")),
            move |_| Some(key_ref.clone()),
        )
        .run(reconcile, error_policy, ctx)
        .for_each(|result| report(UserDataContext::NAME, result))
        .await;
}

async fn reconcile(key_secret: Arc<Secret>, ctx: Arc<UserDataContext>) -> Result<Action, UserDataError> {
    tracked(ctx.as_ref(), key_secret.as_ref(), reconcile_user_data(Some(&key_secret), &ctx)).await?;
    Ok(Action::requeue(MIRROR_RECHECK))
}
