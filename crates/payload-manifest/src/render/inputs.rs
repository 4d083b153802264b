//! The typed inputs of the renderers: what the operator reads from the cluster ([`ClusterInputs`]) and from one
//! host ([`HostInputs`]). Secrets (the bootstrap token, pull-secret credentials) are wrapped so `Debug` never prints
//! them.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use wmco_vocabulary::{IpCidr, MirrorKind};
use wmco_windows_services::Thumbprint;

use crate::Platform;

/// Everything about the cluster the rendered files depend on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInputs {
    /// The API server URL the kubelet bootstraps against (OpenShift: `Infrastructure.status.apiServerInternalURI`, Go field `APIServerInternalURL`).
    pub api_server_url: String,
    /// CA bundle that verifies the API server's serving certificate (installed as `C:\k\bootstrap-ca.crt`).
    pub api_server_ca: PemBundle,
    /// CA bundle of the clients the kubelet accepts, i.e. the API server's kubelet-client CA (installed as
    /// `C:\k\kubelet-ca.crt`).
    pub kubelet_client_ca: PemBundle,
    /// The short-lived token of ServiceAccount `node-bootstrapper` for the bootstrap kubeconfig.
    pub bootstrap_token: SecretToken,
    /// The cluster's service network (IPv4: Windows nodes are IPv4 only).
    pub service_cidr: IpCidr,
    /// The cluster DNS service address (by convention the 10th address of the service network).
    pub cluster_dns: Ipv4Addr,
    /// The cluster's DNS domain, normally `cluster.local`.
    pub cluster_domain: String,
    /// The infrastructure platform.
    pub platform: Platform,
    /// The cluster-wide egress proxy, when one is configured.
    pub proxy: Option<Proxy>,
    /// Log rotation of the kubelet and kube-proxy logs.
    pub log_rotation: LogRotation,
    /// Registry mirror rules from every ImageDigestMirrorSet and ImageTagMirrorSet.
    pub image_mirrors: Vec<ImageMirrorRule>,
    /// The cluster's global pull secret, when there is one.
    pub pull_secret: Option<PullSecret>,
    /// Additional trusted CAs for image registries (OpenShift `image.config` `additionalTrustedCA`), by registry.
    pub registry_cas: Vec<RegistryCa>,
    /// The cloud provider configuration the Linux workers' kubelet reads (`--cloud-config`), copied to
    /// `C:\k\cloud.conf`; `None` when their kubelet names none.
    pub cloud_config: Option<String>,
}

/// Everything about one host the rendered files depend on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostInputs {
    /// The Node name the operator decided for this host (the kubelet's `--hostname-override`).
    pub node_name: String,
    /// The IPv4 address of the host's default-route interface (the kubelet's `--node-ip`).
    pub node_ip: Ipv4Addr,
    /// The overlay network facts, known once the Node exists and hybrid-overlay-node created its HNS network
    /// (configuration phase 2); `None` before. The CNI and kube-proxy configurations need them.
    pub overlay: Option<OverlayNetwork>,
}

/// The hybrid-overlay network of one node, from the Node's subnet annotation and the host's identity.
///
/// **Source VIP.** The Go operator asks HNS for a `VIPEndpoint` on the overlay network and gives kube-proxy its
/// address. Creating HNS endpoints is outside the PowerShell subset the product emits, so the address is decided
/// here instead: the subnet's second host address ([`OverlayNetwork::SOURCE_VIP_INDEX`], `.2` of a `/24`; `.1` is
/// the hybrid overlay's gateway), and the CNI configuration's host-local IPAM starts at the address after it
/// ([`OverlayNetwork::first_pod_address`], `rangeStart`), so no pod is ever given the VIP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlayNetwork {
    /// The node's pod subnet (IPv4): annotation `k8s.ovn.org/hybrid-overlay-node-subnet`.
    pub node_subnet: IpCidr,
    /// The overlay's provider address (the CNI `ProviderAddress` policy): the host's node IP.
    pub management_ip: Ipv4Addr,
    /// The source VIP kube-proxy uses for DSR: the subnet's address [`OverlayNetwork::SOURCE_VIP_INDEX`].
    pub source_vip: Ipv4Addr,
}

