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
use seal_core::derive;
use seal_core::doc::{AcceptanceMode, Outcome};
use seal_core::doc::{
    CostReservation, Evidence, ImageManifest, JudgeConsensus, JudgePackage, JudgeResult,
    ProofPackage, SlotMeta,
};
use seal_core::ids::RollId;
use seal_core::invariants::{self, check, Checked};
use serde_json::{json, Value};

const PASS: &str = "run-narrative-0010-pass";
const TWO_ROLLS: &str = "run-heritage-0017-disputed-font";
const VOID: &str = "run-sim-business-0032-over-budget";
const FAIL: &str = "run-puzzle-0013-fail-end";
const REPLAY: &str = "run-narrative-0010-pass.replay-1";
const FLOOR_FAIL: &str = "run-trpg-0022-floor-fail";
const DEGRADED: &str = "run-sim-business-0031-degraded";
const DISPUTED: &str = "run-puzzle-0041-contradicted";

fn runs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sealed-fixtures/store/runs")
}

/// A stored document, `rel` under `sealed-fixtures/store/runs`.
fn fixture(rel: &str) -> Value {
    let path = runs().join(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn evidence(run: &str) -> Value {
    fixture(&format!("{run}/evidence.json"))
}

/// The run's evidence as it stood while judging: its rolls, nothing decided, merged or
/// projected yet.
fn judging(run: &str) -> Value {
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
fn typed_findings(kind: Kind, doc: &Value) -> Option<Vec<Finding>> {
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
fn found(kind: Kind, doc: &Value) -> Vec<(String, String)> {
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

fn pairs(want: &[(&str, &str)]) -> Vec<(String, String)> {
    want.iter()
        .map(|(p, r)| (p.to_string(), r.to_string()))
        .collect()
}

/// Asserts that `doc` breaks exactly `want`, in that order.
#[track_caller]
fn breaks(kind: Kind, doc: &Value, want: &[(&str, &str)]) {
    assert_eq!(found(kind, doc), pairs(want), "{:#?}", check(kind, doc));
}

/// The one finding of `doc` at `pointer` (its message is what a person reads).
#[track_caller]
fn finding(kind: Kind, doc: &Value, pointer: &str) -> Finding {
    let all = check(kind, doc);
    let mut at: Vec<Finding> = all
        .iter()
        .filter(|f| f.pointer == pointer)
        .cloned()
        .collect();
    assert_eq!(at.len(), 1, "one finding at {pointer}: {all:#?}");
    at.remove(0)
}

fn set(doc: &mut Value, pointer: &str, value: Value) {
    *doc.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in the fixture")) = value;
}

fn get<'v>(doc: &'v Value, pointer: &str) -> &'v Value {
    doc.pointer(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in the fixture"))
}

fn array<'v>(doc: &'v mut Value, pointer: &str) -> &'v mut Vec<Value> {
    doc.pointer_mut(pointer)
        .and_then(Value::as_array_mut)
        .unwrap_or_else(|| panic!("no array {pointer} in the fixture"))
}

/// Every run of the sealed fixtures, and every roll folder of each.
fn every_run_and_roll() -> (Vec<String>, Vec<String>) {
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

// -- the decided run ----------------------------------------------------------------------------

#[test]
fn the_postguard_passed_exactly_when_every_check_is_ok() {
    // Said passed although a check failed: the outcome follows the failed check.
    let mut d = evidence(PASS);
    set(&mut d, "/finalPostguard/checks/8/ok", json!(false));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/finalPostguard/passed", "postguard_passed"),
            ("/outcome", "outcome_follows_rolls"),
        ],
    );
    // Said failed with every check ok.
    let mut d = evidence(PASS);
    set(&mut d, "/finalPostguard/passed", json!(false));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/finalPostguard/passed", "postguard_passed"),
            ("/decision/reasons", "postguard_reason"),
            ("/compatibility", "compatibility"),
        ],
    );
}

