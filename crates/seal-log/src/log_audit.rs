//! `seal log verify` (docs/DESIGN.md §13, "Checks"): the log read whole against itself, its
//! tiles and pointers, the runs and reviews in the store, and an older checkpoint.

use serde::Serialize;
use std::collections::HashMap;

use crate::cache::pointer;
use crate::error::LogError;
use crate::finding::Finding;
use crate::storage::LogStorage;
use crate::stored::{stored_run, StoredRun};
use crate::view::{review_missing, LogView, WholeLog};
use seal_core::ids::RunId;
use seal_core::tlog::{self, LogTrust};
use seal_core::vocab::AuditCheck;
use seal_store::{Key, StoreError};

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
    /// Every `seal log rebuild` recorded in the log.
    pub rebuilds: Vec<RebuildNote>,
    /// Logged runs whose seal is not stored yet: a finalize stopped between the log append
    /// and the seal write; finalizing the run again stores the very seal logged.
    pub seal_pending: Vec<String>,
    /// Every review entry of the log.
    pub reviews: Vec<ReviewNote>,
    /// Logged reviews not stored (`runs/<id>/reviews/<n>.dsse.json`): a review stopped between
    /// its log append and its write (sending it again stores it), or one that lost its index
    /// to a concurrent review.
    pub review_pending: Vec<String>,
    /// Every signed reliability report the log publishes.
    pub reports: Vec<ReportNote>,
    /// Stored hash tiles found to be the entries' hashes.
    pub tiles_checked: u64,
    /// Tiles of the latest checkpoint that are not stored (0 for a log that holds none yet:
    /// its next checkpoint writes them).
    pub tiles_missing: u64,
    /// Leaves of runs the latest checkpoint covers whose pointer is not stored.
    pub pointers_missing: u64,
    pub verified: bool,
    pub problems: Vec<Finding>,
}

/// A review entry, as `seal log verify` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewNote {
    pub leaf_index: u64,
    pub run_id: String,
    pub review_index: u64,
    pub review_sha256: String,
    pub key_id: String,
    pub reviewed_at: String,
}

/// A reliability report's entry, as `seal log verify` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportNote {
    pub leaf_index: u64,
    pub report_sha256: String,
    pub key_id: String,
    pub generated_at: String,
}

/// A rebuild entry, as `seal log verify` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RebuildNote {
    pub leaf_index: u64,
    pub rebuilt_at: String,
    pub kept_entries: u64,
    pub moved_objects: u64,
    pub superseded: Option<String>,
    pub runs_appended: u64,
    pub problem_count: u64,
}

