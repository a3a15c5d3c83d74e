//! How far the judges can be trusted, calibrated on people: per obligation (and over all of
//! them), from every reviewed obligation of a dispatched roll of an original run (the same
//! pairs as [`super::human`]). Pure.
//!
//! - **Accuracy** of each judge: the share of reviewed obligations where the judge's
//!   normalized status equals the person's decision.
//! - **Error correlation** between A and B: φ (the Pearson correlation of two 0/1 variables)
//!   of their error indicators, `eA = [A ≠ person]`, `eB = [B ≠ person]`, over the 2 × 2
//!   table `t[eA][eB]`:
//!   `φ = (t11·t00 − t10·t01) / √((t10+t11)(t00+t01)(t01+t11)(t00+t10))`.
//!   Undefined (None) when a judge made no error, or nothing but errors, on these reviews.
//! - **Effective number of independent votes** the two judges are worth, from Kish's design
//!   effect for `k` equally correlated votes, `k / (1 + (k − 1)·ρ)` with `k = 2` and `ρ = φ`:
//!   `2 / (1 + φ)`. 2 when the judges err independently, 1 when one copies the other's errors,
//!   above 2 when their errors exclude each other.
//! - **Consensus coverage and agreement**: the share of reviewed obligations the consensus
//!   decided (anything but `disputed`/`contradicted`), and among those the share where it
//!   equals the person's decision: what escalation actually guarantees.
//!
//! Every figure carries its `n` and a 95% seeded bootstrap interval ([`kappa::bootstrap_interval`]
//! over the joint table of the four indicators). A key with fewer than [`MIN_REVIEWED`]
//! reviewed obligations reports its counts and `tooFewReviews` instead of figures.

use std::collections::BTreeMap;

use serde::Serialize;

use super::facts::ObligationFacts;
use super::kappa::{self, BOOTSTRAP_RESAMPLES};
use crate::doc::{JudgeStatus, ObligationStatus};
use crate::review::Status;

/// Fewer reviewed obligations than this give counts, not figures: a rate over a handful of
/// reviews is noise with a decimal point.
pub const MIN_REVIEWED: u64 = 10;

/// The joint table's cells: `eA + 2·eB + 4·c`, where `c` is 0 when the consensus left the
/// obligation unresolved, 1 when it decided as the person did, 2 when it decided otherwise.
const CELLS: usize = 12;

fn same(judge: JudgeStatus, human: Status) -> bool {
    matches!(
        (judge, human),
        (JudgeStatus::Satisfied, Status::Satisfied)
            | (JudgeStatus::Failed, Status::Failed)
            | (JudgeStatus::Missing, Status::Missing)
    )
}

fn consensus_state(c: ObligationStatus, human: Status) -> usize {
    let decided = match c {
        ObligationStatus::Satisfied => Status::Satisfied,
        ObligationStatus::Failed => Status::Failed,
        ObligationStatus::Missing => Status::Missing,
        ObligationStatus::Disputed | ObligationStatus::Contradicted => return 0,
    };
    if decided == human {
        1
    } else {
        2
    }
}

/// The 2 × 2 error table `t[eA][eB]` of a joint table.
fn errors(cells: &[u64]) -> [[u64; 2]; 2] {
    let mut t = [[0u64; 2]; 2];
    for (k, n) in cells.iter().enumerate() {
        t[k & 1][(k >> 1) & 1] += n;
    }
    t
}

/// φ of a 2 × 2 table (None when a margin is empty).
pub fn phi(t: &[[u64; 2]; 2]) -> Option<f64> {
    let [[t00, t01], [t10, t11]] = t.map(|r| r.map(|v| v as f64));
    let margins = (t10 + t11) * (t00 + t01) * (t01 + t11) * (t00 + t10);
    (margins > 0.0).then(|| (t11 * t00 - t10 * t01) / margins.sqrt())
}

/// The effective number of independent votes of two judges whose errors correlate by `phi`.
pub fn effective_votes(phi: f64) -> Option<f64> {
    (phi > -1.0).then(|| 2.0 / (1.0 + phi))
}

fn accuracy(cells: &[u64], slot_bit: usize) -> Option<f64> {
    let n: u64 = cells.iter().sum();
    let right: u64 = cells
        .iter()
        .enumerate()
        .filter(|(k, _)| k & slot_bit == 0)
        .map(|(_, v)| v)
        .sum();
    (n > 0).then(|| right as f64 / n as f64)
}

fn coverage(cells: &[u64]) -> Option<f64> {
    let n: u64 = cells.iter().sum();
    let decided: u64 = cells[4..].iter().sum();
    (n > 0).then(|| decided as f64 / n as f64)
}

