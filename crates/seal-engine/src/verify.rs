//! `seal verify`: re-prove a sealed run from the store and a trusted public key (docs/DESIGN.md §7).
//!
//! In order: the seal (DSSE signature by a trusted key, in-toto subject = the exact bytes of
//! `evidence.json`, predicate = the evidence's decision), the evidence itself (canonical bytes,
//! schema, DECIDED invariants, its run id is the folder's), the JUDGING snapshot the postguard
//! decided from, then the full [`crate::audit`]: every ref re-hashed (streaming), every project
//! document schema-checked, normalization, independence and consensus recomputed, blinding.
//!
//! Then the run against the transparency log: logged once (`run_relogged`), its stored seal the
//! one last logged for it (`run_replaced`), proven in the latest checkpoint signed by a trusted
//! key (`log_inclusion`).
//!
//! What it ignores, and why: nothing under `runs/<id>/`. An envelope must carry exactly one
//! signature, by a trusted key (an order-dependent rule could be steered); every object of the
//! run folder must be bound by the evidence (the audit names any other one), and a folder
//! under `runs/` that is not a run id is reported as not verified. Only object_store's
//! staging files of a killed put (`<name>#<n>`) are skipped: they are never objects.

use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::Arc;

use crate::audit::{self, Problem};
use seal_core::canonical::{self, Hash};
use seal_core::doc::*;
use seal_core::fault::HasFault;
use seal_core::ids::RunId;
use seal_core::review;
use seal_core::sealing::{self, Envelope, PublicKey};
use seal_core::tlog::LogTrust;
use seal_core::validate::checked;
use seal_core::vocab::{AuditCheck, GuardCheck};
use seal_log::stream::{self, Pass, Passed};
use seal_log::LogView;
use seal_store::{Key, Store, StoreError};

/// The verdict on one run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    pub run_id: String,
    pub verified: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    pub problems: Vec<Problem>,
}

/// Reads an object the verdict depends on. A stored object that cannot be what seal wrote (a
/// FIFO, a symlink, over the size limit) is a problem of this run, named; only a store that
/// cannot be reached stops the verification.
async fn readable(
    store: &Store,
    key: &Key,
    check: AuditCheck,
    problems: &mut Vec<Problem>,
) -> Result<Option<bytes::Bytes>, StoreError> {
    match store.get_opt(key).await {
        Ok(b) => Ok(b),
        Err(e) if e.fault().is_environmental() => Err(e),
        Err(e) => {
            problems.push(problem(check, key.as_str(), e.to_string()));
            Ok(None)
        }
    }
}

impl RunReport {
    /// The first `n` problems, one line (for error messages that name why a run was refused).
    pub fn summary(&self, n: usize) -> String {
        let text: Vec<String> = self
            .problems
            .iter()
            .take(n)
            .map(|p| p.to_string())
            .collect();
        text.join("; ")
    }

    /// The report for a folder under `runs/` whose name is not a run id: never skipped,
    /// always listed as not verified.
    pub fn unverifiable_folder(name: String) -> RunReport {
        let object = format!("runs/{name}");
        RunReport {
            run_id: name,
            verified: false,
            outcome: None,
            key_id: None,
            problems: vec![Problem::new(
                AuditCheck::RunId,
                object,
                "not a valid run id: this folder was not verified",
            )],
        }
    }
}

fn problem(check: AuditCheck, object: impl Into<String>, detail: impl Into<String>) -> Problem {
    Problem::new(check, object, detail)
}

fn mismatch(
    check: AuditCheck,
    object: impl Into<String>,
    expected: impl ToString,
    actual: impl ToString,
    detail: impl Into<String>,
) -> Problem {
    Problem::mismatch(check, object, expected, actual, detail)
}

/// Whether the store holds anything for this run (to tell "no such run" from "not verified").
pub async fn run_exists(store: &Store, run: &RunId) -> Result<bool, StoreError> {
    let found = store.list(&Key::run_dir(run)).await?;
    Ok(!found.keys.is_empty() || !found.foreign.is_empty())
}

/// A run that verified: its seal by a trusted key and its evidence. Only [`prove`] makes one,
/// so code that acts on history (replay, export) holds proof, not a boolean.
#[derive(Debug, Clone)]
pub struct VerifiedRun {
    seal: sealing::VerifiedSeal,
    seal_hash: Hash,
    evidence: Evidence,
    evidence_hash: Hash,
    bound: BTreeSet<Key>,
    named: Vec<Hash>,
    /// Its reviews as the audit's listing of the run folder found them; `None` when that
    /// listing failed or was of another folder (the evidence names another run).
    reviews: Option<audit::StoredReviews>,
    /// The judge policies its attempts name ([`audit::policy`]).
    policies: Vec<audit::policy::UsedPolicy>,
}

