//! Importing a run from an archive (`seal replay --from`): stage, verify, then copy.
//!
//! 1. **Stage**: the source run (every object under `runs/<id>/`, and the frames its proof
//!    packages name) is read into a private in-memory [`Staging`] area. A `file://`
//!    archive is walked with [`seal_fs::fsio`]: a symbolic link, FIFO, device or socket anywhere
//!    in the run (or on the way to a frame) refuses the whole run; every file is read through
//!    a bounded reader. Other archives (S3) are read with ordinary bounded store reads.
//! 2. **Verify**: [`crate::verify::prove`] runs on the staging area against the trusted keys.
//!    Only a decided run that verifies goes on.
//! 3. **Copy**: exactly the objects the verified evidence binds ([`VerifiedRun::bound`]) are
//!    copied, after checking that none of them conflicts with what the destination holds;
//!    then the destination's log gets the run's entry, computed from the staged (verified)
//!    evidence and seal; the seal is copied last, as the commit point. Nothing else is ever
//!    written.
//!
//! Log before seal, as the postguard does (docs/DESIGN.md §13): a seal stored before its entry
//! is what the log guard (G2) refuses, and another process (a concurrent `seal replay --all
//! --from`, a `seal serve` starting) reads the store at any moment. An import killed, or merely
//! seen, between its entry and its seal leaves a logged run without its seal (sealPending),
//! which the rerun completes with the same bytes.
//!
//! A run with an extra object is refused whole, never imported in part (docs/DECISIONS.md,
//! "Import = stage, verify, copy the bound set").

use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::verify::{self, VerifiedRun};
use seal_core::doc::{AcceptanceMode, Evidence, ProofPackage, SlotMeta};
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::{RollId, RunId};
use seal_core::sealing::{PublicKey, SigningKey};
use seal_fs::fsio::{self, FsError, Kind};
use seal_log::{Log, LogError};
use seal_store::{Key, Staging, Store, StoreError, StoreUrl};

/// Why a run was not imported. The destination is unchanged in every case.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("archive {url}: {reason}")]
    Archive { url: String, reason: String },
    #[error("run {run}: refused: {reason}")]
    Refused { run: RunId, reason: String },
    #[error(
        "run {run}: not decided in the archive (no evidence.json): only sealed runs are imported"
    )]
    NotDecided { run: RunId },
    #[error("run {run}: does not verify in the archive, nothing imported: {problems}")]
    NotVerified { run: RunId, problems: String },
    #[error(
        "run {run}: {key} in the destination holds other bytes than the archive; nothing imported"
    )]
    Conflict { run: RunId, key: Key },
    #[error("run {run}: log: {source}")]
    Log { run: RunId, source: LogError },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl HasFault for ImportError {
    fn fault(&self) -> Fault {
        match self {
            ImportError::Store(e) => e.fault(),
            ImportError::Log { source, .. } => source.fault(),
            _ => Fault::Caller,
        }
    }
}

/// The largest objects staged: documents and frames.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub document: u64,
    pub blob: u64,
}

/// Where runs are imported from.
#[derive(Debug)]
pub enum Archive {
    /// A `file://` store folder, read with `fsio` (no links, no special files).
    Folder { url: String, root: PathBuf },
    /// Any other store (S3), read with bounded store reads.
    Store(Store),
}

/// What an import did.
#[derive(Debug, Clone)]
pub enum Imported {
    /// The run verified; its bound objects are in the destination. `verified` is the proof
    /// of exactly the bytes copied (a replay of the run takes it instead of verifying the copy
    /// again: [`crate::replay::SourceProof::Imported`]).
    Copied {
        objects: usize,
        verified: Box<VerifiedRun>,
    },
    /// The run is a replay itself (`--all` skips these).
    IsReplay,
}

