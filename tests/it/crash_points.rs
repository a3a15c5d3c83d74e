//! Crash points (docs/DESIGN.md §2, "Crash safety"): a debug `seal` dies by SIGKILL right
//! after its N-th store write (`SEAL_TEST_CRASH_AFTER_WRITE`, seal-store's `crash` module); these
//! tests kill a process at every write of a step, start the next process on the same store
//! and check that it finishes the step, that nothing is called planted, and that the result
//! verifies.

use crate::common;

use common::*;
use seal_testkit::client::{Method, RequestBuilder, SealClient};
use seal_testkit::loopback::Loopback;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub(crate) const CRASH_ENV: &str = "SEAL_TEST_CRASH_AFTER_WRITE";
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
    pub(crate) lb: Loopback,
}

const IMPORTED: &str = "run-narrative-0010-pass";
const OTHER: &str = "run-trpg-0021-pass";

impl ImportRig {
    pub(crate) async fn new() -> ImportRig {
        let (_src_dir, src) = copy_fixture_store();
        let work = tempfile::tempdir().unwrap();
        let (key, public) =
            seal_fs::keys::write_key_pair(&seal_fs::keys::generate_signing_key(), work.path())
                .unwrap();
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
        self.replay_to(runs, &file_url(store))
    }

    /// The same into the store at `url`.
    fn replay_to(&self, runs: &[&str], url: &str) -> Command {
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
            .arg(url)
            .arg("--key")
            .arg(&self.key)
            .arg("--trust")
            .arg(fixture_trust_pem());
        c
    }

    /// `seal verify --all` on `store`: its exit code and output.
    pub(crate) async fn verify_all(&self, store: &Path) -> Output {
        self.verify_all_at(&file_url(store)).await
    }

    /// The same on the store at `url`.
    async fn verify_all_at(&self, url: &str) -> Output {
        let mut c = seal_cmd_with(self.work.path(), &self.lb, "a", "b", "salt");
        c.args(["verify", "--all", "--store"])
            .arg(url)
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

// ---------------------------------------------------------------------------------------------
// A whole stored replay: the import of the source, then its `historical_replay` run (header,
// rolls from copied attempts, finalize, log, seal).

/// Every object under `runs/` of the store at `url` (key → bytes).
async fn run_objects(url: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    let store = seal_store::Store::open(url).await.unwrap();
    let mut out = std::collections::BTreeMap::new();
    for key in store.list("runs").await.unwrap().keys {
        out.insert(key.to_string(), store.get(&key).await.unwrap().to_vec());
    }
    out
}

/// An uninterrupted `seal replay IMPORTED --from … --judges stored` into `url`: its counted
/// writes and the objects it leaves under `runs/`.
async fn replay_reference(
    rig: &ImportRig,
    url: &str,
) -> (
    Vec<(u64, String)>,
    std::collections::BTreeMap<String, Vec<u8>>,
) {
    let log = rig
        .work
        .path()
        .join(format!("replay-ref-{}.writes", random_hex(4)));
    let mut c = rig.replay_to(&[IMPORTED], url);
    c.env(WRITE_LOG_ENV, &log);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (writes, _) = read_write_log(&log);
    let replay_seal = format!("runs/{IMPORTED}.replay-1/seal.dsse.json");
    assert!(
        writes.iter().any(|(_, k)| *k == replay_seal),
        "the reference replay stored no seal of its replay run: {writes:?}"
    );
    (writes, run_objects(url).await)
}

/// One crash point of a whole stored replay: killed after its `n`-th write into `url`, the
/// same command run again must finish it: exit 0, one replay run (`.replay-1`, no second),
/// `seal verify --all` 0, the reference's objects, byte for byte where no timing is held.
async fn survive_replay_crash(
    rig: &ImportRig,
    url: &str,
    reference: &std::collections::BTreeMap<String, Vec<u8>>,
    n: u64,
) {
    let log = rig
        .work
        .path()
        .join(format!("replay-crash-{n}-{}.writes", random_hex(4)));
    let mut c = rig.replay_to(&[IMPORTED], url);
    c.env(CRASH_ENV, n.to_string()).env(WRITE_LOG_ENV, &log);
    let out = run(c).await;
    assert_crashed(&out, &log, n);
    let crashed = read_write_log(&log).1.unwrap_or_default();
    // Killed right after the replay's seal (its commit): the replay is done, and an explicit
    // `seal replay RUN` run again would rightly start a second one. Before it, the rerun must
    // finish this one.
    if crashed != format!("runs/{IMPORTED}.replay-1/seal.dsse.json") {
        let out = run(rig.replay_to(&[IMPORTED], url)).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "replay crash point {n} (after {crashed}): the rerun failed:\n{}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }
    let out = rig.verify_all_at(url).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "replay crash point {n} (after {crashed}): {}",
        text(&out.stdout)
    );
    let objects = run_objects(url).await;
    let keys =
        |m: &std::collections::BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&objects),
        keys(reference),
        "replay crash point {n} (after {crashed})"
    );
    for (k, bytes) in &objects {
        if !holds_timings(k) {
            assert!(
                reference[k] == *bytes,
                "replay crash point {n} (after {crashed}): {k} differs"
            );
        }
    }
}

