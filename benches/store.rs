//! Store benchmark: put and verify ~1 GiB of blobs through the `file://` store facade, next to
//! `openssl dgst -sha256` and coreutils `sha256sum` over the very same stored files.
//!
//! Run: `cargo bench --bench store` (release profile). Scale with
//! `SEAL_BENCH_TOTAL_MB` (default 1024), `SEAL_BENCH_MAX_BLOB_MB` (default 64) and
//! `SEAL_BENCH_ROUNDS` (hash rounds per tool, default 3, the median is reported);
//! `SEAL_BENCH_STRICT=1` makes a missed goal a non-zero exit; `SEAL_BENCH_KEEP=1` keeps the
//! temp folder (sources, store, manifest) for profiling a phase by hand:
//! `SEAL_BENCH_PHASE=put SEAL_BENCH_STORE=<dir>/store2 SEAL_BENCH_MANIFEST=<dir>/manifest.txt <bench binary>`. Without `--bench` (as under
//! `cargo test --all-targets`) it runs a tiny smoke pass.
//!
//! Put and verify each run in a child process (this binary, re-executed with
//! `SEAL_BENCH_PHASE`), so each phase's peak RSS (VmHWM) is its own. Page caches cannot be
//! dropped here: instead one warm-up read pass runs over the files first, so every tool hashes
//! from the page cache and no tool pays for the disk while another does not.
//! Goals (DESIGN §9): verify ≥ 0.9× openssl; peak RSS < 64 MiB whatever the blob size.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::Stream;
use rand::{Rng, RngCore, SeedableRng};
use seal_core::canonical::Hash;
use seal_store::{Key, Store};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
/// Smallest blob.
const MIN_BLOB: u64 = 4 * KIB;
/// Chunk size of the streams fed to `put_blob`, and of every read buffer here.
const CHUNK: usize = MIB as usize;
/// Fixed seed: the same sizes and bytes on every run.
const SEED: u64 = 0x5EA1_B10B;
/// The RSS goal of DESIGN §9.
const RSS_GOAL: u64 = 64 * MIB;
/// The verify goal: at least this fraction of openssl's throughput.
const VERIFY_GOAL: f64 = 0.9;
/// Size classes, by the put path they take (`put_blob` buffers up to 8 MiB, then streams).
const CLASSES: [(&str, u64); 3] = [
    ("<= 1 MiB", MIB),
    ("1-8 MiB, one put", 8 * MIB),
    ("> 8 MiB, multipart", u64::MAX),
];

fn class_of(size: u64) -> usize {
    CLASSES
        .iter()
        .position(|(_, max)| size <= *max)
        .unwrap_or(CLASSES.len() - 1)
}

/// One blob: its source file, size and SHA-256 (computed while generating it).
#[derive(Clone)]
struct Blob {
    src: PathBuf,
    size: u64,
    hash: Hash,
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number")),
        Err(_) => default,
    }
}

/// Peak resident set size of this process (VmHWM), in bytes.
fn vm_hwm() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * KIB)
        .unwrap_or(0)
}

fn mb_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / MIB as f64)
}

fn human_size(bytes: u64) -> String {
    if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{} KiB", bytes / KIB)
    }
}

// ---------------------------------------------------------------------------------------------
// Blob generation
// ---------------------------------------------------------------------------------------------

/// Blob sizes: a few of exactly `max`, the rest log-uniform between 4 KiB and `max` (so as
/// many blobs between 4 and 8 KiB as between 32 and 64 MiB: many small, few large by count,
/// most bytes in the large ones), odd byte counts, shuffled. Deterministic for a seed.
fn plan_sizes(total: u64, max: u64, rng: &mut impl Rng) -> Vec<u64> {
    let max = max.max(MIN_BLOB);
    let n_big = (total / (4 * max)).clamp(1, 4);
    let mut sizes = Vec::new();
    let mut left = total;
    for _ in 0..n_big {
        if left >= max {
            sizes.push(max);
            left -= max;
        }
    }
    let (lo, hi) = ((MIN_BLOB as f64).ln(), (max as f64).ln());
    while left >= MIN_BLOB {
        let s = rng.gen_range(lo..=hi).exp() as u64;
        let s = s.clamp(MIN_BLOB, max).min(left);
        // The last one takes what is left if the rest would be below the minimum.
        let s = if left - s < MIN_BLOB { left } else { s };
        sizes.push(s.min(max));
        left -= s.min(max);
    }
    // Fisher-Yates with the same rng: big ones are not all first.
    for i in (1..sizes.len()).rev() {
        let j = rng.gen_range(0..=i);
        sizes.swap(i, j);
    }
    sizes
}

