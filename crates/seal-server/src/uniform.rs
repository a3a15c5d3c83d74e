//! One error format for every answer (DESIGN §8): `{"error": {"code", "message", "object"}}`.
//!
//! Handlers answer with [`ApiError`] already; what axum and tower-http produce by themselves
//! (413 from the body limit, 405, 400 for a path that is not UTF-8 or a bad path parameter, 408
//! from the timeout layer) is plain text or empty. [`uniform_errors`], the outermost layer,
//! rewrites every error answer that is not JSON into that body, keeping its status and headers
//! (`Allow` of a 405). [`json_only`] refuses, on the routes that take a JSON document, a
//! `Content-Type` that is not JSON (415); a request without `Content-Type` is accepted, since
//! existing clients send none. [`uri_bound`] answers 414 for a request target over
//! [`MAX_URI_BYTES`] (hyper itself refuses, with an empty 414, only past 64 KiB).

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;

/// Longest request target (path and query) the API reads.
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Longest original error text kept in the rewritten message.
const MAX_MESSAGE_BYTES: usize = 512;

/// The code of an error answer that carries no code of its own.
fn code_for(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::NOT_FOUND => "no_route",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::REQUEST_TIMEOUT => "timeout",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::URI_TOO_LONG => "uri_too_long",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => "headers_too_large",
        StatusCode::TOO_MANY_REQUESTS => "busy",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        s if s.is_client_error() => "bad_request",
        _ => "internal",
    }
}

fn is_json(value: Option<&HeaderValue>) -> bool {
    let Some(v) = value.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = v
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Rewrites an error answer that is not JSON into the one error body.
pub async fn uniform_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    // The review workbench's error pages are HTML for a person, and stay so.
    let content_type = resp.headers().get(header::CONTENT_TYPE);
    let is_page = content_type
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if !(status.is_client_error() || status.is_server_error()) || is_json(content_type) || is_page {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let text = match axum::body::to_bytes(body, MAX_MESSAGE_BYTES * 4).await {
        Ok(b) => String::from_utf8_lossy(&b).trim().to_string(),
        Err(_) => String::new(),
    };
    // A body read that stalled (see [`body_timeout`]) reaches here as axum's 400.
    let status = match text.contains("designated timeout") {
        true => StatusCode::REQUEST_TIMEOUT,
        false => status,
    };
    let message = match text.is_empty() {
        true => status.canonical_reason().unwrap_or("error").to_string(),
        false => text.chars().take(MAX_MESSAGE_BYTES).collect(),
    };
    let mut rewritten = ApiError::new(status, code_for(status), message, None).into_response();
    parts.headers.remove(header::CONTENT_TYPE);
    parts.headers.remove(header::CONTENT_LENGTH);
    for (name, value) in parts.headers.iter() {
        rewritten.headers_mut().insert(name.clone(), value.clone());
    }
    rewritten
}

/// 415 for a body that says it is not JSON, on a route that takes a JSON document.
pub async fn json_only(req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::PUT | Method::POST) {
        if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
            if !is_json(Some(ct)) {
                let shown: String = ct
                    .to_str()
                    .unwrap_or("(not text)")
                    .chars()
                    .take(80)
                    .collect();
                return ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "unsupported_media_type",
                    "this route takes a JSON document: send Content-Type: application/json (or none)",
                    Some(shown),
                )
                .into_response();
            }
        }
    }
    next.run(req).await
}

/// Bounds how long a request body may stall between two chunks; a stalled body fails the
/// handler's read, answered 408 `timeout` by [`uniform_errors`].
pub async fn body_timeout(
    axum::extract::State(limit): axum::extract::State<std::time::Duration>,
    req: Request,
    next: Next,
) -> Response {
    let req = req.map(|b| Body::new(tower_http::timeout::TimeoutBody::new(limit, b)));
    next.run(req).await
}

/// 414 for a request target over [`MAX_URI_BYTES`].
pub async fn uri_bound(req: Request<Body>, next: Next) -> Response {
    let len = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().len())
        .unwrap_or(0);
    if len > MAX_URI_BYTES {
        return ApiError::new(
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
            format!("request target over {MAX_URI_BYTES} bytes (got {len})"),
            None,
        )
        .into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_media_types() {
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/x+json",
        ] {
            assert!(is_json(Some(&HeaderValue::from_static(ok))), "{ok}");
        }
        for bad in ["text/plain", "application/jsonx", "multipart/form-data", ""] {
            assert!(!is_json(Some(&HeaderValue::from_static(bad))), "{bad}");
        }
        assert!(!is_json(None));
        assert_eq!(
            code_for(StatusCode::METHOD_NOT_ALLOWED),
            "method_not_allowed"
        );
    }
}
