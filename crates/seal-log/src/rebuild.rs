//! `seal log rebuild`: the operator's answer to a log the guard refuses (docs/DESIGN.md §13).
//!
//! It keeps the longest prefix of the stored log that is readable and agrees with every
//! checkpoint signed within it, moves whatever of the previous log is in the way of appending
//! after that prefix (later or orphaned entries, checkpoints of larger sizes, unverifiable
//! ones, tiles of leaves it does not keep or that are not the kept leaves' hashes) under `log/superseded/<index>-<time>/`, appends a signed [`RebuildEntry`] saying what
//! it found, kept and moved, then the entry of every sealed run the kept prefix lacks, and
//! publishes a checkpoint. Nothing is deleted without a copy. The review leaves of the stored
//! reviews the kept prefix lacks follow the runs (run id, then review order): each review is
//! re-checked first (signed by a trusted reviewer key, about its run's verified evidence and
//! seal, chained), and a review that does not check, or is logged with other bytes, refuses
//! the rebuild like a seal that cannot be relogged.
//!
//! It relogs only seals that verify under a trusted key over their run's stored evidence, and
//! refuses (writing nothing) while a sealed run cannot be relogged or is logged with another seal
//! (docs/DECISIONS.md, "`seal log rebuild` relogs only seals that verify").
//! Run it with every seal process of the store stopped: an append racing the rebuild entry
//! makes it stop (the rebuild entry is written create-only).

use bytes::Bytes;

use crate::append::{EvidenceWas, NewLeaf};
use crate::cache::Cache;
use crate::error::LogError;
use crate::finding::Finding;
use crate::guard::{self, StoredSeal};
use crate::leaf::SealLeaf;
use crate::log::Log;
use crate::storage::LogStorage;
use crate::stored::trusted_entry;
use crate::view::{LogView, WholeLog};
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
use seal_core::sealing::{PublicKey, SigningKey};
use seal_core::tlog::{self, LogEntry, LogTrust, RebuildEntry, MAX_REBUILD_PROBLEMS};
use seal_core::vocab::AuditCheck;
use seal_store::{CopiedAside, Key, StoreError};

/// Where the previous log's objects go.
const SUPERSEDED: &str = "log/superseded";

/// Why a rebuild did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("{}", refused_text(.problems))]
    Refused { problems: Vec<Finding> },
    #[error("{key}: another process appended to the log during the rebuild; stop every seal process of this store and run `seal log rebuild` again")]
    Raced { key: Key },
    /// The rebuilt log would not hold what the previous one did, and the operator did not
    /// name it: a rebuild never drops a decision silently.
    #[error("{}", unnamed_text(.unnamed))]
    Unnamed { unnamed: Vec<Lost> },
    /// `--drop` named something the rebuild would not lose.
    #[error("nothing rebuilt: --drop {0} names nothing this rebuild would lose")]
    NotLost(Dropped),
}

/// What `seal log rebuild --drop` names: a run (its seal leaf and its review leaves), or a
/// leaf by index when its entry cannot be read to say whose it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dropped {
    Run(RunId),
    Leaf(u64),
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dropped::Run(r) => write!(f, "{r}"),
            Dropped::Leaf(i) => write!(f, "leaf:{i}"),
        }
    }
}

/// Why a `--drop` value names nothing.
#[derive(Debug, thiserror::Error)]
pub enum DroppedError {
    #[error("{0:?}: leaf:<index>, the index a decimal number")]
    Index(String),
    #[error("{value:?}: neither a run id ({why}) nor leaf:<index>")]
    Run { value: String, why: String },
}

impl std::str::FromStr for Dropped {
    type Err = DroppedError;
    fn from_str(s: &str) -> Result<Dropped, DroppedError> {
        match s.strip_prefix("leaf:") {
            Some(n) => n
                .parse()
                .map(Dropped::Leaf)
                .map_err(|_| DroppedError::Index(s.to_string())),
            None => RunId::parse(s)
                .map(Dropped::Run)
                .map_err(|e| DroppedError::Run {
                    value: s.to_string(),
                    why: e.to_string(),
                }),
        }
    }
}

/// A leaf of the previous log the rebuilt one would not hold, and what the log says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    pub name: Dropped,
    pub what: String,
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.what)
    }
}

