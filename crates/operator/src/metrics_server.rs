//! The operator's secure metrics endpoint: `/metrics` over HTTPS (the Deployment's port `https`), answered only to
//! clients the API server vouches for, as controller-runtime's secure metrics and kube-rbac-proxy do:
//!
//! - **TLS**: the serving certificate of Secret `windows-machine-config-operator-metrics-tls` mounted into the pod
//!   (OpenShift's service CA issues it for the metrics Service; [`CertificateSource::Files`], re-read when the
//!   files change, so a rotation needs no restart), or else a self-signed certificate made at start
//!   ([`CertificateSource::SelfSigned`]). Protocol versions and cipher suites follow the cluster's TLS security
//!   profile on OpenShift (`APIServer cluster`, [`TlsProfile::from_openshift`]); a change is applied to new
//!   connections without a restart.
//! - **Authentication**: the request's `Authorization: Bearer` token goes to a TokenReview; none or a refused one
//!   is `401 Unauthorized`.
//! - **Authorization**: the token's user must be allowed `get` on the non-resource URL `/metrics`
//!   (SubjectAccessReview), else `403 Forbidden`.
//!
//! Decisions are cached for [`DECISION_TTL`] per token (by its SHA-256; tokens are never kept or logged), so a
//! Prometheus scraping every 30 s costs the API server two reviews a minute at most.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, SupportedCipherSuite};
use sha2::{Digest as _, Sha256};
use tokio::net::TcpListener;
use tokio::sync::watch;
use wmco_cluster_client::AccessReviews;

use crate::connection_limits::{ConnectionGate, ConnectionLimits};
use crate::metrics::Metrics;

/// The content type of the OpenMetrics text exposition.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// How long an authentication and authorization decision is reused for the same token.
pub const DECISION_TTL: Duration = Duration::from_secs(60);
/// How many token decisions are kept at most (expired ones, then refusals of unknown tokens, are dropped first).
const DECISION_CACHE_SIZE: usize = 256;
/// How often the certificate files are checked for a change.
pub const CERTIFICATE_RECHECK: Duration = Duration::from_secs(30);

/// Why the metrics endpoint cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum MetricsServerError {
    /// The listen address could not be bound.
    #[error("cannot listen on {address} for /metrics over HTTPS")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A certificate or key file cannot be read or holds no usable PEM.
    #[error("cannot use {}: {reason}", path.display())]
    CertificateFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The self-signed certificate could not be made.
    #[error("cannot make a self-signed serving certificate: {0}")]
    SelfSigned(String),
    /// rustls refused the certificate, key or profile.
    #[error("cannot build the TLS configuration: {0}")]
    Tls(String),
}

/// Where the serving certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertificateSource {
    /// PEM files (a certificate chain, and its private key), as a mounted `kubernetes.io/tls` Secret holds them.
    Files {
        /// `tls.crt`.
        certificate: PathBuf,
        /// `tls.key`.
        key: PathBuf,
    },
    /// A certificate made at start for these DNS names and addresses (clients must skip verification or pin it).
    SelfSigned {
        /// The subject alternative names.
        names: Vec<String>,
    },
}

impl CertificateSource {
    /// The files when both exist, else a self-signed certificate for `names` (the mounted Secret is optional: it
    /// exists on OpenShift, where service-ca fills it).
    pub fn files_or_self_signed(certificate: Option<PathBuf>, key: Option<PathBuf>, names: Vec<String>) -> Self {
        match (certificate, key) {
            (Some(certificate), Some(key)) if certificate.is_file() && key.is_file() => {
                CertificateSource::Files { certificate, key }
            }
            _ => CertificateSource::SelfSigned { names },
        }
    }

    /// The modification times of the files (none for a self-signed certificate), to notice a rotation.
    fn stamp(&self) -> Option<(SystemTime, SystemTime)> {
        let CertificateSource::Files { certificate, key } = self else { return None };
        let modified = |path: &Path| std::fs::metadata(path).and_then(|metadata| metadata.modified()).ok();
        modified(certificate).zip(modified(key))
    }
}