/// The pass fixture as its finalPostguard would have decided it had its `invariants` check
/// failed: infra_error, retried, the check named; the judge projection still says pass.
fn postguard_failed() -> Value {
    let mut d = evidence(PASS);
    assert_eq!(get(&d, "/finalPostguard/checks/8/id"), "invariants");
    set(&mut d, "/finalPostguard/checks/8/ok", json!(false));
    set(&mut d, "/finalPostguard/passed", json!(false));
    set(&mut d, "/outcome", json!("infra_error"));
    let action = derive::decision_action(Outcome::InfraError, 0);
    set(&mut d, "/decision/action", json!(action.as_str()));
    set(&mut d, "/decision/reasons", json!(["postguard_invariants"]));
    let compat = derive::compatibility(
        Outcome::InfraError,
        false,
        AcceptanceMode::V3,
        Some(RollId::R1),
    );
    d["compatibility"] = serde_json::to_value(compat).unwrap();
    d
}

#[test]
fn a_failed_postguard_is_named_in_the_reasons_and_overrides_the_projection() {
    let d = postguard_failed();
    // The projection's pass stands beside the run's infra_error: the postguard decided.
    assert_eq!(get(&d, "/judge/decision"), "pass");
    breaks(Kind::PlaytestV3, &d, &[]);
    let mut d = postguard_failed();
    set(&mut d, "/decision/reasons", json!(["infra_judges_failed"]));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/decision/reasons", "postguard_reason"),
            ("/decision/reasons/0", "reason_follows_outcome"),
            ("/decision/reasons", "reason_follows_outcome"),
        ],
    );
}

#[test]
fn the_outcome_is_the_source_rolls_and_the_projection_agrees() {
    let mut d = evidence(PASS);
    set(&mut d, "/outcome", json!("fail"));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/outcome", "outcome_follows_rolls"),
            ("/judge/decision", "outcome_follows_rolls"),
            ("/decision/action", "decision_follows_outcome"),
            ("/compatibility", "compatibility"),
        ],
    );
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/outcome").message,
        "outcome must be pass (source roll and postguard), found fail"
    );
}

#[test]
fn a_failed_floor_never_passes() {
    // Everything else consistent with a pass: only the floor speaks (and the consensus rule,
    // which decides fail on a failed floor too).
    let d = evidence(FLOOR_FAIL);
    assert_eq!(get(&d, "/floor/passed"), false);
    breaks(Kind::PlaytestV3, &d, &[]);
    let mut d = evidence(PASS);
    set(&mut d, "/floor/passed", json!(false));
    let found = found(Kind::PlaytestV3, &d);
    assert!(
        found.contains(&("/outcome".into(), "floor".into())),
        "{found:?}"
    );
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/outcome").message,
        "the floor failed: the outcome cannot be pass"
    );
}

#[test]
fn the_action_follows_the_outcome_and_the_repair_round() {
    let mut d = evidence(PASS);
    set(&mut d, "/decision/action", json!("retry"));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/decision/action", "decision_follows_outcome")],
    );
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/decision/action").message,
        "pass with repair round 0 must be accept, found retry"
    );
}

#[test]
fn reasons_are_sorted_as_strings_and_unique() {
    let mut d = evidence(DISPUTED);
    array(&mut d, "/decision/reasons").reverse();
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/decision/reasons", "reasons_sorted")],
    );
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/decision/reasons").message,
        "\"obligation_disputed:progress.score-increased\" after \
         \"obligation_disputed:ui.text-readable\": not sorted by id or duplicated"
    );
    let mut d = evidence(FAIL);
    let reasons = array(&mut d, "/decision/reasons");
    let copy = reasons[0].clone();
    reasons.push(copy);
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/decision/reasons", "reasons_sorted")],
    );
}

