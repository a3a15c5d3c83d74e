//! The phase of a run, loaded once per request and per CLI call: [`RunState::Open`] (header
//! stored, rolls being judged) or [`RunState::Decided`] (evidence sealed). Everything that adds
//! to a run (intake, a roll, `seal judge`, replay into an id) asks for an [`OpenRun`] first, so
//! a decided run refuses new bytes before any judge is called or anything is stored.

use seal_core::canonical::Hash;
use seal_core::doc::{Evidence, Outcome, Roll};
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::{RollId, RunId};
use seal_store::{Key, Store, StoreError};

/// A run whose header is stored and which is not decided yet.
#[derive(Debug, Clone)]
pub struct OpenRun {
    pub run: RunId,
    pub header: Evidence,
    pub header_hash: Hash,
    /// The judged rolls (`roll.json` present), in order.
    pub rolls: Vec<Roll>,
}

impl OpenRun {
    /// The outcomes of the judged rolls before `roll`.
    pub fn outcomes_before(&self, roll: RollId) -> Vec<Outcome> {
        self.rolls
            .iter()
            .filter(|r| r.roll_id < roll)
            .map(|r| r.roll_outcome)
            .collect()
    }
    pub fn judged(&self, roll: RollId) -> Option<&Roll> {
        self.rolls.iter().find(|r| r.roll_id == roll)
    }
}

/// A run whose evidence is stored (sealed or about to be).
#[derive(Debug, Clone)]
pub struct DecidedRun {
    pub run: RunId,
    pub evidence: Evidence,
    pub evidence_hash: Hash,
}

#[derive(Debug, Clone)]
pub enum RunState {
    /// Taking rolls.
    Open(OpenRun),
    /// A finalize stored the JUDGING snapshot (`judging.json`) and was interrupted, or is
    /// running: no more rolls; the next finalize decides the stored snapshot.
    Finalizing(OpenRun),
    Decided(DecidedRun),
}

#[derive(Debug, thiserror::Error)]
pub enum RunStateError {
    #[error("run {run}: not found: no header submitted")]
    NotFound { run: RunId },
    #[error("run {run}: already decided ({outcome}): nothing can be added to a decided run (seal verify {run})")]
    Decided { run: RunId, outcome: String },
    #[error(
        "run {run}: being finalized (its JUDGING snapshot is stored): no more rolls; finalize it"
    )]
    Finalizing { run: RunId },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl HasFault for RunStateError {
    fn fault(&self) -> Fault {
        match self {
            RunStateError::NotFound { .. }
            | RunStateError::Decided { .. }
            | RunStateError::Finalizing { .. } => Fault::Caller,
            RunStateError::Store(e) => e.fault(),
        }
    }
}

impl RunState {
    /// Loads the phase of `run`: decided if `evidence.json` exists, else open if the header does.
    pub async fn load(store: &Store, run: &RunId) -> Result<RunState, RunStateError> {
        if let Some((evidence, evidence_hash)) =
            store.get_json::<Evidence>(&Key::evidence(run)).await?
        {
            return Ok(RunState::Decided(DecidedRun {
                run: run.clone(),
                evidence,
                evidence_hash,
            }));
        }
        let Some((header, header_hash)) = store.get_json::<Evidence>(&Key::header(run)).await?
        else {
            return Err(RunStateError::NotFound { run: run.clone() });
        };
        let open = OpenRun {
            run: run.clone(),
            header,
            header_hash,
            rolls: judged_rolls(store, run).await?,
        };
        if store.exists(&Key::judging(run)).await? {
            return Ok(RunState::Finalizing(open));
        }
        Ok(RunState::Open(open))
    }

    /// The open run, or the refusal a decided run gets.
    pub fn open(self) -> Result<OpenRun, RunStateError> {
        match self {
            RunState::Open(o) => Ok(o),
            RunState::Finalizing(o) => Err(RunStateError::Finalizing { run: o.run }),
            RunState::Decided(d) => Err(decided_error(&d)),
        }
    }
}

/// The refusal for adding to a decided run.
pub fn decided_error(d: &DecidedRun) -> RunStateError {
    RunStateError::Decided {
        run: d.run.clone(),
        outcome: d
            .evidence
            .outcome
            .map(|o| o.to_string())
            .unwrap_or_else(|| "no outcome".into()),
    }
}

/// Rolls as stored in their folders (`roll.json`), in order, up to the first missing one.
pub async fn judged_rolls(store: &Store, run: &RunId) -> Result<Vec<Roll>, StoreError> {
    let mut rolls = Vec::new();
    for roll in RollId::ALL {
        match store
            .get_json::<Roll>(&Key::roll_file(run, roll, "roll.json"))
            .await?
        {
            Some((r, _)) => rolls.push(r),
            None => break,
        }
    }
    Ok(rolls)
}
