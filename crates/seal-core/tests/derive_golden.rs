//! The roll derivation against the sealed fixtures: for every judged roll of
//! `sealed-fixtures/store`, [`derive_roll`] over the stored inputs gives exactly the recorded
//! outcome, errors, cost and consensus bytes. The postguard and `seal verify` make the same
//! comparison through the engine's audit; here it runs inside the decision core's own suite, so
//! a mutant of `derive_roll` (the cost sum, which errors a blocked guard keeps, the outcome of a
//! blocked roll) is caught by `cargo test -p seal-core` alone (docs/TESTING.md, mutation
//! testing). Rules the fixtures do not separate are pinned by unit tests below, named after them.

use std::path::{Path, PathBuf};

use seal_core::canonical::{canonical_with_hash, Hash};
use seal_core::derive::{both_judges_failed, derive_roll, guard_bound_hash, RollInputs, SlotFacts};
use seal_core::doc::*;
use seal_core::ids::Slot;
use seal_core::vocab::{ErrorClass, GuardCheck, RollError};
use serde::de::DeserializeOwned;
use serde_json::Value;

fn store() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sealed-fixtures/store")
}

fn read<T: DeserializeOwned>(path: &Path) -> T {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One slot of a stored roll, loaded as the audit loads it.
struct Slotted {
    result: JudgeResult,
    final_meta: Option<SlotMeta>,
    final_request: Option<Value>,
    cost_micro: u64,
}

fn slot(roll_dir: &Path, slot: &str) -> Slotted {
    let dir = roll_dir.join(format!("judge-{slot}"));
    let result: JudgeResult = read(&dir.join("normalized.json"));
    let mut metas = Vec::new();
    for a in &result.attempts {
        let attempt = dir.join(format!("attempt-{}", a.attempt));
        let meta: SlotMeta = read(&attempt.join("meta.json"));
        let request = attempt
            .join("request.json")
            .exists()
            .then(|| read::<Value>(&attempt.join("request.json")));
        metas.push((meta, request));
    }
    let cost_micro = metas.iter().map(|(m, _)| rmb_to_micro(m.cost_rmb)).sum();
    // The final attempt: the accepted one, else the last.
    let pick = metas
        .iter()
        .position(|(m, _)| m.accepted)
        .or_else(|| metas.len().checked_sub(1));
    let (final_meta, final_request) = match pick {
        Some(i) => (Some(metas[i].0.clone()), metas[i].1.clone()),
        None => (None, None),
    };
    Slotted {
        result,
        final_meta,
        final_request,
        cost_micro,
    }
}

fn facts<'a>(s: &'a Slotted, sref: &'a JudgeSlotRef) -> SlotFacts<'a> {
    SlotFacts {
        result: &s.result,
        result_hash: &sref.result_hash,
        raw_ref: &sref.raw_ref,
        raw_hash: &sref.raw_hash,
        final_meta: s.final_meta.as_ref(),
        final_request: s.final_request.as_ref(),
        cost_micro: s.cost_micro,
    }
}

/// Every judged roll of the fixture store: (label, its folder).
fn judged_rolls() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut runs: Vec<_> = std::fs::read_dir(store().join("runs"))
        .expect("the fixture store")
        .map(|e| e.expect("entry").path())
        .collect();
    runs.sort();
    for run in runs {
        for roll in ["roll-1", "roll-2"] {
            let dir = run.join(roll);
            if dir.join("roll.json").exists() && dir.join("judge-a/normalized.json").exists() {
                let name = run.file_name().map(|n| n.to_string_lossy().into_owned());
                out.push((format!("{}/{roll}", name.unwrap_or_default()), dir));
            }
        }
    }
    out
}

