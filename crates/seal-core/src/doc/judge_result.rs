//! What judges answer (JudgeOutput), its normalized form (JudgeResult/1), and the record
//! stored in place of an answer when there is none (JudgeAttemptFailure/1).

use serde::{Deserialize, Serialize};

use super::common::SequenceRef;
use crate::canonical::Hash;
use crate::ids::Slot;

pub const JUDGE_RESULT: &str = "JudgeResult/1";
pub const ATTEMPT_FAILURE: &str = "JudgeAttemptFailure/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Satisfied,
    Failed,
    NotObserved,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OutputObligation {
    pub id: String,
    pub verdict: Verdict,
    pub sequence_refs: Vec<SequenceRef>,
    pub frame_hashes: Vec<String>,
    pub rationale: String,
}

/// A judge's answer, as extracted from the message content and validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeOutput {
    pub obligations: Vec<OutputObligation>,
}

/// A judge's status for one obligation after normalization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeStatus {
    Satisfied,
    Failed,
    Missing,
}

impl JudgeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            JudgeStatus::Satisfied => "satisfied",
            JudgeStatus::Failed => "failed",
            JudgeStatus::Missing => "missing",
        }
    }
    /// A claim is a satisfied or failed verdict; missing claims nothing.
    pub fn is_claim(self) -> bool {
        !matches!(self, JudgeStatus::Missing)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResultObligation {
    pub id: String,
    pub status: JudgeStatus,
    pub sequence_refs: Vec<SequenceRef>,
    pub frame_hashes: Vec<String>,
    pub rationale: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SlotFailed {
    pub error_class: crate::vocab::ErrorClass,
    pub attempts: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JudgeResult {
    pub schema_version: String,
    pub slot: Slot,
    pub package_hash: Hash,
    pub prompt_artifact_hash: Hash,
    pub model: Option<String>,
    pub obligations: Vec<ResultObligation>,
    pub unknown_obligation_ids: Vec<String>,
    pub warnings: Vec<String>,
    pub slot_failed: Option<SlotFailed>,
    pub attempts: Vec<AttemptHashes>,
}

/// One stored attempt of a slot, bound by hash (so the seal covers requests, raw answers and
/// metas, not only the accepted answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttemptHashes {
    pub attempt: u32,
    pub request_hash: Option<Hash>,
    pub raw_hash: Hash,
    pub meta_hash: Hash,
    pub accepted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureStage {
    Transport,
    Parse,
    Guard,
    /// Closed unsent: the roll was reserved under another configuration (`config_changed`).
    Config,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttemptFailure {
    pub schema_version: String,
    pub slot: Slot,
    pub session_id: String,
    pub attempt: u32,
    pub stage: FailureStage,
    pub error_class: crate::vocab::ErrorClass,
    pub detail: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}
