//! The aggregator of `seal stats`: fed one verified run at a time ([`Aggregator::add`]), it
//! keeps only per-key counters, 4 × 4 confusion matrices and exact value histograms (value →
//! count, so percentiles are exact and memory grows with distinct values, not with runs), then
//! [`Aggregator::finish`] computes the figures. Pure: same runs in the same order, same bytes.
//!
//! Why exact histograms and not a reservoir: a reservoir needs randomness and gives
//! approximate percentiles; latencies are whole milliseconds and costs whole micro-RMB, whose
//! distinct values stay few even over 100,000 runs. Per-day figures keep an exact matrix per
//! day. The replay section keeps one small record per original run (outcome and roll-1 raw
//! hash) to compare replays with their parents once every run is seen.

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::drift::{DriftAcc, DriftGroup};
use super::facts::*;
use super::human::{self, HumanAcc, HumanSection, QueuedRun, HUMAN_CATEGORIES};
use super::kappa::{self, Confusion, Histogram, BOOTSTRAP_RESAMPLES, CATEGORIES};
use super::reliability::{ReliabilityAcc, ReliabilitySection, MIN_REVIEWED};
use crate::doc::{micro_to_rmb, JudgeStatus, ObligationStatus};
use crate::vocab::Reason;

pub const STATS_SCHEMA: &str = "seal.stats/1";
/// Decimals of every rate, κ and RMB figure in the report.
pub const DECIMALS: i32 = 6;

fn r(x: f64) -> f64 {
    kappa::round(x, DECIMALS)
}

fn rate(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| r(part as f64 / whole as f64))
}

/// The options a report was computed with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Query {
    pub since: Option<String>,
    pub until: Option<String>,
    pub genre: Option<String>,
    /// Only runs whose every judge call was made under this judge policy (its sha256).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct AgreementAcc {
    matrix: Confusion,
    disputed: u64,
    contradicted: u64,
    checked: u64,
    /// Per judge: agrees with the check, claims the opposite, claims nothing.
    vs_check: [[u64; 3]; 2],
}

impl AgreementAcc {
    fn add(&mut self, o: &ObligationFacts) {
        self.matrix.add(o.a, o.b);
        match o.consensus {
            ObligationStatus::Disputed => self.disputed += 1,
            ObligationStatus::Contradicted => self.contradicted += 1,
            _ => {}
        }
        if let Some(holds) = o.check {
            self.checked += 1;
            for (i, s) in [o.a_status, o.b_status].into_iter().enumerate() {
                let k = match s {
                    JudgeStatus::Missing => 2,
                    JudgeStatus::Satisfied if holds => 0,
                    JudgeStatus::Failed if !holds => 0,
                    _ => 1,
                };
                self.vs_check[i][k] += 1;
            }
        }
    }
}

#[derive(Debug, Clone, Default)]
struct SlotAcc {
    rolls: u64,
    attempts: u64,
    retries: u64,
    failed: u64,
    classes: BTreeMap<String, u64>,
    latency: Histogram,
    cost_per_roll: Histogram,
}

#[derive(Debug, Clone, Default)]
struct DayAcc {
    runs: u64,
    matrix: Confusion,
    obligations: u64,
    disputed: u64,
    cost_micro: u64,
}

#[derive(Debug, Clone, Default)]
struct RunAcc {
    outcomes: BTreeMap<String, u64>,
    actions: BTreeMap<String, u64>,
    rolls_judged: u64,
    rolls_blocked: u64,
    degraded: u64,
    roll2_runs: u64,
    roll2_outcomes: BTreeMap<String, u64>,
    infra: BTreeMap<String, u64>,
    cost: Histogram,
}

struct ReplayRec {
    parent: String,
    outcome: String,
    first_raw_a: Option<String>,
    models: String,
    /// What the replay's judge attempts cost (a stored replay's are copies: nothing new).
    judge_cost_micro: u64,
}

/// Folds verified runs into the figures.
#[derive(Default)]
pub struct Aggregator {
    listed: u64,
    filtered_out: u64,
    ids: Sha256,
    all: AgreementAcc,
    by_obligation: BTreeMap<String, AgreementAcc>,
    by_genre: BTreeMap<String, AgreementAcc>,
    runs: RunAcc,
    used_originals: u64,
    slots: BTreeMap<(String, String, String), SlotAcc>,
    days: BTreeMap<String, DayAcc>,
    originals: BTreeMap<String, (String, Option<String>)>,
    replays: Vec<ReplayRec>,
    unverified: Vec<Unverified>,
    reviewed_runs: u64,
    human_all: HumanAcc,
    human_by_obligation: BTreeMap<String, HumanAcc>,
    reliability_all: ReliabilityAcc,
    reliability_by_obligation: BTreeMap<String, ReliabilityAcc>,
    drift: DriftAcc,
    /// (name, sha256) of the seal and trusted reviews of each reviewed original run used.
    subjects: Vec<(String, String)>,
    /// The judge policies the original runs used were judged under.
    policies: std::collections::BTreeSet<crate::doc::PolicyRef>,
    queue: Vec<QueuedRun>,
}

