//! JudgeConsensus/1, strategy `dual-strict/1` (docs/DESIGN.md §5): a pure function from the judge
//! package, the floor, both judges' normalized results and the recorded independence facts to
//! one canonical document. No I/O, no clock, no randomness: the same inputs give the same
//! bytes, today or in five years.
//!
//! Per obligation: a claim citing anything not in the package makes it `contradicted`; a
//! deterministic `check` decides it and any judge claiming otherwise makes it `contradicted`;
//! otherwise both judges must agree or it is `disputed`.
//!
//! Decision order, and why: a voided roll (a required independence check false) is
//! `infra_error` first, because its judge outputs cannot be trusted at all; then a failed floor
//! is `fail` whatever the judges said (deterministic evidence wins); then both slots failed is
//! `infra_error`; then the obligations. Finally, a single judge never yields `pass`: a
//! degraded roll that would pass is `inconclusive` (two-judge principle, even when every
//! required obligation is deterministically checked).

use std::collections::BTreeMap;

use crate::assertions;
use crate::canonical::Hash;
use crate::doc::*;
use crate::ids::RollId;
use crate::refs::{merge_ranges, sort_hashes, PackageIndex};

/// The strategy this module implements; recorded in every consensus document.
pub const STRATEGY: &str = "dual-strict/1";

/// Everything the consensus depends on.
#[derive(Debug, Clone)]
pub struct ConsensusInput<'a> {
    pub roll_id: RollId,
    pub package: &'a JudgePackage,
    pub package_hash: &'a Hash,
    pub floor_passed: bool,
    pub a: &'a JudgeResult,
    pub a_hash: &'a Hash,
    pub b: &'a JudgeResult,
    pub b_hash: &'a Hash,
    pub independence: IndependenceChecks,
}

struct Claim<'r> {
    status: JudgeStatus,
    supported: bool,
    result: Option<&'r ResultObligation>,
}

fn claim<'r>(result: &'r JudgeResult, id: &str, index: &PackageIndex) -> Claim<'r> {
    if result.slot_failed.is_some() {
        return Claim {
            status: JudgeStatus::Missing,
            supported: true,
            result: None,
        };
    }
    match result.obligations.iter().find(|o| o.id == id) {
        None => Claim {
            status: JudgeStatus::Missing,
            supported: true,
            result: None,
        },
        Some(o) => {
            let supported = !o.status.is_claim()
                || (o.sequence_refs.iter().all(|r| index.has_range(r))
                    && o.frame_hashes.iter().all(|h| index.has_frame(h)));
            Claim {
                status: o.status,
                supported,
                result: Some(o),
            }
        }
    }
}

fn from_judge(s: JudgeStatus) -> ObligationStatus {
    match s {
        JudgeStatus::Satisfied => ObligationStatus::Satisfied,
        JudgeStatus::Failed => ObligationStatus::Failed,
        JudgeStatus::Missing => ObligationStatus::Missing,
    }
}

/// What a roll decision depends on besides the per-obligation statuses' identities.
#[derive(Debug, Clone, Copy)]
pub struct DecisionFacts<'a> {
    pub independence_holds: bool,
    pub floor_passed: bool,
    /// Both slots failed (recorded as `slotFailed`, or as both `judge-<slot>:` roll errors).
    pub both_failed: bool,
    /// Exactly one slot failed.
    pub degraded: bool,
    /// The consensus statuses of the required obligations.
    pub required: &'a [ObligationStatus],
}

/// The rule of the `dual-strict/1` decision order that decides a roll (docs/DESIGN.md §5), in
/// the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionRule {
    /// A required independence check is false: the roll is void.
    Void,
    /// The deterministic floor failed.
    FloorFailed,
    /// Both judge slots failed.
    BothJudgesFailed,
    /// A required obligation failed.
    ObligationFailed,
    /// Every required obligation is satisfied by two judges.
    AllSatisfied,
    /// Anything else: disputed, contradicted, missing, or one judge failed.
    Otherwise,
}

impl DecisionRule {
    /// The outcome this rule decides.
    pub fn outcome(self) -> Outcome {
        match self {
            DecisionRule::Void | DecisionRule::BothJudgesFailed => Outcome::InfraError,
            DecisionRule::FloorFailed | DecisionRule::ObligationFailed => Outcome::Fail,
            DecisionRule::AllSatisfied => Outcome::Pass,
            DecisionRule::Otherwise => Outcome::Inconclusive,
        }
    }

