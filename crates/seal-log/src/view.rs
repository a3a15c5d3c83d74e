//! Reading and checking the log as an auditor does: [`LogView::load`] reads every entry and
//! checkpoint fresh from the store (no cache: this is what `seal log verify` and `seal verify`
//! trust), [`LogView::proof`] proves a run's inclusion, [`verify_log`] checks append-only
//! consistency with an older checkpoint and the log against the runs in the store.
//!
//! Problems are collected and named, never fatal, like `seal verify`'s: an auditor
//! wants every deleted, replaced, extra or dropped thing in one report. Only an unreadable
//! store is an error. The problems that also stop seal from appending (a dropped or unreadable
//! leaf, a log shorter than a checkpoint it signed, a fork: docs/DESIGN.md §13) are kept apart
//! as the view's refusals, which `crate::guard` adds the sealed runs to.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use std::collections::BTreeMap;

use crate::checkpoints::{bounded_checkpoint, checkpoint_sizes};
use crate::error::LogError;
use crate::finding::Finding;
use crate::leaf::SealLeaf;
use crate::storage::LogStorage;
use crate::stored::entry_for;
use seal_core::ids::RunId;
use seal_core::key::LOG_ENTRIES;
use seal_core::tlog::{
    self, Leaf, LogEntry, LogTrust, NodeHash, PolicyEntry, RebuildEntry, ReportEntry, ReviewEntry,
    SignedCheckpoint, Tree,
};
use seal_core::vocab::AuditCheck;
use seal_store::{Bounded, Key, StoreError};

/// Entries read at once when a process first loads the log.
pub(crate) const READ_AHEAD: usize = 16;

/// The log as stored, with what is wrong with it.
///
/// A view keeps no leaf's bytes: the tree holds each leaf's hash and [`Self::by_run`] the
/// digests a check compares. A stored entry is checked by its leaf hash; one needed whole (a
/// proof's) is read again and checked against the leaf hash held ([`Self::proof`]). The two
/// commands that need every entry's bytes read a [`WholeLog`] (docs/DECISIONS.md, "The log in
/// memory is hashes, not entries").
#[derive(Debug, Default)]
pub struct LogView {
    pub(super) tree: Tree,
    /// Each run's seal leaves, in log order.
    pub(super) by_run: BTreeMap<String, Vec<SealLeaf>>,
    /// The largest stored checkpoint that verified.
    pub latest: Option<SignedCheckpoint>,
    /// Verified stored checkpoints: size → root.
    pub(super) signed: BTreeMap<u64, NodeHash>,
    /// The numbered entry objects past a dropped one (outside the tree); those before it are
    /// `log/entries/<i>` for every leaf `i` ([`LogView::numbered`]).
    beyond_gap: Vec<(u64, Key)>,
    /// The contiguous entries read: `log/entries/0` up to this one, excluded.
    read: u64,
    /// Objects under `log/entries/` that are not named like an entry.
    pub(super) strays: Vec<Key>,
    /// Checkpoint objects read that did not verify (signature, or stored under another size).
    pub(super) unverified: Vec<(u64, Key)>,
    /// The first leaf that is unreadable, planted or an unsigned rebuild entry.
    pub(super) first_bad_leaf: Option<u64>,
    /// Every such leaf.
    bad_leaves: std::collections::BTreeSet<u64>,
    /// The log's rebuild entries, by leaf index.
    pub rebuilds: Vec<(u64, RebuildEntry)>,
    /// The log's review entries, by leaf index.
    pub reviews: Vec<(u64, ReviewEntry)>,
    /// The log's judge-policy registrations, by leaf index.
    pub policies: Vec<(u64, PolicyEntry)>,
    /// The log's reliability reports, by leaf index.
    pub reports: Vec<(u64, ReportEntry)>,
    pub problems: Vec<Finding>,
    /// The problems that stop seal from appending (a subset of `problems`).
    refusals: Vec<Finding>,
    /// A view of some runs only ([`LogView::for_runs`]): its tree is empty, and the hashes of
    /// those runs' leaves (with the inclusion proof in the latest checkpoint of each leaf it
    /// covers, read from the tiles) are here instead.
    pub(super) partial: Option<BTreeMap<u64, ReadLeaf>>,
}

