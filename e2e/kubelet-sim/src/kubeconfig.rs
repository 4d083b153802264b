//! Kubeconfig files on the simulated drive: loading one whose file references are Windows paths
//! (`certificate-authority: C:\k\bootstrap-ca.crt`), checking that it is usable as the kubelet checks it, turning
//! it into a `kube::Client`, and writing the kubelet's own kubeconfig after bootstrap (kubelet-bootstrap.md §1.2).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::Deserialize;

use crate::certs;
use crate::disk::Drive;

/// A kubeconfig's connection facts for the current context, file references resolved to bytes.
#[derive(Clone)]
pub(crate) struct Connection {
    /// The API server URL.
    pub server: String,
    /// The CA bundle (PEM).
    pub certificate_authority: Vec<u8>,
    /// How the CA was given: a Windows path, kept when writing the kubelet's kubeconfig.
    pub certificate_authority_path: Option<String>,
    /// The credential.
    pub credential: Credential,
}

/// The credential of a kubeconfig user.
#[derive(Clone)]
pub(crate) enum Credential {
    /// A bearer token.
    Token(String),
    /// A client certificate chain and key (PEM).
    Certificate {
        /// The certificate chain.
        certificate: Vec<u8>,
        /// The private key.
        key: Vec<u8>,
    },
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Connection").field("server", &self.server).finish_non_exhaustive()
    }
}

/// A kubeconfig file on the simulated drive is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kubeconfig {path}: {reason}")]
pub struct KubeconfigProblem {
    /// The Windows path of the file.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

/// A client built from the kubeconfig at Windows path `path` on `drive`, file references (`C:\k\bootstrap-ca.crt`,
/// `C:\var\lib\kubelet\pki\kubelet-client-current.pem`) resolved on the drive. This is how other simulated
/// node services (hybrid-overlay-node, kube-proxy) use the kubeconfig the kubelet wrote.
///
/// ```no_run
/// # async fn demo() -> Result<(), wmco_kubelet_sim::KubeconfigProblem> {
/// let drive = wmco_kubelet_sim::Drive::new("/hosts/win-a/C");
/// let node_client = wmco_kubelet_sim::client_from_kubeconfig(&drive, r"C:\k\kubeconfig").await?;
/// # let _ = node_client;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`KubeconfigProblem`] when the file, a file it names, or its credential is unusable.
pub async fn client_from_kubeconfig(drive: &Drive, path: &str) -> Result<kube::Client, KubeconfigProblem> {
    let problem = |reason: String| KubeconfigProblem { path: path.to_owned(), reason };
    let connection = load(drive, path).map_err(problem)?;
    connection.still_valid().map_err(problem)?;
    connection.client().await.map_err(problem)
}

/// The parts of a kubeconfig file the kubelet reads (client-go `clientcmd`), names as in the file.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct File {
    #[serde(default)]
    clusters: Vec<Named<ClusterFields>>,
    #[serde(default)]
    users: Vec<Named<UserFields>>,
    #[serde(default)]
    contexts: Vec<Named<ContextFields>>,
    current_context: Option<String>,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    fields: Option<T>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ClusterFields {
    server: Option<String>,
    certificate_authority: Option<String>,
    certificate_authority_data: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct UserFields {
    token: Option<String>,
    client_certificate: Option<String>,
    client_certificate_data: Option<String>,
    client_key: Option<String>,
    client_key_data: Option<String>,
}

#[derive(Deserialize)]
struct ContextFields {
    cluster: String,
    user: Option<String>,
}

/// Loads the kubeconfig at Windows path `path` and resolves its current context.
pub(crate) fn load(drive: &Drive, path: &str) -> Result<Connection, String> {
    let file = drive.resolve(path).map_err(|problem| problem.to_string())?;
    let text = std::fs::read_to_string(&file).map_err(|error| format!("open {path}: {error}"))?;
    let kubeconfig: File = serde_saphyr::from_str(&text).map_err(|error| format!("parse {path}: {error}"))?;
    resolve(drive, &kubeconfig).map_err(|problem| format!("{path}: {problem}"))
}

fn find<'a, T>(entries: &'a [Named<T>], name: &str) -> Option<&'a T> {
    entries.iter().find(|named| named.name == name).and_then(|named| named.fields.as_ref())
}

