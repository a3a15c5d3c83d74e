//! Reviews of sealed runs, as a use case (`seal review`, `POST /v1/runs/{id}/reviews`,
//! `seal verify`): the rules are `seal_core::review`'s; this module reads what they are
//! checked against from the store, logs a checked review and stores it.
//!
//! Order of a submission: the run is proven first ([`crate::verify::prove`]: a run that does
//! not verify is never reviewed), the stored reviews are read and each re-checked, the new one
//! is checked as the next of the chain, its entry is appended to the transparency log, and
//! only then is it stored, create-only (log before store, as for seals: a review stored but
//! not logged was planted). Submissions of one process are serialised, so two reviews sent
//! at once never both claim one index here; across replicas the loser of the create gets
//! `review_conflict`, and its logged entry is listed as pending by `seal log verify`.
//!
//! What it ignores, and why: reviews are never bound by the evidence (they come after it), so
//! an import (`seal replay --from`) copies only the sealed run and leaves its reviews behind:
//! a review names the importing store's log nowhere, and would be unlogged there.

use bytes::Bytes;
use std::collections::BTreeSet;

use crate::verify::{self, RunReport};
use seal_core::canonical::Hash;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
use seal_core::review::{self, CheckedReview, ReviewError, ReviewStatement};
use seal_core::sealing::SigningKey;
use seal_core::tlog::ReviewEntry;
use seal_core::vocab::AuditCheck;
use seal_log::rebuild::StoredReview;
use seal_log::Finding;
use seal_log::{Log, LogError};
use seal_store::{Key, Store, StoreError};

// Reading and checking stored reviews is `seal verify`'s (it checks them on every run); the
// use case re-exports it.
pub use crate::verify::{check_run_reviews, facts, read_checked, stored_keys, Checked, Trust};

/// Why a review was not stored.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("no run {run} in the store")]
    NotFound { run: RunId },
    #[error("run {} does not verify ({}): it is not reviewed", .0.run_id, .0.summary(3))]
    NotVerified(Box<RunReport>),
    /// The review itself is refused (untrusted, invalid, conflict, stale).
    #[error("review of run {run} refused: {error}")]
    Refused { run: RunId, error: ReviewError },
    /// A stored review of the run does not check: nothing is chained to it.
    #[error("run {run}: stored review {key} does not check ({error}); nothing is added after it")]
    Stored {
        run: RunId,
        key: String,
        error: ReviewError,
    },
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl HasFault for SubmitError {
    fn fault(&self) -> Fault {
        match self {
            SubmitError::NotFound { .. }
            | SubmitError::NotVerified(_)
            | SubmitError::Refused { .. } => Fault::Caller,
            SubmitError::Stored { .. } => Fault::Corruption,
            SubmitError::Log(e) => e.fault(),
            SubmitError::Store(e) => e.fault(),
        }
    }
}

/// A stored review.
#[derive(Debug, Clone)]
pub struct Stored {
    pub index: u64,
    pub key: Key,
    pub sha256: Hash,
    /// Its log leaf.
    pub leaf_index: u64,
    pub created: bool,
}

