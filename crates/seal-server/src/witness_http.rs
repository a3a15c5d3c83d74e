//! `seal witness serve` on HTTP: `POST /add-checkpoint` (submission) and
//! `GET /<sha256(origin) hex>/checkpoint` (monitoring), the submission and monitoring prefixes
//! being the witness's root URL, as C2SP `tlog-witness` allows.
//!
//! Only translates the protocol: the decision is [`Witness::add_checkpoint`]. Answers are
//! plain text (`text/plain; charset=utf-8`), the 409 body is the witness's size with the
//! `text/x.tlog.size` type the spec requires. Connections go through `seal serve`'s accept loop
//! (bounded connections, header timeout), bodies are bounded (413), requests time out (408).
//!
//! No authentication, as the spec says: a submission is checked by its signature and its
//! consistency with what the witness holds (docs/DECISIONS.md, "A witness takes submissions from
//! anyone").

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

use crate::listen;
use seal_log::cosign::protocol;
use seal_log::cosign::service::{Refusal, Witness};

/// Connections served at once (a witness serves a handful of logs).
const MAX_CONNECTIONS: usize = 256;
/// Longest wait for a request head (also the keep-alive idle time).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a request may take, body and fsync included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn add_checkpoint(State(w): State<Arc<Witness>>, body: Bytes) -> Response {
    match w.add_checkpoint(&body).await {
        Ok(lines) => text(StatusCode::OK, lines),
        Err(Refusal::Conflict(size)) => (
            StatusCode::CONFLICT,
            [(header::CONTENT_TYPE, protocol::SIZE_CONTENT_TYPE)],
            protocol::encode_size(size),
        )
            .into_response(),
        Err(r) => {
            let status =
                StatusCode::from_u16(r.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            text(status, format!("{r}\n"))
        }
    }
}

async fn get_checkpoint(State(w): State<Arc<Witness>>, Path(hash): Path<String>) -> Response {
    match w.latest(&hash).await {
        Some(note) => text(StatusCode::OK, note),
        None => text(
            StatusCode::NOT_FOUND,
            "this witness has cosigned no checkpoint of that log\n".into(),
        ),
    }
}

/// The routes (exposed for tests that want them without a socket).
pub fn router(witness: Arc<Witness>) -> Router {
    Router::new()
        .route(
            &format!("/{}", protocol::ADD_CHECKPOINT),
            post(add_checkpoint).layer(DefaultBodyLimit::max(protocol::MAX_BODY_BYTES)),
        )
        .route("/{origin_hash}/checkpoint", get(get_checkpoint))
        .fallback(|| async { text(StatusCode::NOT_FOUND, "no such route\n".into()) })
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .with_state(witness)
}

/// Serves `witness` on `listener` until `shutdown` resolves.
pub async fn run(
    listener: TcpListener,
    witness: Arc<Witness>,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let limits = listen::ConnLimits {
        max_connections: MAX_CONNECTIONS,
        header_timeout: HEADER_TIMEOUT,
    };
    listen::serve(listener, router(witness), limits, shutdown).await
}