fn resolve(drive: &Drive, kubeconfig: &File) -> Result<Connection, String> {
    let context_name = kubeconfig.current_context.as_deref().ok_or("no current-context")?;
    let context =
        find(&kubeconfig.contexts, context_name).ok_or_else(|| format!("context {context_name:?} not found"))?;
    let cluster = find(&kubeconfig.clusters, &context.cluster)
        .ok_or_else(|| format!("cluster {:?} not found", context.cluster))?;
    let server = cluster.server.clone().filter(|s| !s.is_empty()).ok_or("cluster has no server")?;
    if !server.starts_with("https://") {
        return Err(format!("server {server:?} is not an https URL"));
    }
    let (certificate_authority, certificate_authority_path) =
        match (&cluster.certificate_authority_data, &cluster.certificate_authority) {
            (Some(data), _) => (decode(data, "certificate-authority-data")?, None),
            (None, Some(path)) => (read(drive, path, "certificate-authority")?, Some(path.clone())),
            (None, None) => return Err("cluster has no certificate-authority".to_owned()),
        };
    let user_name = context.user.as_deref().ok_or("context has no user")?;
    let user = find(&kubeconfig.users, user_name).ok_or_else(|| format!("user {user_name:?} not found"))?;
    let credential = if let Some(token) = user.token.clone().filter(|token| !token.is_empty()) {
        Credential::Token(token)
    } else {
        let certificate = match (&user.client_certificate_data, &user.client_certificate) {
            (Some(data), _) => decode(data, "client-certificate-data")?,
            (None, Some(path)) => read(drive, path, "client-certificate")?,
            (None, None) => return Err(format!("user {user_name:?} has neither a token nor a client certificate")),
        };
        let key = match (&user.client_key_data, &user.client_key) {
            (Some(data), _) => decode(data, "client-key-data")?,
            (None, Some(path)) => read(drive, path, "client-key")?,
            (None, None) => return Err(format!("user {user_name:?} has a client certificate but no key")),
        };
        Credential::Certificate { certificate, key }
    };
    Ok(Connection { server, certificate_authority, certificate_authority_path, credential })
}

fn decode(data: &str, field: &str) -> Result<Vec<u8>, String> {
    STANDARD.decode(data.trim()).map_err(|error| format!("{field}: {error}"))
}

fn read(drive: &Drive, path: &str, field: &str) -> Result<Vec<u8>, String> {
    let file = drive.resolve(path).map_err(|problem| format!("{field}: {problem}"))?;
    std::fs::read(&file).map_err(|error| format!("{field}: open {path}: {error}"))
}

impl Connection {
    /// Whether the kubelet would keep using this kubeconfig (`isClientConfigStillValid`): a token, or a client
    /// certificate whose chain parses, is unexpired, and has a key.
    pub(crate) fn still_valid(&self) -> Result<(), String> {
        match &self.credential {
            Credential::Token(_) => Ok(()),
            Credential::Certificate { certificate, key } => certs::check_pair(certificate, key),
        }
    }

    /// A client for this connection; `identity` names it in errors.
    pub(crate) async fn client(&self) -> Result<kube::Client, String> {
        let (user, credential_fields) = match &self.credential {
            Credential::Token(token) => ("token", serde_json::json!({ "token": token })),
            Credential::Certificate { certificate, key } => (
                "certificate",
                serde_json::json!({
                    "client-certificate-data": STANDARD.encode(certificate),
                    "client-key-data": STANDARD.encode(key),
                }),
            ),
        };
        let document = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{ "name": "c", "cluster": {
                "server": self.server,
                "certificate-authority-data": STANDARD.encode(&self.certificate_authority),
            }}],
            "users": [{ "name": user, "user": credential_fields }],
            "contexts": [{ "name": "c", "context": { "cluster": "c", "user": user } }],
            "current-context": "c",
        });
        let kubeconfig: Kubeconfig =
            serde_json::from_value(document).map_err(|error| format!("build kubeconfig: {error}"))?;
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|error| format!("client configuration: {error}"))?;
        kube::Client::try_from(config).map_err(|error| format!("client: {error}"))
    }
}