/// A serving certificate chain and its key.
struct ServingCertificate {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl ServingCertificate {
    fn load(source: &CertificateSource) -> Result<ServingCertificate, MetricsServerError> {
        match source {
            CertificateSource::Files { certificate, key } => {
                let unusable = |path: &Path, reason: String| MetricsServerError::CertificateFile {
                    path: path.to_path_buf(),
                    reason,
                };
                let chain = CertificateDer::pem_file_iter(certificate)
                    .map_err(|error| unusable(certificate, error.to_string()))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|error| unusable(certificate, error.to_string()))?;
                if chain.is_empty() {
                    return Err(unusable(certificate, "no PEM certificate in it".to_owned()));
                }
                let key = PrivateKeyDer::from_pem_file(key).map_err(|error| unusable(key, error.to_string()))?;
                Ok(ServingCertificate { chain, key })
            }
            CertificateSource::SelfSigned { names } => {
                let made = rcgen::generate_simple_self_signed(names.clone())
                    .map_err(|error| MetricsServerError::SelfSigned(error.to_string()))?;
                let key = PrivateKeyDer::try_from(made.signing_key.serialize_der())
                    .map_err(|error| MetricsServerError::SelfSigned(error.to_string()))?;
                Ok(ServingCertificate { chain: vec![made.cert.der().clone()], key })
            }
        }
    }
}

/// The TLS versions and cipher suites the endpoint accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsProfile {
    /// The profile's name (`Intermediate`, `Modern`, `Old`, `Custom`), for logs.
    pub name: String,
    /// Whether TLS 1.2 is accepted (TLS 1.3 always is; rustls speaks nothing older than 1.2).
    pub tls12: bool,
    /// The TLS 1.2 cipher suites by IANA name; ignored without `tls12`.
    pub tls12_suites: Vec<String>,
}

