//! The pure rules of admission (what the engine's intake applies before it stores anything):
//! the provenance a submitter may claim, whether a play-spec fits its header, and the room a
//! run's snapshot needs. The CLI's run folder and the HTTP API both come through them.

use serde_json::Value;

use crate::doc::*;
use crate::ids::RunId;

/// Who submits a header, which decides what provenance it may claim. Replay and legacy
/// provenance are facts only seal asserts: `historical_replay` headers and `<id>.replay-<n>`
/// run ids are made by `seal replay` alone; `legacy-adapted` headers by `seal adapt`, whose
/// run folders the operator judges with `seal judge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The pipeline, over the HTTP API: native runs only.
    Pipeline,
    /// An operator's run folder (`seal judge`): native or adapted runs.
    Operator,
    /// `seal replay`, building a `historical_replay` run.
    Replay,
}

/// What provenance `origin` may not claim.
pub fn provenance_problem(origin: Origin, run: &RunId, h: &Evidence) -> Option<String> {
    let replay_id = run.is_replay_id();
    match origin {
        Origin::Replay => (h.acceptance_mode != AcceptanceMode::HistoricalReplay)
            .then(|| "a replay header must be historical_replay".to_string()),
        Origin::Pipeline | Origin::Operator => {
            if h.acceptance_mode == AcceptanceMode::HistoricalReplay {
                Some("acceptanceMode historical_replay is made only by seal replay".into())
            } else if replay_id {
                Some(format!(
                    "run ids of the form <id>.replay-<n> are reserved for seal replay ({run})"
                ))
            } else if origin == Origin::Pipeline && h.evidence_mode == EvidenceMode::LegacyAdapted {
                Some("evidenceMode legacy-adapted is made only by seal adapt".into())
            } else {
                None
            }
        }
    }
}

/// Why a play-spec cannot be used with this header (stale, or checks it does not contain).
pub fn play_spec_problems(spec: &Value, header: &Evidence) -> Vec<String> {
    let mut out = Vec::new();
    let source = spec
        .pointer("/derivedFrom/sourceHash")
        .and_then(Value::as_str)
        .unwrap_or("");
    if source != header.artifact_hash.as_str() {
        out.push(format!(
            "stale play-spec: derivedFrom.sourceHash {source:?} is not the header's artifactHash {}",
            header.artifact_hash
        ));
    }
    let assertions: Vec<Assertion> = spec
        .get("assertAfterPlay")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    for o in &header.proof_obligations {
        if let (ObligationSource::PlaySpec, Some(c)) = (o.source, &o.check) {
            if !assertions.contains(c) {
                out.push(format!(
                    "obligation {} checks an assertion the play-spec does not make",
                    o.id
                ));
            }
        }
    }
    out
}

/// Room the JUDGING snapshot and the evidence need beyond the header and the source roll's
/// proof package (roll records, merge, consensus projection, decision): an eighth of the
/// document limit, at most 1 MiB (a sealed two-roll run needs a few KiB).
pub fn snapshot_reserve(doc_limit: u64) -> u64 {
    (doc_limit / 8).min(1024 * 1024)
}
