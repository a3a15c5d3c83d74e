//! Who may use the review workbench: a reviewer's read token (`reviewers.tokens_env`) typed at
//! `/review/login` opens a session (an HttpOnly, SameSite=Strict cookie scoped to `/review`);
//! every page and API call of the workbench needs one, and every POST made in one also needs
//! the session's CSRF token in `X-CSRF-Token` and, when the browser sends an `Origin`, this
//! host's. The pipeline's bearer token opens nothing here, and a reviewer token nothing under
//! `/v1/`.

use std::time::Instant;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;

use super::page;
use crate::sessions::{csrf_matches, Session, COOKIE, SESSION_TTL};
use crate::{ApiError, AppState};

/// The login form's fields.
#[derive(serde::Deserialize)]
pub(crate) struct LoginForm {
    token: String,
}

/// The session id the request's cookie names, if any.
fn cookie_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

/// The request's live session.
pub(crate) fn session(state: &AppState, headers: &HeaderMap) -> Option<Session> {
    let id = cookie_id(headers)?;
    state.sessions.get(&id, Instant::now())
}

/// Whether an `Origin` the browser sent names this host (a cross-site POST is refused even
/// before its cookie would be looked at; SameSite=Strict keeps the cookie off it anyway).
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin = origin.to_str().ok();
    match (origin, host) {
        (Some(o), Some(h)) => o == format!("http://{h}") || o == format!("https://{h}"),
        _ => false,
    }
}

/// The session of a workbench POST: 401 without one, 403 without its CSRF token or from
/// another origin.
pub(crate) fn posting(state: &AppState, headers: &HeaderMap) -> Result<Session, ApiError> {
    if !same_origin(headers) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "cross_origin",
            "a workbench POST from another origin",
            None,
        ));
    }
    let Some(s) = session(state, headers) else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "no_session",
            "log in at /review/login first (the workbench takes a reviewer's session, not a bearer token)",
            None,
        ));
    };
    let given = headers.get("x-csrf-token").and_then(|v| v.to_str().ok());
    if !csrf_matches(&s, given) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "bad_csrf_token",
            "the request lacks this session's CSRF token (X-CSRF-Token): reload the page",
            None,
        ));
    }
    Ok(s)
}

/// Whether the cookie may go without `Secure`: only to a browser on this machine (plain
/// `http://` there; anywhere else the workbench sits behind TLS, docs/DEPLOYING.md).
fn loopback_host(headers: &HeaderMap) -> bool {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let name = match host.rsplit_once(':') {
        Some((n, port)) if port.chars().all(|c| c.is_ascii_digit()) => n,
        _ => host,
    };
    matches!(name, "127.0.0.1" | "localhost" | "[::1]")
}

fn cookie(headers: &HeaderMap, value: &str, max_age: u64) -> Option<HeaderValue> {
    let secure = if loopback_host(headers) {
        ""
    } else {
        "; Secure"
    };
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; Path=/review; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .ok()
}

pub(crate) async fn get_login(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if session(&state, &headers).is_some() {
        return page::see_other("/review/");
    }
    page::login(StatusCode::OK, None)
}

/// Checks the token against every configured one (constant time, all compared), opens a
/// session, sets the cookie, goes to the queue.
pub(crate) async fn post_login(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    if !same_origin(&headers) {
        return page::login(StatusCode::FORBIDDEN, Some("a login from another origin"));
    }
    let Some(reviewer) = reviewer_of(&state, &form.token) else {
        tracing::warn!("review workbench: a login with an unknown token");
        return page::login(StatusCode::UNAUTHORIZED, Some("that token opens nothing"));
    };
    let (id, _) = match state.sessions.open(&reviewer, Instant::now()) {
        Ok(opened) => opened,
        Err(e) => return page::login(StatusCode::SERVICE_UNAVAILABLE, Some(&e.to_string())),
    };
    tracing::info!(reviewer = %reviewer, "review workbench: logged in");
    let mut resp = page::see_other("/review/");
    if let Some(c) = cookie(&headers, &id, SESSION_TTL.as_secs()) {
        resp.headers_mut().insert(header::SET_COOKIE, c);
    }
    resp
}

/// The reviewer whose token `given` is.
fn reviewer_of(state: &AppState, given: &str) -> Option<String> {
    use subtle::ConstantTimeEq;
    let mut found = None;
    for t in &state.engine.config().reviewer_tokens {
        let same = given.len() == t.token.expose().len()
            && bool::from(given.as_bytes().ct_eq(t.token.expose().as_bytes()));
        if same {
            found = Some(t.name.clone());
        }
    }
    found
}

pub(crate) async fn post_logout(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    posting(&state, &headers)?;
    if let Some(id) = cookie_id(&headers) {
        state.sessions.close(&id);
    }
    let mut resp = page::see_other("/review/login");
    if let Some(c) = cookie(&headers, "", 0) {
        resp.headers_mut().insert(header::SET_COOKIE, c);
    }
    Ok(resp.into_response())
}
