//! The Go operator's daemon identity in the cluster: what the Go operator created for its on-host daemon
//! (`windows-instance-config-daemon`, WICD) and leaves behind when it is uninstalled, which the operator deletes once
//! no host needs it. Only these exact names, no selector: [`GoDaemonObject::all`] lists them.
//!
//! Upstream (openshift/windows-machine-config-operator, wmco-anchor.md §0 "WICD identity"): ServiceAccount, Role and
//! ClusterRole `windows-instance-config-daemon` (config/wicd/, shipped in the bundle); RoleBinding and
//! ClusterRoleBinding of the same name binding that ServiceAccount (created at startup,
//! controllers/configmap_controller.go `EnsureWICDRBAC`); the `kubernetes.io/service-account-token` Secret of the
//! same name whose token is in every host's `C:\k\wicd-kubeconfig` (pkg/nodeconfig/nodeconfig.go
//! `createWICDServiceAccountTokenSecret`); and ClusterRole and ClusterRoleBinding `system-wicd-nodes`, granting the
//! daemon's certificate identity (group `system:wicd-nodes`) its Node access (config/rbac/wicd-certificate-group-*).

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::DeleteParams;
use kube::{Api, Client};
use serde::de::DeserializeOwned;

use crate::error::{Error, Result, Verb};

/// The name of the daemon's ServiceAccount, token Secret, Role, RoleBinding, ClusterRole and ClusterRoleBinding.
pub const GO_DAEMON_NAME: &str = "windows-instance-config-daemon";

/// The name of the ClusterRole and ClusterRoleBinding of the daemon's certificate identity (group
/// `system:wicd-nodes`).
pub const GO_DAEMON_CERTIFICATE_RBAC: &str = "system-wicd-nodes";

/// The kinds of the daemon's objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GoDaemonKind {
    /// `v1 ServiceAccount`, namespaced.
    ServiceAccount,
    /// `v1 Secret` (`kubernetes.io/service-account-token`), namespaced.
    Secret,
    /// `rbac.authorization.k8s.io/v1 Role`, namespaced.
    Role,
    /// `rbac.authorization.k8s.io/v1 RoleBinding`, namespaced.
    RoleBinding,
    /// `rbac.authorization.k8s.io/v1 ClusterRole`.
    ClusterRole,
    /// `rbac.authorization.k8s.io/v1 ClusterRoleBinding`.
    ClusterRoleBinding,
}

impl GoDaemonKind {
    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            GoDaemonKind::ServiceAccount => "ServiceAccount",
            GoDaemonKind::Secret => "Secret",
            GoDaemonKind::Role => "Role",
            GoDaemonKind::RoleBinding => "RoleBinding",
            GoDaemonKind::ClusterRole => "ClusterRole",
            GoDaemonKind::ClusterRoleBinding => "ClusterRoleBinding",
        }
    }
}

/// One object of the daemon's identity.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GoDaemonObject {
    /// Its kind.
    pub kind: GoDaemonKind,
    /// Its namespace (`None`: cluster-scoped).
    pub namespace: Option<String>,
    /// Its name.
    pub name: &'static str,
}

impl GoDaemonObject {
    /// Every object of the daemon's identity, those of the Go operator's namespace in `namespace` (the operator
    /// takes over in the namespace the Go operator ran in), in deletion order: the bindings before what they bind.
    ///
    /// ```
    /// use wmco_cluster_client::GoDaemonObject;
    /// let all = GoDaemonObject::all("openshift-windows-machine-config-operator");
    /// assert_eq!(all.len(), 8);
    /// assert_eq!(all[0].to_string(), "ClusterRoleBinding windows-instance-config-daemon");
    /// assert_eq!(all[7].to_string(), "Secret openshift-windows-machine-config-operator/windows-instance-config-daemon");
    /// ```
    pub fn all(namespace: &str) -> Vec<GoDaemonObject> {
        let cluster = |kind, name| GoDaemonObject { kind, namespace: None, name };
        let namespaced = |kind| GoDaemonObject { kind, namespace: Some(namespace.to_owned()), name: GO_DAEMON_NAME };
        vec![
            cluster(GoDaemonKind::ClusterRoleBinding, GO_DAEMON_NAME),
            cluster(GoDaemonKind::ClusterRoleBinding, GO_DAEMON_CERTIFICATE_RBAC),
            namespaced(GoDaemonKind::RoleBinding),
            cluster(GoDaemonKind::ClusterRole, GO_DAEMON_NAME),
            cluster(GoDaemonKind::ClusterRole, GO_DAEMON_CERTIFICATE_RBAC),
            namespaced(GoDaemonKind::Role),
            namespaced(GoDaemonKind::ServiceAccount),
            namespaced(GoDaemonKind::Secret),
        ]
    }
}

