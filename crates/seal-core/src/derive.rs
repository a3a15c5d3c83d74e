//! The one derivation of a roll and of a run's decision (docs/DESIGN.md §5, §6). Pure.
//!
//! Every fact the evidence records about a roll (independence, consensus, roll outcome, roll
//! errors, roll cost) and about a run (merge, source roll, mirrored top level, projection,
//! outcome, decision, reasons, compatibility) is computed here and nowhere else. The
//! dispatcher calls [`derive_roll`] to produce a roll; the postguard and `seal verify` load the
//! stored inputs, call the same function and compare; the invariant checker calls the run-level
//! functions on a document. So there is no second copy that could disagree at the edges.

use serde_json::Value;
use std::collections::BTreeSet;

use crate::canonical::Hash;
use crate::consensus::{self, ConsensusInput};
use crate::doc::*;
use crate::ids::{RollId, Slot};
use crate::independence::{self, SlotRecord};
use crate::key::Key;
use crate::merge;
use crate::vocab::{AuditCheck, GuardCheck, InfraCause, Reason, RollError};

/// What was recorded for one judge slot of a roll.
#[derive(Debug, Clone, Copy)]
pub struct SlotFacts<'a> {
    pub result: &'a JudgeResult,
    pub result_hash: &'a Hash,
    pub raw_ref: &'a Key,
    pub raw_hash: &'a Hash,
    /// SlotMeta/1 of the final attempt (the accepted one, else the last one).
    pub final_meta: Option<&'a SlotMeta>,
    /// The stored request of the final attempt, when one was sent.
    pub final_request: Option<&'a Value>,
    /// What every attempt of the slot cost, in micro-RMB.
    pub cost_micro: u64,
}

/// Everything a roll's recorded facts derive from.
#[derive(Debug, Clone, Copy)]
pub struct RollInputs<'a> {
    pub roll_id: RollId,
    pub guard: &'a Guard,
    pub package: &'a JudgePackage,
    pub package_hash: &'a Hash,
    pub manifest: &'a ImageManifest,
    pub floor_passed: bool,
    pub actor_cost_micro: u64,
    pub a: SlotFacts<'a>,
    pub b: SlotFacts<'a>,
}

/// The derived facts of a roll.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedRoll {
    pub consensus: JudgeConsensus,
    pub outcome: Outcome,
    pub errors: Vec<RollError>,
    pub cost_micro: u64,
}

/// Derives a roll from its recorded inputs.
pub fn derive_roll(i: &RollInputs<'_>) -> DerivedRoll {
    let independence = independence::checks(record(&i.a), record(&i.b), i.package_hash, i.manifest);
    let consensus = consensus::decide(&ConsensusInput {
        roll_id: i.roll_id,
        package: i.package,
        package_hash: i.package_hash,
        floor_passed: i.floor_passed,
        a: i.a.result,
        a_hash: i.a.result_hash,
        b: i.b.result,
        b_hash: i.b.result_hash,
        independence,
    });
    let blocked = i.guard.status == GuardStatus::Blocked;
    let mut errors: Vec<RollError> = i
        .guard
        .checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| RollError::Guard(c.id))
        .collect();
    if !blocked {
        for (slot, s) in [(Slot::A, &i.a), (Slot::B, &i.b)] {
            if let Some(f) = &s.result.slot_failed {
                errors.push(RollError::Judge {
                    slot,
                    class: f.error_class,
                });
            }
        }
        errors.extend(
            consensus
                .independence_checks
                .failed()
                .into_iter()
                .map(RollError::Independence),
        );
    }
    let outcome = if blocked {
        Outcome::InfraError
    } else {
        consensus.decision
    };
    DerivedRoll {
        outcome,
        errors,
        cost_micro: i.actor_cost_micro + i.a.cost_micro + i.b.cost_micro,
        consensus,
    }
}

fn record<'a>(s: &SlotFacts<'a>) -> SlotRecord<'a> {
    SlotRecord {
        meta: s.final_meta,
        raw_ref: s.raw_ref,
        raw_hash: s.raw_hash,
        request: s.final_request,
    }
}

/// Whether both judges of a roll failed, from its recorded errors.
pub fn both_judges_failed(errors: &[RollError]) -> bool {
    let failed = |want: Slot| {
        errors
            .iter()
            .any(|e| matches!(e, RollError::Judge { slot, .. } if *slot == want))
    };
    failed(Slot::A) && failed(Slot::B)
}

/// The sha256 of the submitted document a roll's guard check binds (header, play-spec).
pub fn guard_bound_hash(roll: &Roll, check: GuardCheck) -> Option<Hash> {
    let c = roll.roll_guard.checks.iter().find(|c| c.id == check)?;
    check.bound_hash(&c.detail)
}

/// A roll is void when its guard blocked it or a required independence check failed: nothing
/// its judges said may be placed in the evidence.
pub fn is_void(roll: &Roll, consensus: &JudgeConsensus) -> bool {
    roll.roll_guard.status == GuardStatus::Blocked
        || !consensus.independence_checks.all_required_hold()
}

