//! Headless Chromium for the page tests: find it (or skip, unless `SEAL_REQUIRE_CHROMIUM=1`),
//! run it with a fresh profile, read its console.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The browser, or None (and a SKIPPED line naming `test`) where there is none.
pub fn chromium(test: &str) -> Option<PathBuf> {
    let candidates = ["chromium", "chromium-browser", "google-chrome"];
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for c in candidates {
            let p = dir.join(c);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    if std::env::var("SEAL_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
        panic!(
            "SEAL_REQUIRE_CHROMIUM=1 but no chromium on PATH (.ci/run installs the Debian package)"
        );
    }
    eprintln!(
        "SKIPPED {test}: no chromium on PATH (apt-get install chromium; CI sets \
         SEAL_REQUIRE_CHROMIUM=1 and installs it)"
    );
    None
}

/// Runs headless Chromium with a fresh profile; (stdout, stderr). Killed after 90 s.
pub fn run_chromium(bin: &Path, work: &Path, args: &[String]) -> (String, String) {
    let profile = tempfile::tempdir_in(work).unwrap();
    let out = work.join(format!("out-{}", super::random_hex(4)));
    let err = work.join(format!("err-{}", super::random_hex(4)));
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 90 s: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (
        std::fs::read_to_string(out).unwrap_or_default(),
        std::fs::read_to_string(err).unwrap_or_default(),
    )
}

/// Console lines (script errors, CSP violations, failed loads) in Chromium's log.
pub fn console_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.contains(":CONSOLE")
                || l.contains("Refused to")
                || l.contains("Uncaught")
                || l.contains("Content Security Policy")
        })
        .collect()
}
