//! The operator's plain HTTP listener for the kubelet's probes (the Deployment's port `http`): `/healthz` answers
//! 200 while the process is alive, `/readyz` answers 200 once [`Readiness::set_ready`] was called (leader election
//! settled, controllers started or standing by) and 503 before, or 503 with the reason while the cluster does not
//! let Windows nodes join ([`Readiness::set_refusal`]). Any other path is 404: `/metrics` is served only
//! over HTTPS to authorized clients ([`crate::metrics_server`]). Connections are bounded by
//! [`ConnectionLimits`]: slow or silent clients are disconnected and cannot crowd out the probes.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::connection_limits::{ConnectionGate, ConnectionLimits};

/// Errors of the health server.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// The listen address could not be bound.
    #[error("cannot listen on {address} for /healthz and /readyz")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Accepting a connection failed.
    #[error("the health server stopped accepting connections")]
    Accept(#[source] std::io::Error),
}

/// Whether the operator is ready: false until startup settles, then true unless the cluster refuses Windows nodes.
#[derive(Debug, Default)]
pub struct Readiness {
    ready: AtomicBool,
    refusal: Mutex<Option<String>>,
}

impl Readiness {
    /// Records why the cluster does not let Windows nodes join (`None`: it does); `/readyz` says it.
    pub fn set_refusal(&self, reason: Option<String>) {
        *self.refusal.lock().unwrap_or_else(PoisonError::into_inner) = reason;
    }

    /// Why the cluster does not let Windows nodes join, if it does not.
    pub fn refusal(&self) -> Option<String> {
        self.refusal.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Marks the operator ready or not ready.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// Whether `/readyz` answers 200.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

/// Binds the listener of the health server.
///
/// # Errors
///
/// [`HealthError::Bind`] naming the address.
pub async fn bind(address: SocketAddr) -> Result<TcpListener, HealthError> {
    TcpListener::bind(address).await.map_err(|source| HealthError::Bind { address, source })
}

/// Serves `/healthz` and `/readyz` on `listener` within `limits` until `shutdown` completes.
///
/// ```no_run
/// # async fn run() -> Result<(), wmco_operator::health::HealthError> {
/// use std::sync::Arc;
/// use wmco_operator::connection_limits::ConnectionLimits;
/// use wmco_operator::health::{Readiness, bind, serve};
/// let listener = bind("0.0.0.0:8080".parse().expect("an address")).await?;
/// let readiness = Arc::new(Readiness::default());
/// serve(listener, ConnectionLimits::default(), readiness, std::future::pending()).await?;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// [`HealthError::Accept`] when the listener fails.
pub async fn serve(
    listener: TcpListener,
    limits: ConnectionLimits,
    readiness: Arc<Readiness>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), HealthError> {
    let gate = ConnectionGate::new(limits);
    tokio::pin!(shutdown);
    loop {
        let (permit, accepted) = tokio::select! {
            () = &mut shutdown => return Ok(()),
            admitted = gate.accept(&listener) => admitted,
        };
        let (stream, _peer) = accepted.map_err(HealthError::Accept)?;
        let readiness = Arc::clone(&readiness);
        let http = gate.http1();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let response = respond(&request, &readiness);
                async move { Ok::<_, Infallible>(response) }
            });
            if let Err(error) = http.serve_connection(TokioIo::new(stream), service).await {
                tracing::debug!(error = %error, "health server connection");
            }
            drop(permit);
        });
    }
}

