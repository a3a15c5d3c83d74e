//! The agent-loop `Verdict` as the adapter reads it: its types (upstream
//! `verdict.schema.json`, after schema validation), the strict parse, and the helpers that read
//! Verdict values and the evidence's extension fields, and check a Verdict built from evidence.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AdaptError, VERDICT_LIMIT};
use crate::contracts::Kind;
use crate::doc::Evidence;
use crate::validate::{validate_as, Report};

/// An agent-loop Verdict (upstream `verdict.schema.json`), after schema validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentLoopVerdict {
    pub design_id: String,
    /// Integer or string, as written.
    pub task_id: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<Value>,
    pub decision: String,
    pub structure_ok: bool,
    pub runnable_ok: bool,
    pub play_report: Option<PlayReport>,
    pub findings: Vec<VerdictFinding>,
    pub reasons: Vec<String>,
    pub round: u8,
    pub evidence: VerdictEvidence,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlayReport {
    pub loaded: bool,
    pub clicks: u64,
    pub game_end: Option<GameEnd>,
    pub console_errors: Vec<String>,
    pub asset_load_errors: u64,
    pub package_checksum_verified: bool,
    pub emits_captured: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GameEnd {
    pub completed: bool,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictFinding {
    pub severity: String,
    pub issue: String,
    pub suggestion: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerdictEvidence {
    pub trace_id: String,
    pub prompt_versions: BTreeMap<String, String>,
}

/// Parses and validates a Verdict strictly, naming `object` in any error.
pub fn parse_verdict(object: &str, bytes: &[u8]) -> Result<(Value, AgentLoopVerdict), AdaptError> {
    let invalid = |reason: String| AdaptError::InvalidVerdict {
        object: object.to_string(),
        reason,
    };
    let value = crate::json::parse(bytes, VERDICT_LIMIT).map_err(|e| invalid(e.to_string()))?;
    match validate_as(Kind::Verdict, &value) {
        Report::Valid(_) => {}
        Report::Invalid(_, findings) => {
            return Err(invalid(
                findings
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            ))
        }
        Report::Unusable(reason) => return Err(invalid(reason)),
    }
    let verdict: AgentLoopVerdict =
        serde_json::from_value(value.clone()).map_err(|e| invalid(e.to_string()))?;
    Ok((value, verdict))
}

/// The taskId as a string: a number in decimal, a string as written (so `123` and `"123"`
/// name the same task, here and in `seal shadow-report`).
pub fn task_id_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => u.to_string(),
            (_, Some(i), _) => i.to_string(),
            // An integral double (`12.0`) is the integer the schema accepted.
            (_, _, Some(f)) if f.fract() == 0.0 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Reading the evidence's extension fields

pub(crate) fn ext<'a>(e: &'a Evidence, field: &'static str) -> Result<&'a Value, AdaptError> {
    e.extensions
        .0
        .get(field)
        .ok_or_else(|| AdaptError::Extension {
            run: e.run_id.clone(),
            field,
            reason:
                "missing: only a run adapted from (or bound to) an agent-loop design has a Verdict"
                    .into(),
        })
}

pub(crate) fn ext_string(e: &Evidence, field: &'static str) -> Result<String, AdaptError> {
    match ext(e, field)? {
        Value::String(s) => Ok(s.clone()),
        other => Err(AdaptError::Extension {
            run: e.run_id.clone(),
            field,
            reason: format!(
                "must be a string, found {}",
                crate::contracts::type_name(other)
            ),
        }),
    }
}

pub(crate) fn ext_id(e: &Evidence, field: &'static str) -> Result<Value, AdaptError> {
    match ext(e, field)? {
        v @ (Value::String(_) | Value::Number(_)) => Ok(v.clone()),
        other => Err(AdaptError::Extension {
            run: e.run_id.clone(),
            field,
            reason: format!(
                "must be an integer or a string, found {}",
                crate::contracts::type_name(other)
            ),
        }),
    }
}

pub(crate) fn non_negative_int(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| {
                *f >= 0.0 && f.fract() == 0.0 && *f <= crate::canonical::MAX_SAFE_INTEGER as f64
            })
            .map(|f| f as u64)
    })
}

/// The Verdict if it validates against the Verdict schema, else why not.
pub(crate) fn checked(run: String, verdict: Value) -> Result<Value, AdaptError> {
    match validate_as(Kind::Verdict, &verdict) {
        Report::Valid(_) => Ok(verdict),
        Report::Invalid(_, findings) => Err(AdaptError::InvalidResult {
            run,
            reason: findings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        }),
        Report::Unusable(reason) => Err(AdaptError::InvalidResult { run, reason }),
    }
}
