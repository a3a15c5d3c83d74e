//! Served-model drift: what each judge endpoint said it served, period by period. Pure.
//!
//! Providers change the model behind a name without notice; the only trace is the answer's
//! `model` and `system_fingerprint`, which seal stores in every attempt's SlotMeta. For each
//! judging set-up of a slot (endpoint host, model requested, prompt artifact: what an operator
//! configures), every distinct served (model, fingerprint) is a **period**, with its run count,
//! its first and last run by decision time, and, over the runs of the period, A-vs-B κ and
//! the pass rate, each with a seeded bootstrap interval. A set-up with more than one period is
//! flagged `served_model_changed`: the same configuration was answered by something else, and
//! the figures before and after say whether it mattered.
//!
//! A period is a set of runs, not a contiguous stretch: when an endpoint alternates between
//! two fingerprints (a canary), the two periods' first/last runs overlap, which is the sign.

use std::collections::BTreeMap;

use serde::Serialize;

use super::facts::{RunFacts, Served};
use super::kappa::{self, Confusion, BOOTSTRAP_RESAMPLES};
use super::reliability::Figure;

/// The flag of a set-up answered by more than one served model or fingerprint.
pub const SERVED_MODEL_CHANGED: &str = "served_model_changed";

/// (slot, endpoint host, model requested, prompt).
type SetUp = (String, String, String, String);

/// A run as a point in time: decision time (Unix ns), then run id; with `decidedAt` as sealed.
type At = ((i128, String), String);

#[derive(Debug, Clone)]
struct PeriodAcc {
    runs: u64,
    passed: u64,
    first: At,
    last: At,
    matrix: Confusion,
}

/// Folds original runs into served-model periods.
#[derive(Debug, Clone, Default)]
pub struct DriftAcc {
    groups: BTreeMap<SetUp, BTreeMap<Served, PeriodAcc>>,
}

impl DriftAcc {
    /// One verified original run: each slot's served identity of each dispatched roll.
    pub fn add(&mut self, run: &RunFacts) {
        let at: At = (
            (run.decided_nanos, run.run_id.clone()),
            run.decided_at.clone(),
        );
        for i in 0..2 {
            // The run's (set-up, served) pairs of this slot, each with its rolls' obligations.
            let mut seen: BTreeMap<(SetUp, Served), Confusion> = BTreeMap::new();
            for roll in run.rolls.iter().filter(|r| r.dispatched) {
                let s = &roll.slots[i];
                let Some(served) = &s.served else { continue };
                let key = (
                    s.slot.clone(),
                    s.host.clone(),
                    s.requested.clone(),
                    s.prompt.clone(),
                );
                let m = seen.entry((key, served.clone())).or_default();
                for o in &roll.obligations {
                    m.add(o.a, o.b);
                }
            }
            for ((key, served), m) in seen {
                let p = self
                    .groups
                    .entry(key)
                    .or_default()
                    .entry(served)
                    .or_insert_with(|| PeriodAcc {
                        runs: 0,
                        passed: 0,
                        first: at.clone(),
                        last: at.clone(),
                        matrix: Confusion::default(),
                    });
                p.runs += 1;
                p.passed += u64::from(run.outcome == "pass");
                if at.0 < p.first.0 {
                    p.first = at.clone();
                }
                if at.0 > p.last.0 {
                    p.last = at.clone();
                }
                p.matrix.merge(&m);
            }
        }
    }

    /// The groups, each set-up's periods in order of their first run.
    pub fn finish(&self, seed: u64, decimals: i32) -> Vec<DriftGroup> {
        let r = |x: f64| kappa::round(x, decimals);
        self.groups
            .iter()
            .map(|((slot, host, requested, prompt), periods)| {
                let mut rows: Vec<(&Served, &PeriodAcc)> = periods.iter().collect();
                rows.sort_by(|x, y| x.1.first.0.cmp(&y.1.first.0).then(x.0.cmp(y.0)));
                let periods = rows
                    .into_iter()
                    .map(|(served, p)| {
                        let key = format!(
                            "drift:{slot}:{host}:{requested}:{prompt}:{}:{}",
                            served.model,
                            served.fingerprint.as_deref().unwrap_or("")
                        );
                        let kappa_ci = kappa::kappa_interval(
                            &p.matrix,
                            kappa::key_seed(seed, &format!("{key}:kappa")),
                            BOOTSTRAP_RESAMPLES,
                        );
                        let pass_counts = [p.runs - p.passed, p.passed];
                        let pass_rate = |c: &[u64]| {
                            let n = c[0] + c[1];
                            (n > 0).then(|| c[1] as f64 / n as f64)
                        };
                        let pass_ci = kappa::bootstrap_interval(
                            &pass_counts,
                            kappa::key_seed(seed, &format!("{key}:pass")),
                            BOOTSTRAP_RESAMPLES,
                            pass_rate,
                        );
                        Period {
                            served_model: served.model.clone(),
                            system_fingerprint: served.fingerprint.clone(),
                            runs: p.runs,
                            first_run: p.first.0 .1.clone(),
                            first_decided_at: p.first.1.clone(),
                            last_run: p.last.0 .1.clone(),
                            last_decided_at: p.last.1.clone(),
                            obligations: p.matrix.n(),
                            kappa: Figure {
                                value: p.matrix.kappa().map(r),
                                ci95: kappa_ci.map(|(lo, hi)| [r(lo), r(hi)]),
                            },
                            pass_rate: Figure {
                                value: pass_rate(&pass_counts).map(r),
                                ci95: pass_ci.map(|(lo, hi)| [r(lo), r(hi)]),
                            },
                        }
                    })
                    .collect::<Vec<_>>();
                DriftGroup {
                    slot: slot.clone(),
                    endpoint_host: host.clone(),
                    model_requested: requested.clone(),
                    prompt: prompt.clone(),
                    flags: if periods.len() > 1 {
                        vec![SERVED_MODEL_CHANGED.to_string()]
                    } else {
                        Vec::new()
                    },
                    periods,
                }
            })
            .collect()
    }
}

