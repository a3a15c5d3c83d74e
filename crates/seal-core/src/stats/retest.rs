//! Test–retest of the judges (`seal replay --judges live --retest`): each judge asked again,
//! with the same blinded package and the same configuration, about runs it judged before. Pure.
//!
//! For every obligation of every roll present in both the source and its live replay, each
//! judge's normalized status then and now. Per slot (over all obligations and per obligation):
//! **self-agreement**, the share of obligations where the judge repeats its own status, and
//! Cohen's κ of then × now; beside it, over the source's answers, **A-vs-B agreement** and κ.
//! A judge that disagrees with itself as often as with the other judge is noise, not a second
//! opinion. Every figure has its `n` and a seeded 95% bootstrap interval
//! ([`kappa::bootstrap_interval`]).

use std::collections::BTreeMap;

use serde::Serialize;

use super::kappa::{self, Confusion, BOOTSTRAP_RESAMPLES};
use super::reliability::Figure;
use crate::doc::JudgeStatus;

/// The categories of the retest matrices, in matrix order.
pub const RETEST_CATEGORIES: [&str; 3] = ["satisfied", "failed", "missing"];

fn cat(s: JudgeStatus) -> usize {
    match s {
        JudgeStatus::Satisfied => 0,
        JudgeStatus::Failed => 1,
        JudgeStatus::Missing => 2,
    }
}

/// One obligation of a roll: judges A and B (index 0 and 1) in the source and in the replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetestPair {
    pub obligation: String,
    pub before: [JudgeStatus; 2],
    pub after: [JudgeStatus; 2],
}

#[derive(Debug, Clone, Default)]
struct Matrices {
    /// Per slot: then × now.
    own: [Confusion; 2],
    /// A × B, in the source.
    between: Confusion,
}

impl Matrices {
    fn add(&mut self, p: &RetestPair) {
        for i in 0..2 {
            self.own[i].add(cat(p.before[i]), cat(p.after[i]));
        }
        self.between.add(cat(p.before[0]), cat(p.before[1]));
    }
}

/// Folds retest pairs into the report.
#[derive(Debug, Clone, Default)]
pub struct RetestAcc {
    all: Matrices,
    by_obligation: BTreeMap<String, Matrices>,
}

impl RetestAcc {
    pub fn add(&mut self, p: &RetestPair) {
        self.all.add(p);
        self.by_obligation
            .entry(p.obligation.clone())
            .or_default()
            .add(p);
    }

    /// The report; `seed` seeds every interval (mixed with each figure's key).
    pub fn finish(&self, seed: u64, decimals: i32) -> RetestReport {
        let key_all = "retest:all".to_string();
        RetestReport {
            categories: RETEST_CATEGORIES.iter().map(|c| c.to_string()).collect(),
            all: section(&self.all, seed, &key_all, decimals),
            by_obligation: self
                .by_obligation
                .iter()
                .map(|(k, m)| {
                    let key = format!("retest:obligation:{k}");
                    (k.clone(), section(m, seed, &key, decimals))
                })
                .collect(),
        }
    }
}

fn section(m: &Matrices, seed: u64, key: &str, decimals: i32) -> RetestSection {
    RetestSection {
        judge_a: figures(&m.own[0], seed, &format!("{key}:a"), decimals),
        judge_b: figures(&m.own[1], seed, &format!("{key}:b"), decimals),
        a_vs_b: figures(&m.between, seed, &format!("{key}:ab"), decimals),
    }
}

fn figures(m: &Confusion, seed: u64, key: &str, decimals: i32) -> Agreement {
    let r = |x: f64| kappa::round(x, decimals);
    let cells: Vec<u64> = m.cells.iter().flatten().copied().collect();
    let of = |c: &[u64]| {
        let mut x = Confusion::default();
        for (k, n) in c.iter().enumerate() {
            x.cells[k / 4][k % 4] = *n;
        }
        x
    };
    let ci = |name: &str, stat: &dyn Fn(&[u64]) -> Option<f64>| {
        kappa::bootstrap_interval(
            &cells,
            kappa::key_seed(seed, &format!("{key}:{name}")),
            BOOTSTRAP_RESAMPLES,
            stat,
        )
        .map(|(lo, hi)| [r(lo), r(hi)])
    };
    Agreement {
        n: m.n(),
        matrix: [0, 1, 2].map(|i| [0, 1, 2].map(|j| m.cells[i][j])),
        agreement: Figure {
            value: m.agreement().map(r),
            ci95: ci("agreement", &|c| of(c).agreement()),
        },
        kappa: Figure {
            value: m.kappa().map(r),
            ci95: ci("kappa", &|c| of(c).kappa()),
        },
    }
}

/// Agreement of two sets of statuses over the same obligations.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Agreement {
    pub n: u64,
    /// `matrix[first][second]` over [`RETEST_CATEGORIES`].
    pub matrix: [[u64; 3]; 3],
    pub agreement: Figure,
    pub kappa: Figure,
}

/// One key's figures: each judge against itself, and A against B in the source.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetestSection {
    pub judge_a: Agreement,
    pub judge_b: Agreement,
    pub a_vs_b: Agreement,
}

/// The retest report of a batch of live replays.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetestReport {
    pub categories: Vec<String>,
    pub all: RetestSection,
    pub by_obligation: BTreeMap<String, RetestSection>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use JudgeStatus as J;

    fn pair(id: &str, before: [J; 2], after: [J; 2]) -> RetestPair {
        RetestPair {
            obligation: id.into(),
            before,
            after,
        }
    }

    /// A judge that repeats itself has self-agreement 1; one that flips 2 of 8 has 0.75, by
    /// hand; A-vs-B is computed over the source's answers only.
    #[test]
    fn self_agreement_and_between_judges_by_hand() {
        let mut acc = RetestAcc::default();
        for i in 0..8 {
            let a = if i % 2 == 0 { J::Satisfied } else { J::Failed };
            let b_then = if i < 4 { J::Satisfied } else { J::Failed };
            // B flips on two of eight.
            let b_now = if i == 1 || i == 6 {
                if b_then == J::Satisfied {
                    J::Failed
                } else {
                    J::Satisfied
                }
            } else {
                b_then
            };
            acc.add(&pair(
                if i < 4 { "o1" } else { "o2" },
                [a, b_then],
                [a, b_now],
            ));
        }
        let r = acc.finish(11, 6);
        assert_eq!(r.all.judge_a.n, 8);
        assert_eq!(r.all.judge_a.agreement.value, Some(1.0));
        assert_eq!(r.all.judge_a.kappa.value, Some(1.0));
        assert_eq!(r.all.judge_b.agreement.value, Some(0.75));
        // B then × now: [[3, 1], [1, 3]]: p_o 0.75, p_e 0.5, κ 0.5.
        assert_eq!(r.all.judge_b.matrix, [[3, 1, 0], [1, 3, 0], [0, 0, 0]]);
        assert_eq!(r.all.judge_b.kappa.value, Some(0.5));
        // A × B then: A alternates, B is 4 satisfied then 4 failed: agreement 0.5, κ 0.
        assert_eq!(r.all.a_vs_b.agreement.value, Some(0.5));
        assert_eq!(r.all.a_vs_b.kappa.value, Some(0.0));
        assert_eq!(r.by_obligation["o1"].judge_b.n, 4);
        assert_eq!(r.by_obligation["o1"].judge_b.agreement.value, Some(0.75));
        let [lo, hi] = r.all.judge_b.agreement.ci95.unwrap();
        assert!(lo <= 0.75 && 0.75 <= hi);
        assert_eq!(r, acc.finish(11, 6), "seeded: the same figures");
    }
}
