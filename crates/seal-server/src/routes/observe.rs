//! One request, observed: its id (`X-Request-Id` as the caller sent it when it is a safe
//! token, else a fresh one), a `http.request` span every log line of the request carries, one
//! access line at info (target `seal::access`) when it is answered, the caller's W3C trace
//! context (`traceparent`) continued, its count and duration in
//! the metrics, and the id echoed in the answer.
//!
//! A caller's id is taken only when it is 1–128 of `[A-Za-z0-9._:-]`, else replaced
//! (docs/DECISIONS.md, "A caller's request id is checked, never escaped").

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::AppState;

/// The header carrying the request id, both ways.
pub const REQUEST_ID: &str = "x-request-id";
/// Longest request id taken from a caller.
const MAX_ID: usize = 128;

/// The caller's id when it is safe to log and echo.
pub fn accepted_id(value: Option<&HeaderValue>) -> Option<String> {
    let v = value?.to_str().ok()?;
    let ok = !v.is_empty()
        && v.len() <= MAX_ID
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
    ok.then(|| v.to_string())
}

/// 16 random bytes as hex.
fn fresh_id() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes `span` a child of the caller's W3C trace context (`traceparent`, `tracestate`) when
/// it sent one, so the roll's spans and the judges' requests carry the worker's trace id;
/// returns that trace id (all zeros when no OpenTelemetry layer is installed). A malformed
/// header is ignored (a new trace starts), never refused.
fn continue_trace(span: &tracing::Span, headers: &axum::http::HeaderMap) -> String {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    struct Headers<'a>(&'a axum::http::HeaderMap);
    impl opentelemetry::propagation::Extractor for Headers<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|v| v.to_str().ok())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(|k| k.as_str()).collect()
        }
    }
    let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&Headers(headers)));
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
    span.context().span().span_context().trace_id().to_string()
}

/// The middleware: outermost, so refusals of the inner layers are logged and counted too.
pub(crate) async fn observe(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let t0 = Instant::now();
    let id = accepted_id(req.headers().get(REQUEST_ID)).unwrap_or_else(fresh_id);
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let method = req.method().as_str().to_string();
    let client = req
        .extensions()
        .get::<crate::listen::ClientAddr>()
        .map(|c| c.0.to_string())
        .unwrap_or_default();
    let run = run_of(req.uri().path());
    let bytes_in = content_length(req.headers());
    if let Ok(v) = HeaderValue::from_str(&id) {
        req.headers_mut().insert(REQUEST_ID, v);
    }
    let span =
        tracing::info_span!("http.request", request_id = %id, method = %method, route = %route);
    let trace_id = continue_trace(&span, req.headers());
    let mut resp = next.run(req).instrument(span.clone()).await;
    let status = resp.status().as_u16();
    let elapsed = t0.elapsed();
    state
        .metrics
        .observe(&route, &method, status, elapsed.as_secs_f64());
    let duration_ms = elapsed.as_millis() as u64;
    let bytes_out = content_length(resp.headers())
        .or_else(|| axum::body::HttpBody::size_hint(resp.body()).exact());
    span.in_scope(|| {
        tracing::info!(target: "seal::access", method = %method, route = %route, status, duration_ms, request_id = %id, trace_id = %trace_id, client = %client, run = %run, bytes_in, bytes_out, "request");
        report(&state, &method, &resp);
    });
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(REQUEST_ID, v);
    }
    resp
}

/// The run a request is about: the `/v1/runs/<id>` segment when it is a valid run id (anything
/// else from the path is not logged: it is the caller's text), else empty.
fn run_of(path: &str) -> String {
    path.strip_prefix("/v1/runs/")
        .and_then(|rest| rest.split('/').next())
        .and_then(|id| seal_core::ids::RunId::parse(id).ok())
        .map(|id| id.to_string())
        .unwrap_or_default()
}

fn content_length(h: &axum::http::HeaderMap) -> Option<u64> {
    h.get(axum::http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// A 5xx answer at warn (503: retryable) or error (500: corrupt or planted), with its code,
/// object and message (Debug-quoted: a message may carry text from outside); a store failure
/// counted by operation, and a write request's store failure or success noted for `/readyz`.
fn report(state: &AppState, method: &str, resp: &Response) {
    let is_write = matches!(method, "PUT" | "POST");
    let Some(r) = resp.extensions().get::<crate::error::Reported>() else {
        if is_write && resp.status().is_success() {
            state.store_writes.succeeded();
        }
        return;
    };
    if let Some(op) = r.store_op {
        state.metrics.store_error(op);
        if is_write {
            state.store_writes.failed(format!("{op}: {}", r.message));
        }
    }
    let status = resp.status().as_u16();
    let object = r.object.as_deref().unwrap_or("");
    if status == 503 {
        tracing::warn!(status, code = r.code, object = ?object, store_op = r.store_op, message = ?r.message, "request failed: retryable");
    } else {
        tracing::error!(status, code = r.code, object = ?object, store_op = r.store_op, message = ?r.message, "request failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_access_line_names_only_a_valid_run_id() {
        assert_eq!(run_of("/v1/runs/run-7/rolls/1"), "run-7");
        assert_eq!(run_of("/v1/runs/run-7"), "run-7");
        assert_eq!(run_of("/v1/runs/%1B%5B31m/finalize"), "");
        assert_eq!(run_of("/v1/runs/../etc"), "");
        assert_eq!(run_of("/v1/stats"), "");
    }

    #[test]
    fn only_a_safe_token_is_taken_as_the_request_id() {
        let id = |s: &str| accepted_id(HeaderValue::from_str(s).ok().as_ref());
        assert_eq!(
            id("worker-7:run-0010.a_1"),
            Some("worker-7:run-0010.a_1".into())
        );
        for bad in ["", "a b", "x\"}{", "é", &"a".repeat(129)] {
            assert_eq!(id(bad), None, "{bad:?}");
        }
        assert_eq!(fresh_id().len(), 32);
    }
}