impl VerifiedRun {
    pub fn seal(&self) -> &sealing::VerifiedSeal {
        &self.seal
    }
    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }
    pub fn evidence_hash(&self) -> &Hash {
        &self.evidence_hash
    }
    /// The sha256 of the envelope bytes whose signature verified.
    pub fn seal_hash(&self) -> &Hash {
        &self.seal_hash
    }
    /// Every object the sealed evidence binds (run documents, refs, attempts, frames): what
    /// an import copies, and nothing else.
    pub fn bound(&self) -> &BTreeSet<Key> {
        &self.bound
    }
    /// The `cas/` objects the run names ([`audit::Audited::named`]).
    pub fn named(&self) -> &[Hash] {
        &self.named
    }
    /// The `policies/<sha256>.json` keys of the judge policies its attempts name (verified by
    /// the audit against their digests): what an import copies beside the bound objects.
    pub fn policy_keys(&self) -> Vec<Key> {
        (self.policies.iter())
            .map(|u| Key::policy(&u.reference.sha256))
            .collect()
    }
}

/// Verifies one run, its inclusion in the transparency log included. Errors only when the
/// store itself cannot be read.
pub async fn verify_run(
    store: &Store,
    run: &RunId,
    trusted: &[PublicKey],
    origin: &str,
) -> Result<RunReport, StoreError> {
    let scope = Scope::Runs(std::slice::from_ref(run));
    let view = load_log(store, &seal_log::trust(origin, trusted), scope).await?;
    verify_run_logged(store, run, trusted, &view).await
}

/// The runs a check of the log is for: the log is read for them alone when it can be (their
/// pointers and the tiles: [`LogView::load_for`]), or whole.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// Every run of the store (`--all`, `seal stats`): the whole log, read once.
    All,
    /// These runs only.
    Runs(&'a [RunId]),
}

/// The transparency log as `seal verify` checks it (the latest trusted checkpoint) for
/// `scope`; load it once for many runs.
pub async fn load_log(
    store: &Store,
    trust: &LogTrust,
    scope: Scope<'_>,
) -> Result<LogView, StoreError> {
    match scope {
        Scope::All => LogView::load(store, trust).await,
        Scope::Runs(runs) => LogView::load_for(store, trust, runs).await,
    }
}

/// [`verify_run`] against a log loaded once ([`load_log`]): the run's checks, then its log
/// checks (`run_relogged`, `run_replaced`, `log_inclusion`: see the module doc).
pub async fn verify_run_logged(
    store: &Store,
    run: &RunId,
    trusted: &[PublicKey],
    log: &LogView,
) -> Result<RunReport, StoreError> {
    verify_run_reviewed(store, run, trusted, &[], log).await
}

/// [`verify_run_logged`], with the run's reviews checked under `reviewers`
/// ([`check_run_reviews`]): a review by a key not among them, about other
/// bytes, or not logged is a problem of the run, named. With no reviewer key, every stored
/// review is such a problem.
pub async fn verify_run_reviewed(
    store: &Store,
    run: &RunId,
    trusted: &[PublicKey],
    reviewers: &[PublicKey],
    log: &LogView,
) -> Result<RunReport, StoreError> {
    Ok(reviewed_verdict(store, run, trusted, reviewers, log)
        .await?
        .0)
}

/// The run's own checks, its reviews under `reviewers`, then its log checks; with the proof
/// of the run itself when its own checks passed.
async fn reviewed_verdict(
    store: &Store,
    run: &RunId,
    trusted: &[PublicKey],
    reviewers: &[PublicKey],
    log: &LogView,
) -> Result<(RunReport, Option<VerifiedRun>), StoreError> {
    let (mut report, proof) = check_run(store, run, trusted).await?;
    let trust = Trust {
        seal: trusted,
        reviewers,
    };
    let reviewed = check_run_reviews(store, run, proof.as_ref(), trust, log).await?;
    report.problems.extend(reviewed);
    check_logged(store, run, log, proof.as_ref(), &mut report).await?;
    Ok((report, proof))
}

