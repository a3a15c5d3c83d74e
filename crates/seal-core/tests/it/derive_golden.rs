//! The roll derivation against the sealed fixtures: for every judged roll of
//! `sealed-fixtures/store`, [`derive_roll`] over the stored inputs gives exactly the recorded
//! outcome, errors, cost and consensus bytes. The postguard and `seal verify` make the same
//! comparison through the engine's audit; here it runs inside the decision core's own suite, so
//! a mutant of `derive_roll` (the cost sum, which errors a blocked guard keeps, the outcome of a
//! blocked roll) is caught by `cargo test -p seal-core` alone (docs/TESTING.md, mutation
//! testing). Rules the fixtures do not separate are pinned by unit tests below, named after them.
//!
//! The run-level half: for every fixture run, [`judging_snapshot`] over the stored header and
//! rolls gives the stored `judging.json` byte for byte, and [`outcome_and_reasons`],
//! [`decision_action`] and [`compatibility`] give the decided document's outcome, reasons,
//! action and compatibility block.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use seal_core::canonical::{canonical_with_hash, Hash};
use seal_core::derive::{
    both_judges_failed, compatibility, decision_action, derive_roll, guard_bound_hash,
    judging_snapshot, only_judging_changed, outcome_and_reasons, projection, DerivedRoll,
    JudgedRoll, RollInputs, Rules, SlotFacts,
};
use seal_core::doc::*;
use seal_core::ids::Slot;
use seal_core::independence::{self, SlotRecord};
use seal_core::key::Key;
use seal_core::vocab::{AuditCheck, ErrorClass, GuardCheck, InfraCause, Reason, RollError};
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

/// A stored roll with what its derivation reads.
struct FixtureRoll {
    roll: Roll,
    package: JudgePackage,
    manifest: ImageManifest,
    proof: ProofPackage,
    a: Slotted,
    b: Slotted,
}

impl FixtureRoll {
    fn load(dir: &Path) -> FixtureRoll {
        FixtureRoll {
            roll: read(&dir.join("roll.json")),
            package: read(&dir.join("judge-package.json")),
            manifest: read(&dir.join("image-manifest.json")),
            proof: read(&dir.join("proof-package.json")),
            a: slot(dir, "a"),
            b: slot(dir, "b"),
        }
    }

