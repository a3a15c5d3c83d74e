//! seal replay, continued: --all killed midway resumes, imported copies swapped after their import.

use super::replay::*;
use crate::common;
use common::*;
use seal_core::ids::RunId;
use seal_core::sealing::PublicKey;
use seal_engine::replay::{replay, JudgesFrom, ReplayError};
use seal_testkit::loopback::Loopback;
use std::path::Path;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// (g) --all --jobs 2 killed midway: a rerun finishes, every source replayed exactly once

/// (replays started, replays decided) of `sources` in `store`, and any second generation.
fn replay_state(store: &Path, sources: &[String]) -> (usize, usize, Vec<String>) {
    let (mut started, mut decided, mut extra) = (0, 0, Vec::new());
    for s in sources {
        let first = store.join(format!("runs/{s}.replay-1"));
        started += usize::from(first.join("header.json").is_file());
        decided += usize::from(first.join("evidence.json").is_file());
        if store.join(format!("runs/{s}.replay-2")).exists() {
            extra.push(format!("{s}.replay-2"));
        }
    }
    (started, decided, extra)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_all_killed_midway_resumes_and_replays_every_source_exactly_once() {
    let (_src_dir, src) = copy_fixture_store();
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("store");
    let (_keys, key, public) = key_pair();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let expected = replayable_fixtures();
    let n = expected.len();
    let args = ["--all", "--judges", "stored", "--jobs", "2"];

    // Kill -9 as soon as the first replay is decided: the others are not, or half done.
    let mut child = replay_cmd(work.path(), &lb, &args, Some(&src), &store, &key, false)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while replay_state(&store, &expected).1 == 0 {
        assert!(Instant::now() < deadline, "no replay decided in 120 s");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("replay ended before it could be killed: {status}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (started, decided, extra) = replay_state(&store, &expected);
    println!("at the kill: {started} replays started, {decided} decided of {n}");
    assert!(
        decided < n,
        "the kill came after the last replay: nothing to resume"
    );
    assert!(extra.is_empty(), "{extra:?}");

    // The rerun: what was decided is skipped, the rest is (re)done under the same ids.
    let out = run(replay_cmd(
        work.path(),
        &lb,
        &args,
        Some(&src),
        &store,
        &key,
        true,
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v = json_out(&out);
    assert_eq!(v["errors"], serde_json::json!([]), "{v:#}");
    let already = v["alreadyReplayed"].as_array().unwrap().len();
    assert_eq!(already, decided, "{v:#}");
    assert_eq!(v["runs"], n - decided, "{v:#}");
    assert_eq!(v["consensusReproduced"], n - decided, "{v:#}");
    for r in v["replays"].as_array().unwrap() {
        assert!(r["replay"].as_str().unwrap().ends_with(".replay-1"), "{r}");
    }
    let (started, decided, extra) = replay_state(&store, &expected);
    assert_eq!((started, decided), (n, n));
    assert!(extra.is_empty(), "a source was replayed twice: {extra:?}");

    // Everything verifies: the imported sources and exactly one replay of each.
    let (code, report) =
        verify_all(work.path(), &lb, &store, &[&public, &fixture_trust_pem()]).await;
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["verified"], 2 * n, "{report:#}");
    assert!(lb.calls().is_empty(), "stored replay called a judge");
}

/// A stored replay of `run` taking the proof its import made (`SourceProof::Imported`).
async fn replay_imported(
    engine: &seal_engine::engine::Engine,
    run: &RunId,
    trusted: &[PublicKey],
    verified: Box<seal_engine::verify::VerifiedRun>,
) -> Result<seal_engine::replay::Replayed, ReplayError> {
    let proof = seal_engine::replay::SourceProof::Imported(verified);
    replay(engine, run, JudgesFrom::Stored, None, trusted, proof).await
}

/// `--from` verifies a run once, in the import's staging area, and the replay takes that proof
/// instead of auditing the copy again (`SourceProof::Imported`); so what the replay reads of
/// the copy must be read against the hashes the proof binds. Here the store writer swaps the
/// imported brief after the import: the replay names it, and no replay run is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_swapped_after_its_import_is_refused_by_the_replay() {
    use seal_engine::import::{import_logged, Archive, Imported, Limits};
    let (_dir, archive_root) = copy_fixture_store();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let work = tempfile::tempdir().unwrap();
    let dest = work.path().join("store");
    std::fs::create_dir_all(&dest).unwrap();
    let engine = engine_with(&lb, &file_url(&dest), &[]).await;
    let archive = Archive::open(&file_url(&archive_root)).await.unwrap();
    let run = RunId::parse("run-narrative-0010-pass").unwrap();
    let trusted = [fixture_key()];
    let limits = Limits {
        document: engine.store().doc_limit(),
        blob: 1 << 26,
    };
    let imported = |engine: seal_engine::engine::Engine| {
        let (archive, run, trusted) = (&archive, &run, &trusted);
        async move {
            let key = engine.key().unwrap();
            let got = import_logged(
                archive,
                engine.store(),
                run,
                trusted,
                limits,
                false,
                engine.log(),
                key,
            )
            .await
            .unwrap();
            match got {
                Imported::Copied { verified, .. } => verified,
                other => panic!("{other:?}"),
            }
        }
    };
    let verified = imported(engine.clone()).await;
    let brief = format!("runs/{run}/brief.md");
    flip_middle(&dest, &brief);
    let e = replay_imported(&engine, &run, &trusted, verified)
        .await
        .unwrap_err();
    assert!(e.to_string().contains(&brief), "{e}");
    let runs = engine.store().runs().await.unwrap().runs;
    assert!(
        runs.iter().all(|r| !r.as_str().contains(".replay-")),
        "a replay was written from a swapped copy: {runs:?}"
    );

    // The same import into a fresh store, untouched: the proof is taken, the consensus
    // reproduced, and the replay verifies.
    let fresh = tempfile::tempdir().unwrap();
    let engine = engine_with(&lb, &file_url(fresh.path()), &[]).await;
    let verified = imported(engine.clone()).await;
    let r = replay_imported(&engine, &run, &trusted, verified)
        .await
        .unwrap();
    assert!(r.consensus_reproduced);
    let mut trust = trusted.to_vec();
    trust.push(engine.key().unwrap().public());
    let report = seal_engine::verify::verify_run(
        engine.store(),
        &RunId::parse(&r.replay).unwrap(),
        &trust,
        seal_log::DEFAULT_ORIGIN,
    )
    .await
    .unwrap();
    assert!(report.verified, "{:?}", report.problems);
}

// ---------------------------------------------------------------------------------------------
// (h) a live replay interrupted (SIGINT), of --all or of named runs: a summary, the exact
// command to go on (without --again; for named runs without those done and with --resume), and
// going on pays only for what was not stored

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_live_replay_prints_how_to_go_on_and_going_on_pays_only_for_the_rest() {
    interrupted_live_replay(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_live_replay_of_named_runs_goes_on_without_paying_twice() {
    interrupted_live_replay(true).await;
}

async fn interrupted_live_replay(named: bool) {
    let (_src_dir, src) = copy_fixture_store();
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("store");
    let (_keys, key, _public) = key_pair();
    let lb = Loopback::start(Duration::from_millis(150)).await.unwrap();
    personas(&lb);
    let expected = replayable_fixtures();
    let n = expected.len();
    let mut args: Vec<&str> = vec!["--judges", "live", "--jobs", "1"];
    if named {
        args.extend(expected.iter().map(String::as_str));
    } else {
        args.extend(["--all", "--again"]);
    }

    let child = replay_cmd(work.path(), &lb, &args, Some(&src), &store, &key, false)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while replay_state(&store, &expected).1 < 2 {
        assert!(Instant::now() < deadline, "no replay decided in 120 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SIGINT, as Ctrl-C sends it.
    let pid = i32::try_from(child.id()).unwrap();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{stdout}{stderr}");
    assert!(stdout.contains("replayed "), "a summary: {stdout}");
    let resume = stderr
        .lines()
        .find_map(|l| l.strip_prefix("seal: to go on without paying again for what is stored: "))
        .unwrap_or_else(|| panic!("no resume command: {stderr}"))
        .to_string();
    assert!(resume.contains(" replay "), "{resume}");
    assert!(
        !resume.contains("--again"),
        "--again would pay for everything again: {resume}"
    );
    let decided_before: Vec<&String> = expected
        .iter()
        .filter(|s| {
            store
                .join(format!("runs/{s}.replay-1/evidence.json"))
                .is_file()
        })
        .collect();
    if named {
        assert!(resume.contains("--resume"), "{resume}");
        // Those the summary lists as replayed are not named again.
        for s in expected
            .iter()
            .filter(|s| stdout.contains(&format!("{s} -> ")))
        {
            assert!(
                !resume.contains(&format!(" {s} ")),
                "{s} is done: {resume}\n{stdout}"
            );
        }
    } else {
        assert!(resume.contains("--all"), "{resume}");
    }
    let (_, decided, _) = replay_state(&store, &expected);
    assert!(decided < n, "the interrupt came after the last replay");
    let calls_before = lb.calls().len();

    // The printed command, as the operator would paste it (same folder, same environment).
    let mut again = std::process::Command::new("sh");
    again.current_dir(work.path()).arg("-c").arg(&resume);
    for (k, v) in replay_cmd(work.path(), &lb, &[], None, &store, &key, false).get_envs() {
        match v {
            Some(v) => again.env(k, v),
            None => again.env_remove(k),
        };
    }
    let out = run(again).await;
    assert_eq!(out.status.code(), Some(0), "{}", both_text(&out));
    let stdout = text(&out.stdout);
    let skipped = stdout.matches("already replayed, skipped").count();
    // --all skips every replay decided; named runs skip those decided but still named (one
    // decided as the interrupt came, before the summary counted it).
    let named_again = decided_before
        .iter()
        .filter(|s| resume.contains(&format!(" {s} ")))
        .count();
    assert_eq!(
        skipped,
        if named { named_again } else { decided },
        "{stdout}"
    );
    let (started, all_decided, extra) = replay_state(&store, &expected);
    assert_eq!((started, all_decided), (n, n), "{stdout}");
    assert!(extra.is_empty(), "a source was replayed twice: {extra:?}");
    // Only the sources not decided before were judged: at most two calls a roll of theirs.
    let calls_after = lb.calls().len() - calls_before;
    assert!(calls_after > 0);
    let rest: usize = expected
        .iter()
        .filter(|s| !decided_before.contains(s))
        .map(|s| {
            let ev: serde_json::Value = serde_json::from_slice(
                &std::fs::read(store.join(format!("runs/{s}/evidence.json"))).unwrap(),
            )
            .unwrap();
            2 * ev["rolls"].as_array().unwrap().len()
        })
        .sum();
    // Two calls a roll of the sources not skipped (a healthy judge needs no retry): paying
    // again for a decided replay would exceed it.
    assert!(
        calls_after <= rest,
        "{calls_after} calls for at most {rest}"
    );
}

fn both_text(o: &std::process::Output) -> String {
    format!("{}{}", text(&o.stdout), text(&o.stderr))
}
