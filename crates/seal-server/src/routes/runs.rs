//! The routes that build a run: its header, brief and play-spec, its state, and the finalize
//! that decides and seals it.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use serde_json::{json, Value};

use seal_core::ids::RunId;
use seal_engine::intake::{self, Closed, Origin};
use seal_engine::run_state::RunState;
use seal_store::Key;

use crate::state::run_id;
use crate::{ApiError, AppState};

/// The answer to an accepted document: 201 created, else 200; a document re-sent to a run
/// that is finalizing or decided also says where the run stands (`phase`, `outcome`,
/// `decision`), so a retrying worker learns the result without another call.
fn accepted(run: &RunId, a: &intake::Accepted) -> Response {
    let mut body = json!({"runId": run, "key": a.stored().key.as_str(), "sha256": a.stored().hash});
    match a.closed() {
        Some(Closed::Decided(d)) => {
            let e = d.evidence();
            body["phase"] = json!(e.phase);
            body["outcome"] = json!(e.outcome);
            body["decision"] = json!(e.decision);
        }
        Some(Closed::Finalizing(_)) => body["phase"] = json!("FINALIZING"),
        None => {}
    }
    created(a.created(), body)
}

pub(crate) fn created(created: bool, body: Value) -> Response {
    (
        if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        Json(body),
    )
        .into_response()
}

pub(crate) async fn put_header(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let a = intake::put_header(&state.engine, &run, &body, Origin::Pipeline).await?;
    Ok(accepted(&run, &a))
}

pub(crate) async fn put_brief(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let a = intake::put_brief(&state.engine, &run, &body).await?;
    Ok(accepted(&run, &a))
}

pub(crate) async fn put_play_spec(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let a = intake::put_play_spec(&state.engine, &run, &body).await?;
    Ok(accepted(&run, &a))
}

pub(crate) async fn post_finalize(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    // Finalize appends to the log: never before the log is known to account for the store.
    state
        .admission
        .wait_admitted(crate::admission::FINALIZE_WAIT)
        .await?;
    let done = seal_engine::postguard::finalize(&state.engine, &run).await?;
    if done.wrote() {
        let outcome = done.evidence().outcome.map(|o| o.as_str()).unwrap_or("?");
        state.engine.judges().metrics.run_decided(outcome);
    }
    let e = done.evidence();
    Ok(Json(json!({
        "runId": run,
        "outcome": e.outcome,
        "decision": e.decision,
        "sourceRollId": e.source_roll_id,
        "costRmb": e.cost_rmb,
        "evidenceRef": Key::evidence(&run).as_str(),
        "evidenceSha256": done.evidence_hash(),
        "sealRef": Key::seal(&run).as_str(),
        "sealSha256": done.envelope_hash(),
        "keyId": done.envelope().signatures.first().map(|s| s.keyid.clone()),
    }))
    .into_response())
}

pub(crate) async fn get_run(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let standing = RunState::load(state.engine.store(), &run).await?;
    let rolls: Vec<Value> = standing
        .rolls()
        .iter()
        .map(|r| json!({"rollId": r.roll_id, "rollOutcome": r.roll_outcome}))
        .collect();
    let mut body = json!({
        "runId": run, "phase": standing.phase_name(), "rolls": rolls, "next": standing.next()
    });
    if let RunState::Decided(d) = &standing {
        body["outcome"] = json!(d.evidence().outcome);
        body["decision"] = json!(d.evidence().decision);
        body["evidenceSha256"] = json!(d.evidence_hash());
    }
    Ok(Json(body).into_response())
}
