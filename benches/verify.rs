//! Verify and replay benchmark: `seal verify --all` and `seal replay --all --judges stored`
//! (the real binary) over a generated corpus of sealed runs, next to `openssl dgst -sha256` and
//! coreutils `sha256sum` over the very same stored files.
//!
//! Run: `cargo bench --bench verify` (release profile). The corpus: `SEAL_BENCH_RUNS` runs
//! (default 1000), each derived from `sealed-fixtures/inputs/run-narrative-0010-pass` with a new
//! run id and its six frames replaced by unique pseudo-random blobs of about
//! `SEAL_BENCH_FRAME_KB` KiB (default 180; each starts with the PNG signature so the media
//! sniffing accepts it), so that the frames total at least 1 GiB at the defaults. The runs are
//! sealed in process (`seal_engine::judge_run::judge`) by a loopback judge answering at once,
//! `SEAL_BENCH_GEN_TASKS` runs at a time (default 4). Then, with `SEAL_BENCH_ROUNDS` rounds per
//! measurement (default 3, the median is reported), interleaved: openssl, sha256sum, `seal
//! verify --all --jobs 1` and `--jobs 2`; last, one `seal replay --all --judges stored` in a
//! hard-linked copy of the store (replay adds one run per run; the original stays as it was),
//! once per `SEAL_BENCH_REPLAY_JOBS` (default `2,8`), next to a plain copy + fsync of the
//! objects replay added (the disk's price for them) and a replay into `memory://`.
//! `SEAL_BENCH_KEEP=1` keeps the temp folder (store, keys) for profiling by hand. Without
//! `--bench` (as under `cargo test --all-targets`) it runs a tiny smoke pass. Peak RSS of each `seal` child is `Maximum resident set size` of `/usr/bin/time -v` (the
//! child's `ru_maxrss` from wait4) when that program exists, else the last `VmHWM` of
//! `/proc/<pid>/status` seen by polling every 2 ms. Page caches cannot be dropped here: one
//! warm-up read pass runs over every stored file first, so every tool hashes from the page
//! cache.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use rand::{RngCore, SeedableRng};
use serde_json::{json, Value};

use seal_core::canonical::Hash;
use seal_core::ids::{RollId, RunId};
use seal_engine::config::Config;
use seal_engine::engine::Engine;
use seal_engine::intake::ProofSubmission;
use seal_engine::roll::Submitted;
use seal_store::{Key, Store};
use seal_testkit::loopback::Loopback;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
const GIB: u64 = 1024 * MIB;
/// Fixed seed: the same frames on every run of the benchmark.
const SEED: u64 = 0x5EA1_7E57;
/// The run every corpus run is derived from.
const BASE_RUN: &str = "run-narrative-0010-pass";
const PNG_SIGNATURE: &[u8; 8] = b"\x89PNG\r\n\x1a\n";
const SALT: &str = "seal-bench-verify-salt (benchmark only)";
/// Paths per openssl / sha256sum invocation.
const BATCH: usize = 500;

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number")),
        Err(_) => default,
    }
}

fn mb_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / MIB as f64)
}

/// The first three fields of /proc/loadavg (other work on the machine skews every figure).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

// ---------------------------------------------------------------------------------------------
// Corpus generation
// ---------------------------------------------------------------------------------------------

/// The base run folder's documents.
struct Base {
    header: Value,
    brief: Vec<u8>,
    play_spec: Option<Vec<u8>>,
    proof: Value,
}

fn read_base() -> Base {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("sealed-fixtures/inputs")
        .join(BASE_RUN);
    let json = |name: &str| -> Value {
        let p = dir.join(name);
        serde_json::from_slice(&std::fs::read(&p).unwrap_or_else(|e| panic!("{p:?}: {e}")))
            .unwrap_or_else(|e| panic!("{p:?}: {e}"))
    };
    let spec = dir.join("play-spec.json");
    Base {
        header: json("header.json"),
        brief: std::fs::read(dir.join("brief.md")).expect("brief.md"),
        play_spec: spec
            .exists()
            .then(|| std::fs::read(&spec).expect("play-spec")),
        proof: json("roll-1/proof-package.json"),
    }
}

