//! Cross-field invariants (docs/DESIGN.md §6) that a JSON Schema cannot express. Pure: no I/O.
//!
//! `seal validate`, the finalPostguard and `seal verify` all call [`check`], so a rule is
//! written once and enforced at every gate. Each violation names the JSON pointer and the rule.
//! [`words`] reads the typed words of the document first, so a bad one is named where it is.

pub mod shadow;
mod words;

use serde_json::Value;
use std::collections::BTreeSet;

use crate::consensus::{decision_order, DecisionFacts};
use crate::contracts::{Finding, Kind};
use crate::derive;
use crate::doc::*;
use crate::ids::RollId;
use crate::key::Key;
use crate::vocab::{AuditCheck, Reason};

fn f(pointer: impl Into<String>, rule: &str, message: impl Into<String>) -> Finding {
    Finding {
        pointer: pointer.into(),
        rule: format!("invariant.{rule}"),
        message: message.into(),
    }
}

/// A stored document type with cross-field rules, checked on the typed value: a caller that
/// needs the typed document anyway deserializes it once ([`typed`], and
/// `crate::validate::checked`), where [`check`] on a bare tree deserializes it only to
/// check it.
pub trait Checked: serde::de::DeserializeOwned {
    /// The contract (schema) the document is checked against.
    const KIND: Kind;
    /// The cross-field rules of a document that passed its schema.
    fn invariants(&self) -> Vec<Finding>;
}

macro_rules! checked {
    ($($t:ty => $kind:ident, $rules:expr;)*) => {$(
        impl Checked for $t {
            const KIND: Kind = Kind::$kind;
            fn invariants(&self) -> Vec<Finding> {
                $rules(self)
            }
        }
    )*};
}

checked! {
    Evidence => PlaytestV3, evidence;
    ProofPackage => ProofPackage, proof_package;
    JudgePackage => JudgePackage, judge_package;
    JudgeResult => JudgeResult, judge_result;
    JudgeConsensus => JudgeConsensus, consensus;
    CostReservation => CostReservation, cost_reservation;
    ImageManifest => ImageManifest, image_manifest;
    SlotMeta => SlotMeta, |_: &SlotMeta| Vec::new();
}

/// `T` from a tree that passed `T`'s schema, with `T`'s invariants: the words first, then one
/// typed deserialization (by reference, no copy of the tree), then the rules on the typed
/// value. Exactly [`check`]'s findings for `T::KIND`, and the value when there are none.
pub fn typed<T: Checked>(doc: &Value) -> Result<T, Vec<Finding>> {
    let bad_words = words::check(T::KIND, doc);
    if !bad_words.is_empty() {
        return Err(bad_words);
    }
    let value = deserialize::<T>(doc)?;
    let findings = value.invariants();
    if findings.is_empty() {
        Ok(value)
    } else {
        Err(findings)
    }
}

fn deserialize<T: serde::de::DeserializeOwned>(doc: &Value) -> Result<T, Vec<Finding>> {
    T::deserialize(doc).map_err(|e| vec![f("", "shape", e.to_string())])
}

/// Runs the invariants of `kind` on a document that already passed its schema.
pub fn check(kind: Kind, doc: &Value) -> Vec<Finding> {
    let bad_words = words::check(kind, doc);
    if !bad_words.is_empty() {
        return bad_words;
    }
    fn rules<T: Checked>(doc: &Value) -> Result<Vec<Finding>, Vec<Finding>> {
        deserialize::<T>(doc).map(|d| d.invariants())
    }
    let r = match kind {
        Kind::PlaytestV3 => rules::<Evidence>(doc),
        Kind::ProofPackage => rules::<ProofPackage>(doc),
        Kind::JudgePackage => rules::<JudgePackage>(doc),
        Kind::JudgeResult => rules::<JudgeResult>(doc),
        Kind::JudgeConsensus => rules::<JudgeConsensus>(doc),
        Kind::CostReservation => rules::<CostReservation>(doc),
        Kind::ImageManifest => rules::<ImageManifest>(doc),
        // No cross-field rules, but its typed words (keys, error classes) as every reader
        // takes them: a meta the audit could not read is no valid one (`typed` agrees).
        Kind::SlotMeta => rules::<SlotMeta>(doc),
        Kind::DecisionTree => deserialize::<DecisionTree>(doc).map(|d| decision_tree(&d)),
        Kind::ShadowReport => deserialize::<crate::doc::shadow_report::ShadowReport>(doc)
            .map(|d| shadow::invariants(&d)),
        // A review's cross-field rules need its run (`crate::review::check`); here only its shape.
        Kind::Review => deserialize::<crate::review::ReviewStatement>(doc).map(|_| Vec::new()),
        Kind::JudgeAttemptFailure
        | Kind::JudgeOutput
        | Kind::PlaySpec
        | Kind::Verdict
        | Kind::V3Roll
        | Kind::Stats
        | Kind::Label
        // Its schema is the whole of it (`crate::policy` reads a stored one strictly).
        | Kind::JudgePolicy
        | Kind::Reliability => Ok(Vec::new()),
    };
    r.unwrap_or_else(|e| e)
}

