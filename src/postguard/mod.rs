//! finalPostguard: the only code that writes an outcome (docs/DESIGN.md §6).
//!
//! [`finalize`] judges any roll whose proof package is stored but not judged, derives the
//! JUDGING snapshot of the run from its judged rolls (`derive::judging_snapshot`) and stores
//! it; then the postguard proper re-reads that snapshot from the store, re-runs every check
//! (the [`crate::audit`] of all refs, documents, normalization, independence, consensus,
//! blinding, costs and unbound objects, plus the schema and the cross-field invariants),
//! records each one, decides, and writes `evidence.json` and the seal, both create-only.
//!
//! Enforced by construction, not convention: the store writes the two reserved keys only from
//! a [`decided::Decided`] and a [`decided::Seal`], whose constructors only this module reaches.
//! A failed check still decides (`infra_error` / `retry`, reason `postguard_<check>`), so no
//! run is left hanging. Racing finalizers: exactly one create wins; the others return the
//! stored result. A stored snapshot (an interrupted finalize) is decided as stored: once
//! `judging.json` exists the run takes no more rolls, so the snapshot cannot go stale.

pub mod decided;

use tracing::Instrument;

use crate::audit::{self, check, Problem};
use crate::canonical::{self, Hash};
use crate::contracts::Kind;
use crate::derive::{self, JudgedRoll};
use crate::doc::*;
use crate::engine::Engine;
use crate::fault::{Fault, HasFault};
use crate::ids::{RollId, RunId};
use crate::invariants;
use crate::merge;
use crate::roll::{self, JudgingError, Source};
use crate::run_state::{OpenRun, RunState, RunStateError};
use crate::sealing::{self, Envelope};
use crate::store::{parse_stored, Key, OwnWrites, Reads, Store, StoreError};
use crate::transparency::SealLogged;
use crate::validate::{validate_as, Report};
use decided::{Decided, Seal};

