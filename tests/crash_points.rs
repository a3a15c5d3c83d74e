//! Crash points (docs/DESIGN.md §2, "Crash safety"): a debug `seal` dies by SIGKILL right
//! after its N-th store write (`SEAL_TEST_CRASH_AFTER_WRITE`, seal-store's `crash` module); these
//! tests kill a process at every write of a step, start the next process on the same store
//! and check that it finishes the step, that nothing is called planted, and that the result
//! verifies.

mod common;

use common::*;
use seal::sealing::SigningKey;
use seal_testkit::loopback::Loopback;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const CRASH_ENV: &str = "SEAL_TEST_CRASH_AFTER_WRITE";
const WRITE_LOG_ENV: &str = "SEAL_TEST_WRITE_LOG";

/// The counted writes of a write log, in order: (n, key); and the key crashed after, if any.
fn read_write_log(path: &Path) -> (Vec<(u64, String)>, Option<String>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut writes = Vec::new();
    let mut crashed = None;
    for line in text.lines() {
        let parts: Vec<&str> = line.split('\t').collect();
        match parts.as_slice() {
            ["CRASH", _, key] => crashed = Some(key.to_string()),
            [n, key] => writes.push((n.parse().unwrap(), key.to_string())),
            _ => panic!("not a write log line: {line:?}"),
        }
    }
    (writes, crashed)
}

/// Asserts that a process died by SIGKILL at its armed crash point.
fn assert_crashed(out: &Output, log: &Path, n: u64) {
    assert_eq!(
        out.status.signal(),
        Some(9),
        "crash point {n}: the process was not killed there ({}):\n{}",
        out.status,
        text(&out.stderr)
    );
    let (_, crashed) = read_write_log(log);
    assert!(
        crashed.is_some(),
        "crash point {n}: no CRASH line in the write log"
    );
}

// ---------------------------------------------------------------------------------------------
// Import (`seal replay --from`): the entry is logged before the seal is stored.

/// Everything one import scenario needs: a copy of the fixture store as the archive, a signing
/// key for the destination, a loopback judge (never called: stored replays).
struct ImportRig {
    work: tempfile::TempDir,
    src: PathBuf,
    _src_dir: tempfile::TempDir,
    key: PathBuf,
    public: PathBuf,
    lb: Loopback,
}

const IMPORTED: &str = "run-narrative-0010-pass";
const OTHER: &str = "run-trpg-0021-pass";

impl ImportRig {
    async fn new() -> ImportRig {
        let (_src_dir, src) = copy_fixture_store();
        let work = tempfile::tempdir().unwrap();
        let (key, public) = SigningKey::generate().write_pair(work.path()).unwrap();
        let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
        personas(&lb);
        ImportRig {
            work,
            src,
            _src_dir,
            key,
            public,
            lb,
        }
    }

    /// `seal replay RUNS --from <archive> --judges stored --jobs 1` into `store`.
    fn replay(&self, runs: &[&str], store: &Path) -> Command {
        let mut c = seal_cmd_with(
            self.work.path(),
            &self.lb,
            "sk-crash-a",
            "sk-crash-b",
            "crash-points-salt-0123456789abcdef0123456789ab",
        );
        c.arg("replay")
            .args(runs)
            .args(["--judges", "stored", "--jobs", "1", "--json"])
            .arg("--from")
            .arg(file_url(&self.src))
            .arg("--store")
            .arg(file_url(store))
            .arg("--key")
            .arg(&self.key)
            .arg("--trust")
            .arg(fixture_trust_pem());
        c
    }

    /// `seal verify --all` on `store`: its exit code and output.
    async fn verify_all(&self, store: &Path) -> Output {
        let mut c = seal_cmd_with(self.work.path(), &self.lb, "a", "b", "salt");
        c.args(["verify", "--all", "--store"])
            .arg(file_url(store))
            .arg("--trust")
            .arg(&self.public)
            .arg("--trust")
            .arg(fixture_trust_pem());
        run(c).await
    }
}

/// The write index at which an uninterrupted import of [`IMPORTED`] stores its seal: the
/// import's crash points are 1 up to it.
async fn import_writes(rig: &ImportRig) -> u64 {
    let store = rig.work.path().join("reference");
    let log = rig.work.path().join("reference.writes");
    let mut c = rig.replay(&[IMPORTED], &store);
    c.env(WRITE_LOG_ENV, &log);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (writes, _) = read_write_log(&log);
    let seal = format!("runs/{IMPORTED}/seal.dsse.json");
    writes
        .iter()
        .find(|(_, k)| *k == seal)
        .map(|(n, _)| *n)
        .unwrap_or_else(|| panic!("the import wrote no seal: {writes:?}"))
}

/// One crash point of the import: kill the import of [`IMPORTED`] after its `n`-th write; then
/// another import reads the store first (`--jobs 1` keeps the order) and the interrupted one
/// is run again: both must succeed, and the store must verify.
async fn survive_import_crash(rig: &ImportRig, n: u64) {
    let store = rig.work.path().join(format!("store-{n}"));
    let log = rig.work.path().join(format!("crash-{n}.writes"));
    let mut c = rig.replay(&[IMPORTED], &store);
    c.env(CRASH_ENV, n.to_string()).env(WRITE_LOG_ENV, &log);
    let out = run(c).await;
    assert_crashed(&out, &log, n);
    let out = run(rig.replay(&[OTHER, IMPORTED], &store)).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "crash point {n} (after {:?}): the next import failed:\n{}\n{}",
        read_write_log(&log).1,
        text(&out.stdout),
        text(&out.stderr)
    );
    let out = rig.verify_all(&store).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "crash point {n}: {}",
        text(&out.stdout)
    );
}

/// The race the log guard saw between two `seal replay --from` processes: one has stored an
/// imported seal, the other reads the store before the first logged it. Killing the first
/// import after each of its writes freezes every state another process can see; in none of
/// them may another import be refused, and the rerun must finish the import.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_killed_at_any_write_never_stops_another_import() {
    use futures::StreamExt;
    let rig = ImportRig::new().await;
    let last = import_writes(&rig).await;
    let started = Instant::now();
    // Two points at once: each has its own store, and the processes mostly wait on fsyncs.
    futures::stream::iter(1..=last)
        .for_each_concurrent(2, |n| survive_import_crash(&rig, n))
        .await;
    println!(
        "import: {last} crash points survived in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
