//! The kubelet's bootstrap kubeconfig: the API server, the CA file that verifies it, and the node-bootstrapper
//! token. Rendered as YAML with serde-saphyr from typed structs.

use serde::Serialize;

use super::destinations::{BOOTSTRAP_CA, BOOTSTRAP_KUBECONFIG, destination};
use super::{ClusterInputs, RenderError, RenderedFile};

const CLUSTER_NAME: &str = "cluster";
const USER_NAME: &str = "kubelet";
const CONTEXT_NAME: &str = "kubelet-bootstrap";

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Kubeconfig<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    clusters: [Named<ClusterEntry<'a>>; 1],
    users: [Named<UserEntry<'a>>; 1],
    contexts: [Named<ContextEntry>; 1],
    current_context: &'static str,
}

#[derive(Serialize)]
struct Named<T> {
    name: &'static str,
    #[serde(flatten)]
    entry: T,
}

#[derive(Serialize)]
struct ClusterEntry<'a> {
    cluster: ClusterFields<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct ClusterFields<'a> {
    server: &'a str,
    certificate_authority: &'static str,
}

#[derive(Serialize)]
struct UserEntry<'a> {
    user: UserFields<'a>,
}

#[derive(Serialize)]
struct UserFields<'a> {
    token: &'a str,
}

#[derive(Serialize)]
struct ContextEntry {
    context: ContextFields,
}

#[derive(Serialize)]
struct ContextFields {
    cluster: &'static str,
    user: &'static str,
}

/// The bootstrap kubeconfig at `C:\k\bootstrap-kubeconfig`. The CA is referenced by path (`C:\k\bootstrap-ca.crt`,
/// rendered by [`super::ca_files`]), so the kubelet's own kubeconfig written after bootstrap refers to it too.
pub fn bootstrap_kubeconfig(cluster: &ClusterInputs) -> Result<RenderedFile, RenderError> {
    let document = Kubeconfig {
        api_version: "v1",
        kind: "Config",
        clusters: [Named {
            name: CLUSTER_NAME,
            entry: ClusterEntry {
                cluster: ClusterFields { server: &cluster.api_server_url, certificate_authority: BOOTSTRAP_CA },
            },
        }],
        users: [Named {
            name: USER_NAME,
            entry: UserEntry { user: UserFields { token: cluster.bootstrap_token.expose() } },
        }],
        contexts: [Named {
            name: CONTEXT_NAME,
            entry: ContextEntry { context: ContextFields { cluster: CLUSTER_NAME, user: USER_NAME } },
        }],
        current_context: CONTEXT_NAME,
    };
    let text = serde_saphyr::to_string(&document)
        .map_err(|error| RenderError::Serialize { file: "bootstrap kubeconfig", message: error.to_string() })?;
    Ok(RenderedFile::new(destination(BOOTSTRAP_KUBECONFIG, "bootstrap kubeconfig")?, text.into_bytes()))
}
