//! The Go operator's daemon identity in the cluster ([`GoDaemonObject::all`]: its ServiceAccount, token Secret,
//! Role, RoleBinding, ClusterRoles and ClusterRoleBindings), deleted once no host needs it.
//!
//! **The rule.** A host runs the Go operator's daemon until this operator's first configure pass for it deletes the
//! daemon's service, and its Node gets this operator's version only when that configuration is done. So no host
//! needs the daemon's identity once no Windows Node (label `kubernetes.io/os=windows`) carries another release in
//! its `windowsmachineconfig.openshift.io/version` annotation, or the Go operator's `…/desired-version` annotation
//! without this operator's version (a configuration the Go operator started and did not finish). A Node without
//! either annotation was never configured by the Go operator. Until then nothing is deleted; after that, each fleet
//! reconcile deletes what still exists, by exact name, and one Normal Event `GoDaemonIdentityRemoved`, regarding the
//! daemon's ServiceAccount, lists what it deleted. Once every object is seen deleted or absent, the process stops
//! checking (a restarted process checks once more).

use k8s_openapi::api::core::v1::{Node, ObjectReference, ServiceAccount};
use kube::Resource;
use semver::Version;
use wmco_cluster_client::names::{DESIRED_VERSION_ANNOTATION, VERSION_ANNOTATION};
use wmco_cluster_client::{GO_DAEMON_NAME, GoDaemonObject, NewEvent, NodeExt, Severity};

use super::context::FLEET;
use super::{FleetContext, FleetError};
use crate::runtime::ReconcilerError;

/// The first Windows Node among `nodes` that may still run the Go operator's daemon (see the module's rule), with
/// why; `None` when none may.
pub(crate) fn still_needed_by(nodes: &[Node], operator_version: &Version) -> Option<String> {
    let ours = |text: &str| Version::parse(text).is_ok_and(|version| version.cmp_precedence(operator_version).is_eq());
    nodes.iter().find_map(|node| {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        match (node.annotation(VERSION_ANNOTATION), node.annotation(DESIRED_VERSION_ANNOTATION)) {
            (Some(version), _) if !ours(version) => Some(format!("Node {name} is at version {version}")),
            (None, Some(desired)) => {
                Some(format!("Node {name} is being configured by the Go operator (desired version {desired})"))
            }
            _ => None,
        }
    })
}

/// Deletes what exists of the Go operator's daemon identity once no Windows Node may still run the daemon, and
/// publishes what was deleted; returns it. Nothing is read once an earlier call saw everything gone.
///
/// # Errors
/// [`FleetError::GoDaemonCleanup`] when the Windows Nodes cannot be listed or an object cannot be deleted; the
/// objects before it are deleted (and published), the others are tried again by the next reconcile.
pub(crate) async fn remove_go_daemon_identity(ctx: &FleetContext) -> Result<Vec<GoDaemonObject>, FleetError> {
    if ctx.go_daemon_gone() {
        return Ok(Vec::new());
    }
    let nodes = ctx.nodes.list_windows().await.map_err(|source| FleetError::GoDaemonCleanup {
        step: "list the Windows Nodes".to_owned(),
        source: Box::new(source),
    })?;
    if let Some(reason) = still_needed_by(&nodes, &ctx.settings.operator_version) {
        tracing::debug!(reason = %reason, "the Go operator's daemon identity stays: a host may still run the daemon");
        return Ok(Vec::new());
    }
    let mut deleted = Vec::new();
    let mut failure = None;
    for object in GoDaemonObject::all(&ctx.settings.namespace) {
        match ctx.go_daemon.delete(&object).await {
            Ok(true) => deleted.push(object),
            Ok(false) => {}
            Err(source) => {
                failure =
                    Some(FleetError::GoDaemonCleanup { step: format!("delete {object}"), source: Box::new(source) });
                break;
            }
        }
    }
    if !deleted.is_empty() {
        publish(ctx, &deleted).await;
    }
    match failure {
        Some(error) => Err(error),
        None => {
            ctx.note_go_daemon_gone();
            Ok(deleted)
        }
    }
}

/// One Normal Event naming every deleted object, regarding the daemon's ServiceAccount.
async fn publish(ctx: &FleetContext, deleted: &[GoDaemonObject]) {
    let names: Vec<String> = deleted.iter().map(ToString::to_string).collect();
    let note = format!("no Windows Node runs the Go operator's daemon any more: deleted its {}", names.join(", "));
    tracing::info!("{note}");
    let regarding = ObjectReference {
        api_version: Some(ServiceAccount::api_version(&()).into_owned()),
        kind: Some(ServiceAccount::kind(&()).into_owned()),
        namespace: Some(ctx.settings.namespace.clone()),
        name: Some(GO_DAEMON_NAME.to_owned()),
        ..ObjectReference::default()
    };
    let event = NewEvent {
        severity: Severity::Normal,
        reason: "GoDaemonIdentityRemoved".to_owned(),
        action: "RemoveGoDaemonIdentity".to_owned(),
        note: Some(note),
    };
    if let Err(error) = ctx.events.publish(&regarding, &event).await {
        tracing::warn!(error = %error, "could not publish the GoDaemonIdentityRemoved Event");
    }
}

