//! G2 (docs/DESIGN.md §13), with real processes: seal never signs a log that omits a run it
//! has seen or that is shorter than one it signed. A store whose log lacks a sealed run
//! (deleted, dropped, or a planted seal) stops `seal serve`, `seal judge` and every finalize,
//! until an operator runs `seal log rebuild`, which records itself as a signed leaf; `seal
//! verify` names a run relogged or replaced; and a process's first seal logs nothing untrue.

use crate::common;

use common::*;
use seal_core::tlog::Leaf;
use seal_testkit::client::{SealClient, StatusCode};
use seal_testkit::loopback::Loopback;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

const INPUT: &str = "run-narrative-0010-pass";
const STORE: &str = "file://./store";

async fn judge_service() -> Loopback {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    lb
}

/// A folder with a key pair (`keys/`), judging into `./store`.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    dir
}

fn seal_in(dir: &Path, lb: &Loopback, args: &[&str]) -> Output {
    let [key_a, key_b, salt] = DAEMON_SECRETS;
    seal_cmd_with(dir, lb, key_a, key_b, salt)
        .args(args)
        .output()
        .unwrap()
}

fn said(o: &Output) -> String {
    format!("{}{}", text(&o.stdout), text(&o.stderr))
}

/// `seal judge` of the example input under `run` into `dir/store`.
fn judge(dir: &Path, lb: &Loopback, run: &str) -> Output {
    let input = dir.join("inputs").join(run);
    renamed_copy(&example(INPUT), &input, run);
    let input = input.to_str().unwrap().to_string();
    seal_in(
        dir,
        lb,
        &[
            "judge",
            &input,
            "--store",
            STORE,
            "--key",
            "keys/seal.key.pem",
        ],
    )
}

fn judge_ok(dir: &Path, lb: &Loopback, run: &str) {
    let out = judge(dir, lb, run);
    assert!(out.status.success(), "{run}: {}", said(&out));
}

fn log_verify(dir: &Path, lb: &Loopback, extra: &[&str]) -> Output {
    let mut args = vec![
        "log",
        "verify",
        "--store",
        STORE,
        "--trust",
        "keys/seal.pub.pem",
    ];
    args.extend_from_slice(extra);
    seal_in(dir, lb, &args)
}

fn rebuild(dir: &Path, lb: &Loopback) -> Output {
    rebuild_dropping(dir, lb, &[])
}

/// Starts `seal serve` and expects it to refuse: exit code and stderr. A daemon still running
/// after the deadline started on a log it should have refused.
fn serve_refuses(dir: &Path, lb: &Loopback) -> (i32, String) {
    let [key_a, key_b, salt] = DAEMON_SECRETS;
    let err = dir.join("refused-serve.log");
    let mut child = seal_cmd_with(dir, lb, key_a, key_b, salt)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            STORE,
            "--key",
            "keys/seal.key.pem",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&err).unwrap()))
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "seal serve started on a log that hides a run: {}",
                text(&std::fs::read(&err).unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = text(&std::fs::read(&err).unwrap_or_default());
    (status.code().unwrap_or(-1), stderr)
}

fn store(dir: &Path) -> PathBuf {
    dir.join("store")
}

