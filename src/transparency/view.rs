//! Reading and checking the log as an auditor does: [`LogView::load`] reads every entry and
//! checkpoint fresh from the store (no cache: this is what `seal log verify` and `seal verify`
//! trust), [`LogView::proof`] proves a run's inclusion, [`verify_log`] checks append-only
//! consistency with an older checkpoint and the log against the runs in the store.
//!
//! Decision: problems are collected and named, never fatal, like `seal verify`'s: an auditor
//! wants every deleted, replaced, extra or dropped thing in one report. Only an unreadable
//! store is an error.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

use super::{checkpoint_keys, entry_for, LogError, READ_AHEAD};
use crate::audit::Problem;
use crate::ids::RunId;
use crate::key::LOG_ENTRIES;
use crate::store::{Key, Store, StoreError};
use crate::tlog::{self, LogEntry, NodeHash, SignedCheckpoint, Tree};

/// Check ids of the log's problems.
pub mod check {
    /// An entry object is missing, unreadable or not a canonical entry.
    pub const ENTRIES: &str = "log_entries";
    /// A checkpoint is missing, unsigned, or commits to entries the store lacks.
    pub const CHECKPOINT: &str = "log_checkpoint";
    /// Two signed trees of one size with different roots.
    pub const FORK: &str = "log_fork";
    /// The log is not an append-only extension of an older checkpoint (rollback, rewrite).
    pub const CONSISTENCY: &str = "log_consistency";
    /// A logged run is gone from the store.
    pub const MISSING: &str = "run_missing";
    /// A logged run's evidence or seal is not the one logged.
    pub const REPLACED: &str = "run_replaced";
    /// A sealed run in the store is not in the log.
    pub const UNLOGGED: &str = "run_unlogged";
    /// A run appears in the log more than once (judged again under the same id).
    pub const RELOGGED: &str = "run_relogged";
    /// `seal verify`: the run's seal is not proven included in the latest checkpoint.
    pub const INCLUSION: &str = "log_inclusion";
}

/// The log as stored, with what is wrong with it.
#[derive(Debug, Default)]
pub struct LogView {
    entries: Vec<Bytes>,
    parsed: Vec<Option<LogEntry>>,
    tree: Tree,
    by_run: BTreeMap<String, Vec<u64>>,
    /// The largest stored checkpoint that verified.
    pub latest: Option<SignedCheckpoint>,
    /// Verified stored checkpoints: size → root.
    signed: BTreeMap<u64, NodeHash>,
    pub problems: Vec<Problem>,
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

/// A consistency proof between an older checkpoint and the store's latest.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Consistency {
    pub old_size: u64,
    pub old_root: String,
    pub new_size: u64,
    pub new_root: String,
    pub proof: Vec<String>,
}

/// What `seal log verify` reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogReport {
    pub origin: Option<String>,
    pub entries: u64,
    pub runs_logged: usize,
    pub checkpoint_size: Option<u64>,
    pub checkpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
    pub verified: bool,
    pub problems: Vec<Problem>,
}

impl LogView {
    /// Reads the log. `all_checkpoints`: check every stored checkpoint against the entries
    /// (`seal log verify`), else only the latest (`seal verify`).
    pub async fn load(
        store: &Store,
        trusted: &[[u8; 32]],
        all_checkpoints: bool,
    ) -> Result<LogView, StoreError> {
        let mut view = LogView::default();
        view.load_entries(store).await?;
        view.load_checkpoints(store, trusted, all_checkpoints)
            .await?;
        Ok(view)
    }

    pub fn size(&self) -> u64 {
        self.tree.size()
    }

    /// The indices at which a run is logged.
    pub fn indices(&self, run: &str) -> &[u64] {
        self.by_run.get(run).map(Vec::as_slice).unwrap_or(&[])
    }