/// The first id that does not strictly follow the one before it, as the finding `rule` at
/// `pointer` names it.
fn unsorted<S: AsRef<str>>(
    ids: impl Iterator<Item = S>,
    pointer: &str,
    rule: &str,
) -> Option<Finding> {
    let mut prev: Option<S> = None;
    for id in ids {
        if let Some(p) = &prev {
            if p.as_ref() >= id.as_ref() {
                let (id, p) = (id.as_ref(), p.as_ref());
                return Some(f(
                    pointer,
                    rule,
                    format!("{id:?} after {p:?}: not sorted by id or duplicated"),
                ));
            }
        }
        prev = Some(id);
    }
    None
}

fn show(r: Option<RollId>) -> String {
    r.map(|r| r.to_string()).unwrap_or_else(|| "null".into())
}

fn micro(x: f64) -> i128 {
    (x * 1_000_000.0).round() as i128
}

pub fn evidence(d: &Evidence) -> Vec<Finding> {
    let mut out = Vec::new();
    decided_fields(d, &mut out);
    ids_and_obligations(d, &mut out);
    roll_records(d, &mut out);
    source_roll_rules(d, &mut out);
    // Cost: the run costs at least what its rolls cost.
    let rolls_micro: i128 = d.rolls.iter().map(|r| micro(r.cost_rmb)).sum();
    if micro(d.cost_rmb) < rolls_micro {
        out.push(f(
            "/costRmb",
            "cost_covers_rolls",
            format!(
                "costRmb {} is below the sum of roll costs {}",
                d.cost_rmb,
                rolls_micro as f64 / 1e6
            ),
        ));
    }

    if let (Some(outcome), Some(pg), Some(dec), Some(compat)) =
        (d.outcome, &d.final_postguard, &d.decision, &d.compatibility)
    {
        decided_invariants(d, outcome, pg, dec, compat, &mut out);
    }
    out
}

/// The four DECIDED fields are present exactly when the phase is DECIDED.
fn decided_fields(d: &Evidence, out: &mut Vec<Finding>) {
    let decided = d.phase == Phase::Decided;
    for (name, present) in [
        ("outcome", d.outcome.is_some()),
        ("finalPostguard", d.final_postguard.is_some()),
        ("decision", d.decision.is_some()),
        ("compatibility", d.compatibility.is_some()),
    ] {
        if present != decided {
            out.push(f(
                format!("/{name}"),
                "decided_fields",
                format!(
                    "{name} must be present iff phase is DECIDED (phase {:?})",
                    d.phase
                ),
            ));
        }
    }
}

