//! Reviews of sealed runs, continued: stats comparing people with the judges, the adjudication queue, copied and deleted reviews.

use super::review::*;
use crate::common;
use common::*;
use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `decidedAt` (RFC 3339, UTC `Z`) as a key that sorts by time: the seconds, then the
/// fraction padded to nanoseconds.
fn time_key(t: &str) -> (String, String) {
    let t = t.trim_end_matches('Z');
    let (secs, frac) = t.split_once('.').unwrap_or((t, ""));
    (secs.to_string(), format!("{frac:0<9}"))
}

/// Cohen's κ of a 4 × 4 matrix, by the textbook formula (None when undefined).
fn kappa_by_hand(m: &[[u64; 4]; 4]) -> Option<f64> {
    let n: u64 = m.iter().flatten().sum();
    if n == 0 {
        return None;
    }
    let n = n as f64;
    let po = (0..4).map(|i| m[i][i]).sum::<u64>() as f64 / n;
    let pe: f64 = (0..4)
        .map(|k| {
            let row: u64 = m[k].iter().sum();
            let col: u64 = (0..4).map(|i| m[i][k]).sum();
            (row as f64 / n) * (col as f64 / n)
        })
        .sum();
    ((1.0 - pe).abs() > 1e-12).then(|| (po - pe) / (1.0 - pe))
}