/// Adds the run's log problems to `report` and settles `verified`.
async fn check_logged(
    store: &Store,
    run: &RunId,
    log: &LogView,
    proof: Option<&VerifiedRun>,
    report: &mut RunReport,
) -> Result<(), StoreError> {
    // A seal verified a moment ago over evidence parsed from the very bytes it signs names
    // its log entry already: the entry is computed from those (the same bytes the log check
    // would read again), not from a second read of both objects.
    let entry = proof.and_then(|p| {
        seal_log::seal_entry(
            run,
            &p.evidence,
            &p.evidence_hash,
            &p.seal_hash,
            &p.seal.key_id,
        )
    });
    if let Some(p) = proof {
        report.problems.extend(policies_logged(log, &p.policies));
    }
    let evidence_stored = matches!(store.exists(&Key::evidence(run)).await, Ok(true));
    if let Some(entry) = entry {
        report
            .problems
            .extend(log.check_entry(run, &entry).into_iter().map(Problem::from));
    } else if let Some(gone) = log.missing_run(run).filter(|_| !evidence_stored) {
        // Logged, and nothing of its decision is stored: deleted, not undecided.
        report.problems.push(gone.into());
    } else if evidence_stored {
        // Only a run whose evidence reads as an object has a seal to find in the log (an
        // unreadable one is already a problem of the report).
        match log.check_run(store, run).await {
            Ok(problems) => report
                .problems
                .extend(problems.into_iter().map(Problem::from)),
            Err(e) if e.fault().is_environmental() => return Err(e),
            Err(e) => report.problems.push(problem(
                AuditCheck::Evidence,
                Key::seal(run).as_str(),
                e.to_string(),
            )),
        }
    }
    report.verified = report.problems.is_empty();
    Ok(())
}

/// Each judge policy the run's attempts name that this log registers was registered before
/// the run's first judge call under it: a policy logged after the answers were seen could have
/// been tuned to them. A policy this log does not register is the policy of a run judged under
/// another log (imported from another deployment's store, or a stored replay of one): its
/// content is checked by the audit, its order by the log it was registered in
/// (docs/DECISIONS.md, "The judge policy is logged before the judges are asked").
fn policies_logged(log: &LogView, used: &[audit::policy::UsedPolicy]) -> Vec<Problem> {
    let mut problems = Vec::new();
    for u in used {
        let sha = u.reference.sha256.as_str();
        let Some((index, entry)) = log.policy_registration(sha) else {
            continue;
        };
        let late = u
            .first_call
            .as_deref()
            .filter(|first| !seal_core::policy::registered_before(&entry.registered_at, first));
        if let Some(first) = late {
            problems.push(problem(
                AuditCheck::JudgePolicy,
                Key::log_entry(*index).as_str(),
                format!(
                    "the judge policy {sha} was registered at {}, after the run's first judge \
                     call under it ({first})",
                    entry.registered_at
                ),
            ));
        }
    }
    problems
}

/// `seal verify`'s verdict, set up once for many runs: the trusted keys, the transparency log
/// as of its latest trusted checkpoint, and whether that checkpoint has the witness quorum.
///
/// `seal verify`, `seal explain`, `seal export verdict` and `seal stats` (and their HTTP routes)
/// all ask this one verifier; only code that proves a run before it is logged (an import, a
/// replay's source) uses [`prove`], which omits the log (docs/DECISIONS.md, "One verifier for
/// every reader").
#[derive(Debug, Clone)]
pub struct Verifier {
    trusted: Arc<Vec<PublicKey>>,
    /// The log's origin and those keys: what its checkpoints and leaves are checked under.
    log_trust: LogTrust,
    /// Reviewer keys (`--trust-reviewer`, config `reviewers.trusted`): a stored review by
    /// another key is a problem of its run.
    reviewers: Arc<Vec<PublicKey>>,
    log: Source,
    unwitnessed: Option<Problem>,
}

/// The log a [`Verifier`] checks runs against.
#[derive(Debug, Clone)]
enum Source {
    /// Read whole, or for the runs the verifier was set up for ([`Scope::Runs`]).
    View(Arc<LogView>),
    /// Every run ([`Scope::All`]) after a clean pass over the whole log
    /// ([`seal_log::stream`]): each run read by its pointers, so memory does not grow
    /// with the log; the whole log, read at most once, for a run they cannot settle.
    Passed {
        pass: Arc<Passed>,
        whole: Arc<tokio::sync::OnceCell<Arc<LogView>>>,
    },
}

