//! Stage 4: Judge A ∥ Judge B. Per-slot identity (policy seed and session id derived from the
//! run, roll and slot under the secret salt), the independence preflight, and then one of: both
//! judges over HTTP, concurrently; the stored answers of another run (replay); or, when the
//! guard blocked the roll, a `not_dispatched` record per slot so every ref still exists.

use super::guard::Guarded;
use super::package::Packaged;
use super::{JudgingError, Source};
use crate::engine::Engine;
use crate::judge_http::parse::{evaluate_raw, ErrorClass};
use crate::judge_http::{self, AttemptRecord, JudgeClient, SlotJob, SlotRun};
use crate::notary::ReceiptKind;
use crate::resume::ResumeError;
use seal_core::canonical::Hash;
use seal_core::doc::*;
use seal_core::ids::{RollId, RunId, Slot};
use seal_core::vocab::GuardCheck;
use seal_store::{Key, Store, StoreError};

/// Both slots' jobs for one roll.
pub(super) struct Jobs<'a> {
    pub a: SlotJob<'a>,
    pub b: SlotJob<'a>,
}

impl<'a> Jobs<'a> {
    pub fn new(engine: &'a Engine, g: &'a Guarded, p: &'a Packaged) -> Jobs<'a> {
        let salt = engine.judges.salt();
        let (seed_a, seed_b) = judge_http::policy_seeds(salt, &g.run, g.roll);
        let job = |slot, seed| SlotJob {
            run: &g.run,
            roll: g.roll,
            package_bytes: &p.package_bytes,
            package_hash: &p.package_hash,
            manifest: &p.manifest,
            images: &g.frames.images,
            seed,
            session_id: judge_http::session_id(salt, &g.run, g.roll, slot),
            salt,
            pinned: None,
            policy: None,
        };
        Jobs {
            a: job(Slot::A, seed_a),
            b: job(Slot::B, seed_b),
        }
    }
}

impl Jobs<'_> {
    /// Names the registered judge policy in both slots' attempts.
    pub fn under(&mut self, policy: seal_core::policy::PolicyRef) {
        self.a.policy = Some(policy.clone());
        self.b.policy = Some(policy);
    }

    /// Fixes each slot to what the roll's stored reservation names (see [`judge_http::Pinned`]).
    pub fn pin(&mut self, reservation: &CostReservation) {
        self.a.pinned = judge_http::Pinned::of(&reservation.price_table.a);
        self.b.pinned = judge_http::Pinned::of(&reservation.price_table.b);
    }
}

/// The independence preflight: A and B are distinct before either is asked.
pub(super) fn preflight(
    engine: &Engine,
    run: &RunId,
    roll: RollId,
    jobs: &Jobs<'_>,
) -> Check<GuardCheck> {
    let (ja, jb) = (&engine.judges.a, &engine.judges.b);
    let distinct = [
        ("clients", ja.logical_client_id != jb.logical_client_id),
        ("sessions", jobs.a.session_id != jobs.b.session_id),
        ("seeds", jobs.a.seed != jobs.b.seed),
        ("prompts", ja.prompt.hash != jb.prompt.hash),
        (
            "folders",
            Key::slot_file(run, roll, Slot::A, "x") != Key::slot_file(run, roll, Slot::B, "x"),
        ),
    ];
    let bad: Vec<&str> = distinct
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| *n)
        .collect();
    Check::new(
        GuardCheck::IndependencePreflight,
        bad.is_empty(),
        if bad.is_empty() {
            "distinct clients, sessions, seeds, prompts, folders".to_string()
        } else {
            format!("not distinct: {}", bad.join(", "))
        },
    )
}

/// A slot's attempts and, when they were made live under this configuration, the request
/// they sent (see [`judge_http::Built`]).
pub(super) type Dispatched = (SlotRun, Option<judge_http::Built>);

