//! Submitting a roll: the use case behind `POST /v1/runs/{id}/rolls/{n}`, `seal judge` and
//! `seal replay`, so that all three refuse and answer alike.
//!
//! [`submit`] takes a [`ProofSubmission`] (the package parsed once, by the caller, before any
//! lock is taken), loads the run's state once under the run's lock, and answers either the
//! stored result of a roll this deployment already judged with that very package
//! ([`Submitted::AlreadyJudged`]) or the stored package, ready to judge
//! ([`Submitted::Accepted`], which keeps the run's lock until [`Accepted::judge`]). The caller
//! decides what happens in between: the HTTP handler takes a roll permit there, so an
//! already-judged answer never waits for one.

use tokio::sync::OwnedMutexGuard;

use super::inputs::RollInputs;
use super::{judge_traced, stored_roll, JudgingError, RollReport, Source};
use crate::engine::Engine;
use crate::intake::{self, IntakeError};
use crate::run_state::{OpenRun, RunState, RunStateError};
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::{RollId, RunId};
use seal_core::submission::{same_submission, ProofSubmission};

/// What a submitted roll amounts to.
#[derive(Debug)]
pub enum Submitted<'e> {
    /// This deployment already finished the roll with this package: its stored result.
    /// Nothing was stored, nothing will be judged. (Boxed, as is the header of `Accepted`:
    /// both are large beside the enum's tag.)
    AlreadyJudged(Box<RollReport>),
    /// The package is stored (or was, identical): judge it.
    Accepted(Accepted<'e>),
}

/// A stored proof package of an open run, ready to judge. Holds the run's lock (this
/// process's, see [`Engine::lock_run`]) from the state load of [`submit`] until judged or
/// dropped, so no finalize of the run slips in between.
pub struct Accepted<'e> {
    engine: &'e Engine,
    open: Box<OpenRun>,
    roll: RollId,
    stored: intake::Accepted,
    /// The package as accepted, handed to the guard instead of being read back. (Boxed, as
    /// the header is.)
    inputs: Box<RollInputs>,
    _lock: OwnedMutexGuard<()>,
}

impl std::fmt::Debug for Accepted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accepted")
            .field("run", &self.open.run())
            .field("roll", &self.roll)
            .field("stored", &self.stored)
            .finish()
    }
}

impl Accepted<'_> {
    /// The package as stored, and whether this submission created it.
    pub fn stored(&self) -> &intake::Accepted {
        &self.stored
    }

    /// Judges the roll with answers from `source` (see [`super::judge_open_roll`]).
    pub async fn judge(self, source: &Source) -> Result<RollReport, JudgingError> {
        judge_traced(
            self.engine,
            &self.open,
            self.roll,
            Some(*self.inputs),
            source,
        )
        .await
    }
}

/// Why a roll was not taken.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The roll was judged already, with another proof package.
    #[error("{roll} was judged with another proof package")]
    OtherPackage { run: RunId, roll: RollId },
    #[error(transparent)]
    State(#[from] RunStateError),
    #[error(transparent)]
    Intake(#[from] IntakeError),
    #[error(transparent)]
    Judging(#[from] JudgingError),
}

impl HasFault for SubmitError {
    fn fault(&self) -> Fault {
        match self {
            SubmitError::OtherPackage { .. } => Fault::Caller,
            SubmitError::State(e) => e.fault(),
            SubmitError::Intake(e) => e.fault(),
            SubmitError::Judging(e) => e.fault(),
        }
    }
}

/// Submits `submission` as roll `roll` of `run` (see the module doc). A decided run takes no
/// roll: only a retry of a roll it was sealed with gets its stored answer.
pub async fn submit<'e>(
    engine: &'e Engine,
    run: &RunId,
    roll: RollId,
    submission: &ProofSubmission,
) -> Result<Submitted<'e>, SubmitError> {
    let lock = engine.lock_run(run).await;
    let phase = RunState::load(&engine.store, run).await?;
    if let RunState::Decided(d) = &phase {
        if d.evidence().rolls.iter().any(|r| r.roll_id == roll) {
            if let Some(done) = judged_with(engine, run, roll, submission).await? {
                return Ok(Submitted::AlreadyJudged(Box::new(done)));
            }
        }
    }
    let open = phase.open()?;
    if open.judged(roll).is_some() {
        // A record seal finished is answered; one without its receipt is judged (again),
        // which commits it only if it is exactly what seal derives.
        if let Some(done) = judged_with(engine, run, roll, submission).await? {
            return Ok(Submitted::AlreadyJudged(Box::new(done)));
        }
    }
    let stored = intake::accept_proof_package(engine, &open, roll, submission).await?;
    let inputs = Box::new(RollInputs::accepted(
        roll,
        submission.package().clone(),
        stored.stored(),
    ));
    Ok(Submitted::Accepted(Accepted {
        engine,
        open: Box::new(open),
        roll,
        stored,
        inputs,
        _lock: lock,
    }))
}

/// The roll as this deployment finished it (its record's receipt verifies), if it did and
/// with this very package; another package is refused.
async fn judged_with(
    engine: &Engine,
    run: &RunId,
    roll: RollId,
    submission: &ProofSubmission,
) -> Result<Option<RollReport>, SubmitError> {
    let Some(done) = stored_roll(engine, run, roll).await? else {
        return Ok(None);
    };
    if !same_submission(submission.hash(), &done.roll.proof_package_hash) {
        return Err(SubmitError::OtherPackage {
            run: run.clone(),
            roll,
        });
    }
    Ok(Some(done))
}
