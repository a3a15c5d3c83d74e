//! Judges held to account on people's reviews: two loopback judges that make the same mistakes
//! (one error seed) and two that err independently (two seeds) judge twenty runs each over real
//! HTTP under a logged judge policy; a person's reviews give the truth; `seal stats --policy`
//! then reports about one effective vote for the copying pair and about two for the
//! independent pair, each equal to 2 / (1 + φ) computed here by hand from the labels. The
//! signed reliability report names the policy (subject and log leaf), is stored and logged,
//! and `seal log verify` fails once its stored bytes are deleted.

use super::review::{both, python_ready, Setup};
use crate::common::*;
use seal_testkit::loopback::{Errors, Loopback, Persona};
use std::collections::BTreeMap;
use std::path::Path;

const RUNS: usize = 20;

/// A store of `RUNS` runs judged by A and B erring with `seeds` (30% each), signed with the
/// fixtures' test-only key (so the review helpers' trust applies); returns the setup, the
/// policy's sha256 and leaf, and the obligations A flipped per run.
async fn judged(seeds: (u64, u64)) -> (Setup, String, u64, BTreeMap<String, Vec<String>>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let setup = Setup::at(dir, root);
    let lb = Loopback::start(std::time::Duration::from_millis(1))
        .await
        .unwrap();
    for (model, seed) in [(MODEL_A, seeds.0), (MODEL_B, seeds.1)] {
        lb.persona(
            model,
            Persona {
                errors: Some(Errors { seed, percent: 30 }),
                ..Persona::default()
            },
        );
    }
    let key = seal_fs::keys::load_signing_key(&setup.log_key).unwrap();
    let store = seal_store::Store::open(&setup.url).await.unwrap();
    let engine = seal_engine::engine::Engine::new(store, config_for(&lb, &[]), Some(key)).unwrap();
    let policy = engine.policy().await.unwrap();
    let mut flipped = BTreeMap::new();
    for i in 0..RUNS {
        let run = format!("run-reliability-{i:04}");
        let input = setup.dir.path().join(format!("in-{i}"));
        copy_tree(&example("run-narrative-0010-pass"), &input);
        // A token of its own in each brief: twenty packages, so twenty draws of each error.
        let brief = format!(
            "{}\n\nreference-{i:06}\n",
            std::fs::read_to_string(input.join("brief.md")).unwrap()
        );
        std::fs::write(input.join("brief.md"), &brief).unwrap();
        let h = input.join("header.json");
        let mut header: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&h).unwrap()).unwrap();
        header["runId"] = run.clone().into();
        header["briefHash"] = seal_core::canonical::Hash::of(brief.as_bytes())
            .to_string()
            .into();
        std::fs::write(&h, serde_json::to_vec(&header).unwrap()).unwrap();
        let before = lb.calls().len();
        let folder = seal_fs::runfolder::RunFolder::read(&input, 1 << 26).unwrap();
        seal_engine::judge_run::judge(&engine, &folder)
            .await
            .unwrap_or_else(|e| panic!("{run}: {e}"));
        let calls = lb.calls();
        let a: Vec<_> = calls[before..]
            .iter()
            .filter(|c| c.model == MODEL_A)
            .collect();
        assert_eq!(a.len(), 1, "{run}: one call to A");
        flipped.insert(run, a[0].flipped.clone());
    }
    (setup, policy.sha256.to_string(), policy.leaf_index, flipped)
}

fn labels(s: &Setup, name: &str, policy: &str) -> Vec<serde_json::Value> {
    s.labels(name, &["--policy", policy])
}