/// A leaf of a view of some runs: its hash, and how it is proven in the latest checkpoint
/// when that covers it.
pub(super) type ReadLeaf = (NodeHash, Option<Proof>);

/// How a leaf read by its pointer is proven in the latest checkpoint.
#[derive(Debug, Clone)]
pub(super) enum Proof {
    /// Its inclusion proof, read from the tiles.
    Path(Vec<NodeHash>),
    /// Folded, as this very hash, into the root the checkpoint signs by the pass over the
    /// whole log (`crate::stream`): no path was computed.
    Pass,
}

/// The log read whole, for `seal log verify` and `seal log rebuild`, which compare each
/// logged entry with the store and relog from them: the view, with every stored checkpoint
/// checked against the entries (not only the latest), and every leaf's bytes in order.
#[derive(Debug)]
pub struct WholeLog {
    pub view: LogView,
    pub(super) entries: Vec<Bytes>,
}

impl WholeLog {
    pub async fn load(store: &impl LogStorage, trust: &LogTrust) -> Result<WholeLog, StoreError> {
        let mut entries = Vec::new();
        let view = LogView::read(store, trust, Some(&mut entries)).await?;
        Ok(WholeLog { view, entries })
    }

    /// Leaf `index` as the view accepted it (`None`: no such leaf, or one unreadable or
    /// planted).
    pub(super) fn leaf(&self, index: u64) -> Option<Leaf> {
        if self.view.bad_leaves.contains(&index) {
            return None;
        }
        let bytes = self.entries.get(usize::try_from(index).ok()?)?;
        Leaf::from_bytes(bytes).ok()
    }

    /// The seal entry at leaf `index` (`None`: no such leaf, or not a readable seal leaf).
    pub(super) fn seal_entry(&self, index: u64) -> Option<LogEntry> {
        // A planted leaf says nothing about any run: `seal log verify` names it, and only it.
        match self.leaf(index)? {
            Leaf::Seal(e) => Some(e),
            Leaf::Review(_) | Leaf::Rebuild(_) | Leaf::Policy(_) | Leaf::Report(_) => None,
        }
    }
}

/// A checkpoint as read, before the entries are: verified, or why not.
pub(super) type ReadCheckpoint = (u64, Key, Result<SignedCheckpoint, BadCheckpoint>);

/// Why a stored checkpoint is not one of the log's.
#[derive(Debug, thiserror::Error)]
pub(super) enum BadCheckpoint {
    #[error("the checkpoint of size {signed} is stored under size {stored}")]
    Misplaced { signed: u64, stored: u64 },
    #[error("{size} bytes, more than a checkpoint holds ({max}): not read")]
    TooLarge { size: u64, max: u64 },
    #[error(transparent)]
    Unverified(#[from] tlog::TlogError),
}

/// An inclusion proof of a run's seal, as `seal log prove --json` prints it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InclusionProof {
    pub run_id: String,
    pub leaf_index: u64,
    pub tree_size: u64,
    /// The exact leaf bytes.
    pub entry: String,
    /// Hex node hashes, RFC 9162 order (leaf to root).
    pub audit_path: Vec<String>,
    /// The signed checkpoint note, exactly as stored.
    pub checkpoint: String,
}

impl LogView {
    /// Reads the log and its latest checkpoint (`seal verify`, proofs, the guard).
    pub async fn load(store: &impl LogStorage, trust: &LogTrust) -> Result<LogView, StoreError> {
        LogView::read(store, trust, None).await
    }

    /// Reads the log; `whole`: check every stored checkpoint, not only the latest, and push
    /// every leaf's bytes there.
    async fn read(
        store: &impl LogStorage,
        trust: &LogTrust,
        whole: Option<&mut Vec<Bytes>>,
    ) -> Result<LogView, StoreError> {
        let mut view = LogView::default();
        let all_checkpoints = whole.is_some();
        // Checkpoints before entries: a checkpoint is published after its entries, so every
        // checkpoint read here commits to entries that exist when they are listed next. The
        // other order can read a concurrent append's checkpoint without its entry and call
        // the log shorter than one it signed.
        let checkpoints = read_checkpoints(store, trust, all_checkpoints).await?;
        // The leaves a trusted checkpoint covers are authenticated by it; past the largest,
        // each by its own `auth` (docs/DESIGN.md §11).
        let covered = checkpoints
            .iter()
            .filter_map(|(_, _, c)| c.as_ref().ok().map(|c| c.size))
            .max()
            .unwrap_or(0);
        view.load_entries(store, trust, whole, covered).await?;
        view.check_checkpoints(checkpoints);
        Ok(view)
    }