impl Aggregator {
    pub fn new() -> Aggregator {
        Aggregator::default()
    }

    /// A run listed in the store (counted whether or not it is used).
    pub fn listed(&mut self) {
        self.listed += 1;
    }

    /// A verified run outside the query (time window or genre).
    pub fn filtered_out(&mut self) {
        self.filtered_out += 1;
    }

    pub fn unverified(&mut self, u: Unverified) {
        self.unverified.push(u);
    }

    /// Adds one verified run inside the query. Replays feed only the replay section; every
    /// other figure is over original runs, so a stored replay never counts its parent twice.
    pub fn add(&mut self, run: &RunFacts) {
        self.ids.update(run.run_id.as_bytes());
        self.ids.update(b"\n");
        if human::queued(&run.outcome, run.reviewed, run.replay_of.is_some()) {
            self.queue.push(human::queue_row(
                &run.run_id,
                &run.decided_at,
                run.decided_nanos,
            ));
        }
        if let Some(parent) = &run.replay_of {
            self.replays.push(ReplayRec {
                parent: parent.clone(),
                outcome: run.outcome.clone(),
                first_raw_a: run.first_raw_a.clone(),
                models: model_pair(run),
                judge_cost_micro: run
                    .rolls
                    .iter()
                    .flat_map(|r| &r.slots)
                    .flat_map(|s| &s.attempts)
                    .map(|a| a.cost_micro)
                    .sum(),
            });
            return;
        }
        self.used_originals += 1;
        self.reviewed_runs += u64::from(run.reviewed);
        self.policies.extend(run.policies.iter().cloned());
        if run.reviewed {
            let id = &run.run_id;
            self.subjects
                .push((format!("runs/{id}/seal.dsse.json"), run.seal_sha256.clone()));
            for (n, sha) in &run.review_sha256 {
                self.subjects
                    .push((format!("runs/{id}/reviews/{n}.dsse.json"), sha.clone()));
            }
        }
        self.originals.insert(
            run.run_id.clone(),
            (run.outcome.clone(), run.first_raw_a.clone()),
        );
        self.add_run_figures(run);
        self.drift.add(run);
        let day = self.days.entry(run.day.clone()).or_default();
        day.runs += 1;
        day.cost_micro += run.cost_micro;
        for roll in &run.rolls {
            self.add_roll(run, roll);
        }
    }

    fn add_run_figures(&mut self, run: &RunFacts) {
        let acc = &mut self.runs;
        *acc.outcomes.entry(run.outcome.clone()).or_insert(0) += 1;
        *acc.actions.entry(run.action.clone()).or_insert(0) += 1;
        acc.cost.add(run.cost_micro);
        for reason in run.reasons.iter().filter(|r| matches!(r, Reason::Infra(_))) {
            *acc.infra.entry(reason.to_string()).or_insert(0) += 1;
        }
        if let Some(r2) = run.rolls.get(1) {
            acc.roll2_runs += 1;
            *acc.roll2_outcomes.entry(r2.outcome.clone()).or_insert(0) += 1;
        }
    }

    fn add_roll(&mut self, run: &RunFacts, roll: &RollFacts) {
        if !roll.dispatched {
            self.runs.rolls_blocked += 1;
            return;
        }
        self.runs.rolls_judged += 1;
        self.runs.degraded += u64::from(roll.degraded);
        let day = self.days.entry(run.day.clone()).or_default();
        for o in &roll.obligations {
            day.matrix.add(o.a, o.b);
            day.obligations += 1;
            day.disputed += u64::from(o.consensus == ObligationStatus::Disputed);
            self.all.add(o);
            self.by_obligation.entry(o.id.clone()).or_default().add(o);
            self.by_genre.entry(run.genre.clone()).or_default().add(o);
            if let Some(h) = run.human.get(&o.id) {
                self.human_all.add(*h, o);
                self.human_by_obligation
                    .entry(o.id.clone())
                    .or_default()
                    .add(*h, o);
                self.reliability_all.add(*h, o);
                self.reliability_by_obligation
                    .entry(o.id.clone())
                    .or_default()
                    .add(*h, o);
            }
        }
        for s in &roll.slots {
            let acc = self
                .slots
                .entry((s.slot.clone(), s.model.clone(), s.prompt.clone()))
                .or_default();
            acc.rolls += 1;
            acc.failed += u64::from(s.failed_class.is_some());
            let mut cost = 0;
            for (i, a) in s.attempts.iter().enumerate() {
                acc.attempts += 1;
                acc.retries += u64::from(i > 0);
                acc.latency.add(a.latency_ms);
                cost += a.cost_micro;
                if let Some(c) = &a.error_class {
                    *acc.classes.entry(c.clone()).or_insert(0) += 1;
                }
            }
            acc.cost_per_roll.add(cost);
        }
    }

