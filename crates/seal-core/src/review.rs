//! A person's review of a sealed run (`seal review`, `POST /v1/runs/{id}/reviews`): an in-toto
//! Statement v1 in a DSSE envelope, signed by the **reviewer's own** ed25519 key, about the
//! run's evidence and seal bytes. Pure: bytes and facts in, a verdict out.
//!
//! Main type: [`CheckedReview`], which only [`check`] makes (private fields), and which the
//! store's review writer demands; so no unchecked bytes are ever stored under
//! `runs/<id>/reviews/`. [`check_stored`] re-runs the same rules on what the store holds
//! (`seal verify`), naming each problem by the check it fails: `review_signature`,
//! `review_subject`, `review_content` (an obligation the run does not have), `review_log`.
//!
//! A review never changes the sealed evidence or the seal: it is bound to them by digest,
//! chained per run (`reviewIndex`, `previousReviewSha256`) and signed by a key seal never holds,
//! so a key trusted both as a seal key and as a reviewer key is refused as a reviewer key
//! (docs/DECISIONS.md, "Reviews are signed facts beside the seal").
//!
//! What the checks ignore, and why: the review's time (`reviewedAt`) is the reviewer's claim
//! (schema-checked as a date-time, never compared with a clock: the core reads none), and the
//! reviewer's name is a label, not an identity (the key is the identity).

use base64::Engine as _;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use crate::canonical::{self, Hash};
use crate::ids::RunId;
use crate::key::Key;
use crate::sealing::{pae, Digest, Envelope, PublicKey, SigningKey, Subject};
use crate::sealing::{PAYLOAD_TYPE, STATEMENT_TYPE};
use crate::vocab::AuditCheck;

/// The predicate type of a review statement.
pub const PREDICATE_TYPE: &str = "https://wanxiang.ai/seal/review/v1";
/// `predicate.schemaVersion` (what `seal validate` detects a review statement by).
pub const SCHEMA_VERSION: &str = "seal.review/1";
/// Longest reviewer name, in characters.
pub const MAX_REVIEWER: usize = 200;
/// Longest note, in characters.
pub const MAX_NOTE: usize = 8 * 1024;
/// Largest envelope read (a review is a few KB).
pub const MAX_ENVELOPE_BYTES: u64 = 256 * 1024;
/// Most obligations one review decides.
pub const MAX_DECISIONS: usize = 512;

/// A reviewer's status for one obligation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Satisfied,
    Failed,
    Missing,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Satisfied => "satisfied",
            Status::Failed => "failed",
            Status::Missing => "missing",
        }
    }
}

/// A status that is none of the three (its first 40 characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: a status is satisfied, failed or missing")]
pub struct UnknownStatus(String);

impl std::str::FromStr for Status {
    type Err = UnknownStatus;
    fn from_str(s: &str) -> Result<Status, UnknownStatus> {
        match s {
            "satisfied" => Ok(Status::Satisfied),
            "failed" => Ok(Status::Failed),
            "missing" => Ok(Status::Missing),
            other => Err(UnknownStatus(other.chars().take(40).collect())),
        }
    }
}

/// One obligation's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObligationDecision {
    pub obligation_id: String,
    pub status: Status,
}

/// What a reviewer states about a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviewPredicate {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: String,
    pub run_id: String,
    pub reviewer: String,
    /// RFC 3339 UTC, the reviewer's claim.
    pub reviewed_at: String,
    pub decisions: Vec<ObligationDecision>,
    pub note: Option<String>,
    /// sha256 of what the reviewer was shown (the canonical explain tree of the run).
    pub shown_sha256: String,
    /// 0 for the first review of the run, then 1, 2, … (its key is `reviews/<n>.dsse.json`).
    pub review_index: u64,
    /// sha256 of the stored envelope of review `reviewIndex - 1` (null for the first).
    pub previous_review_sha256: Option<String>,
}

