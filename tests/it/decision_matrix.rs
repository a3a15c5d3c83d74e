//! Every combination of what each judge slot does (answers, or fails with each failure class
//! of docs/DESIGN.md §4, at the transport and at the parse stage), of the floor (pass, fail)
//! and of the obligations (with and without a deterministic PlaySpec `check`): the run seals,
//! its evidence validates, `seal verify` passes, and the outcome follows the decision order of
//! docs/DESIGN.md §5 (computed here independently of seal's code).
//!
//! Real HTTP to a loopback judge, a real store, real signatures.

use crate::common;

use common::*;
use seal_core::contracts::Kind;
use seal_core::doc::Outcome;
use seal_core::validate::{validate_as, Report};
use seal_testkit::loopback::{Fault, Loopback};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// What one slot does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Answers,
    Timeout,
    Reset,
    Truncated,
    Http5xx,
    Http401,
    Prose,
    Length,
    Refusal,
    HtmlBody,
    TwoObjects,
    WrongSchema,
    Empty,
}

const FAILURES: [Slot; 12] = [
    Slot::Timeout,
    Slot::Reset,
    Slot::Truncated,
    Slot::Http5xx,
    Slot::Http401,
    Slot::Prose,
    Slot::Length,
    Slot::Refusal,
    Slot::HtmlBody,
    Slot::TwoObjects,
    Slot::WrongSchema,
    Slot::Empty,
];

impl Slot {
    fn fault(self) -> Option<Fault> {
        let status = |code: u16, body: &str| Fault::Status {
            code,
            body: body.into(),
            retry_after: None,
        };
        Some(match self {
            Slot::Answers => return None,
            Slot::Timeout => Fault::Hang,
            Slot::Reset => Fault::Reset,
            Slot::Truncated => Fault::Truncated,
            Slot::Http5xx => status(503, r#"{"error":{"message":"overloaded"}}"#),
            Slot::Http401 => status(401, r#"{"error":{"message":"bad key"}}"#),
            Slot::Prose => Fault::Content("I think the game passes.".into()),
            Slot::Length => Fault::Length,
            Slot::Refusal => Fault::Refusal("I cannot judge this.".into()),
            Slot::HtmlBody => Fault::Body("<html>502 Bad Gateway</html>".into()),
            Slot::TwoObjects => Fault::Content(r#"{"obligations":[]} {"obligations":[]}"#.into()),
            Slot::WrongSchema => Fault::Content(r#"{"verdict":"pass"}"#.into()),
            Slot::Empty => Fault::Content(String::new()),
        })
    }
}

/// The outcome docs/DESIGN.md §5 prescribes for this example run (both judges, when they answer,
/// satisfy every obligation; every check holds).
fn expected(a: Slot, b: Slot, floor_passes: bool) -> Outcome {
    let (a_failed, b_failed) = (a != Slot::Answers, b != Slot::Answers);
    if !floor_passes {
        Outcome::Fail
    } else if a_failed && b_failed {
        Outcome::InfraError
    } else if a_failed || b_failed {
        // One judge's satisfied against a missing: disputed, or a single judge that would
        // pass alone: never a pass.
        Outcome::Inconclusive
    } else {
        Outcome::Pass
    }
}

/// A copy of the passing narrative example with the floor and the checks as asked.
fn folder(dir: &Path, floor_passes: bool, with_checks: bool) {
    copy_tree(&example("run-narrative-0010-pass"), dir);
    let edit = |file: &Path, f: &dyn Fn(&mut Value)| {
        let mut v: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(file, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    };
    if !with_checks {
        edit(&dir.join("header.json"), &|h| {
            let obs = h["proofObligations"].as_array_mut().unwrap();
            obs.retain(|o| o.get("check").is_none());
        });
    }
    if !floor_passes {
        edit(&dir.join("roll-1/proof-package.json"), &|p| {
            p["floor"]["passed"] = Value::Bool(false);
            p["floor"]["checks"][0]["status"] = Value::String("fail".into());
        });
    }
}

async fn case(a: Slot, b: Slot, floor_passes: bool, with_checks: bool) -> Result<(), String> {
    let judge = Loopback::start(Duration::ZERO).await.unwrap();
    personas(&judge);
    for (model, slot) in [(MODEL_A, a), (MODEL_B, b)] {
        if let Some(f) = slot.fault() {
            judge.script(model, [f.clone(), f.clone(), f]);
        }
    }
    // Short only where a slot must time out; elsewhere long enough for a loaded machine.
    let timeout = if a == Slot::Timeout || b == Slot::Timeout {
        "1000"
    } else {
        "15000"
    };
    let engine = engine_with(&judge, "memory://", &[("SEAL_JUDGE_TIMEOUT_MS", timeout)]).await;
    let dir = tempfile::tempdir().unwrap();
    folder(dir.path(), floor_passes, with_checks);
    let what = format!("A={a:?} B={b:?} floor_passes={floor_passes} checks={with_checks}");
    let run = seal_fs::runfolder::RunFolder::read(dir.path(), 1 << 26)
        .map_err(|e| format!("{what}: {e}"))?;
    let done = seal_engine::judge_run::judge(&engine, &run)
        .await
        .map_err(|e| format!("{what}: not sealed: {e}"))?;
    let value = serde_json::to_value(done.evidence()).unwrap();
    if let Report::Invalid(_, f) = validate_as(Kind::PlaytestV3, &value) {
        return Err(format!("{what}: evidence invalid: {f:?}"));
    }
    let want = expected(a, b, floor_passes);
    if done.evidence().outcome != Some(want) {
        return Err(format!(
            "{what}: outcome {:?}, decision order says {want:?}; reasons {:?}",
            done.evidence().outcome,
            done.evidence().decision.as_ref().map(|d| &d.reasons)
        ));
    }
    let reasons = &done.evidence().decision.as_ref().unwrap().reasons;
    let judges_failed = seal_core::vocab::Reason::Infra(seal_core::vocab::InfraCause::JudgesFailed);
    if want == Outcome::InfraError && reasons != &[judges_failed] {
        return Err(format!("{what}: both judges failed, reasons {reasons:?}"));
    }
    let trusted = [engine.key().unwrap().public()];
    let report = seal_engine::verify::verify_run(
        engine.store(),
        run.run(),
        &trusted,
        seal_log::DEFAULT_ORIGIN,
    )
    .await
    .map_err(|e| format!("{what}: verify could not run: {e}"))?;
    if !report.verified {
        return Err(format!("{what}: does not verify: {:?}", report.problems));
    }
    Ok(())
}

/// Every failure class on each side alone, on both sides at once, and the answering pair;
/// each with the floor passing and failing, with and without checked obligations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_slot_result_floor_and_check_combination_seals_verifies_and_follows_the_decision_order(
) {
    let mut pairs = vec![(Slot::Answers, Slot::Answers), (Slot::Http401, Slot::Prose)];
    for f in FAILURES {
        pairs.extend([(f, Slot::Answers), (Slot::Answers, f), (f, f)]);
    }
    let mut cases = Vec::new();
    for (a, b) in pairs {
        for floor in [true, false] {
            for checks in [true, false] {
                cases.push((a, b, floor, checks));
            }
        }
    }
    let total = cases.len();
    let mut failures = Vec::new();
    // A few at a time: the cases are independent (own judge, own memory store).
    for chunk in cases.chunks(8) {
        let handles: Vec<_> = chunk
            .iter()
            .map(|&(a, b, f, c)| tokio::spawn(case(a, b, f, c)))
            .collect();
        for h in handles {
            if let Err(e) = h.await.unwrap() {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} combinations failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