/// One judging set-up of a slot and the served identities that answered it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftGroup {
    pub slot: String,
    pub endpoint_host: String,
    pub model_requested: String,
    pub prompt: String,
    /// `served_model_changed` when more than one period answered this set-up.
    pub flags: Vec<String>,
    pub periods: Vec<Period>,
}

/// One served (model, fingerprint) of a set-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Period {
    pub served_model: String,
    pub system_fingerprint: Option<String>,
    pub runs: u64,
    pub first_run: String,
    pub first_decided_at: String,
    pub last_run: String,
    pub last_decided_at: String,
    /// Obligations of the period's rolls (the κ's n).
    pub obligations: u64,
    /// A-vs-B κ over the period's rolls.
    pub kappa: Figure,
    /// Share of the period's runs that passed.
    pub pass_rate: Figure,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{JudgeStatus, ObligationStatus};
    use crate::stats::facts::{ObligationFacts, RollFacts, SlotFacts};

    fn slot(name: &str, served: &str, fp: &str) -> SlotFacts {
        SlotFacts {
            slot: name.into(),
            model: served.into(),
            prompt: "judge@1".into(),
            host: "judge.example".into(),
            requested: "m".into(),
            served: Some(Served {
                model: served.into(),
                fingerprint: Some(fp.into()),
            }),
            failed_class: None,
            attempts: vec![],
        }
    }

    fn run(id: &str, nanos: i128, served_a: &str, outcome: &str, agree: bool) -> RunFacts {
        let ob = ObligationFacts {
            id: "o".into(),
            a: 0,
            b: if agree { 0 } else { 1 },
            a_status: JudgeStatus::Satisfied,
            b_status: JudgeStatus::Satisfied,
            consensus: ObligationStatus::Satisfied,
            check: None,
        };
        RunFacts {
            run_id: id.into(),
            genre: "g".into(),
            day: "2026-12-01".into(),
            outcome: outcome.into(),
            action: "publish".into(),
            reasons: vec![],
            replay_of: None,
            first_raw_a: None,
            cost_micro: 0,
            rolls: vec![RollFacts {
                roll_id: "r1".into(),
                outcome: outcome.into(),
                dispatched: true,
                degraded: false,
                cost_micro: 0,
                obligations: vec![ob],
                slots: [slot("a", served_a, "fp1"), slot("b", "mb", "fpb")],
            }],
            decided_at: format!("t{nanos}"),
            decided_nanos: nanos,
            reviewed: false,
            human: Default::default(),
            seal_sha256: String::new(),
            review_sha256: vec![],
            policies: vec![],
        }
    }

    #[test]
    fn a_change_of_served_model_is_two_periods_in_time_order_whatever_the_input_order() {
        let runs: Vec<RunFacts> = (0..8)
            .map(|i| {
                let served = if i < 5 { "m-2026-01" } else { "m-2026-06" };
                run(
                    &format!("run{i}"),
                    i as i128 * 10,
                    served,
                    if i < 5 { "pass" } else { "fail" },
                    i < 5,
                )
            })
            .collect();
        let mut fwd = DriftAcc::default();
        runs.iter().for_each(|r| fwd.add(r));
        let mut rev = DriftAcc::default();
        runs.iter().rev().for_each(|r| rev.add(r));
        let groups = fwd.finish(5, 6);
        assert_eq!(groups, rev.finish(5, 6));
        let a = &groups[0];
        assert_eq!(a.slot, "a");
        assert_eq!(a.flags, [SERVED_MODEL_CHANGED]);
        assert_eq!(a.periods.len(), 2);
        let (before, after) = (&a.periods[0], &a.periods[1]);
        assert_eq!(before.served_model, "m-2026-01");
        assert_eq!(
            (
                before.runs,
                before.first_run.as_str(),
                before.last_run.as_str()
            ),
            (5, "run0", "run4")
        );
        assert_eq!(
            (
                after.runs,
                after.first_run.as_str(),
                after.last_run.as_str()
            ),
            (3, "run5", "run7")
        );
        assert_eq!(before.pass_rate.value, Some(1.0));
        assert_eq!(after.pass_rate.value, Some(0.0));
        // Slot B kept one identity: no flag.
        let b = &groups[1];
        assert_eq!(b.slot, "b");
        assert!(b.flags.is_empty());
        assert_eq!(b.periods[0].runs, 8);
    }
}
