//! Nothing this process stored is taken back from memory: the postguard's final audit and
//! `seal verify` re-read and re-hash what the store holds, through the very `Store` that wrote
//! it. Here: a run's objects are damaged on disk behind that `Store`'s back after a roll wrote
//! them, and the postguard refuses to decide (nothing signed), or after the seal, and verify
//! names each damaged object; and a run another replica decided is seen decided.

use crate::common;

use common::*;
use seal_core::ids::{RollId, Slot};
use seal_store::Key;
use seal_testkit::loopback::Loopback;
use std::path::Path;
use std::time::Duration;

fn flip_middle_byte(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    // Objects are written read-only by some backends: make sure the damage lands.
    let mut perms = std::fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(path, perms).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A run whose roll 1 one engine has judged on a `file://` store in a fresh folder: the
/// judges (kept alive), the folder, the engine and the run.
async fn roll_1_judged_on_file() -> (
    Loopback,
    tempfile::TempDir,
    seal_engine::engine::Engine,
    seal_fs::runfolder::RunFolder,
) {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(&lb, &file_url(dir.path()), &[]).await;
    let (folder, _) = judge_roll1(&engine, &example("run-narrative-0010-pass")).await;
    (lb, dir, engine, folder)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_rehashes_objects_this_process_wrote() {
    let (_lb, dir, engine, folder) = roll_1_judged_on_file().await;
    let done = seal_engine::postguard::finalize(&engine, folder.run())
        .await
        .unwrap();
    assert!(done.wrote());
    let run = folder.run().clone();
    let trusted = [engine.key().unwrap().public()];
    let clean =
        seal_engine::verify::verify_run(engine.store(), &run, &trusted, seal_log::DEFAULT_ORIGIN)
            .await
            .unwrap();
    assert!(clean.verified, "{:?}", clean.problems);
    // Damage a frame, a raw answer and a consensus document on disk, behind the back of the
    // `Store` that wrote them.
    let proof = folder.rolls()[0].package();
    let frame = Key::cas(&proof.frames[0].hash);
    let raw = Key::attempt_file(&run, RollId::R1, Slot::A, 1, "raw.json");
    let consensus = Key::roll_file(&run, RollId::R1, "consensus.json");
    for k in [&frame, &raw, &consensus] {
        flip_middle_byte(&dir.path().join(k.as_str()));
    }
    let report =
        seal_engine::verify::verify_run(engine.store(), &run, &trusted, seal_log::DEFAULT_ORIGIN)
            .await
            .unwrap();
    assert!(!report.verified);
    for k in [&frame, &raw, &consensus] {
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.object == k.as_str() && p.check == seal_core::vocab::AuditCheck::Refs),
            "verify did not name {k}: {:?}",
            report.problems
        );
    }
}

/// The postguard decides from what the store holds, not from what this process remembers
/// writing: a consensus document damaged on disk between the roll that wrote it and the
/// finalize, through the same open `Store`, refuses the run, names the object, and signs
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postguard_rereads_what_this_process_wrote() {
    let (_lb, dir, engine, folder) = roll_1_judged_on_file().await;
    let run = folder.run().clone();
    let consensus = Key::roll_file(&run, RollId::R1, "consensus.json");
    flip_middle_byte(&dir.path().join(consensus.as_str()));
    let err = seal_engine::postguard::finalize(&engine, &run)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(consensus.as_str()) && text.contains("not sealed"),
        "{text}"
    );
    assert!(!engine.store().exists(&Key::seal(&run)).await.unwrap());
    assert!(!engine.store().exists(&Key::evidence(&run)).await.unwrap());
}

/// A run another replica decided, through another open store on the same storage, is seen
/// decided here although this process judged its roll, and no more documents are accepted
/// for it.
async fn a_run_another_replica_decided_is_seen_decided(url: &str) {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    // Two replicas of one deployment: one key.
    let here = engine_keyed(&lb, url, &[], [7; 32]).await;
    let there = engine_keyed(&lb, url, &[], [7; 32]).await;
    let (folder, _) = judge_roll1(&here, &example("run-narrative-0010-pass")).await;
    let run = folder.run().clone();
    let state = seal_engine::run_state::RunState::load(here.store(), &run)
        .await
        .unwrap();
    match state {
        seal_engine::run_state::RunState::Open(open) => assert_eq!(open.rolls().len(), 1),
        other => panic!("expected an open run with one judged roll, got {other:?}"),
    }
    let done = seal_engine::postguard::finalize(&there, &run)
        .await
        .unwrap();
    assert!(done.wrote(), "the other replica decided the run");
    match seal_engine::run_state::RunState::load(here.store(), &run)
        .await
        .unwrap()
    {
        seal_engine::run_state::RunState::Decided(d) => {
            assert_eq!(d.evidence_hash(), done.evidence_hash())
        }
        other => panic!("a run decided by another replica was seen as {other:?}"),
    }
    let err = seal_engine::intake::put_brief(&here, &run, b"another brief")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("already decided"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_another_replica_decided_is_seen_decided_on_file() {
    let dir = tempfile::tempdir().unwrap();
    a_run_another_replica_decided_is_seen_decided(&file_url(dir.path())).await;
}

/// On S3 the load lists the run's folder once instead of asking for each absent object: the
/// listing must see the other replica's evidence as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_another_replica_decided_is_seen_decided_on_s3() {
    let Some(url) = s3_url_or_skip("decided_elsewhere") else {
        return;
    };
    a_run_another_replica_decided_is_seen_decided(&url).await;
}

/// The same on an S3 store opened with `listing=off`: each object is asked for, as on
/// `file://`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_another_replica_decided_is_seen_decided_on_s3_without_listing() {
    let Some(url) = s3_url_or_skip("decided_elsewhere_unlisted") else {
        return;
    };
    let store = seal_store::Store::open(&format!("{url}&listing=off"))
        .await
        .unwrap();
    assert_eq!(store.keys_within("runs", 10).await.unwrap(), None);
    a_run_another_replica_decided_is_seen_decided(&format!("{url}&listing=off")).await;
}