/// Every crash point of a stored replay into stores made by `store_at` (`None`: the reference,
/// else the point's own store), `at_once` points at a time.
async fn survive_replay_points(
    backend: &str,
    store_at: impl Fn(Option<u64>) -> String,
    at_once: usize,
) {
    use futures::StreamExt;
    let rig = ImportRig::new().await;
    let (writes, reference) = replay_reference(&rig, &store_at(None)).await;
    let started = Instant::now();
    let last = writes.len() as u64;
    let points = match backend {
        "S3" => on_s3(last),
        _ => (1..=last).collect(),
    };
    let count = points.len();
    futures::stream::iter(points)
        .for_each_concurrent(at_once, |n| {
            let url = store_at(Some(n));
            let (reference, rig) = (&reference, &rig);
            async move { survive_replay_crash(rig, &url, reference, n).await }
        })
        .await;
    println!(
        "stored replay on {backend}: {count} crash points of {last} writes survived in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// The crash points of a run of `writes` writes taken on the S3 server: every third one (the
/// first and the last always), since the `file://` test of the same run takes every point and
/// a point costs ~450 requests of the single-threaded server (docs/TESTING.md). With
/// `SEAL_CRASH_POINTS_S3=all`, every point.
fn on_s3(writes: u64) -> Vec<u64> {
    let all = std::env::var("SEAL_CRASH_POINTS_S3").as_deref() == Ok("all");
    (1..=writes)
        .filter(|n| all || n % 3 == 1 || *n == writes)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_crash_point_of_a_stored_replay_is_survived_on_file() {
    let root = tempfile::tempdir().unwrap();
    let store_at = |n: Option<u64>| match n {
        None => file_url(&root.path().join("replay-reference")),
        Some(n) => file_url(&root.path().join(format!("replay-{n}"))),
    };
    survive_replay_points("file://", store_at, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_crash_point_of_a_stored_replay_is_survived_on_s3() {
    if s3_endpoint().is_none() {
        return;
    }
    let store_at = |n: Option<u64>| {
        match n {
            None => s3_url("replay-crash-reference"),
            Some(n) => s3_url(&format!("replay-crash-{n}")),
        }
        .unwrap_or_default()
    };
    survive_replay_points("S3", store_at, 3).await;
}

// ---------------------------------------------------------------------------------------------
// A whole two-roll run over HTTP: intake, both rolls, finalize.

/// The run every point submits: roll 1 is inconclusive, so the worker follows `next: roll-2`.
pub(crate) const TWO_ROLL_RUN: &str = "run-heritage-0017-disputed-font";
/// The replica id both processes of a point share: the restarted daemon takes over its own
/// dead predecessor's leases at once (a pod restarted under its name).
const REPLICA: &str = "crash-replica-1";

/// Why a worker's submission stopped.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// The daemon went away (the crash point): a transport error.
    Gone(String),
    /// The daemon answered something a worker cannot go on from.
    Refused(u16, String),
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopped::Gone(e) => write!(f, "the daemon went away: {e}"),
            Stopped::Refused(status, body) => write!(f, "HTTP {status}: {body}"),
        }
    }
}

/// Sends `req` (built with `c.raw`: a daemon gone at a crash point is an answer here, which the
/// typed methods would panic on): (status, body as JSON, or as a JSON string when it is not).
pub(crate) async fn send(
    c: &SealClient,
    req: RequestBuilder,
) -> Result<(u16, serde_json::Value), Stopped> {
    let r = c
        .try_send(req)
        .await
        .map_err(|e| Stopped::Gone(e.to_string()))?;
    let body = r.text();
    let v = serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body));
    Ok((r.status.as_u16(), v))
}