/// Run ids are valid ids; obligation ids are unique; a play-spec obligation carries its check; a replay names its parent.
fn ids_and_obligations(d: &Evidence, out: &mut Vec<Finding>) {
    if let Err(e) = crate::ids::check_segment("runId", &d.run_id) {
        out.push(f("/runId", "run_id", e.to_string()));
    }
    for (pointer, id) in [
        ("/parentRunId", &d.parent_run_id),
        ("/repair/fromRunId", &d.repair.from_run_id),
    ] {
        if let Some(id) = id {
            if let Err(e) = crate::ids::check_segment("run id", id) {
                out.push(f(pointer, "run_id", e.to_string()));
            }
        }
    }

    let mut ids = BTreeSet::new();
    for (i, o) in d.proof_obligations.iter().enumerate() {
        if !ids.insert(o.id.as_str()) {
            out.push(f(
                format!("/proofObligations/{i}/id"),
                "obligation_ids_unique",
                format!("duplicate obligation id {:?}", o.id),
            ));
        }
        if o.source == ObligationSource::PlaySpec && o.check.is_none() {
            out.push(f(
                format!("/proofObligations/{i}"),
                "play_spec_obligation_check",
                "an obligation from the play-spec must carry its assertion as check",
            ));
        }
    }

    if d.acceptance_mode == AcceptanceMode::HistoricalReplay && d.parent_run_id.is_none() {
        out.push(f(
            "/parentRunId",
            "replay_parent",
            "historical_replay requires parentRunId",
        ));
    }
}

/// Rolls: ids in order, blocked rolls void, slot hashes agree, refs inside the roll folder, roll 2 only after an indecisive roll 1.
fn roll_records(d: &Evidence, out: &mut Vec<Finding>) {
    // Rolls: ids in order, roll 2 only after an indecisive roll 1.
    for (i, r) in d.rolls.iter().enumerate() {
        let want = format!("roll-{}", i + 1);
        let folder = format!("runs/{}/{}/", d.run_id, r.roll_id);
        if r.roll_id.as_str() != want || r.roll != (i as u64 + 1) {
            out.push(f(
                format!("/rolls/{i}/rollId"),
                "roll_order",
                format!("rolls[{i}] must be {want} (roll {})", i + 1),
            ));
        }
        if r.roll_guard.status == GuardStatus::Blocked && r.roll_outcome != Outcome::InfraError {
            out.push(f(
                format!("/rolls/{i}/rollOutcome"),
                "blocked_roll",
                "a roll whose guard blocked must be infra_error",
            ));
        }
        if r.judge_a_hash != r.judge_a_ref.result_hash
            || r.judge_b_hash != r.judge_b_ref.result_hash
        {
            out.push(f(
                format!("/rolls/{i}"),
                "slot_hash",
                "judgeAHash/judgeBHash must equal the slot's resultHash",
            ));
        }
        for (field, reference) in [
            ("proofPackageRef", &r.proof_package_ref),
            ("judgePackageRef", &r.judge_package_ref),
            ("judgeConsensusRef", &r.judge_consensus_ref),
            ("costReservationRef", &r.cost_reservation_ref),
            ("judgeARef/rawRef", &r.judge_a_ref.raw_ref),
            ("judgeARef/parsedRef", &r.judge_a_ref.parsed_ref),
            ("judgeARef/normalizedRef", &r.judge_a_ref.normalized_ref),
            ("judgeBRef/rawRef", &r.judge_b_ref.raw_ref),
            ("judgeBRef/parsedRef", &r.judge_b_ref.parsed_ref),
            ("judgeBRef/normalizedRef", &r.judge_b_ref.normalized_ref),
        ] {
            let ok = reference.as_str().starts_with(&folder);
            if !ok {
                out.push(f(
                    format!("/rolls/{i}/{field}"),
                    "ref_in_run",
                    format!(
                        "{:?} is not a key inside runs/{}/{}/",
                        reference.as_str(),
                        d.run_id,
                        r.roll_id
                    ),
                ));
            }
        }
    }
    if d.rolls.len() == 2 && d.rolls[0].roll_outcome.is_decisive() {
        out.push(f(
            "/rolls/1",
            "roll2_after_indecisive",
            format!(
                "roll-2 exists although roll-1 was decisive ({})",
                d.rolls[0].roll_outcome
            ),
        ));
    }
}

/// Merge, sourceRollId, compatibility and judge all name the first-decisive source roll; judge is its projection or null when void.
fn source_roll_rules(d: &Evidence, out: &mut Vec<Finding>) {
    merge_rules(d, out);
    source_agreement(d, out);
    judge_rules(d, out);
}