fn unnamed_text(unnamed: &[Lost]) -> String {
    let lines: Vec<String> = unnamed.iter().map(|l| format!("\n    {l}")).collect();
    format!(
        "nothing rebuilt: the rebuilt log would lose {} decision(s) the log holds, named by \
         nobody. Restore each run if you can; else name each with --drop (a run id, or \
         leaf:<index>): the rebuild entry records it for every later auditor:{}",
        unnamed.len(),
        lines.concat()
    )
}

impl From<StoreError> for RebuildError {
    fn from(e: StoreError) -> RebuildError {
        RebuildError::Log(e.into())
    }
}

impl HasFault for RebuildError {
    fn fault(&self) -> Fault {
        match self {
            RebuildError::Log(e) => e.fault(),
            // The operator has a run to restore or remove first.
            RebuildError::Refused { .. }
            | RebuildError::Unnamed { .. }
            | RebuildError::NotLost(_) => Fault::Caller,
            RebuildError::Raced { .. } => Fault::Infrastructure,
        }
    }
}

fn refused_text(problems: &[Finding]) -> String {
    let lines: Vec<String> = problems.iter().map(|p| format!("\n    {p}")).collect();
    format!(
        "nothing rebuilt: {} sealed run(s) cannot be relogged (restore the logged run, or move \
         the run out of the store, or trust its signer with --trust; then run it again):{}",
        problems.len(),
        lines.concat()
    )
}

/// A stored review as a rebuild sees it: its key, and its log entry when it checks (signed by
/// a trusted reviewer key, about its run's verified evidence and seal, chained), else the
/// problem that keeps it from being relogged. The caller checks it (the engine's reviews), so that
/// the log does not depend on the verifier.
#[derive(Debug, Clone)]
pub struct StoredReview {
    pub key: Key,
    pub entry: Result<tlog::ReviewEntry, Finding>,
}

/// What a rebuild did.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    /// The rebuild entry's leaf index (= the leaves kept).
    pub index: u64,
    pub entry: RebuildEntry,
    /// The runs appended after it, in log order.
    pub relogged: Vec<RunId>,
    /// The reviews appended after them (`runs/<id>/reviews/<n>.dsse.json`), in log order.
    pub reviews_relogged: Vec<String>,
    /// The size of the checkpoint published.
    pub tree_size: u64,
}

