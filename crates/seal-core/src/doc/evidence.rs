//! The playtest/3 evidence document (upstream `playtest-evidence-v3.schema.json`).
//!
//! One struct for both phases: a JUDGING document has the four decided fields absent, a
//! DECIDED one has them all. Only [`crate::postguard`] writes a DECIDED document to the store.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use super::common::*;
use crate::canonical::Hash;
use crate::ids::RollId;
use crate::key::Key;
use crate::vocab::{AuditCheck, IndependenceCheck, Reason, RollError};

pub const SCHEMA_VERSION: &str = "playtest/3";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Phase {
    Precheck,
    Collecting,
    Judging,
    Decided,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcceptanceMode {
    V3Shadow,
    V3,
    HistoricalReplay,
}

impl AcceptanceMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AcceptanceMode::V3Shadow => "v3_shadow",
            AcceptanceMode::V3 => "v3",
            AcceptanceMode::HistoricalReplay => "historical_replay",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceMode {
    Native,
    LegacyAdapted,
}

/// The `^_` extension fields of playtest/3, carried through unchanged. Any other unknown
/// field is refused, as `additionalProperties: false` demands.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Extensions(pub BTreeMap<String, Value>);

impl<'de> Deserialize<'de> for Extensions {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, Value>::deserialize(d)?;
        if let Some(k) = map.keys().find(|k| !k.starts_with('_')) {
            return Err(serde::de::Error::custom(format_args!(
                "unknown field `{k}` (only `_`-prefixed extension fields are allowed)"
            )));
        }
        Ok(Extensions(map))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub schema_version: String,
    pub run_id: String,
    pub parent_run_id: Option<String>,
    pub game_id: String,
    pub genre: Genre,
    pub template_route: String,
    pub proof_profile_id: String,
    pub proof_registry_version: String,
    pub task_binding_hash: Hash,
    pub acceptance_request_hash: Hash,
    pub artifact_hash: Hash,
    pub brief_hash: Hash,
    pub acceptance_mode: AcceptanceMode,
    pub evidence_mode: EvidenceMode,
    pub phase: Phase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    pub environment: Value,
    pub floor: Floor,
    pub actor: Option<Actor>,
    pub actions: Vec<ActionRecord>,
    pub events: Vec<GameEvent>,
    pub brief_rule_matches: Vec<String>,
    pub proof_obligations: Vec<ProofObligation>,
    pub first_play: FirstPlay,
    pub rolls: Vec<Roll>,
    pub merge: Option<Merge>,
    pub source_roll_id: Option<RollId>,
    pub judge: Option<Projection>,
    pub repair: Repair,
    pub cost_rmb: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_postguard: Option<FinalPostguard>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<Compatibility>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

/// Where one judge slot's answer lives: raw bytes, the extracted object, the normalized result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JudgeSlotRef {
    pub raw_ref: Key,
    pub raw_hash: Hash,
    pub parsed_ref: Key,
    pub parsed_hash: Hash,
    pub normalized_ref: Key,
    pub result_hash: Hash,
}

/// One roll as recorded in the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Roll {
    pub roll_id: RollId,
    pub roll: u64,
    pub requested_game_seed: u64,
    pub actual_game_seed: u64,
    pub policy_seed: u64,
    pub actor_session_id: String,
    pub proof_package_ref: Key,
    pub proof_package_hash: Hash,
    pub judge_package_ref: Key,
    pub judge_package_hash: Hash,
    pub judge_a_ref: JudgeSlotRef,
    pub judge_a_hash: Hash,
    pub judge_b_ref: JudgeSlotRef,
    pub judge_b_hash: Hash,
    pub judge_consensus_ref: Key,
    pub judge_consensus_hash: Hash,
    pub cost_reservation_ref: Key,
    pub cost_reservation_hash: Hash,
    pub roll_guard: Guard,
    pub roll_outcome: Outcome,
    pub errors: Vec<RollError>,
    pub cost_rmb: f64,
}

