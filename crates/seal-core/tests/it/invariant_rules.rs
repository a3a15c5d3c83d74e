//! The cross-field invariants (`invariants::check`, docs/DESIGN.md §6) rule by rule, inside the
//! decision core's own suite. `seal validate`, the finalPostguard and `seal verify` all call
//! `check`; the root crate's integration tests exercise it on whole stored runs, but a mutant of
//! a rule (a check that never fires, fires on a valid document, or names another pointer) went
//! through `cargo test -p seal-core` (docs/TESTING.md, mutation testing).
//!
//! Every document of the sealed fixtures satisfies its invariants; each test below breaks one
//! rule of one of them and expects exactly the findings (pointer, rule) that break names, so a
//! rule that fires too often, too rarely or at another pointer fails here.

use std::path::PathBuf;

use seal_core::contracts::{Finding, Kind};
use seal_core::doc::{
    CostReservation, Evidence, ImageManifest, JudgeConsensus, JudgePackage, JudgeResult,
    ProofPackage, SlotMeta,
};
use seal_core::invariants::{self, check, Checked};
use serde_json::{json, Value};

pub(crate) const PASS: &str = "run-narrative-0010-pass";
pub(crate) const TWO_ROLLS: &str = "run-heritage-0017-disputed-font";
pub(crate) const VOID: &str = "run-sim-business-0032-over-budget";
pub(crate) const FAIL: &str = "run-puzzle-0013-fail-end";
pub(crate) const REPLAY: &str = "run-narrative-0010-pass.replay-1";
pub(crate) const FLOOR_FAIL: &str = "run-trpg-0022-floor-fail";
pub(crate) const DEGRADED: &str = "run-sim-business-0031-degraded";
pub(crate) const DISPUTED: &str = "run-puzzle-0041-contradicted";

pub(crate) fn runs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sealed-fixtures/store/runs")
}

/// A stored document, `rel` under `sealed-fixtures/store/runs`.
pub(crate) fn fixture(rel: &str) -> Value {
    let path = runs().join(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub(crate) fn evidence(run: &str) -> Value {
    fixture(&format!("{run}/evidence.json"))
}

/// The run's evidence as it stood while judging: its rolls, nothing decided, merged or
/// projected yet.
pub(crate) fn judging(run: &str) -> Value {
    let mut d = evidence(run);
    d["phase"] = json!("JUDGING");
    for field in [
        "outcome",
        "finalPostguard",
        "decision",
        "compatibility",
        "merge",
        "sourceRollId",
        "judge",
    ] {
        d[field] = Value::Null;
    }
    d
}

/// The findings of `doc` through the typed path the audit, `seal verify` and the intake use
/// (`invariants::typed`: one deserialization, the rules on the typed value); `None` for a kind
/// no typed caller checks.
pub(crate) fn typed_findings(kind: Kind, doc: &Value) -> Option<Vec<Finding>> {
    fn of<T: Checked>(doc: &Value) -> Vec<Finding> {
        invariants::typed::<T>(doc).err().unwrap_or_default()
    }
    Some(match kind {
        Kind::PlaytestV3 => of::<Evidence>(doc),
        Kind::ProofPackage => of::<ProofPackage>(doc),
        Kind::JudgePackage => of::<JudgePackage>(doc),
        Kind::JudgeResult => of::<JudgeResult>(doc),
        Kind::JudgeConsensus => of::<JudgeConsensus>(doc),
        Kind::CostReservation => of::<CostReservation>(doc),
        Kind::ImageManifest => of::<ImageManifest>(doc),
        Kind::SlotMeta => of::<SlotMeta>(doc),
        _ => return None,
    })
}

/// The findings of `doc` as `(pointer, rule)`, the rule without its `invariant.` prefix. Every
/// test also asserts that the typed path finds exactly the same, so each broken rule below is
/// one equivalence case between the two.
pub(crate) fn found(kind: Kind, doc: &Value) -> Vec<(String, String)> {
    let all = check(kind, doc);
    if let Some(typed) = typed_findings(kind, doc) {
        assert_eq!(typed, all, "the typed path finds what check finds");
    }
    all.into_iter()
        .map(|f| {
            let rule = f.rule.strip_prefix("invariant.").unwrap_or_else(|| {
                panic!("{f}: a rule is named invariant.<rule>");
            });
            (f.pointer.clone(), rule.to_owned())
        })
        .collect()
}

pub(crate) fn pairs(want: &[(&str, &str)]) -> Vec<(String, String)> {
    want.iter()
        .map(|(p, r)| (p.to_string(), r.to_string()))
        .collect()
}

/// Asserts that `doc` breaks exactly `want`, in that order.
#[track_caller]
pub(crate) fn breaks(kind: Kind, doc: &Value, want: &[(&str, &str)]) {
    assert_eq!(found(kind, doc), pairs(want), "{:#?}", check(kind, doc));
}

/// The one finding of `doc` at `pointer` (its message is what a person reads).
#[track_caller]
pub(crate) fn finding(kind: Kind, doc: &Value, pointer: &str) -> Finding {
    let all = check(kind, doc);
    let mut at: Vec<Finding> = all
        .iter()
        .filter(|f| f.pointer == pointer)
        .cloned()
        .collect();
    assert_eq!(at.len(), 1, "one finding at {pointer}: {all:#?}");
    at.remove(0)
}

pub(crate) fn set(doc: &mut Value, pointer: &str, value: Value) {
    *doc.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in the fixture")) = value;
}

pub(crate) fn get<'v>(doc: &'v Value, pointer: &str) -> &'v Value {
    doc.pointer(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in the fixture"))
}

pub(crate) fn array<'v>(doc: &'v mut Value, pointer: &str) -> &'v mut Vec<Value> {
    doc.pointer_mut(pointer)
        .and_then(Value::as_array_mut)
        .unwrap_or_else(|| panic!("no array {pointer} in the fixture"))
}