    /// [`derive_roll`] over the stored inputs, with the floor and the actor's cost given.
    fn derive(&self, floor_passed: bool, actor_cost_micro: u64) -> DerivedRoll {
        derive_roll(&RollInputs {
            roll_id: self.roll.roll_id,
            guard: &self.roll.roll_guard,
            package: &self.package,
            package_hash: &self.roll.judge_package_hash,
            manifest: &self.manifest,
            floor_passed,
            actor_cost_micro,
            a: facts(&self.a, &self.roll.judge_a_ref),
            b: facts(&self.b, &self.roll.judge_b_ref),
        })
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
        let f = FixtureRoll::load(&dir);
        let d = f.derive(f.proof.floor.passed, rmb_to_micro(f.proof.actor_cost_rmb));
        let roll = &f.roll;
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
    let mut f = FixtureRoll::load(&dir);
    f.a.cost_micro = 3_000;
    f.b.cost_micro = 5_000;
    let d = f.derive(true, 7_000);
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

// ---------------------------------------------------------------------------------------------
// Independence checks whose conjunctions no fixture separates (mutation testing found them):
// each holds only when *both* sides hold, and a failure of one side alone makes it false.

/// A judged fixture roll's slots: both checks hold on it as stored.
fn independent_roll() -> (PathBuf, Roll, ImageManifest, Slotted, Slotted) {
    let dir = store().join("runs/run-narrative-0011-inconclusive/roll-1");
    let roll: Roll = read(&dir.join("roll.json"));
    let manifest: ImageManifest = read(&dir.join("image-manifest.json"));
    let (a, b) = (slot(&dir, "a"), slot(&dir, "b"));
    (dir, roll, manifest, a, b)
}

fn record<'a>(s: &'a Slotted, sref: &'a JudgeSlotRef) -> SlotRecord<'a> {
    SlotRecord {
        meta: s.final_meta.as_ref(),
        raw_ref: &sref.raw_ref,
        raw_hash: &sref.raw_hash,
        request: s.final_request.as_ref(),
    }
}

#[test]
fn the_fixture_rolls_slots_are_independent_as_recorded() {
    let (_, roll, manifest, a, b) = independent_roll();
    let c = independence::checks(
        record(&a, &roll.judge_a_ref),
        record(&b, &roll.judge_b_ref),
        &roll.judge_package_hash,
        &manifest,
    );
    assert!(c.different_evidence_dir && c.different_raw_file);
    assert!(c.same_judge_package && c.same_image_manifest);
}

/// Two attempts of one slot are not two evidence folders: the folders must differ above the
/// attempt too.
#[test]
fn answers_in_two_attempts_of_one_slot_are_not_different_evidence_dirs() {
    let (_, roll, manifest, a, b) = independent_roll();
    let other = Key::parse(
        &roll
            .judge_a_ref
            .raw_ref
            .as_str()
            .replace("attempt-1", "attempt-2"),
    )
    .expect("a key");
    let mut rb = record(&b, &roll.judge_b_ref);
    rb.raw_ref = &other;
    let c = independence::checks(
        record(&a, &roll.judge_a_ref),
        rb,
        &roll.judge_package_hash,
        &manifest,
    );
    assert!(!c.different_evidence_dir);
}

/// `differentRawFile`: one stored file for both is never different; byte-identical answers
/// are not different when both were accepted (a cache answered twice), and are when one slot
/// failed (two failures may share a gateway's error body).
#[test]
fn a_raw_file_differs_only_by_name_and_by_bytes_unless_a_slot_failed() {
    let (_, roll, manifest, a, b) = independent_roll();
    let checks = |ra: SlotRecord<'_>, rb: SlotRecord<'_>| {
        independence::checks(ra, rb, &roll.judge_package_hash, &manifest).different_raw_file
    };
    let (ra, rb) = (record(&a, &roll.judge_a_ref), record(&b, &roll.judge_b_ref));
    assert!(a.final_meta.as_ref().is_some_and(|m| m.accepted));
    assert!(b.final_meta.as_ref().is_some_and(|m| m.accepted));
    // The same file named by both slots.
    assert!(!checks(
        ra,
        SlotRecord {
            raw_ref: ra.raw_ref,
            ..rb
        }
    ));
    // Both accepted, the same bytes under two names.
    assert!(!checks(
        ra,
        SlotRecord {
            raw_hash: ra.raw_hash,
            ..rb
        }
    ));
    // One slot failed, the same bytes under two names: still different files.
    let mut failed = b.final_meta.clone().expect("meta");
    failed.accepted = false;
    let rb_failed = SlotRecord {
        raw_hash: ra.raw_hash,
        meta: Some(&failed),
        ..rb
    };
    assert!(checks(ra, rb_failed));
    assert!(checks(rb_failed, ra));
}

/// `sameJudgePackage` and `sameImageManifest` need both slots: one slot sent another package
/// (or showed other frames) and the check fails.
#[test]
fn one_slot_alone_cannot_make_the_package_or_the_manifest_the_same() {
    let (_, roll, manifest, a, b) = independent_roll();
    let mut stray = b.final_request.clone().expect("a request");
    // Another package text and no frame placeholders: what a slot sent by mistake.
    stray["messages"] = serde_json::json!([{"role": "user", "content": "another package"}]);
    let mut other_meta = b.final_meta.clone().expect("meta");
    other_meta.package_hash = Hash::of(b"another package");
    let rb = SlotRecord {
        request: Some(&stray),
        meta: Some(&other_meta),
        ..record(&b, &roll.judge_b_ref)
    };
    for (x, y) in [
        (record(&a, &roll.judge_a_ref), rb),
        (rb, record(&a, &roll.judge_a_ref)),
    ] {
        let c = independence::checks(x, y, &roll.judge_package_hash, &manifest);
        assert!(!c.same_judge_package);
        assert!(!c.same_image_manifest);
    }
}

// ---------------------------------------------------------------------------------------------
// The run-level derivation (docs/DESIGN.md §6): the JUDGING snapshot, outcome, reasons, action
// and compatibility of every sealed fixture run, then the rules the fixtures do not separate.

/// A stored run: its header, its judged rolls and the documents derived from them.
struct FixtureRun {
    label: String,
    header: Evidence,
    rolls: Vec<(Roll, ProofPackage, JudgeConsensus)>,
    judging: Value,
    evidence: Evidence,
}

impl FixtureRun {
    fn load(dir: &Path) -> FixtureRun {
        let mut rolls = Vec::new();
        for roll in ["roll-1", "roll-2"] {
            let r = dir.join(roll);
            if r.join("roll.json").exists() {
                rolls.push((
                    read(&r.join("roll.json")),
                    read(&r.join("proof-package.json")),
                    read(&r.join("consensus.json")),
                ));
            }
        }
        FixtureRun {
            label: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            header: read(&dir.join("header.json")),
            rolls,
            judging: read(&dir.join("judging.json")),
            evidence: read(&dir.join("evidence.json")),
        }
    }

    fn named(name: &str) -> FixtureRun {
        FixtureRun::load(&store().join("runs").join(name))
    }

    /// [`judging_snapshot`] over the stored header and rolls.
    fn snapshot(&self) -> Evidence {
        let judged: Vec<JudgedRoll<'_>> = self
            .rolls
            .iter()
            .map(|(roll, proof, consensus)| JudgedRoll {
                roll,
                proof,
                consensus,
            })
            .collect();
        judging_snapshot(&self.header, &judged)
    }

    /// The postguard checks that failed, as recorded.
    fn failed_checks(&self) -> Vec<AuditCheck> {
        let pg = self.evidence.final_postguard.as_ref().expect("decided");
        pg.checks.iter().filter(|c| !c.ok).map(|c| c.id).collect()
    }
}

/// Every sealed fixture run with a JUDGING snapshot and a decided document.
fn fixture_runs() -> Vec<FixtureRun> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(store().join("runs"))
        .expect("the fixture store")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("judging.json").exists() && p.join("evidence.json").exists())
        .collect();
    runs.sort();
    runs.iter().map(|p| FixtureRun::load(p)).collect()
}