fn respond(request: &Request<Incoming>, readiness: &Readiness) -> Response<Full<Bytes>> {
    if request.method() != Method::GET {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
    }
    match request.uri().path() {
        "/healthz" => plain(StatusCode::OK, "ok\n"),
        "/readyz" => match readiness.refusal() {
            Some(reason) => with_content_type(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain; charset=utf-8",
                format!("not ready: {reason}\n"),
            ),
            None if readiness.is_ready() => plain(StatusCode::OK, "ready\n"),
            None => plain(StatusCode::SERVICE_UNAVAILABLE, "not ready\n"),
        },
        _ => plain(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn plain(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    with_content_type(status, "text/plain; charset=utf-8", body.to_owned())
}

fn with_content_type(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Empty};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpStream;

    async fn get(address: SocketAddr, path: &str) -> (StatusCode, String, String) {
        let stream = TcpStream::connect(address).await.expect("connected");
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
        tokio::spawn(connection);
        let request = Request::get(path).header("host", "localhost").body(Empty::<Bytes>::new()).expect("request");
        let response = sender.send_request(request).await.expect("response");
        let status = response.status();
        let content_type = response
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .map(|value| value.to_str().expect("ascii").to_owned())
            .unwrap_or_default();
        let body = response.into_body().collect().await.expect("body").to_bytes();
        (status, content_type, String::from_utf8(body.to_vec()).expect("utf-8"))
    }

    #[tokio::test]
    async fn serves_health_and_readiness_and_never_the_metrics_in_plain_http() {
        let listener = bind("127.0.0.1:0".parse().expect("address")).await.expect("bound");
        let address = listener.local_addr().expect("local address");
        let readiness = Arc::new(Readiness::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, ConnectionLimits::default(), Arc::clone(&readiness), async {
            let _ = stopped.await;
        }));

        assert_eq!(get(address, "/healthz").await.0, StatusCode::OK);
        assert_eq!(get(address, "/readyz").await.0, StatusCode::SERVICE_UNAVAILABLE);
        readiness.set_ready(true);
        assert_eq!(get(address, "/readyz").await.0, StatusCode::OK);
        readiness.set_refusal(Some("no hybrid overlay".into()));
        let (status, _, body) = get(address, "/readyz").await;
        assert_eq!((status, body.as_str()), (StatusCode::SERVICE_UNAVAILABLE, "not ready: no hybrid overlay\n"));
        readiness.set_refusal(None);
        assert_eq!(get(address, "/readyz").await.0, StatusCode::OK);
        assert_eq!(get(address, "/nope").await.0, StatusCode::NOT_FOUND);

        let (status, content_type, _) = get(address, "/metrics").await;
        assert_eq!((status, content_type.as_str()), (StatusCode::NOT_FOUND, "text/plain; charset=utf-8"));

        stop.send(()).expect("server still running");
        server.await.expect("joined").expect("clean stop");
    }

    /// Starts a health server with `limits` on loopback; the server stops when the runtime does.
    async fn start(limits: ConnectionLimits) -> SocketAddr {
        let listener = bind("127.0.0.1:0".parse().expect("address")).await.expect("bound");
        let address = listener.local_addr().expect("local address");
        let readiness = Arc::new(Readiness::default());
        tokio::spawn(serve(listener, limits, readiness, std::future::pending()));
        address
    }

    /// Whether the server closed `stream` within an hour (of tokio's clock, paused in these tests).
    async fn closed_within_an_hour(stream: &mut TcpStream) -> bool {
        let mut buffer = [0_u8; 512];
        loop {
            match tokio::time::timeout(std::time::Duration::from_secs(3600), stream.read(&mut buffer)).await {
                Err(_) => return false,
                Ok(Ok(0) | Err(_)) => return true,
                Ok(Ok(_)) => {}
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_never_finishes_its_request_head_is_disconnected() {
        let address = start(ConnectionLimits::default()).await;
        let mut slow = TcpStream::connect(address).await.expect("connected");
        slow.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n").await.expect("written");
        assert!(closed_within_an_hour(&mut slow).await, "a client without a full request head held its connection");
        let mut silent = TcpStream::connect(address).await.expect("connected");
        assert!(closed_within_an_hour(&mut silent).await, "a client that sent nothing held its connection");
        assert_eq!(get(address, "/healthz").await.0, StatusCode::OK);
    }

    #[tokio::test(start_paused = true)]
    async fn connections_beyond_the_cap_wait_until_a_slot_frees() {
        let address = start(ConnectionLimits { max_connections: 2, ..ConnectionLimits::default() }).await;
        let mut holders = Vec::new();
        for _ in 0..2 {
            let mut holder = TcpStream::connect(address).await.expect("connected");
            holder.write_all(b"GET /healthz HTTP/1.1\r\n").await.expect("written");
            holders.push(holder);
        }
        // The third connection is served only once the header timeout has closed the two holding the slots.
        assert_eq!(get(address, "/readyz").await.0, StatusCode::SERVICE_UNAVAILABLE);
        let mut buffer = [0_u8; 64];
        for holder in &mut holders {
            let read = tokio::time::timeout(std::time::Duration::ZERO, holder.read(&mut buffer)).await;
            assert!(
                matches!(read, Ok(Ok(0) | Err(_))),
                "a third connection was served while two others held both slots: {read:?}"
            );
        }
    }

    #[tokio::test]
    async fn bind_error_names_the_address() {
        let taken = bind("127.0.0.1:0".parse().expect("address")).await.expect("bound");
        let address = taken.local_addr().expect("local address");
        let error = bind(address).await.expect_err("address in use");
        assert_eq!(error.to_string(), format!("cannot listen on {address} for /healthz and /readyz"));
    }
}