fn decided_agreement(cells: &[u64]) -> Option<f64> {
    let agree: u64 = cells[4..8].iter().sum();
    let decided: u64 = cells[4..].iter().sum();
    (decided > 0).then(|| agree as f64 / decided as f64)
}

/// The reviewed obligations of one key (all obligations, or one).
#[derive(Debug, Clone, Default)]
pub struct ReliabilityAcc {
    cells: [u64; CELLS],
}

impl ReliabilityAcc {
    pub fn add(&mut self, human: Status, o: &ObligationFacts) {
        let ea = usize::from(!same(o.a_status, human));
        let eb = usize::from(!same(o.b_status, human));
        self.cells[ea + 2 * eb + 4 * consensus_state(o.consensus, human)] += 1;
    }

    /// The figures; `key` names the bootstrap streams (`reliability:all`, …).
    pub fn finish(&self, seed: u64, key: &str, decimals: i32) -> Reliability {
        let r = |x: f64| kappa::round(x, decimals);
        let n: u64 = self.cells.iter().sum();
        let t = errors(&self.cells);
        let decided: u64 = self.cells[4..].iter().sum();
        let counts = Counts {
            n,
            errors: t,
            decided,
            decided_agree: self.cells[4..8].iter().sum(),
        };
        if n < MIN_REVIEWED {
            return Reliability {
                counts,
                too_few_reviews: true,
                figures: None,
            };
        }
        let figure = |name: &str, stat: &dyn Fn(&[u64]) -> Option<f64>| {
            let ci = kappa::bootstrap_interval(
                &self.cells,
                kappa::key_seed(seed, &format!("{key}:{name}")),
                BOOTSTRAP_RESAMPLES,
                stat,
            );
            Figure {
                value: stat(&self.cells).map(r),
                ci95: ci.map(|(lo, hi)| [r(lo), r(hi)]),
            }
        };
        let phi_of = |c: &[u64]| phi(&errors(c));
        Reliability {
            counts,
            too_few_reviews: false,
            figures: Some(Figures {
                accuracy_a: figure("accuracy:a", &|c| accuracy(c, 1)),
                accuracy_b: figure("accuracy:b", &|c| accuracy(c, 2)),
                error_phi: figure("phi", &phi_of),
                effective_votes: figure("votes", &|c| phi_of(c).and_then(effective_votes)),
                consensus_coverage: figure("coverage", &coverage),
                consensus_agreement: figure("decided", &decided_agreement),
            }),
        }
    }
}

/// The counts behind a key's figures (always reported).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Reviewed obligations.
    pub n: u64,
    /// `errors[eA][eB]`: reviewed obligations by whether A (row) and B (column) erred.
    pub errors: [[u64; 2]; 2],
    /// Reviewed obligations the consensus decided, and of those, decided as the person did.
    pub decided: u64,
    pub decided_agree: u64,
}

/// A figure and its 95% bootstrap interval (None when undefined).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figure {
    pub value: Option<f64>,
    pub ci95: Option<[f64; 2]>,
}

impl Figure {
    /// `0.850 [0.700, 0.950]`, `0.850` without an interval, `-` when undefined: as the
    /// terminal tables print it.
    pub fn text(&self) -> String {
        match (self.value, self.ci95) {
            (Some(v), Some([lo, hi])) => format!("{v:.3} [{lo:.3}, {hi:.3}]"),
            (Some(v), None) => format!("{v:.3}"),
            _ => "-".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub accuracy_a: Figure,
    pub accuracy_b: Figure,
    /// φ of A's and B's error indicators.
    pub error_phi: Figure,
    /// `2 / (1 + φ)`.
    pub effective_votes: Figure,
    /// Share of reviewed obligations the consensus decided.
    pub consensus_coverage: Figure,
    /// Share of the decided ones decided as the person did.
    pub consensus_agreement: Figure,
}

/// One key's reliability.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reliability {
    pub counts: Counts,
    /// Fewer than [`MIN_REVIEWED`] reviewed obligations: no figures.
    pub too_few_reviews: bool,
    pub figures: Option<Figures>,
}

/// The reliability section of `seal stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReliabilitySection {
    pub min_reviewed: u64,
    pub all: Reliability,
    pub by_obligation: BTreeMap<String, Reliability>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use JudgeStatus as J;
    use ObligationStatus as O;

    fn ob(a: J, b: J, c: O) -> ObligationFacts {
        ObligationFacts {
            id: "o".into(),
            a: 0,
            b: 0,
            a_status: a,
            b_status: b,
            consensus: c,
            check: None,
        }
    }

    fn consensus_of(a: J, b: J) -> O {
        match (a, b) {
            (J::Satisfied, J::Satisfied) => O::Satisfied,
            (J::Failed, J::Failed) => O::Failed,
            (J::Missing, J::Missing) => O::Missing,
            _ => O::Disputed,
        }
    }