impl Roll {
    pub fn slot_ref(&self, slot: crate::ids::Slot) -> &JudgeSlotRef {
        match slot {
            crate::ids::Slot::A => &self.judge_a_ref,
            crate::ids::Slot::B => &self.judge_b_ref,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IndependenceChecks {
    pub different_logical_client: bool,
    pub different_session: bool,
    pub different_policy_seed: bool,
    pub different_prompt_artifact: bool,
    pub different_evidence_dir: bool,
    pub different_raw_file: bool,
    pub same_judge_package: bool,
    pub same_image_manifest: bool,
    pub same_model: bool,
}

impl IndependenceChecks {
    /// The required checks (all but `sameModel`, which is recorded only), in the order of
    /// [`IndependenceCheck::ALL`].
    pub fn required(&self) -> [(IndependenceCheck, bool); 8] {
        use IndependenceCheck as C;
        [
            (C::DifferentLogicalClient, self.different_logical_client),
            (C::DifferentSession, self.different_session),
            (C::DifferentPolicySeed, self.different_policy_seed),
            (C::DifferentPromptArtifact, self.different_prompt_artifact),
            (C::DifferentEvidenceDir, self.different_evidence_dir),
            (C::DifferentRawFile, self.different_raw_file),
            (C::SameJudgePackage, self.same_judge_package),
            (C::SameImageManifest, self.same_image_manifest),
        ]
    }
    /// The required checks that failed.
    pub fn failed(&self) -> Vec<IndependenceCheck> {
        self.required()
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(n, _)| *n)
            .collect()
    }
    pub fn all_required_hold(&self) -> bool {
        self.required().iter().all(|(_, ok)| *ok)
    }
}

/// The consensus status of one obligation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObligationStatus {
    Satisfied,
    Failed,
    Missing,
    Contradicted,
    Disputed,
}

impl ObligationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ObligationStatus::Satisfied => "satisfied",
            ObligationStatus::Failed => "failed",
            ObligationStatus::Missing => "missing",
            ObligationStatus::Contradicted => "contradicted",
            ObligationStatus::Disputed => "disputed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConsensusObligation {
    pub id: String,
    pub status: ObligationStatus,
    pub sequence_refs: Vec<SequenceRef>,
    /// The sha256 of the frames cited, sorted (the consensus's own `evidenceRefs`).
    pub evidence_refs: Vec<Hash>,
}

/// The v3 `judgeConsensusProjection`: a roll's consensus as placed in the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Projection {
    pub schema_version: String,
    pub source_roll_id: Option<RollId>,
    pub consensus_ref: Option<Key>,
    pub consensus_hash: Option<Hash>,
    pub package_hash: Hash,
    pub strategy_version: String,
    pub decision: Outcome,
    pub degraded: bool,
    pub same_model: bool,
    pub independence_checks: IndependenceChecks,
    pub judge_a_result_hash: Hash,
    pub judge_b_result_hash: Hash,
    pub obligation_results: Vec<ConsensusObligation>,
    pub conflicts: Vec<String>,
    pub failure_signature: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RollOutcome {
    pub roll_id: RollId,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Merge {
    pub strategy: String,
    pub roll_outcomes: Vec<RollOutcome>,
    pub source_roll_id: Option<RollId>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Repair {
    pub round: u8,
    pub from_run_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FinalPostguard {
    pub stage: String,
    pub version: String,
    pub passed: bool,
    pub checks: Vec<Check<AuditCheck>>,
    pub judging_snapshot_hash: Hash,
    pub decided_at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionAction {
    Accept,
    Repair,
    Reject,
    Retry,
}

impl DecisionAction {
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionAction::Accept => "accept",
            DecisionAction::Repair => "repair",
            DecisionAction::Reject => "reject",
            DecisionAction::Retry => "retry",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub action: DecisionAction,
    /// Sorted as strings (the document's order), never by the enum's `Ord`.
    pub reasons: Vec<Reason>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Compatibility {
    pub accepted: bool,
    pub ok: bool,
    pub acceptance_version: AcceptanceMode,
    pub publish_frozen: bool,
    pub schema_version: String,
    pub source_roll_id: Option<RollId>,
}
