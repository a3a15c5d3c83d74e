//! The review workbench end to end (issue 48): a hostile, disputed run sealed `inconclusive`,
//! `seal serve` on its store with a reviewer token, and `tests/browser/review_workbench.py`
//! driving the system Chromium through Playwright (CDP, no browser download): log in, the
//! queue, the run, a key generated in the page and refused while untrusted, the daemon
//! restarted trusting its exported public key, every obligation decided by keyboard, submit;
//! then `seal verify --trust-reviewer`, securesystemslib and OpenSSL verify the stored
//! envelope, the run has left the queue and `seal export labels` carries the decision.
//! Refused on the way: no session, a wrong CSRF token, a cross-origin POST, a wrong token at
//! login. The game text (`<script>`, bidi controls) stays inert in the page.
//!
//! Needs `python3` with `playwright` and `securesystemslib` and a `chromium` on PATH; without
//! them it prints SKIPPED, unless `SEAL_REQUIRE_PYTHON=1` / `SEAL_REQUIRE_CHROMIUM=1` (CI).

use crate::common;
use common::*;
use std::process::Command;

/// Whether python3 can import Playwright and securesystemslib (a panic under
/// `SEAL_REQUIRE_PYTHON=1`).
fn playwright_ready(test: &str) -> bool {
    let probe = Command::new("python3")
        .args([
            "-c",
            "import playwright.sync_api, securesystemslib.dsse, cryptography",
        ])
        .output();
    let reason = match probe {
        Ok(o) if o.status.success() => return true,
        Ok(o) => format!(
            "python3 cannot import playwright/securesystemslib ({}); .ci/run installs them",
            text(&o.stderr).trim().lines().last().unwrap_or("")
        ),
        Err(e) => format!("python3 is not runnable ({e})"),
    };
    if std::env::var("SEAL_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!("SEAL_REQUIRE_PYTHON=1 but {reason}");
    }
    eprintln!("SKIPPED {test}: {reason}");
    false
}

/// The browser step's fixed budget (it takes about 20 s on two cores).
const BUDGET: std::time::Duration = std::time::Duration::from_secs(180);