/// The kubeconfig the kubelet writes after bootstrapping (rotation on: before the certificate exists): cluster
/// `default-cluster` with the bootstrap server and CA (as a path if the bootstrap file used one), user
/// `default-auth` whose certificate and key are `client_pem` (a Windows path), context `default-context`.
pub(crate) fn render_node_kubeconfig(bootstrap: &Connection, client_pem: &str) -> Result<String, String> {
    let cluster = match &bootstrap.certificate_authority_path {
        Some(path) => serde_json::json!({ "server": bootstrap.server, "certificate-authority": path }),
        None => serde_json::json!({
            "server": bootstrap.server,
            "certificate-authority-data": STANDARD.encode(&bootstrap.certificate_authority),
        }),
    };
    let document = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": "default-cluster", "cluster": cluster }],
        "contexts": [{ "name": "default-context", "context": {
            "cluster": "default-cluster", "namespace": "default", "user": "default-auth",
        }}],
        "current-context": "default-context",
        "preferences": {},
        "users": [{ "name": "default-auth", "user": {
            "client-certificate": client_pem,
            "client-key": client_pem,
        }}],
    });
    serde_saphyr::to_string(&document).map_err(|error| format!("render kubeconfig: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Drive) {
        let root = tempfile::tempdir().unwrap();
        for (path, contents) in files {
            let file = root.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, contents).unwrap();
        }
        let drive = Drive::new(root.path());
        (root, drive)
    }

    const BOOTSTRAP: &str = r"apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: https://api.example:6443
    certificate-authority: C:\k\bootstrap-ca.crt
users:
- name: kubelet
  user:
    token: abc.def
contexts:
- name: kubelet-bootstrap
  context:
    cluster: cluster
    user: kubelet
current-context: kubelet-bootstrap
";

    #[test]
    fn a_bootstrap_kubeconfig_with_a_windows_ca_path_resolves() {
        let (_root, drive) = drive_with(&[("k/bootstrap-kubeconfig", BOOTSTRAP), ("k/bootstrap-ca.crt", "CA")]);
        let connection = load(&drive, r"C:\k\bootstrap-kubeconfig").unwrap();
        assert_eq!(connection.server, "https://api.example:6443");
        assert_eq!(connection.certificate_authority, b"CA");
        assert_eq!(connection.certificate_authority_path.as_deref(), Some(r"C:\k\bootstrap-ca.crt"));
        assert!(matches!(&connection.credential, Credential::Token(token) if token == "abc.def"));
        assert_eq!(connection.still_valid(), Ok(()));
    }

    #[test]
    fn missing_files_and_contexts_are_named() {
        let (_root, drive) = drive_with(&[("k/bootstrap-kubeconfig", BOOTSTRAP)]);
        let problem = load(&drive, r"C:\k\bootstrap-kubeconfig").unwrap_err();
        assert!(problem.starts_with(r"C:\k\bootstrap-kubeconfig: certificate-authority: open C:\k\bootstrap-ca.crt"));
        let (_root, drive) = drive_with(&[("k/x", "apiVersion: v1\nkind: Config\ncurrent-context: nope\n")]);
        assert_eq!(load(&drive, r"C:\k\x").unwrap_err(), r#"C:\k\x: context "nope" not found"#);
        assert!(load(&drive, r"C:\k\absent").unwrap_err().starts_with(r"open C:\k\absent: "));
    }

    #[test]
    fn the_node_kubeconfig_points_at_the_current_client_pem_and_keeps_the_ca_path() {
        let (_root, drive) = drive_with(&[("k/bootstrap-kubeconfig", BOOTSTRAP), ("k/bootstrap-ca.crt", "CA")]);
        let bootstrap = load(&drive, r"C:\k\bootstrap-kubeconfig").unwrap();
        let text = render_node_kubeconfig(&bootstrap, r"C:\pki\kubelet-client-current.pem").unwrap();
        let parsed = Kubeconfig::from_yaml(&text).unwrap();
        assert_eq!(parsed.current_context.as_deref(), Some("default-context"));
        let cluster = parsed.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.certificate_authority.as_deref(), Some(r"C:\k\bootstrap-ca.crt"));
        let user = parsed.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(user.client_certificate.as_deref(), Some(r"C:\pki\kubelet-client-current.pem"));
        assert_eq!(user.client_key.as_deref(), Some(r"C:\pki\kubelet-client-current.pem"));
    }
}
