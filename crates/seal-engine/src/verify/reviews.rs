//! Reviews of a sealed run (the engine's review use case stores them): read and checked here,
//! as part of the run's verification (docs/DESIGN.md §7, "Reviews").

use seal_core::canonical::Hash;
use seal_core::fault::HasFault;
use seal_core::ids::RunId;
use seal_core::review::{self, ReviewError, ReviewStatement, RunFacts};
use seal_core::sealing::PublicKey;
use seal_core::vocab::AuditCheck;
use seal_store::{Key, Store, StoreError};

use super::VerifiedRun;
use crate::audit::{self, Problem};
use seal_log::LogView;

/// The trust a review is checked under: the seal keys (the run's seal; never a reviewer's)
/// and the reviewer keys.
#[derive(Debug, Clone, Copy)]
pub struct Trust<'a> {
    pub seal: &'a [PublicKey],
    pub reviewers: &'a [PublicKey],
}

/// The run's reviews as stored: `(index, key)` in index order, and the other objects of the
/// reviews folder (names that are not a review's).
pub async fn stored_keys(store: &Store, run: &RunId) -> Result<audit::StoredReviews, StoreError> {
    let listing = store.list(&Key::reviews_dir(run)).await?;
    Ok(audit::reviews_listed(run, &listing.keys, &listing.foreign))
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
    pub bytes: bytes::Bytes,
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
    read_listed(store, &numbered, facts, reviewers).await
}

/// [`read_checked`] of the reviews `numbered` (from [`stored_keys`], in index order).
async fn read_listed(
    store: &Store,
    numbered: &[(u64, Key)],
    facts: &mut RunFacts,
    reviewers: &[PublicKey],
) -> Result<Vec<Checked>, StoreError> {
    let mut out = Vec::with_capacity(numbered.len());
    for (index, key) in numbered.iter().cloned() {
        // An object that cannot be what seal wrote (a link, a FIFO, over the size limit) is
        // this review's problem, named; only an unreachable store stops the check.
        let (bytes, result) = match store.get(&key).await {
            Ok(bytes) => {
                let result = review::check_stored(index, &bytes, facts, reviewers);
                (bytes, result)
            }
            Err(e) if e.fault().is_environmental() => return Err(e),
            Err(e) => (
                bytes::Bytes::new(),
                Err(ReviewError {
                    refusal: review::Refusal::Invalid,
                    check: AuditCheck::ReviewSignature,
                    detail: format!("unreadable: {e}"),
                }),
            ),
        };
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
    // The audit of a run whose seal verified listed its whole folder, reviews included.
    let fetched;
    let (numbered, other) = match proof.and_then(|p| p.reviews.as_ref()) {
        Some(listed) => listed,
        None => {
            fetched = stored_keys(store, run).await?;
            &fetched
        }
    };
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
    // Every review the log holds of this run is stored: deleting the latest review is never
    // a silent fall back to the one before it.
    problems.extend(
        log.missing_reviews(run, numbered.iter().map(|(i, _)| *i))
            .into_iter()
            .map(Problem::from),
    );
    let Some(proof) = proof.filter(|_| !numbered.is_empty()) else {
        return Ok(problems);
    };
    let mut facts = facts(run, proof, trust.seal);
    for c in read_listed(store, numbered, &mut facts, trust.reviewers).await? {
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