    pub fn size(&self) -> u64 {
        self.tree.size()
    }

    /// Every numbered entry object listed, in order, also those past a dropped one.
    pub(super) fn numbered(&self) -> impl Iterator<Item = (u64, Key)> + '_ {
        (0..self.read)
            .map(|i| (i, Key::log_entry(i)))
            .chain(self.beyond_gap.iter().cloned())
    }

    /// The seal leaves logged for a run, in log order.
    pub fn seal_leaves(&self, run: &str) -> &[SealLeaf] {
        self.by_run.get(run).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Whether a run is logged at all.
    pub fn is_logged(&self, run: &str) -> bool {
        self.by_run.contains_key(run)
    }

    /// `review_missing` of each review of `run` the log holds whose index is not among
    /// `stored`: deleted, or its store interrupted after its leaf (sending the same envelope
    /// again stores it).
    pub fn missing_reviews(&self, run: &RunId, stored: impl Iterator<Item = u64>) -> Vec<Finding> {
        let stored: std::collections::BTreeSet<u64> = stored.collect();
        let mut missing: Vec<Finding> = self
            .reviews
            .iter()
            .filter(|(_, r)| r.run_id == run.as_str() && !stored.contains(&r.review_index))
            .map(|(leaf, r)| review_missing(*leaf, r))
            .collect();
        missing.dedup();
        missing
    }

    /// The runs with a seal leaf in this view.
    pub fn logged_runs(&self) -> impl Iterator<Item = &str> + '_ {
        self.by_run.keys().map(String::as_str)
    }

    /// `run_missing` of a run the log holds a seal of, for a caller that found neither its
    /// evidence nor its seal in the store: a decided run was deleted. `None`: not logged.
    pub fn missing_run(&self, run: &RunId) -> Option<Finding> {
        let leaf = self.seal_leaves(run.as_str()).last()?;
        Some(Finding::new(
            AuditCheck::RunMissing,
            format!("runs/{run}"),
            format!(
                "logged at leaf {} (seal sha256 {}), but its evidence and seal are gone from \
                 the store: a decided run was deleted",
                leaf.index,
                leaf.seal_hex()
            ),
        ))
    }

    /// What in the log itself stops seal from appending to it (see the module doc).
    pub fn refusals(&self) -> &[Finding] {
        &self.refusals
    }

    /// A problem that also stops appends.
    fn refuse(&mut self, p: Finding) {
        self.refusals.push(p.clone());
        self.problems.push(p);
    }

    async fn load_entries(
        &mut self,
        store: &impl LogStorage,
        trust: &LogTrust,
        mut whole: Option<&mut Vec<Bytes>>,
        covered: u64,
    ) -> Result<(), StoreError> {
        let mut numbered = Vec::new();
        let listing = store.list(LOG_ENTRIES).await?;
        for entry in listing.foreign {
            // A link or special file where entries are: never appended by seal, never read.
            self.refuse(Finding::new(
                AuditCheck::LogEntries,
                entry,
                "not an object seal writes: no entry can be read there",
            ));
        }
        for k in listing.keys {
            match k.log_number(LOG_ENTRIES) {
                Some(n) => numbered.push((n, k)),
                None => {
                    self.problems.push(Finding::new(
                        AuditCheck::LogEntries,
                        k.as_str(),
                        "not a log entry name: an object nobody appended",
                    ));
                    self.strays.push(k);
                }
            }
        }
        numbered.sort();
        let contiguous = numbered
            .iter()
            .enumerate()
            .take_while(|(i, (n, _))| *i as u64 == *n)
            .count();
        if let Some((_, k)) = numbered.get(contiguous) {
            self.refuse(Finding::new(
                AuditCheck::LogEntries,
                Key::log_entry(contiguous as u64).as_str(),
                format!(
                    "missing while {k} exists: a log entry was dropped ({} later entries are outside the tree)",
                    numbered.len() - contiguous
                ),
            ));
        }
        let beyond_gap = numbered.split_off(contiguous);
        let keys: Vec<Key> = numbered.into_iter().map(|(_, k)| k).collect();
        self.beyond_gap = beyond_gap;
        // Each entry is hashed and indexed as it arrives (in order, a few reads ahead), not
        // collected first: a view that keeps no bytes never holds the whole log's.
        let fetched = futures::stream::iter(keys.into_iter().map(|k| {
            let store = store.clone();
            async move { store.get(&k).await.map(|b| (k, b)) }
        }))
        .buffered(READ_AHEAD);
        futures::pin_mut!(fetched);
        while let Some((k, bytes)) = fetched.try_next().await? {
            self.push_entry(&k, &bytes, trust, covered);
            if let Some(entries) = whole.as_deref_mut() {
                entries.push(bytes);
            }
        }
        Ok(())
    }

    /// Hashes and indexes the next entry. One past `covered` (the largest trusted checkpoint)
    /// that does not authenticate is planted: hashed into the tree (the checkpoints are
    /// checked against what is stored), never indexed, and it stops appends.
    fn push_entry(&mut self, k: &Key, bytes: &[u8], trust: &LogTrust, covered: u64) {
        let index = self.read;
        self.read += 1;
        // Where it was appended: after the leaves read so far (the tree holds exactly those).
        let at = tlog::Place::next_of(&self.tree);
        if let Err(e) = self.tree.push(bytes) {
            self.refuse(Finding::new(
                AuditCheck::LogEntries,
                k.as_str(),
                e.to_string(),
            ));
        }
        let read = match tlog::ReadLeaf::parse(bytes) {
            Ok(_) if index >= covered => {
                at.and_then(|at| trust.authenticate(&at, bytes))
                    .map_err(|e| {
                        self.first_bad_leaf.get_or_insert(index);
                        self.bad_leaves.insert(index);
                        self.refuse(crate::finding::planted_entry(k, &e));
                    })
            }
            Ok(read) => Ok(read),
            Err(e) => {
                self.unreadable(index, k, e);
                Err(())
            }
        };
        let Ok(read) = read else {
            return;
        };
        let leaf = match read.leaf {
            Leaf::Rebuild(r) => r.verify(trust.keys()).map(|()| Leaf::Rebuild(r)),
            other => Ok(other),
        };
        match leaf {
            Ok(Leaf::Seal(e)) => {
                let leaf = SealLeaf::of(index, &e, read.content);
                self.by_run.entry(e.run_id).or_default().push(leaf);
            }
            Ok(Leaf::Rebuild(r)) => self.rebuilds.push((index, r)),
            Ok(Leaf::Review(r)) => self.reviews.push((index, r)),
            Ok(Leaf::Policy(p)) => self.policies.push((index, p)),
            Ok(Leaf::Report(r)) => self.reports.push((index, r)),
            Err(e) => self.unreadable(index, k, e),
        }
    }

    /// An entry that is not a readable leaf (or an unsigned rebuild entry).
    fn unreadable(&mut self, index: u64, k: &Key, e: tlog::TlogError) {
        self.first_bad_leaf.get_or_insert(index);
        self.bad_leaves.insert(index);
        self.refuse(Finding::new(
            AuditCheck::LogEntries,
            k.as_str(),
            e.to_string(),
        ));
    }

    /// Checks the checkpoints read (largest first) against the entries.
    fn check_checkpoints(&mut self, read: Vec<ReadCheckpoint>) {
        for (size, k, verified) in read {
            match verified {
                Ok(c) => {
                    if let Some(p) = self.against_entries(k.as_str(), &c) {
                        self.refuse(p);
                    }
                    self.signed.insert(c.size, c.root);
                    if self.latest.is_none() {
                        self.latest = Some(c);
                    }
                }
                Err(detail) => {
                    self.problems.push(Finding::new(
                        AuditCheck::LogCheckpoint,
                        k.as_str(),
                        detail.to_string(),
                    ));
                    self.unverified.push((size, k));
                }
            }
        }
        if self.latest.is_none() && self.size() > 0 {
            self.problems.push(Finding::new(
                AuditCheck::LogCheckpoint,
                seal_core::key::LOG_CHECKPOINTS,
                "no checkpoint signed by a trusted key: nothing commits to the log's entries",
            ));
        }
    }

    /// Whether a signed checkpoint agrees with the stored entries.
    fn against_entries(&self, object: &str, c: &SignedCheckpoint) -> Option<Finding> {
        if c.size > self.size() {
            return Some(Finding::mismatch(
                AuditCheck::LogCheckpoint,
                object,
                format!("{} entries", c.size),
                format!("{} entries", self.size()),
                "a signed checkpoint commits to entries the store no longer holds: entries were dropped or the log was rolled back",
            ));
        }
        let root = self.tree.root(c.size).ok()?;
        (root != c.root).then(|| {
            Finding::mismatch(
                AuditCheck::LogFork,
                object,
                tlog::hex(&c.root),
                tlog::hex(&root),
                format!(
                    "the signed tree of size {} and the stored entries disagree: the log was rewritten (a fork)",
                    c.size
                ),
            )
        })
    }

    /// The leaf hash of leaf `index`, from the tree, or in a view of some runs from what was
    /// read of them.
    fn leaf_hash(&self, index: u64) -> Option<NodeHash> {
        match &self.partial {
            Some(read) => read.get(&index).map(|(hash, _)| *hash),
            None => self.tree.leaf(index),
        }
    }

    /// The inclusion proof of leaf `index` in the tree of `size` leaves, from the tree, or in
    /// a view of some runs the one read from the tiles for the latest checkpoint.
    fn inclusion(&self, index: u64, size: u64) -> Result<Vec<NodeHash>, LogError> {
        let Some(read) = &self.partial else {
            return Ok(self.tree.inclusion(index, size)?);
        };
        let latest = self.latest.as_ref().map(|c| c.size);
        match read.get(&index) {
            Some((_, Some(Proof::Path(path)))) if latest == Some(size) => Ok(path.clone()),
            _ => Err(LogError::Format(tlog::TlogError::Tree(format!(
                "leaf {index} was not read with its proof in the tree of {size}"
            )))),
        }
    }

    /// The leaf of a run's latest logged seal that the latest checkpoint covers, and that
    /// checkpoint.
    fn proven_leaf(&self, run: &RunId) -> Result<(SealLeaf, &SignedCheckpoint), LogError> {
        let latest = self.latest.as_ref().ok_or(LogError::NoCheckpoint)?;
        let leaf = self
            .seal_leaves(run.as_str())
            .iter()
            .copied()
            .rfind(|l| l.index < latest.size)
            .ok_or_else(|| LogError::NotLogged { run: run.clone() })?;
        Ok((leaf, latest))
    }

    /// The inclusion proof of a run's latest logged seal against the latest checkpoint. The
    /// entry's bytes are read again from the store (a view keeps hashes, not bytes) and must
    /// hash to the leaf the view read: the proof hands out those bytes as the logged entry.
    pub async fn proof(
        &self,
        store: &impl LogStorage,
        run: &RunId,
    ) -> Result<InclusionProof, LogError> {
        let (leaf, latest) = self.proven_leaf(run)?;
        let path = self.inclusion(leaf.index, latest.size)?;
        let key = Key::log_entry(leaf.index);
        let bytes = store
            .get_opt(&key)
            .await?
            .ok_or_else(|| crate::error::corrupt(&key, "gone since the log was read"))?;
        if Some(tlog::leaf_hash(&bytes)) != self.leaf_hash(leaf.index) {
            return Err(crate::error::corrupt(
                &key,
                "not the entry read before at this index: the log was rewritten since",
            ));
        }
        Ok(InclusionProof {
            run_id: run.to_string(),
            leaf_index: leaf.index,
            tree_size: latest.size,
            entry: String::from_utf8_lossy(&bytes).into_owned(),
            audit_path: path.iter().map(tlog::hex).collect(),
            checkpoint: latest.text.clone(),
        })
    }

    /// `seal verify`'s log check of one run: logged once (`run_relogged`), its stored seal is
    /// the one last logged for it (`run_replaced`), and that leaf is proven included in the
    /// latest signed checkpoint (`log_inclusion`).
    pub async fn check_run(
        &self,
        store: &impl LogStorage,
        run: &RunId,
    ) -> Result<Vec<Finding>, StoreError> {
        let object = Key::seal(run).to_string();
        let inclusion =
            |detail: String| Finding::new(AuditCheck::LogInclusion, object.clone(), detail);
        let stored = match entry_for(store, run).await {
            Ok(Some(e)) => e,
            // The seal checks name a missing or unreadable seal already.
            Ok(None) | Err(LogError::NotSealed { .. }) => return Ok(Vec::new()),
            Err(LogError::Store(e)) => return Err(e),
            Err(e) => return Ok(vec![inclusion(e.to_string())]),
        };
        Ok(self.check_entry(run, &stored))
    }

    /// [`Self::check_run`] for a run whose entry the caller computed from the evidence and
    /// seal bytes it has just verified (`seal_entry`), so that `seal verify` reads and parses
    /// neither object a second time.
    pub fn check_entry(&self, run: &RunId, stored: &LogEntry) -> Vec<Finding> {
        let object = Key::seal(run).to_string();
        let inclusion =
            |detail: String| Finding::new(AuditCheck::LogInclusion, object.clone(), detail);
        let mut problems = Vec::new();
        if let Some(p) = self.relogged(run.as_str()) {
            problems.push(p);
        }
        let (leaf, latest) = match self.proven_leaf(run) {
            Ok(found) => found,
            Err(e) => {
                problems.push(inclusion(format!("{e}: the seal is not proven in the log")));
                return problems;
            }
        };
        // Entries are canonical (one entry, one byte string), so the stored run is the logged
        // one exactly when its entry's hash is the leaf's content hash (the leaf without its
        // `auth`); the leaf itself, `auth` and all, is what the checkpoint proves.
        let stored_hash = match stored.to_bytes() {
            Ok(bytes) => tlog::leaf_hash(&bytes),
            Err(e) => {
                problems.push(inclusion(format!("its log entry cannot be formed: {e}")));
                return problems;
            }
        };
        let leaf_hash = self.leaf_hash(leaf.index);
        if leaf.content != stored_hash {
            problems.push(Finding::mismatch(
                AuditCheck::RunReplaced,
                object,
                leaf.seal_hex(),
                &stored.seal_sha256,
                format!(
                    "the log (leaf {}) records another seal for this run: it was replaced",
                    leaf.index
                ),
            ));
        } else if let Some(e) = match leaf_hash {
            Some(hash) => self.check_inclusion(leaf.index, latest, &hash).err(),
            None => Some(LogError::Corrupt {
                key: Key::log_entry(leaf.index).to_string(),
                detail: "not read with the run's leaves".into(),
            }),
        } {
            problems.push(inclusion(e.to_string()));
        }
        problems
    }

    /// `seal verify`'s log check of one stored review: a review entry of the log names its
    /// bytes (run, index, sha256), and that leaf is proven included in the latest signed
    /// checkpoint. `None` when it is; else why not (`review_log`).
    pub fn check_review(&self, run: &RunId, index: u64, sha256: &str) -> Option<String> {
        let Some((leaf, _)) = self.reviews.iter().find(|(_, r)| {
            r.run_id == run.as_str() && r.review_index == index && r.review_sha256 == sha256
        }) else {
            return Some(format!(
                "not in the transparency log (sha256 {sha256}): a review nobody logged, planted or copied"
            ));
        };
        let latest = match self.latest.as_ref() {
            Some(l) if *leaf < l.size => l,
            _ => {
                return Some(format!(
                    "logged at leaf {leaf}, which no trusted checkpoint signs yet"
                ))
            }
        };
        let hash = self.leaf_hash(*leaf)?;
        self.check_inclusion(*leaf, latest, &hash)
            .err()
            .map(|e| format!("logged at leaf {leaf}, not proven in the latest checkpoint: {e}"))
    }

    /// `run_relogged` when a run is logged more than once.
    pub(super) fn relogged(&self, run: &str) -> Option<Finding> {
        let indices = self.seal_leaves(run);
        (indices.len() > 1).then(|| {
            let at: Vec<String> = indices.iter().map(|l| l.index.to_string()).collect();
            Finding::new(
                AuditCheck::RunRelogged,
                format!("runs/{run}"),
                format!(
                    "logged {} times (leaves {}): a decided run was judged again under the same id",
                    indices.len(),
                    at.join(", ")
                ),
            )
        })
    }

    /// The rebuild entries below `size`, as words for a consistency problem.
    pub(super) fn rebuilt_below(&self, size: u64) -> String {
        match self.rebuilds.iter().rfind(|(i, _)| *i < size) {
            Some((i, r)) => format!(
                " (the log was rebuilt at leaf {i} on {} by `seal log rebuild`: see that entry)",
                r.rebuilt_at
            ),
            None => String::new(),
        }
    }

    /// That leaf `index`, of leaf hash `leaf`, is in the tree `latest` signed: the audit path
    /// from the hashes read, checked against the signed root.
    fn check_inclusion(
        &self,
        index: u64,
        latest: &SignedCheckpoint,
        leaf: &NodeHash,
    ) -> Result<(), LogError> {
        if let Some(read) = &self.partial {
            let passed =
                matches!(read.get(&index), Some((hash, Some(Proof::Pass))) if hash == leaf);
            if passed && self.latest.as_ref().map(|c| c.size) == Some(latest.size) {
                return Ok(());
            }
        }
        let path = self.inclusion(index, latest.size)?;
        tlog::check_inclusion(&path, latest.size, &latest.root, index, leaf)?;
        Ok(())
    }
}

