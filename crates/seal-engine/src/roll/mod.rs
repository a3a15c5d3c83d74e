//! One roll, end to end, as stages (docs/DESIGN.md §4, §5):
//!
//! 1. [`guard`]: everything that must hold before any judge is called;
//! 2. [`package`]: the ONE blinded judge package and its image manifest, and the blinding
//!    predicate on its bytes (a package that fails it blocks the roll);
//! 3. [`cost`]: the worst-case cost reservation of both slots;
//! 4. [`dispatch`]: Judge A ∥ Judge B (or the stored answers of a replay, or nothing when the
//!    guard blocked), every byte stored before it is used;
//! 5. [`record`]: parsed and normalized results, then [`seal_core::derive::derive_roll`] (the same
//!    derivation the audit re-runs), the consensus and the roll record (`roll.json`).
//!
//! A roll comes in through [`submit`] (HTTP, `seal judge`, `seal replay` alike), which stores
//! its proof package or answers the stored result of a roll already judged with it.
//!
//! Every stage writes create-only and derives its bytes from what is already stored, so running
//! a roll again (a retry, a restart after a crash, a second replica) converges on the same
//! objects and pays no judge twice for an answer already held. A roll is judged only on an
//! [`OpenRun`]: a decided run never reaches this module.

mod cost;
mod dispatch;
mod guard;
mod inputs;
mod package;
mod record;
mod submit;

pub use submit::{submit, Accepted, SubmitError, Submitted};

use tracing::Instrument;

use crate::engine::Engine;
use crate::notary::{ReceiptError, ReceiptKind};
use crate::run_state::{OpenRun, RunState, RunStateError};
use seal_core::doc::*;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::{RollId, RunId};
use seal_core::merge::{next_after, Next};
use seal_store::{parse_stored, Key, Store, StoreError, Stored};