impl Archive {
    /// Opens an archive without creating anything: a `file://` folder must exist.
    pub async fn open(url: &str) -> Result<Archive, ImportError> {
        let bad = |reason: String| ImportError::Archive {
            url: url.to_string(),
            reason,
        };
        match StoreUrl::parse(url)? {
            StoreUrl::File(root, _) => {
                fsio::require_folder(&root).map_err(|e| bad(e.to_string()))?;
                Ok(Archive::Folder {
                    url: url.to_string(),
                    root,
                })
            }
            StoreUrl::Memory => Err(bad("a memory:// archive is always empty".into())),
            StoreUrl::S3 { .. } => Ok(Archive::Store(Store::open_existing(url).await?)),
        }
    }

    /// The run ids in the archive; entries under `runs/` that are not real folders with valid
    /// run ids are returned as problems.
    pub async fn runs(&self) -> Result<(Vec<RunId>, Vec<String>), ImportError> {
        match self {
            Archive::Store(s) => Ok((s.runs().await?.runs, Vec::new())),
            Archive::Folder { url, root } => {
                let runs_dir = root.join("runs");
                let entries = fsio::entries(&runs_dir).map_err(|e| ImportError::Archive {
                    url: url.clone(),
                    reason: e.to_string(),
                })?;
                let mut ids = Vec::new();
                let mut problems = Vec::new();
                for e in entries {
                    match (e.kind, e.name.as_deref().map(RunId::parse)) {
                        (Kind::Folder, Some(Ok(id))) => ids.push(id),
                        (kind, _) => problems.push(format!(
                            "{}: not a run folder ({}, or not a valid run id)",
                            e.path.display(),
                            fsio::describe(kind)
                        )),
                    }
                }
                Ok((ids, problems))
            }
        }
    }

    /// Stages run `run` (its folder and the frames its proof packages name) in a private
    /// in-memory store.
    async fn stage(&self, run: &RunId, limits: Limits) -> Result<Staging, ImportError> {
        let staging = Staging::new(limits.document);
        match self {
            Archive::Folder { root, .. } => {
                stage_folder(&staging, root, run, limits).await?;
            }
            Archive::Store(src) => {
                for key in src.list(&Key::run_dir(run)).await?.keys {
                    staging.put(&key, src.get(&key).await?).await?;
                }
            }
        }
        for key in frame_keys(staging.store(), run).await {
            match self {
                Archive::Folder { root, .. } => {
                    if let Some(bytes) = read_frame(root, run, &key, limits.blob)? {
                        staging.put(&key, bytes).await?;
                    }
                }
                // A missing frame is found (and named) by the verification.
                Archive::Store(src) => {
                    staging.copy_from(src, &key, limits.blob).await?;
                }
            }
        }
        // The judge policies the attempts name (content-addressed, outside the run folder):
        // the verification re-reads each against its digest, and names one that is missing.
        for key in policy_keys(staging.store(), run).await? {
            match self {
                Archive::Folder { root, .. } => {
                    if let Some(bytes) = read_frame(root, run, &key, limits.document)? {
                        staging.put(&key, bytes).await?;
                    }
                }
                Archive::Store(src) => {
                    staging.copy_from(src, &key, limits.document).await?;
                }
            }
        }
        Ok(staging)
    }
}

fn refused(run: &RunId, e: impl std::fmt::Display) -> ImportError {
    ImportError::Refused {
        run: run.clone(),
        reason: e.to_string(),
    }
}

