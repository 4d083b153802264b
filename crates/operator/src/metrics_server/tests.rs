//! The metrics endpoint over real TLS connections on loopback, against a fake TokenReview and SubjectAccessReview.

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use http_body_util::{BodyExt as _, Empty};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use wmco_cluster_client::ReviewedUser;

use super::*;

/// Tokens and what the API server would say about them.
#[derive(Default)]
struct FakeReviews {
    /// token → user name.
    users: HashMap<String, String>,
    /// Users allowed `get /metrics`.
    allowed: Vec<String>,
    /// Whether the API server is unreachable.
    down: bool,
    calls: AtomicUsize,
}

#[async_trait]
impl AccessReviews for FakeReviews {
    async fn authenticate(&self, token: &str) -> wmco_cluster_client::Result<Option<ReviewedUser>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.down {
            return Err(wmco_cluster_client::Error::MissingField {
                verb: wmco_cluster_client::Verb::Create,
                kind: "TokenReview",
                name: "<bearer token>".into(),
                field: "status",
            });
        }
        Ok(self.users.get(token).map(|username| ReviewedUser { username: username.clone(), ..ReviewedUser::default() }))
    }

    async fn may_access(&self, user: &ReviewedUser, verb: &str, path: &str) -> wmco_cluster_client::Result<bool> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(verb == "get" && path == "/metrics" && self.allowed.contains(&user.username))
    }
}

fn reviews() -> Arc<FakeReviews> {
    Arc::new(FakeReviews {
        users: HashMap::from([
            ("prometheus-token".to_owned(), "system:serviceaccount:openshift-monitoring:prometheus-k8s".to_owned()),
            ("nobody-token".to_owned(), "system:serviceaccount:default:nobody".to_owned()),
        ]),
        allowed: vec!["system:serviceaccount:openshift-monitoring:prometheus-k8s".to_owned()],
        ..FakeReviews::default()
    })
}

#[tokio::test]
async fn the_gate_asks_for_a_token_refuses_strangers_and_users_without_the_permission_and_caches_its_answers() {
    let fake = reviews();
    let gate = MetricsGate::new(fake.clone());
    assert_eq!(gate.decide(None).await, Decision::Unauthenticated);
    assert_eq!(gate.decide(Some("Basic dXNlcjpwYXNz")).await, Decision::Unauthenticated);
    assert_eq!(gate.decide(Some("Bearer forged")).await, Decision::Unauthenticated);
    assert_eq!(gate.decide(Some("Bearer nobody-token")).await, Decision::Forbidden);
    assert_eq!(gate.decide(Some("Bearer prometheus-token")).await, Decision::Allowed);
    let calls = fake.calls.load(Ordering::SeqCst);
    assert_eq!(gate.decide(Some("Bearer prometheus-token")).await, Decision::Allowed);
    assert_eq!(gate.decide(Some("Bearer nobody-token")).await, Decision::Forbidden);
    assert_eq!(fake.calls.load(Ordering::SeqCst), calls, "answered from the cache");

    let down = Arc::new(FakeReviews { down: true, ..FakeReviews::default() });
    let gate = MetricsGate::new(down.clone());
    assert_eq!(gate.decide(Some("Bearer prometheus-token")).await, Decision::Unavailable);
    assert_eq!(gate.decide(Some("Bearer prometheus-token")).await, Decision::Unavailable);
    assert_eq!(down.calls.load(Ordering::SeqCst), 2, "an unavailable API server is asked again");
}

#[tokio::test]
async fn a_flood_of_made_up_tokens_does_not_push_prometheus_out_of_the_cache() {
    let fake = reviews();
    let gate = MetricsGate::new(fake.clone());
    assert_eq!(gate.decide(Some("Bearer prometheus-token")).await, Decision::Allowed);
    for forged in 0..DECISION_CACHE_SIZE * 2 {
        assert_eq!(gate.decide(Some(&format!("Bearer forged-{forged}"))).await, Decision::Unauthenticated);
    }
    let calls = fake.calls.load(Ordering::SeqCst);
    assert_eq!(gate.decide(Some("Bearer prometheus-token")).await, Decision::Allowed);
    assert_eq!(fake.calls.load(Ordering::SeqCst), calls, "Prometheus's decision was evicted and reviewed again");
    assert!(gate.cache.lock().unwrap().len() <= DECISION_CACHE_SIZE);
}

