//! The control interface: HTTP/1.1 with JSON bodies on 127.0.0.1, for tests and people.
//!
//! | Method and path | Body | Answer |
//! |---|---|---|
//! | `GET /hosts` | | every host's facts |
//! | `POST /hosts` | `{"name"?, "authorized_key"?, "build"?, "address"?, "containers"?, "instance_metadata"?, "pending_reboot"?}` | the new host's facts |
//! | `DELETE /hosts/<name>` | | 204 |
//! | `POST /hosts/<name>/provision` | `{"user_data": "<PowerShell>"}` | `{"stdout","stderr","code"}` |
//! | `POST /hosts/<name>/faults` | `{"drop_connections","refuse_connections","hang_commands","fail_next","rules"}` (rules: [`crate::faults`]) | the faults |
//! | `POST /hosts/<name>/throttle` | `{"bytes_per_second": n}` (0 = none) | 204 |
//! | `POST /hosts/<name>/host-key` | | `{"host_key"}` (a new key) |
//! | `POST /hosts/<name>/reboot` | | 204 once the host is back |
//! | `POST /hosts/<name>/pending-reboot` | `{"markers": ["WindowsUpdate", "ComponentBasedServicing", "PendingFileRenameOperations"]}` | `{"markers"}` present now ([`crate::pending_reboot`]) |
//! | `POST /hosts/<name>/latency` | `{"command_ms", "service_ms"}` | 204 |
//! | `GET /hosts/<name>/commands` | | command log (line, exit code, client SSH version) |
//! | `GET /hosts/<name>/unknown-commands` | | unknown-command log |
//! | `GET /hosts/<name>/services` | | service table |
//! | `POST /hosts/<name>/file-hashes` | `{"paths": ["C:\\k\\a.exe"]}` | `{"<path>": "<sha256>" or null}` |

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use crate::disk::WinPath;
use crate::fleet::{Fleet, FleetError, NewHost};
use crate::host::Output;
use crate::ps::{ErrorStream, run_script};
use crate::ssh::{Faults, lock};

/// The fleet as the control interface shares it.
pub type SharedFleet = Arc<Mutex<Fleet>>;

/// Serves the control interface on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, fleet: SharedFleet) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let fleet = Arc::clone(&fleet);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| handle(Arc::clone(&fleet), request));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Binds the control interface on 127.0.0.1:`port` (0 = any) and returns its address.
///
/// # Errors
/// The bind error.
pub async fn start(port: u16, fleet: SharedFleet) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    let address = listener.local_addr()?;
    tokio::spawn(serve(listener, fleet));
    Ok(address)
}

fn respond(status: StatusCode, body: serde_json::Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    response
}

fn no_content() -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::NO_CONTENT;
    response
}

fn error(status: StatusCode, message: impl std::fmt::Display) -> Response<Full<Bytes>> {
    respond(status, serde_json::json!({ "error": message.to_string() }))
}

fn fleet_error(failure: &FleetError) -> Response<Full<Bytes>> {
    match failure {
        FleetError::UnknownHost(_) => error(StatusCode::NOT_FOUND, failure),
        FleetError::Duplicate(_) => error(StatusCode::CONFLICT, failure),
        FleetError::FeatureState { .. } => error(StatusCode::BAD_REQUEST, failure),
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, failure),
    }
}

fn output_json(output: &Output) -> serde_json::Value {
    serde_json::json!({ "stdout": output.stdout, "stderr": output.stderr, "code": output.code })
}

async fn handle(fleet: SharedFleet, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let body = request.into_body().collect().await.map(|collected| collected.to_bytes()).unwrap_or_default();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    Ok(route(&fleet, &method, &segments, &body).await)
}

fn parse<T: serde::de::DeserializeOwned + Default>(body: &Bytes) -> Result<T, serde_json::Error> {
    if body.is_empty() {
        return Ok(T::default());
    }
    serde_json::from_slice(body)
}

/// `{"user_data": "..."}`.
#[derive(Default, serde::Deserialize)]
struct Provision {
    #[serde(default)]
    user_data: String,
}

/// `{"bytes_per_second": n}`.
#[derive(Default, serde::Deserialize)]
struct ThrottleRequest {
    #[serde(default)]
    bytes_per_second: u64,
}

/// `{"command_ms": n, "service_ms": n}`.
#[derive(Default, serde::Deserialize)]
struct LatencyRequest {
    #[serde(default)]
    command_ms: u64,
    #[serde(default)]
    service_ms: u64,
}

/// `{"markers": ["WindowsUpdate", ...]}`.
#[derive(Default, serde::Deserialize)]
struct PendingRebootRequest {
    #[serde(default)]
    markers: Vec<crate::pending_reboot::PendingRebootMarker>,
}

/// `{"paths": [...]}`.
#[derive(Default, serde::Deserialize)]
struct HashRequest {
    #[serde(default)]
    paths: Vec<String>,
}