    async fn load_entries(&mut self, store: &Store) -> Result<(), StoreError> {
        let mut numbered = Vec::new();
        for k in store.list(LOG_ENTRIES).await? {
            match k.log_number(LOG_ENTRIES) {
                Some(n) => numbered.push((n, k)),
                None => self.problems.push(Problem::new(
                    check::ENTRIES,
                    k.as_str(),
                    "not a log entry name: an object nobody appended",
                )),
            }
        }
        numbered.sort();
        let contiguous = numbered
            .iter()
            .enumerate()
            .take_while(|(i, (n, _))| *i as u64 == *n)
            .count();
        if let Some((_, k)) = numbered.get(contiguous) {
            self.problems.push(Problem::new(
                check::ENTRIES,
                Key::log_entry(contiguous as u64).as_str(),
                format!(
                    "missing while {k} exists: a log entry was dropped ({} later entries are outside the tree)",
                    numbered.len() - contiguous
                ),
            ));
        }
        let keys: Vec<Key> = numbered
            .into_iter()
            .take(contiguous)
            .map(|(_, k)| k)
            .collect();
        let fetched: Vec<(Key, Bytes)> = futures::stream::iter(keys.into_iter().map(|k| {
            let store = store.clone();
            async move { store.get(&k).await.map(|b| (k, b)) }
        }))
        .buffered(READ_AHEAD)
        .try_collect()
        .await?;
        for (k, bytes) in fetched {
            self.push_entry(k, bytes);
        }
        Ok(())
    }

    fn push_entry(&mut self, k: Key, bytes: Bytes) {
        let index = self.entries.len() as u64;
        if let Err(e) = self.tree.push(&bytes) {
            self.problems
                .push(Problem::new(check::ENTRIES, k.as_str(), e.to_string()));
        }
        let parsed = match LogEntry::from_bytes(&bytes) {
            Ok(e) => {
                self.by_run.entry(e.run_id.clone()).or_default().push(index);
                Some(e)
            }
            Err(e) => {
                self.problems
                    .push(Problem::new(check::ENTRIES, k.as_str(), e.to_string()));
                None
            }
        };
        self.parsed.push(parsed);
        self.entries.push(bytes);
    }

    async fn load_checkpoints(
        &mut self,
        store: &Store,
        trusted: &[[u8; 32]],
        all: bool,
    ) -> Result<(), StoreError> {
        let keys = checkpoint_keys(store).await?;
        for (size, k) in keys {
            let Some(bytes) = store.get_opt(&k).await? else {
                continue;
            };
            let verified = self.check_checkpoint(&k, size, &bytes, trusted);
            if let Some(c) = verified {
                if self.latest.is_none() {
                    self.latest = Some(c);
                }
                if !all {
                    break;
                }
            }
        }
        if self.latest.is_none() && self.size() > 0 {
            self.problems.push(Problem::new(
                check::CHECKPOINT,
                super::LOG_CHECKPOINTS,
                "no checkpoint signed by a trusted key: nothing commits to the log's entries",
            ));
        }
        Ok(())
    }

    /// One stored checkpoint: signed by a trusted key, named by its size, and the root of the
    /// stored entries of that size.
    fn check_checkpoint(
        &mut self,
        k: &Key,
        size: u64,
        bytes: &[u8],
        trusted: &[[u8; 32]],
    ) -> Option<SignedCheckpoint> {
        let c = match tlog::open_checkpoint(bytes, trusted) {
            Ok(c) => c,
            Err(e) => {
                self.problems
                    .push(Problem::new(check::CHECKPOINT, k.as_str(), e.to_string()));
                return None;
            }
        };
        if c.size != size {
            self.problems.push(Problem::mismatch(
                check::CHECKPOINT,
                k.as_str(),
                size,
                c.size,
                "the checkpoint is stored under another tree size",
            ));
            return None;
        }
        if let Some(p) = self.against_entries(k.as_str(), &c) {
            self.problems.push(p);
        }
        self.signed.insert(c.size, c.root);
        Some(c)
    }