/// merge lists every roll outcome in order and names the first-decisive source roll.
fn merge_rules(d: &Evidence, out: &mut Vec<Finding>) {
    let decided = d.phase == Phase::Decided;
    let src_idx = crate::merge::source_roll_index(&d.rolls);
    let src_id = src_idx.map(|i| d.rolls[i].roll_id);
    // Merge mirrors the rolls.
    match &d.merge {
        None if !d.rolls.is_empty() && decided => out.push(f(
            "/merge",
            "merge_present",
            "a decided run with rolls needs merge",
        )),
        Some(m) => {
            let listed: Vec<(RollId, Outcome)> = m
                .roll_outcomes
                .iter()
                .map(|r| (r.roll_id, r.outcome))
                .collect();
            let actual: Vec<(RollId, Outcome)> = d
                .rolls
                .iter()
                .map(|r| (r.roll_id, r.roll_outcome))
                .collect();
            if listed != actual {
                out.push(f(
                    "/merge/rollOutcomes",
                    "merge_outcomes",
                    "merge.rollOutcomes must list every roll's rollOutcome in order",
                ));
            }
            if m.source_roll_id != src_id {
                out.push(f(
                    "/merge/sourceRollId",
                    "first_decisive",
                    format!(
                        "first-decisive source roll is {}, merge says {}",
                        show(src_id),
                        show(m.source_roll_id)
                    ),
                ));
            }
        }
        None => {}
    }
}

/// sourceRollId agrees everywhere; judge is null only for a void source roll.
fn source_agreement(d: &Evidence, out: &mut Vec<Finding>) {
    let decided = d.phase == Phase::Decided;
    let src_idx = crate::merge::source_roll_index(&d.rolls);
    let src_id = src_idx.map(|i| d.rolls[i].roll_id);
    // sourceRollId agrees everywhere.
    if d.merge.is_some() || decided {
        if d.source_roll_id != src_id {
            out.push(f(
                "/sourceRollId",
                "first_decisive",
                format!(
                    "source roll must be {}, found {}",
                    show(src_id),
                    show(d.source_roll_id)
                ),
            ));
        }
    } else if d.rolls.is_empty() && (d.source_roll_id.is_some() || d.judge.is_some()) {
        out.push(f(
            "/sourceRollId",
            "no_rolls",
            "without rolls, sourceRollId and judge must be null",
        ));
    } else if d.source_roll_id.is_some() && d.source_roll_id != src_id {
        out.push(f(
            "/sourceRollId",
            "first_decisive",
            format!(
                "source roll must be {}, found {}",
                show(src_id),
                show(d.source_roll_id)
            ),
        ));
    }
    if let Some(id) = d.source_roll_id {
        if !d.rolls.iter().any(|r| r.roll_id == id) {
            out.push(f(
                "/sourceRollId",
                "source_roll_exists",
                format!("sourceRollId {id} names no roll of this run"),
            ));
        }
    }
    // judge may be null only when the source roll is void (infra_error).
    if d.judge.is_none() && (d.merge.is_some() || decided) {
        if let Some(i) = src_idx {
            if d.rolls[i].roll_outcome != Outcome::InfraError {
                out.push(f(
                    "/judge",
                    "void_roll",
                    format!(
                        "judge is null but the source roll {} is not void ({})",
                        d.rolls[i].roll_id, d.rolls[i].roll_outcome
                    ),
                ));
            }
        }
    }
    if let Some(c) = &d.compatibility {
        if c.source_roll_id != d.source_roll_id {
            out.push(f(
                "/compatibility/sourceRollId",
                "source_roll_agrees",
                "compatibility.sourceRollId differs from sourceRollId",
            ));
        }
    }
}