async fn route(fleet: &SharedFleet, method: &Method, segments: &[&str], body: &Bytes) -> Response<Full<Bytes>> {
    match (method, segments) {
        (&Method::GET, ["hosts"]) => respond(StatusCode::OK, serde_json::json!(fleet.lock().await.list())),
        (&Method::POST, ["hosts"]) => {
            let request: NewHost = match parse(body) {
                Ok(request) => request,
                Err(failure) => return error(StatusCode::BAD_REQUEST, failure),
            };
            match fleet.lock().await.add(request).await {
                Ok(info) => respond(StatusCode::CREATED, serde_json::json!(info)),
                Err(failure) => fleet_error(&failure),
            }
        }
        (&Method::DELETE, ["hosts", name]) => match fleet.lock().await.remove(name) {
            Ok(()) => no_content(),
            Err(failure) => fleet_error(&failure),
        },
        (_, ["hosts", name, action]) => {
            let server = match fleet.lock().await.server(name) {
                Ok(server) => server,
                Err(failure) => return fleet_error(&failure),
            };
            host_action(&server, method, action, body).await
        }
        _ => error(StatusCode::NOT_FOUND, "no such endpoint"),
    }
}

async fn host_action(
    server: &Arc<crate::ssh::SshServer>,
    method: &Method,
    action: &str,
    body: &Bytes,
) -> Response<Full<Bytes>> {
    match (method, action) {
        (&Method::POST, "provision") => {
            let request: Provision = match parse(body) {
                Ok(request) => request,
                Err(failure) => return error(StatusCode::BAD_REQUEST, failure),
            };
            let host = Arc::clone(&server.host);
            let output = tokio::task::spawn_blocking(move || {
                let mut host = lock(&host);
                let output = run_script(&mut host, &request.user_data, ErrorStream::Text);
                host.command_log.push(crate::host::CommandRecord {
                    client: "control:user-data".to_owned(),
                    line: "<user data>".to_owned(),
                    exit_code: output.code,
                    stdout: output.stdout.clone(),
                    stderr: output.stderr.clone(),
                    finished_at: Some(std::time::SystemTime::now()),
                });
                output
            })
            .await
            .unwrap_or_else(|_| Output::new("", "the user-data script panicked", 1));
            respond(StatusCode::OK, output_json(&output))
        }
        (&Method::POST, "faults") => {
            let faults: Faults = match parse(body) {
                Ok(faults) => faults,
                Err(failure) => return error(StatusCode::BAD_REQUEST, failure),
            };
            *lock(&server.faults) = faults.clone();
            respond(StatusCode::OK, serde_json::json!(faults))
        }
        (&Method::POST, "throttle") => match parse::<ThrottleRequest>(body) {
            Ok(request) => {
                *lock(&server.throttle) = request.bytes_per_second;
                no_content()
            }
            Err(failure) => error(StatusCode::BAD_REQUEST, failure),
        },
        (&Method::POST, "host-key") => match server.change_host_key() {
            Ok(key) => respond(StatusCode::OK, serde_json::json!({ "host_key": key })),
            Err(failure) => error(StatusCode::INTERNAL_SERVER_ERROR, failure),
        },
        (&Method::POST, "reboot") => {
            crate::ssh::reboot(server).await;
            no_content()
        }
        (&Method::POST, "pending-reboot") => match parse::<PendingRebootRequest>(body) {
            Ok(request) => {
                let mut host = lock(&server.host);
                for marker in request.markers {
                    if let Err(failure) = host.mark_pending_reboot(marker) {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, failure);
                    }
                }
                respond(StatusCode::OK, serde_json::json!({ "markers": host.pending_reboot_markers() }))
            }
            Err(failure) => error(StatusCode::BAD_REQUEST, failure),
        },
        (&Method::POST, "latency") => match parse::<LatencyRequest>(body) {
            Ok(request) => {
                let mut host = lock(&server.host);
                host.latency.command = Duration::from_millis(request.command_ms);
                host.latency.service_transition = Duration::from_millis(request.service_ms);
                host.scm.timing.start = host.latency.service_transition;
                host.scm.timing.stop = host.latency.service_transition;
                no_content()
            }
            Err(failure) => error(StatusCode::BAD_REQUEST, failure),
        },
        (&Method::GET, "commands") => respond(StatusCode::OK, serde_json::json!(lock(&server.host).command_log)),
        (&Method::GET, "unknown-commands") => {
            respond(StatusCode::OK, serde_json::json!(lock(&server.host).unknown_commands))
        }
        (&Method::GET, "services") => {
            let mut host = lock(&server.host);
            host.refresh();
            let services: Vec<_> = host.scm.services().cloned().collect();
            respond(StatusCode::OK, serde_json::json!(services))
        }
        (&Method::POST, "file-hashes") => {
            let request: HashRequest = match parse(body) {
                Ok(request) => request,
                Err(failure) => return error(StatusCode::BAD_REQUEST, failure),
            };
            let host = lock(&server.host);
            let hashes: BTreeMap<String, Option<String>> = request
                .paths
                .into_iter()
                .map(|path| {
                    let hash = WinPath::parse(&path).ok().and_then(|parsed| host.file_hash(&parsed));
                    (path, hash)
                })
                .collect();
            respond(StatusCode::OK, serde_json::json!(hashes))
        }
        _ => error(StatusCode::NOT_FOUND, "no such endpoint"),
    }
}
