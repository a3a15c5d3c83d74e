//! A typed client for `seal serve`'s HTTP API (the routes of `crates/seal-server/src/lib.rs`),
//! so a test says what it asks, not how to build the request:
//!
//! ```no_run
//! # async fn demo(base: &str, header: Vec<u8>) {
//! use seal_testkit::client::{SealClient, StatusCode};
//! let c = SealClient::new(base);
//! c.put_header("run-1", header).await.expect(StatusCode::CREATED);
//! let verdict = c.verify("run-1").await.expect(StatusCode::OK).json();
//! # }
//! ```
//!
//! Every method sends one request and waits for the whole answer: a [`Reply`] (status, headers,
//! body) that names its request, so a failed expectation says which call failed and what the
//! daemon answered. A connection that fails is a panic; tests that expect one (a killed daemon,
//! a refused connection) or need a request the routes cannot express (a raw header, a broken
//! body, a timeout) build it with [`SealClient::raw`], which still fills in the base URL and the
//! token, and send it themselves or through [`SealClient::send`].

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::Request;
pub use reqwest::{Body, Method, RequestBuilder, StatusCode};
use seal_fs::runfolder::RunFolder;
use serde_json::Value;
use std::fmt::Display;
use std::time::Duration;

/// How long any one request may take by default: a daemon that hangs fails the test instead of
/// stalling it.
const TIMEOUT: Duration = Duration::from_secs(60);

fn http(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .expect("an HTTP client")
}

/// A client for one daemon (`base`, e.g. `http://127.0.0.1:4312`), with an optional bearer token.
/// Cloning is cheap and shares the connection pool.
#[derive(Clone, Debug)]
pub struct SealClient {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    /// Sent with every request, as an instrumented worker sends its `traceparent`.
    headers: HeaderMap,
}

/// One answer, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// `METHOD /path?query` of the request, for failure messages.
    pub request: String,
}

impl SealClient {
    /// A client for the daemon at `base` (no trailing slash), without a token.
    pub fn new(base: impl Into<String>) -> SealClient {
        SealClient {
            http: http(TIMEOUT),
            base: base.into(),
            token: None,
            headers: HeaderMap::new(),
        }
    }

    /// The same client, sending `Authorization: Bearer <token>` on every request.
    pub fn with_token(mut self, token: impl Into<String>) -> SealClient {
        self.token = Some(token.into());
        self
    }

    /// The same client, giving each request `timeout` (a load that queues requests for longer
    /// than the default minute). It gets a connection pool of its own.
    pub fn with_timeout(mut self, timeout: Duration) -> SealClient {
        self.http = http(timeout);
        self
    }

    /// The same client, sending header `name: value` on every request.
    pub fn with_header(mut self, name: &'static str, value: &str) -> SealClient {
        let value = HeaderValue::from_str(value).expect("a header value");
        self.headers.insert(HeaderName::from_static(name), value);
        self
    }