/// Version of the postguard's rules, recorded in every decision.
pub const VERSION: &str = "finalPostguard/1";

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
    State(#[from] RunStateError),
    #[error(transparent)]
    Roll(#[from] JudgingError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("run {run}: not sealed: {source}")]
    Log {
        run: RunId,
        source: crate::transparency::LogError,
    },
    #[error("run {run}: {reason}")]
    Internal { run: RunId, reason: String },
}

impl HasFault for FinalizeError {
    fn fault(&self) -> Fault {
        match self {
            FinalizeError::NoRolls { .. } => Fault::Caller,
            FinalizeError::NoKey { .. } => Fault::Infrastructure,
            FinalizeError::State(e) => e.fault(),
            FinalizeError::Roll(e) => e.fault(),
            FinalizeError::Store(e) => e.fault(),
            FinalizeError::Log { source, .. } => source.fault(),
            FinalizeError::Internal { .. } => Fault::Corruption,
        }
    }
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
    // One finalize or roll of a run at a time in this process (replicas: create-only writes).
    let _run_lock = engine.lock_run(run).await;
    let (open, finalizing) = match RunState::load(store, run).await? {
        RunState::Decided(d) => {
            return seal_and_log(engine, run, &key, d.evidence, d.evidence_hash, false).await;
        }
        RunState::Open(o) => (o, false),
        RunState::Finalizing(o) => (o, true),
    };
    let rolls = if finalizing {
        open.rolls
    } else {
        judge_pending(engine, open).await?
    };
    if rolls.is_empty() {
        return Err(FinalizeError::NoRolls { run: run.clone() });
    }
    // This process wrote most of what the postguard reads seconds ago: it takes those
    // objects as written (bytes and sha256 recorded at the put) instead of re-reading and
    // re-hashing them. Everything else is read and re-hashed; `seal verify` re-hashes every
    // byte (docs/DESIGN.md §6).
    let own = store.trusting_own_writes();
    let snapshot = stored_snapshot(&own, run, &rolls).await?;
    let checks = postguard_checks(&own, run, &snapshot).await?;
    let decided = decide(
        run,
        snapshot.doc,
        checks,
        snapshot.hash,
        engine.clock.now_rfc3339(),
    )?;
    let (evidence, evidence_hash, wrote) = match store.put_decided(&decided).await {
        // The store holds exactly these bytes now (created, or identical ones were there).
        Ok((stored, created)) => (decided.evidence().clone(), stored.hash, created),
        Err(StoreError::Conflict { .. }) => match read_decided(store, run).await? {
            Some((evidence, hash)) => (evidence, hash, false),
            None => return Err(internal(run, "evidence.json vanished after a conflict")),
        },
        Err(e) => return Err(e.into()),
    };
    tracing::info!(outcome = ?evidence.outcome, wrote, "run decided");
    seal_and_log(engine, run, &key, evidence, evidence_hash, wrote).await
}

/// Judges every roll whose proof package is stored but whose judging was interrupted, in the
/// order the roll-order rule allows; returns the judged rolls.
async fn judge_pending(engine: &Engine, mut open: OpenRun) -> Result<Vec<Roll>, FinalizeError> {
    for roll in RollId::ALL {
        let before: Vec<Outcome> = open.rolls.iter().map(|r| r.roll_outcome).collect();
        if open.judged(roll).is_some() || !merge::may_follow(&before, roll) {
            continue;
        }
        let proof = Key::roll_file(&open.run, roll, "proof-package.json");
        if engine.store.exists(&proof).await? {
            let report = roll::judge_open_roll(engine, &open, roll, &Source::Live).await?;
            open.rolls.push(report.roll);
        }
    }
    Ok(open.rolls)
}

/// The JUDGING snapshot as read back: the document, its sha256, and the parsed value its
/// schema is checked on (one parse for both).
struct Snapshot {
    doc: Evidence,
    hash: Hash,
    value: serde_json::Value,
}

/// Reads and strictly parses a document through the postguard's reads; `None` when absent.
async fn read_doc<T: serde::de::DeserializeOwned>(
    own: &OwnWrites<'_>,
    key: &Key,
) -> Result<Option<(T, Hash, serde_json::Value)>, StoreError> {
    let Some((bytes, hash)) = own.get_opt_hashed(key).await? else {
        return Ok(None);
    };
    let bad = |detail: String| StoreError::BadDocument {
        key: key.clone(),
        detail,
    };
    let value =
        crate::json::parse(&bytes, own.store().doc_limit()).map_err(|e| bad(e.to_string()))?;
    // Deserializing from a borrowed value keeps the value for the schema check, uncopied.
    let doc = T::deserialize(&value).map_err(|e| bad(e.to_string()))?;
    Ok(Some((doc, hash, value)))
}

/// The JUDGING snapshot the postguard decides from: the stored one if an earlier finalize
/// wrote it, else derived from the judged rolls and stored; always read back from the store
/// (through the write set: the bytes a racing finalizer stored instead are read from it).
async fn stored_snapshot(
    own: &OwnWrites<'_>,
    run: &RunId,
    rolls: &[Roll],
) -> Result<Snapshot, FinalizeError> {
    let store = own.store();
    let snap_key = Key::judging(run);
    let read = |found: Option<(Evidence, Hash, serde_json::Value)>| {
        found.map(|(doc, hash, value)| Snapshot { doc, hash, value })
    };
    if let Some(found) = read(read_doc::<Evidence>(own, &snap_key).await?) {
        return Ok(found);
    }
    let (header, _, _) = read_doc::<Evidence>(own, &Key::header(run))
        .await?
        .ok_or_else(|| internal(run, "the header vanished"))?;
    let snapshot = derive_snapshot(own, run, &header, rolls).await?;
    // Never store a snapshot the postguard (or verify) could not read back.
    let bytes = crate::canonical::canonical_bytes(&snapshot).map_err(|e| internal(run, e))?;
    let size = bytes.len() as u64;
    if size > store.doc_limit() {
        return Err(StoreError::TooLarge {
            key: snap_key.to_string(),
            size,
            limit: store.doc_limit(),
        }
        .into());
    }
    match store.put_bytes(&snap_key, bytes::Bytes::from(bytes)).await {
        // A racing finalizer stored its snapshot first: it is the one decided on.
        Ok(_) | Err(StoreError::Conflict { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    read(read_doc::<Evidence>(own, &snap_key).await?)
        .ok_or_else(|| internal(run, "the JUDGING snapshot vanished"))
}

async fn read_decided(store: &Store, run: &RunId) -> Result<Option<(Evidence, Hash)>, StoreError> {
    store.get_json::<Evidence>(&Key::evidence(run)).await
}

/// Seals stored evidence and logs the seal, the log first (docs/DESIGN.md §13): the seal's
/// bytes are computed (ed25519 and the canonical envelope are deterministic), their entry is
/// appended, and only then is the seal stored, create-only. A crash in between leaves a logged
/// run without its seal, which the next finalize completes with the very bytes logged; so a
/// stored seal the log lacks is refused, never appended (planted, or the log lost it).
async fn seal_and_log(
    engine: &Engine,
    run: &RunId,
    key: &sealing::SigningKey,
    evidence: Evidence,
    evidence_hash: Hash,
    wrote: bool,
) -> Result<Finalized, FinalizeError> {
    let store = &engine.store;
    let log_err = |source| FinalizeError::Log {
        run: run.clone(),
        source,
    };
    if let Some(stored) = store.get_opt(&Key::seal(run)).await? {
        return stored_seal(engine, run, key, (evidence, evidence_hash), wrote, stored).await;
    }
    let statement =
        sealing::statement_for(run, &evidence, &evidence_hash).map_err(|e| internal(run, e))?;
    let envelope = sealing::sign(key, &statement).map_err(|e| internal(run, e))?;
    let (bytes, envelope_hash) =
        canonical::canonical_with_hash(&envelope).map_err(|e| internal(run, e))?;
    let key_id = match envelope.signatures.as_slice() {
        [s] => s.keyid.clone(),
        _ => return Err(internal(run, "a seal carries exactly one signature")),
    };
    let entry =
        crate::transparency::seal_entry(run, &evidence, &evidence_hash, &envelope_hash, &key_id)
            .ok_or_else(|| internal(run, "only DECIDED evidence is sealed"))?;
    match engine
        .log
        .append_seal(run, &entry, key)
        .await
        .map_err(log_err)?
    {
        SealLogged::Appended(a) => {
            tracing::debug!(index = a.index, created = a.created, "seal logged")
        }
        // A finalizer holding another key logged its seal of this evidence first: that seal
        // is the run's, stored by its signer in a moment.
        SealLogged::Rival(rival) => {
            let stored = rival_seal(store, run, &rival).await?;
            return stored_seal(engine, run, key, (evidence, evidence_hash), wrote, stored).await;
        }
    }
    crate::transparency::append_delay().await;
    match store.put_seal(&Seal::new(run.clone(), bytes)).await {
        // The store holds exactly these canonical bytes now (created, or identical ones were).
        Ok(_) => Ok(Finalized {
            evidence,
            evidence_hash,
            envelope,
            envelope_hash,
            wrote,
        }),
        // Other bytes got there first: they count only if the log holds them.
        Err(StoreError::Conflict { .. }) => {
            let stored = store
                .get_opt(&Key::seal(run))
                .await?
                .ok_or_else(|| internal(run, "the seal vanished after a conflict"))?;
            stored_seal(engine, run, key, (evidence, evidence_hash), wrote, stored).await
        }
        Err(e) => Err(e.into()),
    }
}

/// How long a finalizer waits for the seal a rival logged (its signer logs, publishes a
/// checkpoint, then stores the seal: milliseconds, unless it crashed).
const RIVAL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The stored bytes of the seal a rival logged, once its signer has stored them.
async fn rival_seal(
    store: &Store,
    run: &RunId,
    rival: &crate::tlog::LogEntry,
) -> Result<bytes::Bytes, FinalizeError> {
    let start = std::time::Instant::now();
    loop {
        if let Some(stored) = store.get_opt(&Key::seal(run)).await? {
            return Ok(stored);
        }
        if start.elapsed() > RIVAL_WAIT {
            return Err(FinalizeError::Log {
                run: run.clone(),
                source: crate::transparency::LogError::NotSealed {
                    run: run.clone(),
                    detail: format!(
                        "another seal of this evidence (seal sha256 {}, key {}) is logged, and its signer has not stored it: it will, when it finalizes the run again",
                        rival.seal_sha256, rival.key_id
                    ),
                },
            });
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// A seal found stored: it is the run's only if the log holds it for this evidence.
async fn stored_seal(
    engine: &Engine,
    run: &RunId,
    key: &sealing::SigningKey,
    (evidence, evidence_hash): (Evidence, Hash),
    wrote: bool,
    stored: bytes::Bytes,
) -> Result<Finalized, FinalizeError> {
    let envelope_hash = Hash::of(&stored);
    let entry = engine
        .log
        .require_logged(run, &envelope_hash, key)
        .await
        .map_err(|source| FinalizeError::Log {
            run: run.clone(),
            source,
        })?;
    if entry.evidence_sha256 != evidence_hash.to_string() {
        return Err(internal(
            run,
            format!(
                "the logged seal is over evidence {}, the stored evidence is {evidence_hash}",
                entry.evidence_sha256
            ),
        ));
    }
    let envelope: Envelope = parse_stored(&Key::seal(run), &stored, engine.store.doc_limit())?;
    Ok(Finalized {
        evidence,
        evidence_hash,
        envelope,
        envelope_hash,
        wrote,
    })
}

/// Loads the proof package and consensus of every roll (verified by hash) and derives the
/// JUDGING document from them.
async fn derive_snapshot(
    own: &OwnWrites<'_>,
    run: &RunId,
    header: &Evidence,
    rolls: &[Roll],
) -> Result<Evidence, FinalizeError> {
    let limit = own.store().doc_limit();
    let mut docs = Vec::with_capacity(rolls.len());
    for r in rolls {
        let key = |reference: &str| {
            Key::parse(reference).map_err(|e| internal(run, format!("{reference}: {e}")))
        };
        let proof_key = key(&r.proof_package_ref)?;
        let proof: ProofPackage = parse_stored(
            &proof_key,
            &own.get_verified(&proof_key, &r.proof_package_hash).await?,
            limit,
        )?;
        let consensus_key = key(&r.judge_consensus_ref)?;
        let consensus: JudgeConsensus = parse_stored(
            &consensus_key,
            &own.get_verified(&consensus_key, &r.judge_consensus_hash)
                .await?,
            limit,
        )?;
        docs.push((proof, consensus));
    }
    let judged: Vec<JudgedRoll<'_>> = rolls
        .iter()
        .zip(&docs)
        .map(|(roll, (proof, consensus))| JudgedRoll {
            roll,
            proof,
            consensus,
        })
        .collect();
    Ok(derive::judging_snapshot(header, &judged))
}

/// Every postguard check on the stored snapshot, each recorded whether it passed or not.
async fn postguard_checks(
    own: &OwnWrites<'_>,
    run: &RunId,
    snapshot: &Snapshot,
) -> Result<Vec<Check>, FinalizeError> {
    let snap = &snapshot.doc;
    let brief = own.get_opt_hashed(&Key::brief(run)).await?.map(|(b, _)| b);
    let (mut problems, docs) = audit::audit(own, snap, brief.as_deref()).await;
    problems.extend(document_problems(run, snap, &snapshot.value));
    if let Some((header, _, _)) = read_doc::<Evidence>(own, &Key::header(run)).await? {
        problems.extend(audit::run_cost(&Key::judging(run), &header, snap));
    }
    // Independence holds for the source roll, if it was dispatched.
    if let Some(r) = merge::source_roll_index(&snap.rolls).map(|i| &snap.rolls[i]) {
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
        .map(|id| record_check(id, &problems))
        .collect())
}

/// The snapshot's schema (on `value`, the snapshot as parsed from its stored bytes) and its
/// cross-field invariants.
fn document_problems(run: &RunId, snap: &Evidence, value: &serde_json::Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    for f in crate::contracts::validate(Kind::PlaytestV3, value) {
        let object = format!("{} {}", Key::judging(run), f.pointer);
        problems.push(Problem::new(check::SCHEMA, object, f.message));
    }
    for f in invariants::evidence(snap) {
        let object = format!("{} {}", Key::judging(run), f.pointer);
        let detail = format!("{} {}", f.rule, f.message);
        problems.push(Problem::new(check::INVARIANTS, object, detail));
    }
    problems
}

/// One `finalPostguard.checks` entry: ok, or the first problems of that check.
fn record_check(id: &'static str, problems: &[Problem]) -> Check {
    let mine: Vec<&Problem> = problems.iter().filter(|p| p.check == id).collect();
    if mine.is_empty() {
        return Check::new(id, true, "ok");
    }
    let text: Vec<String> = mine.iter().take(5).map(|p| p.to_string()).collect();
    let more = if mine.len() > 5 {
        format!(" (+{} more)", mine.len() - 5)
    } else {
        String::new()
    };
    Check::new(id, false, format!("{}{more}", text.join("; ")))
}

/// The postguard's transition JUDGING → DECIDED: outcome, reasons, compatibility and the
/// postguard record from the one derivation, then the gates auditors will apply to it.
fn decide(
    run: &RunId,
    mut snap: Evidence,
    checks: Vec<Check>,
    snapshot_hash: Hash,
    decided_at: String,
) -> Result<Decided, FinalizeError> {
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| c.id.as_str())
        .collect();
    let passed = failed.is_empty();
    let (outcome, reasons) = derive::outcome_and_reasons(&snap, &failed);
    snap.compatibility = Some(derive::compatibility(
        outcome,
        passed,
        snap.acceptance_mode,
        snap.source_roll_id,
    ));
    snap.decision = Some(Decision {
        action: derive::decision_action(outcome, snap.repair.round),
        reasons: reasons.iter().map(|r| r.to_string()).collect(),
    });
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
    // Our own decided document must pass the gates auditors will apply.
    let value = serde_json::to_value(&snap).map_err(|e| internal(run, e))?;
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
    Decided::new(run.clone(), snap, &value).map_err(|e| internal(run, e))
}