/// Proves the run, checks `envelope` as its next review, logs it, stores it.
pub async fn submit(
    store: &Store,
    log: &Log,
    seal_key: &SigningKey,
    trust: Trust<'_>,
    run: &RunId,
    envelope: &[u8],
) -> Result<Stored, SubmitError> {
    if !verify::run_exists(store, run).await? {
        return Err(SubmitError::NotFound { run: run.clone() });
    }
    let proof = match verify::prove(store, run, trust.seal).await? {
        Ok(p) => p,
        Err(report) => return Err(SubmitError::NotVerified(Box::new(report))),
    };
    // One submission at a time in this process: the index is read, then taken.
    let _turn = SUBMITTING.lock().await;
    let mut facts = facts(run, &proof, trust.seal);
    let checked = read_checked(store, run, &mut facts, trust.reviewers).await?;
    for c in &checked {
        let sha256 = Hash::of(&c.bytes);
        let result = match &c.result {
            Ok(_) if !log.review_logged(run, c.index, &sha256, seal_key).await? => {
                Err(ReviewError {
                    refusal: review::Refusal::Invalid,
                    check: AuditCheck::ReviewLog,
                    detail: format!(
                        "not in the transparency log (sha256 {sha256}): a review nobody logged"
                    ),
                })
            }
            other => other.as_ref().map(|_| ()).map_err(Clone::clone),
        };
        if let Err(error) = result {
            return Err(SubmitError::Stored {
                run: run.clone(),
                key: c.key.to_string(),
                error,
            });
        }
    }
    // The same review sent again (a client retrying after a lost answer): the stored one, not
    // a conflict. Its bytes are what would be stored; every stored review checked above.
    if let Ok(canonical) = review::canonical_envelope(envelope) {
        if let Some(c) = checked
            .iter()
            .find(|c| c.bytes.as_ref() == canonical.as_slice())
        {
            if let Ok(st) = &c.result {
                return resent(log, seal_key, run, c, st).await;
            }
        }
    }
    let checked =
        review::check(envelope, &facts, trust.reviewers).map_err(|error| SubmitError::Refused {
            run: run.clone(),
            error,
        })?;
    store_checked(store, log, seal_key, &checked).await
}

/// The answer to a review stored already: its index, key, hash and log leaf.
async fn resent(
    log: &Log,
    seal_key: &SigningKey,
    run: &RunId,
    c: &crate::verify::Checked,
    st: &ReviewStatement,
) -> Result<Stored, SubmitError> {
    let sha256 = Hash::of(&c.bytes);
    let key_id = review::signer_key_id(&c.bytes).unwrap_or_default();
    let entry = ReviewEntry::new(
        run.as_str(),
        c.index,
        sha256.as_str(),
        &key_id,
        &st.predicate.reviewed_at,
    );
    let leaf_index =
        log.review_leaf(&entry, seal_key)
            .await?
            .ok_or_else(|| SubmitError::Stored {
                run: run.clone(),
                key: c.key.to_string(),
                error: ReviewError {
                    refusal: review::Refusal::Invalid,
                    check: AuditCheck::ReviewLog,
                    detail: format!("no log leaf names review {} (sha256 {sha256})", c.index),
                },
            })?;
    tracing::info!(run = %run, index = c.index, leaf = leaf_index, "review sent again: the stored one");
    Ok(Stored {
        index: c.index,
        key: c.key.clone(),
        sha256,
        leaf_index,
        created: false,
    })
}

/// Serialises this process's submissions (see the module doc).
static SUBMITTING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Log, then store.
async fn store_checked(
    store: &Store,
    log: &Log,
    seal_key: &SigningKey,
    checked: &CheckedReview,
) -> Result<Stored, SubmitError> {
    let p = &checked.statement().predicate;
    let entry = ReviewEntry::new(
        checked.run().as_str(),
        checked.index(),
        checked.hash().as_str(),
        checked.key_id(),
        &p.reviewed_at,
    );
    let appended = log.append_review(&entry, seal_key).await?;
    let put = match store.put_review(checked).await {
        Ok(put) => put,
        Err(StoreError::Conflict { .. }) => {
            return Err(SubmitError::Refused {
                run: checked.run().clone(),
                error: conflict(checked.index()),
            })
        }
        Err(e) => return Err(e.into()),
    };
    tracing::info!(
        run = %checked.run(),
        index = checked.index(),
        leaf = appended.index,
        "review stored"
    );
    Ok(Stored {
        index: checked.index(),
        key: checked.key(),
        sha256: checked.hash().clone(),
        leaf_index: appended.index,
        created: put.created,
    })
}

fn conflict(index: u64) -> ReviewError {
    ReviewError {
        refusal: review::Refusal::Conflict,
        check: AuditCheck::ReviewLog,
        detail: format!(
            "another review was stored as review {index} first: sign it again as the next"
        ),
    }
}

