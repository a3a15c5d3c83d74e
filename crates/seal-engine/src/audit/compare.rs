//! Audit steps 2 and 3: derive again from what was loaded, with the dispatcher's own pure
//! functions, and compare with what is recorded; then the run folder against the bound keys.

use super::load::{LoadedRoll, LoadedSlot, RollDocs};
use super::{hash_of, Audit};
use seal_core::blinding;
use seal_core::canonical::{canonical_with_hash, Hash};
use seal_core::derive::{self, derive_roll, RollInputs, SlotFacts};
use seal_core::doc::*;
use seal_core::ids::{RunId, Slot};
use seal_core::judge::slot::slot_documents;
use seal_core::merge;
use seal_core::vocab::{AuditCheck, GuardCheck};
use seal_store::{Key, Store};

/// The brief is stored and hashes to `briefHash`.
pub(super) fn brief(a: &mut Audit, run: &RunId, doc: &Evidence, brief: Option<&[u8]>) {
    let key = Key::brief(run);
    a.bound.insert(key.clone());
    match brief {
        Some(b) if hash_of(b) == doc.brief_hash => {}
        Some(b) => a.mismatch(
            AuditCheck::Refs,
            key.as_str(),
            &doc.brief_hash,
            hash_of(b),
            "brief does not hash to briefHash",
        ),
        None => a.push(AuditCheck::Refs, key.as_str(), "brief is missing"),
    }
}

/// Everything recorded about one roll, against what its stored inputs derive.
pub(super) fn roll(
    a: &mut Audit,
    doc: &Evidence,
    run: &RunId,
    r: &Roll,
    l: &LoadedRoll,
    brief_text: &str,
) {
    identity(a, run, r, &l.proof);
    blinding(a, doc, run, r, l, brief_text);
    for (slot, s) in [(Slot::A, &l.slots[0]), (Slot::B, &l.slots[1])] {
        normalization(a, r, slot, s, l);
    }
    derived(a, run, r, l);
}

/// The proof package is this roll's, with the seeds the roll records.
fn identity(a: &mut Audit, run: &RunId, r: &Roll, proof: &ProofPackage) {
    if proof.roll_id != r.roll_id {
        a.mismatch(
            AuditCheck::Refs,
            &r.proof_package_ref,
            r.roll_id,
            proof.roll_id,
            "proof package belongs to another roll",
        );
    }
    let label = format!("runs/{run}/{}", r.roll_id);
    for (field, want, got) in [
        (
            "requestedGameSeed",
            r.requested_game_seed,
            proof.requested_game_seed,
        ),
        ("actualGameSeed", r.actual_game_seed, proof.actual_game_seed),
        ("policySeed", r.policy_seed, proof.policy_seed),
    ] {
        if want != got {
            a.mismatch(
                AuditCheck::Refs,
                format!("{label} {field}"),
                want,
                got,
                "roll does not match its proof package",
            );
        }
    }
}

/// The judge package is the blinded package of this header, brief and proof package; it passes
/// the blinding predicate, or the roll's guard blocked it for exactly what the predicate finds;
/// the manifest lists exactly the roll's frames.
fn blinding(a: &mut Audit, doc: &Evidence, run: &RunId, r: &Roll, l: &LoadedRoll, brief: &str) {
    let rebuilt = blinding::judge_package(doc, brief, &l.proof, &l.package.image_manifest_hash);
    match canonical_with_hash(&rebuilt) {
        Ok((_, h)) if h == r.judge_package_hash => {}
        Ok((_, h)) => a.mismatch(
            AuditCheck::Blinding,
            &r.judge_package_ref,
            &r.judge_package_hash,
            h,
            "the judge package is not the blinded package of this header, brief and proof package",
        ),
        Err(e) => a.push(AuditCheck::Blinding, &r.judge_package_ref, e.to_string()),
    }
    // The one blinding predicate, on the stored bytes: a package that fails it is one the
    // builder's guard blocked (never sent), with exactly the finding recorded there.
    let derived = blinding::guard_check(&l.package_bytes, doc, &l.proof);
    let recorded = r
        .roll_guard
        .checks
        .iter()
        .find(|c| c.id == GuardCheck::Blinding);
    match (recorded, &derived) {
        (None, None) => {}
        (Some(rec), Some(d)) if rec == d && r.roll_guard.status == GuardStatus::Blocked => {}
        (None, Some(_)) => a.push(
            AuditCheck::Blinding,
            &r.judge_package_ref,
            format!(
                "forbidden values in the judge package the judges were sent: {}",
                blinding::leaks(&l.package_bytes, doc, &l.proof).join(", ")
            ),
        ),
        (Some(rec), None) => a.push(
            AuditCheck::Blinding,
            &r.judge_package_ref,
            format!(
                "the roll guard records a blinding failure ({}) that the package does not have",
                rec.detail
            ),
        ),
        (Some(rec), Some(d)) => a.mismatch(
            AuditCheck::Blinding,
            &r.judge_package_ref,
            &rec.detail,
            &d.detail,
            "the roll guard's blinding finding is not the predicate's on the stored package",
        ),
    }
    let mut want: Vec<&Hash> = l.proof.frames.iter().map(|f| &f.hash).collect();
    want.sort();
    want.dedup();
    if l.manifest
        .frames
        .iter()
        .map(|f| &f.hash)
        .collect::<Vec<_>>()
        != want
    {
        a.push(
            AuditCheck::Blinding,
            Key::roll_file(run, r.roll_id, "image-manifest.json").as_str(),
            "the image manifest does not list exactly the roll's frames",
        );
    }
}