#[test]
fn every_fixture_roll_derives_its_recorded_outcome_errors_cost_and_consensus() {
    let rolls = judged_rolls();
    assert!(
        rolls.len() >= 8,
        "only {} judged fixture rolls",
        rolls.len()
    );
    let mut blocked = 0;
    let mut with_errors = 0;
    for (label, dir) in rolls {
        let roll: Roll = read(&dir.join("roll.json"));
        let package: JudgePackage = read(&dir.join("judge-package.json"));
        let manifest: ImageManifest = read(&dir.join("image-manifest.json"));
        let proof: ProofPackage = read(&dir.join("proof-package.json"));
        let (a, b) = (slot(&dir, "a"), slot(&dir, "b"));
        let d = derive_roll(&RollInputs {
            roll_id: roll.roll_id,
            guard: &roll.roll_guard,
            package: &package,
            package_hash: &roll.judge_package_hash,
            manifest: &manifest,
            floor_passed: proof.floor.passed,
            actor_cost_micro: rmb_to_micro(proof.actor_cost_rmb),
            a: facts(&a, &roll.judge_a_ref),
            b: facts(&b, &roll.judge_b_ref),
        });
        assert_eq!(d.outcome, roll.roll_outcome, "{label}: outcome");
        assert_eq!(d.errors, roll.errors, "{label}: errors");
        assert_eq!(d.cost_micro, rmb_to_micro(roll.cost_rmb), "{label}: cost");
        let (_, hash) = canonical_with_hash(&d.consensus).expect("canonical consensus");
        assert_eq!(hash, roll.judge_consensus_hash, "{label}: consensus bytes");
        blocked += usize::from(roll.roll_guard.status == GuardStatus::Blocked);
        with_errors += usize::from(!roll.errors.is_empty());
    }
    // The fixtures separate the rules this test pins: a blocked roll, rolls with errors.
    assert!(blocked >= 1, "no blocked roll among the fixtures");
    assert!(with_errors >= 1, "no roll with errors among the fixtures");
}

/// A roll's cost is the actor's plus both judges', each counted once (not a difference, not
/// a product): pinned apart from the fixtures, whose judges may cost nothing.
#[test]
fn a_rolls_cost_is_the_actor_plus_both_judges() {
    let (label, dir) = judged_rolls().into_iter().next().expect("a fixture roll");
    let roll: Roll = read(&dir.join("roll.json"));
    let package: JudgePackage = read(&dir.join("judge-package.json"));
    let manifest: ImageManifest = read(&dir.join("image-manifest.json"));
    let (mut a, mut b) = (slot(&dir, "a"), slot(&dir, "b"));
    a.cost_micro = 3_000;
    b.cost_micro = 5_000;
    let d = derive_roll(&RollInputs {
        roll_id: roll.roll_id,
        guard: &roll.roll_guard,
        package: &package,
        package_hash: &roll.judge_package_hash,
        manifest: &manifest,
        floor_passed: true,
        actor_cost_micro: 7_000,
        a: facts(&a, &roll.judge_a_ref),
        b: facts(&b, &roll.judge_b_ref),
    });
    assert_eq!(d.cost_micro, 15_000, "{label}");
}

fn judge_error(slot: Slot) -> RollError {
    RollError::Judge {
        slot,
        class: ErrorClass::Timeout,
    }
}

#[test]
fn both_judges_failed_only_when_each_slot_has_a_judge_error() {
    assert!(!both_judges_failed(&[]));
    assert!(!both_judges_failed(&[judge_error(Slot::A)]));
    assert!(!both_judges_failed(&[judge_error(Slot::B)]));
    assert!(!both_judges_failed(&[
        judge_error(Slot::A),
        judge_error(Slot::A)
    ]));
    assert!(both_judges_failed(&[
        judge_error(Slot::B),
        judge_error(Slot::A)
    ]));
}

/// The header and play-spec a roll's guard binds are named by their sha256 in the check's
/// detail: the hash found is the stored document's, and a check the guard lacks gives none.
#[test]
fn a_guard_check_names_the_hash_of_the_document_it_bound() {
    let dir = store().join("runs/run-narrative-0011-inconclusive");
    let roll: Roll = read(&dir.join("roll-1/roll.json"));
    let header = std::fs::read(dir.join("header.json")).expect("header");
    assert_eq!(
        guard_bound_hash(&roll, GuardCheck::Header),
        Some(Hash::of(&header))
    );
    let mut without = roll.clone();
    without
        .roll_guard
        .checks
        .retain(|c| c.id != GuardCheck::Header);
    assert_eq!(guard_bound_hash(&without, GuardCheck::Header), None);
}