/// The TLS 1.2 suites of OpenShift's Intermediate profile that rustls implements, by OpenSSL and IANA name.
const TLS12_SUITES: [(&str, &str); 6] = [
    ("ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-ECDSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-ECDSA-CHACHA20-POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    ("ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
];

impl TlsProfile {
    /// OpenShift's Intermediate profile, the default: TLS 1.2 with the ECDHE AEAD suites, and TLS 1.3.
    pub fn intermediate() -> TlsProfile {
        TlsProfile {
            name: "Intermediate".to_owned(),
            tls12: true,
            tls12_suites: TLS12_SUITES.iter().map(|(_, iana)| (*iana).to_owned()).collect(),
        }
    }

    /// The profile an `APIServer`'s `spec.tlsSecurityProfile` names (`None`: the default, Intermediate), and a
    /// sentence for each part rustls cannot honour (TLS older than 1.2, suites it does not implement).
    ///
    /// ```
    /// use wmco_operator::metrics_server::TlsProfile;
    /// let modern = serde_json::json!({"type": "Modern", "modern": {}});
    /// let (profile, notes) = TlsProfile::from_openshift(Some(&modern));
    /// assert!(!profile.tls12 && notes.is_empty());
    /// let custom = serde_json::json!({"type": "Custom", "custom": {"minTLSVersion": "VersionTLS12",
    ///     "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256", "AES128-SHA"]}});
    /// let (profile, notes) = TlsProfile::from_openshift(Some(&custom));
    /// assert_eq!(profile.tls12_suites, ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]);
    /// assert_eq!(notes.len(), 1);
    /// ```
    pub fn from_openshift(profile: Option<&serde_json::Value>) -> (TlsProfile, Vec<String>) {
        let Some(profile) = profile.filter(|profile| !profile.is_null()) else {
            return (TlsProfile::intermediate(), Vec::new());
        };
        let kind = profile["type"].as_str().unwrap_or("Intermediate");
        match kind {
            "Modern" => (TlsProfile { name: kind.to_owned(), tls12: false, tls12_suites: Vec::new() }, Vec::new()),
            "Old" => (
                TlsProfile { name: kind.to_owned(), ..TlsProfile::intermediate() },
                vec![
                    "TLS profile Old asks for TLS 1.0 and 1.1 and CBC suites; the metrics endpoint serves TLS 1.2 \
                      and 1.3 with AEAD suites only"
                        .to_owned(),
                ],
            ),
            "Custom" => Self::custom(&profile["custom"]),
            "Intermediate" => (TlsProfile::intermediate(), Vec::new()),
            other => (
                TlsProfile::intermediate(),
                vec![format!("unknown TLS profile type {other:?}: the metrics endpoint uses Intermediate")],
            ),
        }
    }

    fn custom(custom: &serde_json::Value) -> (TlsProfile, Vec<String>) {
        let mut notes = Vec::new();
        let min = custom["minTLSVersion"].as_str().unwrap_or("VersionTLS12");
        let tls12 = min != "VersionTLS13";
        if matches!(min, "VersionTLS10" | "VersionTLS11") {
            notes.push(format!("minTLSVersion {min}: the metrics endpoint serves TLS 1.2 and newer only"));
        }
        let mut suites = Vec::new();
        for cipher in custom["ciphers"].as_array().into_iter().flatten().filter_map(serde_json::Value::as_str) {
            match TLS12_SUITES.iter().find(|(openssl, iana)| *openssl == cipher || *iana == cipher) {
                Some((_, iana)) => suites.push((*iana).to_owned()),
                None if cipher.starts_with("TLS_AES_") || cipher.starts_with("TLS_CHACHA20_") => {}
                None => notes.push(format!("cipher {cipher} is not offered (rustls does not implement it)")),
            }
        }
        if tls12 && suites.is_empty() {
            notes.push("no usable TLS 1.2 cipher in the Custom profile: TLS 1.3 only".to_owned());
        }
        (TlsProfile { name: "Custom".to_owned(), tls12: tls12 && !suites.is_empty(), tls12_suites: suites }, notes)
    }

    /// The crypto provider restricted to this profile's suites.
    fn provider(&self) -> CryptoProvider {
        let base = rustls::crypto::ring::default_provider();
        let cipher_suites: Vec<SupportedCipherSuite> = base
            .cipher_suites
            .iter()
            .copied()
            .filter(|suite| match suite {
                SupportedCipherSuite::Tls13(_) => true,
                SupportedCipherSuite::Tls12(_) => {
                    self.tls12 && suite.suite().as_str().is_some_and(|name| self.tls12_suites.iter().any(|s| s == name))
                }
            })
            .collect();
        CryptoProvider { cipher_suites, ..base }
    }
}

/// Builds the rustls configuration of `certificate` under `profile` (HTTP/1.1 only).
fn server_config(
    certificate: ServingCertificate,
    profile: &TlsProfile,
) -> Result<Arc<ServerConfig>, MetricsServerError> {
    let versions: &[&rustls::SupportedProtocolVersion] =
        if profile.tls12 { &[&rustls::version::TLS13, &rustls::version::TLS12] } else { &[&rustls::version::TLS13] };
    let mut config = ServerConfig::builder_with_provider(Arc::new(profile.provider()))
        .with_protocol_versions(versions)
        .map_err(|error| MetricsServerError::Tls(error.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certificate.chain, certificate.key)
        .map_err(|error| MetricsServerError::Tls(error.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The endpoint's TLS configuration, rebuilt when the certificate files or the profile change; connections take
/// the current one when they start.
pub struct TlsState {
    source: CertificateSource,
    state: Mutex<(Option<(SystemTime, SystemTime)>, TlsProfile)>,
    sender: watch::Sender<Arc<ServerConfig>>,
}

impl TlsState {
    /// Loads the certificate of `source` under `profile`.
    ///
    /// # Errors
    /// [`MetricsServerError`] when the certificate or key is unusable.
    pub fn new(source: CertificateSource, profile: TlsProfile) -> Result<TlsState, MetricsServerError> {
        let stamp = source.stamp();
        let config = server_config(ServingCertificate::load(&source)?, &profile)?;
        let (sender, _) = watch::channel(config);
        Ok(TlsState { source, state: Mutex::new((stamp, profile)), sender })
    }

    /// The configuration new connections use.
    pub fn current(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.sender.borrow())
    }

    /// Where the certificate comes from.
    pub fn source(&self) -> &CertificateSource {
        &self.source
    }

    /// Applies `profile` (when it differs) and re-reads the certificate files (when they changed); a failure keeps
    /// the configuration in use and is returned.
    ///
    /// # Errors
    /// [`MetricsServerError`] when the new certificate or profile is unusable.
    pub fn refresh(&self, profile: Option<TlsProfile>) -> Result<bool, MetricsServerError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let stamp = self.source.stamp();
        let profile_changed = profile.as_ref().is_some_and(|profile| *profile != state.1);
        if stamp == state.0 && !profile_changed {
            return Ok(false);
        }
        let profile = profile.unwrap_or_else(|| state.1.clone());
        let config = server_config(ServingCertificate::load(&self.source)?, &profile)?;
        self.sender.send_replace(config);
        *state = (stamp, profile);
        Ok(true)
    }
}

/// What the endpoint answers a request's credentials with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The token's user may `get /metrics`.
    Allowed,
    /// No token, or one the API server does not accept: 401.
    Unauthenticated,
    /// A valid token whose user may not `get /metrics`: 403.
    Forbidden,
    /// The API server could not be asked: 503, not cached.
    Unavailable,
}

/// Decides requests by their bearer token through TokenReview and SubjectAccessReview, with a short cache.
pub struct MetricsGate {
    reviews: Arc<dyn AccessReviews>,
    cache: Mutex<HashMap<[u8; 32], (Instant, Decision)>>,
}

impl MetricsGate {
    /// A gate asking `reviews`.
    pub fn new(reviews: Arc<dyn AccessReviews>) -> Self {
        MetricsGate { reviews, cache: Mutex::default() }
    }

    /// The decision for a request's `Authorization` header.
    pub async fn decide(&self, authorization: Option<&str>) -> Decision {
        let Some(token) = authorization
            .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|token| !token.is_empty())
        else {
            return Decision::Unauthenticated;
        };
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((at, decision)) = self.cache.lock().unwrap_or_else(PoisonError::into_inner).get(&digest)
            && at.elapsed() < DECISION_TTL
        {
            return *decision;
        }
        let decision = match self.reviews.authenticate(token).await {
            Ok(None) => Decision::Unauthenticated,
            Ok(Some(user)) => match self.reviews.may_access(&user, "get", "/metrics").await {
                Ok(true) => Decision::Allowed,
                Ok(false) => {
                    tracing::info!(user = %user.username, "metrics request forbidden: no get on /metrics");
                    Decision::Forbidden
                }
                Err(error) => {
                    tracing::warn!(error = %error, "cannot authorize a metrics request");
                    Decision::Unavailable
                }
            },
            Err(error) => {
                tracing::warn!(error = %error, "cannot authenticate a metrics request");
                Decision::Unavailable
            }
        };
        if decision != Decision::Unavailable {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if cache.len() >= DECISION_CACHE_SIZE {
                make_room(&mut cache);
            }
            cache.insert(digest, (Instant::now(), decision));
        }
        decision
    }
}

/// Frees one place in a full decision cache: expired decisions go first, then the oldest refusal of an unknown
/// token, and only then the oldest decision about a real user, so a flood of made-up tokens cannot push out
/// Prometheus's decision (and cost a TokenReview per scrape).
fn make_room(cache: &mut HashMap<[u8; 32], (Instant, Decision)>) {
    cache.retain(|_, (at, _)| at.elapsed() < DECISION_TTL);
    if cache.len() < DECISION_CACHE_SIZE {
        return;
    }
    let oldest = |unknown_only: bool| {
        cache
            .iter()
            .filter(|(_, (_, decision))| !unknown_only || *decision == Decision::Unauthenticated)
            .min_by_key(|(_, (at, _))| *at)
            .map(|(digest, _)| *digest)
    };
    if let Some(digest) = oldest(true).or_else(|| oldest(false)) {
        cache.remove(&digest);
    }
}

/// Binds the listener of the metrics endpoint.
///
/// # Errors
/// [`MetricsServerError::Bind`] naming the address.
pub async fn bind(address: SocketAddr) -> Result<TcpListener, MetricsServerError> {
    TcpListener::bind(address).await.map_err(|source| MetricsServerError::Bind { address, source })
}

/// Serves `/metrics` over TLS on `listener` within `limits` until `shutdown` completes; connections that fail or
/// do not finish the handshake in time are dropped (logged at debug level).
pub async fn serve(
    listener: TcpListener,
    limits: ConnectionLimits,
    tls: Arc<TlsState>,
    gate: Arc<MetricsGate>,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()>,
) {
    let connections = ConnectionGate::new(limits);
    tokio::pin!(shutdown);
    loop {
        let (permit, accepted) = tokio::select! {
            () = &mut shutdown => return,
            admitted = connections.accept(&listener) => admitted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(error = %error, "the metrics endpoint could not accept a connection");
                drop(permit);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.current());
        let handshake_timeout = connections.handshake_timeout();
        let http = connections.http1();
        let gate = Arc::clone(&gate);
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
            let stream = match tokio::time::timeout(handshake_timeout, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(error)) => {
                    tracing::debug!(peer = %peer, error = %error, "metrics TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(peer = %peer, "metrics TLS handshake not finished in time");
                    return;
                }
            };
            let service = service_fn(move |request| {
                let gate = Arc::clone(&gate);
                let metrics = Arc::clone(&metrics);
                async move { Ok::<_, Infallible>(respond(&request, &gate, &metrics).await) }
            });
            if let Err(error) = http.serve_connection(TokioIo::new(stream), service).await {
                tracing::debug!(peer = %peer, error = %error, "metrics connection");
            }
            drop(permit);
        });
    }
}

