//! `seal judge` end to end on the example runs against a loopback judge over real HTTP.

use crate::common;

use common::*;
use seal_core::contracts::Kind;
use seal_core::doc::{DecisionAction, Outcome};
use seal_core::validate::{validate_as, Report};
use seal_engine::judge_run::judge;
use seal_fs::runfolder::RunFolder;
use seal_testkit::loopback::Loopback;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn examples_seal_with_the_outcomes_their_names_promise() {
    let lb = Loopback::start(Duration::from_millis(5)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(&lb, &format!("file://{}", dir.path().display()), &[]).await;
    let want = [
        (
            "run-narrative-0010-pass",
            Outcome::Pass,
            DecisionAction::Accept,
            1,
        ),
        (
            "run-puzzle-0013-fail-end",
            Outcome::Fail,
            DecisionAction::Repair,
            1,
        ),
        (
            "run-heritage-0017-disputed-font",
            Outcome::Pass,
            DecisionAction::Accept,
            2,
        ),
    ];
    for (name, outcome, action, rolls) in want {
        let folder = RunFolder::read(&example(name), 1 << 26).unwrap();
        let done = judge(&engine, &folder)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ev = &done.evidence();
        let summary = seal_engine::summary::summarize(engine.store(), &done)
            .await
            .unwrap();
        println!("{}", seal::cli::judge::render(&summary));
        assert_eq!(ev.outcome, Some(outcome), "{name}");
        assert_eq!(ev.decision.as_ref().unwrap().action, action, "{name}");
        assert_eq!(ev.rolls.len(), rolls, "{name}");
        assert!(
            ev.final_postguard.as_ref().unwrap().passed,
            "{name}: {:?}",
            ev.final_postguard
        );
        let v = serde_json::to_value(ev).unwrap();
        assert!(
            matches!(validate_as(Kind::PlaytestV3, &v), Report::Valid(_)),
            "{name}: {:?}",
            validate_as(Kind::PlaytestV3, &v)
        );
        // Judging again is idempotent: the same sealed result comes back.
        let again = judge(&engine, &folder).await.unwrap();
        assert_eq!(again.evidence_hash(), done.evidence_hash());
        assert!(!again.wrote());
    }
}
