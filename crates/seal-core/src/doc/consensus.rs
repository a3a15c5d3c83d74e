//! JudgeConsensus/1: the stored consensus of one roll.

use serde::{Deserialize, Serialize};

use super::common::Outcome;
use super::evidence::{ConsensusObligation, IndependenceChecks, Projection};
use crate::canonical::Hash;
use crate::ids::RollId;
use crate::key::Key;

pub const JUDGE_CONSENSUS: &str = "JudgeConsensus/1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JudgeConsensus {
    pub schema_version: String,
    pub roll_id: RollId,
    pub strategy_version: String,
    pub package_hash: Hash,
    pub floor_passed: bool,
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

impl JudgeConsensus {
    /// The v3 projection of this consensus as stored at `consensus_ref` with `consensus_hash`.
    pub fn project(&self, consensus_ref: &Key, consensus_hash: &Hash) -> Projection {
        Projection {
            schema_version: self.schema_version.clone(),
            source_roll_id: Some(self.roll_id),
            consensus_ref: Some(consensus_ref.clone()),
            consensus_hash: Some(consensus_hash.clone()),
            package_hash: self.package_hash.clone(),
            strategy_version: self.strategy_version.clone(),
            decision: self.decision,
            degraded: self.degraded,
            same_model: self.same_model,
            independence_checks: self.independence_checks,
            judge_a_result_hash: self.judge_a_result_hash.clone(),
            judge_b_result_hash: self.judge_b_result_hash.clone(),
            obligation_results: self.obligation_results.clone(),
            conflicts: self.conflicts.clone(),
            failure_signature: self.failure_signature.clone(),
        }
    }
}
