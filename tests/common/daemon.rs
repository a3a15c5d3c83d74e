//! `seal serve` as a real process: spawned from an empty folder with both judge slots pointed
//! at a loopback judge, its log written to a file (a pipe nobody reads would stall it).

use seal_fs::runfolder::RunFolder;
use seal_testkit::client::SealClient;
use seal_testkit::loopback::Loopback;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The judge API keys and seed salt every spawned daemon gets (tests look for them in logs).
pub const DAEMON_SECRETS: [&str; 3] = [
    "sk-daemon-secret-a",
    "sk-daemon-secret-b",
    "daemon-salt-0123456789abcdef0123456789abcdef",
];

pub struct Daemon {
    pub child: Child,
    pub base: String,
    /// The daemon's stderr (JSON log lines).
    pub log: PathBuf,
}

impl Daemon {
    /// Kills the process with SIGKILL and reaps it.
    pub fn kill_9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A client of this daemon's API.
    pub fn client(&self) -> SealClient {
        SealClient::new(&self.base)
    }

    pub fn log_text(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.log).unwrap_or_default()).into_owned()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill_9();
    }
}

static SPAWNED: AtomicUsize = AtomicUsize::new(0);

/// Starts `seal serve` in `dir` (which holds `keys/` and, if the test wants one,
/// `config/seal.toml`) on an ephemeral port, on `store`, with `extra_env` set.
pub fn spawn_daemon(dir: &Path, lb: &Loopback, store: &str, extra_env: &[(&str, &str)]) -> Daemon {
    let [key_a, key_b, salt] = DAEMON_SECRETS;
    let mut cmd = super::seal_cmd_with(dir, lb, key_a, key_b, salt);
    let n = SPAWNED.fetch_add(1, Ordering::SeqCst);
    let log = dir.join(format!("daemon-{}-{n}.log", std::process::id()));
    cmd.args([
        "--log-format",
        "json",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--store",
        store,
        "--key",
        "keys/seal.key.pem",
        "--create-store",
    ])
    .env("SEAL_JUDGE_TIMEOUT_MS", "20000")
    .stdout(Stdio::piped())
    .stderr(Stdio::from(std::fs::File::create(&log).unwrap()));
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    // In JSON log mode the first stdout line is JSON as well: stdout holds nothing else.
    let base = serde_json::from_str::<serde_json::Value>(&line)
        .ok()
        .and_then(|v| v["url"].as_str().map(str::to_owned))
        .unwrap_or_default();
    assert!(
        base.starts_with("http://127.0.0.1:"),
        "unexpected first line {line:?}; log: {}",
        String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default())
    );
    Daemon { child, base, log }
}

/// `seal keygen --out keys` in `dir`.
pub fn keygen(dir: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(dir)
        .args(["keygen", "--out", "keys"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A copy of an example run folder under another run id.
pub fn renamed_copy(from: &Path, to: &Path, run: &str) -> RunFolder {
    super::copy_tree(from, to);
    let h = to.join("header.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&h).unwrap()).unwrap();
    v["runId"] = run.into();
    std::fs::write(&h, serde_json::to_vec(&v).unwrap()).unwrap();
    RunFolder::read(to, 1 << 26).unwrap()
}
