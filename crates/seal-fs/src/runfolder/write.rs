//! Writing a run folder atomically (what `seal adapt verdict` produces): the folder is built
//! under a hidden sibling name, read back with [`RunFolder::read`], and only then renamed onto
//! `out`. So `out` is either untouched or complete, and an existing non-empty `out` is never
//! overwritten (rename(2) refuses a non-empty target).
//!
//! The layout is written here, beside the reader of the same layout, so the two cannot drift;
//! the documents come in as bytes (their builder validated them), and every file is created
//! and synced by [`crate::fsio::write_new`].

use std::path::{Path, PathBuf};

use super::RunFolder;
use seal_core::ids::RollId;

pub use seal_core::adapt::{BRIEF_FILE, HEADER_FILE, PROOF_FILE};

/// Why a run folder could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The output folder exists and is not an empty folder (or cannot be replaced).
    #[error("{path}: refusing to write the run folder: {reason}")]
    OutFolder { path: String, reason: String },
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    /// The finished folder does not read back as a run folder.
    #[error("{path}: {reason}")]
    ReadBack { path: String, reason: String },
}

/// The bytes of a run folder: header, brief and each roll's proof package.
#[derive(Debug, Clone, Copy)]
pub struct Files<'a> {
    pub header: &'a [u8],
    pub brief: &'a [u8],
    pub rolls: &'a [(RollId, &'a [u8])],
}

/// Writes the run folder `files` at `out` (absent or an empty folder), reading it back with
/// `limit` before it is moved into place.
pub fn write_run_folder(out: &Path, files: &Files<'_>, limit: u64) -> Result<(), WriteError> {
    let shown = out.display().to_string();
    let refuse = |reason: String| WriteError::OutFolder {
        path: shown.clone(),
        reason,
    };
    check_out(out, &refuse)?;
    let name = out
        .file_name()
        .ok_or_else(|| refuse("the path does not end in a folder name".into()))?
        .to_string_lossy()
        .to_string();
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| WriteError::Io {
        path: parent.display().to_string(),
        reason: format!("cannot create: {e}"),
    })?;
    let staging = make_staging(&parent, &name)?;
    let result = fill_and_move(files, &staging, out, limit);
    if result.is_err() && staging.exists() {
        // Our own staging folder, made above: nothing else lives there.
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

fn fill_and_move(
    files: &Files<'_>,
    staging: &Path,
    out: &Path,
    limit: u64,
) -> Result<(), WriteError> {
    write_synced(&staging.join(HEADER_FILE), files.header)?;
    write_synced(&staging.join(BRIEF_FILE), files.brief)?;
    for (roll, proof) in files.rolls {
        let roll_dir = staging.join(roll.as_str());
        std::fs::create_dir(&roll_dir).map_err(|e| WriteError::Io {
            path: roll_dir.display().to_string(),
            reason: format!("cannot create: {e}"),
        })?;
        write_synced(&roll_dir.join("proof-package.json"), proof)?;
    }
    RunFolder::read(staging, limit).map_err(|e| WriteError::ReadBack {
        path: out.display().to_string(),
        reason: format!("the folder does not read back as a run folder: {e}"),
    })?;
    // rename(2) replaces an empty folder and refuses a non-empty one (ENOTEMPTY/EEXIST), so a
    // folder filled meanwhile by someone else is never overwritten.
    std::fs::rename(staging, out).map_err(|e| WriteError::OutFolder {
        path: out.display().to_string(),
        reason: format!("cannot move the finished folder into place: {e}"),
    })?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Ok(dir) = std::fs::File::open(parent) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// Absent, or an empty folder: anything else is refused.
fn check_out(out: &Path, refuse: &dyn Fn(String) -> WriteError) -> Result<(), WriteError> {
    match std::fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(refuse(format!("cannot inspect: {e}"))),
        Ok(meta) if !meta.is_dir() => Err(refuse("it exists and is not a folder".into())),
        Ok(_) => {
            let mut entries =
                std::fs::read_dir(out).map_err(|e| refuse(format!("cannot list: {e}")))?;
            if entries.next().is_some() {
                Err(refuse(
                    "the folder exists and is not empty (nothing is overwritten)".into(),
                ))
            } else {
                Ok(())
            }
        }
    }
}

fn make_staging(parent: &Path, name: &str) -> Result<PathBuf, WriteError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    for attempt in 0..100u32 {
        let p = parent.join(format!(
            ".{name}.adapt-{}-{nanos:08x}-{attempt}",
            std::process::id()
        ));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(WriteError::Io {
                    path: p.display().to_string(),
                    reason: format!("cannot create the staging folder: {e}"),
                })
            }
        }
    }
    Err(WriteError::Io {
        path: parent.display().to_string(),
        reason: "cannot find a free staging folder name".into(),
    })
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    crate::fsio::write_new(path, bytes, 0o644).map_err(|e| WriteError::Io {
        path: path.display().to_string(),
        reason: format!("cannot write: {}", crate::runfolder::fs_reason(e)),
    })
}