/// Reads every regular file under `root/runs/<run>/` into `staging`, refusing links and
/// special files anywhere in it.
async fn stage_folder(
    staging: &Staging,
    root: &Path,
    run: &RunId,
    limits: Limits,
) -> Result<(), ImportError> {
    fsio::require_folder(&root.join("runs")).map_err(|e| refused(run, e))?;
    let mut pending = vec![(root.join("runs").join(run.as_str()), Key::run_dir(run))];
    while let Some((dir, prefix)) = pending.pop() {
        for e in fsio::entries(&dir).map_err(|e| refused(run, e))? {
            let Some(name) = e.name.as_deref() else {
                return Err(refused(
                    run,
                    format!("{}: a name that is not UTF-8", e.path.display()),
                ));
            };
            let key = format!("{prefix}/{name}");
            match e.kind {
                Kind::Folder => pending.push((e.path.clone(), key)),
                // A durable write's staging file `<key>#<n>` left by a killed writer: never an
                // object (`#` is in no key), skipped as every store listing skips it, so
                // `seal verify` and import see the same run (docs/DESIGN.md §2).
                Kind::File if is_staging_name(name) => {}
                Kind::File => {
                    let key = Key::parse(&key)
                        .map_err(|err| refused(run, format!("{}: {err}", e.path.display())))?;
                    let bytes =
                        fsio::read(&e.path, limits.document).map_err(|e| refused(run, e))?;
                    staging.put(&key, Bytes::from(bytes)).await?;
                }
                other => {
                    return Err(refused(
                        run,
                        format!(
                            "{}: {} in the run folder",
                            e.path.display(),
                            fsio::describe(other)
                        ),
                    ))
                }
            }
        }
    }
    Ok(())
}

/// Whether a file name is a durable write's staging file (`<key>#<n>`, `store::durable`): the
/// rule the file store's listings apply (`#` never appears in a key).
fn is_staging_name(name: &str) -> bool {
    name.contains('#')
}

/// The frame keys the staged proof packages name (sorted, unique).
async fn frame_keys(staging: &Store, run: &RunId) -> Vec<Key> {
    let mut keys = std::collections::BTreeSet::new();
    for roll in RollId::ALL {
        let key = Key::roll_file(run, roll, "proof-package.json");
        if let Ok(Some((proof, _))) = staging.get_json::<ProofPackage>(&key).await {
            keys.extend(proof.frames.iter().map(|f| Key::cas(&f.hash)));
        }
    }
    keys.into_iter().collect()
}

/// The `policies/<sha256>.json` keys the staged attempts' metas name (sorted, unique). A meta
/// that does not read names none here; the verification names it.
async fn policy_keys(staging: &Store, run: &RunId) -> Result<Vec<Key>, ImportError> {
    let mut keys = std::collections::BTreeSet::new();
    for key in staging.list(&Key::run_dir(run)).await?.keys {
        if !key.as_str().ends_with("/meta.json") {
            continue;
        }
        if let Ok(Some((meta, _))) = staging.get_json::<SlotMeta>(&key).await {
            keys.extend(meta.policy.map(|p| Key::policy(&p.sha256)));
        }
    }
    Ok(keys.into_iter().collect())
}

/// Reads a frame (or another content-addressed object) from a folder archive: every folder on the way must be real, the frame a
/// regular file within the blob limit. `None` when absent (verification names it).
fn read_frame(
    root: &Path,
    run: &RunId,
    key: &Key,
    limit: u64,
) -> Result<Option<Bytes>, ImportError> {
    let mut dir = root.to_path_buf();
    let segments: Vec<&str> = key.as_str().split('/').collect();
    for seg in &segments[..segments.len().saturating_sub(1)] {
        dir.push(seg);
        match fsio::kind(&dir).map_err(|e| refused(run, e))? {
            None => return Ok(None),
            Some(Kind::Folder) => {}
            Some(k) => {
                return Err(refused(
                    run,
                    format!(
                        "{}: {} on the way to a frame",
                        dir.display(),
                        fsio::describe(k)
                    ),
                ))
            }
        }
    }
    let path = dir.join(segments.last().copied().unwrap_or_default());
    match fsio::read(&path, limit) {
        Ok(b) => Ok(Some(Bytes::from(b))),
        Err(FsError::Missing { .. }) => Ok(None),
        Err(e) => Err(refused(run, e)),
    }
}

