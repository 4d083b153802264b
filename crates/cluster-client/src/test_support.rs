//! A mocked API server for unit tests (the controller-rs `ApiServerVerifier` style): a scenario is the exact
//! sequence of requests the code under test must send — method, path and query, content type, JSON body — and the
//! answers the server gives.

use std::future::Future;
use std::time::Duration;

use http::{Method, Request, Response, header::CONTENT_TYPE};
use kube::Client;
use kube::client::Body;
use serde_json::Value;

/// One request the client must send, and the server's answer.
pub(crate) struct Exchange {
    method: Method,
    uri: String,
    content_type: Option<&'static str>,
    body: Option<Value>,
    body_is_subset: bool,
    unanswered: bool,
    status: u16,
    reply: Value,
    reply_text: Option<String>,
}

/// Content type of a JSON merge patch.
pub(crate) const MERGE_PATCH: &str = "application/merge-patch+json";
/// Content type of a server-side apply patch.
pub(crate) const APPLY_PATCH: &str = "application/apply-patch+yaml";
/// Content type of plain JSON bodies.
pub(crate) const JSON: &str = "application/json";

impl Exchange {
    fn new(method: Method, uri: &str) -> Self {
        Exchange {
            method,
            uri: uri.to_owned(),
            content_type: None,
            body: None,
            body_is_subset: false,
            unanswered: false,
            status: 200,
            reply: Value::Null,
            reply_text: None,
        }
    }

    /// Expects a GET of `uri` (path and query).
    pub(crate) fn get(uri: &str) -> Self {
        Exchange::new(Method::GET, uri)
    }

    /// Expects a metadata-only GET of `uri` (kube sends it with a JSON content type).
    pub(crate) fn get_metadata(uri: &str) -> Self {
        Exchange { content_type: Some(JSON), ..Exchange::new(Method::GET, uri) }
    }

    /// Expects a DELETE of `uri` with default delete options.
    pub(crate) fn delete(uri: &str) -> Self {
        Exchange { content_type: Some(JSON), body: Some(serde_json::json!({})), ..Exchange::new(Method::DELETE, uri) }
    }

    /// Expects a POST of `body` as JSON to `uri`.
    pub(crate) fn post(uri: &str, body: Value) -> Self {
        Exchange { content_type: Some(JSON), body: Some(body), ..Exchange::new(Method::POST, uri) }
    }

    /// Expects a POST to `uri` of a JSON body that holds at least the fields of `subset` (for bodies carrying
    /// clock-dependent names or times).
    pub(crate) fn post_containing(uri: &str, subset: Value) -> Self {
        Exchange { body_is_subset: true, ..Exchange::post(uri, subset) }
    }

    /// Expects a PUT of `body` as JSON to `uri`.
    pub(crate) fn put(uri: &str, body: Value) -> Self {
        Exchange { content_type: Some(JSON), body: Some(body), ..Exchange::new(Method::PUT, uri) }
    }

    /// Expects a PATCH of `body` with `content_type` to `uri`.
    pub(crate) fn patch(uri: &str, content_type: &'static str, body: Value) -> Self {
        Exchange { content_type: Some(content_type), body: Some(body), ..Exchange::new(Method::PATCH, uri) }
    }

    /// The server never answers this request (the response is held until the scenario ends).
    pub(crate) fn unanswered(self) -> Self {
        Exchange { unanswered: true, ..self }
    }

    /// The server answers with `status` and the JSON `reply`.
    pub(crate) fn reply(self, status: u16, reply: Value) -> Self {
        Exchange { status, reply, ..self }
    }

    /// The server answers with `status` and `text` as the body, as is (a container log).
    pub(crate) fn reply_text(self, status: u16, text: &str) -> Self {
        Exchange { status, reply_text: Some(text.to_owned()), ..self }
    }
}

/// A `Status` body as the API server sends it with an error code.
pub(crate) fn status_reply(code: u16, reason: &str, message: &str) -> Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Status", "status": "Failure",
        "code": code, "reason": reason, "message": message
    })
}

/// Runs `call` against a client whose API server answers exactly `exchanges`, in order, asserting each request;
/// fails if the client sends fewer or more requests.
pub(crate) async fn scenario<F, T>(exchanges: Vec<Exchange>, call: impl FnOnce(Client) -> F) -> T
where
    F: Future<Output = T>,
{
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let server = tokio::spawn(async move {
        let mut held = Vec::new();
        for (index, exchange) in exchanges.into_iter().enumerate() {
            let (request, respond) = handle
                .next_request()
                .await
                .unwrap_or_else(|| panic!("request {index} ({} {}) never came", exchange.method, exchange.uri));
            assert_eq!(request.method(), exchange.method, "method of request {index}");
            assert_eq!(request.uri().to_string(), exchange.uri, "path and query of request {index}");
            let content_type = request.headers().get(CONTENT_TYPE).map(|value| value.to_str().unwrap().to_owned());
            assert_eq!(content_type.as_deref(), exchange.content_type, "content type of request {index}");
            let bytes = request.into_body().collect_bytes().await.unwrap();
            if let Some(expected) = exchange.body {
                let actual: Value = serde_json::from_slice(&bytes).unwrap();
                if exchange.body_is_subset {
                    assert_contains(&actual, &expected, &format!("body of request {index}"));
                } else {
                    assert_eq!(actual, expected, "body of request {index}");
                }
            }
            if exchange.unanswered {
                held.push(respond);
                continue;
            }
            let bytes = match exchange.reply_text {
                Some(text) => text.into_bytes(),
                None => serde_json::to_vec(&exchange.reply).unwrap(),
            };
            let body = Body::from(bytes);
            respond.send_response(Response::builder().status(exchange.status).body(body).unwrap());
        }
        (handle, held)
    });
    let result = call(client).await;
    let (mut handle, _held) = server.await.unwrap();
    let extra = tokio::time::timeout(Duration::from_secs(5), handle.next_request()).await;
    if let Ok(Some((request, _))) = extra {
        panic!("unexpected extra request {} {}", request.method(), request.uri());
    }
    result
}

/// Asserts that every field of `expected` is in `actual` with the same value (objects compared field by field).
fn assert_contains(actual: &Value, expected: &Value, path: &str) {
    match (actual, expected) {
        (Value::Object(actual_fields), Value::Object(expected_fields)) => {
            for (key, expected_value) in expected_fields {
                let actual_value =
                    actual_fields.get(key).unwrap_or_else(|| panic!("{path}.{key} is missing in {actual}"));
                assert_contains(actual_value, expected_value, &format!("{path}.{key}"));
            }
        }
        _ => assert_eq!(actual, expected, "{path}"),
    }
}
