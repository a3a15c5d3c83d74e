//! Operable as a service (issue 24), each case a real `seal` process against the loopback
//! judge on real sockets: judge keys checked at start, `seal judges check`, the provider's
//! message kept in an attempt's detail.

use crate::common;

use common::*;
use seal_testkit::client::{Method, StatusCode};
use seal_testkit::loopback::{Fault, Loopback};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const SALT: &str = "operable-salt-0123456789abcdef0123456789abcdef";
const KEY_A: &str = "sk-operable-key-a-1234567890";
const KEY_B: &str = "sk-operable-key-b-0987654321";

/// `seal` in `dir` with both slots on `lb`, the keys given, no key variable inherited.
fn seal_without_keys(dir: &Path, lb: &Loopback) -> Command {
    let mut c = seal_cmd_with(dir, lb, "", "", SALT);
    for var in ["SEAL_JUDGE_A_KEY", "SEAL_JUDGE_B_KEY", "DASHSCOPE_API_KEY"] {
        c.env_remove(var);
    }
    c.env("SEAL_JUDGE_TIMEOUT_MS", "5000");
    c
}

fn seal_with_keys(dir: &Path, lb: &Loopback) -> Command {
    let mut c = seal_cmd_with(dir, lb, KEY_A, KEY_B, SALT);
    c.env("SEAL_JUDGE_TIMEOUT_MS", "5000");
    c
}

/// Runs `c` to its end, killing it (and failing) after `secs`: a daemon that should have
/// refused must not hang the test.
async fn output_within(mut c: Command, secs: u64) -> std::process::Output {
    use std::process::Stdio;
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let waiter = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap());
    match tokio::time::timeout(Duration::from_secs(secs), waiter).await {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("still running after {secs} s: it should have refused at start");
        }
    }
}