impl Verifier {
    /// Reads the log once for `scope` and checks the latest checkpoint's witness quorum
    /// under `policy` (an empty policy requires no witness). A verifier of some runs
    /// ([`Scope::Runs`]) answers for those runs only: any other is not in its log.
    pub async fn load(
        store: &Store,
        trusted: Vec<PublicKey>,
        origin: &str,
        policy: &seal_log::cosign::check::Policy,
        scope: Scope<'_>,
    ) -> Result<Verifier, StoreError> {
        let raw = seal_log::trust(origin, &trusted);
        let log = match scope {
            Scope::All => match stream::pass(store, &raw).await? {
                Pass::Clean(pass) => Source::Passed {
                    pass: Arc::from(pass),
                    whole: Arc::default(),
                },
                Pass::Whole(why) => {
                    tracing::info!(reason = ?why, "the log is read whole, not by the runs' pointers");
                    Source::View(Arc::new(LogView::load(store, &raw).await?))
                }
            },
            Scope::Runs(_) => Source::View(Arc::new(load_log(store, &raw, scope).await?)),
        };
        let latest = match &log {
            Source::View(view) => view.latest.as_ref(),
            Source::Passed { pass, .. } => Some(&pass.latest),
        };
        let unwitnessed = seal_log::cosign::check::quorum_problem(store, policy, latest).await?;
        Ok(Verifier {
            trusted: Arc::new(trusted),
            log_trust: raw,
            reviewers: Arc::new(Vec::new()),
            log,
            unwitnessed: unwitnessed.map(Problem::from),
        })
    }

    /// This verifier, trusting reviews signed by `reviewers`.
    pub fn with_reviewers(mut self, reviewers: Vec<PublicKey>) -> Verifier {
        self.reviewers = Arc::new(reviewers);
        self
    }

    /// The runs the log may hold a seal of, for `seal verify --all` to verify besides the
    /// `runs/` listing (a logged run whose folder was deleted is a problem of that run, never
    /// silence): every run of a log read whole; after a clean pass, every run with a pointer
    /// (the pass found every leaf's pointer stored) and those whose leaves past the checkpoint
    /// have none yet. A candidate is logged only if [`Verifier::is_logged`] says so: a pointer
    /// is never believed for more than "look there".
    pub async fn logged_candidates(&self, store: &Store) -> Result<Vec<RunId>, StoreError> {
        let mut runs: BTreeSet<RunId> = BTreeSet::new();
        match &self.log {
            Source::View(view) => {
                runs.extend(view.logged_runs().filter_map(|r| RunId::parse(r).ok()));
            }
            Source::Passed { pass, .. } => {
                let listed = store.list(seal_log::LOG_RUNS).await?.keys;
                let prefix = format!("{}/", seal_log::LOG_RUNS);
                let named = listed.iter().filter_map(|k| {
                    let rest = k.as_str().strip_prefix(&prefix)?;
                    RunId::parse(rest.split('/').next()?).ok()
                });
                runs.extend(named);
                runs.extend(pass.unpointed_runs());
            }
        }
        Ok(runs.into_iter().collect())
    }

    /// Whether the log holds a seal of `run` (`seal verify --all` tells a crash leftover
    /// from a run whose seal is missing by it).
    pub async fn is_logged(&self, store: &Store, run: &RunId) -> Result<bool, StoreError> {
        Ok(self.log_for(store, run).await?.is_logged(run.as_str()))
    }

    /// The log to check `run` against: this verifier's; after a clean pass, the run's leaves
    /// read by its pointers (or the whole log when they cannot settle it); for a run outside
    /// the runs a verifier was set up for ([`Scope::Runs`]), the whole log: a run is never
    /// called unlogged because it was not asked about.
    async fn log_for(&self, store: &Store, run: &RunId) -> Result<Arc<LogView>, StoreError> {
        let raw = || &self.log_trust;
        match &self.log {
            Source::View(view) if view.covers(run.as_str()) => Ok(view.clone()),
            Source::View(_) => Ok(Arc::new(LogView::load(store, raw()).await?)),
            Source::Passed { pass, whole } => {
                let runs = std::slice::from_ref(run);
                if let Some(view) = LogView::for_runs_passed(store, pass, runs).await? {
                    return Ok(Arc::new(view));
                }
                let whole = whole
                    .get_or_try_init(|| async {
                        tracing::info!(run = %run, "the log is read whole: a pointer, tile or entry of this run is not as the pass over the log read it");
                        LogView::load(store, raw()).await.map(Arc::new)
                    })
                    .await?;
                Ok(whole.clone())
            }
        }
    }

    /// `seal verify`'s report of one run: its own checks, its log checks, the witness quorum.
    pub async fn report(&self, store: &Store, run: &RunId) -> Result<RunReport, StoreError> {
        Ok(self.verdict(store, run).await?.0)
    }