/// The statement a review envelope carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewStatement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: ReviewPredicate,
}

/// What a review of a run is checked against: derived from the run's **verified** evidence
/// and seal, and the reviews stored before it.
#[derive(Debug, Clone)]
pub struct RunFacts {
    pub run: RunId,
    pub evidence_sha256: Hash,
    pub seal_sha256: Hash,
    /// The run's proof obligation ids.
    pub obligations: BTreeSet<String>,
    /// Key ids of the seal keys trusted: never trusted as a reviewer's.
    pub seal_key_ids: BTreeSet<String>,
    /// sha256 of each stored review envelope, in index order.
    pub reviews: Vec<Hash>,
}

impl RunFacts {
    /// The subjects every review of this run names, in this order.
    pub fn subjects(&self) -> Vec<Subject> {
        vec![
            Subject {
                name: Key::evidence(&self.run).as_str().to_string(),
                digest: Digest {
                    sha256: self.evidence_sha256.to_string(),
                },
            },
            Subject {
                name: Key::seal(&self.run).as_str().to_string(),
                digest: Digest {
                    sha256: self.seal_sha256.to_string(),
                },
            },
        ]
    }

    /// The statement of the next review of this run.
    pub fn statement(
        &self,
        reviewer: &str,
        reviewed_at: &str,
        decisions: Vec<ObligationDecision>,
        note: Option<String>,
        shown: &Hash,
    ) -> ReviewStatement {
        ReviewStatement {
            statement_type: STATEMENT_TYPE.into(),
            subject: self.subjects(),
            predicate_type: PREDICATE_TYPE.into(),
            predicate: ReviewPredicate {
                schema_version: SCHEMA_VERSION.into(),
                run_id: self.run.to_string(),
                reviewer: reviewer.into(),
                reviewed_at: reviewed_at.into(),
                decisions,
                note,
                shown_sha256: shown.to_string(),
                review_index: self.reviews.len() as u64,
                previous_review_sha256: self.reviews.last().map(|h| h.to_string()),
            },
        }
    }
}

/// A stored review that checks under the trusted reviewer keys and is in the transparency
/// log: what `seal explain` shows as a human node, what `seal stats` compares the judges with,
/// and what takes a run off the adjudication queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedReview {
    /// Its `reviewIndex` (`reviews/<index>.dsse.json`).
    pub index: u64,
    /// sha256 of the stored envelope.
    pub sha256: Hash,
    /// The reviewer key's id.
    pub key_id: String,
    pub predicate: ReviewPredicate,
}

/// The latest decision of each obligation over `reviews` (in index order: a later review
/// overrides an earlier one on the obligations it decides).
pub fn latest_decisions(reviews: &[TrustedReview]) -> std::collections::BTreeMap<String, Status> {
    let mut out = std::collections::BTreeMap::new();
    for r in reviews {
        for d in &r.predicate.decisions {
            out.insert(d.obligation_id.clone(), d.status);
        }
    }
    out
}

/// The key id of a review envelope's one signature (None when the bytes are no envelope).
pub fn signer_key_id(bytes: &[u8]) -> Option<String> {
    let env: Envelope = crate::json::parse_as(bytes, MAX_ENVELOPE_BYTES).ok()?;
    match env.signatures.as_slice() {
        [s] => Some(s.keyid.clone()),
        _ => None,
    }
}

/// Signs a review statement with the reviewer's key: canonical payload, DSSE PAE, ed25519.
/// Returns the canonical envelope bytes (what is stored and logged).
pub fn sign(key: &SigningKey, statement: &ReviewStatement) -> Result<Vec<u8>, ReviewError> {
    let payload = canonical::canonical_bytes(statement).map_err(invalid_content)?;
    let env = crate::sealing::envelope(key, &payload);
    canonical::canonical_bytes(&env).map_err(invalid_content)
}

