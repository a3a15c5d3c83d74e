//! Rules of the decision core that no golden vector happened to separate, each pinned by a test
//! named after it (found by mutation testing, docs/TESTING.md): a mutant of the rule makes the
//! test fail.

use std::path::PathBuf;

use seal_core::consensus::DecisionRule;
use seal_core::derive::{is_void, projection};
use seal_core::doc::{GuardStatus, JudgeConsensus, Roll};

/// A judged roll of the sealed fixtures (guard passed, every independence check holds).
fn judged_roll() -> (Roll, JudgeConsensus) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../sealed-fixtures/store/runs/run-narrative-0011-inconclusive/roll-1");
    let read = |name: &str| std::fs::read(dir.join(name)).expect("sealed fixture");
    let roll: Roll = serde_json::from_slice(&read("roll.json")).expect("roll.json");
    let consensus: JudgeConsensus =
        serde_json::from_slice(&read("consensus.json")).expect("consensus.json");
    assert_eq!(roll.roll_guard.status, GuardStatus::Pass);
    assert!(consensus.independence_checks.all_required_hold());
    (roll, consensus)
}

#[test]
fn a_roll_whose_guard_passed_and_whose_checks_hold_is_not_void() {
    let (roll, consensus) = judged_roll();
    assert!(!is_void(&roll, &consensus));
    assert!(projection(&roll, &consensus).is_some());
}

#[test]
fn a_blocked_guard_alone_makes_the_roll_void_and_keeps_its_judges_out_of_the_evidence() {
    let (mut roll, consensus) = judged_roll();
    roll.roll_guard.status = GuardStatus::Blocked;
    assert!(is_void(&roll, &consensus), "guard blocked, checks hold");
    assert!(projection(&roll, &consensus).is_none());
}

#[test]
fn a_failed_independence_check_alone_makes_the_roll_void_and_keeps_its_judges_out() {
    let (roll, mut consensus) = judged_roll();
    consensus.independence_checks.different_session = false;
    assert!(is_void(&roll, &consensus), "guard passed, one check failed");
    assert!(projection(&roll, &consensus).is_none());
}

#[test]
fn same_model_is_recorded_but_never_voids_a_roll() {
    let (roll, mut consensus) = judged_roll();
    consensus.independence_checks.same_model = !consensus.independence_checks.same_model;
    assert!(!is_void(&roll, &consensus));
}

/// The words explain shows for each rule: pinned, because auditors read them next to the
/// decision (a change here is a change of what seal tells people, made on purpose).
#[test]
fn each_decision_rule_is_told_in_its_own_words() {
    let words = [
        (
            DecisionRule::Void,
            "a required independence check is false: the roll is void",
        ),
        (
            DecisionRule::FloorFailed,
            "the floor failed: fail, whatever the judges said",
        ),
        (DecisionRule::BothJudgesFailed, "both judges failed"),
        (
            DecisionRule::ObligationFailed,
            "a required obligation failed",
        ),
        (
            DecisionRule::AllSatisfied,
            "every required obligation is satisfied",
        ),
        (
            DecisionRule::Otherwise,
            "a required obligation is disputed, contradicted or missing, or one judge failed",
        ),
    ];
    for (rule, text) in words {
        assert_eq!(rule.describe(), text, "{rule:?}");
    }
}
