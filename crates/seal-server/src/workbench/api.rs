//! The review workbench's two POSTs, each in a session with its CSRF token:
//! `statement` answers the unsigned `seal.review/1` statement for the decisions chosen, as the
//! canonical bytes `seal review` would sign (built by the same `RunFacts::statement` and
//! `canonical_bytes`); the page checks those bytes against what the reviewer chose, signs
//! their DSSE PAE with the key it holds and sends the envelope to `reviews`, which admits it
//! through the same `seal_engine::reviewing::submit` as `POST /v1/runs/{id}/reviews`. The
//! server never sees a reviewer's private key.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine as _;
use serde_json::{json, Value};

use seal_core::canonical;
use seal_core::ids::RunId;
use seal_core::review::{ObligationDecision, Status, MAX_ENVELOPE_BYTES, MAX_NOTE};
use seal_engine::engine::Clock as _;
use seal_engine::verify::Scope;

use super::login::posting;
use super::page::Filters;
use crate::routes::reads::verifier;
use crate::state::run_id;
use crate::{ApiError, AppState};

/// What the page asks a statement for.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Draft {
    /// The sha256 of the decision tree the page showed.
    shown: String,
    /// Obligation id → `satisfied|failed|missing`, every one the reviewer decided.
    decisions: std::collections::BTreeMap<String, String>,
    note: Option<String>,
}

fn unprocessable(code: &'static str, msg: String, run: &RunId) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        code,
        msg,
        Some(format!("run {run}")),
    )
}

/// The statement the reviewer is about to sign: `{payloadType, payload}` (base64 of its
/// canonical bytes), for the run as it is now (409 `shown_changed` when the decision tree is
/// no longer the one the page showed: a review landed meanwhile; reload).
pub(crate) async fn post_statement(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(draft): Json<Draft>,
) -> Result<Response, ApiError> {
    let session = posting(&state, &headers)?;
    let run = run_id(&id)?;
    let store = state.engine.store();
    let verifier = verifier(&state, Scope::Runs(std::slice::from_ref(&run))).await?;
    let explained = seal_engine::explain_load::explain(store, &run, &verifier).await?;
    if explained.tree_hash.as_str() != draft.shown {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "shown_changed",
            "the run's decision tree changed since this page was loaded (a review was added): reload it",
            Some(format!("run {run}")),
        ));
    }
    let decisions = decisions(&run, &explained.run.evidence, &draft)?;
    let note = draft.note.filter(|n| !n.is_empty());
    if note.as_ref().is_some_and(|n| n.chars().count() > MAX_NOTE) {
        return Err(unprocessable(
            "bad_note",
            format!("a note is at most {MAX_NOTE} characters"),
            &run,
        ));
    }
    let proof = match verifier.prove(store, &run).await? {
        Ok(p) => p,
        Err(report) => {
            return Err(seal_engine::reviewing::SubmitError::NotVerified(Box::new(report)).into())
        }
    };
    let mut facts = seal_engine::reviewing::facts(&run, &proof, &state.trusted);
    seal_engine::reviewing::read_checked(store, &run, &mut facts, &state.reviewers).await?;
    let now = seal_engine::engine::SystemClock.now_rfc3339();
    let statement = facts.statement(
        &session.reviewer,
        &now,
        decisions,
        note,
        &explained.tree_hash,
    );
    let payload = canonical::canonical_bytes(&statement).map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            e.to_string(),
            None,
        )
    })?;
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(Json(json!({
        "payloadType": seal_core::sealing::PAYLOAD_TYPE,
        "payload": b64.encode(&payload),
    }))
    .into_response())
}

/// The draft's decisions in the run's obligation order; an unknown obligation or status: 422.
fn decisions(
    run: &RunId,
    evidence: &seal_core::doc::Evidence,
    draft: &Draft,
) -> Result<Vec<ObligationDecision>, ApiError> {
    if draft.decisions.is_empty() {
        return Err(unprocessable(
            "no_decision",
            "decide at least one obligation".into(),
            run,
        ));
    }
    let known: Vec<&str> = evidence
        .proof_obligations
        .iter()
        .map(|o| o.id.as_str())
        .collect();
    if let Some(other) = draft
        .decisions
        .keys()
        .find(|k| !known.contains(&k.as_str()))
    {
        let shown: String = other.chars().take(80).collect();
        return Err(unprocessable(
            "unknown_obligation",
            format!("run {run} has no obligation {shown:?}"),
            run,
        ));
    }
    let mut out = Vec::new();
    for id in known {
        if let Some(st) = draft.decisions.get(id) {
            let status: Status = st.parse().map_err(|e: seal_core::review::UnknownStatus| {
                unprocessable("bad_status", e.to_string(), run)
            })?;
            out.push(ObligationDecision {
                obligation_id: id.to_string(),
                status,
            });
        }
    }
    Ok(out)
}

/// The reviewer a signed envelope's statement names (None when it names none readable).
fn signed_reviewer(envelope: &[u8]) -> Option<String> {
    let env: Value = serde_json::from_slice(envelope).ok()?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = b64.decode(env.get("payload")?.as_str()?).ok()?;
    let st: Value = serde_json::from_slice(&payload).ok()?;
    st.pointer("/predicate/reviewer")?
        .as_str()
        .map(str::to_owned)
}

/// Admits a review the page signed, as `POST /v1/runs/{id}/reviews` does, when it names the
/// session's reviewer; the answer adds `next`, the page to go to (the queue's next run under
/// the same filters, else the queue).
pub(crate) async fn post_review(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(filters): Query<Filters>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let session = posting(&state, &headers)?;
    let run = run_id(&id)?;
    if body.len() as u64 > MAX_ENVELOPE_BYTES {
        return Err(unprocessable(
            "too_large",
            format!("a review is at most {MAX_ENVELOPE_BYTES} bytes"),
            &run,
        ));
    }
    let named = signed_reviewer(&body);
    if named.as_deref() != Some(session.reviewer.as_str()) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "reviewer_mismatch",
            format!(
                "the statement names reviewer {:?}, but this session is {}'s",
                named
                    .unwrap_or_default()
                    .chars()
                    .take(80)
                    .collect::<String>(),
                session.reviewer
            ),
            Some(format!("run {run} reviews")),
        ));
    }
    let (status, mut answer) = crate::routes::reviews::submit(&state, &run, &body).await?;
    tracing::info!(run = %run, reviewer = %session.reviewer, "review workbench: review stored");
    answer["next"] = json!(super::next_page(&state, &filters, &run).await?);
    Ok((status, Json(answer)).into_response())
}
