//! Reviews of sealed runs, as a use case (`seal review`, `POST /v1/runs/{id}/reviews`,
//! `seal verify`): the rules are `seal_core::review`'s; this module reads what they are
//! checked against from the store, logs an admitted review and stores it.
//!
//! Order of a submission: the run is proven first ([`crate::verify::prove`]: a run that does
//! not verify is never reviewed), the stored reviews are read and each re-checked, the new one
//! is admitted as the next of the chain, its entry is appended to the transparency log, and
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

use crate::audit::Problem;
use crate::transparency::{Log, LogError, LogView};
use crate::verify::{self, RunReport, VerifiedRun};
use seal_core::canonical::Hash;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
use seal_core::review::{self, AdmittedReview, ReviewError, ReviewStatement, RunFacts};
use seal_core::sealing::{PublicKey, SigningKey};
use seal_core::tlog::ReviewEntry;
use seal_core::vocab::AuditCheck;
use seal_store::{Key, Store, StoreError};

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

/// The trust a review is checked under: the seal keys (the run's seal; never a reviewer's)
/// and the reviewer keys.
#[derive(Debug, Clone, Copy)]
pub struct Trust<'a> {
    pub seal: &'a [PublicKey],
    pub reviewers: &'a [PublicKey],
}

/// The run's reviews as stored: `(index, key)` in index order, and the other objects of the
/// reviews folder (names that are not a review's).
pub async fn stored_keys(
    store: &Store,
    run: &RunId,
) -> Result<(Vec<(u64, Key)>, Vec<String>), StoreError> {
    let listing = store.list(&Key::reviews_dir(run)).await?;
    let mut numbered = Vec::new();
    let mut other: Vec<String> = listing.foreign.iter().map(|f| f.to_string()).collect();
    for k in listing.keys {
        match k.review_number(run) {
            Some(n) => numbered.push((n, k)),
            None => other.push(k.to_string()),
        }
    }
    numbered.sort();
    Ok((numbered, other))
}

/// What the reviews of a proven run are checked against (no reviews yet).
pub fn facts(run: &RunId, proof: &VerifiedRun, seal_trusted: &[PublicKey]) -> RunFacts {
    RunFacts {
        run: run.clone(),
        evidence_sha256: proof.evidence_hash().clone(),
        seal_sha256: proof.seal_hash().clone(),
        obligations: proof
            .evidence()
            .proof_obligations
            .iter()
            .map(|o| o.id.clone())
            .collect(),
        seal_key_ids: seal_trusted.iter().map(|k| k.key_id.clone()).collect(),
        reviews: Vec::new(),
    }
}

/// One stored review, read and checked.
pub struct Checked {
    pub index: u64,
    pub key: Key,
    pub bytes: Bytes,
    pub result: Result<ReviewStatement, ReviewError>,
}

/// Reads the run's reviews in order and checks each against `facts` (extended with each
/// review's hash, so the chain is checked too). A gap in the indices is a `review_log` error
/// of the review after it.
pub async fn read_checked(
    store: &Store,
    run: &RunId,
    facts: &mut RunFacts,
    reviewers: &[PublicKey],
) -> Result<Vec<Checked>, StoreError> {
    let (numbered, _) = stored_keys(store, run).await?;
    let mut out = Vec::with_capacity(numbered.len());
    for (index, key) in numbered {
        let bytes = store.get(&key).await?;
        let result = review::check_stored(index, &bytes, facts, reviewers);
        facts.reviews.push(Hash::of(&bytes));
        out.push(Checked {
            index,
            key,
            bytes,
            result,
        });
    }
    Ok(out)
}

/// `seal verify`'s review checks of a run whose seal and evidence verified: every object of
/// the reviews folder is a review; every review is signed by a trusted reviewer key, about
/// this run's evidence and seal, about its obligations, chained, and logged.
/// `proof` is `None` when the run itself did not verify: its reviews cannot be checked then,
/// only counted (the run's report says why).
pub async fn check_run_reviews(
    store: &Store,
    run: &RunId,
    proof: Option<&VerifiedRun>,
    trust: Trust<'_>,
    log: &LogView,
) -> Result<Vec<Problem>, StoreError> {
    let (numbered, other) = stored_keys(store, run).await?;
    let mut problems: Vec<Problem> = other
        .iter()
        .map(|k| {
            Problem::new(
                AuditCheck::Refs,
                k.as_str(),
                "unbound object: not a review (runs/<id>/reviews/<n>.dsse.json)",
            )
        })
        .collect();
    let Some(proof) = proof.filter(|_| !numbered.is_empty()) else {
        return Ok(problems);
    };
    let mut facts = facts(run, proof, trust.seal);
    for c in read_checked(store, run, &mut facts, trust.reviewers).await? {
        match c.result {
            Err(e) => problems.push(Problem::new(
                e.check,
                c.key.as_str(),
                format!("review {}: {}", c.index, e.detail),
            )),
            Ok(_) => {
                if let Some(why) = log.check_review(run, c.index, Hash::of(&c.bytes).as_str()) {
                    problems.push(Problem::new(
                        AuditCheck::ReviewLog,
                        c.key.as_str(),
                        format!("review {}: {why}", c.index),
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// Proves the run, admits `envelope` as its next review, logs it, stores it.
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
    for c in read_checked(store, run, &mut facts, trust.reviewers).await? {
        let sha256 = Hash::of(&c.bytes);
        let result = match c.result {
            Ok(_) if !log.review_logged(run, c.index, &sha256, seal_key).await? => {
                Err(ReviewError {
                    refusal: review::Refusal::Invalid,
                    check: AuditCheck::ReviewLog,
                    detail: format!(
                        "not in the transparency log (sha256 {sha256}): a review nobody logged"
                    ),
                })
            }
            other => other.map(|_| ()),
        };
        if let Err(error) = result {
            return Err(SubmitError::Stored {
                run: run.clone(),
                key: c.key.to_string(),
                error,
            });
        }
    }
    let admitted =
        review::admit(envelope, &facts, trust.reviewers).map_err(|error| SubmitError::Refused {
            run: run.clone(),
            error,
        })?;
    store_admitted(store, log, seal_key, &admitted).await
}

/// Serialises this process's submissions (see the module doc).
static SUBMITTING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Log, then store.
async fn store_admitted(
    store: &Store,
    log: &Log,
    seal_key: &SigningKey,
    admitted: &AdmittedReview,
) -> Result<Stored, SubmitError> {
    let p = &admitted.statement().predicate;
    let entry = ReviewEntry::new(
        admitted.run().as_str(),
        admitted.index(),
        admitted.hash().as_str(),
        admitted.key_id(),
        &p.reviewed_at,
    );
    let appended = log.append_review(&entry, seal_key).await?;
    let put = match store.put_review(admitted).await {
        Ok(put) => put,
        Err(StoreError::Conflict { .. }) => {
            return Err(SubmitError::Refused {
                run: admitted.run().clone(),
                error: conflict(admitted.index()),
            })
        }
        Err(e) => return Err(e.into()),
    };
    tracing::info!(
        run = %admitted.run(),
        index = admitted.index(),
        leaf = appended.index,
        "review stored"
    );
    Ok(Stored {
        index: admitted.index(),
        key: admitted.key(),
        sha256: admitted.hash().clone(),
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