fn ok(what: &str, (status, v): (u16, serde_json::Value)) -> Result<serde_json::Value, Stopped> {
    if (200..300).contains(&status) {
        Ok(v)
    } else {
        Err(Stopped::Refused(status, format!("{what}: {v}")))
    }
}

/// A worker submitting a run the way the Python client's `submit_run` does: read the phase;
/// while JUDGING (re)send the blobs and documents; when FINALIZING finalize first; roll 1, roll
/// 2 when the answer says `next: roll-2`; finalize. Returns the finalize answer.
pub(crate) async fn submit_run(
    c: &SealClient,
    folder: &seal_fs::runfolder::RunFolder,
) -> Result<serde_json::Value, Stopped> {
    let run = folder.run();
    let at = |method: Method, tail: &str| c.raw(method, &format!("/v1/runs/{run}{tail}"));
    let (status, state) = send(c, at(Method::GET, "")).await?;
    let phase = if status == 404 {
        "NONE".to_string()
    } else {
        ok("state", (status, state))?["phase"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let finalize = || at(Method::POST, "/finalize");
    match phase.as_str() {
        "DECIDED" => return ok("finalize", send(c, finalize()).await?),
        "FINALIZING" => return ok("finalize", send(c, finalize()).await?),
        _ => {}
    }
    for (hash, path) in folder.blobs() {
        let put = c
            .raw(Method::PUT, &format!("/v1/blobs/sha256/{hash}"))
            .body(std::fs::read(path).unwrap());
        ok("blob", send(c, put).await?)?;
    }
    let doc = |tail: &str, body: Vec<u8>| at(Method::PUT, tail).body(body);
    ok(
        "header",
        send(c, doc("", folder.header_bytes().to_vec())).await?,
    )?;
    ok(
        "brief",
        send(c, doc("/brief", folder.brief().to_vec())).await?,
    )?;
    if let Some(spec) = folder.play_spec() {
        ok(
            "play-spec",
            send(c, doc("/play-spec", spec.to_vec())).await?,
        )?;
    }
    for (i, roll) in folder.rolls().iter().enumerate() {
        let post = at(Method::POST, &format!("/rolls/{}", i + 1)).body(roll.canonical().clone());
        let answer = ok("roll", send(c, post).await?)?;
        if answer["next"] != "roll-2" {
            break;
        }
    }
    ok("finalize", send(c, finalize()).await?)
}

/// Where one scenario's stores live, and how daemons are started on them.
#[derive(Clone, Copy)]
pub(crate) enum Backend {
    File,
    S3,
}

/// One point's world: a folder with keys and the run, a store, a loopback judge of its own
/// (its calls are this point's only).
pub(crate) struct Point {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) store: String,
    pub(crate) lb: Loopback,
    pub(crate) folder: seal_fs::runfolder::RunFolder,
}

impl Point {
    pub(crate) async fn new(backend: Backend, name: &str) -> Point {
        let dir = tempfile::tempdir().unwrap();
        keygen(dir.path());
        let lb = Loopback::start(Duration::from_millis(5)).await.unwrap();
        personas(&lb);
        let folder = seal_fs::runfolder::RunFolder::read(&example(TWO_ROLL_RUN), 1 << 26).unwrap();
        let store = match backend {
            Backend::File => file_url(&dir.path().join("store")),
            Backend::S3 => s3_url(name).expect("an S3 endpoint"),
        };
        Point {
            dir,
            store,
            lb,
            folder,
        }
    }

    pub(crate) fn daemon(&self, env: &[(&str, &str)]) -> Daemon {
        self.daemon_as(REPLICA, env)
    }

    pub(crate) fn daemon_as(&self, replica: &str, env: &[(&str, &str)]) -> Daemon {
        let mut all = vec![("SEAL_REPLICA_ID", replica)];
        all.extend_from_slice(env);
        spawn_daemon(self.dir.path(), &self.lb, &self.store, &all)
    }

    /// Short leases for the two-replica points: a dead holder's lease (slot timeout 1 s,
    /// margin and skew 250 ms) is taken over within 1.5 s. Nothing of it enters a stored byte.
    pub(crate) fn short_leases(&self) {
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/seal.toml"))
                .unwrap()
                .replace("margin_ms = 5000", "margin_ms = 250")
                .replace("max_clock_skew_ms = 10000", "max_clock_skew_ms = 250");
        assert!(text.contains("margin_ms = 250\n"));
        std::fs::create_dir_all(self.dir.path().join("config")).unwrap();
        std::fs::write(self.dir.path().join("config/seal.toml"), text).unwrap();
    }

    /// Judge calls per (model, session): one session per roll and slot.
    fn calls(&self) -> std::collections::BTreeMap<(String, String), usize> {
        let mut m = std::collections::BTreeMap::new();
        for c in self.lb.calls() {
            *m.entry((c.model, c.session.unwrap_or_default()))
                .or_default() += 1;
        }
        m
    }

    /// The run's objects (key → bytes) as stored.
    async fn objects(&self) -> std::collections::BTreeMap<String, Vec<u8>> {
        let store = seal_store::Store::open(&self.store).await.unwrap();
        let dir = format!("runs/{}", self.folder.run());
        let mut out = std::collections::BTreeMap::new();
        for key in store.list(&dir).await.unwrap().keys {
            out.insert(key.to_string(), store.get(&key).await.unwrap().to_vec());
        }
        out
    }

    pub(crate) async fn verify_all(&self) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_seal"));
        c.current_dir(self.dir.path())
            .args(["verify", "--all", "--store", &self.store])
            .args(["--trust", "keys/seal.pub.pem"]);
        run(c).await
    }
}

