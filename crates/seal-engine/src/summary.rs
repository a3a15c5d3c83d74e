//! What a person (or a machine with `--json`) is shown about a sealed run: the outcome, the
//! obligations × (A, B, consensus) of the source roll, the cost and the seal, read from the
//! store ([`summarize`]). The one-screen text of it is the CLI's.

use serde::Serialize;
use std::collections::HashMap;

use crate::postguard::Finalized;
use seal_core::doc::*;
use seal_core::ids::Slot;
use seal_core::vocab::Reason;
use seal_store::{Key, Store, StoreError};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObligationRow {
    pub id: String,
    pub required: bool,
    pub a: String,
    pub b: String,
    pub consensus: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub run_id: String,
    pub outcome: String,
    pub decision: String,
    pub reasons: Vec<Reason>,
    pub source_roll_id: Option<String>,
    pub rolls: Vec<RollOutcome>,
    pub obligations: Vec<ObligationRow>,
    pub conflicts: Vec<String>,
    pub cost_rmb: f64,
    pub postguard_passed: bool,
    pub store: String,
    pub evidence_ref: Key,
    pub evidence_sha256: String,
    pub seal_ref: Key,
    pub seal_sha256: String,
    pub key_id: String,
    pub wrote: bool,
}

pub async fn summarize(store: &Store, done: &Finalized) -> Result<Summary, StoreError> {
    let e = &done.evidence();
    let run = seal_core::ids::RunId::parse(&e.run_id)
        .map_err(|err| StoreError::Upload(err.to_string()))?;
    let source = e
        .source_roll_id
        .and_then(|id| e.rolls.iter().find(|r| r.roll_id == id));
    let mut slots: Vec<Option<JudgeResult>> = vec![None, None];
    let mut consensus: Option<JudgeConsensus> = None;
    if let Some(r) = source {
        for (i, slot) in Slot::BOTH.iter().enumerate() {
            let sref = r.slot_ref(*slot);
            slots[i] = store
                .get_json_verified(&sref.normalized_ref, &sref.result_hash)
                .await
                .ok();
        }
        consensus = store
            .get_json_verified(&r.judge_consensus_ref, &r.judge_consensus_hash)
            .await
            .ok();
    }
    let obligations = obligation_rows(
        &e.proof_obligations,
        slots[0].as_ref(),
        slots[1].as_ref(),
        consensus.as_ref(),
    );
    Ok(Summary {
        run_id: e.run_id.clone(),
        outcome: e
            .outcome
            .map(|o| o.as_str().to_string())
            .unwrap_or_default(),
        decision: e
            .decision
            .as_ref()
            .map(|d| d.action.as_str().to_string())
            .unwrap_or_default(),
        reasons: e
            .decision
            .as_ref()
            .map(|d| d.reasons.clone())
            .unwrap_or_default(),
        source_roll_id: e.source_roll_id.map(|r| r.to_string()),
        rolls: e
            .rolls
            .iter()
            .map(|r| RollOutcome {
                roll_id: r.roll_id,
                outcome: r.roll_outcome,
            })
            .collect(),
        obligations,
        conflicts: consensus.map(|c| c.conflicts).unwrap_or_default(),
        cost_rmb: e.cost_rmb,
        postguard_passed: e.final_postguard.as_ref().is_some_and(|p| p.passed),
        store: store.url().to_string(),
        evidence_ref: Key::evidence(&run),
        evidence_sha256: done.evidence_hash().to_string(),
        seal_ref: Key::seal(&run),
        seal_sha256: done.envelope_hash().to_string(),
        key_id: done
            .envelope()
            .signatures
            .first()
            .map(|s| s.keyid.clone())
            .unwrap_or_default(),
        wrote: done.wrote(),
    })
}

/// The obligations × (A, B, consensus) table, sorted by id. One index per source, so it is
/// linear in the number of obligations (a lookup per row would be quadratic).
pub fn obligation_rows(
    obligations: &[ProofObligation],
    a: Option<&JudgeResult>,
    b: Option<&JudgeResult>,
    consensus: Option<&JudgeConsensus>,
) -> Vec<ObligationRow> {
    fn index(res: Option<&JudgeResult>) -> Option<HashMap<&str, &str>> {
        let r = res?;
        Some(
            r.obligations
                .iter()
                .map(|o| (o.id.as_str(), o.status.as_str()))
                .collect(),
        )
    }
    let status_of =
        |res: Option<&JudgeResult>, map: &Option<HashMap<&str, &str>>, id: &str| match (res, map) {
            (Some(r), _) if r.slot_failed.is_some() => "(failed)".to_string(),
            (Some(_), Some(m)) => m
                .get(id)
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".into()),
            _ => "-".to_string(),
        };
    let (index_a, index_b) = (index(a), index(b));
    let index_c: HashMap<&str, &str> = consensus
        .map(|c| {
            c.obligation_results
                .iter()
                .map(|x| (x.id.as_str(), x.status.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let mut ids: Vec<&ProofObligation> = obligations.iter().collect();
    ids.sort_by(|x, y| x.id.cmp(&y.id));
    ids.iter()
        .map(|o| ObligationRow {
            id: o.id.clone(),
            required: o.required,
            a: status_of(a, &index_a, &o.id),
            b: status_of(b, &index_b, &o.id),
            consensus: index_c
                .get(o.id.as_str())
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".into()),
        })
        .collect()
}