/// `seal log verify`: the log's own integrity, every logged run against the store, every
/// sealed run in the store against the log, and, given an older checkpoint, append-only
/// consistency with it.
pub async fn verify_log(
    store: &impl LogStorage,
    trust: &LogTrust,
    old: Option<&[u8]>,
) -> Result<LogReport, StoreError> {
    let mut whole = WholeLog::load(store, trust).await?;
    let mut problems = std::mem::take(&mut whole.view.problems);
    let (against, seal_pending) = runs_against_log(store, &whole).await?;
    let view = &whole.view;
    problems.extend(against);
    // A logged seal not stored fails the log: an interrupted finalize is completed by
    // finalizing again, a deleted seal is not; neither passes unnamed.
    problems.extend(seal_pending.iter().map(|run| {
        Finding::new(
            AuditCheck::SealMissing,
            format!("runs/{run}/seal.dsse.json"),
            "logged, and its logged evidence is stored, but not its seal: a finalize \
             interrupted between the log append and the seal (finalize the run again: it \
             stores the very seal logged), or the seal was deleted",
        )
    }));
    let (against, review_pending) = reviews_against_log(store, view).await?;
    problems.extend(against);
    problems.extend(reports_against_log(store, view).await?);
    let latest = view.latest.as_ref().map_or(0, |c| c.size);
    let tiles = crate::tiles::check(store, &view.tree, latest).await?;
    problems.extend(tiles.problems);
    let unpointed = missing_pointers(store, view, latest).await?;
    if let Some(first) = unpointed.first() {
        problems.push(Finding::new(
            AuditCheck::LogPointers,
            first.to_string(),
            format!(
                "{} pointer(s) of leaves the latest checkpoint covers are missing, from this \
                 one on: a leaf without its pointer is not seen by `seal verify` of its run \
                 alone. Deleted (or left by an interrupted backfill): the next start of \
                 `seal serve` or `seal judge` stores them again",
                unpointed.len()
            ),
        ));
    }
    let consistency = match old {
        Some(old) => against_old(view, trust, old, &mut problems),
        None => None,
    };
    let rebuilds = view
        .rebuilds
        .iter()
        .map(|(i, r)| RebuildNote {
            leaf_index: *i,
            rebuilt_at: r.rebuilt_at.clone(),
            kept_entries: r.kept_entries,
            moved_objects: r.moved_objects,
            superseded: r.superseded.clone(),
            runs_appended: r.runs_appended,
            problem_count: r.problem_count,
        })
        .collect();
    Ok(LogReport {
        origin: view.latest.as_ref().map(|c| c.origin.clone()),
        entries: view.size(),
        runs_logged: view.by_run.len(),
        checkpoint_size: view.latest.as_ref().map(|c| c.size),
        checkpoint: view.latest.as_ref().map(|c| c.text.clone()),
        consistency,
        rebuilds,
        seal_pending,
        reviews: view
            .reviews
            .iter()
            .map(|(i, r)| ReviewNote {
                leaf_index: *i,
                run_id: r.run_id.clone(),
                review_index: r.review_index,
                review_sha256: r.review_sha256.clone(),
                key_id: r.key_id.clone(),
                reviewed_at: r.reviewed_at.clone(),
            })
            .collect(),
        review_pending,
        reports: view
            .reports
            .iter()
            .map(|(i, r)| ReportNote {
                leaf_index: *i,
                report_sha256: r.report_sha256.clone(),
                key_id: r.key_id.clone(),
                generated_at: r.generated_at.clone(),
            })
            .collect(),
        tiles_checked: tiles.checked,
        tiles_missing: tiles.missing.len() as u64,
        pointers_missing: unpointed.len() as u64,
        verified: problems.is_empty(),
        problems,
    })
}

/// `seal log verify`: the pointers missing for the leaves of runs that the latest checkpoint
/// (`checkpoint` leaves) covers, in leaf order. A pointer is stored before any checkpoint
/// covering its leaf ([`crate::Log`]), so a missing one was deleted (or the log predates
/// pointers and only some were stored): a run whose pointers are all gone is read from the
/// whole log, but one that keeps some is read from those, and a leaf it lacks a pointer for
/// is one its own view does not see.
async fn missing_pointers(
    store: &impl LogStorage,
    view: &LogView,
    checkpoint: u64,
) -> Result<Vec<Key>, StoreError> {
    let listed = store.list(seal_core::key::LOG_RUNS).await?.keys;
    // A log that holds no pointer at all predates them (as for tiles): every run's own view
    // then reads the whole log, so nothing is hidden, and the next admission stores them.
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    let stored: std::collections::HashSet<&str> = listed.iter().map(Key::as_str).collect();
    let seals = view
        .by_run
        .iter()
        .flat_map(|(run, leaves)| leaves.iter().map(move |l| (l.index, run.as_str())));
    let reviews = view.reviews.iter().map(|(i, r)| (*i, r.run_id.as_str()));
    let mut missing: Vec<(u64, Key)> = seals
        .chain(reviews)
        .filter(|(index, _)| *index < checkpoint)
        .filter_map(|(index, run)| pointer(run, index))
        .filter(|(_, k)| !stored.contains(k.as_str()))
        .collect();
    missing.sort_by_key(|(i, _)| *i);
    Ok(missing.into_iter().map(|(_, k)| k).collect())
}