impl std::fmt::Display for GoDaemonObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind.as_str(), self.name),
            None => write!(f, "{} {}", self.kind.as_str(), self.name),
        }
    }
}

/// Deletes objects of the Go operator's daemon identity.
#[async_trait]
pub trait GoDaemonObjects: Send + Sync {
    /// Deletes `object`: `true` when it existed and was deleted, `false` when it was not there.
    async fn delete(&self, object: &GoDaemonObject) -> Result<bool>;
}

/// [`GoDaemonObjects`] over the API server: one DELETE by name per object.
#[derive(Clone)]
pub struct KubeGoDaemonObjects {
    client: Client,
}

impl KubeGoDaemonObjects {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeGoDaemonObjects { client }
    }
}

/// Deletes `name` through `api`, answering whether it existed.
async fn delete_named<K>(api: Api<K>, object: &GoDaemonObject) -> Result<bool>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(object.name, &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(source) => Err(Error::api(Verb::Delete, object.kind.as_str(), object.to_string(), source)),
    }
}

#[async_trait]
impl GoDaemonObjects for KubeGoDaemonObjects {
    async fn delete(&self, object: &GoDaemonObject) -> Result<bool> {
        let client = self.client.clone();
        let namespace = object.namespace.as_deref().unwrap_or_default();
        match object.kind {
            GoDaemonKind::ServiceAccount => {
                delete_named(Api::<ServiceAccount>::namespaced(client, namespace), object).await
            }
            GoDaemonKind::Secret => delete_named(Api::<Secret>::namespaced(client, namespace), object).await,
            GoDaemonKind::Role => delete_named(Api::<Role>::namespaced(client, namespace), object).await,
            GoDaemonKind::RoleBinding => delete_named(Api::<RoleBinding>::namespaced(client, namespace), object).await,
            GoDaemonKind::ClusterRole => delete_named(Api::<ClusterRole>::all(client), object).await,
            GoDaemonKind::ClusterRoleBinding => delete_named(Api::<ClusterRoleBinding>::all(client), object).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Exchange, scenario, status_reply};

    #[tokio::test]
    async fn each_object_is_deleted_by_its_exact_path_and_a_missing_one_is_not_an_error() {
        let namespace = "openshift-windows-machine-config-operator";
        let rbac = "/apis/rbac.authorization.k8s.io/v1";
        let namespaced_rbac = format!("{rbac}/namespaces/{namespace}");
        let core = format!("/api/v1/namespaces/{namespace}");
        let paths = [
            format!("{rbac}/clusterrolebindings/windows-instance-config-daemon"),
            format!("{rbac}/clusterrolebindings/system-wicd-nodes"),
            format!("{namespaced_rbac}/rolebindings/windows-instance-config-daemon"),
            format!("{rbac}/clusterroles/windows-instance-config-daemon"),
            format!("{rbac}/clusterroles/system-wicd-nodes"),
            format!("{namespaced_rbac}/roles/windows-instance-config-daemon"),
            format!("{core}/serviceaccounts/windows-instance-config-daemon"),
            format!("{core}/secrets/windows-instance-config-daemon"),
        ];
        let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Success"});
        let gone = status_reply(404, "NotFound", "secrets \"windows-instance-config-daemon\" not found");
        let exchanges: Vec<Exchange> = paths
            .iter()
            .enumerate()
            .map(|(index, path)| {
                let exchange = Exchange::delete(&format!("{path}?"));
                if index == 7 { exchange.reply(404, gone.clone()) } else { exchange.reply(200, status.clone()) }
            })
            .collect();
        scenario(exchanges, |client| async move {
            let objects = KubeGoDaemonObjects::new(client);
            let mut deleted = Vec::new();
            for object in GoDaemonObject::all(namespace) {
                deleted.push(objects.delete(&object).await.unwrap());
            }
            assert_eq!(deleted, [true, true, true, true, true, true, true, false]);
        })
        .await;
    }
}
