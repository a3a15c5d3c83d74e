//! finalPostguard: the only code that writes an outcome (DESIGN §6).
//!
//! [`finalize`] builds the JUDGING snapshot of a run from its judged rolls and stores it; then
//! the postguard proper re-reads that snapshot from the store, re-runs every check (the
//! [`crate::audit`] of all refs, documents, normalization, independence, consensus, blinding
//! and costs, plus the schema and the cross-field invariants), records each one, decides, and
//! writes `evidence.json` and the seal, both create-only.
//!
//! Enforced by construction, not convention: the store refuses the two reserved keys on every
//! write path except [`crate::store::Store::put_decided`], which demands a [`DecidedWrite`]
//! token; the token's only constructor is private to this module. A failed check still decides
//! (`infra_error` / `retry`, reason `postguard_<check>`), so no run is left hanging. Racing
//! finalizers: exactly one create wins; the others return the stored result.

use bytes::Bytes;
use tracing::Instrument;

use crate::audit::{self, check, Problem};
use crate::canonical::{self, Hash};
use crate::contracts::Kind;
use crate::doc::*;
use crate::engine::Engine;
use crate::ids::{RollId, RunId};
use crate::intake::{self, IntakeError};
use crate::invariants::{self, decision_action, expected_compatibility, source_roll_index};
use crate::merge;
use crate::roll::{self, RollError};
use crate::sealing::{self, Envelope, Predicate, Statement};
use crate::store::{Key, Store, StoreError};
use crate::validate::{validate_as, Report};

/// Version of the postguard's rules, recorded in every decision.
pub const VERSION: &str = "finalPostguard/1";

/// Proof that the postguard is the writer. Only this module can make one.
pub struct DecidedWrite(());

