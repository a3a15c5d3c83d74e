//! `seal shadow-report` end to end: a store filled by real `seal adapt verdict` and
//! `seal judge` processes against the loopback judge, a ledger written as the agent loop
//! writes it (verdict rows among stage rows, a superseded row, garbage, hostile finding text),
//! then the real binary: its counts and κ against a recomputation written here from the raw
//! files, `seal validate` on its JSON, the same bytes twice, the page (escaped, and in Chromium
//! when there is one), and its refusals (exit codes).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use common::*;
use seal_testkit::loopback::Loopback;

const HOSTILE_ISSUE: &str = "<script>document.title='pwned'</script> \u{202E}lrig";

/// A design of the test: its template Verdict, genre, and how its ledger rows differ.
struct Design {
    n: u32,
    template: &'static str,
    genre: &'static str,
}

const DESIGNS: [Design; 6] = [
    Design {
        n: 1,
        template: "accept",
        genre: "puzzle",
    },
    Design {
        n: 2,
        template: "fix",
        genre: "heritage",
    },
    Design {
        n: 3,
        template: "kill",
        genre: "sim-business",
    },
    // The ledger's later row for 4 says kill: the run was adapted from an older row.
    Design {
        n: 4,
        template: "accept",
        genre: "narrative",
    },
    // 5's evidence is tampered after sealing: not verified, never paired.
    Design {
        n: 5,
        template: "kill",
        genre: "trpg",
    },
    // 6's ledger row names another taskId.
    Design {
        n: 6,
        template: "accept",
        genre: "puzzle",
    },
];

fn design_id(n: u32) -> String {
    hex::encode(Sha256::digest(format!("design-{n}").as_bytes()))
}

fn verdict(template: &str, n: u32) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/data/verdicts/{template}.json"));
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v["designId"] = json!(design_id(n));
    v["taskId"] = if n % 2 == 0 {
        json!(1000 + n)
    } else {
        json!((1000 + n).to_string())
    };
    v
}

fn row(mut v: Value) -> String {
    v["type"] = json!("verdict");
    serde_json::to_string(&v).unwrap()
}