    /// The proof of a run that [`Verifier::report`] calls verified, else that report.
    pub async fn prove(
        &self,
        store: &Store,
        run: &RunId,
    ) -> Result<Result<VerifiedRun, RunReport>, StoreError> {
        let (report, proof) = self.verdict(store, run).await?;
        Ok(match proof {
            Some(p) if report.verified => Ok(p),
            _ => Err(report),
        })
    }

    /// The run's stored reviews that check under this verifier's reviewer keys and are in its
    /// log, in order (`proof`: the run proven by [`Verifier::prove`]). Any other stored review
    /// is left out: it is a problem of the run's report, never a decision.
    pub async fn trusted_reviews(
        &self,
        store: &Store,
        run: &RunId,
        proof: &VerifiedRun,
    ) -> Result<Vec<review::TrustedReview>, StoreError> {
        let mut facts = facts(run, proof, &self.trusted);
        let checked = read_checked(store, run, &mut facts, &self.reviewers).await?;
        // Most runs have no review: the log (after a pass, the run's pointers and entries,
        // read a moment ago by `prove`) is read again only for one that has.
        if checked.is_empty() {
            return Ok(Vec::new());
        }
        let log = self.log_for(store, run).await?;
        Ok(checked
            .into_iter()
            .filter_map(|c| {
                let statement = c.result.ok()?;
                let sha256 = Hash::of(&c.bytes);
                if log.check_review(run, c.index, sha256.as_str()).is_some() {
                    return None;
                }
                Some(review::TrustedReview {
                    index: c.index,
                    key_id: review::signer_key_id(&c.bytes)?,
                    sha256,
                    predicate: statement.predicate,
                })
            })
            .collect())
    }

    /// [`Verifier::report`], with the proof of the run itself when its own checks passed
    /// (the report may still name log or witness problems).
    pub async fn verdict(
        &self,
        store: &Store,
        run: &RunId,
    ) -> Result<(RunReport, Option<VerifiedRun>), StoreError> {
        let log = self.log_for(store, run).await?;
        let (mut report, proof) =
            reviewed_verdict(store, run, &self.trusted, &self.reviewers, &log).await?;
        // The latest checkpoint without its witness quorum fails every run proven against it.
        if let Some(p) = &self.unwitnessed {
            report.problems.push(p.clone());
            report.verified = false;
        }
        Ok((report, proof))
    }
}

/// Verifies one run and, when it verifies, hands out the proof; else the report of why not.
/// The proof is about the run itself (seal, evidence, everything bound); whether the store's
/// log accounts for it is `seal verify`'s and `seal log verify`'s question, so that a run
/// imported from an archive can be proven before it is logged here.
pub async fn prove(
    store: &Store,
    run: &RunId,
    trusted: &[PublicKey],
) -> Result<Result<VerifiedRun, RunReport>, StoreError> {
    let (report, proof) = check_run(store, run, trusted).await?;
    Ok(match proof {
        Some(p) if report.verified => Ok(p),
        _ => Err(report),
    })
}

async fn check_run(
    store: &Store,
    run: &RunId,
    trusted: &[PublicKey],
) -> Result<(RunReport, Option<VerifiedRun>), StoreError> {
    let mut report = RunReport {
        run_id: run.to_string(),
        verified: false,
        outcome: None,
        key_id: None,
        problems: Vec::new(),
    };
    let ev_key = Key::evidence(run);
    let Some(ev_bytes) =
        readable(store, &ev_key, AuditCheck::Evidence, &mut report.problems).await?
    else {
        if report.problems.is_empty() {
            report.problems.push(problem(
                AuditCheck::Evidence,
                ev_key.as_str(),
                "no evidence.json: the run is not decided or the evidence was deleted",
            ));
        }
        return Ok((report, None));
    };
    let ev_hash = Hash::of(&ev_bytes);
    let mut problems = Vec::new();
    // 1. The seal; 2. the evidence document; 3. the snapshot and the submitted documents it
    // was judged from; 4. everything the evidence references (the audit).
    // The evidence is parsed once, here; the seal's predicate is checked against it.
    let mut ev_problems = Vec::new();
    let ev = check_evidence(store, run, &ev_bytes, &mut ev_problems);
    let seal = check_seal(
        store,
        run,
        trusted,
        ev.as_ref().map(|(ev, _)| ev),
        &ev_hash,
        &mut problems,
    )
    .await?;
    problems.append(&mut ev_problems);
    report.key_id = seal.as_ref().map(|(s, _)| s.key_id.clone());
    let Some((ev, snapshot_hash)) = ev else {
        report.problems = problems;
        return Ok((report, None));
    };
    report.outcome = ev.outcome.map(|o| o.as_str().to_string());
    check_snapshot(store, run, &ev, snapshot_hash.as_ref(), &mut problems).await;
    check_submitted(store, run, &ev, &mut problems).await?;
    let brief = readable(store, &Key::brief(run), AuditCheck::Refs, &mut problems).await?;
    let audited = audit::audit_bound(store, &ev, brief.as_deref()).await;
    problems.extend(audited.problems);
    problems.dedup();
    // A run the postguard refused (`postguard_<check>`) verifies as that decision when its
    // finding is what the stored run derives now.
    let problems = audit::reprove_postguard(&ev, problems);
    report.verified = problems.is_empty();
    report.problems = problems;
    // The audit lists the folder of the run the evidence names. Copied under another id, that
    // is not this folder, whose reviews are then listed on their own.
    let reviews = audited.reviews.filter(|_| ev.run_id == run.as_str());
    let proof = seal.map(|(seal, seal_hash)| VerifiedRun {
        seal,
        seal_hash,
        evidence: ev,
        evidence_hash: ev_hash,
        bound: audited.bound,
        named: audited.named,
        reviews,
        policies: audited.policies,
    });
    Ok((report, proof))
}