#[test]
fn openshift_profiles_map_to_what_rustls_can_honour() {
    let (default, notes) = TlsProfile::from_openshift(None);
    assert_eq!(
        (default.name.as_str(), default.tls12, default.tls12_suites.len(), notes.len()),
        ("Intermediate", true, 6, 0)
    );
    let (modern, _) = TlsProfile::from_openshift(Some(&serde_json::json!({"type": "Modern", "modern": {}})));
    assert!(!modern.tls12);
    let (old, notes) = TlsProfile::from_openshift(Some(&serde_json::json!({"type": "Old", "old": {}})));
    assert!(old.tls12 && notes[0].contains("TLS 1.2 and 1.3"), "{notes:?}");
    let custom = serde_json::json!({"type": "Custom", "custom": {"minTLSVersion": "VersionTLS13", "ciphers": []}});
    assert!(!TlsProfile::from_openshift(Some(&custom)).0.tls12);
    let unusable =
        serde_json::json!({"type": "Custom", "custom": {"minTLSVersion": "VersionTLS12", "ciphers": ["AES128-SHA"]}});
    let (profile, notes) = TlsProfile::from_openshift(Some(&unusable));
    assert!(!profile.tls12, "no usable TLS 1.2 suite: TLS 1.3 only");
    assert_eq!(notes.len(), 2, "{notes:?}");
}

/// A CA and a serving certificate for `localhost` it signed, written as `tls.crt` / `tls.key` under `dir`.
fn write_serving_pair(dir: &Path, serial: u8) -> (CertificateDer<'static>, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, format!("test CA {serial}"));
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let certificate = params.signed_by(&key, &issuer).unwrap();
    let (cert_path, key_path) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert_path, certificate.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (ca.der().clone(), cert_path, key_path)
}

/// One GET of `/metrics` over TLS trusting `ca` (TLS 1.2 only with `tls12_only`): status and body, or the
/// handshake error.
async fn get(
    address: SocketAddr,
    ca: &CertificateDer<'static>,
    token: Option<&str>,
    tls12_only: bool,
) -> Result<(StatusCode, String, Option<String>), String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] =
        if tls12_only { &[&rustls::version::TLS12] } else { &[&rustls::version::TLS13, &rustls::version::TLS12] };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let tls =
        connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await.map_err(|error| error.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
    tokio::spawn(connection);
    let mut request = Request::get("/metrics").header("host", "localhost");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = sender.send_request(request.body(Empty::<Bytes>::new()).unwrap()).await.unwrap();
    let status = response.status();
    let challenge = response.headers().get("www-authenticate").map(|value| value.to_str().unwrap().to_owned());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned(), challenge))
}

/// A serving pair written to `dir`, the TLS state serving it under the Intermediate profile, and a bound listener:
/// the CA, the state, the listener and its address.
async fn tls_listener(dir: &Path) -> (CertificateDer<'static>, Arc<TlsState>, TcpListener, SocketAddr) {
    let (ca, certificate, key) = write_serving_pair(dir, 1);
    let tls =
        Arc::new(TlsState::new(CertificateSource::Files { certificate, key }, TlsProfile::intermediate()).unwrap());
    let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let address = listener.local_addr().unwrap();
    (ca, tls, listener, address)
}

