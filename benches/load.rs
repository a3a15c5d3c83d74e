//! Load benchmark (issue 6): a load generator drives N runs through the real `seal serve`
//! binary over HTTP, against a loopback judge with fixed latency L = 200 ms.
//!
//! Each run is what a pipeline worker does: PUT header, brief, play-spec and frames, POST
//! roll 1, POST finalize. Reported per concurrency (1, 32, 256): throughput as a fraction of
//! the ideal concurrency / L, the added latency of a whole run over L (p50, p99), and the
//! daemon's peak RSS (VmHWM of the child process).
//!
//! ```sh
//! cargo bench --bench load                          # file store (durable, group-committed flushes)
//! SEAL_BENCH_STORE=memory cargo bench --bench load  # seal alone, no disk
//! SEAL_BENCH_STORE=file-per-object cargo bench --bench load  # fdatasync + folder fsync per object
//! ```

use seal_testkit::loopback::{Loopback, Persona};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const L: Duration = Duration::from_millis(200);

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sealed-fixtures/inputs/run-narrative-0010-pass")
}

fn vm_hwm_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
        / 1024.0
}

/// The daemon's CPU time so far (user + system), from `/proc/<pid>/stat`.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line; `rest` starts at field 3 (the state).
    let field = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    let ticks = field(11) + field(12);
    ticks / clock_ticks()
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// The store's flushes and created objects so far, from the daemon's `/metrics`.
async fn flushes(c: &reqwest::Client, base: &str) -> (f64, f64) {
    let text = match c.get(format!("{base}/metrics")).send().await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (
        value("seal_store_fsyncs_total{kind=\"syncfs\"}")
            + value("seal_store_fsyncs_total{kind=\"file\"}")
            + value("seal_store_fsyncs_total{kind=\"folder\"}"),
        value("seal_store_objects_created_total"),
    )
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

struct Inputs {
    header: Value,
    brief: Vec<u8>,
    spec: Vec<u8>,
    proof: Vec<u8>,
    blobs: Vec<(String, Vec<u8>)>,
}

async fn one_run(
    c: &reqwest::Client,
    base: &str,
    inp: &Inputs,
    run: &str,
) -> Result<Duration, String> {
    let t0 = Instant::now();
    let mut header = inp.header.clone();
    header["runId"] = Value::String(run.to_string());
    let ok = |r: reqwest::Response| async move {
        if r.status().is_success() {
            Ok(r)
        } else {
            Err(format!(
                "{} {}",
                r.status(),
                r.text().await.unwrap_or_default()
            ))
        }
    };
    for (h, b) in &inp.blobs {
        ok(c.put(format!("{base}/v1/blobs/sha256/{h}"))
            .body(b.clone())
            .send()
            .await
            .map_err(|e| e.to_string())?)
        .await?;
    }
    ok(c.put(format!("{base}/v1/runs/{run}"))
        .json(&header)
        .send()
        .await
        .map_err(|e| e.to_string())?)
    .await?;
    ok(c.put(format!("{base}/v1/runs/{run}/brief"))
        .body(inp.brief.clone())
        .send()
        .await
        .map_err(|e| e.to_string())?)
    .await?;
    ok(c.put(format!("{base}/v1/runs/{run}/play-spec"))
        .body(inp.spec.clone())
        .send()
        .await
        .map_err(|e| e.to_string())?)
    .await?;
    ok(c.post(format!("{base}/v1/runs/{run}/rolls/1"))
        .body(inp.proof.clone())
        .send()
        .await
        .map_err(|e| e.to_string())?)
    .await?;
    let r = ok(c
        .post(format!("{base}/v1/runs/{run}/finalize"))
        .send()
        .await
        .map_err(|e| e.to_string())?)
    .await?;
    let v: Value = r.json().await.map_err(|e| e.to_string())?;
    if v["outcome"] != "pass" {
        return Err(format!("{run}: outcome {}", v["outcome"]));
    }
    Ok(t0.elapsed())
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let lb = Loopback::start(L).await.expect("loopback");
        lb.persona("load-a", Persona { min_font_px: 12.0, ..Persona::default() });
        lb.persona("load-b", Persona::default());
        let dir = tempfile::tempdir().expect("tempdir");
        let seal = env!("CARGO_BIN_EXE_seal");
        assert!(Command::new(seal).current_dir(dir.path()).args(["keygen", "--out", "keys"]).output().expect("keygen").status.success());
        let config = seal_engine::config::EMBEDDED
            .replace("max_rolls_in_progress = 64", "max_rolls_in_progress = 512")
            .replace("queue_bound = 256", "queue_bound = 1024")
            .replace("max_inflight_per_slot = 64", "max_inflight_per_slot = 1024");
        std::fs::write(dir.path().join("seal.toml"), config).expect("config");
        let store = match std::env::var("SEAL_BENCH_STORE").as_deref() {
            Ok("memory") => "memory://".to_string(),
            Ok("file-per-object") => "file://./store?flush=per-object".to_string(),
            _ => "file://./store".to_string(),
        };
        let mut child = Command::new(seal)
            .current_dir(dir.path())
            .args(["--config", "seal.toml", "serve", "--listen", "127.0.0.1:0", "--store", &store, "--key", "keys/seal.key.pem", "--create-store"])
            .env("SEAL_JUDGE_A_URL", lb.url())
            .env("SEAL_JUDGE_B_URL", lb.url())
            .env("SEAL_JUDGE_A_MODEL", "load-a")
            .env("SEAL_JUDGE_B_MODEL", "load-b")
            .env("SEAL_JUDGE_A_KEY", "sk-load-a-0123456789")
            .env("SEAL_JUDGE_B_KEY", "sk-load-b-0123456789")
            .env("SEAL_SEED_SALT", "load-salt-0123456789abcdef0123456789abcdef")
            .env("SEAL_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("seal serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("first line");
        let base = line.trim().rsplit(' ').next().unwrap_or("").to_string();
        let pid = child.id();

        let folder = seal_fs::runfolder::RunFolder::read(&example(), 1 << 26).expect("example");
        let inputs = Arc::new(Inputs {
            header: serde_json::from_slice(folder.header_bytes()).expect("header"),
            brief: folder.brief().to_vec(),
            spec: folder.play_spec().map(<[u8]>::to_vec).unwrap_or_default(),
            proof: folder.rolls()[0].canonical().to_vec(),
            blobs: folder.blobs().iter().map(|(h, p)| (h.to_string(), std::fs::read(p).expect("blob"))).collect(),
        });
        let client = reqwest::Client::builder().pool_max_idle_per_host(512).timeout(Duration::from_secs(600)).build().expect("client");
        println!("load benchmark: seal serve ({store}) at {base}, loopback judge L = {} ms, each run = 6 blob PUTs + header + brief + play-spec + roll + finalize", L.as_millis());
        println!("{:>11} {:>6} {:>10} {:>9} {:>10} {:>14} {:>14} {:>12} {:>12} {:>12} {:>12} {:>12}", "concurrency", "runs", "runs/s", "ideal/s", "fraction", "added p50 ms", "added p99 ms", "daemon RSS", "CPU/run ms", "wall/ideal", "flushes/run", "objects/run");
        // The last row is issue 12's case: 256 whole runs started at once, one wave; its ideal
        // wall time is L (one roll a run), so wall/ideal says how far seal is from it.
        for (row, (conc, n)) in [(1usize, 20usize), (32, 192), (256, 1024), (256, 256)].into_iter().enumerate() {
            let cpu0 = cpu_secs(pid);
            let (f0, o0) = flushes(&client, &base).await;
            let next = Arc::new(AtomicUsize::new(0));
            let t0 = Instant::now();
            let workers: Vec<_> = (0..conc)
                .map(|w| {
                    let (client, base, inputs, next) = (client.clone(), base.clone(), inputs.clone(), next.clone());
                    tokio::spawn(async move {
                        let mut lat = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::SeqCst);
                            if i >= n {
                                break;
                            }
                            let run = format!("load-r{row}-c{conc}-{i:05}");
                            match one_run(&client, &base, &inputs, &run).await {
                                Ok(d) => lat.push(d),
                                Err(e) => panic!("worker {w}: {e}"),
                            }
                        }
                        lat
                    })
                })
                .collect();
            let mut lat = Vec::new();
            for w in workers {
                lat.extend(w.await.expect("worker"));
            }
            let wall = t0.elapsed().as_secs_f64();
            let cpu_ms = (cpu_secs(pid) - cpu0) * 1000.0 / n as f64;
            let (f1, o1) = flushes(&client, &base).await;
            let mut added: Vec<f64> = lat.iter().map(|d| (d.as_secs_f64() - L.as_secs_f64()) * 1000.0).collect();
            added.sort_by(|a, b| a.total_cmp(b));
            let rate = lat.len() as f64 / wall;
            let ideal = conc as f64 / L.as_secs_f64();
            println!(
                "{:>11} {:>6} {:>10.1} {:>9.1} {:>10.3} {:>14.1} {:>14.1} {:>8.1} MiB {:>12.2} {:>12.2} {:>12.2} {:>12.1}",
                conc, lat.len(), rate, ideal, rate / ideal, pct(&added, 0.5), pct(&added, 0.99), vm_hwm_mib(pid),
                cpu_ms, wall / (L.as_secs_f64() * (n / conc) as f64), (f1 - f0) / n as f64, (o1 - o0) / n as f64
            );
        }
        let _ = child.kill();
        let _ = child.wait();
    });
}