/// The seal: one signature by a trusted key over a statement whose subject is exactly these
/// evidence bytes and whose predicate states this evidence's decision.
async fn check_seal(
    store: &Store,
    run: &RunId,
    trusted: &[PublicKey],
    ev: Option<&Evidence>,
    ev_hash: &Hash,
    problems: &mut Vec<Problem>,
) -> Result<Option<(sealing::VerifiedSeal, Hash)>, StoreError> {
    let ev_key = Key::evidence(run);
    let seal_key = Key::seal(run);
    let mut verified_seal = None;
    match readable(store, &seal_key, AuditCheck::Signature, problems).await? {
        None => problems.push(problem(
            AuditCheck::Signature,
            seal_key.as_str(),
            "no seal.dsse.json",
        )),
        Some(bytes) => match seal_core::json::parse_as::<Envelope>(&bytes, store.doc_limit()) {
            Err(e) => problems.push(problem(
                AuditCheck::Signature,
                seal_key.as_str(),
                format!("not a DSSE envelope: {e}"),
            )),
            Ok(env) => match sealing::verify_envelope(&env, trusted) {
                Err(e) => problems.push(problem(
                    AuditCheck::Signature,
                    seal_key.as_str(),
                    e.to_string(),
                )),
                Ok(seal) => {
                    verified_seal = Some((seal.clone(), Hash::of(&bytes)));
                    let subject = &seal.statement.subject[0];
                    if subject.name != ev_key.as_str() {
                        problems.push(mismatch(
                            AuditCheck::SubjectDigest,
                            seal_key.as_str(),
                            ev_key.as_str(),
                            &subject.name,
                            "the seal names another object: a seal copied from another run",
                        ));
                    }
                    if subject.digest.sha256 != ev_hash.as_str() {
                        problems.push(mismatch(
                            AuditCheck::SubjectDigest,
                            ev_key.as_str(),
                            &subject.digest.sha256,
                            ev_hash,
                            "evidence.json is not the object that was sealed",
                        ));
                    }
                    if let Some(ev) = ev {
                        let want = sealing::statement_for(run, ev, ev_hash).ok();
                        if want.map(|w| w.predicate) != Some(seal.statement.predicate.clone()) {
                            problems.push(problem(
                                AuditCheck::Predicate,
                                seal_key.as_str(),
                                "the sealed predicate does not state this evidence's decision",
                            ));
                        }
                    }
                }
            },
        },
    }

    Ok(verified_seal)
}