#[test]
fn a_pass_is_decided_with_the_single_reason_accept() {
    let mut d = evidence(PASS);
    set(
        &mut d,
        "/decision/reasons",
        json!(["accept", "obligation_failed:core.loop-reached"]),
    );
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/decision/reasons", "decision_follows_outcome"),
            ("/decision/reasons/1", "reason_follows_outcome"),
        ],
    );
}

#[test]
fn the_reasons_are_the_ones_the_outcome_derives() {
    // One missing.
    let mut d = evidence(DISPUTED);
    array(&mut d, "/decision/reasons").remove(1);
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/decision/reasons", "reason_follows_outcome")],
    );
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/decision/reasons").message,
        "reason \"obligation_disputed:core.loop-reached\" is missing"
    );
    // One that does not explain the outcome.
    let mut d = evidence(FAIL);
    set(
        &mut d,
        "/decision/reasons",
        json!([
            "obligation_failed:core.loop-reached",
            "obligation_failed:ui.text-readable"
        ]),
    );
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/decision/reasons/1", "reason_follows_outcome")],
    );
}

#[test]
fn compatibility_is_derived_from_the_outcome() {
    let mut d = evidence(PASS);
    set(&mut d, "/compatibility/accepted", json!(false));
    breaks(Kind::PlaytestV3, &d, &[("/compatibility", "compatibility")]);
    let want = derive::compatibility(Outcome::Pass, true, AcceptanceMode::V3, Some(RollId::R1));
    assert_eq!(
        finding(Kind::PlaytestV3, &d, "/compatibility").message,
        format!(
            "compatibility must be {}",
            serde_json::to_string(&want).unwrap()
        )
    );
}

#[test]
fn a_historical_replay_is_always_publish_frozen() {
    let mut d = evidence(REPLAY);
    set(&mut d, "/compatibility/publishFrozen", json!(false));
    breaks(
        Kind::PlaytestV3,
        &d,
        &[
            ("/compatibility", "compatibility"),
            ("/compatibility/publishFrozen", "replay_frozen"),
        ],
    );
}

#[test]
fn decided_at_is_an_rfc_3339_timestamp() {
    let mut d = evidence(PASS);
    set(
        &mut d,
        "/finalPostguard/decidedAt",
        json!("2026-11-29 12:00"),
    );
    breaks(
        Kind::PlaytestV3,
        &d,
        &[("/finalPostguard/decidedAt", "rfc3339")],
    );
}

// -- the documents of a roll --------------------------------------------------------------------

fn roll_doc(doc: &str) -> Value {
    fixture(&format!("{PASS}/roll-1/{doc}"))
}

#[test]
fn a_proof_packages_frames_are_cited_by_their_cas_key() {
    let mut p = roll_doc("proof-package.json");
    let other = get(&p, "/frames/1/ref").clone();
    set(&mut p, "/frames/0/ref", other.clone());
    breaks(
        Kind::ProofPackage,
        &p,
        &[("/frames/0/ref", "frame_ref_is_cas")],
    );
    let hash = get(&p, "/frames/0/hash").as_str().unwrap().to_owned();
    assert_eq!(
        finding(Kind::ProofPackage, &p, "/frames/0/ref").message,
        format!("ref must be cas/sha256/{}/{hash}", &hash[..2])
    );
    for side in ["preFrameRef", "postFrameRef"] {
        let mut p = roll_doc("proof-package.json");
        let pointer = format!("/actions/0/{side}/ref");
        let hash = get(&p, &format!("/actions/0/{side}/hash")).clone();
        let other = get(&p, "/frames")
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["hash"] != hash)
            .expect("another frame")["ref"]
            .clone();
        set(&mut p, &pointer, other);
        breaks(Kind::ProofPackage, &p, &[(&pointer, "frame_ref_is_cas")]);
    }
}

