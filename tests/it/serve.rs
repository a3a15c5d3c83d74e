//! `seal serve`: the HTTP API in process (every route, bad input, bounds) and the real binary
//! (kill -9 and resubmit, SIGTERM, replicas on one S3 bucket).

use crate::common;

use common::*;
use seal_fs::runfolder::RunFolder;
use seal_testkit::client::{Method, Reply, SealClient, StatusCode};
use seal_testkit::loopback::{Fault, Loopback};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

/// The pipeline worker's loop for one run: rolls until `next` is finalize, then finalize.
async fn drive(c: &SealClient, folder: &RunFolder) -> Value {
    c.submit(folder).await;
    let mut n = 1;
    loop {
        let body = c.roll(folder, n).await.expect(StatusCode::OK).json();
        if body["next"] == "roll-2" && folder.rolls().len() > n {
            n += 1;
            continue;
        }
        break;
    }
    c.finalize(folder.run()).await.expect(StatusCode::OK).json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn example_runs_go_through_the_api_to_verified_seals() {
    let lb = Loopback::start(Duration::from_millis(2)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(&lb, &format!("file://{}", dir.path().display()), &[]).await;
    let (base, _stop) = start(engine).await;
    let c = SealClient::new(base);
    for (name, outcome) in [
        ("run-narrative-0010-pass", "pass"),
        ("run-puzzle-0013-fail-end", "fail"),
        ("run-heritage-0017-disputed-font", "pass"),
    ] {
        let folder = RunFolder::read(&example(name), 1 << 26).unwrap();
        let done = drive(&c, &folder).await;
        assert_eq!(done["outcome"], outcome, "{name}: {done}");
        let v = c.verify(name).await.json();
        assert_eq!(v["verified"], true, "{v}");
        // Explain: the JSON tree, or the page for a browser.
        let tree = c.explain(name).await.json();
        assert_eq!(tree["schemaVersion"], "seal.decision-tree/1", "{tree}");
        assert_eq!(tree["observed"]["outcome"], outcome);
        let page = c
            .send(
                c.raw(Method::GET, &format!("/v1/runs/{name}/explain"))
                    .header("accept", "text/html,application/xhtml+xml"),
            )
            .await
            .expect(StatusCode::OK);
        assert!(page
            .header("content-type")
            .unwrap()
            .starts_with("text/html"));
        assert!(page
            .header("content-security-policy")
            .unwrap()
            .contains("default-src 'none'"));
        assert!(page.text().contains("<svg"));
        let s = c.run_state(name).await.json();
        assert_eq!(s["phase"], "DECIDED");
        // Finalize again: the same answer.
        let again = c.finalize(name).await.json();
        assert_eq!(again["evidenceSha256"], done["evidenceSha256"]);
    }
    c.explain("run-nope").await.expect(StatusCode::NOT_FOUND);
    c.healthz().await.expect(StatusCode::OK);
    // Stats over the three decided runs: JSON (seal.stats/1), the page, a bad query.
    let stats = c.stats("").await.json();
    assert_eq!(stats["schemaVersion"], "seal.stats/1", "{stats}");
    assert_eq!(stats["runs"]["used"], 3, "{stats}");
    assert_eq!(stats["outcomes"]["outcome"]["pass"], 2, "{stats}");
    let narrow = c.stats("genre=puzzle").await.json();
    assert_eq!(narrow["runs"]["used"], 1, "{narrow}");
    let page = c
        .send(
            c.raw(Method::GET, "/v1/stats")
                .header("accept", "text/html"),
        )
        .await;
    assert!(page
        .header("content-security-policy")
        .unwrap()
        .contains("default-src 'none'"));
    assert!(page.text().contains("<svg"));
    c.stats("since=yesterday")
        .await
        .expect(StatusCode::BAD_REQUEST);
    let metrics = c.metrics().await.text();
    for needle in [
        "seal_rolls_total{outcome=\"pass\"}",
        "seal_judge_latency_seconds_bucket{slot=\"a\"",
        "seal_judge_attempts_total",
        "seal_judge_cost_rmb_total",
        "seal_runs_decided_total",
        "seal_consensus_obligations_total{status=\"satisfied\"}",
        "seal_rolls_by_id_total{roll=\"roll-1\"}",
        "seal_store_fsyncs_total{kind=\"syncfs\"}",
        "seal_store_objects_created_total",
    ] {
        assert!(
            metrics.contains(needle),
            "{needle} missing from /metrics:\n{metrics}"
        );
    }
}

fn error_of(r: Reply) -> (StatusCode, Value) {
    let (s, v) = r.status_json();
    assert!(
        v["error"]["code"].is_string() && v["error"]["message"].is_string(),
        "error body must be {{error:{{code,message,object}}}}: {v}"
    );
    (s, v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_error_and_loses_nothing() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let engine = engine_edited(&lb, &[], &|t| {
        t.replace(
            "max_document_bytes = 67108864",
            "max_document_bytes = 200000",
        )
    })
    .await;
    let store = engine.store().clone();
    let (base, _stop) = start(engine).await;
    let c = SealClient::new(base);
    let folder = RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    let run = folder.run().to_string();

    // Malformed and hostile documents.
    let (s, v) = error_of(c.put_header(&run, "{not json").await);
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("bad_json"))
    );
    let (s, v) = error_of(
        c.put_header(
            &run,
            r#"{"schemaVersion":"playtest/3","outcome":"fail","outcome":"pass"}"#,
        )
        .await,
    );
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("duplicate key"));
    let (s, _) = error_of(
        c.put_header("other-run", folder.header_bytes().to_vec())
            .await,
    );
    assert_eq!(
        s,
        StatusCode::UNPROCESSABLE_ENTITY,
        "runId must match the path"
    );
    let (s, v) = error_of(
        c.put_header("..%2F..%2Fetc", folder.header_bytes().to_vec())
            .await,
    );
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let mut invalid: Value = serde_json::from_slice(folder.header_bytes()).unwrap();
    invalid["genre"] = "shooter".into();
    let (s, v) = error_of(
        c.put_header(&run, serde_json::to_vec(&invalid).unwrap())
            .await,
    );
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("/genre"),
        "{v}"
    );
    let big = vec![b' '; 300_000];
    c.put_header(&run, big)
        .await
        .expect(StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        store.list("runs").await.unwrap().keys.is_empty(),
        "nothing stored so far"
    );

    // A blob whose bytes are not its name.
    let (hash, path) = &folder.blobs()[0];
    let (s, v) = error_of(
        c.put_blob(
            seal_core::canonical::Hash::of(b"other"),
            std::fs::read(path).unwrap(),
        )
        .await,
    );
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("hash_mismatch"))
    );
    let (s, _) = error_of(c.put_blob("NOTHEX", "x").await);
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(store.list("cas").await.unwrap().keys.is_empty());
    assert!(store.list("tmp").await.unwrap().keys.is_empty());

    // Idempotent header; other bytes conflict.
    c.put_header(&run, folder.header_bytes().to_vec())
        .await
        .expect(StatusCode::CREATED);
    c.put_header(&run, folder.header_bytes().to_vec())
        .await
        .expect(StatusCode::OK);
    let mut other: Value = serde_json::from_slice(folder.header_bytes()).unwrap();
    other["gameId"] = "game-other".into();
    let (s, v) = error_of(
        c.put_header(&run, serde_json::to_vec(&other).unwrap())
            .await,
    );
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("conflict"))
    );

    // A brief that is not the header's.
    let (s, v) = error_of(c.put_brief(&run, "another brief").await);
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("mismatch"))
    );
    c.put_brief(&run, folder.brief().to_vec()).await;

    // Rolls: bad number, roll 2 first, missing blobs named.
    let proof = folder.rolls()[0].canonical();
    let (s, _) = error_of(c.post_roll(&run, 3, proof.clone()).await);
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, v) = error_of(c.post_roll(&run, 1, proof.clone()).await);
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("missing_blobs"))
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains(hash.as_str())
            || folder
                .blobs()
                .iter()
                .any(|(h, _)| v["error"]["message"].as_str().unwrap().contains(h.as_str())),
        "{v}"
    );
    assert!(lb.calls().is_empty(), "no judge called for a refused roll");
    let mut roll2: Value = serde_json::from_slice(proof).unwrap();
    roll2["rollId"] = "roll-2".into();
    let (s, v) = error_of(
        c.post_roll(&run, 2, serde_json::to_vec(&roll2).unwrap())
            .await,
    );
    assert_eq!(s, StatusCode::CONFLICT, "{v}");

    // Finalize before any roll; unknown run; unknown route.
    let (s, v) = error_of(c.finalize(&run).await);
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("no_rolls"))
    );
    let (s, _) = error_of(c.run_state("nope").await);
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = error_of(c.get("/v2/whatever").await);
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bearer_token_is_required_when_configured() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let engine = engine_edited(&lb, &[("SEAL_API_TOKEN", "tok-very-secret")], &|t| t).await;
    let (base, _stop) = start(engine).await;
    let c = SealClient::new(&base);
    let (s, _) = error_of(c.run_state("x").await);
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let wrong = SealClient::new(&base).with_token("tok-very-secreT");
    let (s, _) = error_of(wrong.run_state("x").await);
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let authorized = SealClient::new(&base).with_token("tok-very-secret");
    assert_eq!(
        authorized.run_state("x").await.status,
        StatusCode::NOT_FOUND,
        "authorized: the run is just unknown"
    );
    assert_eq!(
        c.healthz().await.status,
        StatusCode::OK,
        "health needs no token"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn past_the_queue_bound_the_api_answers_429() {
    let lb = Loopback::start(Duration::from_millis(800)).await.unwrap();
    personas(&lb);
    let engine = engine_edited(&lb, &[], &|t| {
        t.replace("max_rolls_in_progress = 64", "max_rolls_in_progress = 1")
            .replace("queue_bound = 256", "queue_bound = 1")
    })
    .await;
    let (base, _stop) = start(engine).await;
    let c = SealClient::new(base);
    let mut folders = Vec::new();
    for i in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let f = renamed_copy(
            &example("run-narrative-0010-pass"),
            dir.path(),
            &format!("busy-{i}"),
        );
        c.submit(&f).await;
        folders.push((dir, f));
    }
    let mut tasks = Vec::new();
    for (i, (_, f)) in folders.iter().enumerate() {
        let (c, f) = (c.clone(), RunFolder::read(f.dir(), 1 << 26).unwrap());
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100 * i as u64)).await;
            let r = c.roll(&f, 1).await;
            (
                r.status,
                r.headers
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap().to_string()),
            )
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    let ok = statuses
        .iter()
        .filter(|(s, _)| *s == StatusCode::OK)
        .count();
    let busy: Vec<_> = statuses
        .iter()
        .filter(|(s, _)| *s == StatusCode::TOO_MANY_REQUESTS)
        .collect();
    assert_eq!((ok, busy.len()), (2, 1), "{statuses:?}");
    assert!(busy[0].1.is_some(), "429 carries Retry-After");
}

