//! People against the judges, and the runs waiting for a person: the human part of `seal
//! stats`. Pure.
//!
//! - Agreement: per obligation of every dispatched roll of a reviewed original run, the latest
//!   trusted review's decision (the same one `seal export labels` carries as `human`) against
//!   judge A's and judge B's normalized status and the consensus, as 4 × 4 confusion matrices
//!   over [`HUMAN_CATEGORIES`], with Cohen's κ and the seeded bootstrap interval every other κ
//!   of the report uses ([`super::kappa`]).
//! - The adjudication queue: decided `inconclusive` runs without a trusted review, oldest
//!   first ([`queued`], [`sort_queue`]), each with its explain link.
//!
//! The consensus's `disputed` and `contradicted` are one category, `unresolved`, a disagreement
//! when reviewed (docs/DECISIONS.md, "Stats merge `disputed` and `contradicted` into
//! `unresolved`").

use std::collections::BTreeMap;

use serde::Serialize;

use super::facts::ObligationFacts;
use super::kappa::{self, Confusion, BOOTSTRAP_RESAMPLES};
use crate::doc::{JudgeStatus, ObligationStatus};
use crate::review::Status;

/// The categories of the human matrices, in matrix order.
pub const HUMAN_CATEGORIES: [&str; 4] = ["satisfied", "failed", "missing", "unresolved"];

fn human_cat(s: Status) -> usize {
    match s {
        Status::Satisfied => 0,
        Status::Failed => 1,
        Status::Missing => 2,
    }
}

fn judge_cat(s: JudgeStatus) -> usize {
    match s {
        JudgeStatus::Satisfied => 0,
        JudgeStatus::Failed => 1,
        JudgeStatus::Missing => 2,
    }
}

fn consensus_cat(s: ObligationStatus) -> usize {
    match s {
        ObligationStatus::Satisfied => 0,
        ObligationStatus::Failed => 1,
        ObligationStatus::Missing => 2,
        ObligationStatus::Disputed | ObligationStatus::Contradicted => 3,
    }
}

/// The human matrices of one key (all obligations, or one).
#[derive(Debug, Clone, Default)]
pub struct HumanAcc {
    a: Confusion,
    b: Confusion,
    consensus: Confusion,
}

impl HumanAcc {
    /// One reviewed obligation: `cells[human][other]`.
    pub fn add(&mut self, human: Status, o: &ObligationFacts) {
        let h = human_cat(human);
        self.a.add(h, judge_cat(o.a_status));
        self.b.add(h, judge_cat(o.b_status));
        self.consensus.add(h, consensus_cat(o.consensus));
    }

    /// The figures; `key` names the bootstrap streams (`human:all`, `human:obligation:<id>`).
    pub fn finish(&self, seed: u64, key: &str, decimals: i32) -> HumanAgreement {
        let rater = |m: &Confusion, who: &str| {
            let r = |x: f64| kappa::round(x, decimals);
            let ci = kappa::kappa_interval(
                m,
                kappa::key_seed(seed, &format!("{key}:{who}")),
                BOOTSTRAP_RESAMPLES,
            );
            HumanVs {
                n: m.n(),
                matrix: m.cells,
                agreement: m.agreement().map(r),
                kappa: m.kappa().map(r),
                kappa_ci95: ci.map(|(lo, hi)| [r(lo), r(hi)]),
            }
        };
        HumanAgreement {
            n: self.a.n(),
            judge_a: rater(&self.a, "a"),
            judge_b: rater(&self.b, "b"),
            consensus: rater(&self.consensus, "consensus"),
        }
    }
}

/// A person against judge A, judge B and the consensus, over the same reviewed obligations.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HumanAgreement {
    pub n: u64,
    pub judge_a: HumanVs,
    pub judge_b: HumanVs,
    pub consensus: HumanVs,
}

/// One comparison: `matrix[human][other]` over [`HUMAN_CATEGORIES`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HumanVs {
    pub n: u64,
    pub matrix: [[u64; 4]; 4],
    pub agreement: Option<f64>,
    pub kappa: Option<f64>,
    pub kappa_ci95: Option<[f64; 2]>,
}