/// Replaces every `{ref, hash}` frame reference whose hash is in `map` (frames, and the
/// actions' `preFrameRef` / `postFrameRef`); returns how many it replaced.
fn swap_frame_refs(v: &mut Value, map: &HashMap<String, Hash>) -> usize {
    match v {
        Value::Object(o) => {
            let hit = o
                .get("hash")
                .and_then(Value::as_str)
                .and_then(|h| map.get(h))
                .cloned();
            let mut n = 0;
            if let (Some(new), true) = (hit, o.contains_key("ref")) {
                o.insert("hash".into(), json!(new.to_string()));
                o.insert("ref".into(), json!(Key::cas(&new).as_str()));
                n += 1;
            }
            n + o
                .values_mut()
                .map(|x| swap_frame_refs(x, map))
                .sum::<usize>()
        }
        Value::Array(a) => a.iter_mut().map(|x| swap_frame_refs(x, map)).sum(),
        _ => 0,
    }
}

fn bench_config(lb: &Loopback) -> Config {
    let url = lb.url();
    let env = move |k: &str| -> Option<String> {
        match k {
            "SEAL_JUDGE_A_URL" | "SEAL_JUDGE_B_URL" => Some(url.clone()),
            "SEAL_JUDGE_A_MODEL" => Some("bench-judge-a".into()),
            "SEAL_JUDGE_B_MODEL" => Some("bench-judge-b".into()),
            "SEAL_JUDGE_A_KEY" | "SEAL_JUDGE_B_KEY" => Some("sk-bench-loopback".into()),
            "SEAL_JUDGE_TIMEOUT_MS" => Some("30000".into()),
            "SEAL_SEED_SALT" => Some(SALT.into()),
            _ => None,
        }
    };
    // The loopback judge reports `prompt_tokens` = request bytes / 4, base64 images included
    // (~60k "tokens" per 180 KB frame, where a real VL model counts a few hundred), while the
    // reservation bounds input tokens on the request with image placeholders: priced as
    // configured, every run would spend more than it reserved. Input tokens are free here.
    let text: String = seal_engine::config::EMBEDDED
        .replace("backoff_base_ms = 500", "backoff_base_ms = 5")
        .replace("backoff_cap_ms = 8000", "backoff_cap_ms = 20")
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("input_rmb_per_mtok") {
                "input_rmb_per_mtok = 0.0\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    Config::parse("bench", &text, &env).expect("bench config")
}

/// Makes, stores and seals run `i`; returns (frame bytes, outcome).
async fn seal_one(engine: &Engine, base: &Base, i: u64, frame_bytes: u64) -> (u64, String) {
    let run_id = format!("run-bench-{i:05}");
    let run = RunId::parse(&run_id).expect("run id");
    let mut rng = rand::rngs::StdRng::seed_from_u64(SEED ^ (i << 8));
    // Six unique frames, each its own size (frame_bytes up to +1/16), PNG signature first.
    let mut map = HashMap::new();
    let mut bytes_total = 0;
    for f in base.proof["frames"].as_array().expect("frames") {
        let old = f["hash"].as_str().expect("frame hash").to_string();
        if map.contains_key(&old) {
            continue;
        }
        let size = frame_bytes + (rng.next_u64() % (frame_bytes / 16).max(1));
        let mut blob = vec![0u8; size as usize];
        rng.fill_bytes(&mut blob);
        blob[..8].copy_from_slice(PNG_SIGNATURE);
        let hash = Hash::of(&blob);
        let chunks = futures::stream::iter([Ok::<Bytes, String>(Bytes::from(blob))]);
        engine
            .store()
            .put_blob(chunks, Some(&hash), u64::MAX)
            .await
            .expect("put frame");
        bytes_total += size;
        map.insert(old, hash);
    }
    let mut proof = base.proof.clone();
    let swapped = swap_frame_refs(&mut proof, &map);
    assert!(swapped >= map.len() * 2, "frame refs not replaced");
    let mut header = base.header.clone();
    header["runId"] = json!(run_id);
    let limit = engine.config().max_document_bytes;
    let header_bytes = serde_json::to_vec_pretty(&header).unwrap();
    let proof_bytes = serde_json::to_vec_pretty(&proof).unwrap();
    // What `seal judge` does with a run folder, the frames being in the store already (put
    // above, from memory).
    let fail = |e: &dyn std::fmt::Display| -> ! { panic!("{run_id}: {e}") };
    seal_engine::intake::put_header(
        engine,
        &run,
        &header_bytes,
        seal_engine::intake::Origin::Operator,
    )
    .await
    .unwrap_or_else(|e| fail(&e));
    seal_engine::intake::put_brief(engine, &run, &base.brief)
        .await
        .unwrap_or_else(|e| fail(&e));
    if let Some(spec) = &base.play_spec {
        seal_engine::intake::put_play_spec(engine, &run, spec)
            .await
            .unwrap_or_else(|e| fail(&e));
    }
    let proof = ProofSubmission::parse(&proof_bytes, None, limit).unwrap_or_else(|e| fail(&e));
    match seal_engine::roll::submit(engine, &run, RollId::R1, &proof).await {
        Ok(Submitted::Accepted(accepted)) => accepted
            .judge(&seal_engine::roll::Source::Live)
            .await
            .map(drop)
            .unwrap_or_else(|e| fail(&e)),
        Ok(Submitted::AlreadyJudged(_)) => {}
        Err(e) => fail(&e),
    }
    let done = seal_engine::postguard::finalize(engine, &run)
        .await
        .unwrap_or_else(|e| fail(&e));
    let outcome = done
        .evidence()
        .outcome
        .map(|o| o.as_str().to_string())
        .unwrap_or_else(|| "?".into());
    (bytes_total, outcome)
}

struct Corpus {
    frame_bytes: u64,
    outcomes: HashMap<String, u64>,
    elapsed: Duration,
}

fn generate(store_dir: &Path, key: &Path, runs: u64, frame_bytes: u64, tasks: usize) -> Corpus {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let lb = Loopback::start(Duration::ZERO).await.expect("loopback");
        let store = Store::open(&format!("file://{}", store_dir.display()))
            .await
            .expect("store");
        let engine = Engine::new(
            store,
            bench_config(&lb),
            Some(seal_fs::keys::load_signing_key(key).expect("key")),
        )
        .expect("engine");
        let base = Arc::new(read_base());
        let start = Instant::now();
        let step = (runs / 10).max(1);
        let mut corpus = Corpus {
            frame_bytes: 0,
            outcomes: HashMap::new(),
            elapsed: Duration::ZERO,
        };
        let mut results = futures::stream::iter(0..runs)
            .map(|i| {
                let (engine, base) = (engine.clone(), base.clone());
                // Spawned, so that the tasks run on all the runtime's threads.
                tokio::spawn(async move { seal_one(&engine, &base, i, frame_bytes).await })
            })
            .buffer_unordered(tasks.max(1));
        let mut done = 0u64;
        while let Some(r) = results.next().await {
            let (bytes, outcome) = r.expect("seal task");
            corpus.frame_bytes += bytes;
            *corpus.outcomes.entry(outcome).or_default() += 1;
            done += 1;
            if done % step == 0 {
                eprintln!(
                    "  sealed {done}/{runs} runs ({:.1} s)",
                    start.elapsed().as_secs_f64()
                );
            }
        }
        corpus.elapsed = start.elapsed();
        corpus
    })
}

