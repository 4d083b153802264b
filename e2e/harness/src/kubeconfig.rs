//! Kubeconfigs for the control plane: rendered as JSON (a subset of YAML, so kubectl and every client read it),
//! written to files for the processes and kubectl, and turned into `kube::Client`s for the tests.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::{ClientCertificate, Error};

/// How a kubeconfig's user authenticates.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Credential<'a> {
    /// A client certificate and key.
    Certificate(&'a ClientCertificate),
    /// A bearer token. Never logged.
    Token(&'a str),
}

/// Renders a kubeconfig with one cluster, one user named `user_name` and one current context.
pub(crate) fn render(
    server_url: &str,
    ca_certificate_pem: &str,
    user_name: &str,
    credential: Credential<'_>,
) -> String {
    let user = match credential {
        Credential::Certificate(certificate) => serde_json::json!({
            "client-certificate-data": STANDARD.encode(&certificate.certificate_pem),
            "client-key-data": STANDARD.encode(&certificate.key_pem),
        }),
        Credential::Token(token) => serde_json::json!({ "token": token }),
    };
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "wmco-e2e",
            "cluster": {
                "server": server_url,
                "certificate-authority-data": STANDARD.encode(ca_certificate_pem),
            },
        }],
        "users": [{ "name": user_name, "user": user }],
        "contexts": [{ "name": "wmco-e2e", "context": { "cluster": "wmco-e2e", "user": user_name } }],
        "current-context": "wmco-e2e",
    });
    format!("{kubeconfig:#}\n")
}

/// Writes a rendered kubeconfig to `path`.
pub(crate) fn write(path: &Path, rendered: &str) -> Result<(), Error> {
    std::fs::write(path, rendered).map_err(Error::io("write kubeconfig", path))
}

/// Builds a client from a rendered kubeconfig, without kube's automatic retries; `identity` names it in errors.
pub(crate) async fn client_from(rendered: &str, identity: &str) -> Result<kube::Client, Error> {
    let client_error =
        |source: Box<dyn std::error::Error + Send + Sync>| Error::Client { identity: identity.to_owned(), source };
    let kubeconfig: Kubeconfig = serde_json::from_str(rendered).map_err(|error| client_error(Box::new(error)))?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|error| client_error(Box::new(error)))?;
    // Tests must see what the server answers: kube retries 429 (an eviction refused by a disruption budget), 503
    // and 504 by default, up to 15 times with backoff growing to minutes.
    config.default_retry = false;
    kube::Client::try_from(config).map_err(|error| client_error(Box::new(error)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_kubeconfig_names_the_server_user_and_context() {
        let rendered = render("https://127.0.0.1:6443", "CA", "node-bootstrapper", Credential::Token("secret"));
        let parsed: serde_json::Value = serde_json::from_str(&rendered).unwrap();
        assert_eq!(parsed["clusters"][0]["cluster"]["server"], "https://127.0.0.1:6443");
        assert_eq!(parsed["clusters"][0]["cluster"]["certificate-authority-data"], STANDARD.encode("CA"));
        assert_eq!(parsed["users"][0]["name"], "node-bootstrapper");
        assert_eq!(parsed["users"][0]["user"]["token"], "secret");
        assert_eq!(parsed["current-context"], "wmco-e2e");
        let kubeconfig: Kubeconfig = serde_json::from_str(&rendered).unwrap();
        assert_eq!(kubeconfig.current_context.as_deref(), Some("wmco-e2e"));
    }
}
