//! The kubeconfigs the operator writes: the kubelet's bootstrap kubeconfig (the API server, the CA file that verifies
//! it, and the node-bootstrapper token) and, on Azure, azure-cloud-node-manager's (the same server and CA, and the
//! path of a token file of ServiceAccount `cloud-node-manager`, with that file). Rendered as YAML with serde-saphyr
//! from typed structs.

use serde::Serialize;

use super::destinations::{
    BOOTSTRAP_CA, BOOTSTRAP_KUBECONFIG, CLOUD_NODE_MANAGER_KUBECONFIG, CLOUD_NODE_MANAGER_TOKEN, destination,
};
use super::{ClusterInputs, RenderError, RenderedFile, SecretToken};

const CLUSTER_NAME: &str = "cluster";
const USER_NAME: &str = "kubelet";
const CONTEXT_NAME: &str = "kubelet-bootstrap";
const CLOUD_NODE_MANAGER_USER: &str = "cloud-node-manager";

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

impl<'a> Kubeconfig<'a> {
    /// One cluster (`server`, verified by the CA file [`BOOTSTRAP_CA`]), one user, one context joining them.
    fn new(server: &'a str, user_name: &'static str, user: UserFields<'a>, context_name: &'static str) -> Self {
        Kubeconfig {
            api_version: "v1",
            kind: "Config",
            clusters: [Named {
                name: CLUSTER_NAME,
                entry: ClusterEntry { cluster: ClusterFields { server, certificate_authority: BOOTSTRAP_CA } },
            }],
            users: [Named { name: user_name, entry: UserEntry { user } }],
            contexts: [Named {
                name: context_name,
                entry: ContextEntry { context: ContextFields { cluster: CLUSTER_NAME, user: user_name } },
            }],
            current_context: context_name,
        }
    }

    fn render(&self, file: &'static str, path: &str) -> Result<RenderedFile, RenderError> {
        let text = serde_saphyr::to_string(self)
            .map_err(|error| RenderError::Serialize { file, message: error.to_string() })?;
        Ok(RenderedFile::new(destination(path, file)?, text.into_bytes()))
    }
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

/// A bearer token, inline or from a file (which client-go reads again every minute, so a rotation needs no restart).
#[derive(Serialize)]
struct UserFields<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<&'a str>,
    #[serde(rename = "tokenFile", skip_serializing_if = "Option::is_none")]
    token_file: Option<&'static str>,
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
    let user = UserFields { token: Some(cluster.bootstrap_token.expose()), token_file: None };
    Kubeconfig::new(&cluster.api_server_url, USER_NAME, user, CONTEXT_NAME)
        .render("bootstrap kubeconfig", BOOTSTRAP_KUBECONFIG)
}

/// azure-cloud-node-manager's credential: its kubeconfig at `C:\k\cloud-node-manager-kubeconfig` (the API server at
/// `api_server_url`, verified by `C:\k\bootstrap-ca.crt`; user `cloud-node-manager` reading its token from
/// `C:\k\cloud-node-manager-token`) and that token file holding `token`, a token of ServiceAccount
/// `cloud-node-manager`. The kubeconfig names the service's command line and changes only with the server; the
/// token file changes at each rotation and is re-read by client-go without a restart.
///
/// ```
/// use wmco_payload_manifest::render::{SecretToken, cloud_node_manager_files};
///
/// let files = cloud_node_manager_files("https://api-int.example:6443", &SecretToken::new("eyJ.token")).unwrap();
/// let kubeconfig = String::from_utf8(files[0].bytes().to_vec()).unwrap();
/// assert!(kubeconfig.contains(r"tokenFile: C:\k\cloud-node-manager-token"));
/// assert!(!kubeconfig.contains("eyJ"));
/// assert_eq!(files[1].bytes(), b"eyJ.token");
/// ```
///
/// # Errors
/// [`RenderError`] if the document cannot be serialized.
pub fn cloud_node_manager_files(api_server_url: &str, token: &SecretToken) -> Result<Vec<RenderedFile>, RenderError> {
    let user = UserFields { token: None, token_file: Some(CLOUD_NODE_MANAGER_TOKEN) };
    let kubeconfig = Kubeconfig::new(api_server_url, CLOUD_NODE_MANAGER_USER, user, CLOUD_NODE_MANAGER_USER)
        .render("cloud-node-manager kubeconfig", CLOUD_NODE_MANAGER_KUBECONFIG)?;
    let token_file = RenderedFile::new(
        destination(CLOUD_NODE_MANAGER_TOKEN, "cloud-node-manager token")?,
        token.expose().as_bytes().to_vec(),
    );
    Ok(vec![kubeconfig, token_file])
}
