//! How many objects the daemon reads per request while a run goes through the API, by kind of
//! object ([`seal_store::Store::reads_by_kind`]). The counts below are today's; a change that
//! reads a roll's inputs more often fails here, one that reads them less lowers the numbers.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::*;
use seal_fs::runfolder::RunFolder;
use seal_testkit::client::SealClient;
use seal_testkit::loopback::Loopback;

/// Reads by kind of one request, as a difference of two snapshots.
fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(k, n)| {
            let d = n - before.get(k).copied().unwrap_or(0);
            (d > 0).then(|| (k.clone(), d))
        })
        .collect()
}

/// The most reads each request may make of each kind; a kind not named may not be read.
/// Totals today: PUT header 0, brief 2, play-spec 2, roll 1 13, finalize 34 (the final audit's
/// deliberate re-read of everything sealed, each object once, on which the inputs are also
/// authenticated and the snapshot derived).
const CEILINGS: &[(&str, &[(&str, u64)])] = &[
    ("PUT header", &[]),
    (
        "PUT brief",
        &[
            ("receipts/{run}/header.json", 1),
            ("runs/{run}/header.json", 1),
        ],
    ),
    (
        "PUT play-spec",
        &[
            ("receipts/{run}/header.json", 1),
            ("runs/{run}/header.json", 1),
        ],
    ),
    (
        "POST roll 1",
        &[
            ("cas/{blob}", 6),
            ("receipts/{run}/brief.md", 1),
            ("receipts/{run}/header.json", 1),
            ("receipts/{run}/play-spec.json", 1),
            ("runs/{run}/brief.md", 1),
            ("runs/{run}/header.json", 1),
            ("runs/{run}/play-spec.json", 1),
            // Whether the roll is judged already (absent here).
            ("runs/{run}/roll-N/roll.json", 1),
        ],
    ),
    (
        "POST finalize",
        &[
            ("cas/{blob}", 6),
            ("log/entries/N", 1),
            // The judge policy the attempts name, re-read by the final audit.
            ("policies/{policy}", 1),
            ("receipts/{run}/brief.md", 1),
            ("receipts/{run}/header.json", 1),
            ("receipts/{run}/play-spec.json", 1),
            ("receipts/{run}/roll-N/proof-package.json", 1),
            ("receipts/{run}/roll-N/roll.json", 1),
            ("runs/{run}/brief.md", 1),
            ("runs/{run}/header.json", 1),
            ("runs/{run}/play-spec.json", 1),
            ("runs/{run}/roll-N/consensus.json", 1),
            ("runs/{run}/roll-N/cost-reservation.json", 1),
            ("runs/{run}/roll-N/image-manifest.json", 1),
            ("runs/{run}/roll-N/judge-a/attempt-N/meta.json", 1),
            ("runs/{run}/roll-N/judge-a/attempt-N/raw.json", 1),
            ("runs/{run}/roll-N/judge-a/attempt-N/request.json", 1),
            ("runs/{run}/roll-N/judge-a/normalized.json", 1),
            ("runs/{run}/roll-N/judge-a/parsed.json", 1),
            ("runs/{run}/roll-N/judge-b/attempt-N/meta.json", 1),
            ("runs/{run}/roll-N/judge-b/attempt-N/raw.json", 1),
            ("runs/{run}/roll-N/judge-b/attempt-N/request.json", 1),
            ("runs/{run}/roll-N/judge-b/normalized.json", 1),
            ("runs/{run}/roll-N/judge-b/parsed.json", 1),
            ("runs/{run}/roll-N/judge-package.json", 1),
            ("runs/{run}/roll-N/proof-package.json", 1),
            // The run's state load, then the final audit's re-read.
            ("runs/{run}/roll-N/roll.json", 2),
            ("runs/{run}/seal.dsse.json", 1),
        ],
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_roll_reads_its_inputs_no_more_often_than_counted() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let engine = engine_with(&lb, "memory://", &[]).await;
    // The judge policy is logged once per process, before the first roll (as `seal serve`
    // logs it at start): not a read of the roll's.
    engine.policy().await.unwrap();
    let store = engine.store().clone();
    let (base, _stop) = start(engine).await;
    let c = SealClient::new(base);
    let folder = RunFolder::read(&example("run-narrative-0010-pass"), 1 << 26).unwrap();
    let run = folder.run().to_string();
    c.put_blobs(&folder).await;

    let mut seen: Vec<(&str, BTreeMap<String, u64>)> = Vec::new();
    let mut last = store.reads_by_kind();
    let mut step = |name: &'static str, seen: &mut Vec<_>| {
        let now = store.reads_by_kind();
        seen.push((name, delta(&last, &now)));
        last = now;
    };
    c.put_header(&run, folder.header_bytes().to_vec())
        .await
        .expect_success();
    step("PUT header", &mut seen);
    c.put_brief(&run, folder.brief().to_vec())
        .await
        .expect_success();
    step("PUT brief", &mut seen);
    let spec = folder.play_spec().expect("the example has a play-spec");
    c.put_play_spec(&run, spec.to_vec()).await.expect_success();
    step("PUT play-spec", &mut seen);
    c.roll(&folder, 1).await.expect_success();
    step("POST roll 1", &mut seen);
    c.finalize(&run).await.expect_success();
    step("POST finalize", &mut seen);

    let mut report = String::new();
    let mut over = Vec::new();
    for (name, reads) in &seen {
        let total: u64 = reads.values().sum();
        report.push_str(&format!("{name}: {total} reads {reads:?}\n"));
        let ceiling: BTreeMap<&str, u64> = CEILINGS
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.iter().copied().collect())
            .unwrap_or_default();
        for (kind, n) in reads {
            let max = ceiling.get(kind.as_str()).copied().unwrap_or(0);
            if *n > max {
                over.push(format!("{name}: {kind} read {n} times, at most {max}"));
            }
        }
    }
    eprintln!("{report}");
    assert!(over.is_empty(), "{}\n\n{report}", over.join("\n"));
}
