//! `POST /v1/runs/{id}/rolls/{n}`: a proof package queued (bounds, memory), parsed once
//! (element limits, schema, invariants), then [`roll::submit`]: stored and judged, or the
//! stored answer of a roll already judged with the same package. The handler only translates
//! HTTP; the use case is the engine's, the same one `seal judge` runs.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

use seal_core::ids::{RollId, RunId};
use seal_core::submission::ProofSubmission;
use seal_engine::intake::IntakeError;
use seal_engine::roll::{self, Submitted};

use crate::state::{charge_memory, run_id, QueuePlace};
use crate::{ApiError, AppState};

pub(crate) fn roll_body(run: &RunId, r: &roll::RollReport) -> Value {
    json!({
        "runId": run,
        "rollId": r.roll().roll_id,
        "rollOutcome": r.roll().roll_outcome,
        "decision": r.consensus().decision,
        "degraded": r.consensus().degraded,
        "conflicts": r.consensus().conflicts,
        "errors": r.roll().errors,
        "costRmb": r.roll().cost_rmb,
        "consensusRef": r.roll().judge_consensus_ref,
        "consensusHash": r.roll().judge_consensus_hash,
        "next": r.next(),
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
    // A place in the queue before any work: past the bound, the caller retries later.
    if state.queued.fetch_add(1, Ordering::SeqCst) >= state.queue_limit {
        state.queued.fetch_sub(1, Ordering::SeqCst);
        return Err(ApiError::busy(2));
    }
    let _place = QueuePlace(state.queued.clone());
    let _memory = charge_memory(&state, body.len())?;
    let engine = &state.engine;
    let limits = &engine.config().package_limits;
    let submission = ProofSubmission::parse(&body, Some(limits), engine.store().doc_limit())
        .map_err(|e| IntakeError::submission(&run, roll, e))?;
    let accepted = match roll::submit(engine, &run, roll, &submission).await? {
        Submitted::AlreadyJudged(done) => {
            return Ok((StatusCode::OK, Json(roll_body(&run, &done))).into_response())
        }
        Submitted::Accepted(accepted) => accepted,
    };
    // Both judges down: the roll waits for them rather than being sealed `infra_error` (the
    // pipeline would re-play the game for nothing). A roll already judged was answered above.
    if let Some(wait) = engine.judges().unavailable() {
        return Err(ApiError::judges_unavailable(
            run.as_str(),
            &roll.to_string(),
            wait,
        ));
    }
    // The judges are asked only under a judge policy the log holds, and nothing is appended
    // to the log before its admission: a roll that comes before both waits, as finalize does
    // (the daemon logs the policy itself once the log is admitted).
    if !engine.policy_logged() {
        state
            .admission
            .wait_admitted(crate::admission::FINALIZE_WAIT)
            .await?;
    }
    let _permit = state.rolls.acquire().await.map_err(|_| ApiError::busy(2))?;
    let report = accepted.judge(&roll::Source::Live).await?;
    engine.judges().metrics.roll_judged(
        &report.roll().roll_id.to_string(),
        report.roll().roll_outcome.as_str(),
        report.consensus().degraded,
        report
            .consensus()
            .obligation_results
            .iter()
            .map(|o| o.status.as_str()),
    );
    Ok((StatusCode::OK, Json(roll_body(&run, &report))).into_response())
}
