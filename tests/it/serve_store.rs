//! `seal serve` on a `file://` store whose folder does not exist (issue 49, item 3): refused,
//! naming the path and `--create-store`, nothing created; with the flag it starts and creates
//! it. Real processes against the loopback judge.

use crate::common;

use common::*;
use seal_testkit::loopback::Loopback;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `seal serve` in `dir` (keys made there) on `store`, with `extra` flags.
fn serve(dir: &Path, lb: &Loopback, store: &str, extra: &[&str]) -> Command {
    let [key_a, key_b, salt] = DAEMON_SECRETS;
    let mut c = seal_cmd_with(dir, lb, key_a, key_b, salt);
    c.args(["serve", "--listen", "127.0.0.1:0", "--store", store])
        .args(["--key", "keys/seal.key.pem"])
        .args(extra);
    c
}

fn keygen(dir: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(dir)
        .args(["keygen", "--out", "keys"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Kills the daemon when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `c` to its end; a daemon still running after 30 s started where it should have refused:
/// killed, and the test fails.
async fn exit_within(mut c: Command) -> std::process::Output {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..300 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!(
        "seal serve started on a store folder that does not exist: {}",
        text(&out.stdout)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_file_store_is_refused_unless_create_store() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());

    // Refused: exit 2 at once, the path and the flag named, nothing created.
    let out = exit_within(serve(dir.path(), &lb, "file://./stroe", &[])).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("store file://./stroe (--store): the folder ./stroe does not exist")
            && stderr.contains("--create-store"),
        "{stderr}"
    );
    assert!(!text(&out.stdout).contains("listening"));
    assert!(!dir.path().join("stroe").exists(), "nothing created");

    // The config's store alike, naming the config as the source.
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    let config = seal_engine::config::EMBEDDED.replacen(
        "store = \"file://./var/store\"",
        "store = \"file://./var/sotre\"",
        1,
    );
    assert!(config.contains("var/sotre"), "the embedded store changed");
    std::fs::write(dir.path().join("config/seal.toml"), config).unwrap();
    let [key_a, key_b, salt] = DAEMON_SECRETS;
    let mut c = seal_cmd_with(dir.path(), &lb, key_a, key_b, salt);
    c.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--key",
        "keys/seal.key.pem",
    ]);
    let out = exit_within(c).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("(store of config/seal.toml)") && stderr.contains("--create-store"),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir.path().join("config")).unwrap();

    // With the flag it starts and the folder is there.
    let mut child = Killed(
        serve(dir.path(), &lb, "file://./stroe", &["--create-store"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        line
    })
    .await
    .unwrap();
    assert!(
        line.starts_with("seal serve listening on http://127.0.0.1:"),
        "{line:?}"
    );
    assert!(dir.path().join("stroe").is_dir());
    drop(child);

    // An existing folder needs no flag (the restart of the same deployment).
    let mut child = Killed(
        serve(dir.path(), &lb, "file://./stroe", &[])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        line
    })
    .await
    .unwrap();
    assert!(
        line.starts_with("seal serve listening on http://127.0.0.1:"),
        "{line:?}"
    );
}
