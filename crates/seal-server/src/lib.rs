//! `seal serve`: the HTTP/JSON API the pipeline's workers call (docs/DESIGN.md §8).
//!
//! Stateless besides the store: any number of replicas can share one S3 bucket, and a restart
//! resumes from what is stored (a resubmitted roll continues where it stopped; a judge answer
//! already held is never bought again). [`run`] takes its listener and its shutdown trigger as
//! arguments, so tests bind `127.0.0.1:0` and stop the server at will.
//!
//! Bounded work: a roll takes a permit from a semaphore of `max_rolls_in_progress` before it
//! starts; at most `queue_bound` more may wait for one; past that the API answers 429 with
//! Retry-After, so memory stays flat whatever the load. Judge calls are bounded per slot too.
//!
//! Beside the API for workers, `/review/` is the review workbench (`workbench`): people log in
//! with a reviewer token and sign reviews of queued runs with a key their browser holds.

mod access;
mod admission;
mod error;
pub mod listen;
mod metrics;
mod routes;
mod sessions;
mod state;
mod store_health;
pub mod uniform;
pub mod witness_http;
mod workbench;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::middleware;
use axum::routing::{get, post, put};
use axum::Router;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;

pub use access::{exposure, Exposure, ExposureError};
pub use admission::{Admission, AdmissionGate, FINALIZE_WAIT};
pub use error::ApiError;
pub use routes::observe::REQUEST_ID;
pub use state::{AppState, BuildInfo, ROLL_AMPLIFICATION};

use access::{auth, metrics_auth};
use routes::blobs::put_blob;
use routes::reads::{
    get_explain, get_log_checkpoint, get_log_proof, get_log_tile, get_metrics, get_openapi,
    get_review_queue, get_stats, get_verify, healthz,
};
use routes::reviews::{add_review, reviews};
use routes::rolls::post_roll;
use routes::runs::{get_run, post_finalize, put_brief, put_header, put_play_spec};

/// The router (exposed for tests that want it without a socket).
pub fn router(state: AppState) -> Router {
    let doc_limit = state.engine.config().max_document_bytes as usize;
    let timeout = state.engine.config().server.request_timeout;
    let docs = Router::new()
        .route("/v1/runs/{run_id}", put(put_header).get(get_run))
        .route("/v1/runs/{run_id}/play-spec", put(put_play_spec))
        .route("/v1/runs/{run_id}/rolls/{n}", post(post_roll))
        .route("/v1/runs/{run_id}/finalize", post(post_finalize))
        .route("/v1/runs/{run_id}/verify", get(get_verify))
        .route("/v1/runs/{run_id}/explain", get(get_explain))
        .route("/v1/runs/{run_id}/log-proof", get(get_log_proof))
        .route("/v1/runs/{run_id}/reviews", post(add_review).get(reviews))
        .route("/v1/log/checkpoint", get(get_log_checkpoint))
        .route("/v1/log/tile/{*path}", get(get_log_tile))
        .route("/v1/stats", get(get_stats))
        .route("/v1/review-queue", get(get_review_queue))
        .route_layer(middleware::from_fn(uniform::json_only))
        .route("/v1/runs/{run_id}/brief", put(put_brief))
        .layer(DefaultBodyLimit::max(doc_limit));
    let blobs = Router::new()
        .route("/v1/blobs/sha256/{hex}", put(put_blob))
        .layer(DefaultBodyLimit::disable());
    let metrics = Router::new()
        .route("/metrics", get(get_metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), metrics_auth));
    Router::new()
        .merge(docs)
        .merge(blobs)
        .route("/openapi.json", get(get_openapi))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth))
        .merge(metrics)
        // The review workbench has its own access (reviewer sessions), never the bearer token.
        .merge(workbench::router(state.clone()))
        .route("/healthz", get(healthz))
        .route("/livez", get(routes::health::livez))
        .route("/readyz", get(routes::health::readyz))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "no_route", "no such route", None)
        })
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        .layer(middleware::from_fn_with_state(
            state.engine.config().server.body_timeout,
            uniform::body_timeout,
        ))
        .layer(middleware::from_fn(uniform::uri_bound))
        .layer(middleware::from_fn(uniform::uniform_errors))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            routes::observe::observe,
        ))
        .with_state(state)
}

/// Serves on `listener` until `shutdown` resolves; then stops accepting and gives in-flight
/// requests up to the configured grace period to finish.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let server_cfg = &state.engine.config().server;
    let grace = server_cfg.shutdown_grace;
    let limits = listen::ConnLimits {
        max_connections: server_cfg.max_connections,
        header_timeout: server_cfg.header_timeout,
    };
    if let Some((soft, hard)) = listen::raise_fd_limit() {
        tracing::info!(soft, hard, "open-file limit");
    }
    let (tx, rx) = tokio::sync::watch::channel(false);
    let prober = tokio::spawn(probe_judges(state.engine.clone(), rx.clone()));
    let app = router(state);
    let server = listen::serve(listener, app, limits, async move {
        shutdown.await;
        let _ = tx.send(true);
        tracing::info!("shutting down: no new connections, finishing in-flight work");
    });
    let mut rx = rx;
    let deadline = async move {
        let _ = rx.wait_for(|v| *v).await;
        tokio::time::sleep(grace).await;
    };
    let served = tokio::select! {
        r = server => r,
        _ = deadline => {
            tracing::warn!(grace_ms = grace.as_millis() as u64, "grace period over: exiting with work in flight (it resumes from the store)");
            Ok(())
        }
    };
    prober.abort();
    served
}

/// How often the judge prober looks for a slot whose probe is due.
const PROBE_TICK: Duration = Duration::from_millis(500);

/// Probes each judge slot at start and, while a slot is down, whenever its cooldown is over
/// (`judge_http::health`), until shutdown: a daemon whose judges are down learns they are back
/// without a roll being sent to it (its `/readyz` takes it out of a load balancer meanwhile).
async fn probe_judges(
    engine: seal_engine::engine::Engine,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        engine.judges().probe_due().await;
        tokio::select! {
            _ = tokio::time::sleep(PROBE_TICK) => {}
            _ = stop.wait_for(|v| *v) => return,
        }
    }
}

/// The API description (docs/openapi.yaml, as JSON).
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

/// How long a client should wait after a 429 (seconds).
pub const RETRY_AFTER_S: Duration = Duration::from_secs(2);
