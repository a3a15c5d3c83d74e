//! Run folders (docs/DESIGN.md §8), what `seal judge` reads:
//!
//! ```text
//! <run-dir>/header.json                 playtest/3, phase JUDGING, rolls []
//! <run-dir>/brief.md                    sha256 must equal header.briefHash
//! <run-dir>/play-spec.json              optional; derivedFrom.sourceHash == header.artifactHash
//! <run-dir>/roll-<n>/proof-package.json ProofPackage/1
//! <run-dir>/blobs/<hex>.<ext>           frame bytes; each must hash to its name
//! ```
//!
//! Everything is checked before anything is stored or any judge is called: a bad folder
//! leaves the store untouched. [`write`] writes the same layout (`seal adapt verdict`).

pub mod write;

use std::path::{Path, PathBuf};

use crate::fsio::{describe, FsError, Kind};
use seal_core::canonical::Hash;
use seal_core::doc::Evidence;
use seal_core::ids::{RollId, RunId};
use seal_core::submission::{self, ProofSubmission};
use seal_core::validate::{validate_bytes, Report};

#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    #[error("{path}: {reason}")]
    Bad { path: String, reason: String },
}

/// A folder error naming `path`.
pub fn bad(path: &Path, reason: impl Into<String>) -> FolderError {
    FolderError::Bad {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// A checked run folder, made only by [`RunFolder::read`]: whatever holds one holds a folder
/// that passed every check of the module doc.
#[derive(Debug, Clone)]
pub struct RunFolder {
    dir: PathBuf,
    run: RunId,
    header: Evidence,
    header_bytes: Vec<u8>,
    brief: Vec<u8>,
    play_spec: Option<Vec<u8>>,
    rolls: Vec<ProofSubmission>,
    blobs: Vec<(Hash, PathBuf)>,
}

impl RunFolder {
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The run id the header names.
    pub fn run(&self) -> &RunId {
        &self.run
    }
    pub fn header(&self) -> &Evidence {
        &self.header
    }
    /// The header's bytes as read (intake stores their canonical form).
    pub fn header_bytes(&self) -> &[u8] {
        &self.header_bytes
    }
    pub fn brief(&self) -> &[u8] {
        &self.brief
    }
    pub fn play_spec(&self) -> Option<&[u8]> {
        self.play_spec.as_deref()
    }
    /// Each roll's proof package, parsed once, in roll order.
    pub fn rolls(&self) -> &[ProofSubmission] {
        &self.rolls
    }
    /// The frame blobs the proof packages reference: (sha256, path), each a regular file.
    pub fn blobs(&self) -> &[(Hash, PathBuf)] {
        &self.blobs
    }
}

fn read_checked(path: &Path, limit: u64) -> Result<Vec<u8>, FolderError> {
    crate::fsio::read(path, limit).map_err(|e| bad(path, fs_reason(e)))
}

/// The reason of an [`FsError`] without its path (the folder error names the path).
pub fn fs_reason(e: FsError) -> String {
    let text = e.to_string();
    let shown = match &e {
        FsError::Missing { path }
        | FsError::Symlink { path }
        | FsError::NotRegular { path, .. }
        | FsError::NotFolder { path, .. }
        | FsError::TooLarge { path, .. }
        | FsError::Exists { path }
        | FsError::Io { path, .. } => path.clone(),
    };
    text.strip_prefix(&format!("{shown}: "))
        .map(str::to_owned)
        .unwrap_or(text)
}

/// Whether an optional entry of the folder is present: absent is `false`, a regular file or
/// real folder (as `want`) is `true`, anything else (a link, a FIFO) is refused.
fn present(path: &Path, want: Kind) -> Result<bool, FolderError> {
    match crate::fsio::kind(path).map_err(|e| bad(path, fs_reason(e)))? {
        None => Ok(false),
        Some(k) if k == want => Ok(true),
        Some(k) => Err(bad(
            path,
            format!("is {}, not {}", describe(k), describe(want)),
        )),
    }
}

/// Reads a document once and validates those bytes (kind, schema, invariants).
fn valid(path: &Path, limit: u64) -> Result<Vec<u8>, FolderError> {
    let bytes = read_checked(path, limit)?;
    match validate_bytes(&bytes, limit) {
        Report::Valid(_) => Ok(bytes),
        Report::Invalid(kind, findings) => Err(bad(
            path,
            format!(
                "invalid {}: {}",
                kind.name(),
                findings
                    .iter()
                    .map(|f| f.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        )),
        Report::Unusable(reason) => Err(bad(path, reason)),
    }
}

impl RunFolder {
    /// Reads and checks a run folder (no I/O beyond the folder).
    pub fn read(dir: &Path, limit: u64) -> Result<RunFolder, FolderError> {
        crate::fsio::require_folder(dir).map_err(|e| bad(dir, fs_reason(e)))?;
        let header_path = dir.join("header.json");
        let header_bytes = valid(&header_path, limit)?;
        let header: Evidence = seal_core::json::parse_as(&header_bytes, limit)
            .map_err(|e| bad(&header_path, e.to_string()))?;
        let run = RunId::parse(&header.run_id).map_err(|e| bad(&header_path, e.to_string()))?;

        let brief_path = dir.join("brief.md");
        let brief = read_checked(&brief_path, limit)?;
        let h = Hash::of(&brief);
        if h != header.brief_hash {
            return Err(bad(
                &brief_path,
                format!(
                    "hashes to {h}, the header's briefHash is {}",
                    header.brief_hash
                ),
            ));
        }

        let spec_path = dir.join("play-spec.json");
        let play_spec = if present(&spec_path, Kind::File)? {
            let bytes = valid(&spec_path, limit)?;
            let v = seal_core::json::parse(&bytes, limit)
                .map_err(|e| bad(&spec_path, e.to_string()))?;
            if let Some(problem) = submission::play_spec_problems(&v, &header)
                .into_iter()
                .next()
            {
                return Err(bad(&spec_path, problem));
            }
            Some(bytes)
        } else {
            None
        };

        let mut rolls = Vec::new();
        for roll in RollId::ALL {
            let roll_dir = dir.join(roll.as_str());
            if !present(&roll_dir, Kind::Folder)? {
                break;
            }
            let p = roll_dir.join("proof-package.json");
            let bytes = read_checked(&p, limit)?;
            let proof =
                ProofSubmission::parse(&bytes, None, limit).map_err(|e| bad(&p, e.to_string()))?;
            if proof.roll_id() != roll {
                return Err(bad(
                    &p,
                    format!("rollId is {}, the folder is {roll}", proof.roll_id()),
                ));
            }
            rolls.push(proof);
        }
        if rolls.is_empty() {
            return Err(bad(dir, "no roll-1/proof-package.json"));
        }
        if crate::fsio::kind(&dir.join("roll-3"))
            .map_err(|e| bad(dir, fs_reason(e)))?
            .is_some()
        {
            return Err(bad(&dir.join("roll-3"), "a run has at most two rolls"));
        }

        let blobs = read_blobs(dir, &rolls)?;
        Ok(RunFolder {
            dir: dir.to_path_buf(),
            run,
            header,
            header_bytes,
            brief,
            play_spec,
            rolls,
            blobs,
        })
    }
}

/// The blobs the proof packages reference: each a regular file `blobs/<sha256>.<ext>`. Files
/// nothing references are left alone (never stored); a frame without a blob is refused.
fn read_blobs(dir: &Path, rolls: &[ProofSubmission]) -> Result<Vec<(Hash, PathBuf)>, FolderError> {
    let blob_dir = dir.join("blobs");
    let mut found: Vec<(Hash, PathBuf)> = Vec::new();
    if present(&blob_dir, Kind::Folder)? {
        for entry in crate::fsio::entries(&blob_dir).map_err(|e| bad(&blob_dir, fs_reason(e)))? {
            let stem = entry
                .name
                .as_deref()
                .and_then(|n| n.split('.').next())
                .unwrap_or("");
            let hash = Hash::parse(stem)
                .map_err(|_| bad(&entry.path, "a blob is named <sha256>.<ext>"))?;
            found.push((hash, entry.path));
        }
    }
    let mut wanted = std::collections::BTreeSet::new();
    for proof in rolls.iter().map(ProofSubmission::package) {
        for f in &proof.frames {
            if !found.iter().any(|(h, _)| h == &f.hash) {
                return Err(bad(
                    &blob_dir,
                    format!("frame {} of {} has no blob", f.hash, proof.roll_id),
                ));
            }
            wanted.insert(f.hash.clone());
        }
    }
    let mut blobs: Vec<(Hash, PathBuf)> = Vec::new();
    for (hash, path) in found {
        if !wanted.contains(&hash) || blobs.iter().any(|(h, _)| h == &hash) {
            continue;
        }
        // Each referenced blob must be a regular file (no link, FIFO or device).
        crate::fsio::open(&path).map_err(|e| bad(&path, fs_reason(e)))?;
        blobs.push((hash, path));
    }
    blobs.sort();
    Ok(blobs)
}
