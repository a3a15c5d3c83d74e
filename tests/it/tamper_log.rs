//! The tamper suite, continued: the transparency log (DESIGN §13) deleted, re-judged, rolled back, dropped and forked.

use super::tamper::*;
use super::tamper_binary::*;
use crate::common;
use common::*;
use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_core::sealing::SigningKey;
use seal_core::vocab::AuditCheck;
use seal_engine::verify;
use seal_store::Store;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

// ---- the transparency log (DESIGN §13): deleted, re-judged, rolled back, dropped, forked ----

use seal_log::LogReport;
use seal_testkit::loopback::Loopback;

/// The test-only signing key of the fixtures (copied to a 0600 file: a checkout keeps no modes).
pub(crate) fn fixture_signing_key(dir: &Path) -> SigningKey {
    let p = dir.join("fixture.key.pem");
    std::fs::write(
        &p,
        read(&sealed_fixtures().join("keys/test-only/seal.key.pem")),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    seal_fs::keys::load_signing_key(&p).unwrap()
}

fn raw_trusted() -> seal_core::tlog::LogTrust {
    seal_log::trust(seal_log::DEFAULT_ORIGIN, &trusted())
}

/// A writable copy of the whole fixture store and an engine sealing into it with the fixture
/// key; `clock` None keeps the system clock (a re-judged run gets another `decidedAt`).
async fn log_copy(lb: &Loopback) -> (tempfile::TempDir, PathBuf, seal_engine::engine::Engine) {
    let (dir, root) = copy_fixture_store();
    let key = fixture_signing_key(dir.path());
    let store = Store::open(&file_url(&root)).await.unwrap();
    let engine = seal_engine::engine::Engine::new(store, config_for(lb, &[]), Some(key)).unwrap();
    (dir, root, engine)
}

/// Judges and seals a copy of an example input run under `run` (or the input itself).
async fn seal_run(engine: &seal_engine::engine::Engine, input: &str, run: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join(run);
    copy_tree(&sealed_fixtures().join("inputs").join(input), &dst);
    let h = dst.join("header.json");
    let mut v: Value = serde_json::from_slice(&read(&h)).unwrap();
    v["runId"] = run.into();
    std::fs::write(&h, serde_json::to_vec(&v).unwrap()).unwrap();
    let folder = seal_fs::runfolder::RunFolder::read(&dst, 1 << 26).unwrap();
    seal_engine::judge_run::judge(engine, &folder)
        .await
        .unwrap();
}

async fn log_report(root: &Path, old: Option<&[u8]>) -> LogReport {
    let store = Store::open(&file_url(root)).await.unwrap();
    seal_log::verify_log(&store, &raw_trusted(), old)
        .await
        .unwrap()
}

fn latest_note(root: &Path) -> Vec<u8> {
    let dir = root.join("log/checkpoints");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    read(&dir.join(names.last().unwrap()))
}

/// Asserts the report names `check` on an object containing `object`.
fn assert_named(r: &LogReport, check: AuditCheck, object: &str) {
    assert!(!r.verified, "not verified expected: {r:?}");
    assert!(
        r.problems
            .iter()
            .any(|p| p.check == check && p.object.contains(object)),
        "expected [{check}] on {object}, got:\n{}",
        describe_problems(&r.problems)
    );
}

async fn log_judge() -> Loopback {
    let lb = Loopback::start(std::time::Duration::from_millis(1))
        .await
        .unwrap();
    personas(&lb);
    lb
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fixture_log_verifies_and_accounts_for_every_sealed_run() {
    let r = log_report(&fixture_store_dir(), None).await;
    assert!(r.verified, "{}", describe_problems(&r.problems));
    assert_eq!(r.entries as usize, fixture_run_ids().len());
    assert_eq!(r.checkpoint_size, Some(r.entries));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_deleting_a_run_is_named() {
    let (_dir, root) = copy_fixture_store();
    let old = latest_note(&root);
    std::fs::remove_dir_all(root.join("runs/run-puzzle-0013-fail-end")).unwrap();
    let r = log_report(&root, Some(&old)).await;
    assert_named(&r, AuditCheck::RunMissing, "runs/run-puzzle-0013-fail-end");
    assert_eq!(r.problems.len(), 1, "{}", describe_problems(&r.problems));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_deleting_and_rejudging_a_run_under_the_same_id_is_named() {
    let lb = log_judge().await;
    let (_dir, root, engine) = log_copy(&lb).await;
    let old = latest_note(&root);
    let run = "run-heritage-0017-disputed-font";
    std::fs::remove_dir_all(root.join("runs").join(run)).unwrap();
    seal_run(&engine, run, run).await;
    let r = log_report(&root, Some(&old)).await;
    assert_named(
        &r,
        AuditCheck::RunReplaced,
        &format!("runs/{run}/seal.dsse.json"),
    );
    assert_named(&r, AuditCheck::RunRelogged, &format!("runs/{run}"));
    assert!(r.consistency.is_some(), "the log itself stayed append-only");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_rolling_the_store_back_to_an_older_copy_is_named() {
    let lb = log_judge().await;
    let (dir, root, engine) = log_copy(&lb).await;
    let older = dir.path().join("older");
    copy_tree(&root, &older);
    seal_run(&engine, "run-narrative-0010-pass", "log-after-the-copy").await;
    let later = latest_note(&root);
    assert!(log_report(&root, None).await.verified);
    // The store is replaced by the older copy: the run sealed since is gone, log and all.
    let r = log_report(&older, Some(&later)).await;
    assert!(!r.verified && r.consistency.is_none());
    assert_named(&r, AuditCheck::LogConsistency, "--checkpoint");
    assert!(
        r.problems.iter().any(|p| p.detail.contains("rolled back")),
        "{}",
        describe_problems(&r.problems)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_dropping_a_log_entry_is_named() {
    let (_dir, root) = copy_fixture_store();
    let old = latest_note(&root);
    let entry = root.join("log/entries/00000000000000000003");
    let dropped: Value = serde_json::from_slice(&read(&entry)).unwrap();
    let run = dropped["runId"].as_str().unwrap().to_string();
    std::fs::remove_file(&entry).unwrap();
    let r = log_report(&root, Some(&old)).await;
    assert_named(
        &r,
        AuditCheck::LogEntries,
        "log/entries/00000000000000000003",
    );
    assert_named(&r, AuditCheck::RunUnlogged, &format!("runs/{run}"));
    assert_named(&r, AuditCheck::LogCheckpoint, "log/checkpoints/");
    assert_named(&r, AuditCheck::LogConsistency, "--checkpoint");
    // `seal verify` of that run no longer proves its seal in the log.
    let store = Store::open(&file_url(&root)).await.unwrap();
    let rep = verify::verify_run(
        &store,
        &RunId::parse(&run).unwrap(),
        &trusted(),
        seal_log::DEFAULT_ORIGIN,
    )
    .await
    .unwrap();
    assert!(!rep.verified);
    assert!(
        rep.problems
            .iter()
            .any(|p| p.check == AuditCheck::LogInclusion),
        "{rep:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_a_fork_two_checkpoints_of_one_size_with_different_roots_is_named() {
    let lb = log_judge().await;
    let (_a_dir, a_root, a) = log_copy(&lb).await;
    let (_b_dir, b_root, b) = log_copy(&lb).await;
    seal_run(&a, "run-narrative-0010-pass", "fork-left").await;
    seal_run(&b, "run-narrative-0010-pass", "fork-right").await;
    let left = latest_note(&a_root);
    // Each copy is self-consistent; only a checkpoint from the other side shows the fork.
    assert!(log_report(&b_root, None).await.verified);
    let r = log_report(&b_root, Some(&left)).await;
    assert_named(&r, AuditCheck::LogFork, "--checkpoint");
}

#[test]
fn verify_all_streams_ndjson_in_run_order_whatever_the_jobs() {
    let (dir, root) = copy_fixture_store();
    let key = "runs/run-trpg-0021-pass/roll-1/judge-b/attempt-1/raw.json";
    apply(&root, "run-trpg-0021-pass", &Apply::Flip(key.into()));
    let mut outputs = Vec::new();
    for jobs in ["1", "3", "8"] {
        let (code, out, err) =
            seal_verify(dir.path(), &root, &["--all"], &["--json", "--jobs", jobs]);
        assert_eq!(code, Some(1), "--jobs {jobs}: {out}{err}");
        outputs.push(out);
    }
    // The same bytes at any --jobs: one report a run in run-id order, then the summary.
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
    let lines: Vec<Value> = outputs[0]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not NDJSON ({e}): {l}")))
        .collect();
    let (summary, runs) = lines.split_last().unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r["runId"].as_str().unwrap()).collect();
    let mut want = fixture_run_ids();
    want.sort();
    assert_eq!(ids, want);
    assert_eq!(summary["runs"], want.len());
    assert_eq!(summary["notVerified"], 1);
    assert_eq!(summary["verified"], want.len() - 1);
    let bad = runs.iter().find(|r| r["verified"] == false).unwrap();
    assert_eq!(bad["runId"], "run-trpg-0021-pass");
    assert!(bad["problems"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["object"] == key));
}

/// `seal verify --all` takes the `cas/` objects a verified run's evidence binds from its
/// verification instead of reading the run's folder again for the crash-leftover scan: its
/// warnings are still exactly `seal gc --dry-run`'s. A `cas/` object nobody names is the one
/// warning, whether every run verifies or one is damaged (that one is looked into as the scan
/// does). Were the bound objects not handed over, every frame and answer of the fixture runs
/// would be listed.
#[test]
fn verify_all_warns_of_exactly_the_leftovers_gc_lists() {
    let (dir, root) = copy_fixture_store();
    let planted = Hash::of(b"a frame no proof package names");
    let hex = planted.to_string();
    let key = format!("cas/sha256/{}/{hex}", &hex[..2]);
    std::fs::create_dir_all(root.join(format!("cas/sha256/{}", &hex[..2]))).unwrap();
    std::fs::write(root.join(&key), b"a frame no proof package names").unwrap();
    let gc = || {
        let out = Command::new(env!("CARGO_BIN_EXE_seal"))
            .current_dir(dir.path())
            .args(["gc", "--dry-run", "--json", "--store", &file_url(&root)])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["orphans"].clone()
    };
    let warned = |expect: i32| {
        let (code, out, err) = seal_verify(dir.path(), &root, &["--all"], &["--json"]);
        assert_eq!(code, Some(expect), "{out}{err}");
        let v: Value = serde_json::from_str(out.lines().last().unwrap_or_default()).unwrap();
        v["warnings"].clone()
    };
    let listed = gc();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["warning"], "unreferenced_cas");
    assert_eq!(listed[0]["object"], key.as_str());
    assert_eq!(warned(0), listed);
    // One run damaged: it is not verified, and its folder is read by the scan instead.
    let raw = "runs/run-trpg-0021-pass/roll-1/judge-b/attempt-1/raw.json";
    apply(&root, "run-trpg-0021-pass", &Apply::Flip(raw.into()));
    assert_eq!(warned(1), gc());
}