/// The evidence document: canonical bytes, schema and invariants, this run's, DECIDED.
fn check_evidence(
    store: &Store,
    run: &RunId,
    ev_bytes: &[u8],
    problems: &mut Vec<Problem>,
) -> Option<(Evidence, Option<Hash>)> {
    let ev_key = Key::evidence(run);
    let value = match seal_core::json::parse(ev_bytes, store.doc_limit()) {
        Ok(v) => v,
        Err(e) => {
            problems.push(problem(
                AuditCheck::Evidence,
                ev_key.as_str(),
                format!("not JSON: {e}"),
            ));
            return None;
        }
    };
    // The canonical bytes again, with each member's place in them: the JUDGING snapshot's
    // hash is cut from them (`decided::snapshot_bytes`) rather than written a second time.
    let canonical = canonical::canonical_object(&value);
    let snapshot_hash = match &canonical {
        Ok(Some(c)) => seal_core::decided::snapshot_bytes(c).map(|b| Hash::of(&b)),
        _ => None,
    };
    match canonical.map(|c| c.map(|c| c.bytes)) {
        Ok(Some(c)) if c == ev_bytes => {}
        Ok(_) => problems.push(problem(
            AuditCheck::Evidence,
            ev_key.as_str(),
            "not stored as canonical JSON",
        )),
        Err(e) => problems.push(problem(
            AuditCheck::Evidence,
            ev_key.as_str(),
            e.to_string(),
        )),
    }
    // One typed pass over the tree that the schema checked (`checked`); only an evidence
    // with findings is deserialized again, to go on with every other check of the run.
    let typed = checked::<Evidence>(&value).or_else(|findings| {
        for f in findings {
            problems.push(problem(
                AuditCheck::SchemaValid,
                format!("{ev_key} {}", f.pointer),
                format!("{} {}", f.rule, f.message),
            ));
        }
        <Evidence as serde::Deserialize>::deserialize(&value)
    });
    let ev: Evidence = match typed {
        Ok(e) => e,
        Err(e) => {
            problems.push(problem(
                AuditCheck::Evidence,
                ev_key.as_str(),
                e.to_string(),
            ));
            return None;
        }
    };
    if let Err(e) = seal_core::bound::check(&ev_key, &ev) {
        problems.push(mismatch(
            AuditCheck::RunId,
            ev_key.as_str(),
            run,
            &ev.run_id,
            format!("the evidence belongs to another run (a renamed or copied run folder): {e}"),
        ));
    }
    if ev.phase != Phase::Decided {
        problems.push(problem(
            AuditCheck::Evidence,
            ev_key.as_str(),
            "phase is not DECIDED",
        ));
    }

    Some((ev, snapshot_hash))
}

/// The JUDGING snapshot the postguard decided from: the evidence minus the decision.
async fn check_snapshot(
    store: &Store,
    run: &RunId,
    ev: &Evidence,
    derived: Option<&Hash>,
    problems: &mut Vec<Problem>,
) {
    if let Some(pg) = &ev.final_postguard {
        let snap_key = Key::judging(run);
        // The evidence minus its decision, canonically (`derived`), hashes to the recorded
        // snapshot hash: then the stored snapshot is exactly those bytes once it hashes to it
        // too, and parsing it back would only rebuild the evidence minus its decision (a parse
        // and a typed copy of the largest document of the run, ~7% of `verify --all`). Any
        // other case takes the full comparison below, which names what differs.
        if derived == Some(&pg.judging_snapshot_hash) {
            if let Err(e) = store
                .get_verified(&snap_key, &pg.judging_snapshot_hash)
                .await
            {
                problems.push(problem(
                    AuditCheck::JudgingSnapshot,
                    snap_key.as_str(),
                    e.to_string(),
                ));
            }
            return;
        }
        match store
            .get_json_verified::<Evidence>(&snap_key, &pg.judging_snapshot_hash)
            .await
        {
            Err(e) => problems.push(problem(
                AuditCheck::JudgingSnapshot,
                snap_key.as_str(),
                e.to_string(),
            )),
            Ok(snap) => {
                if seal_core::decided::undecided(ev) != snap {
                    problems.push(problem(
                        AuditCheck::JudgingSnapshot,
                        snap_key.as_str(),
                        "the evidence is not its JUDGING snapshot plus the decision",
                    ));
                }
            }
        }
    }
}