/// judge is the source roll's projection and follows the consensus rules.
fn judge_rules(d: &Evidence, out: &mut Vec<Finding>) {
    let src_idx = crate::merge::source_roll_index(&d.rolls);
    // judge is the source roll's projection, or null if that roll is void.
    if let Some(j) = &d.judge {
        if j.source_roll_id != d.source_roll_id {
            out.push(f(
                "/judge/sourceRollId",
                "source_roll_agrees",
                "judge.sourceRollId differs from sourceRollId",
            ));
        }
        match src_idx.map(|i| (i, &d.rolls[i])) {
            None => out.push(f(
                "/judge",
                "judge_is_source_projection",
                "judge is set but there is no source roll",
            )),
            Some((i, r)) => {
                let pairs = [
                    (
                        "consensusRef",
                        j.consensus_ref.as_ref() == Some(&r.judge_consensus_ref),
                    ),
                    (
                        "consensusHash",
                        j.consensus_hash.as_ref() == Some(&r.judge_consensus_hash),
                    ),
                    ("packageHash", j.package_hash == r.judge_package_hash),
                    ("judgeAResultHash", j.judge_a_result_hash == r.judge_a_hash),
                    ("judgeBResultHash", j.judge_b_result_hash == r.judge_b_hash),
                    ("decision", j.decision == r.roll_outcome),
                ];
                for (name, ok) in pairs {
                    if !ok {
                        out.push(f(
                            format!("/judge/{name}"),
                            "judge_is_source_projection",
                            format!("judge.{name} does not match rolls[{i}]"),
                        ));
                    }
                }
            }
        }
        projection_rules(d, j, src_idx.map(|i| &d.rolls[i]), out);
        let ids: Vec<&str> = j.obligation_results.iter().map(|o| o.id.as_str()).collect();
        let want: Vec<&str> = {
            let mut v: Vec<&str> = d.proof_obligations.iter().map(|o| o.id.as_str()).collect();
            v.sort();
            v
        };
        if ids != want {
            out.push(f(
                "/judge/obligationResults",
                "judge_obligations",
                "judge.obligationResults must list every proof obligation once, sorted by id",
            ));
        }
    }
}

/// failureSignature is null exactly on pass and starts with the decision; sameModel agrees
/// with the independence record. Shared by the consensus document and its projection.
fn signature_and_model(
    at: &str,
    decision: Outcome,
    signature: Option<&str>,
    same_model: bool,
    checks_same_model: bool,
    out: &mut Vec<Finding>,
) {
    if (decision == Outcome::Pass) != signature.is_none() {
        out.push(f(
            format!("{at}/failureSignature"),
            "failure_signature",
            "failureSignature is null exactly when the decision is pass",
        ));
    } else if let Some(sig) = signature {
        if !sig.starts_with(&format!("{decision}:")) {
            out.push(f(
                format!("{at}/failureSignature"),
                "failure_signature",
                format!("failureSignature must start with \"{decision}:\""),
            ));
        }
    }
    if same_model != checks_same_model {
        out.push(f(
            format!("{at}/sameModel"),
            "same_model",
            "sameModel must equal independenceChecks.sameModel",
        ));
    }
}

/// The consensus rules (docs/DESIGN.md §5) applied to the projection placed in the evidence.
fn projection_rules(d: &Evidence, j: &Projection, source: Option<&Roll>, out: &mut Vec<Finding>) {
    if j.degraded && j.decision == Outcome::Pass {
        out.push(f(
            "/judge/decision",
            "single_judge",
            "a degraded (single-judge) consensus never yields pass",
        ));
    }
    signature_and_model(
        "/judge",
        j.decision,
        j.failure_signature.as_deref(),
        j.same_model,
        j.independence_checks.same_model,
        out,
    );
    // Re-derive the decision with the consensus's own decision order, from the obligations,
    // the floor and the recorded slot facts (the source roll's `judge-<slot>:` errors).
    let required: BTreeSet<&str> = d
        .proof_obligations
        .iter()
        .filter(|o| o.required)
        .map(|o| o.id.as_str())
        .collect();
    let statuses: Vec<ObligationStatus> = j
        .obligation_results
        .iter()
        .filter(|o| required.contains(o.id.as_str()))
        .map(|o| o.status)
        .collect();
    let expected = decision_order(&DecisionFacts {
        independence_holds: j.independence_checks.all_required_hold(),
        floor_passed: d.floor.passed,
        both_failed: source.is_some_and(|r| derive::both_judges_failed(&r.errors)),
        degraded: j.degraded,
        required: &statuses,
    });
    if j.decision != expected {
        out.push(f(
            "/judge/decision",
            "consensus_decision",
            format!(
                "the obligations, the floor and the recorded slot failures give {expected}, the projection says {}",
                j.decision
            ),
        ));
    }
}

