//! Who may call the API: the bearer tokens checked on every route but `/healthz` (and the
//! read-only metrics token on `/metrics` only), and where `seal serve` may listen without one.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use seal_engine::config::Secret;

use crate::{ApiError, AppState};

pub(crate) async fn auth(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let server = &state.engine.config().server;
    guarded(req, next, &[server.bearer_token.as_ref()]).await
}

/// `/metrics` takes the read-only metrics token as well as the API token, so that a scraper
/// holds no write access; the metrics token opens nothing else (it is checked only here).
pub(crate) async fn metrics_auth(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    let server = &state.engine.config().server;
    let tokens = [server.bearer_token.as_ref(), server.metrics_token.as_ref()];
    guarded(req, next, &tokens).await
}

/// Runs `req` when no token guards the route, or when it carries one of the configured
/// tokens; else 401.
pub(crate) async fn guarded(req: Request, next: Next, tokens: &[Option<&Secret>]) -> Response {
    if tokens.iter().any(Option::is_some) && !authorized(bearer(&req), tokens) {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required",
            None,
        )
        .into_response();
    }
    next.run(req).await
}

/// The credentials of an `Authorization: Bearer <token>` header. The scheme is matched
/// case-insensitively (RFC 7235 §2.1: `bearer`, `BEARER` are the same scheme); None when the
/// header is absent, not text, or of another scheme.
pub(crate) fn bearer(req: &Request) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credentials) = value.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim_matches(' '))
}

/// Whether `given` is one of the configured tokens: each compared in constant time, all of
/// them compared whatever the first answered.
pub(crate) fn authorized(given: Option<&str>, tokens: &[Option<&Secret>]) -> bool {
    use subtle::ConstantTimeEq;
    let given = given.unwrap_or("");
    tokens
        .iter()
        .flatten()
        .fold(subtle::Choice::from(0), |ok, t| {
            ok | given.as_bytes().ct_eq(t.expose().as_bytes())
        })
        .into()
}

/// Where `seal serve` is about to listen, as far as authentication goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Every address it resolves to is loopback: only this machine can connect.
    Loopback,
    /// Reachable from the network, and an API token guards every route.
    Authenticated,
    /// Reachable from the network without a token: `--insecure-no-auth` said so.
    OpenToNetwork,
}

/// Why `seal serve` refuses an address.
#[derive(Debug, thiserror::Error)]
pub enum ExposureError {
    #[error("cannot resolve the listen address {addr:?}: {detail}")]
    Unresolved { addr: String, detail: String },
    #[error(
        "refusing to listen on {addr} without an API token: it is not a loopback address, so \
         every route that submits, judges or finalizes would be open to the network. Set the \
         token's env var (server.bearer_token_env, SEAL_API_TOKEN), listen on 127.0.0.1, or \
         pass --insecure-no-auth if that is really meant"
    )]
    NoToken { addr: String },
}

impl seal_core::fault::HasFault for ExposureError {
    fn fault(&self) -> seal_core::fault::Fault {
        seal_core::fault::Fault::Caller
    }
}

/// Judges the listen address `addr` (every address it resolves to) before the daemon starts:
/// beyond loopback an API token is required unless `insecure_no_auth`.
pub fn exposure(
    addr: &str,
    has_token: bool,
    insecure_no_auth: bool,
) -> Result<Exposure, ExposureError> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<std::net::SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| ExposureError::Unresolved {
            addr: addr.chars().take(200).collect(),
            detail: e.to_string(),
        })?
        .collect();
    // An IPv4-mapped IPv6 loopback (::ffff:127.0.0.1) is loopback; an unspecified address
    // (0.0.0.0, ::) is every interface.
    let loopback = |a: &std::net::SocketAddr| a.ip().to_canonical().is_loopback();
    if !addrs.is_empty() && addrs.iter().all(loopback) {
        Ok(Exposure::Loopback)
    } else if has_token {
        Ok(Exposure::Authenticated)
    } else if insecure_no_auth {
        Ok(Exposure::OpenToNetwork)
    } else {
        Err(ExposureError::NoToken {
            addr: addr.chars().take(200).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn with_authorization(value: &str) -> Request {
        let mut req = Request::new(Body::empty());
        req.headers_mut().insert(
            header::AUTHORIZATION,
            header::HeaderValue::from_str(value).unwrap(),
        );
        req
    }

    #[test]
    fn the_bearer_scheme_is_matched_case_insensitively() {
        for value in ["Bearer tok", "bearer tok", "BEARER tok", "bEaReR  tok"] {
            assert_eq!(bearer(&with_authorization(value)), Some("tok"), "{value}");
        }
        for value in ["Basic tok", "Bearertok", "tok", "Bearer"] {
            assert_ne!(bearer(&with_authorization(value)), Some("tok"), "{value}");
        }
        assert_eq!(bearer(&Request::new(Body::empty())), None);
        let (api, metrics) = (Secret::new("api".into()), Secret::new("met".into()));
        assert!(authorized(Some("api"), &[Some(&api), Some(&metrics)]));
        assert!(authorized(Some("met"), &[Some(&api), Some(&metrics)]));
        assert!(!authorized(Some("met"), &[Some(&api)]));
        assert!(!authorized(None, &[Some(&api), None]));
    }

    #[test]
    fn a_non_loopback_listen_address_needs_a_token_or_insecure_no_auth() {
        for addr in [
            "127.0.0.1:0",
            "[::1]:0",
            "localhost:0",
            "[::ffff:127.0.0.1]:0",
        ] {
            assert_eq!(
                exposure(addr, false, false).unwrap(),
                Exposure::Loopback,
                "{addr}"
            );
        }
        for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.7:7878"] {
            let e = exposure(addr, false, false).unwrap_err().to_string();
            assert!(
                e.contains("--insecure-no-auth") && e.contains("SEAL_API_TOKEN"),
                "{e}"
            );
            assert_eq!(
                exposure(addr, true, false).unwrap(),
                Exposure::Authenticated
            );
            assert_eq!(
                exposure(addr, false, true).unwrap(),
                Exposure::OpenToNetwork
            );
        }
        assert!(matches!(
            exposure("no port here", true, true),
            Err(ExposureError::Unresolved { .. })
        ));
    }
}
