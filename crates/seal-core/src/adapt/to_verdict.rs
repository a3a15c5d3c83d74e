//! DECIDED playtest/3 evidence → the agent-loop `Verdict` (the second half of the
//! [module doc](super)): decision, floor booleans, play report and findings, validated against
//! the Verdict schema.

use serde_json::{json, Map, Value};

use super::to_run::floor_ok;
use super::verdict::{checked, ext_id, ext_string, non_negative_int};
use super::*;
use crate::doc::*;

fn play_report_of(e: &Evidence, accept: bool) -> Value {
    if e.events.is_empty() && e.actions.is_empty() && !accept {
        return Value::Null;
    }
    let game_end = e
        .events
        .iter()
        .filter(|ev| ev.name == "game_end")
        .find_map(|ev| {
            let completed = ev.data.get("completed")?.as_bool()?;
            let duration = non_negative_int(ev.data.get("duration_ms")?)?;
            Some(json!({"completed": completed, "durationMs": duration}))
        })
        .unwrap_or(Value::Null);
    json!({
        "loaded": e.events.iter().any(|ev| ev.name == "game_loaded"),
        "clicks": e.actions.iter().filter(|a| a.normalized.t == "tap").count(),
        "gameEnd": game_end,
        "consoleErrors": [],
        "assetLoadErrors": 0,
        "packageChecksumVerified": false,
        "emitsCaptured": e.events.iter().map(|ev| ev.name.as_str()).collect::<Vec<_>>(),
    })
}

fn findings_of(e: &Evidence) -> Vec<Value> {
    let status_of = |id: &str| {
        e.judge
            .as_ref()
            .and_then(|j| j.obligation_results.iter().find(|o| o.id == id))
            .map(|o| o.status)
            .unwrap_or(ObligationStatus::Missing)
    };
    e.proof_obligations
        .iter()
        .filter(|o| o.required)
        .filter_map(|o| {
            let status = status_of(&o.id);
            if status == ObligationStatus::Satisfied {
                return None;
            }
            let issue = o
                .description
                .strip_prefix(FINDING_PREFIX)
                .filter(|s| !s.is_empty())
                .unwrap_or(&o.description);
            Some(json!({
                "severity": "P1",
                "issue": issue,
                "suggestion": format!(
                    "seal judges' consensus on {} is {}: make it hold, visibly, in play",
                    o.id,
                    status.as_str()
                ),
            }))
        })
        .collect()
}

/// The agent-loop Verdict of a DECIDED run carrying `_designId`, `_taskId`, `_traceId`
/// (see the module doc for the mapping). The result is validated against the Verdict schema.
pub fn evidence_to_verdict(evidence: &Evidence) -> Result<Value, AdaptError> {
    let run = evidence.run_id.clone();
    let (decision, verdict_decision, reason) = verdict_decision(evidence)?;
    let design_id = ext_string(evidence, "_designId")?;
    let task_id = ext_id(evidence, "_taskId")?;
    let trace_id = ext_string(evidence, "_traceId")?;
    let version_id = match evidence.extensions.0.get("_versionId") {
        None => None,
        Some(_) => Some(ext_id(evidence, "_versionId")?),
    };
    let accept = decision.action == DecisionAction::Accept;
    if accept && version_id.is_none() {
        return Err(AdaptError::NoVersionId { run });
    }
    let prompt_versions = prompt_versions_of(evidence);

    let mut verdict = Map::new();
    verdict.insert("designId".into(), json!(design_id));
    verdict.insert("taskId".into(), task_id);
    if let Some(v) = version_id {
        verdict.insert("versionId".into(), v);
    }
    verdict.insert("decision".into(), json!(verdict_decision));
    verdict.insert(
        "structureOk".into(),
        json!(floor_ok(&evidence.floor, STRUCTURE_CHECK)),
    );
    verdict.insert(
        "runnableOk".into(),
        json!(floor_ok(&evidence.floor, RUNNABLE_CHECK)),
    );
    verdict.insert("playReport".into(), play_report_of(evidence, accept));
    verdict.insert("findings".into(), Value::Array(findings_of(evidence)));
    verdict.insert("reasons".into(), json!([reason]));
    verdict.insert("round".into(), json!(evidence.repair.round));
    verdict.insert(
        "evidence".into(),
        json!({"traceId": trace_id, "promptVersions": prompt_versions}),
    );
    checked(run, Value::Object(verdict))
}

/// The decision of a decided run, and the Verdict's `decision` and reason for it; a run not
/// decided, or decided `retry`, has no Verdict.
fn verdict_decision(
    evidence: &Evidence,
) -> Result<(&Decision, &'static str, &'static str), AdaptError> {
    let run = evidence.run_id.clone();
    let decision = match (&evidence.phase, &evidence.decision) {
        (Phase::Decided, Some(d)) => d,
        (phase, _) => {
            return Err(AdaptError::NotDecided {
                run,
                phase: serde_json::to_value(phase)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| format!("{phase:?}")),
            })
        }
    };
    let (verdict_decision, reason) = match decision.action {
        DecisionAction::Accept => ("accept", "accept"),
        DecisionAction::Repair => ("fix", "p1_fix_round"),
        DecisionAction::Reject => ("kill", "p1_residual_after_fix"),
        DecisionAction::Retry => {
            return Err(AdaptError::Retry {
                run,
                reasons: crate::vocab::join(&decision.reasons, ", "),
            })
        }
    };
    Ok((decision, verdict_decision, reason))
}

/// The run's `_promptVersions` extension, else the versions this build's prompts carry.
fn prompt_versions_of(evidence: &Evidence) -> Value {
    match evidence.extensions.0.get("_promptVersions") {
        Some(v) => v.clone(),
        None => Value::Object(
            DEFAULT_PROMPT_VERSIONS
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect(),
        ),
    }
}