/// `seal stats` with real reviews: the human figures equal a recomputation from the labels
/// export (the same human, judge and consensus statuses, counted by hand, κ by the textbook
/// formula, inside its bootstrap interval); the adjudication queue lists the decided
/// inconclusive runs without a trusted review, oldest first, and a review takes its run off.
#[test]
fn stats_compare_people_with_the_judges_and_queue_unreviewed_inconclusive_runs() {
    let s = setup();
    let before = s.stats(true);
    assert_eq!(before["human"]["reviewedRuns"], 0);
    assert_eq!(before["human"]["all"]["n"], 0);
    let queue = before["reviewQueue"].as_array().unwrap().clone();
    let ids: Vec<&str> = queue.iter().map(|q| q["runId"].as_str().unwrap()).collect();
    assert!(ids.contains(&RUN), "{ids:?}");
    for q in &queue {
        let id = q["runId"].as_str().unwrap();
        assert_eq!(q["explain"], format!("/v1/runs/{id}/explain"));
        let ev: serde_json::Value =
            serde_json::from_slice(&s.bytes(&format!("runs/{id}/evidence.json"))).unwrap();
        assert_eq!(ev["outcome"], "inconclusive", "{id}");
        assert_eq!(q["decidedAt"], ev["finalPostguard"]["decidedAt"], "{id}");
    }
    let keys: Vec<_> = queue
        .iter()
        .map(|q| time_key(q["decidedAt"].as_str().unwrap()))
        .collect();
    assert!(
        keys.windows(2).all(|w| w[0] <= w[1]),
        "oldest first: {keys:?}"
    );
    // Every decided inconclusive run of the store is on it (none has a review yet).
    let inconclusive = fixture_run_ids()
        .into_iter()
        .filter(|id| {
            let ev: serde_json::Value =
                serde_json::from_slice(&s.bytes(&format!("runs/{id}/evidence.json"))).unwrap();
            ev["outcome"] == "inconclusive"
        })
        .count();
    assert_eq!(queue.len(), inconclusive);

    let out = s.review(
        &s.reviewer_key,
        &[
            "core.loop-reached=satisfied",
            "ui.text-readable=failed",
            "brief.theme-visible=missing",
            "progress.score-increased=failed",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let after = s.stats(true);
    let h = &after["human"];
    assert_eq!(h["reviewedRuns"], 1);
    assert_eq!(
        h["categories"],
        serde_json::json!(["satisfied", "failed", "missing", "unresolved"])
    );
    let queue: Vec<&str> = after["reviewQueue"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["runId"].as_str().unwrap())
        .collect();
    assert!(
        !queue.contains(&RUN),
        "a reviewed run is off the queue: {queue:?}"
    );
    assert_eq!(queue.len(), inconclusive - 1);

    // The recomputation, from the labels export.
    let path = s.dir.path().join("labels.jsonl");
    let trust = fixture_trust_pem().display().to_string();
    let rpub = s.reviewer_pub.display().to_string();
    let out = s.seal(&[
        "export",
        "labels",
        "--store",
        &s.url,
        "--trust",
        &trust,
        "--trust-reviewer",
        &rpub,
        "--out",
        &path.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let cat = |v: &serde_json::Value| match v.as_str().unwrap() {
        "satisfied" => 0,
        "failed" => 1,
        "missing" => 2,
        _ => 3, // disputed, contradicted
    };
    let mut want: BTreeMap<String, [[[u64; 4]; 4]; 3]> = BTreeMap::new();
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        let l: serde_json::Value = serde_json::from_str(line).unwrap();
        if l["human"].is_null() {
            continue;
        }
        let hc = cat(&l["human"]);
        for key in [
            "all".to_string(),
            l["obligationId"].as_str().unwrap().to_string(),
        ] {
            let m = want.entry(key).or_default();
            m[0][hc][cat(&l["judgeA"])] += 1;
            m[1][hc][cat(&l["judgeB"])] += 1;
            m[2][hc][cat(&l["consensus"])] += 1;
        }
    }
    assert_eq!(
        want.len(),
        5,
        "all and the four reviewed obligations: {want:?}"
    );
    for (key, m) in &want {
        let got = if key == "all" {
            &h["all"]
        } else {
            &h["byObligation"][key]
        };
        for (i, who) in ["judgeA", "judgeB", "consensus"].into_iter().enumerate() {
            let g = &got[who];
            let matrix: [[u64; 4]; 4] = serde_json::from_value(g["matrix"].clone()).unwrap();
            assert_eq!(matrix, m[i], "{key} {who}");
            let n: u64 = m[i].iter().flatten().sum();
            assert_eq!(g["n"], n);
            match kappa_by_hand(&m[i]) {
                None => assert!(g["kappa"].is_null(), "{key} {who}: {g}"),
                Some(k) => {
                    let got = g["kappa"].as_f64().unwrap();
                    assert!((got - k).abs() < 1e-5, "{key} {who}: {got} vs {k}");
                    if let Some(ci) = g["kappaCi95"].as_array() {
                        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
                        assert!(lo <= got + 1e-9 && got <= hi + 1e-9, "{key} {who}: {g}");
                    }
                }
            }
        }
    }
    assert_eq!(s.stats(true), after, "the same store, the same figures");
    // The table and the page show both sections.
    let table = s.seal(&[
        "stats",
        "--store",
        &s.url,
        "--trust",
        &trust,
        "--trust-reviewer",
        &rpub,
    ]);
    let table = text(&table.stdout);
    assert!(
        table.contains("People vs judges (1 reviewed runs"),
        "{table}"
    );
    assert!(table.contains("Adjudication queue:"), "{table}");
    // Without the reviewer trusted, the reviewed run does not verify: not counted, not queued.
    let without = s.stats(false);
    assert_eq!(without["human"]["reviewedRuns"], 0);
    assert!(!without["reviewQueue"].to_string().contains(RUN));
    assert!(without["runs"]["notVerifiedRuns"].to_string().contains(RUN));
}

/// `GET /v1/review-queue` on a real daemon: the queue `seal stats` shows, each run's explain
/// link answers, and a review posted over HTTP takes its run off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_serves_the_adjudication_queue() {
    let s = setup();
    s.daemon_config();
    let lb = seal_testkit::loopback::Loopback::start(std::time::Duration::from_millis(5))
        .await
        .unwrap();
    let daemon = spawn_daemon(s.dir.path(), &lb, &s.url, &[]);
    let c = daemon.client();
    let get_queue = || async {
        let r = c.review_queue("").await;
        assert_eq!(r.status, 200);
        assert!(r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json"));
        r.json()
    };
    let queue = get_queue().await;
    let stats = s.stats(true);
    assert_eq!(
        queue["runs"], stats["reviewQueue"],
        "the same queue as seal stats"
    );
    assert_eq!(
        queue["count"],
        stats["reviewQueue"].as_array().unwrap().len()
    );
    let first = &queue["runs"][0];
    let link = first["explain"].as_str().unwrap();
    let tree = c.get(link).await.json();
    assert_eq!(tree["evidenceBindings"]["runId"], first["runId"]);
    assert_eq!(tree["observed"]["outcome"], "inconclusive");

    // A review signed client-side, posted: the run leaves the queue.
    let run = RunId::parse(RUN).unwrap();
    let fixture = seal_fs::keys::load_public_key(&fixture_trust_pem()).unwrap();
    let store = seal_store::Store::open(&s.url).await.unwrap();
    let proof = seal_engine::verify::prove(&store, &run, std::slice::from_ref(&fixture))
        .await
        .unwrap()
        .unwrap();
    let facts = seal_engine::reviewing::facts(&run, &proof, std::slice::from_ref(&fixture));
    let st = facts.statement(
        "Grace",
        "2026-12-02T12:00:00Z",
        vec![seal_core::review::ObligationDecision {
            obligation_id: "core.loop-reached".into(),
            status: seal_core::review::Status::Failed,
        }],
        None,
        &Hash::of(b"tree"),
    );
    let envelope = seal_core::review::sign(
        &seal_fs::keys::load_signing_key(&s.reviewer_key).unwrap(),
        &st,
    )
    .unwrap();
    let r = c.post_review(RUN, envelope).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let after = get_queue().await;
    assert!(!after["runs"].to_string().contains(RUN), "{after}");
    assert_eq!(
        after["count"].as_u64().unwrap() + 1,
        queue["count"].as_u64().unwrap()
    );
}

/// A run folder copied under another id holds evidence that names the original run, so the
/// audit lists the original's folder: the copy's own reviews folder is listed on its own, and
/// an object planted there is named (it was missed while `verify` took the reviews from the
/// audit's listing whatever folder that was).
#[test]
fn a_copied_run_s_own_reviews_folder_is_checked() {
    let (_dir, root) = copy_fixture_store();
    let copy = format!("{RUN}-copy");
    copy_tree(
        &root.join(format!("runs/{RUN}")),
        &root.join(format!("runs/{copy}")),
    );
    let planted = format!("runs/{copy}/reviews/planted.txt");
    std::fs::create_dir_all(root.join(format!("runs/{copy}/reviews"))).unwrap();
    std::fs::write(root.join(&planted), b"x").unwrap();
    let trust = fixture_trust_pem().display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args([
            "verify",
            &copy,
            "--store",
            &file_url(&root),
            "--trust",
            &trust,
        ])
        .output()
        .unwrap();
    let text = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&planted), "{text}");
}

/// Issue 44, hole 5: deleting the latest review is named, never a silent fall back to the one
/// before it: `seal verify`, `seal verify --all` and `seal log verify` exit 1 and name the
/// review the log holds and the store lacks (`review_missing`).
#[test]
fn a_deleted_latest_review_fails_verify_verify_all_and_log_verify() {
    let s = setup();
    for sets in ["core.loop-reached=satisfied", "core.loop-reached=failed"] {
        let out = s.review(&s.reviewer_key, &[sets], "");
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    }
    assert_eq!(s.verify(true).status.code(), Some(0));
    std::fs::remove_file(s.review_path(1)).unwrap();
    let missing = format!("runs/{RUN}/reviews/1.dsse.json");
    let no = s.verify(true);
    assert_eq!(no.status.code(), Some(1), "{}", both(&no));
    assert!(
        both(&no).contains("review_missing") && both(&no).contains(&missing),
        "{}",
        both(&no)
    );
    let trust = fixture_trust_pem().display().to_string();
    let rpub = s.reviewer_pub.display().to_string();
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
    assert_eq!(all.status.code(), Some(1), "{}", both(&all));
    assert!(both(&all).contains(&missing), "{}", both(&all));
    let log = s.seal(&["log", "verify", "--store", &s.url, "--trust", &trust]);
    assert_eq!(log.status.code(), Some(1), "{}", both(&log));
    assert!(
        both(&log).contains("review_missing") && both(&log).contains(&missing),
        "{}",
        both(&log)
    );
}

/// The labels export with the reviewer trusted: one line per obligation of a dispatched roll.
fn labels_export(s: &Setup, name: &str) -> Vec<serde_json::Value> {
    s.labels(name, &[])
}

/// The reliability section from real reviews of three fixture runs, against a computation by
/// hand from the labels export: the 2 × 2 table of A's and B's errors against the person,
/// φ by the textbook formula, effective votes 2 / (1 + φ), accuracy, consensus coverage and
/// agreement when decided; each inside its bootstrap interval. Keys with fewer than
/// `minReviewed` reviews give counts and no figures.
#[test]
fn reliability_figures_equal_a_hand_computation_from_the_labels() {
    let s = setup();
    let before = s.stats(true);
    assert_eq!(before["reliability"]["all"]["counts"]["n"], 0);
    assert_eq!(before["reliability"]["all"]["tooFewReviews"], true);
    assert!(before["reliability"]["all"]["figures"].is_null());

    // The obligations of each run, from the export; three runs reviewed with varied decisions.
    let mut by_run: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in labels_export(&s, "before.jsonl") {
        let ids = by_run
            .entry(l["runId"].as_str().unwrap().to_string())
            .or_default();
        let id = l["obligationId"].as_str().unwrap().to_string();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let statuses = ["satisfied", "failed", "missing"];
    let reviewed: Vec<String> = by_run.keys().take(3).cloned().collect();
    for (i, run) in reviewed.iter().enumerate() {
        let sets: Vec<String> = by_run[run]
            .iter()
            .enumerate()
            .map(|(j, id)| format!("{id}={}", statuses[(i + 2 * j) % 3]))
            .collect();
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let out = s.review_run(run, &s.reviewer_key, &sets, "");
        assert_eq!(out.status.code(), Some(0), "{run}: {}", both(&out));
    }

    // By hand: t[eA][eB], decided, decided as the person did.
    let mut t = [[0u64; 2]; 2];
    let (mut n, mut decided, mut agree, mut right_a, mut right_b) = (0u64, 0, 0, 0, 0);
    let mut per_obligation: BTreeMap<String, u64> = BTreeMap::new();
    for l in labels_export(&s, "after.jsonl") {
        let Some(h) = l["human"].as_str() else {
            continue;
        };
        n += 1;
        *per_obligation
            .entry(l["obligationId"].as_str().unwrap().to_string())
            .or_default() += 1;
        let ea = usize::from(l["judgeA"] != h);
        let eb = usize::from(l["judgeB"] != h);
        t[ea][eb] += 1;
        right_a += u64::from(ea == 0);
        right_b += u64::from(eb == 0);
        let c = l["consensus"].as_str().unwrap();
        if statuses.contains(&c) {
            decided += 1;
            agree += u64::from(c == h);
        }
    }
    assert!(n >= 10, "enough reviewed obligations for figures: {n}");
    let stats = s.stats(true);
    let rel = &stats["reliability"];
    assert_eq!(rel["minReviewed"], 10);
    let all = &rel["all"];
    assert_eq!(all["counts"]["n"], n);
    assert_eq!(all["counts"]["errors"], serde_json::json!(t));
    assert_eq!(all["counts"]["decided"], decided);
    assert_eq!(all["counts"]["decidedAgree"], agree);
    assert_eq!(all["tooFewReviews"], false);
    let f = &all["figures"];
    let [[t00, t01], [t10, t11]] = t.map(|r| r.map(|v| v as f64));
    let margins = (t10 + t11) * (t00 + t01) * (t01 + t11) * (t00 + t10);
    let phi = (margins > 0.0).then(|| (t11 * t00 - t10 * t01) / margins.sqrt());
    let close = |fig: &serde_json::Value, want: Option<f64>, what: &str| match want {
        None => assert!(fig["value"].is_null(), "{what}: {fig}"),
        Some(w) => {
            let got = fig["value"].as_f64().unwrap();
            assert!((got - w).abs() < 1e-5, "{what}: {got} vs {w}");
            if let Some(ci) = fig["ci95"].as_array() {
                let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
                assert!(lo <= got + 1e-9 && got <= hi + 1e-9, "{what}: {fig}");
            }
        }
    };
    close(&f["errorPhi"], phi, "phi");
    close(
        &f["effectiveVotes"],
        phi.filter(|p| *p > -1.0).map(|p| 2.0 / (1.0 + p)),
        "effective votes",
    );
    close(
        &f["accuracyA"],
        Some(right_a as f64 / n as f64),
        "accuracy A",
    );
    close(
        &f["accuracyB"],
        Some(right_b as f64 / n as f64),
        "accuracy B",
    );
    close(
        &f["consensusCoverage"],
        Some(decided as f64 / n as f64),
        "coverage",
    );
    close(
        &f["consensusAgreement"],
        (decided > 0).then(|| agree as f64 / decided as f64),
        "agreement when decided",
    );
    for (id, count) in &per_obligation {
        let r = &rel["byObligation"][id];
        assert_eq!(r["counts"]["n"], *count, "{id}");
        assert_eq!(r["tooFewReviews"], *count < 10, "{id}: {r}");
        assert_eq!(r["figures"].is_null(), *count < 10, "{id}: {r}");
    }
    assert_eq!(s.stats(true), stats, "the same store, the same figures");
    let trust = fixture_trust_pem().display().to_string();
    let rpub = s.reviewer_pub.display().to_string();
    let table = s.seal(&[
        "stats",
        "--store",
        &s.url,
        "--trust",
        &trust,
        "--trust-reviewer",
        &rpub,
    ]);
    let table = text(&table.stdout);
    assert!(table.contains("Reliability against people"), "{table}");
    assert!(table.contains("too few reviews"), "{table}");
    signed_report_verifies_and_recomputes(&s, &stats);
}

/// `seal report reliability` over the reviewed store: a DSSE envelope signed by the seal key
/// whose predicate carries the stats' reliability figures; securesystemslib verifies it and an
/// independent script (tests/data/reliability/recompute.py, no seal code) recomputes every
/// figure and interval from the subjects; the page renders in Chromium. An existing `--out`
/// is refused, and a report signed by another key does not verify under the seal key.
fn signed_report_verifies_and_recomputes(s: &Setup, stats: &serde_json::Value) {
    let trust = fixture_trust_pem().display().to_string();
    let rpub = s.reviewer_pub.display().to_string();
    let key = s.log_key.display().to_string();
    let out_path = s.dir.path().join("reliability.dsse.json");
    let html_path = s.dir.path().join("reliability.html");
    let report = |out: &std::path::Path, key: &str| {
        s.seal(&[
            "report",
            "reliability",
            "--store",
            &s.url,
            "--trust",
            &trust,
            "--trust-reviewer",
            &rpub,
            "--key",
            key,
            "--out",
            &out.display().to_string(),
            "--html",
            &html_path.display().to_string(),
        ])
    };
    let out = report(&out_path, &key);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(
        text(&out.stdout).contains("reliability report sha256"),
        "{}",
        both(&out)
    );
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out_path).unwrap()).unwrap();
    use base64::Engine as _;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().unwrap())
        .unwrap();
    let statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        statement["predicateType"],
        "https://wanxiang.ai/seal/reliability/v1"
    );
    // The statement is what its schema says (reliability.schema.json, found by its type).
    use seal_core::contracts::{validate, Kind};
    assert_eq!(Kind::detect(&statement), Ok(Kind::Reliability));
    let invalid = validate(Kind::Reliability, &statement);
    assert!(invalid.is_empty(), "{invalid:?}");
    let mut bent = statement.clone();
    bent["predicate"]["runsUsed"] = "many".into();
    assert!(
        !validate(Kind::Reliability, &bent).is_empty(),
        "the schema holds"
    );
    let p = &statement["predicate"];
    assert_eq!(p["reliability"], stats["reliability"], "the stats' figures");
    assert_eq!(p["human"], stats["human"]);
    assert_eq!(p["seed"], stats["seed"]);
    let subjects = statement["subject"].as_array().unwrap();
    assert!(
        subjects.len() >= 6,
        "three seals and three reviews: {subjects:?}"
    );
    // An existing --out is never overwritten.
    let again = report(&out_path, &key);
    assert_eq!(again.status.code(), Some(2), "{}", both(&again));

    if python_ready("reliability report recomputation") {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reliability/recompute.py");
        let run = |env_file: &std::path::Path| {
            Command::new("python3")
                .arg(&script)
                .arg(&s.root)
                .arg(env_file)
                .arg(fixture_trust_pem())
                .output()
                .unwrap()
        };
        let check = run(&out_path);
        assert!(check.status.success(), "{}", both(&check));
        assert!(text(&check.stdout).starts_with("ok "), "{}", both(&check));
        eprintln!("recompute.py: {}", text(&check.stdout).trim());
        // A signature that is not the seal key's: the signature check fails.
        let forged = s.dir.path().join("forged.dsse.json");
        let mut env = env.clone();
        let sig = env["signatures"][0]["sig"].as_str().unwrap().to_string();
        let mut raw = base64::engine::general_purpose::STANDARD
            .decode(sig)
            .unwrap();
        raw[0] ^= 1;
        env["signatures"][0]["sig"] = base64::engine::general_purpose::STANDARD.encode(raw).into();
        std::fs::write(&forged, serde_json::to_vec(&env).unwrap()).unwrap();
        let check = run(&forged);
        assert!(!check.status.success(), "a forged report verified");
    }
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("How far the judges can be trusted"));
    assert!(!html.to_lowercase().contains("<script"));
    if let Some(bin) = chromium("reliability report page") {
        let work = tempfile::tempdir().unwrap();
        let url = format!("file://{}", html_path.display());
        let (dom, stderr) = run_chromium(&bin, work.path(), &["--dump-dom".into(), url.clone()]);
        assert!(
            dom.contains("agreement with people per obligation"),
            "{stderr}"
        );
        assert!(console_lines(&stderr).is_empty(), "{stderr}");
        let shot = work.path().join("reliability.png");
        run_chromium(
            &bin,
            work.path(),
            &[
                format!("--screenshot={}", shot.display()),
                "--window-size=1200,1600".into(),
                url,
            ],
        );
        assert!(
            std::fs::metadata(&shot).unwrap().len() > 10_000,
            "a blank page"
        );
        let keep = std::env::var_os("SEAL_KEEP_SCREENSHOTS").map(std::path::PathBuf::from);
        if let Some(dir) = keep {
            std::fs::copy(&shot, dir.join("reliability.png")).unwrap();
        }
    }
    // A stranger's key cannot publish a report in this log: refused, nothing written.
    let _ = std::fs::remove_file(&html_path);
    let stranger = s.dir.path().join("stranger.dsse.json");
    let out = report(&stranger, &s.stranger_key.display().to_string());
    assert_ne!(out.status.code(), Some(0), "{}", both(&out));
    assert!(!stranger.exists() && !html_path.exists());
    assert!(both(&out).contains("log"), "{}", both(&out));
}
