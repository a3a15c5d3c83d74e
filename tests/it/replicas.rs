//! Many replicas, one bill (docs/DESIGN.md §15): real `seal serve` processes on one store, a
//! loopback judge that counts its calls. The same roll posted to one daemon twice at once, or
//! to three replicas at once, calls each judge once per attempt; a lease holder killed with
//! SIGKILL mid-call is taken over after its lease expires (one more call at most) and the run
//! seals once; 300 runs over three replicas on S3 with every roll sent to two of them cost
//! exactly 2 judge calls per roll, and every run is logged once in one consistent log.
//! (Finalize sent to all three replicas at once: one seal, the same answer everywhere.)

use crate::common;

use common::*;
use futures::StreamExt;
use seal_fs::runfolder::RunFolder;
use seal_testkit::client::{Method, SealClient, StatusCode};
use seal_testkit::loopback::Loopback;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Judge calls per session id (one session per run, roll and slot).
fn calls_per_session(lb: &Loopback) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for c in lb.calls() {
        *m.entry(c.session.unwrap_or_default()).or_default() += 1;
    }
    m
}

/// `n` copies of the pass example under fresh run ids.
fn runs(dir: &Path, prefix: &str, n: usize) -> Vec<RunFolder> {
    let src = example("run-narrative-0010-pass");
    (0..n)
        .map(|i| {
            renamed_copy(
                &src,
                &dir.join(format!("in/{prefix}{i}")),
                &format!("{prefix}{i:03}"),
            )
        })
        .collect()
}

/// The fields every replica must agree on for one roll.
fn roll_result(v: &Value) -> (Value, Value, Value) {
    (
        v["rollOutcome"].clone(),
        v["consensusHash"].clone(),
        v["costRmb"].clone(),
    )
}

/// `config/seal.toml` in `dir`: the embedded default with short leases, so that a takeover
/// happens within seconds.
fn short_lease_config(dir: &Path) {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/seal.toml"))
            .unwrap()
            .replace("margin_ms = 5000", "margin_ms = 500")
            .replace("max_clock_skew_ms = 10000", "max_clock_skew_ms = 500");
    assert!(text.contains("margin_ms = 500\n"));
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(dir.join("config/seal.toml"), text).unwrap();
}