    /// The figures. The bootstrap seed is the sha256 of the used run ids in store order
    /// (sorted), so the same store gives the same bytes.
    pub fn finish(self, query: Query) -> StatsReport {
        let digest = self.ids.finalize();
        let seed_hex = hex::encode(&digest[..8]);
        let mut seed_bytes = [0u8; 8];
        seed_bytes.copy_from_slice(&digest[..8]);
        let seed = u64::from_be_bytes(seed_bytes);
        let agreement = AgreementSection {
            all: agreement(&self.all, seed, "all"),
            by_obligation: self
                .by_obligation
                .iter()
                .map(|(k, v)| (k.clone(), agreement(v, seed, &format!("obligation:{k}"))))
                .collect(),
            by_genre: self
                .by_genre
                .iter()
                .map(|(k, v)| (k.clone(), agreement(v, seed, &format!("genre:{k}"))))
                .collect(),
        };
        let replay = replay_section(&self.originals, &self.replays);
        let human = HumanSection {
            categories: HUMAN_CATEGORIES.iter().map(|c| c.to_string()).collect(),
            reviewed_runs: self.reviewed_runs,
            all: self.human_all.finish(seed, "human:all", DECIMALS),
            by_obligation: self
                .human_by_obligation
                .iter()
                .map(|(k, v)| {
                    let key = format!("human:obligation:{k}");
                    (k.clone(), v.finish(seed, &key, DECIMALS))
                })
                .collect(),
        };
        let reliability = ReliabilitySection {
            min_reviewed: MIN_REVIEWED,
            all: self
                .reliability_all
                .finish(seed, "reliability:all", DECIMALS),
            by_obligation: self
                .reliability_by_obligation
                .iter()
                .map(|(k, v)| {
                    let key = format!("reliability:obligation:{k}");
                    (k.clone(), v.finish(seed, &key, DECIMALS))
                })
                .collect(),
        };
        let served_models = self.drift.finish(seed, DECIMALS);
        let mut subjects = self.subjects;
        subjects.sort();
        let mut review_queue = self.queue;
        human::sort_queue(&mut review_queue);
        StatsReport {
            schema_version: STATS_SCHEMA.into(),
            query,
            categories: CATEGORIES.iter().map(|c| c.to_string()).collect(),
            seed: seed_hex,
            bootstrap_resamples: BOOTSTRAP_RESAMPLES as u64,
            runs: RunCounts {
                listed: self.listed,
                used: self.used_originals,
                replays: self.replays.len() as u64,
                filtered_out: self.filtered_out,
                not_verified: self.unverified.len() as u64,
                not_verified_runs: self.unverified.iter().map(unverified_row).collect(),
            },
            agreement,
            outcomes: outcomes(&self.runs, self.used_originals),
            slots: self.slots.iter().map(|(k, v)| slot_stats(k, v)).collect(),
            replay,
            daily: self.days.iter().map(|(d, v)| day_stats(d, v)).collect(),
            human,
            reliability,
            served_models,
            review_queue,
            reviewed_subjects: subjects,
            policies: self.policies.into_iter().collect(),
        }
    }
}

fn model_pair(run: &RunFacts) -> String {
    let src = run.rolls.iter().rev().find(|r| r.dispatched);
    match src {
        Some(r) => format!("{} | {}", r.slots[0].model, r.slots[1].model),
        None => "not dispatched".into(),
    }
}

fn unverified_row(u: &Unverified) -> NotVerifiedRun {
    NotVerifiedRun {
        run_id: u.run_id.clone(),
        problems: u.problems as u64,
        first_problem: crate::contracts::shorten(&u.first_problem, 300),
    }
}