/// The stored review envelopes of a run, in order, as stored (`GET /v1/runs/{id}/reviews`),
/// each with whether it checks under `trust` and why not.
pub async fn list(
    store: &Store,
    run: &RunId,
    trust: Trust<'_>,
) -> Result<Vec<Listed>, SubmitError> {
    if !verify::run_exists(store, run).await? {
        return Err(SubmitError::NotFound { run: run.clone() });
    }
    let proof = match verify::prove(store, run, trust.seal).await? {
        Ok(p) => p,
        Err(report) => return Err(SubmitError::NotVerified(Box::new(report))),
    };
    let mut facts = facts(run, &proof, trust.seal);
    let checked = read_checked(store, run, &mut facts, trust.reviewers).await?;
    Ok(checked
        .into_iter()
        .map(|c| Listed {
            index: c.index,
            sha256: Hash::of(&c.bytes),
            problem: c.result.as_ref().err().map(|e| e.to_string()),
            statement: c.result.ok(),
            envelope: c.bytes,
        })
        .collect())
}

/// One stored review as listed.
#[derive(Debug, Clone)]
pub struct Listed {
    pub index: u64,
    pub sha256: Hash,
    pub envelope: Bytes,
    /// The statement, when the review checks.
    pub statement: Option<ReviewStatement>,
    /// Why it does not, when it does not.
    pub problem: Option<String>,
}

/// The latest trusted review's status of each obligation of a run (for labels and explain):
/// reviews that check, latest last; `None` when there is none.
pub fn latest_decisions(
    reviews: &[ReviewStatement],
) -> std::collections::BTreeMap<String, review::Status> {
    let mut out = std::collections::BTreeMap::new();
    for r in reviews {
        for d in &r.predicate.decisions {
            out.insert(d.obligation_id.clone(), d.status);
        }
    }
    out
}

/// Keys given as both seal and reviewer keys: refused when trust is configured.
pub fn overlapping(trust: Trust<'_>) -> Vec<String> {
    let seal: BTreeSet<&str> = trust.seal.iter().map(|k| k.key_id.as_str()).collect();
    trust
        .reviewers
        .iter()
        .filter(|k| seal.contains(k.key_id.as_str()))
        .map(|k| k.key_id.clone())
        .collect()
}

/// Every stored review of the store (runs in id order, reviews in order), checked for `seal log
/// rebuild` ([`seal_log::rebuild`]): its log entry when it is signed by a key of
/// `reviewers`, about its run's evidence and seal verified under `signers`, and chained; else
/// the problem, named. The log is not consulted: the rebuild decides which leaves it lacks.
pub async fn stored_for_rebuild(
    store: &Store,
    signers: &[seal_core::sealing::PublicKey],
    reviewers: &[seal_core::sealing::PublicKey],
) -> Result<Vec<StoredReview>, StoreError> {
    let mut runs = store.runs().await?.runs;
    runs.sort();
    let mut out = Vec::new();
    for run in runs {
        let (numbered, _) = stored_keys(store, &run).await?;
        if numbered.is_empty() {
            continue;
        }
        let proof = match verify::prove(store, &run, signers).await? {
            Ok(p) => p,
            Err(report) => {
                let (_, first) = &numbered[0];
                out.push(StoredReview {
                    key: first.clone(),
                    entry: Err(Finding::new(
                        AuditCheck::ReviewLog,
                        Key::reviews_dir(&run),
                        format!(
                            "the run does not verify ({}): its reviews cannot be relogged",
                            report.summary(1)
                        ),
                    )),
                });
                continue;
            }
        };
        let mut facts = facts(&run, &proof, signers);
        for c in read_checked(store, &run, &mut facts, reviewers).await? {
            let entry = match c.result {
                Ok(st) => {
                    let sha256 = Hash::of(&c.bytes);
                    let key_id = review::signer_key_id(&c.bytes).unwrap_or_default();
                    Ok(ReviewEntry::new(
                        run.as_str(),
                        c.index,
                        sha256.as_str(),
                        &key_id,
                        &st.predicate.reviewed_at,
                    ))
                }
                Err(e) => Err(Finding::new(
                    e.check,
                    c.key.as_str(),
                    format!(
                        "review {}: {} (trust its reviewer with --trust-reviewer, or move it out of the store)",
                        c.index, e.detail
                    ),
                )),
            };
            out.push(StoredReview { key: c.key, entry });
        }
    }
    Ok(out)
}