fn invalid_content(e: impl std::fmt::Display) -> ReviewError {
    ReviewError::new(Refusal::Invalid, AuditCheck::ReviewContent, e.to_string())
}

/// How a review is refused (the HTTP answer: 403, 422, 409, 409).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not signed by a trusted reviewer key (`untrusted_reviewer`).
    Untrusted,
    /// Malformed, badly signed, about other bytes or obligations the run lacks (`invalid_review`).
    Invalid,
    /// Another review holds its index (`review_conflict`).
    Conflict,
    /// It chains to a review that is not the run's latest (`review_stale`).
    Stale,
}

impl Refusal {
    /// The API error code.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Untrusted => "untrusted_reviewer",
            Refusal::Invalid => "invalid_review",
            Refusal::Conflict => "review_conflict",
            Refusal::Stale => "review_stale",
        }
    }
}

/// Why a review is refused: the kind, the check it fails, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{check}: {detail}")]
pub struct ReviewError {
    pub refusal: Refusal,
    pub check: AuditCheck,
    pub detail: String,
}

impl ReviewError {
    fn new(refusal: Refusal, check: AuditCheck, detail: impl Into<String>) -> ReviewError {
        ReviewError {
            refusal,
            check,
            detail: detail.into(),
        }
    }
}

/// A review that passed every check of [`check`] for its run: the only thing the store's
/// review writer accepts.
#[derive(Debug, Clone)]
pub struct CheckedReview {
    run: RunId,
    index: u64,
    bytes: Bytes,
    hash: Hash,
    statement: ReviewStatement,
    key_id: String,
}

impl CheckedReview {
    pub fn run(&self) -> &RunId {
        &self.run
    }
    /// Its `reviewIndex`, also its key's number.
    pub fn index(&self) -> u64 {
        self.index
    }
    /// The exact envelope bytes (canonical JSON).
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
    pub fn hash(&self) -> &Hash {
        &self.hash
    }
    pub fn statement(&self) -> &ReviewStatement {
        &self.statement
    }
    /// The reviewer key's id (sha256 of the raw public key).
    pub fn key_id(&self) -> &str {
        &self.key_id
    }
    /// The store key it is written under.
    pub fn key(&self) -> Key {
        Key::review(&self.run, self.index)
    }
}

/// Admits a review envelope for the run of `facts`, as its next review: parsed strictly,
/// signed once by a trusted reviewer key that is no seal key, about exactly the run's evidence
/// and seal, deciding only obligations the run has, and chained to its latest review.
pub fn check(
    bytes: &[u8],
    facts: &RunFacts,
    reviewers: &[PublicKey],
) -> Result<CheckedReview, ReviewError> {
    let (statement, key_id) = open(bytes, facts, reviewers)?;
    let p = &statement.predicate;
    let n = facts.reviews.len() as u64;
    if p.review_index < n {
        return Err(ReviewError::new(
            Refusal::Conflict,
            AuditCheck::ReviewLog,
            format!(
                "reviewIndex {} is taken: the run has {n} reviews; sign it again as review {n}",
                p.review_index
            ),
        ));
    }
    let latest = facts.reviews.last().map(|h| h.to_string());
    if p.review_index > n || p.previous_review_sha256 != latest {
        return Err(ReviewError::new(
            Refusal::Stale,
            AuditCheck::ReviewLog,
            format!(
                "reviewIndex {} after {:?}: the run's next review is {n}, after {:?}",
                p.review_index, p.previous_review_sha256, latest
            ),
        ));
    }
    let canonical = canonical_envelope(bytes)?;
    Ok(CheckedReview {
        run: facts.run.clone(),
        index: n,
        hash: Hash::of(&canonical),
        bytes: Bytes::from(canonical),
        statement,
        key_id,
    })
}