/// A sealed run.
#[derive(Debug, Clone)]
pub struct Finalized {
    pub evidence: Evidence,
    pub evidence_hash: Hash,
    pub envelope: Envelope,
    pub envelope_hash: Hash,
    /// False when another finalizer had already written this run's evidence.
    pub wrote: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum FinalizeError {
    #[error("run {run}: no roll has been judged; submit roll 1 first")]
    NoRolls { run: RunId },
    #[error(
        "run {run}: no signing key configured (seal keygen --out DIR, then --key DIR/seal.key.pem)"
    )]
    NoKey { run: RunId },
    #[error(transparent)]
    Intake(#[from] IntakeError),
    #[error(transparent)]
    Roll(#[from] RollError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("run {run}: {reason}")]
    Internal { run: RunId, reason: String },
}

fn internal(run: &RunId, reason: impl std::fmt::Display) -> FinalizeError {
    FinalizeError::Internal {
        run: run.clone(),
        reason: reason.to_string(),
    }
}

/// Finalizes a run: snapshot, postguard, evidence, seal. Idempotent and race-safe.
pub async fn finalize(engine: &Engine, run: &RunId) -> Result<Finalized, FinalizeError> {
    let span = tracing::info_span!("finalize", run = %run);
    finalize_inner(engine, run).instrument(span).await
}

async fn finalize_inner(engine: &Engine, run: &RunId) -> Result<Finalized, FinalizeError> {
    let store = &engine.store;
    let key = engine
        .key
        .clone()
        .ok_or_else(|| FinalizeError::NoKey { run: run.clone() })?;
    if let Some(done) = read_decided(store, run).await? {
        return ensure_seal(store, run, done.0, done.1, &key, false).await;
    }
    let (header, _) = intake::header(store, run).await?;

    // Rolls whose proof package is stored but whose judging was interrupted are judged first.
    let mut rolls = audit::stored_rolls(store, run).await?;
    for roll in RollId::ALL {
        let judged = rolls.iter().any(|r| r.roll_id == roll);
        let previous_indecisive =
            roll == RollId::R1 || rolls.last().is_some_and(|r| !r.roll_outcome.is_decisive());
        if !judged
            && previous_indecisive
            && store
                .exists(&Key::roll_file(run, roll, "proof-package.json"))
                .await?
        {
            roll::judge_roll(engine, run, roll).await?;
            rolls = audit::stored_rolls(store, run).await?;
        }
    }
    if rolls.is_empty() {
        return Err(FinalizeError::NoRolls { run: run.clone() });
    }

    // The JUDGING snapshot, stored, then re-read: the postguard judges what is in the store.
    let snapshot = judging_snapshot(store, &header, &rolls).await?;
    let snap_key = Key::judging(run);
    match store.put_json(&snap_key, &snapshot).await {
        Ok(_) | Err(StoreError::Conflict { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let Some((snapshot, snapshot_hash)) = store.get_json::<Evidence>(&snap_key).await? else {
        return Err(internal(run, "the JUDGING snapshot vanished"));
    };
    let checks = postguard_checks(store, run, &snapshot).await?;
    let decided = decide(snapshot, checks, snapshot_hash, engine.clock.now_rfc3339());

    // Our own decided document must pass the gates auditors will apply.
    let value = serde_json::to_value(&decided).map_err(|e| internal(run, e))?;
    if let Report::Invalid(_, findings) = validate_as(Kind::PlaytestV3, &value) {
        let text: Vec<String> = findings.iter().map(|f| f.to_string()).collect();
        return Err(internal(
            run,
            format!(
                "decided evidence fails validation (a bug): {}",
                text.join("; ")
            ),
        ));
    }
    let bytes = canonical::canonical_bytes(&decided).map_err(|e| internal(run, e))?;
    let ev_key = Key::evidence(run);
    let wrote = match store
        .put_decided(&ev_key, Bytes::from(bytes), &DecidedWrite(()))
        .await
    {
        Ok((_, created)) => created,
        Err(StoreError::Conflict { .. }) => false,
        Err(e) => return Err(e.into()),
    };
    let Some((evidence, evidence_hash)) = read_decided(store, run).await? else {
        return Err(internal(run, "evidence.json vanished after it was written"));
    };
    tracing::info!(outcome = ?evidence.outcome, wrote, "run decided");
    ensure_seal(store, run, evidence, evidence_hash, &key, wrote).await
}

async fn read_decided(store: &Store, run: &RunId) -> Result<Option<(Evidence, Hash)>, StoreError> {
    store.get_json::<Evidence>(&Key::evidence(run)).await
}

/// Writes the seal of stored evidence unless one exists (a crash between the two writes, or a
/// racing finalizer, leaves at most this step to do).
async fn ensure_seal(
    store: &Store,
    run: &RunId,
    evidence: Evidence,
    evidence_hash: Hash,
    key: &sealing::SigningKey,
    wrote: bool,
) -> Result<Finalized, FinalizeError> {
    let seal_key = Key::seal(run);
    let envelope = match store.get_json::<Envelope>(&seal_key).await? {
        Some((env, _)) => env,
        None => {
            let statement =
                statement_for(run, &evidence, &evidence_hash).map_err(|e| internal(run, e))?;
            let env = sealing::sign(key, &statement).map_err(|e| internal(run, e))?;
            let bytes = canonical::canonical_bytes(&env).map_err(|e| internal(run, e))?;
            match store
                .put_decided(&seal_key, Bytes::from(bytes), &DecidedWrite(()))
                .await
            {
                Ok(_) | Err(StoreError::Conflict { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            store
                .get_json::<Envelope>(&seal_key)
                .await?
                .map(|(e, _)| e)
                .ok_or_else(|| internal(run, "seal vanished"))?
        }
    };
    let envelope_hash = canonical::canonical_with_hash(&envelope)
        .map(|(_, h)| h)
        .map_err(|e| internal(run, e))?;
    Ok(Finalized {
        evidence,
        evidence_hash,
        envelope,
        envelope_hash,
        wrote,
    })
}

/// The in-toto statement for a run's evidence (also what `seal verify` expects to find).
/// Only a DECIDED document has one: anything else is refused, never sealed with blanks.
pub fn statement_for(
    run: &RunId,
    evidence: &Evidence,
    evidence_hash: &Hash,
) -> Result<Statement, String> {
    let (Phase::Decided, Some(outcome), Some(decision), Some(pg)) = (
        evidence.phase,
        evidence.outcome,
        evidence.decision.as_ref(),
        evidence.final_postguard.as_ref(),
    ) else {
        return Err(format!("run {run}: only a DECIDED document is sealed"));
    };
    Ok(Statement::new(
        Key::evidence(run).as_str(),
        evidence_hash,
        Predicate {
            run_id: evidence.run_id.clone(),
            outcome: outcome.as_str().to_string(),
            decision: decision.action.as_str().to_string(),
            source_roll_id: evidence.source_roll_id.map(|r| r.to_string()),
            consensus_hash: evidence
                .judge
                .as_ref()
                .and_then(|j| j.consensus_hash.as_ref())
                .map(|h| h.to_string()),
            strategy_version: evidence.judge.as_ref().map(|j| j.strategy_version.clone()),
            acceptance_mode: evidence.acceptance_mode.as_str().to_string(),
            decided_at: pg.decided_at.clone(),
        },
    ))
}

/// The JUDGING document of a run: header + rolls + merge, the top level mirroring the source
/// roll, `judge` its projection unless that roll is void.
async fn judging_snapshot(
    store: &Store,
    header: &Evidence,
    rolls: &[Roll],
) -> Result<Evidence, FinalizeError> {
    let mut s = header.clone();
    let merge = merge::merge(rolls);
    let outcomes: Vec<Outcome> = rolls.iter().map(|r| r.roll_outcome).collect();
    s.cost_rmb = micro_to_rmb(
        rmb_to_micro(header.cost_rmb) + rolls.iter().map(|r| rmb_to_micro(r.cost_rmb)).sum::<u64>(),
    );
    if let Some(i) = source_roll_index(&outcomes) {
        let r = &rolls[i];
        let key = |reference: &str| {
            Key::parse(reference).map_err(|e| StoreError::Upload(format!("{reference}: {e}")))
        };
        let proof: ProofPackage = store
            .get_json_verified(&key(&r.proof_package_ref)?, &r.proof_package_hash)
            .await?;
        let consensus: JudgeConsensus = store
            .get_json_verified(&key(&r.judge_consensus_ref)?, &r.judge_consensus_hash)
            .await?;
        s.actions = proof.actions;
        s.events = proof.events;
        s.floor = proof.floor;
        s.first_play = proof.first_play;
        s.brief_rule_matches = proof.brief_rule_matches;
        let void = r.roll_guard.status == GuardStatus::Blocked
            || !consensus.independence_checks.all_required_hold();
        s.judge =
            (!void).then(|| consensus.project(&r.judge_consensus_ref, &r.judge_consensus_hash));
    }
    s.source_roll_id = merge.source_roll_id;
    s.merge = Some(merge);
    s.rolls = rolls.to_vec();
    s.phase = Phase::Judging;
    Ok(s)
}

/// Every postguard check on the stored snapshot, each recorded whether it passed or not.
async fn postguard_checks(
    store: &Store,
    run: &RunId,
    snap: &Evidence,
) -> Result<Vec<Check>, FinalizeError> {
    let brief = store.get_opt(&Key::brief(run)).await?;
    let (mut problems, docs) = audit::audit(store, snap, brief.as_deref()).await;

    let value = serde_json::to_value(snap).map_err(|e| internal(run, e))?;
    for f in crate::contracts::validate(Kind::PlaytestV3, &value) {
        let object = format!("{} {}", Key::judging(run), f.pointer);
        problems.push(Problem::new(check::SCHEMA, object, f.message));
    }
    for f in invariants::evidence(snap) {
        let object = format!("{} {}", Key::judging(run), f.pointer);
        problems.push(Problem::new(
            check::INVARIANTS,
            object,
            format!("{} {}", f.rule, f.message),
        ));
    }
    // Cost: the run costs what the header said plus every roll.
    if let Some((header, _)) = store.get_json::<Evidence>(&Key::header(run)).await? {
        let want = rmb_to_micro(header.cost_rmb)
            + snap
                .rolls
                .iter()
                .map(|r| rmb_to_micro(r.cost_rmb))
                .sum::<u64>();
        if want != rmb_to_micro(snap.cost_rmb) {
            problems.push(Problem::mismatch(
                check::COST,
                format!("{} costRmb", Key::judging(run)),
                micro_to_rmb(want),
                snap.cost_rmb,
                "run cost is not header cost plus roll costs",
            ));
        }
    }
    // Independence holds for the source roll, if it was dispatched.
    let outcomes: Vec<Outcome> = snap.rolls.iter().map(|r| r.roll_outcome).collect();
    if let Some(i) = source_roll_index(&outcomes) {
        let r = &snap.rolls[i];
        if let Some(d) = docs.iter().find(|d| d.roll.roll_id == r.roll_id) {
            let failed = d.consensus.independence_checks.failed();
            if r.roll_guard.status == GuardStatus::Pass && !failed.is_empty() {
                problems.push(Problem::new(
                    check::INDEPENDENCE,
                    r.judge_consensus_ref.clone(),
                    format!(
                        "source roll {} failed required independence checks: {}",
                        r.roll_id,
                        failed.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(check::ALL
        .iter()
        .map(|id| {
            let mine: Vec<&Problem> = problems.iter().filter(|p| p.check == *id).collect();
            if mine.is_empty() {
                Check::new(*id, true, "ok")
            } else {
                let text: Vec<String> = mine.iter().take(5).map(|p| p.to_string()).collect();
                let more = if mine.len() > 5 {
                    format!(" (+{} more)", mine.len() - 5)
                } else {
                    String::new()
                };
                Check::new(*id, false, format!("{}{more}", text.join("; ")))
            }
        })
        .collect())
}

/// The decision (pure): outcome, reasons, compatibility, the postguard record, phase DECIDED.
pub fn decide(
    mut snap: Evidence,
    checks: Vec<Check>,
    snapshot_hash: Hash,
    decided_at: String,
) -> Evidence {
    let passed = checks.iter().all(|c| c.ok);
    let outcomes: Vec<Outcome> = snap.rolls.iter().map(|r| r.roll_outcome).collect();
    let source = source_roll_index(&outcomes).map(|i| &snap.rolls[i]);
    let outcome = match (passed, source, &snap.judge) {
        (true, Some(r), Some(_)) => r.roll_outcome,
        _ => Outcome::InfraError,
    };
    let mut reasons: Vec<String> = if !passed {
        checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("postguard_{}", c.id))
            .collect()
    } else {
        match outcome {
            Outcome::Pass => vec!["accept".to_string()],
            Outcome::Fail => {
                let mut r: Vec<String> = required_with(&snap, &[ObligationStatus::Failed])
                    .into_iter()
                    .map(|id| format!("obligation_failed:{id}"))
                    .collect();
                r.extend(
                    snap.floor
                        .checks
                        .iter()
                        .filter(|c| c.status == FloorStatus::Fail)
                        .map(|c| format!("floor_failed:{}", c.id)),
                );
                if !snap.floor.passed
                    && !snap
                        .floor
                        .checks
                        .iter()
                        .any(|c| c.status == FloorStatus::Fail)
                {
                    r.push("floor_failed:floor".into());
                }
                r
            }
            Outcome::Inconclusive => required_with(
                &snap,
                &[
                    ObligationStatus::Disputed,
                    ObligationStatus::Contradicted,
                    ObligationStatus::Missing,
                ],
            )
            .into_iter()
            .map(|id| format!("obligation_disputed:{id}"))
            .collect(),
            Outcome::InfraError => source.map(infra_reasons).unwrap_or_default(),
        }
    };
    if reasons.is_empty() {
        reasons.push(match outcome {
            Outcome::Inconclusive => "infra_single_judge".into(),
            _ => "infra_unknown".into(),
        });
    }
    reasons.sort();
    reasons.dedup();
    let action = decision_action(outcome, snap.repair.round);
    snap.compatibility = Some(expected_compatibility(
        outcome,
        passed,
        snap.acceptance_mode,
        snap.source_roll_id,
    ));
    snap.decision = Some(Decision { action, reasons });
    snap.final_postguard = Some(FinalPostguard {
        stage: "finalPostguard".into(),
        version: VERSION.into(),
        passed,
        checks,
        judging_snapshot_hash: snapshot_hash,
        decided_at,
    });
    snap.outcome = Some(outcome);
    snap.phase = Phase::Decided;
    snap
}

fn required_with(snap: &Evidence, statuses: &[ObligationStatus]) -> Vec<String> {
    let Some(j) = &snap.judge else {
        return Vec::new();
    };
    let required: std::collections::BTreeSet<&str> = snap
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

/// `infra_<category>` reasons from a roll's errors.
fn infra_reasons(r: &Roll) -> Vec<String> {
    let mut out: Vec<String> = r
        .errors
        .iter()
        .map(|e| match e.split_once(':') {
            Some(("guard", "budget")) => "infra_budget".to_string(),
            Some(("guard", check)) => format!("infra_guard_{}", sanitize(check)),
            Some(("independence", _)) => "infra_independence".to_string(),
            Some((slot, _)) if slot.starts_with("judge-") => "infra_judges_failed".to_string(),
            _ => "infra_unknown".to_string(),
        })
        .collect();
    // One failed judge is not an infrastructure error on its own: only both failing is.
    let failed_slots = r.errors.iter().filter(|e| e.starts_with("judge-")).count();
    if failed_slots < 2 {
        out.retain(|x| x != "infra_judges_failed");
    }
    out
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}