/// Re-reads the certificate files every [`CERTIFICATE_RECHECK`] (and applies each profile `profiles` yields) until
/// the task is aborted.
pub async fn keep_fresh(tls: Arc<TlsState>, mut profiles: watch::Receiver<Option<TlsProfile>>) {
    loop {
        let profile = profiles.borrow_and_update().clone();
        match tls.refresh(profile) {
            Ok(true) => tracing::info!("metrics endpoint TLS configuration reloaded"),
            Ok(false) => {}
            Err(error) => tracing::warn!(error = %error, "keeping the metrics endpoint's TLS configuration"),
        }
        tokio::select! {
            () = tokio::time::sleep(CERTIFICATE_RECHECK) => {}
            changed = profiles.changed() => if changed.is_err() {
                tokio::time::sleep(CERTIFICATE_RECHECK).await;
            },
        }
    }
}

async fn respond(request: &Request<Incoming>, gate: &MetricsGate, metrics: &Metrics) -> Response<Full<Bytes>> {
    if request.uri().path() != "/metrics" {
        return text(StatusCode::NOT_FOUND, "not found\n");
    }
    if request.method() != Method::GET {
        return text(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
    }
    let authorization = request.headers().get(hyper::header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    match gate.decide(authorization).await {
        Decision::Allowed => match metrics.encode() {
            Ok(body) => {
                let mut response = Response::new(Full::new(Bytes::from(body)));
                response
                    .headers_mut()
                    .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(METRICS_CONTENT_TYPE));
                response
            }
            Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "metrics could not be encoded\n"),
        },
        Decision::Unauthenticated => {
            let mut response = text(StatusCode::UNAUTHORIZED, "Unauthorized: send a bearer token\n");
            response
                .headers_mut()
                .insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static("Bearer"));
            response
        }
        Decision::Forbidden => text(StatusCode::FORBIDDEN, "Forbidden: get on /metrics is not allowed\n"),
        Decision::Unavailable => text(StatusCode::SERVICE_UNAVAILABLE, "cannot review the token now\n"),
    }
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

#[cfg(test)]
mod tests;
