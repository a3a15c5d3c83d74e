//! The audit of a run's stored objects, shared by the finalPostguard (on the JUDGING snapshot,
//! before it decides) and `seal verify` (on the sealed evidence, years later). Three steps:
//!
//! 1. [`load`]: read every object the document references, each re-hashed against its recorded
//!    sha256 and schema-checked, and collect the set of keys the document binds;
//! 2. derive: run the same pure functions the dispatcher ran ([`crate::judge_http::slot`],
//!    [`seal_core::blinding`], [`seal_core::derive`]) on what was loaded;
//! 3. [`compare`]: what is recorded against what was derived, and the run folder's listing
//!    against the bound keys (an object nobody vouched for is named, never ignored).
//!
//! Each problem names its check, the object key, and the expected and actual values.

mod compare;
mod load;
pub mod policy;

use std::collections::BTreeSet;

use seal_core::canonical::Hash;
use seal_core::doc::*;
use seal_core::ids::{RunId, Slot};
use seal_core::judge::AttemptRecord;
use seal_core::vocab::AuditCheck;
use seal_store::{Key, Store, StoreError};

pub use load::RollDocs;

/// One thing wrong, with the object at fault. `expected` is what the sealed records say,
/// `actual` what is stored or recomputed now.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub check: AuditCheck,
    pub object: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    pub detail: String,
    /// The store does not hold what a record binds (missing, or other bytes): the postguard
    /// refuses such a run rather than decide on it. Not part of the report's JSON.
    #[serde(skip)]
    pub corrupt: bool,
}

impl Problem {
    pub fn new(check: AuditCheck, object: impl Into<String>, detail: impl Into<String>) -> Problem {
        Problem {
            check,
            object: object.into(),
            expected: None,
            actual: None,
            detail: detail.into(),
            corrupt: false,
        }
    }

    /// A problem with the sealed (`expected`) and the found or recomputed (`actual`) value.
    pub fn mismatch(
        check: AuditCheck,
        object: impl Into<String>,
        expected: impl ToString,
        actual: impl ToString,
        detail: impl Into<String>,
    ) -> Problem {
        Problem {
            check,
            object: object.into(),
            expected: Some(expected.to_string()),
            actual: Some(actual.to_string()),
            detail: detail.into(),
            corrupt: false,
        }
    }
}

/// What the log's checks find is one of the verifier's problems: the same check, object,
/// values and detail (the JSON of a report is unchanged), never `corrupt` (the log's findings
/// are about the log, not about a run's records).
impl From<seal_log::Finding> for Problem {
    fn from(f: seal_log::Finding) -> Problem {
        Problem {
            check: f.check,
            object: f.object,
            expected: f.expected,
            actual: f.actual,
            detail: f.detail,
            corrupt: false,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}: {}", self.check, self.object, self.detail)?;
        if let (Some(e), Some(a)) = (&self.expected, &self.actual) {
            write!(f, " (expected {e}, actual {a})")?;
        }
        Ok(())
    }
}

/// Problems found so far, and the keys the audited document binds.
#[derive(Default)]
pub(crate) struct Audit {
    problems: Vec<Problem>,
    bound: BTreeSet<Key>,
    /// The `cas/` objects the run names: its proof packages' frames and every attempt's raw
    /// answer (what `resume::orphans` calls referenced).
    named: Vec<Hash>,
    /// The run's reviews, from the listing of its folder the unbound check makes.
    reviews: Option<StoredReviews>,
}

impl Audit {
    fn push(&mut self, check: AuditCheck, object: impl Into<String>, detail: impl Into<String>) {
        self.problems.push(Problem::new(check, object, detail));
    }
    fn mismatch(
        &mut self,
        check: AuditCheck,
        object: impl Into<String>,
        expected: impl ToString,
        actual: impl ToString,
        detail: impl Into<String>,
    ) {
        self.problems
            .push(Problem::mismatch(check, object, expected, actual, detail));
    }
    fn store_error(&mut self, e: StoreError) {
        self.store_error_unmarked(e);
        if let Some(p) = self.problems.last_mut() {
            p.corrupt = true;
        }
    }
    fn store_error_unmarked(&mut self, e: StoreError) {
        match e {
            StoreError::HashMismatch {
                key,
                expected,
                actual,
            } => self.mismatch(
                AuditCheck::Refs,
                key.as_str(),
                expected,
                actual,
                "stored bytes do not hash to the recorded sha256",
            ),
            StoreError::NotFound { key } => {
                self.push(AuditCheck::Refs, key.as_str(), "object is missing")
            }
            other => self.push(
                AuditCheck::Refs,
                other.to_string(),
                "cannot read the object",
            ),
        }
    }
}