/// A logged review that is not stored.
pub(super) fn review_missing(leaf: u64, r: &ReviewEntry) -> Finding {
    Finding::new(
        AuditCheck::ReviewMissing,
        format!("runs/{}/reviews/{}.dsse.json", r.run_id, r.review_index),
        format!(
            "logged at leaf {leaf} (sha256 {}, reviewed at {}), not stored: deleted, or stored \
             after its leaf was interrupted (send the same envelope again)",
            r.review_sha256, r.reviewed_at
        ),
    )
}

/// The largest stored checkpoint a trusted key signed, if any (what admission, a run's view
/// and the pass over the log each start from).
pub(super) async fn latest_trusted(
    store: &impl LogStorage,
    trust: &LogTrust,
) -> Result<Option<SignedCheckpoint>, StoreError> {
    Ok(read_checkpoints(store, trust, false)
        .await?
        .into_iter()
        .find_map(|(_, _, c)| c.ok()))
}

/// The latest stored checkpoint of this log (`trust`), its note exactly as stored: what
/// `seal log checkpoint` prints and `GET /v1/log/checkpoint` serves. The largest stored one is
/// not taken on its name: anyone who can write to the store can put any bytes under a larger
/// size (the store writer of docs/DESIGN.md §13), and seal would pass them on as its log's
/// head to every tlog client and terminal.
pub async fn latest_checkpoint(
    store: &impl LogStorage,
    trust: &LogTrust,
) -> Result<Option<tlog::SignedCheckpoint>, StoreError> {
    latest_trusted(store, trust).await
}

/// Reads the stored checkpoints, largest first, and verifies each one's signature; without
/// `all`, stops at the first that verifies (the latest).
pub(super) async fn read_checkpoints(
    store: &impl LogStorage,
    trust: &LogTrust,
    all: bool,
) -> Result<Vec<ReadCheckpoint>, StoreError> {
    let mut read = Vec::new();
    for size in checkpoint_sizes(store).await? {
        let k = Key::log_checkpoint(size);
        let bytes = match bounded_checkpoint(store, size).await? {
            Bounded::Read(bytes) => Ok(bytes),
            Bounded::Absent => continue,
            Bounded::Larger { size, bound } => Err(BadCheckpoint::TooLarge { size, max: bound }),
        };
        let verified = bytes.and_then(|bytes| match trust.open_checkpoint(&bytes) {
            Ok(c) if c.size == size => Ok(c),
            Ok(c) => Err(BadCheckpoint::Misplaced {
                signed: c.size,
                stored: size,
            }),
            Err(e) => Err(e.into()),
        });
        let done = verified.is_ok() && !all;
        read.push((size, k, verified));
        if done {
            break;
        }
    }
    Ok(read)
}