/// Every run of the sealed fixtures, and every roll folder of each.
pub(crate) fn every_run_and_roll() -> (Vec<String>, Vec<String>) {
    let mut runs_found = Vec::new();
    let mut rolls = Vec::new();
    for entry in std::fs::read_dir(runs()).expect("sealed-fixtures/store/runs") {
        let run = entry.expect("a run folder").file_name();
        let run = run.to_str().expect("a run id is text").to_owned();
        for roll in ["roll-1", "roll-2"] {
            if runs().join(&run).join(roll).is_dir() {
                rolls.push(format!("{run}/{roll}"));
            }
        }
        runs_found.push(run);
    }
    runs_found.sort();
    rolls.sort();
    (runs_found, rolls)
}

#[test]
fn every_sealed_document_satisfies_its_invariants() {
    let (all_runs, rolls) = every_run_and_roll();
    assert_eq!(all_runs.len(), 11, "{all_runs:?}");
    assert_eq!(rolls.len(), 12, "{rolls:?}");
    for run in &all_runs {
        breaks(Kind::PlaytestV3, &evidence(run), &[]);
        breaks(Kind::PlaytestV3, &judging(run), &[]);
    }
    for roll in &rolls {
        for (file, kind) in [
            ("proof-package.json", Kind::ProofPackage),
            ("judge-package.json", Kind::JudgePackage),
            ("judge-a/normalized.json", Kind::JudgeResult),
            ("judge-b/normalized.json", Kind::JudgeResult),
            ("consensus.json", Kind::JudgeConsensus),
            ("cost-reservation.json", Kind::CostReservation),
            ("image-manifest.json", Kind::ImageManifest),
        ] {
            let doc = fixture(&format!("{roll}/{file}"));
            breaks(kind, &doc, &[]);
        }
    }
}

#[test]
fn a_document_that_does_not_read_as_its_type_is_one_shape_finding_at_the_root() {
    breaks(Kind::PlaytestV3, &json!({"phase": 1}), &[("", "shape")]);
    breaks(Kind::JudgeConsensus, &json!([]), &[("", "shape")]);
}

#[test]
fn a_bad_word_is_named_alone_before_the_typed_rules_run() {
    let mut d = evidence(PASS);
    set(
        &mut d,
        "/decision/reasons",
        json!(["accept", "infra_timeout"]),
    );
    set(&mut d, "/costRmb", json!(0));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/decision/reasons/1", "vocabulary")],
    );
}

// -- the run record -----------------------------------------------------------------------------

#[test]
fn the_decided_fields_are_present_exactly_when_the_phase_is_decided() {
    let mut d = evidence(PASS);
    set(&mut d, "/phase", json!("JUDGING"));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/outcome", "decided_fields"),
            ("/finalPostguard", "decided_fields"),
            ("/decision", "decided_fields"),
            ("/compatibility", "decided_fields"),
        ],
    );
    let mut d = evidence(PASS);
    set(&mut d, "/decision", Value::Null);
    breaks(Kind::PlaytestV3, &d, &[("/decision", "decided_fields")]);
}