/// What an uninterrupted run stores and calls: the reference every point is held to.
struct Reference {
    writes: u64,
    /// The uninterrupted run's counted writes: (n, key).
    log: Vec<(u64, String)>,
    objects: std::collections::BTreeMap<String, Vec<u8>>,
    calls: std::collections::BTreeMap<(String, String), usize>,
}

async fn reference(backend: Backend) -> Reference {
    let p = Point::new(backend, "crash-reference").await;
    let log = p.dir.path().join("reference.writes");
    let log_s = log.display().to_string();
    let d = p.daemon(&[(WRITE_LOG_ENV, &log_s)]);
    let done = submit_run(&d.client(), &p.folder).await;
    if let Err(e) = done {
        panic!("the uninterrupted run: {e}\n{}", d.log_text());
    }
    let (writes, _) = read_write_log(&log);
    assert!(
        writes.iter().any(|(_, k)| k.contains("/roll-2/")),
        "the reference run has no roll 2"
    );
    Reference {
        writes: writes.len() as u64,
        log: writes.clone(),
        objects: p.objects().await,
        calls: p.calls(),
    }
}

impl Reference {
    /// Whether write `n` comes after the first lease (so a `cas/` write is an answer, not a
    /// frame uploaded before roll 1).
    fn after_frames(&self, n: u64) -> bool {
        self.log
            .iter()
            .find(|(_, k)| k.starts_with("leases/"))
            .is_some_and(|(first, _)| n >= *first)
    }
}

/// Whether a stored object's bytes depend on attempt timings: the metas, and every document
/// that binds a meta through its hash (up to the evidence and its seal).
fn holds_timings(key: &str) -> bool {
    [
        "/meta.json",
        "/normalized.json",
        "/consensus.json",
        "/roll.json",
        "/judging.json",
        "/evidence.json",
        "/seal.dsse.json",
    ]
    .iter()
    .any(|t| key.ends_with(t))
}

/// Waits for a daemon armed with a crash point to die, and checks it died by SIGKILL there.
fn reap_crashed(d: &mut Daemon, log: &Path, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = d.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "crash point {n}: the daemon did not die"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(
        status.signal(),
        Some(9),
        "crash point {n}: {status}\n{}",
        d.log_text()
    );
    let (_, crashed) = read_write_log(log);
    assert!(crashed.is_some(), "crash point {n}: no CRASH line");
}

/// One crash point of the two-roll run: the daemon dies after its `n`-th write while the
/// worker submits; a daemon restarted under the same replica id gets the same submission and
/// must seal the run; then the run verifies, every object that holds no timing is the
/// reference's byte for byte, and each judge session was called at most once more.
async fn survive_run_crash(backend: Backend, reference: &Reference, n: u64) {
    survive_crash_with(backend, reference, n, Survivor::Restarted).await
}

/// Who finishes the run after the crash.
#[derive(Clone, Copy, PartialEq)]
enum Survivor {
    /// The dead daemon restarted under its replica id (takes its own leases at once).
    Restarted,
    /// Another replica, which must wait out the dead one's leases and take them over; the
    /// dead one is started again afterwards and must come up and answer DECIDED.
    Other,
}