/// What an audit found, and every key the audited document binds: the run's own documents,
/// each ref of each roll and attempt, and the frames (`cas/…`). When `problems` is empty,
/// `bound` is exactly the run (an import copies these and nothing else).
pub struct Audited {
    pub problems: Vec<Problem>,
    pub docs: Vec<RollDocs>,
    pub bound: BTreeSet<Key>,
    /// The `cas/` objects the run names: its proof packages' frames and every attempt's raw
    /// answer (content-addressed by the judge walk, read by the audit from the attempt
    /// folder). What the crash-leftover scan of `seal verify --all` takes from a verified run
    /// instead of reading its proof packages and metas again.
    pub named: Vec<Hash>,
    /// The run's reviews, from the audit's listing of the run folder (`None` when it failed):
    /// what `seal verify` checks them from, without listing their folder again.
    pub reviews: Option<StoredReviews>,
    /// The judge policies the run's attempts name ([`policy`]), each with the run's first
    /// judge call under it: what `seal verify` checks against the log.
    pub policies: Vec<policy::UsedPolicy>,
}

/// A run's reviews as stored: `(index, key)` in index order, and the other objects of the
/// reviews folder (names that are not a review's).
pub type StoredReviews = (Vec<(u64, Key)>, Vec<String>);

/// [`crate::verify::stored_keys`] from a listing that holds the reviews folder (of it, or of the whole run
/// folder, which the audit lists anyway: then the folder is not listed a second time).
pub fn reviews_listed(run: &RunId, keys: &[Key], foreign: &[String]) -> StoredReviews {
    let folder = format!("{}/", Key::reviews_dir(run));
    let mut numbered = Vec::new();
    let mut other: Vec<String> = foreign
        .iter()
        .filter(|f| f.starts_with(&folder))
        .cloned()
        .collect();
    for k in keys.iter().filter(|k| k.as_str().starts_with(&folder)) {
        match k.review_number(run) {
            Some(n) => numbered.push((n, k.clone())),
            None => other.push(k.to_string()),
        }
    }
    numbered.sort();
    (numbered, other)
}

/// Audits every roll of `doc` against the store ([`load`], then [`compare`]): what `seal
/// verify` runs on sealed evidence. `brief` is the stored brief bytes, if any.
pub async fn audit_bound(store: &Store, doc: &Evidence, brief: Option<&[u8]>) -> Audited {
    let run = match RunId::parse(&doc.run_id) {
        Ok(r) => r,
        Err(e) => {
            let mut a = Audit::default();
            a.push(AuditCheck::Invariants, "runId", e.to_string());
            return a.done(Vec::new());
        }
    };
    let loaded = load(store, &run, &doc.rolls).await;
    compare(store, loaded, doc, brief).await
}

/// Step 1 for a run's rolls: every object each roll record binds, read once from the store
/// and re-hashed against its record, schema-checked, bound to its key. The postguard
/// authenticates its inputs on these very bytes and derives the JUDGING snapshot from them
/// before [`compare`] checks the snapshot against them.
pub async fn load(store: &Store, run: &RunId, rolls: &[Roll]) -> Loaded {
    let mut loaded = Vec::with_capacity(rolls.len());
    for r in rolls {
        let mut a = Audit::default();
        let (record, docs) = load::roll(&mut a, store, run, r).await;
        loaded.push(RollLoad {
            roll: r.clone(),
            audit: a,
            record,
            docs,
        });
    }
    Loaded {
        run: run.clone(),
        rolls: loaded,
    }
}

/// What [`load`] read: per roll, the stored record, the documents, and the problems met.
pub struct Loaded {
    run: RunId,
    rolls: Vec<RollLoad>,
}

/// One roll as [`load`] read it.
pub struct RollLoad {
    roll: Roll,
    audit: Audit,
    record: Option<(Roll, Hash)>,
    docs: Option<load::LoadedRoll>,
}

impl RollLoad {
    /// The roll record the load was asked for.
    pub fn roll(&self) -> &Roll {
        &self.roll
    }
    /// The stored roll record (`roll.json`) and the sha256 of its bytes; `None` when missing or
    /// unreadable.
    pub fn record(&self) -> Option<(&Roll, &Hash)> {
        self.record.as_ref().map(|(r, h)| (r, h))
    }
    /// A slot's normalized result and its attempts as loaded; `None` when the roll's documents
    /// could not all be read.
    pub fn slot(&self, slot: Slot) -> Option<(&JudgeResult, &[AttemptRecord])> {
        let i = match slot {
            Slot::A => 0,
            Slot::B => 1,
        };
        let s = &self.docs.as_ref()?.slots[i];
        Some((&s.result, &s.run.attempts))
    }
}

impl Loaded {
    pub fn rolls(&self) -> &[RollLoad] {
        &self.rolls
    }
    /// Every problem the load met, in roll order.
    pub fn problems(&self) -> impl Iterator<Item = &Problem> {
        self.rolls.iter().flat_map(|r| r.audit.problems.iter())
    }
    /// Every roll's documents were read and parsed, and every attempt its results list: the
    /// condition to derive anything from them.
    pub fn complete(&self) -> bool {
        self.rolls.iter().all(|r| {
            r.docs.as_ref().is_some_and(|d| {
                d.slots
                    .iter()
                    .all(|s| s.run.attempts.len() == s.result.attempts.len())
            })
        })
    }
    /// The rolls with their proof package and consensus, for the derivation of the JUDGING
    /// snapshot; `None` unless [`Loaded::complete`].
    pub fn judged(&self) -> Option<Vec<seal_core::derive::JudgedRoll<'_>>> {
        self.rolls
            .iter()
            .map(|r| {
                let d = r.docs.as_ref()?;
                Some(seal_core::derive::JudgedRoll {
                    roll: &r.roll,
                    proof: &d.proof,
                    consensus: &d.consensus,
                })
            })
            .collect()
    }
}

