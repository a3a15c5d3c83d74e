//! A legacy Verdict adapted into a run folder on disk (`seal adapt verdict`): the pure
//! adaptation is [`seal_core::adapt::adapt_verdict`]; this writes its result with
//! [`crate::runfolder::write`], which reads the folder back before moving it into place.

use std::path::Path;

use seal_core::adapt::{
    adapt_verdict, AdaptError, Adapted, HEADER_FILE, PROOF_FILE, VERDICT_LIMIT,
};
use seal_core::canonical::canonical_bytes;
use seal_core::doc::Genre;
use seal_core::ids::{RollId, RunId};

use crate::runfolder::write::{self as folder, WriteError};

/// The run-folder writer's errors, as the adapter names them.
fn adapt_error(e: WriteError) -> AdaptError {
    match e {
        WriteError::OutFolder { path, reason } => AdaptError::OutFolder { path, reason },
        WriteError::Io { path, reason } => AdaptError::Io { path, reason },
        WriteError::ReadBack { path, reason } => AdaptError::Output { path, reason },
    }
}
/// Adapts a Verdict into a run folder at `out` (which must not exist, or be an empty folder).
/// Errors name the Verdict as `Verdict`; see [`verdict_file_to_run_folder`] to name a file.
pub fn verdict_to_run_folder(
    verdict_bytes: &[u8],
    genre: Genre,
    out: &Path,
) -> Result<RunId, AdaptError> {
    let adapted = adapt_verdict("Verdict", verdict_bytes, genre)?;
    write_run_folder(&adapted, out)?;
    Ok(adapted.run)
}

/// [`verdict_to_run_folder`] for a Verdict file, whose path errors name.
pub fn verdict_file_to_run_folder(
    path: &Path,
    genre: Genre,
    out: &Path,
) -> Result<RunId, AdaptError> {
    let object = path.display().to_string();
    let bytes = crate::fsio::read(path, VERDICT_LIMIT).map_err(|e| match e {
        crate::fsio::FsError::TooLarge { .. } => AdaptError::InvalidVerdict {
            object: object.clone(),
            reason: format!("over the limit of {VERDICT_LIMIT} bytes"),
        },
        other => AdaptError::Io {
            path: object.clone(),
            reason: format!("cannot read: {other}"),
        },
    })?;
    let adapted = adapt_verdict(&object, &bytes, genre)?;
    write_run_folder(&adapted, out)?;
    Ok(adapted.run)
}

/// Writes an adapted run folder at `out`: built under a hidden sibling, read back with
/// [`RunFolder::read`](crate::runfolder::RunFolder::read), then renamed onto `out` (which must
/// be absent or an empty folder); see [`folder::write_run_folder`].
pub fn write_run_folder(adapted: &Adapted, out: &Path) -> Result<(), AdaptError> {
    let header = canonical_bytes(&adapted.header).map_err(|e| AdaptError::Output {
        path: HEADER_FILE.into(),
        reason: e.to_string(),
    })?;
    let proof = canonical_bytes(&adapted.proof).map_err(|e| AdaptError::Output {
        path: PROOF_FILE.into(),
        reason: e.to_string(),
    })?;
    let files = folder::Files {
        header: &header,
        brief: adapted.brief.as_bytes(),
        rolls: &[(RollId::R1, &proof)],
    };
    folder::write_run_folder(out, &files, VERDICT_LIMIT).map_err(adapt_error)
}