async fn survive_crash_with(backend: Backend, reference: &Reference, n: u64, who: Survivor) {
    let p = Point::new(backend, &format!("crash-{n}")).await;
    if who == Survivor::Other {
        p.short_leases();
    }
    let log = p.dir.path().join(format!("crash-{n}.writes"));
    let (log_s, n_s) = (log.display().to_string(), n.to_string());
    let timeout = [("SEAL_JUDGE_TIMEOUT_MS", "1000")];
    let mut armed = vec![(CRASH_ENV, n_s.as_str()), (WRITE_LOG_ENV, log_s.as_str())];
    if who == Survivor::Other {
        armed.extend_from_slice(&timeout);
    }
    let mut d1 = p.daemon(&armed);
    let first = submit_run(&d1.client(), &p.folder).await;
    match &first {
        Err(Stopped::Gone(_)) => {}
        Err(e) => panic!("crash point {n}: the first daemon answered {e}"),
        Ok(v) => panic!("crash point {n}: the run sealed before the crash: {v}"),
    }
    reap_crashed(&mut d1, &log, n);
    let crashed = read_write_log(&log).1.unwrap_or_default();

    let d2 = match who {
        Survivor::Restarted => p.daemon(&[]),
        Survivor::Other => p.daemon_as("crash-replica-2", &timeout),
    };
    let c = d2.client();
    let done = submit_run(&c, &p.folder).await;
    let done = match done {
        Ok(v) => v,
        Err(e) => panic!(
            "crash point {n} (after {crashed}): the restarted daemon did not seal: {e}\n{}",
            d2.log_text()
        ),
    };
    assert!(done["evidenceSha256"].is_string(), "point {n}: {done}");
    let out = p.verify_all().await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "crash point {n} (after {crashed}): {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let objects = p.objects().await;
    let keys =
        |m: &std::collections::BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&objects),
        keys(&reference.objects),
        "crash point {n} (after {crashed})"
    );
    for (k, bytes) in &objects {
        if !holds_timings(k) {
            assert!(
                reference.objects[k] == *bytes,
                "crash point {n} (after {crashed}): {k} differs"
            );
        }
    }
    for (session, calls) in p.calls() {
        let before = reference.calls.get(&session).copied().unwrap_or(0);
        assert!(
            calls <= before + 1,
            "crash point {n} (after {crashed}): {session:?} called {calls} times (reference {before})"
        );
    }
    if who == Survivor::Other && crashed.starts_with("leases/") {
        // The dead replica held a live lease without a meta: the survivor took it over.
        let metrics = c.metrics().await.text();
        assert!(
            metrics.contains("result=\"takeover\""),
            "crash point {n} (after {crashed}): no lease takeover:\n{metrics}"
        );
    }
    if who == Survivor::Other {
        // The dead replica comes back: its guard admits the store, and it sees the run sealed.
        let d1 = p.daemon(&timeout);
        let run = p.folder.run();
        let (status, v) = d1.client().run_state(run).await.status_json();
        assert_eq!(
            (status.as_u16(), v["phase"].as_str()),
            (200, Some("DECIDED")),
            "point {n}: {v}"
        );
    }
}

