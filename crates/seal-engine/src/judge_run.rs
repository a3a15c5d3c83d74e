//! `seal judge`: a checked run folder ([`RunFolder`]) submitted, judged roll by roll and
//! sealed, through the same intake, rolls and postguard as the HTTP API.

use crate::intake::{self, Origin};
use crate::roll::{self, Source, SubmitError, Submitted};
use crate::run_state::{decided_error, DecidedRun, RunState, RunStateError};
use seal_core::canonical::{canonical_value_bytes, Hash};
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RollId;
use seal_core::submission::same_submission;
use seal_fs::runfolder::{bad, fs_reason, FolderError, RunFolder};
use seal_store::Key;

/// Why `seal judge` could not seal a run.
#[derive(Debug, thiserror::Error)]
pub enum JudgeRunError {
    #[error(transparent)]
    Folder(#[from] FolderError),
    #[error(transparent)]
    Intake(#[from] intake::IntakeError),
    #[error(transparent)]
    State(#[from] RunStateError),
    #[error(transparent)]
    Roll(#[from] crate::roll::JudgingError),
    #[error(transparent)]
    Submit(#[from] SubmitError),
    #[error(transparent)]
    Finalize(#[from] crate::postguard::FinalizeError),
    #[error(transparent)]
    Store(#[from] seal_store::StoreError),
}

impl HasFault for JudgeRunError {
    fn fault(&self) -> Fault {
        match self {
            JudgeRunError::Folder(_) => Fault::Caller,
            JudgeRunError::Intake(e) => e.fault(),
            JudgeRunError::State(e) => e.fault(),
            JudgeRunError::Roll(e) => e.fault(),
            JudgeRunError::Submit(e) => e.fault(),
            JudgeRunError::Finalize(e) => e.fault(),
            JudgeRunError::Store(e) => e.fault(),
        }
    }
}

/// A decided run is judged again only when the folder adds nothing to it (same header, the
/// same proof package for every sealed roll, no roll the sealed run would have taken next):
/// then the sealed result is returned; anything else is refused.
async fn adds_nothing(
    engine: &crate::engine::Engine,
    d: &DecidedRun,
    folder: &RunFolder,
) -> Result<(), JudgeRunError> {
    let store = &engine.store;
    let refuse = || JudgeRunError::State(decided_error(d));
    let stored = Hash::of(&store.get(&Key::header(folder.run())).await?);
    // What intake stores of a header is its canonical form.
    let same_header = seal_core::json::parse(folder.header_bytes(), store.doc_limit())
        .ok()
        .and_then(|v| canonical_value_bytes(&v).ok())
        .is_some_and(|b| same_submission(&Hash::of(&b), &stored));
    if !same_header {
        return Err(refuse());
    }
    let sealed = &d.evidence().rolls;
    for proof in folder.rolls() {
        let roll = proof.roll_id();
        match sealed.iter().find(|r| r.roll_id == roll) {
            Some(r) if same_submission(proof.hash(), &r.proof_package_hash) => {}
            Some(_) => return Err(refuse()),
            None => {
                let before: Vec<_> = sealed.iter().map(|r| r.roll_outcome).collect();
                if seal_core::merge::may_follow(&before, roll) {
                    return Err(refuse());
                }
            }
        }
    }
    Ok(())
}

/// Judges a whole run folder: submit, roll 1, roll 2 when needed and present, finalize, seal.
/// One `run` span holds the rolls' spans (the trace of the run).
pub async fn judge(
    engine: &crate::engine::Engine,
    folder: &RunFolder,
) -> Result<crate::postguard::Finalized, JudgeRunError> {
    use tracing::Instrument;
    let span = tracing::info_span!("run", run = %folder.run());
    judge_folder(engine, folder).instrument(span).await
}

async fn judge_folder(
    engine: &crate::engine::Engine,
    folder: &RunFolder,
) -> Result<crate::postguard::Finalized, JudgeRunError> {
    use futures::TryStreamExt;
    let store = &engine.store;
    if engine.key.is_none() {
        return Err(crate::postguard::FinalizeError::NoKey {
            run: folder.run().clone(),
        }
        .into());
    }
    match RunState::load(store, folder.run()).await {
        Ok(RunState::Decided(d)) => {
            adds_nothing(engine, &d, folder).await?;
            return Ok(crate::postguard::finalize(engine, folder.run()).await?);
        }
        Ok(RunState::Finalizing(_)) => {
            return Ok(crate::postguard::finalize(engine, folder.run()).await?)
        }
        Ok(RunState::Open(_)) | Err(RunStateError::NotFound { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    for (hash, path) in folder.blobs() {
        let file = tokio::fs::File::from_std(
            seal_fs::fsio::open(path).map_err(|e| bad(path, fs_reason(e)))?,
        );
        let stream =
            tokio_util::io::ReaderStream::with_capacity(file, 1 << 20).map_err(|e| e.to_string());
        store
            .put_blob(Box::pin(stream), Some(hash), engine.config.max_blob_bytes)
            .await
            .map_err(|e| bad(path, e.to_string()))?;
    }
    intake::put_header(
        engine,
        folder.run(),
        folder.header_bytes(),
        Origin::Operator,
    )
    .await?;
    intake::put_brief(engine, folder.run(), folder.brief()).await?;
    if let Some(spec) = folder.play_spec() {
        intake::put_play_spec(engine, folder.run(), spec).await?;
    }
    for proof in folder.rolls() {
        let roll = proof.roll_id();
        if roll == RollId::R2 {
            match roll::stored_roll(engine, folder.run(), RollId::R1).await? {
                Some(r1) if r1.next() == seal_core::merge::Next::Roll2 => {}
                _ => break,
            }
        }
        match roll::submit(engine, folder.run(), roll, proof).await? {
            Submitted::AlreadyJudged(_) => {}
            Submitted::Accepted(accepted) => {
                accepted.judge(&Source::Live).await?;
            }
        }
    }
    Ok(crate::postguard::finalize(engine, folder.run()).await?)
}