/// The slot's refs point at its final attempt, and re-parsing and re-normalizing its stored
/// attempts gives the stored parsed and normalized documents byte for byte.
fn normalization(a: &mut Audit, r: &Roll, slot: Slot, s: &LoadedSlot, l: &LoadedRoll) {
    let sref = r.slot_ref(slot);
    if let Some(why) = s.run.retry_rule_violation() {
        a.push(
            AuditCheck::Normalization,
            &sref.normalized_ref,
            format!("judge {slot}'s attempts break the retry rules: {why}"),
        );
    }
    match s.run.final_attempt() {
        Some(f) if f.raw.key == sref.raw_ref && f.raw.hash == sref.raw_hash => {}
        _ => a.push(
            AuditCheck::Normalization,
            &sref.raw_ref,
            "rawRef is not the slot's accepted (or last) attempt",
        ),
    }
    let (parsed, renormalized) = slot_documents(slot, &s.run, &l.package, &r.judge_package_hash);
    match (
        canonical_with_hash(&parsed),
        canonical_with_hash(&renormalized),
    ) {
        (Ok((_, ph)), Ok((_, nh))) => {
            if ph != hash_of(&s.parsed_bytes) {
                a.mismatch(
                    AuditCheck::Normalization,
                    &sref.parsed_ref,
                    &sref.parsed_hash,
                    ph,
                    "re-parsing the raw answers gives another parsed document",
                );
            }
            if nh != sref.result_hash {
                a.mismatch(
                    AuditCheck::Normalization,
                    &sref.normalized_ref,
                    &sref.result_hash,
                    nh,
                    "re-normalizing the raw answers gives another JudgeResult",
                );
            }
        }
        _ => a.push(
            AuditCheck::Normalization,
            &sref.normalized_ref,
            "cannot canonicalize the recomputed documents",
        ),
    }
}

fn facts<'a>(s: &'a LoadedSlot, sref: &'a JudgeSlotRef) -> SlotFacts<'a> {
    SlotFacts {
        result: &s.result,
        result_hash: &sref.result_hash,
        raw_ref: &sref.raw_ref,
        raw_hash: &sref.raw_hash,
        final_meta: s.run.final_attempt().map(|f| &f.meta),
        final_request: s.final_request(),
        cost_micro: s.run.cost_micro(),
    }
}

