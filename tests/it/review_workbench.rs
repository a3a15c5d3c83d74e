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
            Command::new("python3")
                .arg(script)
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
                .env("SEAL_SEED_SALT", salt)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let shown = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "the browser script failed:\n{shown}");
    assert!(text(&out.stdout).contains("WORKBENCH OK"), "{shown}");
}