/// Reviews every run with the truth (A's verdict, unflipped where A erred on purpose), then
/// returns the stats under `policy` and φ computed by hand from the labels.
fn reviewed(
    s: &Setup,
    policy: &str,
    flipped: &BTreeMap<String, Vec<String>>,
) -> (serde_json::Value, f64) {
    let mut truth: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in labels(s, "before.jsonl", policy) {
        let (run, id) = (
            l["runId"].as_str().unwrap(),
            l["obligationId"].as_str().unwrap(),
        );
        let a = l["judgeA"].as_str().unwrap();
        let erred = flipped[run].iter().any(|f| f == id);
        let status = match (a, erred) {
            ("satisfied", true) => "failed",
            ("failed", true) => "satisfied",
            (s, _) => s,
        };
        truth
            .entry(run.to_string())
            .or_default()
            .push(format!("{id}={status}"));
    }
    assert_eq!(truth.len(), RUNS, "every run is under the policy");
    for (run, sets) in &truth {
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let out = s.review_run(run, &s.reviewer_key, &sets, "");
        assert_eq!(out.status.code(), Some(0), "{run}: {}", both(&out));
    }
    let mut t = [[0f64; 2]; 2];
    for l in labels(s, "after.jsonl", policy) {
        let h = l["human"].as_str().expect("every obligation reviewed");
        t[usize::from(l["judgeA"] != h)][usize::from(l["judgeB"] != h)] += 1.0;
    }
    let [[t00, t01], [t10, t11]] = t;
    let phi =
        (t11 * t00 - t10 * t01) / ((t10 + t11) * (t00 + t01) * (t01 + t11) * (t00 + t10)).sqrt();
    let rpub = s.reviewer_pub.display().to_string();
    let stats = s.stats_with(&["--trust-reviewer", &rpub, "--policy", policy]);
    assert_eq!(stats["query"]["policy"], policy);
    assert_eq!(stats["runs"]["used"], RUNS as u64);
    let counts = &stats["reliability"]["all"]["counts"]["errors"];
    assert_eq!(
        counts,
        &serde_json::json!([[t00 as u64, t01 as u64], [t10 as u64, t11 as u64]]),
        "the error table"
    );
    (stats, phi)
}

