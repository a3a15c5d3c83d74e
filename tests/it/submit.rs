//! `roll::submit`, the one use case behind `POST /v1/runs/{id}/rolls/{n}`, `seal judge` and
//! `seal replay`: the package parsed once by the caller, the run's state loaded once, the same
//! package again answered from the store without a judge call, another package refused with
//! nothing stored. Over the engine and over real HTTP, so both edges are pinned to it.

use crate::common;

use common::*;
use seal_core::ids::RollId;
use seal_engine::intake::ProofSubmission;
use seal_engine::roll::{self, SubmitError, Submitted};
use seal_store::Key;
use seal_testkit::client::{SealClient, StatusCode};
use seal_testkit::loopback::Loopback;
use serde_json::Value;
use std::time::Duration;

const RUN: &str = "run-narrative-0010-pass";

async fn judge() -> Loopback {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    lb
}

/// The package of roll 1, re-serialized (other whitespace and key order than stored).
fn reserialized(folder: &seal_fs::runfolder::RunFolder) -> Vec<u8> {
    let value: Value = serde_json::from_slice(folder.rolls()[0].canonical()).unwrap();
    serde_json::to_vec_pretty(&value).unwrap()
}

/// The package of roll 1 with another actor cost: valid, and not the one judged.
fn another_package(folder: &seal_fs::runfolder::RunFolder) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(folder.rolls()[0].canonical()).unwrap();
    value["actorCostRmb"] = serde_json::json!(0.5);
    serde_json::to_vec(&value).unwrap()
}

#[tokio::test]
async fn the_same_package_again_is_answered_from_the_store_not_judged_again() {
    let lb = judge().await;
    let engine = engine_with(&lb, "memory://", &[]).await;
    let (folder, first) = judge_roll1(&engine, &example(RUN)).await;
    let calls = lb.calls().len();
    let limit = engine.store().doc_limit();
    let again = ProofSubmission::parse(&reserialized(&folder), None, limit).unwrap();
    match roll::submit(&engine, folder.run(), RollId::R1, &again)
        .await
        .unwrap()
    {
        Submitted::AlreadyJudged(done) => assert_eq!(done.roll(), first.roll()),
        Submitted::Accepted(a) => panic!("judged again: {a:?}"),
    }
    assert_eq!(
        lb.calls().len(),
        calls,
        "a judge was called for a judged roll"
    );
}

#[tokio::test]
async fn a_roll_judged_with_another_package_is_refused_and_nothing_is_stored() {
    let lb = judge().await;
    let engine = engine_with(&lb, "memory://", &[]).await;
    let (folder, _) = judge_roll1(&engine, &example(RUN)).await;
    let key = Key::roll_file(folder.run(), RollId::R1, "proof-package.json");
    let stored = engine.store().get(&key).await.unwrap();
    let limit = engine.store().doc_limit();
    let other = ProofSubmission::parse(&another_package(&folder), None, limit).unwrap();
    let err = roll::submit(&engine, folder.run(), RollId::R1, &other)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            SubmitError::OtherPackage {
                roll: RollId::R1,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(engine.store().get(&key).await.unwrap(), stored);
}

#[tokio::test]
async fn over_http_a_judged_roll_is_answered_again_and_another_package_is_a_conflict() {
    let lb = judge().await;
    let engine = engine_with(&lb, "memory://", &[]).await;
    let (folder, first) = judge_roll1(&engine, &example(RUN)).await;
    let calls = lb.calls().len();
    let (base, _stop) = start(engine).await;
    let c = SealClient::new(base);
    let v = c
        .post_roll(folder.run(), 1, reserialized(&folder))
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(
        v["consensusHash"],
        first.roll().judge_consensus_hash.as_str()
    );
    let v = c
        .post_roll(folder.run(), 1, another_package(&folder))
        .await
        .expect(StatusCode::CONFLICT)
        .json();
    assert_eq!(v["error"]["code"], "conflict", "{v}");
    assert_eq!(
        lb.calls().len(),
        calls,
        "a judge was called for a judged roll"
    );
}