fn entry_count(dir: &Path) -> usize {
    std::fs::read_dir(store(dir).join("log/entries"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn leaf(dir: &Path, index: u64) -> Leaf {
    let p = store(dir).join(format!("log/entries/{index:020}"));
    Leaf::from_bytes(&std::fs::read(p).unwrap()).unwrap()
}

fn public_raw(dir: &Path) -> [u8; 32] {
    seal_fs::keys::load_public_key(&dir.join("keys/seal.pub.pem"))
        .unwrap()
        .raw()
}

/// Copies a sealed run of another store (its folder and every blob) into `to`'s store.
fn plant(from: &Path, to: &Path, run: &str) {
    copy_tree(
        &store(from).join("runs").join(run),
        &store(to).join("runs").join(run),
    );
    copy_tree(&store(from).join("cas"), &store(to).join("cas"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_run_and_log_stop_serve_verify_and_judge_until_an_explicit_rebuild() {
    let lb = judge_service().await;
    let dir = workdir();
    let d = dir.path();
    for n in 1..=4 {
        judge_ok(d, &lb, &format!("g2-run-{n}"));
    }
    let older = std::fs::read(store(d).join(format!("log/checkpoints/{:020}", 4))).unwrap();
    std::fs::write(d.join("older-checkpoint"), &older).unwrap();
    // The store writer's move: a middle run and the whole log.
    std::fs::remove_dir_all(store(d).join("runs/g2-run-2")).unwrap();
    std::fs::remove_dir_all(store(d).join("log")).unwrap();

    let (code, stderr) = serve_refuses(d, &lb);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("refusing to serve"), "{stderr}");
    assert!(stderr.contains("run_unlogged"), "{stderr}");
    assert!(stderr.contains("runs/g2-run-1"), "{stderr}");
    assert!(stderr.contains("seal log rebuild"), "{stderr}");
    assert!(!store(d).join("log").exists(), "nothing appended");

    let out = log_verify(d, &lb, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("run_unlogged"), "{}", said(&out));

    let out = judge(d, &lb, "g2-run-5");
    assert!(!out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("runs/g2-run-1"), "{}", said(&out));
    assert!(!store(d).join("runs/g2-run-5/seal.dsse.json").exists());
    assert!(!store(d).join("log").exists(), "nothing appended");

    let out = rebuild(d, &lb);
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("relogged 3 sealed runs"),
        "{}",
        said(&out)
    );
    let Leaf::Rebuild(entry) = leaf(d, 0) else {
        panic!("leaf 0 is not the rebuild entry");
    };
    entry.verify(&[public_raw(d)]).unwrap();
    assert_eq!((entry.kept_entries, entry.runs_appended), (0, 3));
    assert_eq!(entry.problem_count, 3, "{:?}", entry.problems);
    assert!(entry.problems.iter().all(|p| p.contains("run_unlogged")));
    assert_eq!(entry_count(d), 4);

    let out = log_verify(d, &lb, &[]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("rebuilt by `seal log rebuild` at leaf 0"),
        "{}",
        said(&out)
    );
    // An auditor who kept the checkpoint of four runs sees the rewrite, and why.
    let out = log_verify(d, &lb, &["--checkpoint", "older-checkpoint"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("the log was rewritten"),
        "{}",
        said(&out)
    );
    assert!(said(&out).contains("rebuilt at leaf 0"), "{}", said(&out));

    // The judge policy's registration went with the deleted log: the daemon registers it
    // again (the rebuilt log's runs name a registration it no longer holds: `seal verify`
    // says so, `judge_policy`), and the next run is judged under it.
    let daemon = spawn_daemon(d, &lb, STORE, &[]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !daemon.log_text().contains("judge policy logged") {
        assert!(Instant::now() < deadline, "{}", daemon.log_text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(daemon);
    judge_ok(d, &lb, "g2-run-5");
    assert_eq!(entry_count(d), 6);
    // Nothing is left to rebuild.
    let out = rebuild(d, &lb);
    assert!(said(&out).contains("nothing to rebuild"), "{}", said(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_sealed_run_missing_from_the_log_is_refused_and_named() {
    let lb = judge_service().await;
    let (home, other, same_key) = (workdir(), workdir(), tempfile::tempdir().unwrap());
    judge_ok(home.path(), &lb, "g2-home");
    // Sealed elsewhere by another key, and elsewhere by this very key.
    judge_ok(other.path(), &lb, "g2-other-key");
    copy_tree(&home.path().join("keys"), &same_key.path().join("keys"));
    judge_ok(same_key.path(), &lb, "g2-same-key");

    plant(other.path(), home.path(), "g2-other-key");
    let (code, stderr) = serve_refuses(home.path(), &lb);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("runs/g2-other-key"), "{stderr}");
    assert!(stderr.contains("run_unlogged"), "{stderr}");
    let out = judge(home.path(), &lb, "g2-next");
    assert!(!out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("runs/g2-other-key"), "{}", said(&out));
    // A rebuild does not launder it either: refused, nothing written.
    let out = rebuild(home.path(), &lb);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("runs/g2-other-key"), "{}", said(&out));
    // The judge policy's registration and the home run's seal.
    assert_eq!(entry_count(home.path()), 2);
    std::fs::remove_dir_all(store(home.path()).join("runs/g2-other-key")).unwrap();

    plant(same_key.path(), home.path(), "g2-same-key");
    let (code, stderr) = serve_refuses(home.path(), &lb);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("runs/g2-same-key"), "{stderr}");
    std::fs::remove_dir_all(store(home.path()).join("runs/g2-same-key")).unwrap();

    // Planted while the daemon runs (once its start-up admission is over): its finalize
    // refuses it instead of logging it.
    let daemon = spawn_daemon(home.path(), &lb, STORE, &[]);
    let c = daemon.client();
    wait_admitted(&c).await;
    plant(same_key.path(), home.path(), "g2-same-key");
    let resp = c.finalize("g2-same-key").await;
    let (status, body) = (resp.status, resp.text());
    assert!(!status.is_success(), "{status}: {body}");
    assert!(body.contains("run_unlogged"), "{body}");
    assert!(body.contains("runs/g2-same-key"), "{body}");
    assert_eq!(entry_count(home.path()), 2, "nothing appended");
}

/// Waits until the daemon's log admission, which runs after it binds, has admitted the log.
async fn wait_admitted(c: &SealClient) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let body = c.readyz().await.text();
        if body.contains("\"admitted\"") {
            return;
        }
        assert!(Instant::now() < deadline, "never admitted: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `seal verify <run> --json`: the check ids of the run's problems.
fn verify_checks(dir: &Path, lb: &Loopback, run: &str) -> Vec<String> {
    let out = verify_run_cli(dir, lb, run, &["--json"]);
    let first = text(&out.stdout);
    let report: Value = serde_json::from_str(first.lines().next().unwrap_or("")).unwrap();
    report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["check"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seal_verify_names_a_run_relogged_and_a_run_replaced() {
    let lb = judge_service().await;
    let (home, elsewhere) = (workdir(), tempfile::tempdir().unwrap());
    copy_tree(&home.path().join("keys"), &elsewhere.path().join("keys"));
    judge_ok(home.path(), &lb, "g2-relogged");
    judge_ok(home.path(), &lb, "g2-replaced");
    assert!(verify_checks(home.path(), &lb, "g2-relogged").is_empty());
    // Deleted and judged again under the same id (another second: another decision time).
    std::thread::sleep(Duration::from_millis(1100));
    // (Its judge leases and receipts too: a fresh judgement would wait for the leases to
    // expire, and a receipt vouches for the old bytes only, so new ones would be planted.)
    for gone in [
        "runs/g2-relogged",
        "leases/g2-relogged",
        "receipts/g2-relogged",
    ] {
        std::fs::remove_dir_all(store(home.path()).join(gone)).unwrap();
    }
    judge_ok(home.path(), &lb, "g2-relogged");
    let checks = verify_checks(home.path(), &lb, "g2-relogged");
    assert_eq!(checks, ["run_relogged"], "{checks:?}");
    // Swapped for the same run sealed by the same key in another store.
    judge_ok(elsewhere.path(), &lb, "g2-replaced");
    std::fs::remove_dir_all(store(home.path()).join("runs/g2-replaced")).unwrap();
    plant(elsewhere.path(), home.path(), "g2-replaced");
    let checks = verify_checks(home.path(), &lb, "g2-replaced");
    assert_eq!(checks, ["run_replaced"], "{checks:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_seal_of_a_process_says_nothing_about_a_repair() {
    let lb = judge_service().await;
    let dir = workdir();
    for run in ["g2-quiet-1", "g2-quiet-2"] {
        let out = judge(dir.path(), &lb, run);
        assert!(out.status.success(), "{}", said(&out));
        let stderr = text(&out.stderr);
        assert!(!stderr.contains("the log"), "{run}: {stderr}");
    }
    // The daemon's first finalize too.
    let daemon = spawn_daemon(dir.path(), &lb, STORE, &[]);
    let c = daemon.client();
    let folder = renamed_copy(&example(INPUT), &dir.path().join("in-3"), "g2-quiet-3");
    c.submit(&folder).await;
    c.roll(&folder, 1).await.expect_success();
    c.finalize("g2-quiet-3").await.expect(StatusCode::OK);
    assert!(
        !daemon.log_text().contains("missing from the log"),
        "{}",
        daemon.log_text()
    );
    // The judge policy's registration (once: the daemon found it) and three seals.
    assert_eq!(entry_count(dir.path()), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_moves_a_dropped_entrys_log_aside_and_keeps_the_prefix() {
    let lb = judge_service().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy_tree(&fixture_store_dir(), &store(d));
    std::fs::create_dir_all(d.join("keys")).unwrap();
    let key = d.join("keys/seal.key.pem");
    std::fs::copy(sealed_fixtures().join("keys/test-only/seal.key.pem"), &key).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    std::fs::copy(fixture_trust_pem(), d.join("keys/seal.pub.pem")).unwrap();
    let size = fixture_run_ids().len() as u64;
    let latest = format!("log/checkpoints/{size:020}");
    std::fs::copy(store(d).join(&latest), d.join("older-checkpoint")).unwrap();
    std::fs::remove_file(store(d).join("log/entries/00000000000000000003")).unwrap();
    // A tile of leaves past the prefix the rebuild keeps, not their hashes: left there, it
    // would contradict the relogged log (`seal log verify` names it), so it is moved aside.
    let in_the_way = store(d).join("log/tile/8/0/000.p/5");
    std::fs::create_dir_all(in_the_way.parent().unwrap()).unwrap();
    std::fs::write(&in_the_way, [0u8; 5 * 32]).unwrap();

    let (code, stderr) = serve_refuses(d, &lb);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("log_entries"), "{stderr}");

    // The fixture log has no tiles: the stored entries, with the missing leaf 3 tried as each
    // run the rebuild relogs, hash to the latest checkpoint's root, so leaf 3 was one of them:
    // nothing is lost, nothing to name.
    let out = rebuild(d, &lb);
    assert!(out.status.success(), "{}", said(&out));
    let Leaf::Rebuild(entry) = leaf(d, 3) else {
        panic!("leaf 3 is not the rebuild entry");
    };
    entry.verify(&[public_raw(d)]).unwrap();
    assert_eq!(entry.dropped_count, 0);
    // Entries 4.., the checkpoints above 3 and the tile moved aside; the runs of entries 3..
    // relogged.
    let moved = (size - 4) + (size - 3) + 1;
    assert_eq!(
        (entry.kept_entries, entry.moved_objects, entry.runs_appended),
        (3, moved, size - 3)
    );
    let folder = entry.superseded.clone().unwrap();
    assert!(store(d)
        .join(&folder)
        .join(format!("checkpoints/{size:020}"))
        .exists());
    assert!(store(d).join(&folder).join("tile/8/0/000.p/5").exists());
    assert_eq!(entry_count(d) as u64, size + 1);
    let out = log_verify(d, &lb, &[]);
    assert!(out.status.success(), "{}", said(&out));
    let out = log_verify(d, &lb, &["--checkpoint", "older-checkpoint"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("rebuilt at leaf 3"), "{}", said(&out));
    drop(spawn_daemon(d, &lb, STORE, &[]));
}

/// `seal verify <run> [extra…]` (`<run>` may be `--all`) with its exit code and output.
fn verify_run_cli(dir: &Path, lb: &Loopback, run: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "verify",
        run,
        "--store",
        STORE,
        "--trust",
        "keys/seal.pub.pem",
    ];
    args.extend_from_slice(extra);
    seal_in(dir, lb, &args)
}

/// One named run is verified from its own leaves: its pointer, its entry and the tiles that
/// prove it under the signed checkpoint (docs/DESIGN.md §13). So another run's entry deleted
/// behind it is not seen from it, while `seal verify --all` and `seal log verify`, which read
/// every entry, refuse the log; and without its pointer the run is read from the whole log,
/// with the whole log's verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_is_verified_from_its_own_leaves_and_every_run_from_the_whole_log() {
    let lb = judge_service().await;
    let dir = workdir();
    let d = dir.path();
    for run in ["g2-own-1", "g2-own-2", "g2-own-3"] {
        judge_ok(d, &lb, run);
    }
    let pointers = |run: &str| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(store(d).join("log/runs").join(run))
            .map(|r| r.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    };
    assert_eq!(pointers("g2-own-2").len(), 1);
    assert!(store(d).join("log/tile/8/0/000.p/3").exists());
    let out = verify_run_cli(d, &lb, "g2-own-2", &[]);
    assert!(out.status.success(), "{}", said(&out));

    let first: u64 = pointers("g2-own-1")[0]
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .unwrap();
    std::fs::remove_file(store(d).join(format!("log/entries/{first:020}"))).unwrap();
    let out = verify_run_cli(d, &lb, "g2-own-2", &[]);
    assert!(out.status.success(), "{}", said(&out));
    let all = verify_run_cli(d, &lb, "--all", &[]);
    assert_eq!(all.status.code(), Some(1), "{}", said(&all));
    assert_eq!(log_verify(d, &lb, &[]).status.code(), Some(1));

    for p in pointers("g2-own-2") {
        std::fs::remove_file(p).unwrap();
    }
    assert_eq!(verify_checks(d, &lb, "g2-own-2"), ["log_inclusion"]);
}

/// The store writer cuts the log short under a checkpoint seal signed (its newest entry and
/// that run deleted, so that no stored seal is missing from it): `seal serve` refuses before
/// it appends anything, naming the checkpoint, and so does `seal judge`. Regression: the daemon
/// trusted its own key twice (as the signer, and in the trusted keys), every checkpoint looked
/// unsigned to it, and it served on such a log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_cut_short_under_a_checkpoint_it_signed_stops_serve_and_judge() {
    let lb = judge_service().await;
    let dir = workdir();
    let d = dir.path();
    for n in 1..=3 {
        judge_ok(d, &lb, &format!("g2-cut-{n}"));
    }
    // The judge policy's leaf, then the three seals: the last one goes with its run.
    std::fs::remove_file(store(d).join(format!("log/entries/{:020}", 3))).unwrap();
    std::fs::remove_dir_all(store(d).join("runs/g2-cut-3")).unwrap();

    let (code, stderr) = serve_refuses(d, &lb);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("log_checkpoint"), "{stderr}");
    assert_eq!(entry_count(d), 3, "nothing appended");

    let out = judge(d, &lb, "g2-cut-4");
    assert!(!out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("log_checkpoint"), "{}", said(&out));
    assert_eq!(entry_count(d), 3, "nothing appended");
}

/// `log/entries/<index>` of the store in `dir`.
fn entry_path(dir: &Path, index: u64) -> PathBuf {
    store(dir).join(format!("log/entries/{index:020}"))
}

/// `log/checkpoints/<size>` of the store in `dir`.
fn checkpoint_path(dir: &Path, size: u64) -> PathBuf {
    store(dir).join(format!("log/checkpoints/{size:020}"))
}

/// A well-formed, canonical seal entry nobody signed: a ghost `pass` of a run that never was.
fn ghost_entry() -> Vec<u8> {
    seal_core::tlog::LogEntry {
        run_id: "run-ghost-0001".into(),
        evidence_sha256: "ab".repeat(32),
        seal_sha256: "cd".repeat(32),
        key_id: "ef".repeat(32),
        outcome: "pass".into(),
        decided_at: "2026-12-01T00:00:00Z".into(),
        acceptance_mode: "live".into(),
        parent_run_id: None,
    }
    .to_bytes()
    .unwrap()
}

/// Issue 44, hole 1: an entry planted at the next free index (a ghost decision, or a genuine
/// leaf copied from another index) is never adopted: `seal judge` and `seal serve` stop and
/// name it (`planted_log_entry`) before any judge is called, no checkpoint is signed over it,
/// `seal log verify` names it, and only `seal log rebuild` moves it aside, recorded in the
/// signed rebuild entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_planted_at_the_next_index_is_named_and_never_signed_over() {
    let lb = judge_service().await;
    let dir = workdir();
    let d = dir.path();
    judge_ok(d, &lb, "auth-first");
    let calls = lb.calls().len();
    // Leaf 0 registers the judge policy, leaf 1 is the run's seal; the next index is 2.
    let genuine = std::fs::read(entry_path(d, 1)).unwrap();
    for (what, bytes) in [("a ghost entry", ghost_entry()), ("leaf 1 copied", genuine)] {
        std::fs::write(entry_path(d, 2), &bytes).unwrap();
        let out = judge(d, &lb, "auth-second");
        let said_ = said(&out);
        assert!(!out.status.success(), "{what}: {said_}");
        assert!(said_.contains("planted_log_entry"), "{what}: {said_}");
        assert!(
            said_.contains("log/entries/00000000000000000002"),
            "{what}: {said_}"
        );
        assert_eq!(lb.calls().len(), calls, "{what}: no judge is paid");
        assert!(!checkpoint_path(d, 3).exists(), "{what}: signed over");
        let (code, stderr) = serve_refuses(d, &lb);
        assert_ne!(code, 0, "{what}: {stderr}");
        assert!(stderr.contains("planted_log_entry"), "{what}: {stderr}");
        let out = log_verify(d, &lb, &[]);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", said(&out));
        assert!(
            said(&out).contains("planted_log_entry"),
            "{what}: {}",
            said(&out)
        );
        assert!(!checkpoint_path(d, 3).exists(), "{what}: signed over");
    }
    // The explicit repair: the rebuild keeps leaves 0 and 1, records why, and the log goes on.
    let out = rebuild(d, &lb);
    assert!(out.status.success(), "{}", said(&out));
    let Leaf::Rebuild(entry) = leaf(d, 2) else {
        panic!("leaf 2 is not the rebuild entry");
    };
    assert_eq!((entry.kept_entries, entry.moved_objects), (2, 1));
    assert!(
        entry
            .problems
            .iter()
            .any(|p| p.contains("planted_log_entry")),
        "{:?}",
        entry.problems
    );
    judge_ok(d, &lb, "auth-second");
    let out = log_verify(d, &lb, &[]);
    assert!(out.status.success(), "{}", said(&out));
}

/// Issue 44, hole 2 and origin pinning: a deployment sharing this one's key under another log
/// origin (staging) seals a run; its run folder and its log entry copied here are planted (the
/// entry is signed for the staging log), never a verified run, and its checkpoint, signed by the
/// trusted key, is never taken as this log's head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_and_checkpoint_of_another_deployment_sharing_the_key_are_not_this_logs() {
    let lb = judge_service().await;
    let (home, staging) = (workdir(), tempfile::tempdir().unwrap());
    let (h, s) = (home.path(), staging.path());
    copy_tree(&h.join("keys"), &s.join("keys"));
    std::fs::create_dir_all(s.join("config")).unwrap();
    let embedded =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/seal.toml"))
            .unwrap();
    let staging_config = embedded.replace(
        "origin = \"seal.local/log\"",
        "origin = \"seal.staging/log\"",
    );
    assert_ne!(staging_config, embedded);
    std::fs::write(s.join("config/seal.toml"), staging_config).unwrap();
    judge_ok(s, &lb, "auth-staging");
    judge_ok(s, &lb, "auth-staging-2");
    judge_ok(h, &lb, "auth-home");

    // The staging log's larger checkpoint: the head stays this log's.
    let head = std::fs::read_to_string(checkpoint_path(h, 1)).unwrap();
    std::fs::copy(checkpoint_path(s, 2), checkpoint_path(h, 2)).unwrap();
    let out = seal_in(
        h,
        &lb,
        &[
            "log",
            "checkpoint",
            "--store",
            STORE,
            "--trust",
            "keys/seal.pub.pem",
        ],
    );
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(text(&out.stdout), head);
    let out = log_verify(h, &lb, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("seal.staging/log"), "{}", said(&out));
    std::fs::remove_file(checkpoint_path(h, 2)).unwrap();

    // The staging run and its entry, planted at this log's next index.
    plant(s, h, "auth-staging");
    std::fs::copy(entry_path(s, 0), entry_path(h, 1)).unwrap();
    judge_refuses_the_planted_leaf(h, &lb, "auth-next", 2);
    let out = verify_run_cli(h, &lb, "--all", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("auth-staging"), "{}", said(&out));
}

/// `seal judge RUN` stops at a planted leaf at the next index, no checkpoint of `size` leaves
/// is signed over it, and `seal log verify` names it.
fn judge_refuses_the_planted_leaf(d: &Path, lb: &Loopback, run: &str, size: u64) {
    let out = judge(d, lb, run);
    assert!(!out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("planted_log_entry"), "{}", said(&out));
    assert!(!checkpoint_path(d, size).exists(), "signed over");
    let out = log_verify(d, lb, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("planted_log_entry"), "{}", said(&out));
}

/// Issue 44, hole 7: `seal verify --all` covers the union of the `runs/` listing and the log:
/// a logged run whose folder was deleted fails, named (`run_missing`), instead of leaving its
/// frames as harmless warnings; `seal log verify` names it with the seal hash logged, and a
/// logged run whose seal alone was deleted (`seal_missing`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_run_folder_or_seal_fails_verify_all_and_log_verify_by_name() {
    let lb = judge_service().await;
    let dir = workdir();
    let d = dir.path();
    judge_ok(d, &lb, "gone-run");
    judge_ok(d, &lb, "gone-seal");
    let out = verify_run_cli(d, &lb, "--all", &[]);
    assert!(out.status.success(), "{}", said(&out));
    let seal_hash = seal_core::canonical::Hash::of(
        &std::fs::read(store(d).join("runs/gone-run/seal.dsse.json")).unwrap(),
    );
    std::fs::remove_dir_all(store(d).join("runs/gone-run")).unwrap();
    for pass in [false, true] {
        // Read whole (no pointers), and after a clean pass over the log by the pointers.
        if !pass {
            std::fs::rename(store(d).join("log/runs"), d.join("pointers")).unwrap();
        }
        let out = verify_run_cli(d, &lb, "--all", &[]);
        assert_eq!(out.status.code(), Some(1), "pass {pass}: {}", said(&out));
        assert!(
            said(&out).contains("run_missing"),
            "pass {pass}: {}",
            said(&out)
        );
        assert!(
            said(&out).contains("runs/gone-run"),
            "pass {pass}: {}",
            said(&out)
        );
        if !pass {
            std::fs::rename(d.join("pointers"), store(d).join("log/runs")).unwrap();
        }
    }
    let out = log_verify(d, &lb, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("runs/gone-run"), "{}", said(&out));
    assert!(said(&out).contains(seal_hash.as_str()), "{}", said(&out));

    std::fs::remove_file(store(d).join("runs/gone-seal/seal.dsse.json")).unwrap();
    let out = log_verify(d, &lb, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("seal_missing"), "{}", said(&out));
    assert!(
        said(&out).contains("runs/gone-seal/seal.dsse.json"),
        "{}",
        said(&out)
    );
}

/// Erases a run the way the recovery runbook's victim is erased: its folder, receipts,
/// leases and pointers.
fn erase_run(dir: &Path, run: &str) {
    for gone in ["runs", "receipts", "leases", "log/runs"] {
        let path = store(dir).join(gone).join(run);
        if path.exists() {
            std::fs::remove_dir_all(path).unwrap();
        }
    }
}

/// `seal log rebuild --drop …`.
fn rebuild_dropping(dir: &Path, lb: &Loopback, drops: &[&str]) -> Output {
    let mut args = vec![
        "log",
        "rebuild",
        "--store",
        STORE,
        "--key",
        "keys/seal.key.pem",
    ];
    for d in drops {
        args.extend(["--drop", d]);
    }
    seal_in(dir, lb, &args)
}

/// Issue 44, hole 6: `seal log rebuild` never launders an erased run. It lists every decision
/// the rebuilt log would lose (by run with what the log says of it, or by leaf when the entry
/// is gone), refuses until each is named with `--drop`, and records the drops in its signed
/// entry for every later auditor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_refuses_to_lose_a_decision_nobody_named_and_records_the_drops() {
    let lb = judge_service().await;
    let dir = workdir();
    let d = dir.path();
    for run in ["drop-keep-1", "drop-erased", "drop-keep-3"] {
        judge_ok(d, &lb, run);
    }
    // Leaf 0 registers the judge policy; the runs are leaves 1 to 3.
    // The runbook's erasure: the run, its entry, pointer, receipts.
    erase_run(d, "drop-erased");
    std::fs::remove_file(entry_path(d, 2)).unwrap();
    let out = rebuild(d, &lb);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("leaf:2"), "{}", said(&out));
    assert!(said(&out).contains("is missing"), "{}", said(&out));
    let out = rebuild_dropping(d, &lb, &["leaf:2", "drop-keep-1"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("--drop drop-keep-1 names nothing"),
        "{}",
        said(&out)
    );
    assert_eq!(entry_count(d), 3, "nothing written");
    let out = rebuild_dropping(d, &lb, &["leaf:2"]);
    assert!(out.status.success(), "{}", said(&out));
    let Leaf::Rebuild(entry) = leaf(d, 2) else {
        panic!("leaf 2 is not the rebuild entry");
    };
    assert_eq!(entry.dropped_count, 1);
    assert!(
        entry.dropped[0].starts_with("leaf:2: "),
        "{:?}",
        entry.dropped
    );
    entry.verify(&[public_raw(d)]).unwrap();
    assert!(log_verify(d, &lb, &[]).status.success());

    // A logged run erased while its entry stays, past an entry that is gone: named by run,
    // with the outcome and seal the log holds. The entry gone is drop-keep-3's, relogged: the
    // signed tiles tell it was that run's, so it is no loss.
    judge_ok(d, &lb, "drop-by-name");
    let Leaf::Seal(logged) = leaf(d, 4) else {
        panic!("leaf 4 is not drop-by-name's seal");
    };
    erase_run(d, "drop-by-name");
    std::fs::remove_file(entry_path(d, 3)).unwrap();
    let out = rebuild(d, &lb);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(!said(&out).contains("leaf:3"), "{}", said(&out));
    let named = format!(
        "drop-by-name: leaf 4: outcome {}, decided {}, seal sha256 {}",
        logged.outcome, logged.decided_at, logged.seal_sha256
    );
    assert!(said(&out).contains(&named), "{}", said(&out));
    let out = rebuild_dropping(d, &lb, &["drop-by-name"]);
    assert!(out.status.success(), "{}", said(&out));
    let Leaf::Rebuild(entry) = leaf(d, 3) else {
        panic!("leaf 3 is not the rebuild entry");
    };
    assert_eq!(entry.dropped_count, 1);
    assert!(entry.dropped.contains(&named), "{:?}", entry.dropped);
    assert!(log_verify(d, &lb, &[]).status.success());
    let out = verify_run_cli(d, &lb, "--all", &[]);
    assert!(out.status.success(), "{}", said(&out));
}

/// Issue 44, hole 3: the store writer does not choose the sealed `decidedAt`. A finalize
/// killed right after `evidence.json` is stored leaves it unsealed; rewritten with another
/// `decidedAt`, the retried finalize refuses it as planted (the decision's receipt, MAC'd
/// when it was committed, holds the time), and with the bytes put back it seals the time it
/// committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_writer_cannot_choose_the_sealed_decision_time() {
    let lb = judge_service().await;
    let dir = workdir();
    let d = dir.path();
    let run = "decided-at";
    let input = d.join("inputs").join(run);
    renamed_copy(&example(INPUT), &input, run);
    let input = input.to_str().unwrap().to_string();
    let [key_a, key_b, salt] = DAEMON_SECRETS;
    let args = [
        "judge",
        &input,
        "--store",
        STORE,
        "--key",
        "keys/seal.key.pem",
    ];
    let out = seal_cmd_with(d, &lb, key_a, key_b, salt)
        .env(
            "SEAL_TEST_CRASH_AFTER_WRITE",
            format!("key:runs/{run}/evidence.json"),
        )
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "not killed: {}", said(&out));
    let path = store(d).join("runs").join(run).join("evidence.json");
    let committed = std::fs::read(&path).unwrap();
    assert!(!store(d)
        .join("runs")
        .join(run)
        .join("seal.dsse.json")
        .exists());

    let mut ev: Value = serde_json::from_slice(&committed).unwrap();
    let at = ev["finalPostguard"]["decidedAt"]
        .as_str()
        .unwrap()
        .to_string();
    ev["finalPostguard"]["decidedAt"] = "2031-01-01T00:00:00Z".into();
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, seal_core::canonical::canonical_bytes(&ev).unwrap()).unwrap();
    let out = seal_in(d, &lb, &args);
    assert!(!out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("planted"), "{}", said(&out));
    assert!(said(&out).contains("evidence.json"), "{}", said(&out));
    assert!(!store(d)
        .join("runs")
        .join(run)
        .join("seal.dsse.json")
        .exists());

    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, &committed).unwrap();
    let out = seal_in(d, &lb, &args);
    assert!(out.status.success(), "{}", said(&out));
    let sealed: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(sealed["finalPostguard"]["decidedAt"], at.as_str());
    let out = verify_run_cli(d, &lb, run, &[]);
    assert!(out.status.success(), "{}", said(&out));
}

/// A leaf a rebuild moved aside is not this log's any more, even at its old index: its `auth`
/// signs the leaves that were before it, which the rebuild replaced. Put back from
/// `log/superseded/` at the next free index, it is planted, never adopted or signed over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaf_a_rebuild_moved_aside_put_back_is_planted() {
    let lb = judge_service().await;
    let dir = workdir();
    let d = dir.path();
    for run in ["old-1", "old-2", "old-3", "old-4"] {
        judge_ok(d, &lb, run);
    }
    // Leaf 0 registers the judge policy, the runs are leaves 1 to 4. Leaf 2 erased with its
    // run, run old-4 erased: the rebuild keeps leaves 0 and 1, appends its entry at 2 and
    // relogs old-3 at 3, a log shorter than the one it replaced.
    erase_run(d, "old-2");
    erase_run(d, "old-4");
    std::fs::remove_file(entry_path(d, 2)).unwrap();
    let out = rebuild_dropping(d, &lb, &["leaf:2", "old-4"]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(entry_count(d), 4);
    let Leaf::Rebuild(entry) = leaf(d, 2) else {
        panic!("leaf 2 is not the rebuild entry");
    };
    let old_leaf_4 = store(d)
        .join(entry.superseded.clone().unwrap())
        .join(format!("entries/{:020}", 4));
    std::fs::copy(&old_leaf_4, entry_path(d, 4)).unwrap();
    judge_refuses_the_planted_leaf(d, &lb, "old-5", 5);
}

/// A rebuild keeps only leaves it can prove: a forged entry below a checkpoint that the
/// stored entries no longer agree with (an unreadable one after it) is not kept and never
/// signed over, and the genuine runs it hid are relogged from the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_never_keeps_a_forged_leaf_under_a_checkpoint_it_breaks() {
    let lb = judge_service().await;
    let dir = workdir();
    let d = dir.path();
    for run in ["kept-1", "kept-2", "kept-3", "kept-4"] {
        judge_ok(d, &lb, run);
    }
    let forged = String::from_utf8(ghost_entry())
        .unwrap()
        .replace("run-ghost-0001", "forged-run");
    std::fs::remove_file(entry_path(d, 1)).unwrap();
    std::fs::write(entry_path(d, 1), forged).unwrap();
    std::fs::remove_file(entry_path(d, 2)).unwrap();
    std::fs::write(entry_path(d, 2), b"not json").unwrap();
    let out = rebuild(d, &lb);
    assert!(out.status.success(), "{}", said(&out));
    let Leaf::Rebuild(entry) = leaf(d, 1) else {
        panic!("leaf 1 is not the rebuild entry");
    };
    assert_eq!((entry.kept_entries, entry.dropped_count), (1, 0));
    for i in 0..entry_count(d) as u64 {
        let bytes = std::fs::read(entry_path(d, i)).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("forged-run"),
            "leaf {i}"
        );
    }
    assert!(log_verify(d, &lb, &[]).status.success());
    let out = verify_run_cli(d, &lb, "--all", &[]);
    assert!(out.status.success(), "{}", said(&out));
}
