//! Reviews of sealed runs: `POST /v1/runs/{id}/reviews` takes an envelope the reviewer signed
//! client-side (seal never holds a reviewer's key) and stores it as the run's next review once
//! `seal_engine::reviewing::submit` admitted and logged it; `GET` lists them with their checks.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use seal_core::ids::RunId;
use seal_engine::reviewing::{SubmitError, Trust};

use crate::state::run_id;
use crate::{ApiError, AppState};

pub(crate) async fn add_review(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let (status, body) = submit(&state, &run, &body).await?;
    Ok((status, Json(body)).into_response())
}

/// Admits `envelope` as `run`'s next review (`seal_engine::reviewing::submit`): 201 and the
/// stored review, or 200 when the same envelope is stored already. The API route and the
/// review workbench's both call it.
pub(crate) async fn submit(
    state: &AppState,
    run: &RunId,
    envelope: &[u8],
) -> Result<(StatusCode, Value), ApiError> {
    // A review is appended to the log: never before the log is known to account for the store.
    state
        .admission
        .wait_admitted(crate::admission::FINALIZE_WAIT)
        .await?;
    let Some(key) = state.engine.key() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "no_signing_key",
            "this daemon holds no signing key: it cannot sign the log's checkpoint",
            None,
        ));
    };
    let trust = Trust {
        seal: &state.trusted,
        reviewers: &state.reviewers,
    };
    let engine = &state.engine;
    let stored =
        seal_engine::reviewing::submit(engine.store(), engine.log(), key, trust, run, envelope)
            .await?;
    let body = json!({
        "runId": run,
        "reviewIndex": stored.index,
        "reviewRef": stored.key.as_str(),
        "reviewSha256": stored.sha256,
        "leafIndex": stored.leaf_index,
    });
    // The same review sent again answers with the stored one: 200, not 201, not 409.
    let status = if stored.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, body))
}

pub(crate) async fn reviews(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let trust = Trust {
        seal: &state.trusted,
        reviewers: &state.reviewers,
    };
    let listed = seal_engine::reviewing::list(state.engine.store(), &run, trust).await?;
    let reviews: Vec<Value> = listed
        .into_iter()
        .map(|r| {
            json!({
                "reviewIndex": r.index,
                "reviewSha256": r.sha256,
                // Stored canonical JSON, so it parses; shown as stored.
                "envelope": serde_json::from_slice::<Value>(&r.envelope).unwrap_or(Value::Null),
                "trusted": r.problem.is_none(),
                "problem": r.problem,
            })
        })
        .collect();
    Ok(Json(json!({ "runId": run, "reviews": reviews })).into_response())
}

impl From<SubmitError> for ApiError {
    fn from(e: SubmitError) -> ApiError {
        let msg = e.to_string();
        match e {
            SubmitError::NotFound { run } => ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                msg,
                Some(format!("run {run}")),
            ),
            SubmitError::NotVerified(report) => ApiError::new(
                StatusCode::CONFLICT,
                "not_verified",
                msg,
                Some(format!("run {}", report.run_id)),
            ),
            SubmitError::Refused { run, error } => {
                use seal_core::review::Refusal;
                let status = match error.refusal {
                    Refusal::Untrusted => StatusCode::FORBIDDEN,
                    Refusal::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
                    Refusal::Conflict | Refusal::Stale => StatusCode::CONFLICT,
                };
                ApiError::new(
                    status,
                    error.refusal.code(),
                    msg,
                    Some(format!("run {run} reviews")),
                )
            }
            SubmitError::Stored { key, .. } => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "corrupt_store",
                msg,
                Some(key),
            ),
            SubmitError::Log(l) => l.into(),
            SubmitError::Store(s) => s.into(),
        }
    }
}