#[test]
fn run_ids_are_valid_ids() {
    for pointer in ["/runId", "/parentRunId", "/repair/fromRunId"] {
        // A run without rolls, so that no ref has to follow the run id.
        let mut d = judging(PASS);
        set(&mut d, "/rolls", json!([]));
        set(&mut d, pointer, json!("-not-an-id"));
        breaks(Kind::PlaytestV3, &d, &[(pointer, "run_id")]);
    }
}

#[test]
fn obligation_ids_are_unique() {
    // While judging, so that no judge projection has to list the obligations once each.
    let mut d = judging(PASS);
    let obligations = array(&mut d, "/proofObligations");
    let copy = obligations[0].clone();
    obligations.push(copy);
    let at = format!("/proofObligations/{}/id", obligations.len() - 1);
    breaks(Kind::PlaytestV3, &d, &[(&at, "obligation_ids_unique")]);
    assert_eq!(
        finding(Kind::PlaytestV3, &d, &at).message,
        "duplicate obligation id \"core.loop-reached\""
    );
}

#[test]
fn a_play_spec_obligation_carries_its_assertion_as_check() {
    let mut d = evidence(PASS);
    assert_eq!(get(&d, "/proofObligations/3/source"), "play-spec");
    let obligation = d
        .pointer_mut("/proofObligations/3")
        .and_then(Value::as_object_mut)
        .expect("obligation 3");
    obligation.remove("check");
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/proofObligations/3", "play_spec_obligation_check")],
    );
    // A brief's or a profile's obligation has none, and needs none (the fixture's others).
    assert!(get(&evidence(PASS), "/proofObligations/0")
        .get("check")
        .is_none());
}

#[test]
fn a_historical_replay_names_its_parent_run() {
    let mut d = evidence(REPLAY);
    set(&mut d, "/parentRunId", Value::Null);
    breaks(Kind::PlaytestV3, &d, &[("/parentRunId", "replay_parent")]);
}

#[test]
fn the_run_costs_at_least_what_its_rolls_cost() {
    // The fixture's run cost is exactly its one roll's: equal is enough.
    let d = evidence(PASS);
    assert_eq!(get(&d, "/costRmb"), get(&d, "/rolls/0/costRmb"));
    let mut d = evidence(PASS);
    set(&mut d, "/costRmb", json!(0.480176));
    breaks(Kind::PlaytestV3, &d, &[("/costRmb", "cost_covers_rolls")]);
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/costRmb").message,
        "costRmb 0.480176 is below the sum of roll costs 0.480177"
    );
    // Two rolls: the sum of both.
    let mut d = evidence(TWO_ROLLS);
    let sum = get(&d, "/rolls/0/costRmb").as_f64().unwrap()
        + get(&d, "/rolls/1/costRmb").as_f64().unwrap();
    set(&mut d, "/costRmb", json!(sum - 0.000002));
    breaks(Kind::PlaytestV3, &d, &[("/costRmb", "cost_covers_rolls")]);
}

// -- the roll records ---------------------------------------------------------------------------

#[test]
fn rolls_are_numbered_in_order() {
    let mut d = evidence(TWO_ROLLS);
    set(&mut d, "/rolls/1/roll", json!(1));
    breaks(Kind::PlaytestV3, &d, &[("/rolls/1/rollId", "roll_order")]);
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/rolls/1/rollId").message,
        "rolls[1] must be roll-2 (roll 2)"
    );
}

#[test]
fn a_roll_whose_guard_blocked_is_void() {
    let mut d = evidence(PASS);
    set(&mut d, "/rolls/0/rollGuard/status", json!("blocked"));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/rolls/0/rollOutcome", "blocked_roll")],
    );
}

#[test]
fn each_slot_hash_is_its_slots_result_hash() {
    for slot in ["judgeARef", "judgeBRef"] {
        let mut d = evidence(PASS);
        let other = get(&d, "/rolls/0/proofPackageHash").clone();
        set(&mut d, &format!("/rolls/0/{slot}/resultHash"), other);
        breaks(Kind::PlaytestV3, &d, &[("/rolls/0", "slot_hash")]);
    }
}

