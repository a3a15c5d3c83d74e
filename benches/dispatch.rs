//! Dispatch benchmark (issue 3): how much a roll adds to judge latency.
//!
//! A loopback judge answers after L = 200 ms. For 1, 16 and 128 concurrent rolls (each a
//! different run, all inputs already stored), every roll's wall time is divided by L; the ideal
//! is 1.0 (a roll takes max(A, B), A ∥ B, not A + B). Prints median and p99 of that ratio and
//! the peak RSS of this process (which also hosts the loopback judge).
//!
//! ```sh
//! cargo bench --bench dispatch
//! ```

use seal_core::ids::{RollId, RunId};
use seal_engine::config::Config;
use seal_engine::engine::Engine;
use seal_store::Store;
use seal_testkit::loopback::{Loopback, Persona};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The judge latency (SEAL_BENCH_LATENCY_MS overrides the 200 ms of the issue).
fn latency() -> Duration {
    Duration::from_millis(
        std::env::var("SEAL_BENCH_LATENCY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200),
    )
}

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sealed-fixtures/inputs/run-narrative-0010-pass")
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse::<f64>()
                    .unwrap_or(0.0)
            })
        })
        .unwrap_or(0.0)
        / 1024.0
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn engine(lb: &Loopback, store: Store) -> Engine {
    let url = lb.url();
    let env = move |k: &str| match k {
        "SEAL_JUDGE_A_URL" | "SEAL_JUDGE_B_URL" => Some(url.clone()),
        "SEAL_JUDGE_A_MODEL" => Some("bench-a".to_string()),
        "SEAL_JUDGE_B_MODEL" => Some("bench-b".to_string()),
        "SEAL_JUDGE_A_KEY" | "SEAL_JUDGE_B_KEY" => Some("sk-bench-loopback".to_string()),
        "SEAL_SEED_SALT" => Some("bench-salt-0123456789abcdef0123456789abcdef".to_string()),
        _ => None,
    };
    let text = seal_engine::config::EMBEDDED
        .replace("max_inflight_per_slot = 64", "max_inflight_per_slot = 1024");
    let config = Config::parse("bench", &text, &env).expect("config");
    Engine::new(store, config, Some(seal_fs::keys::generate_signing_key())).expect("engine")
}

/// Stores the inputs of `n` runs (the example under new run ids) and returns their ids.
async fn corpus(engine: &Engine, prefix: &str, n: usize) -> Vec<RunId> {
    use futures::TryStreamExt;
    let folder = seal_fs::runfolder::RunFolder::read(&example(), 1 << 26).expect("example");
    for (hash, path) in folder.blobs() {
        let file = tokio::fs::File::open(path).await.expect("blob");
        let stream = tokio_util::io::ReaderStream::new(file).map_err(|e| e.to_string());
        engine
            .store()
            .put_blob(Box::pin(stream), Some(hash), u64::MAX)
            .await
            .expect("put blob");
    }
    let mut header: Value = serde_json::from_slice(folder.header_bytes()).expect("header");
    let mut ids = Vec::new();
    for i in 0..n {
        let run = RunId::parse(&format!("{prefix}-{i:04}")).expect("id");
        header["runId"] = Value::String(run.to_string());
        let bytes = serde_json::to_vec(&header).expect("json");
        seal_engine::intake::put_header(
            engine,
            &run,
            &bytes,
            seal_engine::intake::Origin::Pipeline,
        )
        .await
        .expect("header");
        seal_engine::intake::put_brief(engine, &run, folder.brief())
            .await
            .expect("brief");
        if let Some(spec) = folder.play_spec() {
            seal_engine::intake::put_play_spec(engine, &run, spec)
                .await
                .expect("spec");
        }
        let roll = &folder.rolls()[0];
        match seal_engine::roll::submit(engine, &run, RollId::R1, roll).await {
            // Stored: judged below, all runs at once (the run's lock goes with it here).
            Ok(seal_engine::roll::Submitted::Accepted(_)) => {}
            other => panic!("proof package of {run}: {other:?}"),
        }
        ids.push(run);
    }
    ids
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let lb = Loopback::start(latency()).await.expect("loopback");
        lb.persona(
            "bench-a",
            Persona {
                min_font_px: 12.0,
                ..Persona::default()
            },
        );
        lb.persona("bench-b", Persona::default());
        let dir = tempfile::tempdir().expect("tempdir");
        // SEAL_BENCH_STORE=memory measures seal without the file store's fsyncs.
        let url = match std::env::var("SEAL_BENCH_STORE").as_deref() {
            Ok("memory") => "memory://".to_string(),
            _ => format!("file://{}", dir.path().display()),
        };
        let store = Store::open(&url).await.expect("store");
        let engine = engine(&lb, store).await;
        println!(
            "dispatch benchmark: loopback judge latency L = {} ms, store {url}",
            latency().as_millis()
        );
        println!(
            "{:>12} {:>8} {:>14} {:>14} {:>12}",
            "concurrency", "rolls", "median wall/L", "p99 wall/L", "rolls/s"
        );
        for (c, rounds) in [(1usize, 20usize), (16, 4), (128, 2)] {
            let mut ratios = Vec::new();
            let t_all = Instant::now();
            for round in 0..rounds {
                let ids = corpus(&engine, &format!("c{c}-r{round}"), c).await;
                let tasks: Vec<_> = ids
                    .into_iter()
                    .map(|run| {
                        let engine = engine.clone();
                        tokio::spawn(async move {
                            let t0 = Instant::now();
                            let r = seal_engine::roll::judge_roll(&engine, &run, RollId::R1)
                                .await
                                .expect("roll");
                            assert_eq!(r.roll().roll_outcome, seal_core::doc::Outcome::Pass);
                            t0.elapsed()
                        })
                    })
                    .collect();
                for t in tasks {
                    ratios.push(
                        t.await.expect("task").as_secs_f64() / latency().as_secs_f64().max(1e-3),
                    );
                }
            }
            let judged = ratios.len();
            let elapsed = t_all.elapsed();
            ratios.sort_by(|a, b| a.total_cmp(b));
            println!(
                "{:>12} {:>8} {:>14.3} {:>14.3} {:>12.1}",
                c,
                judged,
                pct(&ratios, 0.5),
                pct(&ratios, 0.99),
                judged as f64 / elapsed.as_secs_f64()
            );
        }
        println!(
            "peak RSS (this process, loopback judge included): {:.1} MiB",
            peak_rss_mib()
        );
        println!("judge calls answered: {}", lb.calls().len());
        let _ = Path::new(".");
    });
}
