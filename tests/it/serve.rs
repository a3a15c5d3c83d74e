//! `seal serve`: the HTTP API in process (every route, bad input, bounds) and the real binary
//! (kill -9 and resubmit, SIGTERM, replicas on one S3 bucket).

use crate::common;

use common::*;
use reqwest::StatusCode;
use seal_fs::runfolder::RunFolder;
use seal_testkit::loopback::{Fault, Loopback};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

/// The pipeline worker's loop for one run: rolls until `next` is finalize, then finalize.
async fn drive(c: &reqwest::Client, base: &str, folder: &RunFolder) -> Value {
    submit(c, base, folder).await;
    let mut n = 1;
    loop {
        let (status, body) = post_roll(c, base, folder, n).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["next"] == "roll-2" && folder.rolls().len() > n {
            n += 1;
            continue;
        }
        break;
    }
    let r = c
        .post(format!("{base}/v1/runs/{}/finalize", folder.run()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn example_runs_go_through_the_api_to_verified_seals() {
    let lb = Loopback::start(Duration::from_millis(2)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(&lb, &format!("file://{}", dir.path().display()), &[]).await;
    let (base, _stop) = start(engine).await;
    let c = http();
    for (name, outcome) in [
        ("run-narrative-0010-pass", "pass"),
        ("run-puzzle-0013-fail-end", "fail"),
        ("run-heritage-0017-disputed-font", "pass"),
    ] {
        let folder = RunFolder::read(&example(name), 1 << 26).unwrap();
        let done = drive(&c, &base, &folder).await;
        assert_eq!(done["outcome"], outcome, "{name}: {done}");
        let v: Value = c
            .get(format!("{base}/v1/runs/{name}/verify"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(v["verified"], true, "{v}");
        // Explain: the JSON tree, or the page for a browser.
        let tree: Value = c
            .get(format!("{base}/v1/runs/{name}/explain"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(tree["schemaVersion"], "seal.decision-tree/1", "{tree}");
        assert_eq!(tree["observed"]["outcome"], outcome);
        let page = c
            .get(format!("{base}/v1/runs/{name}/explain"))
            .header("accept", "text/html,application/xhtml+xml")
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), StatusCode::OK);
        assert!(page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
        assert!(page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'none'"));
        assert!(page.text().await.unwrap().contains("<svg"));
        let s: Value = c
            .get(format!("{base}/v1/runs/{name}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(s["phase"], "DECIDED");
        // Finalize again: the same answer.
        let again: Value = c
            .post(format!("{base}/v1/runs/{name}/finalize"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(again["evidenceSha256"], done["evidenceSha256"]);
    }
    let missing = c
        .get(format!("{base}/v1/runs/run-nope/explain"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let health = c.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    // Stats over the three decided runs: JSON (seal.stats/1), the page, a bad query.
    let stats: Value = c
        .get(format!("{base}/v1/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["schemaVersion"], "seal.stats/1", "{stats}");
    assert_eq!(stats["runs"]["used"], 3, "{stats}");
    assert_eq!(stats["outcomes"]["outcome"]["pass"], 2, "{stats}");
    let narrow: Value = c
        .get(format!("{base}/v1/stats?genre=puzzle"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(narrow["runs"]["used"], 1, "{narrow}");
    let page = c
        .get(format!("{base}/v1/stats"))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert!(page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("default-src 'none'"));
    assert!(page.text().await.unwrap().contains("<svg"));
    let bad = c
        .get(format!("{base}/v1/stats?since=yesterday"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let metrics = c
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
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

async fn error_of(r: reqwest::Response) -> (StatusCode, Value) {
    let s = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
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
    let c = http();
    let folder = RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    let run = folder.run().to_string();

    // Malformed and hostile documents.
    let (s, v) = error_of(
        c.put(format!("{base}/v1/runs/{run}"))
            .body("{not json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("bad_json"))
    );
    let (s, v) = error_of(
        c.put(format!("{base}/v1/runs/{run}"))
            .body(r#"{"schemaVersion":"playtest/3","outcome":"fail","outcome":"pass"}"#)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("duplicate key"));
    let (s, _) = error_of(
        c.put(format!("{base}/v1/runs/other-run"))
            .body(folder.header_bytes().to_vec())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        s,
        StatusCode::UNPROCESSABLE_ENTITY,
        "runId must match the path"
    );
    let (s, v) = error_of(
        c.put(format!("{base}/v1/runs/..%2F..%2Fetc"))
            .body(folder.header_bytes().to_vec())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let mut invalid: Value = serde_json::from_slice(folder.header_bytes()).unwrap();
    invalid["genre"] = "shooter".into();
    let (s, v) = error_of(
        c.put(format!("{base}/v1/runs/{run}"))
            .body(serde_json::to_vec(&invalid).unwrap())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("/genre"),
        "{v}"
    );
    let big = vec![b' '; 300_000];
    let r = c
        .put(format!("{base}/v1/runs/{run}"))
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        store.list("runs").await.unwrap().keys.is_empty(),
        "nothing stored so far"
    );

    // A blob whose bytes are not its name.
    let (hash, path) = &folder.blobs()[0];
    let (s, v) = error_of(
        c.put(format!(
            "{base}/v1/blobs/sha256/{}",
            seal_core::canonical::Hash::of(b"other")
        ))
        .body(std::fs::read(path).unwrap())
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("hash_mismatch"))
    );
    let (s, _) = error_of(
        c.put(format!("{base}/v1/blobs/sha256/NOTHEX"))
            .body("x")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(store.list("cas").await.unwrap().keys.is_empty());
    assert!(store.list("tmp").await.unwrap().keys.is_empty());

    // Idempotent header; other bytes conflict.
    let r = c
        .put(format!("{base}/v1/runs/{run}"))
        .body(folder.header_bytes().to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = c
        .put(format!("{base}/v1/runs/{run}"))
        .body(folder.header_bytes().to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let mut other: Value = serde_json::from_slice(folder.header_bytes()).unwrap();
    other["gameId"] = "game-other".into();
    let (s, v) = error_of(
        c.put(format!("{base}/v1/runs/{run}"))
            .body(serde_json::to_vec(&other).unwrap())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("conflict"))
    );

    // A brief that is not the header's.
    let (s, v) = error_of(
        c.put(format!("{base}/v1/runs/{run}/brief"))
            .body("another brief")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("mismatch"))
    );
    c.put(format!("{base}/v1/runs/{run}/brief"))
        .body(folder.brief().to_vec())
        .send()
        .await
        .unwrap();

    // Rolls: bad number, roll 2 first, missing blobs named.
    let proof = folder.rolls()[0].canonical();
    let (s, _) = error_of(
        c.post(format!("{base}/v1/runs/{run}/rolls/3"))
            .body(proof.clone())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, v) = error_of(
        c.post(format!("{base}/v1/runs/{run}/rolls/1"))
            .body(proof.clone())
            .send()
            .await
            .unwrap(),
    )
    .await;
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
        c.post(format!("{base}/v1/runs/{run}/rolls/2"))
            .body(serde_json::to_vec(&roll2).unwrap())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");

    // Finalize before any roll; unknown run; unknown route.
    let (s, v) = error_of(
        c.post(format!("{base}/v1/runs/{run}/finalize"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("no_rolls"))
    );
    let (s, _) = error_of(c.get(format!("{base}/v1/runs/nope")).send().await.unwrap()).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = error_of(c.get(format!("{base}/v2/whatever")).send().await.unwrap()).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bearer_token_is_required_when_configured() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let engine = engine_edited(&lb, &[("SEAL_API_TOKEN", "tok-very-secret")], &|t| t).await;
    let (base, _stop) = start(engine).await;
    let c = http();
    let (s, _) = error_of(c.get(format!("{base}/v1/runs/x")).send().await.unwrap()).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = error_of(
        c.get(format!("{base}/v1/runs/x"))
            .bearer_auth("tok-very-secreT")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let r = c
        .get(format!("{base}/v1/runs/x"))
        .bearer_auth("tok-very-secret")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::NOT_FOUND,
        "authorized: the run is just unknown"
    );
    assert_eq!(
        c.get(format!("{base}/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
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
    let c = http();
    let mut folders = Vec::new();
    for i in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let f = renamed_copy(
            &example("run-narrative-0010-pass"),
            dir.path(),
            &format!("busy-{i}"),
        );
        submit(&c, &base, &f).await;
        folders.push((dir, f));
    }
    let mut tasks = Vec::new();
    for (i, (_, f)) in folders.iter().enumerate() {
        let (c, base, f) = (
            c.clone(),
            base.clone(),
            RunFolder::read(f.dir(), 1 << 26).unwrap(),
        );
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100 * i as u64)).await;
            let bytes = f.rolls()[0].canonical();
            let r = c
                .post(format!("{base}/v1/runs/{}/rolls/1", f.run()))
                .body(bytes.clone())
                .send()
                .await
                .unwrap();
            (
                r.status(),
                r.headers()
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
    let c = http();
    let daemon = spawn_daemon(dir.path(), &lb, store, &[]);
    submit(&c, &daemon.base, &folder).await;
    let proof = folder.rolls()[0].canonical();
    let url = format!("{}/v1/runs/{}/rolls/1", daemon.base, folder.run());
    let pending = tokio::spawn({
        let (c, proof) = (c.clone(), proof.clone());
        async move { c.post(url).body(proof).send().await }
    });
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
    let (status, body) = post_roll(&c, &daemon.base, &folder, 1).await;
    assert_eq!(status, StatusCode::OK, "{body}");
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
    let f1: Value = c
        .post(format!("{}/v1/runs/{}/finalize", daemon.base, folder.run()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let f2: Value = c
        .post(format!("{}/v1/runs/{}/finalize", daemon.base, folder.run()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(f1["outcome"], "pass");
    assert_eq!(f1["evidenceSha256"], f2["evidenceSha256"]);
    let v: Value = c
        .get(format!("{}/v1/runs/{}/verify", daemon.base, folder.run()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["verified"], true, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_finishes_in_flight_work_then_exits_0() {
    let lb = Loopback::start(Duration::from_millis(1500)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let folder = RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    let c = http();
    let mut daemon = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    submit(&c, &daemon.base, &folder).await;
    let proof = folder.rolls()[0].canonical();
    let url = format!("{}/v1/runs/{}/rolls/1", daemon.base, folder.run());
    let pending = tokio::spawn({
        let (c, proof) = (c.clone(), proof.clone());
        async move { c.post(url).body(proof).send().await.unwrap().status() }
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
    // New connections are refused while in-flight work finishes.
    assert!(c
        .get(format!("{}/healthz", daemon.base))
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
    let c = http();
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
        let base = if i % 2 == 0 { &r1.base } else { &r2.base };
        submit(&c, base, f).await;
        let (status, body) = post_roll(&c, base, f, 1).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // Finalize of each run sent to both replicas at once: one seal, both answer the same.
    for (_, f) in &folders {
        let (a, b) = tokio::join!(
            c.post(format!("{}/v1/runs/{}/finalize", r1.base, f.run()))
                .send(),
            c.post(format!("{}/v1/runs/{}/finalize", r2.base, f.run()))
                .send()
        );
        let a: Value = a.unwrap().json().await.unwrap();
        let b: Value = b.unwrap().json().await.unwrap();
        assert_eq!(a["evidenceSha256"], b["evidenceSha256"], "{a} {b}");
        assert_eq!(a["sealSha256"], b["sealSha256"]);
        let v: Value = c
            .get(format!("{}/v1/runs/{}/verify", r2.base, f.run()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
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