    /// Whether a signed checkpoint agrees with the stored entries.
    fn against_entries(&self, object: &str, c: &SignedCheckpoint) -> Option<Problem> {
        if c.size > self.size() {
            return Some(Problem::mismatch(
                check::CHECKPOINT,
                object,
                format!("{} entries", c.size),
                format!("{} entries", self.size()),
                "a signed checkpoint commits to entries the store no longer holds: entries were dropped or the log was rolled back",
            ));
        }
        let root = self.tree.root(c.size).ok()?;
        (root != c.root).then(|| {
            Problem::mismatch(
                check::FORK,
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

    /// The inclusion proof of a run's latest logged seal against the latest checkpoint.
    pub fn proof(&self, run: &RunId) -> Result<InclusionProof, LogError> {
        let latest = self.latest.as_ref().ok_or(LogError::NoCheckpoint)?;
        let index = self
            .indices(run.as_str())
            .iter()
            .copied()
            .rfind(|&i| i < latest.size)
            .ok_or_else(|| LogError::NotLogged { run: run.clone() })?;
        let path = self.tree.inclusion(index, latest.size)?;
        let bytes = usize::try_from(index)
            .ok()
            .and_then(|i| self.entries.get(i))
            .ok_or_else(|| LogError::NotLogged { run: run.clone() })?;
        Ok(InclusionProof {
            run_id: run.to_string(),
            leaf_index: index,
            tree_size: latest.size,
            entry: String::from_utf8_lossy(bytes).into_owned(),
            audit_path: path.iter().map(tlog::hex).collect(),
            checkpoint: latest.text.clone(),
        })
    }

    /// `seal verify`'s log check of one run: its stored seal is the one last logged for it, and
    /// that leaf is proven included in the latest signed checkpoint.
    pub async fn check_run(&self, store: &Store, run: &RunId) -> Result<Vec<Problem>, StoreError> {
        let object = Key::seal(run).to_string();
        let fail = |detail: String| vec![Problem::new(check::INCLUSION, object.clone(), detail)];
        let stored = match entry_for(store, run).await {
            Ok(Some(e)) => e,
            // The seal checks name a missing or unreadable seal already.
            Ok(None) | Err(LogError::NotSealed { .. }) => return Ok(Vec::new()),
            Err(LogError::Store(e)) => return Err(e),
            Err(e) => return Ok(fail(e.to_string())),
        };
        let proof = match self.proof(run) {
            Ok(p) => p,
            Err(e) => return Ok(fail(format!("{e}: the seal is not proven in the log"))),
        };
        let logged = LogEntry::from_bytes(proof.entry.as_bytes()).ok();
        if logged.as_ref() != Some(&stored) {
            return Ok(vec![Problem::mismatch(
                check::INCLUSION,
                object,
                logged.map(|e| e.seal_sha256).unwrap_or_default(),
                &stored.seal_sha256,
                format!(
                    "the log (leaf {}) records another seal for this run: it was replaced",
                    proof.leaf_index
                ),
            )]);
        }
        if let Err(e) = self.check_proof(&proof) {
            return Ok(fail(e.to_string()));
        }
        Ok(Vec::new())
    }

    fn check_proof(&self, p: &InclusionProof) -> Result<(), LogError> {
        let latest = self.latest.as_ref().ok_or(LogError::NoCheckpoint)?;
        let path: Vec<NodeHash> = p
            .audit_path
            .iter()
            .map(|h| tlog::parse_hex(h))
            .collect::<Result<_, _>>()?;
        let leaf = tlog::leaf_hash(p.entry.as_bytes());
        tlog::check_inclusion(&path, latest.size, &latest.root, p.leaf_index, &leaf)?;
        Ok(())
    }
}

/// `seal log verify`: the log's own integrity, every logged run against the store, every
/// sealed run in the store against the log, and, given an older checkpoint, append-only
/// consistency with it.
pub async fn verify_log(
    store: &Store,
    trusted: &[[u8; 32]],
    old: Option<&[u8]>,
) -> Result<LogReport, StoreError> {
    let mut view = LogView::load(store, trusted, true).await?;
    let mut problems = std::mem::take(&mut view.problems);
    problems.extend(runs_against_log(store, &view).await?);
    let consistency = match old {
        Some(old) => against_old(&view, trusted, old, &mut problems),
        None => None,
    };
    Ok(LogReport {
        origin: view.latest.as_ref().map(|c| c.origin.clone()),
        entries: view.size(),
        runs_logged: view.by_run.len(),
        checkpoint_size: view.latest.as_ref().map(|c| c.size),
        checkpoint: view.latest.as_ref().map(|c| c.text.clone()),
        consistency,
        verified: problems.is_empty(),
        problems,
    })
}

/// Every logged run is in the store with the logged seal; every sealed run is logged once.
async fn runs_against_log(store: &Store, view: &LogView) -> Result<Vec<Problem>, StoreError> {
    let mut problems = Vec::new();
    let mut stored: HashMap<String, Option<LogEntry>> = HashMap::new();
    for (index, entry) in view.parsed.iter().enumerate() {
        let Some(entry) = entry else { continue };
        let object = Key::log_entry(index as u64).to_string();
        let Ok(run) = RunId::parse(&entry.run_id) else {
            problems.push(Problem::new(
                check::ENTRIES,
                object,
                "the run id is not valid",
            ));
            continue;
        };
        if !stored.contains_key(run.as_str()) {
            let found = match entry_for(store, &run).await {
                Ok(e) => e,
                Err(LogError::Store(e)) => return Err(e),
                Err(e) => {
                    problems.push(Problem::new(
                        check::REPLACED,
                        Key::seal(&run).as_str(),
                        e.to_string(),
                    ));
                    continue;
                }
            };
            stored.insert(run.to_string(), found);
        }
        match stored.get(run.as_str()) {
            Some(None) => problems.push(Problem::new(
                check::MISSING,
                format!("runs/{run}"),
                format!("logged at {object} (seal sha256 {}), but the run is gone from the store: a decided run was deleted", entry.seal_sha256),
            )),
            Some(Some(s)) if s != entry => problems.push(Problem::mismatch(
                check::REPLACED,
                Key::seal(&run).as_str(),
                &entry.seal_sha256,
                &s.seal_sha256,
                format!("run {run} is not the run logged at {object} (outcome {} then, {} now): it was replaced or judged again", entry.outcome, s.outcome),
            )),
            _ => {}
        }
    }
    for (run, indices) in &view.by_run {
        if indices.len() > 1 {
            let at: Vec<String> = indices.iter().map(u64::to_string).collect();
            problems.push(Problem::new(
                check::RELOGGED,
                format!("runs/{run}"),
                format!(
                    "logged {} times (leaves {}): a decided run was judged again under the same id",
                    indices.len(),
                    at.join(", ")
                ),
            ));
        }
    }
    for run in store.list_runs().await? {
        if view.by_run.contains_key(run.as_str()) || !store.exists(&Key::seal(&run)).await? {
            continue;
        }
        problems.push(Problem::new(
            check::UNLOGGED,
            format!("runs/{run}"),
            "sealed, but not in the transparency log: an extra run nobody appended, or a dropped entry",
        ));
    }
    Ok(problems)
}

/// Append-only consistency of the store's log with a checkpoint the auditor kept.
fn against_old(
    view: &LogView,
    trusted: &[[u8; 32]],
    old: &[u8],
    problems: &mut Vec<Problem>,
) -> Option<Consistency> {
    let object = "--checkpoint";
    let old = match tlog::open_checkpoint(old, trusted) {
        Ok(c) => c,
        Err(e) => {
            problems.push(Problem::new(
                check::CONSISTENCY,
                object,
                format!("the older checkpoint does not verify: {e}"),
            ));
            return None;
        }
    };
    if let Some(latest) = &view.latest {
        if latest.origin != old.origin {
            problems.push(Problem::mismatch(
                check::CONSISTENCY,
                object,
                &old.origin,
                &latest.origin,
                "the store's log has another origin",
            ));
            return None;
        }
    }
    if old.size > view.size() {
        problems.push(Problem::mismatch(
            check::CONSISTENCY,
            object,
            format!("at least {} entries", old.size),
            format!("{} entries", view.size()),
            "the store's log is shorter than a checkpoint taken before: the store was rolled back or entries were dropped, and every run logged after them is unaccounted for",
        ));
        return None;
    }
    let root = view.tree.root(old.size).ok()?;
    if root != old.root {
        let fork = view.signed.get(&old.size).is_some_and(|r| *r != old.root);
        problems.push(Problem::mismatch(
            if fork { check::FORK } else { check::CONSISTENCY },
            object,
            tlog::hex(&old.root),
            tlog::hex(&root),
            format!("the store's first {} entries are not the ones your checkpoint signed{}: the log was rewritten", old.size, if fork { " (the store holds another signed checkpoint of that size: a fork)" } else { "" }),
        ));
        return None;
    }
    let latest = view.latest.as_ref()?;
    if latest.size < old.size {
        problems.push(Problem::mismatch(check::CONSISTENCY, object, old.size, latest.size, "the store's latest checkpoint is older than yours: checkpoints were deleted or rolled back"));
        return None;
    }
    let proof = view.tree.consistency(old.size, latest.size).ok()?;
    if let Err(e) = tlog::check_consistency(&proof, old.size, &old.root, latest.size, &latest.root)
    {
        problems.push(Problem::new(check::CONSISTENCY, object, e.to_string()));
        return None;
    }
    Some(Consistency {
        old_size: old.size,
        old_root: tlog::hex(&old.root),
        new_size: latest.size,
        new_root: tlog::hex(&latest.root),
        proof: proof.iter().map(tlog::hex).collect(),
    })
}
