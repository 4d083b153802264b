//! A few hundred slow clients against the health server, in a process of their own (so the resident set measured
//! is this test's): half open a request and never finish its head, half trickle an endless head. `/healthz` and
//! `/readyz` still answer, and the process's resident set grows by less than [`RSS_GROWTH_BOUND`]: a connection
//! may buffer at most `connection_limits::MAX_BUFFER_BYTES` of a request head, and no more than
//! `connection_limits::MAX_CONNECTIONS` are open at once.

use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;
use wmco_operator::connection_limits::ConnectionLimits;
use wmco_operator::health::{Readiness, bind, serve};

/// Clients holding a request open without finishing its head.
const HOLDERS: usize = 150;
/// Clients sending an endless head, [`CHUNK`] at a time, up to [`TRICKLED_BYTES`] each.
const TRICKLERS: usize = 150;
const CHUNK: usize = 8 * 1024;
const TRICKLED_BYTES: usize = 256 * 1024;
/// What the slow clients may add to the resident set (their heads alone would be 150 × 256 KiB = 37.5 MiB if a
/// connection buffered all it is sent).
const RSS_GROWTH_BOUND: u64 = 24 * 1024 * 1024;

/// This process's resident set in bytes (`VmRSS` of `/proc/self/status`).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kilobytes = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("a VmRSS line");
    kilobytes * 1024
}

async fn status_of(address: SocketAddr, path: &str) -> StatusCode {
    let stream = TcpStream::connect(address).await.expect("connected");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
    tokio::spawn(connection);
    let request = Request::get(path).header("host", "localhost").body(Empty::<Bytes>::new()).expect("request");
    let response = sender.send_request(request).await.expect("response");
    let status = response.status();
    let _ = response.into_body().collect().await;
    status
}

/// Opens a request and sends `bytes` of header lines that never end the head (stopping when the server closes).
async fn trickle(address: SocketAddr, bytes: usize) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.expect("connected");
    let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n").await;
    let line = format!("x-padding: {}\r\n", "a".repeat(CHUNK - 13));
    let mut sent = 0;
    while sent < bytes {
        if stream.write_all(line.as_bytes()).await.is_err() {
            break;
        }
        sent += line.len();
    }
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_neither_silence_the_probes_nor_grow_the_resident_set_past_a_bound() {
    let listener = bind("127.0.0.1:0".parse().expect("address")).await.expect("bound");
    let address = listener.local_addr().expect("local address");
    let readiness = Arc::new(Readiness::default());
    readiness.set_ready(true);
    tokio::spawn(serve(listener, ConnectionLimits::default(), Arc::clone(&readiness), std::future::pending()));
    assert_eq!(status_of(address, "/healthz").await, StatusCode::OK);
    let before = resident_bytes();

    let holders = futures::future::join_all((0..HOLDERS).map(|_| trickle(address, 0))).await;
    let tricklers = futures::future::join_all((0..TRICKLERS).map(|_| trickle(address, TRICKLED_BYTES))).await;

    assert_eq!(status_of(address, "/healthz").await, StatusCode::OK, "/healthz with slow clients connected");
    assert_eq!(status_of(address, "/readyz").await, StatusCode::OK, "/readyz with slow clients connected");
    let growth = resident_bytes().saturating_sub(before);
    assert!(
        growth < RSS_GROWTH_BOUND,
        "{HOLDERS} holding and {TRICKLERS} trickling clients grew the resident set by {growth} bytes (bound \
         {RSS_GROWTH_BOUND})"
    );
    drop((holders, tricklers));
}