/// Imports run `run` from `archive` into `to`: stage, verify against `trusted`, then copy
/// exactly the bound objects, the seal last. On any error before the copy `to` is unchanged.
/// Nothing is logged: for a destination without a signing key (see [`import_logged`]).
pub async fn import_run(
    archive: &Archive,
    to: &Store,
    run: &RunId,
    trusted: &[PublicKey],
    limits: Limits,
    skip_replays: bool,
) -> Result<Imported, ImportError> {
    import_inner(archive, to, run, trusted, limits, skip_replays, None).await
}

/// As [`import_run`], and the run's entry is appended to `log` (its checkpoint signed by
/// `key`) before the seal is copied: see the module doc.
#[allow(clippy::too_many_arguments)]
pub async fn import_logged(
    archive: &Archive,
    to: &Store,
    run: &RunId,
    trusted: &[PublicKey],
    limits: Limits,
    skip_replays: bool,
    log: &Log,
    key: &SigningKey,
) -> Result<Imported, ImportError> {
    let logger = Some((log, key));
    import_inner(archive, to, run, trusted, limits, skip_replays, logger).await
}

async fn import_inner(
    archive: &Archive,
    to: &Store,
    run: &RunId,
    trusted: &[PublicKey],
    limits: Limits,
    skip_replays: bool,
    logger: Option<(&Log, &SigningKey)>,
) -> Result<Imported, ImportError> {
    let staging = archive.stage(run, limits).await?;
    let Some(ev_bytes) = staging.store().get_opt(&Key::evidence(run)).await? else {
        return Err(ImportError::NotDecided { run: run.clone() });
    };
    if skip_replays {
        if let Ok(ev) = seal_core::json::parse_as::<Evidence>(&ev_bytes, limits.document) {
            if ev.acceptance_mode == AcceptanceMode::HistoricalReplay {
                return Ok(Imported::IsReplay);
            }
        }
    }
    let verified = match verify::prove(staging.store(), run, trusted).await? {
        Ok(v) => v,
        Err(report) => {
            return Err(ImportError::NotVerified {
                run: run.clone(),
                problems: report.summary(3),
            });
        }
    };
    let copy = Copy {
        staging: &staging,
        to,
        run,
        trusted,
    };
    copy.bound(&verified, logger).await
}

/// One verified run on its way from the staging area to the destination.
struct Copy<'a> {
    staging: &'a Staging,
    to: &'a Store,
    run: &'a RunId,
    trusted: &'a [PublicKey],
}

impl Copy<'_> {
    /// Copies the bound objects, after checking that none conflicts with the destination: the
    /// evidence after every object it binds, then the log entry, then the seal (the commit).
    async fn bound(
        &self,
        verified: &VerifiedRun,
        logger: Option<(&Log, &SigningKey)>,
    ) -> Result<Imported, ImportError> {
        let (staging, to, run) = (self.staging, self.to, self.run);
        let policies = verified.policy_keys();
        let mut keys: Vec<&Key> = verified.bound().iter().chain(&policies).collect();
        for key in &keys {
            let (staged, _) = staging.store().hash(key).await?;
            if to.exists(key).await? && to.hash(key).await?.0 != staged {
                return Err(ImportError::Conflict {
                    run: run.clone(),
                    key: (*key).clone(),
                });
            }
        }
        let (ev, seal) = (Key::evidence(run), Key::seal(run));
        keys.sort_by_key(|k| (**k == ev || **k == seal, **k == seal));
        for key in keys.iter().filter(|k| ***k != seal) {
            to.import_from(staging, key).await?;
        }
        if let Some((log, key)) = logger {
            log.append_imported(run, staging.store(), key, self.trusted)
                .await
                .map_err(|source| ImportError::Log {
                    run: run.clone(),
                    source,
                })?;
        }
        if keys.iter().any(|k| **k == seal) {
            to.import_from(staging, &seal).await?;
        }
        Ok(Imported::Copied {
            objects: keys.len(),
            verified: Box::new(verified.clone()),
        })
    }
}
