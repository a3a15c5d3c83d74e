//! Hostile clients against `seal serve` over real sockets (DESIGN §8, "Connections"): half a
//! header, half a body, idle keep-alive, more connections than the bound, and a soak of slow
//! clients beside normal traffic.

mod common;

use common::*;
use seal_testkit::loopback::Loopback;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Server {
    addr: String,
    _stop: tokio::sync::oneshot::Sender<()>,
    _lb: Loopback,
}

async fn start(header_ms: u64, body_ms: u64, max_connections: usize) -> Server {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let engine = engine_edited(&lb, &[], &move |t| {
        t.replace(
            "header_timeout_ms = 10000",
            &format!("header_timeout_ms = {header_ms}"),
        )
        .replace(
            "body_timeout_ms = 30000",
            &format!("body_timeout_ms = {body_ms}"),
        )
        .replace(
            "max_connections = 1024",
            &format!("max_connections = {max_connections}"),
        )
    })
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let trusted = vec![engine.key().unwrap().public()];
    let state = seal_server::AppState::new(engine, trusted);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(seal_server::run(listener, state, async move {
        let _ = rx.await;
    }));
    Server {
        addr,
        _stop: tx,
        _lb: lb,
    }
}

/// Reads until the peer closes (or `limit` passes); answers what was read and whether it closed.
async fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&got).into(), true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into(), false),
        }
    }
}

/// `GET /healthz` on a fresh connection: status line and elapsed time.
async fn healthz(addr: &str) -> (String, Duration) {
    let t0 = Instant::now();
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let (text, _) = read_until_closed(&mut s, Duration::from_secs(5)).await;
    (text.lines().next().unwrap_or("").to_string(), t0.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_a_header_is_closed_after_the_header_timeout() {
    let srv = start(300, 30_000, 1024).await;
    let mut conns = Vec::new();
    for _ in 0..50 {
        let mut s = TcpStream::connect(&srv.addr).await.unwrap();
        s.write_all(b"PUT /v1/runs/r1 HTTP/1.1\r\nHost: x\r\nContent-Le")
            .await
            .unwrap();
        conns.push(s);
    }
    let t0 = Instant::now();
    for s in &mut conns {
        let (_, closed) = read_until_closed(s, Duration::from_secs(3)).await;
        assert!(closed, "a half header was kept open");
    }
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(healthz(&srv.addr).await.0.contains("200"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed() {
    let srv = start(300, 30_000, 1024).await;
    let mut s = TcpStream::connect(&srv.addr).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let (text, closed) = read_until_closed(&mut s, Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(closed, "an idle keep-alive connection stayed open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_a_body_gets_408_in_the_error_format() {
    let srv = start(10_000, 300, 1024).await;
    let mut s = TcpStream::connect(&srv.addr).await.unwrap();
    s.write_all(
        b"PUT /v1/runs/r1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n{\"a\":",
    )
    .await
    .unwrap();
    let t0 = Instant::now();
    let (text, _) = read_until_closed(&mut s, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains(r#""code":"timeout""#), "{text}");
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_bound_a_new_connection_gets_503_at_once() {
    let srv = start(10_000, 30_000, 8).await;
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(TcpStream::connect(&srv.addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, took) = healthz(&srv.addr).await;
    assert!(status.starts_with("HTTP/1.1 503"), "{status}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    let mut s = TcpStream::connect(&srv.addr).await.unwrap();
    let (text, closed) = read_until_closed(&mut s, Duration::from_secs(2)).await;
    assert!(closed && text.contains(r#""code":"overloaded""#), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 1"),
        "{text}"
    );
    drop(idle);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(healthz(&srv.addr).await.0.contains("200"));
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Soak: 300 slow clients that keep reconnecting with half a header or half a body, beside
/// `/healthz` every 20 ms for 4 s: every health check answers 200, none starved (each within
/// 2.5 s, while the slow clients hold their sockets for 10 s), and the process grows by less
/// than 64 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_slow_clients_beside_normal_traffic() {
    let srv = start(500, 500, 1024).await;
    let rss0 = rss_kib();
    let stop = tokio_util::sync::CancellationToken::new();
    let mut slow = Vec::new();
    for i in 0..300 {
        let addr = srv.addr.clone();
        let stop = stop.clone();
        slow.push(tokio::spawn(async move {
            while !stop.is_cancelled() {
                let Ok(mut s) = TcpStream::connect(&addr).await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let half: &[u8] = if i % 2 == 0 {
                    b"GET /v1/runs/r1 HTTP/1.1\r\nHost: x\r\nX-Slow: "
                } else {
                    b"PUT /v1/runs/r1 HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"a\":"
                };
                let _ = s.write_all(half).await;
                let _ = read_until_closed(&mut s, Duration::from_secs(10)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut worst = Duration::ZERO;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(4) {
        let (status, took) = healthz(&srv.addr).await;
        assert!(status.contains("200"), "{status}");
        worst = worst.max(took);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.cancel();
    let grown_mib = rss_kib().saturating_sub(rss0) / 1024;
    eprintln!("soak: worst /healthz {worst:?}, RSS grew {grown_mib} MiB");
    // Starvation shows as the whole soak (the slow clients hold their sockets for 10 s, longer
    // than the 4 s of probes); the bound is loose so that a loaded machine is not mistaken for
    // it: on 2 cores running the whole suite one probe took 1.01 s (latency is measured by
    // benches/load.rs, not asserted here).
    assert!(
        worst < Duration::from_millis(2500),
        "worst /healthz {worst:?}"
    );
    assert!(grown_mib < 64, "RSS grew {grown_mib} MiB");
    for t in slow {
        t.abort();
    }
}