/// Steps 2 and 3: `doc` (the JUDGING snapshot, or the sealed evidence) against what [`load`]
/// read for its rolls, then the run folder against the bound keys. The problems come in the
/// order of one walk: the brief, each roll's load and comparison, the mirror, unbound objects.
pub async fn compare(
    store: &Store,
    loaded: Loaded,
    doc: &Evidence,
    brief: Option<&[u8]>,
) -> Audited {
    let run = loaded.run;
    let mut a = Audit::default();
    compare::brief(&mut a, &run, doc, brief);
    let brief_text = brief
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    let policies = policy::check(&mut a, store, &run, &loaded.rolls).await;
    let mut docs = Vec::new();
    for l in loaded.rolls {
        a.absorb(l.audit);
        if let Some(d) = l.docs {
            compare::roll(&mut a, doc, &run, &l.roll, &d, &brief_text);
            docs.push(d.into_docs(&l.roll));
        }
    }
    compare::mirror(&mut a, doc, &run, &docs);
    compare::unbound(&mut a, store, &run, doc).await;
    let mut audited = a.done(docs);
    audited.policies = policies;
    audited
}

impl Audit {
    /// Takes in what another walk found, after what this one found so far.
    fn absorb(&mut self, other: Audit) {
        self.problems.extend(other.problems);
        self.bound.extend(other.bound);
        self.named.extend(other.named);
    }
    fn done(self, docs: Vec<RollDocs>) -> Audited {
        Audited {
            problems: self.problems,
            docs,
            bound: self.bound,
            named: self.named,
            reviews: self.reviews,
            policies: Vec::new(),
        }
    }
}

/// The run costs what the header said plus every roll.
pub fn run_cost(object: &Key, header: &Evidence, doc: &Evidence) -> Option<Problem> {
    let want = rmb_to_micro(header.cost_rmb)
        + doc
            .rolls
            .iter()
            .map(|r| rmb_to_micro(r.cost_rmb))
            .sum::<u64>();
    (want != rmb_to_micro(doc.cost_rmb)).then(|| {
        Problem::mismatch(
            AuditCheck::Cost,
            format!("{object} costRmb"),
            micro_to_rmb(want),
            doc.cost_rmb,
            "run cost is not the header's plus every roll's",
        )
    })
}

/// One `finalPostguard.checks` entry: ok, or the first problems of that check. The postguard
/// records its checks with it, and `seal verify` re-derives a recorded failure with it.
pub fn record_check(id: AuditCheck, problems: &[Problem]) -> Check<AuditCheck> {
    let mine: Vec<&Problem> = problems.iter().filter(|p| p.check == id).collect();
    if mine.is_empty() {
        return Check::new(id, true, "ok");
    }
    let text: Vec<String> = mine.iter().take(5).map(|p| p.to_string()).collect();
    let more = if mine.len() > 5 {
        format!(" (+{} more)", mine.len() - 5)
    } else {
        String::new()
    };
    Check::new(id, false, format!("{}{more}", text.join("; ")))
}

/// The problems of a sealed run once its postguard's own refusal is re-proved: for each check
/// `finalPostguard` records as failed, the problems of that check found now are the postguard's
/// finding when [`record_check`] gives exactly the recorded entry from them, and are then the
/// evidence of the sealed decision, not a fault of the run (at most five: the entry names five
/// and counts the rest). Any other difference (a recorded failure that does not recompute,
/// other or more problems) stays, with the recorded entry named.
pub fn reprove_postguard(doc: &Evidence, problems: Vec<Problem>) -> Vec<Problem> {
    let Some(pg) = &doc.final_postguard else {
        return problems;
    };
    let mut problems = problems;
    for recorded in pg.checks.iter().filter(|c| !c.ok && c.id.is_postguard()) {
        let derived = record_check(recorded.id, &problems);
        // Past five problems the entry only counts the rest, so it would not pin them.
        let pinned = problems.iter().filter(|p| p.check == recorded.id).count() <= 5;
        if derived == *recorded && pinned {
            problems.retain(|p| p.check != recorded.id);
        } else {
            problems.push(Problem::mismatch(
                recorded.id,
                format!("runs/{}/evidence.json finalPostguard", doc.run_id),
                &recorded.detail,
                &derived.detail,
                "the postguard's recorded failure is not what the stored run derives",
            ));
        }
    }
    problems
}

/// Sha256 of bytes, for messages.
fn hash_of(b: &[u8]) -> Hash {
    Hash::of(b)
}