/// The human section of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HumanSection {
    pub categories: Vec<String>,
    /// Original runs used with at least one trusted review.
    pub reviewed_runs: u64,
    pub all: HumanAgreement,
    pub by_obligation: BTreeMap<String, HumanAgreement>,
}

/// A run waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedRun {
    pub run_id: String,
    /// `finalPostguard.decidedAt`, as sealed.
    pub decided_at: String,
    /// The daemon's explain route of the run (`Accept: text/html` for the page).
    pub explain: String,
    /// The order: `decidedAt` as Unix nanoseconds (not in the report).
    #[serde(skip)]
    pub sort_key: i128,
}

/// Whether a decided run belongs on the adjudication queue: an original run (a
/// `historical_replay` re-judges a run that is on the queue in its own right, or was settled)
/// that ended `inconclusive` and no trusted review decided anything about yet.
pub fn queued(outcome: &str, reviewed: bool, replay: bool) -> bool {
    outcome == "inconclusive" && !reviewed && !replay
}

/// The explain link of a run (`/v1/runs/<id>/explain`).
pub fn explain_link(run_id: &str) -> String {
    format!("/v1/runs/{run_id}/explain")
}

/// The review workbench's page of a run (`/review/runs/<id>` on `seal serve`): where the
/// pages' links to a run a person should look at go (not the token-guarded `/v1/` routes).
pub fn workbench_link(run_id: &str) -> String {
    format!("/review/runs/{run_id}")
}

/// A queue row; `decided_nanos`: the decision time as Unix nanoseconds (the order).
pub fn queue_row(run_id: &str, decided_at: &str, decided_nanos: i128) -> QueuedRun {
    QueuedRun {
        run_id: run_id.to_string(),
        decided_at: decided_at.to_string(),
        explain: explain_link(run_id),
        sort_key: decided_nanos,
    }
}

/// Oldest decision first; ties by run id.
pub fn sort_queue(q: &mut [QueuedRun]) {
    q.sort_by(|x, y| {
        x.sort_key
            .cmp(&y.sort_key)
            .then_with(|| x.run_id.cmp(&y.run_id))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ob(a: JudgeStatus, b: JudgeStatus, c: ObligationStatus) -> ObligationFacts {
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

    #[test]
    fn a_person_who_always_agrees_with_judge_a_has_kappa_one_with_a() {
        let mut acc = HumanAcc::default();
        use JudgeStatus as J;
        use ObligationStatus as O;
        for (h, a, b, c) in [
            (Status::Satisfied, J::Satisfied, J::Failed, O::Disputed),
            (Status::Failed, J::Failed, J::Failed, O::Failed),
            (Status::Satisfied, J::Satisfied, J::Satisfied, O::Satisfied),
            (Status::Failed, J::Failed, J::Satisfied, O::Contradicted),
        ] {
            acc.add(h, &ob(a, b, c));
        }
        let f = acc.finish(7, "human:all", 6);
        assert_eq!(f.n, 4);
        assert_eq!(f.judge_a.kappa, Some(1.0));
        assert_eq!(f.judge_a.agreement, Some(1.0));
        assert_eq!(f.judge_b.agreement, Some(0.5));
        assert_eq!(f.consensus.agreement, Some(0.5));
        // Unresolved consensus is its own column.
        assert_eq!(f.consensus.matrix[0][3], 1);
        assert_eq!(f.consensus.matrix[1][3], 1);
        // Seeded: the same counts give the same interval.
        assert_eq!(f, acc.finish(7, "human:all", 6));
    }

    #[test]
    fn the_queue_is_inconclusive_unreviewed_runs_oldest_first() {
        assert!(queued("inconclusive", false, false));
        assert!(!queued("inconclusive", true, false));
        assert!(!queued("fail", false, false));
        assert!(
            !queued("inconclusive", false, true),
            "a replay is never queued"
        );
        let mut q = vec![
            queue_row("b", "2026-01-02T00:00:00Z", 20),
            queue_row("c", "2026-01-01T00:00:00.5Z", 15),
            queue_row("a", "2026-01-02T00:00:00Z", 20),
        ];
        sort_queue(&mut q);
        let ids: Vec<&str> = q.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, ["c", "a", "b"]);
        assert_eq!(q[0].explain, "/v1/runs/c/explain");
    }
}