// ---- the real binary ----

fn count_session(lb: &Loopback, model: &str) -> usize {
    lb.calls().iter().filter(|c| c.model == model).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_mid_judging_then_resubmit_seals_once_without_paying_twice() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    // Judge A answers at once; judge B is still answering when the daemon is killed.
    lb.script(MODEL_B, [Fault::Delay(Duration::from_secs(30))]);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let store = "file://./store";
    let folder = RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    let daemon = spawn_daemon(dir.path(), &lb, store, &[]);
    let c = daemon.client();
    c.submit(&folder).await;
    let proof = folder.rolls()[0].canonical();
    // Raw: the connection is expected to die with the daemon, which the typed client panics on.
    let pending = c
        .raw(Method::POST, &format!("/v1/runs/{}/rolls/1", folder.run()))
        .body(proof.clone())
        .send();
    let pending = tokio::spawn(pending);
    // Judge A's attempt is complete once its meta is stored (after raw.json): killing between
    // the two would leave an attempt seal refuses to resume (docs/DECISIONS.md, "Authenticated resume with the meta as commit point").
    let meta_a = dir
        .path()
        .join("store/runs/run-narrative-0010-pass/roll-1/judge-a/attempt-1/meta.json");
    let t0 = Instant::now();
    while !(meta_a.exists() && count_session(&lb, MODEL_B) == 1) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "judges never got going"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // kill -9 while judge B is mid-answer.
    let mut daemon = daemon;
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    assert!(
        pending.await.unwrap().is_err(),
        "the connection died with the daemon"
    );
    assert!(!dir
        .path()
        .join("store/runs/run-narrative-0010-pass/roll-1/judge-b/attempt-1/raw.json")
        .exists());

    // Restart, resubmit: the roll completes.
    let daemon = spawn_daemon(dir.path(), &lb, store, &[]);
    let c = daemon.client();
    let body = c.roll(&folder, 1).await.expect(StatusCode::OK).json();
    assert_eq!(body["rollOutcome"], "pass", "{body}");
    assert_eq!(
        count_session(&lb, MODEL_A),
        1,
        "judge A's stored answer is not bought again"
    );
    assert_eq!(
        count_session(&lb, MODEL_B),
        2,
        "judge B had no stored answer: asked again"
    );
    // Finalize twice: sealed once.
    let f1 = c.finalize(folder.run()).await.json();
    let f2 = c.finalize(folder.run()).await.json();
    assert_eq!(f1["outcome"], "pass");
    assert_eq!(f1["evidenceSha256"], f2["evidenceSha256"]);
    let v = c.verify(folder.run()).await.json();
    assert_eq!(v["verified"], true, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_finishes_in_flight_work_then_exits_0() {
    let lb = Loopback::start(Duration::from_millis(1500)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let folder = RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    let mut daemon = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let c = daemon.client();
    c.submit(&folder).await;
    let pending = tokio::spawn({
        let (c, folder) = (c.clone(), folder.clone());
        async move { c.roll(&folder, 1).await.status }
    });
    while lb.calls().len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = daemon.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    tokio::time::sleep(Duration::from_millis(200)).await;
    // New connections are refused while in-flight work finishes (raw: a short timeout, and the
    // failure is the point).
    assert!(c
        .raw(Method::GET, "/healthz")
        .timeout(Duration::from_millis(500))
        .send()
        .await
        .is_err());
    assert_eq!(
        pending.await.unwrap(),
        StatusCode::OK,
        "in-flight roll completes"
    );
    let status = tokio::task::spawn_blocking(move || daemon.child.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_on_one_s3_bucket_seal_each_run_once() {
    let Some(url) = s3_url_or_skip("two_replicas_on_one_s3_bucket") else {
        return;
    };
    let lb = Loopback::start(Duration::from_millis(5)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let mut r1 = spawn_daemon(dir.path(), &lb, &url, &[]);
    let r2 = spawn_daemon(dir.path(), &lb, &url, &[]);
    let (c1, c2) = (r1.client(), r2.client());
    // Runs spread across both replicas.
    let mut folders = Vec::new();
    for i in 0..4 {
        let d = tempfile::tempdir().unwrap();
        let f = renamed_copy(
            &example("run-narrative-0010-pass"),
            d.path(),
            &format!("replica-run-{i}"),
        );
        folders.push((d, f));
    }
    for (i, (_, f)) in folders.iter().enumerate() {
        let c = if i % 2 == 0 { &c1 } else { &c2 };
        c.submit(f).await;
        c.roll(f, 1).await.expect(StatusCode::OK);
    }
    // Finalize of each run sent to both replicas at once: one seal, both answer the same.
    for (_, f) in &folders {
        let (a, b) = tokio::join!(c1.finalize(f.run()), c2.finalize(f.run()));
        let (a, b) = (a.json(), b.json());
        assert_eq!(a["evidenceSha256"], b["evidenceSha256"], "{a} {b}");
        assert_eq!(a["sealSha256"], b["sealSha256"]);
        let v = c2.verify(f.run()).await.json();
        assert_eq!(v["verified"], true, "{v}");
    }
    // No secret in either replica's logs.
    r1.kill_9();
    let logs = r1.log_text();
    assert!(logs.contains("seal serve listening"));
    for secret in DAEMON_SECRETS {
        assert!(!logs.contains(secret), "a log line contains {secret}");
    }
    drop(r2);
}