fn decided_invariants(
    d: &Evidence,
    outcome: Outcome,
    pg: &FinalPostguard,
    dec: &Decision,
    compat: &Compatibility,
    out: &mut Vec<Finding>,
) {
    let (expected, want_reasons) = postguard_and_outcome(d, outcome, pg, out);
    decision_rules(d, outcome, expected, &want_reasons, pg, dec, out);
    compatibility_rules(d, outcome, pg, compat, out);
}

/// finalPostguard.passed agrees with its checks; the outcome is the one derivation's.
fn postguard_and_outcome(
    d: &Evidence,
    outcome: Outcome,
    pg: &FinalPostguard,
    out: &mut Vec<Finding>,
) -> (Outcome, Vec<Reason>) {
    let all_ok = pg.checks.iter().all(|c| c.ok);
    if pg.passed != all_ok {
        out.push(f(
            "/finalPostguard/passed",
            "postguard_passed",
            "finalPostguard.passed must be true iff every check is ok",
        ));
    }
    // The outcome and reasons are the one derivation's (docs/DESIGN.md §6): the source roll's
    // outcome, unless the postguard failed or the source roll is void.
    let failed: Vec<AuditCheck> = pg.checks.iter().filter(|c| !c.ok).map(|c| c.id).collect();
    // By the rules the run was decided under, as recorded.
    let rules = derive::Rules::parse(&pg.version).unwrap_or_else(|| {
        out.push(f(
            "/finalPostguard/version",
            "postguard_version",
            format!(
                "unknown finalPostguard version {:?} (this build knows finalPostguard/1 and /2)",
                pg.version.chars().take(64).collect::<String>()
            ),
        ));
        derive::Rules::CURRENT
    });
    let (expected, want_reasons) = derive::outcome_and_reasons(d, &failed, rules);
    if outcome != expected {
        out.push(f(
            "/outcome",
            "outcome_follows_rolls",
            format!("outcome must be {expected} (source roll and postguard), found {outcome}"),
        ));
    }
    if !d.floor.passed && matches!(outcome, Outcome::Pass) {
        out.push(f(
            "/outcome",
            "floor",
            "the floor failed: the outcome cannot be pass",
        ));
    }
    if let Some(j) = &d.judge {
        if j.decision != outcome && pg.passed {
            out.push(f(
                "/judge/decision",
                "outcome_follows_rolls",
                "judge.decision differs from outcome",
            ));
        }
    } else if outcome != Outcome::InfraError {
        out.push(f(
            "/judge",
            "void_roll",
            "without a judge projection the outcome must be infra_error",
        ));
    }
    (expected, want_reasons)
}

/// The decision's action and reasons follow the outcome.
fn decision_rules(
    d: &Evidence,
    outcome: Outcome,
    expected: Outcome,
    want_reasons: &[Reason],
    pg: &FinalPostguard,
    dec: &Decision,
    out: &mut Vec<Finding>,
) {
    let want_action = derive::decision_action(outcome, d.repair.round);
    if dec.action != want_action {
        out.push(f(
            "/decision/action",
            "decision_follows_outcome",
            format!(
                "{outcome} with repair round {} must be {}, found {}",
                d.repair.round,
                want_action.as_str(),
                dec.action.as_str()
            ),
        ));
    }
    // Sorted as the document writes them: as strings.
    out.extend(unsorted(
        dec.reasons.iter().map(|r| r.to_string()),
        "/decision/reasons",
        "reasons_sorted",
    ));
    if outcome == Outcome::Pass && dec.reasons != [Reason::Accept] {
        out.push(f(
            "/decision/reasons",
            "decision_follows_outcome",
            "a pass is decided with the single reason accept",
        ));
    }
    if !pg.passed
        && !dec
            .reasons
            .iter()
            .any(|r| matches!(r, Reason::Postguard(_)))
    {
        out.push(f(
            "/decision/reasons",
            "postguard_reason",
            "a failed postguard must be named in the reasons (postguard_<check>)",
        ));
    }
    if outcome == expected {
        let want: Vec<String> = want_reasons.iter().map(|r| r.to_string()).collect();
        for (i, r) in dec.reasons.iter().enumerate() {
            if !want_reasons.contains(r) {
                let r = r.to_string();
                out.push(f(
                    format!("/decision/reasons/{i}"),
                    "reason_follows_outcome",
                    format!("reason {r:?} does not explain outcome {outcome} (reasons: {want:?})"),
                ));
            }
        }
        for w in want_reasons.iter().filter(|w| !dec.reasons.contains(w)) {
            let w = w.to_string();
            out.push(f(
                "/decision/reasons",
                "reason_follows_outcome",
                format!("reason {w:?} is missing"),
            ));
        }
    }
}