/// Runs [`remove_go_daemon_identity`] for a fleet reconcile: a failure is counted and logged, never the reconcile's.
pub(crate) async fn remove_go_daemon_identity_logged(ctx: &FleetContext) -> Vec<GoDaemonObject> {
    remove_go_daemon_identity(ctx).await.unwrap_or_else(|error| {
        ctx.metrics.record_error(FLEET, error.metric_label());
        tracing::warn!(error = %error, "removing the Go operator's daemon identity failed; retried next reconcile");
        Vec::new()
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wmco_cluster_client::GoDaemonKind;
    use wmco_cluster_client::fake::{FakeCluster, objects};

    use super::*;
    use crate::fleet::FleetSettings;
    use crate::fleet::testing::AcceptingKeys;

    const NAMESPACE: &str = "openshift-windows-machine-config-operator";
    const OURS: &str = "10.17.0";
    const GO: &str = "10.16.1";

    fn executor(cluster: &FakeCluster) -> Arc<FleetContext> {
        let settings = FleetSettings::new(NAMESPACE, Version::parse(OURS).unwrap(), Version::new(1, 36, 3), 1);
        Arc::new(FleetContext::new(&cluster.seams(), Arc::new(AcceptingKeys), settings))
    }

    fn windows_node(name: &str, annotations: &[(&str, &str)]) -> Node {
        let mut node = objects::windows_node(name).ready();
        for (key, value) in annotations {
            node = node.annotated(key, value);
        }
        node.build()
    }

    /// The operator's own ServiceAccount, which the cleanup must never touch.
    fn operator_account() -> GoDaemonObject {
        GoDaemonObject {
            kind: GoDaemonKind::ServiceAccount,
            namespace: Some(NAMESPACE.into()),
            name: "windows-machine-config-operator",
        }
    }

    #[tokio::test]
    async fn the_identity_goes_once_the_last_go_node_is_taken_over_and_nothing_else_ever_does() {
        let cluster = FakeCluster::default();
        cluster.go_daemon.insert(GoDaemonObject::all(NAMESPACE));
        cluster.go_daemon.insert([operator_account()]);
        cluster.nodes.insert(windows_node("win-a", &[(VERSION_ANNOTATION, GO)]));
        cluster.nodes.insert(windows_node("win-b", &[(VERSION_ANNOTATION, GO)]));
        cluster.nodes.insert(objects::node("master-0").annotated(VERSION_ANNOTATION, GO).build());
        let ctx = executor(&cluster);

        assert_eq!(remove_go_daemon_identity(&ctx).await.unwrap(), []);
        // One host taken over, the other still runs the daemon.
        cluster.nodes.insert(windows_node("win-a", &[(VERSION_ANNOTATION, OURS)]));
        assert_eq!(remove_go_daemon_identity(&ctx).await.unwrap(), []);
        assert_eq!(cluster.go_daemon.deleted(), []);
        assert!(cluster.events.published().is_empty());

        cluster.nodes.insert(windows_node("win-b", &[(VERSION_ANNOTATION, &format!("{OURS}+build.7"))]));
        let removed = remove_go_daemon_identity(&ctx).await.unwrap();
        assert_eq!(removed, GoDaemonObject::all(NAMESPACE));
        assert_eq!(cluster.go_daemon.present(), [operator_account()], "only the Go daemon's objects go");
        let events = cluster.events.published();
        assert_eq!(events.len(), 1);
        let (regarding, event) = &events[0];
        assert_eq!(
            (regarding.kind.as_deref(), regarding.namespace.as_deref(), regarding.name.as_deref()),
            (Some("ServiceAccount"), Some(NAMESPACE), Some(GO_DAEMON_NAME))
        );
        assert_eq!((event.severity, event.reason.as_str()), (Severity::Normal, "GoDaemonIdentityRemoved"));
        let note = event.note.as_deref().unwrap();
        for object in GoDaemonObject::all(NAMESPACE) {
            assert!(note.contains(&object.to_string()), "{object} missing from: {note}");
        }

        // Seen gone: later reconciles read nothing and delete nothing, even if an object reappears.
        cluster.go_daemon.insert(GoDaemonObject::all(NAMESPACE));
        assert_eq!(remove_go_daemon_identity(&ctx).await.unwrap(), []);
        assert_eq!(cluster.events.published().len(), 1);
    }

    #[test]
    fn a_node_the_go_operator_is_still_configuring_needs_the_daemon_and_a_fresh_one_does_not() {
        let ours = Version::parse(OURS).unwrap();
        let half = windows_node("win-c", &[(DESIRED_VERSION_ANNOTATION, GO)]);
        assert_eq!(
            still_needed_by(&[half], &ours).as_deref(),
            Some("Node win-c is being configured by the Go operator (desired version 10.16.1)")
        );
        let taken_over = windows_node("win-c", &[(DESIRED_VERSION_ANNOTATION, GO), (VERSION_ANNOTATION, OURS)]);
        let fresh = windows_node("win-d", &[]);
        assert_eq!(still_needed_by(&[taken_over, fresh], &ours), None);
        let old = windows_node("win-e", &[(VERSION_ANNOTATION, GO)]);
        assert_eq!(still_needed_by(&[old], &ours).as_deref(), Some("Node win-e is at version 10.16.1"));
    }

    #[tokio::test]
    async fn a_refused_deletion_keeps_the_rest_for_the_next_reconcile_and_publishes_what_went() {
        let cluster = FakeCluster::default();
        let all = GoDaemonObject::all(NAMESPACE);
        cluster.go_daemon.insert(all.clone());
        cluster.go_daemon.refuse(all[3].clone());
        let ctx = executor(&cluster);

        let error = remove_go_daemon_identity(&ctx).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "removing the Go operator's daemon identity: delete ClusterRole windows-instance-config-daemon failed"
        );
        assert_eq!(error.metric_label(), "go_daemon_cleanup");
        assert_eq!(cluster.go_daemon.deleted(), all[..3]);
        assert_eq!(cluster.events.published().len(), 1);
        assert_eq!(remove_go_daemon_identity_logged(&ctx).await, []);
        assert_eq!(cluster.go_daemon.deleted(), all[..3], "the refused object stops the rest again");
    }
}