    /// The rule in words, for people.
    pub fn describe(self) -> &'static str {
        match self {
            DecisionRule::Void => "a required independence check is false: the roll is void",
            DecisionRule::FloorFailed => "the floor failed: fail, whatever the judges said",
            DecisionRule::BothJudgesFailed => "both judges failed",
            DecisionRule::ObligationFailed => "a required obligation failed",
            DecisionRule::AllSatisfied => "every required obligation is satisfied",
            DecisionRule::Otherwise => {
                "a required obligation is disputed, contradicted or missing, or one judge failed"
            }
        }
    }
}

/// The roll decision order of `dual-strict/1` (docs/DESIGN.md §5), written once: a void roll
/// is `infra_error`; a failed floor is `fail`; both judges failed is `infra_error`; a failed
/// required obligation is `fail`; all required satisfied is `pass` unless a judge failed (a
/// single judge never passes); anything else is `inconclusive`.
pub fn decision_rule(f: &DecisionFacts<'_>) -> DecisionRule {
    let any = |s: ObligationStatus| f.required.contains(&s);
    if !f.independence_holds {
        DecisionRule::Void
    } else if !f.floor_passed {
        DecisionRule::FloorFailed
    } else if f.both_failed {
        DecisionRule::BothJudgesFailed
    } else if any(ObligationStatus::Failed) {
        DecisionRule::ObligationFailed
    } else if f.required.iter().all(|s| *s == ObligationStatus::Satisfied) && !f.degraded {
        DecisionRule::AllSatisfied
    } else {
        DecisionRule::Otherwise
    }
}

/// The outcome of [`decision_rule`].
pub fn decision_order(f: &DecisionFacts<'_>) -> Outcome {
    decision_rule(f).outcome()
}

/// Computes the consensus document of one roll.
pub fn decide(input: &ConsensusInput<'_>) -> JudgeConsensus {
    let index = PackageIndex::new(input.package);
    let mut obligations: Vec<&PackageObligation> = input.package.obligations.iter().collect();
    obligations.sort_by(|x, y| x.id.cmp(&y.id));
    obligations.dedup_by(|x, y| x.id == y.id);

    let mut results = Vec::with_capacity(obligations.len());
    let mut conflicts = Vec::new();
    let mut required_status: BTreeMap<&str, ObligationStatus> = BTreeMap::new();

    for ob in &obligations {
        let (result, conflict) = decide_obligation(input, ob, &index);
        conflicts.extend(conflict);
        if ob.required {
            required_status.insert(ob.id.as_str(), result.status);
        }
        results.push(result);
    }

    let a_failed = input.a.slot_failed.is_some();
    let b_failed = input.b.slot_failed.is_some();
    let degraded = a_failed != b_failed;
    let required: Vec<ObligationStatus> = required_status.values().copied().collect();
    let decision = decision_order(&DecisionFacts {
        independence_holds: input.independence.all_required_hold(),
        floor_passed: input.floor_passed,
        both_failed: a_failed && b_failed,
        degraded,
        required: &required,
    });

    JudgeConsensus {
        schema_version: JUDGE_CONSENSUS.into(),
        roll_id: input.roll_id,
        strategy_version: STRATEGY.into(),
        package_hash: input.package_hash.clone(),
        floor_passed: input.floor_passed,
        decision,
        degraded,
        same_model: input.independence.same_model,
        independence_checks: input.independence,
        judge_a_result_hash: input.a_hash.clone(),
        judge_b_result_hash: input.b_hash.clone(),
        obligation_results: results,
        conflicts,
        failure_signature: failure_signature(decision, &required_status),
    }
}