/// The node subnet cannot hold the gateway, the source VIP and pods.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the hybrid-overlay node subnet {subnet} is too small: it needs at least 8 addresses (a /29) for the gateway, \
     the source VIP and pods"
)]
pub struct OverlayNetworkError {
    /// The subnet refused.
    pub subnet: IpCidr,
}

impl OverlayNetwork {
    /// The index of the source VIP in the node subnet (the network address is index 0, the gateway index 1).
    pub const SOURCE_VIP_INDEX: u32 = 2;

    /// The overlay of a node whose subnet is `node_subnet` and whose provider address is `management_ip`; the
    /// source VIP is the subnet's address [`Self::SOURCE_VIP_INDEX`].
    ///
    /// ```
    /// use wmco_payload_manifest::render::OverlayNetwork;
    ///
    /// let overlay = OverlayNetwork::for_node_subnet("10.132.1.0/24".parse().unwrap(), "203.0.113.10".parse().unwrap())
    ///     .unwrap();
    /// assert_eq!(overlay.source_vip.to_string(), "10.132.1.2");
    /// assert_eq!(overlay.first_pod_address().to_string(), "10.132.1.3");
    /// assert!(OverlayNetwork::for_node_subnet("10.132.1.0/30".parse().unwrap(), overlay.management_ip).is_err());
    /// ```
    ///
    /// # Errors
    /// [`OverlayNetworkError`] when the subnet is smaller than a `/29` (or not IPv4, which callers refuse first with
    /// [`IpCidr::parse_ipv4`]).
    pub fn for_node_subnet(node_subnet: IpCidr, management_ip: Ipv4Addr) -> Result<Self, OverlayNetworkError> {
        let source_vip = match node_subnet.nth_address(Self::SOURCE_VIP_INDEX) {
            Some(address) if node_subnet.prefix_length() <= 29 => address,
            _ => return Err(OverlayNetworkError { subnet: node_subnet }),
        };
        Ok(Self { node_subnet, management_ip, source_vip })
    }

    /// The first address host-local IPAM hands to pods: the one after the source VIP.
    pub fn first_pod_address(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.source_vip).wrapping_add(1))
    }
}

/// The cluster's egress proxy.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Proxy {
    /// `HTTP_PROXY`.
    pub http_proxy: Option<String>,
    /// `HTTPS_PROXY`.
    pub https_proxy: Option<String>,
    /// `NO_PROXY`.
    pub no_proxy: Option<String>,
    /// The proxy's trusted CA bundle (OpenShift ConfigMap `trusted-ca`, key `ca-bundle.crt`), appended to the
    /// host's CA bundle.
    pub trusted_ca: Option<PemBundle>,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Proxy URLs may carry user:password; print only which variables are set.
        f.debug_struct("Proxy")
            .field("http_proxy", &self.http_proxy.as_ref().map(|_| "<set>"))
            .field("https_proxy", &self.https_proxy.as_ref().map(|_| "<set>"))
            .field("no_proxy", &self.no_proxy)
            .field("trusted_ca", &self.trusted_ca)
            .finish()
    }
}

/// Log rotation of the services run under `kube-log-runner` (kubelet, kube-proxy); the operator's
/// `SERVICES_LOG_FILE_SIZE`, `SERVICES_LOG_FILE_AGE` and `SERVICES_LOG_FLUSH_INTERVAL`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogRotation {
    /// Rotate when a log file reaches this size (a Kubernetes quantity, e.g. `100M`).
    pub file_size: Option<String>,
    /// Delete rotated files older than this (a Go duration, e.g. `168h`).
    pub file_age: Option<String>,
    /// How often buffered log lines are flushed (a Go duration); the kubelet's `logging.flushFrequency`, default
    /// `5s`.
    pub flush_interval: Option<String>,
}