#[test]
fn every_ref_of_a_roll_is_a_key_inside_its_roll_folder() {
    // The void run has no judge projection, which would also compare its consensus ref.
    for field in [
        "proofPackageRef",
        "judgePackageRef",
        "judgeConsensusRef",
        "costReservationRef",
        "judgeARef/rawRef",
        "judgeARef/parsedRef",
        "judgeARef/normalizedRef",
        "judgeBRef/rawRef",
        "judgeBRef/parsedRef",
        "judgeBRef/normalizedRef",
    ] {
        let mut d = evidence(VOID);
        let pointer = format!("/rolls/0/{field}");
        set(
            &mut d,
            &pointer,
            json!(format!("runs/{VOID}/roll-2/x.json")),
        );
        breaks(Kind::PlaytestV3, &d, &[(&pointer, "ref_in_run")]);
        assert_eq!(
            finding(Kind::PlaytestV3, &d, &pointer).message,
            format!("\"runs/{VOID}/roll-2/x.json\" is not a key inside runs/{VOID}/roll-1/")
        );
    }
}

#[test]
fn roll_2_follows_only_an_indecisive_roll_1() {
    // While judging nothing is merged yet, so only the roll order speaks.
    for (first, decisive) in [
        ("pass", true),
        ("fail", true),
        ("inconclusive", false),
        ("infra_error", false),
    ] {
        let mut d = judging(TWO_ROLLS);
        set(&mut d, "/rolls/0/rollOutcome", json!(first));
        if decisive {
            breaks(
                Kind::PlaytestV3,
                &d,
                &[("/rolls/1", "roll2_after_indecisive")],
            );
            assert_eq!(
                finding(Kind::PlaytestV3, &d, "/rolls/1").message,
                format!("roll-2 exists although roll-1 was decisive ({first})")
            );
        } else {
            breaks(Kind::PlaytestV3, &d, &[]);
        }
    }
}

// -- merge and the source roll ------------------------------------------------------------------

#[test]
fn a_decided_run_with_rolls_has_a_merge() {
    let mut d = evidence(PASS);
    set(&mut d, "/merge", Value::Null);
    breaks(Kind::PlaytestV3, &d, &[("/merge", "merge_present")]);
}

#[test]
fn merge_lists_every_rolls_outcome_in_order() {
    let mut d = evidence(TWO_ROLLS);
    array(&mut d, "/merge/rollOutcomes").reverse();
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/merge/rollOutcomes", "merge_outcomes")],
    );
    let mut d = evidence(PASS);
    set(&mut d, "/merge/rollOutcomes/0/outcome", json!("fail"));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/merge/rollOutcomes", "merge_outcomes")],
    );
}

#[test]
fn merge_names_the_first_decisive_roll() {
    let mut d = evidence(PASS);
    set(&mut d, "/merge/sourceRollId", Value::Null);
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/merge/sourceRollId", "first_decisive")],
    );
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/merge/sourceRollId").message,
        "first-decisive source roll is roll-1, merge says null"
    );
    let mut d = evidence(TWO_ROLLS);
    set(&mut d, "/merge/sourceRollId", json!("roll-1"));
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/merge/sourceRollId").message,
        "first-decisive source roll is roll-2, merge says roll-1"
    );
}

#[test]
fn the_source_roll_is_the_first_decisive_one_once_merged_or_decided() {
    // Decided: the run, its compatibility block and its judge all name the source roll.
    let mut d = evidence(PASS);
    for pointer in [
        "/sourceRollId",
        "/compatibility/sourceRollId",
        "/judge/sourceRollId",
    ] {
        set(&mut d, pointer, Value::Null);
    }
    breaks(Kind::PlaytestV3, &d, &[("/sourceRollId", "first_decisive")]);
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/sourceRollId").message,
        "source roll must be roll-1, found null"
    );
    // Merged but not decided yet: the merge alone is enough.
    let mut d = judging(PASS);
    d["merge"] = evidence(PASS)["merge"].clone();
    d["judge"] = evidence(PASS)["judge"].clone();
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/sourceRollId", "first_decisive"),
            ("/judge/sourceRollId", "source_roll_agrees"),
        ],
    );
    set(&mut d, "/sourceRollId", json!("roll-1"));
    breaks(Kind::PlaytestV3, &d, &[]);
}

#[test]
fn while_judging_a_source_roll_named_is_the_first_decisive_one() {
    let mut d = judging(TWO_ROLLS);
    set(&mut d, "/sourceRollId", json!("roll-2"));
    breaks(Kind::PlaytestV3, &d, &[]);
    set(&mut d, "/sourceRollId", json!("roll-1"));
    breaks(Kind::PlaytestV3, &d, &[("/sourceRollId", "first_decisive")]);
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/sourceRollId").message,
        "source roll must be roll-2, found roll-1"
    );
}