impl<S: LogStorage> Log<S> {
    /// Rebuilds the log if the guard refuses it (see the module doc); `Ok(None)` when it does
    /// not (nothing to rebuild). `trusted`: keys, besides `key`, whose seals and checkpoints
    /// count; `reviews`: every stored review, checked by the caller
    /// (the engine's `review::stored_for_rebuild`); `now`: the rebuild's time (RFC 3339).
    pub async fn rebuild(
        &self,
        key: &SigningKey,
        trusted: &[PublicKey],
        reviews: &[StoredReview],
        now: &str,
        drop: &[Dropped],
    ) -> Result<Option<Rebuilt>, RebuildError> {
        let trust = self.trust_of(key, trusted);
        let seals = guard::stored_seals(&self.store).await?;
        let whole = WholeLog::load(&self.store, &trust).await?;
        let view = &whole.view;
        let found = guard::refusals(view, &seals);
        if found.is_empty() {
            return Ok(None);
        }
        let keep = keep_prefix(&whole, &trust);
        let mut signers = vec![key.public()];
        signers.extend(trusted.iter().cloned());
        let relog = self.runs_to_relog(view, keep, &seals, &signers).await?;
        let reviews = Self::reviews_to_relog(view, keep, reviews)?;
        let relogging = Relogging {
            runs: &relog,
            reviews: &reviews,
        };
        let (lost, registered) = self.lost(&whole, keep, relogging, &trust, key).await?;
        let dropped = named_drops(&lost, drop)?;
        let mut cache = self.cache.lock().await;
        let (superseded, moved) = self.move_aside(view, keep, now).await?;
        let mut entry = RebuildEntry::new(&self.origin, now, &key.key_id);
        entry.kept_entries = keep;
        entry.previous_checkpoint_size = view.latest.as_ref().map(|c| c.size);
        entry.previous_checkpoint_root = view.latest.as_ref().map(|c| tlog::hex(&c.root));
        entry.superseded = (moved > 0).then_some(superseded);
        entry.moved_objects = moved;
        entry.problems = found
            .iter()
            .take(MAX_REBUILD_PROBLEMS)
            .map(Finding::to_string)
            .collect();
        entry.problem_count = found.len() as u64;
        entry.runs_appended = relog.len() as u64;
        entry.dropped_count = dropped.len() as u64;
        entry.dropped = dropped.into_iter().take(MAX_REBUILD_PROBLEMS).collect();
        let entry = entry.sign(&|m| key.sign(m)).map_err(LogError::from)?;
        let mut fresh = self
            .write_rebuild_entry(&whole, keep, &entry, key, trust)
            .await?;
        // The judge policies registered past the kept prefix come first, as they were before
        // the runs judged under them (their entries as the log had them, time included:
        // `seal verify` compares that time with the runs' first judge calls). They, and the
        // reports, are the log's own leaves past the prefix, read before and after a gap
        // alike ([`Log::lost`]): a rebuild drops neither.
        for p in registered.iter().filter_map(|(_, l)| match l {
            tlog::Leaf::Policy(p) => Some(p),
            _ => None,
        }) {
            self.place(&mut fresh, NewLeaf::Policy(p), key).await?;
        }
        for (run, entry) in &relog {
            let leaf = NewLeaf::Seal {
                run,
                entry,
                evidence: EvidenceWas::Stored,
            };
            self.place(&mut fresh, leaf, key).await?.at(run)?;
        }
        let mut reviews_relogged = Vec::with_capacity(reviews.len());
        for (k, e) in &reviews {
            self.place(&mut fresh, NewLeaf::Review(e), key).await?;
            reviews_relogged.push(k.to_string());
        }
        // The reliability reports published past the kept prefix, as the log had them: a
        // rebuild must not unpublish a report whose figures displeased.
        for r in registered.iter().filter_map(|(_, l)| match l {
            tlog::Leaf::Report(r) => Some(r),
            _ => None,
        }) {
            self.place(&mut fresh, NewLeaf::Report(r), key).await?;
        }
        let size = fresh.tree.size();
        *cache = fresh;
        std::mem::drop(cache);
        let tree_size = self.publish_covering(size, key).await?;
        Ok(Some(Rebuilt {
            index: keep,
            entry,
            relogged: relog.into_iter().map(|(r, _)| r).collect(),
            reviews_relogged,
            tree_size,
        }))
    }

    /// The entries of the sealed runs the kept prefix lacks, each verified; refuses, naming
    /// them, when any cannot be relogged.
    async fn runs_to_relog(
        &self,
        view: &LogView,
        keep: u64,
        seals: &[StoredSeal],
        signers: &[PublicKey],
    ) -> Result<Vec<(RunId, LogEntry)>, RebuildError> {
        let mut relog = Vec::new();
        let mut refused = Vec::new();
        for (run, hash) in seals {
            let hash = match hash {
                Ok(h) => h,
                Err(detail) => {
                    refused.push(Finding::new(
                        AuditCheck::RunUnlogged,
                        Key::seal(run).as_str(),
                        detail.to_string(),
                    ));
                    continue;
                }
            };
            let kept: Vec<&SealLeaf> = view
                .seal_leaves(run.as_str())
                .iter()
                .filter(|l| l.index < keep)
                .collect();
            if kept.iter().any(|l| l.names_seal(hash)) {
                continue;
            }
            if !kept.is_empty() {
                refused.push(guard::unlogged_seal(run, true));
                continue;
            }
            match trusted_entry(&self.store, run, signers).await {
                Ok(e) if e.seal_sha256 == hash.as_ref() => relog.push((run.clone(), e)),
                Ok(_) => refused.push(Finding::new(
                    AuditCheck::RunUnlogged,
                    Key::seal(run).as_str(),
                    "the seal changed during the rebuild",
                )),
                Err(LogError::NotSealed { detail, .. }) => refused.push(Finding::new(
                    AuditCheck::RunUnlogged,
                    format!("runs/{run}"),
                    format!("not a seal by a trusted key over this run's evidence: {detail}"),
                )),
                Err(e) => return Err(e.into()),
            }
        }
        if refused.is_empty() {
            Ok(relog)
        } else {
            Err(RebuildError::Refused { problems: refused })
        }
    }