/// Writes every blob as a plain file under `dir`, 1 MiB at a time, hashing as it goes.
fn generate(dir: &Path, sizes: &[u64], rng: &mut impl RngCore) -> Vec<Blob> {
    let mut buf = vec![0u8; CHUNK];
    sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let src = dir.join(format!("blob-{i:05}.bin"));
            let mut f =
                std::io::BufWriter::with_capacity(CHUNK, std::fs::File::create(&src).unwrap());
            let mut hasher = Sha256::new();
            let mut left = size;
            while left > 0 {
                let n = left.min(CHUNK as u64) as usize;
                rng.fill_bytes(&mut buf[..n]);
                hasher.update(&buf[..n]);
                f.write_all(&buf[..n]).unwrap();
                left -= n as u64;
            }
            f.flush().unwrap();
            Blob {
                src,
                size,
                hash: Hash::from_hasher(hasher),
            }
        })
        .collect()
}

/// Reads every file once with a 1 MiB buffer (the warm-up pass); returns the bytes read.
fn read_all(paths: &[PathBuf]) -> u64 {
    let mut buf = vec![0u8; CHUNK];
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

/// Copies every file into `dir` with a 1 MiB buffer, `sync_all` on each file and on `dir`:
/// what the disk allows a put that syncs what it writes, without hashing.
fn copy_fsync(paths: &[PathBuf], dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut buf = vec![0u8; CHUNK];
    for p in paths {
        let mut src = std::fs::File::open(p).unwrap();
        let mut dst = std::fs::File::create(dir.join(p.file_name().unwrap())).unwrap();
        loop {
            let n = src.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            dst.write_all(&buf[..n]).unwrap();
        }
        dst.sync_all().unwrap();
        std::fs::File::open(dir).unwrap().sync_all().unwrap();
    }
}

/// The manifest handed to the child phases: `hash size path` per line.
fn write_manifest(path: &Path, blobs: &[Blob]) {
    let mut out = String::new();
    for b in blobs {
        out.push_str(&format!("{} {} {}\n", b.hash, b.size, b.src.display()));
    }
    std::fs::write(path, out).unwrap();
}

fn read_manifest(path: &Path) -> Vec<Blob> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut it = l.splitn(3, ' ');
            let hash = Hash::parse(it.next().unwrap()).unwrap();
            let size = it.next().unwrap().parse().unwrap();
            Blob {
                src: PathBuf::from(it.next().unwrap()),
                size,
                hash,
            }
        })
        .collect()
}

/// Where the file store keeps a blob: `<root>/cas/sha256/<aa>/<hex>`.
fn stored_path(root: &Path, hash: &Hash) -> PathBuf {
    root.join(Key::cas(hash).as_str())
}

// ---------------------------------------------------------------------------------------------
// Child phases: put and verify through the facade
// ---------------------------------------------------------------------------------------------

/// A file as a stream of 1 MiB chunks, read through `tokio::fs`; never the whole file.
fn file_chunks(file: tokio::fs::File) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Unpin {
    Box::pin(futures::stream::try_unfold(file, |mut file| async move {
        let mut chunk = BytesMut::with_capacity(CHUNK);
        // tokio's File reads at most 2 MiB per call; fill the chunk or reach the end.
        while chunk.len() < CHUNK {
            if file.read_buf(&mut chunk).await? == 0 {
                break;
            }
        }
        if chunk.is_empty() {
            Ok(None)
        } else {
            Ok(Some((chunk.freeze(), file)))
        }
    }))
}

