//! Regression tests for the defects that the one-decision redesign fixed, each named after what
//! it pins (docs/DESIGN.md §5–§7). Real HTTP (daemon in-process on a loopback socket, judges on
//! a loopback chat-completions server), real stores, real signatures.

use crate::common;

use common::*;
use seal_engine::engine::Engine;
use seal_fs::runfolder::RunFolder;
use seal_testkit::client::{SealClient, StatusCode};
use seal_testkit::loopback::{Fault, Loopback};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The inconclusive example with a roll 2 (a copy of roll 1's play under the roll-2 id).
fn inconclusive_with_roll2(dir: &Path) -> RunFolder {
    copy_tree(&example("run-narrative-0011-inconclusive"), dir);
    let p1 = dir.join("roll-1/proof-package.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(p1).unwrap()).unwrap();
    v["rollId"] = Value::String("roll-2".into());
    std::fs::create_dir_all(dir.join("roll-2")).unwrap();
    std::fs::write(
        dir.join("roll-2/proof-package.json"),
        serde_json::to_vec(&v).unwrap(),
    )
    .unwrap();
    RunFolder::read(dir, 1 << 26).unwrap()
}

fn roll_bytes(f: &RunFolder, n: usize) -> Vec<u8> {
    f.rolls()[n - 1].canonical().to_vec()
}

async fn keys_under(engine: &Engine, run: &str) -> Vec<String> {
    engine
        .store()
        .list(&format!("runs/{run}"))
        .await
        .unwrap()
        .keys
        .iter()
        .map(|k| k.to_string())
        .collect()
}

/// Defect 1: both judges fail (every attempt), the floor passes: `POST …/finalize` answered
/// 500 and the run stayed JUDGING forever. It must seal `infra_error` / `retry`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_judges_failing_on_a_passing_floor_is_sealed_as_infra_error_over_http() {
    for (fa, fb) in [
        (Fault::Length, Fault::Length),
        (
            Fault::Content("prose, no JSON".into()),
            Fault::Content("also prose".into()),
        ),
        (
            Fault::Status {
                code: 401,
                body: r#"{"error":{"message":"bad key"}}"#.into(),
                retry_after: None,
            },
            Fault::Content("prose".into()),
        ),
        (Fault::Hang, Fault::Hang),
    ] {
        let judge = Loopback::start(Duration::ZERO).await.unwrap();
        personas(&judge);
        judge.script(MODEL_A, [fa.clone(), fa.clone(), fa.clone()]);
        judge.script(MODEL_B, [fb.clone(), fb.clone(), fb.clone()]);
        let engine = engine_with(&judge, "memory://", &[("SEAL_JUDGE_TIMEOUT_MS", "1000")]).await;
        let (base, _stop) = start(engine).await;
        let c = SealClient::new(base);
        // The narrative example carries a play-spec `check`: a deterministic status exists.
        let f = RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
        c.submit(&f).await;
        let (s, b) = c.roll(&f, 1).await.status_json();
        assert_eq!(s, StatusCode::OK, "{b}");
        assert_eq!(b["rollOutcome"], "infra_error", "{fa:?}/{fb:?}: {b}");
        let (s, b) = c.finalize(f.run()).await.status_json();
        assert_eq!(s, StatusCode::OK, "{fa:?}/{fb:?}: {b}");
        assert_eq!(b["outcome"], "infra_error");
        assert_eq!(b["decision"]["action"], "retry");
        assert_eq!(
            b["decision"]["reasons"],
            serde_json::json!(["infra_judges_failed"])
        );
        let v = c.verify(f.run()).await.json();
        assert_eq!(v["verified"], true, "{v}");
    }
}

/// Defect 2: after finalize sealed a run (inconclusive after roll 1), `POST …/rolls/2`
/// answered 200, called both judges and stored `roll-2/`. It must answer 409 `run_decided`
/// with no judge call and no stored byte; a retry of the sealed roll 1 gets its stored answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decided_run_refuses_roll_2_over_http_without_calling_a_judge_or_storing() {
    let judge = Loopback::start(Duration::ZERO).await.unwrap();
    personas(&judge);
    let dir = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let engine = engine_with(&judge, &file_url(store_dir.path()), &[]).await;
    let probe = engine.clone();
    let (base, _stop) = start(engine).await;
    let c = SealClient::new(base);
    let f = inconclusive_with_roll2(dir.path());
    c.submit(&f).await;
    let (s, b) = c.roll(&f, 1).await.status_json();
    assert_eq!(
        (s, b["next"].as_str()),
        (StatusCode::OK, Some("roll-2")),
        "{b}"
    );
    let (s, b) = c.finalize(f.run()).await.status_json();
    assert_eq!(
        (s, b["outcome"].as_str()),
        (StatusCode::OK, Some("inconclusive")),
        "{b}"
    );

    let calls = judge.calls().len();
    let before = keys_under(&probe, f.run().as_str()).await;
    let (s, b) = c.roll(&f, 2).await.status_json();
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "run_decided", "{b}");
    assert_eq!(
        judge.calls().len(),
        calls,
        "a judge was called for a decided run"
    );
    assert_eq!(
        keys_under(&probe, f.run().as_str()).await,
        before,
        "bytes were stored"
    );
    // Header, brief and play-spec of a decided run are refused too (other bytes: the same
    // bytes are a worker's retry, answered 200 with the run's state, see tests/it/operable.rs).
    let (s, b) = c
        .put_brief(f.run(), b"another brief".to_vec())
        .await
        .status_json();
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("run_decided"))
    );
    // A worker retrying the sealed roll 1 gets the stored answer.
    let (s, b) = c.roll(&f, 1).await.status_json();
    assert_eq!(
        (s, b["rollOutcome"].as_str()),
        (StatusCode::OK, Some("inconclusive")),
        "{b}"
    );
    assert_eq!(judge.calls().len(), calls);
}