/// The lease objects the store holds for a run (file store).
fn lease_files(store: &Path, run: &str) -> Vec<String> {
    let mut out = Vec::new();
    let root = store.join("leases").join(run);
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_daemon_same_roll_twice_at_once_calls_each_judge_once() {
    let lb = Loopback::start(Duration::from_millis(300)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let d = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let c = d.client();
    let f = &runs(dir.path(), "twice-", 1)[0];
    c.submit(f).await;
    let (r1, r2) = tokio::join!(c.roll(f, 1), c.roll(f, 1));
    let ((s1, b1), (s2, b2)) = (r1.status_json(), r2.status_json());
    assert_eq!((s1, s2), (StatusCode::OK, StatusCode::OK), "{b1} {b2}");
    assert_eq!(roll_result(&b1), roll_result(&b2));
    assert_eq!(lb.calls().len(), 2, "one call per judge");
    // One lease per slot's attempt, held by this daemon.
    assert_eq!(
        lease_files(&dir.path().join("store"), f.run().as_str()),
        [
            "roll-1/judge-a/attempt-1/000000",
            "roll-1/judge-b/attempt-1/000000"
        ]
    );
}

/// Three replicas on `store`, the same roll posted to all three at once, five runs: each
/// slot's judge is called once per run, and the three answers agree.
async fn three_replicas_one_call(store: &str, dir: &Path) {
    let lb = Loopback::start(Duration::from_millis(400)).await.unwrap();
    personas(&lb);
    keygen(dir);
    let replicas: Vec<Daemon> = (0..3).map(|_| spawn_daemon(dir, &lb, store, &[])).collect();
    let clients: Vec<SealClient> = replicas.iter().map(Daemon::client).collect();
    let folders = runs(dir, "fan-", 5);
    for f in &folders {
        clients[0].submit(f).await;
    }
    for f in &folders {
        let answers: Vec<_> = futures::future::join_all(clients.iter().map(|c| c.roll(f, 1)))
            .await
            .iter()
            .map(|r| r.status_json())
            .collect();
        for (s, b) in &answers {
            assert_eq!(*s, StatusCode::OK, "{b}");
            assert_eq!(roll_result(b), roll_result(&answers[0].1), "{b}");
        }
    }
    let per_session = calls_per_session(&lb);
    assert_eq!(per_session.len(), 2 * folders.len(), "{per_session:?}");
    assert!(per_session.values().all(|&n| n == 1), "{per_session:?}");
    // Finalize sent to all three at once: one seal, the same answer, and it verifies.
    for f in &folders {
        let answers = futures::future::join_all(clients.iter().map(|c| c.finalize(f.run()))).await;
        let mut seals = Vec::new();
        for a in answers {
            let v = a.expect(StatusCode::OK).json();
            seals.push(v["sealSha256"].clone());
        }
        assert!(
            seals.iter().all(|s| s == &seals[0] && s.is_string()),
            "{seals:?}"
        );
        let v = clients[1].verify(f.run()).await.json();
        assert_eq!(v["verified"], true, "{v}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_on_a_file_store_call_each_judge_once_per_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_url(&dir.path().join("store"));
    three_replicas_one_call(&store, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_on_s3_call_each_judge_once_per_attempt() {
    let Some(url) = s3_url_or_skip("three_replicas_on_s3") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    three_replicas_one_call(&url, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_of_the_lease_holder_mid_call_is_taken_over_once() {
    // Judges answer in 2.5 s, the slot timeout is 4 s, leases live 4 + 0.5 s and are taken
    // over 0.5 s (the skew bound) after that.
    let lb = Loopback::start(Duration::from_millis(2500)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    short_lease_config(dir.path());
    let env = [("SEAL_JUDGE_TIMEOUT_MS", "4000")];
    let mut holder = spawn_daemon(dir.path(), &lb, "file://./store", &env);
    let other = spawn_daemon(dir.path(), &lb, "file://./store", &env);
    let (to_holder, to_other) = (holder.client(), other.client());
    let f = std::sync::Arc::new(runs(dir.path(), "takeover-", 1).remove(0));
    to_holder.submit(&f).await;
    // Raw: the holder is killed mid-call, and the broken connection is what is checked.
    let first = tokio::spawn(
        to_holder
            .raw(Method::POST, &format!("/v1/runs/{}/rolls/1", f.run()))
            .body(f.rolls()[0].canonical().to_vec())
            .send(),
    );
    // Both judges are answering the holder: now the other replica gets the same roll.
    while lb.calls().len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let t0 = Instant::now();
    let second = tokio::spawn({
        let (c, f) = (to_other.clone(), f.clone());
        async move { c.roll(&f, 1).await.status_json() }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(lb.calls().len(), 2, "a live lease is not called again");
    holder.kill_9();
    assert!(
        first.await.unwrap().is_err(),
        "the killed replica answered nothing"
    );
    let (status, body) = second.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let waited = t0.elapsed();
    // One more call per slot for that attempt, after the lease expired, never before.
    let per_session = calls_per_session(&lb);
    assert_eq!(per_session.len(), 2, "{per_session:?}");
    assert!(per_session.values().all(|&n| n == 2), "{per_session:?}");
    assert!(
        waited >= Duration::from_millis(2500),
        "took over after {waited:?}"
    );
    assert_eq!(
        lease_files(&dir.path().join("store"), f.run().as_str()),
        [
            "roll-1/judge-a/attempt-1/000000",
            "roll-1/judge-a/attempt-1/000001",
            "roll-1/judge-b/attempt-1/000000",
            "roll-1/judge-b/attempt-1/000001"
        ]
    );
    // The run seals once and verifies.
    to_other.finalize(f.run()).await.expect(StatusCode::OK);
    let v = to_other.verify(f.run()).await.json();
    assert_eq!(v["verified"], true, "{v}");
    assert!(other
        .log_text()
        .contains("another replica is calling this judge"));
    // The wait is on the other replica's /metrics: per slot, as long as the lease lived.
    let m = to_other.metrics().await.text();
    for slot in ["a", "b"] {
        let series = |what: &str| -> f64 {
            let name = format!("seal_judge_lease_wait_seconds_{what}{{slot=\"{slot}\"}} ");
            m.lines()
                .find_map(|l| l.strip_prefix(&name))
                .unwrap_or_else(|| panic!("no {name} in {m}"))
                .parse()
                .unwrap()
        };
        assert!(series("count") >= 1.0, "{m}");
        assert!(series("sum") >= 2.0, "{m}");
    }
}

/// Header, brief and play-spec on one replica, roll 1 sent to two replicas at once (which
/// must agree), finalize on the second. (Racing finalizers: `three_replicas_one_call` and
/// tests/it/serve.rs.)
async fn drive_on_two(c: [&SealClient; 2], f: &RunFolder) -> Value {
    c[0].put_documents(f).await;
    let (a, b) = tokio::join!(c[0].roll(f, 1), c[1].roll(f, 1));
    let (a, b) = (a.status_json(), b.status_json());
    assert_eq!(
        (a.0, b.0),
        (StatusCode::OK, StatusCode::OK),
        "{} {}",
        a.1,
        b.1
    );
    assert_eq!(roll_result(&a.1), roll_result(&b.1));
    c[1].finalize(f.run()).await.expect(StatusCode::OK).json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_300_runs_every_roll_sent_twice_cost_two_calls_per_roll() {
    let Some(url) = s3_url_or_skip("replicas_300") else {
        return;
    };
    const RUNS: usize = 300;
    let lb = Loopback::start(Duration::from_millis(20)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let replicas: Vec<Daemon> = (0..3)
        .map(|_| spawn_daemon(dir.path(), &lb, &url, &[]))
        .collect();
    let clients: Vec<SealClient> = replicas
        .iter()
        .map(|d| d.client().with_timeout(Duration::from_secs(120)))
        .collect();
    let folders = runs(dir.path(), "r300-", RUNS);
    // The runs share their frames: uploaded once.
    clients[0].put_blobs(&folders[0]).await;
    let t0 = Instant::now();
    let results: Vec<Value> = futures::stream::iter(folders.iter().enumerate().map(|(i, f)| {
        let pair = [&clients[i % 3], &clients[(i + 1) % 3]];
        async move { drive_on_two(pair, f).await }
    }))
    .buffer_unordered(24)
    .collect()
    .await;
    eprintln!(
        "3 replicas, {RUNS} runs, every roll sent to two: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(results.len(), RUNS);
    let rolls = RUNS; // the pass example decides on roll 1
    assert_eq!(lb.calls().len(), 2 * rolls, "judge calls = 2 × rolls");
    assert!(calls_per_session(&lb).values().all(|&n| n == 1));
    // One consistent log: every run once, every run proven.
    let store = seal_store::Store::open(&url).await.unwrap();
    let pem = seal_fs::keys::load_public_key(&dir.path().join("keys/seal.pub.pem")).unwrap();
    let trust = seal_log::trust(seal_log::DEFAULT_ORIGIN, &[pem]);
    let report = seal_log::verify_log(&store, &trust, None).await.unwrap();
    assert!(report.verified, "{:?}", report.problems);
    // The judge policy's registration (once, whichever replica won the create), then the runs.
    assert_eq!(
        (report.entries, report.runs_logged),
        (RUNS as u64 + 1, RUNS)
    );
    assert_eq!(report.checkpoint_size, Some(RUNS as u64 + 1));
    let view = seal_engine::verify::load_log(&store, &trust, seal_engine::verify::Scope::All)
        .await
        .unwrap();
    for f in &folders {
        assert_eq!(view.seal_leaves(f.run().as_str()).len(), 1, "{}", f.run());
    }
    let p = clients[2].log_proof("r300-007").await.json();
    assert_eq!(p["treeSize"], RUNS as u64 + 1, "{p}");
}
