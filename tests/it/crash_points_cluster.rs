//! Crash points, continued: three replicas on one bucket, one killed with SIGKILL a third of the way through.

use super::crash_points::*;
use crate::common;
use common::*;
use seal_testkit::client::SealClient;
use seal_testkit::loopback::Loopback;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// The cluster: three replicas on one bucket, one killed with SIGKILL a third of the way
// through and started again later, a worker that retries on another replica.

/// Runs submitted; half of them need a second roll (the disputed-font example).
const CLUSTER_RUNS: usize = 30;

/// How a cluster worker finishes one run: from replica `first` on, every failure (the replica
/// went away, a 5xx, a 409 asking for a re-send) is retried on the next replica, as the
/// pipeline worker does; gives up after `deadline`. Returns the finalize answer and the
/// number of retries.
async fn finish_on_any(
    clients: &std::sync::RwLock<Vec<SealClient>>,
    first: usize,
    folder: &seal_fs::runfolder::RunFolder,
    deadline: Instant,
) -> Result<(serde_json::Value, usize), String> {
    let mut replica = first;
    let mut retries = 0;
    let mut last = String::new();
    while Instant::now() < deadline {
        let c = clients.read().unwrap()[replica % 3].clone();
        match submit_run(&c, folder).await {
            Ok(v) => return Ok((v, retries)),
            Err(e) => {
                last = e.to_string();
                retries += 1;
                replica += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    Err(format!(
        "{}: not sealed after {retries} retries; last answer: {last}",
        folder.run()
    ))
}

/// Three `seal serve` replicas on the S3 server (short leases), 30 runs (15 of two rolls)
/// submitted six at a time by workers that retry on another replica. Replica 1 is killed with
/// SIGKILL once a third of the runs are sealed, and started again under its name once two
/// thirds are. Every run must seal, and `seal verify --all` must verify all 30.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_one_killed_a_third_through_seal_every_run_on_s3() {
    use futures::StreamExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let Some(store) = s3_url("three-replicas-kill") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let lb = Loopback::start(Duration::from_millis(40)).await.unwrap();
    personas(&lb);
    let p = Point {
        dir,
        store: store.clone(),
        lb,
        folder: seal_fs::runfolder::RunFolder::read(&example(TWO_ROLL_RUN), 1 << 26).unwrap(),
    };
    p.short_leases();
    let timeout = [("SEAL_JUDGE_TIMEOUT_MS", "1000")];
    let folders: Vec<seal_fs::runfolder::RunFolder> = (0..CLUSTER_RUNS)
        .map(|i| {
            let src = if i % 2 == 0 {
                TWO_ROLL_RUN
            } else {
                "run-narrative-0010-pass"
            };
            renamed_copy(
                &example(src),
                &p.dir.path().join(format!("in/{i}")),
                &format!("run-cluster-{i:03}"),
            )
        })
        .collect();
    let mut daemons: Vec<Daemon> = (1..=3)
        .map(|r| p.daemon_as(&format!("cluster-replica-{r}"), &timeout))
        .collect();
    let clients = std::sync::RwLock::new(daemons.iter().map(Daemon::client).collect());
    let sealed = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_secs(240);
    let started = Instant::now();

    let workers = futures::stream::iter(folders.iter().enumerate())
        .map(|(i, f)| {
            let (clients, sealed) = (&clients, &sealed);
            async move {
                let r = finish_on_any(clients, i, f, deadline).await;
                sealed.fetch_add(1, Ordering::SeqCst);
                r
            }
        })
        .buffer_unordered(6)
        .collect::<Vec<_>>();
    let chaos = async {
        while sealed.load(Ordering::SeqCst) < CLUSTER_RUNS / 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        daemons[0].child.kill().unwrap();
        let _ = daemons[0].child.wait();
        let killed_at = sealed.load(Ordering::SeqCst);
        while sealed.load(Ordering::SeqCst) < 2 * CLUSTER_RUNS / 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let again = p.daemon_as("cluster-replica-1", &timeout);
        clients.write().unwrap()[0] = again.client();
        daemons[0] = again;
        killed_at
    };
    let (results, killed_at) = tokio::join!(workers, chaos);
    let mut retries = 0;
    let mut failed = Vec::new();
    for r in results {
        match r {
            Ok((v, n)) => {
                assert!(v["evidenceSha256"].is_string(), "{v}");
                retries += n;
            }
            Err(e) => failed.push(e),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {CLUSTER_RUNS} runs not sealed:\n{}\nreplica logs:\n{}",
        failed.len(),
        failed.join("\n"),
        daemons
            .iter()
            .map(|d| d.log_text())
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
    // The kill landed while runs were in flight on the killed replica (else it proved nothing).
    assert!(
        retries > 0,
        "no worker had to retry: the kill hit nothing in flight"
    );
    let out = p.verify_all().await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!(
            "{CLUSTER_RUNS} runs: {CLUSTER_RUNS} verified, 0 not verified"
        )),
        "{stdout}"
    );
    println!(
        "three replicas on S3: {CLUSTER_RUNS} runs sealed and verified in {:.1} s; replica 1 \
         killed after {killed_at} sealed, restarted after {}; {retries} worker retries",
        started.elapsed().as_secs_f64(),
        2 * CLUSTER_RUNS / 3
    );
}