fn canonical_hash<T: serde::Serialize>(v: &T) -> Hash {
    canonical_with_hash(v).expect("canonical").1
}

#[test]
fn every_fixture_run_derives_its_judging_snapshot_outcome_reasons_action_and_compatibility() {
    let runs = fixture_runs();
    assert!(runs.len() >= 10, "only {} fixture runs", runs.len());
    let mut actions = BTreeSet::new();
    for run in &runs {
        let label = &run.label;
        let snap = run.snapshot();
        assert_eq!(
            canonical_hash(&snap),
            canonical_hash(&run.judging),
            "{label}: the JUDGING snapshot"
        );
        let ev = &run.evidence;
        let pg = ev.final_postguard.as_ref().expect("decided");
        // By the rules each run was decided under, as its evidence records them.
        let rules = Rules::parse(&pg.version).expect("a known finalPostguard version");
        let (outcome, reasons) = outcome_and_reasons(&snap, &run.failed_checks(), rules);
        let decision = ev.decision.as_ref().expect("a decision");
        assert_eq!(Some(outcome), ev.outcome, "{label}: outcome");
        assert_eq!(reasons, decision.reasons, "{label}: reasons");
        let action = decision_action(outcome, snap.repair.round);
        assert_eq!(action, decision.action, "{label}: action");
        actions.insert(action.as_str());
        assert_eq!(
            Some(compatibility(
                outcome,
                pg.passed,
                snap.acceptance_mode,
                snap.source_roll_id
            )),
            ev.compatibility,
            "{label}: compatibility"
        );
    }
    // The fixtures separate accept, repair and retry.
    assert_eq!(
        actions.into_iter().collect::<Vec<_>>(),
        ["accept", "repair", "retry"]
    );
}