fn agreement(acc: &AgreementAcc, seed: u64, key: &str) -> Agreement {
    let m = &acc.matrix;
    let n = m.n();
    let ci = kappa::kappa_interval(m, kappa::key_seed(seed, key), BOOTSTRAP_RESAMPLES);
    let judge = |i: usize| JudgeVsCheck {
        agree: acc.vs_check[i][0],
        opposite: acc.vs_check[i][1],
        no_claim: acc.vs_check[i][2],
        agreement: rate(acc.vs_check[i][0], acc.checked),
    };
    Agreement {
        n,
        matrix: m.cells,
        agreement: m.agreement().map(r),
        kappa: m.kappa().map(r),
        kappa_ci95: ci.map(|(lo, hi)| [r(lo), r(hi)]),
        disputed: acc.disputed,
        contradicted: acc.contradicted,
        disputed_rate: rate(acc.disputed, n),
        contradicted_rate: rate(acc.contradicted, n),
        check: (acc.checked > 0).then(|| CheckAgreement {
            n: acc.checked,
            a: judge(0),
            b: judge(1),
        }),
    }
}

fn dist_rmb(h: &Histogram) -> Dist {
    Dist {
        n: h.n,
        mean: h.mean().map(|m| r(m / 1_000_000.0)),
        p50: h.percentile(0.5).map(|v| r(micro_to_rmb(v))),
        p95: h.percentile(0.95).map(|v| r(micro_to_rmb(v))),
    }
}

fn outcomes(acc: &RunAcc, runs: u64) -> OutcomeSection {
    let settled: u64 = ["pass", "fail"]
        .iter()
        .map(|o| acc.roll2_outcomes.get(*o).copied().unwrap_or(0))
        .sum();
    OutcomeSection {
        runs,
        outcome: acc.outcomes.clone(),
        action: acc.actions.clone(),
        rolls_judged: acc.rolls_judged,
        rolls_blocked: acc.rolls_blocked,
        degraded_rolls: acc.degraded,
        degraded_rate: rate(acc.degraded, acc.rolls_judged),
        roll2_runs: acc.roll2_runs,
        roll2_rate: rate(acc.roll2_runs, runs),
        roll2_outcome: acc.roll2_outcomes.clone(),
        roll2_settled: settled,
        roll2_settled_rate: rate(settled, acc.roll2_runs),
        infra_causes: acc.infra.clone(),
        cost_per_decided_run_rmb: dist_rmb(&acc.cost),
    }
}

fn slot_stats(k: &(String, String, String), v: &SlotAcc) -> SlotStats {
    SlotStats {
        slot: k.0.clone(),
        model: k.1.clone(),
        prompt: k.2.clone(),
        rolls: v.rolls,
        attempts: v.attempts,
        retries: v.retries,
        failed_slots: v.failed,
        failure_classes: v.classes.clone(),
        latency_ms: Latency {
            n: v.latency.n,
            p50: v.latency.percentile(0.5),
            p95: v.latency.percentile(0.95),
            p99: v.latency.percentile(0.99),
        },
        cost_per_roll_rmb: dist_rmb(&v.cost_per_roll),
    }
}

fn day_stats(day: &str, v: &DayAcc) -> DayStats {
    DayStats {
        day: day.to_string(),
        runs: v.runs,
        n: v.obligations,
        kappa: v.matrix.kappa().map(r),
        disputed_rate: rate(v.disputed, v.obligations),
        cost_rmb: r(micro_to_rmb(v.cost_micro)),
        mean_cost_rmb: (v.runs > 0).then(|| r(micro_to_rmb(v.cost_micro) / v.runs as f64)),
    }
}

fn replay_section(
    originals: &BTreeMap<String, (String, Option<String>)>,
    replays: &[ReplayRec],
) -> ReplaySection {
    let mut s = ReplaySection::default();
    let mut live_cost = 0u64;
    for rep in replays {
        s.replays += 1;
        let Some((parent_outcome, parent_raw)) = originals.get(&rep.parent) else {
            s.parent_not_used += 1;
            continue;
        };
        let flipped = *parent_outcome != rep.outcome;
        let mode = if rep.first_raw_a.is_some() && rep.first_raw_a == *parent_raw {
            "stored"
        } else {
            "live"
        };
        s.compared += 1;
        s.flipped += u64::from(flipped);
        if mode == "live" {
            live_cost += rep.judge_cost_micro;
        }
        for entry in [
            s.by_mode.entry(mode.to_string()).or_default(),
            s.by_model_pair.entry(rep.models.clone()).or_default(),
        ] {
            entry.compared += 1;
            entry.flipped += u64::from(flipped);
        }
        if flipped {
            *s.flips
                .entry(format!("{parent_outcome} -> {}", rep.outcome))
                .or_insert(0) += 1;
        }
    }
    s.live_cost_rmb = r(micro_to_rmb(live_cost));
    s
}

