//! Served-model drift (issue 47, item 2) with real processes: a loopback judge that starts
//! answering judge A's requests as another model, then with a hostile model name. `/metrics`
//! follows the served model of each slot (one series per slot, a change counted), and
//! `seal stats` flags the set-up `served_model_changed` with each period's runs in time order;
//! the model name reaches neither the scrape nor the terminal as control characters.

use crate::common;

use common::*;
use seal_testkit::client::SealClient;
use seal_testkit::loopback::{Loopback, Persona};
use std::process::Command;
use std::time::Duration;

fn serve_as(lb: &Loopback, model: &str, fingerprint: &str) {
    lb.persona(
        MODEL_A,
        Persona {
            min_font_px: 12.0,
            served_model: Some(model.into()),
            fingerprint: Some(fingerprint.into()),
            ..Persona::default()
        },
    );
}

async fn judge_runs(c: &SealClient, dir: &std::path::Path, ids: &[&str]) {
    for id in ids {
        let folder = renamed_copy(
            &example("run-narrative-0010-pass"),
            &dir.join(format!("in-{id}")),
            id,
        );
        c.submit(&folder).await;
        let r = c.roll(&folder, 1).await.expect_success();
        assert_eq!(r.json()["rollOutcome"], "pass", "{}", r.text());
        let f = c.finalize(folder.run()).await.expect_success().json();
        assert_eq!(f["outcome"], "pass", "{f}");
    }
}

fn served_lines(metrics: &str) -> Vec<String> {
    metrics
        .lines()
        .filter(|l| l.starts_with("seal_judge_served_model{"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_that_changes_its_served_model_is_flagged_in_metrics_and_stats() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    serve_as(&lb, "judge-a-2026-01", "fp_a1");
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let d = spawn_daemon(dir.path(), &lb, "file://./store", &[]);
    let c = d.client();

    judge_runs(&c, dir.path(), &["drift-1", "drift-2", "drift-3"]).await;
    let m = c.metrics().await.expect_success().text();
    let served = served_lines(&m);
    assert!(
        served.contains(
            &"seal_judge_served_model{slot=\"a\",model=\"judge-a-2026-01\",fingerprint=\"fp_a1\"} 1"
                .to_string()
        ),
        "{served:?}"
    );
    assert_eq!(served.len(), 2, "one series per slot: {served:?}");
    assert!(m.contains("seal_judge_served_model_changes_total{slot=\"a\"} 0"));
    // The gauges of issue 49: no judge call out now; the log holds the three seals; its last
    // checkpoint is this process's, just now.
    assert!(
        m.contains("seal_judge_calls_in_flight{slot=\"a\"} 0"),
        "{m}"
    );
    let gauge = |name: &str| -> f64 {
        m.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {m}"))
            .parse()
            .unwrap()
    };
    assert!(gauge("seal_log_entries") >= 3.0, "{m}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let at = gauge("seal_log_last_checkpoint_timestamp_seconds");
    assert!((now - at).abs() < 120.0, "checkpoint at {at}, now {now}");

    // The provider swaps the model behind the same name.
    serve_as(&lb, "judge-a-2026-06", "fp_a2");
    judge_runs(&c, dir.path(), &["drift-4", "drift-5"]).await;
    let m = c.metrics().await.expect_success().text();
    let served = served_lines(&m);
    assert!(
        served.contains(
            &"seal_judge_served_model{slot=\"a\",model=\"judge-a-2026-06\",fingerprint=\"fp_a2\"} 1"
                .to_string()
        ),
        "{served:?}"
    );
    assert_eq!(served.len(), 2, "the old series is gone: {served:?}");
    assert!(m.contains("seal_judge_served_model_changes_total{slot=\"a\"} 1"));
    assert!(m.contains("seal_judge_served_model_changes_total{slot=\"b\"} 0"));

    // A hostile name: sanitized in the scrape.
    serve_as(&lb, "evil\u{1b}[2J\"} 1\nseal_fake 9", "fp\u{202e}x");
    judge_runs(&c, dir.path(), &["drift-6"]).await;
    let m = c.metrics().await.expect_success().text();
    assert!(!m.contains('\u{1b}') && !m.contains("seal_fake 9"), "{m}");
    assert!(m.contains("seal_judge_served_model_changes_total{slot=\"a\"} 2"));
    assert!(parse_metrics(&m).is_some(), "the scrape still parses");

    // seal stats: three periods of slot A's one set-up, in time order; B unchanged.
    let stats = |json: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_seal"));
        cmd.current_dir(dir.path()).args([
            "stats",
            "--store",
            "file://./store",
            "--trust",
            "keys/seal.pub.pem",
        ]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        out.stdout
    };
    let report: serde_json::Value = serde_json::from_slice(&stats(true)).unwrap();
    let groups = report["servedModels"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{groups:?}");
    let a = &groups[0];
    assert_eq!(a["slot"], "a");
    assert_eq!(a["modelRequested"], MODEL_A);
    assert_eq!(a["flags"], serde_json::json!(["served_model_changed"]));
    let periods = a["periods"].as_array().unwrap();
    let got: Vec<(&str, u64, &str, &str)> = periods
        .iter()
        .map(|p| {
            (
                p["servedModel"].as_str().unwrap(),
                p["runs"].as_u64().unwrap(),
                p["firstRun"].as_str().unwrap(),
                p["lastRun"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("judge-a-2026-01", 3, "drift-1", "drift-3"),
            ("judge-a-2026-06", 2, "drift-4", "drift-5"),
            ("evil\u{1b}[2J\"} 1\nseal_fake 9", 1, "drift-6", "drift-6"),
        ]
    );
    assert_eq!(periods[1]["systemFingerprint"], "fp_a2");
    assert_eq!(periods[0]["passRate"]["value"], 1.0);
    let b = &groups[1];
    assert_eq!(b["slot"], "b");
    assert!(b["flags"].as_array().unwrap().is_empty(), "{b}");
    assert_eq!(b["periods"][0]["runs"], 6);

    // The table flags the change and shows the hostile name only escaped.
    let table = text(&stats(false));
    assert!(table.contains("** served_model_changed **"), "{table}");
    assert!(
        table.contains("evil\\u{1b}[2J\"} 1\\u{a}seal_fake 9 (fp\\u{202e}x)"),
        "{table}"
    );
    assert!(
        !table.contains('\u{1b}') && !table.contains('\u{202e}'),
        "{table}"
    );
}
