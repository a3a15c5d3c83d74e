//! The review workbench, `/review/` on `seal serve`: people work through the adjudication
//! queue in a browser and sign their reviews there, with a key their browser holds.
//!
//! - [`login`]: reviewer tokens → sessions (`crate::sessions`), CSRF on every POST.
//! - [`page`]: the queue and a run's page (the explain page's own content beside a decision
//!   form), under a Content-Security-Policy that runs only `/review/static/workbench.js`.
//! - [`api`]: the unsigned statement for the decisions chosen, and the signed review (the same
//!   `seal_engine::reviewing::submit` as `POST /v1/runs/{id}/reviews`).
//!
//! Decision: the browser signs. The page generates (or imports) an Ed25519 key through
//! WebCrypto, keeps it non-extractable in IndexedDB, shows its public key as SPKI PEM for
//! `reviewers.trusted`, checks the statement bytes the daemon offers against what the reviewer
//! chose (re-canonicalized, field by field), and signs their DSSE PAE; so the stored envelope
//! is what `seal review` would have stored, and the daemon never holds a reviewer's key.

mod api;
mod login;
mod page;

use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use seal_core::ids::RunId;
use seal_engine::verify::Scope;

use crate::routes::reads::verifier;
use crate::state::run_id;
use crate::{ApiError, AppState};
use page::Filters;

/// The workbench's script and style sheet, in the binary (no CDN, no inline script).
const SCRIPT: &str = include_str!("static/workbench.js");
const STYLE: &str = include_str!("static/workbench.css");

/// The routes under `/review`.
pub(crate) fn router(state: AppState) -> Router<AppState> {
    let limit = seal_core::review::MAX_ENVELOPE_BYTES as usize;
    Router::new()
        .route("/review", get(|| async { page::see_other("/review/") }))
        .route("/review/", get(get_queue))
        .route(
            "/review/login",
            get(login::get_login).post(login::post_login),
        )
        .route("/review/logout", post(login::post_logout))
        .route("/review/runs/{run_id}", get(get_run))
        .route(
            "/review/api/runs/{run_id}/statement",
            post(api::post_statement),
        )
        .route("/review/api/runs/{run_id}/reviews", post(api::post_review))
        .route("/review/static/{name}", get(get_static))
        .layer(DefaultBodyLimit::max(limit))
        .route_layer(middleware::from_fn_with_state(state, open_only))
}

/// Every workbench route answers "closed" when no reviewer token is configured.
async fn open_only(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if state.engine.config().reviewer_tokens.is_empty() {
        return page::closed();
    }
    next.run(req).await
}

async fn get_static(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "workbench.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        "workbench.css" => (STYLE, "text/css; charset=utf-8"),
        "explain.css" => (
            seal_engine::explain_load::html::STYLE,
            "text/css; charset=utf-8",
        ),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

async fn get_queue(
    State(state): State<AppState>,
    Query(filters): Query<Filters>,
    headers: HeaderMap,
) -> Response {
    let Some(s) = login::session(&state, &headers) else {
        return page::see_other("/review/login");
    };
    match queue(&state).await {
        Ok(all) => page::queue(&s.reviewer, &s.csrf, &all, &filters),
        Err(e) => page::error(e.status, &s.reviewer, &e.message),
    }
}

async fn queue(state: &AppState) -> Result<Vec<seal_engine::stats_load::QueueEntry>, ApiError> {
    let verifier = verifier(state, Scope::All).await?;
    Ok(seal_engine::stats_load::review_queue_entries(state.engine.store(), &verifier).await?)
}

/// Where to go after `done` is reviewed: the first run of the queue the filters keep, else
/// the queue.
pub(crate) async fn next_page(
    state: &AppState,
    filters: &Filters,
    done: &RunId,
) -> Result<String, ApiError> {
    let all = queue(state).await?;
    let q = filters.query();
    Ok(all
        .iter()
        .filter(|e| filters.keeps(e) && e.row.run_id != done.as_str())
        .map(|e| format!("/review/runs/{}{q}", e.row.run_id))
        .next()
        .unwrap_or(format!("/review/{q}")))
}

async fn get_run(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(filters): Query<Filters>,
    headers: HeaderMap,
) -> Response {
    let Some(s) = login::session(&state, &headers) else {
        return page::see_other("/review/login");
    };
    match run_page(&state, &id, &filters, &s).await {
        Ok(r) => r,
        Err(e) => page::error(e.status, &s.reviewer, &e.message),
    }
}

async fn run_page(
    state: &AppState,
    id: &str,
    filters: &Filters,
    s: &crate::sessions::Session,
) -> Result<Response, ApiError> {
    let run = run_id(id)?;
    let verifier = verifier(state, Scope::Runs(std::slice::from_ref(&run))).await?;
    let e = seal_engine::explain_load::explain(state.engine.store(), &run, &verifier).await?;
    let reviewers: Vec<String> = state
        .engine
        .config()
        .reviewer_keys
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let cmd = seal_engine::explain_load::html::verify_command(
        run.as_str(),
        &state.engine.store().url().to_string(),
        &["seal.pub.pem".to_string()],
        &reviewers,
    );
    let html = seal_engine::explain_load::html::main(&seal_engine::explain_load::html::Page {
        tree: &e.tree,
        tree_hash: &e.tree_hash,
        run: &e.run,
        brief: &e.brief,
        frames: &e.frames,
        verify_command: &cmd,
        reviews: &e.reviews,
    });
    let form = page::RunForm {
        run: run.as_str(),
        obligations: e
            .run
            .evidence
            .proof_obligations
            .iter()
            .map(|o| (o.id.clone(), o.required))
            .collect(),
        tree_hash: e.tree_hash.as_str(),
        evidence_sha256: e.run.evidence_hash.as_str(),
        seal_sha256: e.run.seal_hash.as_str(),
        back: filters.query(),
    };
    Ok(page::run(&s.reviewer, &s.csrf, &form, &html))
}