/// The roll derivation, re-run: independence, consensus, outcome, errors and cost as recorded.
fn derived(a: &mut Audit, run: &RunId, r: &Roll, l: &LoadedRoll) {
    let d = derive_roll(&RollInputs {
        roll_id: r.roll_id,
        guard: &r.roll_guard,
        package: &l.package,
        package_hash: &r.judge_package_hash,
        manifest: &l.manifest,
        floor_passed: l.proof.floor.passed,
        actor_cost_micro: rmb_to_micro(l.proof.actor_cost_rmb),
        a: facts(&l.slots[0], &r.judge_a_ref),
        b: facts(&l.slots[1], &r.judge_b_ref),
    });
    let label = format!("runs/{run}/{}", r.roll_id);
    if l.consensus.independence_checks != d.consensus.independence_checks {
        a.push(AuditCheck::Independence, &r.judge_consensus_ref, format!(
            "recorded independence checks differ from those recomputed from the stored metas and requests (recomputed failures: {:?})",
            d.consensus.independence_checks.failed()
        ));
    }
    match canonical_with_hash(&d.consensus) {
        Ok((_, h)) if h == r.judge_consensus_hash => {}
        Ok((_, h)) => a.mismatch(
            AuditCheck::Consensus,
            &r.judge_consensus_ref,
            &r.judge_consensus_hash,
            h,
            "the consensus does not recompute byte-identically",
        ),
        Err(e) => a.push(AuditCheck::Consensus, &r.judge_consensus_ref, e.to_string()),
    }
    if r.roll_outcome != d.outcome {
        a.mismatch(
            AuditCheck::Consensus,
            format!("{label} rollOutcome"),
            r.roll_outcome,
            d.outcome,
            "rollOutcome does not follow the recomputed consensus",
        );
    }
    if r.errors != d.errors {
        let show = |e: &[seal_core::vocab::RollError]| {
            e.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        a.mismatch(
            AuditCheck::Consensus,
            format!("{label} errors"),
            show(&r.errors),
            show(&d.errors),
            "the roll's errors are not those its guard, slots and independence give",
        );
    }
    costs(a, r, l, d.cost_micro, &label);
}

/// Judges spent no more than was reserved; the roll costs actor plus judges.
fn costs(a: &mut Audit, r: &Roll, l: &LoadedRoll, roll_micro: u64, label: &str) {
    let judge_micro: u64 = l.slots.iter().map(|s| s.run.cost_micro()).sum();
    if judge_micro > rmb_to_micro(l.reservation.reserved_rmb) {
        a.mismatch(
            AuditCheck::Cost,
            &r.cost_reservation_ref,
            l.reservation.reserved_rmb,
            micro_to_rmb(judge_micro),
            "judges cost more than was reserved",
        );
    }
    if roll_micro != rmb_to_micro(r.cost_rmb) {
        a.mismatch(
            AuditCheck::Cost,
            format!("{label} costRmb"),
            r.cost_rmb,
            micro_to_rmb(roll_micro),
            "roll cost is not actor cost plus judge cost",
        );
    }
}

/// The top level mirrors the source roll, and `judge` is its projection (or null if void).
pub(super) fn mirror(a: &mut Audit, doc: &Evidence, run: &RunId, docs: &[RollDocs]) {
    let Some(i) = merge::source_roll_index(&doc.rolls) else {
        return;
    };
    let r = &doc.rolls[i];
    let Some(d) = docs.iter().find(|d| d.roll.roll_id == r.roll_id) else {
        return;
    };
    let p = &d.proof;
    for (field, ok) in [
        ("actions", doc.actions == p.actions),
        ("events", doc.events == p.events),
        ("floor", doc.floor == p.floor),
        ("firstPlay", doc.first_play == p.first_play),
        (
            "briefRuleMatches",
            doc.brief_rule_matches == p.brief_rule_matches,
        ),
    ] {
        if !ok {
            a.push(
                AuditCheck::Mirror,
                format!("runs/{run} {field}"),
                format!("top-level {field} differs from the source roll's proof package"),
            );
        }
    }
    if doc.judge != derive::projection(r, &d.consensus) {
        a.push(
            AuditCheck::Mirror,
            format!("runs/{run} judge"),
            if derive::is_void(r, &d.consensus) {
                "the source roll is void (failed independence or guard): judge must be null"
            } else {
                "judge is not the source roll's consensus projection"
            },
        );
    }
}

/// Every object under `runs/<id>/` is bound by the document (or is one of the run's own
/// documents, or one of its reviews, which `seal verify` checks on their own); anything else
/// is named: nobody vouched for it. The run's own documents join
/// the bound set, which is then exactly what an import copies.
pub(super) async fn unbound(a: &mut Audit, store: &Store, run: &RunId, doc: &Evidence) {
    let bound = &mut a.bound;
    for key in [
        Key::header(run),
        Key::judging(run),
        Key::evidence(run),
        Key::seal(run),
    ] {
        bound.insert(key);
    }
    if doc
        .rolls
        .iter()
        .any(|r| derive::guard_bound_hash(r, GuardCheck::PlaySpecFresh).is_some())
    {
        bound.insert(Key::play_spec(run));
    }
    let bound = bound.clone();
    let (listed, odd) = match store.list(&Key::run_dir(run)).await {
        Ok(found) => (found.keys, found.foreign),
        Err(e) => {
            a.push(
                AuditCheck::Refs,
                Key::run_dir(run),
                format!("cannot list the run folder: {e}"),
            );
            return;
        }
    };
    for entry in &odd {
        a.push(
            AuditCheck::Refs,
            entry.as_str(),
            "not an object seal writes: the run folder holds it but nothing binds it",
        );
    }
    // A run's reviews (`runs/<id>/reviews/<n>.dsse.json`) are facts of their own, never bound
    // by the evidence they review: `seal verify` checks each one (`verify::check_run_reviews`), an import
    // leaves them behind. Any other name in that folder is unbound like everything else.
    a.reviews = Some(super::reviews_listed(run, &listed, &odd));
    let review = |k: &Key| k.review_number(run).is_some();
    for key in listed.iter().filter(|k| !bound.contains(*k) && !review(k)) {
        a.push(
            AuditCheck::Refs,
            key.as_str(),
            "unbound object: the run folder holds it but the evidence does not bind it",
        );
    }
}