/// A run's cost is the header's (the actor's play before judging) plus every roll's.
#[test]
fn a_runs_cost_is_the_headers_plus_every_rolls() {
    let mut run = FixtureRun::named("run-heritage-0017-disputed-font");
    let rolls: u64 = run
        .rolls
        .iter()
        .map(|(r, _, _)| rmb_to_micro(r.cost_rmb))
        .sum();
    assert!(rolls > 0 && run.rolls.len() == 2);
    run.header.cost_rmb = 2.0;
    assert_eq!(rmb_to_micro(run.snapshot().cost_rmb), 2_000_000 + rolls);
}

/// The snapshot is the JUDGING document, whatever phase the header it grew from was in.
#[test]
fn the_judging_snapshot_is_in_phase_judging() {
    let mut run = FixtureRun::named("run-trpg-0021-pass");
    run.header.phase = Phase::Collecting;
    assert_eq!(run.snapshot().phase, Phase::Judging);
}

/// The evidence's `judge` is the source roll's projection, and nothing when that roll is void.
#[test]
fn the_snapshots_judge_is_the_source_rolls_projection_unless_void() {
    let mut run = FixtureRun::named("run-trpg-0021-pass");
    let snap = run.snapshot();
    let (roll, _, consensus) = &run.rolls[0];
    assert_eq!(snap.judge, projection(roll, consensus));
    assert!(snap.judge.is_some());
    run.rolls[0].2.independence_checks.different_session = false;
    assert_eq!(run.snapshot().judge, None);
}

/// A failed postguard decides `infra_error`, naming every failed check and nothing else, even
/// when the source roll passed.
#[test]
fn a_failed_postguard_decides_infra_error_naming_every_failed_check() {
    let run = FixtureRun::named("run-trpg-0021-pass");
    let snap = run.snapshot();
    let failed = [AuditCheck::Cost, AuditCheck::Blinding];
    let (outcome, reasons) = outcome_and_reasons(&snap, &failed, Rules::V1);
    assert_eq!(outcome, Outcome::InfraError);
    assert_eq!(
        reasons,
        [
            Reason::Postguard(AuditCheck::Blinding),
            Reason::Postguard(AuditCheck::Cost)
        ]
    );
    assert_eq!(
        compatibility(outcome, false, snap.acceptance_mode, snap.source_roll_id),
        Compatibility {
            accepted: false,
            ok: false,
            acceptance_version: AcceptanceMode::V3,
            publish_frozen: true,
            schema_version: SCHEMA_VERSION.into(),
            source_roll_id: snap.source_roll_id,
        }
    );
}

/// A void source roll (no projection) is `infra_error`, with its infrastructure causes; both
/// judges failing is a cause of its own, named beside the others.
#[test]
fn a_void_source_roll_is_infra_error_with_its_causes() {
    let run = FixtureRun::named("run-trpg-0021-pass");
    let mut snap = run.snapshot();
    snap.judge = None;
    let (outcome, reasons) = outcome_and_reasons(&snap, &[], Rules::V1);
    assert_eq!(outcome, Outcome::InfraError);
    assert_eq!(reasons, [Reason::Infra(InfraCause::JudgesFailed)]);
    let judge = |slot| RollError::Judge {
        slot,
        class: ErrorClass::Timeout,
    };
    snap.rolls[0].errors = vec![
        RollError::Guard(GuardCheck::Budget),
        judge(Slot::A),
        judge(Slot::B),
    ];
    let (_, reasons) = outcome_and_reasons(&snap, &[], Rules::V1);
    assert_eq!(
        reasons,
        [
            Reason::Infra(InfraCause::Budget),
            Reason::Infra(InfraCause::JudgesFailed)
        ]
    );
    // One judge failing is not an infrastructure cause.
    snap.rolls[0].errors = vec![RollError::Guard(GuardCheck::Budget), judge(Slot::B)];
    let (_, reasons) = outcome_and_reasons(&snap, &[], Rules::V1);
    assert_eq!(reasons, [Reason::Infra(InfraCause::Budget)]);
}

