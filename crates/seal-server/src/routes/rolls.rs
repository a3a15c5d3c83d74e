//! `POST /v1/runs/{id}/rolls/{n}`: a proof package admitted (bounds, memory, limits), stored
//! and judged, or the stored answer of a roll already judged with the same package.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

use seal_core::ids::{RollId, RunId};
use seal_engine::engine::Engine;
use seal_engine::intake;
use seal_engine::roll;
use seal_engine::run_state::RunState;

use crate::state::{admit_memory, run_id, Admission};
use crate::{ApiError, AppState};

pub(crate) fn roll_body(run: &RunId, r: &roll::RollReport) -> Value {
    json!({
        "runId": run,
        "rollId": r.roll.roll_id,
        "rollOutcome": r.roll.roll_outcome,
        "decision": r.consensus.decision,
        "degraded": r.consensus.degraded,
        "conflicts": r.consensus.conflicts,
        "errors": r.roll.errors,
        "costRmb": r.roll.cost_rmb,
        "consensusRef": r.roll.judge_consensus_ref,
        "consensusHash": r.roll.judge_consensus_hash,
        "next": r.next,
    })
}

pub(crate) async fn post_roll(
    State(state): State<AppState>,
    Path((id, n)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_id(&id)?;
    let roll = n
        .parse::<u64>()
        .ok()
        .and_then(|n| RollId::from_number(n).ok())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_roll",
                "roll must be 1 or 2",
                Some(format!("run {run} roll {n}")),
            )
        })?;
    // Admission before any work: past the bound, the caller retries later.
    if state.admitted.fetch_add(1, Ordering::SeqCst) >= state.admit_limit {
        state.admitted.fetch_sub(1, Ordering::SeqCst);
        return Err(ApiError::busy(2));
    }
    let _admission = Admission(state.admitted.clone());
    let _memory = admit_memory(&state, body.len())?;
    seal_core::limits::check_package(&body, &state.engine.config.package_limits).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "limit_exceeded",
            e.to_string(),
            Some(format!("run {run} {roll} proof package")),
        )
    })?;
    let engine = &state.engine;
    let _run_lock = engine.lock_run(&run).await;
    let phase = RunState::load(&engine.store, &run).await?;
    // A decided run takes no roll: only a retry of a roll it was sealed with gets its stored
    // answer; nothing is judged, nothing is stored.
    if let RunState::Decided(d) = &phase {
        if d.evidence.rolls.iter().any(|r| r.roll_id == roll) {
            if let Some(answer) = already_judged(engine, &run, roll, &body).await? {
                return Ok(answer);
            }
        }
    }
    let open = phase.open()?;
    if open.judged(roll).is_some() {
        // A record seal finished is answered; one without its receipt is judged (again),
        // which commits it only if it is exactly what seal derives.
        if let Some(answer) = already_judged(engine, &run, roll, &body).await? {
            return Ok(answer);
        }
    }
    intake::put_proof_package(engine, &run, roll, &body).await?;
    let _permit = state.rolls.acquire().await.map_err(|_| ApiError::busy(2))?;
    let report = roll::judge_open_roll(engine, &open, roll, &roll::Source::Live).await?;
    engine.judges.metrics.roll_judged(
        &report.roll.roll_id.to_string(),
        report.roll.roll_outcome.as_str(),
        report.consensus.degraded,
        report
            .consensus
            .obligation_results
            .iter()
            .map(|o| o.status.as_str()),
    );
    Ok((StatusCode::OK, Json(roll_body(&run, &report))).into_response())
}

/// A roll seal already judged (its record's receipt verifies): the same proof package gets
/// the stored answer, another one a conflict. `None` when no such record is stored.
pub(crate) async fn already_judged(
    engine: &Engine,
    run: &RunId,
    roll: RollId,
    body: &[u8],
) -> Result<Option<Response>, ApiError> {
    let store = &engine.store;
    let Some(done) = roll::stored_roll(engine, run, roll).await? else {
        return Ok(None);
    };
    let submitted = seal_core::json::parse(body, store.doc_limit())
        .ok()
        .and_then(|v| seal_core::canonical::canonical_bytes(&v).ok())
        .map(|b| seal_core::canonical::Hash::of(&b));
    if submitted.as_ref() != Some(&done.roll.proof_package_hash) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            format!("{roll} was judged with another proof package"),
            Some(format!("run {run} {roll}")),
        ));
    }
    Ok(Some(
        (StatusCode::OK, Json(roll_body(run, &done))).into_response(),
    ))
}