fn votes(stats: &serde_json::Value) -> f64 {
    stats["reliability"]["all"]["figures"]["effectiveVotes"]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("{}", stats["reliability"]["all"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judges_that_copy_each_other_s_errors_are_worth_one_vote_independent_ones_two() {
    // The same seed: the very same mistakes.
    let (copying, policy, _, flipped) = judged((7, 7)).await;
    let (stats, phi) = reviewed(&copying, &policy, &flipped);
    assert!((phi - 1.0).abs() < 1e-9, "copied errors: φ {phi}");
    assert!((votes(&stats) - 1.0).abs() < 1e-5, "{}", votes(&stats));
    eprintln!(
        "copying judges: φ {phi:.4}, {:.4} effective votes",
        votes(&stats)
    );

    // Two seeds: mistakes drawn independently.
    let (independent, policy, leaf, flipped) = judged((7, 8)).await;
    let (stats, phi) = reviewed(&independent, &policy, &flipped);
    let v = votes(&stats);
    eprintln!("independent judges: φ {phi:.4}, {v:.4} effective votes");
    assert!(
        (v - 2.0 / (1.0 + phi)).abs() < 1e-5,
        "{v} vs 2 / (1 + {phi})"
    );
    assert!(
        (1.5..=2.6).contains(&v),
        "independent errors: {v} effective votes (φ {phi})"
    );

    // Another policy's runs are none of these.
    let rpub = independent.reviewer_pub.display().to_string();
    let none = independent.stats_with(&["--trust-reviewer", &rpub, "--policy", &"0".repeat(64)]);
    assert_eq!(none["runs"]["used"], 0);
    assert_eq!(none["runs"]["filteredOut"], RUNS as u64);
    let bad = independent.seal(&["stats", "--store", &independent.url, "--policy", "nope"]);
    assert_eq!(bad.status.code(), Some(2), "{}", both(&bad));
    assert!(both(&bad).contains("64 lowercase hex"), "{}", both(&bad));

    report_is_published(&independent, &policy, leaf);
}

/// `seal report reliability --policy`: the report names the policy (a subject, and its log
/// leaf in the predicate), is stored at `reports/<sha256>.json` and logged; the independent
/// script re-checks all of it; `seal log verify` lists the report and fails once it is gone.
fn report_is_published(s: &Setup, policy: &str, leaf: u64) {
    let trust = fixture_trust_pem().display().to_string();
    let rpub = s.reviewer_pub.display().to_string();
    let out_path = s.dir.path().join("reliability.dsse.json");
    let entries_before = s.log_entries();
    let out = s.seal(&[
        "report",
        "reliability",
        "--store",
        &s.url,
        "--trust",
        &trust,
        "--trust-reviewer",
        &rpub,
        "--policy",
        policy,
        "--key",
        &s.log_key.display().to_string(),
        "--out",
        &out_path.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let bytes = std::fs::read(&out_path).unwrap();
    let sha = seal_core::canonical::Hash::of(&bytes).to_string();
    assert!(
        both(&out).contains(&format!("reports/{sha}.json")),
        "{}",
        both(&out)
    );
    assert_eq!(
        std::fs::read(s.root.join(format!("reports/{sha}.json"))).unwrap(),
        bytes
    );
    assert_eq!(s.log_entries(), entries_before + 1, "one leaf appended");
    let entry: serde_json::Value = serde_json::from_slice(
        &std::fs::read(s.root.join(format!("log/entries/{entries_before:020}"))).unwrap(),
    )
    .unwrap();
    assert_eq!(entry["kind"], "reliability-report");
    assert_eq!(entry["reportSha256"], sha);

    let env: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    use base64::Engine as _;
    let statement: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(env["payload"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    let p = &statement["predicate"];
    assert_eq!(p["query"]["policy"], policy);
    assert_eq!(
        p["policies"],
        serde_json::json!([{"leafIndex": leaf, "sha256": policy}])
    );
    let subjects = statement["subject"].as_array().unwrap();
    assert!(
        subjects
            .iter()
            .any(|x| x["name"] == format!("policies/{policy}.json")
                && x["digest"]["sha256"] == policy),
        "{subjects:?}"
    );
    use seal_core::contracts::{validate, Kind};
    let invalid = validate(Kind::Reliability, &statement);
    assert!(invalid.is_empty(), "{invalid:?}");
    if python_ready("reliability report with a policy") {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reliability/recompute.py");
        let check = std::process::Command::new("python3")
            .arg(&script)
            .arg(&s.root)
            .arg(&out_path)
            .arg(fixture_trust_pem())
            .output()
            .unwrap();
        assert!(check.status.success(), "{}", both(&check));
    }

    let log = s.seal(&["log", "verify", "--store", &s.url, "--trust", &trust]);
    assert_eq!(log.status.code(), Some(0), "{}", both(&log));
    assert!(
        both(&log).contains(&format!(
            "reliability report at leaf {entries_before} (sha256 {sha}"
        )),
        "{}",
        both(&log)
    );
    // A rebuild after a lost entry relogs the report with the runs: a rebuild cannot be used
    // to unpublish it. A report leaf the store writer planted past the gap (no `auth`, so not
    // this log's) is not relogged: only the one published is listed afterwards.
    std::fs::remove_file(s.root.join("log/entries/00000000000000000003")).unwrap();
    let planted_sha = seal_core::canonical::Hash::of(b"a report nobody published");
    let planted =
        seal_core::tlog::ReportEntry::new(&planted_sha, "planted", "2026-12-07T00:00:00Z");
    std::fs::write(
        s.root
            .join(format!("log/entries/{:020}", entries_before + 1)),
        planted.to_bytes().unwrap(),
    )
    .unwrap();
    let rebuilt = s.seal(&[
        "log",
        "rebuild",
        "--store",
        &s.url,
        "--key",
        &s.log_key.display().to_string(),
        "--trust-reviewer",
        &rpub,
    ]);
    assert_eq!(rebuilt.status.code(), Some(0), "{}", both(&rebuilt));
    let log = s.seal(&["log", "verify", "--store", &s.url, "--trust", &trust]);
    assert_eq!(log.status.code(), Some(0), "{}", both(&log));
    assert!(
        both(&log).contains("reliability report at leaf") && both(&log).contains(&sha),
        "{}",
        both(&log)
    );
    assert!(
        !both(&log).contains(planted_sha.as_str()),
        "a planted report leaf was relogged: {}",
        both(&log)
    );
    assert_eq!(both(&log).matches("reliability report at leaf").count(), 1);
    // Every run sealed here verifies, reviews and all, after the rebuild.
    let all = s.seal(&[
        "verify",
        "--all",
        "--store",
        &s.url,
        "--trust",
        &trust,
        "--trust-reviewer",
        &rpub,
    ]);
    assert_eq!(all.status.code(), Some(0), "{}", both(&all));
    // The store writer unpublishes the report: the log names it, so the deletion shows.
    std::fs::remove_file(s.root.join(format!("reports/{sha}.json"))).unwrap();
    let log = s.seal(&["log", "verify", "--store", &s.url, "--trust", &trust]);
    assert_eq!(log.status.code(), Some(1), "{}", both(&log));
    assert!(
        both(&log).contains("report_missing") && both(&log).contains(&sha),
        "{}",
        both(&log)
    );
}
