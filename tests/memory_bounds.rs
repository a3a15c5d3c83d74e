//! Memory amplification (DESIGN §8, "Admission and limits"): a 21 MB proof package of 150,000
//! small events, alone and four at once, over real sockets. Before the bounds, one took the
//! daemon from 58 MB to a 1.1 GB peak; now it is refused by a streaming count before any tree
//! is built, and the peak grows by a small multiple of the bodies themselves.
//!
//! One test in this binary, so that the process's peak RSS (`VmHWM`) is this test's.

mod common;

use common::*;
use seal_testkit::client::{Method, SealClient, StatusCode};
use seal_testkit::loopback::Loopback;
use serde_json::Value;
use std::time::Duration;

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The example proof package with `n` small events.
fn package_with_events(n: usize) -> Vec<u8> {
    let path = example("run-narrative-0010-pass").join("roll-1/proof-package.json");
    let mut p: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let events: Vec<Value> = (0..n)
        .map(|i| serde_json::json!({"seq": i, "name": "tick", "tMs": i, "data": {"k": "v".repeat(80)}}))
        .collect();
    p["events"] = Value::Array(events);
    serde_json::to_vec(&p).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_package_is_refused_before_it_is_parsed_alone_and_four_at_once() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let engine = engine_edited(&lb, &[], &|t| t).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let trusted = vec![engine.key().unwrap().public()];
    let state = seal_server::AppState::new(engine, trusted);
    let (_stop, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(seal_server::run(listener, state, async move {
        let _ = rx.await;
    }));
    let body = bytes::Bytes::from(package_with_events(150_000));
    let mb = body.len() as f64 / 1e6;
    assert!(mb > 10.0, "{mb} MB");
    let c = SealClient::new(base);
    let before = status_kib("VmHWM:");
    let post = |c: SealClient, body: bytes::Bytes| async move {
        let r = c
            .raw(Method::POST, "/v1/runs/r1/rolls/1")
            .header("content-type", "application/json")
            .body(body);
        let r = c.send(r).await;
        (r.status, r.json())
    };
    let (s, v) = post(c.clone(), body.clone()).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"]["code"], "limit_exceeded", "{v}");
    let one = status_kib("VmHWM:").saturating_sub(before) / 1024;
    let all = futures::future::join_all((0..4).map(|_| post(c.clone(), body.clone()))).await;
    for (s, v) in all {
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    }
    let four = status_kib("VmHWM:").saturating_sub(before) / 1024;
    eprintln!(
        "memory: package {mb:.1} MB; peak RSS grew {one} MiB for one, {four} MiB for four at once (test process, client included)"
    );
    // The client's copies are in this process too; the daemon's share is a few body copies.
    assert!(one < 160, "one package grew the peak by {one} MiB");
    assert!(four < 400, "four packages grew the peak by {four} MiB");
}
