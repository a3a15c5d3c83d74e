//! ProofPackage/1: one roll as the pipeline collected it (not blinded).

use serde::{Deserialize, Serialize};

use super::common::*;
use crate::ids::RollId;

pub const PROOF_PACKAGE: &str = "ProofPackage/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProofPackage {
    pub schema_version: String,
    pub roll_id: RollId,
    pub requested_game_seed: u64,
    pub actual_game_seed: u64,
    pub policy_seed: u64,
    pub actor_session_id: String,
    pub floor: Floor,
    pub first_play: FirstPlay,
    pub brief_rule_matches: Vec<String>,
    pub actions: Vec<ActionRecord>,
    pub events: Vec<GameEvent>,
    pub frames: Vec<FrameRef>,
    pub actor_cost_rmb: f64,
}