/// Checks a **stored** review (`runs/<id>/reviews/<index>.dsse.json`): the rules of [`check`],
/// with `facts.reviews` the reviews stored before it; its bytes must be canonical and its
/// `reviewIndex` its key's number.
pub fn check_stored(
    index: u64,
    bytes: &[u8],
    facts: &RunFacts,
    reviewers: &[PublicKey],
) -> Result<ReviewStatement, ReviewError> {
    let (statement, _) = open(bytes, facts, reviewers)?;
    if canonical_envelope(bytes)? != bytes {
        return Err(ReviewError::new(
            Refusal::Invalid,
            AuditCheck::ReviewSignature,
            "not stored as canonical JSON: seal never wrote these bytes",
        ));
    }
    let p = &statement.predicate;
    let latest = facts.reviews.last().map(|h| h.to_string());
    if p.review_index != index || p.previous_review_sha256 != latest {
        return Err(ReviewError::new(
            Refusal::Stale,
            AuditCheck::ReviewLog,
            format!(
                "stored as review {index} but states reviewIndex {} after {:?} (expected after {:?}): \
                 a review was removed, reordered or copied",
                p.review_index, p.previous_review_sha256, latest
            ),
        ));
    }
    Ok(statement)
}

/// The canonical JSON of an envelope (what is stored for it): two sends of one review have the
/// same canonical bytes.
pub fn canonical_envelope(bytes: &[u8]) -> Result<Vec<u8>, ReviewError> {
    let env: Envelope = crate::json::parse_as(bytes, MAX_ENVELOPE_BYTES).map_err(|e| {
        ReviewError::new(Refusal::Invalid, AuditCheck::ReviewSignature, e.to_string())
    })?;
    canonical::canonical_bytes(&env).map_err(invalid_content)
}