/// Inconclusive with every required obligation satisfied: one judge failed and the other alone
/// cannot pass a run (`infra_single_judge`).
#[test]
fn inconclusive_with_every_required_obligation_satisfied_is_a_single_judge() {
    let run = FixtureRun::named("run-sim-business-0031-degraded");
    let mut snap = run.snapshot();
    let judge = snap.judge.as_mut().expect("a projection");
    for o in &mut judge.obligation_results {
        o.status = ObligationStatus::Satisfied;
    }
    let (outcome, reasons) = outcome_and_reasons(&snap, &[], Rules::V1);
    assert_eq!(outcome, Outcome::Inconclusive);
    assert_eq!(reasons, [Reason::Infra(InfraCause::SingleJudge)]);
}

/// Only required obligations are reasons: an optional one disputed or failed explains nothing.
#[test]
fn only_required_obligations_are_reasons() {
    let run = FixtureRun::named("run-narrative-0011-inconclusive");
    let mut snap = run.snapshot();
    let (_, reasons) = outcome_and_reasons(&snap, &[], Rules::V1);
    assert_eq!(
        reasons,
        [Reason::ObligationDisputed("ui.text-readable".into())]
    );
    for o in &mut snap.proof_obligations {
        if o.id == "ui.text-readable" {
            o.required = false;
        }
    }
    let (_, reasons) = outcome_and_reasons(&snap, &[], Rules::V1);
    assert_eq!(reasons, [Reason::Infra(InfraCause::SingleJudge)]);

    let run = FixtureRun::named("run-puzzle-0013-fail-end");
    let mut snap = run.snapshot();
    let judge = snap.judge.as_mut().expect("a projection");
    // A satisfied required obligation is no reason to fail.
    for o in &mut judge.obligation_results {
        if o.id != "core.loop-reached" {
            o.status = ObligationStatus::Satisfied;
        }
    }
    let (_, reasons) = outcome_and_reasons(&snap, &[], Rules::V1);
    assert_eq!(
        reasons,
        [Reason::ObligationFailed("core.loop-reached".into())]
    );
}

/// A failed floor is named by each failing check, and as `floor` when none is failing.
#[test]
fn a_failed_floor_is_named_by_its_failing_checks_else_as_floor() {
    let run = FixtureRun::named("run-trpg-0022-floor-fail");
    let mut snap = run.snapshot();
    let (outcome, reasons) = outcome_and_reasons(&snap, &[], Rules::V1);
    assert_eq!(outcome, Outcome::Fail);
    assert_eq!(reasons, [Reason::FloorFailed("progress".into())]);
    for c in &mut snap.floor.checks {
        c.status = FloorStatus::Pass;
    }
    assert!(!snap.floor.passed);
    let (_, reasons) = outcome_and_reasons(&snap, &[], Rules::V1);
    assert_eq!(reasons, [Reason::FloorFailed("floor".into())]);
    // A passed floor is no reason.
    snap.floor.passed = true;
    let (_, reasons) = outcome_and_reasons(&snap, &[], Rules::V1);
    assert_eq!(reasons, [Reason::Infra(InfraCause::JudgesFailed)]);
}

