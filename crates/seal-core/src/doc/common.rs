//! Building blocks shared by several documents (the `$defs` of playtest-evidence.schema.json).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::Hash;
use crate::vocab::GuardCheck;

/// Outcome of a roll or a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Fail,
    Inconclusive,
    InfraError,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Inconclusive => "inconclusive",
            Outcome::InfraError => "infra_error",
        }
    }
    /// Pass and fail end a run; the others ask for another roll.
    pub fn is_decisive(self) -> bool {
        matches!(self, Outcome::Pass | Outcome::Fail)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Genre {
    Narrative,
    Trpg,
    Heritage,
    Puzzle,
    SimBusiness,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Floor {
    pub passed: bool,
    pub checks: Vec<FloorCheck>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FloorStatus {
    Pass,
    Fail,
    Skip,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FloorCheck {
    pub id: String,
    pub status: FloorStatus,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FirstPlay {
    pub core_loop_reached: bool,
    pub core_loop_ms: Option<u64>,
    pub threshold_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Actor {
    pub model: String,
    pub prompt_id: String,
    pub prompt_version: String,
    pub session_id: String,
}

/// A frame by content address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FrameRef {
    #[serde(rename = "ref")]
    pub reference: String,
    pub hash: Hash,
    pub at_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Actions,
    Events,
}

/// An inclusive range of sequence numbers in one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceRef {
    pub stream: Stream,
    pub from: u64,
    pub to: u64,
}

/// One wanxiang-game-sdk envelope. `data` is game-controlled, untrusted text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GameEvent {
    pub seq: u64,
    pub name: String,
    pub t_ms: u64,
    pub data: serde_json::Map<String, Value>,
}

/// A normalized input (play-spec inputEvent shape plus seq).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Action {
    pub t: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    pub seq: u64,
}

/// What the actor asked for: its own words (`raw`) are never shown to a judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionRequest {
    pub raw: String,
    pub parsed: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ActionRecord {
    pub action_id: String,
    pub request: ActionRequest,
    pub normalized: Action,
    pub target_resolution: Value,
    pub valid: bool,
    pub retry_count: u64,
    pub pre_frame_ref: FrameRef,
    pub pre_event_seq: u64,
    pub dispatch_receipt: Value,
    pub virtual_time_budget_ms: u64,
    pub time_advance: Value,
    pub post_frame_ref: FrameRef,
    pub post_event_seq: u64,
    pub protocol_errors: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObligationSource {
    Brief,
    Profile,
    PlaySpec,
}

/// A play-spec assertion (`assertAfterPlay` item).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assertion {
    pub path: String,
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofObligation {
    pub id: String,
    pub description: String,
    pub required: bool,
    pub source: ObligationSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Assertion>,
}

/// One recorded check: `I` is the word of its kind ([`GuardCheck`] in a roll guard,
/// [`AuditCheck`] in the finalPostguard), written as its string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check<I> {
    pub id: I,
    pub ok: bool,
    pub detail: String,
}

impl<I> Check<I> {
    pub fn new(id: I, ok: bool, detail: impl Into<String>) -> Check<I> {
        Check {
            id,
            ok,
            detail: detail.into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuardStatus {
    Pass,
    Blocked,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guard {
    pub status: GuardStatus,
    pub checks: Vec<Check<GuardCheck>>,
}

/// Money is computed in integer micro-RMB so that sums are exact and order-independent, and
/// written as RMB numbers with at most six decimals.
pub fn micro_to_rmb(micro: u64) -> f64 {
    micro as f64 / 1_000_000.0
}

/// RMB as written in a document to micro-RMB (rounded to the nearest micro).
pub fn rmb_to_micro(rmb: f64) -> u64 {
    if rmb.is_finite() && rmb > 0.0 {
        (rmb * 1_000_000.0).round() as u64
    } else {
        0
    }
}