/// Runs `cmd` to its end, killed (and the test failed) past `budget`.
fn output_within(mut cmd: Command, budget: std::time::Duration) -> std::process::Output {
    use std::process::Stdio;
    let work = tempfile::tempdir().unwrap();
    let (out, err) = (work.path().join("out"), work.path().join("err"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > budget {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the browser script ran past its {budget:?} budget:\n{}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    std::process::Output {
        status,
        stdout: std::fs::read(out).unwrap_or_default(),
        stderr: std::fs::read(err).unwrap_or_default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_signs_in_the_browser_and_the_review_verifies_like_a_cli_one() {
    let test = "a_reviewer_signs_in_the_browser_and_the_review_verifies_like_a_cli_one";
    let Some(chromium) = chromium(test) else {
        return;
    };
    if !playwright_ready(test) {
        return;
    }
    // Game text and rationales carry a script, attribute breakers and bidi controls.
    let evil = format!(
        "{} | \u{202E}txt.exe\u{202C} \u{2067}isolate\u{2069}",
        hostile_text()
    );
    let (dir, url, pem, run) = sealed_run_judged(
        &evil,
        MODEL_A,
        "failed",
        seal_core::doc::Outcome::Inconclusive,
    )
    .await;
    std::fs::write(
        dir.path().join("seal.toml.in"),
        seal_engine::config::EMBEDDED,
    )
    .unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/browser/review_workbench.py"
    );
    let [key_a, key_b, salt] = DAEMON_SECRETS;
    let out = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || {
            let mut cmd = Command::new("python3");
            cmd.arg(script)
                .env("SEAL_BIN", env!("CARGO_BIN_EXE_seal"))
                .env("WB_DIR", &dir)
                .env("WB_STORE", &url)
                .env("WB_KEY", dir.join("keys/seal.key.pem"))
                .env("WB_TRUST", &pem)
                .env("WB_RUN", &run)
                .env("WB_CHROMIUM", &chromium)
                // The daemon's judges are never called here; their settings must still load.
                .env("SEAL_JUDGE_A_URL", "http://127.0.0.1:9/v1")
                .env("SEAL_JUDGE_B_URL", "http://127.0.0.1:9/v1")
                .env("SEAL_JUDGE_A_MODEL", MODEL_A)
                .env("SEAL_JUDGE_B_MODEL", MODEL_B)
                .env("SEAL_JUDGE_A_KEY", key_a)
                .env("SEAL_JUDGE_B_KEY", key_b)
                .env("SEAL_SEED_SALT", salt);
            output_within(cmd, BUDGET)
        }
    })
    .await
    .unwrap();
    let shown = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "the browser script failed:\n{shown}");
    assert!(text(&out.stdout).contains("WORKBENCH OK"), "{shown}");
}

/// A reviewer token for the in-process daemon.
const TOKEN: &str = "0123456789abcdef-wb";

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// An envelope whose statement names `reviewer` (unsigned: refused before any check of it).
fn envelope_naming(reviewer: &str) -> String {
    use base64::Engine as _;
    let st = serde_json::json!({"predicate": {"reviewer": reviewer}});
    let payload = base64::engine::general_purpose::STANDARD.encode(st.to_string());
    serde_json::json!({"payload": payload, "payloadType": "application/vnd.in-toto+json",
        "signatures": [{"keyid": "00", "sig": "AA=="}]})
    .to_string()
}

/// Without the browser: every workbench page wants a session, every POST its CSRF token, this
/// origin and the session's reviewer; the cookie is HttpOnly and SameSite=Strict; the pages'
/// CSP runs only the daemon's own script; logout ends the session; no token configured, no
/// workbench.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workbench_refuses_without_a_session_a_csrf_token_or_the_right_reviewer() {
    use seal_testkit::loopback::Loopback;
    let lb = Loopback::start(std::time::Duration::from_millis(1))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tokens = format!("ada:{TOKEN}");
    let engine = engine_with(
        &lb,
        &file_url(dir.path()),
        &[("SEAL_REVIEWER_TOKENS", tokens.as_str())],
    )
    .await;
    let (base, _stop) = start(engine).await;
    let c = no_redirects();
    let run = "run-narrative-0010-pass";
    let reviews = format!("{base}/review/api/runs/{run}/reviews");

    let r = c.get(format!("{base}/review/")).send().await.unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/review/login");
    let r = c.post(&reviews).body("{}").send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.text().await.unwrap().contains("no_session"));
    let login = |token: &str| {
        c.post(format!("{base}/review/login"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
    };
    let r = login("not-the-token-at-all").await.unwrap();
    assert_eq!(r.status(), 401);
    let r = login(TOKEN).await.unwrap();
    assert_eq!(r.status(), 303);
    let set = r.headers()["set-cookie"].to_str().unwrap().to_string();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/review"] {
        assert!(set.contains(flag), "{set}");
    }
    assert!(
        !set.contains("Secure"),
        "a loopback host gets no Secure flag: {set}"
    );
    let cookie = set.split(';').next().unwrap().to_string();

    let r = c
        .get(format!("{base}/review/"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe"),
        "{csp}"
    );
    let page = r.text().await.unwrap();
    let meta = "name=\"csrf-token\" content=\"";
    let at = page.find(meta).unwrap() + meta.len();
    let csrf = page[at..at + 64].to_string();
    assert!(!page.contains("<script>"), "an inline script");

    let post = |csrf: Option<&str>, body: String, origin: Option<&str>| {
        let mut req = c
            .post(&reviews)
            .header("cookie", &cookie)
            .header("content-type", "application/json")
            .body(body);
        if let Some(t) = csrf {
            req = req.header("x-csrf-token", t);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req.send()
    };
    let refused = [
        (
            post(None, envelope_naming("ada"), None).await,
            403,
            "bad_csrf_token",
        ),
        (
            post(Some(&"0".repeat(64)), envelope_naming("ada"), None).await,
            403,
            "bad_csrf_token",
        ),
        (
            post(
                Some(&csrf),
                envelope_naming("ada"),
                Some("https://evil.example"),
            )
            .await,
            403,
            "cross_origin",
        ),
        (
            post(Some(&csrf), envelope_naming("grace"), None).await,
            403,
            "reviewer_mismatch",
        ),
    ];
    for (r, status, code) in refused {
        let r = r.unwrap();
        let got = r.status();
        let body = r.text().await.unwrap();
        assert!(got == status && body.contains(code), "{code}: {got} {body}");
    }
    // The session's own reviewer, the right token: past the workbench's checks, to the
    // review rules (no such run in this store).
    let r = post(Some(&csrf), envelope_naming("ada"), None)
        .await
        .unwrap();
    assert_eq!(r.status(), 404, "{}", r.text().await.unwrap());

    let r = c
        .post(format!("{base}/review/logout"))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let r = c
        .get(format!("{base}/review/"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303, "the session outlived its logout");

    // No reviewer token configured: the workbench is closed.
    let dir2 = tempfile::tempdir().unwrap();
    let engine = engine_with(&lb, &file_url(dir2.path()), &[]).await;
    let (base2, _stop2) = start(engine).await;
    let r = c.get(format!("{base2}/review/login")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.text().await.unwrap().contains("closed"));
}