    /// A request to `path` (which starts with `/`, and may carry a query) with the base URL and
    /// the token filled in, for what the typed methods cannot express.
    pub fn raw(&self, method: Method, path: &str) -> RequestBuilder {
        let r = self
            .http
            .request(method, format!("{}{path}", self.base))
            .headers(self.headers.clone());
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// Sends `request` (from [`SealClient::raw`]) and reads the whole answer; a panic naming
    /// the request if the connection fails.
    pub async fn send(&self, request: RequestBuilder) -> Reply {
        let request = request.build().expect("a well-formed request");
        let name = name_of(&request);
        match self.execute(request, name.clone()).await {
            Ok(r) => r,
            Err(e) => panic!("{name}: {e}"),
        }
    }

    /// [`SealClient::send`] for a caller to whom a failed connection is an answer (a daemon
    /// killed at a crash point).
    pub async fn try_send(&self, request: RequestBuilder) -> reqwest::Result<Reply> {
        let request = request.build()?;
        let name = name_of(&request);
        self.execute(request, name).await
    }

    async fn execute(&self, request: Request, name: String) -> reqwest::Result<Reply> {
        let r = self.http.execute(request).await?;
        let (status, headers) = (r.status(), r.headers().clone());
        let body = r.bytes().await?.to_vec();
        Ok(Reply {
            status,
            headers,
            body,
            request: name,
        })
    }

    async fn call(&self, method: Method, path: &str, body: Option<Body>) -> Reply {
        let r = self.raw(method, path);
        self.send(match body {
            Some(b) => r.body(b),
            None => r,
        })
        .await
    }

    /// `GET path`: routes with a query, or none (an unknown route answers the error body).
    pub async fn get(&self, path: &str) -> Reply {
        self.call(Method::GET, path, None).await
    }

    /// `PUT /v1/blobs/sha256/{hash}`.
    pub async fn put_blob(&self, hash: impl Display, bytes: impl Into<Body>) -> Reply {
        let path = format!("/v1/blobs/sha256/{hash}");
        self.call(Method::PUT, &path, Some(bytes.into())).await
    }

    /// `PUT /v1/runs/{run}`: the header.
    pub async fn put_header(&self, run: impl Display, bytes: impl Into<Body>) -> Reply {
        let path = format!("/v1/runs/{run}");
        self.call(Method::PUT, &path, Some(bytes.into())).await
    }

    /// `PUT /v1/runs/{run}/brief`.
    pub async fn put_brief(&self, run: impl Display, bytes: impl Into<Body>) -> Reply {
        let path = format!("/v1/runs/{run}/brief");
        self.call(Method::PUT, &path, Some(bytes.into())).await
    }

    /// `PUT /v1/runs/{run}/play-spec`.
    pub async fn put_play_spec(&self, run: impl Display, bytes: impl Into<Body>) -> Reply {
        let path = format!("/v1/runs/{run}/play-spec");
        self.call(Method::PUT, &path, Some(bytes.into())).await
    }

    /// `POST /v1/runs/{run}/rolls/{n}`: a proof package.
    pub async fn post_roll(&self, run: impl Display, n: usize, bytes: impl Into<Body>) -> Reply {
        let path = format!("/v1/runs/{run}/rolls/{n}");
        self.call(Method::POST, &path, Some(bytes.into())).await
    }

    /// `POST /v1/runs/{run}/finalize`.
    pub async fn finalize(&self, run: impl Display) -> Reply {
        let path = format!("/v1/runs/{run}/finalize");
        self.call(Method::POST, &path, None).await
    }

    /// `GET /v1/runs/{run}`: the run's state.
    pub async fn run_state(&self, run: impl Display) -> Reply {
        self.get(&format!("/v1/runs/{run}")).await
    }

    /// `GET /v1/runs/{run}/verify`.
    pub async fn verify(&self, run: impl Display) -> Reply {
        self.get(&format!("/v1/runs/{run}/verify")).await
    }

    /// `GET /v1/runs/{run}/explain` (the JSON tree; a page wants `raw` with an Accept header).
    pub async fn explain(&self, run: impl Display) -> Reply {
        self.get(&format!("/v1/runs/{run}/explain")).await
    }

    /// `GET /v1/runs/{run}/log-proof`.
    pub async fn log_proof(&self, run: impl Display) -> Reply {
        self.get(&format!("/v1/runs/{run}/log-proof")).await
    }

    /// `POST /v1/runs/{run}/reviews`: a signed review envelope, labelled
    /// `Content-Type: application/json` as a reviewer's tool sends it.
    pub async fn post_review(&self, run: impl Display, bytes: impl Into<Body>) -> Reply {
        let r = self.raw(Method::POST, &format!("/v1/runs/{run}/reviews"));
        self.send(r.header("content-type", "application/json").body(bytes))
            .await
    }

    /// `GET /v1/runs/{run}/reviews`.
    pub async fn reviews(&self, run: impl Display) -> Reply {
        self.get(&format!("/v1/runs/{run}/reviews")).await
    }

    /// `GET /v1/log/checkpoint`.
    pub async fn checkpoint(&self) -> Reply {
        self.get("/v1/log/checkpoint").await
    }

    /// `GET /v1/log/tile/{path}` (e.g. `8/0/000.p/1`).
    pub async fn tile(&self, path: &str) -> Reply {
        self.get(&format!("/v1/log/tile/{path}")).await
    }

    /// `GET /v1/stats`, with `query` (e.g. `genre=puzzle`) unless it is empty.
    pub async fn stats(&self, query: &str) -> Reply {
        self.get(&with_query("/v1/stats", query)).await
    }

    /// `GET /v1/review-queue`, with `query` unless it is empty.
    pub async fn review_queue(&self, query: &str) -> Reply {
        self.get(&with_query("/v1/review-queue", query)).await
    }

    /// `GET /metrics`.
    pub async fn metrics(&self) -> Reply {
        self.get("/metrics").await
    }

    /// `GET /openapi.json`.
    pub async fn openapi(&self) -> Reply {
        self.get("/openapi.json").await
    }

    /// `GET /healthz`.
    pub async fn healthz(&self) -> Reply {
        self.get("/healthz").await
    }

    /// `GET /livez`.
    pub async fn livez(&self) -> Reply {
        self.get("/livez").await
    }

    /// `GET /readyz`.
    pub async fn readyz(&self) -> Reply {
        self.get("/readyz").await
    }

    /// A run folder's inputs, as a worker sends them: [`SealClient::put_blobs`], then
    /// [`SealClient::put_documents`].
    pub async fn submit(&self, folder: &RunFolder) {
        self.put_blobs(folder).await;
        self.put_documents(folder).await;
    }

    /// Every blob of a run folder; panics on an answer that is not 2xx.
    pub async fn put_blobs(&self, folder: &RunFolder) {
        for (hash, path) in folder.blobs() {
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            self.put_blob(hash, bytes).await.expect_success();
        }
    }

    /// The header (201: a new run), the brief and the play-spec if there is one (2xx); panics
    /// on any other answer.
    pub async fn put_documents(&self, folder: &RunFolder) {
        let run = folder.run();
        self.put_header(run, folder.header_bytes().to_vec())
            .await
            .expect(StatusCode::CREATED);
        self.put_brief(run, folder.brief().to_vec())
            .await
            .expect_success();
        if let Some(spec) = folder.play_spec() {
            self.put_play_spec(run, spec.to_vec())
                .await
                .expect_success();
        }
    }

    /// `POST /v1/runs/{run}/rolls/{n}` with roll `n`'s proof package from `folder` (1-based).
    pub async fn roll(&self, folder: &RunFolder, n: usize) -> Reply {
        let proof = folder.rolls()[n - 1].canonical().clone();
        self.post_roll(folder.run(), n, proof).await
    }
}

/// `METHOD /path?query`: a request as failure messages name it.
fn name_of(request: &Request) -> String {
    let url = request.url();
    match url.query() {
        Some(q) => format!("{} {}?{q}", request.method(), url.path()),
        None => format!("{} {}", request.method(), url.path()),
    }
}

fn with_query(path: &str, query: &str) -> String {
    if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{query}")
    }
}