/// Defect 2, CLI side: `seal judge` of a folder that would add roll 2 to a decided run is
/// refused (exit 1) with no judge call; the same folder as sealed returns the sealed result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seal_judge_refuses_to_add_a_roll_to_a_decided_run() {
    let judge = Loopback::start(Duration::ZERO).await.unwrap();
    personas(&judge);
    let engine = engine_with(&judge, "memory://", &[]).await;
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&example("run-narrative-0011-inconclusive"), dir.path());
    let one_roll = RunFolder::read(dir.path(), 1 << 26).unwrap();
    let sealed = seal_engine::judge_run::judge(&engine, &one_roll)
        .await
        .unwrap();
    let again = seal_engine::judge_run::judge(&engine, &one_roll)
        .await
        .unwrap();
    assert_eq!(again.evidence_hash(), sealed.evidence_hash());
    let calls = judge.calls().len();
    let two_rolls = inconclusive_with_roll2(dir.path());
    let err = seal_engine::judge_run::judge(&engine, &two_rolls)
        .await
        .unwrap_err();
    use seal_core::fault::{Fault, HasFault};
    // The caller's: `seal judge` answers no (exit 1) for such a folder.
    assert_eq!(err.fault(), Fault::Caller, "{err}");
    assert!(err.to_string().contains("already decided"), "{err}");
    assert_eq!(judge.calls().len(), calls);
}

/// Defect 2, the race: a finalize racing a roll-2 post. Either roll 2 is part of the sealed
/// run, or its post is refused; never a 200 for a roll the seal does not bind.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn finalize_racing_roll_2_never_answers_for_an_unsealed_roll() {
    let judge = Loopback::start(Duration::from_millis(20)).await.unwrap();
    personas(&judge);
    let engine = engine_with(&judge, "memory://", &[]).await;
    let probe = engine.clone();
    let trusted = [engine.key().unwrap().public()];
    let (base, _stop) = start(engine).await;
    let c = SealClient::new(base);
    for i in 0..6 {
        let dir = tempfile::tempdir().unwrap();
        inconclusive_with_roll2(dir.path());
        // A fresh run id per round: the header on disk renamed, the folder read again.
        let id = format!("race-{i}");
        let header = dir.path().join("header.json");
        let mut h: Value = serde_json::from_slice(&std::fs::read(&header).unwrap()).unwrap();
        h["runId"] = Value::String(id.clone());
        std::fs::write(&header, serde_json::to_vec(&h).unwrap()).unwrap();
        let f = RunFolder::read(dir.path(), 1 << 26).unwrap();
        c.submit(&f).await;
        let (s, _) = c.roll(&f, 1).await.status_json();
        assert_eq!(s, StatusCode::OK);
        let (roll2, fin) = tokio::join!(c.roll(&f, 2), c.finalize(&id));
        let ((s2, b2), (sf, bf)) = (roll2.status_json(), fin.status_json());
        assert_eq!(sf, StatusCode::OK, "{bf}");
        let rolls_sealed = bf["sourceRollId"].as_str().map(|_| ()).and(Some(()));
        assert!(rolls_sealed.is_some());
        let run = seal_core::ids::RunId::parse(&id).unwrap();
        let report = seal_engine::verify::verify_run(
            probe.store(),
            &run,
            &trusted,
            seal_log::DEFAULT_ORIGIN,
        )
        .await
        .unwrap();
        assert!(report.verified, "round {i}: {:?}", report.problems);
        let ev = seal_engine::run_state::RunState::load(probe.store(), &run)
            .await
            .unwrap();
        let seal_engine::run_state::RunState::Decided(d) = ev else {
            panic!("round {i}: not decided")
        };
        let has_roll2 = d.evidence().rolls.len() == 2;
        match s2 {
            StatusCode::OK => assert!(
                has_roll2,
                "round {i}: 200 for roll 2, sealed without it: {b2}"
            ),
            StatusCode::CONFLICT => {
                assert!(!has_roll2, "round {i}: {b2}");
                assert!(
                    matches!(
                        b2["error"]["code"].as_str(),
                        Some("run_decided" | "run_finalizing")
                    ),
                    "{b2}"
                );
            }
            other => panic!("round {i}: roll 2 answered {other}: {b2}"),
        }
    }
}