/// Runs one phase over the manifest and prints its figures on stdout, one `key value…` a line.
fn child(phase: &str) {
    let store_dir = PathBuf::from(std::env::var("SEAL_BENCH_STORE").expect("SEAL_BENCH_STORE"));
    let manifest =
        PathBuf::from(std::env::var("SEAL_BENCH_MANIFEST").expect("SEAL_BENCH_MANIFEST"));
    let blobs = read_manifest(&manifest);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (elapsed, per_class) = rt.block_on(async {
        let store = Store::open(&format!("file://{}", store_dir.display()))
            .await
            .unwrap();
        let mut per_class = [(0u64, 0u64, Duration::ZERO); CLASSES.len()];
        let start = Instant::now();
        for b in &blobs {
            let t = Instant::now();
            match phase {
                "put" => {
                    let file = tokio::fs::File::open(&b.src).await.unwrap();
                    let stored = store
                        .put_blob(file_chunks(file), Some(&b.hash), u64::MAX)
                        .await
                        .unwrap();
                    assert_eq!(
                        (&stored.hash, stored.size),
                        (&b.hash, b.size),
                        "{}",
                        b.src.display()
                    );
                }
                "verify" => {
                    let size = store.verify(&Key::cas(&b.hash), &b.hash).await.unwrap();
                    assert_eq!(size, b.size, "{}", b.hash);
                }
                "idle" => {}
                other => panic!("unknown SEAL_BENCH_PHASE {other:?}"),
            }
            let c = &mut per_class[class_of(b.size)];
            c.0 += 1;
            c.1 += b.size;
            c.2 += t.elapsed();
        }
        (start.elapsed(), per_class)
    });
    drop(rt);
    println!("elapsed_ns {}", elapsed.as_nanos());
    println!("bytes {}", blobs.iter().map(|b| b.size).sum::<u64>());
    for (i, (n, bytes, d)) in per_class.iter().enumerate() {
        println!("class {i} {n} {bytes} {}", d.as_nanos());
    }
    println!("vmhwm {}", vm_hwm());
}

/// What a child phase reported.
#[derive(Debug, Default, Clone)]
struct PhaseRun {
    bytes: u64,
    elapsed: Duration,
    classes: Vec<(u64, u64, Duration)>,
    vmhwm: u64,
}

fn run_child(phase: &str, store: &Path, manifest: &Path) -> PhaseRun {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .env("SEAL_BENCH_PHASE", phase)
        .env("SEAL_BENCH_STORE", store)
        .env("SEAL_BENCH_MANIFEST", manifest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "phase {phase} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut run = PhaseRun {
        classes: vec![Default::default(); CLASSES.len()],
        ..Default::default()
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let num = |i: usize| f[i].parse::<u64>().unwrap();
        match f[0] {
            "elapsed_ns" => run.elapsed = Duration::from_nanos(num(1)),
            "bytes" => run.bytes = num(1),
            "vmhwm" => run.vmhwm = num(1),
            "class" => {
                run.classes[num(1) as usize] = (num(2), num(3), Duration::from_nanos(num(4)))
            }
            _ => {}
        }
    }
    run
}

// ---------------------------------------------------------------------------------------------
// External tools
// ---------------------------------------------------------------------------------------------

/// Argument batches like `xargs`: at most 1000 paths or ~100 KB of arguments per invocation.
fn batches(paths: &[PathBuf]) -> Vec<&[PathBuf]> {
    let mut out = Vec::new();
    let (mut start, mut len) = (0, 0);
    for (i, p) in paths.iter().enumerate() {
        let l = p.as_os_str().len() + 1;
        if i > start && (i - start >= 1000 || len + l > 100_000) {
            out.push(&paths[start..i]);
            (start, len) = (i, 0);
        }
        len += l;
    }
    if start < paths.len() {
        out.push(&paths[start..]);
    }
    out
}

