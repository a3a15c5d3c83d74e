//! The postguard's first gate (docs/DESIGN.md §11, G1): before anything is derived, checked or
//! signed, every input of the run must be one this deployment accepted or wrote.
//!
//! - the header, brief and play-spec, and each roll's proof package: a receipt
//!   ([`crate::notary`]) naming exactly the stored bytes;
//! - each roll record (`roll.json`): its receipt, written when seal finished the roll;
//! - each judge attempt the roll's normalized results list: its `attemptMac` verifies for this
//!   run, roll, slot and attempt under the deployment secret (seal called that judge), or a
//!   receipt says seal copied it from a verified source (a stored replay).
//!
//! Content hashes then carry the proof to every other document: the roll record names them all
//! by sha256, and the audit re-derives normalization, consensus and blinding from these inputs.
//! A failure here is never recorded as a failed check and sealed as `infra_error`: the run is
//! refused, the object named, and nothing is signed.

use crate::audit::{Loaded, RollLoad};
use crate::engine::Engine;
use crate::notary::{ReceiptError, ReceiptKind};
use crate::resume::{self, AttemptId};
use seal_core::bound::Bound;
use seal_core::canonical::Hash;
use seal_core::doc::*;
use seal_core::ids::{RunId, Slot};
use seal_core::judge::AttemptRecord;
use seal_store::Key;

/// Every input of the loaded rolls (and the run's header, brief and play-spec) is
/// authenticated, on the bytes the final audit's load read (`loaded`: one read of each). The
/// header is the one the run's state was loaded with (`header_hash`, the sha256 of the bytes
/// read then), which the snapshot is derived from. `authenticated`: roll records whose
/// receipt this finalize has verified for exactly those bytes already. Returns the brief's
/// bytes as authenticated, for the audit (`None`: no brief stored).
pub(super) async fn inputs(
    engine: &Engine,
    run: &RunId,
    header_hash: &Hash,
    loaded: &Loaded,
    authenticated: &[Hash],
) -> Result<Option<bytes::Bytes>, ReceiptError> {
    let (notary, store) = (&engine.notary, &engine.store);
    notary
        .require(store, ReceiptKind::Header, &Key::header(run), header_hash)
        .await?;
    let mut brief = None;
    for (key, kind) in [
        (Key::brief(run), ReceiptKind::Brief),
        (Key::play_spec(run), ReceiptKind::PlaySpec),
    ] {
        if let Some((bytes, hash)) = store.get_opt_hashed(&key).await? {
            notary.require(store, kind, &key, &hash).await?;
            if kind == ReceiptKind::Brief {
                brief = Some(bytes);
            }
        }
    }
    for l in loaded.rolls() {
        roll(engine, run, l, authenticated).await?;
    }
    Ok(brief)
}

/// One roll: its record, its proof package and every attempt of both slots.
async fn roll(
    engine: &Engine,
    run: &RunId,
    l: &RollLoad,
    authenticated: &[Hash],
) -> Result<(), ReceiptError> {
    let (notary, store) = (&engine.notary, &engine.store);
    let r = l.roll();
    let record = Key::roll_file(run, r.roll_id, "roll.json");
    let Some((stored, hash)) = l.record() else {
        return Err(missing(&record, ReceiptKind::Roll));
    };
    if !authenticated.contains(hash) {
        notary
            .require(store, ReceiptKind::Roll, &record, hash)
            .await?;
    }
    bound(&record, stored, ReceiptKind::Roll)?;
    if stored != r {
        return Err(ReceiptError::Unauthenticated {
            object: record.to_string(),
            kind: ReceiptKind::Roll,
            reason: "the roll in the JUDGING snapshot is not the roll seal recorded".into(),
        });
    }
    let proof = Key::roll_file(run, r.roll_id, "proof-package.json");
    notary
        .require(
            store,
            ReceiptKind::ProofPackage,
            &proof,
            &r.proof_package_hash,
        )
        .await?;
    for slot in [Slot::A, Slot::B] {
        attempts(engine, run, r, slot, l.slot(slot)).await?;
    }
    Ok(())
}

/// Every attempt a slot's normalized result lists was made or copied by seal. `loaded`: the
/// result and attempts as the audit read them (`None`: unreadable, which the postguard
/// refuses as corrupt once this gate has passed).
async fn attempts(
    engine: &Engine,
    run: &RunId,
    r: &Roll,
    slot: Slot,
    loaded: Option<(&JudgeResult, &[AttemptRecord])>,
) -> Result<(), ReceiptError> {
    let sref = r.slot_ref(slot);
    let normalized = Key::slot_file(run, r.roll_id, slot, "normalized.json");
    if sref.normalized_ref != normalized {
        return Err(ReceiptError::Unauthenticated {
            object: sref.normalized_ref.to_string(),
            kind: ReceiptKind::Roll,
            reason: format!("the roll names {normalized} elsewhere"),
        });
    }
    let Some((result, attempts)) = loaded else {
        return Ok(());
    };
    bound(&normalized, result, ReceiptKind::Roll)?;
    for rec in attempts {
        let meta_key = Key::attempt_file(run, r.roll_id, slot, rec.attempt, "meta.json");
        bound(&meta_key, &rec.meta, ReceiptKind::ReplayedAttempt)?;
        let id = AttemptId {
            run,
            roll: r.roll_id,
            slot,
            attempt: rec.attempt,
        };
        if resume::mac_verifies(engine.judges.salt(), id, &rec.meta) {
            continue;
        }
        // Not made by this deployment for this run: only a copy seal made in a stored replay.
        engine
            .notary
            .require(
                &engine.store,
                ReceiptKind::ReplayedAttempt,
                &meta_key,
                &rec.meta_hash,
            )
            .await
            .map_err(|e| match e {
                // A meta whose MAC fails contradicts its own commit: planted, receipt or not.
                ReceiptError::Unauthenticated { object, kind, .. }
                | ReceiptError::Uncommitted { object, kind, .. } => ReceiptError::Unauthenticated {
                    object,
                    kind,
                    reason: "its attemptMac does not verify under this deployment's secret \
                                 and no receipt says seal copied it from a verified source"
                        .into(),
                },
                other => other,
            })?;
    }
    Ok(())
}

/// A document whose identity fields name another key than it is read from is planted
/// (`seal_core::bound`), named as the kind of input it stands in for.
fn bound<T: Bound>(key: &Key, doc: &T, kind: ReceiptKind) -> Result<(), ReceiptError> {
    seal_core::bound::check(key, doc).map_err(|e| ReceiptError::Unauthenticated {
        object: key.to_string(),
        kind,
        reason: e.to_string(),
    })
}

fn missing(key: &Key, kind: ReceiptKind) -> ReceiptError {
    ReceiptError::Unauthenticated {
        object: key.to_string(),
        kind,
        reason: "missing or unreadable".into(),
    }
}
