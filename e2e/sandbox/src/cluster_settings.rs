//! Cluster-wide settings a test plants as the cluster's own operators would — Proxy `cluster`'s status, the
//! registry credentials of Secret `openshift-config/pull-secret` — with the credentials they carry remembered for the
//! secret scan ([`Sandbox::scan_for_leaked_secrets`]).

use std::sync::PoisonError;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use wmco_cluster_client::types::Proxy;

use crate::secret_scan::{Secret, SecretKind};
use crate::{Sandbox, SandboxError};

impl Sandbox {
    /// Writes Proxy `cluster`'s status as the cluster's network operator would (empty strings: no proxy); the user
    /// info of a URL (`http://user:password@proxy`) becomes a secret the scan looks for.
    ///
    /// # Errors
    /// [`SandboxError::Kube`].
    pub async fn set_proxy_status(&self, http: &str, https: &str, no_proxy: &str) -> Result<(), SandboxError> {
        let proxies = Api::<Proxy>::all(self.admin_client());
        let status = serde_json::json!({"status": {"httpProxy": http, "httpsProxy": https, "noProxy": no_proxy}});
        proxies
            .patch_status("cluster", &PatchParams::default(), &Patch::Merge(&status))
            .await
            .map_err(SandboxError::kube("patch Proxy cluster's status"))?;
        for (field, url) in [("httpProxy", http), ("httpsProxy", https)] {
            if let Some(user_info) = url_user_info(url) {
                let source = format!("Proxy cluster status.{field}");
                self.plant(Secret::credentials(SecretKind::ProxyCredentials, source, user_info));
            }
        }
        Ok(())
    }

    /// Creates or replaces Secret `openshift-config/pull-secret` with one registry's credentials, `auth` being the
    /// Base64 of `user_password` (`user:password`), as the installer writes it; the credentials become a secret the
    /// scan looks for.
    ///
    /// # Errors
    /// [`SandboxError::Kube`].
    pub async fn set_registry_credentials(&self, registry: &str, user_password: &str) -> Result<(), SandboxError> {
        let document = serde_json::json!({"auths": {registry: {"auth": STANDARD.encode(user_password)}}});
        let secret: KubeSecret = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": "pull-secret", "namespace": "openshift-config"},
            "stringData": {".dockerconfigjson": document.to_string()}}))
        .map_err(|error| SandboxError::SecretScan(format!("the pull secret does not build: {error}")))?;
        let secrets = Api::<KubeSecret>::namespaced(self.admin_client(), "openshift-config");
        let action = "write Secret openshift-config/pull-secret";
        let exists = secrets.get_opt("pull-secret").await.map_err(SandboxError::kube(action))?.is_some();
        let written = if exists {
            secrets.replace("pull-secret", &PostParams::default(), &secret).await
        } else {
            secrets.create(&PostParams::default(), &secret).await
        };
        written.map_err(SandboxError::kube(action))?;
        let source = format!("Secret openshift-config/pull-secret ({registry})");
        self.plant(Secret::credentials(SecretKind::RegistryCredentials, source, user_password));
        Ok(())
    }

    fn plant(&self, secret: Secret) {
        self.planted.lock().unwrap_or_else(PoisonError::into_inner).push(secret);
    }
}

/// The user info of `url` (`user:password` of `http://user:password@proxy:3128`), if it has one.
///
/// ```
/// # use wmco_sandbox::cluster_settings::url_user_info;
/// assert_eq!(url_user_info("http://wmco:s3cret@proxy.example:3129"), Some("wmco:s3cret"));
/// assert_eq!(url_user_info("http://proxy.example:3128/a@b"), None);
/// assert_eq!(url_user_info(""), None);
/// ```
pub fn url_user_info(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority.rsplit_once('@').map(|(user_info, _)| user_info).filter(|user_info| !user_info.is_empty())
}
