//! The in-process write set (`store::recent`): the finalPostguard may take what this process
//! stored moments ago, `seal verify` never does. Here: a run is judged and sealed through one
//! `Store` on a `file://` folder, then its stored objects are damaged on disk behind that
//! `Store`'s back, and verify, through the very same `Store` (whose write set still holds every
//! object), must name each damaged object. And only the postguard may ask for the trusted reads.

mod common;

use common::*;
use seal::ids::{RollId, Slot};
use seal::store::Key;
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
    let done = seal::postguard::finalize(&engine, &folder.run)
        .await
        .unwrap();
    assert!(done.wrote);
    let run = folder.run.clone();
    let trusted = [engine.key.as_ref().unwrap().public()];
    let clean = seal::verify::verify_run(&engine.store, &run, &trusted)
        .await
        .unwrap();
    assert!(clean.verified, "{:?}", clean.problems);
    let (recorded, _) = engine.store.write_set_usage();
    assert!(
        recorded > 20,
        "the write set recorded only {recorded} objects"
    );

    // Damage a frame, a raw answer and a consensus document on disk; the write set of
    // `engine.store` still has all three as they were written.
    let proof: seal::doc::ProofPackage = seal::json::parse_as(&folder.rolls[0].1, 1 << 26).unwrap();
    let frame = Key::cas(&proof.frames[0].hash);
    let raw = Key::attempt_file(&run, RollId::R1, Slot::A, 1, "raw.json");
    let consensus = Key::roll_file(&run, RollId::R1, "consensus.json");
    for k in [&frame, &raw, &consensus] {
        flip_middle_byte(&dir.path().join(k.as_str()));
    }
    let report = seal::verify::verify_run(&engine.store, &run, &trusted)
        .await
        .unwrap();
    assert!(!report.verified);
    for k in [&frame, &raw, &consensus] {
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.object == k.as_str() && p.check == "refs_resolve"),
            "verify did not name {k}: {:?}",
            report.problems
        );
    }
}

/// Only the postguard (and the store that defines it) may ask for reads that trust the write
/// set: verify, replay, import and the server read through `Store`, which re-hashes.
#[test]
fn only_the_postguard_trusts_its_own_writes() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offenders = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let allowed = rel.starts_with("postguard/") || rel.starts_with("store/");
            if !allowed && (text.contains("trusting_own_writes") || text.contains("OwnWrites")) {
                offenders.push(rel);
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "trusted reads outside the postguard: {offenders:?}"
    );
}