/// pass → accept; fail → repair in the first round, reject after a repair; inconclusive and
/// infra_error → retry.
#[test]
fn a_fail_is_repaired_once_then_rejected() {
    assert_eq!(decision_action(Outcome::Pass, 0), DecisionAction::Accept);
    assert_eq!(decision_action(Outcome::Pass, 1), DecisionAction::Accept);
    assert_eq!(decision_action(Outcome::Fail, 0), DecisionAction::Repair);
    assert_eq!(decision_action(Outcome::Fail, 1), DecisionAction::Reject);
    assert_eq!(decision_action(Outcome::Fail, 2), DecisionAction::Reject);
    for o in [Outcome::Inconclusive, Outcome::InfraError] {
        assert_eq!(decision_action(o, 0), DecisionAction::Retry);
        assert_eq!(decision_action(o, 1), DecisionAction::Retry);
    }
}

/// Only a v3 pass is published unfrozen; `accepted` is a pass, `ok` the postguard.
#[test]
fn only_a_v3_pass_is_published_unfrozen() {
    for mode in [
        AcceptanceMode::V3,
        AcceptanceMode::V3Shadow,
        AcceptanceMode::HistoricalReplay,
    ] {
        for outcome in [
            Outcome::Pass,
            Outcome::Fail,
            Outcome::Inconclusive,
            Outcome::InfraError,
        ] {
            for ok in [true, false] {
                let c = compatibility(outcome, ok, mode, None);
                let v3_pass = mode == AcceptanceMode::V3 && outcome == Outcome::Pass;
                assert_eq!(c.publish_frozen, !v3_pass, "{mode:?} {outcome:?}");
                assert_eq!(c.accepted, outcome == Outcome::Pass);
                assert_eq!(c.ok, ok);
                assert_eq!(c.acceptance_version, mode);
            }
        }
    }
}

/// `only_judging_changed` (member by member, no copies) answers what the clone-based rule it
/// replaced answers: the header with every judged member taken from the evidence equals the
/// evidence. Over every sealed run, unchanged and with one member of either kind changed.
#[test]
fn only_judging_changed_is_the_header_plus_the_judged_members() {
    fn by_copy(header: &Evidence, ev: &Evidence) -> bool {
        let mut judged = header.clone();
        judged.actions = ev.actions.clone();
        judged.events = ev.events.clone();
        judged.floor = ev.floor.clone();
        judged.first_play = ev.first_play.clone();
        judged.brief_rule_matches = ev.brief_rule_matches.clone();
        judged.rolls = ev.rolls.clone();
        judged.merge = ev.merge.clone();
        judged.source_roll_id = ev.source_roll_id;
        judged.judge = ev.judge.clone();
        judged.cost_rmb = ev.cost_rmb;
        judged.phase = ev.phase;
        judged.outcome = ev.outcome;
        judged.final_postguard = ev.final_postguard.clone();
        judged.decision = ev.decision.clone();
        judged.compatibility = ev.compatibility.clone();
        &judged == ev
    }
    let mut seen = 0;
    for run in std::fs::read_dir(store().join("runs")).unwrap() {
        let dir = run.unwrap().path();
        let (Ok(_), Ok(_)) = (
            std::fs::metadata(dir.join("header.json")),
            std::fs::metadata(dir.join("evidence.json")),
        ) else {
            continue;
        };
        let header: Evidence = read(&dir.join("header.json"));
        let ev: Evidence = read(&dir.join("evidence.json"));
        type Edit = Box<dyn Fn(&mut Evidence)>;
        let edits: Vec<(&str, Edit)> = vec![
            ("none", Box::new(|_| {})),
            ("gameId", Box::new(|e| e.game_id.push('x'))),
            ("environment", Box::new(|e| e.environment = Value::Null)),
            (
                "proofObligations",
                Box::new(|e| e.proof_obligations.clear()),
            ),
            (
                "extension",
                Box::new(|e| {
                    e.extensions.0.insert("_x".into(), Value::Bool(true));
                }),
            ),
            (
                "parentRunId",
                Box::new(|e| e.parent_run_id = Some("p".into())),
            ),
            ("rolls (judged)", Box::new(|e| e.rolls.clear())),
            ("costRmb (judged)", Box::new(|e| e.cost_rmb += 1.0)),
            ("decision (judged)", Box::new(|e| e.decision = None)),
            ("actions (judged)", Box::new(|e| e.actions.clear())),
        ];
        for (what, edit) in &edits {
            let mut changed = ev.clone();
            edit(&mut changed);
            assert_eq!(
                only_judging_changed(&header, &changed),
                by_copy(&header, &changed),
                "{}: {what}",
                dir.display()
            );
        }
        assert!(only_judging_changed(&header, &ev), "{}", dir.display());
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} runs with a header and an evidence");
}