/// Every logged run is in the store with the logged seal (or, its finalize interrupted
/// between the append and the seal write, with the logged evidence: returned apart); every
/// sealed run is logged once.
async fn runs_against_log(
    store: &impl LogStorage,
    whole: &WholeLog,
) -> Result<(Vec<Finding>, Vec<String>), StoreError> {
    let view = &whole.view;
    let mut problems = Vec::new();
    let mut pending = Vec::new();
    let mut stored: HashMap<String, StoredRun> = HashMap::new();
    for index in 0..whole.entries.len() as u64 {
        let Some(entry) = whole.seal_entry(index) else {
            continue;
        };
        let object = Key::log_entry(index).to_string();
        let Ok(run) = RunId::parse(&entry.run_id) else {
            problems.push(Finding::new(
                AuditCheck::LogEntries,
                object,
                "the run id is not valid",
            ));
            continue;
        };
        if !stored.contains_key(run.as_str()) {
            let found = match stored_run(store, &run).await {
                Ok(s) => s,
                Err(LogError::Store(e)) => return Err(e),
                Err(e) => {
                    problems.push(Finding::new(
                        AuditCheck::RunReplaced,
                        Key::seal(&run).as_str(),
                        e.to_string(),
                    ));
                    continue;
                }
            };
            stored.insert(run.to_string(), found);
        }
        match stored.get(run.as_str()) {
            Some(StoredRun::Absent) => problems.push(Finding::new(
                AuditCheck::RunMissing,
                format!("runs/{run}"),
                format!("logged at {object} (outcome {}, decided {}, seal sha256 {}), but the run is gone from the store: a decided run was deleted", entry.outcome, entry.decided_at, entry.seal_sha256),
            )),
            Some(StoredRun::Pending { evidence_sha256 }) if *evidence_sha256 == entry.evidence_sha256 => {
                pending.push(run.to_string())
            }
            Some(StoredRun::Pending { evidence_sha256 }) => problems.push(Finding::mismatch(
                AuditCheck::RunReplaced,
                Key::evidence(&run).as_str(),
                &entry.evidence_sha256,
                evidence_sha256,
                format!("run {run} is not the run logged at {object}, and holds no seal: its evidence was replaced"),
            )),
            Some(StoredRun::Sealed(s)) if *s != entry => problems.push(Finding::mismatch(
                AuditCheck::RunReplaced,
                Key::seal(&run).as_str(),
                &entry.seal_sha256,
                &s.seal_sha256,
                format!("run {run} is not the run logged at {object} (outcome {} then, {} now): it was replaced or judged again", entry.outcome, s.outcome),
            )),
            _ => {}
        }
    }
    problems.extend(view.by_run.keys().filter_map(|run| view.relogged(run)));
    for run in store.runs().await? {
        if view.by_run.contains_key(run.as_str()) || !store.exists(&Key::seal(&run)).await? {
            continue;
        }
        problems.push(Finding::new(
            AuditCheck::RunUnlogged,
            format!("runs/{run}"),
            "sealed, but not in the transparency log: an extra run nobody appended, or a dropped entry",
        ));
    }
    pending.dedup();
    Ok((problems, pending))
}

/// Every stored review is logged (`review_log`), and every logged review is stored or listed
/// as pending: a review at its index whose bytes no entry names is a problem.
async fn reviews_against_log(
    store: &impl LogStorage,
    view: &LogView,
) -> Result<(Vec<Finding>, Vec<String>), StoreError> {
    let mut problems = Vec::new();
    let mut pending = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for run in store.runs().await? {
        for key in store.list(&Key::reviews_dir(&run)).await?.keys {
            let Some(index) = key.review_number(&run) else {
                continue; // `seal verify` names it (an object nobody bound).
            };
            let (hash, _) = store.hash(&key).await?;
            seen.insert((run.to_string(), index));
            let logged = view.reviews.iter().any(|(_, r)| {
                r.run_id == run.as_str()
                    && r.review_index == index
                    && r.review_sha256 == hash.as_str()
            });
            if !logged {
                problems.push(Finding::new(
                    AuditCheck::ReviewLog,
                    key.as_str(),
                    format!("stored, but not in the transparency log (sha256 {hash}): a review nobody logged"),
                ));
            }
        }
    }
    for (leaf, r) in &view.reviews {
        if !seen.contains(&(r.run_id.clone(), r.review_index)) {
            pending.push(format!(
                "runs/{}/reviews/{}.dsse.json (leaf {leaf})",
                r.run_id, r.review_index
            ));
            problems.push(review_missing(*leaf, r));
        }
    }
    Ok((problems, pending))
}

