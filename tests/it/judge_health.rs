//! Judge health gates the work (issue 49, item 1): with both judge ports dead, `seal serve` is
//! not ready and answers a roll 503 `judges_unavailable` with Retry-After, judging and sealing
//! nothing; when the judges come back on the same address the probes find them, the daemon is
//! ready again without a restart and the same roll POST is judged and sealed. Judges that die
//! under a running daemon take their slots down after `judge_breaker_failures` failed calls.
//! Real processes: `seal serve` and the loopback judge over TCP.

use crate::common;

use common::*;
use reqwest::StatusCode;
use seal_testkit::client::SealClient;
use seal_testkit::loopback::Loopback;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// The embedded config with probes 300 ms apart (doubling to 1 s), so the test waits little.
fn fast_probes(dir: &Path) {
    let text = seal_engine::config::EMBEDDED
        .replace(
            "judge_breaker_cooldown_ms = 5000",
            "judge_breaker_cooldown_ms = 300",
        )
        .replace(
            "judge_breaker_max_cooldown_ms = 60000",
            "judge_breaker_max_cooldown_ms = 1000",
        )
        .replace("backoff_base_ms = 500", "backoff_base_ms = 10")
        .replace("backoff_cap_ms = 8000", "backoff_cap_ms = 40");
    assert!(text.contains("judge_breaker_cooldown_ms = 300"));
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(dir.join("config/seal.toml"), text).unwrap();
}

/// `/readyz` until `pred` holds for its status and body, at most `secs`.
async fn ready_until(
    c: &SealClient,
    secs: u64,
    pred: impl Fn(StatusCode, &Value) -> bool,
) -> Value {
    let t0 = Instant::now();
    loop {
        let r = c.readyz().await;
        let (status, body) = r.status_json();
        if pred(status, &body) {
            return body;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "readyz never came to the state wanted: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn down(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.starts_with("down for "))
}

/// A loopback port nobody listens on (bound, then released).
fn dead_addr() -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_judges_make_the_daemon_unready_and_rolls_wait_for_them() {
    let unused = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    fast_probes(dir.path());
    let addr = dead_addr();
    let url = format!("http://{addr}/v1");
    let mut d = spawn_daemon(
        dir.path(),
        &unused,
        "file://./store",
        &[
            ("SEAL_JUDGE_A_URL", &url),
            ("SEAL_JUDGE_B_URL", &url),
            ("SEAL_JUDGE_BREAKER_FAILURES", "3"),
        ],
    );
    let c = d.client();

    // The start-up probe finds both ports dead: not ready, each slot says why.
    let body = ready_until(&c, 20, |s, b| {
        s == StatusCode::SERVICE_UNAVAILABLE && down(&b["judges"]["a"]) && down(&b["judges"]["b"])
    })
    .await;
    assert_eq!(body["store"], "ok", "{body}");
    assert!(
        body["judges"]["a"].as_str().unwrap().contains("connect"),
        "{body}"
    );

    // The inputs are taken; the roll is not judged: 503 with Retry-After, nothing sealed.
    let folder = renamed_copy(
        &example("run-narrative-0010-pass"),
        &dir.path().join("in"),
        "health-dead-1",
    );
    c.submit(&folder).await;
    for _ in 0..2 {
        let r = c
            .roll(&folder, 1)
            .await
            .expect(StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            r.json()["error"]["code"],
            "judges_unavailable",
            "{}",
            r.text()
        );
        let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=60).contains(&wait), "Retry-After {wait}");
    }
    let state = c.run_state(folder.run()).await.expect_success().json();
    assert_ne!(state["phase"], "DECIDED", "{state}");
    let run_dir = dir.path().join("store/runs/health-dead-1");
    assert!(
        !run_dir.join("roll-1/judge-a").exists(),
        "a judge attempt was stored"
    );
    assert!(!run_dir.join("evidence.json").exists());
    let metrics = c.metrics().await.expect_success().text();
    assert!(metrics.contains("seal_judge_up{slot=\"a\"} 0"), "{metrics}");
    assert!(
        metrics.contains("seal_judge_breaker_opens_total{slot=\"b\"} 1"),
        "{metrics}"
    );
    assert!(
        d.log_text().contains("judge slot down"),
        "no warn line: {}",
        d.log_text()
    );

    // The judges come back on the same address: the probes find them, ready without a restart.
    let lb = Loopback::start_on(&addr.to_string(), Duration::from_millis(1))
        .await
        .unwrap();
    personas(&lb);
    let body = ready_until(&c, 20, |s, _| s == StatusCode::OK).await;
    assert_eq!(body["judges"]["a"], "up", "{body}");
    assert_eq!(body["judges"]["b"], "up", "{body}");
    assert!(lb.probes() >= 2, "the slots were probed, not called");
    assert!(lb.calls().is_empty(), "a probe was taken for a judge call");
    let r = c.roll(&folder, 1).await.expect_success();
    assert_eq!(r.json()["rollOutcome"], "pass", "{}", r.text());
    let f = c.finalize(folder.run()).await.expect_success().json();
    assert_eq!(f["outcome"], "pass", "{f}");
    c.verify(folder.run()).await.expect_success();

    // The judges die under the running daemon: the roll that finds out is judged (both slots
    // failed: infra_error, as always); then the slots are down and the next roll waits.
    drop(lb);
    let second = renamed_copy(
        &example("run-narrative-0010-pass"),
        &dir.path().join("in-2"),
        "health-dead-2",
    );
    c.submit(&second).await;
    let r = c.roll(&second, 1).await.expect_success();
    assert_eq!(r.json()["rollOutcome"], "infra_error", "{}", r.text());
    let third = renamed_copy(
        &example("run-narrative-0010-pass"),
        &dir.path().join("in-3"),
        "health-dead-3",
    );
    c.submit(&third).await;
    let r = c
        .roll(&third, 1)
        .await
        .expect(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.json()["error"]["code"], "judges_unavailable");
    ready_until(&c, 20, |s, _| s == StatusCode::SERVICE_UNAVAILABLE).await;
    d.kill_9();
}