#[test]
fn every_frame_an_action_cites_is_listed() {
    for side in ["preFrameRef", "postFrameRef"] {
        let mut p = roll_doc("proof-package.json");
        let hash = "0".repeat(64);
        set(&mut p, &format!("/actions/0/{side}/hash"), json!(hash));
        set(
            &mut p,
            &format!("/actions/0/{side}/ref"),
            json!(format!("cas/sha256/00/{hash}")),
        );
        let pointer = format!("/actions/0/{side}/hash");
        breaks(Kind::ProofPackage, &p, &[(&pointer, "frame_listed")]);
    }
}

#[test]
fn a_proof_packages_actions_are_numbered_in_order() {
    let mut p = roll_doc("proof-package.json");
    set(&mut p, "/actions/1/normalized/seq", json!(5));
    breaks(
        Kind::ProofPackage,
        &p,
        &[("/actions/1/normalized/seq", "action_seq")],
    );
    assert_eq!(
        finding(Kind::ProofPackage, &p, "/actions/1/normalized/seq").message,
        "action seq must be 1 (0-based, in order)"
    );
    let mut p = roll_doc("proof-package.json");
    set(&mut p, "/actions/1/actionId", json!("action-9"));
    breaks(
        Kind::ProofPackage,
        &p,
        &[("/actions/1/actionId", "action_id")],
    );
    assert_eq!(
        finding(Kind::ProofPackage, &p, "/actions/1/actionId").message,
        "actionId must be action-2"
    );
}

#[test]
fn a_proof_packages_event_seq_strictly_increases() {
    let mut p = roll_doc("proof-package.json");
    let last = get(&p, "/events").as_array().unwrap().len() - 1;
    // A gap is fine.
    let seq = get(&p, &format!("/events/{last}/seq")).as_u64().unwrap();
    set(&mut p, &format!("/events/{last}/seq"), json!(seq + 10));
    breaks(Kind::ProofPackage, &p, &[]);
    // The same seq twice is not.
    let mut p = roll_doc("proof-package.json");
    let seq = get(&p, "/events/1/seq").clone();
    set(&mut p, "/events/2/seq", seq);
    breaks(Kind::ProofPackage, &p, &[("/events/2/seq", "event_seq")]);
}

#[test]
fn a_judge_packages_obligations_are_sorted_and_its_actions_numbered() {
    let mut p = roll_doc("judge-package.json");
    array(&mut p, "/obligations").swap(0, 1);
    breaks(
        Kind::JudgePackage,
        &p,
        &[("/obligations", "obligations_sorted")],
    );
    let mut p = roll_doc("judge-package.json");
    let obligations = array(&mut p, "/obligations");
    let copy = obligations[0].clone();
    obligations.insert(0, copy);
    breaks(
        Kind::JudgePackage,
        &p,
        &[("/obligations", "obligations_sorted")],
    );
    let mut p = roll_doc("judge-package.json");
    set(&mut p, "/actions/2/seq", json!(7));
    breaks(Kind::JudgePackage, &p, &[("/actions/2/seq", "action_seq")]);
    assert_eq!(
        finding(Kind::JudgePackage, &p, "/actions/2/seq").message,
        "action seq must be 2"
    );
}

#[test]
fn a_judge_results_obligations_are_sorted() {
    let mut r = roll_doc("judge-a/normalized.json");
    array(&mut r, "/obligations").swap(0, 1);
    breaks(
        Kind::JudgeResult,
        &r,
        &[("/obligations", "obligations_sorted")],
    );
}

#[test]
fn a_failed_slot_has_every_obligation_missing() {
    let failed = fixture(&format!("{DEGRADED}/roll-1/judge-b/normalized.json"));
    assert!(!get(&failed, "/slotFailed").is_null());
    let mut r = failed.clone();
    set(&mut r, "/obligations/0/status", json!("satisfied"));
    set(
        &mut r,
        "/obligations/0/sequenceRefs",
        json!([{"stream": "events", "from": 1, "to": 1}]),
    );
    breaks(
        Kind::JudgeResult,
        &r,
        &[("/obligations", "failed_slot_missing")],
    );
}

