//! `seal.shadow-report/1`: the pairing of verified `v3_shadow` runs with the ledger's latest
//! Verdict of the same design, and the figures over the pairs. Pure: the same ledger summary and
//! the same set of runs give the same bytes, whatever order the runs come in.
//!
//! The pair unit is (designId, evidenceMode), the latest decided run; earlier runs are listed
//! (`runs.superseded`), never counted (docs/DECISIONS.md, "One shadow pair per design and
//! evidence mode").
//!
//! Accept-vs-not κ reuses `seal stats`' [`Confusion`] and [`kappa_interval`] with the
//! 2 × 2 matrix in its top-left corner. An unused category adds nothing to chance agreement and
//! the bootstrap draws only non-empty cells, so κ and its interval are those of the 2 × 2
//! matrix, computed by the very code `seal stats` uses.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use super::ledger::{LedgerSummary, LedgerVerdict};
use crate::doc::{EvidenceMode, Outcome};
use crate::stats::facts::Unverified;
use crate::stats::kappa::{self, Confusion, BOOTSTRAP_RESAMPLES};

pub use crate::doc::shadow_report::*;

/// A first problem is cut to this many characters.
const MAX_PROBLEM_CHARS: usize = 300;

/// One decided `v3_shadow` run that verified, as the loader read it from its sealed evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct ShadowRun {
    pub run_id: String,
    /// `_designId` when it is 64 lowercase hex.
    pub design_id: Option<String>,
    /// `_taskId` as a string.
    pub task_id: Option<String>,
    pub genre: String,
    pub evidence_mode: EvidenceMode,
    pub outcome: Outcome,
    pub action: String,
    pub reasons: Vec<String>,
    /// `finalPostguard.decidedAt` as written, and as nanoseconds since the epoch.
    pub decided_at: String,
    pub decided_nanos: i128,
    /// The header's `artifactHash`: for a legacy-adapted run, the sha256 of the Verdict it was
    /// built from.
    pub artifact_sha256: String,
}

/// What the loader found in the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSet {
    /// Decided runs listed (and folders that are not run ids).
    pub listed: u64,
    pub shadow: Vec<ShadowRun>,
    pub not_verified: Vec<Unverified>,
}

/// The legacy decision's matrix row.
fn legacy_row(decision: &str) -> Option<usize> {
    LEGACY_DECISIONS.iter().position(|d| *d == decision)
}

fn v3_col(o: Outcome) -> usize {
    match o {
        Outcome::Pass => 0,
        Outcome::Fail => 1,
        Outcome::Inconclusive => 2,
        Outcome::InfraError => 3,
    }
}

fn mode_name(m: EvidenceMode) -> &'static str {
    match m {
        EvidenceMode::Native => "native",
        EvidenceMode::LegacyAdapted => "legacy-adapted",
    }
}

fn r(x: f64) -> f64 {
    kappa::round(x, DECIMALS)
}

/// The report seed: the first 8 bytes of sha256 over the paired run ids, sorted, one per line.
pub fn ids_seed<'a>(ids: impl IntoIterator<Item = &'a str>) -> [u8; 8] {
    let mut sorted: Vec<&str> = ids.into_iter().collect();
    sorted.sort_unstable();
    let mut h = Sha256::new();
    for id in sorted {
        h.update(id.as_bytes());
        h.update(b"\n");
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.finalize()[..8]);
    b
}

// ---------------------------------------------------------------------------------------------
// The report document

/// A winning run and its verdict.
struct Pair<'a> {
    run: &'a ShadowRun,
    verdict: &'a LedgerVerdict,
    legacy: usize,
}

/// The pairing, before the figures.
#[derive(Default)]
struct Paired<'a> {
    pairs: Vec<Pair<'a>>,
    without_ids: Vec<String>,
    superseded: Vec<SupersededRun>,
    unmatched: Unmatched,
}

/// The latest run of each (designId, evidenceMode); ties go to the larger run id.
fn winners<'a>(runs: &'a [ShadowRun], out: &mut Paired<'a>) -> Vec<&'a ShadowRun> {
    let mut groups: BTreeMap<(&str, &str), Vec<&ShadowRun>> = BTreeMap::new();
    for run in runs {
        match (&run.design_id, &run.task_id) {
            (Some(d), Some(_)) => groups
                .entry((d.as_str(), mode_name(run.evidence_mode)))
                .or_default()
                .push(run),
            _ => out.without_ids.push(run.run_id.clone()),
        }
    }
    let mut won = Vec::with_capacity(groups.len());
    for group in groups.into_values() {
        let Some(best) = group
            .iter()
            .copied()
            .max_by(|a, b| (a.decided_nanos, &a.run_id).cmp(&(b.decided_nanos, &b.run_id)))
        else {
            continue;
        };
        for run in group.iter().filter(|r| r.run_id != best.run_id) {
            out.superseded.push(SupersededRun {
                run_id: run.run_id.clone(),
                by: best.run_id.clone(),
            });
        }
        won.push(best);
    }
    won
}