/// The evidence's `judge`: the source roll's projection, or None when that roll is void.
pub fn projection(roll: &Roll, consensus: &JudgeConsensus) -> Option<Projection> {
    (!is_void(roll, consensus))
        .then(|| consensus.project(&roll.judge_consensus_ref, &roll.judge_consensus_hash))
}

/// One judged roll with the stored documents the run-level derivation reads.
#[derive(Debug, Clone, Copy)]
pub struct JudgedRoll<'a> {
    pub roll: &'a Roll,
    pub proof: &'a ProofPackage,
    pub consensus: &'a JudgeConsensus,
}

/// Whether `evidence` is the submitted `header` plus what judging and the postguard write
/// (rolls, merge, the source roll's mirror, the projection, cost, phase and the decision), with
/// every other member unchanged. Compared member by member, without copying either document;
/// the destructuring names every member, so a new one must be placed on one side or the other.
pub fn only_judging_changed(header: &Evidence, evidence: &Evidence) -> bool {
    let Evidence {
        schema_version,
        run_id,
        parent_run_id,
        game_id,
        genre,
        template_route,
        proof_profile_id,
        proof_registry_version,
        task_binding_hash,
        acceptance_request_hash,
        artifact_hash,
        brief_hash,
        acceptance_mode,
        evidence_mode,
        environment,
        actor,
        proof_obligations,
        repair,
        extensions,
        // What judging and the postguard write.
        phase: _,
        outcome: _,
        floor: _,
        actions: _,
        events: _,
        brief_rule_matches: _,
        first_play: _,
        rolls: _,
        merge: _,
        source_roll_id: _,
        judge: _,
        cost_rmb: _,
        final_postguard: _,
        decision: _,
        compatibility: _,
    } = header;
    *schema_version == evidence.schema_version
        && *run_id == evidence.run_id
        && *parent_run_id == evidence.parent_run_id
        && *game_id == evidence.game_id
        && *genre == evidence.genre
        && *template_route == evidence.template_route
        && *proof_profile_id == evidence.proof_profile_id
        && *proof_registry_version == evidence.proof_registry_version
        && *task_binding_hash == evidence.task_binding_hash
        && *acceptance_request_hash == evidence.acceptance_request_hash
        && *artifact_hash == evidence.artifact_hash
        && *brief_hash == evidence.brief_hash
        && *acceptance_mode == evidence.acceptance_mode
        && *evidence_mode == evidence.evidence_mode
        && *environment == evidence.environment
        && *actor == evidence.actor
        && *proof_obligations == evidence.proof_obligations
        && *repair == evidence.repair
        && *extensions == evidence.extensions
}

/// The JUDGING document of a run: the header plus its rolls and merge, the top level mirroring
/// the source roll's proof package, `judge` its projection unless that roll is void, and the
/// run's cost (the header's plus every roll's).
pub fn judging_snapshot(header: &Evidence, rolls: &[JudgedRoll<'_>]) -> Evidence {
    let mut s = header.clone();
    let records: Vec<Roll> = rolls.iter().map(|r| r.roll.clone()).collect();
    let merge = merge::merge(&records);
    s.cost_rmb = micro_to_rmb(
        rmb_to_micro(header.cost_rmb)
            + records
                .iter()
                .map(|r| rmb_to_micro(r.cost_rmb))
                .sum::<u64>(),
    );
    if let Some(src) = merge::source_roll_index(&records).map(|i| &rolls[i]) {
        s.actions = src.proof.actions.clone();
        s.events = src.proof.events.clone();
        s.floor = src.proof.floor.clone();
        s.first_play = src.proof.first_play.clone();
        s.brief_rule_matches = src.proof.brief_rule_matches.clone();
        s.judge = projection(src.roll, src.consensus);
    }
    s.source_roll_id = merge.source_roll_id;
    s.merge = Some(merge);
    s.rolls = records;
    s.phase = Phase::Judging;
    s
}

/// The versions of the one derivation of a decision (`finalPostguard.version` records the one
/// a run was decided by, and every re-derivation uses it: a run sealed under an older version
/// keeps verifying, byte for byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// `finalPostguard/1`: an `inconclusive` run names its undecided required obligations
    /// (`obligation_disputed:<id>`), also when one judge gave no answer at all.
    V1,
    /// `finalPostguard/2`: an `inconclusive` run whose source roll lost one judge says so,
    /// `infra_judge_<slot>_unavailable`, and nothing else: the other judge's statuses alone
    /// are no dispute, and an outage must not read as disagreement.
    V2,
}

impl Rules {
    /// The rules the postguard decides by.
    pub const CURRENT: Rules = Rules::V2;

    pub const fn as_str(self) -> &'static str {
        match self {
            Rules::V1 => "finalPostguard/1",
            Rules::V2 => "finalPostguard/2",
        }
    }

    /// The rules a recorded `finalPostguard.version` names, if this build knows them.
    pub fn parse(version: &str) -> Option<Rules> {
        [Rules::V1, Rules::V2]
            .into_iter()
            .find(|r| r.as_str() == version)
    }
}