#[test]
fn a_claim_cites_evidence() {
    let r = roll_doc("judge-a/normalized.json");
    assert_eq!(get(&r, "/obligations/0/status"), "satisfied");
    let mut none = r.clone();
    set(&mut none, "/obligations/0/sequenceRefs", json!([]));
    set(&mut none, "/obligations/0/frameHashes", json!([]));
    breaks(
        Kind::JudgeResult,
        &none,
        &[("/obligations/0", "cited_claim")],
    );
    // Frames alone, or the sequence alone, are enough.
    let mut frames_only = r.clone();
    set(&mut frames_only, "/obligations/0/sequenceRefs", json!([]));
    breaks(Kind::JudgeResult, &frames_only, &[]);
    let mut sequence_only = r.clone();
    set(&mut sequence_only, "/obligations/0/frameHashes", json!([]));
    breaks(Kind::JudgeResult, &sequence_only, &[]);
}

#[test]
fn a_judge_results_refs_are_sorted_and_merged() {
    let r = roll_doc("judge-a/normalized.json");
    let mut seq = r.clone();
    let refs = array(&mut seq, "/obligations/0/sequenceRefs");
    let copy = refs[0].clone();
    refs.push(copy);
    breaks(
        Kind::JudgeResult,
        &seq,
        &[("/obligations/0/sequenceRefs", "refs_sorted")],
    );
    let mut frames = r.clone();
    let hashes = array(&mut frames, "/obligations/0/frameHashes");
    let copy = hashes[0].clone();
    hashes.push(copy);
    breaks(
        Kind::JudgeResult,
        &frames,
        &[("/obligations/0/frameHashes", "refs_sorted")],
    );
    assert_eq!(
        finding(Kind::JudgeResult, &frames, "/obligations/0/frameHashes").message,
        "frameHashes must be sorted and unique"
    );
}

#[test]
fn a_consensus_lists_its_obligations_sorted() {
    let mut c = roll_doc("consensus.json");
    array(&mut c, "/obligationResults").swap(0, 1);
    breaks(
        Kind::JudgeConsensus,
        &c,
        &[("/obligationResults", "obligations_sorted")],
    );
}

#[test]
fn a_failed_independence_check_makes_the_consensus_infra_error() {
    let mut c = roll_doc("consensus.json");
    set(&mut c, "/independenceChecks/differentSession", json!(false));
    breaks(
        Kind::JudgeConsensus,
        &c,
        &[("/decision", "independence_voids")],
    );
}

#[test]
fn a_consensus_never_passes_on_a_failed_floor() {
    let mut c = roll_doc("consensus.json");
    set(&mut c, "/floorPassed", json!(false));
    breaks(Kind::JudgeConsensus, &c, &[("/decision", "floor")]);
    // A failed floor with a fail is what the floor asks for.
    let c = fixture(&format!("{FLOOR_FAIL}/roll-1/consensus.json"));
    assert_eq!(get(&c, "/floorPassed"), false);
    breaks(Kind::JudgeConsensus, &c, &[]);
}

#[test]
fn a_single_judge_consensus_never_passes() {
    let mut c = roll_doc("consensus.json");
    set(&mut c, "/degraded", json!(true));
    breaks(Kind::JudgeConsensus, &c, &[("/decision", "single_judge")]);
}