/// Times `program args… paths…` over every stored file, batched; checks that every file
/// hashes to its own name (the CAS key). `None` when the program cannot run.
fn run_tool(program: &str, args: &[&str], paths: &[PathBuf]) -> Option<Duration> {
    let start = Instant::now();
    let mut outputs = Vec::new();
    for batch in batches(paths) {
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
    let mut checked = 0;
    for line in outputs.iter().flat_map(|o| o.split(|&b| b == b'\n')) {
        let line = String::from_utf8_lossy(line);
        if line.is_empty() {
            continue;
        }
        // openssl: `SHA2-256(<path>)= <hex>`; sha256sum: `<hex>  <path>`.
        let (path, hex) = match line.rsplit_once(")= ") {
            Some((p, h)) => (
                p.split_once('(').map(|x| x.1).unwrap_or(p).to_string(),
                h.to_string(),
            ),
            None => {
                let (h, p) = line.split_once("  ").expect("sha256sum line");
                (p.to_string(), h.to_string())
            }
        };
        let name = Path::new(&path).file_name().unwrap().to_string_lossy();
        assert_eq!(name, hex, "{program}: {path} does not hash to its name");
        checked += 1;
    }
    assert_eq!(
        checked,
        paths.len(),
        "{program}: hashed {checked} of {} files",
        paths.len()
    );
    Some(elapsed)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The run with the median elapsed time.
fn median_run(runs: &[PhaseRun]) -> &PhaseRun {
    let mut sorted: Vec<&PhaseRun> = runs.iter().collect();
    sorted.sort_by_key(|r| r.elapsed);
    sorted[sorted.len() / 2]
}

/// Flushes whatever earlier steps left dirty (`sync`), so a timed write does not pay for it.
fn settle() {
    let _ = Command::new("sync").status();
}

// ---------------------------------------------------------------------------------------------
// The benchmark
// ---------------------------------------------------------------------------------------------

fn main() {
    if let Ok(phase) = std::env::var("SEAL_BENCH_PHASE") {
        return child(&phase);
    }
    let benching = std::env::args().any(|a| a == "--bench");
    let (total_mb, max_mb, rounds) = if benching {
        (
            env_u64("SEAL_BENCH_TOTAL_MB", 1024),
            env_u64("SEAL_BENCH_MAX_BLOB_MB", 64),
            env_u64("SEAL_BENCH_ROUNDS", 3),
        )
    } else {
        println!("store bench: smoke pass only (run `cargo bench --bench store` for figures)");
        (4, 1, 1)
    };
    assert!(
        total_mb >= 1 && max_mb >= 1 && rounds >= 1,
        "sizes and rounds must be at least 1"
    );
    let (total, max) = (total_mb * MIB, max_mb * MIB);

    let root = tempfile::Builder::new()
        .prefix("seal-bench-store-")
        .tempdir()
        .unwrap();
    let src_dir = root.path().join("src");
    std::fs::create_dir_all(&src_dir).unwrap();
    let manifest = root.path().join("manifest.txt");

    // 1. Source files.
    let mut rng = rand::rngs::StdRng::seed_from_u64(SEED);
    let sizes = plan_sizes(total, max, &mut rng);
    let t = Instant::now();
    let blobs = generate(&src_dir, &sizes, &mut rng);
    let gen_time = t.elapsed();
    let bytes: u64 = blobs.iter().map(|b| b.size).sum();
    write_manifest(&manifest, &blobs);
    let n_max = sizes.iter().filter(|&&s| s == max).count();
    let smallest = sizes.iter().min().copied().unwrap_or(0);
    let mut hist = BTreeMap::new();
    for b in &blobs {
        let e = hist.entry(class_of(b.size)).or_insert((0u64, 0u64));
        e.0 += 1;
        e.1 += b.size;
    }

    // 2. Put, after a warm-up read of the sources: each round into a fresh store, next to a
    // plain copy with fsync (what this disk allows), interleaved; the medians are reported.
    // Every round's files stay until the end: no deletion runs in between.
    let src_paths: Vec<PathBuf> = blobs.iter().map(|b| b.src.clone()).collect();
    read_all(&src_paths);
    let idle = run_child("idle", &root.path().join("store-idle"), &manifest);
    let (mut puts, mut copies) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        settle();
        let t = Instant::now();
        copy_fsync(&src_paths, &root.path().join(format!("copy-{round}")));
        copies.push(t.elapsed());
        settle();
        puts.push(run_child(
            "put",
            &root.path().join(format!("store-{round}")),
            &manifest,
        ));
    }
    let put = median_run(&puts);
    let copy_time = median(copies.clone());
    let store_dir = root.path().join("store-1");
    let stored: Vec<PathBuf> = blobs
        .iter()
        .map(|b| stored_path(&store_dir, &b.hash))
        .collect();
    let leftovers = walk(&store_dir).len() - stored.len();

    // 3 and 4. Warm-up read of the stored files, then the hashing rounds, interleaved.
    let t = Instant::now();
    let warm = read_all(&stored);
    let warm_time = t.elapsed();
    assert_eq!(warm, bytes);
    let mut verifies = Vec::new();
    let (mut openssl, mut sha256sum) = (Some(Vec::new()), Some(Vec::new()));
    for _ in 0..rounds {
        verifies.push(run_child("verify", &store_dir, &manifest));
        if let Some(v) = openssl.as_mut() {
            match run_tool("openssl", &["dgst", "-sha256"], &stored) {
                Some(d) => v.push(d),
                None => openssl = None,
            }
        }
        if let Some(v) = sha256sum.as_mut() {
            match run_tool("sha256sum", &[], &stored) {
                Some(d) => v.push(d),
                None => sha256sum = None,
            }
        }
    }
    let verify_time = median_run(&verifies).elapsed;
    let verify_rss = verifies.iter().map(|r| r.vmhwm).max().unwrap_or(0);
    let put_rss = puts.iter().map(|r| r.vmhwm).max().unwrap_or(0);
    let openssl_time = openssl.clone().map(median);
    let sha256sum_time = sha256sum.clone().map(median);

    // 5. The report.
    let secs = |d: Duration| format!("{:.3}", d.as_secs_f64());
    println!();
    println!("seal store bench (file:// store, fsync on; sequential, one blob at a time)");
    println!(
        "blobs: {} blobs, {} ({bytes} bytes); sizes {} .. {}, {n_max} of {}; seed {SEED:#x}",
        blobs.len(),
        mib(bytes),
        human_size(smallest),
        human_size(max),
        human_size(max)
    );
    for (c, (n, b)) in &hist {
        println!("  {:<20} {n:>5} blobs {:>12}", CLASSES[*c].0, mib(*b));
    }
    println!(
        "page cache: sources written then read once, stored files read once ({:.0} MB/s) before \
         any hashing; every tool below hashes from the page cache (caches cannot be dropped here)",
        mb_s(warm, warm_time)
    );
    println!(
        "generation: {:.1} s; rounds per measurement: {rounds} (median shown; put and copy \
         each write a fresh folder per round)",
        gen_time.as_secs_f64()
    );
    println!("MB = 10^6 bytes");
    println!();
    let base = openssl_time.map(|d| mb_s(bytes, d));
    let ratio = |d: Duration| {
        base.map(|b| format!("{:.2}x", mb_s(bytes, d) / b))
            .unwrap_or_else(|| "n/a".into())
    };
    println!(
        "{:<38} {:>9} {:>9} {:>11} {:>14}",
        "phase", "secs", "MB/s", "vs openssl", "peak RSS"
    );
    let row = |name: &str, d: Duration, rss: Option<u64>| {
        println!(
            "{name:<38} {:>9} {:>9.0} {:>11} {:>14}",
            secs(d),
            mb_s(bytes, d),
            ratio(d),
            rss.map(mib).unwrap_or_else(|| "-".into())
        )
    };
    row("put    (Store::put_blob)", put.elapsed, Some(put_rss));
    row("verify (Store::verify)", verify_time, Some(verify_rss));
    match openssl_time {
        Some(d) => row("openssl dgst -sha256", d, None),
        None => println!("openssl dgst -sha256: not available"),
    }
    match sha256sum_time {
        Some(d) => row("sha256sum (coreutils)", d, None),
        None => println!("sha256sum: not available"),
    }
    row("plain read, 1 MiB buffer (warm-up)", warm_time, None);
    row("plain copy + fsync per file (no hash)", copy_time, None);
    println!();
    println!("ratios (throughput over openssl's):");
    if let Some(o) = openssl_time {
        let r = |d: Duration| o.as_secs_f64() / d.as_secs_f64();
        println!("  verify/openssl    {:.2}", r(verify_time));
        println!("  put/openssl       {:.2}", r(put.elapsed));
        if let Some(s) = sha256sum_time {
            println!("  sha256sum/openssl {:.2}", r(s));
        }
    }
    println!();
    println!("peak RSS (VmHWM):");
    println!(
        "  put child              {} (max over rounds)",
        mib(put_rss)
    );
    println!(
        "  verify child           {} (max over rounds)",
        mib(verify_rss)
    );
    println!(
        "  idle child (baseline)  {} (runtime + store open, no blob)",
        mib(idle.vmhwm)
    );
    println!(
        "  bench parent           {} (generation, warm-up, orchestration)",
        mib(vm_hwm())
    );
    println!();
    println!("per size class (time inside put_blob / verify):");
    println!(
        "  {:<20} {:>6} {:>12} {:>11} {:>11} {:>13}",
        "class", "blobs", "bytes", "put MB/s", "verify MB/s", "put ms/blob"
    );
    let verify_mid = median_run(&verifies);
    for (i, (name, _)) in CLASSES.iter().enumerate() {
        let (n, b, pd) = put.classes[i];
        if n == 0 {
            continue;
        }
        let vd = verify_mid.classes[i].2;
        println!(
            "  {name:<20} {n:>6} {:>12} {:>11.0} {:>11.0} {:>13.2}",
            mib(b),
            mb_s(b, pd),
            mb_s(b, vd),
            pd.as_secs_f64() * 1e3 / n as f64
        );
    }
    println!();
    let list = |v: Vec<Duration>| v.iter().map(|d| secs(*d)).collect::<Vec<_>>().join(" ");
    println!("rounds (s):");
    println!(
        "  put       {}",
        list(puts.iter().map(|r| r.elapsed).collect())
    );
    println!("  copy      {}", list(copies.clone()));
    println!(
        "  verify    {}",
        list(verifies.iter().map(|r| r.elapsed).collect())
    );
    if let Some(v) = &openssl {
        println!("  openssl   {}", list(v.clone()));
    }
    if let Some(v) = &sha256sum {
        println!("  sha256sum {}", list(v.clone()));
    }
    if std::env::var("SEAL_BENCH_KEEP").is_ok_and(|v| v == "1") {
        println!("kept (SEAL_BENCH_KEEP=1): {}", root.keep().display());
    }
    if leftovers != 0 {
        println!(
            "note: {leftovers} files other than the blobs left in the store (staging leftovers?)"
        );
    }

    // Goals.
    let verify_ok =
        openssl_time.map(|o| o.as_secs_f64() / verify_time.as_secs_f64() >= VERIFY_GOAL);
    let rss_ok = put_rss < RSS_GOAL && verify_rss < RSS_GOAL;
    println!();
    println!(
        "goal verify >= {VERIFY_GOAL}x openssl: {}",
        match verify_ok {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not measured",
        }
    );
    println!(
        "goal peak RSS < 64 MiB (put and verify): {}",
        if rss_ok { "met" } else { "MISSED" }
    );
    if benching
        && std::env::var("SEAL_BENCH_STRICT").is_ok_and(|v| v == "1")
        && (verify_ok == Some(false) || !rss_ok)
    {
        std::process::exit(1);
    }
}

/// Every file under `dir`.
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
    out
}