/// compatibility is derived from the other fields; decidedAt is RFC 3339.
fn compatibility_rules(
    d: &Evidence,
    outcome: Outcome,
    pg: &FinalPostguard,
    compat: &Compatibility,
    out: &mut Vec<Finding>,
) {
    let want = derive::compatibility(outcome, pg.passed, d.acceptance_mode, d.source_roll_id);
    if compat != &want {
        out.push(f(
            "/compatibility",
            "compatibility",
            format!(
                "compatibility must be {}",
                serde_json::to_string(&want).unwrap_or_default()
            ),
        ));
    }
    if d.acceptance_mode == AcceptanceMode::HistoricalReplay && !compat.publish_frozen {
        out.push(f(
            "/compatibility/publishFrozen",
            "replay_frozen",
            "a historical_replay is always publishFrozen",
        ));
    }
    if time::OffsetDateTime::parse(
        &pg.decided_at,
        &time::format_description::well_known::Rfc3339,
    )
    .is_err()
    {
        out.push(f(
            "/finalPostguard/decidedAt",
            "rfc3339",
            "decidedAt must be an RFC 3339 timestamp",
        ));
    }
}

pub fn proof_package(p: &ProofPackage) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut frame_hashes = BTreeSet::new();
    for (i, fr) in p.frames.iter().enumerate() {
        frame_hashes.insert(fr.hash.clone());
        if !Key::is_cas_of(&fr.reference, &fr.hash) {
            out.push(f(
                format!("/frames/{i}/ref"),
                "frame_ref_is_cas",
                format!("ref must be {}", Key::cas(&fr.hash)),
            ));
        }
    }
    for (i, a) in p.actions.iter().enumerate() {
        if a.normalized.seq != i as u64 {
            out.push(f(
                format!("/actions/{i}/normalized/seq"),
                "action_seq",
                format!("action seq must be {i} (0-based, in order)"),
            ));
        }
        if a.action_id.strip_prefix("action-") != Some(itoa::Buffer::new().format(i + 1)) {
            out.push(f(
                format!("/actions/{i}/actionId"),
                "action_id",
                format!("actionId must be action-{}", i + 1),
            ));
        }
        for (name, fr) in [
            ("preFrameRef", &a.pre_frame_ref),
            ("postFrameRef", &a.post_frame_ref),
        ] {
            if !frame_hashes.contains(&fr.hash) {
                out.push(f(
                    format!("/actions/{i}/{name}/hash"),
                    "frame_listed",
                    "every frame an action cites must be listed in frames",
                ));
            }
            if !Key::is_cas_of(&fr.reference, &fr.hash) {
                out.push(f(
                    format!("/actions/{i}/{name}/ref"),
                    "frame_ref_is_cas",
                    format!("ref must be {}", Key::cas(&fr.hash)),
                ));
            }
        }
    }
    let mut prev: Option<u64> = None;
    for (i, e) in p.events.iter().enumerate() {
        if prev.is_some_and(|p| e.seq <= p) {
            out.push(f(
                format!("/events/{i}/seq"),
                "event_seq",
                "event seq must strictly increase",
            ));
        }
        prev = Some(e.seq);
    }
    out
}

pub fn judge_package(p: &JudgePackage) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(unsorted(
        p.obligations.iter().map(|o| o.id.as_str()),
        "/obligations",
        "obligations_sorted",
    ));
    for (i, a) in p.actions.iter().enumerate() {
        if a.seq != i as u64 {
            out.push(f(
                format!("/actions/{i}/seq"),
                "action_seq",
                format!("action seq must be {i}"),
            ));
        }
    }
    out
}

