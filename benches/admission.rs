//! Log admission benchmark (issue 24): how long a process takes before it may append to a log
//! of n seals, read from the latest checkpoint (`Log::admit_quick`: the tree from the level-0
//! tiles, the last entry, the entries past it) next to the seal scan that follows it in
//! `seal serve` (`Log::scan`: every stored seal and every entry, which is what the whole
//! admission read before stop 40), on the same `file://` store, in the same run.
//!
//! Run: `cargo bench --bench admission` (release). For each n of `SEAL_BENCH_LOG_SIZES`
//! (default `1000,10000,100000`) it appends n seal entries as the postguard does (256 appenders
//! at a time, so one checkpoint covers each batch, as under load), then starts a fresh process
//! view (`Log::new`) three times and reports the median of each half and their ratio. The
//! store holds only the log (no runs), so the scan's cost here is the log's part of it; a real
//! store adds one read per sealed run. Without `--bench` (`cargo test --all-targets`) it runs
//! one small size as a smoke pass.

use std::time::Instant;

use futures::StreamExt;

use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_core::tlog::{LogEntry, DEFAULT_ORIGIN};
use seal_log::Log;
use seal_store::Store;

/// Appenders at once while the log is built.
const APPENDERS: usize = 256;
/// Fresh starts measured per size (the median is shown).
const STARTS: usize = 3;

fn entry(i: u64) -> (RunId, LogEntry) {
    let run = match RunId::parse(&format!("run-admission-{i:07}")) {
        Ok(run) => run,
        Err(e) => panic!("a bench run id: {e}"),
    };
    let e = LogEntry {
        run_id: run.to_string(),
        evidence_sha256: Hash::of(&i.to_be_bytes()).to_string(),
        seal_sha256: Hash::of(&[i.to_be_bytes(), [1; 8]].concat()).to_string(),
        key_id: "c".repeat(64),
        outcome: "pass".into(),
        decided_at: "2026-12-04T00:00:00Z".into(),
        acceptance_mode: "live".into(),
        parent_run_id: None,
    };
    (run, e)
}

fn median(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

async fn one_size(n: u64) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(&format!("file://{}", dir.path().display())).await?;
    let key = seal_fs::keys::generate_signing_key();
    let writer = Log::new(store.clone(), DEFAULT_ORIGIN);
    let t0 = Instant::now();
    let appended = futures::stream::iter(0..n)
        .map(|i| {
            let (writer, key) = (writer.clone(), &key);
            async move {
                let (run, e) = entry(i);
                writer.append_seal(&run, &e, key).await
            }
        })
        .buffer_unordered(APPENDERS)
        .collect::<Vec<_>>()
        .await;
    for a in appended {
        a?;
    }
    let built = t0.elapsed().as_secs_f64();
    let checkpoints = std::fs::read_dir(dir.path().join("log/checkpoints"))?.count();
    let (mut quick, mut scan) = (Vec::new(), Vec::new());
    for _ in 0..STARTS {
        let fresh = Log::new(store.clone(), DEFAULT_ORIGIN);
        let t = Instant::now();
        if !fresh.admit_quick(&key, &[]).await? {
            return Err("the tiles did not give the checkpoint's tree".into());
        }
        quick.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        fresh.scan(&key, &[]).await?;
        scan.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (q, s) = (median(quick), median(scan));
    println!(
        "{n:>8} {checkpoints:>11} {built:>9.1} {q:>13.1} {s:>11.1} {:>14.0}x",
        s / q
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bench = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<u64> = match (bench, std::env::var("SEAL_BENCH_LOG_SIZES")) {
        (false, _) => vec![300],
        (true, Ok(v)) => v
            .split(',')
            .map(|s| s.trim().parse())
            .collect::<Result<_, _>>()?,
        (true, Err(_)) => vec![1_000, 10_000, 100_000],
    };
    println!(
        "log admission on file:// (median of {STARTS} fresh starts; the store holds only the log)"
    );
    println!(
        "{:>8} {:>11} {:>9} {:>13} {:>11} {:>15}",
        "seals", "checkpoints", "build s", "admit_quick ms", "scan ms", "scan/quick"
    );
    for n in sizes {
        one_size(n).await?;
    }
    Ok(())
}
