//! `seal stats`: how well the two judges agree, per obligation, per genre and over time, and
//! what decided runs cost (docs/DESIGN.md §7, §14).
//!
//! Four parts: this loader streams the store's run ids (sorted), proves each run with `seal
//! verify`'s verdict ([`crate::verify::Verifier`]: a decided run that does not verify is
//! counted and listed, never used), reads the documents the figures need by the ref and sha256 the sealed evidence
//! records, reduces them to [`facts`], and feeds them one run at a time to the
//! [`aggregate::Aggregator`] (bounded memory: counters, matrices, exact histograms). The
//! statistics ([`kappa`]), the aggregator, the terminal table ([`text`]) and the page
//! ([`html`]) are pure.

pub use seal_core::stats::{aggregate, facts, html, human, kappa, text};

use std::collections::BTreeMap;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use seal_core::doc::*;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::{RunId, Slot};
use seal_core::review::TrustedReview;
use seal_store::{Key, Store, StoreError};

use crate::verify::Verifier;

pub use aggregate::{Aggregator, Query, StatsReport};
use facts::*;

/// Why the figures could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error("{option}: not an RFC 3339 time: {value:?}")]
    BadTime { option: &'static str, value: String },
    #[error("--genre: unknown genre {0:?} (narrative, trpg, heritage, puzzle, sim-business)")]
    BadGenre(String),
    #[error("--policy: not a judge policy's sha256 (64 lowercase hex digits): {0:?}")]
    BadPolicy(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{key}: {detail}")]
    Corrupt { key: String, detail: String },
    #[error("the stats report is not valid: {0}")]
    Invalid(String),
}

impl HasFault for StatsError {
    fn fault(&self) -> Fault {
        match self {
            StatsError::BadTime { .. } | StatsError::BadGenre(_) | StatsError::BadPolicy(_) => {
                Fault::Caller
            }
            StatsError::Store(e) => e.fault(),
            StatsError::Corrupt { .. } | StatsError::Invalid(_) => Fault::Corruption,
        }
    }
}

/// The query, checked: a time window `[since, until)` over `decidedAt`, a genre and a judge
/// policy.
#[derive(Debug, Clone)]
struct Window {
    since: Option<OffsetDateTime>,
    until: Option<OffsetDateTime>,
    genre: Option<String>,
    policy: Option<seal_core::canonical::Hash>,
}

fn parse_time(
    option: &'static str,
    v: &Option<String>,
) -> Result<Option<OffsetDateTime>, StatsError> {
    v.as_deref()
        .map(|s| {
            OffsetDateTime::parse(s, &Rfc3339).map_err(|_| StatsError::BadTime {
                option,
                value: s.chars().take(64).collect(),
            })
        })
        .transpose()
}

fn window(q: &Query) -> Result<Window, StatsError> {
    if let Some(g) = &q.genre {
        serde_json::from_value::<Genre>(serde_json::Value::String(g.clone()))
            .map_err(|_| StatsError::BadGenre(g.chars().take(64).collect()))?;
    }
    let policy = q
        .policy
        .as_deref()
        .map(|p| {
            seal_core::canonical::Hash::parse(p)
                .map_err(|_| StatsError::BadPolicy(p.chars().take(80).collect()))
        })
        .transpose()?;
    Ok(Window {
        since: parse_time("--since", &q.since)?,
        until: parse_time("--until", &q.until)?,
        genre: q.genre.clone(),
        policy,
    })
}

/// The report and its canonical JSON bytes.
#[derive(Debug, Clone)]
pub struct Stats {
    pub report: StatsReport,
    pub bytes: Vec<u8>,
}

impl Stats {
    pub fn html(&self) -> String {
        html::render(&self.report)
    }
    pub fn text(&self) -> String {
        text::render(&self.report)
    }
}

/// Runs proved at once. Results are consumed in store order, so the figures do not depend on
/// which run finished first; at most this many runs' documents are in memory.
pub const JOBS: usize = 8;

/// What one listed run contributes.
enum Visit {
    Open,
    NotVerified(Unverified),
    Outside,
    Used(Box<RunFacts>),
}

async fn visit(
    store: &Store,
    run: &RunId,
    verifier: &Verifier,
    w: &Window,
) -> Result<Visit, StatsError> {
    if !store.exists(&Key::evidence(run)).await? {
        return Ok(Visit::Open); // not decided: nothing to count
    }
    Ok(match verifier.prove(store, run).await? {
        Err(report) => Visit::NotVerified(unverified(&report)),
        Ok(proof) => {
            let reviews = verifier.trusted_reviews(store, run, &proof).await?;
            match facts_of(store, run, &proof, &reviews, w).await? {
                Some(f) => Visit::Used(Box::new(f)),
                None => Visit::Outside,
            }
        }
    })
}

/// Streams every run of the store through `seal verify`'s verdict ([`Verifier::prove`]) and
/// the aggregator, [`JOBS`] runs at a time, in store order.
pub async fn stats(store: &Store, verifier: &Verifier, query: Query) -> Result<Stats, StatsError> {
    use futures::StreamExt;
    let w = window(&query)?;
    let seal_store::RunListing {
        runs,
        invalid: bad_folders,
    } = store.runs().await?;
    let mut agg = Aggregator::new();
    for name in bad_folders {
        agg.listed();
        let r = crate::verify::RunReport::unverifiable_folder(name);
        agg.unverified(unverified(&r));
    }
    let w = &w;
    let mut visits = futures::stream::iter(runs)
        .map(|run| async move { visit(store, &run, verifier, w).await })
        .buffered(JOBS);
    while let Some(v) = visits.next().await {
        match v? {
            Visit::Open => continue,
            Visit::NotVerified(u) => {
                agg.listed();
                agg.unverified(u);
            }
            Visit::Outside => {
                agg.listed();
                agg.filtered_out();
            }
            Visit::Used(f) => {
                agg.listed();
                agg.add(&f);
            }
        }
    }
    let report = agg.finish(query);
    let value = serde_json::to_value(&report).map_err(|e| StatsError::Invalid(e.to_string()))?;
    if let seal_core::validate::Report::Invalid(_, findings) =
        seal_core::validate::validate_as(seal_core::contracts::Kind::Stats, &value)
    {
        let shown: Vec<String> = findings.iter().take(3).map(|f| f.to_string()).collect();
        return Err(StatsError::Invalid(shown.join("; ")));
    }
    let mut bytes = seal_core::canonical::canonical_bytes(&value)
        .map_err(|e| StatsError::Invalid(e.to_string()))?;
    bytes.push(b'\n');
    Ok(Stats { report, bytes })
}

fn unverified(r: &crate::verify::RunReport) -> Unverified {
    Unverified {
        run_id: r.run_id.clone(),
        problems: r.problems.len(),
        first_problem: r
            .problems
            .first()
            .map(|p| p.to_string())
            .unwrap_or_default(),
    }
}

fn genre_name(g: Genre) -> String {
    serde_json::to_value(g)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The facts of one verified run, or None when it lies outside the query.
async fn facts_of(
    store: &Store,
    run: &RunId,
    proof: &crate::verify::VerifiedRun,
    reviews: &[TrustedReview],
    w: &Window,
) -> Result<Option<RunFacts>, StatsError> {
    let ev = proof.evidence();
    let genre = genre_name(ev.genre);
    let pg = ev.final_postguard.as_ref();
    let decided = pg
        .and_then(|p| OffsetDateTime::parse(&p.decided_at, &Rfc3339).ok())
        .ok_or_else(|| StatsError::Corrupt {
            key: Key::evidence(run).to_string(),
            detail: "a verified evidence without an RFC 3339 decidedAt".into(),
        })?;
    let outside = w.genre.as_ref().is_some_and(|g| *g != genre)
        || w.since.is_some_and(|s| decided < s)
        || w.until.is_some_and(|u| decided >= u);
    if outside {
        return Ok(None);
    }
    let mut rolls = Vec::with_capacity(ev.rolls.len());
    let mut policies = std::collections::BTreeSet::new();
    for r in &ev.rolls {
        rolls.push(roll_facts(store, run, r, &mut policies).await?);
    }
    // A run counts under a policy when every judge call it made names that policy: a run
    // judged before policies were logged, or under two, is outside such a query.
    if let Some(want) = &w.policy {
        if policies.is_empty() || policies.iter().any(|p| p.sha256 != *want) {
            return Ok(None);
        }
    }
    let day = decided.to_offset(time::UtcOffset::UTC).date().to_string();
    let replay = ev.acceptance_mode == AcceptanceMode::HistoricalReplay;
    Ok(Some(RunFacts {
        run_id: run.to_string(),
        genre,
        day,
        outcome: ev.outcome.map(|o| o.as_str()).unwrap_or("?").to_string(),
        action: ev
            .decision
            .as_ref()
            .map(|d| d.action.as_str())
            .unwrap_or("?")
            .to_string(),
        reasons: ev
            .decision
            .as_ref()
            .map(|d| d.reasons.clone())
            .unwrap_or_default(),
        replay_of: replay.then(|| ev.parent_run_id.clone()).flatten(),
        first_raw_a: ev.rolls.first().map(|r| r.judge_a_ref.raw_hash.to_string()),
        cost_micro: rmb_to_micro(ev.cost_rmb),
        rolls,
        decided_at: pg.map(|p| p.decided_at.clone()).unwrap_or_default(),
        decided_nanos: decided.unix_timestamp_nanos(),
        reviewed: !reviews.is_empty(),
        human: seal_core::review::latest_decisions(reviews),
        seal_sha256: proof.seal_hash().to_string(),
        review_sha256: reviews
            .iter()
            .map(|r| (r.index, r.sha256.to_string()))
            .collect(),
        policies: policies.into_iter().collect(),
    }))
}

/// The facts of roll `r`; adds the judge policies its attempts name to `policies`.
async fn roll_facts(
    store: &Store,
    run: &RunId,
    r: &Roll,
    policies: &mut std::collections::BTreeSet<PolicyRef>,
) -> Result<RollFacts, StatsError> {
    let consensus: JudgeConsensus = store
        .get_json_verified(&r.judge_consensus_ref, &r.judge_consensus_hash)
        .await?;
    let package: JudgePackage = store
        .get_json_verified(&r.judge_package_ref, &r.judge_package_hash)
        .await?;
    let (a_slot, a_result, a_raw) = slot_facts(store, run, r, Slot::A, policies).await?;
    let (b_slot, b_result, b_raw) = slot_facts(store, run, r, Slot::B, policies).await?;
    let status = |res: &JudgeResult, id: &str| {
        res.obligations
            .iter()
            .find(|o| o.id == id)
            .map(|o| o.status)
            .unwrap_or(JudgeStatus::Missing)
    };
    let obligations = consensus
        .obligation_results
        .iter()
        .map(|c| {
            let check = package
                .obligations
                .iter()
                .find(|o| o.id == c.id)
                .and_then(|o| o.check.as_ref())
                .map(|a| seal_core::assertions::evaluate(a, &package.events).holds);
            ObligationFacts {
                id: c.id.clone(),
                a: category(&a_raw, &c.id),
                b: category(&b_raw, &c.id),
                a_status: status(&a_result, &c.id),
                b_status: status(&b_result, &c.id),
                consensus: c.status,
                check,
            }
        })
        .collect();
    Ok(RollFacts {
        roll_id: r.roll_id.to_string(),
        outcome: r.roll_outcome.as_str().to_string(),
        dispatched: r.roll_guard.status == GuardStatus::Pass,
        degraded: consensus.degraded,
        cost_micro: rmb_to_micro(r.cost_rmb),
        obligations,
        slots: [a_slot, b_slot],
    })
}

/// A judge's raw verdicts by obligation id, from `parsed.json` (the JudgeOutput of the
/// accepted attempt); empty for a failed slot (its parsed.json is a JudgeAttemptFailure/1).
type RawVerdicts = BTreeMap<String, Verdict>;

/// The matrix category of a judge's raw verdict: not answered is `missing`.
fn category(raw: &RawVerdicts, id: &str) -> usize {
    match raw.get(id) {
        Some(Verdict::Satisfied) => 0,
        Some(Verdict::Failed) => 1,
        Some(Verdict::NotObserved) => 2,
        None => 3,
    }
}

async fn slot_facts(
    store: &Store,
    run: &RunId,
    r: &Roll,
    slot: Slot,
    policies: &mut std::collections::BTreeSet<PolicyRef>,
) -> Result<(SlotFacts, JudgeResult, RawVerdicts), StatsError> {
    let sref = r.slot_ref(slot);
    let result: JudgeResult = store
        .get_json_verified(&sref.normalized_ref, &sref.result_hash)
        .await?;
    let parsed_key = &sref.parsed_ref;
    let parsed: serde_json::Value = store
        .get_json_verified(parsed_key, &sref.parsed_hash)
        .await?;
    let mut raw = RawVerdicts::new();
    if parsed.get("schemaVersion").is_none() {
        let out: JudgeOutput = serde_json::from_value(parsed).map_err(|e| StatsError::Corrupt {
            key: parsed_key.to_string(),
            detail: e.to_string(),
        })?;
        for o in out.obligations {
            raw.insert(o.id, o.verdict);
        }
    }
    let mut attempts = Vec::with_capacity(result.attempts.len());
    let mut last: Option<SlotMeta> = None;
    for h in &result.attempts {
        let k = Key::attempt_file(run, r.roll_id, slot, h.attempt, "meta.json");
        let meta: SlotMeta = store.get_json_verified(&k, &h.meta_hash).await?;
        policies.extend(meta.policy.clone());
        attempts.push(AttemptFacts {
            latency_ms: meta.latency_ms,
            cost_micro: rmb_to_micro(meta.cost_rmb),
            error_class: meta.error_class.as_ref().map(|c| c.to_string()),
        });
        // The final attempt: the accepted one, else the last.
        if !last.as_ref().is_some_and(|m| m.accepted) {
            last = Some(meta);
        }
    }
    let (model, prompt) = match &last {
        Some(m) => (
            m.model_answered
                .clone()
                .unwrap_or_else(|| m.model_requested.clone()),
            format!("{}@{}", m.prompt_artifact.id, m.prompt_artifact.version),
        ),
        None => (result.model.clone().unwrap_or_default(), String::new()),
    };
    let (host, requested, served) = match &last {
        Some(m) => (
            m.endpoint_host.clone(),
            m.model_requested.clone(),
            m.accepted.then(|| Served {
                model: m
                    .model_answered
                    .clone()
                    .unwrap_or_else(|| m.model_requested.clone()),
                fingerprint: m.system_fingerprint.clone(),
            }),
        ),
        None => (String::new(), String::new(), None),
    };
    let facts = SlotFacts {
        slot: slot.to_string(),
        model,
        prompt,
        host,
        requested,
        served,
        failed_class: result
            .slot_failed
            .as_ref()
            .map(|f| f.error_class.to_string()),
        attempts,
    };
    Ok((facts, result, raw))
}

/// The facts of one proven run inside `query` (`None` outside it), with the window rules of the
/// figures and its trusted reviews under `verifier`: what `seal export labels`
/// ([`crate::labels`]) reads.
pub async fn proven_facts(
    store: &Store,
    run: &RunId,
    proof: &crate::verify::VerifiedRun,
    verifier: &Verifier,
    query: &Query,
) -> Result<Option<RunFacts>, StatsError> {
    let w = window(query)?;
    let reviews = verifier.trusted_reviews(store, run, proof).await?;
    facts_of(store, run, proof, &reviews, &w).await
}

/// The adjudication queue (`GET /v1/review-queue`; also a section of the report): every
/// decided run of the store that verifies under `verifier`, ended `inconclusive` and has no
/// trusted review, oldest decision first. A run that does not verify is not on it: it cannot
/// be reviewed (`seal review` proves the run first); `seal stats` lists it as not verified.
pub async fn review_queue(
    store: &Store,
    verifier: &Verifier,
) -> Result<Vec<human::QueuedRun>, StatsError> {
    Ok(review_queue_entries(store, verifier)
        .await?
        .into_iter()
        .map(|e| e.row)
        .collect())
}

/// A run on the adjudication queue with what the review workbench filters it by.
#[derive(Debug, Clone)]
pub struct QueueEntry {
    pub row: human::QueuedRun,
    /// The run's genre, as the evidence spells it.
    pub genre: String,
    /// Its proof obligation ids, in the header's order.
    pub obligations: Vec<String>,
}

/// [`review_queue`], each run with its genre and obligations (the review workbench's queue).
pub async fn review_queue_entries(
    store: &Store,
    verifier: &Verifier,
) -> Result<Vec<QueueEntry>, StatsError> {
    use futures::StreamExt;
    let mut runs = store.runs().await?.runs;
    runs.sort();
    let mut rows = futures::stream::iter(runs)
        .map(|run| async move { queue_visit(store, &run, verifier).await })
        .buffered(JOBS);
    let mut queue: Vec<QueueEntry> = Vec::new();
    while let Some(row) = rows.next().await {
        queue.extend(row?);
    }
    let mut order: Vec<human::QueuedRun> = queue.iter().map(|e| e.row.clone()).collect();
    human::sort_queue(&mut order);
    let mut by_id: std::collections::BTreeMap<String, QueueEntry> = queue
        .into_iter()
        .map(|e| (e.row.run_id.clone(), e))
        .collect();
    Ok(order
        .iter()
        .filter_map(|r| by_id.remove(&r.run_id))
        .collect())
}

async fn queue_visit(
    store: &Store,
    run: &RunId,
    verifier: &Verifier,
) -> Result<Option<QueueEntry>, StatsError> {
    if !store.exists(&Key::evidence(run)).await? {
        return Ok(None);
    }
    let Ok(proof) = verifier.prove(store, run).await? else {
        return Ok(None);
    };
    let ev = proof.evidence();
    let outcome = ev.outcome.map(|o| o.as_str()).unwrap_or("?");
    let replay = ev.acceptance_mode == seal_core::doc::AcceptanceMode::HistoricalReplay;
    if !human::queued(outcome, false, replay) {
        return Ok(None);
    }
    let reviewed = !verifier
        .trusted_reviews(store, run, &proof)
        .await?
        .is_empty();
    if !human::queued(outcome, reviewed, replay) {
        return Ok(None);
    }
    let decided_at = ev
        .final_postguard
        .as_ref()
        .map(|p| p.decided_at.clone())
        .unwrap_or_default();
    let nanos = OffsetDateTime::parse(&decided_at, &Rfc3339)
        .map(|t| t.unix_timestamp_nanos())
        .map_err(|_| StatsError::Corrupt {
            key: Key::evidence(run).to_string(),
            detail: "a verified evidence without an RFC 3339 decidedAt".into(),
        })?;
    let genre = serde_json::to_value(ev.genre)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    Ok(Some(QueueEntry {
        row: human::queue_row(run.as_str(), &decided_at, nanos),
        genre,
        obligations: ev.proof_obligations.iter().map(|o| o.id.clone()).collect(),
    }))
}