#[test]
fn the_source_roll_names_a_roll_of_the_run() {
    let mut d = judging(PASS);
    set(&mut d, "/sourceRollId", json!("roll-2"));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/sourceRollId", "first_decisive"),
            ("/sourceRollId", "source_roll_exists"),
        ],
    );
    let all = check(Kind::PlaytestV3, &d);
    assert_eq!(
        all[1].message,
        "sourceRollId roll-2 names no roll of this run"
    );
}

#[test]
fn without_rolls_there_is_no_source_roll_and_no_judge() {
    let mut d = judging(PASS);
    set(&mut d, "/rolls", json!([]));
    set(&mut d, "/costRmb", json!(0));
    breaks(Kind::PlaytestV3, &d, &[]);
    let mut with_source = d.clone();
    set(&mut with_source, "/sourceRollId", json!("roll-1"));
    breaks(
        Kind::PlaytestV3,
        &with_source,
        &[
            ("/sourceRollId", "no_rolls"),
            ("/sourceRollId", "source_roll_exists"),
        ],
    );
    let mut with_judge = d.clone();
    with_judge["judge"] = evidence(PASS)["judge"].clone();
    set(&mut with_judge, "/judge/sourceRollId", Value::Null);
    breaks(
        Kind::PlaytestV3,
        &with_judge,
        &[
            ("/sourceRollId", "no_rolls"),
            ("/judge", "judge_is_source_projection"),
        ],
    );
}

#[test]
fn the_judge_is_null_only_for_a_void_source_roll() {
    // Decided: the projection is missing and the outcome cannot stand.
    let mut d = evidence(PASS);
    set(&mut d, "/judge", Value::Null);
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/judge", "void_roll"),
            ("/outcome", "outcome_follows_rolls"),
            ("/judge", "void_roll"),
        ],
    );
    assert_eq!(
        check(Kind::PlaytestV3, &d)[0].message,
        "judge is null but the source roll roll-1 is not void (pass)"
    );
    // Merged, not decided: the merge alone asks for the projection.
    let mut d = judging(PASS);
    d["merge"] = evidence(PASS)["merge"].clone();
    set(&mut d, "/sourceRollId", json!("roll-1"));
    breaks(Kind::PlaytestV3, &d, &[("/judge", "void_roll")]);
}

#[test]
fn the_compatibility_block_names_the_same_source_roll() {
    let mut d = evidence(PASS);
    set(&mut d, "/compatibility/sourceRollId", Value::Null);
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/compatibility/sourceRollId", "source_roll_agrees"),
            ("/compatibility", "compatibility"),
        ],
    );
}

// -- the judge projection -----------------------------------------------------------------------

#[test]
fn the_judge_names_the_same_source_roll() {
    let mut d = evidence(PASS);
    set(&mut d, "/judge/sourceRollId", Value::Null);
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/judge/sourceRollId", "source_roll_agrees")],
    );
}

#[test]
fn the_judge_is_the_source_rolls_projection() {
    let other_hash = json!("0".repeat(64));
    for (field, value) in [
        (
            "consensusRef",
            json!(format!("runs/{PASS}/roll-1/other.json")),
        ),
        ("consensusHash", other_hash.clone()),
        ("packageHash", other_hash.clone()),
        ("judgeAResultHash", other_hash.clone()),
        ("judgeBResultHash", other_hash.clone()),
    ] {
        let mut d = evidence(PASS);
        let pointer = format!("/judge/{field}");
        set(&mut d, &pointer, value);
        breaks(
            Kind::PlaytestV3,
            &d,
            &[(&pointer, "judge_is_source_projection")],
        );
        assert_eq!(
            finding(Kind::PlaytestV3, &d, &pointer).message,
            format!("judge.{field} does not match rolls[0]")
        );
    }
    // The source of a two-roll run is roll 2, not roll 1.
    let mut d = evidence(TWO_ROLLS);
    let roll_1 = get(&d, "/rolls/0/judgePackageHash").clone();
    set(&mut d, "/judge/packageHash", roll_1);
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/judge/packageHash").message,
        "judge.packageHash does not match rolls[1]"
    );
}

#[test]
fn the_judge_lists_every_obligation_once_sorted_by_id() {
    let mut d = evidence(PASS);
    array(&mut d, "/judge/obligationResults").reverse();
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/judge/obligationResults", "judge_obligations")],
    );
    let mut d = evidence(PASS);
    array(&mut d, "/judge/obligationResults").pop();
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/judge/obligationResults", "judge_obligations")],
    );
}