/// Signature, statement, subjects and content: everything but the chain.
fn open(
    bytes: &[u8],
    facts: &RunFacts,
    reviewers: &[PublicKey],
) -> Result<(ReviewStatement, String), ReviewError> {
    let sig_err = |r: Refusal, d: String| ReviewError::new(r, AuditCheck::ReviewSignature, d);
    let env: Envelope = crate::json::parse_as(bytes, MAX_ENVELOPE_BYTES)
        .map_err(|e| sig_err(Refusal::Invalid, format!("not a DSSE envelope: {e}")))?;
    if env.payload_type != PAYLOAD_TYPE {
        return Err(sig_err(
            Refusal::Invalid,
            format!(
                "payloadType is {:?}, expected {PAYLOAD_TYPE}",
                short(&env.payload_type)
            ),
        ));
    }
    let [s] = env.signatures.as_slice() else {
        return Err(sig_err(
            Refusal::Invalid,
            format!(
                "{} signatures: a review carries exactly one",
                env.signatures.len()
            ),
        ));
    };
    if facts.seal_key_ids.contains(&s.keyid) {
        return Err(sig_err(
            Refusal::Untrusted,
            format!(
                "signed by seal key {}: a seal key never signs a person's decision",
                short(&s.keyid)
            ),
        ));
    }
    let Some(key) = reviewers.iter().find(|k| k.key_id == s.keyid) else {
        return Err(sig_err(
            Refusal::Untrusted,
            format!(
                "signed by key {}, not a trusted reviewer key",
                short(&s.keyid)
            ),
        ));
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = b64
        .decode(&env.payload)
        .map_err(|e| sig_err(Refusal::Invalid, format!("payload is not base64: {e}")))?;
    let sig = b64
        .decode(&s.sig)
        .ok()
        .and_then(|raw| ed25519_dalek::Signature::from_slice(&raw).ok())
        .ok_or_else(|| {
            sig_err(
                Refusal::Invalid,
                "the signature is not 64 base64 bytes".into(),
            )
        })?;
    key.verify_strict(&pae(&env.payload_type, &payload), &sig)
        .map_err(|_| {
            sig_err(
                Refusal::Invalid,
                format!("the signature by reviewer key {} does not verify", s.keyid),
            )
        })?;
    let statement: ReviewStatement = crate::json::parse_as(&payload, MAX_ENVELOPE_BYTES)
        .map_err(|e| invalid_content(format!("not a review statement: {e}")))?;
    check_subjects(&statement, facts)?;
    check_content(&statement, facts)?;
    Ok((statement, s.keyid.clone()))
}

fn check_subjects(st: &ReviewStatement, facts: &RunFacts) -> Result<(), ReviewError> {
    if st.subject != facts.subjects() {
        let named: Vec<String> = st
            .subject
            .iter()
            .take(4)
            .map(|s| format!("{} sha256:{}", short(&s.name), short(&s.digest.sha256)))
            .collect();
        return Err(ReviewError::new(
            Refusal::Invalid,
            AuditCheck::ReviewSubject,
            format!(
                "the review is about [{}], not this run's evidence and seal \
                 (evidence sha256 {}, seal sha256 {})",
                named.join(", "),
                facts.evidence_sha256,
                facts.seal_sha256
            ),
        ));
    }
    Ok(())
}

fn check_content(st: &ReviewStatement, facts: &RunFacts) -> Result<(), ReviewError> {
    let fail = |d: String| Err(invalid_content(d));
    let p = &st.predicate;
    if st.statement_type != STATEMENT_TYPE
        || st.predicate_type != PREDICATE_TYPE
        || p.schema_version != SCHEMA_VERSION
    {
        return fail(format!(
            "_type {:?}, predicateType {:?}, schemaVersion {:?}: not a {SCHEMA_VERSION} statement",
            short(&st.statement_type),
            short(&st.predicate_type),
            short(&p.schema_version)
        ));
    }
    if p.run_id != facts.run.as_str() {
        return fail(format!("runId {:?} is another run's", short(&p.run_id)));
    }
    if p.reviewer.trim().is_empty() || p.reviewer.chars().count() > MAX_REVIEWER {
        return fail(format!("reviewer: 1 to {MAX_REVIEWER} characters"));
    }
    if p.note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_NOTE)
    {
        return fail(format!("note: at most {MAX_NOTE} characters"));
    }
    if Hash::parse(&p.shown_sha256).is_err() {
        return fail("shownSha256 is not a lowercase hex sha256".into());
    }
    if p.decisions.is_empty() || p.decisions.len() > MAX_DECISIONS {
        return fail(format!("decisions: 1 to {MAX_DECISIONS} obligations"));
    }
    let mut seen = BTreeSet::new();
    for d in &p.decisions {
        if !facts.obligations.contains(&d.obligation_id) {
            return fail(format!(
                "obligation {:?} is not one of the run's (it has: {})",
                short(&d.obligation_id),
                facts
                    .obligations
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !seen.insert(d.obligation_id.as_str()) {
            return fail(format!(
                "obligation {:?} is decided twice",
                short(&d.obligation_id)
            ));
        }
    }
    Ok(())
}

/// At most 80 characters of text from outside (it ends up in messages and logs).
fn short(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(seal_key: &SigningKey) -> RunFacts {
        RunFacts {
            run: RunId::parse("run-1").unwrap(),
            evidence_sha256: Hash::of(b"evidence"),
            seal_sha256: Hash::of(b"seal"),
            obligations: ["obl-1".to_string(), "obl-2".to_string()].into(),
            seal_key_ids: [seal_key.key_id.clone()].into(),
            reviews: Vec::new(),
        }
    }

    fn review(f: &RunFacts, key: &SigningKey, obligation: &str) -> Vec<u8> {
        let st = f.statement(
            "Ada",
            "2026-12-02T10:00:00Z",
            vec![ObligationDecision {
                obligation_id: obligation.into(),
                status: Status::Satisfied,
            }],
            Some("<script>alert(1)</script>".into()),
            &Hash::of(b"tree"),
        );
        sign(key, &st).unwrap()
    }

    #[test]
    fn a_signed_review_is_checked_then_chained() {
        let (seal, reviewer) = (
            SigningKey::from_seed(&[1; 32]),
            SigningKey::from_seed(&[2; 32]),
        );
        let mut f = facts(&seal);
        let bytes = review(&f, &reviewer, "obl-1");
        let a = check(&bytes, &f, &[reviewer.public()]).unwrap();
        assert_eq!(a.index(), 0);
        assert_eq!(a.bytes().as_ref(), bytes.as_slice());
        assert_eq!(a.key().as_str(), "runs/run-1/reviews/0.dsse.json");
        check_stored(0, &bytes, &f, &[reviewer.public()]).unwrap();
        // The same bytes again: index 0 is taken now.
        f.reviews.push(a.hash().clone());
        let e = check(&bytes, &f, &[reviewer.public()]).unwrap_err();
        assert_eq!(e.refusal, Refusal::Conflict);
        let next = review(&f, &reviewer, "obl-2");
        assert_eq!(check(&next, &f, &[reviewer.public()]).unwrap().index(), 1);
        // Review 1 checked as if review 0 were gone: the chain names it.
        let e = check_stored(1, &next, &facts(&seal), &[reviewer.public()]).unwrap_err();
        assert_eq!(e.check, AuditCheck::ReviewLog);
    }

    #[test]
    fn validate_detects_a_review_statement_by_its_predicate_type() {
        let seal = SigningKey::from_seed(&[3; 32]);
        let st =
            facts(&seal).statement("Ada", "2026-12-02T10:00:00Z", vec![], None, &Hash::of(b"t"));
        let v = serde_json::to_value(&st).unwrap();
        assert_eq!(
            crate::contracts::Kind::detect(&v).unwrap(),
            crate::contracts::Kind::Review
        );
    }

    #[test]
    fn refusals_are_named() {
        let (seal, reviewer, stranger) = (
            SigningKey::from_seed(&[4; 32]),
            SigningKey::from_seed(&[5; 32]),
            SigningKey::from_seed(&[6; 32]),
        );
        let f = facts(&seal);
        let trusted = [reviewer.public()];
        let e = check(&review(&f, &stranger, "obl-1"), &f, &trusted).unwrap_err();
        assert_eq!(
            (e.refusal, e.check),
            (Refusal::Untrusted, AuditCheck::ReviewSignature)
        );
        let e = check(&review(&f, &reviewer, "obl-9"), &f, &trusted).unwrap_err();
        assert_eq!(
            (e.refusal, e.check),
            (Refusal::Invalid, AuditCheck::ReviewContent)
        );
        assert!(e.detail.contains("obl-9"), "{e}");
        // A seal key is never a reviewer key, even when trusted as one.
        let e = check(&review(&f, &seal, "obl-1"), &f, &[seal.public()]).unwrap_err();
        assert_eq!(e.refusal, Refusal::Untrusted);
        // Other subject digests.
        let mut other = f.clone();
        other.seal_sha256 = Hash::of(b"another seal");
        let e = check(&review(&other, &reviewer, "obl-1"), &f, &trusted).unwrap_err();
        assert_eq!(e.check, AuditCheck::ReviewSubject);
        // One byte of the payload changed.
        let bytes = review(&f, &reviewer, "obl-1");
        let mut env: Envelope = serde_json::from_slice(&bytes).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut payload = b64.decode(&env.payload).unwrap();
        let at = payload.windows(9).position(|w| w == b"satisfied").unwrap();
        payload[at..at + 6].copy_from_slice(b"failed");
        payload.drain(at + 6..at + 9);
        env.payload = b64.encode(&payload);
        let tampered = serde_json::to_vec(&env).unwrap();
        let e = check(&tampered, &f, &trusted).unwrap_err();
        assert_eq!(
            (e.refusal, e.check),
            (Refusal::Invalid, AuditCheck::ReviewSignature)
        );
    }
}