/// Runs both slots: the stored answers of a replay's source, both judges live, or (guard
/// blocked) nothing but the records that say so.
pub(super) async fn run(
    engine: &Engine,
    guard: &Guard,
    jobs: &Jobs<'_>,
    source: &Source,
) -> Result<(Dispatched, Dispatched), JudgingError> {
    let store = &engine.store;
    let (ja, jb) = (&engine.judges.a, &engine.judges.b);
    let (run, roll) = (jobs.a.run, jobs.a.roll);
    if let Source::Stored { from, .. } = source {
        tracing::info!(from = %from, "replaying stored judge answers");
        let src = source.source_roll(roll).ok_or_else(|| {
            super::internal(
                run,
                roll,
                format!("the verified source {from} has no {roll}"),
            )
        })?;
        return Ok((
            (copy_attempts(engine, src, run, roll, Slot::A).await?, None),
            (copy_attempts(engine, src, run, roll, Slot::B).await?, None),
        ));
    }
    if guard.status == GuardStatus::Pass {
        tracing::info!(package = %jobs.a.package_hash, "dispatching judge A and judge B");
        let (a, b) = tokio::join!(ja.run_slot(store, &jobs.a), jb.run_slot(store, &jobs.b));
        return Ok((a?, b?));
    }
    let why: Vec<&str> = guard
        .checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| c.id.as_str())
        .collect();
    tracing::warn!(failed = ?why, "roll guard blocked: no judge is called");
    let why = why.join(", ");
    Ok((
        (not_dispatched(store, ja, &jobs.a, &why).await?, None),
        (not_dispatched(store, jb, &jobs.b, &why).await?, None),
    ))
}

/// Stores the records of a slot that was never called (the guard blocked the roll).
async fn not_dispatched(
    store: &Store,
    client: &JudgeClient,
    job: &SlotJob<'_>,
    why: &str,
) -> Result<SlotRun, ResumeError> {
    let closing = judge_http::Closing {
        attempt: 1,
        request: None,
        stage: FailureStage::Guard,
        class: ErrorClass::NotDispatched,
        model: client.config.model.clone(),
        detail: format!("roll guard blocked: {why}"),
    };
    let record = client.close_unsent(store, job, closing).await?;
    Ok(SlotRun {
        slot: client.slot,
        attempts: vec![record],
    })
}

/// A stored replay's attempts of one slot: exactly the attempts the verified source binds for
/// the same roll and slot (the attempt list of its sealed normalized result), each file read
/// against the hash the sealed records name and copied byte for byte, create-only. Anything
/// else in the replay's slot folder (an extra attempt, other bytes at a copied key) is planted:
/// the replay stops there, naming it. Each copied attempt gets a receipt naming its source, the
/// postguard's proof that seal copied it (its MAC was made for the source's run id).
async fn copy_attempts(
    engine: &Engine,
    (from, source): (&RunId, &Roll),
    run: &RunId,
    roll: RollId,
    slot: Slot,
) -> Result<SlotRun, JudgingError> {
    let store = &engine.store;
    let sref = source.slot_ref(slot);
    let result: JudgeResult = store
        .get_json_verified(&sref.normalized_ref, &sref.result_hash)
        .await?;
    seal_core::bound::check(&sref.normalized_ref, &result)?;
    let mut attempts = Vec::with_capacity(result.attempts.len());
    for h in &result.attempts {
        attempts.push(copy_attempt(engine, from, run, roll, slot, h).await?);
    }
    let listed: Vec<u32> = result.attempts.iter().map(|h| h.attempt).collect();
    let folder = Key::slot_file(run, roll, slot, "x").dir().to_string();
    let listing = store.list(&folder).await?;
    if let Some(key) = listing
        .keys
        .iter()
        .find(|k| !replay_may_hold(&folder, k, &listed))
    {
        return Err(JudgingError::Planted {
            key: key.to_string(),
            reason: format!("the verified source {from} binds no such attempt object"),
        });
    }
    // A link or special file in the folder is no object of the source either.
    if let Some(entry) = listing.foreign.first() {
        return Err(JudgingError::Planted {
            key: entry.clone(),
            reason: format!(
                "not an object seal writes; the verified source {from} binds nothing there"
            ),
        });
    }
    Ok(SlotRun { slot, attempts })
}

