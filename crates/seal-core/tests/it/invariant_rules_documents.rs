//! The cross-field invariants, continued: the decided run and the documents of a roll (proof and judge packages, judge results, consensus, reservation, image manifest, decision tree).

use super::invariant_rules::*;
use seal_core::contracts::Kind;
use seal_core::derive;
use seal_core::doc::{AcceptanceMode, Outcome};
use seal_core::ids::RollId;
use serde_json::{json, Value};
#[allow(unused_imports)]
use std::path::PathBuf;

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
pub(crate) fn postguard_failed() -> Value {
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