impl LogRotation {
    /// The `kube-log-runner` flags for a service logging to `log_file`, in the order the runner documents them.
    ///
    /// ```
    /// use wmco_payload_manifest::render::LogRotation;
    ///
    /// let rotation = LogRotation { file_size: Some("100M".into()), ..LogRotation::default() };
    /// assert_eq!(rotation.kube_log_runner_flags(r"C:\var\log\kubelet\kubelet.log"),
    ///            vec![r"-log-file=C:\var\log\kubelet\kubelet.log".to_string(), "-log-file-size=100M".to_string()]);
    /// ```
    pub fn kube_log_runner_flags(&self, log_file: &str) -> Vec<String> {
        let mut flags = vec![format!("-log-file={log_file}")];
        flags.extend(self.file_size.as_ref().map(|size| format!("-log-file-size={size}")));
        flags.extend(self.file_age.as_ref().map(|age| format!("-log-file-age={age}")));
        flags.extend(self.flush_interval.as_ref().map(|interval| format!("-flush-interval={interval}")));
        flags
    }
}

/// Whether the source registry may still be contacted when the mirrors fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Hash)]
pub enum MirrorSourcePolicy {
    /// Fall back to the source (the default).
    #[default]
    AllowContactingSource,
    /// Never contact the source.
    NeverContactSource,
}

/// One `imageDigestMirrors` / `imageTagMirrors` entry: a source repository and its mirrors, in priority order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Hash)]
pub struct ImageMirrorRule {
    /// The source, `host[:port][/path]`, e.g. `quay.io/openshift-release-dev/ocp-release`.
    pub source: String,
    /// The mirrors, `host[:port][/path]`, first preferred.
    pub mirrors: Vec<String>,
    /// Digest (IDMS) or tag (ITMS) mirroring.
    pub kind: MirrorKind,
    /// The source policy.
    #[serde(default)]
    pub source_policy: MirrorSourcePolicy,
}

/// A registry's additional trusted CA bundle.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegistryCa {
    /// The registry, `host[:port]` (OpenShift's ConfigMap key with `..` standing for `:`, already converted).
    pub registry: String,
    /// Its CA certificates.
    pub bundle: PemBundle,
}

/// One or more PEM-encoded certificates.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PemBundle(String);

/// The text holds no PEM certificate, or a certificate block is damaged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the text holds no PEM certificate (`-----BEGIN CERTIFICATE-----` … `-----END CERTIFICATE-----`), or a \
     certificate block is not complete base64"
)]
pub struct PemBundleError;

impl PemBundle {
    /// The bundle's text, ending with a newline.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// How many certificates the bundle holds.
    pub fn certificate_count(&self) -> usize {
        self.0.matches("-----BEGIN CERTIFICATE-----").count()
    }

    /// Each certificate of the bundle once (the first occurrence), in bundle order, with its thumbprint.
    ///
    /// ```
    /// use wmco_payload_manifest::render::PemBundle;
    /// let one = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    /// let bundle: PemBundle = format!("{one}# again\n{one}").parse().unwrap();
    /// let certificates = bundle.certificates();
    /// assert_eq!(certificates.len(), 1);
    /// assert_eq!(certificates[0].pem, one);
    /// assert_eq!(certificates[0].thumbprint.as_str().len(), 40);
    /// ```
    pub fn certificates(&self) -> Vec<BundleCertificate> {
        let mut seen = std::collections::BTreeSet::new();
        // The text was checked at parse time; a failure here would mean no certificates, never a panic.
        pem::parse_many(&self.0)
            .unwrap_or_default()
            .into_iter()
            .filter(|block| block.tag() == CERTIFICATE_TAG)
            .filter_map(|block| {
                let digest = <sha1::Sha1 as sha1::Digest>::digest(block.contents());
                let thumbprint = Thumbprint::new(&hex::encode(digest)).ok()?;
                seen.insert(thumbprint.clone()).then(|| BundleCertificate {
                    thumbprint,
                    pem: pem::encode_config(&block, pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF)),
                })
            })
            .collect()
    }
}

/// The PEM label of a certificate.
const CERTIFICATE_TAG: &str = "CERTIFICATE";

/// One certificate of a [`PemBundle`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleCertificate {
    /// Its thumbprint (SHA-1 of the DER), as Windows names it in `Cert:\`.
    pub thumbprint: Thumbprint,
    /// The certificate alone, PEM-encoded.
    pub pem: String,
}

