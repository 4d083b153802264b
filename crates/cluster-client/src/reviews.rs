//! Delegated authentication and authorization, as the API server offers them to servers of its cluster: a bearer
//! token is checked with a TokenReview, and the user it names is checked with a SubjectAccessReview for a verb on a
//! non-resource path (`get` on `/metrics`). The operator's metrics endpoint uses this, like kube-rbac-proxy and
//! controller-runtime's secure metrics do. Tokens never appear in `Debug` output, errors or logs.

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use kube::Client;
use kube::api::{Api, PostParams};

use crate::error::{Error, Result, Verb};

/// Who a token belongs to, as the API server's TokenReview says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReviewedUser {
    /// The user name (`system:serviceaccount:openshift-monitoring:prometheus-k8s`).
    pub username: String,
    /// The user's UID.
    pub uid: Option<String>,
    /// The user's groups.
    pub groups: Vec<String>,
    /// Further attributes the authenticator attached.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Checks bearer tokens and what their users may do.
#[async_trait]
pub trait AccessReviews: Send + Sync {
    /// The user `token` belongs to, or `None` when the API server does not accept it.
    async fn authenticate(&self, token: &str) -> Result<Option<ReviewedUser>>;

    /// Whether `user` may `verb` the non-resource `path` (for example `get` on `/metrics`).
    async fn may_access(&self, user: &ReviewedUser, verb: &str, path: &str) -> Result<bool>;
}

/// [`AccessReviews`] through the API server's TokenReview and SubjectAccessReview APIs (the operator's
/// ServiceAccount needs `create` on both).
#[derive(Clone)]
pub struct KubeAccessReviews {
    client: Client,
}

impl KubeAccessReviews {
    /// Talks to the API server through `client`.
    pub fn new(client: Client) -> Self {
        KubeAccessReviews { client }
    }
}

#[async_trait]
impl AccessReviews for KubeAccessReviews {
    async fn authenticate(&self, token: &str) -> Result<Option<ReviewedUser>> {
        let review = TokenReview {
            spec: TokenReviewSpec { token: Some(token.to_owned()), audiences: None },
            ..TokenReview::default()
        };
        let answer = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|source| Error::api(Verb::Create, "TokenReview", "<bearer token>", source))?;
        let Some(status) = answer.status.filter(|status| status.authenticated == Some(true)) else {
            return Ok(None);
        };
        let user = status.user.unwrap_or_default();
        Ok(Some(ReviewedUser {
            username: user.username.unwrap_or_default(),
            uid: user.uid,
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default(),
        }))
    }

    async fn may_access(&self, user: &ReviewedUser, verb: &str, path: &str) -> Result<bool> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.username.clone()),
                uid: user.uid.clone(),
                groups: Some(user.groups.clone()),
                extra: Some(user.extra.clone()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_owned()),
                    verb: Some(verb.to_owned()),
                }),
                resource_attributes: None,
            },
            ..SubjectAccessReview::default()
        };
        let answer = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|source| Error::api(Verb::Create, "SubjectAccessReview", user.username.clone(), source))?;
        Ok(answer.status.is_some_and(|status| status.allowed && status.denied != Some(true)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Exchange, scenario};
    use serde_json::json;

    #[tokio::test]
    async fn a_token_is_reviewed_and_its_user_checked_for_get_on_metrics() {
        let exchanges = vec![
            Exchange::post(
                "/apis/authentication.k8s.io/v1/tokenreviews?",
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {},
                       "spec": {"token": "the-token"}}),
            )
            .reply(
                201,
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {},
                "spec": {}, "status": {"authenticated": true, "user": {
                    "username": "system:serviceaccount:mon:prom", "uid": "u1", "groups": ["system:serviceaccounts"]}}}),
            ),
            Exchange::post(
                "/apis/authorization.k8s.io/v1/subjectaccessreviews?",
                json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
                       "spec": {"user": "system:serviceaccount:mon:prom", "uid": "u1",
                                "groups": ["system:serviceaccounts"], "extra": {},
                                "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}}),
            )
            .reply(
                201,
                json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
                "spec": {}, "status": {"allowed": true}}),
            ),
        ];
        let (user, allowed) = scenario(exchanges, |client| async move {
            let reviews = KubeAccessReviews::new(client);
            let user = reviews.authenticate("the-token").await.unwrap().unwrap();
            let allowed = reviews.may_access(&user, "get", "/metrics").await.unwrap();
            (user, allowed)
        })
        .await;
        assert_eq!(user.username, "system:serviceaccount:mon:prom");
        assert!(allowed);
    }

    #[tokio::test]
    async fn an_unauthenticated_token_names_no_user() {
        let exchanges = vec![
            Exchange::post(
                "/apis/authentication.k8s.io/v1/tokenreviews?",
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {},
                   "spec": {"token": "bad"}}),
            )
            .reply(
                201,
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {},
            "spec": {}, "status": {"authenticated": false, "error": "invalid bearer token"}}),
            ),
        ];
        let user =
            scenario(exchanges, |client| async move { KubeAccessReviews::new(client).authenticate("bad").await })
                .await
                .unwrap();
        assert_eq!(user, None);
    }
}