/// The submitted header and play-spec: every roll's guard names their sha256, so the sealed
/// rolls bind them; the header must also be the evidence before judging.
async fn check_submitted(
    store: &Store,
    run: &RunId,
    ev: &Evidence,
    problems: &mut Vec<Problem>,
) -> Result<(), StoreError> {
    let header_key = Key::header(run);
    let header_bytes = readable(store, &header_key, AuditCheck::Refs, problems).await?;
    let header_hash = header_bytes.as_ref().map(|b| Hash::of(b));
    let mut header_bound = !ev.rolls.is_empty();
    for r in &ev.rolls {
        let named = seal_core::derive::guard_bound_hash(r, GuardCheck::Header);
        if named.is_none() || named != header_hash {
            header_bound = false;
            problems.push(Problem {
                expected: named.map(|h| h.to_string()),
                actual: header_hash.as_ref().map(|h| h.to_string()),
                ..Problem::new(
                    AuditCheck::Refs,
                    header_key.as_str(),
                    format!("the header is not the one {} was judged under", r.roll_id),
                )
            });
        }
        let spec_key = Key::play_spec(run);
        if let Some(named) = seal_core::derive::guard_bound_hash(r, GuardCheck::PlaySpecFresh) {
            match readable(store, &spec_key, AuditCheck::Refs, problems).await? {
                Some(b) if Hash::of(&b) == named => {}
                Some(b) => problems.push(mismatch(
                    AuditCheck::Refs,
                    spec_key.as_str(),
                    &named,
                    Hash::of(&b),
                    format!(
                        "the play-spec is not the one {} was judged under",
                        r.roll_id
                    ),
                )),
                None => problems.push(problem(
                    AuditCheck::Refs,
                    spec_key.as_str(),
                    format!("the play-spec {} was judged under is missing", r.roll_id),
                )),
            }
        }
    }
    header_fields(store, run, ev, header_bytes, header_bound, problems);
    Ok(())
}

/// The evidence is the submitted header plus what judging writes, and costs the header's
/// cost plus every roll's.
fn header_fields(
    store: &Store,
    run: &RunId,
    ev: &Evidence,
    header_bytes: Option<bytes::Bytes>,
    header_bound: bool,
    problems: &mut Vec<Problem>,
) {
    let ev_key = Key::evidence(run);
    let header_key = Key::header(run);
    match header_bytes.map(|b| seal_core::json::parse_as::<Evidence>(&b, store.doc_limit())) {
        Some(Ok(header)) if header_bound => {
            let want = rmb_to_micro(header.cost_rmb)
                + ev.rolls
                    .iter()
                    .map(|r| rmb_to_micro(r.cost_rmb))
                    .sum::<u64>();
            if want != rmb_to_micro(ev.cost_rmb) {
                problems.push(mismatch(
                    AuditCheck::Cost,
                    format!("{ev_key} costRmb"),
                    micro_to_rmb(want),
                    ev.cost_rmb,
                    "run cost is not the header's plus every roll's",
                ));
            }
            // The evidence is the header plus what judging added, and nothing else changed.
            if !seal_core::derive::only_judging_changed(&header, ev) {
                problems.push(problem(
                    AuditCheck::Evidence,
                    ev_key.as_str(),
                    "the evidence changes header fields that judging never writes",
                ));
            }
            if header.phase != Phase::Judging || !header.rolls.is_empty() {
                problems.push(problem(
                    AuditCheck::Evidence,
                    header_key.as_str(),
                    "the submitted header is not a JUDGING header without rolls",
                ));
            }
        }
        Some(Ok(_)) => {}
        Some(Err(e)) => problems.push(problem(
            AuditCheck::SchemaValid,
            header_key.as_str(),
            e.to_string(),
        )),
        None => problems.push(problem(
            AuditCheck::Refs,
            header_key.as_str(),
            "the submitted header is missing",
        )),
    }
}

mod reviews;
pub use reviews::{check_run_reviews, facts, read_checked, stored_keys, Checked, Trust};

#[cfg(test)]
mod tests {
    use super::*;

    /// The reviews partitioned from a listing of the whole run folder are those of a listing
    /// of the reviews folder: reviews by index, every other name or foreign entry under the
    /// folder as "other", nothing from beside it (a look-alike folder name included).
    #[test]
    fn reviews_from_the_run_folder_listing_are_the_reviews_folder_s() {
        let run = RunId::parse("run-a").unwrap();
        let key = |s: &str| Key::parse(s).unwrap();
        let keys = vec![
            key("runs/run-a/evidence.json"),
            key("runs/run-a/reviews/1.dsse.json"),
            key("runs/run-a/reviews/0.dsse.json"),
            key("runs/run-a/reviews/notes.txt"),
            key("runs/run-a/reviewsx/2.dsse.json"),
            key("runs/run-a/roll-1/roll.json"),
        ];
        let foreign = vec![
            "runs/run-a/reviews/link".to_string(),
            "runs/run-a/odd".to_string(),
        ];
        let (numbered, other) = audit::reviews_listed(&run, &keys, &foreign);
        assert_eq!(
            numbered,
            vec![(0, Key::review(&run, 0)), (1, Key::review(&run, 1))]
        );
        assert_eq!(
            other,
            vec![
                "runs/run-a/reviews/link".to_string(),
                "runs/run-a/reviews/notes.txt".to_string()
            ]
        );
    }
}