impl FromStr for PemBundle {
    type Err = PemBundleError;

    /// Accepts text holding at least one complete certificate block; normalizes CRLF to LF and ends the text with
    /// exactly one newline.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let normalized = text.replace("\r\n", "\n");
        let trimmed = normalized.trim();
        let begins = trimmed.matches("-----BEGIN CERTIFICATE-----").count();
        let ends = trimmed.matches("-----END CERTIFICATE-----").count();
        if begins == 0 || begins != ends {
            return Err(PemBundleError);
        }
        let blocks = pem::parse_many(trimmed).map_err(|_| PemBundleError)?;
        if blocks.iter().filter(|block| block.tag() == CERTIFICATE_TAG).count() != begins {
            return Err(PemBundleError);
        }
        Ok(Self(format!("{trimmed}\n")))
    }
}

impl fmt::Debug for PemBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PemBundle({} certificate(s))", self.certificate_count())
    }
}

/// A bearer token. `Debug` and `Display` print `<redacted>`; [`SecretToken::expose`] is the only way to read it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SecretToken(String);

impl SecretToken {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token itself, for writing it into the file that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretToken(<redacted>)")
    }
}

/// The cluster's pull secret: registry (`host[:port][/path]`) → base64 `user:password`, as in a
/// `.dockerconfigjson`'s `auths`. `Debug` prints the registries only.
#[derive(Clone, PartialEq, Eq, Default, Hash)]
pub struct PullSecret {
    auths: Vec<(String, SecretToken)>,
}

/// The pull secret is not a `.dockerconfigjson` document.
#[derive(Debug, thiserror::Error)]
#[error("the pull secret is not a .dockerconfigjson document with an `auths` object")]
pub struct PullSecretError(#[source] serde_json::Error);

impl PullSecret {
    /// Parses a `.dockerconfigjson` document: `{"auths": {"<registry>": {"auth": "<base64 user:password>"}}}`.
    /// Entries without `auth` are skipped; `https://` prefixes and trailing `/` are removed from the keys.
    ///
    /// ```
    /// use wmco_payload_manifest::render::PullSecret;
    ///
    /// let secret = PullSecret::from_docker_config_json(br#"{"auths":{"https://mirror.example.com/":{"auth":"dTpw"}}}"#).unwrap();
    /// assert_eq!(secret.auth_for("mirror.example.com/ocp").map(|auth| auth.expose()), Some("dTpw"));
    /// assert_eq!(format!("{secret:?}"), r#"PullSecret { registries: ["mirror.example.com"] }"#);
    /// ```
    pub fn from_docker_config_json(bytes: &[u8]) -> Result<Self, PullSecretError> {
        #[derive(Deserialize)]
        struct DockerConfig {
            auths: std::collections::BTreeMap<String, DockerAuth>,
        }
        #[derive(Deserialize)]
        struct DockerAuth {
            auth: Option<String>,
        }
        let config: DockerConfig = serde_json::from_slice(bytes).map_err(PullSecretError)?;
        let auths = config
            .auths
            .into_iter()
            .filter_map(|(registry, entry)| {
                let registry = registry.strip_prefix("https://").unwrap_or(&registry).trim_end_matches('/').to_owned();
                entry.auth.map(|auth| (registry, SecretToken::new(auth)))
            })
            .collect();
        Ok(Self { auths })
    }

    /// The credentials for `location` (`host[:port][/path]`): the entry whose registry is the longest prefix of it
    /// on a `/` boundary.
    pub fn auth_for(&self, location: &str) -> Option<&SecretToken> {
        self.auths
            .iter()
            .filter(|(registry, _)| {
                location == registry
                    || location.strip_prefix(registry.as_str()).is_some_and(|rest| rest.starts_with('/'))
            })
            .max_by_key(|(registry, _)| registry.len())
            .map(|(_, auth)| auth)
    }
}

impl fmt::Debug for PullSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let registries: Vec<&str> = self.auths.iter().map(|(registry, _)| registry.as_str()).collect();
        f.debug_struct("PullSecret").field("registries", &registries).finish()
    }
}

#[cfg(test)]
mod tests {
    use wmco_vocabulary::CidrError;

