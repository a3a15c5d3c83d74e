//! Operable as a service (issue 24), the second half: one verdict for `verify`, `explain`,
//! `export` and `stats`; the start-up summary line; liveness through a store outage; traces
//! across worker → seal → judge, exported over OTLP/HTTP; process metrics. Each case is a real
//! `seal` process on real sockets (a loopback judge, a local store, a local OTLP receiver).

use crate::common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `seal args…` run in `cwd` (an empty folder: no config of the checkout is read).
fn seal_in(cwd: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

// ---- one verdict ---------------------------------------------------------------------------

#[test]
fn explain_export_and_stats_refuse_a_run_verify_calls_not_verified_on_log_inclusion() {
    let (dir, root) = copy_fixture_store();
    let url = file_url(&root);
    let pem = fixture_trust_pem();
    let pem = pem.to_str().unwrap();
    let entry = root.join("log/entries/00000000000000000003");
    let dropped: Value = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
    let run = dropped["runId"].as_str().unwrap().to_string();
    let cwd = dir.path();
    // The control: before the log entry goes, every command takes the run.
    let out = seal_in(cwd, &["explain", &run, "--store", &url, "--trust", pem]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // The log loses the run's entry: its seal is no longer proven in the log.
    std::fs::remove_file(&entry).unwrap();
    let out = seal_in(cwd, &["verify", &run, "--store", &url, "--trust", pem]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    assert!(
        said.contains("NOT VERIFIED") && said.contains("[log_inclusion]"),
        "{said}"
    );

    // explain: no tree, no page (the page would embed that failing verify command).
    let page = cwd.join("page.html");
    let out = seal_in(
        cwd,
        &[
            "explain",
            &run,
            "--store",
            &url,
            "--trust",
            pem,
            "--html",
            "--out",
            page.to_str().unwrap(),
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        !page.exists(),
        "a page was drawn for a run that does not verify"
    );
    assert!(
        err.contains("does not verify") && err.contains("[log_inclusion]"),
        "{err}"
    );
    let out = seal_in(cwd, &["explain", &run, "--store", &url, "--trust", pem]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "a tree was written");

    // export: nothing exported.
    let out = seal_in(
        cwd,
        &["export", "verdict", &run, "--store", &url, "--trust", pem],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "a Verdict was exported");
    assert!(
        err.contains("does NOT VERIFY") && err.contains("[log_inclusion]"),
        "{err}"
    );

    // stats: counted and listed as not verified, never used.
    let out = seal_in(cwd, &["stats", "--store", &url, "--trust", pem, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed = report["runs"]["notVerifiedRuns"]
        .as_array()
        .unwrap_or_else(|| panic!("{report:#}"));
    let row = listed
        .iter()
        .find(|r| r["runId"] == run.as_str())
        .unwrap_or_else(|| panic!("{run} not listed as not verified: {report:#}"));
    assert!(
        row.to_string().contains("log_inclusion") || row["problems"].as_u64() >= Some(1),
        "{row}"
    );
}

// ---- the start-up summary line -------------------------------------------------------------

use seal_testkit::client::{Method, SealClient, StatusCode};
use seal_testkit::loopback::Loopback;
use std::time::{Duration, Instant};

/// The JSON log lines of a daemon whose `fields.message` is `message`.
fn log_lines_with(log: &str, message: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["fields"]["message"] == message)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_logs_one_start_up_summary_line_without_secrets() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let api_token = "tok-operator-api-0123456789abcdef";
    let metrics_token = "tok-operator-metrics-0123456789";
    let mut d = spawn_daemon(
        dir.path(),
        &lb,
        "file://./store",
        &[
            ("SEAL_API_TOKEN", api_token),
            ("SEAL_METRICS_TOKEN", metrics_token),
            ("SEAL_REPLICA_ID", "seal-ops-test:0"),
        ],
    );
    d.kill_9();
    let log = d.log_text();
    let lines = log_lines_with(&log, "seal serve listening");
    assert_eq!(lines.len(), 1, "one summary line: {log}");
    let line = &lines[0];
    eprintln!(
        "start-up summary line: {}",
        serde_json::to_string(line).unwrap()
    );
    let f = &line["fields"];
    assert_eq!(line["level"], "INFO");
    assert_eq!(f["version"], env!("CARGO_PKG_VERSION"));
    assert!(f["commit"].as_str().is_some_and(|c| !c.is_empty()), "{f}");
    let addr = d.base.trim_start_matches("http://");
    assert_eq!(f["addr"], addr);
    assert!(f["store"].as_str().unwrap().starts_with("file://"), "{f}");
    assert_eq!(f["replica"], "seal-ops-test:0");
    let judge_host = lb.url().split('/').nth(2).unwrap().to_string();
    for (field, model) in [("judge_a", MODEL_A), ("judge_b", MODEL_B)] {
        assert_eq!(
            f[field],
            format!("{model} @ {judge_host} (auth bearer)"),
            "{f}"
        );
    }
    assert_eq!(f["api_auth"], "token");
    assert_eq!(f["metrics_auth"], "metrics token");
    assert_eq!(
        f["log_size"], 0,
        "a new store has an empty log, as a number"
    );
    assert_eq!(f["config"], "<embedded config/seal.toml>", "{f}");
    assert_eq!(f["key_id"].as_str().map(str::len), Some(64), "{f}");
    let text = serde_json::to_string(line).unwrap();
    for secret in DAEMON_SECRETS.iter().chain(&[api_token, metrics_token]) {
        assert!(!text.contains(secret), "the summary holds {secret}");
        assert!(!log.contains(secret), "the log holds {secret}");
    }
}

// ---- liveness through a store outage ---------------------------------------------------------

/// A TCP proxy in front of the S3 server: stopping it makes the store unreachable (connections
/// refused, open ones cut), starting it again on the same port brings the store back.
struct Proxy {
    port: u16,
    upstream: String,
    tasks: Option<tokio::task::JoinHandle<()>>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Proxy {
    async fn start(upstream: &str) -> Proxy {
        let mut p = Proxy {
            port: 0,
            upstream: upstream.to_string(),
            tasks: None,
            conns: Default::default(),
        };
        p.resume().await;
        p
    }

    async fn resume(&mut self) {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
            .await
            .unwrap();
        self.port = listener.local_addr().unwrap().port();
        let (upstream, conns) = (self.upstream.clone(), self.conns.clone());
        self.tasks = Some(tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut out) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                    }
                });
                conns.lock().unwrap().push(task.abort_handle());
            }
        }));
    }

    /// The outage: no listener, every open connection cut.
    fn stop(&mut self) {
        if let Some(t) = self.tasks.take() {
            t.abort();
        }
        for c in self.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// GET `path`: (status, body, how long it took); status 0 when no answer came in 10 s (raw:
/// the store outage makes a timeout or a refused connection an answer, not a failure).
async fn probe(c: &SealClient, path: &str) -> (u16, String, Duration) {
    let t0 = Instant::now();
    let r = c.raw(Method::GET, path).timeout(Duration::from_secs(10));
    match r.send().await {
        Ok(r) => {
            let s = r.status().as_u16();
            (s, r.text().await.unwrap_or_default(), t0.elapsed())
        }
        Err(_) => (0, String::new(), t0.elapsed()),
    }
}

/// Polls `path` until it answers `want` (true) or `secs` pass (false).
async fn until_status(c: &SealClient, path: &str, want: u16, secs: u64) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(secs) {
        if probe(c, path).await.0 == want {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn livez_stays_up_and_readyz_fails_while_the_store_is_unreachable() {
    let Some(endpoint) = s3_endpoint() else {
        assert_ne!(
            std::env::var("SEAL_REQUIRE_S3").as_deref(),
            Ok("1"),
            "SEAL_REQUIRE_S3=1 but SEAL_TEST_S3_ENDPOINT is not set"
        );
        eprintln!("SKIPPED: the store outage needs SEAL_TEST_S3_ENDPOINT (see .ci/run)");
        return;
    };
    let upstream = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut proxy = Proxy::start(upstream).await;
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let store = format!(
        "s3://{}/t-outage-{}?endpoint=http://127.0.0.1:{}",
        s3_bucket(),
        random_hex(6),
        proxy.port
    );
    let d = spawn_daemon(dir.path(), &lb, &store, &[]);
    let c = d.client();
    let (livez, readyz) = ("/livez", "/readyz");
    assert!(until_status(&c, readyz, 200, 30).await, "{}", d.log_text());
    // The log admission (one read of the log) is over before the outage begins.
    let t0 = Instant::now();
    while !probe(&c, readyz).await.1.contains("\"admitted\"") {
        assert!(t0.elapsed() < Duration::from_secs(30), "{}", d.log_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    proxy.stop();
    // Readiness says the store is gone…
    assert!(
        until_status(&c, readyz, 503, 15).await,
        "readyz still 200 with the store unreachable"
    );
    let (_, body, _) = probe(&c, readyz).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["status"], "unavailable", "{body}");
    assert_ne!(body["store"], "ok", "{body}");
    // …while liveness answers at once, every time: a store outage restarts no pod.
    for _ in 0..10 {
        let (status, _, took) = probe(&c, livez).await;
        assert_eq!(status, 200);
        assert!(took < Duration::from_millis(500), "livez took {took:?}");
    }

    // The store comes back on the same address: ready again, without a restart.
    proxy.resume().await;
    assert!(
        until_status(&c, readyz, 200, 60).await,
        "readyz did not recover: {}",
        d.log_text()
    );
    assert_eq!(probe(&c, livez).await.0, 200);
}

// ---- traces ----------------------------------------------------------------------------------

/// A worker's trace context: trace id, its span id, and the `traceparent` header.
fn worker_trace() -> (String, String, String) {
    let (trace, span) = (random_hex(16), random_hex(8));
    let header = format!("00-{trace}-{span}-01");
    (trace, span, header)
}

/// A client of `d` that sends `traceparent` with every request, as an instrumented worker does.
fn traced_client(d: &Daemon, traceparent: &str) -> SealClient {
    d.client().with_header("traceparent", traceparent)
}

/// The example run under a fresh id, submitted through `c`, and its roll 1 judged.
async fn submit_and_roll(c: &SealClient, scratch: &Path) -> String {
    let run = format!("run-narrative-{}-pass", 7000 + rand::random::<u16>() % 2000);
    let folder = renamed_copy(&example("run-narrative-0010-pass"), scratch, &run);
    c.submit(&folder).await;
    c.roll(&folder, 1).await.expect_success();
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_traceparent_reaches_the_judges_with_the_same_trace_id() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    // No exporter configured: traces are off, the trace context still goes through.
    let d = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let (trace, worker_span, traceparent) = worker_trace();
    let c = traced_client(&d, &traceparent);
    submit_and_roll(&c, &dir.path().join("folder")).await;
    let calls = lb.calls();
    assert!(calls.len() >= 2, "both judges called: {calls:?}");
    for call in &calls {
        let got = call
            .headers
            .get("traceparent")
            .unwrap_or_else(|| panic!("no traceparent at the judge: {:?}", call.headers));
        let parts: Vec<&str> = got.split('-').collect();
        assert_eq!(parts.len(), 4, "{got}");
        assert_eq!(parts[1], trace, "the worker's trace id reaches the judge");
        assert_ne!(
            parts[2], worker_span,
            "the judge's parent is seal's attempt span"
        );
    }
    // The access line of the roll names that trace.
    let log = d.log_text();
    let access: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| {
            v["target"] == "seal::access" && v["fields"]["route"] == "/v1/runs/{run_id}/rolls/{n}"
        })
        .collect();
    assert_eq!(access.len(), 1, "{log}");
    eprintln!(
        "access log line: {}",
        serde_json::to_string(&access[0]).unwrap()
    );
    assert_eq!(access[0]["fields"]["trace_id"], trace.as_str());
    assert!(access[0]["fields"]["request_id"].is_string());
}

/// Python with the reference OTLP protobuf classes, or None (a failure under
/// `SEAL_REQUIRE_PYTHON=1`).
fn otlp_python() -> Option<()> {
    let has = Command::new("python3")
        .args([
            "-c",
            "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        ])
        .output();
    if has.is_ok_and(|o| o.status.success()) {
        return Some(());
    }
    assert_ne!(
        std::env::var("SEAL_REQUIRE_PYTHON").as_deref(),
        Ok("1"),
        "python3 has no opentelemetry-proto (pip install opentelemetry-proto)"
    );
    eprintln!("skipped: python3 has no opentelemetry-proto");
    None
}

/// tools/otlp_receiver.py on an ephemeral port: the process, its port, its span lines.
struct Receiver {
    child: std::process::Child,
    port: u16,
    spans: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl Receiver {
    fn start() -> Receiver {
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tools/otlp_receiver.py"
            ))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let port = first["listening"].as_u64().unwrap() as u16;
        let spans = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = spans.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    sink.lock().unwrap().push(v);
                }
            }
        });
        Receiver { child, port, spans }
    }

    fn spans(&self) -> Vec<Value> {
        self.spans.lock().unwrap().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_are_exported_over_otlp_http_to_a_protobuf_receiver() {
    if otlp_python().is_none() {
        return;
    }
    let receiver = Receiver::start();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let d = spawn_daemon(
        dir.path(),
        &lb,
        "file://./store",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let (trace, worker_span, traceparent) = worker_trace();
    let c = traced_client(&d, &traceparent);
    let run = submit_and_roll(&c, &dir.path().join("folder")).await;
    // The spans of the roll, as the receiver decoded them.
    let t0 = Instant::now();
    let wanted = ["http.request", "roll", "judge", "judge.attempt"];
    let spans = loop {
        let spans: Vec<Value> = receiver
            .spans()
            .into_iter()
            .filter(|s| s["traceId"] == trace.as_str())
            .collect();
        let names: Vec<&str> = spans.iter().filter_map(|s| s["name"].as_str()).collect();
        if wanted.iter().all(|w| names.contains(w))
            && names.iter().filter(|n| **n == "judge.attempt").count() >= 2
        {
            break spans;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "spans of trace {trace} not received: {:#?}\n{}",
            receiver.spans(),
            d.log_text()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for s in &spans {
        eprintln!("received span: {}", serde_json::to_string(s).unwrap());
        assert!(s.get("error").is_none(), "{s}");
        assert_eq!(s["service"], "seal");
    }
    let one = |name: &str, f: &dyn Fn(&Value) -> bool| -> Value {
        let found: Vec<&Value> = spans.iter().filter(|s| s["name"] == name && f(s)).collect();
        assert_eq!(found.len(), 1, "{name}: {found:#?}");
        found[0].clone()
    };
    let request = one("http.request", &|s| {
        s["attributes"]["route"] == "/v1/runs/{run_id}/rolls/{n}"
    });
    // The request continues the worker's span; the roll, each judge and each attempt nest.
    assert_eq!(request["parentSpanId"], worker_span.as_str());
    let roll = one("roll", &|_| true);
    assert_eq!(roll["parentSpanId"], request["spanId"]);
    assert_eq!(roll["attributes"]["run"], run.as_str());
    for slot in ["a", "b"] {
        let judge = one("judge", &|s| s["attributes"]["slot"] == slot);
        assert_eq!(judge["parentSpanId"], roll["spanId"]);
        let attempt = one("judge.attempt", &|s| s["attributes"]["slot"] == slot);
        assert_eq!(attempt["parentSpanId"], judge["spanId"]);
        assert_eq!(attempt["attributes"]["attempt"], 1);
    }
    // The judges saw the attempt spans as their parents.
    let attempt_ids: Vec<String> = spans
        .iter()
        .filter(|s| s["name"] == "judge.attempt")
        .map(|s| s["spanId"].as_str().unwrap().to_string())
        .collect();
    for call in lb.calls() {
        let parent = call.headers["traceparent"]
            .split('-')
            .nth(2)
            .unwrap()
            .to_string();
        assert!(
            attempt_ids.contains(&parent),
            "{parent} not in {attempt_ids:?}"
        );
    }
}

// ---- process metrics -------------------------------------------------------------------------

/// The value of the unlabelled sample `name` of `family`.
fn value(m: &Value, family: &str, name: &str) -> f64 {
    m[family]["samples"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s[0] == name))
        .and_then(|s| s[2].as_f64())
        .unwrap_or_else(|| panic!("no {name} in {:#}", m[family]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_process_cpu_memory_fds_and_start_time() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let d = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let c = d.client();
    // The kernel counts CPU time in clock ticks (10 ms): a daemon that has just started may
    // have used less than one, so it is asked again (each answer costs it some) until it has.
    let mut m = Value::Null;
    for _ in 0..200 {
        let text = c.metrics().await.text();
        let Some(parsed) = parse_metrics(&text) else {
            return;
        };
        m = parsed;
        if value(&m, "process_cpu_seconds", "process_cpu_seconds_total") > 0.0 {
            break;
        }
    }
    let pid = d.child.id();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let cpu = value(&m, "process_cpu_seconds", "process_cpu_seconds_total");
    assert!(cpu > 0.0 && cpu < 600.0, "cpu {cpu}");
    let rss = value(
        &m,
        "process_resident_memory_bytes",
        "process_resident_memory_bytes",
    );
    assert!(rss > 1e6, "rss {rss}");
    let fds = value(&m, "process_open_fds", "process_open_fds");
    let listed = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count() as f64;
    assert!(
        fds >= 4.0 && (fds - listed).abs() <= 8.0,
        "fds {fds}, /proc lists {listed}"
    );
    assert!(value(&m, "process_max_fds", "process_max_fds") >= fds);
    let started = value(
        &m,
        "process_start_time_seconds",
        "process_start_time_seconds",
    );
    assert!(
        started <= now + 1.0 && started > now - 300.0,
        "start {started}, now {now}"
    );
    // The judges' token and cost counters are there before the first call.
    for family in ["seal_judge_tokens", "seal_judge_cost_rmb"] {
        assert!(m.get(family).is_some(), "{family} missing");
    }
}

// ---- judge credentials at the engine ------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judges_without_a_key_are_refused_even_when_start_up_checks_are_skipped() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let url = lb.url();
    let env = move |k: &str| match k {
        "SEAL_JUDGE_A_URL" | "SEAL_JUDGE_B_URL" => Some(url.clone()),
        "SEAL_JUDGE_A_KEY" => Some("sk-only-a-has-a-key".to_string()),
        "SEAL_SEED_SALT" => Some("ops-salt-0123456789abcdef0123456789abcdef".to_string()),
        _ => None,
    };
    let config =
        seal_engine::config::Config::parse("ops", seal_engine::config::EMBEDDED, &env).unwrap();
    let store = seal_store::Store::open("memory://").await.unwrap();
    let refused = seal_engine::engine::Engine::new(store, config, None)
        .err()
        .expect("an engine whose judge b has no key is refused");
    let said = refused.to_string();
    assert!(
        said.contains("judge b: DASHSCOPE_API_KEY (or SEAL_JUDGE_B_KEY) is not set")
            && !said.contains("judge a:"),
        "{said}"
    );
    assert!(lb.calls().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_none_with_a_key_set_warns_that_the_key_is_not_sent() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let text = seal_engine::config::EMBEDDED.replace(
        "api_key_env = \"DASHSCOPE_API_KEY\"\n",
        "api_key_env = \"DASHSCOPE_API_KEY\"\nauth = \"none\"\n",
    );
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(dir.path().join("config/seal.toml"), text).unwrap();
    let key = "sk-set-but-unused-0123456789";
    let mut c = seal_cmd_with(
        dir.path(),
        &lb,
        "",
        "",
        "ops-salt-0123456789abcdef0123456789abcdef",
    );
    c.env_remove("SEAL_JUDGE_A_KEY")
        .env_remove("SEAL_JUDGE_B_KEY")
        .env("DASHSCOPE_API_KEY", key)
        .arg("judge")
        .arg(example("run-narrative-0010-pass"))
        .args(["--store", "file://./store", "--key", "keys/seal.key.pem"]);
    let out = run(c).await;
    let err = text_of(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for slot in ["a", "b"] {
        assert!(
            err.lines().any(|l| l.contains("WARN")
                && (l.contains(&format!("slot=\"{slot}\""))
                    || l.contains(&format!("slot={slot}")))
                && l.contains("auth = \"none\" but DASHSCOPE_API_KEY is set: the key is not sent")),
            "slot {slot}: {err}"
        );
    }
    assert!(!err.contains(key), "the key's value is never logged");
    assert!(lb.calls().iter().all(|c| c.authorization.is_none()));
}

fn text_of(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---- never stuck: a configuration change across a restart ------------------------------------

/// A run whose roll 1 is in flight (judge A answered, judge B holds the call) when `seal serve`
/// is killed: (daemon's folder, store URL, run folder). The daemon is dead on return.
async fn roll_in_flight_then_killed(
    lb: &Loopback,
    scratch: &Path,
) -> (tempfile::TempDir, String, seal_fs::runfolder::RunFolder) {
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let root = dir.path().join("store");
    let url = file_url(&root);
    lb.script(MODEL_B, [seal_testkit::loopback::Fault::Hang]);
    let mut d = spawn_daemon(dir.path(), lb, &url, &[]);
    let c = d.client();
    let run = format!("run-narrative-{}-pass", 7000 + rand::random::<u16>() % 2000);
    let folder = renamed_copy(&example("run-narrative-0010-pass"), scratch, &run);
    c.submit(&folder).await;
    let roll = c
        .raw(Method::POST, &format!("/v1/runs/{run}/rolls/1"))
        .body(folder.rolls()[0].canonical().clone());
    // The worker's request dies with the daemon: its answer is not awaited (raw: the typed
    // client would panic on the broken connection).
    let pending = tokio::spawn(async move { roll.send().await.map(|r| r.status()) });
    let attempt = |slot: &str, file: &str| {
        root.join(format!("runs/{run}/roll-1/judge-{slot}/attempt-1/{file}"))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(attempt("a", "meta.json").exists() && attempt("b", "request.json").exists()) {
        assert!(Instant::now() < deadline, "roll 1 never got in flight");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    d.kill_9();
    pending.abort();
    assert!(!attempt("b", "meta.json").exists(), "judge B was in flight");
    (dir, url, folder)
}

/// Issue: "A configuration change across a restart leaves runs stuck forever." Killed while
/// judge B was in flight, restarted with judge B's model changed, the worker re-sends the roll
/// and finalizes: the run is decided and verifies. Judge A's committed answer stands; judge B's
/// attempt is closed as `config_changed`, and neither B's old request nor a new one is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_change_across_a_restart_leaves_no_run_stuck() {
    let lb = Loopback::start(Duration::from_millis(5)).await.unwrap();
    personas(&lb);
    let scratch = tempfile::tempdir().unwrap();
    let (dir, url, folder) = roll_in_flight_then_killed(&lb, scratch.path()).await;
    let run = folder.run().to_string();
    let calls_b = || lb.calls().iter().filter(|c| c.model == MODEL_B).count();
    assert_eq!(calls_b(), 1);

    let d = spawn_daemon(
        dir.path(),
        &lb,
        &url,
        &[("SEAL_JUDGE_B_MODEL", "loop-judge-b-v2")],
    );
    let c = d.client();
    c.roll(&folder, 1).await.expect(StatusCode::OK);
    let body = c.finalize(&run).await.expect(StatusCode::OK).json();
    // Decided and sealed: judge B's failure leaves A alone, so the run is not decisive and the
    // worker is told to judge the game again.
    assert!(body["sealRef"].is_string(), "{body}");
    assert_eq!(body["decision"]["action"], "retry", "{body}");
    let (_, state) = c.run_state(&run).await.status_json();
    assert_eq!(state["phase"], "DECIDED", "{state}");

    // Judge B's attempt 1 was closed, not re-sent; the new model was never asked.
    let meta: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(format!(
            "store/runs/{run}/roll-1/judge-b/attempt-1/meta.json"
        )))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["errorClass"], "config_changed", "{meta}");
    assert_eq!(meta["modelRequested"], MODEL_B, "{meta}");
    assert_eq!(calls_b(), 1, "the old request was sent again");
    assert!(
        !lb.calls().iter().any(|c| c.model == "loop-judge-b-v2"),
        "a request the roll never reserved was sent"
    );
    // An auditor with the public key only: the sealed run verifies.
    let out = seal_in(
        dir.path(),
        &[
            "verify",
            &run,
            "--store",
            &url,
            "--trust",
            "keys/seal.pub.pem",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text_of(&out.stdout),
        text_of(&out.stderr)
    );
}

/// The reservation a resume under another configuration trusts is authenticated: a store writer
/// who rewrites an in-flight roll's `cost-reservation.json` (here: over budget made within
/// budget, its MAC kept) gets the roll refused as planted, under the old configuration and the
/// new one alike, and nothing is sent or sealed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_reservation_is_refused_after_a_restart() {
    let lb = Loopback::start(Duration::from_millis(5)).await.unwrap();
    personas(&lb);
    let scratch = tempfile::tempdir().unwrap();
    let (dir, url, folder) = roll_in_flight_then_killed(&lb, scratch.path()).await;
    let run = folder.run().to_string();
    let path = dir
        .path()
        .join(format!("store/runs/{run}/roll-1/cost-reservation.json"));
    let mut planted: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(planted["reservationMac"].is_string(), "{planted}");
    planted["budgetRmb"] = 1000.into();
    let _ = std::fs::remove_file(&path);
    std::fs::write(&path, serde_json::to_vec(&planted).unwrap()).unwrap();
    let calls = lb.calls().len();
    for model in [MODEL_B, "loop-judge-b-v2"] {
        let d = spawn_daemon(dir.path(), &lb, &url, &[("SEAL_JUDGE_B_MODEL", model)]);
        let (status, body) = d.client().roll(&folder, 1).await.status_json();
        assert_eq!(status, 500, "{model}: {body}");
        let said = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            said.contains("cost-reservation.json") && said.contains("reservationMac"),
            "{model}: {body}"
        );
    }
    assert_eq!(
        lb.calls().len(),
        calls,
        "a judge was called on a planted reservation"
    );
    assert!(!dir
        .path()
        .join(format!("store/runs/{run}/seal.json"))
        .exists());
}

// ---- a restart after kill -9 resumes at once ------------------------------------------------

/// A daemon with the default replica id is killed with SIGKILL while both judges are answering
/// roll 1; a new daemon on the same host and store is asked for the roll again. The leases the
/// dead process holds name this host and a process that no longer runs: the new one takes
/// them over at once and finishes within about one judge answer, instead of waiting out the
/// leases (the judge timeout, 20 s here, plus the margin and the clock-skew bound).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_after_kill_9_takes_over_its_dead_predecessors_leases_at_once() {
    const ANSWER: Duration = Duration::from_millis(1_500);
    let lb = Loopback::start(ANSWER).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let folder =
        seal_fs::runfolder::RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    let mut first = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let c = first.client();
    c.submit(&folder).await;
    let roll = {
        let (c, folder) = (c.clone(), folder.clone());
        tokio::spawn(async move { c.roll(&folder, 1).await })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while lb.calls().len() < 2 {
        assert!(Instant::now() < deadline, "the judges were never called");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill_9();
    let _ = roll.await;
    let leases = std::fs::read_dir(dir.path().join("store/leases"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(leases > 0, "the killed daemon held no lease");
    let second = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let t0 = Instant::now();
    let r = second.client().roll(&folder, 1).await;
    let took = t0.elapsed();
    r.expect_success();
    assert!(
        took < Duration::from_secs(10),
        "the restarted daemon took {took:?}: it waited out its dead predecessor's leases"
    );
    assert!(
        second
            .log_text()
            .contains("held by a process of this host that no longer runs"),
        "{}",
        second.log_text()
    );
}