#[derive(Debug, thiserror::Error)]
pub enum JudgingError {
    #[error(transparent)]
    State(#[from] RunStateError),
    #[error("run {run} {roll}: no proof package submitted")]
    NoProofPackage { run: RunId, roll: RollId },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored judge attempt this daemon did not write (see [`crate::resume`]).
    #[error(transparent)]
    Resume(#[from] crate::resume::ResumeError),
    /// A stored input or roll record this deployment never accepted (see [`crate::notary`]).
    #[error(transparent)]
    Receipt(#[from] ReceiptError),
    /// A stored document that is not what this roll derives from its authenticated inputs.
    #[error("{key}: planted document, never judged or sealed from: {reason}")]
    Planted { key: String, reason: String },
    /// The judge policy could not be registered: no judge is called.
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    #[error("run {run} {roll}: {reason}")]
    Internal {
        run: RunId,
        roll: RollId,
        reason: String,
    },
}

/// A document stored under another run's, roll's, slot's or attempt's key (`seal_core::bound`).
impl From<seal_core::bound::Unbound> for JudgingError {
    fn from(e: seal_core::bound::Unbound) -> JudgingError {
        JudgingError::Planted {
            key: e.key.to_string(),
            reason: e.to_string(),
        }
    }
}

impl HasFault for JudgingError {
    fn fault(&self) -> Fault {
        match self {
            JudgingError::State(e) => e.fault(),
            JudgingError::NoProofPackage { .. } => Fault::Caller,
            JudgingError::Store(e) => e.fault(),
            JudgingError::Resume(e) => e.fault(),
            JudgingError::Receipt(e) => e.fault(),
            JudgingError::Planted { .. } => Fault::Corruption,
            JudgingError::Policy(e) => e.fault(),
            // What the store holds contradicts what this roll derives: not the caller's doing.
            JudgingError::Internal { .. } => Fault::Corruption,
        }
    }
}

pub(crate) fn internal(run: &RunId, roll: RollId, e: impl std::fmt::Display) -> JudgingError {
    JudgingError::Internal {
        run: run.clone(),
        roll,
        reason: e.to_string(),
    }
}

/// The result of a judged roll: its record and consensus as stored, and what comes next.
#[derive(Debug, Clone)]
pub struct RollReport {
    roll: Roll,
    consensus: JudgeConsensus,
    next: Next,
}

impl RollReport {
    /// The roll record (`roll.json`).
    pub fn roll(&self) -> &Roll {
        &self.roll
    }
    pub fn consensus(&self) -> &JudgeConsensus {
        &self.consensus
    }
    /// Roll 2 or finalize.
    pub fn next(&self) -> Next {
        self.next
    }
    /// The roll record, taken out.
    pub fn into_roll(self) -> Roll {
        self.roll
    }
}

/// Where a roll's judge answers come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Ask both judges over HTTP.
    Live,
    /// Historical replay: exactly the attempts (and the cost reservation) the verified source
    /// `from` binds for the same roll are copied byte for byte, each read against the hash its
    /// sealed records name, then parsed, normalized and judged by the current code.
    Stored {
        from: RunId,
        /// The source's roll records, from its verified evidence.
        rolls: std::sync::Arc<Vec<Roll>>,
    },
}

impl Source {
    /// The verified source roll a stored replay copies roll `roll` from.
    pub(crate) fn source_roll(&self, roll: RollId) -> Option<(&RunId, &Roll)> {
        match self {
            Source::Live => None,
            Source::Stored { from, rolls } => {
                rolls.iter().find(|r| r.roll_id == roll).map(|r| (from, r))
            }
        }
    }
}

/// Judges roll `roll` of `run` (its proof package must be stored). Idempotent. Takes this
/// process's lock on the run and refuses a run that is not open.
pub async fn judge_roll(
    engine: &Engine,
    run: &RunId,
    roll: RollId,
) -> Result<RollReport, JudgingError> {
    judge_roll_from(engine, run, roll, &Source::Live).await
}

/// Judges a roll with answers from `source` (see [`judge_roll`]).
pub async fn judge_roll_from(
    engine: &Engine,
    run: &RunId,
    roll: RollId,
    source: &Source,
) -> Result<RollReport, JudgingError> {
    let _run_lock = engine.lock_run(run).await;
    let open = RunState::load(&engine.store, run).await?.open()?;
    judge_open_roll(engine, &open, roll, source).await
}

/// Judges a roll of a run the caller loaded as open and holds the lock of; its inputs are
/// loaded and authenticated once ([`inputs::RollInputs::load`]).
pub async fn judge_open_roll(
    engine: &Engine,
    open: &OpenRun,
    roll: RollId,
    source: &Source,
) -> Result<RollReport, JudgingError> {
    judge_traced(engine, open, roll, None, source).await
}

/// [`judge_open_roll`] with the inputs the caller already holds (`Some`: intake has just
/// accepted them), else loaded.
async fn judge_traced(
    engine: &Engine,
    open: &OpenRun,
    roll: RollId,
    held: Option<inputs::RollInputs>,
    source: &Source,
) -> Result<RollReport, JudgingError> {
    let span = tracing::info_span!("roll", run = %open.run(), roll = %roll);
    judge_stages(engine, open, roll, held, source)
        .instrument(span)
        .await
}

async fn judge_stages(
    engine: &Engine,
    open: &OpenRun,
    roll: RollId,
    held: Option<inputs::RollInputs>,
    source: &Source,
) -> Result<RollReport, JudgingError> {
    let store = &engine.store;
    let run = open.run();
    authenticate_earlier(engine, open, roll).await?;
    if let Some(done) = stored_roll(engine, run, roll).await? {
        tracing::info!(outcome = %done.roll.roll_outcome, "roll already judged");
        return Ok(done);
    }
    let inputs = match held {
        Some(i) if i.roll == roll => i,
        Some(_) => return Err(internal(run, roll, "inputs held for another roll")),
        None => inputs::RollInputs::load(engine, open, roll).await?,
    };
    let guarded = guard::check(engine, open, inputs).await?;
    let packaged = package::build(store, &guarded).await?;
    let mut checks = guarded.checks.clone();
    // The blinding predicate on the very bytes the judges would get, before any reservation
    // or call: a package that fails it blocks the roll and is never sent.
    checks.extend(package::blinding_check(&guarded, &packaged));
    let mut jobs = dispatch::Jobs::new(engine, &guarded, &packaged);
    checks.push(dispatch::preflight(engine, run, roll, &jobs));
    let (reservation, budget_check) =
        cost::reserve(engine, open, &guarded, &packaged, &jobs, source).await?;
    jobs.pin(&reservation.0);
    checks.push(budget_check);
    let guard = Guard {
        status: if checks.iter().all(|c| c.ok) {
            GuardStatus::Pass
        } else {
            GuardStatus::Blocked
        },
        checks,
    };
    // Before any judge is asked: the policy they are asked under is in the log.
    if guard.status == GuardStatus::Pass && matches!(source, Source::Live) {
        jobs.under(engine.policy().await?);
    }
    let (run_a, run_b) = dispatch::run(engine, &guard, &jobs, source).await?;
    let roll_record = record::record(
        engine,
        &guarded,
        &packaged,
        guard,
        &reservation,
        [run_a, run_b],
    )
    .await?;
    tracing::info!(outcome = %roll_record.roll.roll_outcome, decision = %roll_record.consensus.decision, "roll judged");
    Ok(roll_record)
}

/// The rolls before `roll` were finished by this deployment: the roll order and the budget
/// of `roll` are decided from them.
async fn authenticate_earlier(
    engine: &Engine,
    open: &OpenRun,
    roll: RollId,
) -> Result<(), JudgingError> {
    for r in open.rolls().iter().filter(|r| r.roll_id < roll) {
        // An earlier roll not finished (a crash before its record's receipt) is not planted:
        // the worker re-sends it, which judges it again (adopting its committed attempts),
        // and then this roll.
        if stored_roll(engine, open.run(), r.roll_id).await?.is_none() {
            return Err(ReceiptError::Uncommitted {
                object: Key::roll_file(open.run(), r.roll_id, "roll.json").to_string(),
                kind: ReceiptKind::Roll,
                resend: format!("{roll} follows {}: re-send {} first", r.roll_id, r.roll_id),
            }
            .into());
        }
    }
    Ok(())
}

/// The stored record of a judged roll, if this deployment finished it: `roll.json` with a
/// receipt that verifies (see [`crate::notary`]). A record without one is not judged yet
/// (a crash before its receipt, or planted): the stages re-derive it, and commit it only if
/// the stored bytes are exactly what they derive.
pub async fn stored_roll(
    engine: &Engine,
    run: &RunId,
    roll: RollId,
) -> Result<Option<RollReport>, JudgingError> {
    let store = &engine.store;
    let key = Key::roll_file(run, roll, "roll.json");
    let Some(bytes) = store.get_opt(&key).await? else {
        return Ok(None);
    };
    match engine
        .notary
        .require_bytes(store, ReceiptKind::Roll, &key, &bytes)
        .await
    {
        Ok(()) => {}
        Err(ReceiptError::Unauthenticated { reason, .. }) => {
            tracing::info!(%reason, "stored roll record not authenticated: judging the roll");
            return Ok(None);
        }
        Err(ReceiptError::Uncommitted { .. }) => {
            tracing::info!("stored roll record not committed: judging the roll");
            return Ok(None);
        }
        Err(ReceiptError::Store(e)) => return Err(e.into()),
    }
    let r: Roll = parse_stored(&key, &bytes, store.doc_limit())?;
    seal_core::bound::check(&key, &r)?;
    let consensus: JudgeConsensus = store
        .get_json_verified(&r.judge_consensus_ref, &r.judge_consensus_hash)
        .await?;
    seal_core::bound::check(&r.judge_consensus_ref, &consensus)?;
    let next = next_after(roll, r.roll_outcome);
    Ok(Some(RollReport {
        roll: r,
        consensus,
        next,
    }))
}

/// Puts a document this roll derives, create-only. The same bytes already there are fine (a
/// retry, a restart, another replica); other bytes are planted (or were derived under another
/// configuration or version): never kept, never judged or sealed from.
pub(crate) async fn put_derived<T: serde::Serialize>(
    store: &Store,
    key: &Key,
    doc: &T,
) -> Result<Stored, JudgingError> {
    match store.put_json(key, doc).await {
        Ok(p) => Ok(p.stored),
        Err(StoreError::Conflict {
            existing,
            attempted,
            ..
        }) => Err(JudgingError::Planted {
            key: key.to_string(),
            reason: format!(
                "stored sha256 {existing}, but the roll derives sha256 {attempted} from its \
                 authenticated inputs (planted, or written by another configuration or version \
                 of seal: judge the run under a new id)"
            ),
        }),
        Err(e) => Err(e.into()),
    }
}