/// `seal.stats/1`: the report (schema `src/contracts/schemas/stats.schema.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsReport {
    pub schema_version: String,
    pub query: Query,
    pub categories: Vec<String>,
    pub seed: String,
    pub bootstrap_resamples: u64,
    pub runs: RunCounts,
    pub agreement: AgreementSection,
    pub outcomes: OutcomeSection,
    pub slots: Vec<SlotStats>,
    pub replay: ReplaySection,
    pub daily: Vec<DayStats>,
    /// People against the judges, over the reviewed original runs.
    pub human: HumanSection,
    /// How far the judges can be trusted, calibrated on the same reviews.
    pub reliability: ReliabilitySection,
    /// Each slot's judging set-ups and the served models that answered them.
    pub served_models: Vec<DriftGroup>,
    /// Decided `inconclusive` runs without a trusted review, oldest first.
    pub review_queue: Vec<QueuedRun>,
    /// (name, sha256) of the seal and trusted reviews of every reviewed original run used, by
    /// name: the subjects of a signed reliability report (not in `seal.stats/1`).
    #[serde(skip)]
    pub reviewed_subjects: Vec<(String, String)>,
    /// The judge policies (leaf index and sha256) the original runs used were judged under, in
    /// order: what a signed reliability report names besides its runs (not in `seal.stats/1`).
    #[serde(skip)]
    pub policies: Vec<crate::doc::PolicyRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunCounts {
    pub listed: u64,
    pub used: u64,
    pub replays: u64,
    pub filtered_out: u64,
    pub not_verified: u64,
    pub not_verified_runs: Vec<NotVerifiedRun>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotVerifiedRun {
    pub run_id: String,
    pub problems: u64,
    pub first_problem: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgreementSection {
    pub all: Agreement,
    pub by_obligation: BTreeMap<String, Agreement>,
    pub by_genre: BTreeMap<String, Agreement>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Agreement {
    pub n: u64,
    /// `matrix[a][b]`: pairs where A said `categories[a]` and B said `categories[b]`.
    pub matrix: [[u64; 4]; 4],
    pub agreement: Option<f64>,
    pub kappa: Option<f64>,
    pub kappa_ci95: Option<[f64; 2]>,
    pub disputed: u64,
    pub contradicted: u64,
    pub disputed_rate: Option<f64>,
    pub contradicted_rate: Option<f64>,
    pub check: Option<CheckAgreement>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckAgreement {
    pub n: u64,
    pub a: JudgeVsCheck,
    pub b: JudgeVsCheck,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JudgeVsCheck {
    pub agree: u64,
    pub opposite: u64,
    pub no_claim: u64,
    pub agreement: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeSection {
    pub runs: u64,
    pub outcome: BTreeMap<String, u64>,
    pub action: BTreeMap<String, u64>,
    pub rolls_judged: u64,
    pub rolls_blocked: u64,
    pub degraded_rolls: u64,
    pub degraded_rate: Option<f64>,
    pub roll2_runs: u64,
    pub roll2_rate: Option<f64>,
    pub roll2_outcome: BTreeMap<String, u64>,
    pub roll2_settled: u64,
    pub roll2_settled_rate: Option<f64>,
    pub infra_causes: BTreeMap<String, u64>,
    pub cost_per_decided_run_rmb: Dist,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dist {
    pub n: u64,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    pub n: u64,
    pub p50: Option<u64>,
    pub p95: Option<u64>,
    pub p99: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlotStats {
    pub slot: String,
    pub model: String,
    pub prompt: String,
    pub rolls: u64,
    pub attempts: u64,
    pub retries: u64,
    pub failed_slots: u64,
    pub failure_classes: BTreeMap<String, u64>,
    pub latency_ms: Latency,
    pub cost_per_roll_rmb: Dist,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlipCount {
    pub compared: u64,
    pub flipped: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaySection {
    pub replays: u64,
    pub compared: u64,
    pub parent_not_used: u64,
    pub flipped: u64,
    pub flips: BTreeMap<String, u64>,
    pub by_mode: BTreeMap<String, FlipCount>,
    pub by_model_pair: BTreeMap<String, FlipCount>,
    /// What the live replays compared here paid their judges, in RMB (stored replays pay
    /// nothing: their attempts are copies).
    pub live_cost_rmb: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DayStats {
    pub day: String,
    pub runs: u64,
    pub n: u64,
    pub kappa: Option<f64>,
    pub disputed_rate: Option<f64>,
    pub cost_rmb: f64,
    pub mean_cost_rmb: Option<f64>,
}