// ---------------------------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------------------------

/// Every file under `dir`, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Recreates the folder tree `from` at `to`, every file a hard link to the original.
fn link_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            link_tree(&e.path(), &target);
        } else {
            std::fs::hard_link(e.path(), &target).unwrap();
        }
    }
}

/// Reads every file once with a 1 MiB buffer (the warm-up pass); returns the bytes read.
fn read_all(paths: &[PathBuf]) -> u64 {
    let mut buf = vec![0u8; MIB as usize];
    let mut total = 0;
    for p in paths {
        let mut f = std::fs::File::open(p).unwrap();
        loop {
            let n = f.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            total += n as u64;
        }
    }
    total
}

/// Copies `rels` from `from` to `to` with plain writes, each file fsynced and then its folder,
/// on `threads` threads: what the disk charges for that many durable writes, no hashing.
fn copy_fsync(from: &Path, to: &Path, rels: &[PathBuf], threads: usize) -> Duration {
    // The folders first (not timed): replay's folders are part of its run, but a copy of
    // files is the baseline asked for.
    for rel in rels {
        std::fs::create_dir_all(to.join(rel).parent().unwrap()).unwrap();
    }
    let start = Instant::now();
    std::thread::scope(|s| {
        for part in rels.chunks(rels.len().div_ceil(threads.max(1)).max(1)) {
            s.spawn(move || {
                for rel in part {
                    let bytes = std::fs::read(from.join(rel)).unwrap();
                    let dest = to.join(rel);
                    let mut f = std::fs::File::create(&dest).unwrap();
                    std::io::Write::write_all(&mut f, &bytes).unwrap();
                    f.sync_all().unwrap();
                    std::fs::File::open(dest.parent().unwrap())
                        .unwrap()
                        .sync_all()
                        .unwrap();
                }
            });
        }
    });
    start.elapsed()
}