/// A judge that answers 500 to everything (issue 49): the run is decided `inconclusive` and
/// its reasons name the judge that was unavailable, `infra_judge_a_unavailable`, and no
/// `obligation_disputed` (under `finalPostguard/2`: an outage must not read as judge
/// disagreement). The run verifies; the decision records the rules version it was made by.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_answering_500_always_is_named_in_the_reasons_not_a_dispute() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    lb.script(
        MODEL_A,
        (0..20).map(|_| seal_testkit::loopback::Fault::Status {
            code: 500,
            body: r#"{"error":{"message":"internal error"}}"#.into(),
            retry_after: None,
        }),
    );
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    fast_probes(dir.path());
    let mut d = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let c = d.client();
    let folder = renamed_copy(
        &example("run-narrative-0010-pass"),
        &dir.path().join("in"),
        "judge-a-500",
    );
    c.submit(&folder).await;
    c.roll(&folder, 1).await.expect_success();
    let f = c.finalize(folder.run()).await.expect_success().json();
    assert_eq!(f["outcome"], "inconclusive", "{f}");
    let ev: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("store/runs/judge-a-500/evidence.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        ev["decision"]["reasons"],
        serde_json::json!(["infra_judge_a_unavailable"]),
        "{}",
        ev["decision"]
    );
    assert_eq!(ev["finalPostguard"]["version"], "finalPostguard/2");
    assert!(
        ev["rolls"][0]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().is_some_and(|e| e.starts_with("judge-a:"))),
        "{}",
        ev["rolls"][0]["errors"]
    );
    c.verify(folder.run()).await.expect_success();
    d.kill_9();
}