/// Defect 3: the API let a client claim provenance only seal asserts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_refuses_headers_claiming_replay_or_legacy_provenance() {
    let judge = Loopback::start(Duration::ZERO).await.unwrap();
    let engine = engine_with(&judge, "memory://", &[]).await;
    let probe = engine.clone();
    let (base, _stop) = start(engine).await;
    let c = SealClient::new(base);
    let f = RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    let header: Value = serde_json::from_slice(f.header_bytes()).unwrap();
    let cases: Vec<(&str, Value)> = vec![
        ("replay", {
            let mut h = header.clone();
            h["acceptanceMode"] = "historical_replay".into();
            h["parentRunId"] = "no-such-run".into();
            h
        }),
        ("legacy", {
            let mut h = header.clone();
            h["evidenceMode"] = "legacy-adapted".into();
            h
        }),
        ("replay id", {
            let mut h = header.clone();
            h["runId"] = "run-narrative-0010-pass.replay-1".into();
            h
        }),
    ];
    for (what, h) in cases {
        let id = h["runId"].as_str().unwrap().to_string();
        let (s, b) = c
            .put_header(&id, serde_json::to_vec(&h).unwrap())
            .await
            .status_json();
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {b}");
        assert_eq!(b["error"]["code"], "provenance", "{what}: {b}");
        assert!(keys_under(&probe, &id).await.is_empty(), "{what}: stored");
    }
}

/// Defect 4: `seal verify` passed runs holding objects the seal does not bind, skipped folders
/// that are not run ids, and hung on a FIFO in place of `evidence.json`.
#[test]
fn verify_names_unbound_objects_and_lists_every_folder_it_could_not_verify() {
    let (_tmp, root) = copy_fixture_store();
    let run = "run-narrative-0010-pass";
    let runs = root.join("runs");
    // A copied roll-2, a roll-3, a judge-c and an attempt-01 inside a one-roll sealed run.
    copy_tree(
        &runs.join(run).join("roll-1"),
        &runs.join(run).join("roll-2"),
    );
    copy_tree(
        &runs.join(run).join("roll-1/judge-a"),
        &runs.join(run).join("roll-1/judge-c"),
    );
    copy_tree(
        &runs.join(run).join("roll-1/judge-a/attempt-1"),
        &runs.join(run).join("roll-1/judge-a/attempt-01"),
    );
    std::fs::create_dir_all(runs.join(run).join("roll-3")).unwrap();
    std::fs::write(runs.join(run).join("roll-3/notes.json"), b"{}").unwrap();
    // A folder that is not a run id, and a run whose evidence.json is a FIFO.
    std::fs::create_dir_all(runs.join("not a run id")).unwrap();
    std::fs::write(runs.join("not a run id/x.json"), b"{}").unwrap();
    let fifo_run = "run-puzzle-0013-fail-end";
    let ev = runs.join(fifo_run).join("evidence.json");
    std::fs::remove_file(&ev).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(&ev)
        .status()
        .unwrap();
    assert!(status.success());

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_seal"))
        .args(["verify", "--all", "--store", &file_url(&root), "--trust"])
        .arg(fixture_trust_pem())
        .current_dir(root.parent().unwrap())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    for named in [
        format!("runs/{run}/roll-2/roll.json"),
        format!("runs/{run}/roll-3/notes.json"),
        format!("runs/{run}/roll-1/judge-c/parsed.json"),
        format!("runs/{run}/roll-1/judge-a/attempt-01/raw.json"),
        "NOT VERIFIED  not a run id".to_string(),
        format!("runs/{fifo_run}/evidence.json: not a regular file (a named pipe)"),
    ] {
        assert!(stdout.contains(&named), "{named} not named:\n{stdout}");
    }
    assert!(stdout.contains(&format!("NOT VERIFIED  {run}")), "{stdout}");
}

