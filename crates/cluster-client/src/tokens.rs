//! Short-lived ServiceAccount tokens through the TokenRequest API, e.g. the node-bootstrapper token a kubelet's
//! bootstrap kubeconfig carries. Tokens never appear in `Debug` output or logs.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec as ApiTokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::error::{Error, Result, Verb, object_name};

/// What token to ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequestSpec {
    /// Audiences the token is valid for; empty means the API server's own.
    pub audiences: Vec<String>,
    /// How long the token lives (the API server enforces at least 10 minutes).
    pub lifetime: Duration,
}

/// A ServiceAccount token and when it expires. `Debug` hides the token.
#[derive(Clone, PartialEq, Eq)]
pub struct ShortLivedToken {
    token: String,
    expires_at: Timestamp,
}

impl ShortLivedToken {
    /// A token that expires at `expires_at`.
    pub fn new(token: String, expires_at: Timestamp) -> Self {
        ShortLivedToken { token, expires_at }
    }

    /// The bearer token. Never log it.
    pub fn secret(&self) -> &str {
        &self.token
    }

    /// When the token stops being accepted.
    pub fn expires_at(&self) -> Timestamp {
        self.expires_at
    }
}

impl fmt::Debug for ShortLivedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShortLivedToken").field("token", &"<redacted>").field("expires_at", &self.expires_at).finish()
    }
}

/// Mints short-lived ServiceAccount tokens.
#[async_trait]
pub trait ServiceAccountTokens: Send + Sync {
    /// A token of ServiceAccount `namespace/service_account`.
    async fn request(&self, namespace: &str, service_account: &str, spec: &TokenRequestSpec)
    -> Result<ShortLivedToken>;
}

/// [`ServiceAccountTokens`] over the TokenRequest API.
#[derive(Clone)]
pub struct KubeServiceAccountTokens {
    client: Client,
}

impl KubeServiceAccountTokens {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeServiceAccountTokens { client }
    }
}

#[async_trait]
impl ServiceAccountTokens for KubeServiceAccountTokens {
    async fn request(
        &self,
        namespace: &str,
        service_account: &str,
        spec: &TokenRequestSpec,
    ) -> Result<ShortLivedToken> {
        let full_name = object_name(Some(namespace), service_account);
        let request = TokenRequest {
            spec: ApiTokenRequestSpec {
                audiences: spec.audiences.clone(),
                expiration_seconds: Some(i64::try_from(spec.lifetime.as_secs()).unwrap_or(i64::MAX)),
                bound_object_ref: None,
            },
            ..TokenRequest::default()
        };
        let answer = Api::<ServiceAccount>::namespaced(self.client.clone(), namespace)
            .create_token_request(service_account, &PostParams::default(), &request)
            .await
            .map_err(|source| Error::api(Verb::RequestToken, "ServiceAccount", full_name.clone(), source))?;
        let status = answer.status.ok_or_else(|| Error::MissingField {
            verb: Verb::RequestToken,
            kind: "ServiceAccount",
            name: full_name,
            field: "status",
        })?;
        Ok(ShortLivedToken::new(status.token, status.expiration_timestamp.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Exchange, scenario};
    use serde_json::json;

    #[tokio::test]
    async fn request_posts_a_token_request_with_the_lifetime_and_audiences() {
        let exchanges = vec![
            Exchange::post(
                "/api/v1/namespaces/openshift-machine-config-operator/serviceaccounts/node-bootstrapper/token?",
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {},
                       "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600}}),
            )
            .reply(
                201,
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {},
                       "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600},
                       "status": {"token": "eyJ.secret", "expirationTimestamp": "2026-11-22T02:00:00Z"}}),
            ),
        ];
        let token = scenario(exchanges, |client| async move {
            KubeServiceAccountTokens::new(client)
                .request(
                    crate::names::NODE_BOOTSTRAPPER_NAMESPACE,
                    crate::names::NODE_BOOTSTRAPPER_SERVICE_ACCOUNT,
                    &TokenRequestSpec {
                        audiences: vec!["https://kubernetes.default.svc".into()],
                        lifetime: Duration::from_secs(3600),
                    },
                )
                .await
                .unwrap()
        })
        .await;
        assert_eq!(token.secret(), "eyJ.secret");
        assert_eq!(token.expires_at(), "2026-11-22T02:00:00Z".parse::<Timestamp>().unwrap());
        assert!(!format!("{token:?}").contains("eyJ"));
    }
}