fn keygen(dir: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(dir)
        .args(["keygen", "--out", "keys"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// The refusal every command that calls judges gives without keys.
fn assert_names_both_key_variables(stderr: &str) {
    assert!(
        stderr.contains("judge a: DASHSCOPE_API_KEY (or SEAL_JUDGE_A_KEY) is not set")
            && stderr.contains("judge b: DASHSCOPE_API_KEY (or SEAL_JUDGE_B_KEY) is not set")
            && stderr.contains("auth = \"none\""),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_without_api_key_refuses_naming_the_variable() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let mut c = seal_without_keys(dir.path(), &lb);
    c.arg("judge")
        .arg(example("run-narrative-0010-pass"))
        .args(["--store", "file://./store", "--key", "keys/seal.key.pem"]);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_names_both_key_variables(&text(&out.stderr));
    assert!(lb.calls().is_empty(), "no judge may be called");
    assert!(
        !dir.path().join("store").exists(),
        "no store may be created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_without_api_key_refuses_naming_the_variable() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let mut c = seal_without_keys(dir.path(), &lb);
    c.args(["serve", "--listen", "127.0.0.1:0"]).args([
        "--store",
        "file://./store",
        "--key",
        "keys/seal.key.pem",
    ]);
    let out = output_within(c, 30).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_names_both_key_variables(&text(&out.stderr));
    assert!(text(&out.stdout).is_empty(), "never listened");
    assert!(
        !dir.path().join("store").exists(),
        "no store may be created"
    );
}

/// The embedded configuration with `line` added to both judge slots.
fn config_with_slot_line(dir: &Path, line: &str) {
    let text = seal_engine::config::EMBEDDED.replace(
        "api_key_env = \"DASHSCOPE_API_KEY\"\n",
        &format!("api_key_env = \"DASHSCOPE_API_KEY\"\n{line}\n"),
    );
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(dir.join("config/seal.toml"), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_none_judge_sends_no_authorization() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    config_with_slot_line(dir.path(), "auth = \"none\"");
    let mut c = seal_without_keys(dir.path(), &lb);
    // A key in the environment is not sent either: the setting says what the judge takes.
    c.env("DASHSCOPE_API_KEY", "sk-should-never-be-sent-123");
    c.arg("judge")
        .arg(example("run-narrative-0010-pass"))
        .args(["--store", "file://./store", "--key", "keys/seal.key.pem"]);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let calls = lb.calls();
    assert!(calls.len() >= 2, "both slots called: {calls:?}");
    assert!(calls.iter().all(|c| c.authorization.is_none()), "{calls:?}");
}

/// Every `meta.json` under the store's judge-`slot` attempts.
fn metas(root: &Path, slot: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.ends_with("meta.json")
                && p.to_string_lossy().contains(&format!("/judge-{slot}/"))
            {
                out.push(serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_error_message_is_kept_redacted_in_attempt_detail() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    // The provider echoes the whole key and a partial one.
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY_A} (sk-op***21).","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    let refusal = Fault::Status {
        code: 401,
        body,
        retry_after: None,
    };
    lb.script(MODEL_A, vec![refusal; 6]);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let mut c = seal_with_keys(dir.path(), &lb);
    c.arg("judge")
        .arg(example("run-narrative-0010-pass"))
        .args(["--store", "file://./store", "--key", "keys/seal.key.pem"]);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let metas = metas(&dir.path().join("store"), "a");
    assert!(!metas.is_empty(), "attempts of slot a stored");
    for m in &metas {
        let detail = m["errorDetail"].as_str().unwrap_or_default();
        assert!(
            detail.starts_with("client error 401: Incorrect API key provided: [redacted]")
                && detail.contains("(invalid_api_key, invalid_request_error)"),
            "{m}"
        );
        assert!(!detail.contains(KEY_A) && !detail.contains("sk-op"), "{m}");
    }
}

fn status(code: u16, body: &str) -> Fault {
    Fault::Status {
        code,
        body: body.to_string(),
        retry_after: None,
    }
}

/// `seal judges check` with slot a on `model_a` and slot b on `model_b`.
async fn judges_check(
    lb: &Loopback,
    dir: &Path,
    models: (&str, &str),
    args: &[&str],
) -> (i32, String) {
    let mut c = seal_with_keys(dir, lb);
    c.env("SEAL_JUDGE_A_MODEL", models.0)
        .env("SEAL_JUDGE_B_MODEL", models.1)
        .args(["judges", "check"])
        .args(args);
    let out = run(c).await;
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains(KEY_A) && !stdout.contains(KEY_B),
        "{stdout}"
    );
    (out.status.code().unwrap_or(-1), stdout)
}

/// The row of `slot` in the table, split on whitespace.
fn row<'a>(table: &'a str, slot: &str) -> Vec<&'a str> {
    let line = table
        .lines()
        .find(|l| l.starts_with(&format!("{slot} ")))
        .unwrap_or_else(|| panic!("no row {slot}: {table}"));
    line.split_whitespace().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judges_check_reports_each_failure_in_a_table() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let no_auth = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY_A}","code":"invalid_api_key"}}}}"#
    );
    lb.script("m-noauth", [status(401, &no_auth)]);
    lb.script(
        "m-gone",
        [status(
            404,
            r#"{"error":{"message":"The model `m-gone` does not exist","code":"model_not_found"}}"#,
        )],
    );
    let (code, table) = judges_check(&lb, dir.path(), ("m-noauth", "m-gone"), &[]).await;
    assert_eq!(code, 1, "{table}");
    // slot host model reach auth model structured latency …
    assert_eq!(row(&table, "a")[3..7], ["ok", "FAIL", "-", "-"], "{table}");
    assert!(
        table.contains("HTTP 401: Incorrect API key provided: [redacted]"),
        "{table}"
    );
    assert_eq!(row(&table, "b")[3..7], ["ok", "ok", "FAIL", "-"], "{table}");
    assert!(
        table.contains("does not exist (model_not_found)"),
        "{table}"
    );
    // One minimal request per slot, through the production path (with the key).
    let calls = lb.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls
        .iter()
        .all(|c| c.user.as_deref() == Some("seal-judges-check")));
    assert!(calls.iter().all(|c| c
        .authorization
        .as_deref()
        .is_some_and(|a| a.starts_with("Bearer sk-operable"))));

    lb.script("m-noschema", [status(400, r#"{"error":{"message":"'response_format.type' json_schema is not supported by this model"}}"#)]);
    lb.script("m-fine", [Fault::Content(r#"{"ok": true}"#.into())]);
    let (code, json) = judges_check(&lb, dir.path(), ("m-noschema", "m-fine"), &["--json"]).await;
    assert_eq!(code, 1, "{json}");
    let rows: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["structured"], "fail", "{json}");
    assert!(
        rows[0]["detail"]
            .as_str()
            .unwrap()
            .contains("set structured_output = false"),
        "{json}"
    );
    for col in ["reach", "auth", "modelKnown", "structured"] {
        assert_eq!(rows[1][col], "ok", "{json}");
    }

    lb.script("m-fine", [Fault::Content(r#"{"ok": true}"#.into())]);
    let (code, table) =
        judges_check(&lb, dir.path(), ("m-noauth", "m-fine"), &["--slot", "b"]).await;
    assert_eq!(code, 0, "{table}");
    assert_eq!(row(&table, "b")[3..7], ["ok", "ok", "ok", "ok"], "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judges_check_without_keys_refuses_naming_the_variable() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut c = seal_without_keys(dir.path(), &lb);
    c.args(["judges", "check"]);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_names_both_key_variables(&text(&out.stderr));
    assert!(lb.calls().is_empty());
}

// ---- probes, the log admission off the start path, the build ---------------------------------

/// The commit `git rev-parse HEAD` names, when this is a git checkout.
fn head_commit() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| text(&out.stdout).trim().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_binds_before_reading_history() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    // The admission is held back 16 s: the daemon must answer long before that.
    let t0 = std::time::Instant::now();
    let d = spawn_daemon(
        dir.path(),
        &lb,
        "file://./store",
        &[("SEAL_TEST_ADMISSION_DELAY_MS", "16000")],
    );
    let c = d.client();
    let live = c.livez().await;
    let up = t0.elapsed();
    live.expect(StatusCode::OK);
    assert!(up < Duration::from_secs(6), "listening took {up:?}");
    let ready = c.readyz().await.expect(StatusCode::OK).json();
    assert_eq!(
        (ready["store"].as_str(), ready["admission"].as_str()),
        (Some("ok"), Some("pending")),
        "{ready}"
    );
    let metrics = c.metrics().await.text();
    assert!(
        metrics.contains("seal_log_admission{state=\"pending\"} 1"),
        "{metrics}"
    );
    // Intake runs meanwhile. A roll, whose judges are asked only under a judge policy the
    // log holds, and finalize, which appends to the log, wait, then 503.
    let folder =
        seal_fs::runfolder::RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    c.submit(&folder).await;
    let r = c.roll(&folder, 1).await;
    let (code, body) = r.status_json();
    assert_eq!(code.as_u16(), 503, "{body}");
    assert_eq!(body["error"]["code"], "log_not_admitted", "{body}");
    assert!(
        lb.calls().is_empty(),
        "a judge was asked before the policy was logged"
    );
    let r = c.finalize(folder.run()).await;
    let (code, body) = r.status_json();
    assert_eq!(
        (code.as_u16(), r.header("retry-after")),
        (503, Some("5")),
        "{body}"
    );
    assert_eq!(body["error"]["code"], "log_not_admitted", "{body}");
    assert!(
        !dir.path().join("store/log").exists()
            || std::fs::read_dir(dir.path().join("store/log/entries"))
                .map(|d| d.count() == 0)
                .unwrap_or(true),
        "nothing logged before the admission"
    );
    // Once admitted, the same finalize seals.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let body = c.readyz().await.text();
        if body.contains("\"admitted\"") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never admitted: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    c.roll(&folder, 1).await.expect(StatusCode::OK);
    c.finalize(folder.run()).await.expect(StatusCode::OK);
    eprintln!(
        "seal serve: /livez answered {} ms after spawn",
        up.as_millis()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalize_waits_for_log_admission() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let d = spawn_daemon(
        dir.path(),
        &lb,
        "file://./store",
        &[("SEAL_TEST_ADMISSION_DELAY_MS", "3000")],
    );
    let c = d.client();
    let folder =
        seal_fs::runfolder::RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    c.submit(&folder).await;
    let ready = c.readyz().await.text();
    assert!(
        ready.contains("\"pending\""),
        "still admitting when the roll is sent: {ready}"
    );
    // Within the 5 s a roll waits (its judges are asked under a judge policy the log holds),
    // the admission ends: it is judged, and the finalize seals, no retry needed.
    c.roll(&folder, 1).await.expect(StatusCode::OK);
    let body = c.finalize(folder.run()).await.expect(StatusCode::OK).json();
    assert_eq!(body["outcome"], "pass", "{body}");
}

#[test]
fn version_names_the_commit() {
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let version = text(&out.stdout);
    assert!(
        version.starts_with(&format!("seal {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    assert!(version.contains(", rustc "), "{version}");
    if let Some(head) = head_commit() {
        assert!(version.contains(&head), "{version} is not HEAD {head}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_name_the_build_and_livez_needs_no_token() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let d = spawn_daemon(
        dir.path(),
        &lb,
        "file://./store",
        &[("SEAL_API_TOKEN", "operable-api-token-0123456789")],
    );
    let c = d.client();
    for probe in ["livez", "readyz", "healthz"] {
        let r = c.get(&format!("/{probe}")).await;
        assert_eq!(
            r.status.as_u16(),
            200,
            "/{probe} without a token: {}",
            r.text()
        );
    }
    assert_eq!(c.metrics().await.status.as_u16(), 401);
    let metrics = c
        .clone()
        .with_token("operable-api-token-0123456789")
        .metrics()
        .await
        .text();
    assert!(
        metrics.contains("# TYPE seal_build_info gauge"),
        "{metrics}"
    );
    let commit = head_commit().unwrap_or_default();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("seal_build_info{"))
        .unwrap_or_default();
    assert!(
        line.contains(&format!("commit=\"{commit}")) && line.ends_with(" 1"),
        "{line}"
    );
}

// ---- metrics, access log, request ids, colour ------------------------------------------------

/// The value of the sample `name{labels}` in parsed metrics.
fn sample(m: &serde_json::Value, family: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    m[family]["samples"].as_array()?.iter().find_map(|s| {
        let l = &s[1];
        let all = labels.iter().all(|(k, v)| l[*k] == *v);
        (s[0] == name && all && l.as_object().map(|o| o.len()) == Some(labels.len()))
            .then(|| s[2].as_f64())
            .flatten()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_with_a_prometheus_parser_with_help_and_known_series_at_zero() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let d = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let c = d.client();
    let before = c.metrics().await.text();
    let Some(m) = parse_metrics(&before) else {
        return;
    };
    let deploying =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/DEPLOYING.md")).unwrap();
    for (family, v) in m.as_object().unwrap() {
        assert!(
            !v["help"].as_str().unwrap_or_default().is_empty(),
            "{family} has no HELP"
        );
        assert!(
            deploying.contains(&format!("| `{family}")),
            "{family} is not in docs/DEPLOYING.md §6"
        );
    }
    // Series an alert divides by exist before the first event.
    for (family, name, labels) in [
        (
            "seal_judge_attempts",
            "seal_judge_attempts_total",
            vec![("slot", "a"), ("result", "error")],
        ),
        (
            "seal_judge_failures",
            "seal_judge_failures_total",
            vec![("slot", "b"), ("class", "timeout")],
        ),
        (
            "seal_runs_decided",
            "seal_runs_decided_total",
            vec![("outcome", "infra_error")],
        ),
        (
            "seal_http_request_duration_seconds",
            "seal_http_request_duration_seconds_count",
            vec![("route", "/v1/runs/{run_id}/finalize"), ("method", "POST")],
        ),
    ] {
        assert_eq!(
            sample(&m, family, name, &labels),
            Some(0.0),
            "{name}{labels:?}:\n{before}"
        );
    }
    // One run through the API: the roll is counted by route template, tokens by slot.
    let folder =
        seal_fs::runfolder::RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    c.submit(&folder).await;
    c.roll(&folder, 1).await.expect(StatusCode::OK);
    c.finalize(folder.run()).await.expect(StatusCode::OK);
    let after = c.metrics().await.text();
    let m = parse_metrics(&after).unwrap();
    let roll = [
        ("route", "/v1/runs/{run_id}/rolls/{n}"),
        ("method", "POST"),
        ("status", "200"),
    ];
    assert_eq!(
        sample(&m, "seal_http_requests", "seal_http_requests_total", &roll),
        Some(1.0),
        "{after}"
    );
    assert!(
        sample(
            &m,
            "seal_judge_tokens",
            "seal_judge_tokens_total",
            &[("slot", "a"), ("kind", "input")]
        )
        .unwrap_or(0.0)
            > 0.0,
        "{after}"
    );
    assert_eq!(
        sample(
            &m,
            "seal_runs_decided",
            "seal_runs_decided_total",
            &[("outcome", "pass")]
        ),
        Some(1.0),
        "{after}"
    );
    assert!(
        !after.contains(folder.run().as_str()),
        "no run id may become a label"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_gets_an_access_log_line_with_its_request_id() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let d = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let c = d.client();
    let r = c
        .send(
            c.raw(Method::GET, "/livez")
                .header("x-request-id", "worker-7:run-0010.a"),
        )
        .await;
    assert_eq!(r.headers["x-request-id"], "worker-7:run-0010.a");
    // A hostile id is replaced, never echoed; a refusal carries an id too.
    let r = c
        .send(
            c.raw(Method::GET, "/v1/nope")
                .header("x-request-id", "x\"}{\"evil\":1"),
        )
        .await;
    assert_eq!(r.status.as_u16(), 404);
    let fresh = r.headers["x-request-id"].to_str().unwrap().to_string();
    assert!(
        fresh.len() == 32 && fresh.bytes().all(|b| b.is_ascii_hexdigit()),
        "{fresh}"
    );
    // The access lines are written when the answer is: wait for both.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let lines = loop {
        let access: Vec<serde_json::Value> = d
            .log_text()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["target"] == "seal::access")
            .collect();
        if access.len() >= 2 || std::time::Instant::now() > deadline {
            break access;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let find = |id: &str| {
        lines
            .iter()
            .find(|v| v["fields"]["request_id"] == id)
            .cloned()
    };
    let live = find("worker-7:run-0010.a").unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(live["level"], "INFO");
    assert_eq!(
        (
            live["fields"]["route"].as_str(),
            live["fields"]["status"].as_u64()
        ),
        (Some("/livez"), Some(200)),
        "{live}"
    );
    assert!(live["fields"]["duration_ms"].is_u64(), "{live}");
    let nope = find(&fresh).unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(
        (
            nope["fields"]["route"].as_str(),
            nope["fields"]["status"].as_u64()
        ),
        (Some("unmatched"), Some(404)),
        "{nope}"
    );
    assert!(
        !d.log_text().contains("evil"),
        "the hostile id never reaches the log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_to_a_pipe_carry_no_ansi() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    lb.script(MODEL_A, [Fault::Content(r#"{"ok": true}"#.into())]);
    let dir = tempfile::tempdir().unwrap();
    let mut c = seal_with_keys(dir.path(), &lb);
    c.env("SEAL_LOG", "debug")
        .env_remove("NO_COLOR")
        .args(["judges", "check", "--slot", "a"]);
    let out = run(c).await;
    let stderr = text(&out.stderr);
    assert!(
        stderr.lines().count() >= 1,
        "debug lines expected: {stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "escape codes in a pipe: {stderr:?}"
    );
}

// ---- quiet pipes -------------------------------------------------------------------------------

/// Runs `seal args…` with stdout a pipe the test closes after the first line: (exit code or
/// signal, stderr).
fn first_line_then_close(args: &[&str]) -> (std::process::ExitStatus, String) {
    use std::io::BufRead;
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(dir.path())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).unwrap();
    assert!(!line.is_empty(), "{args:?} printed nothing");
    drop(out);
    let output = child.wait_with_output().unwrap();
    (output.status, text(&output.stderr))
}

#[test]
fn verify_all_piped_into_head_exits_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let store = file_url(&fixture_store_dir());
    let pem = fixture_trust_pem().display().to_string();
    for args in [
        vec![
            "verify", "--all", "--store", &store, "--trust", &pem, "--jobs", "1",
        ],
        vec![
            "verify", "--all", "--store", &store, "--trust", &pem, "--json",
        ],
        vec![
            "log", "verify", "--store", &store, "--trust", &pem, "--json",
        ],
    ] {
        let (status, stderr) = first_line_then_close(&args);
        // Killed by SIGPIPE (as `head` leaves coreutils), or done before the pipe closed.
        let quiet =
            status.signal() == Some(libc_sigpipe()) || status.code().is_some_and(|c| c != 101);
        assert!(quiet, "{args:?}: {status:?}\n{stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}

/// SIGPIPE's number on Linux and the BSDs.
fn libc_sigpipe() -> i32 {
    13
}

// ---- idempotent retries on a decided run ------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_header_after_decision_answers_200_with_state() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let d = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let c = d.client();
    let folder =
        seal_fs::runfolder::RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    let run = folder.run().as_str().to_string();
    c.submit(&folder).await;
    c.roll(&folder, 1).await.expect(StatusCode::OK);
    c.finalize(&run).await.expect(StatusCode::OK);
    // (status as a number, body as JSON or Null): the checks below compare both at once.
    let parts = |r: seal_testkit::client::Reply| {
        let (status, body) = r.status_json();
        (status.as_u16(), body)
    };
    // The same header, even pretty-printed (the same canonical document): 200 and the state.
    let header: serde_json::Value = serde_json::from_slice(folder.header_bytes()).unwrap();
    let pretty = serde_json::to_vec_pretty(&header).unwrap();
    for bytes in [folder.header_bytes().to_vec(), pretty] {
        let (status, body) = parts(c.put_header(&run, bytes).await);
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            (
                body["phase"].as_str(),
                body["outcome"].as_str(),
                body["decision"]["action"].as_str()
            ),
            (Some("DECIDED"), Some("pass"), Some("accept")),
            "{body}"
        );
        assert_eq!(body["key"], format!("runs/{run}/header.json"), "{body}");
    }
    let (status, body) = parts(c.put_brief(&run, folder.brief().to_vec()).await);
    assert_eq!(
        (status, body["outcome"].as_str()),
        (200, Some("pass")),
        "{body}"
    );
    if let Some(spec) = folder.play_spec() {
        let (status, body) = parts(c.put_play_spec(&run, spec.to_vec()).await);
        assert_eq!(
            (status, body["outcome"].as_str()),
            (200, Some("pass")),
            "{body}"
        );
    }
    // Other bytes are still refused.
    let mut other = header.clone();
    other["designId"] = "another-design".into();
    let (status, body) = parts(
        c.put_header(&run, serde_json::to_vec(&other).unwrap())
            .await,
    );
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("run_decided")),
        "{body}"
    );
    let (status, body) = parts(c.put_brief(&run, b"another brief".to_vec()).await);
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("run_decided")),
        "{body}"
    );
}

// ---- gateway headers ------------------------------------------------------------------------

/// Whether any file under `root` contains `needle`.
fn any_file_contains(root: &Path, needle: &str) -> Option<std::path::PathBuf> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
            {
                return Some(p);
            }
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_headers_are_sent_and_their_values_never_stored() {
    const GATEWAY: &str = "gw-secret-value-0123456789";
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    // The gateway echoes its header in a refusal: the stored answer must not keep it.
    let echo = format!(r#"{{"error":{{"message":"api-key {GATEWAY} is not allowed here"}}}}"#);
    lb.script(MODEL_A, [status(403, &echo)]);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    config_with_slot_line(dir.path(), "headers = { \"api-key\" = \"GATEWAY_KEY\" }");
    let mut c = seal_with_keys(dir.path(), &lb);
    c.env("GATEWAY_KEY", GATEWAY)
        .env("SEAL_LOG", "debug")
        .arg("judge")
        .arg(example("run-narrative-0010-pass"))
        .args(["--store", "file://./store", "--key", "keys/seal.key.pem"]);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let calls = lb.calls();
    assert!(calls.len() >= 2, "{calls:?}");
    assert!(
        calls
            .iter()
            .all(|c| c.headers.get("api-key").map(String::as_str) == Some(GATEWAY)),
        "{calls:?}"
    );
    assert!(
        !text(&out.stderr).contains(GATEWAY),
        "a log line holds the header value"
    );
    assert_eq!(any_file_contains(&dir.path().join("store"), GATEWAY), None);
    // Without the variable, nothing is called.
    let before = lb.calls().len();
    let mut c = seal_with_keys(dir.path(), &lb);
    c.env_remove("GATEWAY_KEY")
        .arg("judge")
        .arg(example("run-puzzle-0013-fail-end"))
        .args(["--store", "file://./store", "--key", "keys/seal.key.pem"]);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("GATEWAY_KEY (the value of header api-key) is not set"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(lb.calls().len(), before);
}