/// Every crash point of `points` on `backend`, two at a time (each point has its own store,
/// daemons and judge).
async fn survive_points(backend: Backend, reference: &Reference, points: Vec<u64>) -> usize {
    use futures::StreamExt;
    let count = points.len();
    // On S3 most of a point is spent waiting on the server: three at once.
    let at_once = match backend {
        Backend::File => 2,
        Backend::S3 => 3,
    };
    futures::stream::iter(points)
        .for_each_concurrent(at_once, |n| survive_run_crash(backend, reference, n))
        .await;
    count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_crash_point_of_a_two_roll_run_is_survived_on_file() {
    let started = Instant::now();
    let reference = reference(Backend::File).await;
    let count = survive_points(Backend::File, &reference, (1..=reference.writes).collect()).await;
    println!(
        "two-roll run on file://: {count} crash points of {} writes survived in {:.1} s",
        reference.writes,
        started.elapsed().as_secs_f64()
    );
}

/// Two replicas: after the crash another replica finishes the run, taking over the dead one's
/// leases, at every point where the dead one held a lease without a committed meta (a lease
/// just taken, an answer stored in `cas/`), and at every tenth point besides.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crash_points_with_two_replicas_are_survived_by_takeover_on_file() {
    use futures::StreamExt;
    let started = Instant::now();
    let reference = reference(Backend::File).await;
    let lease_window = |k: &str| k.starts_with("leases/") || k.starts_with("cas/");
    let points: Vec<u64> = reference
        .log
        .iter()
        .filter(|(n, k)| n % 10 == 0 || (lease_window(k) && reference.after_frames(*n)))
        .map(|(n, _)| *n)
        .collect();
    let count = points.len();
    futures::stream::iter(points)
        .for_each_concurrent(2, |n| {
            survive_crash_with(Backend::File, &reference, n, Survivor::Other)
        })
        .await;
    println!(
        "two replicas on file://: {count} crash points survived by takeover in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// The same on the S3 server: every third write index of the two-roll run ([`on_s3`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_crash_point_of_a_two_roll_run_is_survived_on_s3() {
    if s3_store("crash-points").await.is_none() {
        return;
    }
    let started = Instant::now();
    let reference = reference(Backend::S3).await;
    let count = survive_points(Backend::S3, &reference, on_s3(reference.writes)).await;
    println!(
        "two-roll run on S3: {count} crash points of {} writes survived in {:.1} s",
        reference.writes,
        started.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------
// Orphans: what a crash leaves is a warning of `seal verify --all` and a line of `seal gc`.

/// `seal ARGS` in `dir`: its output.
async fn seal_in(dir: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_seal"));
    c.current_dir(dir).args(args);
    run(c).await
}

/// `seal verify --all` of `store` trusting the test's key; its stdout, once it exits 0.
async fn verify_all(dir: &Path, store: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "verify",
        "--all",
        "--store",
        store,
        "--trust",
        "keys/seal.pub.pem",
    ];
    args.extend_from_slice(extra);
    let out = seal_in(dir, &args).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_leftovers_are_warnings_of_verify_and_listed_by_gc_dry_run() {
    let p = Point::new(Backend::File, "orphans").await;
    // Killed right after roll 1's first request is stored: the worker never comes back.
    let spec = "key:runs/*/roll-1/judge-a/attempt-1/request.json";
    let mut d = p.daemon(&[(CRASH_ENV, spec)]);
    let first = submit_run(&d.client(), &p.folder).await;
    assert!(matches!(first, Err(Stopped::Gone(_))), "{first:?}");
    let _ = d.child.wait();
    let attempt = format!("runs/{}/roll-1/judge-a/attempt-1", p.folder.run());

    let store = p.store.as_str();
    let stdout = verify_all(p.dir.path(), store, &[]).await;
    assert!(stdout.contains("warning  uncommitted_attempt"), "{stdout}");
    assert!(stdout.contains(&attempt), "{stdout}");
    assert!(
        stdout.contains("0 runs: 0 verified, 0 not verified"),
        "{stdout}"
    );

    let out = seal_in(
        p.dir.path(),
        &["gc", "--dry-run", "--json", "--store", store],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kinds: Vec<(&str, &str)> = v["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["warning"].as_str().unwrap(),
                o["object"].as_str().unwrap(),
            )
        })
        .collect();
    // The worker uploaded both rolls' frames first: roll 2's are named by no proof package yet.
    let frames: Vec<String> = p
        .folder
        .blobs()
        .iter()
        .map(|(h, _)| h.to_string())
        .collect();
    // Both slots store their requests at once: judge B's may have landed before the kill.
    let attempt_b = attempt.replace("/judge-a/", "/judge-b/");
    assert_eq!(kinds[0], ("uncommitted_attempt", attempt.as_str()), "{v}");
    for (kind, object) in &kinds[1..] {
        if *kind == "uncommitted_attempt" {
            assert_eq!(*object, attempt_b, "{v}");
            continue;
        }
        assert_eq!(*kind, "unreferenced_cas", "{v}");
        assert!(
            frames.iter().any(|h| object.ends_with(h.as_str())),
            "{object}"
        );
    }

    // Deleting is not offered: objects are create-only.
    let out = seal_in(p.dir.path(), &["gc", "--store", store]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));

    // The worker comes back: the run seals and nothing is left over.
    let d2 = p.daemon(&[]);
    let done = submit_run(&d2.client(), &p.folder).await;
    assert!(done.is_ok(), "{:?}", done.err().map(|e| e.to_string()));
    let out = seal_in(
        p.dir.path(),
        &["gc", "--dry-run", "--json", "--store", store],
    )
    .await;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["orphans"], serde_json::json!([]), "{v}");
    // `seal verify --all` takes a verified run's named `cas/` objects (frames, and the raw
    // answers the judge walk content-addressed) from its verification, not from a second read
    // of its folder: it warns of nothing either.
    let stdout = verify_all(p.dir.path(), store, &["--json"]).await;
    let v: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(
        (&v["verified"], &v["warnings"]),
        (&serde_json::json!(1), &serde_json::Value::Null),
        "{stdout}"
    );
}