    /// The review entries of the stored reviews (checked by the caller) the kept prefix lacks;
    /// refuses, naming them, when any cannot be relogged (it did not check, or a kept leaf names
    /// other bytes at its index).
    fn reviews_to_relog(
        view: &LogView,
        keep: u64,
        reviews: &[StoredReview],
    ) -> Result<Vec<(Key, tlog::ReviewEntry)>, RebuildError> {
        let mut relog = Vec::new();
        let mut refused = Vec::new();
        for r in reviews {
            let entry = match &r.entry {
                Ok(e) => e,
                Err(p) => {
                    refused.push(p.clone());
                    continue;
                }
            };
            let kept: Vec<&tlog::ReviewEntry> = view
                .reviews
                .iter()
                .filter(|(leaf, l)| {
                    *leaf < keep && l.run_id == entry.run_id && l.review_index == entry.review_index
                })
                .map(|(_, l)| l)
                .collect();
            if kept.iter().any(|l| l.review_sha256 == entry.review_sha256) {
                continue;
            }
            if !kept.is_empty() {
                refused.push(Finding::new(
                    AuditCheck::ReviewLog,
                    r.key.as_str(),
                    format!(
                        "review {} is logged with other bytes than the stored ones (sha256 {}): a replaced review",
                        entry.review_index, entry.review_sha256
                    ),
                ));
                continue;
            }
            relog.push((r.key.clone(), entry.clone()));
        }
        if refused.is_empty() {
            Ok(relog)
        } else {
            Err(RebuildError::Refused { problems: refused })
        }
    }

    /// Copies every object of the previous log in the way of appending after `keep` leaves
    /// under the superseded folder, then removes it; returns the folder and how many moved.
    async fn move_aside(
        &self,
        view: &LogView,
        keep: u64,
        now: &str,
    ) -> Result<(String, u64), RebuildError> {
        let stamp: String = now.chars().filter(char::is_ascii_alphanumeric).collect();
        let folder = format!("{SUPERSEDED}/{keep:020}-{stamp}");
        let mut moving: Vec<Key> = view
            .numbered()
            .filter(|(n, _)| *n >= keep)
            .map(|(_, k)| k)
            .chain(view.strays.iter().cloned())
            .chain(view.unverified.iter().map(|(_, k)| k.clone()))
            .chain(
                view.signed
                    .keys()
                    .filter(|&&size| size > keep)
                    .map(|&size| Key::log_checkpoint(size)),
            )
            .collect();
        // The tiles of leaves it does not keep (the relogged entries are tiled again), and any
        // that are not the kept leaves' hashes.
        moving.extend(crate::tiles::in_the_way(&self.store, &view.tree, keep).await?);
        moving.sort();
        moving.dedup();
        let mut copied = Vec::with_capacity(moving.len());
        for k in &moving {
            let rest = k
                .as_str()
                .strip_prefix("log/")
                .unwrap_or_else(|| k.as_str());
            let to = Key::parse(&format!("{folder}/{rest}")).map_err(|e| LogError::Corrupt {
                key: k.to_string(),
                detail: format!("cannot name its superseded copy: {e}"),
            })?;
            copied.push(self.store.copy_aside(k, &to).await?);
        }
        // Removed only once everything is copied: a crash leaves the old log whole. The
        // checkpoints go last: a crash part-way leaves every checkpoint that covered a removed
        // entry, so the rebuild run again sees the same losses and asks for the same drops.
        let (checkpoints, rest): (Vec<&CopiedAside>, Vec<&CopiedAside>) =
            copied.iter().partition(|c| {
                c.from()
                    .as_str()
                    .starts_with(seal_core::key::LOG_CHECKPOINTS)
            });
        for c in rest.into_iter().chain(checkpoints) {
            self.store.remove_copied(c).await?;
        }
        Ok((folder, moving.len() as u64))
    }

    /// The kept prefix and the rebuild entry after it, as this process's cache; the entry is
    /// written create-only, so an appender racing the rebuild stops it.
    async fn write_rebuild_entry(
        &self,
        whole: &WholeLog,
        keep: u64,
        entry: &RebuildEntry,
        key: &SigningKey,
        trust: LogTrust,
    ) -> Result<Cache, RebuildError> {
        let mut fresh = Cache {
            trust,
            ..Cache::default()
        };
        // The kept prefix is what the view authenticated (it ends before the first leaf that
        // did not: `keep_prefix`).
        for (i, bytes) in whole.entries.iter().take(keep as usize).enumerate() {
            fresh.push_trusted(bytes, &Key::log_entry(i as u64))?;
        }
        let k = Key::log_entry(keep);
        let unsigned = entry.to_bytes().map_err(|e| LogError::Corrupt {
            key: k.to_string(),
            detail: e.to_string(),
        })?;
        let at = tlog::Place::next_of(&fresh.tree).map_err(LogError::from)?;
        let signed = tlog::sign_leaf(&unsigned, &self.origin, &at, &|m| key.sign(m))
            .map_err(LogError::from)?;
        let bytes = Bytes::from(signed);
        match self.store.create(&k, bytes.clone()).await {
            Ok(_) => fresh.push_trusted(&bytes, &k)?,
            Err(StoreError::Conflict { .. }) => return Err(RebuildError::Raced { key: k }),
            Err(e) => return Err(e.into()),
        }
        fresh.admitted = true;
        Ok(fresh)
    }
}

