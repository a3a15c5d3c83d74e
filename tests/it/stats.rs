//! `seal stats`: κ, the bootstrap, confusion matrices and percentiles against hand-computed
//! textbook cases (degenerate κ included); swapping the judges transposes every matrix and
//! keeps κ; over the sealed fixtures, the figures equal a recomputation straight from the
//! stored files, are pinned as a golden file (`SEAL_BLESS=1` regenerates it), are the same
//! bytes twice, and leave out a tampered run while listing it.

use crate::common;

use common::*;
use proptest::prelude::*;
use seal_core::doc::{JudgeStatus, ObligationStatus};
use seal_engine::stats_load::aggregate::Aggregator;
use seal_engine::stats_load::facts::*;
use seal_engine::stats_load::kappa::{
    kappa_interval, nearest_rank, Confusion, Histogram, SplitMix64,
};
use seal_engine::stats_load::{stats, Query, Stats};
use seal_store::Store;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn two_by_two(yy: u64, yn: u64, ny: u64, nn: u64) -> Confusion {
    Confusion {
        cells: [[yy, yn, 0, 0], [ny, nn, 0, 0], [0; 4], [0; 4]],
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn kappa_textbook_cases() {
    // Cohen's classic 2 x 2 example: p_o = 0.7, p_e = 0.5, κ = 0.4.
    let m = two_by_two(20, 5, 10, 15);
    assert!(close(m.agreement().unwrap(), 0.7));
    assert!(close(m.kappa().unwrap(), 0.4));
    // Same p_o = 0.6, different marginals: κ = 0.1304… and 0.2593….
    assert!(close(
        two_by_two(45, 15, 25, 15).kappa().unwrap(),
        6.0 / 46.0
    ));
    assert!(close(
        two_by_two(25, 35, 5, 35).kappa().unwrap(),
        0.14 / 0.54
    ));
    // A 3-category case: p_o = 0.7, p_e = 0.34, κ = 0.36 / 0.66.
    let m3 = Confusion {
        cells: [[25, 5, 0, 0], [5, 25, 10, 0], [0, 10, 20, 0], [0, 0, 0, 0]],
    };
    assert!(close(m3.agreement().unwrap(), 0.7));
    assert!(close(m3.kappa().unwrap(), (0.7 - 0.34) / 0.66));
}

#[test]
fn kappa_degenerate_cases() {
    // One category only: chance agreement is 1, κ is 0/0: undefined, not 1 and not 0.
    let one = two_by_two(12, 0, 0, 0);
    assert_eq!(one.agreement(), Some(1.0));
    assert_eq!(one.kappa(), None);
    assert_eq!(kappa_interval(&one, 7, 200), None);
    // Empty.
    assert_eq!(Confusion::default().kappa(), None);
    assert_eq!(Confusion::default().agreement(), None);
    // Perfect agreement over two categories: κ = 1.
    assert!(close(two_by_two(10, 0, 0, 10).kappa().unwrap(), 1.0));
    // Complete disagreement with balanced marginals: p_o = 0, p_e = 0.5, κ = −1.
    assert!(close(two_by_two(0, 5, 5, 0).kappa().unwrap(), -1.0));
    // Below chance: p_o = 0.4 < p_e = 0.5, κ = −0.2.
    assert!(close(two_by_two(2, 3, 3, 2).kappa().unwrap(), -0.2));
}

#[test]
fn bootstrap_is_seeded_and_brackets_the_estimate() {
    let m = two_by_two(20, 5, 10, 15);
    let a = kappa_interval(&m, 42, 1000).unwrap();
    assert_eq!(
        a,
        kappa_interval(&m, 42, 1000).unwrap(),
        "same seed, same interval"
    );
    assert_ne!(a, kappa_interval(&m, 43, 1000).unwrap(), "the seed matters");
    assert!(a.0 < 0.4 && 0.4 < a.1, "{a:?}");
    // The analytic standard error of this κ is ≈ 0.13: the interval is about ±2 SE wide.
    assert!(a.1 - a.0 > 0.3 && a.1 - a.0 < 0.7, "{a:?}");
    // Perfect agreement with both categories well represented: every resample has κ = 1.
    assert_eq!(
        kappa_interval(&two_by_two(50, 0, 0, 50), 1, 500),
        Some((1.0, 1.0))
    );
    // Nearest-rank percentiles on 1..=40: the 2.5% is the 1st value, the 97.5% the 39th.
    let v: Vec<f64> = (1..=40).map(f64::from).collect();
    assert_eq!(nearest_rank(&v, 0.025), Some(1.0));
    assert_eq!(nearest_rank(&v, 0.975), Some(39.0));
    let mut r = SplitMix64::new(0);
    assert!((0..1000).all(|_| r.below(7) < 7));
}

#[test]
fn histogram_percentiles_by_hand() {
    let mut h = Histogram::default();
    for v in [100, 200, 200, 300, 1000] {
        h.add(v);
    }
    assert_eq!(h.percentile(0.5), Some(200));
    assert_eq!(h.percentile(0.95), Some(1000));
    assert_eq!(h.percentile(0.0), Some(100));
    assert_eq!(h.mean(), Some(360.0));
    assert_eq!(Histogram::default().percentile(0.5), None);
}

fn facts(pairs: &[(usize, usize)], swap: bool) -> RunFacts {
    let status = |c: usize| match c {
        0 => JudgeStatus::Satisfied,
        1 => JudgeStatus::Failed,
        _ => JudgeStatus::Missing,
    };
    let obligations = pairs
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| {
            let (a, b) = if swap { (b, a) } else { (a, b) };
            ObligationFacts {
                id: format!("o{}", i % 3),
                a,
                b,
                a_status: status(a),
                b_status: status(b),
                consensus: if a == b {
                    ObligationStatus::Satisfied
                } else {
                    ObligationStatus::Disputed
                },
                check: (i % 2 == 0).then_some(true),
            }
        })
        .collect();
    let slot = |s: &str| SlotFacts {
        slot: s.into(),
        model: "m".into(),
        prompt: "p@1".into(),
        host: "judge.example".into(),
        requested: "m".into(),
        served: Some(Served {
            model: "m".into(),
            fingerprint: None,
        }),
        failed_class: None,
        attempts: vec![AttemptFacts {
            latency_ms: 10,
            cost_micro: 5,
            error_class: None,
        }],
    };
    RunFacts {
        run_id: "r".into(),
        genre: "puzzle".into(),
        day: "2026-01-01".into(),
        outcome: "pass".into(),
        action: "accept".into(),
        reasons: vec![],
        replay_of: None,
        first_raw_a: None,
        cost_micro: 10,
        rolls: vec![RollFacts {
            roll_id: "roll-1".into(),
            outcome: "pass".into(),
            dispatched: true,
            degraded: false,
            cost_micro: 10,
            obligations,
            slots: [slot("a"), slot("b")],
        }],
        decided_at: "2026-01-01T00:00:00Z".into(),
        decided_nanos: 1_767_225_600_000_000_000,
        reviewed: false,
        human: BTreeMap::new(),
        seal_sha256: String::new(),
        review_sha256: vec![],
        policies: vec![],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn swapping_judges_transposes_matrices_and_keeps_kappa(
        pairs in proptest::collection::vec((0usize..4, 0usize..4), 1..60)
    ) {
        let mut m = Confusion::default();
        for &(a, b) in &pairs {
            m.add(a, b);
        }
        let t = m.transpose();
        prop_assert_eq!(t.transpose(), m);
        prop_assert_eq!(m.agreement(), t.agreement());
        match (m.kappa(), t.kappa()) {
            (Some(x), Some(y)) => prop_assert!((x - y).abs() < 1e-12),
            (x, y) => prop_assert_eq!(x, y),
        }
        let mut fwd = Aggregator::new();
        fwd.add(&facts(&pairs, false));
        let mut rev = Aggregator::new();
        rev.add(&facts(&pairs, true));
        let (f, r) = (fwd.finish(Query::default()), rev.finish(Query::default()));
        let keys = std::iter::once(("all".to_string(), &f.agreement.all, &r.agreement.all))
            .chain(f.agreement.by_obligation.iter().map(|(k, v)| (k.clone(), v, &r.agreement.by_obligation[k])));
        for (k, x, y) in keys {
            let mut xt = [[0u64; 4]; 4];
            for (i, row) in x.matrix.iter().enumerate() {
                for (j, v) in row.iter().enumerate() {
                    xt[j][i] = *v;
                }
            }
            prop_assert_eq!(xt, y.matrix, "{}", k);
            prop_assert_eq!(x.kappa, y.kappa, "{}", k);
            prop_assert_eq!(x.disputed, y.disputed, "{}", k);
            let (cx, cy) = (x.check.as_ref(), y.check.as_ref());
            prop_assert_eq!(cx.map(|c| &c.a), cy.map(|c| &c.b), "{}", k);
        }
    }
}

async fn fixture_stats(root: &Path, query: Query) -> Stats {
    let store = Store::open_existing(&file_url(root)).await.unwrap();
    let key = seal_fs::keys::load_public_key(&fixture_trust_pem()).unwrap();
    stats(&store, &verifier(&store, key).await, query)
        .await
        .unwrap()
}

fn read(root: &Path, key: &str) -> Value {
    let b = std::fs::read(root.join(key)).unwrap_or_else(|e| panic!("{key}: {e}"));
    serde_json::from_slice(&b).unwrap()
}

fn category(parsed: &Value, id: &str) -> usize {
    let verdict = parsed["obligations"]
        .as_array()
        .and_then(|os| os.iter().find(|o| o["id"] == id))
        .map(|o| o["verdict"].as_str().unwrap().to_string());
    match verdict.as_deref() {
        Some("satisfied") => 0,
        Some("failed") => 1,
        Some("not_observed") => 2,
        _ => 3,
    }
}

/// The figures recomputed from the stored files alone (no seal code): the overall matrix,
/// disputed and contradicted counts, outcomes, attempts per slot and cost per run.
fn recompute(root: &Path) -> Value {
    let mut matrix = [[0u64; 4]; 4];
    let (mut disputed, mut contradicted, mut attempts, mut retries) = (0, 0, 0, 0);
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    let mut used = 0;
    for run in fixture_run_ids() {
        let ev_key = format!("runs/{run}/evidence.json");
        if !root.join(&ev_key).exists() {
            continue;
        }
        let ev = read(root, &ev_key);
        if ev["acceptanceMode"] == "historical_replay" {
            continue;
        }
        used += 1;
        *outcomes
            .entry(ev["outcome"].as_str().unwrap().into())
            .or_default() += 1;
        for roll in ev["rolls"].as_array().unwrap() {
            if roll["rollGuard"]["status"] != "pass" {
                continue;
            }
            let cons = read(root, roll["judgeConsensusRef"].as_str().unwrap());
            let pa = read(root, roll["judgeARef"]["parsedRef"].as_str().unwrap());
            let pb = read(root, roll["judgeBRef"]["parsedRef"].as_str().unwrap());
            for o in cons["obligationResults"].as_array().unwrap() {
                let id = o["id"].as_str().unwrap();
                matrix[category(&pa, id)][category(&pb, id)] += 1;
                disputed += u64::from(o["status"] == "disputed");
                contradicted += u64::from(o["status"] == "contradicted");
            }
            for slot in ["judgeARef", "judgeBRef"] {
                let norm = read(root, roll[slot]["normalizedRef"].as_str().unwrap());
                for a in norm["attempts"].as_array().unwrap() {
                    attempts += 1;
                    retries += u64::from(a["attempt"].as_u64().unwrap() > 1);
                }
            }
        }
    }
    serde_json::json!({"matrix": matrix, "disputed": disputed, "contradicted": contradicted,
        "outcomes": outcomes, "attempts": attempts, "retries": retries, "used": used})
}

#[tokio::test]
async fn fixture_figures_equal_a_recomputation_from_the_stored_files() {
    let root = fixture_store_dir();
    let s = fixture_stats(&root, Query::default()).await;
    let r = &s.report;
    let want = recompute(&root);
    let a = &r.agreement.all;
    assert_eq!(serde_json::json!(a.matrix), want["matrix"]);
    assert_eq!(a.disputed, want["disputed"].as_u64().unwrap());
    assert_eq!(a.contradicted, want["contradicted"].as_u64().unwrap());
    assert_eq!(serde_json::json!(r.outcomes.outcome), want["outcomes"]);
    assert_eq!(r.runs.used, want["used"].as_u64().unwrap());
    assert_eq!(r.runs.not_verified, 0, "{:?}", r.runs.not_verified_runs);
    let attempts: u64 = r.slots.iter().map(|s| s.attempts).sum();
    let retries: u64 = r.slots.iter().map(|s| s.retries).sum();
    assert_eq!(attempts, want["attempts"].as_u64().unwrap());
    assert_eq!(retries, want["retries"].as_u64().unwrap());
    // κ of the overall matrix, by the textbook formula on the recomputed counts.
    let m = Confusion { cells: a.matrix };
    assert_eq!(
        a.kappa,
        m.kappa()
            .map(|k| seal_engine::stats_load::kappa::round(k, 6))
    );
    // The fixtures hold one stored replay of a pass run: compared, not flipped.
    assert_eq!(r.replay.replays, 1);
    assert_eq!(r.replay.compared, 1);
    assert_eq!(r.replay.by_mode.get("stored").map(|f| f.flipped), Some(0));
}

#[tokio::test]
async fn fixture_figures_are_pinned_and_byte_identical() {
    let root = fixture_store_dir();
    let first = fixture_stats(&root, Query::default()).await;
    let second = fixture_stats(&root, Query::default()).await;
    assert_eq!(
        first.bytes, second.bytes,
        "two runs on one store, same bytes"
    );
    assert_eq!(first.html(), second.html());
    assert_eq!(first.text(), second.text());
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stats/fixtures.json");
    if std::env::var("SEAL_BLESS").as_deref() == Ok("1") {
        std::fs::write(&golden, &first.bytes).unwrap();
    }
    let want =
        std::fs::read(&golden).expect("tests/data/stats/fixtures.json (SEAL_BLESS=1 makes it)");
    assert!(
        want == first.bytes,
        "stats over the fixtures changed; if intended, run with SEAL_BLESS=1 and review the diff"
    );
    let v: Value = serde_json::from_slice(&first.bytes).unwrap();
    assert!(matches!(
        seal_core::validate::validate_as(seal_core::contracts::Kind::Stats, &v),
        seal_core::validate::Report::Valid(_)
    ));
}

#[tokio::test]
async fn filters_and_a_tampered_run() {
    let root = fixture_store_dir();
    let all = fixture_stats(&root, Query::default()).await.report;
    let puzzle = fixture_stats(
        &root,
        Query {
            genre: Some("puzzle".into()),
            ..Query::default()
        },
    )
    .await
    .report;
    assert_eq!(
        puzzle.agreement.by_genre.keys().collect::<Vec<_>>(),
        ["puzzle"]
    );
    assert_eq!(
        puzzle.runs.used + puzzle.runs.filtered_out + puzzle.runs.replays,
        all.runs.used + all.runs.replays
    );
    let future = fixture_stats(
        &root,
        Query {
            since: Some("2999-01-01T00:00:00Z".into()),
            ..Query::default()
        },
    )
    .await
    .report;
    assert_eq!(future.runs.used, 0);
    assert_eq!(future.agreement.all.kappa, None);
    // A flipped byte in one run's consensus: that run is listed as not verified, not used.
    let (_dir, copy) = copy_fixture_store();
    let target = copy.join("runs/run-puzzle-0013-fail-end/roll-1/consensus.json");
    let mut bytes = std::fs::read(&target).unwrap();
    let at = bytes.iter().position(|b| *b == b'f').unwrap();
    bytes[at] = b'g';
    std::fs::write(&target, bytes).unwrap();
    let tampered = fixture_stats(&copy, Query::default()).await.report;
    assert_eq!(tampered.runs.not_verified, 1);
    assert_eq!(
        tampered.runs.not_verified_runs[0].run_id,
        "run-puzzle-0013-fail-end"
    );
    assert_eq!(tampered.runs.used, all.runs.used - 1);
}

#[tokio::test]
async fn cli_json_table_html_and_bad_options() {
    let root = fixture_store_dir();
    let work = tempfile::tempdir().unwrap();
    let seal = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_seal"));
        c.current_dir(work.path())
            .arg("stats")
            .arg("--store")
            .arg(file_url(&root));
        c.arg("--trust").arg(fixture_trust_pem()).args(args);
        c
    };
    let out = run(seal(&["--json"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let golden =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stats/fixtures.json"))
            .unwrap();
    assert_eq!(out.stdout, golden);
    let table = run(seal(&[])).await;
    assert_eq!(table.status.code(), Some(0));
    assert!(text(&table.stdout).contains("Judge agreement"));
    let page = work.path().join("stats.html");
    let out = run(seal(&["--html", page.to_str().unwrap()])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&page).unwrap().contains("<svg"));
    // A bad option value is a usage error: could not answer (2), like in every command.
    let bad = run(seal(&["--since", "last tuesday"])).await;
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    let bad = run(seal(&["--genre", "chess"])).await;
    assert_eq!(bad.status.code(), Some(2));
}