fn pair<'a>(ledger: &'a LedgerSummary, runs: &'a [ShadowRun]) -> Paired<'a> {
    let mut out = Paired::default();
    let won = winners(runs, &mut out);
    let mut designs_with_runs = BTreeSet::new();
    for run in won {
        let (Some(design), Some(task)) = (&run.design_id, &run.task_id) else {
            continue;
        };
        designs_with_runs.insert(design.as_str());
        let Some(verdict) = ledger.verdicts.get(design) else {
            out.unmatched.runs_without_verdict.push(RunWithoutVerdict {
                run_id: run.run_id.clone(),
                design_id: design.clone(),
                task_id: task.clone(),
            });
            continue;
        };
        match legacy_row(&verdict.decision) {
            Some(legacy) if verdict.task_id == *task => out.pairs.push(Pair {
                run,
                verdict,
                legacy,
            }),
            _ => out.unmatched.task_mismatch.push(TaskMismatch {
                run_id: run.run_id.clone(),
                design_id: design.clone(),
                run_task_id: task.clone(),
                verdict_task_id: verdict.task_id.clone(),
            }),
        }
    }
    for (design, v) in &ledger.verdicts {
        if !designs_with_runs.contains(design.as_str()) {
            out.unmatched.verdicts_without_run.push(VerdictWithoutRun {
                design_id: design.clone(),
                task_id: v.task_id.clone(),
                line: v.line,
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Figures

fn agreement(m: [[u64; 2]; 2], seed: u64, key: &str) -> Agreement {
    let mut c = Confusion::default();
    for (i, row) in m.iter().enumerate() {
        for (j, n) in row.iter().enumerate() {
            c.cells[i][j] = *n;
        }
    }
    let ci = kappa::kappa_interval(&c, kappa::key_seed(seed, key), BOOTSTRAP_RESAMPLES);
    Agreement {
        n: c.n(),
        matrix: m,
        agreement: c.agreement().map(r),
        kappa: c.kappa().map(r),
        kappa_ci95: ci.map(|(lo, hi)| [r(lo), r(hi)]),
    }
}

/// The figures of one confusion matrix; `key` names the section for its bootstrap seed.
fn section(confusion: [[u64; 4]; 3], seed: u64, key: &str) -> Section {
    let mut all = [[0u64; 2]; 2];
    let mut decided = [[0u64; 2]; 2];
    for (legacy, row) in confusion.iter().enumerate() {
        let a = usize::from(legacy != 0);
        for (v3, n) in row.iter().enumerate() {
            let b = usize::from(v3 != 0);
            all[a][b] += n;
            if v3 < 2 {
                decided[a][b] += n;
            }
        }
    }
    Section {
        pairs: confusion.iter().flatten().sum(),
        confusion,
        accept_vs_not: agreement(all, seed, key),
        decided: agreement(decided, seed, &format!("{key}:decided")),
    }
}

fn disagreement(p: &Pair<'_>) -> Option<Disagreement> {
    let legacy_accept = p.legacy == 0;
    let v3_pass = p.run.outcome == Outcome::Pass;
    if legacy_accept == v3_pass {
        return None;
    }
    let run = p.run;
    let v = p.verdict;
    Some(Disagreement {
        direction: if legacy_accept {
            "legacy_accept_v3_not"
        } else {
            "v3_pass_legacy_not"
        }
        .into(),
        design_id: v.design_id.clone(),
        task_id: v.task_id.clone(),
        run_id: run.run_id.clone(),
        genre: run.genre.clone(),
        evidence_mode: mode_name(run.evidence_mode).into(),
        decided_at: run.decided_at.clone(),
        verdict_changed: verdict_changed(p),
        legacy: LegacySide {
            decision: v.decision.clone(),
            reasons: v.reasons.clone(),
            round: v.round,
            line: v.line,
            findings: v
                .findings
                .iter()
                .map(|(severity, issue)| FindingRow {
                    severity: severity.clone(),
                    issue: issue.clone(),
                })
                .collect(),
        },
        v3: V3Side {
            outcome: run.outcome.as_str().into(),
            action: run.action.clone(),
            reasons: run.reasons.clone(),
        },
        explain: ExplainLink {
            path: format!("/v1/runs/{}/explain", run.run_id),
            command: format!("seal explain {0} --html --out {0}.html", run.run_id),
        },
    })
}

/// A legacy-adapted run built from another Verdict row than the ledger's latest one.
fn verdict_changed(p: &Pair<'_>) -> bool {
    p.run.evidence_mode == EvidenceMode::LegacyAdapted
        && p.run.artifact_sha256 != p.verdict.verdict_sha256
}

/// Builds the report. `runs.shadow` may come in any order.
pub fn build(ledger: &LedgerSummary, ledger_sha256: &str, runs: &RunSet) -> ShadowReport {
    let mut shadow = runs.shadow.clone();
    shadow.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    let paired = pair(ledger, &shadow);
    let seed_bytes = ids_seed(paired.pairs.iter().map(|p| p.run.run_id.as_str()));
    let seed = u64::from_be_bytes(seed_bytes);

    let mut all = [[0u64; 4]; 3];
    let mut by_genre: BTreeMap<String, [[u64; 4]; 3]> = BTreeMap::new();
    let mut by_mode: BTreeMap<String, [[u64; 4]; 3]> = BTreeMap::new();
    for p in &paired.pairs {
        let c = v3_col(p.run.outcome);
        all[p.legacy][c] += 1;
        by_genre.entry(p.run.genre.clone()).or_default()[p.legacy][c] += 1;
        by_mode
            .entry(mode_name(p.run.evidence_mode).into())
            .or_default()[p.legacy][c] += 1;
    }
    let mut disagreements: Vec<Disagreement> =
        paired.pairs.iter().filter_map(disagreement).collect();
    disagreements.sort_by(|a, b| {
        (&a.genre, &a.design_id, &a.evidence_mode).cmp(&(&b.genre, &b.design_id, &b.evidence_mode))
    });
    ShadowReport {
        schema_version: SHADOW_REPORT_SCHEMA.into(),
        ledger_sha256: ledger_sha256.into(),
        seed: hex::encode(seed_bytes),
        bootstrap_resamples: BOOTSTRAP_RESAMPLES as u64,
        legacy_decisions: LEGACY_DECISIONS.iter().map(|s| s.to_string()).collect(),
        v3_outcomes: V3_OUTCOMES.iter().map(|s| s.to_string()).collect(),
        ledger: ledger_section(ledger),
        runs: runs_section(runs, &shadow, &paired),
        all: section(all, seed, "all"),
        by_genre: by_genre
            .into_iter()
            .map(|(g, m)| (g.clone(), section(m, seed, &format!("genre:{g}"))))
            .collect(),
        by_evidence_mode: by_mode
            .into_iter()
            .map(|(k, m)| (k.clone(), section(m, seed, &format!("mode:{k}"))))
            .collect(),
        disagreements,
        unmatched: paired.unmatched,
    }
}

fn ledger_section(l: &LedgerSummary) -> LedgerSection {
    LedgerSection {
        lines: l.lines,
        verdict_rows: l.verdict_rows,
        designs: l.verdicts.len() as u64,
        superseded: l.superseded,
        skipped_by_type: l.skipped_by_type.clone(),
        rejected: l
            .rejected
            .iter()
            .map(|x| RejectedLine {
                line: x.line,
                reason: x.reason.clone(),
            })
            .collect(),
        rejected_count: l.rejected_count,
    }
}

fn runs_section(runs: &RunSet, shadow: &[ShadowRun], paired: &Paired<'_>) -> RunsSection {
    let mut not_verified: Vec<NotVerifiedRun> = runs
        .not_verified
        .iter()
        .map(|u| NotVerifiedRun {
            run_id: u.run_id.clone(),
            problems: u.problems as u64,
            first_problem: crate::contracts::shorten(&u.first_problem, MAX_PROBLEM_CHARS),
        })
        .collect();
    not_verified.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    let mut superseded = paired.superseded.clone();
    superseded.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    RunsSection {
        listed: runs.listed,
        v3_shadow: shadow.len() as u64,
        paired: paired.pairs.len() as u64,
        verdict_changed: paired.pairs.iter().filter(|p| verdict_changed(p)).count() as u64,
        not_verified,
        without_ids: paired.without_ids.clone(),
        superseded,
    }
}