/// What a rebuild appends again after its entry: the sealed runs and the stored reviews the
/// kept prefix lacks.
struct Relogging<'a> {
    runs: &'a [(RunId, LogEntry)],
    reviews: &'a [(Key, tlog::ReviewEntry)],
}

/// Every lost leaf named by `drop`, and nothing named that is not lost: the lines the
/// rebuild entry records.
fn named_drops(lost: &[Lost], drop: &[Dropped]) -> Result<Vec<String>, RebuildError> {
    if let Some(extra) = drop.iter().find(|d| !lost.iter().any(|l| l.name == **d)) {
        return Err(RebuildError::NotLost(extra.clone()));
    }
    let unnamed: Vec<Lost> = lost
        .iter()
        .filter(|l| !drop.contains(&l.name))
        .cloned()
        .collect();
    if !unnamed.is_empty() {
        return Err(RebuildError::Unnamed { unnamed });
    }
    Ok(lost.iter().map(Lost::to_string).collect())
}

impl<S: LogStorage> Log<S> {
    /// What the rebuilt log would not hold of the previous one: every seal or review leaf
    /// past the kept prefix that this log wrote (authenticated) and the rebuild does not
    /// append again, by run; every leaf a trusted checkpoint covers whose entry is missing
    /// or does not read, by index. Planted leaves are not lost (they were never the log's).
    /// Also the judge-policy and reliability-report leaves past the prefix that this log wrote,
    /// before a gap or after it, in index order: the rebuild appends them again.
    async fn lost(
        &self,
        whole: &WholeLog,
        keep: u64,
        Relogging {
            runs: relog,
            reviews,
        }: Relogging<'_>,
        trust: &LogTrust,
        key: &SigningKey,
    ) -> Result<(Vec<Lost>, Vec<(u64, tlog::Leaf)>), RebuildError> {
        let view = &whole.view;
        let covered = view.latest.as_ref().map_or(0, |c| c.size);
        // The signed tree's leaf hashes, from the tiles when they hash up to the latest
        // checkpoint's root: they tell whose a missing entry was when it is one the rebuild
        // appends again (its bytes are derived from the stored run, with or without `auth`).
        let unsigned: Vec<Vec<u8>> = relog
            .iter()
            .filter_map(|(_, e)| e.to_bytes().ok())
            .chain(reviews.iter().filter_map(|(_, r)| r.to_bytes().ok()))
            .collect();
        let signed_tree = match &view.latest {
            Some(c) => match crate::history::tree_from_tiles(&self.store, c.size, &c.root).await? {
                Some(tree) => Some(tree),
                None => self.tree_from_entries(whole, c, &unsigned, key).await?,
            },
            None => None,
        };
        let relogged_at = |index: u64| -> bool {
            let Some(tree) = signed_tree.as_ref() else {
                return false;
            };
            let (Some(hash), Ok(at)) = (tree.leaf(index), tlog::Place::at(tree, index)) else {
                return false;
            };
            unsigned.iter().any(|u| {
                tlog::leaf_hash(u) == hash
                    || tlog::sign_leaf(u, &self.origin, &at, &|m| key.sign(m))
                        .is_ok_and(|signed| tlog::leaf_hash(&signed) == hash)
            })
        };
        // Whether the bytes stored at `index` are the log's leaf there: under a checkpoint that
        // agrees with the stored entries, the signed tiles' leaf, or (past the gap-free part's
        // latest agreeing checkpoint) a leaf whose own `auth` verifies after the leaves before
        // it. Anything else proves nothing about whose decision it was, whatever it says.
        let agreed = agreed_size(view);
        let ours = |index: u64, bytes: &[u8]| -> bool {
            let contiguous = index < view.size();
            (contiguous && index < agreed)
                || signed_tree.as_ref().and_then(|t| t.leaf(index)) == Some(tlog::leaf_hash(bytes))
                || (contiguous
                    && tlog::Place::at(&view.tree, index)
                        .and_then(|at| trust.authenticate(&at, bytes))
                        .is_ok())
        };
        let leaf_if_ours = |index: u64, bytes: &[u8]| {
            ours(index, bytes)
                .then(|| tlog::Leaf::from_bytes(bytes).ok())
                .flatten()
        };
        let relogged = |run: &str| relog.iter().any(|(r, _)| r.as_str() == run);
        let review_relogged = |r: &tlog::ReviewEntry| {
            reviews.iter().any(|(_, e)| {
                e.run_id == r.run_id
                    && e.review_index == r.review_index
                    && e.review_sha256 == r.review_sha256
            })
        };
        let mut lost = Vec::new();
        // The policies and reports that are this log's leaves past the prefix: relogged.
        let mut registered: Vec<(u64, tlog::Leaf)> = Vec::new();
        let stored: std::collections::BTreeSet<u64> = view.numbered().map(|(i, _)| i).collect();
        let mut note =
            |index: u64, leaf: Option<tlog::Leaf>, missing: bool| {
                let by_run = |run: &str, what: String| {
                    RunId::parse(run).ok().map(|r| Lost {
                        name: Dropped::Run(r),
                        what,
                    })
                };
                let named =
                    match &leaf {
                        Some(tlog::Leaf::Seal(e)) if !relogged(&e.run_id) => by_run(
                            &e.run_id,
                            format!(
                                "leaf {index}: outcome {}, decided {}, seal sha256 {}",
                                e.outcome, e.decided_at, e.seal_sha256
                            ),
                        ),
                        // A stored review is relogged with its run; a lost one is its run's loss.
                        Some(tlog::Leaf::Review(r)) if !review_relogged(r) => by_run(
                            &r.run_id,
                            format!(
                                "leaf {index}: review {} (sha256 {})",
                                r.review_index, r.review_sha256
                            ),
                        ),
                        Some(l @ (tlog::Leaf::Policy(_) | tlog::Leaf::Report(_))) => {
                            registered.push((index, l.clone()));
                            None
                        }
                        Some(_) => None,
                        None if index < covered && !relogged_at(index) => Some(Lost {
                            name: Dropped::Leaf(index),
                            what: format!(
                        "the signed checkpoint of size {covered} covers it, and its entry {}: \
                         whose decision it was cannot be read from the store",
                        if missing { "is missing" } else { "does not read" }
                    ),
                        }),
                        None => None,
                    };
                lost.extend(named);
            };
        // The contiguous entries past the kept prefix, as stored.
        for index in keep..view.size() {
            let leaf = (whole.entries.get(index as usize)).and_then(|b| leaf_if_ours(index, b));
            note(index, leaf, false);
        }
        // The entries past a gap, read now: each counts only if the signed tiles hold it (the
        // leaves before it are not all there to check its `auth` against).
        for (index, k) in view.numbered().filter(|(i, _)| *i >= view.size()) {
            let Some(bytes) = self.store.get_opt(&k).await? else {
                note(index, None, true);
                continue;
            };
            note(index, leaf_if_ours(index, &bytes), false);
        }
        for index in (view.size()..covered).filter(|i| !stored.contains(i)) {
            note(index, None, true);
        }
        lost.dedup();
        registered.sort_by_key(|(i, _)| *i);
        registered.dedup_by_key(|(i, _)| *i);
        Ok((lost, registered))
    }
}