/// Whether a stored replay's slot folder may hold `key`: the slot's own documents, or a
/// request, raw answer or meta of one of the `listed` attempts (pure).
fn replay_may_hold(folder: &str, key: &Key, listed: &[u32]) -> bool {
    let Some(rest) = key
        .as_str()
        .strip_prefix(folder)
        .and_then(|r| r.strip_prefix('/'))
    else {
        return false;
    };
    match rest.split_once('/') {
        None => matches!(rest, "parsed.json" | "normalized.json"),
        Some((attempt, file)) => {
            let listed_attempt = attempt
                .strip_prefix("attempt-")
                .and_then(|k| k.parse::<u32>().ok())
                .is_some_and(|k| listed.contains(&k) && attempt == format!("attempt-{k}"));
            listed_attempt && matches!(file, "request.json" | "raw.json" | "meta.json")
        }
    }
}

/// Copies one attempt of the verified source (see [`copy_attempts`]).
async fn copy_attempt(
    engine: &Engine,
    from: &RunId,
    run: &RunId,
    roll: RollId,
    slot: Slot,
    h: &AttemptHashes,
) -> Result<AttemptRecord, JudgingError> {
    let store = &engine.store;
    let copy = |file: &'static str, hash: Hash| async move {
        let src = Key::attempt_file(from, roll, slot, h.attempt, file);
        let dst = Key::attempt_file(run, roll, slot, h.attempt, file);
        let bytes = store.get_verified(&src, &hash).await?;
        match store.put(&dst, bytes.clone()).await {
            Ok(p) => Ok((p.stored, bytes)),
            Err(StoreError::Conflict { existing, .. }) => Err(JudgingError::Planted {
                key: dst.to_string(),
                reason: format!("stored sha256 {existing} is not {src} of the verified source"),
            }),
            Err(e) => Err(e.into()),
        }
    };
    let request = match &h.request_hash {
        Some(rh) => Some(copy("request.json", rh.clone()).await?.0),
        None => None,
    };
    let (raw, raw_bytes) = copy("raw.json", h.raw_hash.clone()).await?;
    let (meta_stored, meta_bytes) = copy("meta.json", h.meta_hash.clone()).await?;
    let meta: SlotMeta =
        seal_store::parse_stored(&meta_stored.key, &meta_bytes, store.doc_limit())?;
    seal_core::bound::check(&meta_stored.key, &meta)?;
    engine
        .receipt(ReceiptKind::ReplayedAttempt, &meta_stored, Some(from))
        .await?;
    Ok(AttemptRecord {
        attempt: h.attempt,
        request,
        outcome: evaluate_raw(&raw_bytes, meta.http_status),
        raw,
        meta,
        meta_hash: meta_stored.hash,
    })
}

#[cfg(test)]
mod tests {
    use super::replay_may_hold;
    use seal_store::Key;

    #[test]
    fn a_stored_replay_holds_exactly_the_source_attempts() {
        let folder = "runs/r.replay-1/roll-1/judge-b";
        let ok = |k: &str| replay_may_hold(folder, &Key::parse(k).unwrap(), &[1]);
        assert!(ok("runs/r.replay-1/roll-1/judge-b/attempt-1/raw.json"));
        assert!(ok("runs/r.replay-1/roll-1/judge-b/normalized.json"));
        assert!(!ok("runs/r.replay-1/roll-1/judge-b/attempt-2/raw.json"));
        assert!(!ok("runs/r.replay-1/roll-1/judge-b/attempt-01/raw.json"));
        assert!(!ok("runs/r.replay-1/roll-1/judge-b/attempt-1/extra.json"));
        assert!(!ok("runs/r.replay-1/roll-1/judge-b/stray.json"));
    }
}