#[test]
fn a_single_judge_projection_never_passes() {
    let mut d = evidence(PASS);
    set(&mut d, "/judge/degraded", json!(true));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/judge/decision", "single_judge"),
            ("/judge/decision", "consensus_decision"),
        ],
    );
}

#[test]
fn the_projection_decides_as_the_consensus_does() {
    // Index of each obligation in the projection (sorted by id).
    let d = evidence(PASS);
    let ids: Vec<&str> = get(&d, "/judge/obligationResults")
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    let at = |id: &str| ids.iter().position(|i| *i == id).unwrap();
    // A required obligation failed: fail, not pass.
    let mut d = evidence(PASS);
    let pointer = format!(
        "/judge/obligationResults/{}/status",
        at("core.loop-reached")
    );
    set(&mut d, &pointer, json!("failed"));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/judge/decision", "consensus_decision")],
    );
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/judge/decision").message,
        "the obligations, the floor and the recorded slot failures give fail, the projection says pass"
    );
    // An optional obligation does not decide.
    let mut d = evidence(PASS);
    let pointer = format!(
        "/judge/obligationResults/{}/status",
        at("polish.no-placeholder")
    );
    set(&mut d, &pointer, json!("failed"));
    breaks(Kind::PlaytestV3, &d, &[]);
    // A failed independence check voids the roll.
    let mut d = evidence(PASS);
    set(
        &mut d,
        "/judge/independenceChecks/differentSession",
        json!(false),
    );
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/judge/decision", "consensus_decision")],
    );
    // Both judges failed, as the source roll's errors record.
    let mut d = evidence(PASS);
    set(
        &mut d,
        "/rolls/0/errors",
        json!(["judge-a:http_5xx", "judge-b:http_5xx"]),
    );
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/judge/decision", "consensus_decision")],
    );
    // One judge failed: not both.
    let mut d = evidence(PASS);
    set(&mut d, "/rolls/0/errors", json!(["judge-b:http_5xx"]));
    breaks(Kind::PlaytestV3, &d, &[]);
    // The floor failed.
    let mut d = evidence(PASS);
    set(&mut d, "/floor/passed", json!(false));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/judge/decision", "consensus_decision"),
            ("/outcome", "floor"),
        ],
    );
}

// -- failureSignature and sameModel, in the projection and in the consensus --------------------

#[test]
fn the_failure_signature_is_null_exactly_on_pass_and_starts_with_the_decision() {
    for (kind, run, doc, at) in [
        (Kind::PlaytestV3, PASS, "evidence.json", "/judge"),
        (Kind::JudgeConsensus, PASS, "roll-1/consensus.json", ""),
    ] {
        let mut d = fixture(&format!("{run}/{doc}"));
        set(&mut d, &format!("{at}/failureSignature"), json!("pass:"));
        let pointer = format!("{at}/failureSignature");
        breaks(kind, &d, &[(&pointer, "failure_signature")]);
    }
    for (kind, doc, at) in [
        (Kind::PlaytestV3, "evidence.json", "/judge"),
        (Kind::JudgeConsensus, "roll-1/consensus.json", ""),
    ] {
        let pointer = format!("{at}/failureSignature");
        let mut d = fixture(&format!("{FAIL}/{doc}"));
        set(&mut d, &pointer, Value::Null);
        breaks(kind, &d, &[(&pointer, "failure_signature")]);
        let mut d = fixture(&format!("{FAIL}/{doc}"));
        set(
            &mut d,
            &pointer,
            json!("inconclusive:failed:core.loop-reached"),
        );
        breaks(kind, &d, &[(&pointer, "failure_signature")]);
        assert_eq!(
            finding(kind, &d, &pointer).message,
            "failureSignature must start with \"fail:\""
        );
    }
}

#[test]
fn same_model_agrees_with_the_independence_record() {
    for (kind, doc, at) in [
        (Kind::PlaytestV3, "evidence.json", "/judge"),
        (Kind::JudgeConsensus, "roll-1/consensus.json", ""),
    ] {
        let mut d = fixture(&format!("{PASS}/{doc}"));
        let pointer = format!("{at}/sameModel");
        set(&mut d, &pointer, json!(true));
        breaks(kind, &d, &[(&pointer, "same_model")]);
    }
}