impl<S: LogStorage> Log<S> {
    /// The tree the latest checkpoint `c` signs, rebuilt from the stored entries when no tiles
    /// give it: every leaf below it stored, or all but one, tried as each entry the rebuild
    /// appends again (with and without `auth`); `None` when no such tree has the signed root.
    /// What lets a log from before tiles tell whose a deleted entry was.
    async fn tree_from_entries(
        &self,
        whole: &WholeLog,
        c: &tlog::SignedCheckpoint,
        unsigned: &[Vec<u8>],
        key: &SigningKey,
    ) -> Result<Option<tlog::Tree>, RebuildError> {
        let view = &whole.view;
        let mut hashes = Vec::new();
        for i in 0..c.size {
            let hash = match view.tree.leaf(i) {
                Some(h) => Some(h),
                None => {
                    (self.store.get_opt(&Key::log_entry(i)).await?).map(|b| tlog::leaf_hash(&b))
                }
            };
            hashes.push(hash);
        }
        let missing: Vec<u64> = (0..c.size)
            .filter(|i| hashes[*i as usize].is_none())
            .collect();
        let tree_with = |at: Option<(u64, tlog::NodeHash)>| -> Option<tlog::Tree> {
            let mut tree = tlog::Tree::new();
            for (i, h) in hashes.iter().enumerate() {
                let h = match (h, at) {
                    (Some(h), _) => *h,
                    (None, Some((m, cand))) if m == i as u64 => cand,
                    (None, _) => return None,
                };
                tree.push_leaf_hash(h).ok()?;
            }
            (tree.root(c.size).ok()? == c.root).then_some(tree)
        };
        // Bounded: one tree a candidate, only for one missing leaf.
        let affordable = (unsigned.len() as u64).saturating_mul(c.size) <= 20_000_000;
        Ok(match missing.as_slice() {
            [] => tree_with(None),
            [m] if affordable => {
                let prefix = tree_with_prefix(&hashes, *m);
                unsigned.iter().find_map(|u| {
                    let plain = tlog::leaf_hash(u);
                    let signed = prefix.as_ref().and_then(|t| {
                        let at = tlog::Place::at(t, *m).ok()?;
                        let b = tlog::sign_leaf(u, &self.origin, &at, &|msg| key.sign(msg)).ok()?;
                        Some(tlog::leaf_hash(&b))
                    });
                    [Some(plain), signed]
                        .into_iter()
                        .flatten()
                        .find_map(|cand| tree_with(Some((*m, cand))))
                })
            }
            _ => None,
        })
    }
}

