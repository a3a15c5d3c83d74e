//! A store that stops taking writes (issue 49, item 3), as a bucket policy that denies
//! `PutObject` makes one: reads answer, every write is refused 403. `seal serve` answers the
//! writes 503 naming the object, logs each at warn with the cause, counts them in
//! `seal_store_errors_total{op}`, and `/readyz` says "writes failing" (503) until a write
//! succeeds again. Real processes: `seal serve` on the S3-compatible server behind an HTTP proxy
//! that refuses writes while told to.

use crate::common;

use common::*;
use reqwest::StatusCode;
use seal_testkit::loopback::Loopback;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An HTTP proxy in front of the S3 server: while `read_only` is set, every PUT, POST and
/// DELETE is answered 403 AccessDenied (S3's answer to a write a policy denies); everything
/// else is forwarded, one upstream connection per request (`Connection: close`).
struct ReadOnlyProxy {
    port: u16,
    read_only: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ReadOnlyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const DENIED: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";

impl ReadOnlyProxy {
    async fn start(upstream: &str) -> ReadOnlyProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let read_only = Arc::new(AtomicBool::new(false));
        let upstream = upstream.to_string();
        let flag = read_only.clone();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let (upstream, flag) = (upstream.clone(), flag.clone());
                tokio::spawn(async move {
                    let _ = serve(conn, &upstream, &flag).await;
                });
            }
        });
        ReadOnlyProxy {
            port,
            read_only,
            task,
        }
    }
}

/// One client connection: refused writes keep it open; a forwarded request's answer is copied
/// until the upstream closes, then the connection ends (the answer says `Connection: close`).
async fn serve(mut conn: TcpStream, upstream: &str, read_only: &AtomicBool) -> std::io::Result<()> {
    let mut buf = Vec::new();
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 16384];
            let n = conn.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let len: usize = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let mut chunk = vec![0u8; 1 << 16];
            let n = conn.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let request: Vec<u8> = buf.drain(..head_end + len).collect();
        let method = head.split_whitespace().next().unwrap_or("");
        if read_only.load(Ordering::SeqCst) && matches!(method, "PUT" | "POST" | "DELETE") {
            let answer = format!(
                "HTTP/1.1 403 Forbidden\r\ncontent-type: application/xml\r\ncontent-length: {}\r\n\r\n{DENIED}",
                DENIED.len()
            );
            conn.write_all(answer.as_bytes()).await?;
            continue;
        }
        // Forwarded with `Connection: close`, so the upstream's answer ends with its connection.
        let mut lines: Vec<&str> = head[..head_end - 4]
            .split("\r\n")
            .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
            .collect();
        lines.push("connection: close");
        let mut out = TcpStream::connect(upstream).await?;
        out.write_all(format!("{}\r\n\r\n", lines.join("\r\n")).as_bytes())
            .await?;
        out.write_all(&request[head_end..]).await?;
        tokio::io::copy(&mut out, &mut conn).await?;
        return Ok(());
    }
}

async fn ready(c: &seal_testkit::client::SealClient) -> (StatusCode, serde_json::Value) {
    c.readyz().await.status_json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_refuses_writes_is_logged_counted_and_not_ready() {
    let Some(endpoint) = s3_endpoint() else {
        assert_ne!(
            std::env::var("SEAL_REQUIRE_S3").as_deref(),
            Ok("1"),
            "SEAL_REQUIRE_S3=1 but SEAL_TEST_S3_ENDPOINT is not set"
        );
        eprintln!("SKIPPED: no S3 endpoint (SEAL_TEST_S3_ENDPOINT)");
        return;
    };
    let upstream = endpoint.trim_start_matches("http://").to_string();
    let proxy = ReadOnlyProxy::start(&upstream).await;
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let store = format!(
        "s3://{}/t-readonly-{}?endpoint=http://127.0.0.1:{}",
        s3_bucket(),
        random_hex(6),
        proxy.port
    );
    let mut d = spawn_daemon(dir.path(), &lb, &store, &[]);
    let c = d.client();
    let t0 = Instant::now();
    while !(ready(&c).await.0 == StatusCode::OK && ready(&c).await.1["admission"] == "admitted") {
        assert!(t0.elapsed() < Duration::from_secs(30), "{}", d.log_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The policy now denies writes: the header PUT is refused 503, the object named.
    proxy.read_only.store(true, Ordering::SeqCst);
    let folder = renamed_copy(
        &example("run-narrative-0010-pass"),
        &dir.path().join("in"),
        "readonly-1",
    );
    let header = std::fs::read(folder.dir().join("header.json")).unwrap();
    let r = c
        .put_header(folder.run(), header.clone())
        .await
        .expect(StatusCode::SERVICE_UNAVAILABLE);
    let err = r.json();
    assert_eq!(err["error"]["code"], "unavailable", "{err}");
    assert!(
        err["error"]["object"]
            .as_str()
            .is_some_and(|o| o.contains("readonly-1")),
        "{err}"
    );

    // Not ready, with the cause; the failure counted and logged at warn with the object.
    let (status, body) = ready(&c).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let why = body["store"].as_str().unwrap();
    assert!(
        why.starts_with("writes failing for ") && why.contains("create-only put"),
        "{body}"
    );
    let metrics = c.metrics().await.expect_success().text();
    assert!(
        metrics.contains("seal_store_errors_total{op=\"create-only put\"}"),
        "{metrics}"
    );
    let log = d.log_text();
    let warned = log.lines().any(|l| {
        l.contains("\"level\":\"WARN\"")
            && l.contains("request failed: retryable")
            && l.contains("readonly-1")
            && l.contains("create-only put")
    });
    assert!(warned, "no warn line with the object and the cause: {log}");

    // Writes are allowed again: the same PUT succeeds and the store is ready.
    proxy.read_only.store(false, Ordering::SeqCst);
    c.put_header(folder.run(), header).await.expect_success();
    let (status, body) = ready(&c).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["store"], "ok", "{body}");
    d.kill_9();
}