/// The ledger: verdict rows, stage rows, a blank line, garbage and a row missing `round`.
fn ledger_text() -> String {
    let mut lines = vec![r#"{"type":"stage","stage":"design","designId":"x"}"#.to_string()];
    for d in &DESIGNS {
        let mut v = verdict(d.template, d.n);
        if d.n == 6 {
            v["taskId"] = json!("999999");
        }
        lines.push(row(v));
    }
    let mut later = verdict("kill", 4);
    later["findings"][0]["issue"] = json!(HOSTILE_ISSUE);
    lines.push(String::new());
    lines.push(row(later));
    lines.push("{this is not json".into());
    let mut no_round = verdict("fix", 7);
    no_round.as_object_mut().unwrap().remove("round");
    lines.push(row(no_round));
    lines.push(row(verdict("fix", 8))); // a verdict with no run
    lines.join("\n") + "\n"
}

struct World {
    _lb: Loopback,
    dir: tempfile::TempDir,
}

impl World {
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    fn store(&self) -> String {
        format!("file://{}", self.path("store").display())
    }
    fn pem(&self) -> String {
        self.path("keys/seal.pub.pem").display().to_string()
    }
    fn seal(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_seal"))
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .unwrap()
    }
}

/// Keys, six adapted Verdicts judged by real `seal judge` processes, one run tampered, the ledger.
async fn world() -> World {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let cmd = |args: &[&str]| {
        let mut c = seal_cmd_with(
            dir.path(),
            &lb,
            "sk-a",
            "sk-b",
            "shadow-salt-0123456789abcdef0123456789abcdef",
        );
        c.args(args);
        c
    };
    let out = run(cmd(&["keygen", "--out", "keys"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    for d in &DESIGNS {
        let file = format!("v{}.json", d.n);
        std::fs::write(
            dir.path().join(&file),
            serde_json::to_vec(&verdict(d.template, d.n)).unwrap(),
        )
        .unwrap();
        let folder = format!("folder-{}", d.n);
        let out = run(cmd(&[
            "adapt", "verdict", &file, "--out", &folder, "--genre", d.genre,
        ]))
        .await;
        assert!(out.status.success(), "adapt {}: {}", d.n, text(&out.stderr));
        let out = run(cmd(&[
            "judge",
            &folder,
            "--store",
            "file://./store",
            "--key",
            "keys/seal.key.pem",
        ]))
        .await;
        assert!(out.status.success(), "judge {}: {}", d.n, text(&out.stderr));
    }
    let tampered = run_dir(dir.path(), 5).join("evidence.json");
    let mut bytes = std::fs::read(&tampered).unwrap();
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b' ' { b'\t' } else { b' ' };
    std::fs::write(&tampered, bytes).unwrap();
    std::fs::write(dir.path().join("ledger.jsonl"), ledger_text()).unwrap();
    World { _lb: lb, dir }
}

fn run_dir(root: &Path, n: u32) -> PathBuf {
    // `legacy-<16 hex of designId>-r<round>`: the kill template is round 1, the others 0.
    let prefix = format!("legacy-{}-r", &design_id(n)[..16]);
    std::fs::read_dir(root.join("store/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&prefix)
        })
        .unwrap_or_else(|| panic!("no run of design {n}"))
}

fn report_json(w: &World) -> (Vec<u8>, Value) {
    let out = w.seal(&[
        "shadow-report",
        "--verdicts",
        "ledger.jsonl",
        "--store",
        &w.store(),
        "--trust",
        &w.pem(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("1 decided run(s) do not verify"),
        "{}",
        text(&out.stderr)
    );
    let v = serde_json::from_slice(&out.stdout).unwrap();
    (out.stdout, v)
}

/// Cohen's κ of a 2 × 2 matrix, written out here.
fn kappa(m: [[u64; 2]; 2]) -> Option<f64> {
    let n = (m[0][0] + m[0][1] + m[1][0] + m[1][1]) as f64;
    let po = (m[0][0] + m[1][1]) as f64 / n;
    let row = |i: usize| (m[i][0] + m[i][1]) as f64 / n;
    let col = |j: usize| (m[0][j] + m[1][j]) as f64 / n;
    let pe = row(0) * col(0) + row(1) * col(1);
    ((1.0 - pe).abs() > 1e-12).then(|| (po - pe) / (1.0 - pe))
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The pairs, recomputed from the raw ledger and the stored evidence files (run 5 left out:
/// this test tampered it): (run id, legacy decision, v3 outcome).
fn recompute(w: &World) -> Vec<(String, String, String)> {
    let mut latest: BTreeMap<String, Value> = BTreeMap::new();
    for line in ledger_text().lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["type"] == "verdict" && v.get("round").is_some() {
            latest.insert(v["designId"].as_str().unwrap().to_string(), v);
        }
    }
    let as_text = |v: &Value| {
        v.as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| v.to_string())
    };
    let mut pairs = Vec::new();
    for entry in std::fs::read_dir(w.path("store/runs")).unwrap() {
        let dir = entry.unwrap().path();
        if dir == run_dir(w.dir.path(), 5) {
            continue;
        }
        let ev: Value =
            serde_json::from_slice(&std::fs::read(dir.join("evidence.json")).unwrap()).unwrap();
        assert_eq!(ev["acceptanceMode"], "v3_shadow");
        let Some(v) = latest.get(ev["_designId"].as_str().unwrap()) else {
            continue;
        };
        if as_text(&v["taskId"]) == as_text(&ev["_taskId"]) {
            let id = dir.file_name().unwrap().to_string_lossy().into_owned();
            pairs.push((id, as_text(&v["decision"]), as_text(&ev["outcome"])));
        }
    }
    pairs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_report_counts_and_kappa_equal_an_independent_recomputation() {
    let w = world().await;
    let (bytes, r) = report_json(&w);
    let pairs = recompute(&w);
    assert_eq!(
        pairs.len(),
        4,
        "designs 1-4 pair; 5 is tampered, 6 mismatches: {pairs:?}"
    );
    let (legacy, v3) = (
        ["accept", "fix", "kill"],
        ["pass", "fail", "inconclusive", "infra_error"],
    );
    let mut confusion = [[0u64; 4]; 3];
    let mut avn = [[0u64; 2]; 2];
    for (_, l, o) in &pairs {
        let (i, j) = (
            legacy.iter().position(|x| x == l).unwrap(),
            v3.iter().position(|x| x == o).unwrap(),
        );
        confusion[i][j] += 1;
        avn[usize::from(i != 0)][usize::from(j != 0)] += 1;
    }
    assert_eq!(r["all"]["confusion"], json!(confusion));
    assert_eq!(r["all"]["acceptVsNot"]["matrix"], json!(avn));
    assert_eq!(r["runs"]["paired"], json!(4));
    assert_eq!(
        r["all"]["acceptVsNot"]["kappa"].as_f64(),
        kappa(avn).map(round6)
    );
    let agree = (avn[0][0] + avn[1][1]) as f64 / 4.0;
    assert_eq!(
        r["all"]["acceptVsNot"]["agreement"].as_f64(),
        Some(round6(agree))
    );
    // The interval: the seed re-derived here, the bootstrap of `seal stats` on this matrix.
    let mut ids: Vec<&str> = pairs.iter().map(|p| p.0.as_str()).collect();
    ids.sort_unstable();
    let digest = Sha256::digest(
        ids.iter()
            .map(|i| format!("{i}\n"))
            .collect::<String>()
            .as_bytes(),
    );
    assert_eq!(r["seed"], json!(hex::encode(&digest[..8])));
    let seed = u64::from_be_bytes(digest[..8].try_into().unwrap());
    let key = Sha256::new()
        .chain_update(seed.to_be_bytes())
        .chain_update(b"all")
        .finalize();
    let mut m = seal_engine::stats_load::kappa::Confusion::default();
    for (i, row) in avn.iter().enumerate() {
        m.cells[i][..2].copy_from_slice(row);
    }
    let ci = seal_engine::stats_load::kappa::kappa_interval(
        &m,
        u64::from_be_bytes(key[..8].try_into().unwrap()),
        1000,
    )
    .map(|(lo, hi)| [round6(lo), round6(hi)]);
    let shown = r["all"]["acceptVsNot"]["kappaCi95"]
        .as_array()
        .map(|a| [a[0].as_f64().unwrap(), a[1].as_f64().unwrap()]);
    assert_eq!(shown, ci);

    // The unpaired, each where it belongs.
    let tampered = run_dir(w.dir.path(), 5);
    assert_eq!(
        r["runs"]["notVerified"][0]["runId"],
        json!(tampered.file_name().unwrap().to_string_lossy())
    );
    assert_eq!(r["unmatched"]["taskMismatch"][0]["verdictTaskId"], "999999");
    let without_run: Vec<&Value> = r["unmatched"]["verdictsWithoutRun"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["designId"])
        .collect();
    assert!(
        without_run.contains(&&json!(design_id(8))),
        "{without_run:?}"
    );
    assert!(
        without_run.contains(&&json!(design_id(5))),
        "the tampered run's verdict has no run"
    );
    assert_eq!(r["ledger"]["superseded"], 1);
    assert_eq!(r["ledger"]["skippedByType"]["stage"], 1);
    let rejected: Vec<u64> = r["ledger"]["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["line"].as_u64().unwrap())
        .collect();
    assert_eq!(rejected, vec![10, 11], "garbage and the row without round");
    // Design 4: adapted from accept, the ledger's latest says kill: a changed verdict.
    assert_eq!(r["runs"]["verdictChanged"], 1);
    let d4: Vec<&Value> = r["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["designId"] == json!(design_id(4)))
        .collect();
    if pairs
        .iter()
        .any(|p| p.0.contains(&design_id(4)[..16]) && p.2 == "pass")
    {
        assert_eq!(d4.len(), 1);
        assert_eq!(d4[0]["verdictChanged"], true);
        assert_eq!(d4[0]["legacy"]["findings"][0]["issue"], HOSTILE_ISSUE);
    }

    // Validates, and the same store and ledger give the same bytes.
    std::fs::write(w.path("r.json"), &bytes).unwrap();
    let out = w.seal(&["validate", "r.json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(
        report_json(&w).0,
        bytes,
        "same store and ledger, same bytes"
    );
    let mut bad = r.clone();
    bad["all"]["confusion"][0][0] = json!(confusion[0][0] + 1);
    std::fs::write(w.path("bad.json"), serde_json::to_vec(&bad).unwrap()).unwrap();
    let out = w.seal(&["validate", "bad.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("invariant.shadow.pairs")
            || text(&out.stderr).contains("invariant.shadow.pairs")
    );

    page_and_refusals(&w);
}

/// The page escapes the ledger's text (and renders in Chromium when there is one); the
/// refusals exit 2 and name their cause.
fn page_and_refusals(w: &World) {
    let args = |extra: &[&str]| {
        let mut a = vec!["shadow-report", "--verdicts", "ledger.jsonl"];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let (store, pem) = (w.store(), w.pem());
    let seal = |a: Vec<String>| w.seal(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let out = seal(args(&[
        "--store",
        &store,
        "--trust",
        &pem,
        "--html",
        "page.html",
        "--explain-base",
        "https://seal.internal",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(w.path("page.html")).unwrap();
    assert!(page.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    assert!(page.contains("[U+202E]lrig") && !page.contains('\u{202E}'));
    assert!(!page.contains("<script"));
    if let Some(bin) = chromium("shadow-report page") {
        let url = format!("file://{}", w.path("page.html").display());
        let (dom, stderr) = run_chromium(&bin, w.dir.path(), &["--dump-dom".into(), url]);
        assert!(
            dom.contains("&lt;script&gt;document.title"),
            "escaped text in the DOM"
        );
        assert!(
            dom.contains("<title>seal shadow report</title>"),
            "the title was not changed"
        );
        assert!(
            console_lines(&stderr).is_empty(),
            "{:?}",
            console_lines(&stderr)
        );
    }
    // The table: hostile text made safe for the terminal.
    let out = seal(args(&["--store", &store, "--trust", &pem]));
    assert_eq!(out.status.code(), Some(0));
    assert!(!text(&out.stdout).contains('\u{202E}'));
    assert!(text(&out.stdout).contains("legacy decision × v3 outcome"));

    std::fs::create_dir(w.path("a-folder")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(w.path("ledger.jsonl"), w.path("link.jsonl")).unwrap();
    let refusals: [(&str, Vec<String>, &str); 7] = [
        (
            "an existing --html",
            args(&["--store", &store, "--trust", &pem, "--html", "page.html"]),
            "already exists",
        ),
        (
            "no ledger",
            vec![
                "shadow-report".into(),
                "--verdicts".into(),
                "nope.jsonl".into(),
                "--store".into(),
                store.clone(),
                "--trust".into(),
                pem.clone(),
            ],
            "nope.jsonl",
        ),
        (
            "a folder as the ledger",
            vec![
                "shadow-report".into(),
                "--verdicts".into(),
                "a-folder".into(),
                "--store".into(),
                store.clone(),
                "--trust".into(),
                pem.clone(),
            ],
            "a-folder",
        ),
        (
            "a link as the ledger",
            vec![
                "shadow-report".into(),
                "--verdicts".into(),
                "link.jsonl".into(),
                "--store".into(),
                store.clone(),
                "--trust".into(),
                pem.clone(),
            ],
            "link.jsonl",
        ),
        (
            "a missing store",
            args(&[
                "--store",
                "file:///nonexistent-shadow-store",
                "--trust",
                &pem,
            ]),
            "no store there",
        ),
        (
            "a javascript: explain base",
            args(&[
                "--store",
                &store,
                "--trust",
                &pem,
                "--html",
                "p2.html",
                "--explain-base",
                "javascript:alert(1)",
            ]),
            "invalid value",
        ),
        (
            "--json with --html",
            args(&[
                "--store", &store, "--trust", &pem, "--json", "--html", "p3.html",
            ]),
            "cannot be used with",
        ),
    ];
    for (name, a, says) in refusals {
        let out = seal(a);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(says),
            "{name}: {}",
            text(&out.stderr)
        );
    }
    assert!(!w.path("p2.html").exists() && !w.path("p3.html").exists());
}

/// The README's "Migrating from legacy Verdicts" example, run as written (in a scratch folder
/// that links the repository's sealed fixtures, with this build's `seal` first on PATH).
#[test]
fn the_readme_migration_example_runs_as_written() {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## Migrating from legacy Verdicts")
        .nth(1)
        .expect("the README section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a sh block in the section");
    let dir = tempfile::tempdir().unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    std::os::unix::fs::symlink(
        root.join("sealed-fixtures"),
        dir.path().join("sealed-fixtures"),
    )
    .unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_seal")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .args(["-e", "-c", block])
        .current_dir(dir.path())
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("pairs: 1"),
        "{}",
        text(&out.stdout)
    );
    let r: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("shadow.json")).unwrap()).unwrap();
    assert_eq!(r["all"]["confusion"][0][0], 1, "legacy accept, v3 pass");
    assert_eq!(r["runs"]["notVerified"], json!([]));
    let page = std::fs::read_to_string(dir.path().join("shadow.html")).unwrap();
    assert!(page.contains("seal shadow report"));
}