/// The slot whose judge failed when exactly one did.
fn single_failed_slot(r: &Roll) -> Option<Slot> {
    let failed = |want: Slot| {
        r.errors
            .iter()
            .any(|e| matches!(e, RollError::Judge { slot, .. } if *slot == want))
    };
    match (failed(Slot::A), failed(Slot::B)) {
        (true, false) => Some(Slot::A),
        (false, true) => Some(Slot::B),
        _ => None,
    }
}

/// The outcome and reasons of a run, from its JUDGING document and the ids of the postguard
/// checks that failed (docs/DESIGN.md §6), by `rules`. A failed postguard decides `infra_error`
/// naming every failed check; a void source roll is `infra_error` with its infrastructure
/// causes.
pub fn outcome_and_reasons(
    snap: &Evidence,
    failed_checks: &[AuditCheck],
    rules: Rules,
) -> (Outcome, Vec<Reason>) {
    let source = merge::source_roll_index(&snap.rolls).map(|i| &snap.rolls[i]);
    let outcome = match (failed_checks.is_empty(), source, &snap.judge) {
        (true, Some(r), Some(_)) => r.roll_outcome,
        _ => Outcome::InfraError,
    };
    let mut reasons: Vec<Reason> = if !failed_checks.is_empty() {
        failed_checks
            .iter()
            .map(|c| Reason::Postguard(*c))
            .collect()
    } else {
        match outcome {
            Outcome::Pass => vec![Reason::Accept],
            Outcome::Fail => fail_reasons(snap),
            Outcome::Inconclusive => match (rules, source.and_then(single_failed_slot)) {
                (Rules::V2, Some(slot)) => vec![Reason::Infra(InfraCause::JudgeUnavailable(slot))],
                _ => required_with(
                    snap,
                    &[
                        ObligationStatus::Disputed,
                        ObligationStatus::Contradicted,
                        ObligationStatus::Missing,
                    ],
                )
                .into_iter()
                .map(Reason::ObligationDisputed)
                .collect(),
            },
            Outcome::InfraError => source.map(infra_causes).unwrap_or_default(),
        }
    };
    if reasons.is_empty() {
        // Inconclusive with every required obligation satisfied: one judge failed and the
        // other alone cannot pass a run. Anything else without a cause is a void roll.
        reasons.push(Reason::Infra(match outcome {
            Outcome::Inconclusive => InfraCause::SingleJudge,
            _ => InfraCause::JudgesFailed,
        }));
    }
    // The document sorts reasons as strings.
    reasons.sort_by_key(|r| r.to_string());
    reasons.dedup();
    (outcome, reasons)
}

fn fail_reasons(snap: &Evidence) -> Vec<Reason> {
    let mut r: Vec<Reason> = required_with(snap, &[ObligationStatus::Failed])
        .into_iter()
        .map(Reason::ObligationFailed)
        .collect();
    let failing: Vec<&FloorCheck> = snap
        .floor
        .checks
        .iter()
        .filter(|c| c.status == FloorStatus::Fail)
        .collect();
    r.extend(failing.iter().map(|c| Reason::FloorFailed(c.id.clone())));
    if !snap.floor.passed && failing.is_empty() {
        r.push(Reason::FloorFailed("floor".into()));
    }
    r
}

fn required_with(snap: &Evidence, statuses: &[ObligationStatus]) -> Vec<String> {
    let Some(j) = &snap.judge else {
        return Vec::new();
    };
    let required: BTreeSet<&str> = snap
        .proof_obligations
        .iter()
        .filter(|o| o.required)
        .map(|o| o.id.as_str())
        .collect();
    j.obligation_results
        .iter()
        .filter(|o| required.contains(o.id.as_str()) && statuses.contains(&o.status))
        .map(|o| o.id.clone())
        .collect()
}

/// The infrastructure causes of a roll's errors (both judges failing is one cause; a single
/// failed judge is not an infrastructure error on its own).
fn infra_causes(r: &Roll) -> Vec<Reason> {
    let mut out: Vec<Reason> = r
        .errors
        .iter()
        .filter_map(InfraCause::of)
        .map(Reason::Infra)
        .collect();
    if both_judges_failed(&r.errors) {
        out.push(Reason::Infra(InfraCause::JudgesFailed));
    }
    out
}

/// The decision action for an outcome (docs/DESIGN.md §6).
pub fn decision_action(outcome: Outcome, repair_round: u8) -> DecisionAction {
    match outcome {
        Outcome::Pass => DecisionAction::Accept,
        Outcome::Fail if repair_round == 0 => DecisionAction::Repair,
        Outcome::Fail => DecisionAction::Reject,
        Outcome::Inconclusive | Outcome::InfraError => DecisionAction::Retry,
    }
}

/// The compatibility block derived from the other fields (docs/DESIGN.md §6).
pub fn compatibility(
    outcome: Outcome,
    postguard_passed: bool,
    mode: AcceptanceMode,
    source: Option<RollId>,
) -> Compatibility {
    Compatibility {
        accepted: outcome == Outcome::Pass,
        ok: postguard_passed,
        acceptance_version: mode,
        publish_frozen: !(mode == AcceptanceMode::V3 && outcome == Outcome::Pass),
        schema_version: SCHEMA_VERSION.into(),
        source_roll_id: source,
    }
}
