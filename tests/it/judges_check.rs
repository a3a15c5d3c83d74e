//! `seal judges check` as an operator meets it (issue 49, item 5), each case the real binary
//! against the loopback judge: `--slot a` needs only judge A's key; a base URL that already ends
//! in `/chat/completions` is used as the base (and said so), not posted to twice; a failed check
//! shows the URL it posted to and, for structured output, what the judge answered, escaped.

use crate::common;

use common::*;
use seal_testkit::loopback::{Fault, Loopback};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const SALT: &str = "judges-check-salt-0123456789abcdef0123456789";
const KEY_A: &str = "sk-judges-check-a-1234567890";
const KEY_B: &str = "sk-judges-check-b-0987654321";

/// `seal judges check ARGS` in `dir`, both slots on `lb`, judge A's key only unless `key_b`;
/// no key variable inherited from the test's environment.
fn check(dir: &Path, lb: &Loopback, key_b: bool, env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut c = seal_cmd_with(dir, lb, KEY_A, KEY_B, SALT);
    c.env_remove("DASHSCOPE_API_KEY")
        .env("SEAL_JUDGE_TIMEOUT_MS", "5000");
    if !key_b {
        c.env_remove("SEAL_JUDGE_B_KEY");
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(["judges", "check"]).args(args);
    c
}

fn ok_answer(lb: &Loopback) {
    lb.script(MODEL_A, [Fault::Content(r#"{"ok": true}"#.into())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_a_alone_needs_only_judge_a_s_key() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    ok_answer(&lb);
    let dir = tempfile::tempdir().unwrap();
    let out = run(check(dir.path(), &lb, false, &[], &["--slot", "a"])).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stderr.contains("judge b"), "{stderr}");
    assert_eq!(lb.calls().len(), 1, "one call, to slot a");
    assert!(stdout.lines().any(|l| l.starts_with("a ")), "{stdout}");
    assert!(!stdout.lines().any(|l| l.starts_with("b ")), "{stdout}");

    // Both slots still need both keys, named.
    let out = run(check(dir.path(), &lb, false, &[], &[])).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("judge b: DASHSCOPE_API_KEY (or SEAL_JUDGE_B_KEY) is not set"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(lb.calls().len(), 1, "no call without every key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_url_ending_in_chat_completions_is_used_as_the_base_and_said_so() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    ok_answer(&lb);
    let dir = tempfile::tempdir().unwrap();
    let full = format!("{}/chat/completions/", lb.url());
    let env = [("SEAL_JUDGE_A_URL", full.as_str())];
    let out = run(check(dir.path(), &lb, false, &env, &["--slot", "a"])).await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert_eq!(lb.calls().len(), 1);
    assert!(
        stdout.contains("note: SEAL_JUDGE_A_URL ends in /chat/completions")
            && stdout.contains(&format!("using {} as the base URL", lb.url())),
        "{stdout}"
    );

    // The same from the config file: the note names the file's key.
    ok_answer(&lb);
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    let text_of_config = seal_engine::config::EMBEDDED.replacen(
        "[judges.a]\nbase_url = \"https://dashscope.aliyuncs.com/compatible-mode/v1\"\n",
        &format!("[judges.a]\nbase_url = {full:?}\n"),
        1,
    );
    assert!(
        text_of_config.contains(&full),
        "the embedded slot a changed"
    );
    std::fs::write(dir.path().join("config/seal.toml"), text_of_config).unwrap();
    let mut c = check(dir.path(), &lb, false, &[], &["--slot", "a", "--json"]);
    c.env_remove("SEAL_JUDGE_A_URL");
    let out = run(c).await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let row: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        row["url"],
        format!("{}/chat/completions", lb.url()),
        "{row}"
    );
    assert!(
        row["note"]
            .as_str()
            .unwrap_or_default()
            .starts_with("judges.a.base_url of config/seal.toml ends in /chat/completions"),
        "{row}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_check_shows_the_url_and_the_judge_s_answer_escaped_and_bounded() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let prose = format!(
        "Sure!\u{1b}[2J\u{202e} here is the object you asked for: {}",
        "ok ".repeat(400)
    );
    lb.script(MODEL_A, [Fault::Content(prose)]);
    let dir = tempfile::tempdir().unwrap();
    // Slot b on a port nobody listens on: its row fails at reach, with the URL.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/v1", dead.local_addr().unwrap());
    drop(dead);
    let env = [("SEAL_JUDGE_B_URL", dead_url.as_str())];
    let out = run(check(dir.path(), &lb, true, &env, &[])).await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("posted to {}/chat/completions", lb.url())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("posted to {dead_url}/chat/completions")),
        "{stdout}"
    );
    let answered = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("judge answered: "))
        .unwrap_or_else(|| panic!("no answer shown: {stdout}"));
    assert!(
        answered.contains(r"Sure!\u{1b}[2J\u{202e} here is the object"),
        "{answered}"
    );
    assert!(answered.contains("more characters)"), "{answered}");
    assert!(answered.chars().count() < 400, "bounded: {answered}");
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{202e}'),
        "{stdout:?}"
    );
}