/// Every report the log publishes is stored as the bytes it names (`report_missing`): a
/// published report that displeased cannot be deleted unnoticed. A stored report no leaf
/// names was never published (the leaf is the commit) and is no problem.
async fn reports_against_log(
    store: &impl LogStorage,
    view: &LogView,
) -> Result<Vec<Finding>, StoreError> {
    let mut problems = Vec::new();
    for (leaf, r) in &view.reports {
        let Some(sha) = r.sha256() else {
            problems.push(Finding::new(
                AuditCheck::ReportMissing,
                Key::log_entry(*leaf).as_str(),
                "a report entry whose reportSha256 is not a sha256",
            ));
            continue;
        };
        let key = Key::report(&sha);
        let why = match store.get_opt(&key).await? {
            None => "not stored: deleted",
            Some(bytes) if seal_core::canonical::Hash::of(&bytes) != sha => {
                "stored, but not the bytes logged: replaced"
            }
            Some(_) => continue,
        };
        problems.push(Finding::new(
            AuditCheck::ReportMissing,
            key.as_str(),
            format!(
                "logged at leaf {leaf} (signed by key {}, generated at {}), {why}",
                r.key_id, r.generated_at
            ),
        ));
    }
    Ok(problems)
}

/// Append-only consistency of the store's log with a checkpoint the auditor kept.
fn against_old(
    view: &LogView,
    trust: &LogTrust,
    old: &[u8],
    problems: &mut Vec<Finding>,
) -> Option<Consistency> {
    let object = "--checkpoint";
    let old = match trust.open_checkpoint(old) {
        Ok(c) => c,
        Err(e) => {
            problems.push(Finding::new(
                AuditCheck::LogConsistency,
                object,
                format!("the older checkpoint does not verify: {e}"),
            ));
            return None;
        }
    };
    if let Some(latest) = &view.latest {
        if latest.origin != old.origin {
            problems.push(Finding::mismatch(
                AuditCheck::LogConsistency,
                object,
                &old.origin,
                &latest.origin,
                "the store's log has another origin",
            ));
            return None;
        }
    }
    if old.size > view.size() {
        problems.push(Finding::mismatch(
            AuditCheck::LogConsistency,
            object,
            format!("at least {} entries", old.size),
            format!("{} entries", view.size()),
            format!("the store's log is shorter than a checkpoint taken before: the store was rolled back or entries were dropped, and every run logged after them is unaccounted for{}", view.rebuilt_below(old.size)),
        ));
        return None;
    }
    let root = view.tree.root(old.size).ok()?;
    if root != old.root {
        let fork = view.signed.get(&old.size).is_some_and(|r| *r != old.root);
        problems.push(Finding::mismatch(
            if fork { AuditCheck::LogFork } else { AuditCheck::LogConsistency },
            object,
            tlog::hex(&old.root),
            tlog::hex(&root),
            format!("the store's first {} entries are not the ones your checkpoint signed{}: the log was rewritten{}", old.size, if fork { " (the store holds another signed checkpoint of that size: a fork)" } else { "" }, view.rebuilt_below(old.size)),
        ));
        return None;
    }
    let latest = view.latest.as_ref()?;
    if latest.size < old.size {
        problems.push(Finding::mismatch(AuditCheck::LogConsistency, object, old.size, latest.size, "the store's latest checkpoint is older than yours: checkpoints were deleted or rolled back"));
        return None;
    }
    let proof = view.tree.consistency(old.size, latest.size).ok()?;
    if let Err(e) = tlog::check_consistency(&proof, old.size, &old.root, latest.size, &latest.root)
    {
        problems.push(Finding::new(
            AuditCheck::LogConsistency,
            object,
            e.to_string(),
        ));
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