pub fn judge_result(r: &JudgeResult) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(unsorted(
        r.obligations.iter().map(|o| o.id.as_str()),
        "/obligations",
        "obligations_sorted",
    ));
    if r.slot_failed.is_some()
        && r.obligations
            .iter()
            .any(|o| o.status != JudgeStatus::Missing)
    {
        out.push(f(
            "/obligations",
            "failed_slot_missing",
            "a failed slot has every obligation missing",
        ));
    }
    for (i, o) in r.obligations.iter().enumerate() {
        if o.status.is_claim() && o.sequence_refs.is_empty() && o.frame_hashes.is_empty() {
            out.push(f(
                format!("/obligations/{i}"),
                "cited_claim",
                "a satisfied/failed status must cite evidence",
            ));
        }
        let mut refs = o.sequence_refs.clone();
        refs.sort();
        refs.dedup();
        if refs != o.sequence_refs {
            out.push(f(
                format!("/obligations/{i}/sequenceRefs"),
                "refs_sorted",
                "sequenceRefs must be sorted and merged",
            ));
        }
        let at = format!("/obligations/{i}/frameHashes");
        if unsorted(o.frame_hashes.iter(), &at, "refs_sorted").is_some() {
            out.push(f(
                at,
                "refs_sorted",
                "frameHashes must be sorted and unique",
            ));
        }
    }
    out
}

pub fn consensus(c: &JudgeConsensus) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(unsorted(
        c.obligation_results.iter().map(|o| o.id.as_str()),
        "/obligationResults",
        "obligations_sorted",
    ));
    signature_and_model(
        "",
        c.decision,
        c.failure_signature.as_deref(),
        c.same_model,
        c.independence_checks.same_model,
        &mut out,
    );
    if !c.independence_checks.all_required_hold() && c.decision != Outcome::InfraError {
        out.push(f(
            "/decision",
            "independence_voids",
            "a roll with a failed independence check is infra_error",
        ));
    }
    if !c.floor_passed && c.decision == Outcome::Pass {
        out.push(f(
            "/decision",
            "floor",
            "the floor failed: the decision cannot be pass",
        ));
    }
    if c.degraded && c.decision == Outcome::Pass {
        out.push(f(
            "/decision",
            "single_judge",
            "a single judge never yields pass",
        ));
    }
    out
}

pub fn cost_reservation(c: &CostReservation) -> Vec<Finding> {
    let mut out = Vec::new();
    let reserved = micro(c.price_table.a.worst_case_rmb) + micro(c.price_table.b.worst_case_rmb);
    if micro(c.reserved_rmb) != reserved {
        out.push(f(
            "/reservedRmb",
            "reserved_is_worst_case",
            "reservedRmb must be the sum of both slots' worstCaseRmb",
        ));
    }
    let within = micro(c.spent_before_rmb) + micro(c.reserved_rmb) <= micro(c.budget_rmb);
    if within != c.within_budget {
        out.push(f(
            "/withinBudget",
            "within_budget",
            "withinBudget must be spentBeforeRmb + reservedRmb <= budgetRmb",
        ));
    }
    out
}

pub fn image_manifest(m: &ImageManifest) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(unsorted(
        m.frames.iter().map(|e| e.hash.as_str()),
        "/frames",
        "manifest_sorted",
    ));
    out
}

/// A decision tree has one selected path from its root to the outcome node of its observed
/// outcome, and binds every roll of `observed.rollOutcomes`, in order.
pub fn decision_tree(t: &DecisionTree) -> Vec<Finding> {
    let mut out = Vec::new();
    match t.selected_path() {
        Err(e) => out.push(f("/edges", "one_selected_path", e.to_string())),
        Ok(path) => {
            let want = outcome_node_id(t.observed.outcome);
            if path.last().map(|n| n.id.as_str()) != Some(want.as_str()) {
                out.push(f(
                    "/edges",
                    "path_ends_at_observed_outcome",
                    format!("the selected path must end at {want}"),
                ));
            }
        }
    }
    let bound: Vec<RollId> = t
        .evidence_bindings
        .rolls
        .iter()
        .map(|r| r.roll_id)
        .collect();
    let observed: Vec<RollId> = t.observed.roll_outcomes.iter().map(|r| r.roll_id).collect();
    if bound != observed {
        out.push(f(
            "/evidenceBindings/rolls",
            "every_roll_bound",
            "evidenceBindings.rolls must bind exactly the rolls of observed.rollOutcomes, in order",
        ));
    }
    out
}
