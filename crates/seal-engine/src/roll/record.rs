//! Stage 5: what the roll amounts to. Each slot's `parsed.json` and `normalized.json` (from
//! its attempts, by [`crate::judge_http::slot::slot_documents`]), then the one derivation
//! ([`seal_core::derive::derive_roll`]: independence, consensus, outcome, errors, cost), the
//! consensus document and the roll record. The audit re-runs the same two pure functions on
//! what is stored and compares.

use serde_json::Value;

use super::dispatch::Dispatched;
use super::guard::Guarded;
use super::package::Packaged;
use super::{internal, put_derived, JudgingError, RollReport};
use crate::engine::Engine;
use crate::judge_http::slot::slot_documents;
use seal_core::derive::{derive_roll, RollInputs, SlotFacts};
use seal_core::doc::*;
use seal_core::ids::{RollId, RunId};
use seal_core::merge::next_after;
use seal_store::{Key, Store, Stored};

/// A slot's stored documents and the facts the derivation reads.
struct SlotOutcome {
    slot_ref: JudgeSlotRef,
    result: JudgeResult,
    final_meta: Option<SlotMeta>,
    final_request: Option<Value>,
    cost_micro: u64,
}

impl SlotOutcome {
    fn facts(&self) -> SlotFacts<'_> {
        SlotFacts {
            result: &self.result,
            result_hash: &self.slot_ref.result_hash,
            raw_ref: &self.slot_ref.raw_ref,
            raw_hash: &self.slot_ref.raw_hash,
            final_meta: self.final_meta.as_ref(),
            final_request: self.final_request.as_ref(),
            cost_micro: self.cost_micro,
        }
    }
}

pub(super) async fn record(
    engine: &Engine,
    g: &Guarded,
    p: &Packaged,
    guard: Guard,
    (_, reservation_stored): &(CostReservation, Stored),
    [run_a, run_b]: [Dispatched; 2],
) -> Result<RollReport, JudgingError> {
    let store = &engine.store;
    let (run, roll) = (&g.run, g.roll);
    let (out_a, out_b) = tokio::try_join!(
        finish_slot(store, run, roll, run_a, p),
        finish_slot(store, run, roll, run_b, p)
    )?;
    let derived = derive_roll(&RollInputs {
        roll_id: roll,
        guard: &guard,
        package: &p.package,
        package_hash: &p.package_hash,
        manifest: &p.manifest,
        floor_passed: g.proof.floor.passed,
        actor_cost_micro: rmb_to_micro(g.proof.actor_cost_rmb),
        a: out_a.facts(),
        b: out_b.facts(),
    });
    let consensus_key = Key::roll_file(run, roll, "consensus.json");
    let consensus_stored = put_derived(store, &consensus_key, &derived.consensus).await?;
    let consensus = derived.consensus;
    let record = Roll {
        roll_id: roll,
        roll: roll.number(),
        requested_game_seed: g.proof.requested_game_seed,
        actual_game_seed: g.proof.actual_game_seed,
        policy_seed: g.proof.policy_seed,
        actor_session_id: g.proof.actor_session_id.clone(),
        proof_package_ref: g.proof_key.clone(),
        proof_package_hash: g.proof_hash.clone(),
        judge_package_ref: p.package_stored.key.clone(),
        judge_package_hash: p.package_hash.clone(),
        judge_a_hash: out_a.slot_ref.result_hash.clone(),
        judge_a_ref: out_a.slot_ref,
        judge_b_hash: out_b.slot_ref.result_hash.clone(),
        judge_b_ref: out_b.slot_ref,
        judge_consensus_ref: consensus_stored.key.clone(),
        judge_consensus_hash: consensus_stored.hash,
        cost_reservation_ref: reservation_stored.key.clone(),
        cost_reservation_hash: reservation_stored.hash.clone(),
        roll_guard: guard,
        roll_outcome: derived.outcome,
        errors: derived.errors,
        cost_rmb: micro_to_rmb(derived.cost_micro),
    };
    let roll_key = Key::roll_file(run, roll, "roll.json");
    let roll_stored = put_derived(store, &roll_key, &record).await?;
    // The roll's commit point: its receipt says this deployment derived exactly these bytes
    // (and through their hashes every document of the roll).
    engine
        .receipt(crate::notary::ReceiptKind::Roll, &roll_stored, None)
        .await?;
    let next = next_after(roll, record.roll_outcome);
    Ok(RollReport {
        roll: record,
        consensus,
        next,
    })
}

/// Stores a slot's parsed and normalized documents; its final request is the one the slot
/// built, or (attempts copied or made under another configuration) read from the store.
async fn finish_slot(
    store: &Store,
    run_id: &RunId,
    roll: RollId,
    (run, built): Dispatched,
    p: &Packaged,
) -> Result<SlotOutcome, JudgingError> {
    let slot = run.slot;
    let final_attempt = run
        .final_attempt()
        .ok_or_else(|| internal(run_id, roll, format!("judge {slot}: no attempt recorded")))?;
    let (parsed, result) = slot_documents(slot, &run, &p.package, &p.package_hash);
    let parsed_key = Key::slot_file(run_id, roll, slot, "parsed.json");
    let normalized_key = Key::slot_file(run_id, roll, slot, "normalized.json");
    let (parsed_stored, normalized_stored) = tokio::try_join!(
        put_derived(store, &parsed_key, &parsed),
        put_derived(store, &normalized_key, &result)
    )?;
    let final_request = match (&final_attempt.request, built) {
        (Some(r), Some(b)) if r.hash == b.hash => Some(b.value),
        (Some(r), _) => {
            let bytes = store.get_verified(&r.key, &r.hash).await?;
            Some(
                seal_core::json::parse(&bytes, store.doc_limit())
                    .map_err(|e| internal(run_id, roll, e))?,
            )
        }
        (None, _) => None,
    };
    Ok(SlotOutcome {
        slot_ref: JudgeSlotRef {
            raw_ref: final_attempt.raw.key.clone(),
            raw_hash: final_attempt.raw.hash.clone(),
            parsed_ref: parsed_stored.key.clone(),
            parsed_hash: parsed_stored.hash,
            normalized_ref: normalized_stored.key.clone(),
            result_hash: normalized_stored.hash,
        },
        result,
        final_meta: Some(final_attempt.meta.clone()),
        final_request,
        cost_micro: run.cost_micro(),
    })
}