/// `finalPostguard/2`: a run left inconclusive because one judge gave no answer says which
/// judge was unavailable, and no `obligation_disputed` (an outage is not a disagreement); the
/// same snapshot under `finalPostguard/1` keeps its old reasons, so runs sealed by it verify.
#[test]
fn under_finalpostguard_2_a_run_that_lost_one_judge_names_it_instead_of_disputes() {
    let run = FixtureRun::named("run-sim-business-0031-degraded");
    let snap = run.snapshot();
    let (v1_outcome, v1) = outcome_and_reasons(&snap, &[], Rules::V1);
    let (outcome, v2) = outcome_and_reasons(&snap, &[], Rules::V2);
    assert_eq!(outcome, Outcome::Inconclusive);
    assert_eq!(
        v1_outcome, outcome,
        "the outcome does not depend on the version"
    );
    assert!(
        v1.iter()
            .any(|r| matches!(r, Reason::ObligationDisputed(_))),
        "{v1:?}"
    );
    let failed: Vec<Slot> = [Slot::A, Slot::B]
        .into_iter()
        .filter(|s| {
            snap.rolls.iter().any(|r| {
                r.errors
                    .iter()
                    .any(|e| matches!(e, RollError::Judge { slot, .. } if slot == s))
            })
        })
        .collect();
    assert_eq!(failed.len(), 1, "the fixture lost one judge: {failed:?}");
    assert_eq!(v2, [Reason::Infra(InfraCause::JudgeUnavailable(failed[0]))]);
    assert_eq!(
        v2[0].to_string(),
        format!("infra_judge_{}_unavailable", failed[0])
    );
    // The other judge lost instead: that one is named.
    let other = if failed[0] == Slot::A {
        Slot::B
    } else {
        Slot::A
    };
    let mut swapped = snap.clone();
    for r in &mut swapped.rolls {
        for e in &mut r.errors {
            if let RollError::Judge { slot, .. } = e {
                *slot = other;
            }
        }
    }
    assert_eq!(
        outcome_and_reasons(&swapped, &[], Rules::V2).1,
        [Reason::Infra(InfraCause::JudgeUnavailable(other))]
    );
    // Both judges lost: no single judge to name, the reasons of /1.
    let mut both = snap.clone();
    for r in &mut both.rolls {
        if r.errors
            .iter()
            .any(|e| matches!(e, RollError::Judge { .. }))
        {
            r.errors.push(RollError::Judge {
                slot: other,
                class: ErrorClass::Timeout,
            });
        }
    }
    assert_eq!(
        outcome_and_reasons(&both, &[], Rules::V2),
        outcome_and_reasons(&both, &[], Rules::V1)
    );
    // None lost: V2 changes nothing.
    let pass = FixtureRun::named("run-trpg-0021-pass").snapshot();
    assert_eq!(
        outcome_and_reasons(&pass, &[], Rules::V1),
        outcome_and_reasons(&pass, &[], Rules::V2)
    );
    assert_eq!(Rules::parse("finalPostguard/2"), Some(Rules::V2));
    assert_eq!(Rules::parse("finalPostguard/3"), None);
}
