//! Durable writes on a `file://` store under kill -9 (docs/DECISIONS.md, "Durable writes").
//!
//! A child process (this test binary, re-executed) puts objects from 8 tasks at once and prints
//! each put that returned; the parent kills it with SIGKILL mid-stream. Afterwards: every
//! acknowledged object is there with its bytes; no key holds torn or foreign bytes (every object
//! is exactly what its writer meant); staging files left behind are never listed as objects;
//! and writing everything again succeeds without a single conflict (a torn object would be one).
//! The kill points are random (the seed is printed, and `SEAL_KILL_SEED` replays it).

use futures::StreamExt;
use seal_core::canonical::Hash;
use seal_store::{Key, Store};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "SEAL_DURABLE_CHILD_STORE";
/// The store URL's options in the child (`?flush=per-object` in every other round).
const CHILD_OPTIONS_ENV: &str = "SEAL_DURABLE_CHILD_OPTIONS";
const OBJECTS: usize = 1200;

/// The bytes of object `i`: deterministic, 1 B to ~96 KiB, so any object can be checked whole.
fn content(i: usize) -> &'static [u8] {
    static ALL: std::sync::LazyLock<Vec<Vec<u8>>> =
        std::sync::LazyLock::new(|| (0..OBJECTS).map(make_content).collect());
    &ALL[i]
}

fn make_content(i: usize) -> Vec<u8> {
    let len = 1 + (i * 7919) % (96 * 1024);
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Object `i`'s key: documents spread over a few run folders (several writers share a
/// folder, which exercises the folder group commit), blobs under their hash.
fn key_of(i: usize) -> Key {
    if i % 3 == 0 {
        Key::cas(&Hash::of(content(i)))
    } else {
        Key::parse(&format!("runs/kill-{}/roll-1/obj-{i}.bin", i % 5)).unwrap()
    }
}

async fn put(store: &Store, i: usize) -> Result<bool, seal_store::StoreError> {
    let bytes = bytes::Bytes::from_static(content(i));
    if i % 3 == 0 {
        let stream = futures::stream::iter([Ok::<_, std::io::Error>(bytes)]);
        store.put_blob(stream, None, u64::MAX).await.map(|_| true)
    } else {
        store.put(&key_of(i), bytes).await.map(|put| put.created)
    }
}

/// Child mode: a no-op unless re-executed by the parent with the store path in the env.
#[test]
fn child_writer() {
    let Ok(root) = std::env::var(CHILD_ENV) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let options = std::env::var(CHILD_OPTIONS_ENV).unwrap_or_default();
        let store = Store::open(&format!("file://{root}{options}"))
            .await
            .unwrap();
        let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (store, next) = (store.clone(), next.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if i >= OBJECTS {
                        return;
                    }
                    put(&store, i).await.unwrap();
                    // Printed only after the put returned: an acknowledged write.
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "ok {i}").unwrap();
                    out.flush().unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

fn run_child_and_kill(root: &std::path::Path, after_acks: usize, options: &str) -> Vec<usize> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "durable_writes::child_writer",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, root)
        .env(CHILD_OPTIONS_ENV, options)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = Vec::new();
    let started = Instant::now();
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if let Some(i) = line.strip_prefix("ok ").and_then(|n| n.parse().ok()) {
            acked.push(i);
        }
        if acked.len() >= after_acks || started.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL, mid-write
    child.wait().unwrap();
    acked
}

/// Where the rounds kill the writer: a random number of acknowledgements each (0 kills it as it
/// starts), from a seed that is printed and can be replayed.
fn kill_points(rounds: usize) -> Vec<usize> {
    use rand::{Rng, SeedableRng};
    let seed = std::env::var("SEAL_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen::<u64>());
    eprintln!("kill points from SEAL_KILL_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..rounds).map(|_| rng.gen_range(0..OBJECTS)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_write_never_leaves_a_missing_or_torn_object() {
    for (round, after) in kill_points(12).into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        // Both ways of flushing: the group-committed syncfs and fsyncs per object.
        let options = if round % 2 == 0 {
            ""
        } else {
            "?flush=per-object"
        };
        let acked = run_child_and_kill(dir.path(), after, options);
        assert!(
            acked.len() >= after.min(OBJECTS),
            "round {round}: {acked:?}"
        );
        let store = Store::open(&format!("file://{}", dir.path().display()))
            .await
            .unwrap();
        // Every acknowledged object is there, whole.
        for &i in &acked {
            let k = key_of(i);
            let got = store.get(&k).await.unwrap_or_else(|e| panic!("{k}: {e}"));
            assert_eq!(Hash::of(&got), Hash::of(content(i)), "round {round}: {k}");
        }
        // Every object in the store is exactly what its writer meant; leftovers are staging
        // files only, and no listing shows them.
        let by_key: BTreeMap<String, usize> =
            (0..OBJECTS).map(|i| (key_of(i).to_string(), i)).collect();
        let mut staging = 0;
        for entry in walk(dir.path()) {
            let rel = entry
                .strip_prefix(dir.path())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel.contains('#') {
                staging += 1;
                continue;
            }
            let i = by_key
                .get(&rel)
                .unwrap_or_else(|| panic!("round {round}: unexpected object {rel}"));
            let bytes = std::fs::read(&entry).unwrap();
            assert_eq!(bytes, content(*i), "round {round}: {rel} is torn");
        }
        for folder in ["runs", "cas"] {
            let listing = store.list(folder).await.unwrap();
            for k in &listing.keys {
                assert!(!k.as_str().contains('#'), "round {round}: listed {k}");
            }
            let foreign = &listing.foreign;
            assert!(foreign.is_empty(), "round {round}: {foreign:?}");
        }
        eprintln!(
            "round {round}{options}: {} acknowledged, {staging} staging files left by the kill",
            acked.len()
        );
        // Writing everything again: no conflict anywhere (a torn object would be one).
        let rewrites = (0..OBJECTS).map(|i| {
            let store = store.clone();
            async move {
                put(&store, i)
                    .await
                    .unwrap_or_else(|e| panic!("round {round}: object {i}: {e}"))
            }
        });
        futures::stream::iter(rewrites)
            .buffer_unordered(8)
            .collect::<Vec<_>>()
            .await;
    }
}

fn walk(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// The group commit of issue 25: writers in flight share the filesystem's flushes, so 64 puts
/// at once cost fewer flushes than objects (one writer alone pays two per object).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_in_flight_share_their_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("file://{}", dir.path().display()))
        .await
        .unwrap();
    let before = seal_store::flush_counts();
    let puts = (0..256).map(|i| {
        let store = store.clone();
        async move {
            let k = Key::parse(&format!("runs/batch-{}/obj-{i}.bin", i % 16)).unwrap();
            store
                .put(&k, bytes::Bytes::from(vec![i as u8; 512]))
                .await
                .unwrap()
        }
    });
    let puts = futures::stream::iter(puts)
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await;
    assert!(puts.iter().all(|p| p.created));
    let after = seal_store::flush_counts();
    let (flushes, created) = (after.syncfs - before.syncfs, after.created - before.created);
    // Other tests of this binary may write at the same time: they add to both counters.
    assert!(created >= 256, "{created} objects created");
    assert!(
        flushes < created,
        "{flushes} flushes for {created} objects: the flushes were not shared"
    );
    eprintln!("{flushes} flushes for {created} objects");
}