    /// Judges that copy each other's errors are worth one vote; judges that err independently
    /// are worth two. The person says `satisfied` throughout; a judge errs by saying `failed`.
    #[test]
    fn copied_errors_are_one_vote_and_independent_errors_two() {
        let pick = |e: bool| if e { J::Failed } else { J::Satisfied };
        // Copying: A errs on 5 of 20, B errs exactly where A does.
        let mut copy = ReliabilityAcc::default();
        for i in 0..20 {
            let e = i % 4 == 0;
            copy.add(
                Status::Satisfied,
                &ob(pick(e), pick(e), consensus_of(pick(e), pick(e))),
            );
        }
        let f = copy.finish(1, "t", 6);
        let figs = f.figures.unwrap();
        assert_eq!(f.counts.errors, [[15, 0], [0, 5]]);
        assert_eq!(figs.error_phi.value, Some(1.0));
        assert_eq!(figs.effective_votes.value, Some(1.0));
        // The consensus decided all 20 (the judges always agree), wrongly on 5.
        assert_eq!(figs.consensus_coverage.value, Some(1.0));
        assert_eq!(figs.consensus_agreement.value, Some(0.75));

        // Independent: each judge errs on half, every combination equally often.
        let mut ind = ReliabilityAcc::default();
        for i in 0..40 {
            let (ea, eb) = (i % 2 == 0, (i / 2) % 2 == 0);
            ind.add(
                Status::Satisfied,
                &ob(pick(ea), pick(eb), consensus_of(pick(ea), pick(eb))),
            );
        }
        let f = ind.finish(1, "t", 6);
        let figs = f.figures.unwrap();
        assert_eq!(f.counts.errors, [[10, 10], [10, 10]]);
        assert_eq!(figs.error_phi.value, Some(0.0));
        assert_eq!(figs.effective_votes.value, Some(2.0));
        // Decided when both agree (20 of 40), right when both are right (10 of those).
        assert_eq!(figs.consensus_coverage.value, Some(0.5));
        assert_eq!(figs.consensus_agreement.value, Some(0.5));
        let [lo, hi] = figs.effective_votes.ci95.unwrap();
        assert!(lo <= 2.0 && 2.0 <= hi, "{lo} {hi}");
    }

    /// φ by the textbook formula on an uneven table, computed by hand:
    /// t = [[6, 2], [1, 3]]: (3·6 − 1·2) / √(4·8·5·7) = 16 / √1120 = 0.478091…
    #[test]
    fn phi_matches_a_hand_computation() {
        let p = phi(&[[6, 2], [1, 3]]).unwrap();
        assert!((p - 16.0 / 1120f64.sqrt()).abs() < 1e-12);
        assert!((effective_votes(p).unwrap() - 2.0 / (1.0 + 16.0 / 1120f64.sqrt())).abs() < 1e-12);
        // A judge that never errs: undefined.
        assert_eq!(phi(&[[6, 2], [0, 0]]), None);
        assert_eq!(effective_votes(-1.0), None);
    }

    #[test]
    fn too_few_reviews_give_counts_not_figures() {
        let mut acc = ReliabilityAcc::default();
        for _ in 0..MIN_REVIEWED - 1 {
            acc.add(Status::Failed, &ob(J::Failed, J::Satisfied, O::Disputed));
        }
        let f = acc.finish(3, "t", 6);
        assert!(f.too_few_reviews);
        assert_eq!(f.figures, None);
        assert_eq!(f.counts.n, MIN_REVIEWED - 1);
        assert_eq!(f.counts.errors, [[0, MIN_REVIEWED - 1], [0, 0]]);
        assert_eq!(f.counts.decided, 0);
    }

    #[test]
    fn the_same_reviews_in_any_order_give_the_same_bytes() {
        let rows = [
            (Status::Satisfied, J::Satisfied, J::Failed),
            (Status::Failed, J::Failed, J::Failed),
            (Status::Missing, J::Satisfied, J::Missing),
            (Status::Satisfied, J::Satisfied, J::Satisfied),
            (Status::Failed, J::Satisfied, J::Satisfied),
        ];
        let mut fwd = ReliabilityAcc::default();
        let mut rev = ReliabilityAcc::default();
        for k in 0..3 {
            for (h, a, b) in rows.iter() {
                fwd.add(*h, &ob(*a, *b, consensus_of(*a, *b)));
            }
            for (h, a, b) in rows.iter().rev() {
                rev.add(*h, &ob(*a, *b, consensus_of(*a, *b)));
            }
            let _ = k;
        }
        let a = serde_json::to_vec(&fwd.finish(9, "all", 6)).unwrap();
        let b = serde_json::to_vec(&rev.finish(9, "all", 6)).unwrap();
        assert_eq!(a, b);
    }
}