    use super::*;

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";

    #[test]
    fn cidr_parses_and_finds_nth_addresses() {
        let cidr: IpCidr = "10.128.2.0/24".parse().unwrap();
        assert_eq!(cidr.to_string(), "10.128.2.0/24");
        assert_eq!(cidr.nth_address(255), Some(Ipv4Addr::new(10, 128, 2, 255)));
        assert_eq!(cidr.nth_address(256), None);
        let host_bits_set: IpCidr = "10.128.2.7/24".parse().unwrap();
        assert_eq!(host_bits_set.nth_address(1), Some(Ipv4Addr::new(10, 128, 2, 1)));
        assert_eq!("0.0.0.0/0".parse::<IpCidr>().unwrap().nth_address(10), Some(Ipv4Addr::new(0, 0, 0, 10)));
        for bad in ["10.0.0.0", "10.0.0.0/33", "10.0.0/8", "10.0.0.0/+8", "10.0.0.0/"] {
            assert_eq!(IpCidr::parse_ipv4(bad), Err(CidrError::NotIpv4 { text: bad.to_owned() }));
        }
    }

    #[test]
    fn pem_bundle_normalizes_and_rejects_non_certificates() {
        let bundle: PemBundle = format!("\r\n{CERT}\r\n{CERT}\r\n\r\n").parse().unwrap();
        assert_eq!(bundle.as_str(), format!("{CERT}\n{CERT}\n"));
        assert_eq!(format!("{bundle:?}"), "PemBundle(2 certificate(s))");
        assert_eq!("hello".parse::<PemBundle>(), Err(PemBundleError));
        assert_eq!("-----BEGIN CERTIFICATE-----\nMIIB".parse::<PemBundle>(), Err(PemBundleError));
    }

    #[test]
    fn secrets_never_appear_in_debug_output() {
        let token = SecretToken::new("eyJhbGciOiJSUzI1NiJ9.secret-part");
        assert_eq!(format!("{token:?}"), "SecretToken(<redacted>)");
        let secret = PullSecret::from_docker_config_json(br#"{"auths":{"quay.io":{"auth":"c2VjcmV0OnB3"}}}"#).unwrap();
        assert!(!format!("{secret:?}").contains("c2VjcmV0OnB3"));
        let proxy = Proxy {
            http_proxy: Some("http://user:pw@proxy:3128".into()),
            https_proxy: None,
            no_proxy: Some(".cluster.local".into()),
            trusted_ca: None,
        };
        let debug = format!("{proxy:?}");
        assert!(!debug.contains("pw@"), "{debug}");
        assert!(debug.contains("<set>"), "{debug}");
    }

    #[test]
    fn pull_secret_picks_the_longest_matching_registry_on_a_path_boundary() {
        let secret = PullSecret::from_docker_config_json(
            br#"{"auths":{"mirror.io":{"auth":"aG9zdA=="},"mirror.io/team":{"auth":"dGVhbQ=="},"other.io":{}}}"#,
        )
        .unwrap();
        assert_eq!(secret.auth_for("mirror.io/team/app").map(SecretToken::expose), Some("dGVhbQ=="));
        assert_eq!(secret.auth_for("mirror.io/teamwork").map(SecretToken::expose), Some("aG9zdA=="));
        assert_eq!(secret.auth_for("mirror.iox/app"), None);
        assert_eq!(secret.auth_for("other.io"), None);
        assert!(PullSecret::from_docker_config_json(b"[]").is_err());
    }

    #[test]
    fn log_rotation_flags_include_only_what_is_set() {
        let rotation = LogRotation {
            file_size: Some("100M".into()),
            file_age: Some("168h".into()),
            flush_interval: Some("5s".into()),
        };
        assert_eq!(
            rotation.kube_log_runner_flags("C:\\var\\log\\kube-proxy\\kube-proxy.log"),
            vec![
                "-log-file=C:\\var\\log\\kube-proxy\\kube-proxy.log".to_owned(),
                "-log-file-size=100M".to_owned(),
                "-log-file-age=168h".to_owned(),
                "-flush-interval=5s".to_owned(),
            ]
        );
    }
}
