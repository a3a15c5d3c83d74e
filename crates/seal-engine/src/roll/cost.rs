//! Stage 3: the cost reservation. Before any call, the worst case of both slots (every
//! attempt, the request's text as an upper bound on input tokens, every image, the maximum
//! output) is reserved against the run budget; over budget, no judge is called. A replay
//! spends nothing new: it carries the reservation its answers were bought under.

use serde_json::Value;

use super::dispatch::Jobs;
use super::guard::Guarded;
use super::package::Packaged;
use super::{JudgingError, Source};
use crate::engine::Engine;
use crate::judge_http::JudgeClient;
use crate::run_state::OpenRun;
use seal_core::doc::*;
use seal_core::vocab::GuardCheck;
use seal_store::{Key, StoreError, Stored};

pub(super) async fn reserve(
    engine: &Engine,
    open: &OpenRun,
    g: &Guarded,
    p: &Packaged,
    jobs: &Jobs<'_>,
    source: &Source,
) -> Result<((CostReservation, Stored), Check<GuardCheck>), JudgingError> {
    let store = &engine.store;
    let (ja, jb) = (&engine.judges.a, &engine.judges.b);
    let images = p.manifest.frames.len() as u64;
    let price_a = slot_price(ja, &ja.build_request(&jobs.a), images);
    let price_b = slot_price(jb, &jb.build_request(&jobs.b), images);
    // Spent before this roll: the header's cost, the earlier rolls', this roll's actor.
    let spent_before = rmb_to_micro(open.header().cost_rmb)
        + open
            .rolls()
            .iter()
            .filter(|r| r.roll_id < g.roll)
            .map(|r| rmb_to_micro(r.cost_rmb))
            .sum::<u64>()
        + rmb_to_micro(g.proof.actor_cost_rmb);
    let reserved = rmb_to_micro(price_a.worst_case_rmb) + rmb_to_micro(price_b.worst_case_rmb);
    let budget = engine.config.budget_run_micro;
    let reservation = CostReservation {
        schema_version: COST_RESERVATION.into(),
        roll_id: g.roll,
        budget_rmb: micro_to_rmb(budget),
        spent_before_rmb: micro_to_rmb(spent_before),
        reserved_rmb: micro_to_rmb(reserved),
        within_budget: spent_before + reserved <= budget,
        price_table: PriceTable {
            a: price_a,
            b: price_b,
        },
        reservation_mac: None,
    };
    let key = Key::roll_file(&g.run, g.roll, "cost-reservation.json");
    let (reservation, stored) = match source.source_roll(g.roll) {
        None => {
            let salt = engine.judges.salt();
            let reservation = seal_core::judge::reservation::sign(salt, &g.run, reservation);
            match store.put_json(&key, &reservation).await {
                Ok(p) => (reservation, p.stored),
                Err(StoreError::Conflict { existing, .. }) => {
                    stored_reservation(engine, &g.run, &key, &existing).await?
                }
                Err(e) => return Err(e.into()),
            }
        }
        // A replay carries the reservation its answers were bought under: the one the verified
        // source binds, read against its sealed hash and copied byte for byte.
        Some((from, source_roll)) => {
            let bytes = store
                .get_verified(
                    &source_roll.cost_reservation_ref,
                    &source_roll.cost_reservation_hash,
                )
                .await?;
            let stored = match store.put(&key, bytes.clone()).await {
                Ok(p) => p.stored,
                Err(StoreError::Conflict { existing, .. }) => {
                    return Err(JudgingError::Planted {
                        key: key.to_string(),
                        reason: format!(
                            "stored sha256 {existing} is not the reservation of {from}"
                        ),
                    })
                }
                Err(e) => return Err(e.into()),
            };
            let r: CostReservation = seal_store::parse_stored(&key, &bytes, store.doc_limit())?;
            seal_core::bound::check(&key, &r)?;
            (r, stored)
        }
    };
    let check = Check::new(
        GuardCheck::Budget,
        reservation.within_budget,
        format!(
            "spent {} + reserved {} RMB, budget {} RMB",
            reservation.spent_before_rmb, reservation.reserved_rmb, reservation.budget_rmb
        ),
    );
    Ok(((reservation, stored), check))
}

/// A reservation an earlier run of this roll stored with other bytes than this process derives:
/// one this deployment made under another configuration (its MAC verifies for this run and
/// roll) stands, and the roll goes on under it (a slot whose request changed is closed as
/// `config_changed`, `judge::walk`); anything else is planted.
async fn stored_reservation(
    engine: &Engine,
    run: &seal_core::ids::RunId,
    key: &Key,
    existing: &seal_core::canonical::Hash,
) -> Result<(CostReservation, Stored), JudgingError> {
    let store = &engine.store;
    let bytes = store.get_verified(key, existing).await?;
    let planted = |reason: String| JudgingError::Planted {
        key: key.to_string(),
        reason,
    };
    let stored: CostReservation = seal_store::parse_stored(key, &bytes, store.doc_limit())
        .map_err(|e| planted(format!("not a cost reservation: {e}")))?;
    // Its MAC is keyed by the roll written inside it: another roll's genuine reservation copied
    // here verifies, so the roll it names must be this key's before the MAC means anything.
    seal_core::bound::check(key, &stored)?;
    if !seal_core::judge::reservation::verifies(engine.judges.salt(), run, &stored) {
        return Err(planted(format!(
            "stored sha256 {existing} is not the reservation this configuration derives, and \
             its reservationMac does not verify under this deployment's salt"
        )));
    }
    tracing::warn!(
        reservation = %key,
        model_a = %stored.price_table.a.model,
        model_b = %stored.price_table.b.model,
        "this roll was reserved under another judge configuration: it goes on under that \
         reservation, and a slot whose request changed is closed as config_changed"
    );
    Ok((stored, Stored::of(key.clone(), &bytes)))
}

fn slot_price(client: &JudgeClient, request: &Value, images: u64) -> SlotPrice {
    let input = JudgeClient::input_token_bound(request);
    let attempts = client.config.max_attempts();
    let worst = client.worst_case_attempt_micro(input, images) * u64::from(attempts);
    SlotPrice {
        model: client.config.model.clone(),
        input_rmb_per_m_tok: client.config.prices.input_rmb_per_mtok,
        output_rmb_per_m_tok: client.config.prices.output_rmb_per_mtok,
        image_rmb: client.config.prices.image_rmb,
        max_attempts: attempts,
        max_input_tokens: input,
        max_output_tokens: client.config.max_tokens,
        images,
        worst_case_rmb: micro_to_rmb(worst),
        // Hashed as `judge::walk` stores it; a request that does not canonicalize is
        // `request_build` there, and pins nothing here.
        request_sha256: seal_core::canonical::canonical_bytes(request)
            .ok()
            .map(|b| seal_core::canonical::Hash::of(&b)),
    }
}