/// One obligation's consensus result, and its conflict line if it is contradicted or
/// disputed.
fn decide_obligation(
    input: &ConsensusInput<'_>,
    ob: &PackageObligation,
    index: &PackageIndex,
) -> (ConsensusObligation, Option<String>) {
    let a = claim(input.a, &ob.id, index);
    let b = claim(input.b, &ob.id, index);
    let unsupported = unsupported_slots(&a, &b);
    let check = ob
        .check
        .as_ref()
        .map(|c| assertions::evaluate(c, &input.package.events));
    let check_status = check.as_ref().map(|e| {
        if e.holds {
            JudgeStatus::Satisfied
        } else {
            JudgeStatus::Failed
        }
    });
    let status = obligation_status(&a, &b, &unsupported, check_status);
    let (seq, frames) = citations(check.as_ref(), &a, &b);
    let conflict = conflict_line(&ob.id, status, &a, &b, check_status, &unsupported);
    let result = ConsensusObligation {
        id: ob.id.clone(),
        status,
        sequence_refs: merge_ranges(&seq),
        evidence_refs: frame_refs(&frames),
    };
    (result, conflict)
}

/// The frames cited, as `evidenceRefs`: sorted and unique. Only supported claims are cited,
/// and a claim is supported only when every frame it cites is a frame of the package (named
/// by its sha256), so every citation reads back as a hash.
fn frame_refs(frames: &[String]) -> Vec<Hash> {
    sort_hashes(frames)
        .iter()
        .filter_map(|h| Hash::parse(h).ok())
        .collect()
}

/// The slots ("A", "B") whose satisfied/failed claim cites something not in the package.
fn unsupported_slots(a: &Claim<'_>, b: &Claim<'_>) -> Vec<&'static str> {
    [("A", a), ("B", b)]
        .iter()
        .filter(|(_, c)| c.status.is_claim() && !c.supported)
        .map(|(n, _)| *n)
        .collect()
}

/// The obligation's status: an unsupported claim contradicts; a check decides and any claim
/// against it contradicts; otherwise the judges agree or it is disputed.
fn obligation_status(
    a: &Claim<'_>,
    b: &Claim<'_>,
    unsupported: &[&str],
    check_status: Option<JudgeStatus>,
) -> ObligationStatus {
    if !unsupported.is_empty() {
        ObligationStatus::Contradicted
    } else if let Some(cs) = check_status {
        let against = [a.status, b.status]
            .iter()
            .any(|s| s.is_claim() && *s != cs);
        if against {
            ObligationStatus::Contradicted
        } else {
            from_judge(cs)
        }
    } else if a.status == b.status {
        from_judge(a.status)
    } else {
        ObligationStatus::Disputed
    }
}

/// Citations: the check's own reads, plus every supported claim's citations (unmerged,
/// unsorted).
fn citations(
    check: Option<&assertions::Evaluation>,
    a: &Claim<'_>,
    b: &Claim<'_>,
) -> (Vec<SequenceRef>, Vec<String>) {
    let mut seq = check.map(|e| e.sequence_refs.clone()).unwrap_or_default();
    let mut frames = Vec::new();
    for c in [a, b] {
        if let (true, true, Some(r)) = (c.status.is_claim(), c.supported, c.result) {
            seq.extend(r.sequence_refs.iter().copied());
            frames.extend(r.frame_hashes.iter().cloned());
        }
    }
    (seq, frames)
}

/// The line `conflicts` lists for a contradicted or disputed obligation.
fn conflict_line(
    id: &str,
    status: ObligationStatus,
    a: &Claim<'_>,
    b: &Claim<'_>,
    check_status: Option<JudgeStatus>,
    unsupported: &[&str],
) -> Option<String> {
    if !matches!(
        status,
        ObligationStatus::Contradicted | ObligationStatus::Disputed
    ) {
        return None;
    }
    let mut line = format!("{}: A={} B={}", id, a.status.as_str(), b.status.as_str());
    if let Some(cs) = check_status {
        line.push_str(&format!(" check={}", cs.as_str()));
    }
    if !unsupported.is_empty() {
        line.push_str(&format!(" unsupported={}", unsupported.join(",")));
    }
    Some(line)
}

/// The failure signature of a roll that did not pass: the decision and every required
/// obligation not satisfied, sorted.
fn failure_signature(
    decision: Outcome,
    required_status: &BTreeMap<&str, ObligationStatus>,
) -> Option<String> {
    (decision != Outcome::Pass).then(|| {
        let mut parts: Vec<String> = required_status
            .iter()
            .filter(|(_, s)| **s != ObligationStatus::Satisfied)
            .map(|(id, s)| format!("{}:{id}", s.as_str()))
            .collect();
        parts.sort();
        format!("{}:{}", decision.as_str(), parts.join("|"))
    })
}
