//! The read-only routes: proving a run (verify, explain), the log's checkpoint and proofs,
//! the stats, the metrics, the API description and the health check.

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use seal_engine::verify::Scope;
use serde_json::json;
use std::sync::atomic::Ordering;

use seal_store::Key;

use crate::state::run_id;
use crate::{ApiError, AppState, OPENAPI_JSON};

pub(crate) async fn healthz(State(state): State<AppState>) -> Response {
    match state.engine.store().exists(&Key::health()).await {
        Ok(_) => Json(json!({"status": "ok", "store": state.engine.store().url().to_string()}))
            .into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

pub(crate) async fn get_openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON).into_response()
}

pub(crate) async fn get_metrics(State(state): State<AppState>) -> Response {
    let in_progress =
        state.engine.config().server.max_rolls_in_progress - state.rolls.available_permits();
    let queued = state.queued.load(Ordering::SeqCst);
    let log = state.engine.log();
    state
        .engine
        .judges()
        .metrics
        .log_state(log.size_now(), log.last_checkpoint_unix());
    let text = state.engine.judges().metrics.render()
        + &state
            .metrics
            .render(in_progress, queued, state.admission.get());
    (
        [(
            header::CONTENT_TYPE,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )],
        text,
    )
        .into_response()
}

pub(crate) async fn get_verify(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    if !seal_engine::verify::run_exists(state.engine.store(), &run).await? {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no run {run}"),
            Some(format!("run {run}")),
        ));
    }
    let report = verifier(&state, Scope::Runs(std::slice::from_ref(&run)))
        .await?
        .report(state.engine.store(), &run)
        .await?;
    Ok(Json(report).into_response())
}

/// `seal verify`'s verdict under the daemon's trusted keys (no witness policy: the daemon has
/// none), shared by the verify, explain and stats routes so they never disagree on a run.
pub(crate) async fn verifier(
    state: &AppState,
    scope: Scope<'_>,
) -> Result<seal_engine::verify::Verifier, ApiError> {
    let policy = seal_log::cosign::check::Policy::default();
    let store = state.engine.store();
    let trusted = state.trusted.as_ref().clone();
    let reviewers = state.reviewers.as_ref().clone();
    Ok(seal_engine::verify::Verifier::load(
        store,
        trusted,
        state.engine.log().origin(),
        &policy,
        scope,
    )
    .await?
    .with_reviewers(reviewers))
}

/// The decision tree of a sealed run: the page for `Accept: text/html`, else the JSON.
pub(crate) async fn get_explain(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let verifier = verifier(&state, Scope::Runs(std::slice::from_ref(&run))).await?;
    let explained =
        seal_engine::explain_load::explain(state.engine.store(), &run, &verifier).await?;
    let wants_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    if wants_html {
        let cmd = seal_engine::explain_load::html::verify_command(
            run.as_str(),
            &state.engine.store().url().to_string(),
            &["seal.pub.pem".to_string()],
            &[],
        );
        Ok((
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (
                    header::CONTENT_SECURITY_POLICY,
                    seal_engine::explain_load::html::CSP,
                ),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            explained.html(&cmd),
        )
            .into_response())
    } else {
        Ok((
            [(header::CONTENT_TYPE, "application/json")],
            explained.tree_bytes,
        )
            .into_response())
    }
}

/// The latest checkpoint of the transparency log that a key this daemon trusts signed, the
/// note text exactly as stored (a larger one it cannot verify is a forgery, never served).
pub(crate) async fn get_log_checkpoint(
    State(state): State<AppState>,
) -> Result<Response, ApiError> {
    let trust = seal_log::trust(state.engine.log().origin(), &state.trusted);
    match seal_log::latest_checkpoint(state.engine.store(), &trust).await? {
        Some(signed) => Ok((
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            signed.text,
        )
            .into_response()),
        None => Err(seal_log::LogError::NoCheckpoint.into()),
    }
}

/// A hash tile of the transparency log, C2SP tlog-tiles' `tile/8/<level>/<index>[.p/<width>]`
/// under `/v1/log/`: with `GET /v1/log/checkpoint`, what a tlog-tiles client reads to follow
/// the tree. The bytes are derived from the tree this replica holds, never read back from the
/// store; a client checks them against a checkpoint's root anyway.
pub(crate) async fn get_log_tile(
    State(state): State<AppState>,
    Path(path): Path<String>,
) -> Result<Response, ApiError> {
    let Some(tile) = seal_core::tlog::parse_tile_path(&format!("tile/{path}")) else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "not a hash tile's path: 8/<level 0-7>/<index, C2SP spelling>[.p/<width 1-255>]",
            None,
        ));
    };
    state
        .admission
        .wait_admitted(crate::admission::FINALIZE_WAIT)
        .await?;
    match state.engine.log().tile(&tile).await {
        Some(bytes) => {
            Ok(([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
        }
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such tile in the log this replica holds (yet)",
            None,
        )),
    }
}

/// The inclusion proof of a run's seal against the latest checkpoint (`seal log prove --json`).
pub(crate) async fn get_log_proof(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let trust = seal_log::trust(state.engine.log().origin(), &state.trusted);
    let view = seal_engine::verify::load_log(
        state.engine.store(),
        &trust,
        Scope::Runs(std::slice::from_ref(&run)),
    )
    .await?;
    let proof = view.proof(state.engine.store(), &run).await?;
    Ok(Json(proof).into_response())
}

/// The query of `GET /v1/stats`: `since`, `until`, `genre`, `policy` (each at most once);
/// anything else is refused.
pub(crate) fn stats_query(raw: Option<&str>) -> Result<seal_engine::stats_load::Query, ApiError> {
    let mut q = seal_engine::stats_load::Query::default();
    let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, "bad_query", m, None);
    for (k, v) in url::form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        let slot = match k.as_ref() {
            "since" => &mut q.since,
            "until" => &mut q.until,
            "genre" => &mut q.genre,
            "policy" => &mut q.policy,
            other => {
                let name: String = other.chars().take(64).collect();
                return Err(bad(format!(
                    "unknown query parameter {name:?} (since, until, genre, policy)"
                )));
            }
        };
        if slot.replace(v.into_owned()).is_some() {
            return Err(bad(format!("query parameter {k} given twice")));
        }
    }
    Ok(q)
}

/// The figures of `seal stats`: the page for `Accept: text/html`, else the JSON (seal.stats/1).
pub(crate) async fn get_stats(
    State(state): State<AppState>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let query = stats_query(raw.as_deref())?;
    let verifier = verifier(&state, Scope::All).await?;
    let stats = seal_engine::stats_load::stats(state.engine.store(), &verifier, query).await?;
    let wants_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    if wants_html {
        Ok((
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (
                    header::CONTENT_SECURITY_POLICY,
                    seal_engine::explain_load::html::CSP,
                ),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            stats.html(),
        )
            .into_response())
    } else {
        Ok(([(header::CONTENT_TYPE, "application/json")], stats.bytes).into_response())
    }
}

/// The adjudication queue: decided `inconclusive` runs that verify and have no trusted review
/// (under the daemon's `reviewers.trusted`), oldest decision first, each with its explain link.
pub(crate) async fn get_review_queue(State(state): State<AppState>) -> Result<Response, ApiError> {
    let verifier = verifier(&state, Scope::All).await?;
    let queue = seal_engine::stats_load::review_queue(state.engine.store(), &verifier).await?;
    Ok(Json(json!({ "count": queue.len(), "runs": queue })).into_response())
}