/// Defect 4: an envelope with two signatures of the trusted key passed when the good one came
/// first and failed when it came second. The rule now: exactly one signature.
#[test]
fn an_envelope_with_two_signatures_is_refused_whatever_their_order() {
    let key = seal_fs::keys::generate_signing_key();
    let statement = seal_core::sealing::Statement::new(
        "runs/x/evidence.json",
        &seal_core::canonical::Hash::of(b"x"),
        serde_json::from_value(serde_json::json!({
            "runId": "x", "outcome": "pass", "decision": "accept", "sourceRollId": "roll-1",
            "consensusHash": null, "strategyVersion": null, "acceptanceMode": "v3",
            "decidedAt": "2026-01-01T00:00:00Z"
        }))
        .unwrap(),
    );
    let good = seal_core::sealing::sign(&key, &statement).unwrap();
    let trusted = [key.public()];
    assert!(seal_core::sealing::verify_envelope(&good, &trusted).is_ok());
    let mut bad_sig = good.signatures[0].clone();
    bad_sig.sig = good.signatures[0].sig.chars().rev().collect();
    for order in [
        vec![good.signatures[0].clone(), bad_sig.clone()],
        vec![bad_sig.clone(), good.signatures[0].clone()],
        vec![good.signatures[0].clone(), good.signatures[0].clone()],
    ] {
        let mut env = good.clone();
        env.signatures = order;
        let err = seal_core::sealing::verify_envelope(&env, &trusted).unwrap_err();
        assert!(err.to_string().contains("exactly one"), "{err}");
    }
}

/// An interrupted finalize left `judging.json`: the run takes no more rolls, and the next
/// finalize decides exactly that stored snapshot (a stale one is never silently replaced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_snapshot_closes_the_run_to_rolls_and_is_decided_as_stored() {
    let judge = Loopback::start(Duration::ZERO).await.unwrap();
    personas(&judge);
    let engine = engine_with(&judge, "memory://", &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let f = inconclusive_with_roll2(dir.path());
    let (_, report) = judge_roll1(&engine, &example("run-narrative-0011-inconclusive")).await;
    assert_eq!(
        report.roll().roll_outcome,
        seal_core::doc::Outcome::Inconclusive
    );
    // What an interrupted finalize leaves: the snapshot of roll 1.
    let header: seal_core::doc::Evidence = serde_json::from_slice(
        &engine
            .store()
            .get(&seal_store::Key::header(f.run()))
            .await
            .unwrap(),
    )
    .unwrap();
    let proof: seal_core::doc::ProofPackage = serde_json::from_slice(
        &engine
            .store()
            .get(&report.roll().proof_package_ref)
            .await
            .unwrap(),
    )
    .unwrap();
    let snapshot = seal_core::derive::judging_snapshot(
        &header,
        &[seal_core::derive::JudgedRoll {
            roll: report.roll(),
            proof: &proof,
            consensus: report.consensus(),
        }],
    );
    engine
        .store()
        .put_json(&seal_store::Key::judging(f.run()), &snapshot)
        .await
        .unwrap();
    let err = submit_roll(
        &engine,
        f.run(),
        seal_core::ids::RollId::R2,
        &roll_bytes(&f, 2),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("being finalized"), "{err}");
    let done = seal_engine::postguard::finalize(&engine, f.run())
        .await
        .unwrap();
    assert_eq!(done.evidence().rolls.len(), 1);
    assert_eq!(
        done.evidence().outcome,
        Some(seal_core::doc::Outcome::Inconclusive)
    );
    let trusted = [engine.key().unwrap().public()];
    let r = seal_engine::verify::verify_run(
        engine.store(),
        f.run(),
        &trusted,
        seal_log::DEFAULT_ORIGIN,
    )
    .await
    .unwrap();
    assert!(r.verified, "{:?}", r.problems);
}
