//! The in-process write set (`store::recent`): the finalPostguard may take what this process
//! stored moments ago, `seal verify` never does. Here: a run is judged and sealed through one
//! `Store` on a `file://` folder, then its stored objects are damaged on disk behind that
//! `Store`'s back, and verify, through the very same `Store` (whose write set still holds every
//! object), must name each damaged object. Only the postguard and the daemon's request path
//! (run state, roll guard, intake) may ask for the trusted reads, and they never trust an
//! absence: a run another replica decided is seen decided.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_rehashes_objects_this_process_wrote() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(&lb, &file_url(dir.path()), &[]).await;
    let (folder, _) = judge_roll1(&engine, &example("run-narrative-0010-pass")).await;
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
    let (recorded, _) = engine.store().write_set_usage();
    assert!(
        recorded > 20,
        "the write set recorded only {recorded} objects"
    );

    // Damage a frame, a raw answer and a consensus document on disk; the write set of
    // `engine.store()` still has all three as they were written.
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

/// Folders (relative to the workspace root) whose files may ask for trusted reads.
const MAY_TRUST_OWN_WRITES: &[&str] = &[
    "crates/seal-engine/src/postguard/",
    "crates/seal-engine/src/run_state.rs",
    "crates/seal-engine/src/roll/",
    "crates/seal-engine/src/intake.rs",
    // `seal judge` (the request path's use case from the command line) and the daemon's run
    // routes, through `RunState::load_own`.
    "crates/seal-engine/src/judge_run.rs",
    "crates/seal-server/src/routes/runs.rs",
    "crates/seal-store/src/",
];

/// What asks for trusted reads: the reader itself, or the run-state load made of it.
fn trusts_own_writes(text: &str) -> bool {
    ["trusting_own_writes", "OwnWrites", "load_own"]
        .iter()
        .any(|w| text.contains(w))
}

/// Every `.rs` file of the workspace's sources: the root package's `src/` and each
/// `crates/*/src/`, with its path relative to the workspace root.
fn workspace_sources(root: &Path) -> Vec<(String, String)> {
    let mut stack = vec![root.join("src")];
    for e in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        stack.push(e.path().join("src"));
    }
    let mut out = Vec::new();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out
}

/// Only the postguard, the daemon's request path (run state, roll, intake) and the store that
/// defines it may ask for reads that trust the write set: verify, replay, import and the
/// server's own modules read through `Store`, which re-hashes.
#[test]
fn only_the_postguard_and_the_request_path_trust_their_own_writes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = workspace_sources(root);
    // The scan must see the code it guards: a moved source tree would otherwise leave it
    // reading nothing and passing.
    assert!(
        sources.len() >= 50,
        "read only {} source files: where did the sources go?",
        sources.len()
    );
    for allowed in MAY_TRUST_OWN_WRITES {
        assert!(
            sources
                .iter()
                .any(|(rel, text)| rel.starts_with(allowed) && trusts_own_writes(text)),
            "no file under {allowed} asks for trusted reads: a stale entry"
        );
    }
    let offenders: Vec<&String> = sources
        .iter()
        .filter(|(rel, text)| {
            let allowed = MAY_TRUST_OWN_WRITES.iter().any(|a| rel.starts_with(a));
            !allowed && trusts_own_writes(text)
        })
        .map(|(rel, _)| rel)
        .collect();
    assert!(
        offenders.is_empty(),
        "trusted reads outside the postguard and the request path: {offenders:?}"
    );
}

/// The daemon's run-state load takes this process's own writes (the header, receipts and
/// `roll.json` it stored), never an absence: a run another replica decided, through another
/// open store on the same storage, is seen decided here although this process's write set
/// holds the run's header and roll, and no more documents are accepted for it.
async fn a_run_another_replica_decided_is_seen_decided(url: &str) {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let here = engine_with(&lb, url, &[]).await;
    let there = engine_with(&lb, url, &[]).await;
    let (folder, _) = judge_roll1(&here, &example("run-narrative-0010-pass")).await;
    let run = folder.run().clone();
    let state = seal_engine::run_state::RunState::load_own(here.store(), &run)
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
    match seal_engine::run_state::RunState::load_own(here.store(), &run)
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