/// The tree of the leaves before `m` (all stored).
fn tree_with_prefix(hashes: &[Option<tlog::NodeHash>], m: u64) -> Option<tlog::Tree> {
    let mut tree = tlog::Tree::new();
    for h in hashes.iter().take(m as usize) {
        tree.push_leaf_hash((*h)?).ok()?;
    }
    Some(tree)
}

/// The largest trusted checkpoint the stored entries agree with (its root is theirs), up to
/// the first one that disagrees (a fork) or reaches past them.
fn agreed_size(view: &LogView) -> u64 {
    let mut agreed = 0;
    for (&size, root) in &view.signed {
        match view.tree.root(size) {
            Ok(r) if size <= view.size() && r == *root => agreed = size,
            _ => break,
        }
    }
    agreed
}

/// The longest prefix of the stored leaves a rebuild keeps: the leaves a trusted checkpoint
/// that agrees with the entries covers, then each next leaf whose own `auth` verifies after
/// the leaves before it, up to the first unreadable, planted or unsigned one. A leaf below a
/// checkpoint that disagrees or reaches past the stored entries is not proven by it, so it is
/// kept only with its own `auth`: a store writer cannot slip a leaf into the kept prefix
/// under a checkpoint it broke.
fn keep_prefix(whole: &WholeLog, trust: &LogTrust) -> u64 {
    let view = &whole.view;
    let readable = view.first_bad_leaf.unwrap_or(view.size());
    let mut keep = agreed_size(view).min(readable);
    while keep < readable {
        let signed = (whole.entries.get(keep as usize)).is_some_and(|bytes| {
            tlog::Place::at(&view.tree, keep)
                .and_then(|at| trust.authenticate(&at, bytes))
                .is_ok()
        });
        if !signed {
            break;
        }
        keep += 1;
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--drop` takes a run id or `leaf:<index>`; anything else is refused, named.
    #[test]
    fn a_drop_is_a_run_id_or_a_leaf_index_and_nothing_else() {
        let ok = |s: &str| s.parse::<Dropped>().unwrap().to_string();
        assert_eq!(ok("run-1042"), "run-1042");
        assert_eq!(ok("leaf:7"), "leaf:7");
        for bad in [
            "leaf:",
            "leaf:-1",
            "leaf:x",
            "../etc",
            "",
            "run 1",
            "leaf:99999999999999999999",
        ] {
            let err = bad.parse::<Dropped>().unwrap_err().to_string();
            assert!(err.contains(&format!("{bad:?}")), "{bad}: {err}");
        }
    }
}