#[tokio::test]
async fn over_tls_no_token_is_401_a_token_without_the_permission_403_and_prometheus_gets_the_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, tls, listener, address) = tls_listener(dir.path()).await;
    let metrics = Arc::new(Metrics::new());
    metrics.set_build_info("0.1.0", "abc");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(
        listener,
        ConnectionLimits::default(),
        Arc::clone(&tls),
        Arc::new(MetricsGate::new(reviews())),
        metrics,
        async {
            let _ = stopped.await;
        },
    ));

    let (status, _, challenge) = get(address, &ca, None, false).await.unwrap();
    assert_eq!((status, challenge.as_deref()), (StatusCode::UNAUTHORIZED, Some("Bearer")));
    assert_eq!(get(address, &ca, Some("nobody-token"), false).await.unwrap().0, StatusCode::FORBIDDEN);
    let (status, body, _) = get(address, &ca, Some("prometheus-token"), false).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("wmco_build_info{version=\"0.1.0\",revision=\"abc\"} 1"), "{body}");
    assert!(body.contains("process_resident_memory_bytes "), "{body}");

    // The Modern profile refuses TLS 1.2 from then on, without a restart.
    assert!(get(address, &ca, Some("prometheus-token"), true).await.is_ok(), "Intermediate accepts TLS 1.2");
    let (modern, _) = TlsProfile::from_openshift(Some(&serde_json::json!({"type": "Modern", "modern": {}})));
    assert!(tls.refresh(Some(modern)).unwrap());
    assert!(get(address, &ca, Some("prometheus-token"), true).await.is_err(), "Modern refuses TLS 1.2");
    assert_eq!(get(address, &ca, Some("prometheus-token"), false).await.unwrap().0, StatusCode::OK);

    // A rotated certificate (service-ca renews it) is picked up by new connections.
    std::thread::sleep(Duration::from_millis(20));
    let (new_ca, _, _) = write_serving_pair(dir.path(), 2);
    assert!(tls.refresh(None).unwrap());
    assert!(get(address, &ca, Some("prometheus-token"), false).await.is_err(), "the old CA no longer verifies");
    assert_eq!(get(address, &new_ca, Some("prometheus-token"), false).await.unwrap().0, StatusCode::OK);
    assert!(!tls.refresh(None).unwrap(), "unchanged files are not reloaded");

    let _ = stop.send(());
    server.await.unwrap();
}

/// Whether the server closed `stream` within an hour (of tokio's clock, paused in these tests).
async fn closed_within_an_hour<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> bool {
    let mut buffer = [0_u8; 512];
    loop {
        match tokio::time::timeout(Duration::from_secs(3600), stream.read(&mut buffer)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test(start_paused = true)]
async fn clients_that_stall_the_handshake_or_the_request_head_are_disconnected() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, tls, listener, address) = tls_listener(dir.path()).await;
    let gate = Arc::new(MetricsGate::new(reviews()));
    let metrics = Arc::new(Metrics::new());
    tokio::spawn(serve(listener, ConnectionLimits::default(), tls, gate, metrics, std::future::pending()));

    let mut no_hello = tokio::net::TcpStream::connect(address).await.unwrap();
    assert!(closed_within_an_hour(&mut no_hello).await, "a client that never sent a ClientHello held its connection");

    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut slow = connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await.unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\n").await.unwrap();
    slow.flush().await.unwrap();
    assert!(closed_within_an_hour(&mut slow).await, "a client without a full request head held its connection");

    assert_eq!(get(address, &ca, Some("prometheus-token"), false).await.unwrap().0, StatusCode::OK);
}

#[test]
fn without_the_mounted_secret_the_endpoint_makes_its_own_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("tls.crt");
    let source = CertificateSource::files_or_self_signed(
        Some(missing.clone()),
        Some(dir.path().join("tls.key")),
        vec!["windows-machine-config-operator-metrics.ns.svc".to_owned()],
    );
    assert!(matches!(source, CertificateSource::SelfSigned { .. }), "{source:?}");
    assert!(TlsState::new(source, TlsProfile::intermediate()).is_ok());
    std::fs::write(&missing, "not a certificate").unwrap();
    std::fs::write(dir.path().join("tls.key"), "not a key").unwrap();
    let files = CertificateSource::files_or_self_signed(Some(missing), Some(dir.path().join("tls.key")), Vec::new());
    let error = TlsState::new(files, TlsProfile::intermediate()).err().unwrap();
    assert!(error.to_string().contains("tls.crt"), "{error}");
}