/// Times `program args… paths…` over every file, `BATCH` paths per invocation; checks one
/// digest line per file, and that every CAS file hashes to its own name. `None` when the
/// program cannot run.
fn run_tool(program: &str, args: &[&str], paths: &[PathBuf]) -> Option<Duration> {
    let start = Instant::now();
    let mut outputs = Vec::new();
    for batch in paths.chunks(BATCH) {
        let out = Command::new(program).args(args).args(batch).output().ok()?;
        if !out.status.success() {
            eprintln!(
                "{program}: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        outputs.push(out.stdout);
    }
    let elapsed = start.elapsed();
    let mut lines = 0;
    for line in outputs.iter().flat_map(|o| o.split(|&b| b == b'\n')) {
        let line = String::from_utf8_lossy(line);
        if line.is_empty() {
            continue;
        }
        lines += 1;
        // openssl: `SHA2-256(<path>)= <hex>`; sha256sum: `<hex>  <path>`.
        let (path, hex) = match line.rsplit_once(")= ") {
            Some((p, h)) => (p.split_once('(').map(|x| x.1).unwrap_or(p), h),
            None => {
                let (h, p) = line.split_once("  ").expect("sha256sum line");
                (p, h)
            }
        };
        if path.contains("/cas/sha256/") {
            let name = Path::new(path).file_name().unwrap().to_string_lossy();
            assert_eq!(name, hex, "{program}: {path} does not hash to its name");
        }
    }
    assert_eq!(lines, paths.len(), "{program}: digest lines");
    Some(elapsed)
}

/// One run of a `seal` command.
struct SealRun {
    elapsed: Duration,
    peak_rss: u64,
    stdout: String,
}

/// How the peak RSS of a child is measured.
#[derive(Clone, Copy, PartialEq)]
enum RssBy {
    GnuTime,
    Polling,
}

impl RssBy {
    fn detect() -> RssBy {
        let ok = Command::new("/usr/bin/time")
            .args(["-v", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map(|o| {
                o.status.success()
                    && String::from_utf8_lossy(&o.stderr).contains("Maximum resident set size")
            })
            .unwrap_or(false);
        if ok {
            RssBy::GnuTime
        } else {
            RssBy::Polling
        }
    }
    fn describe(self) -> &'static str {
        match self {
            RssBy::GnuTime => {
                "/usr/bin/time -v, `Maximum resident set size` (the child's ru_maxrss from wait4)"
            }
            RssBy::Polling => "VmHWM of /proc/<pid>/status, polled every 2 ms while it runs",
        }
    }
}

fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * KIB)
}

/// Runs `seal args…` in `cwd` (stdout and stderr to files there); panics unless it exits 0.
fn run_seal(exe: &Path, cwd: &Path, tag: &str, args: &[String], rss_by: RssBy) -> SealRun {
    let (out_path, err_path, rss_path) = (
        cwd.join(format!("{tag}.stdout")),
        cwd.join(format!("{tag}.stderr")),
        cwd.join(format!("{tag}.rss")),
    );
    let mut cmd = match rss_by {
        RssBy::GnuTime => {
            let mut c = Command::new("/usr/bin/time");
            c.arg("-v").arg("-o").arg(&rss_path).arg(exe);
            c
        }
        RssBy::Polling => Command::new(exe),
    };
    cmd.args(args)
        .current_dir(cwd)
        .env("SEAL_SEED_SALT", SALT)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn seal");
    let mut polled = 0;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if rss_by == RssBy::Polling {
            polled = polled.max(vm_hwm(child.id()).unwrap_or(0));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let elapsed = start.elapsed();
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    assert!(
        status.success(),
        "seal {}: {status}\n{}\n{}",
        args.join(" "),
        stdout.lines().rev().take(5).collect::<Vec<_>>().join("\n"),
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    let peak_rss = match rss_by {
        RssBy::Polling => polled,
        RssBy::GnuTime => std::fs::read_to_string(&rss_path)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|kb| kb * KIB)
            .unwrap_or(0),
    };
    SealRun {
        elapsed,
        peak_rss,
        stdout,
    }
}

/// Times of one named run's `seal verify` and `seal log prove`: median of `ONE_RUN_TIMES`.
const ONE_RUN_TIMES: usize = 11;

/// The median wall time of `seal args…` over [`ONE_RUN_TIMES`] runs (each must succeed).
fn median_seal(exe: &Path, cwd: &Path, tag: &str, args: &[String]) -> Duration {
    median(
        (0..ONE_RUN_TIMES)
            .map(|_| run_seal(exe, cwd, tag, args, RssBy::Polling).elapsed)
            .collect(),
    )
}

/// One named run's `verify` and `log prove`, read by its pointers in the log and the tiles,
/// then with `log/runs/` moved aside (the whole log read, as for a run sealed before
/// pointers), beside `openssl dgst -sha256` over the run's own files: (what, by pointers,
/// whole log, openssl).
fn one_run(
    exe: &Path,
    cwd: &Path,
    store_dir: &Path,
    store_url: &str,
    trust: &Path,
    run: &str,
) -> Vec<(&'static str, Duration, Duration)> {
    let trust = trust.display().to_string();
    let verify: Vec<String> = ["verify", run, "--store", store_url, "--trust", &trust]
        .map(String::from)
        .to_vec();
    let prove: Vec<String> = ["log", "prove", run, "--store", store_url, "--trust", &trust]
        .map(String::from)
        .to_vec();
    let by_pointers = [
        median_seal(exe, cwd, "one-verify", &verify),
        median_seal(exe, cwd, "one-prove", &prove),
    ];
    let (runs, aside) = (store_dir.join("log/runs"), cwd.join("log-runs-aside"));
    std::fs::rename(&runs, &aside).expect("move log/runs aside");
    let whole = [
        median_seal(exe, cwd, "one-verify-whole", &verify),
        median_seal(exe, cwd, "one-prove-whole", &prove),
    ];
    std::fs::rename(&aside, &runs).expect("move log/runs back");
    vec![
        ("seal verify <run>", by_pointers[0], whole[0]),
        ("seal log prove <run>", by_pointers[1], whole[1]),
    ]
}

fn verify_args(store_url: &str, trust: &Path, jobs: usize) -> Vec<String> {
    vec![
        "verify".into(),
        "--all".into(),
        "--store".into(),
        store_url.into(),
        "--trust".into(),
        trust.display().to_string(),
        "--jobs".into(),
        jobs.to_string(),
    ]
}

// ---------------------------------------------------------------------------------------------
// The benchmark
// ---------------------------------------------------------------------------------------------

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let (runs, frame_kb, rounds) = if benching {
        (
            env_u64("SEAL_BENCH_RUNS", 1000),
            env_u64("SEAL_BENCH_FRAME_KB", 180),
            env_u64("SEAL_BENCH_ROUNDS", 3),
        )
    } else {
        println!("verify bench: smoke pass only (run `cargo bench --bench verify` for figures)");
        (3, 8, 1)
    };
    let tasks = env_u64("SEAL_BENCH_GEN_TASKS", 4) as usize;
    assert!(
        runs >= 1 && frame_kb >= 1 && rounds >= 1,
        "runs, frame size and rounds must be at least 1"
    );
    let root = tempfile::Builder::new()
        .prefix("seal-bench-verify-")
        .tempdir()
        .unwrap();
    let (key, trust) = seal_fs::keys::write_key_pair(
        &seal_fs::keys::generate_signing_key(),
        &root.path().join("keys"),
    )
    .expect("key pair");
    let store_dir = root.path().join("store");
    let store_url = format!("file://{}", store_dir.display());
    let load_start = loadavg();
    // A private copy of the binary: the build folder is shared, and a rebuild while this runs
    // must not swap the program being measured.
    let exe = root.path().join("seal");
    std::fs::copy(env!("CARGO_BIN_EXE_seal"), &exe).expect("copy the seal binary");

    // 1. The corpus.
    eprintln!("sealing {runs} runs of 6 frames of ~{frame_kb} KiB ({tasks} tasks)…");
    let corpus = generate(&store_dir, &key, runs, frame_kb * KIB, tasks);
    let files = walk(&store_dir);
    let sizes: Vec<u64> = files
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .collect();
    let bytes: u64 = sizes.iter().sum();
    let cas = store_dir.join("cas");
    // `cas/` holds the frames and the judges' raw answers (JSON): a frame starts with the PNG
    // signature the corpus gives every frame.
    let is_frame = |p: &Path| {
        let mut head = [0u8; 8];
        std::fs::File::open(p)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok()
            && head == *PNG_SIGNATURE
    };
    let (n_frames, frame_files_bytes) = files
        .iter()
        .zip(&sizes)
        .filter(|(p, _)| p.starts_with(&cas) && is_frame(p))
        .fold((0u64, 0u64), |(n, b), (_, s)| (n + 1, b + s));
    assert_eq!(
        frame_files_bytes, corpus.frame_bytes,
        "frame bytes in the store"
    );
    let n_docs = files.len() as u64 - n_frames;

    // 2. Warm-up: every stored file read once, so that everything below hashes from the cache.
    let t = Instant::now();
    assert_eq!(read_all(&files), bytes);
    let warm_time = t.elapsed();

    // 3. Rounds, interleaved: openssl, sha256sum, verify --jobs 1, verify --jobs 2.
    let rss_by = RssBy::detect();
    let (mut openssl, mut sha256sum) = (Some(Vec::new()), Some(Vec::new()));
    let mut verifies: [Vec<SealRun>; 2] = [Vec::new(), Vec::new()];
    for round in 1..=rounds {
        eprintln!("round {round}/{rounds}: openssl, sha256sum, verify --jobs 1, verify --jobs 2");
        if let Some(v) = openssl.as_mut() {
            match run_tool("openssl", &["dgst", "-sha256"], &files) {
                Some(d) => v.push(d),
                None => openssl = None,
            }
        }
        if let Some(v) = sha256sum.as_mut() {
            match run_tool("sha256sum", &[], &files) {
                Some(d) => v.push(d),
                None => sha256sum = None,
            }
        }
        for (i, jobs) in [1usize, 2].into_iter().enumerate() {
            let r = run_seal(
                &exe,
                root.path(),
                &format!("verify-j{jobs}-{round}"),
                &verify_args(&store_url, &trust, jobs),
                rss_by,
            );
            let want = format!(
                "{runs} run{}: {runs} verified, 0 not verified",
                if runs == 1 { "" } else { "s" }
            );
            assert_eq!(
                r.stdout.lines().last(),
                Some(want.as_str()),
                "verify --jobs {jobs}: not every run verified"
            );
            verifies[i].push(r);
        }
    }

    // 3b. One run of the middle of the corpus, by its pointers and by the whole log, beside
    // openssl over that run's own files.
    let middle = format!("run-bench-{:05}", runs / 2);
    let one = one_run(&exe, root.path(), &store_dir, &store_url, &trust, &middle);
    let run_files: Vec<PathBuf> = walk(&store_dir.join("runs").join(&middle));
    let one_openssl = median(
        (0..ONE_RUN_TIMES)
            .filter_map(|_| run_tool("openssl", &["dgst", "-sha256"], &run_files))
            .collect(),
    );

    // 4. Replay every run from its stored judge answers, in a copy of the store made of hard
    // links (replay only adds objects, create-only; the measured store stays as it was): at
    // the default jobs (the cores) and at 8 jobs (more fsyncs in flight than cores).
    let want = format!(
        "replayed {runs} run{} (Stored judges): {runs} consensus reproduced, 0 outcomes flipped",
        if runs == 1 { "" } else { "s" }
    );
    let replay_args = |url: String, extra: &[String]| -> Vec<String> {
        let mut a: Vec<String> = vec![
            "replay".into(),
            "--all".into(),
            "--judges".into(),
            "stored".into(),
            "--store".into(),
            url,
            "--key".into(),
            key.display().to_string(),
        ];
        a.extend_from_slice(extra);
        a
    };
    let mut replays = Vec::new();
    let replay_jobs: Vec<usize> = std::env::var("SEAL_BENCH_REPLAY_JOBS")
        .unwrap_or_else(|_| "2,8".into())
        .split(',')
        .map(|j| {
            j.trim()
                .parse()
                .expect("SEAL_BENCH_REPLAY_JOBS: whole numbers")
        })
        .collect();
    assert!(!replay_jobs.is_empty(), "SEAL_BENCH_REPLAY_JOBS is empty");
    for (n, &jobs) in replay_jobs.iter().enumerate() {
        eprintln!("replay --all --judges stored --jobs {jobs}…");
        // A job count may be listed twice (a second measurement): each has a folder of its own.
        let dir = root.path().join(format!("store-replay-{n}-j{jobs}"));
        link_tree(&store_dir, &dir);
        // The copy's own links and folders are written back first (not timed): otherwise the
        // replay's first flushes write them, and the first replay measured pays for them.
        let synced = std::process::Command::new("sync")
            .arg("-f")
            .arg(&dir)
            .status()
            .expect("run sync -f");
        assert!(synced.success(), "sync -f {}", dir.display());
        let r = run_seal(
            &exe,
            root.path(),
            &format!("replay-{n}-j{jobs}"),
            &replay_args(
                format!("file://{}", dir.display()),
                &["--jobs".into(), jobs.to_string()],
            ),
            rss_by,
        );
        let summary = r.stdout.lines().last().unwrap_or("").to_string();
        assert!(
            summary.starts_with(&want),
            "replay summary: {summary:?}, expected {want:?}…"
        );
        replays.push((jobs, dir, r, summary));
    }
    let replay_summary = replays[0].3.clone();

    // 4b. The disk's own price for replay's writes: every object the replay added, copied
    // with plain writes + fsync of the file and its folder, on 2 threads (replay's jobs).
    let originals: std::collections::HashSet<PathBuf> = files
        .iter()
        .map(|p| p.strip_prefix(&store_dir).unwrap().to_path_buf())
        .collect();
    let replay_dir = &replays[0].1;
    let added: Vec<PathBuf> = walk(replay_dir)
        .into_iter()
        .map(|p| p.strip_prefix(replay_dir).unwrap().to_path_buf())
        .filter(|rel| !originals.contains(rel))
        .collect();
    let added_bytes: u64 = added
        .iter()
        .map(|rel| std::fs::metadata(replay_dir.join(rel)).unwrap().len())
        .sum();
    let copy_dir = root.path().join("copy-fsync");
    let copy_time = copy_fsync(replay_dir, &copy_dir, &added, 2);

    // 4c. Replay into a memory:// store: `--from` the file store (each source is imported:
    // verified in a staging area, then copied), no disk writes at all.
    eprintln!("replay --all --judges stored --from file:// --store memory://…");
    let mut mem_args = replay_args(
        "memory://".into(),
        &[
            "--from".into(),
            store_url.clone(),
            "--trust".into(),
            trust.display().to_string(),
        ],
    );
    mem_args.push("--jobs".into());
    mem_args.push("2".into());
    let replay_memory = run_seal(&exe, root.path(), "replay-memory", &mem_args, rss_by);
    let mem_summary = replay_memory
        .stdout
        .lines()
        .last()
        .unwrap_or("")
        .to_string();
    assert!(
        mem_summary.starts_with(&want),
        "replay (memory) summary: {mem_summary:?}"
    );

    // 5. The report.
    let openssl_time = openssl.clone().map(median);
    let sha256sum_time = sha256sum.clone().map(median);
    let verify_time = |i: usize| median(verifies[i].iter().map(|r| r.elapsed).collect());
    let verify_rss = |i: usize| verifies[i].iter().map(|r| r.peak_rss).max().unwrap_or(0);
    let mut outcomes: Vec<String> = corpus
        .outcomes
        .iter()
        .map(|(o, n)| format!("{n} {o}"))
        .collect();
    outcomes.sort();
    println!();
    println!("seal verify/replay bench (file:// store, the `seal` binary of this build)");
    println!(
        "corpus: {runs} sealed runs (from {BASE_RUN}, one roll each; outcomes: {}), \
         {n_frames} frames of ~{frame_kb} KiB = {} ({:.3} GiB{}), {n_docs} other objects = {}; \
         store total {} objects, {} ({bytes} bytes)",
        outcomes.join(", "),
        mib(corpus.frame_bytes),
        corpus.frame_bytes as f64 / GIB as f64,
        if corpus.frame_bytes >= GIB {
            ""
        } else {
            ", below 1 GiB: a scaled-down run"
        },
        mib(bytes - corpus.frame_bytes),
        files.len(),
        mib(bytes),
    );
    println!(
        "generation: {:.1} s ({:.1} runs/s; in process through seal_engine::judge_run::judge, \
         loopback judges at 0 latency, {tasks} runs at a time, every write fsynced)",
        corpus.elapsed.as_secs_f64(),
        runs as f64 / corpus.elapsed.as_secs_f64()
    );
    println!(
        "page cache: every stored file read once before any hashing ({:.0} MB/s); every tool \
         below hashes from the page cache (caches cannot be dropped here)",
        mb_s(bytes, warm_time)
    );
    println!(
        "rounds per measurement: {rounds} (median shown); openssl and sha256sum get {BATCH} \
         paths per invocation; MB = 10^6 bytes of all objects in the store"
    );
    println!("peak RSS: {}", rss_by.describe());
    println!(
        "load average (1 5 15 min): before generation {load_start}, at the end {}",
        loadavg()
    );
    println!();
    println!(
        "{:<44} {:>8} {:>9} {:>8} {:>11} {:>11}",
        "what", "secs", "runs/s", "MB/s", "vs openssl", "peak RSS"
    );
    let base = openssl_time.map(|d| mb_s(bytes, d));
    let row = |name: &str, d: Duration, runs_done: Option<u64>, rss: Option<u64>| {
        println!(
            "{name:<44} {:>8.3} {:>9} {:>8.0} {:>11} {:>11}",
            d.as_secs_f64(),
            runs_done
                .map(|n| format!("{:.1}", n as f64 / d.as_secs_f64()))
                .unwrap_or_else(|| "-".into()),
            mb_s(bytes, d),
            base.map(|b| format!("{:.2}x", mb_s(bytes, d) / b))
                .unwrap_or_else(|| "n/a".into()),
            rss.map(mib).unwrap_or_else(|| "-".into()),
        )
    };
    match openssl_time {
        Some(d) => row("openssl dgst -sha256 (baseline)", d, None, None),
        None => println!("openssl dgst -sha256: not available"),
    }
    match sha256sum_time {
        Some(d) => row("sha256sum (coreutils, reference)", d, None, None),
        None => println!("sha256sum: not available"),
    }
    row(
        "seal verify --all --jobs 1",
        verify_time(0),
        Some(runs),
        Some(verify_rss(0)),
    );
    row(
        "seal verify --all --jobs 2",
        verify_time(1),
        Some(runs),
        Some(verify_rss(1)),
    );
    for (jobs, _, r, _) in &replays {
        row(
            &format!("seal replay --all --judges stored --jobs {jobs}"),
            r.elapsed,
            Some(runs),
            Some(r.peak_rss),
        );
    }
    row(
        "seal replay … --from file:// --store memory://",
        replay_memory.elapsed,
        Some(runs),
        Some(replay_memory.peak_rss),
    );
    println!();
    println!(
        "one run ({middle}, {} files; median of {ONE_RUN_TIMES}) in a log of {runs} entries: \
         openssl dgst -sha256 of its files {:.1} ms",
        run_files.len(),
        one_openssl.as_secs_f64() * 1e3
    );
    for (what, pointers, whole) in &one {
        println!(
            "  {what:<22} by its pointers {:>7.1} ms ({:.1}x openssl's time), whole log {:>7.1} ms: {:.1}x faster",
            pointers.as_secs_f64() * 1e3,
            pointers.as_secs_f64() / one_openssl.as_secs_f64(),
            whole.as_secs_f64() * 1e3,
            whole.as_secs_f64() / pointers.as_secs_f64()
        );
    }
    println!();
    println!(
        "replay's writes: {} new objects, {} in all; plain copy + fsync (file and \
         folder, 2 threads) of the same files: {:.3} s = {:.1} runs/s",
        added.len(),
        mib(added_bytes),
        copy_time.as_secs_f64(),
        runs as f64 / copy_time.as_secs_f64(),
    );
    for (jobs, _, r, _) in &replays {
        println!(
            "  replay --jobs {jobs}: {:.2}x the copy's time; {:.2}x the memory:// replay's time",
            r.elapsed.as_secs_f64() / copy_time.as_secs_f64(),
            r.elapsed.as_secs_f64() / replay_memory.elapsed.as_secs_f64(),
        );
    }
    println!();
    println!("replay: {replay_summary}");
    let list = |v: &[Duration]| {
        v.iter()
            .map(|d| format!("{:.3}", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!("rounds (s):");
    if let Some(v) = &openssl {
        println!("  openssl          {}", list(v));
    }
    if let Some(v) = &sha256sum {
        println!("  sha256sum        {}", list(v));
    }
    for (i, jobs) in [1, 2].into_iter().enumerate() {
        let v: Vec<Duration> = verifies[i].iter().map(|r| r.elapsed).collect();
        println!("  verify --jobs {jobs}  {}", list(&v));
    }
    if let Some(o) = openssl_time {
        let per_run = |d: Duration| (d.as_secs_f64() - o.as_secs_f64()) * 1e3 / runs as f64;
        println!(
            "time over openssl's, per run: verify --jobs 1 {:.2} ms, --jobs 2 {:.2} ms",
            per_run(verify_time(0)),
            per_run(verify_time(1))
        );
    }
    if std::env::var("SEAL_BENCH_KEEP").is_ok_and(|v| v == "1") {
        println!("kept (SEAL_BENCH_KEEP=1): {}", root.keep().display());
    }
}