impl Reply {
    /// The reply, if its status is `status`; else a panic naming the request and the body.
    #[track_caller]
    pub fn expect(self, status: StatusCode) -> Reply {
        assert_eq!(self.status, status, "{}: {}", self.request, self.text());
        self
    }

    /// The reply, if its status is 2xx; else a panic naming the request and the body.
    #[track_caller]
    pub fn expect_success(self) -> Reply {
        assert!(
            self.status.is_success(),
            "{}: {} {}",
            self.request,
            self.status,
            self.text()
        );
        self
    }

    /// The body as JSON; a panic naming the request if it is not.
    #[track_caller]
    pub fn json(&self) -> Value {
        match serde_json::from_slice(&self.body) {
            Ok(v) => v,
            Err(e) => panic!(
                "{} ({}): not JSON ({e}): {}",
                self.request,
                self.status,
                self.text()
            ),
        }
    }

    /// The status and the body as JSON, or Null where the body is not JSON (an answer axum or
    /// hyper made by itself, or none): for tests that check both and show the body.
    pub fn status_json(&self) -> (StatusCode, Value) {
        (
            self.status,
            serde_json::from_slice(&self.body).unwrap_or(Value::Null),
        )
    }

    /// The body as text (invalid UTF-8 replaced: it is for messages and substring checks).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_carries_the_base_the_token_the_headers_and_its_name() {
        let c = SealClient::new("http://127.0.0.1:9")
            .with_token("tok")
            .with_header("traceparent", "00-abc-def-01");
        let r = c
            .raw(Method::GET, "/v1/stats?genre=puzzle")
            .build()
            .unwrap();
        assert_eq!(r.url().as_str(), "http://127.0.0.1:9/v1/stats?genre=puzzle");
        assert_eq!(r.headers()["authorization"], "Bearer tok");
        assert_eq!(r.headers()["traceparent"], "00-abc-def-01");
        assert_eq!(name_of(&r), "GET /v1/stats?genre=puzzle");
        let plain = SealClient::new("http://127.0.0.1:9");
        let r = plain
            .raw(Method::POST, "/v1/runs/r1/finalize")
            .build()
            .unwrap();
        assert!(r.headers().get("authorization").is_none());
        assert_eq!(name_of(&r), "POST /v1/runs/r1/finalize");
        assert_eq!(with_query("/v1/stats", ""), "/v1/stats");
    }

    #[test]
    fn a_reply_is_checked_and_read() {
        let reply = |status: StatusCode, body: &str| Reply {
            status,
            headers: HeaderMap::new(),
            body: body.as_bytes().to_vec(),
            request: "GET /v1/runs/r1".into(),
        };
        let r = reply(StatusCode::OK, r#"{"phase":"DECIDED"}"#).expect(StatusCode::OK);
        assert_eq!(r.json()["phase"], "DECIDED");
        assert_eq!(
            reply(StatusCode::BAD_GATEWAY, "<html>").status_json().1,
            Value::Null
        );
        let failed = std::panic::catch_unwind(|| {
            reply(StatusCode::NOT_FOUND, "no such run").expect(StatusCode::OK)
        });
        let message = failed.unwrap_err();
        let message = message.downcast_ref::<String>().unwrap();
        assert!(
            message.contains("GET /v1/runs/r1") && message.contains("no such run"),
            "{message}"
        );
    }
}