#[test]
fn the_reservation_is_both_slots_worst_case_and_within_budget_is_computed() {
    let c = roll_doc("cost-reservation.json");
    let mut more = c.clone();
    let reserved = get(&c, "/reservedRmb").as_f64().unwrap();
    set(&mut more, "/reservedRmb", json!(reserved + 0.000001));
    breaks(
        Kind::CostReservation,
        &more,
        &[("/reservedRmb", "reserved_is_worst_case")],
    );
    let mut said = c.clone();
    set(&mut said, "/withinBudget", json!(false));
    breaks(
        Kind::CostReservation,
        &said,
        &[("/withinBudget", "within_budget")],
    );
    // Spending the whole budget is within it; a millionth more is not.
    let spent = get(&c, "/spentBeforeRmb").as_f64().unwrap();
    let micros = ((spent + reserved) * 1e6).round();
    let mut exact = c.clone();
    set(&mut exact, "/budgetRmb", json!(micros / 1e6));
    breaks(Kind::CostReservation, &exact, &[]);
    set(&mut exact, "/budgetRmb", json!((micros - 1.0) / 1e6));
    breaks(
        Kind::CostReservation,
        &exact,
        &[("/withinBudget", "within_budget")],
    );
}

#[test]
fn an_image_manifest_is_sorted_by_hash_without_duplicates() {
    let mut m = roll_doc("image-manifest.json");
    array(&mut m, "/frames").swap(0, 1);
    breaks(Kind::ImageManifest, &m, &[("/frames", "manifest_sorted")]);
    let mut m = roll_doc("image-manifest.json");
    let frames = array(&mut m, "/frames");
    let copy = frames[0].clone();
    frames.insert(0, copy);
    breaks(Kind::ImageManifest, &m, &[("/frames", "manifest_sorted")]);
}

// -- the decision tree --------------------------------------------------------------------------

fn node(id: &str, kind: &str) -> Value {
    json!({"id": id, "kind": kind, "owner": "platform", "title": id, "detail": "",
        "status": "pass", "evidenceRef": format!("#{id}")})
}

fn edge(from: &str, to: &str, selected: bool) -> Value {
    json!({"from": from, "to": to, "label": "", "tone": "continue", "selected": selected})
}

/// The smallest tree of a one-roll pass: the run, then its outcome.
fn tree() -> Value {
    let h = "0".repeat(64);
    json!({
        "schemaVersion": "seal.decision-tree/1",
        "rootNodeId": "run",
        "nodes": [node("run", "context"), node("outcome-pass", "outcome"),
            node("outcome-fail", "outcome")],
        "edges": [edge("run", "outcome-pass", true), edge("run", "outcome-fail", false)],
        "observed": {"outcome": "pass", "decisionAction": "accept", "reasons": ["accept"],
            "sourceRollId": "roll-1", "rollOutcomes": [{"rollId": "roll-1", "outcome": "pass"}],
            "accepted": true, "postguardPassed": true, "acceptanceMode": "v3",
            "evidenceMode": "native"},
        "evidenceBindings": {"runId": "r", "evidenceSha256": h, "sealSha256": h,
            "sealKeyId": "k", "judgingSnapshotSha256": h,
            "rolls": [{"rollId": "roll-1", "proofPackageSha256": h, "judgePackageSha256": h,
                "judgeAResultSha256": h, "judgeBResultSha256": h, "consensusSha256": h}]}
    })
}

#[test]
fn a_decision_tree_has_one_selected_path_to_its_observed_outcome() {
    breaks(Kind::DecisionTree, &tree(), &[]);
    let mut t = tree();
    set(&mut t, "/edges/1/selected", json!(true));
    breaks(Kind::DecisionTree, &t, &[("/edges", "one_selected_path")]);
    let mut t = tree();
    set(&mut t, "/edges/0/selected", json!(false));
    set(&mut t, "/edges/1/selected", json!(true));
    breaks(
        Kind::DecisionTree,
        &t,
        &[("/edges", "path_ends_at_observed_outcome")],
    );
    assert_eq!(
        finding(Kind::DecisionTree, &t, "/edges").message,
        "the selected path must end at outcome-pass"
    );
}

#[test]
fn a_decision_tree_binds_every_observed_roll_in_order() {
    let mut t = tree();
    set(&mut t, "/evidenceBindings/rolls", json!([]));
    breaks(
        Kind::DecisionTree,
        &t,
        &[("/evidenceBindings/rolls", "every_roll_bound")],
    );
}
